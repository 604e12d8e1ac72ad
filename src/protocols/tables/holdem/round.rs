//! The betting round's part of the state, typed, for the per-action path:
//! every seat's chips, the wager and who is still to act, read from the
//! state object (its keys borrowed, nothing allocated) and written back as
//! a [`Patch`], only what changed. The rest of the state (the deck, the
//! action log, the hand's results) is shared with the old state, so an
//! action costs no rebuild of the whole state ([`Hand`](super::hand::Hand)
//! is the whole state, typed, for the start and the end of a hand).

use super::Hooked;
use super::hand::{Player, set};
use crate::json::{Key, Map, Value};

/// A table's seats (a hand always has four).
pub(super) const SEATS: usize = 4;

/// Seats in an order (`pending`, `acted_since_full_raise`), as indices
/// into the turn order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Seats {
    at: [u8; SEATS],
    len: u8,
}

impl Seats {
    pub(super) fn one(i: usize) -> Seats {
        let mut s = Seats::default();
        s.push(i);
        s
    }

    pub(super) fn as_slice(&self) -> &[u8] {
        &self.at[..usize::from(self.len)]
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.as_slice().iter().map(|&i| usize::from(i))
    }

    pub(super) fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    pub(super) fn contains(&self, i: usize) -> bool {
        self.iter().any(|k| k == i)
    }

    /// Adds seat `i` (a seat index is below [`SEATS`], so at most four).
    pub(super) fn push(&mut self, i: usize) {
        if usize::from(self.len) < SEATS {
            self.at[usize::from(self.len)] = i as u8;
            self.len += 1;
        }
    }

    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    /// The seats `keep` says yes to, in order.
    pub(super) fn filter(&self, keep: impl Fn(usize) -> bool) -> Seats {
        let mut out = Seats::default();
        for i in self.iter().filter(|&i| keep(i)) {
            out.push(i);
        }
        out
    }
}

