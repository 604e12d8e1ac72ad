//! The streets and the end of a hand: the board dealt street by street
//! (a burn before each reveal), the showdown with its side pots, split
//! pots and odd chips, the uncontested pot, and then the next hand or the
//! match's end.

use super::betting::text;
use super::hand::{Hand, Outcome};
use super::poker::{HandRank, best_poker_hand, build_side_pots, normalize_uncalled_contributions};
use super::round::{Patch, Round, SEATS};
use super::{Holdem, Hooked, Ledger, pairs, strings};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::deck;

const STREETS: [&str; 4] = ["preflop", "flop", "turn", "river"];

/// Burns one card and reveals the cards of the street after `street` on
/// the board: the street dealt.
fn deal_street(deck: &mut Map, street: &str, events: &mut Vec<Value>) -> Hooked<&'static str> {
    let index = STREETS.iter().position(|s| *s == street).unwrap_or(0);
    let next = STREETS.get(index + 1).copied().unwrap_or("river");
    let count = if next == "flop" { 3 } else { 1 };
    let revealed = deck::draw_to_zones(deck, "table", &[("burn", 1), ("board", count)])?
        .pop()
        .unwrap_or_default();
    events.push(Value::Object(obj! {
        "kind" => "holdem_street", "street" => next, "cards" => Value::Array(revealed),
    }));
    Ok(next)
}

impl Holdem {
    /// Nobody is left to act on this street: the next street, on the
    /// state in place, or the hand's end.
    pub(super) fn advance_street(
        &self,
        s: &Map,
        mut patch: Patch,
        mut r: Round<'_>,
        mut events: Vec<Value>,
    ) -> Hooked<Outcome> {
        let eligible = (0..SEATS).filter(|&k| r.can_act(k)).count();
        let street = text(s, "street")?;
        // Unknown streets deal as the preflop does.
        let street = STREETS.iter().copied().find(|k| *k == street).unwrap_or("");
        if street == "river" {
            r.write(s, &mut patch)?;
            return self.showdown(Hand::from_value(Value::Object(patch.apply(s)))?, events);
        }
        let next = deal_street(patch.object(s, "deck")?, street, &mut events)?;
        patch.set("street", Value::from(next));
        r.current_bet = 0;
        r.last_full_raise = self.big_blind()?;
        r.acted.clear();
        for p in r.seats.iter_mut() {
            p.street_contribution = 0;
        }
        if eligible <= 1 {
            r.write(s, &mut patch)?;
            let h = Hand::from_value(Value::Object(patch.apply(s)))?;
            return self.run_remaining_board(h, events);
        }
        let button = text(s, "button")?;
        let start = r.next(r.order.iter().position(|k| *k == button).unwrap_or(0));
        r.pending = r.ordered_eligible(start);
        let current = r.pending.first().map_or("", |k| r.order[k]);
        patch.set("current_player", Value::from(current));
        r.write(s, &mut patch)?;
        Ok(Outcome {
            state: patch.apply(s),
            events,
            winner: None,
        })
    }

    pub(super) fn run_remaining_board(
        &self,
        mut h: Hand,
        mut events: Vec<Value>,
    ) -> Hooked<Outcome> {
        while h.street != "river" {
            if !STREETS.contains(&h.street.as_str()) {
                return Err(format!("'{}' is not in tuple", h.street));
            }
            h.street = deal_street(&mut h.deck, &h.street, &mut events)?.to_owned();
        }
        self.showdown(h, events)
    }

