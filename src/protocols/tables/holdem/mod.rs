//! texas-holdem-v1: four seats of no-limit Texas Hold'em with equal starting
//! stacks, played hand after hand. Each hand posts the blinds left of the
//! button, deals two private hole cards to every seat with chips, and bets
//! four streets (preflop, flop, turn, river; the leader burns one card
//! before each reveal). A bet or raise names its target (the street total);
//! a full raise must be at least the last full raise (the big blind when
//! opening), an all-in may be short, and a short all-in does not reopen the
//! raise for a seat that already acted. When one seat is left it takes the
//! pot uncontested; otherwise the best five of seven cards win, the one
//! unmatched excess is refunded, and the chips go to a main pot and side
//! pots, split on ties with odd chips clockwise from the button. The match
//! ends after `max_hands` hands or when one seat holds every chip; the
//! outcome is the seat with the most chips (the earliest seat on a tie).
//!
//! The rules, events, refusal texts and state shape are those of the
//! reference's hooks.py of this protocol (ba17afdc…) with its helpers
//! `proto/poker.py` and `proto/shared_deck.py`, checked line by line by
//! tests/tables_hooks.rs. Where the reference is odd, this is odd the same
//! way: an action's event has the action's kind (`"call"`, not
//! `"holdem_action"`), and with two live seats the button posts the big
//! blind. A hand that needs no decision (both blinds all in, nobody else
//! with chips; with chips conserved only a hand-made checkpoint gets there)
//! is played out at once with its events unseen, and when that ends the
//! match the result does not say `completed` (the state's phase does).
//!
//! By job: `hand` is the typed table state (a hand's start and end);
//! `round` is the part of it an action reads and changes, written back
//! into the state in place; `betting` deals a hand and takes its bets
//! (on the state in place); `streets` reveals the board and ends the hand
//! (showdown, pots, the next hand or the match's end); `poker` ranks
//! hands and builds the side pots; `bot` is what a seat may send and a
//! bot's choice. The rules as [`GroupHooks`] are here.

mod betting;
mod bot;
mod hand;
mod poker;
mod round;
mod streets;

pub use poker::{
    HandRank, Pot, best_poker_hand, build_side_pots, normalize_uncalled_contributions,
};

use super::deck;
use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Value};
use crate::obj;
use hand::{Hand, Outcome};

type Hooked<T> = Result<T, HookFailure>;

/// Chips by public key, in the state's order.
type Ledger = Vec<(String, i64)>;

/// `proto_host_metadata` of texas-holdem-v1.
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        display_name: "Four-seat No-limit Texas Hold'em".into(),
        tags: "game,cards,multiplayer,poker,holdem".into(),
        invite_type: "supply".into(),
        default_options: Map::new(),
    }
}

/// The rules of texas-holdem-v1.
#[derive(Debug, Clone, Default)]
pub struct Holdem {
    options: Map,
}

impl Holdem {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }

    fn option_int(&self, name: &str, default: i64, min: i64, max: i64) -> Hooked<i64> {
        super::option_int(&self.options, name, default, min, max)
    }

    fn small_blind(&self) -> Hooked<i64> {
        self.option_int("small_blind", 5, 1, 10000)
    }

    fn big_blind(&self) -> Hooked<i64> {
        self.option_int("big_blind", 10, 2, 20000)
    }

    fn starting_stack(&self) -> Hooked<i64> {
        self.option_int("starting_stack", 1000, 100, 100000)
    }

    fn max_hands(&self) -> Hooked<i64> {
        self.option_int("max_hands", 8, 1, 100)
    }
}

impl GroupHooks for Holdem {
    fn initial_state(&mut self, members: &[Value]) -> Hooked<Value> {
        let stack = self.starting_stack()?;
        let small_blind = self.small_blind()?;
        let big_blind = self.big_blind()?;
        if small_blind >= big_blind {
            return Err("small_blind must be lower than big_blind".into());
        }
        if big_blind > stack {
            return Err("big_blind cannot exceed starting_stack".into());
        }
        self.max_hands()?;
        let ordered = active_members(members)?;
        let stacks: Ledger = ordered.iter().map(|(k, _)| (k.clone(), stack)).collect();
        self.new_hand(&ordered, &stacks, 1, 0, 0, "")
            .map(Value::Object)
    }

    fn member_joined(&mut self, state: Value, member: &Value) -> Hooked<Value> {
        let event = obj! {
            "kind" => "member_rejoined",
            "public_key" => key(member, "public_key")?.clone(),
            "seat" => key(member, "seat")?.clone(),
        };
        Ok(super::result_value(state, vec![Value::Object(event)]))
    }

    fn member_left(&mut self, state: Value, member: &Value, reason: &str) -> Hooked<Value> {
        let event = obj! {
            "kind" => "member_disconnected",
            "public_key" => key(member, "public_key")?.clone(),
            "reason" => reason,
        };
        Ok(super::result_value(state, vec![Value::Object(event)]))
    }

