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

use super::{Table, deck};
use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Number, Value};
use crate::obj;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Hooked<T> = Result<T, HookFailure>;

/// Chips by public key, in the state's order.
type Ledger = Vec<(String, i64)>;

const STREETS: [&str; 4] = ["preflop", "flop", "turn", "river"];
const SUITS: [&str; 4] = ["clubs", "diamonds", "hearts", "spades"];

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

/// One seat's chips in the current hand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Player {
    seat: i64,
    stack: i64,
    folded: bool,
    all_in: bool,
    street_contribution: i64,
    total_contribution: i64,
}

/// The table state, typed (its JSON is the reference's state object).
#[derive(Debug, Clone, Default)]
struct Hand {
    phase: String,
    street: String,
    hand_number: i64,
    button_index: i64,
    restart_count: i64,
    recovery_notice: String,
    turn_order: Vec<String>,
    players: Vec<(String, Player)>,
    button: String,
    small_blind_player: String,
    big_blind_player: String,
    current_player: String,
    current_bet: i64,
    last_full_raise: i64,
    pending: Vec<String>,
    acted_since_full_raise: Vec<String>,
    contributions: Ledger,
    hand_start_stacks: Ledger,
    action_log: Vec<Value>,
    showdown_hands: Map,
    pot_results: Vec<Value>,
    uncalled_refunds: Ledger,
    deck: Map,
}

/// A hook's result: the state, its events, and the winner when the match
/// completed.
struct Outcome {
    hand: Hand,
    events: Vec<Value>,
    winner: Option<String>,
}

impl Outcome {
    fn into_value(self) -> Value {
        let mut out = obj! {
            "state" => Value::Object(self.hand.into_map()),
            "events" => Value::Array(self.events),
        };
        if let Some(w) = self.winner {
            out.insert("completed", Value::Bool(true));
            out.insert("outcome", Value::from(w));
        }
        Value::Object(out)
    }
}

