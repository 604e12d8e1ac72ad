//! The server side of group rooms (`authoritative_group`): the group a
//! host opens for its invitation, who is seated, which leader holds which
//! epoch and until when its lease runs, the newest checkpoint a member
//! acknowledged, and leader failover by claim. The reference server is
//! closed source; these rules are inferred from what the reference client
//! sends and reads (docs/groups.md), and every one is checked here.
//!
//! Everything in this module is pure: a handler loads a [`Group`], applies
//! one of these transitions with the caller's key and the time, and saves
//! it only if nobody changed it meanwhile (the store's row version).

use crate::identity::verify;
use crate::json::{Map, Value};
use crate::obj;
use serde::{Deserialize, Serialize};

/// Seats in one group (the reference's limit).
pub const MAX_MEMBERS: i64 = 32;
/// The leader lease, seconds (the reference client's default).
pub const LEASE_SECONDS: i64 = 15;
/// The checkpoint hash before any checkpoint.
pub const EMPTY_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Why a transition is refused: HTTP status, error code, message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct GroupError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}

fn refuse(status: u16, code: &'static str, message: impl Into<String>) -> GroupError {
    GroupError {
        status,
        code,
        message: message.into(),
    }
}

fn conflict(code: &'static str, message: impl Into<String>) -> GroupError {
    refuse(409, code, message)
}

fn bad(code: &'static str, message: impl Into<String>) -> GroupError {
    refuse(400, code, message)
}

/// One seat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub member_id: String,
    pub public_key: String,
    pub seat: i64,
    /// `active` or `left`.
    pub status: String,
    pub last_seen: f64,
}

/// A group room as the server keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub group_id: String,
    pub post_id: String,
    pub protocol_id: String,
    /// `lobby`, `active`, `closed` or `failed`.
    pub status: String,
    pub leader_public_key: String,
    pub leader_epoch: i64,
    pub iroh_ticket: String,
    pub transport_binding_signature: String,
    pub members: Vec<Member>,
    pub membership_version: i64,
    pub checkpoint_seq: i64,
    pub checkpoint_hash: String,
    pub leader_lease_seconds: i64,
    pub leader_lease_expires_at: f64,
    pub min_participants: i64,
    pub max_participants: i64,
    pub allow_late_join: bool,
    /// `exact`, `restart_round` or `abort`.
    pub recovery_mode: String,
    /// Every epoch's leader, oldest first: a claim's checkpoint may be
    /// signed by any of them.
    pub leaders: Vec<(i64, String)>,
    pub created_at: f64,
}

/// What `POST /api/v1/groups` asks for.
pub struct NewGroup<'a> {
    pub group_id: String,
    pub member_id: String,
    pub post_id: &'a str,
    pub protocol_id: &'a str,
    pub host: &'a str,
    pub iroh_ticket: &'a str,
    pub transport_binding_signature: &'a str,
    pub body: &'a Map,
    /// The leader lease, seconds.
    pub lease_seconds: i64,
}

fn int_field(body: &Map, key: &str, min: i64, max: i64) -> Result<i64, GroupError> {
    body.get(key)
        .and_then(Value::as_i64)
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| {
            bad(
                "bad_request",
                format!("`{key}` must be an integer from {min} to {max}"),
            )
        })
}

fn hex_field<'a>(body: &'a Map, key: &str, len: usize) -> Result<&'a str, GroupError> {
    body.get_str(key)
        .filter(|v| v.len() == len && v.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| bad("bad_request", format!("`{key}` must be {len} hex digits")))
}

fn text_field<'a>(body: &'a Map, key: &str, max: usize) -> Result<&'a str, GroupError> {
    body.get_str(key)
        .filter(|v| !v.is_empty() && v.len() <= max)
        .ok_or_else(|| {
            bad(
                "bad_request",
                format!("`{key}` must be a non-empty string of at most {max} bytes"),
            )
        })
}

/// An iroh ticket: letters and digits (iroh's base32 text), at most 4 KiB.
fn ticket_field(body: &Map) -> Result<&str, GroupError> {
    body.get_str("iroh_ticket")
        .filter(|t| {
            !t.is_empty() && t.len() <= 4096 && t.bytes().all(|b| b.is_ascii_alphanumeric())
        })
        .ok_or_else(|| {
            bad(
                "bad_request",
                "`iroh_ticket` must be an iroh ticket (letters and digits, at most 4096)",
            )
        })
}

