//! The two hidden-hand card games of the `mental_poker` flow: Crazy Eights
//! (crazy-eights-v1) and Briscola (briscola-v1). Each is a [`CardGame`]
//! (the rules both sides run independently and must agree on) and a
//! [`Hooks`](crate::engine::Hooks) (metadata, decision schema, display).
//!
//! Both read no strategy.json knobs: the automatic player is a fixed
//! heuristic, as in the reference.
//!
//! Hand order: the reference keeps a hand as a dict filled in the order the
//! cards arrived. The deal hands out ascending id-B (guest first, then
//! host) and every draw takes the lowest id-B left in the stock, so arrival
//! order is ascending *numeric* id-B order; [`in_arrival_order`] rebuilds
//! it from the [`TableView`]'s string-ordered map. Where the reference
//! sorts (legal actions, "lowest id_b"), it sorts id-B as strings, which is
//! the map's own order.
//!
//! [`CardGame`]: crate::engine::mental_poker::game::CardGame
//! [`TableView`]: crate::engine::mental_poker::game::TableView

pub mod briscola;
pub mod crazy_eights;

pub use briscola::Briscola;
pub use crazy_eights::CrazyEights;

use crate::engine::mental_poker::game::Face;
use crate::json::{Map, Value};
use crate::obj;
use std::collections::BTreeMap;

/// Suit letters of both decks, by suit index.
pub const SUITS: [&str; 4] = ["C", "D", "H", "S"];

/// Why a card game cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardsError {
    #[error("hand_size must be between {min} and {max}, got {got}")]
    HandSize { got: i64, min: i64, max: i64 },
}

/// The hand in the order its cards arrived (ascending numeric id-B; see the
/// module notes). Ids that are not numbers, which the ledger never makes,
/// go last in string order.
pub(crate) fn in_arrival_order(hand: &BTreeMap<String, Face>) -> Vec<(&str, Face)> {
    let mut cards: Vec<(&str, Face)> = hand.iter().map(|(id, f)| (id.as_str(), *f)).collect();
    cards.sort_by_key(|(id, _)| id.parse::<u64>().unwrap_or(u64::MAX));
    cards
}

/// A list of names as a JSON array (`ranks`, `suits` in the snapshot).
pub(crate) fn names(list: &[&str]) -> Value {
    Value::Array(list.iter().map(|s| Value::from(*s)).collect())
}

/// `{"kind":"play","id_b":…,"rank":…,"suit":…}`.
pub(crate) fn play_entry(id_b: &str, face: Face) -> Map {
    obj! {
        "kind" => "play", "id_b" => id_b,
        "rank" => i64::from(face.0), "suit" => i64::from(face.1),
    }
}

/// `{"kind":kind}`.
pub(crate) fn kind_entry(kind: &str) -> Map {
    obj! { "kind" => kind }
}

/// A card as `8H`; `?` stands in for an index outside the game's lists.
pub(crate) fn face_name(ranks: &[&str], face: Face) -> String {
    let rank = ranks.get(usize::from(face.0)).copied().unwrap_or("?");
    let suit = SUITS.get(usize::from(face.1)).copied().unwrap_or("?");
    format!("{rank}{suit}")
}

/// A suit's letter (`S`), `?` out of range.
pub(crate) fn suit_letter(suit: u8) -> String {
    SUITS
        .get(usize::from(suit))
        .copied()
        .unwrap_or("?")
        .to_owned()
}

/// A name from `list` for the integer field `key` of a frame; None when the
/// field is missing or out of range.
fn field_name<'a>(msg: &Map, key: &str, list: &[&'a str]) -> Option<&'a str> {
    let i = msg.get(key).and_then(super::as_int)?;
    list.get(usize::try_from(i).ok()?).copied()
}