    fn showdown(&self, mut h: Hand, mut events: Vec<Value>) -> Hooked<Outcome> {
        let board: Vec<Map> = zone_ids(&h.deck, "board")
            .iter()
            .map(|id| deck::card(&h.deck, id).ok_or_else(|| format!("'{id}'")))
            .collect::<Hooked<_>>()?;
        let contenders: Vec<String> = h
            .turn_order
            .iter()
            .filter(|k| h.player(k).is_ok_and(|p| !p.folded))
            .cloned()
            .collect();
        let mut ranks: Vec<(String, HandRank)> = Vec::with_capacity(4);
        for pk in &contenders {
            let hole: Vec<Map> = deck::hand(&h.deck, pk)
                .iter()
                .map(|id| deck::card(&h.deck, id).ok_or_else(|| format!("'{id}'")))
                .collect::<Hooked<_>>()?;
            let all: Vec<Map> = hole.iter().chain(board.iter()).cloned().collect();
            let rank = best_poker_hand(&all)?;
            h.showdown_hands.insert(
                pk.as_str(),
                Value::Object(obj! {
                    "cards" => Value::Array(hole.into_iter().map(Value::Object).collect()),
                    "category" => rank.category(),
                    "rank" => Value::Array(rank.to_list().into_iter().map(Value::from).collect()),
                }),
            );
            ranks.push((pk.clone(), rank));
        }
        let (contributions, refunds) = normalize_uncalled_contributions(&h.contributions)?;
        h.contributions = contributions;
        h.uncalled_refunds = refunds;
        for (pk, refund) in h.uncalled_refunds.clone() {
            if refund != 0 {
                let p = h.player_mut(&pk)?;
                p.stack += refund;
                p.total_contribution -= refund;
            }
        }
        let folded: Vec<String> = h
            .turn_order
            .iter()
            .filter(|k| h.player(k).is_ok_and(|p| p.folded))
            .cloned()
            .collect();
        let pots = build_side_pots(&h.contributions, &folded)?;
        let clockwise = h.clockwise_from_button();
        for (index, pot) in pots.iter().enumerate() {
            let rank_of = |k: &str| {
                ranks
                    .iter()
                    .find(|(r, _)| r == k)
                    .map(|(_, r)| *r)
                    .ok_or_else(|| format!("'{k}'"))
            };
            let mut best: Option<HandRank> = None;
            for k in &pot.eligible {
                let r = rank_of(k)?;
                if best.is_none_or(|b| r > b) {
                    best = Some(r);
                }
            }
            let mut winners = Vec::new();
            for k in &pot.eligible {
                if Some(rank_of(k)?) == best {
                    winners.push(k.clone());
                }
            }
            let n = winners.len().max(1) as i64;
            let (share, odd) = (pot.amount.div_euclid(n), pot.amount.rem_euclid(n));
            for k in &winners {
                h.player_mut(k)?.stack += share;
            }
            let odd_chips: Vec<String> = clockwise
                .iter()
                .filter(|k| winners.contains(k))
                .take(odd as usize)
                .cloned()
                .collect();
            for k in &odd_chips {
                h.player_mut(k)?.stack += 1;
            }
            h.pot_results.push(Value::Object(obj! {
                "pot_index" => index,
                "amount" => pot.amount,
                "eligible" => strings(&pot.eligible),
                "winners" => strings(&winners),
                "share" => share,
                "odd_chips" => strings(&odd_chips),
            }));
        }
        events.push(Value::Object(obj! {
            "kind" => "holdem_showdown",
            "hands" => Value::Object(h.showdown_hands.clone()),
            "pots" => Value::Array(h.pot_results.clone()),
            "uncalled_refunds" => Value::Object(pairs(&h.uncalled_refunds)),
        }));
        self.finish_hand(h, events)
    }

    pub(super) fn award_uncontested(
        &self,
        mut h: Hand,
        winner: &str,
        mut events: Vec<Value>,
    ) -> Hooked<Outcome> {
        let amount: i64 = h.contributions.iter().map(|(_, a)| a).sum();
        h.player_mut(winner)?.stack += amount;
        h.pot_results = vec![Value::Object(obj! {
            "pot_index" => 0,
            "amount" => amount,
            "eligible" => strings(&[winner.to_owned()]),
            "winners" => strings(&[winner.to_owned()]),
            "share" => amount,
            "odd_chips" => Value::Array(Vec::new()),
        })];
        events.push(Value::Object(obj! {
            "kind" => "holdem_uncontested", "winner" => winner, "amount" => amount,
        }));
        self.finish_hand(h, events)
    }

