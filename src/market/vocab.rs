//! The market's fixed vocabulary as enums: transaction states, message and
//! event kinds, offer and commitment statuses, verification results. Each
//! has exactly the text the wire, the event chain and the store's CHECK
//! constraints use (serde, SQLite and `Display` all go through `as_str`),
//! and [`TRANSITIONS`] mirrors the store's `gtl_transitions` table.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// An enum whose every variant is one fixed text.
macro_rules! vocab {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $v,)+ }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v,)+];

            /// The text on the wire and in the store.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$v => $s,)+ }
            }

            /// The variant with this exact text.
            pub fn parse(s: &str) -> Option<$name> {
                match s { $($s => Some($name::$v),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let s = String::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| {
                    serde::de::Error::unknown_variant(&s, &[$($s,)+])
                })
            }
        }

        impl From<$name> for super::db::Arg<'static> {
            fn from(v: $name) -> Self {
                super::db::Arg::Text(v.as_str())
            }
        }

        impl super::db::FromText for $name {
            const NAME: &'static str = stringify!($name);
            fn from_text(s: &str) -> Option<$name> {
                $name::parse(s)
            }
        }

        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                v: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<$name> {
                let s = v.as_str()?;
                $name::parse(s).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(
                        format!("{s:?} is not a {}", stringify!($name)).into(),
                    )
                })
            }
        }
    };
}

vocab! {
    /// A transaction's state.
    State {
        JobOpen = "JOB_OPEN",
        Offered = "OFFERED",
        DealLocked = "DEAL_LOCKED",
        Funded = "FUNDED",
        Delivered = "DELIVERED",
        Verified = "VERIFIED",
        Rejected = "REJECTED",
        Settled = "SETTLED",
        Refunded = "REFUNDED",
        Closed = "CLOSED",
    }
}

vocab! {
    /// A GTL message type or a server event kind (an event's `kind` is the
    /// type of the message that caused it, or the server event's name).
    Kind {
        Hello = "HELLO",
        JobOpen = "JOB_OPEN",
        Offer = "OFFER",
        OfferDecline = "OFFER_DECLINE",
        DealLock = "DEAL_LOCK",
        DealConfirm = "DEAL_CONFIRM",
        Fund = "FUND",
        Deliver = "DELIVER",
        /// Server event: the verifier's verdict on a delivery.
        Verification = "VERIFICATION",
        /// Server event: a VERIFIED transaction pays the provider.
        Settlement = "SETTLEMENT",
        /// Server event: a REJECTED transaction pays the buyer back.
        Refund = "REFUND",
        /// Server event: the deadline passed.
        Expiry = "EXPIRY",
    }
}

vocab! {
    /// An offer's status (`gtl_offers.status`).
    OfferStatus {
        Live = "live",
        Declined = "declined",
        Accepted = "accepted",
        Superseded = "superseded",
    }
}

vocab! {
    /// A funding commitment's status (`gtl_commitments.status`).
    CommitmentStatus {
        Reserved = "reserved",
        Settled = "settled",
        Refunded = "refunded",
    }
}

vocab! {
    /// What the verifier decided (`gtl_verifications.result`).
    Verdict {
        Pass = "PASS",
        Fail = "FAIL",
    }
}

/// The legal state changes: the store's `gtl_transitions` table, whose
/// trigger refuses any other.
pub const TRANSITIONS: &[(State, State)] = &[
    (State::JobOpen, State::Offered),
    (State::Offered, State::JobOpen),
    (State::Offered, State::DealLocked),
    (State::DealLocked, State::Funded),
    (State::Funded, State::Delivered),
    (State::Delivered, State::Verified),
    (State::Delivered, State::Rejected),
    (State::Funded, State::Rejected),
    (State::Verified, State::Settled),
    (State::Rejected, State::Refunded),
    (State::JobOpen, State::Closed),
    (State::Offered, State::Closed),
    (State::DealLocked, State::Closed),
];

impl State {
    /// SETTLED, REFUNDED and CLOSED: nothing changes afterwards.
    pub fn is_terminal(self) -> bool {
        matches!(self, State::Settled | State::Refunded | State::Closed)
    }

    /// Whether the store lets a transaction move from `self` to `to`.
    pub fn can_move_to(self, to: State) -> bool {
        TRANSITIONS.contains(&(self, to))
    }
}