impl Holdem {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }

    /// The reference's `_option_int`: an integer option (never a bool or a
    /// float) within its range, or its default when absent.
    fn option_int(&self, name: &str, default: i64, min: i64, max: i64) -> Hooked<i64> {
        match self.options.get(name) {
            None => Ok(default),
            Some(v) => v
                .as_i64()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| format!("{name} must be between {min} and {max}")),
        }
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

    /// `_new_hand`: blinds posted, hole cards dealt, the first seat to act
    /// set (or, when nobody can act, the hand played out).
    fn new_hand(
        &self,
        members: &[(String, i64)],
        stacks: &[(String, i64)],
        hand_number: i64,
        button_index: i64,
        restart_count: i64,
        notice: &str,
    ) -> Hooked<Hand> {
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
        let seed = super::new_seed(&self.options, hand_number, restart_count);
        let deck_members: Vec<Value> = members
            .iter()
            .map(|(pk, seat)| {
                Value::Object(
                    obj! { "public_key" => pk.as_str(), "seat" => *seat, "status" => "active" },
                )
            })
            .collect();
        let mut deck = deck::create(&standard_faces(), &deck_members, 0, &seed, 1)?;
        for _ in 0..2 {
            for pk in &order {
                if is_live(pk) {
                    deck::draw(&mut deck, pk, 1)?;
                }
            }
        }
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
            return Ok(self.run_remaining_board(h, Vec::new())?.hand);
        }
        h.current_player = h.pending[0].clone();
        Ok(h)
    }

    fn handle_bet(&self, mut h: Hand, actor: &Value, action: &Value) -> Hooked<Outcome> {
        let Value::Object(action) = action else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                py_type(action)
            ));
        };
        let pk = h.current_player.clone();
        let kind = match action.get("kind") {
            Some(Value::String(s)) => s.clone(),
            Some(v @ (Value::Array(_) | Value::Object(_))) => {
                return Err(format!("unhashable type: '{}'", py_type(v)));
            }
            // Anything else matches no kind.
            _ => String::from("\u{0}"),
        };
        let (street_before, stack_before) = {
            let p = h.player(&pk)?;
            (p.street_contribution, p.stack)
        };
        let to_call = (h.current_bet - street_before).max(0);
        let (mut full_raise, mut increased) = (false, false);
        match kind.as_str() {
            "fold" => h.player_mut(&pk)?.folded = true,
            "check" => {
                if to_call != 0 {
                    return Err("check is illegal while facing a wager".into());
                }
            }
            "call" => {
                if to_call <= 0 {
                    return Err("there is no wager to call".into());
                }
                h.commit(&pk, to_call.min(stack_before))?;
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
                if kind == "bet" && h.current_bet != 0 {
                    return Err("bet is legal only when no wager exists".into());
                }
                if kind == "raise" && h.current_bet == 0 {
                    return Err("use bet when no wager exists".into());
                }
                let target = target.ok_or(RANGE)?;
                (full_raise, increased) = self.raise_to(&mut h, &pk, target, false)?;
            }
            "all_in" => {
                let target = street_before + stack_before;
                if target <= h.current_bet {
                    h.commit(&pk, stack_before)?;
                } else {
                    (full_raise, increased) = self.raise_to(&mut h, &pk, target, true)?;
                }
            }
            _ => return Err("betting accepts fold, check, call, bet, raise, or all_in".into()),
        }
        let seat = py_int_of(actor.get("seat").ok_or("'seat'")?)?;
        let (amount, stack) = {
            let p = h.player(&pk)?;
            (p.street_contribution, p.stack)
        };
        let log = obj! {
            "street" => h.street.as_str(), "public_key" => pk.as_str(), "seat" => seat,
            "kind" => kind.as_str(), "amount" => amount, "stack" => stack,
        };
        h.action_log.push(Value::Object(log));
        // `{"kind": "holdem_action", **log}`: the log's kind wins.
        let events = vec![Value::Object(obj! {
            "kind" => kind.as_str(), "street" => h.street.as_str(), "public_key" => pk.as_str(),
            "seat" => seat, "amount" => amount, "stack" => stack,
        })];

        let remaining: Vec<String> = h
            .turn_order
            .iter()
            .filter(|k| h.player(k).is_ok_and(|p| !p.folded))
            .cloned()
            .collect();
        if remaining.len() == 1 {
            return self.award_uncontested(h, &remaining[0], events);
        }
        if full_raise {
            h.acted_since_full_raise = vec![pk.clone()];
            let start = next_key(&h.turn_order, &pk);
            h.pending = h
                .ordered_eligible(&start)
                .into_iter()
                .filter(|k| *k != pk)
                .collect();
        } else if increased {
            if !h.acted_since_full_raise.contains(&pk) {
                h.acted_since_full_raise.push(pk.clone());
            }
            let start = next_key(&h.turn_order, &pk);
            let bet = h.current_bet;
            h.pending = h
                .ordered_eligible(&start)
                .into_iter()
                .filter(|k| h.player(k).is_ok_and(|p| p.street_contribution < bet))
                .collect();
        } else {
            if !h.acted_since_full_raise.contains(&pk) {
                h.acted_since_full_raise.push(pk.clone());
            }
            let pending = std::mem::take(&mut h.pending);
            h.pending = pending
                .into_iter()
                .filter(|k| *k != pk && h.player(k).is_ok_and(|p| !p.folded && !p.all_in))
                .collect();
        }
        if let Some(first) = h.pending.first() {
            h.current_player = first.clone();
            return Ok(Outcome {
                hand: h,
                events,
                winner: None,
            });
        }
        self.advance_street(h, events)
    }

    /// `_raise_to`: (a full raise?, the wager increased?).
    fn raise_to(&self, h: &mut Hand, pk: &str, target: i64, force: bool) -> Hooked<(bool, bool)> {
        let (street, stack) = {
            let p = h.player(pk)?;
            (p.street_contribution, p.stack)
        };
        let maximum = street + stack;
        if target <= h.current_bet || target > maximum {
            return Err(RANGE.into());
        }
        if h.acted_since_full_raise.iter().any(|k| k == pk) {
            return Err("a short all-in did not reopen this Member's raise".into());
        }
        let raise_size = target - h.current_bet;
        let minimum = if h.current_bet == 0 {
            self.big_blind()?
        } else {
            h.last_full_raise
        };
        let is_all_in = target == maximum;
        if raise_size < minimum && !(is_all_in || force) {
            return Err("raise target is below the minimum full raise".into());
        }
        h.commit(pk, target - street)?;
        h.current_bet = target;
        if raise_size >= minimum {
            h.last_full_raise = raise_size;
            return Ok((true, true));
        }
        Ok((false, true))
    }

    /// Burns one card and reveals the next street's cards on the board.
    fn deal_street(h: &mut Hand, events: &mut Vec<Value>) -> Hooked<()> {
        let index = STREETS.iter().position(|s| *s == h.street).unwrap_or(0);
        let next = STREETS.get(index + 1).copied().unwrap_or("river");
        deck::draw_to_zone(&mut h.deck, "burn", "table", 1)?;
        let count = if next == "flop" { 3 } else { 1 };
        let revealed = deck::draw_to_zone(&mut h.deck, "board", "table", count)?;
        h.street = next.to_owned();
        events.push(Value::Object(obj! {
            "kind" => "holdem_street", "street" => next, "cards" => Value::Array(revealed),
        }));
        Ok(())
    }

    fn advance_street(&self, mut h: Hand, mut events: Vec<Value>) -> Hooked<Outcome> {
        let eligible = h
            .turn_order
            .iter()
            .filter(|k| h.player(k).is_ok_and(|p| !p.folded && !p.all_in))
            .count();
        if h.street == "river" {
            return self.showdown(h, events);
        }
        let mut street_events = Vec::new();
        Self::deal_street(&mut h, &mut street_events)?;
        h.current_bet = 0;
        h.last_full_raise = self.big_blind()?;
        h.acted_since_full_raise.clear();
        for (_, p) in h.players.iter_mut() {
            p.street_contribution = 0;
        }
        events.extend(street_events);
        if eligible <= 1 {
            return self.run_remaining_board(h, events);
        }
        let start = next_key(&h.turn_order, &h.button);
        h.pending = h.ordered_eligible(&start);
        h.current_player = h.pending.first().cloned().unwrap_or_default();
        Ok(Outcome {
            hand: h,
            events,
            winner: None,
        })
    }

    fn run_remaining_board(&self, mut h: Hand, mut events: Vec<Value>) -> Hooked<Outcome> {
        while h.street != "river" {
            if !STREETS.contains(&h.street.as_str()) {
                return Err(format!("'{}' is not in tuple", h.street));
            }
            Self::deal_street(&mut h, &mut events)?;
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

    fn award_uncontested(
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
                hand: h,
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
            "hand_number" => replacement.hand_number,
            "button" => replacement.button.as_str(),
        }));
        Ok(Outcome {
            hand: replacement,
            events,
            winner: None,
        })
    }
}

