//! The leader of a room: one task owns the [`Authority`] and takes, in one
//! ordered queue, every member's inputs and acks, admissions of new and
//! returning members, departures, and this side's own actions from
//! group-actions.jsonl. Each member has its own writer task and a bounded
//! queue, so a member that stops reading is dropped without holding up the
//! others.

use super::api;
use super::outbox::{Outbox, is_action_id};
use super::{Room, RunEnd, files};
use crate::engine::Channel;
use crate::engine::group::authority::Envelopes;
use crate::engine::group::{Authority, GroupError};
use crate::json::{Map, Value};
use crate::net;
use crate::obj;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// A member that has not acknowledged a frame this long is dropped.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(15);
/// Frames queued for one member before it counts as not reading.
pub const MEMBER_BACKLOG: usize = 512;
/// How long one frame may take to be written to a member.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// Inputs one member may have waiting in the leader's queue; past that its
/// further inputs are refused as retryable (a flood costs the flooder).
pub const MAX_QUEUED_INPUTS: usize = 64;

/// How long a closed connection waits for its member to read the last
/// frames and leave first.
pub const FINISH_GRACE: Duration = Duration::from_millis(500);

/// What the leader's queue carries.
pub enum Msg {
    /// A member admitted over `ch` (new, or back after a reconnect).
    Admitted {
        member: Value,
        ch: Channel,
        link: net::Link,
        membership_version: u64,
    },
    /// A frame from a member. An input carries the counter of inputs its
    /// connection has waiting, which taking it decrements.
    Frame {
        pk: String,
        frame: Map,
        queued: Option<Arc<AtomicUsize>>,
    },
    /// An input that came while its sender already had
    /// [`MAX_QUEUED_INPUTS`] waiting: refused as retryable, not queued.
    Flooded { pk: String, frame: Map },
    /// Connection `conn` of a member ended (a later connection of the same
    /// member is left alone).
    Gone {
        pk: String,
        conn: u64,
        reason: String,
    },
}

struct Conn {
    /// Which connection of its member this is (see [`Msg::Gone`]).
    id: u64,
    out: mpsc::Sender<Value>,
    reader: tokio::task::JoinHandle<()>,
    writer: Option<tokio::task::JoinHandle<()>>,
    /// Highest seq sent and not yet acknowledged, and since when.
    waiting_ack: Option<(u64, Instant)>,
    acked: Option<u64>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        // The writer finishes what is queued (bounded by SEND_TIMEOUT per
        // frame), then closes the stream and the connection.
        self.reader.abort();
    }
}

/// The newest checkpoint some successor holds, for the lease heartbeat.
pub type Replicated = Arc<Mutex<(u64, String)>>;

pub struct Hub {
    pub authority: Authority,
    conns: HashMap<String, Conn>,
    tx: mpsc::Sender<Msg>,
    pub rx: mpsc::Receiver<Msg>,
    outbox: Outbox,
    local_inflight: bool,
    replicated: Replicated,
    /// The id the next connection gets.
    next_conn: u64,
}

impl Hub {
    pub fn new(
        authority: Authority,
        room: &Room,
        replicated: Replicated,
        (tx, rx): (mpsc::Sender<Msg>, mpsc::Receiver<Msg>),
    ) -> std::io::Result<Hub> {
        let accepted = authority.last_client_seq(&room.keys.public_key);
        let outbox = Outbox::open(&room.dir, accepted)?;
        Ok(Hub {
            authority,
            conns: HashMap::new(),
            tx,
            rx,
            outbox,
            local_inflight: false,
            replicated,
            next_conn: 0,
        })
    }

    pub fn connected(&self) -> usize {
        self.conns.len()
    }

    /// Attaches a member admitted in the lobby (its first envelope is the
    /// bootstrap every member gets when the room starts).
    pub fn attach_quiet(&mut self, member: &Value, ch: Channel, link: net::Link) {
        let pk = member
            .get_str("public_key")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if pk != self.authority.leader_public_key() {
            self.attach(&pk, ch, link);
        }
    }