/// The string both the leader and a member sign to seat the member.
pub fn admission_string(g: &Group, member: &str, epoch: i64, join_nonce: &str) -> String {
    format!(
        "aigenora-group-admission-v1:{}:{}:{member}:{}:{epoch}:{join_nonce}",
        g.group_id, g.leader_public_key, g.protocol_id
    )
}

/// The string a leader signs over a checkpoint.
#[allow(clippy::too_many_arguments)]
pub fn checkpoint_string(
    group_id: &str,
    leader: &str,
    epoch: i64,
    seq: i64,
    frame_hash: &str,
    membership_version: i64,
    checkpoint_hash: &str,
) -> String {
    format!(
        "aigenora-group-checkpoint-v1:{group_id}:{leader}:{epoch}:{seq}:{frame_hash}:{membership_version}:{checkpoint_hash}"
    )
}

impl Group {
    /// A new group in the lobby, its host seated at seat 0, epoch 0.
    pub fn create(n: NewGroup<'_>, now: f64) -> Result<Group, GroupError> {
        let min = int_field(n.body, "min_participants", 1, MAX_MEMBERS)?;
        let max = int_field(n.body, "max_participants", 1, MAX_MEMBERS)?;
        if min > max {
            return Err(bad(
                "bad_request",
                "min_participants must not exceed max_participants",
            ));
        }
        let allow_late_join = n
            .body
            .get("allow_late_join")
            .and_then(Value::as_bool)
            .ok_or_else(|| bad("bad_request", "`allow_late_join` must be a boolean"))?;
        let recovery_mode = match n.body.get_str("recovery_mode") {
            Some(m @ ("exact" | "restart_round" | "abort")) => m.to_owned(),
            _ => {
                return Err(bad(
                    "bad_request",
                    "`recovery_mode` must be exact, restart_round or abort",
                ));
            }
        };
        Ok(Group {
            group_id: n.group_id,
            post_id: n.post_id.to_owned(),
            protocol_id: n.protocol_id.to_owned(),
            status: "lobby".into(),
            leader_public_key: n.host.to_owned(),
            leader_epoch: 0,
            iroh_ticket: n.iroh_ticket.to_owned(),
            transport_binding_signature: n.transport_binding_signature.to_owned(),
            members: vec![Member {
                member_id: n.member_id,
                public_key: n.host.to_owned(),
                seat: 0,
                status: "active".into(),
                last_seen: now,
            }],
            membership_version: 1,
            checkpoint_seq: 0,
            checkpoint_hash: EMPTY_HASH.into(),
            leader_lease_seconds: n.lease_seconds,
            leader_lease_expires_at: now + n.lease_seconds as f64,
            min_participants: min,
            max_participants: max,
            allow_late_join,
            recovery_mode,
            leaders: vec![(0, n.host.to_owned())],
            created_at: now,
        })
    }

    fn open(&self) -> Result<(), GroupError> {
        match self.status.as_str() {
            "closed" | "failed" => Err(conflict(
                "group_ended",
                format!("group {} is {}", self.group_id, self.status),
            )),
            _ => Ok(()),
        }
    }

    fn is_leader(&self, key: &str, epoch: i64) -> Result<(), GroupError> {
        if key != self.leader_public_key {
            return Err(refuse(
                403,
                "not_leader",
                "only the group's leader may do this",
            ));
        }
        if epoch != self.leader_epoch {
            return Err(conflict(
                "stale_epoch",
                format!(
                    "leader_epoch {epoch} is not the current {}",
                    self.leader_epoch
                ),
            ));
        }
        Ok(())
    }

    /// Active members, the leader included.
    pub fn participant_count(&self) -> usize {
        self.members.iter().filter(|m| m.status == "active").count()
    }

    /// An `abort` room whose leader's lease ran out is over: nobody may
    /// take it over. Returns whether the group changed.
    pub fn settle(&mut self, now: f64) -> bool {
        if self.recovery_mode == "abort"
            && matches!(self.status.as_str(), "lobby" | "active")
            && now >= self.leader_lease_expires_at
        {
            self.status = "failed".into();
            return true;
        }
        false
    }

