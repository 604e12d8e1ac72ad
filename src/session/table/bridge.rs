//! contract-bridge-v1's part of a table view: the auction, the contract,
//! the trick, the tricks won, the dummy and who plays it.

use super::*;

/// One call of a bridge auction.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub public_key: String,
    /// `pass`, `bid`, `double`, `redouble`.
    pub kind: String,
    pub level: i64,
    pub denomination: String,
}

impl Call {
    /// `pass`, `X`, `XX`, `1♣`, `3NT`.
    pub fn label(&self) -> String {
        match self.kind.as_str() {
            "bid" => bid_label(self.level, &self.denomination),
            "double" => "X".into(),
            "redouble" => "XX".into(),
            k => k.to_owned(),
        }
    }
}

/// `1♣`, `4♠`, `3NT`: a bid as players write it.
pub fn bid_label(level: i64, denomination: &str) -> String {
    let d = match denomination {
        "clubs" => "♣",
        "diamonds" => "♦",
        "hearts" => "♥",
        "spades" => "♠",
        "nt" => "NT",
        other => other,
    };
    format!("{level}{d}")
}

/// A bridge contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    pub level: i64,
    pub denomination: String,
    /// 0, 1 doubled, 2 redoubled.
    pub doubled: i64,
    /// The declaring side, `ns` or `ew`.
    pub partnership: String,
}

impl Contract {
    /// `4♠`, `3NT X`, `2♥ XX`.
    pub fn label(&self) -> String {
        let x = match self.doubled {
            1 => " X",
            2 => " XX",
            _ => "",
        };
        format!("{}{x}", bid_label(self.level, &self.denomination))
    }
}

/// One card of a bridge trick.
#[derive(Debug, Clone, PartialEq)]
pub struct TrickCard {
    /// Who played it (the declarer for the dummy's cards).
    pub public_key: String,
    /// Whose hand it came from.
    pub hand_owner: String,
    pub card: Card,
}

/// What contract-bridge-v1 adds to a table (the board number is the
/// view's `round`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Bridge {
    pub dealer: String,
    /// `none`, `ns`, `ew`, `both`.
    pub vulnerability: String,
    pub auction: Vec<Call>,
    pub contract: Option<Contract>,
    pub declarer: String,
    pub dummy: String,
    pub dummy_revealed: bool,
    /// The dummy's cards once revealed, sorted ([`sort_by_suit`]).
    pub dummy_hand: Vec<Card>,
    /// Whose hand is to play (the dummy's when the declarer plays it).
    pub hand_owner: String,
    pub trick: Vec<TrickCard>,
    /// Tricks played, and the last one's winner and cards.
    pub tricks_played: usize,
    pub last_trick: Option<(String, Vec<TrickCard>)>,
    /// Tricks won and points by side.
    pub tricks_ns: i64,
    pub tricks_ew: i64,
    pub score_ns: i64,
    pub score_ew: i64,
    /// The cards this seat plays now (the dummy's when the declarer plays
    /// them), sorted.
    pub playable: Vec<Card>,
    /// This seat's side, `ns` or `ew`.
    pub side: String,
}

impl Bridge {
    /// Is the viewer (`you`) the declarer playing from the dummy now?
    pub fn plays_dummy(&self, you: &str) -> bool {
        !you.is_empty() && self.declarer == you && self.hand_owner == self.dummy
    }
}