    /// Starts reading and writing `ch` for the member `pk`, replacing an
    /// earlier connection of the same member.
    fn attach(&mut self, pk: &str, ch: Channel, link: net::Link) {
        let Channel {
            tx: wire,
            rx: mut reader,
        } = ch;
        let (out, mut queue) = mpsc::channel::<Value>(MEMBER_BACKLOG);
        let id = self.next_conn;
        self.next_conn += 1;
        let hub = self.tx.clone();
        let who = pk.to_owned();
        let writer = tokio::spawn(async move {
            while let Some(frame) = queue.recv().await {
                if let Err(e) = wire.send_within(&frame, SEND_TIMEOUT).await {
                    let _ = hub
                        .send(Msg::Gone {
                            pk: who,
                            conn: id,
                            reason: format!("send_failed: {e}"),
                        })
                        .await;
                    link.finish(Duration::ZERO).await;
                    return;
                }
            }
            wire.close().await;
            link.finish(FINISH_GRACE).await;
        });
        let hub = self.tx.clone();
        let who = pk.to_owned();
        let counted = Arc::new(AtomicUsize::new(0));
        let reader_task = tokio::spawn(async move {
            loop {
                match reader.recv().await {
                    Ok(frame) => {
                        let mut queued = None;
                        if frame.get_str("_group") == Some("input") {
                            if counted.load(Ordering::Relaxed) >= MAX_QUEUED_INPUTS {
                                let _ = hub
                                    .send(Msg::Flooded {
                                        pk: who.clone(),
                                        frame,
                                    })
                                    .await;
                                continue;
                            }
                            counted.fetch_add(1, Ordering::Relaxed);
                            queued = Some(counted.clone());
                        }
                        if hub
                            .send(Msg::Frame {
                                pk: who.clone(),
                                frame,
                                queued,
                            })
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(e) => {
                        let reason = match e {
                            crate::engine::ChannelError::Closed => "channel_closed".to_owned(),
                            e => format!("receiver_error: {e}"),
                        };
                        let _ = hub
                            .send(Msg::Gone {
                                pk: who,
                                conn: id,
                                reason,
                            })
                            .await;
                        return;
                    }
                }
            }
        });
        self.conns.insert(
            pk.to_owned(),
            Conn {
                id,
                out,
                reader: reader_task,
                writer: Some(writer),
                waiting_ack: None,
                acked: None,
            },
        );
    }

    /// Queues `frame` for `pk`; a member whose queue is full is dropped.
    fn send(&mut self, pk: &str, frame: Value, envelope_seq: Option<u64>) -> Option<String> {
        let conn = self.conns.get_mut(pk)?;
        if conn.out.try_send(frame).is_err() {
            return Some(pk.to_owned());
        }
        if let Some(seq) = envelope_seq
            && conn.acked.is_none_or(|a| seq > a)
        {
            conn.waiting_ack = Some(match conn.waiting_ack {
                Some((s, since)) => (s.max(seq), since),
                None => (seq, Instant::now()),
            });
        }
        None
    }

    /// Sends each connected member its own envelope.
    pub fn broadcast(&mut self, envelopes: &crate::json::Map) -> Vec<String> {
        let mut dropped = Vec::new();
        for (pk, env) in envelopes.iter() {
            if !self.conns.contains_key(pk) {
                continue;
            }
            let seq = env
                .get("seq")
                .and_then(Value::as_i64)
                .and_then(|s| u64::try_from(s).ok());
            if let Some(d) = self.send(pk, env.clone(), seq) {
                dropped.push(d);
            }
        }
        dropped
    }

    fn broadcast_frame(&mut self, room: &Room, envelopes: &Envelopes) {
        for d in self.broadcast(envelopes) {
            self.detach(room, &d, "send_backlog");
        }
    }

    /// A member connected (after admission): a new one joins the authority
    /// (a membership frame to all), a known one gets a bootstrap envelope.
    pub fn admitted(
        &mut self,
        room: &Room,
        member: Value,
        ch: Channel,
        link: net::Link,
        mv: u64,
    ) -> Result<(), GroupError> {
        let pk = member
            .get_str("public_key")
            .unwrap_or_default()
            .to_ascii_lowercase();
        self.attach(&pk, ch, link);
        let known = self
            .authority
            .member(&pk)
            .is_some_and(|m| m.get_str("status") == Some("active"));
        if known {
            if let Some(env) = self.authority.bootstrap_envelope(&pk)? {
                let seq = env
                    .get("seq")
                    .and_then(Value::as_i64)
                    .and_then(|s| u64::try_from(s).ok());
                if self.send(&pk, env, seq).is_some() {
                    self.detach(room, &pk, "bootstrap_send_failed");
                }
            }
            room.event("group_member_reconnected", obj! { "group_id" => room.group_id.as_str(), "public_key" => pk.as_str(), "seat" => member.get("seat").cloned().unwrap_or(Value::Null) });
        } else {
            let envs = self.authority.add_member(&member, mv)?;
            self.flush(room);
            self.broadcast_frame(room, &envs);
            room.event("group_member_connected", obj! { "group_id" => room.group_id.as_str(), "public_key" => pk.as_str(), "seat" => member.get("seat").cloned().unwrap_or(Value::Null), "membership_version" => mv });
        }
        Ok(())
    }

    /// Drops a member's connection (it stays a member: it may come back).
    pub fn detach(&mut self, room: &Room, pk: &str, reason: &str) {
        if self.conns.remove(pk).is_some() {
            room.event("group_member_disconnected", obj! { "group_id" => room.group_id.as_str(), "public_key" => pk, "reason" => reason });
        }
    }

    /// Writes what the authority produced since the last call.
    pub fn flush(&mut self, room: &Room) {
        for rec in self.authority.take_records() {
            files::write_record(room, rec);
        }
    }

    /// One frame from a member (or this side's own input).
    pub fn frame(
        &mut self,
        room: &Room,
        pk: &str,
        frame: Map,
        queued: Option<Arc<AtomicUsize>>,
    ) -> Result<(), GroupError> {
        if let Some(q) = queued {
            let _ = q.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        }
        match frame.get_str("_group") {
            Some("input") => self.input(room, pk, frame),
            Some("ack") => {
                self.ack(pk, &frame);
                Ok(())
            }
            Some("ping") => {
                let pong = obj! { "_group" => "pong", "group_id" => room.group_id.as_str(), "leader_epoch" => self.authority.leader_epoch(), "nonce" => frame.get("nonce").cloned().unwrap_or(Value::Null) };
                self.send(pk, Value::Object(pong), None);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn ack(&mut self, pk: &str, frame: &Map) {
        let seq = frame
            .get("seq")
            .filter(|v| v.is_integer())
            .and_then(Value::as_i64)
            .and_then(|s| u64::try_from(s).ok());
        let (Some(seq), Some(fh), Some(ch)) = (
            seq,
            frame.get_str("frame_hash"),
            frame.get_str("checkpoint_hash"),
        ) else {
            return;
        };
        if !self.authority.acknowledge(pk, seq, fh, Some(ch)) {
            return;
        }
        if let Some(cp) = self.authority.replicated_checkpoint()
            && let (Some(s), Some(h)) = (
                cp.get("seq").and_then(Value::as_i64),
                cp.get_str("checkpoint_hash"),
            )
            && let Ok(mut r) = self.replicated.lock()
        {
            *r = (u64::try_from(s).unwrap_or(0), h.to_owned());
        }
        if let Some(c) = self.conns.get_mut(pk) {
            let before = c.acked;
            c.acked = Some(before.map_or(seq, |a| a.max(seq)));
            if let Some((want, _)) = c.waiting_ack {
                if seq >= want {
                    c.waiting_ack = None;
                } else if before.is_none_or(|b| seq > b) {
                    c.waiting_ack = Some((want, Instant::now()));
                }
            }
        }
    }

    fn input(&mut self, room: &Room, pk: &str, frame: Map) -> Result<(), GroupError> {
        let client_seq = frame.get("client_seq").cloned().unwrap_or(Value::Null);
        let action_id = frame.get("action_id").cloned().unwrap_or(Value::Null);
        if frame.get_str("group_id") != Some(room.group_id.as_str())
            || frame.get("leader_epoch").and_then(Value::as_i64)
                != i64::try_from(self.authority.leader_epoch()).ok()
            || frame.get_str("actor_public_key") != Some(pk)
        {
            let r = obj! { "_group" => "receipt", "status" => "rejected", "reason" => "group, epoch, or actor mismatch", "client_seq" => client_seq, "action_id" => action_id, "retryable" => true };
            self.receipt(room, pk, r);
            return Ok(());
        }
        let reject = |hub: &mut Hub, reason: String| {
            let reason: String = reason.chars().take(256).collect();
            room.event(
                "group_action_rejected",
                obj! { "public_key" => pk, "reason" => reason.as_str() },
            );
            let r = obj! { "_group" => "receipt", "status" => "rejected", "reason" => reason, "client_seq" => client_seq.clone(), "action_id" => action_id.clone() };
            hub.receipt(room, pk, r);
        };
        if !action_id.as_str().is_some_and(is_action_id) {
            reject(self, "action_id must be 32-char lowercase hex".into());
            return Ok(());
        }
        let Some(seq) = frame
            .get("client_seq")
            .filter(|v| v.is_integer())
            .and_then(Value::as_i64)
        else {
            reject(self, "client_seq must be a positive integer".into());
            return Ok(());
        };
        let Some(action) = frame.get("action") else {
            reject(self, "'action'".into());
            return Ok(());
        };
        match self.authority.apply_input(pk, seq, action) {
            Ok((envs, receipt)) => {
                self.flush(room);
                let duplicate = receipt.get_str("status") == Some("duplicate");
                if !duplicate {
                    self.broadcast_frame(room, &envs);
                }
                let mut r = obj! { "_group" => "receipt" };
                for (k, v) in receipt.iter() {
                    r.insert(k, v.clone());
                }
                r.insert("action_id", action_id.clone());
                self.receipt(room, pk, r);
                Ok(())
            }
            Err(e) if e.is_refusal() => {
                reject(self, e.reason());
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn receipt(&mut self, room: &Room, pk: &str, receipt: Map) {
        if pk == room.keys.public_key {
            room.event("group_action_receipt", receipt.clone());
            // The leader's own input is answered while it is sent
            // (`local_action`), so this receipt ends its flight whatever it
            // says: a retryable refusal leaves it pending in the outbox and
            // the next tick sends it again, rather than the seat never
            // acting again.
            self.local_inflight = false;
            let action = self.outbox.pending_action().cloned();
            if self.outbox.receipt(&receipt).unwrap_or(false)
                && receipt.get_str("status") == Some("rejected")
                && let Some(a) = action
            {
                super::autopilot::refused(room, &a);
            }
            return;
        }
        self.send(pk, Value::Object(receipt), None);
    }

    /// This side's next own action, if one is waiting and none in flight.
    pub fn local_action(&mut self, room: &Room) -> Result<(), GroupError> {
        if self.local_inflight {
            return Ok(());
        }
        let Ok(Some(p)) = self.outbox.prepare() else {
            return Ok(());
        };
        self.local_inflight = true;
        let frame = obj! {
            "_group" => "input", "group_id" => room.group_id.as_str(), "leader_epoch" => self.authority.leader_epoch(),
            "actor_public_key" => room.keys.public_key.as_str(), "client_seq" => p.client_seq,
            "action_id" => p.action_id.as_str(), "action" => Value::Object(p.action),
        };
        let pk = room.keys.public_key.clone();
        self.input(room, &pk, frame)
    }

    /// Refuses an input its sender flooded in (see [`Msg::Flooded`]).
    pub fn flooded(&mut self, room: &Room, pk: &str, frame: &Map) {
        let receipt = obj! {
            "_group" => "receipt", "status" => "rejected", "reason" => "too many inputs waiting: slow down",
            "client_seq" => frame.get("client_seq").cloned().unwrap_or(Value::Null),
            "action_id" => frame.get("action_id").cloned().unwrap_or(Value::Null), "retryable" => true,
        };
        self.receipt(room, pk, receipt);
    }

    /// Connection `conn` of `pk` ended: dropped, unless the member has
    /// connected again since.
    pub fn gone(&mut self, room: &Room, pk: &str, conn: u64, reason: &str) {
        if self.conns.get(pk).is_some_and(|c| c.id == conn) {
            self.detach(room, pk, reason);
        }
    }

    /// Members that owe an ack for longer than [`ACK_TIMEOUT`].
    pub fn overdue(&self) -> Vec<String> {
        self.conns
            .iter()
            .filter(|(_, c)| {
                c.waiting_ack
                    .is_some_and(|(_, since)| since.elapsed() >= ACK_TIMEOUT)
            })
            .map(|(pk, _)| pk.clone())
            .collect()
    }

    /// Serves acks and departures until every connected member has
    /// acknowledged the frames sent to it (the final one among them), or
    /// left, or `limit` has passed: a member slower than the table (the
    /// reference's client is tens of milliseconds behind bots) must read the
    /// completing frame before its connection closes, or its record says the
    /// room still runs. Inputs arriving meanwhile are answered as at any
    /// time (the room is over, so they are refused); a member admitted now
    /// is not seated.
    pub async fn await_final_acks(&mut self, room: &Room, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while self.conns.values().any(|c| c.waiting_ack.is_some()) {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(Msg::Frame { pk, frame, queued })) => {
                    // The room's rules failing now cannot change its
                    // recorded end: stop waiting and close, as at the limit.
                    if self.frame(room, &pk, frame, queued).is_err() {
                        return;
                    }
                }
                Ok(Some(Msg::Gone { pk, conn, reason })) => self.gone(room, &pk, conn, &reason),
                Ok(Some(Msg::Flooded { .. } | Msg::Admitted { .. })) => {}
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// Closes every connection once its queued frames are written (the
    /// leader is done or fenced), waiting at most `limit` for that.
    pub async fn close_all(&mut self, room: &Room, reason: &str, limit: Duration) {
        let mut writers = Vec::new();
        for (pk, mut c) in self.conns.drain() {
            writers.extend(c.writer.take());
            room.event("group_member_disconnected", obj! { "group_id" => room.group_id.as_str(), "public_key" => pk.as_str(), "reason" => reason });
        }
        let _ = tokio::time::timeout(limit, futures_util::future::join_all(writers)).await;
    }
}

/// Keeps the leader's lease on the server, every third of the lease, with
/// the newest checkpoint a successor acknowledged; returns when the lease
/// could not be renewed for a whole lease (the leader is fenced then).
pub async fn keep_lease(room: Arc<Room>, epoch: u64, lease: u64, replicated: Replicated) -> String {
    let every = Duration::from_secs_f64((lease as f64 / 3.0).max(1.0));
    let mut last_ok = Instant::now();
    loop {
        tokio::time::sleep(every).await;
        let (seq, hash) = replicated.lock().map(|r| r.clone()).unwrap_or_default();
        match api::renew_lease(
            &room.client,
            &room.group_id,
            &room.protocol_id,
            epoch,
            (seq, &hash),
            &room.ticket,
        )
        .await
        {
            Ok(v) => {
                last_ok = Instant::now();
                room.event("group_leader_lease_renewed", obj! { "group_id" => room.group_id.as_str(), "leader_epoch" => epoch, "checkpoint_seq" => seq, "leader_lease_expires_at" => v.get("leader_lease_expires_at").cloned().unwrap_or(Value::Null) });
            }
            Err(e) => {
                let err: String = e.to_string().chars().take(256).collect();
                room.event("group_leader_lease_renew_failed", obj! { "group_id" => room.group_id.as_str(), "leader_epoch" => epoch, "error" => err.as_str() });
                if last_ok.elapsed() >= Duration::from_secs(lease) {
                    return err;
                }
            }
        }
    }
}

/// Runs the room as its leader until it completes, the lease is lost
/// (`lease_task` returns, see [`keep_lease`]), or `cancel` resolves. The
/// accept loop beside it sends admitted members into the same queue.
pub async fn run(
    mut hub: Hub,
    room: Arc<Room>,
    epoch: u64,
    mut lease_task: super::Task<String>,
    cancel: impl std::future::Future<Output = ()>,
) -> RunEnd {
    let mut cancel = std::pin::pin!(cancel);
    let mut tick = tokio::time::interval(super::ACTION_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let end = loop {
        if hub.authority.completed() {
            break RunEnd::Completed {
                outcome: hub.authority.outcome().map(str::to_owned),
            };
        }
        tokio::select! {
            msg = hub.rx.recv() => {
                let Some(msg) = msg else { break RunEnd::Failed("the leader's queue closed".into()) };
                let r = match msg {
                    Msg::Admitted { member, ch, link, membership_version } => hub.admitted(&room, member, ch, link, membership_version),
                    Msg::Frame { pk, frame, queued } => {
                        // An input may have made a frame: the leader's own
                        // seat moves on it now, not at the next poll.
                        tick.reset_immediately();
                        hub.frame(&room, &pk, frame, queued)
                    }
                    Msg::Flooded { pk, frame } => { hub.flooded(&room, &pk, &frame); Ok(()) }
                    Msg::Gone { pk, conn, reason } => { hub.gone(&room, &pk, conn, &reason); Ok(()) }
                };
                if let Err(e) = r {
                    break RunEnd::Failed(format!("the room's rules failed: {e}"));
                }
            }
            _ = tick.tick() => {
                let mut r = hub.local_action(&room);
                // The seat's bot (or its timeout rule) acts only when no
                // action of the person's is waiting or in flight.
                if r.is_ok() && !hub.local_inflight {
                    let at = super::autopilot::At { epoch: hub.authority.leader_epoch(), seq: hub.authority.seq() };
                    super::autopilot::act(&room, at, hub.authority.leader_view());
                    r = hub.local_action(&room);
                }
                if let Err(e) = r {
                    break RunEnd::Failed(format!("the room's rules failed: {e}"));
                }
                for pk in hub.overdue() {
                    hub.detach(&room, &pk, "frame_ack_timeout");
                }
            }
            lost = &mut lease_task => {
                let why = lost.unwrap_or_else(|e| e.to_string());
                room.event("group_leader_fenced", obj! { "group_id" => room.group_id.as_str(), "leader_epoch" => epoch, "reason" => "server_lease_lost" });
                break RunEnd::Fenced(why);
            }
            _ = cancel.as_mut() => break RunEnd::Cancelled,
        }
    };
    drop(lease_task);
    hub.flush(&room);
    if let RunEnd::Completed { .. } = &end {
        hub.await_final_acks(&room, CLOSE_GRACE).await;
    }
    if let RunEnd::Completed { .. } = &end
        && let Err(e) = api::set_status(&room.client, &room.group_id, epoch, "closed").await
    {
        room.event(
            "group_status_update_failed",
            obj! { "status" => "closed", "error" => e.to_string() },
        );
    }
    hub.close_all(&room, "leader_shutdown", CLOSE_GRACE).await;
    end
}

/// How long a leader that is done waits for its members: their acks of the
/// final frame, then its writers handing the last bytes over.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
