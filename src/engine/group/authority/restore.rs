//! Taking a room over from a replicated checkpoint: the state, the
//! membership changes since, the metadata.

use super::super::core::{self, GroupError, Result, member_active, normalize_members};
use super::{Authority, by_key};
use crate::json::canonical::sha256_hex;
use crate::json::{Map, Number, Value};

impl Authority {
    pub(super) fn restore(&mut self, checkpoint: &Value) -> Result<Vec<Value>> {
        let Value::Object(cp) = checkpoint else {
            return Err(GroupError::Value("checkpoint must be an object".into()));
        };
        let old_leader = cp
            .get("leader_public_key")
            .filter(|v| v.truthy())
            .map(Value::py_str)
            .unwrap_or_default();
        self.restore_metadata(cp)?;
        let Some(protocol_state @ Value::Object(_)) = cp.get("protocol_state") else {
            return Err(GroupError::Protocol(
                "checkpoint protocol_state must be an object",
            ));
        };
        self.state = self
            .hooks
            .restore(protocol_state.clone(), &self.members, self.leader_epoch)
            .map_err(GroupError::Hook)?;
        if !matches!(self.state, Value::Object(_)) {
            return Err(GroupError::Protocol(
                "proto_group_restore must return an object",
            ));
        }
        for result in self.reconcile(cp)? {
            let r = self.check_result(result)?;
            self.state = r.state;
            self.completed = r.completed;
            self.outcome = r.outcome;
        }
        let changed = self
            .hooks
            .on_leader_changed(self.state.clone(), &old_leader, &self.keys.public_key)
            .map_err(GroupError::Hook)?;
        let r = self.check_result(changed)?;
        self.state = r.state;
        self.completed = r.completed;
        self.outcome = r.outcome;
        Ok(r.events)
    }

    /// Membership changes the server saw after the checkpoint was made:
    /// the hook results, in the reference's order.
    fn reconcile(&mut self, cp: &Map) -> Result<Vec<Value>> {
        let Some(Value::Array(raw)) = cp.get("members") else {
            return Err(GroupError::Protocol("checkpoint members must be an array"));
        };
        let previous = by_key(&normalize_members(raw)?);
        let current = by_key(&self.members);
        let mut results = Vec::new();
        let mut take = |state: &mut Value, r: Value| {
            if let Some(s @ Value::Object(_)) = r.get("state") {
                *state = s.clone();
            }
            results.push(r);
        };
        for (key, old) in &previous {
            if member_active(old) && !current.iter().any(|(k, _)| k == key) {
                let r = self
                    .hooks
                    .member_left(
                        self.state.clone(),
                        old,
                        "membership_changed_during_failover",
                    )
                    .map_err(GroupError::Hook)?;
                take(&mut self.state, r);
            }
        }
        for (key, member) in &current {
            let old = previous.iter().find(|(k, _)| k == key).map(|(_, m)| m);
            if !old.is_some_and(member_active) {
                let r = self
                    .hooks
                    .member_joined(self.state.clone(), member)
                    .map_err(GroupError::Hook)?;
                take(&mut self.state, r);
            }
        }
        Ok(results)
    }

    fn restore_metadata(&mut self, cp: &Map) -> Result<()> {
        const SIGNED: [&str; 2] = ["checkpoint_hash", "checkpoint_signature"];
        let hash_ok = match cp.get("checkpoint_hash") {
            Some(Value::String(expected)) => {
                let members = core::canonical_members(cp, &SIGNED)?;
                *sha256_hex(core::compose_members(&members)) == **expected
            }
            _ => false,
        };
        if !hash_ok {
            return Err(GroupError::Protocol("checkpoint hash mismatch"));
        }
        let Some(signature) = cp.get_str("checkpoint_signature") else {
            return Err(GroupError::Protocol("checkpoint signature is missing"));
        };
        let signer = cp
            .get("leader_public_key")
            .filter(|v| v.truthy())
            .map(Value::py_str)
            .unwrap_or_default();
        let certificate = core::checkpoint_certificate(cp);
        if !core::verify_signature(&signer, certificate.as_bytes(), signature) {
            return Err(GroupError::Protocol("checkpoint certificate is invalid"));
        }
        if cp.get_str("group_id") != Some(self.group_id.as_str()) {
            return Err(GroupError::Protocol("checkpoint group_id mismatch"));
        }
        if !cp.get("version").is_some_and(|v| v.py_eq(&Value::from(1))) {
            return Err(GroupError::Protocol("checkpoint version is invalid"));
        }
        core::validate_checkpoint_state(&Value::Object(core::checkpoint_state_from(cp)?))?;
        let seq = match cp.get("seq") {
            Some(Value::Number(Number::Int(i))) if *i >= 0 => i.unsigned_abs(),
            Some(Value::Bool(b)) => u64::from(*b),
            Some(Value::Number(Number::BigInt(s))) if !s.starts_with('-') => {
                return Err(GroupError::Value(format!(
                    "checkpoint seq {s} does not fit in 64 bits"
                )));
            }
            _ => return Err(GroupError::Protocol("checkpoint seq is invalid")),
        };
        let Some(frame_hash) = cp.get_str("frame_hash").filter(|h| core::is_hash_str(h)) else {
            return Err(GroupError::Protocol("checkpoint frame_hash is invalid"));
        };
        self.seq = seq;
        self.previous_hash = frame_hash.to_owned();
        let restored = match cp.get("last_client_seq").filter(|v| v.truthy()) {
            None => Map::new(),
            Some(Value::Object(m)) => m
                .iter()
                .filter(|(_, v)| match v {
                    Value::Number(Number::Int(i)) => *i >= 0,
                    Value::Number(Number::BigInt(s)) => !s.starts_with('-'),
                    _ => false,
                })
                .map(|(k, v)| (k, v.clone()))
                .collect(),
            Some(_) => {
                return Err(GroupError::Protocol(
                    "checkpoint last_client_seq is invalid",
                ));
            }
        };
        self.last_client_seq = restored;
        self.completed = cp.get("completed").is_some_and(Value::truthy);
        self.outcome = cp.get_str("outcome").map(str::to_owned);
        Ok(())
    }
}