const RANGE: &str = "raise target must exceed the wager and fit the stack";

/// The most chips a table holds (every sum of stacks and wagers fits in
/// an `i64` many times over).
const MAX_CHIPS: i64 = 1 << 52;

impl Hand {
    fn player(&self, pk: &str) -> Hooked<&Player> {
        self.players
            .iter()
            .find(|(k, _)| k == pk)
            .map(|(_, p)| p)
            .ok_or_else(|| format!("'{pk}'"))
    }

    fn player_mut(&mut self, pk: &str) -> Hooked<&mut Player> {
        self.players
            .iter_mut()
            .find(|(k, _)| k == pk)
            .map(|(_, p)| p)
            .ok_or_else(|| format!("'{pk}'"))
    }

    /// `_commit`: up to `amount` chips from the seat's stack into the pot.
    fn commit(&mut self, pk: &str, amount: i64) -> Hooked<i64> {
        if amount < 0 {
            return Err("chip commitment cannot be negative".into());
        }
        let p = self.player_mut(pk)?;
        let committed = amount.min(p.stack);
        p.stack -= committed;
        p.street_contribution += committed;
        p.total_contribution += committed;
        if p.stack == 0 {
            p.all_in = true;
        }
        match self.contributions.iter_mut().find(|(k, _)| k == pk) {
            Some((_, c)) => *c += committed,
            None => return Err(format!("'{pk}'")),
        }
        Ok(committed)
    }

    /// The seats that can still act, in turn order from `start`.
    fn ordered_eligible(&self, start: &str) -> Vec<String> {
        let at = self.turn_order.iter().position(|k| k == start).unwrap_or(0);
        let n = self.turn_order.len();
        (0..n)
            .map(|i| &self.turn_order[(at + i) % n])
            .filter(|k| self.player(k).is_ok_and(|p| !p.folded && !p.all_in))
            .cloned()
            .collect()
    }

    /// Every seat, clockwise from the one after the button.
    fn clockwise_from_button(&self) -> Vec<String> {
        let start = next_key(&self.turn_order, &self.button);
        let at = self
            .turn_order
            .iter()
            .position(|k| *k == start)
            .unwrap_or(0);
        let n = self.turn_order.len();
        (0..n)
            .map(|i| self.turn_order[(at + i) % n].clone())
            .collect()
    }

    fn into_map(self) -> Map {
        let mut players = Map::with_capacity(self.players.len());
        for (k, p) in &self.players {
            players.insert(
                k.as_str(),
                Value::Object(obj! {
                    "seat" => p.seat,
                    "stack" => p.stack,
                    "folded" => p.folded,
                    "all_in" => p.all_in,
                    "street_contribution" => p.street_contribution,
                    "total_contribution" => p.total_contribution,
                }),
            );
        }
        obj! {
            "phase" => self.phase.as_str(),
            "street" => self.street.as_str(),
            "hand_number" => self.hand_number,
            "button_index" => self.button_index,
            "restart_count" => self.restart_count,
            "recovery_notice" => self.recovery_notice.as_str(),
            "turn_order" => strings(&self.turn_order),
            "players" => Value::Object(players),
            "button" => self.button.as_str(),
            "small_blind_player" => self.small_blind_player.as_str(),
            "big_blind_player" => self.big_blind_player.as_str(),
            "current_player" => self.current_player.as_str(),
            "current_bet" => self.current_bet,
            "last_full_raise" => self.last_full_raise,
            "pending" => strings(&self.pending),
            "acted_since_full_raise" => strings(&self.acted_since_full_raise),
            "contributions" => Value::Object(pairs(&self.contributions)),
            "hand_start_stacks" => Value::Object(pairs(&self.hand_start_stacks)),
            "action_log" => Value::Array(self.action_log.clone()),
            "showdown_hands" => Value::Object(self.showdown_hands.clone()),
            "pot_results" => Value::Array(self.pot_results.clone()),
            "uncalled_refunds" => Value::Object(pairs(&self.uncalled_refunds)),
            "deck" => Value::Object(self.deck),
        }
    }