/// The feed line of a card-game frame, as the reference's `proto_display`:
/// `play 8H (call S)`, `PASS`, `illegal: <reason>`; None for other frames
/// (and for a play whose indices are out of range).
pub(crate) fn display(msg: &Map, ranks: &[&str], with_call_suit: bool) -> Option<String> {
    match super::str_field(msg, "action") {
        "mp_play" => {
            let rank = field_name(msg, "rank", ranks)?;
            let suit = field_name(msg, "suit", &SUITS)?;
            let call = match msg.get("call_suit") {
                Some(v) if with_call_suit && !v.is_null() => {
                    format!(" (call {})", field_name(msg, "call_suit", &SUITS)?)
                }
                _ => String::new(),
            };
            Some(format!("play {rank}{suit}{call}"))
        }
        "mp_pass" => Some("PASS".into()),
        "error" => Some(format!(
            "illegal: {}",
            msg.get("reason")
                .map_or_else(|| "None".into(), Value::py_str)
        )),
        _ => None,
    }
}

/// The decision schema both games share; `choices` lists the action kinds.
pub(crate) fn decision_schema(choices: &[&str], call_suit: bool) -> Map {
    let mut m = obj! {
        "match_key" => "action_seq", "value_field" => "kind",
        "choices" => names(choices), "card_field" => "id_b",
    };
    if call_suit {
        m.insert("optional_fields", names(&["call_suit"]));
    }
    m
}

#[cfg(test)]
pub(crate) mod sim {
    //! A test driver that plays a whole match between two game instances
    //! the way the flow will: one shared ledger, host on even turns, the
    //! peer validating each play before the ledger records it, both sides
    //! asking `check_winner` once per turn, two passes in a row ending the
    //! match after one last check.

    use crate::engine::Role;
    use crate::engine::mental_poker::game::{CardAction, CardGame, Face, TableView};
    use crate::engine::mental_poker::ledger::Ledger;
    use crate::json::{Map, Value};
    use std::collections::BTreeMap;

    /// How a match ended.
    #[derive(Debug)]
    pub(crate) struct Outcome {
        pub winner: Option<&'static str>,
        pub stalled: bool,
        pub turns: usize,
        pub ledger: Ledger,
        pub extras: Map,
        /// Per side: cards left in hand.
        pub hands: [usize; 2],
    }

