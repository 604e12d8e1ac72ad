//! One hand of texas-holdem-v1 as a typed state: every seat's chips and
//! wagers, the betting round's bookkeeping and the deck, read from and
//! written to the reference's JSON state object; and a hook's result
//! ([`Outcome`]).

use super::{Hooked, Ledger, next_key, pairs, strings};
use crate::json::{Map, Value};
use crate::obj;

/// One seat's chips in the current hand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Player {
    pub(super) seat: i64,
    pub(super) stack: i64,
    pub(super) folded: bool,
    pub(super) all_in: bool,
    pub(super) street_contribution: i64,
    pub(super) total_contribution: i64,
}

/// The table state, typed (its JSON is the reference's state object).
#[derive(Debug, Clone, Default)]
pub(super) struct Hand {
    pub(super) phase: String,
    pub(super) street: String,
    pub(super) hand_number: i64,
    pub(super) button_index: i64,
    pub(super) restart_count: i64,
    pub(super) recovery_notice: String,
    pub(super) turn_order: Vec<String>,
    pub(super) players: Vec<(String, Player)>,
    pub(super) button: String,
    pub(super) small_blind_player: String,
    pub(super) big_blind_player: String,
    pub(super) current_player: String,
    pub(super) current_bet: i64,
    pub(super) last_full_raise: i64,
    pub(super) pending: Vec<String>,
    pub(super) acted_since_full_raise: Vec<String>,
    pub(super) contributions: Ledger,
    pub(super) hand_start_stacks: Ledger,
    pub(super) action_log: Vec<Value>,
    pub(super) showdown_hands: Map,
    pub(super) pot_results: Vec<Value>,
    pub(super) uncalled_refunds: Ledger,
    pub(super) deck: Map,
}

/// A hook's result: the state, its events, and the winner when the match
/// completed.
pub(super) struct Outcome {
    pub(super) state: Map,
    pub(super) events: Vec<Value>,
    pub(super) winner: Option<String>,
}

impl Outcome {
    pub(super) fn into_value(self) -> Value {
        let mut out = obj! {
            "state" => Value::Object(self.state),
            "events" => Value::Array(self.events),
        };
        if let Some(w) = self.winner {
            out.insert("completed", Value::Bool(true));
            out.insert("outcome", Value::from(w));
        }
        Value::Object(out)
    }
}

impl Player {
    /// The seat `pk`'s object in the state's `players`.
    pub(super) fn read(pk: &str, p: &Value) -> Hooked<Player> {
        let n = |k: &str| p.get(k).and_then(Value::as_i64);
        let b = |k: &str| p.get(k).and_then(Value::as_bool);
        let bad = || format!("the Hold'em state's player {pk} is malformed");
        Ok(Player {
            seat: n("seat").ok_or_else(bad)?,
            stack: n("stack").ok_or_else(bad)?,
            folded: b("folded").ok_or_else(bad)?,
            all_in: b("all_in").ok_or_else(bad)?,
            street_contribution: n("street_contribution").ok_or_else(bad)?,
            total_contribution: n("total_contribution").ok_or_else(bad)?,
        })
    }

    /// Writes into the seat's object the fields that differ from `before`
    /// (the seat never changes during a hand).
    pub(super) fn write_changes(&self, before: &Player, p: &mut Map) {
        if self.stack != before.stack {
            set(p, "stack", Value::from(self.stack));
        }
        if self.folded != before.folded {
            set(p, "folded", Value::Bool(self.folded));
        }
        if self.all_in != before.all_in {
            set(p, "all_in", Value::Bool(self.all_in));
        }
        if self.street_contribution != before.street_contribution {
            set(
                p,
                "street_contribution",
                Value::from(self.street_contribution),
            );
        }
        if self.total_contribution != before.total_contribution {
            set(
                p,
                "total_contribution",
                Value::from(self.total_contribution),
            );
        }
    }

    /// Up to `amount` (not negative) chips from the stack into the pot:
    /// the chips moved.
    pub(super) fn commit(&mut self, amount: i64) -> i64 {
        let committed = amount.min(self.stack);
        self.stack -= committed;
        self.street_contribution += committed;
        self.total_contribution += committed;
        if self.stack == 0 {
            self.all_in = true;
        }
        committed
    }
}

impl Hand {
    pub(super) fn player(&self, pk: &str) -> Hooked<&Player> {
        self.players
            .iter()
            .find(|(k, _)| k == pk)
            .map(|(_, p)| p)
            .ok_or_else(|| format!("'{pk}'"))
    }

    pub(super) fn player_mut(&mut self, pk: &str) -> Hooked<&mut Player> {
        self.players
            .iter_mut()
            .find(|(k, _)| k == pk)
            .map(|(_, p)| p)
            .ok_or_else(|| format!("'{pk}'"))
    }

    /// `_commit`: up to `amount` chips from the seat's stack into the pot.
    pub(super) fn commit(&mut self, pk: &str, amount: i64) -> Hooked<i64> {
        if amount < 0 {
            return Err("chip commitment cannot be negative".into());
        }
        let committed = self.player_mut(pk)?.commit(amount);
        match self.contributions.iter_mut().find(|(k, _)| k == pk) {
            Some((_, c)) => *c += committed,
            None => return Err(format!("'{pk}'")),
        }
        Ok(committed)
    }

    /// The seats that can still act, in turn order from `start`.
    pub(super) fn ordered_eligible(&self, start: &str) -> Vec<String> {
        let at = self.turn_order.iter().position(|k| k == start).unwrap_or(0);
        let n = self.turn_order.len();
        (0..n)
            .map(|i| &self.turn_order[(at + i) % n])
            .filter(|k| self.player(k).is_ok_and(|p| !p.folded && !p.all_in))
            .cloned()
            .collect()
    }

    /// Every seat, clockwise from the one after the button.
    pub(super) fn clockwise_from_button(&self) -> Vec<String> {
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

    pub(super) fn into_map(self) -> Map {
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
            "action_log" => Value::Array(self.action_log),
            "showdown_hands" => Value::Object(self.showdown_hands),
            "pot_results" => Value::Array(self.pot_results),
            "uncalled_refunds" => Value::Object(pairs(&self.uncalled_refunds)),
            "deck" => Value::Object(self.deck),
        }
    }

    /// The state, its deck moved rather than copied.
    pub(super) fn from_value(state: Value) -> Hooked<Hand> {
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
    pub(super) fn public(state: &Value) -> Hooked<Hand> {
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
            players.push((pk.to_owned(), Player::read(pk, p)?));
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

/// `m[k] = v`: a member replaced in place (its key not copied), or added
/// last.
pub(super) fn set(m: &mut Map, k: &str, v: Value) {
    match m.get_mut(k) {
        Some(slot) => *slot = v,
        None => {
            m.insert(k, v);
        }
    }
}