    fn handle(&mut self, state: Value, actor: &Value, action: &Value) -> Hooked<Value> {
        let Value::Object(s) = state else {
            return Err("the Hold'em state is not an object".into());
        };
        let phase = betting::text(&s, "phase")?;
        if phase == "completed" {
            return Err("the Hold'em match is complete".into());
        }
        if key(actor, "public_key")?.as_str() != Some(betting::text(&s, "current_player")?) {
            return Err("it is not this Member's turn to act".into());
        }
        if phase != "betting" {
            return Err("the table is not accepting betting actions".into());
        }
        self.handle_bet(s, actor, action).map(Outcome::into_value)
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> Hooked<Value> {
        let h = Hand::public(state)?;
        let pk = key(viewer, "public_key")?
            .as_str()
            .ok_or("viewer does not own a hand")?
            .to_owned();
        let deck = key(state, "deck")?
            .as_object()
            .ok_or("the Hold'em state's deck is not an object")?;
        let dv = deck::private_view(deck, &pk, &["burn"])?;
        let board = dv
            .get("zones")
            .and_then(|z| z.get("board"))
            .and_then(|b| b.get("table"))
            .cloned()
            .unwrap_or(Value::Array(Vec::new()));
        let board_count = board.as_array().map_or(0, Vec::len);
        let p = h.player(&pk)?;
        let to_call = (h.current_bet - p.street_contribution).max(0);
        let legal = obj! {
            "to_call" => to_call,
            "min_raise_to" => h.current_bet + h.last_full_raise,
            "max_to" => p.street_contribution + p.stack,
            "can_raise" => !h.acted_since_full_raise.contains(&pk) && p.stack > to_call,
        };
        let pot_total: i64 = h.contributions.iter().map(|(_, a)| a).sum();
        let mut all = h.into_map();
        let mut take = |k: &str| all.remove(k).unwrap_or(Value::Null);
        let mut v = Map::with_capacity(26);
        for k in [
            "phase",
            "street",
            "hand_number",
            "restart_count",
            "recovery_notice",
            "turn_order",
            "players",
            "button",
            "small_blind_player",
            "big_blind_player",
            "current_player",
            "current_bet",
            "last_full_raise",
        ] {
            v.insert(k, take(k));
        }
        v.insert("pot_total", Value::from(pot_total));
        v.insert("contributions", take("contributions"));
        v.insert("board", board);
        v.insert("board_count", Value::from(board_count));
        v.insert("my_hand", dv.get("my_hand").cloned().unwrap_or(Value::Null));
        v.insert(
            "hand_counts",
            dv.get("hand_counts").cloned().unwrap_or(Value::Null),
        );
        for k in [
            "action_log",
            "showdown_hands",
            "pot_results",
            "uncalled_refunds",
        ] {
            v.insert(k, take(k));
        }
        v.insert("legal", Value::Object(legal));
        v.insert(
            "you",
            Value::Object(obj! {
                "public_key" => pk.as_str(), "seat" => key(viewer, "seat")?.clone(),
            }),
        );
        Ok(Value::Object(v))
    }

    fn recovery_snapshot(&mut self, state: &Value) -> Hooked<Value> {
        let mut out = Map::with_capacity(4);
        for k in [
            "hand_number",
            "button_index",
            "restart_count",
            "hand_start_stacks",
        ] {
            out.insert(k, key(state, k)?.clone());
        }
        Ok(Value::Object(out))
    }

    fn restore(&mut self, checkpoint: Value, members: &[Value], _epoch: u64) -> Hooked<Value> {
        let ordered = active_members(members)?;
        let Value::Object(cp) = &checkpoint else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                checkpoint.py_type_name()
            ));
        };
        let empty = Value::Object(Map::new());
        let start = cp.get("hand_start_stacks").unwrap_or(&empty);
        let Value::Object(start) = start else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                start.py_type_name()
            ));
        };
        let mut stacks = Vec::with_capacity(4);
        for (pk, _) in &ordered {
            let default = self.starting_stack()?;
            let s = match start.get(pk) {
                Some(v) => py_int_of(v)?,
                None => default,
            };
            stacks.push((pk.clone(), s));
        }
        let int_or = |k: &str, d: i64| cp.get(k).map(py_int_of).unwrap_or(Ok(d));
        let hand_number = int_or("hand_number", 1)?;
        let button_index = int_or("button_index", 0)?;
        let restart_count = int_or("restart_count", 0)?.saturating_add(1);
        self.new_hand(
            &ordered,
            &stacks,
            hand_number,
            button_index,
            restart_count,
            "The interrupted hand was refunded and redealt after a Leader change.",
        )
        .map(Value::Object)
    }

    fn on_leader_changed(&mut self, state: Value, old: &str, new: &str) -> Hooked<Value> {
        super::leader_changed(
            state,
            (old, new),
            "the interrupted hand was refunded",
            "hand_restarted_after_leader_change",
            "hand_number",
        )
    }
}