    /// The state, its deck moved rather than copied.
    fn from_value(state: Value) -> Hooked<Hand> {
        let Value::Object(mut s) = state else {
            return Err("the Hold'em state is not an object".into());
        };
        let deck = match s.remove("deck") {
            Some(Value::Object(deck)) => deck,
            Some(_) => return Err("the Hold'em state's deck is not an object".into()),
            None => return Err("'deck'".into()),
        };
        let mut h = Hand::public(&Value::Object(s))?;
        h.deck = deck;
        Ok(h)
    }

    /// Everything of the state but the deck (left empty).
    fn public(state: &Value) -> Hooked<Hand> {
        let s = state
            .as_object()
            .ok_or("the Hold'em state is not an object")?;
        let field = |k: &str| s.get(k).ok_or_else(|| format!("'{k}'"));
        let text = |k: &str| -> Hooked<String> {
            field(k)?
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("the Hold'em state's {k} is not a string"))
        };
        let int = |k: &str| -> Hooked<i64> {
            field(k)?
                .as_i64()
                .ok_or_else(|| format!("the Hold'em state's {k} is not an integer"))
        };
        let list = |k: &str| -> Hooked<Vec<String>> {
            field(k)?
                .as_array()
                .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_owned)).collect())
                .ok_or_else(|| format!("the Hold'em state's {k} is not a list of keys"))
        };
        let amounts = |k: &str| -> Hooked<Ledger> {
            let m = field(k)?
                .as_object()
                .ok_or_else(|| format!("the Hold'em state's {k} is not an object"))?;
            m.iter()
                .map(|(pk, v)| {
                    v.as_i64()
                        .map(|n| (pk.to_owned(), n))
                        .ok_or_else(|| format!("the Hold'em state's {k} holds a non-integer"))
                })
                .collect()
        };
        let objects = |k: &str| -> Hooked<Vec<Value>> {
            field(k)?
                .as_array()
                .cloned()
                .ok_or_else(|| format!("the Hold'em state's {k} is not a list"))
        };
        let map = |k: &str| -> Hooked<Map> {
            field(k)?
                .as_object()
                .cloned()
                .ok_or_else(|| format!("the Hold'em state's {k} is not an object"))
        };
        let mut players = Vec::with_capacity(4);
        for (pk, p) in map("players")?.iter() {
            let n = |k: &str| p.get(k).and_then(Value::as_i64);
            let b = |k: &str| p.get(k).and_then(Value::as_bool);
            let bad = || format!("the Hold'em state's player {pk} is malformed");
            players.push((
                pk.to_owned(),
                Player {
                    seat: n("seat").ok_or_else(bad)?,
                    stack: n("stack").ok_or_else(bad)?,
                    folded: b("folded").ok_or_else(bad)?,
                    all_in: b("all_in").ok_or_else(bad)?,
                    street_contribution: n("street_contribution").ok_or_else(bad)?,
                    total_contribution: n("total_contribution").ok_or_else(bad)?,
                },
            ));
        }
        Ok(Hand {
            phase: text("phase")?,
            street: text("street")?,
            hand_number: int("hand_number")?,
            button_index: int("button_index")?,
            restart_count: int("restart_count")?,
            recovery_notice: text("recovery_notice")?,
            turn_order: list("turn_order")?,
            players,
            button: text("button")?,
            small_blind_player: text("small_blind_player")?,
            big_blind_player: text("big_blind_player")?,
            current_player: text("current_player")?,
            current_bet: int("current_bet")?,
            last_full_raise: int("last_full_raise")?,
            pending: list("pending")?,
            acted_since_full_raise: list("acted_since_full_raise")?,
            contributions: amounts("contributions")?,
            hand_start_stacks: amounts("hand_start_stacks")?,
            action_log: objects("action_log")?,
            showdown_hands: map("showdown_hands")?,
            pot_results: objects("pot_results")?,
            uncalled_refunds: amounts("uncalled_refunds")?,
            deck: Map::new(),
        })
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
        let h = self.new_hand(&ordered, &stacks, 1, 0, 0, "")?;
        Ok(Value::Object(h.into_map()))
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
        let h = Hand::from_value(state)?;
        if h.phase == "completed" {
            return Err("the Hold'em match is complete".into());
        }
        if key(actor, "public_key")?.as_str() != Some(h.current_player.as_str()) {
            return Err("it is not this Member's turn to act".into());
        }
        if h.phase != "betting" {
            return Err("the table is not accepting betting actions".into());
        }
        self.handle_bet(h, actor, action).map(Outcome::into_value)
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
                py_type(&checkpoint)
            ));
        };
        let empty = Value::Object(Map::new());
        let start = cp.get("hand_start_stacks").unwrap_or(&empty);
        let Value::Object(start) = start else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                py_type(start)
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
        let h = self.new_hand(
            &ordered,
            &stacks,
            hand_number,
            button_index,
            restart_count,
            "The interrupted hand was refunded and redealt after a Leader change.",
        )?;
        Ok(Value::Object(h.into_map()))
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