impl Kind {
    /// The messages a client sends (HELLO and the ones that write).
    pub const MESSAGES: &'static [Kind] = &[
        Kind::Hello,
        Kind::JobOpen,
        Kind::Offer,
        Kind::OfferDecline,
        Kind::DealLock,
        Kind::DealConfirm,
        Kind::Fund,
        Kind::Deliver,
    ];

    /// The states a message is accepted in (empty for JOB_OPEN, which
    /// starts a transaction, for HELLO and for server events).
    pub fn accepted_in(self) -> &'static [State] {
        match self {
            Kind::Offer => &[State::JobOpen, State::Offered],
            Kind::OfferDecline | Kind::DealLock | Kind::DealConfirm => &[State::Offered],
            Kind::Fund => &[State::DealLocked],
            Kind::Deliver => &[State::Funded],
            _ => &[],
        }
    }
}

impl Verdict {
    pub fn of(pass: bool) -> Verdict {
        if pass { Verdict::Pass } else { Verdict::Fail }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_round_trips_through_serde_sqlite_and_parse() {
        fn check<T>(all: &[T])
        where
            T: Copy + PartialEq + fmt::Debug + fmt::Display + Serialize,
            T: for<'de> Deserialize<'de> + rusqlite::ToSql + rusqlite::types::FromSql,
        {
            let db = rusqlite::Connection::open_in_memory().unwrap();
            for &v in all {
                let text = v.to_string();
                let json = serde_json::to_string(&v).unwrap();
                assert_eq!(json, format!("\"{text}\""));
                assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v);
                let back: (String, T) = db
                    .query_row("SELECT ?1, ?1", [&v], |r| Ok((r.get(0)?, r.get(1)?)))
                    .unwrap();
                assert_eq!(back, (text, v));
            }
        }
        check(State::ALL);
        check(Kind::ALL);
        check(OfferStatus::ALL);
        check(CommitmentStatus::ALL);
        check(Verdict::ALL);
        assert!(serde_json::from_str::<State>("\"job_open\"").is_err());
        assert_eq!(State::parse("FUNDED"), Some(State::Funded));
        assert_eq!(State::parse("funded"), None);
    }

    #[test]
    fn transitions_mirror_the_store_and_messages_move_along_them() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        crate::market::store::migrate(&db, false).unwrap();
        let mut st = db
            .prepare("SELECT from_state, to_state FROM gtl_transitions")
            .unwrap();
        let mut stored: Vec<(State, State)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut ours = TRANSITIONS.to_vec();
        let key = |p: &(State, State)| (p.0.as_str(), p.1.as_str());
        stored.sort_by_key(key);
        ours.sort_by_key(key);
        assert_eq!(stored, ours);
        // The CHECK constraints list exactly our texts, in our order.
        let schema: String = db
            .query_row(
                "SELECT group_concat(sql, ' ') FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let schema: String = schema.split_whitespace().collect();
        let list = |column: &str, texts: Vec<&str>| {
            let quoted: Vec<String> = texts.iter().map(|t| format!("'{t}'")).collect();
            format!("({column}IN({}))", quoted.join(","))
        };
        let texts = |all: &[State]| all.iter().map(|s| s.as_str()).collect::<Vec<_>>();
        let terminal: Vec<State> = State::ALL
            .iter()
            .copied()
            .filter(|s| s.is_terminal())
            .collect();
        for want in [
            list("state", texts(State::ALL)),
            list("terminal_state", texts(&terminal)),
            list(
                "status",
                OfferStatus::ALL.iter().map(|s| s.as_str()).collect(),
            ),
            list(
                "status",
                CommitmentStatus::ALL.iter().map(|s| s.as_str()).collect(),
            ),
            list("result", Verdict::ALL.iter().map(|s| s.as_str()).collect()),
        ] {
            assert!(schema.contains(&want), "{want} not in the store's schema");
        }
        assert!(
            State::ALL
                .iter()
                .filter(|s| s.is_terminal())
                .all(|s| { State::ALL.iter().all(|to| !s.can_move_to(*to)) })
        );
        // A message accepted in a state either stays or moves legally.
        let moves = [
            (Kind::Offer, State::Offered),
            (Kind::OfferDecline, State::JobOpen),
            (Kind::DealConfirm, State::DealLocked),
            (Kind::Fund, State::Funded),
            (Kind::Deliver, State::Delivered),
        ];
        for (k, to) in moves {
            assert!(
                k.accepted_in()
                    .iter()
                    .any(|from| *from == to || from.can_move_to(to)),
                "{k}"
            );
        }
    }
}
