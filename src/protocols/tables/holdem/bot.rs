//! What a seat may send and what a bot sends: the legal actions read from
//! a seat's view (fold, check or call, a few raise targets, all in) and a
//! bot that bets by its equity, estimated by dealing out the unseen cards.

use super::Holdem;
use super::poker::{Face, HandRank, rank_direct};
use crate::json::Value;
use crate::obj;
use crate::protocols::tables::Table;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What a seat reads from its view to decide.
struct Seat {
    me: String,
    to_call: i64,
    min_raise_to: i64,
    max_to: i64,
    can_raise: bool,
    current_bet: i64,
    pot: i64,
}

impl Seat {
    /// The seat to act in `view`, when it is the viewer's turn to bet.
    fn of(view: &Value) -> Option<Seat> {
        let me = view.get("you")?.get_str("public_key")?;
        if view.get_str("current_player") != Some(me) || view.get_str("phase") != Some("betting") {
            return None;
        }
        let legal = view.get("legal")?;
        let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64);
        Some(Seat {
            me: me.to_owned(),
            to_call: n(legal, "to_call")?,
            min_raise_to: n(legal, "min_raise_to")?,
            max_to: n(legal, "max_to")?,
            can_raise: legal.get("can_raise")?.as_bool()?,
            current_bet: n(view, "current_bet")?,
            pot: n(view, "pot_total")?,
        })
    }

    fn wager(&self, target: i64) -> Value {
        let kind = if self.current_bet == 0 {
            "bet"
        } else {
            "raise"
        };
        Value::Object(obj! { "kind" => kind, "amount" => target })
    }

    /// A legal bet or raise target near `want`: at least the minimum full
    /// raise, at most the stack (all in when the minimum does not fit).
    fn target(&self, want: i64) -> i64 {
        if self.min_raise_to >= self.max_to {
            self.max_to
        } else {
            want.clamp(self.min_raise_to, self.max_to)
        }
    }
}

impl Table for Holdem {
    fn legal_actions(&self, view: &Value) -> Vec<Value> {
        let Some(s) = Seat::of(view) else {
            return Vec::new();
        };
        let kind = |k: &str| Value::Object(obj! { "kind" => k });
        let mut out = vec![kind("fold")];
        out.push(kind(if s.to_call == 0 { "check" } else { "call" }));
        if s.can_raise {
            // The minimum full raise, a pot-sized raise and all in.
            let pot_raise = s
                .current_bet
                .saturating_add(s.to_call)
                .saturating_add(s.pot);
            let mut targets = vec![s.target(s.min_raise_to), s.target(pot_raise), s.max_to];
            targets.dedup();
            targets.sort_unstable();
            targets.dedup();
            out.extend(targets.into_iter().map(|t| s.wager(t)));
        }
        if s.can_raise || s.max_to <= s.current_bet {
            out.push(kind("all_in"));
        }
        out
    }

    fn bot_action(&self, view: &Value) -> Option<Value> {
        let s = Seat::of(view)?;
        let cards = |v: Option<&Value>| -> Vec<Face> {
            v.and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Face::of).collect())
                .unwrap_or_default()
        };
        let hole = cards(view.get("my_hand"));
        let board = cards(view.get("board"));
        let opponents = view
            .get("players")
            .and_then(Value::as_object)
            .map_or(1, |p| {
                p.iter()
                    .filter(|(k, p)| {
                        *k != s.me && p.get("folded").and_then(Value::as_bool) == Some(false)
                    })
                    .count()
            })
            .max(1);
        let seed = view
            .get("action_log")
            .and_then(Value::as_array)
            .map_or(0, Vec::len) as u64;
        let equity = equity(&hole, &board, opponents, 64, seed);
        let fair = 1.0 / (opponents as f64 + 1.0);
        let kind = |k: &str| Value::Object(obj! { "kind" => k });
        let pot = s.pot.max(1);
        if s.to_call == 0 {
            if s.can_raise && equity > (fair * 1.6).max(0.4) {
                let want = if equity > 0.75 { pot } else { pot / 2 };
                return Some(s.wager(s.target(s.current_bet.saturating_add(want))));
            }
            return Some(kind("check"));
        }
        let odds = s.to_call as f64 / (s.pot as f64 + s.to_call as f64);
        if s.can_raise && equity > (fair * 2.2).max(0.6) {
            let want = s.current_bet.saturating_add(s.to_call).saturating_add(pot);
            return Some(s.wager(s.target(want)));
        }
        if equity >= odds {
            return Some(kind("call"));
        }
        Some(kind("fold"))
    }

    /// Hold'em plays no cards from the hand: no selection is a play.
    fn is_legal_selection(&self, _view: &Value, _card_ids: &[String]) -> bool {
        false
    }
}