/// A card as the evaluator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Face {
    rank: u8,
    suit: u8,
}

impl Face {
    fn of(card: &Value) -> Option<Face> {
        let rank = card.get("rank")?.as_i64()?;
        let suit = SUITS.iter().position(|s| card.get_str("suit") == Some(s))?;
        ((2..=14).contains(&rank)).then_some(Face {
            rank: rank as u8,
            suit: suit as u8,
        })
    }
}

/// A five-card hand's rank, compared as the reference's rank tuples are:
/// the category, then the values that break ties within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HandRank {
    values: [u8; 6],
    len: u8,
}

impl HandRank {
    /// `(category, *tail)`; at most five tie-breakers.
    fn of(category: u8, tail: &[u8]) -> Self {
        let tail = &tail[..tail.len().min(5)];
        let mut values = [0u8; 6];
        values[0] = category;
        values[1..=tail.len()].copy_from_slice(tail);
        HandRank {
            values,
            len: tail.len() as u8 + 1,
        }
    }

    /// The rank as the reference's list: `[category, tie-breakers…]`.
    pub fn to_list(&self) -> Vec<i64> {
        self.values[..self.len as usize]
            .iter()
            .map(|v| i64::from(*v))
            .collect()
    }

    /// The category's name (`"straight_flush"` … `"high_card"`).
    pub fn category(&self) -> &'static str {
        match self.values[0] {
            8 => "straight_flush",
            7 => "four_of_a_kind",
            6 => "full_house",
            5 => "flush",
            4 => "straight",
            3 => "three_of_a_kind",
            2 => "two_pair",
            1 => "one_pair",
            _ => "high_card",
        }
    }
}

/// The rank of exactly five cards (the reference's `evaluate_five`).
fn evaluate_five(cards: [Face; 5]) -> HandRank {
    let mut desc = cards.map(|c| c.rank);
    desc.sort_unstable_by(|a, b| b.cmp(a));
    let mut counts = [0u8; 15];
    for r in desc {
        counts[r as usize] += 1;
    }
    let flush = cards.iter().all(|c| c.suit == cards[0].suit);
    // (count, rank) of each distinct rank: most copies first, then highest.
    let mut groups = [(0u8, 0u8); 5];
    let mut n = 0;
    for r in desc {
        if n == 0 || groups[n - 1].1 != r {
            groups[n] = (counts[r as usize], r);
            n += 1;
        }
    }
    let straight_high = match (n, groups.map(|g| g.1)) {
        (5, [14, 5, 4, 3, 2]) => Some(5),
        (5, [hi, .., lo]) if hi - lo == 4 => Some(hi),
        _ => None,
    };
    groups[..n].sort_unstable_by(|a, b| b.cmp(a));
    let g = groups.map(|g| g.1);
    let top = (groups[0].0, groups[1].0);
    match (flush, straight_high, top) {
        (true, Some(high), _) => HandRank::of(8, &[high]),
        (_, _, (4, _)) => HandRank::of(7, &g[..2]),
        (_, _, (3, 2)) => HandRank::of(6, &g[..2]),
        (true, None, _) => HandRank::of(5, &desc),
        (false, Some(high), _) => HandRank::of(4, &[high]),
        (_, _, (3, _)) => HandRank::of(3, &g[..n]),
        (_, _, (2, 2)) => HandRank::of(2, &g[..n]),
        (_, _, (2, _)) => HandRank::of(1, &g[..n]),
        _ => HandRank::of(0, &desc),
    }
}

/// The best five of `cards` (five to seven distinct faces).
fn best_of(cards: &[Face]) -> HandRank {
    let n = cards.len();
    let mut best: Option<HandRank> = None;
    for a in 0..n {
        for b in a + 1..n {
            for c in b + 1..n {
                for d in c + 1..n {
                    for e in d + 1..n {
                        let r = evaluate_five([cards[a], cards[b], cards[c], cards[d], cards[e]]);
                        if best.is_none_or(|x| r > x) {
                            best = Some(r);
                        }
                    }
                }
            }
        }
    }
    best.unwrap_or(HandRank::of(0, &[]))
}

