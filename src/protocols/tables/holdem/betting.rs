//! A hand's deal and its bets: the blinds posted and the hole cards
//! dealt (`new_hand`), then each seat's fold, check, call, bet,
//! raise or all-in checked and applied, with the full-raise rule that
//! decides who may raise again.

use super::hand::{Hand, Outcome, Player};
use super::poker::standard_faces;
use super::round::{Patch, Round, SEATS, Seats};
use super::{Holdem, Hooked, next_key, py_int_of};
use crate::json::{Map, Number, Value};
use crate::obj;
use crate::protocols::tables::{deck, new_seed};
use std::sync::LazyLock;

/// The 52 faces, serialised once for every hand's deck.
static FACES: LazyLock<deck::Faces> = LazyLock::new(|| deck::Faces::new(standard_faces()));

const RANGE: &str = "raise target must exceed the wager and fit the stack";

/// The most chips a table holds (every sum of stacks and wagers fits in
/// an `i64` many times over).
const MAX_CHIPS: i64 = 1 << 52;

impl Holdem {
    /// `_new_hand`: blinds posted, hole cards dealt, the first seat to act
    /// set (or, when nobody can act, the hand played out).
    pub(super) fn new_hand(
        &self,
        members: &[(String, i64)],
        stacks: &[(String, i64)],
        hand_number: i64,
        button_index: i64,
        restart_count: i64,
        notice: &str,
    ) -> Hooked<Map> {
        if members.len() != 4 {
            return Err("Texas Hold'em requires exactly four active Members".into());
        }
        let order: Vec<String> = members.iter().map(|(pk, _)| pk.clone()).collect();
        let stack_of = |pk: &str| stacks.iter().find(|(k, _)| k == pk).map(|(_, s)| *s);
        if order.iter().any(|k| stack_of(k).is_none_or(|s| s < 0)) {
            return Err("every Member must have a non-negative stack".into());
        }
        let live: Vec<&String> = order
            .iter()
            .filter(|k| stack_of(k).unwrap_or(0) > 0)
            .collect();
        if live.len() < 2 {
            return Err("at least two Members need chips to start a hand".into());
        }
        // Python's integers do not overflow; these do, so the chips on the
        // table stay far below the limit (only a forged checkpoint is near).
        let total = order
            .iter()
            .try_fold(0i64, |sum, k| sum.checked_add(stack_of(k).unwrap_or(0)));
        if total.is_none_or(|t| t > MAX_CHIPS) {
            return Err(format!("the stacks hold more than {MAX_CHIPS} chips"));
        }
        let is_live = |k: &str| live.iter().any(|l| *l == k);
        let mut button_index = button_index.rem_euclid(4);
        while !is_live(&order[button_index as usize]) {
            button_index = (button_index + 1) % 4;
        }
        let button = order[button_index as usize].clone();
        let next_live = |from: &str| {
            let mut candidate = next_key(&order, from);
            while !is_live(&candidate) {
                candidate = next_key(&order, &candidate);
            }
            candidate
        };
        let small_blind_player = next_live(&button);
        let big_blind_player = next_live(&small_blind_player);
        let seed = new_seed(&self.options, hand_number, restart_count);
        let deck_members: Vec<Value> = members
            .iter()
            .map(|(pk, seat)| {
                Value::Object(
                    obj! { "public_key" => pk.as_str(), "seat" => *seat, "status" => "active" },
                )
            })
            .collect();
        let mut deck = deck::create_from(&FACES, &deck_members, 0, &seed, 1)?;
        // Two rounds of one card to every seat with chips.
        let live_keys = order.iter().filter(|k| is_live(k)).map(String::as_str);
        let rounds: Vec<&str> = live_keys.clone().chain(live_keys).collect();
        deck::draw_each(&mut deck, &rounds)?;
        let players = members
            .iter()
            .map(|(pk, seat)| {
                let p = Player {
                    seat: *seat,
                    stack: stack_of(pk).unwrap_or(0),
                    folded: !is_live(pk),
                    ..Player::default()
                };
                (pk.clone(), p)
            })
            .collect();
        let mut h = Hand {
            phase: "betting".into(),
            street: "preflop".into(),
            hand_number,
            button_index,
            restart_count,
            recovery_notice: notice.to_owned(),
            turn_order: order.clone(),
            players,
            button,
            small_blind_player: small_blind_player.clone(),
            big_blind_player: big_blind_player.clone(),
            current_player: String::new(),
            current_bet: 0,
            last_full_raise: self.big_blind()?,
            pending: Vec::new(),
            acted_since_full_raise: Vec::new(),
            contributions: order.iter().map(|k| (k.clone(), 0)).collect(),
            hand_start_stacks: order
                .iter()
                .map(|k| (k.clone(), stack_of(k).unwrap_or(0)))
                .collect(),
            action_log: Vec::new(),
            showdown_hands: Map::new(),
            pot_results: Vec::new(),
            uncalled_refunds: order.iter().map(|k| (k.clone(), 0)).collect(),
            deck,
        };
        h.commit(&small_blind_player, self.small_blind()?)?;
        h.commit(&big_blind_player, self.big_blind()?)?;
        h.current_bet = h
            .player(&small_blind_player)?
            .street_contribution
            .max(h.player(&big_blind_player)?.street_contribution);
        let start = next_key(&h.turn_order, &big_blind_player);
        h.pending = h.ordered_eligible(&start);
        if h.pending.is_empty() {
            // Nobody can act: the board runs out and the hand ends here
            // (its events are not reported, as in the reference).
            return self.run_remaining_board(h, Vec::new()).map(|o| o.state);
        }
        h.current_player = h.pending[0].clone();
        Ok(h.into_map())
    }