/// A rough share of the pot the hole cards win against `opponents` random
/// hands, by `trials` deals of the unseen cards (deterministic per `salt`).
fn equity(hole: &[Face], board: &[Face], opponents: usize, trials: usize, salt: u64) -> f64 {
    if hole.len() != 2 {
        return 0.0;
    }
    let known: Vec<Face> = hole.iter().chain(board.iter()).copied().collect();
    let unseen: Vec<Face> = (0..4u8)
        .flat_map(|suit| (2..=14u8).map(move |rank| Face { rank, suit }))
        .filter(|f| !known.contains(f))
        .collect();
    let need = 5usize.saturating_sub(board.len()) + 2 * opponents;
    if unseen.len() < need {
        return 0.0;
    }
    let mut seed = salt;
    for f in &known {
        seed = seed.wrapping_mul(0x100_0000_01b3) ^ (u64::from(f.rank) << 8) ^ u64::from(f.suit);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pool = unseen;
    let missing = 5 - board.len().min(5);
    let mut won = 0.0;
    let mut seven = [Face { rank: 2, suit: 0 }; 7];
    for _ in 0..trials {
        // The first `need` cards of the pool, shuffled into place.
        for i in 0..need {
            let j = rng.random_range(i..pool.len());
            pool.swap(i, j);
        }
        let full_board: Vec<Face> = board.iter().chain(&pool[..missing]).copied().collect();
        seven[2..].copy_from_slice(&full_board[..5]);
        seven[..2].copy_from_slice(hole);
        let mine = rank_direct(&seven);
        let (mut best, mut ties) = (None::<HandRank>, 0);
        for o in 0..opponents {
            let at = missing + 2 * o;
            seven[..2].copy_from_slice(&pool[at..at + 2]);
            let theirs = rank_direct(&seven);
            if best.is_none_or(|b| theirs > b) {
                best = Some(theirs);
            }
            ties += usize::from(theirs == mine);
        }
        match best {
            Some(b) if b > mine => {}
            Some(b) if b == mine => won += 1.0 / (ties as f64 + 1.0),
            _ => won += 1.0,
        }
    }
    won / trials as f64
}

#[cfg(test)]
mod tests {
    use super::super::tests::member;
    use super::*;
    use crate::engine::group::GroupHooks;

    #[test]
    fn the_bot_always_acts_legally() {
        let t = Holdem::new(&obj! { "deal_seed" => "unit" });
        let mut hooks = t.clone();
        let members: Vec<Value> = (0..4).map(member).collect();
        let mut state = hooks.initial_state(&members).unwrap();
        for _ in 0..200 {
            if state.get_str("phase") == Some("completed") {
                return;
            }
            let current = state.get_str("current_player").unwrap().to_owned();
            let me = members
                .iter()
                .find(|m| m.get_str("public_key") == Some(current.as_str()))
                .unwrap();
            let view = hooks.view(&state, me).unwrap();
            let a = t.bot_action(&view).unwrap();
            let legal = t.legal_actions(&view);
            assert!(
                legal.iter().any(|l| l.get("kind") == a.get("kind")),
                "{a:?} is none of {legal:?}"
            );
            state = hooks
                .handle(state.clone(), me, &a)
                .unwrap()
                .get("state")
                .cloned()
                .unwrap();
        }
        panic!("the bots did not finish eight hands in 200 actions");
    }
}