/// The same rank as [`best_of`], read straight off the rank and suit
/// counts of up to seven cards instead of trying every five (the bot's
/// evaluator; a test holds the two equal).
fn rank_direct(cards: &[Face]) -> HandRank {
    let mut counts = [0u8; 15];
    let mut by_suit = [0u16; 4];
    let mut all = 0u16;
    for c in cards {
        counts[c.rank as usize] += 1;
        by_suit[c.suit as usize & 3] |= 1 << c.rank;
        all |= 1 << c.rank;
    }
    let straight = |mask: u16| -> Option<u8> {
        (6..=14u8)
            .rev()
            .find(|h| (mask >> (h - 4)) & 0b11111 == 0b11111)
            .or_else(|| {
                let wheel = (1 << 14) | 0b11_1100;
                (mask & wheel == wheel).then_some(5)
            })
    };
    let ranks_of =
        |mask: u16| -> Vec<u8> { (2..=14u8).rev().filter(|r| mask & (1 << r) != 0).collect() };
    let with = |n: u8| -> Vec<u8> {
        (2..=14u8)
            .rev()
            .filter(|r| counts[*r as usize] == n)
            .collect()
    };
    let others = |not: &[u8], k: usize| -> Vec<u8> {
        (2..=14u8)
            .rev()
            .filter(|r| counts[*r as usize] > 0 && !not.contains(r))
            .take(k)
            .collect()
    };
    let flush = by_suit.iter().find(|m| m.count_ones() >= 5).copied();
    if let Some(high) = flush.and_then(straight) {
        return HandRank::of(8, &[high]);
    }
    let (fours, threes, pairs) = (with(4), with(3), with(2));
    if let Some(&q) = fours.first() {
        return HandRank::of(7, &[q, others(&[q], 1)[0]]);
    }
    if let Some(&t) = threes.first() {
        let second = threes
            .get(1)
            .copied()
            .into_iter()
            .chain(pairs.first().copied())
            .max();
        if let Some(p) = second {
            return HandRank::of(6, &[t, p]);
        }
    }
    if let Some(mask) = flush {
        return HandRank::of(5, &ranks_of(mask)[..5]);
    }
    if let Some(high) = straight(all) {
        return HandRank::of(4, &[high]);
    }
    if let Some(&t) = threes.first() {
        return HandRank::of(3, &[&[t], others(&[t], 2).as_slice()].concat());
    }
    if let [p, q, ..] = pairs.as_slice() {
        return HandRank::of(2, &[*p, *q, others(&[*p, *q], 1)[0]]);
    }
    if let Some(&p) = pairs.first() {
        return HandRank::of(1, &[&[p], others(&[p], 3).as_slice()].concat());
    }
    HandRank::of(0, &others(&[], 5))
}

/// The reference's `best_poker_hand` over card objects: five to seven
/// standard cards (rank 2–14, a standard suit, no face twice).
pub fn best_poker_hand(cards: &[Map]) -> Hooked<HandRank> {
    if cards.len() < 5 || cards.len() > 7 {
        return Err("poker evaluation requires five to seven cards".into());
    }
    let mut faces: Vec<Face> = Vec::with_capacity(cards.len());
    for card in cards {
        let face =
            Face::of(&Value::Object(card.clone())).ok_or("poker card rank or suit is invalid")?;
        if faces.contains(&face) {
            return Err("a standard poker hand cannot repeat a card face".into());
        }
        faces.push(face);
    }
    Ok(best_of(&faces))
}

/// One pot of the reference's `build_side_pots`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pot {
    pub amount: i64,
    pub cap: i64,
    pub contributors: Vec<String>,
    pub eligible: Vec<String>,
}

/// Main and side pots from every seat's total contribution: one pot per
/// distinct contribution level, shared by those who put in at least that
/// much, won only by those of them who did not fold.
pub fn build_side_pots(contributions: &[(String, i64)], folded: &[String]) -> Hooked<Vec<Pot>> {
    if contributions.is_empty() {
        return Err("contributions must be a non-empty object".into());
    }
    if folded
        .iter()
        .any(|f| !contributions.iter().any(|(k, _)| k == f))
    {
        return Err("folded player is missing from contributions".into());
    }
    for (k, amount) in contributions {
        if k.is_empty() {
            return Err("contribution owner is invalid".into());
        }
        if *amount < 0 {
            return Err("contributions must be non-negative integers".into());
        }
    }
    let mut levels: Vec<i64> = contributions
        .iter()
        .map(|(_, a)| *a)
        .filter(|a| *a > 0)
        .collect();
    levels.sort_unstable();
    levels.dedup();
    let mut previous = 0;
    let mut pots = Vec::new();
    for level in levels {
        let mut participants: Vec<String> = contributions
            .iter()
            .filter(|(_, a)| *a >= level)
            .map(|(k, _)| k.clone())
            .collect();
        participants.sort();
        let amount = (level - previous) * participants.len() as i64;
        let eligible: Vec<String> = participants
            .iter()
            .filter(|k| !folded.contains(k))
            .cloned()
            .collect();
        if amount > 0 {
            if eligible.is_empty() {
                return Err("a side pot has no eligible winner".into());
            }
            pots.push(Pot {
                amount,
                cap: level,
                contributors: participants,
                eligible,
            });
        }
        previous = level;
    }
    Ok(pots)
}