    /// A betting action on the state, changed in place: only the seats,
    /// the wager and the log the action touches are written (the whole
    /// state is rebuilt only when the hand ends).
    pub(super) fn handle_bet(&self, s: Map, actor: &Value, action: &Value) -> Hooked<Outcome> {
        let Value::Object(action) = action else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                action.py_type_name()
            ));
        };
        let kind = match action.get("kind") {
            Some(Value::String(s)) => &**s,
            Some(v @ (Value::Array(_) | Value::Object(_))) => {
                return Err(format!("unhashable type: '{}'", v.py_type_name()));
            }
            // Anything else matches no kind.
            _ => "\u{0}",
        };
        let mut r = Round::read(&s)?;
        let me = r.seat_of(text(&s, "current_player")?)?;
        let (street_before, stack_before) = {
            let p = &r.seats[me];
            (p.street_contribution, p.stack)
        };
        let to_call = (r.current_bet - street_before).max(0);
        let (mut full_raise, mut increased) = (false, false);
        match kind {
            "fold" => r.seats[me].folded = true,
            "check" => {
                if to_call != 0 {
                    return Err("check is illegal while facing a wager".into());
                }
            }
            "call" => {
                if to_call <= 0 {
                    return Err("there is no wager to call".into());
                }
                r.commit(me, to_call.min(stack_before))?;
            }
            "bet" | "raise" => {
                let target = action.get("amount");
                let target = match target {
                    Some(Value::Number(Number::Int(n))) => Some(*n),
                    // An integer beyond 64 bits: below any wager or above
                    // any stack, refused by the range check below.
                    Some(Value::Number(Number::BigInt(_))) => None,
                    _ => return Err("bet or raise amount must be an integer target".into()),
                };
                if kind == "bet" && r.current_bet != 0 {
                    return Err("bet is legal only when no wager exists".into());
                }
                if kind == "raise" && r.current_bet == 0 {
                    return Err("use bet when no wager exists".into());
                }
                let target = target.ok_or(RANGE)?;
                (full_raise, increased) = self.raise_to(&mut r, me, target, false)?;
            }
            "all_in" => {
                let target = street_before + stack_before;
                if target <= r.current_bet {
                    r.commit(me, stack_before)?;
                } else {
                    (full_raise, increased) = self.raise_to(&mut r, me, target, true)?;
                }
            }
            _ => return Err("betting accepts fold, check, call, bet, raise, or all_in".into()),
        }
        let seat = py_int_of(actor.get("seat").ok_or("'seat'")?)?;
        let (amount, stack) = (r.seats[me].street_contribution, r.seats[me].stack);
        // The strings as the state and the action hold them (copies share
        // the text).
        text(&s, "street")?;
        let (pk, street) = (r.key(me), s.get("street").cloned().unwrap_or_default());
        let kind = action.get("kind").cloned().unwrap_or_default();
        let log = obj! {
            "street" => street.clone(), "public_key" => pk.clone(), "seat" => seat,
            "kind" => kind.clone(), "amount" => amount, "stack" => stack,
        };
        // `{"kind": "holdem_action", **log}`: the log's kind wins.
        let events = vec![Value::Object(obj! {
            "kind" => kind, "street" => street, "public_key" => pk,
            "seat" => seat, "amount" => amount, "stack" => stack,
        })];
        let mut patch = Patch::default();
        patch.list(&s, "action_log", 1)?.push(Value::Object(log));

        let mut remaining = (0..SEATS).filter(|&k| !r.seats[k].folded);
        if let (Some(winner), None) = (remaining.next(), remaining.next()) {
            r.write(&s, &mut patch)?;
            let winner = r.order[winner].to_owned();
            let h = Hand::from_value(Value::Object(patch.apply(&s)))?;
            return self.award_uncontested(h, &winner, events);
        }
        let start = r.next(me);
        if full_raise {
            r.acted = Seats::one(me);
            r.pending = r.ordered_eligible(start).filter(|k| k != me);
        } else if increased {
            if !r.acted.contains(me) {
                r.acted.push(me);
            }
            r.pending = r
                .ordered_eligible(start)
                .filter(|k| r.seats[k].street_contribution < r.current_bet);
        } else {
            if !r.acted.contains(me) {
                r.acted.push(me);
            }
            r.pending = r.pending.filter(|k| k != me && r.can_act(k));
        }
        if let Some(first) = r.pending.first() {
            r.write(&s, &mut patch)?;
            patch.set("current_player", r.key(first));
            return Ok(Outcome {
                state: patch.apply(&s),
                events,
                winner: None,
            });
        }
        self.advance_street(&s, patch, r, events)
    }

    /// `_raise_to`: (a full raise?, the wager increased?).
    fn raise_to(&self, r: &mut Round, me: usize, target: i64, force: bool) -> Hooked<(bool, bool)> {
        let (street, stack) = (r.seats[me].street_contribution, r.seats[me].stack);
        let maximum = street + stack;
        if target <= r.current_bet || target > maximum {
            return Err(RANGE.into());
        }
        if r.acted.contains(me) {
            return Err("a short all-in did not reopen this Member's raise".into());
        }
        let raise_size = target - r.current_bet;
        let minimum = if r.current_bet == 0 {
            self.big_blind()?
        } else {
            r.last_full_raise
        };
        let is_all_in = target == maximum;
        if raise_size < minimum && !(is_all_in || force) {
            return Err("raise target is below the minimum full raise".into());
        }
        r.commit(me, target - street)?;
        r.current_bet = target;
        if raise_size >= minimum {
            r.last_full_raise = raise_size;
            return Ok((true, true));
        }
        Ok((false, true))
    }
}