    /// Seats (or seats again) the caller after the leader admitted it:
    /// both signed the admission string for this epoch and join nonce.
    /// Returns the member entry.
    pub fn admit(
        &mut self,
        caller: &str,
        body: &Map,
        new_member_id: impl FnOnce() -> String,
        now: f64,
    ) -> Result<Member, GroupError> {
        self.open()?;
        let nonce = text_field(body, "join_nonce", 64)?;
        let epoch = int_field(body, "leader_epoch", 0, i64::MAX)?;
        let leader_sig = hex_field(body, "leader_signature", 128)?;
        let member_sig = hex_field(body, "member_signature", 128)?;
        if epoch != self.leader_epoch {
            return Err(conflict(
                "stale_epoch",
                format!(
                    "leader_epoch {epoch} is not the current {}",
                    self.leader_epoch
                ),
            ));
        }
        let signed = admission_string(self, caller, epoch, nonce);
        if !verify(&self.leader_public_key, signed.as_bytes(), leader_sig) {
            return Err(refuse(
                403,
                "bad_leader_signature",
                "leader_signature does not sign the admission with the leader's key",
            ));
        }
        if !verify(caller, signed.as_bytes(), member_sig) {
            return Err(refuse(
                403,
                "bad_member_signature",
                "member_signature does not sign the admission with your key",
            ));
        }
        if let Some(m) = self.members.iter_mut().find(|m| m.public_key == caller) {
            m.last_seen = now;
            if m.status != "active" {
                m.status = "active".into();
                self.membership_version += 1;
            }
            return Ok(m.clone());
        }
        if self.status != "lobby" && !self.allow_late_join {
            return Err(conflict(
                "no_late_join",
                "this group has started and takes no late members",
            ));
        }
        let taken: Vec<i64> = self.members.iter().map(|m| m.seat).collect();
        let seat = (0..self.max_participants)
            .find(|s| !taken.contains(s))
            .ok_or_else(|| {
                conflict(
                    "group_full",
                    format!("all {} seats are taken", self.max_participants),
                )
            })?;
        let m = Member {
            member_id: new_member_id(),
            public_key: caller.to_owned(),
            seat,
            status: "active".into(),
            last_seen: now,
        };
        self.members.push(m.clone());
        self.membership_version += 1;
        Ok(m)
    }

    /// The leader's lease heartbeat: its current ticket and the newest
    /// checkpoint a member acknowledged; the lease runs on.
    pub fn heartbeat(
        &mut self,
        caller: &str,
        body: &Map,
        binding_ok: impl Fn(&str, &str) -> bool,
        now: f64,
    ) -> Result<(), GroupError> {
        self.open()?;
        let epoch = int_field(body, "leader_epoch", 0, i64::MAX)?;
        self.is_leader(caller, epoch)?;
        let (seq, hash) = self.checkpoint_of(body, "checkpoint_seq", "checkpoint_hash")?;
        let ticket = ticket_field(body)?;
        let sig = hex_field(body, "transport_binding_signature", 128)?;
        if !binding_ok(ticket, sig) {
            return Err(refuse(
                403,
                "bad_binding",
                "transport_binding_signature does not bind this ticket to your key and the protocol",
            ));
        }
        self.iroh_ticket = ticket.to_owned();
        self.transport_binding_signature = sig.to_owned();
        self.checkpoint_seq = seq;
        self.checkpoint_hash = hash.to_owned();
        self.leader_lease_expires_at = now + self.leader_lease_seconds as f64;
        Ok(())
    }