pub(super) fn bridge(alias: &str, v: &Map) -> Result<TableView, String> {
    let declarer = text(v.get("declarer"));
    let dummy = text(v.get("dummy"));
    let seats = seats_of(v, &|s, p| {
        let compass = p.map(|p| text(p.get("compass"))).unwrap_or_default();
        s.role = if s.public_key == declarer {
            format!("{compass} declarer")
        } else if s.public_key == dummy {
            format!("{compass} dummy")
        } else {
            compass
        };
    })?;
    let sorted = |k: &str| {
        let mut c = cards(v.get(k));
        sort_by_suit(&mut c);
        c
    };
    let trick_of = |t: Option<&Value>| -> Vec<TrickCard> {
        t.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(MAX_SEATS)
            .filter_map(|p| {
                Some(TrickCard {
                    public_key: text(p.get("public_key")),
                    hand_owner: text(p.get("hand_owner")),
                    card: Card::parse(p.get("card")?)?,
                })
            })
            .collect()
    };
    let history = v.get("trick_history").and_then(Value::as_array);
    let last_trick = history
        .and_then(|h| h.last())
        .map(|t| (text(t.get("winner")), trick_of(t.get("cards"))));
    let auction = v
        .get("auction")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_ENTRIES)
        .filter_map(Value::as_object)
        .map(|c| Call {
            public_key: text(c.get("public_key")),
            kind: text(c.get("kind")),
            level: int(c.get("level")).unwrap_or(0),
            denomination: text(c.get("denomination")),
        })
        .collect();
    let contract = v
        .get("contract")
        .and_then(Value::as_object)
        .map(|c| Contract {
            level: int(c.get("level")).unwrap_or(0),
            denomination: text(c.get("denomination")),
            doubled: int(c.get("doubled")).unwrap_or(0),
            partnership: text(c.get("partnership")),
        });
    let side = |m: &str, k: &str| {
        v.get(m)
            .and_then(Value::as_object)
            .and_then(|t| int(t.get(k)))
            .unwrap_or(0)
    };
    let game = Bridge {
        dealer: text(v.get("dealer")),
        vulnerability: text(v.get("vulnerability")),
        auction,
        contract,
        declarer: declarer.clone(),
        dummy: dummy.clone(),
        dummy_revealed: v.get("dummy_revealed").and_then(Value::as_bool) == Some(true),
        dummy_hand: sorted("dummy_hand"),
        hand_owner: text(v.get("current_hand_owner")),
        trick: trick_of(v.get("current_trick")),
        tricks_played: history.map_or(0, Vec::len),
        last_trick,
        tricks_ns: side("tricks", "ns"),
        tricks_ew: side("tricks", "ew"),
        score_ns: side("scores", "ns"),
        score_ew: side("scores", "ew"),
        playable: sorted("playable_hand"),
        side: v
            .get("you")
            .and_then(|y| y.get("partnership"))
            .map(|p| text(Some(p)))
            .unwrap_or_default(),
    };
    Ok(common(
        alias,
        v,
        "board_number",
        seats,
        sorted("my_hand"),
        Game::Bridge(game),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::session::table::tests::*;

    #[test]
    fn a_bridge_view_reads_the_auction_and_the_dummy_it_plays() {
        let alias = "contract-bridge-v1";
        let (mut rules, mut state) = dealt(alias);
        let me = members()[0].clone();
        let t = TableView::parse(alias, &rules.view(&state, &me).unwrap()).unwrap();
        // Board 1: north deals and calls first; 13 cards sorted by suit.
        assert!(t.your_turn());
        assert_eq!(t.phase, "auction");
        assert_eq!(t.hand.len(), 13);
        let groups: Vec<i64> = t.hand.iter().map(Card::suit_group).collect();
        assert!(groups.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(t.seats[2].role, "south");
        // North bids 1NT, everyone passes: north declares, south is the
        // dummy, east leads.
        let act = |rules: &mut Box<dyn crate::protocols::tables::Table>,
                   state: &mut Value,
                   n: usize,
                   a: Value| {
            let r = rules.handle(state.clone(), &members()[n], &a).unwrap();
            *state = r.get("state").unwrap().clone();
        };
        let bid = obj! { "kind" => "bid", "level" => 1, "denomination" => "nt" };
        act(&mut rules, &mut state, 0, Value::Object(bid));
        for n in 1..4 {
            act(
                &mut rules,
                &mut state,
                n,
                Value::Object(obj! { "kind" => "pass" }),
            );
        }
        let east = rules.view(&state, &members()[1]).unwrap();
        let lead = rules.legal_actions(&east)[0].clone();
        act(&mut rules, &mut state, 1, lead);
        let view = rules.view(&state, &me).unwrap();
        let t = TableView::parse(alias, &view).unwrap();
        let b = t.bridge().unwrap();
        assert_eq!(
            b.auction.iter().map(Call::label).collect::<Vec<_>>(),
            ["1NT", "pass", "pass", "pass"]
        );
        assert_eq!(b.contract.as_ref().unwrap().label(), "1NT");
        assert_eq!((b.declarer.as_str(), b.dummy.as_str()), ("pk0", "pk2"));
        assert_eq!(t.seats[0].role, "north declarer");
        assert!(b.dummy_revealed && b.dummy_hand.len() == 13);
        assert_eq!(b.trick.len(), 1);
        // The declarer plays the dummy's cards: the picker holds them.
        assert!(t.your_turn() && b.plays_dummy(&t.you));
        assert_eq!(t.pick_hand(), b.dummy_hand.as_slice());
        assert_eq!(t.hand.len(), 13);
        // South, the dummy, never has the turn.
        let south = TableView::parse(alias, &rules.view(&state, &members()[2]).unwrap()).unwrap();
        assert!(!south.your_turn());
        assert_eq!(south.pick_hand(), south.hand.as_slice());
    }
}
