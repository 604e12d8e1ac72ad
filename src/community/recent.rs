//! The server's memory of recent requests: request ids for replay refusal
//! and per-key token buckets for the rate limit, both bounded.
//!
//! Fresh keys cost a client nothing, so neither table may grow with what
//! clients send. Request ids are kept as a 128-bit digest of (key, id) until
//! the last second their timestamp could still be accepted (timestamp +
//! [`MAX_SKEW`]), so a request stamped ahead of the server clock cannot be
//! replayed once its entry is gone. Expired entries are swept at most once a
//! second; a table still full after a sweep refuses new requests (503)
//! instead of forgetting one that could be replayed.

use crate::web::auth::{MAX_SKEW, REPLAY_WINDOW};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Request ids remembered at most (about 40 bytes each).
pub const MAX_REQUEST_IDS: usize = 1_000_000;
/// Keys with a partly used rate-limit bucket remembered at most.
pub const MAX_BUCKETS: usize = 1_000_000;
/// A table this full is swept of expired entries (once a second at most).
const SWEEP_AT: usize = 50_000;

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// This (key, request id) was used within the window.
    Replayed,
    /// More requests than this key's rate allows.
    RateLimited,
    /// The table is full of entries still in force.
    Busy,
}

/// A store's answer to a replay or rate check: admitted, or why not.
pub type Admission = Result<(), Refusal>;

/// What admitting one signed request takes: noting its request id and, on a
/// server that limits rates, a token from its key's bucket. An id refused
/// as a replay takes no token; a rate-limited request's id stays spent.
#[derive(Debug, Clone, Copy)]
pub struct Admit<'a> {
    pub key: &'a str,
    pub request_id: &'a str,
    /// The request's timestamp, and the server's clock (seconds) when its
    /// headers were checked.
    pub t: i64,
    pub now: i64,
    /// Tokens a second when the server limits rates, taken at `at`.
    pub rate: Option<f64>,
    pub at: f64,
}

impl Admit<'_> {
    /// The admission made in two steps, `note` (the request id) and then,
    /// for an id not refused and a rate set, `take` (a token at that rate).
    pub fn by_steps<E>(
        &self,
        note: impl FnOnce() -> Result<Admission, E>,
        take: impl FnOnce(f64) -> Result<Admission, E>,
    ) -> Result<Admission, E> {
        if let Err(refused) = note()? {
            return Ok(Err(refused));
        }
        match self.rate {
            Some(rate) => take(rate),
            None => Ok(Ok(())),
        }
    }
}

/// The last second a request id stamped `t`, seen at `now`, is kept: while
/// the timestamp could pass the clock check, and at least the replay window
/// after it was seen.
pub fn keep_until(t: i64, now: i64) -> i64 {
    t.saturating_add(MAX_SKEW)
        .max(now.saturating_add(REPLAY_WINDOW))
}

/// Request ids seen, by digest, with the last second each could be accepted.
#[derive(Default)]
pub struct RequestIds {
    until: HashMap<u128, i64>,
    swept: i64,
}

