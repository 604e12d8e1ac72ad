//! A member of a room: admitted by the leader, it holds a replica that
//! checks every envelope before anything is written, acknowledges each one,
//! sends this side's actions from group-actions.jsonl, and when the leader
//! goes away either follows the next leader or, once the lease has run out,
//! claims the room with its own checkpoint and leads it.

use super::admit::JoinError;
use super::outbox::Outbox;
use super::{JoinRoomPlan, Room, RoomFinished, RunEnd, api, files, leader};
use crate::engine::group::Replica;
use crate::engine::{Channel, Role};
use crate::json::{Map, Value};
use crate::obj;
use crate::services::remote::{Progress, RemoteError};
use crate::web::{Client, ClientError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a member waits for its first envelope after admission.
pub const FIRST_ENVELOPE: Duration = Duration::from_secs(60);
/// How often a member tells the server it is still there.
pub const MEMBER_HEARTBEAT: Duration = Duration::from_secs(5);
/// An action without a receipt this long is sent again (same client_seq).
pub const RESEND: Duration = Duration::from_secs(1);

/// How one connection to a leader ended.
enum ChannelEnd {
    Completed(Option<String>),
    /// The leader's channel closed: follow or take over.
    LeaderGone,
    /// The leader sent something a replica must refuse.
    Refused(String),
}

fn envelope_kind(k: Option<&str>) -> bool {
    matches!(k, Some("snapshot" | "frame" | "membership" | "epoch_start"))
}

fn ack(replica: &Replica) -> Value {
    Value::Object(obj! {
        "_group" => "ack", "group_id" => replica.group_id(), "leader_epoch" => replica.leader_epoch(),
        "seq" => replica.seq().map_or(Value::Null, Value::from),
        "frame_hash" => replica.frame_hash().map_or(Value::Null, Value::from),
        "checkpoint_hash" => replica.checkpoint().and_then(|c| c.get_str("checkpoint_hash")).map_or(Value::Null, Value::from),
    })
}

/// The newest client_seq a checkpoint says the leader took from `pk`.
fn accepted_seq(replica: &Replica, pk: &str) -> u64 {
    replica
        .checkpoint()
        .and_then(|c| c.get("last_client_seq"))
        .and_then(|m| m.get(pk))
        .filter(|v| v.is_integer())
        .and_then(Value::as_i64)
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

/// How often a member asks the community whether its leader's lease still
/// runs: half the lease, at least this.
const LEASE_CHECK_MIN: Duration = Duration::from_secs(1);

/// Returns once the community says the room's leader lease has run out, or
/// that a later epoch leads it: a leader killed without a goodbye leaves
/// its members' connections open until their transport's idle timeout,
/// far longer than the lease. A community that does not answer is asked
/// again at the next check.
async fn lease_gone(room: &Room, lease_seconds: u64, epoch: u64) {
    let every = Duration::from_millis(lease_seconds * 500).max(LEASE_CHECK_MIN);
    loop {
        tokio::time::sleep(every).await;
        if let Ok(g) = api::get(&room.client, &room.group_id).await
            && (api::lease_expired(&g) || api::count(&g, "leader_epoch").is_ok_and(|e| e > epoch))
        {
            return;
        }
    }
}

/// Serves one connection to a leader until it ends.
async fn serve(
    room: &Room,
    ch: &mut Channel,
    replica: &mut Replica,
    first: Map,
    lease_seconds: u64,
) -> ChannelEnd {
    let pk = room.keys.public_key.clone();
    match replica.apply(&Value::Object(first), true) {
        Ok(_) => {
            for rec in replica.take_records() {
                files::write_record(room, rec);
            }
        }
        Err(e) => return ChannelEnd::Refused(e.to_string()),
    }
    if ch.tx.send(&ack(replica)).await.is_err() {
        return ChannelEnd::LeaderGone;
    }
    if replica.completed() {
        return ChannelEnd::Completed(replica.outcome().map(str::to_owned));
    }
    let mut outbox = match Outbox::open(&room.dir, accepted_seq(replica, &pk)) {
        Ok(o) => o,
        Err(e) => return ChannelEnd::Refused(format!("the action outbox cannot be written: {e}")),
    };
    let mut sent: Option<Instant> = None;
    let mut tick = tokio::time::interval(super::ACTION_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let gone = lease_gone(room, lease_seconds, replica.leader_epoch());
    let mut gone = std::pin::pin!(gone);
    loop {
        tokio::select! {
            () = gone.as_mut() => {
                room.event("group_leader_lease_expired", obj! { "group_id" => room.group_id.as_str(), "leader_epoch" => replica.leader_epoch() });
                return ChannelEnd::LeaderGone;
            }
            frame = ch.rx.recv() => {
                let frame = match frame {
                    Ok(f) => f,
                    Err(crate::engine::ChannelError::Closed) => return ChannelEnd::LeaderGone,
                    Err(crate::engine::ChannelError::Transport(_)) => return ChannelEnd::LeaderGone,
                    Err(e) => return ChannelEnd::Refused(format!("the leader sent a bad frame: {e}")),
                };
                let kind = frame.get_str("_group").map(str::to_owned);
                if envelope_kind(kind.as_deref()) {
                    match replica.apply(&Value::Object(frame), false) {
                        Ok(true) => {
                            for rec in replica.take_records() {
                                files::write_record(room, rec);
                            }
                            if ch.tx.send(&ack(replica)).await.is_err() {
                                return ChannelEnd::LeaderGone;
                            }
                            // The seat's bot moves on the new frame now,
                            // not at the next poll.
                            tick.reset_immediately();
                        }
                        Ok(false) => {}
                        Err(e) => return ChannelEnd::Refused(e.to_string()),
                    }
                    if replica.completed() {
                        let _ = outbox.reconcile(accepted_seq(replica, &pk));
                        return ChannelEnd::Completed(replica.outcome().map(str::to_owned));
                    }
                } else if kind.as_deref() == Some("receipt") {
                    room.event("group_action_receipt", frame.clone());
                    let action = outbox.pending_action().cloned();
                    if outbox.receipt(&frame).unwrap_or(false) {
                        sent = None;
                        // The next action waiting (if one is) goes now.
                        tick.reset_immediately();
                        if frame.get_str("status") == Some("rejected")
                            && let Some(a) = action
                        {
                            super::autopilot::refused(room, &a);
                        }
                    }
                } else if kind.as_deref() == Some("pong") {
                    room.event("group_pong", obj! { "group_id" => room.group_id.as_str(), "leader_epoch" => replica.leader_epoch(), "nonce" => frame.get("nonce").cloned().unwrap_or(Value::Null) });
                }
            }
            _ = tick.tick() => {
                // The seat's bot (or its timeout rule) acts only when no
                // action of the person's is waiting or in flight.
                if matches!(outbox.prepare(), Ok(None)) {
                    let at = super::autopilot::At { epoch: replica.leader_epoch(), seq: replica.seq().unwrap_or(0) };
                    super::autopilot::act(room, at, replica.view());
                }
                if sent.is_some_and(|t| t.elapsed() < RESEND) {
                    continue;
                }
                let Ok(Some(p)) = outbox.prepare() else { continue };
                let input = obj! {
                    "_group" => "input", "group_id" => room.group_id.as_str(), "leader_epoch" => replica.leader_epoch(),
                    "actor_public_key" => pk.as_str(), "client_seq" => p.client_seq,
                    "action_id" => p.action_id.as_str(), "action" => Value::Object(p.action),
                };
                if ch.tx.send(&Value::Object(input)).await.is_err() {
                    return ChannelEnd::LeaderGone;
                }
                sent = Some(Instant::now());
            }
        }
    }
}

/// How long a member dials a leader it has not reached before, and one it
/// just lost (whose lease still runs: it may only have been a blip).
pub const DIAL_NEW: Duration = Duration::from_secs(30);
pub const DIAL_AGAIN: Duration = Duration::from_secs(1);

/// How many times a member tries its first admission.
pub const FIRST_JOIN_TRIES: u32 = 3;

/// What to do once the leader is gone.
enum Next {
    /// A new leader (a later epoch).
    Follow(Map),
    /// The same leader, whose lease still runs: dial it again, briefly.
    Retry(Map),
    Closed(String),
    Lead(RunEnd),
}

/// Follows the next leader, or claims the room once the lease is out.
#[allow(clippy::too_many_arguments)]
async fn recover(
    room: &Arc<Room>,
    ep: &iroh::Endpoint,
    plan: &JoinRoomPlan,
    replica: &Replica,
    options: &Map,
    cancel: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) -> Result<Next, RemoteError> {
    loop {
        let group = api::get(&room.client, &room.group_id)
            .await
            .map_err(super::api_err)?;
        if let Some(s @ ("closed" | "failed")) = group.get_str("status") {
            return Ok(Next::Closed(format!("group_{s}")));
        }
        let epoch = api::count(&group, "leader_epoch").map_err(super::api_err)?;
        if epoch > replica.leader_epoch() {
            return Ok(Next::Follow(group));
        }
        if !api::lease_expired(&group) {
            return Ok(Next::Retry(group));
        }
        let Some(checkpoint) = replica.checkpoint().and_then(|c| c.as_object()).cloned() else {
            return Err(RemoteError::Protocol(
                "cannot claim leadership without a checkpoint".into(),
            ));
        };
        tokio::time::sleep(Duration::from_millis(rand::random_range(0..250))).await;
        let claimed = match api::claim(
            &room.client,
            &room.group_id,
            &room.protocol_id,
            epoch,
            &checkpoint,
            &room.ticket,
        )
        .await
        {
            Ok(g) => g,
            Err(_) => {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(200)) => continue,
                    _ = cancel.as_mut() => return Err(RemoteError::Cancelled),
                }
            }
        };
        let new_epoch = api::count(&claimed, "leader_epoch").map_err(super::api_err)?;
        room.event("group_leadership_claimed", obj! { "group_id" => room.group_id.as_str(), "leader_epoch" => new_epoch, "checkpoint_seq" => checkpoint.get("seq").cloned().unwrap_or(Value::Null) });
        room.meta(obj! { "group_role" => "leader", "leader_epoch" => new_epoch });
        let replicated: leader::Replicated = Arc::new(std::sync::Mutex::new((
            api::count(&claimed, "checkpoint_seq").unwrap_or(0),
            claimed
                .get_str("checkpoint_hash")
                .unwrap_or_default()
                .to_owned(),
        )));
        let lease = super::Task::spawn(leader::keep_lease(
            room.clone(),
            new_epoch,
            api::lease_seconds(&claimed),
            replicated.clone(),
        ));
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        let acceptor = super::accept_loop(ep.clone(), room.clone(), tx.clone());
        let end = super::lead(
            room.clone(),
            super::Lead {
                spec: &plan.spec,
                hooks: &plan.hooks,
                options,
                group: &claimed,
                checkpoint: Some(Value::Object(checkpoint)),
                queue: (tx, rx),
                pending: Vec::new(),
                lease,
                replicated,
            },
            cancel.as_mut(),
        )
        .await;
        drop(acceptor);
        return end.map(Next::Lead);
    }
}

/// Joins a room: admitted by its leader (and the server), replicates it,
/// sends this side's actions, and carries on across leader changes.
pub async fn join(
    client: &Client,
    plan: JoinRoomPlan,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: impl std::future::Future<Output = ()>,
) -> Result<RoomFinished, RemoteError> {
    let mut cancel = std::pin::pin!(cancel);
    let post = plan.post_id.clone();
    let inv = client
        .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
        .await?;
    let options = inv
        .get("options")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut group = group_of(client, &post).await.map_err(super::api_err)?;
    let pid = api::text(&group, "protocol_id")
        .map_err(super::api_err)?
        .to_owned();
    if inv.get_str("protocol_id") != Some(pid.as_str()) {
        return Err(RemoteError::Invitation(
            "group protocol_id does not match the invitation".into(),
        ));
    }
    if plan.spec.protocol_id() != pid {
        return Err(RemoteError::Protocol(format!(
            "the room runs protocol {pid}, not {}",
            plan.spec.protocol_id()
        )));
    }
    if !options.is_empty() {
        plan.spec
            .validate_options(&Value::Object(options.clone()))
            .map_err(|e| {
                RemoteError::Protocol(format!(
                    "invitation {post} has options its protocol refuses: {e}"
                ))
            })?;
    }
    let group_id = api::text(&group, "group_id")
        .map_err(super::api_err)?
        .to_owned();
    let ep = crate::net::bind_via(plan.peer.reach, &plan.peer.relays, plan.peer.bind).await?;
    let ticket = crate::net::ticket(&ep).await;
    let dir = match &plan.state_dir {
        Some(d) => d.clone(),
        None => super::state_dir(&plan.data_dir, Role::Guest)?,
    };
    progress(Progress::StateDir {
        parent: dir.clone(),
        child: dir.clone(),
    });
    let sink = super::sink_for(&dir);
    let room = Arc::new(Room {
        autopilot: super::autopilot::for_seat(
            &plan.spec,
            &options,
            plan.mode,
            Some((&sink, Role::Guest)),
        ),
        client: client.clone(),
        keys: client.keys().clone(),
        group_id: group_id.clone(),
        protocol_id: pid.clone(),
        ticket,
        dir: dir.clone(),
        sink,
    });
    room.meta(obj! { "role" => "guest", "post_id" => post.as_str(), "protocol_id" => pid.as_str(), "group_id" => group_id.as_str(), "session_id" => group_id.as_str(), "group_role" => "member", "local_control_mode" => plan.mode.as_str(), "status" => "starting", "pid" => std::process::id(),
            "started_at" => crate::session::files::epoch_now() });
    let beat = super::Task::spawn({
        let room = room.clone();
        async move {
            loop {
                tokio::time::sleep(MEMBER_HEARTBEAT).await;
                if let Err(e) = api::member_heartbeat(&room.client, &room.group_id).await {
                    room.event(
                        "group_member_heartbeat_failed",
                        obj! { "group_id" => room.group_id.as_str(), "error" => e.to_string() },
                    );
                }
            }
        }
    });
    let options = super::merged_options(&plan.spec, &options);
    let mut replica: Option<Replica> = None;
    let mut dial = DIAL_NEW;
    let mut first_tries = 0;
    let end = loop {
        if replica.is_none() {
            let waited = tokio::select! {
                g = live_leader(client, group, &room.keys.public_key, progress) => g,
                _ = cancel.as_mut() => break Err(RemoteError::Cancelled),
            };
            group = match waited {
                Ok(g) => g,
                Err(e) => break Err(e),
            };
        }
        let leader = group
            .get_str("leader_public_key")
            .unwrap_or_default()
            .to_owned();
        progress(Progress::Connecting {
            host_public_key: leader.clone(),
        });
        let attempt = async {
            let (link, mut ch, member) =
                super::admit::join_leader(&ep, client, &group, plan.mode.as_str(), dial).await?;
            let first = match tokio::time::timeout(FIRST_ENVELOPE, ch.rx.recv()).await {
                Ok(Ok(m)) if envelope_kind(m.get_str("_group")) => m,
                Ok(Ok(_)) => {
                    return Err(JoinError::Failed(
                        "leader did not send an authority snapshot".to_owned(),
                    ));
                }
                Ok(Err(e)) => {
                    return Err(JoinError::Failed(format!(
                        "waiting for the first envelope: {e}"
                    )));
                }
                Err(_) => {
                    return Err(JoinError::Failed(format!(
                        "no envelope within {FIRST_ENVELOPE:?}"
                    )));
                }
            };
            Ok((link, ch, member, first))
        };
        let attempt = tokio::select! {
            a = attempt => a,
            _ = cancel.as_mut() => break Err(RemoteError::Cancelled),
        };
        let served = match attempt {
            Ok((link, mut ch, member, first)) => {
                let epoch = api::count(&group, "leader_epoch").unwrap_or(0);
                let rep = match &mut replica {
                    Some(r) => {
                        if epoch > r.leader_epoch() {
                            match r.advance_epoch(&leader, epoch) {
                                Ok((kind, data)) => {
                                    room.event(kind, data.as_object().cloned().unwrap_or_default())
                                }
                                Err(e) => break Err(RemoteError::Protocol(e.to_string())),
                            }
                            room.meta(obj! { "group_role" => "member", "leader_epoch" => epoch });
                            progress(Progress::Group(format!(
                                "the room is led by {} now (epoch {epoch})",
                                &leader[..leader.len().min(12)]
                            )));
                        }
                        r
                    }
                    None => {
                        room.meta(obj! { "member_id" => member.get("member_id").cloned().unwrap_or(Value::Null), "seat" => member.get("seat").cloned().unwrap_or(Value::Null), "leader_epoch" => epoch, "status" => "running" });
                        room.event("peer_joined", obj! { "host_public_key" => leader.as_str(), "session_id" => group_id.as_str(), "group_id" => group_id.as_str(), "protocol_id" => pid.as_str(), "member_id" => member.get("member_id").cloned().unwrap_or(Value::Null), "seat" => member.get("seat").cloned().unwrap_or(Value::Null), "local_control_mode" => plan.mode.as_str() });
                        progress(Progress::Established {
                            session_id: group_id.clone(),
                        });
                        replica.insert(Replica::new(
                            &group_id,
                            &room.keys.public_key,
                            &leader,
                            epoch,
                            plan.spec.name().unwrap_or("Group Protocol"),
                        ))
                    }
                };
                let r = tokio::select! {
                    r = serve(&room, &mut ch, rep, first, api::lease_seconds(&group)) => r,
                    _ = cancel.as_mut() => { drop(ch); link.finish(Duration::ZERO).await; break Err(RemoteError::Cancelled) }
                };
                drop(ch);
                link.finish(Duration::ZERO).await;
                r
            }
            Err(e) => {
                if replica.is_none() {
                    // A first join that failed on the way (the leader busy
                    // admitting others, a lost packet) is tried again; a
                    // refusal by the leader or the server is final.
                    let refused = matches!(e, JoinError::Refused(_));
                    first_tries += 1;
                    if refused || first_tries >= FIRST_JOIN_TRIES {
                        break Err(RemoteError::Invitation(format!(
                            "joining room {group_id}: {e}"
                        )));
                    }
                    progress(Progress::Warning(format!(
                        "joining room {group_id}: {e} (trying again)"
                    )));
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    match api::get(client, &group_id).await {
                        Ok(g) => group = g,
                        Err(e) => break Err(super::api_err(e)),
                    }
                    continue;
                }
                room.event("group_reconnect_failed", obj! { "group_id" => group_id.as_str(), "reason" => e.to_string().chars().take(192).collect::<String>() });
                ChannelEnd::LeaderGone
            }
        };
        let Some(rep) = replica.as_ref() else {
            break Err(RemoteError::Protocol("no replica after admission".into()));
        };
        match served {
            ChannelEnd::Completed(outcome) => break Ok(RunEnd::Completed { outcome }),
            ChannelEnd::Refused(reason) => {
                let reason: String = reason.chars().take(256).collect();
                room.event("group_leader_rejected", obj! { "group_id" => group_id.as_str(), "leader_epoch" => rep.leader_epoch(), "reason" => reason.as_str() });
                progress(Progress::Warning(format!(
                    "left the room: its leader sent something no member may accept: {reason}"
                )));
                if let Err(e) = api::leave(client, &group_id).await {
                    progress(Progress::Warning(format!(
                        "telling the server this member left: {e}"
                    )));
                }
                break Ok(RunEnd::Failed(format!("leader_rejected: {reason}")));
            }
            ChannelEnd::LeaderGone => {}
        }
        room.event("group_leader_disconnected", obj! { "group_id" => group_id.as_str(), "leader_epoch" => rep.leader_epoch(), "seq" => rep.seq().map_or(Value::Null, Value::from) });
        match recover(&room, &ep, &plan, rep, &options, &mut cancel).await {
            Ok(Next::Follow(g)) => {
                group = g;
                dial = DIAL_NEW;
            }
            Ok(Next::Retry(g)) => {
                group = g;
                dial = DIAL_AGAIN;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Ok(Next::Closed(why)) if why == "group_closed" => {
                break Ok(RunEnd::Completed { outcome: None });
            }
            Ok(Next::Closed(why)) => break Ok(RunEnd::Failed(why)),
            Ok(Next::Lead(end)) => {
                drop(beat);
                let led = super::finish(&room, &post, end, true);
                crate::net::close(ep).await;
                return Ok(led);
            }
            Err(e) => break Err(e),
        }
    };
    drop(beat);
    crate::net::close(ep).await;
    if let Err(e) = &end {
        room.meta(obj! {
            "status" => "aborted", "completed" => false,
            "ended_at" => crate::session::files::epoch_now(), "end_reason" => e.to_string(),
        });
    }
    let end = end?;
    Ok(super::finish(&room, &post, end, false))
}

/// How long a first join waits, beyond the room's lease, for a leader it can
/// reach (see [`live_leader`]).
const NEXT_LEADER: Duration = Duration::from_secs(60);

/// `group` once its leader is one a first join can reach: not this identity
/// (a player whose leading process died and who comes back as a member
/// would dial its own dead endpoint) and with a lease that still runs (a
/// dead leader's members are about to claim the room). Asks the community
/// again every 250 ms, for at most the lease plus [`NEXT_LEADER`]; a closed
/// or failed room ends the wait.
async fn live_leader(
    client: &Client,
    mut group: api::GroupObj,
    me: &str,
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<api::GroupObj, RemoteError> {
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs(api::lease_seconds(&group)) + NEXT_LEADER;
    let mut told = false;
    loop {
        if let Some(s @ ("closed" | "failed")) = group.get_str("status") {
            return Err(RemoteError::Invitation(format!("the room is {s}")));
        }
        let mine = group.get_str("leader_public_key") == Some(me);
        if !mine && !api::lease_expired(&group) {
            return Ok(group);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(RemoteError::Invitation(if mine {
                "this identity still leads the room (is its leading process running?)".to_owned()
            } else {
                "the room's leader is gone and no member has taken it over".to_owned()
            }));
        }
        if !told {
            told = true;
            progress(Progress::Group(if mine {
                "this identity led the room: waiting for the member that takes it over".to_owned()
            } else {
                "the room's leader is gone: waiting for the member that takes it over".to_owned()
            }));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        let id = api::text(&group, "group_id")
            .map_err(super::api_err)?
            .to_owned();
        group = api::get(client, &id).await.map_err(super::api_err)?;
    }
}

/// How long a member waits for the room of an invitation it has just seen:
/// the host posts the invitation before it records the room, so a member
/// that acts at once may find no room for a moment.
const ROOM_APPEARS: Duration = Duration::from_secs(5);

/// The room of invitation `post`, asked again while the community says it
/// has none yet (404), for at most [`ROOM_APPEARS`].
async fn group_of(client: &Client, post: &str) -> Result<api::GroupObj, api::ApiError> {
    let deadline = tokio::time::Instant::now() + ROOM_APPEARS;
    loop {
        match api::by_post(client, post).await {
            Err(api::ApiError::Client(ClientError::Status { status: 404, .. }))
                if tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}
