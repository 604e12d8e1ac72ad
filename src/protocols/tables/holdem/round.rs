//! The betting round's part of the state, typed, for the per-action path:
//! every seat's chips, the wager and who is still to act, read from the
//! state object and written back into it in place, only what changed. The
//! rest of the state (the deck, the action log, the hand's results) stays
//! in the object untouched, so an action costs no rebuild of the whole
//! state ([`Hand`](super::hand::Hand) is the whole state, typed, for the
//! start and the end of a hand).

use super::Hooked;
use super::hand::{Player, set};
use crate::json::{Map, Value};

/// The round: seats are indices into the turn order.
#[derive(Debug)]
pub(super) struct Round {
    /// `turn_order`.
    pub(super) order: Vec<String>,
    /// `players`, by turn order.
    pub(super) seats: Vec<Player>,
    /// `contributions`, by turn order.
    pub(super) contributions: Vec<i64>,
    pub(super) current_bet: i64,
    pub(super) last_full_raise: i64,
    /// `pending`.
    pub(super) pending: Vec<usize>,
    /// `acted_since_full_raise`.
    pub(super) acted: Vec<usize>,
    /// As read, to write back only what changed.
    before: Before,
}

#[derive(Debug)]
struct Before {
    seats: Vec<Player>,
    contributions: Vec<i64>,
    current_bet: i64,
    last_full_raise: i64,
    pending: Vec<usize>,
    acted: Vec<usize>,
}

impl Round {
    /// The round as the state holds it.
    pub(super) fn read(s: &Map) -> Hooked<Round> {
        let field = |k: &str| s.get(k).ok_or_else(|| format!("'{k}'"));
        let int = |k: &str| -> Hooked<i64> {
            field(k)?
                .as_i64()
                .ok_or_else(|| format!("the Hold'em state's {k} is not an integer"))
        };
        let object = |k: &str| -> Hooked<&Map> {
            field(k)?
                .as_object()
                .ok_or_else(|| format!("the Hold'em state's {k} is not an object"))
        };
        let order: Vec<String> = field("turn_order")?
            .as_array()
            .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_owned)).collect())
            .ok_or("the Hold'em state's turn_order is not a list of keys")?;
        let (players, contributions) = (object("players")?, object("contributions")?);
        let mut seats = Vec::with_capacity(order.len());
        let mut amounts = Vec::with_capacity(order.len());
        for pk in &order {
            let p = players.get(pk).ok_or_else(|| format!("'{pk}'"))?;
            seats.push(Player::read(pk, p)?);
            let c = contributions.get(pk).ok_or_else(|| format!("'{pk}'"))?;
            amounts.push(
                c.as_i64()
                    .ok_or("the Hold'em state's contributions holds a non-integer")?,
            );
        }
        let indices = |k: &str| -> Hooked<Vec<usize>> {
            let bad = || format!("the Hold'em state's {k} is not a list of seats");
            let list = field(k)?.as_array().ok_or_else(bad)?;
            list.iter()
                .map(|v| {
                    let pk = v.as_str().ok_or_else(bad)?;
                    order.iter().position(|k| k == pk).ok_or_else(bad)
                })
                .collect()
        };
        let before = Before {
            seats,
            contributions: amounts,
            current_bet: int("current_bet")?,
            last_full_raise: int("last_full_raise")?,
            pending: indices("pending")?,
            acted: indices("acted_since_full_raise")?,
        };
        Ok(Round {
            order,
            seats: before.seats.clone(),
            contributions: before.contributions.clone(),
            current_bet: before.current_bet,
            last_full_raise: before.last_full_raise,
            pending: before.pending.clone(),
            acted: before.acted.clone(),
            before,
        })
    }

    /// Writes into the state what changed since it was read.
    pub(super) fn write(&self, s: &mut Map) -> Hooked<()> {
        let b = &self.before;
        let moved: Vec<usize> = (0..self.order.len())
            .filter(|&i| self.seats[i] != b.seats[i])
            .collect();
        if !moved.is_empty() {
            let players = object_mut(s, "players")?;
            for &i in &moved {
                let p = players
                    .get_mut(&self.order[i])
                    .and_then(Value::as_object_mut)
                    .ok_or_else(|| format!("'{}'", self.order[i]))?;
                self.seats[i].write_changes(&b.seats[i], p);
            }
        }
        if self.contributions != b.contributions {
            let contributions = object_mut(s, "contributions")?;
            for (i, (now, was)) in self.contributions.iter().zip(&b.contributions).enumerate() {
                if now != was {
                    set(contributions, &self.order[i], Value::from(*now));
                }
            }
        }
        if self.current_bet != b.current_bet {
            set(s, "current_bet", Value::from(self.current_bet));
        }
        if self.last_full_raise != b.last_full_raise {
            set(s, "last_full_raise", Value::from(self.last_full_raise));
        }
        if self.pending != b.pending {
            set(s, "pending", self.keys(&self.pending));
        }
        if self.acted != b.acted {
            set(s, "acted_since_full_raise", self.keys(&self.acted));
        }
        Ok(())
    }

    fn keys(&self, seats: &[usize]) -> Value {
        Value::Array(
            seats
                .iter()
                .map(|&i| Value::from(self.order[i].as_str()))
                .collect(),
        )
    }

    /// The seat of `pk` (Python's KeyError text when it has none).
    pub(super) fn seat_of(&self, pk: &str) -> Hooked<usize> {
        self.order
            .iter()
            .position(|k| k == pk)
            .ok_or_else(|| format!("'{pk}'"))
    }

    /// The seat after `i` in turn order.
    pub(super) fn next(&self, i: usize) -> usize {
        (i + 1) % self.order.len().max(1)
    }

    /// `_commit`: up to `amount` chips from seat `i`'s stack into the pot.
    pub(super) fn commit(&mut self, i: usize, amount: i64) -> Hooked<i64> {
        if amount < 0 {
            return Err("chip commitment cannot be negative".into());
        }
        let committed = self.seats[i].commit(amount);
        self.contributions[i] += committed;
        Ok(committed)
    }

    /// The seats that can still act, in turn order from `start`.
    pub(super) fn ordered_eligible(&self, start: usize) -> Vec<usize> {
        let n = self.order.len();
        (0..n)
            .map(|i| (start + i) % n)
            .filter(|&k| self.can_act(k))
            .collect()
    }

    /// Seat `i` has neither folded nor gone all in.
    pub(super) fn can_act(&self, i: usize) -> bool {
        !self.seats[i].folded && !self.seats[i].all_in
    }
}

/// The state's object at `k`, to change.
pub(super) fn object_mut<'a>(s: &'a mut Map, k: &str) -> Hooked<&'a mut Map> {
    s.get_mut(k)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| format!("the Hold'em state's {k} is not an object"))
}
