//! `palaver protocol test` of a group protocol: the room in one process,
//! without a network or a server. One authority, one verifying replica per
//! seat (the leader's own included), every envelope applied and
//! acknowledged, the actions given (or the protocol's default script) sent
//! in turn, then a leader migration: the member at seat 1 takes the room
//! over from its own replica's checkpoint at epoch 1, every replica follows,
//! and the rest of the actions run under the new leader. At the end every
//! replica's view must equal what the authority rendered for that member.
//!
//! The replicas run on a thread of their own, fed the envelopes in order
//! through a bounded queue: verifying (four signatures and the hashes of
//! four envelopes a frame) overlaps the leader building the next frame, as
//! it does between processes. Their acknowledgements come back the same
//! way; a migration waits for them to catch up, and a refused envelope
//! stops the run with the replica's reason.

use super::HooksFactory;
use crate::engine::group::{Authority, AuthorityInit, Envelopes, GroupConfig, Replica};
use crate::identity::KeyPair;
use crate::json::{Map, Value};
use crate::obj;
use crate::spec::Spec;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// One action of the script: which seat sends what.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Step {
    pub seat: usize,
    pub action: Value,
    /// Sent after the leader migration.
    pub after_migration: bool,
}

/// What an action got.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StepResult {
    pub seat: usize,
    pub action: Value,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub leader_epoch: u64,
    /// The protocol's events of the frame this action made (a table's
    /// bids, plays and scores).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SmokeReport {
    pub protocol: String,
    pub protocol_id: String,
    pub members: usize,
    pub frames: u64,
    pub envelopes_verified: u64,
    pub steps: Vec<StepResult>,
    /// The epoch and seat of the leader at the end.
    pub leader_epoch: u64,
    pub leader_seat: usize,
    /// Every replica's view equals the authority's view for that member.
    pub views_agree: bool,
    pub completed: bool,
    pub outcome: Option<String>,
    #[serde(serialize_with = "ms")]
    pub elapsed: Duration,
}

fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// The default script for the bundled rooms (other protocols run the
/// bootstrap and the migration only).
pub fn default_steps(spec: &Spec, members: usize) -> Vec<Step> {
    let alias = crate::library::Library::bundled()
        .entries()
        .iter()
        .find(|e| e.protocol_id == spec.protocol_id())
        .map(|e| e.alias.clone())
        .unwrap_or_default();
    let step = |seat: usize, after: bool, text: &str| Step {
        seat,
        action: crate::json::parse_str(text).unwrap_or(Value::Null),
        after_migration: after,
    };
    let mut out = Vec::new();
    match alias.as_str() {
        "community-room-v1" => {
            for seat in 0..members {
                out.push(step(
                    seat,
                    false,
                    &format!(r#"{{"kind":"send","text":"hello from seat {seat}"}}"#),
                ));
            }
            out.push(step(
                1,
                false,
                r#"{"kind":"set_topic","topic":"smoke test"}"#,
            ));
            out.push(step(1, false, r#"{"kind":"close_room"}"#));
            out.push(step(
                0,
                true,
                r#"{"kind":"send","text":"after the migration"}"#,
            ));
            out.push(step(0, true, r#"{"kind":"close_room"}"#));
        }
        "meeting-room-v1" => {
            out.push(step(0, false, r#"{"kind":"add_agenda","text":"status"}"#));
            out.push(step(1, false, r#"{"kind":"request_to_speak"}"#));
            out.push(step(
                0,
                false,
                r#"{"kind":"open_vote","question":"ship it?","choices":["yes","no"]}"#,
            ));
            for seat in 0..members {
                out.push(step(seat, false, r#"{"kind":"cast_vote","choice":0}"#));
            }
            out.push(step(0, true, r#"{"kind":"close_vote"}"#));
            out.push(step(
                1,
                true,
                r#"{"kind":"add_action_item","text":"write the notes"}"#,
            ));
            out.push(step(0, true, r#"{"kind":"end_meeting"}"#));
        }
        _ => {}
    }
    out
}

struct Seat {
    keys: KeyPair,
    replica: Replica,
    booted: bool,
}

/// What the leader's side hands the replicas' thread, in order.
enum ToReplicas {
    /// One frame's envelopes, by member public key.
    Frame(Envelopes),
    /// A new leader took the room over at this epoch: every replica follows.
    NewEpoch { leader: String, epoch: u64 },
    /// The checkpoint seat `.0`'s replica holds once everything sent before
    /// is applied.
    Checkpoint(usize, mpsc::SyncSender<Option<Value>>),
}

/// A replica's acknowledgement of a frame it verified.
struct Ack {
    public_key: String,
    seq: u64,
    frame_hash: String,
    checkpoint_hash: String,
}

/// Frames the replicas may fall behind the leader before it waits.
const REPLICA_QUEUE: usize = 64;

/// The replicas' side: applies what arrives to every seat's replica, in
/// order, and acknowledges each frame; returns how many envelopes it
/// verified, or the first refusal.
fn replicas(
    seats: &mut [Seat],
    inbox: mpsc::Receiver<ToReplicas>,
    acks: mpsc::Sender<Ack>,
) -> Result<u64, String> {
    let mut verified = 0;
    for msg in inbox {
        match msg {
            ToReplicas::Frame(envelopes) => {
                for s in seats.iter_mut() {
                    let Some(env) = envelopes.get(&s.keys.public_key) else {
                        continue;
                    };
                    s.replica.apply(env, !s.booted).map_err(|e| {
                        format!(
                            "seat {} refused an envelope: {e}",
                            s.replica.viewer_public_key()
                        )
                    })?;
                    s.booted = true;
                    s.replica.take_records();
                    verified += 1;
                    if let (Some(seq), Some(fh), Some(cp)) = (
                        s.replica.seq(),
                        s.replica.frame_hash(),
                        s.replica
                            .checkpoint()
                            .and_then(|c| c.get_str("checkpoint_hash")),
                    ) {
                        // The leader's side may have finished: nobody to tell.
                        let _ = acks.send(Ack {
                            public_key: s.keys.public_key.clone(),
                            seq,
                            frame_hash: fh.to_owned(),
                            checkpoint_hash: cp.to_owned(),
                        });
                    }
                }
            }
            ToReplicas::NewEpoch { leader, epoch } => {
                for s in seats.iter_mut() {
                    s.replica
                        .advance_epoch(&leader, epoch)
                        .map_err(|e| e.to_string())?;
                    s.booted = false;
                }
            }
            ToReplicas::Checkpoint(seat, reply) => {
                let cp = seats
                    .get(seat)
                    .and_then(|s| s.replica.checkpoint())
                    .map(|c| (**c).clone());
                let _ = reply.send(cp);
            }
        }
    }
    Ok(verified)
}

/// The leader's end of the replicas' thread.
struct Link {
    to: mpsc::SyncSender<ToReplicas>,
    acks: mpsc::Receiver<Ack>,
}

/// Said when the replicas' thread has stopped: its own error is returned
/// when it is joined.
const REPLICAS_STOPPED: &str = "the replicas stopped";

impl Link {
    fn send(&self, msg: ToReplicas) -> Result<(), String> {
        self.to.send(msg).map_err(|_| REPLICAS_STOPPED.to_owned())
    }

    /// Hands the acknowledgements that arrived so far to the authority.
    fn acknowledge(&self, authority: &mut Authority) {
        for a in self.acks.try_iter() {
            authority.acknowledge(
                &a.public_key,
                a.seq,
                &a.frame_hash,
                Some(&a.checkpoint_hash),
            );
        }
    }

    /// Seat `seat`'s checkpoint once the replicas caught up.
    fn checkpoint(&self, seat: usize) -> Result<Option<Value>, String> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.send(ToReplicas::Checkpoint(seat, reply))?;
        answer.recv().map_err(|_| REPLICAS_STOPPED.to_owned())
    }
}

/// Hands one frame's envelopes to the replicas; returns the protocol's
/// events of what the authority built since the last call.
fn deliver(
    authority: &mut Authority,
    link: &Link,
    envelopes: Envelopes,
) -> Result<Vec<Value>, String> {
    link.acknowledge(authority);
    link.send(ToReplicas::Frame(envelopes))?;
    let mut events = Vec::new();
    for r in authority.take_records() {
        if let Some(Value::Array(e)) = r.snapshot.get("group_events") {
            events.extend(e.iter().cloned());
        }
    }
    Ok(events)
}

/// Runs the smoke test.
pub fn run(
    spec: &Spec,
    hooks: &HooksFactory,
    options: &Map,
    members: usize,
    steps: &[Step],
) -> Result<SmokeReport, String> {
    let started = Instant::now();
    let cfg = GroupConfig::from_spec(spec).map_err(|e| e.to_string())?;
    if members < 2
        || (members as u64) < cfg.min_participants
        || (members as u64) > cfg.max_participants
    {
        return Err(format!(
            "--members {members}: this room seats {} to {}",
            cfg.min_participants.max(2),
            cfg.max_participants
        ));
    }
    if let Some(bad) = steps.iter().find(|s| s.seat >= members) {
        return Err(format!(
            "an action is sent from seat {}, but the room has seats 0 to {}",
            bad.seat,
            members - 1
        ));
    }
    let group_id = hex::encode(rand::random::<[u8; 16]>());
    let name = spec.name().unwrap_or("Group Protocol").to_owned();
    let keys: Vec<KeyPair> = (0..members).map(|_| KeyPair::generate()).collect();
    let member_objs: Vec<Value> = keys
        .iter()
        .enumerate()
        .map(|(seat, k)| {
            Value::Object(obj! { "member_id" => format!("m{seat}"), "public_key" => k.public_key.as_str(), "seat" => seat, "status" => "active" })
        })
        .collect();
    let mut seats: Vec<Seat> = keys
        .iter()
        .map(|k| Seat {
            keys: k.clone(),
            replica: Replica::new(&group_id, &k.public_key, &keys[0].public_key, 0, &name),
            booted: false,
        })
        .collect();
    let mut authority = Authority::new(AuthorityInit {
        config: cfg.clone(),
        hooks: (hooks)(options)?,
        protocol_name: name.clone(),
        group_id: group_id.clone(),
        keys: keys[0].clone(),
        leader_epoch: 0,
        membership_version: 1,
        members: member_objs.clone(),
        checkpoint: None,
    })
    .map_err(|e| format!("the room could not start: {e}"))?;
    let room = Takeover {
        cfg: cfg.clone(),
        hooks,
        options,
        name: name.clone(),
        group_id: group_id.clone(),
        keys: keys.clone(),
        members: member_objs.clone(),
    };
    let table = table_of(spec, options);
    let (to, inbox) = mpsc::sync_channel(REPLICA_QUEUE);
    let (ack_tx, ack_rx) = mpsc::channel();
    let link = Link { to, acks: ack_rx };
    let (played, verified) = std::thread::scope(|sc| {
        let replicas = sc.spawn(|| replicas(&mut seats, inbox, ack_tx));
        let played = play(&mut authority, &link, &room, table.as_deref(), steps);
        // Nothing more to verify: the replicas finish what is queued.
        drop(link);
        let verified = replicas
            .join()
            .unwrap_or_else(|_| Err("the replicas' thread panicked".into()));
        (played, verified)
    });
    // A refusal on the replicas' side is the cause of the leader's side
    // finding them stopped.
    let verified = verified?;
    let (results, migrated) = played?;
    let views_agree = seats.iter().all(|s| {
        s.replica.seq() == Some(authority.seq())
            && s.replica.view() == authority.view(&s.keys.public_key)
    });
    Ok(SmokeReport {
        protocol: name,
        protocol_id: spec.protocol_id().to_owned(),
        members,
        frames: authority.seq() + 1,
        envelopes_verified: verified,
        steps: results,
        leader_epoch: authority.leader_epoch(),
        leader_seat: usize::from(migrated),
        views_agree,
        completed: authority.completed(),
        outcome: authority.outcome().map(str::to_owned),
        elapsed: started.elapsed(),
    })
}

/// The leader's side of a run: the bootstrap, the steps (or a table's bots
/// playing it to its end) and the migration; returns what each action got
/// and whether the room migrated.
fn play(
    authority: &mut Authority,
    link: &Link,
    room: &Takeover<'_>,
    table: Option<&dyn crate::protocols::tables::Table>,
    steps: &[Step],
) -> Result<(Vec<StepResult>, bool), String> {
    let boot = authority.bootstrap_envelopes().map_err(|e| e.to_string())?;
    deliver(authority, link, Arc::new(boot))?;
    let mut client_seqs = vec![0; room.keys.len()];
    let mut results = Vec::new();
    let mut migrated = false;
    for step in steps {
        if step.after_migration && !migrated {
            migrate(authority, link, room)?;
            migrated = true;
        }
        let seat = (step.seat, &room.keys[step.seat]);
        results.push(send(
            authority,
            link,
            seat,
            &mut client_seqs[step.seat],
            &step.action,
        )?);
    }
    let Some(table) = table.filter(|_| steps.is_empty()) else {
        return Ok((results, migrated));
    };
    // A table plays itself: the bot of the seat to move acts on the view
    // the leader sends that seat (which its replica verifies); seat 1 takes
    // the table over after a dozen actions and the round restarts by the
    // rules.
    let members = room.keys.len();
    let mut sent = 0;
    while !authority.completed() && sent < MAX_TABLE_ACTIONS {
        if sent == MIGRATE_AFTER && !migrated && members > 1 {
            migrate(authority, link, room)?;
            migrated = true;
        }
        let Some((seat, action)) = room.keys.iter().enumerate().find_map(|(i, k)| {
            authority
                .view(&k.public_key)
                .and_then(|v| table.bot_action(v))
                .map(|a| (i, a))
        }) else {
            return Err("no seat's bot has a move, and the table has not completed".into());
        };
        let key = (seat, &room.keys[seat]);
        let r = send(authority, link, key, &mut client_seqs[seat], &action)?;
        if r.status == "rejected" {
            return Err(format!(
                "the rules refused the bot's {} at seat {seat}: {}",
                crate::json::canonical::to_string_ordered(&action),
                r.reason.unwrap_or_default()
            ));
        }
        results.push(r);
        sent += 1;
    }
    Ok((results, migrated))
}

/// A table's bot loop stops after this many actions (a sign of a bug).
const MAX_TABLE_ACTIONS: usize = 5000;
/// A table's leader migration comes after this many actions.
const MIGRATE_AFTER: usize = 12;

/// The rules of a bundled table, when the protocol is one.
fn table_of(spec: &Spec, options: &Map) -> Option<Box<dyn crate::protocols::tables::Table>> {
    let lib = crate::library::Library::bundled();
    let entry = lib
        .entries()
        .iter()
        .find(|e| e.protocol_id == spec.protocol_id())?;
    crate::protocols::tables::table_for_alias(&entry.alias, options)
}

/// What seat 1 needs to take the room over.
struct Takeover<'a> {
    cfg: GroupConfig,
    hooks: &'a HooksFactory,
    options: &'a Map,
    name: String,
    group_id: String,
    keys: Vec<KeyPair>,
    members: Vec<Value>,
}

/// Seat 1 takes the room over from its own replica's checkpoint (once the
/// replicas caught up) at the next epoch; every replica follows and gets
/// the new bootstrap.
fn migrate(authority: &mut Authority, link: &Link, room: &Takeover<'_>) -> Result<(), String> {
    let checkpoint = link
        .checkpoint(1)?
        .ok_or("seat 1 holds no checkpoint to take over from")?;
    let epoch = authority.leader_epoch() + 1;
    *authority = Authority::new(AuthorityInit {
        config: room.cfg.clone(),
        hooks: (room.hooks)(room.options)?,
        protocol_name: room.name.clone(),
        group_id: room.group_id.clone(),
        keys: room.keys[1].clone(),
        leader_epoch: epoch,
        membership_version: authority.membership_version(),
        members: room.members.clone(),
        checkpoint: Some(checkpoint),
    })
    .map_err(|e| format!("seat 1 could not take the room over: {e}"))?;
    link.send(ToReplicas::NewEpoch {
        leader: room.keys[1].public_key.clone(),
        epoch,
    })?;
    let boot = authority.bootstrap_envelopes().map_err(|e| e.to_string())?;
    deliver(authority, link, Arc::new(boot))?;
    Ok(())
}

/// Sends one action from `seat` (`client_seq` its last input's number) and
/// delivers what it made.
fn send(
    authority: &mut Authority,
    link: &Link,
    (seat, key): (usize, &KeyPair),
    client_seq: &mut i64,
    action: &Value,
) -> Result<StepResult, String> {
    let result =
        |status: &str, reason: Option<String>, events: Vec<Value>, epoch: u64| StepResult {
            seat,
            action: action.clone(),
            status: status.to_owned(),
            reason,
            leader_epoch: epoch,
            events,
        };
    if authority.completed() {
        let epoch = authority.leader_epoch();
        return Ok(result(
            "not sent",
            Some("the room had completed".into()),
            Vec::new(),
            epoch,
        ));
    }
    match authority.apply_input(&key.public_key, *client_seq + 1, action) {
        Ok((envs, receipt)) => {
            *client_seq += 1;
            let status = receipt.get_str("status").unwrap_or("accepted").to_owned();
            let events = if status != "duplicate" {
                deliver(authority, link, envs)?
            } else {
                Vec::new()
            };
            Ok(result(&status, None, events, authority.leader_epoch()))
        }
        // A refused action spends no client_seq.
        Err(e) if e.is_refusal() => Ok(result(
            "rejected",
            Some(e.reason()),
            Vec::new(),
            authority.leader_epoch(),
        )),
        Err(e) => Err(format!("the room failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(alias: &str) -> (Spec, HooksFactory) {
        let spec = crate::library::bundled_spec(alias).unwrap().clone();
        let hooks = super::super::native_hooks(&spec).unwrap();
        (spec, hooks)
    }

    #[test]
    fn the_community_room_survives_a_migration_with_every_view_agreeing() {
        let (spec, hooks) = room("community-room-v1");
        let steps = default_steps(&spec, 3);
        let r = run(&spec, &hooks, &Map::new(), 3, &steps).unwrap();
        assert!(r.views_agree, "{r:?}");
        assert_eq!((r.leader_epoch, r.leader_seat), (1, 1));
        // Seat 1 may not close the room; seat 0 may, after the migration.
        let close = r
            .steps
            .iter()
            .find(|s| s.seat == 1 && s.action.get_str("kind") == Some("close_room"))
            .unwrap();
        assert_eq!(close.status, "rejected");
        assert_eq!(
            close.reason.as_deref(),
            Some("only the room owner at seat 0 can close the room")
        );
        assert!(r.completed);
        assert_eq!(r.outcome.as_deref(), Some("closed"));
        assert_eq!(
            r.steps.iter().filter(|s| s.status == "accepted").count(),
            steps.len() - 1
        );
    }

    #[test]
    fn the_meeting_room_runs_its_script() {
        let (spec, hooks) = room("meeting-room-v1");
        let r = run(&spec, &hooks, &Map::new(), 4, &default_steps(&spec, 4)).unwrap();
        assert!(r.views_agree, "{r:?}");
        assert!(
            r.steps.iter().all(|s| s.status == "accepted"),
            "{:?}",
            r.steps
        );
    }

    #[test]
    fn a_landlord_table_plays_itself_to_the_end_across_a_migration() {
        let (spec, hooks) = room("four-player-landlord-v1");
        let options = crate::obj! { "deal_seed" => "smoke" };
        let r = run(&spec, &hooks, &options, 4, &[]).unwrap();
        assert!(r.views_agree, "{r:?}");
        assert!(r.completed, "{r:?}");
        assert!(
            matches!(r.outcome.as_deref(), Some("landlord" | "farmers")),
            "{r:?}"
        );
        assert_eq!((r.leader_epoch, r.leader_seat), (1, 1));
        assert!(r.steps.iter().all(|s| s.status == "accepted"));
        let kinds: Vec<&str> = r
            .steps
            .iter()
            .flat_map(|s| s.events.iter().filter_map(|e| e.get_str("kind")))
            .collect();
        // The new leader restarted the round: a second auction.
        assert_eq!(
            kinds.iter().filter(|k| **k == "landlord_selected").count(),
            2
        );
        for k in ["bid", "landlord_selected", "play", "game_over"] {
            assert!(kinds.contains(&k), "no {k} event in {kinds:?}");
        }
    }

    #[test]
    fn a_refused_envelope_stops_the_replicas_with_its_reason_and_the_leader_sees_them_stopped() {
        use crate::engine::group::testkit;
        let mut authority = testkit::room(2);
        let mut seats: Vec<Seat> = (0..2)
            .map(|i| {
                let keys = testkit::key(i);
                let replica = Replica::new(
                    "g1",
                    &keys.public_key,
                    &testkit::key(0).public_key,
                    0,
                    "Chat",
                );
                Seat {
                    keys,
                    replica,
                    booted: false,
                }
            })
            .collect();
        let (to, inbox) = mpsc::sync_channel(REPLICA_QUEUE);
        let (ack_tx, ack_rx) = mpsc::channel();
        let link = Link { to, acks: ack_rx };
        let boot = authority.bootstrap_envelopes().unwrap();
        let seat1 = seats[1].keys.public_key.clone();
        let (verified, stopped) = std::thread::scope(|sc| {
            let h = sc.spawn(|| replicas(&mut seats, inbox, ack_tx));
            deliver(&mut authority, &link, Arc::new(boot)).unwrap();
            let (envs, _) = authority
                .apply_input(
                    &testkit::key(0).public_key,
                    1,
                    &crate::json::parse_str(r#"{"say":"hi"}"#).unwrap(),
                )
                .unwrap();
            let mut forged = (*envs).clone();
            let mut env = forged.get(&seat1).unwrap().as_object().unwrap().clone();
            env.insert("seq", Value::from(7u64));
            forged.insert(seat1.as_str(), Value::Object(env));
            deliver(&mut authority, &link, Arc::new(forged)).unwrap();
            // The replicas stop at the forged frame; the leader's side finds
            // them stopped at the latest when it waits for a checkpoint.
            let stopped = link.checkpoint(1).unwrap_err();
            drop(link);
            (h.join().unwrap(), stopped)
        });
        let e = verified.unwrap_err();
        assert!(
            e.contains("refused an envelope") && e.contains("frame hash mismatch"),
            "{e}"
        );
        assert_eq!(stopped, REPLICAS_STOPPED);
        // Seat 0 applied the frame before seat 1 refused it; seat 1 holds the bootstrap.
        assert_eq!(
            (seats[0].replica.seq(), seats[1].replica.seq()),
            (Some(1), Some(0))
        );
    }

    #[test]
    fn seats_and_sizes_are_checked() {
        let (spec, hooks) = room("community-room-v1");
        assert!(
            run(&spec, &hooks, &Map::new(), 33, &[])
                .unwrap_err()
                .contains("2 to 32")
        );
        let far = Step {
            seat: 5,
            action: Value::Object(Map::new()),
            after_migration: false,
        };
        assert!(
            run(&spec, &hooks, &Map::new(), 2, &[far])
                .unwrap_err()
                .contains("seat 5")
        );
    }
}