fn digest(key: &str, rid: &str) -> u128 {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update([0]);
    h.update(rid.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    u128::from_le_bytes(b)
}

impl RequestIds {
    /// Admits a request stamped `t` (already within [`MAX_SKEW`] of `now`)
    /// unless its id was used while it could still be accepted.
    pub fn admit(&mut self, key: &str, rid: &str, t: i64, now: i64) -> Result<(), Refusal> {
        self.admit_within(key, rid, t, now, MAX_REQUEST_IDS)
    }

    fn admit_within(
        &mut self,
        key: &str,
        rid: &str,
        t: i64,
        now: i64,
        cap: usize,
    ) -> Result<(), Refusal> {
        if self.until.len() >= SWEEP_AT.min(cap) && now != self.swept {
            self.until.retain(|_, until| *until >= now);
            self.swept = now;
        }
        let id = digest(key, rid);
        if self.until.get(&id).is_some_and(|until| *until >= now) {
            return Err(Refusal::Replayed);
        }
        if self.until.len() >= cap && !self.until.contains_key(&id) {
            return Err(Refusal::Busy);
        }
        self.until.insert(id, keep_until(t, now));
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.until.len()
    }

    pub fn is_empty(&self) -> bool {
        self.until.is_empty()
    }
}

/// Token buckets per key: `rate` a second, holding at most two seconds'
/// worth. A bucket that has refilled is the same as none, so those are
/// swept.
#[derive(Default)]
pub struct Buckets {
    by_key: HashMap<String, (f64, f64)>,
    swept: i64,
}

impl Buckets {
    pub fn take(&mut self, key: &str, rate: f64, now: f64) -> Result<(), Refusal> {
        self.take_within(key, rate, now, MAX_BUCKETS)
    }

    fn take_within(&mut self, key: &str, rate: f64, now: f64, cap: usize) -> Result<(), Refusal> {
        let full = rate * 2.0;
        let second = now as i64;
        if self.by_key.len() >= SWEEP_AT.min(cap) && second != self.swept {
            self.by_key
                .retain(|_, (tokens, at)| *tokens + (now - *at) * rate < full);
            self.swept = second;
        }
        if !self.by_key.contains_key(key) && self.by_key.len() >= cap {
            return Err(Refusal::Busy);
        }
        let e = self.by_key.entry(key.to_owned()).or_insert((full, now));
        e.0 = (e.0 + (now - e.1) * rate).min(full);
        e.1 = now;
        if e.0 < 1.0 {
            return Err(Refusal::RateLimited);
        }
        e.0 -= 1.0;
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_stamped_ahead_of_the_clock_cannot_be_replayed_later() {
        let mut ids = RequestIds::default();
        let now = 1_000_000;
        // Stamped at the edge of the skew window, ahead of the clock.
        let t = now + MAX_SKEW;
        assert_eq!(ids.admit("k", "r1", t, now), Ok(()));
        assert_eq!(ids.admit("k", "r1", t, now), Err(Refusal::Replayed));
        // Still acceptable by its timestamp 2 × MAX_SKEW later: still refused.
        let later = t + MAX_SKEW;
        assert_eq!(ids.admit("k", "r1", t, later), Err(Refusal::Replayed));
        // Another key may use the same id.
        assert_eq!(ids.admit("k2", "r1", t, later), Ok(()));
    }

    #[test]
    fn expired_ids_are_swept_and_a_full_table_refuses_instead_of_forgetting() {
        let mut ids = RequestIds::default();
        for i in 0..10 {
            assert_eq!(
                ids.admit_within("k", &format!("r{i}"), 100, 100, 10),
                Ok(())
            );
        }
        assert_eq!(
            ids.admit_within("k", "new", 100, 100, 10),
            Err(Refusal::Busy)
        );
        // A known id is still a replay, not "busy".
        assert_eq!(
            ids.admit_within("k", "r3", 100, 100, 10),
            Err(Refusal::Replayed)
        );
        // Once those can no longer be accepted, they are swept.
        let after = 100 + MAX_SKEW.max(REPLAY_WINDOW) + 1;
        assert_eq!(ids.admit_within("k", "new", after, after, 10), Ok(()));
        assert_eq!(ids.len(), 1);
    }

    #[test]
    fn buckets_limit_each_key_and_refilled_ones_are_forgotten() {
        let mut b = Buckets::default();
        let now = 50.0;
        assert_eq!(b.take_within("a", 1.0, now, 4), Ok(()));
        assert_eq!(b.take_within("a", 1.0, now, 4), Ok(()));
        assert_eq!(b.take_within("a", 1.0, now, 4), Err(Refusal::RateLimited));
        for k in ["b", "c", "d"] {
            assert_eq!(b.take_within(k, 1.0, now, 4), Ok(()));
        }
        assert_eq!(b.take_within("e", 1.0, now, 4), Err(Refusal::Busy));
        // Three seconds on every bucket has refilled: swept, room again.
        assert_eq!(b.take_within("e", 1.0, now + 3.0, 4), Ok(()));
        assert_eq!(b.len(), 1);
    }
}
