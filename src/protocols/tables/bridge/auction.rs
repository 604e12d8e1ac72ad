//! The auction: each call (pass, bid, double, redouble) checked and
//! recorded, a bid's rank, four passes passing the board out, and the
//! contract, declarer, dummy and opening lead once three passes follow a
//! bid.

use super::{
    Bridge, Hooked, action_kind, actor_pk, arr, arr_mut, completed, next_key, py_mod, team_of,
};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::{hook_result, int, obj, py_int, text};

/// The denominations in bidding order.
pub const DENOMINATIONS: [&str; 5] = ["clubs", "diamonds", "hearts", "spades", "nt"];

impl Bridge {
    pub(super) fn call(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        let kind = action_kind(action)?;
        let pk = actor_pk(actor)?.unwrap_or_default().to_owned();
        let seat = py_int(actor.get("seat").ok_or("'seat'")?)?;
        let mut call = obj! {
            "public_key" => pk.as_str(), "seat" => seat, "kind" => kind.cloned().unwrap_or(Value::Null),
        };
        match kind.and_then(Value::as_str) {
            Some("pass") => {
                let passes = int(&state, "consecutive_passes").saturating_add(1);
                state.insert("consecutive_passes", Value::from(passes));
            }
            Some("bid") => {
                let level = action
                    .get("level")
                    .and_then(Value::as_i64)
                    .filter(|l| (1..=7).contains(l));
                let denomination = action
                    .get("denomination")
                    .and_then(Value::as_str)
                    .filter(|d| DENOMINATIONS.contains(d));
                let (Some(level), Some(denomination)) = (level, denomination) else {
                    return Err("a bid requires level 1-7 and a valid denomination".into());
                };
                let candidate = bid_value(level, denomination);
                if let Some(last) = state.get("last_bid").and_then(Value::as_object)
                    && candidate <= int(last, "value")
                {
                    return Err("a new bid must outrank the current contract".into());
                }
                call.insert("level", Value::from(level));
                call.insert("denomination", Value::from(denomination));
                call.insert("value", Value::from(candidate));
                state.insert("last_bid", Value::Object(call.clone()));
                state.insert("doubled", Value::from(0));
                state.insert("last_non_pass", Value::from("bid"));
                state.insert("consecutive_passes", Value::from(0));
            }
            Some("double") => {
                if !can_double(&state, &pk) {
                    return Err("double is not legal in the current auction".into());
                }
                state.insert("doubled", Value::from(1));
                state.insert("last_non_pass", Value::from("double"));
                state.insert("consecutive_passes", Value::from(0));
            }
            Some("redouble") => {
                if !can_redouble(&state, &pk) {
                    return Err("redouble is not legal in the current auction".into());
                }
                state.insert("doubled", Value::from(2));
                state.insert("last_non_pass", Value::from("redouble"));
                state.insert("consecutive_passes", Value::from(0));
            }
            _ => return Err("auction accepts pass, bid, double, or redouble".into()),
        }
        arr_mut(&mut state, "auction")?.push(Value::Object(call.clone()));
        // The reference's `{"kind": "bridge_call", **call}`: the call's own
        // kind wins.
        let mut event = obj! { "kind" => "bridge_call" };
        for (k, v) in call.iter() {
            event.insert(k, v.clone());
        }
        let mut events = vec![Value::Object(event)];
        let has_bid = state.get("last_bid").is_some_and(|b| !b.is_null());
        let calls = state
            .get("auction")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if !has_bid && calls == 4 {
            state.insert("phase", Value::from("completed"));
            events.push(Value::Object(obj! { "kind" => "board_passed_out" }));
            return Ok(completed(state, events, "passed_out"));
        }
        if has_bid && int(&state, "consecutive_passes") >= 3 {
            start_play(&mut state)?;
            events.push(Value::Object(obj! {
                "kind" => "contract_set",
                "contract" => state.get("contract").cloned().unwrap_or(Value::Null),
                "declarer" => text(&state, "declarer"),
                "dummy" => text(&state, "dummy"),
            }));
            return Ok(hook_result(state, events));
        }
        let next = next_key(&state, &pk);
        state.insert("current_player", Value::from(next));
        Ok(hook_result(state, events))
    }
}

/// A bid's rank: `(level - 1) * 5 + denomination index`.
pub fn bid_value(level: i64, denomination: &str) -> i64 {
    let d = DENOMINATIONS
        .iter()
        .position(|x| *x == denomination)
        .unwrap_or(0);
    (level - 1) * 5 + d as i64
}

/// The (level, denomination) of a bid's rank 0–34.
pub(super) fn bid_of_value(value: i64) -> (i64, &'static str) {
    (value / 5 + 1, DENOMINATIONS[value.rem_euclid(5) as usize])
}

fn last_bidder(state: &Map) -> Option<String> {
    state
        .get("last_bid")
        .and_then(|b| b.get_str("public_key"))
        .map(str::to_owned)
}

fn can_double(state: &Map, pk: &str) -> bool {
    match last_bidder(state) {
        Some(bidder) => {
            int(state, "doubled") == 0
                && text(state, "last_non_pass") == "bid"
                && team_of(state, pk) != team_of(state, &bidder)
        }
        None => false,
    }
}