/// Members with `status == "active"`, by seat (exactly four).
fn active_members(members: &[Value]) -> Hooked<Ledger> {
    let mut active = Vec::with_capacity(4);
    for m in members {
        if m.get_str("status") == Some("active") {
            let seat = py_int_of(key(m, "seat")?)?;
            active.push((m, seat));
        }
    }
    active.sort_by_key(|(_, seat)| *seat);
    if active.len() != 4 {
        return Err("Texas Hold'em requires exactly four active Members".into());
    }
    active
        .into_iter()
        .map(|(m, seat)| {
            let pk = key(m, "public_key")?;
            pk.as_str()
                .map(|s| (s.to_owned(), seat))
                .ok_or_else(|| "a member's public_key is not a string".into())
        })
        .collect()
}

fn next_key(order: &[String], pk: &str) -> String {
    let i = order.iter().position(|k| k == pk).unwrap_or(0);
    order
        .get((i + 1) % order.len().max(1))
        .cloned()
        .unwrap_or_default()
}

/// `obj[k]`, or Python's KeyError text.
fn key<'a>(v: &'a Value, k: &str) -> Hooked<&'a Value> {
    v.get(k).ok_or_else(|| format!("'{k}'"))
}

/// Python's `int()` of a JSON value, with Python's refusal texts.
fn py_int_of(v: &Value) -> Hooked<i64> {
    match v {
        Value::Null | Value::Array(_) | Value::Object(_) => Err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            v.py_type_name()
        )),
        _ => super::py_int(v),
    }
}

fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::from(s.as_str())).collect())
}

fn pairs(v: &[(String, i64)]) -> Map {
    let mut m = Map::with_capacity(v.len());
    for (k, n) in v {
        m.insert(k.as_str(), Value::from(*n));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seat `n`'s member: `pk{n}`, active (for every file's tests).
    pub(super) fn member(n: i64) -> Value {
        Value::Object(obj! {
            "public_key" => format!("pk{n}"), "seat" => n, "status" => "active",
        })
    }

    /// Seat `n` sends `action`.
    pub(super) fn act(t: &mut Holdem, state: Value, n: i64, action: Map) -> Result<Value, String> {
        t.handle(state, &member(n), &Value::Object(action))
    }

    /// The kinds of a hook result's events.
    pub(super) fn kinds(out: &Value) -> Vec<String> {
        out.get("events")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|e| e.get_str("kind").unwrap().to_owned())
            .collect()
    }

    #[test]
    fn a_forged_checkpoint_is_refused_not_panicked() {
        let mut t = Holdem::new(&obj! { "deal_seed" => "unit" });
        let members: Vec<Value> = (0..4).map(member).collect();
        let huge = Value::from(i64::MAX);
        let forged = |stacks: Map, extra: Map| {
            let mut cp = obj! { "hand_start_stacks" => Value::Object(stacks) };
            for (k, v) in extra.iter() {
                cp.insert(k, v.clone());
            }
            Value::Object(cp)
        };
        let err = t
            .restore(
                forged(
                    obj! { "pk0" => huge.clone(), "pk1" => huge.clone(), "pk2" => 5, "pk3" => 5 },
                    Map::new(),
                ),
                &members,
                2,
            )
            .unwrap_err();
        assert!(err.contains("chips"), "{err}");
        let cases = [
            (
                obj! { "pk0" => -1 },
                Map::new(),
                "every Member must have a non-negative stack",
            ),
            (
                obj! { "pk0" => 0, "pk1" => 0, "pk2" => 0 },
                Map::new(),
                "at least two Members need chips to start a hand",
            ),
            (
                obj! { "pk0" => Value::Null },
                Map::new(),
                "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'",
            ),
            (
                Map::new(),
                obj! { "hand_number" => "x" },
                "invalid literal for int() with base 10: 'x'",
            ),
        ];
        for (stacks, extra, text) in cases {
            assert_eq!(
                t.restore(forged(stacks, extra), &members, 2).unwrap_err(),
                text
            );
        }
        assert_eq!(
            t.restore(Value::Array(Vec::new()), &members, 2)
                .unwrap_err(),
            "'list' object has no attribute 'get'"
        );
        // Odd but accepted, as in the reference: a far-off button and
        // hand number.
        let odd = forged(
            Map::new(),
            obj! { "button_index" => -7, "hand_number" => i64::MAX, "restart_count" => i64::MAX },
        );
        let state = t.restore(odd, &members, 2).unwrap();
        assert_eq!(state.get("button_index").and_then(Value::as_i64), Some(1));
    }
}