/// The state's string at `k`.
pub(super) fn text<'a>(s: &'a Map, k: &str) -> Hooked<&'a str> {
    s.get(k)
        .ok_or_else(|| format!("'{k}'"))?
        .as_str()
        .ok_or_else(|| format!("the Hold'em state's {k} is not a string"))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{act, kinds, member};
    use super::*;
    use crate::engine::group::GroupHooks;
    use crate::protocols::tables::Table;

    #[test]
    fn a_short_all_in_does_not_reopen_the_raise() {
        let mut t = Holdem::new(&obj! { "deal_seed" => "unit" });
        let members: Vec<Value> = (0..4).map(member).collect();
        let checkpoint = obj! {
            "hand_number" => 1, "button_index" => 0, "restart_count" => 0,
            "hand_start_stacks" => Value::Object(obj! { "pk0" => 15, "pk1" => 1000, "pk2" => 1000, "pk3" => 1000 }),
        };
        let state = t.restore(Value::Object(checkpoint), &members, 2).unwrap();
        assert_eq!(state.get("restart_count").and_then(Value::as_i64), Some(1));
        let step = |t: &mut Holdem, s: Value, n: i64, a: Map| {
            act(t, s, n, a).unwrap().get("state").cloned().unwrap()
        };
        let s = step(&mut t, state, 3, obj! { "kind" => "call" });
        let s = step(&mut t, s, 0, obj! { "kind" => "all_in" });
        assert_eq!(s.get("current_bet").and_then(Value::as_i64), Some(15));
        let s = step(&mut t, s, 1, obj! { "kind" => "call" });
        // The big blind has not acted: it may raise, by a full raise.
        assert_eq!(
            act(
                &mut t,
                s.clone(),
                2,
                obj! { "kind" => "raise", "amount" => 24 }
            )
            .unwrap_err(),
            "raise target is below the minimum full raise"
        );
        let s = step(&mut t, s, 2, obj! { "kind" => "call" });
        let view = t.view(&s, &member(3)).unwrap();
        assert_eq!(
            view.get("legal").unwrap().get("can_raise"),
            Some(&Value::Bool(false))
        );
        assert!(
            t.legal_actions(&view)
                .iter()
                .all(|a| { !matches!(a.get_str("kind"), Some("raise" | "bet" | "all_in")) })
        );
        for a in [
            obj! { "kind" => "raise", "amount" => 100 },
            obj! { "kind" => "all_in" },
        ] {
            assert_eq!(
                act(&mut t, s.clone(), 3, a).unwrap_err(),
                "a short all-in did not reopen this Member's raise"
            );
        }
        let out = act(&mut t, s, 3, obj! { "kind" => "call" }).unwrap();
        assert_eq!(kinds(&out), ["call", "holdem_street"]);
    }

    #[test]
    fn amounts_are_checked_as_python_checks_them() {
        let mut t = Holdem::new(&obj! { "deal_seed" => "unit" });
        let members: Vec<Value> = (0..4).map(member).collect();
        let state = t.initial_state(&members).unwrap();
        let refuse =
            |t: &mut Holdem, a: Value| t.handle(state.clone(), &member(3), &a).unwrap_err();
        for amount in [
            Value::from(20.0),
            Value::Bool(true),
            Value::from("20"),
            Value::Null,
        ] {
            assert_eq!(
                refuse(
                    &mut t,
                    Value::Object(obj! { "kind" => "raise", "amount" => amount })
                ),
                "bet or raise amount must be an integer target"
            );
        }
        assert_eq!(
            refuse(
                &mut t,
                Value::Object(obj! { "kind" => "bet", "amount" => 20 })
            ),
            "bet is legal only when no wager exists"
        );
        assert_eq!(
            refuse(&mut t, Value::Object(obj! { "kind" => "check" })),
            "check is illegal while facing a wager"
        );
        assert_eq!(
            refuse(
                &mut t,
                Value::Object(obj! { "kind" => Value::Array(Vec::new()) })
            ),
            "unhashable type: 'list'"
        );
        assert_eq!(
            refuse(&mut t, Value::from("fold")),
            "'str' object has no attribute 'get'"
        );
        let big = crate::json::parse_str("99999999999999999999").unwrap();
        assert_eq!(
            refuse(
                &mut t,
                Value::Object(obj! { "kind" => "raise", "amount" => big })
            ),
            RANGE
        );
    }
}