/// The reference's `normalize_uncalled_contributions`: the one largest
/// contribution, when nobody matched it, is cut to the second largest and
/// the excess refunded. Returns (contributions, refunds), both in the
/// given order.
pub fn normalize_uncalled_contributions(
    contributions: &[(String, i64)],
) -> Hooked<(Ledger, Ledger)> {
    if contributions.is_empty() {
        return Err("contributions must be a non-empty object".into());
    }
    for (k, amount) in contributions {
        if k.is_empty() {
            return Err("contribution owner is invalid".into());
        }
        if *amount < 0 {
            return Err("contributions must be non-negative integers".into());
        }
    }
    let mut normalized = contributions.to_vec();
    let mut refunds: Ledger = contributions.iter().map(|(k, _)| (k.clone(), 0)).collect();
    let mut ranked = contributions.to_vec();
    ranked.sort_by(|(ka, a), (kb, b)| b.cmp(a).then_with(|| ka.cmp(kb)));
    if ranked.len() >= 2 && ranked[0].1 > ranked[1].1 {
        let top = ranked[0].0.as_str();
        let refund = ranked[0].1 - ranked[1].1;
        for (k, a) in normalized.iter_mut() {
            if k == top {
                *a -= refund;
            }
        }
        for (k, r) in refunds.iter_mut() {
            if k == top {
                *r = refund;
            }
        }
    }
    Ok((normalized, refunds))
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

/// The 52 faces in the reference's `standard_card_faces` order.
fn standard_faces() -> Vec<Map> {
    let label = |rank: i64| match rank {
        11 => "J".to_owned(),
        12 => "Q".to_owned(),
        13 => "K".to_owned(),
        14 => "A".to_owned(),
        n => n.to_string(),
    };
    let mut out = Vec::with_capacity(52);
    for (suit, symbol) in SUITS.iter().zip(["C", "D", "H", "S"]) {
        for rank in 2..=14 {
            let code = format!("{}{symbol}", label(rank));
            let color = if matches!(*suit, "diamonds" | "hearts") {
                "red"
            } else {
                "black"
            };
            out.push(obj! {
                "code" => code.as_str(), "suit" => *suit, "rank" => rank, "label" => code.as_str(), "color" => color,
            });
        }
    }
    out
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
            py_type(v)
        )),
        _ => super::py_int(v),
    }
}