    fn finish_hand(&self, mut h: Hand, mut events: Vec<Value>) -> Hooked<Outcome> {
        let stacks: Ledger = h
            .players
            .iter()
            .map(|(k, p)| (k.clone(), p.stack))
            .collect();
        let max_hands = self.max_hands()?;
        let live = stacks.iter().filter(|(_, s)| *s > 0).count();
        if h.hand_number >= max_hands || live <= 1 {
            h.phase = "completed".into();
            let stack_of = |k: &str| stacks.iter().find(|(s, _)| s == k).map(|(_, v)| *v);
            // The most chips; the earliest seat in turn order on a tie.
            let mut winner: Option<(&String, i64)> = None;
            for k in &h.turn_order {
                let s = stack_of(k).ok_or_else(|| format!("'{k}'"))?;
                if winner.is_none_or(|(_, best)| s > best) {
                    winner = Some((k, s));
                }
            }
            let winner = winner.map(|(k, _)| k.clone()).unwrap_or_default();
            events.push(Value::Object(obj! {
                "kind" => "holdem_match_complete", "winner" => winner.as_str(),
                "stacks" => Value::Object(pairs(&stacks)),
            }));
            return Ok(Outcome {
                state: h.into_map(),
                events,
                winner: Some(winner),
            });
        }
        let members: Ledger = h
            .turn_order
            .iter()
            .map(|k| h.player(k).map(|p| (k.clone(), p.seat)))
            .collect::<Hooked<_>>()?;
        let replacement = self.new_hand(
            &members,
            &stacks,
            h.hand_number + 1,
            (h.button_index + 1).rem_euclid(4),
            h.restart_count,
            &h.recovery_notice,
        )?;
        events.push(Value::Object(obj! {
            "kind" => "holdem_hand_started",
            "hand_number" => replacement.get("hand_number").cloned().unwrap_or_default(),
            "button" => replacement.get("button").cloned().unwrap_or_default(),
        }));
        Ok(Outcome {
            state: replacement,
            events,
            winner: None,
        })
    }
}

/// The ids in the deck's `zone` under the table.
fn zone_ids(deck: &Map, zone: &str) -> Vec<String> {
    deck.get("zones")
        .and_then(|z| z.get(zone))
        .and_then(|z| z.get("table"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{act, kinds, member};
    use super::*;
    use crate::engine::group::GroupHooks;

    #[test]
    fn folds_to_the_big_blind_win_it_the_blinds() {
        let mut t = Holdem::new(&obj! { "deal_seed" => "unit" });
        let members: Vec<Value> = (0..4).map(member).collect();
        let state = t.initial_state(&members).unwrap();
        assert_eq!(state.get_str("button"), Some("pk0"));
        assert_eq!(state.get_str("current_player"), Some("pk3"));
        let fold = || obj! { "kind" => "fold" };
        assert_eq!(
            act(&mut t, state.clone(), 0, fold()).unwrap_err(),
            "it is not this Member's turn to act"
        );
        let out = act(&mut t, state, 3, fold()).unwrap();
        let out = act(&mut t, out.get("state").cloned().unwrap(), 0, fold()).unwrap();
        let out = act(&mut t, out.get("state").cloned().unwrap(), 1, fold()).unwrap();
        assert_eq!(
            kinds(&out),
            ["fold", "holdem_uncontested", "holdem_hand_started"]
        );
        let next = out.get("state").unwrap();
        let stack = |k: &str| next.get("players").unwrap().get(k).unwrap().get("stack");
        // Hand 2: the button moved to pk1, pk2 posts the small blind and
        // pk3 the big blind.
        assert_eq!(next.get("hand_number").and_then(Value::as_i64), Some(2));
        assert_eq!(stack("pk1").and_then(Value::as_i64), Some(995));
        assert_eq!(stack("pk2").and_then(Value::as_i64), Some(1005 - 5));
        assert_eq!(stack("pk3").and_then(Value::as_i64), Some(990));
    }
}
