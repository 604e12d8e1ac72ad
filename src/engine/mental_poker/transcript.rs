//! The match transcript both sides keep and sign: an ordered list of typed
//! events whose root is
//! `SHA-256(Σ be64(seq) ‖ be32(len type) ‖ type ‖ be32(len P) ‖ P)`,
//! P the canonical JSON of the payload. Big integers go in as exact JSON
//! integers ([`super::num::json_int`]).

use super::CryptoError;
use crate::json::{Map, Number, Value, canonical};
use sha2::{Digest, Sha256};

/// An append-only event list.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    events: Vec<(String, Vec<u8>)>,
}

fn check(v: &Value) -> Result<(), CryptoError> {
    match v {
        Value::Number(Number::Float(_)) => Err(CryptoError::Payload("floats")),
        Value::Array(items) => items.iter().try_for_each(check),
        Value::Object(m) => m.values().try_for_each(check),
        _ => Ok(()),
    }
}

impl Transcript {
    pub fn new() -> Transcript {
        Transcript::default()
    }

    /// Appends an event and returns its sequence number. Floats are refused
    /// (as the reference does), so the root never depends on float text.
    pub fn append(&mut self, event_type: &str, payload: Map) -> Result<u64, CryptoError> {
        let payload = Value::Object(payload);
        check(&payload)?;
        self.events
            .push((event_type.to_owned(), canonical::to_vec(&payload)));
        Ok(self.events.len() as u64 - 1)
    }

    /// The entries from `from` on: (seq, type, the payload's canonical
    /// JSON), for the flow to log as they come.
    pub fn entries_from(&self, from: usize) -> impl Iterator<Item = (usize, &str, &[u8])> {
        self.events
            .iter()
            .enumerate()
            .skip(from)
            .map(|(seq, (ty, payload))| (seq, ty.as_str(), payload.as_slice()))
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The 32-byte root over every event so far.
    pub fn root(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        for (seq, (ty, payload)) in self.events.iter().enumerate() {
            h.update((seq as u64).to_be_bytes());
            // Event types are short constants; payloads are bounded by the
            // frame limits, far below 4 GiB.
            h.update((ty.len() as u32).to_be_bytes());
            h.update(ty.as_bytes());
            h.update((payload.len() as u32).to_be_bytes());
            h.update(payload);
        }
        h.finalize().into()
    }

    /// Lowercase hex of [`Transcript::root`] (the `transcript_hash`).
    pub fn root_hex(&self) -> String {
        hex::encode(self.root())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_floats_and_counts_events() {
        let mut t = Transcript::new();
        let empty = t.root_hex();
        let mut m = Map::new();
        m.insert("x", Value::Number(Number::Float(1.5)));
        assert_eq!(t.append("e", m), Err(CryptoError::Payload("floats")));
        assert_eq!(t.root_hex(), empty);
        assert_eq!(t.append("e", Map::new()), Ok(0));
        assert_eq!(t.append("e", Map::new()), Ok(1));
        assert_eq!(t.len(), 2);
        assert_ne!(t.root_hex(), empty);
    }
}