/// Python's type name of a JSON value.
fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(Number::Float(_)) => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
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
    use super::*;

    /// Cards from codes like "Ah", "Tc", "9s".
    fn cards(codes: &str) -> Vec<Map> {
        codes
            .split_whitespace()
            .map(|c| {
                let (r, s) = c.split_at(1);
                let rank = match r {
                    "A" => 14,
                    "K" => 13,
                    "Q" => 12,
                    "J" => 11,
                    "T" => 10,
                    n => n.parse().unwrap(),
                };
                let suit = match s {
                    "c" => "clubs",
                    "d" => "diamonds",
                    "h" => "hearts",
                    _ => "spades",
                };
                obj! { "rank" => rank, "suit" => suit, "card_id" => c }
            })
            .collect()
    }

    fn rank(codes: &str) -> (Vec<i64>, &'static str) {
        let r = best_poker_hand(&cards(codes)).unwrap();
        (r.to_list(), r.category())
    }

    #[test]
    fn hands_rank_as_the_reference_ranks_them() {
        assert_eq!(rank("9h 8h 7h 6h 5h 2c 3d"), (vec![8, 9], "straight_flush"));
        assert_eq!(rank("Ad 2d 3d 4d 5d Kc Qc"), (vec![8, 5], "straight_flush"));
        assert_eq!(
            rank("9c 9d 9h 9s Kd 2c 3d"),
            (vec![7, 9, 13], "four_of_a_kind")
        );
        assert_eq!(rank("8c 8d 8h 5s 5d 5c 2d"), (vec![6, 8, 5], "full_house"));
        assert_eq!(
            rank("Ah 9h 7h 4h 3h 2h Ks"),
            (vec![5, 14, 9, 7, 4, 3], "flush")
        );
        assert_eq!(rank("Ac 2d 3h 4s 5c 9d Jd"), (vec![4, 5], "straight"));
        assert_eq!(rank("Tc Jd Qh Ks Ac 2d 3d"), (vec![4, 14], "straight"));
        assert_eq!(
            rank("7c 7d 7h Ks 2c 4d 9d"),
            (vec![3, 7, 13, 9], "three_of_a_kind")
        );
        assert_eq!(
            rank("Kc Kd 9h 9s 4c 4d Ad"),
            (vec![2, 13, 9, 14], "two_pair")
        );
        assert_eq!(
            rank("Qc Qd 9h 7s 4c 3d 2d"),
            (vec![1, 12, 9, 7, 4], "one_pair")
        );
        assert_eq!(
            rank("Ac Jd 9h 7s 4c 3d 2d"),
            (vec![0, 14, 11, 9, 7, 4], "high_card")
        );
        // Five cards are enough; the order is the reference's tuple order.
        let best = |c: &str| best_poker_hand(&cards(c)).unwrap();
        assert!(best("2c 3d 4h 5s 6c") > best("Ac Ad Ah Ks Qc"));
        assert!(best("Ac Kd 9h 7s 4c") > best("Ac Kd 9h 7s 3c"));
        assert!(best("Ac 2d 3h 4s 5c") < best("2c 3d 4h 5s 6d"));
        assert_eq!(best("Ac Kd 9h 7s 4c"), best("Ad Kc 9s 7h 4d"));
    }

    #[test]
    fn bad_cards_are_refused_with_the_reference_texts() {
        let err = |c: &[Map]| best_poker_hand(c).unwrap_err();
        assert_eq!(
            err(&cards("Ac Kd 9h 7s")),
            "poker evaluation requires five to seven cards"
        );
        assert_eq!(
            err(&cards("Ac Ac 9h 7s 4c")),
            "a standard poker hand cannot repeat a card face"
        );
        let mut joker = cards("Ac Kd 9h 7s");
        joker.push(obj! { "rank" => 16, "suit" => "joker" });
        assert_eq!(err(&joker), "poker card rank or suit is invalid");
        let mut boolean = cards("Ac Kd 9h 7s");
        boolean.push(obj! { "rank" => true, "suit" => "clubs" });
        assert_eq!(err(&boolean), "poker card rank or suit is invalid");
    }

    fn ledger(v: &[(&str, i64)]) -> Ledger {
        v.iter().map(|(k, a)| ((*k).to_owned(), *a)).collect()
    }

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|k| (*k).to_owned()).collect()
    }

    #[test]
    fn side_pots_follow_the_contribution_levels() {
        let c = ledger(&[("d", 20), ("a", 100), ("c", 100), ("b", 50)]);
        let pots = build_side_pots(&c, &keys(&["d"])).unwrap();
        assert_eq!(
            pots,
            vec![
                Pot {
                    amount: 80,
                    cap: 20,
                    contributors: keys(&["a", "b", "c", "d"]),
                    eligible: keys(&["a", "b", "c"]),
                },
                Pot {
                    amount: 90,
                    cap: 50,
                    contributors: keys(&["a", "b", "c"]),
                    eligible: keys(&["a", "b", "c"]),
                },
                Pot {
                    amount: 100,
                    cap: 100,
                    contributors: keys(&["a", "c"]),
                    eligible: keys(&["a", "c"]),
                },
            ]
        );
        assert_eq!(pots.iter().map(|p| p.amount).sum::<i64>(), 270);
        // Nothing in: no pot; a pot only folded seats reached: refused.
        assert!(
            build_side_pots(&ledger(&[("a", 0), ("b", 0)]), &[])
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            build_side_pots(&ledger(&[("a", 50), ("b", 20)]), &keys(&["a"])).unwrap_err(),
            "a side pot has no eligible winner"
        );
        assert_eq!(
            build_side_pots(&ledger(&[("a", 5)]), &keys(&["z"])).unwrap_err(),
            "folded player is missing from contributions"
        );
    }

    #[test]
    fn only_an_unmatched_top_contribution_is_refunded() {
        let (c, r) =
            normalize_uncalled_contributions(&ledger(&[("b", 40), ("a", 100), ("c", 40)])).unwrap();
        assert_eq!(c, ledger(&[("b", 40), ("a", 40), ("c", 40)]));
        assert_eq!(r, ledger(&[("b", 0), ("a", 60), ("c", 0)]));
        let tied = ledger(&[("a", 100), ("b", 100), ("c", 10)]);
        let (c, r) = normalize_uncalled_contributions(&tied).unwrap();
        assert_eq!(c, tied);
        assert!(r.iter().all(|(_, n)| *n == 0));
    }

    fn member(n: i64) -> Value {
        Value::Object(obj! {
            "public_key" => format!("pk{n}"), "seat" => n, "status" => "active",
        })
    }

    fn act(t: &mut Holdem, state: Value, n: i64, action: Map) -> Result<Value, String> {
        t.handle(state, &member(n), &Value::Object(action))
    }

    fn kinds(out: &Value) -> Vec<String> {
        out.get("events")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|e| e.get_str("kind").unwrap().to_owned())
            .collect()
    }

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

    #[test]
    fn the_direct_evaluator_agrees_with_best_of_five() {
        let deck: Vec<Face> = (0..4u8)
            .flat_map(|suit| (2..=14u8).map(move |rank| Face { rank, suit }))
            .collect();
        let mut rng = StdRng::seed_from_u64(7);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..20_000 {
            let mut d = deck.clone();
            let n = 5 + i % 3;
            let hand: Vec<Face> = (0..n)
                .map(|_| d.swap_remove(rng.random_range(0..d.len())))
                .collect();
            let r = best_of(&hand);
            assert_eq!(rank_direct(&hand), r, "{hand:?}");
            seen.insert(r.category());
        }
        // Every category but (maybe) the straight flush came up.
        assert!(seen.len() >= 8, "{seen:?}");
        let royal: Vec<Face> = (10..=14).map(|rank| Face { rank, suit: 2 }).collect();
        assert_eq!(rank_direct(&royal), best_of(&royal));
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