    /// A checkpoint (seq, hash) that does not roll the group back: a lower
    /// seq, or the same seq with another hash, is refused.
    fn checkpoint_of<'a>(
        &self,
        body: &'a Map,
        seq_key: &str,
        hash_key: &str,
    ) -> Result<(i64, &'a str), GroupError> {
        let seq = int_field(body, seq_key, 0, i64::MAX)?;
        let hash = hex_field(body, hash_key, 64)?;
        if self.checkpoint_hash != EMPTY_HASH
            && (seq < self.checkpoint_seq
                || (seq == self.checkpoint_seq
                    && !hash.eq_ignore_ascii_case(&self.checkpoint_hash)))
        {
            return Err(conflict(
                "checkpoint_rollback",
                format!(
                    "checkpoint {seq} would roll the group back from {}",
                    self.checkpoint_seq
                ),
            ));
        }
        Ok((seq, hash))
    }

    /// A member's liveness heartbeat.
    pub fn member_heartbeat(&mut self, caller: &str, now: f64) -> Result<Member, GroupError> {
        let m = self
            .members
            .iter_mut()
            .find(|m| m.public_key == caller)
            .ok_or_else(|| refuse(403, "not_a_member", "you are not a member of this group"))?;
        m.last_seen = now;
        Ok(m.clone())
    }

    /// A member takes over after the leader's lease ran out, with the
    /// newest checkpoint it verified (signed by a leader of this group).
    pub fn claim(
        &mut self,
        caller: &str,
        body: &Map,
        binding_ok: impl Fn(&str, &str) -> bool,
        now: f64,
    ) -> Result<(), GroupError> {
        self.open()?;
        if self.recovery_mode == "abort" {
            return Err(conflict(
                "no_failover",
                "this group's recovery mode is abort: nobody takes over",
            ));
        }
        let expected = int_field(body, "expected_epoch", 0, i64::MAX)?;
        if expected != self.leader_epoch {
            return Err(conflict(
                "stale_epoch",
                format!(
                    "expected_epoch {expected} is not the current {}",
                    self.leader_epoch
                ),
            ));
        }
        if now < self.leader_lease_expires_at {
            return Err(conflict("lease_held", "the leader's lease has not run out"));
        }
        if !self
            .members
            .iter()
            .any(|m| m.public_key == caller && m.status == "active")
        {
            return Err(refuse(
                403,
                "not_a_member",
                "only an active member may claim",
            ));
        }
        let (seq, hash) = self.checkpoint_of(body, "checkpoint_seq", "checkpoint_hash")?;
        let frame_hash = hex_field(body, "checkpoint_frame_hash", 64)?;
        let version = int_field(body, "checkpoint_membership_version", 0, i64::MAX)?;
        if version > self.membership_version {
            return Err(conflict(
                "bad_checkpoint",
                "the checkpoint's membership version is newer than the group's",
            ));
        }
        let sig = hex_field(body, "checkpoint_signature", 128)?;
        let certified = self.leaders.iter().any(|(epoch, leader)| {
            let s = checkpoint_string(
                &self.group_id,
                leader,
                *epoch,
                seq,
                frame_hash,
                version,
                hash,
            );
            verify(leader, s.as_bytes(), sig)
        });
        if !certified {
            return Err(refuse(
                403,
                "bad_checkpoint",
                "checkpoint_signature is not a leader's certificate of this checkpoint",
            ));
        }
        let ticket = ticket_field(body)?;
        let binding = hex_field(body, "transport_binding_signature", 128)?;
        if !binding_ok(ticket, binding) {
            return Err(refuse(
                403,
                "bad_binding",
                "transport_binding_signature does not bind this ticket to your key and the protocol",
            ));
        }
        self.leader_epoch += 1;
        self.leader_public_key = caller.to_owned();
        self.leaders.push((self.leader_epoch, caller.to_owned()));
        self.iroh_ticket = ticket.to_owned();
        self.transport_binding_signature = binding.to_owned();
        self.checkpoint_seq = seq;
        self.checkpoint_hash = hash.to_owned();
        self.leader_lease_expires_at = now + self.leader_lease_seconds as f64;
        Ok(())
    }

    /// A member leaves its seat (kept for it if it comes back).
    pub fn leave(&mut self, caller: &str) -> Result<(), GroupError> {
        let m = self
            .members
            .iter_mut()
            .find(|m| m.public_key == caller)
            .ok_or_else(|| refuse(403, "not_a_member", "you are not a member of this group"))?;
        if m.status == "active" {
            m.status = "left".into();
            self.membership_version += 1;
        }
        Ok(())
    }

    /// The leader moves the room on: lobby → active → closed (or failed).
    pub fn set_status(&mut self, caller: &str, body: &Map) -> Result<(), GroupError> {
        let epoch = int_field(body, "leader_epoch", 0, i64::MAX)?;
        self.is_leader(caller, epoch)?;
        let to = body.get_str("status").unwrap_or("");
        let allowed = matches!(
            (self.status.as_str(), to),
            ("lobby", "active" | "closed" | "failed") | ("active", "closed" | "failed")
        ) || self.status == to;
        if !matches!(to, "active" | "closed" | "failed") {
            return Err(bad(
                "bad_request",
                "`status` must be active, closed or failed",
            ));
        }
        if !allowed {
            return Err(conflict(
                "bad_transition",
                format!("a {} group cannot become {to}", self.status),
            ));
        }
        self.status = to.to_owned();
        Ok(())
    }

    /// The group as the API shows it; times as ISO-8601 UTC.
    pub fn to_json(&self, now: f64) -> Map {
        let iso = |t: f64| {
            crate::utc::iso_at(
                std::time::UNIX_EPOCH
                    + std::time::Duration::try_from_secs_f64(t).unwrap_or_default(),
            )
        };
        let members: Vec<Value> = self
            .members
            .iter()
            .map(|m| {
                Value::Object(obj! {
                    "member_id" => m.member_id.as_str(), "public_key" => m.public_key.as_str(),
                    "seat" => m.seat, "status" => m.status.as_str(),
                })
            })
            .collect();
        obj! {
            "group_id" => self.group_id.as_str(), "post_id" => self.post_id.as_str(),
            "protocol_id" => self.protocol_id.as_str(), "status" => self.status.as_str(),
            "leader_public_key" => self.leader_public_key.as_str(), "leader_epoch" => self.leader_epoch,
            "iroh_ticket" => self.iroh_ticket.as_str(),
            "transport_binding_signature" => self.transport_binding_signature.as_str(),
            "members" => members, "participant_count" => self.participant_count(),
            "membership_version" => self.membership_version, "checkpoint_seq" => self.checkpoint_seq,
            "checkpoint_hash" => self.checkpoint_hash.as_str(),
            "leader_lease_seconds" => self.leader_lease_seconds,
            "leader_lease_expires_at" => iso(self.leader_lease_expires_at),
            "server_time" => iso(now), "min_participants" => self.min_participants,
            "max_participants" => self.max_participants, "allow_late_join" => self.allow_late_join,
            "recovery_mode" => self.recovery_mode.as_str(),
        }
    }
}