fn can_redouble(state: &Map, pk: &str) -> bool {
    match last_bidder(state) {
        Some(bidder) => {
            int(state, "doubled") == 1
                && text(state, "last_non_pass") == "double"
                && team_of(state, pk) == team_of(state, &bidder)
        }
        None => false,
    }
}

/// Ends the auction: the contract, the declarer (the first of the last
/// bidder's side to name its denomination), the dummy and the opening lead.
fn start_play(state: &mut Map) -> Hooked<()> {
    let last = obj(state, "last_bid");
    let team = team_of(state, last.get_str("public_key").unwrap_or_default());
    let denomination = last.get_str("denomination").unwrap_or_default().to_owned();
    let declarer = arr(state, "auction")
        .iter()
        .find(|c| {
            c.get_str("kind") == Some("bid")
                && c.get_str("denomination") == Some(denomination.as_str())
                && team_of(state, c.get_str("public_key").unwrap_or_default()) == team
        })
        .and_then(|c| c.get_str("public_key"))
        .ok_or("StopIteration")?
        .to_owned();
    let seat = state
        .get("players")
        .and_then(|p| p.get(&declarer))
        .and_then(|p| p.get("seat"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let order = arr(state, "turn_order");
    let at = |k: i64| {
        order
            .get(py_mod(i128::from(seat) + i128::from(k), 4))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (dummy, leader) = (at(2), at(1));
    let doubled = state.get("doubled").cloned().unwrap_or(Value::Null);
    state.insert(
        "contract",
        Value::Object(obj! {
            "level" => int(&last, "level"), "denomination" => denomination, "doubled" => doubled,
            "partnership" => team,
        }),
    );
    state.insert("declarer", Value::from(declarer));
    state.insert("dummy", dummy);
    state.insert("phase", Value::from("playing"));
    state.insert("current_hand_owner", leader.clone());
    state.insert("current_player", leader);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::bot::{bid_action, call_action};
    use super::super::tests::{act, members};
    use super::*;
    use crate::engine::group::GroupHooks;

    #[test]
    fn the_auction_follows_the_rules() {
        let mut b = Bridge::new(&obj! { "deal_seed" => "unit", "board_number" => 2 });
        let s = b.initial_state(&members()).unwrap();
        // Board 2: east deals, north–south vulnerable.
        assert_eq!(s.get_str("dealer"), Some("pk1"));
        assert_eq!(s.get_str("vulnerability"), Some("ns"));
        assert_eq!(
            act(&mut b, s.clone(), 0, call_action("pass")).unwrap_err(),
            "it is not this Member's turn to call"
        );
        assert_eq!(
            act(&mut b, s.clone(), 1, call_action("double")).unwrap_err(),
            "double is not legal in the current auction"
        );
        let s = act(&mut b, s, 1, bid_action(1, "hearts")).unwrap();
        assert_eq!(
            act(&mut b, s.clone(), 2, bid_action(1, "diamonds")).unwrap_err(),
            "a new bid must outrank the current contract"
        );
        assert_eq!(
            act(&mut b, s.clone(), 2, call_action("redouble")).unwrap_err(),
            "redouble is not legal in the current auction"
        );
        assert_eq!(
            act(&mut b, s.clone(), 2, bid_action(8, "nt")).unwrap_err(),
            "a bid requires level 1-7 and a valid denomination"
        );
        let s = act(&mut b, s, 2, call_action("double")).unwrap();
        let s = act(&mut b, s, 3, call_action("redouble")).unwrap();
        let s = act(&mut b, s, 0, bid_action(2, "spades")).unwrap();
        assert_eq!(s.get("doubled").and_then(Value::as_i64), Some(0));
        let s = act(&mut b, s, 1, call_action("pass")).unwrap();
        let s = act(&mut b, s, 2, bid_action(4, "spades")).unwrap();
        let s = act(&mut b, s, 3, call_action("pass")).unwrap();
        let s = act(&mut b, s, 0, call_action("pass")).unwrap();
        let out = b
            .handle(s, &members()[1], &call_action("pass"))
            .expect("the third pass");
        let s = out.get("state").unwrap();
        // North named spades first for north–south: north declares, south
        // is dummy, east leads.
        assert_eq!(s.get_str("phase"), Some("playing"));
        assert_eq!(s.get_str("declarer"), Some("pk0"));
        assert_eq!(s.get_str("dummy"), Some("pk2"));
        assert_eq!(s.get_str("current_player"), Some("pk1"));
        let events = out.get("events").and_then(Value::as_array).unwrap();
        assert_eq!(events[0].get_str("kind"), Some("pass"));
        assert_eq!(events[1].get_str("kind"), Some("contract_set"));
    }

    #[test]
    fn four_passes_pass_the_board_out() {
        let mut b = Bridge::new(&obj! { "deal_seed" => "unit" });
        let mut s = b.initial_state(&members()).unwrap();
        for seat in 0..3 {
            s = act(&mut b, s, seat, call_action("pass")).unwrap();
        }
        let out = b.handle(s, &members()[3], &call_action("pass")).unwrap();
        assert_eq!(out.get("completed"), Some(&Value::Bool(true)));
        assert_eq!(out.get_str("outcome"), Some("passed_out"));
        let s = out.get("state").cloned().unwrap();
        assert_eq!(
            act(&mut b, s, 0, call_action("pass")).unwrap_err(),
            "the board is complete"
        );
    }
}