/// The round: seats are indices into the turn order.
#[derive(Debug)]
pub(super) struct Round<'a> {
    /// `turn_order`.
    pub(super) order: [&'a str; SEATS],
    /// `turn_order`'s strings as the state holds them (a copy shares the
    /// text).
    shared: [&'a Value; SEATS],
    /// `players`, by turn order.
    pub(super) seats: [Player; SEATS],
    /// `contributions`, by turn order.
    pub(super) contributions: [i64; SEATS],
    pub(super) current_bet: i64,
    pub(super) last_full_raise: i64,
    /// `pending`.
    pub(super) pending: Seats,
    /// `acted_since_full_raise`.
    pub(super) acted: Seats,
    /// As read, to write back only what changed.
    before: Before,
}

#[derive(Debug, Clone, Copy)]
struct Before {
    seats: [Player; SEATS],
    contributions: [i64; SEATS],
    current_bet: i64,
    last_full_raise: i64,
    pending: Seats,
    acted: Seats,
}

impl<'a> Round<'a> {
    /// The round as the state holds it.
    pub(super) fn read(s: &'a Map) -> Hooked<Round<'a>> {
        let field = |k: &str| s.get(k).ok_or_else(|| format!("'{k}'"));
        let int = |k: &str| -> Hooked<i64> {
            field(k)?
                .as_i64()
                .ok_or_else(|| format!("the Hold'em state's {k} is not an integer"))
        };
        let object = |k: &str| -> Hooked<&'a Map> {
            s.get(k)
                .ok_or_else(|| format!("'{k}'"))?
                .as_object()
                .ok_or_else(|| format!("the Hold'em state's {k} is not an object"))
        };
        let bad_order = || "the Hold'em state's turn_order is not four keys".to_owned();
        let list = s
            .get("turn_order")
            .ok_or("'turn_order'")?
            .as_array()
            .filter(|a| a.len() == SEATS)
            .ok_or_else(bad_order)?;
        let mut order = [""; SEATS];
        let mut shared = [&Value::Null; SEATS];
        for ((slot, value), v) in order.iter_mut().zip(shared.iter_mut()).zip(list) {
            *slot = v.as_str().ok_or_else(bad_order)?;
            *value = v;
        }
        let (players, contributions) = (object("players")?, object("contributions")?);
        let mut seats = [Player::default(); SEATS];
        let mut amounts = [0; SEATS];
        for (i, pk) in order.iter().enumerate() {
            let p = players.get(pk).ok_or_else(|| format!("'{pk}'"))?;
            seats[i] = Player::read(pk, p)?;
            let c = contributions.get(pk).ok_or_else(|| format!("'{pk}'"))?;
            amounts[i] = c
                .as_i64()
                .ok_or("the Hold'em state's contributions holds a non-integer")?;
        }
        let indices = |k: &str| -> Hooked<Seats> {
            let bad = || format!("the Hold'em state's {k} is not a list of seats");
            let list = field(k)?
                .as_array()
                .filter(|l| l.len() <= SEATS)
                .ok_or_else(bad)?;
            let mut out = Seats::default();
            for v in list {
                let pk = v.as_str().ok_or_else(bad)?;
                out.push(order.iter().position(|k| *k == pk).ok_or_else(bad)?);
            }
            Ok(out)
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
            shared,
            seats,
            contributions: amounts,
            current_bet: before.current_bet,
            last_full_raise: before.last_full_raise,
            pending: before.pending,
            acted: before.acted,
            before,
        })
    }

    /// Adds to `patch` what changed since the round was read from `s`.
    pub(super) fn write(&self, s: &Map, patch: &mut Patch) -> Hooked<()> {
        let b = &self.before;
        if self.seats != b.seats {
            let players = patch.object(s, "players")?;
            for i in (0..SEATS).filter(|&i| self.seats[i] != b.seats[i]) {
                let p = players
                    .get_mut(self.order[i])
                    .and_then(Value::as_object_mut)
                    .ok_or_else(|| format!("'{}'", self.order[i]))?;
                self.seats[i].write_changes(&b.seats[i], p);
            }
        }
        if self.contributions != b.contributions {
            let contributions = patch.object(s, "contributions")?;
            for (i, (now, was)) in self.contributions.iter().zip(&b.contributions).enumerate() {
                if now != was {
                    set(contributions, self.order[i], Value::from(*now));
                }
            }
        }
        if self.current_bet != b.current_bet {
            patch.set("current_bet", Value::from(self.current_bet));
        }
        if self.last_full_raise != b.last_full_raise {
            patch.set("last_full_raise", Value::from(self.last_full_raise));
        }
        if self.pending != b.pending {
            patch.set("pending", self.keys(self.pending));
        }
        if self.acted != b.acted {
            patch.set("acted_since_full_raise", self.keys(self.acted));
        }
        Ok(())
    }

    fn keys(&self, seats: Seats) -> Value {
        Value::Array(seats.iter().map(|i| self.key(i)).collect())
    }

    /// Seat `i`'s public key as a value (sharing the state's text).
    pub(super) fn key(&self, i: usize) -> Value {
        self.shared[i].clone()
    }

    /// The seat of `pk` (Python's KeyError text when it has none).
    pub(super) fn seat_of(&self, pk: &str) -> Hooked<usize> {
        self.order
            .iter()
            .position(|k| *k == pk)
            .ok_or_else(|| format!("'{pk}'"))
    }

    /// The seat after `i` in turn order.
    pub(super) fn next(&self, i: usize) -> usize {
        (i + 1) % SEATS
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
    pub(super) fn ordered_eligible(&self, start: usize) -> Seats {
        let mut out = Seats::default();
        for k in (0..SEATS).map(|i| (start + i) % SEATS) {
            if self.can_act(k) {
                out.push(k);
            }
        }
        out
    }

    /// Seat `i` has neither folded nor gone all in.
    pub(super) fn can_act(&self, i: usize) -> bool {
        !self.seats[i].folded && !self.seats[i].all_in
    }
}

/// Changes to the state's top-level members, made into a new state in one
/// pass: the state is shared with the caller (who keeps it in case the
/// action is refused), so every member is copied once anyway, and the
/// members an action replaces (who acts next, the log, the wager) are
/// moved in rather than copied and then replaced.
#[derive(Debug, Default)]
pub(super) struct Patch {
    members: Vec<(&'static str, Value)>,
}

impl Patch {
    fn slot(&mut self, k: &str) -> Option<&mut Value> {
        self.members
            .iter_mut()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v)
    }

    /// `state[k] = v`.
    pub(super) fn set(&mut self, k: &'static str, v: Value) {
        match self.slot(k) {
            Some(slot) => *slot = v,
            None => self.members.push((k, v)),
        }
    }

    /// The object at `k` (of `s` until changed here), to change.
    pub(super) fn object(&mut self, s: &Map, k: &'static str) -> Hooked<&mut Map> {
        if self.slot(k).is_none() {
            let v = s.get(k).cloned().ok_or_else(|| format!("'{k}'"))?;
            self.members.push((k, v));
        }
        self.slot(k)
            .and_then(Value::as_object_mut)
            .ok_or_else(|| format!("the Hold'em state's {k} is not an object"))
    }

    /// The list at `k` (of `s` until changed here), to add `more` items.
    pub(super) fn list(
        &mut self,
        s: &Map,
        k: &'static str,
        more: usize,
    ) -> Hooked<&mut Vec<Value>> {
        if self.slot(k).is_none() {
            let Some(Value::Array(a)) = s.get(k) else {
                return Err(format!("the Hold'em state's {k} is not a list"));
            };
            let mut copy = Vec::with_capacity(a.len() + more);
            copy.extend(a.iter().cloned());
            self.members.push((k, Value::Array(copy)));
        }
        match self.slot(k) {
            Some(Value::Array(a)) => Ok(a),
            _ => Err(format!("the Hold'em state's {k} is not a list")),
        }
    }

    /// The state with the changes: members in the state's order, new ones
    /// last.
    pub(super) fn apply(mut self, s: &Map) -> Map {
        let mut out: Vec<(Key, Value)> = Vec::with_capacity(s.len() + self.members.len());
        for (k, v) in s.iter() {
            let at = self.members.iter().position(|(key, _)| *key == k);
            match at {
                Some(at) => out.push((k.into(), self.members.swap_remove(at).1)),
                None => out.push((k.into(), v.clone())),
            }
        }
        for (k, v) in self.members {
            out.push((k.into(), v));
        }
        Map::from_distinct(out)
    }
}