impl Member {
    pub fn to_json(&self) -> Map {
        obj! {
            "member_id" => self.member_id.as_str(), "public_key" => self.public_key.as_str(),
            "seat" => self.seat, "status" => self.status.as_str(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::KeyPair;

    fn group(host: &KeyPair, mode: &str, late: bool) -> Group {
        let body = obj! {
            "post_id" => "p", "min_participants" => 2, "max_participants" => 3,
            "allow_late_join" => late, "recovery_mode" => mode,
        };
        Group::create(
            NewGroup {
                group_id: "g1".into(),
                member_id: "m0".into(),
                post_id: "p",
                protocol_id: "pid",
                host: &host.public_key,
                iroh_ticket: "t0",
                transport_binding_signature: "s0",
                body: &body,
                lease_seconds: LEASE_SECONDS,
            },
            100.0,
        )
        .unwrap()
    }

    fn admission(g: &Group, leader: &KeyPair, member: &KeyPair, nonce: &str) -> Map {
        let s = admission_string(g, &member.public_key, g.leader_epoch, nonce);
        obj! {
            "join_nonce" => nonce, "leader_epoch" => g.leader_epoch,
            "leader_signature" => leader.sign(s.as_bytes()), "member_signature" => member.sign(s.as_bytes()),
        }
    }

    fn checkpoint(g: &Group, signer: &KeyPair, epoch: i64, seq: i64, ticket: &str) -> Map {
        let (frame, hash) = ("f".repeat(64), format!("{seq:064x}"));
        let s = checkpoint_string(
            &g.group_id,
            &signer.public_key,
            epoch,
            seq,
            &frame,
            g.membership_version,
            &hash,
        );
        obj! {
            "expected_epoch" => g.leader_epoch, "checkpoint_seq" => seq, "checkpoint_hash" => hash,
            "checkpoint_frame_hash" => frame, "checkpoint_membership_version" => g.membership_version,
            "checkpoint_signature" => signer.sign(s.as_bytes()), "iroh_ticket" => ticket,
            "transport_binding_signature" => "ab".repeat(64),
        }
    }

    #[test]
    fn the_host_sits_at_seat_zero_and_bad_bodies_are_named() {
        let host = KeyPair::generate();
        let g = group(&host, "exact", true);
        assert_eq!((g.status.as_str(), g.leader_epoch), ("lobby", 0));
        assert_eq!(g.members[0].seat, 0);
        assert_eq!(g.participant_count(), 1);
        let j = g.to_json(101.0);
        assert!(j.get_str("server_time").unwrap().ends_with("+00:00"));
        assert_eq!(
            j.get("checkpoint_hash").and_then(Value::as_str),
            Some(EMPTY_HASH)
        );
        for (k, v) in [
            ("max_participants", Value::from(33)),
            ("min_participants", Value::from(0)),
            ("recovery_mode", Value::from("maybe")),
            ("allow_late_join", Value::from(1)),
        ] {
            let mut body = obj! {
                "min_participants" => 2, "max_participants" => 3, "allow_late_join" => true,
                "recovery_mode" => "exact",
            };
            body.insert(k, v);
            let e = Group::create(
                NewGroup {
                    group_id: "g".into(),
                    member_id: "m".into(),
                    post_id: "p",
                    protocol_id: "pid",
                    host: &host.public_key,
                    iroh_ticket: "t",
                    transport_binding_signature: "s",
                    body: &body,
                    lease_seconds: LEASE_SECONDS,
                },
                0.0,
            )
            .unwrap_err();
            assert!(e.message.contains(k), "{k}: {e}");
        }
    }

    #[test]
    fn members_are_seated_once_both_signed_and_seats_run_out() {
        let host = KeyPair::generate();
        let (a, b, c) = (
            KeyPair::generate(),
            KeyPair::generate(),
            KeyPair::generate(),
        );
        let mut g = group(&host, "exact", false);
        let m = g
            .admit(
                &a.public_key,
                &admission(&g, &host, &a, "n1"),
                || "ma".into(),
                1.0,
            )
            .unwrap();
        assert_eq!((m.seat, g.membership_version), (1, 2));
        // Again with a new nonce: the same seat, no new version.
        let again = g
            .admit(
                &a.public_key,
                &admission(&g, &host, &a, "n2"),
                || "x".into(),
                2.0,
            )
            .unwrap();
        assert_eq!((again.member_id.as_str(), again.seat), ("ma", 1));
        assert_eq!(g.membership_version, 2);
        // A leader signature by someone else, a member signature for another key.
        let mut forged = admission(&g, &host, &b, "n3");
        forged.insert("leader_signature", Value::from(b.sign(b"x")));
        assert_eq!(
            g.admit(&b.public_key, &forged, || "mb".into(), 3.0)
                .unwrap_err()
                .code,
            "bad_leader_signature"
        );
        // The leader admitted c, but the member signature is b's.
        let mut theirs = admission(&g, &host, &c, "n3");
        let s = admission_string(&g, &c.public_key, 0, "n3");
        theirs.insert("member_signature", Value::from(b.sign(s.as_bytes())));
        assert_eq!(
            g.admit(&c.public_key, &theirs, || "mc".into(), 3.0)
                .unwrap_err()
                .code,
            "bad_member_signature"
        );
        g.admit(
            &b.public_key,
            &admission(&g, &host, &b, "n4"),
            || "mb".into(),
            4.0,
        )
        .unwrap();
        assert_eq!(
            g.admit(
                &c.public_key,
                &admission(&g, &host, &c, "n5"),
                || "mc".into(),
                5.0
            )
            .unwrap_err()
            .code,
            "group_full"
        );
        // Started without late join: a newcomer is refused.
        let mut g2 = group(&host, "exact", false);
        g2.set_status(
            &host.public_key,
            &obj! { "leader_epoch" => 0, "status" => "active" },
        )
        .unwrap();
        assert_eq!(
            g2.admit(
                &c.public_key,
                &admission(&g2, &host, &c, "n"),
                || "m".into(),
                1.0
            )
            .unwrap_err()
            .code,
            "no_late_join"
        );
    }

    #[test]
    fn claims_need_a_lapsed_lease_the_epoch_and_a_leaders_checkpoint() {
        let host = KeyPair::generate();
        let (a, b) = (KeyPair::generate(), KeyPair::generate());
        let mut g = group(&host, "exact", true);
        for (k, n) in [(&a, "n1"), (&b, "n2")] {
            g.admit(
                &k.public_key,
                &admission(&g, &host, k, n),
                || format!("m{n}"),
                1.0,
            )
            .unwrap();
        }
        let yes = |_: &str, _: &str| true;
        let body = checkpoint(&g, &host, 0, 5, "ta");
        // The lease still runs.
        assert_eq!(
            g.claim(&a.public_key, &body, yes, 110.0).unwrap_err().code,
            "lease_held"
        );
        // A checkpoint signed by a non-leader.
        let forged = checkpoint(&g, &b, 0, 5, "ta");
        assert_eq!(
            g.claim(&a.public_key, &forged, yes, 200.0)
                .unwrap_err()
                .code,
            "bad_checkpoint"
        );
        // A bad transport binding.
        let no = |_: &str, _: &str| false;
        assert_eq!(
            g.claim(&a.public_key, &body, no, 200.0).unwrap_err().code,
            "bad_binding"
        );
        g.claim(&a.public_key, &body, yes, 200.0).unwrap();
        assert_eq!(
            (g.leader_epoch, g.leader_public_key.as_str()),
            (1, a.public_key.as_str())
        );
        assert_eq!((g.checkpoint_seq, g.iroh_ticket.as_str()), (5, "ta"));
        assert_eq!(
            g.members[0].status, "active",
            "the old leader keeps its seat"
        );
        // The loser's claim names the stale epoch.
        let late = checkpoint(&g, &host, 0, 5, "tb");
        let mut late = late;
        late.insert("expected_epoch", Value::from(0));
        assert_eq!(
            g.claim(&b.public_key, &late, yes, 201.0).unwrap_err().code,
            "stale_epoch"
        );
        // The old leader is fenced; the new one heartbeats with a newer checkpoint.
        let hb = obj! {
            "leader_epoch" => 0, "checkpoint_seq" => 6, "checkpoint_hash" => "c".repeat(64),
            "iroh_ticket" => "t1", "transport_binding_signature" => "ab".repeat(64),
        };
        assert_eq!(
            g.heartbeat(&host.public_key, &hb, yes, 202.0)
                .unwrap_err()
                .code,
            "not_leader"
        );
        let mut hb1 = hb.clone();
        hb1.insert("leader_epoch", Value::from(1));
        g.heartbeat(&a.public_key, &hb1, yes, 202.0).unwrap();
        assert_eq!(g.leader_lease_expires_at, 202.0 + LEASE_SECONDS as f64);
        // Rolling back is refused.
        let mut back = hb1.clone();
        back.insert("checkpoint_seq", Value::from(2));
        assert_eq!(
            g.heartbeat(&a.public_key, &back, yes, 203.0)
                .unwrap_err()
                .code,
            "checkpoint_rollback"
        );
        // Epoch 0's leader may still certify a checkpoint for the next claim.
        let mut by_old = checkpoint(&g, &host, 0, 7, "tc");
        by_old.insert("expected_epoch", Value::from(1));
        g.claim(&b.public_key, &by_old, yes, 300.0).unwrap();
        assert_eq!(g.leader_epoch, 2);
    }

    #[test]
    fn an_abort_room_fails_when_its_lease_lapses_and_status_moves_forward() {
        let host = KeyPair::generate();
        let a = KeyPair::generate();
        let mut g = group(&host, "abort", true);
        g.admit(
            &a.public_key,
            &admission(&g, &host, &a, "n"),
            || "m".into(),
            1.0,
        )
        .unwrap();
        let body = checkpoint(&g, &host, 0, 1, "t");
        assert_eq!(
            g.claim(&a.public_key, &body, |_, _| true, 500.0)
                .unwrap_err()
                .code,
            "no_failover"
        );
        assert!(!g.settle(101.0));
        assert!(g.settle(500.0));
        assert_eq!(g.status, "failed");
        let mut g = group(&host, "exact", true);
        let st = |s: &str| obj! { "leader_epoch" => 0, "status" => s };
        assert_eq!(
            g.set_status(&a.public_key, &st("active")).unwrap_err().code,
            "not_leader"
        );
        assert_eq!(
            g.set_status(&host.public_key, &st("lobby"))
                .unwrap_err()
                .code,
            "bad_request"
        );
        g.set_status(&host.public_key, &st("active")).unwrap();
        g.set_status(&host.public_key, &st("closed")).unwrap();
        assert_eq!(
            g.set_status(&host.public_key, &st("active"))
                .unwrap_err()
                .code,
            "bad_transition"
        );
        assert_eq!(g.leave(&a.public_key).unwrap_err().code, "not_a_member");
    }
}
