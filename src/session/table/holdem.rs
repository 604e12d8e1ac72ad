//! texas-holdem-v1's part of a table view: the street, the blinds, the
//! pot and the wager, the board, this seat's legal amounts, the showdown.

use super::*;

/// A pot a hand ended with: its chips and who took them.
#[derive(Debug, Clone, PartialEq)]
pub struct PotResult {
    pub amount: i64,
    pub winners: Vec<String>,
}

/// A hand shown at a hold'em showdown.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub public_key: String,
    pub cards: Vec<Card>,
    /// `two_pair`, `straight`, … as the rules name it.
    pub category: String,
}

/// What texas-holdem-v1 adds to a table (the hand number is the view's
/// `round`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Holdem {
    /// `preflop`, `flop`, `turn`, `river`.
    pub street: String,
    pub button: String,
    pub small_blind: String,
    pub big_blind: String,
    /// The wager to match this street, and the last full raise.
    pub current_bet: i64,
    pub last_full_raise: i64,
    /// Every chip committed this hand.
    pub pot: i64,
    pub board: Vec<Card>,
    /// This seat's `legal`: what it must add to call, the least a raise
    /// goes to, the most it can put in this street, whether it may raise.
    pub to_call: i64,
    pub min_raise_to: i64,
    pub max_to: i64,
    pub can_raise: bool,
    /// The last hand's pots and showdown, while the view still has them.
    pub pots: Vec<PotResult>,
    pub shown: Vec<Shown>,
}

pub(super) fn holdem(alias: &str, v: &Map) -> Result<TableView, String> {
    let button = text(v.get("button"));
    let sb = text(v.get("small_blind_player"));
    let bb = text(v.get("big_blind_player"));
    let seats = seats_of(v, &|s, p| {
        let n = |k: &str| p.and_then(|p| int(p.get(k)));
        let b = |k: &str| p.and_then(|p| p.get(k)).and_then(Value::as_bool) == Some(true);
        s.stack = n("stack");
        s.wager = n("street_contribution");
        s.folded = b("folded");
        s.all_in = b("all_in");
        let pk = s.public_key.as_str();
        s.role = if pk == button {
            "button"
        } else if pk == sb {
            "small blind"
        } else if pk == bb {
            "big blind"
        } else {
            ""
        }
        .to_owned();
    })?;
    let mut hand = cards(v.get("my_hand"));
    sort_by_suit(&mut hand);
    hand.sort_by_key(|c| -c.value);
    let legal = v.get("legal").and_then(Value::as_object);
    let l = |k: &str| legal.and_then(|m| int(m.get(k))).unwrap_or(0);
    let pots = v
        .get("pot_results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_SEATS)
        .filter_map(Value::as_object)
        .map(|p| PotResult {
            amount: int(p.get("amount")).unwrap_or(0),
            winners: keys(p.get("winners")),
        })
        .collect();
    let shown = v
        .get("showdown_hands")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.iter())
        .take(MAX_SEATS)
        .map(|(pk, h)| Shown {
            public_key: pk.to_owned(),
            cards: cards(h.get("cards")),
            category: text(h.get("category")),
        })
        .collect();
    let game = Holdem {
        street: text(v.get("street")),
        button,
        small_blind: sb,
        big_blind: bb,
        current_bet: int(v.get("current_bet")).unwrap_or(0),
        last_full_raise: int(v.get("last_full_raise")).unwrap_or(0),
        pot: int(v.get("pot_total")).unwrap_or(0),
        board: cards(v.get("board")),
        to_call: l("to_call"),
        min_raise_to: l("min_raise_to"),
        max_to: l("max_to"),
        can_raise: legal
            .and_then(|m| m.get("can_raise"))
            .and_then(Value::as_bool)
            == Some(true),
        pots,
        shown,
    };
    Ok(common(
        alias,
        v,
        "hand_number",
        seats,
        hand,
        Game::Holdem(game),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::session::table::tests::*;

    #[test]
    fn a_holdem_view_reads_its_stacks_blinds_and_bet() {
        let alias = "texas-holdem-v1";
        let (mut rules, state) = dealt(alias);
        let current = state.get_str("current_player").unwrap().to_owned();
        let n: i64 = current.trim_start_matches("pk").parse().unwrap();
        let member = &members()[n as usize];
        let view = rules.view(&state, member).unwrap();
        let t = TableView::parse(alias, &view).unwrap();
        assert_eq!(t.round, Some(1));
        assert_eq!(t.phase, "betting");
        assert!(t.your_turn());
        assert_eq!(t.hand.len(), 2);
        // Ace high first.
        assert!(t.hand[0].value >= t.hand[1].value && t.hand[0].value >= 2);
        let h = t.holdem().unwrap();
        assert_eq!(h.street, "preflop");
        assert!(h.board.is_empty());
        // Blinds of 5 and 10 from stacks of 1000: 10 to call for the
        // first to act, a raise to 20 at least.
        assert_eq!((h.pot, h.current_bet, h.to_call), (15, 10, 10));
        assert_eq!((h.min_raise_to, h.max_to), (20, 1000));
        assert!(h.can_raise);
        let sb = t.seat_of(&h.small_blind).unwrap();
        assert_eq!(
            (sb.stack, sb.wager, sb.role.as_str()),
            (Some(995), Some(5), "small blind")
        );
        assert_eq!(t.seat_of(&h.button).unwrap().role, "button");
        assert!(t.landlord().is_none() && t.bridge().is_none());
    }
}