    /// splitmix64: a deterministic shuffle without a seeded-RNG dependency.
    fn shuffled(n: usize, seed: u64) -> Vec<usize> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        order
    }

    fn idx(who: Role) -> usize {
        match who {
            Role::Host => 0,
            Role::Guest => 1,
        }
    }

    /// Whether `action` is one of the `legal` entries (an 8 in Crazy Eights
    /// must carry a suit 0..3, any other card none).
    pub(crate) fn is_listed(legal: &[Map], action: &CardAction) -> bool {
        legal.iter().any(|m| match action {
            CardAction::Play { id_b, call_suit } => {
                m.get_str("kind") == Some("play")
                    && m.get_str("id_b") == Some(id_b.as_str())
                    && match m.get("call_suit_required") {
                        Some(Value::Bool(true)) => call_suit.is_some_and(|s| s < 4),
                        _ => call_suit.is_none(),
                    }
            }
            other => m.get_str("kind") == Some(other.kind()),
        })
    }

    /// The last legal entry as an explicit action: unlike the auto picker,
    /// so the explicit path (`check_local` + `apply_local`) gets exercised.
    fn explicit_pick(legal: &[Map], turn: usize) -> CardAction {
        let last = legal.last().expect("a side always has a legal action");
        match last.get_str("kind") {
            Some("play") => CardAction::Play {
                id_b: last.get_str("id_b").expect("id_b").to_owned(),
                call_suit: (last.get("call_suit_required") == Some(&Value::Bool(true)))
                    .then_some((turn % 4) as u8),
            },
            Some("draw") => CardAction::Draw,
            _ => CardAction::Pass,
        }
    }

    /// Plays one match; `explicit_guest` drives the guest through
    /// `check_local`/`apply_local` instead of its auto picker. Panics (the
    /// test fails) when the sides disagree or an action is not legal.
    pub(crate) fn play_match(
        host: &mut dyn CardGame,
        guest: &mut dyn CardGame,
        seed: u64,
        explicit_guest: bool,
    ) -> Outcome {
        let universe = host.deck_universe();
        assert_eq!(universe, guest.deck_universe());
        let n = universe.len();
        let order = shuffled(n, seed);
        let face_of = |id: &str| -> Face { universe[order[id.parse::<usize>().expect("id-B")]] };
        let mut ledger = Ledger::new(n);
        let (h, g) = host.initial_deal();
        assert_eq!((h, g), guest.initial_deal(), "both sides deal the same");
        let mut hands: [BTreeMap<String, Face>; 2] = Default::default();
        // The reference's deal: the guest's cards first, then the host's.
        for (who, range) in [(Role::Guest, 0..g), (Role::Host, g..g + h)] {
            for i in range {
                let id = i.to_string();
                assert!(ledger.deal_to(who, &id));
                hands[idx(who)].insert(id.clone(), face_of(&id));
            }
        }
        let games: [&mut dyn CardGame; 2] = [host, guest];
        let (mut turn, mut passes, mut stalled) = (0usize, 0u32, false);
        loop {
            assert!(turn < 1000, "the match does not end");
            let actor = if turn.is_multiple_of(2) {
                Role::Host
            } else {
                Role::Guest
            };
            let (a, p) = (idx(actor), idx(actor.peer()));
            let action = {
                let view = TableView {
                    role: actor,
                    hand: &hands[a],
                    ledger: &ledger,
                    stalled,
                };
                let legal = games[a].legal_actions(&view);
                let action = if explicit_guest && actor == Role::Guest {
                    let action = explicit_pick(&legal, turn);
                    games[a]
                        .check_local(&view, &action)
                        .expect("a listed action passes check_local");
                    games[a].apply_local(&view, &action);
                    action
                } else {
                    games[a].choose_action(&view)
                };
                assert!(is_listed(&legal, &action), "{action:?} not in {legal:?}");
                action
            };
            match action {
                CardAction::Play { id_b, call_suit } => {
                    passes = 0;
                    let face = hands[a][&id_b];
                    let peer_view = TableView {
                        role: actor.peer(),
                        hand: &hands[p],
                        ledger: &ledger,
                        stalled,
                    };
                    games[p]
                        .validate_peer_play(&peer_view, actor, face, call_suit)
                        .expect("the peer accepts a legal play");
                    assert!(ledger.play(actor, &id_b));
                    hands[a].remove(&id_b);
                }
                CardAction::Draw => {
                    passes = 0;
                    let id = ledger
                        .next_stock_id()
                        .expect("draw from a stock")
                        .to_owned();
                    assert!(ledger.deal_to(actor, &id));
                    let face = face_of(&id);
                    hands[a].insert(id, face);
                }
                CardAction::Pass => passes += 1,
            }
            if passes >= 2 {
                stalled = true;
            }
            let mut verdicts = [None, None];
            for who in [Role::Host, Role::Guest] {
                let view = TableView {
                    role: who,
                    hand: &hands[idx(who)],
                    ledger: &ledger,
                    stalled,
                };
                verdicts[idx(who)] = games[idx(who)].check_winner(&view);
            }
            assert_eq!(verdicts[0], verdicts[1], "the sides disagree on the winner");
            let extras = games[0].snapshot_extras();
            assert_eq!(
                extras,
                games[1].snapshot_extras(),
                "the sides' game states drift"
            );
            let both_empty = hands.iter().all(BTreeMap::is_empty);
            if verdicts[0].is_some() || stalled || both_empty {
                return Outcome {
                    winner: verdicts[0],
                    stalled,
                    turns: turn + 1,
                    ledger,
                    extras,
                    hands: [hands[0].len(), hands[1].len()],
                };
            }
            turn += 1;
        }
    }
}
