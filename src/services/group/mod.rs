//! Rooms (`authoritative_group`) over iroh: `palaver host` of a group
//! protocol leads a room, `palaver join` of its invitation becomes a member,
//! and when a leader goes away a member takes over through the server.
//!
//! The rules and the checks are in [`crate::engine::group`]; this module
//! moves envelopes between processes, talks to the server's
//! `/api/v1/groups` routes, and writes the state dir in the reference's
//! one-level layout (`sessions/{host|guest}-group-<ms>/`: session.json,
//! events.jsonl, snapshot.json, details.jsonl, group-checkpoint.json and the
//! action files of [`outbox`]).

pub mod admit;
pub mod api;
pub mod autopilot;
pub mod leader;
pub mod member;
pub mod outbox;
pub mod smoke;

use crate::engine::group::{Authority, FrameRecord, GroupConfig, GroupHooks};
use crate::engine::{EventSink, Role};
use crate::identity::KeyPair;
use crate::json::{Map, Value};
use crate::obj;
use crate::services::remote::{PeerOpts, Progress, RemoteError};
use crate::session::{StateDir, StateSink, update_session_file};
use crate::spec::Spec;
use crate::web::Client;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// One side of one room, as the tasks that serve it share it.
pub struct Room {
    /// The seat's bot or timeout rule, when it has one (see [`autopilot`]).
    pub autopilot: Option<std::sync::Mutex<autopilot::Autopilot>>,
    pub client: Client,
    pub keys: KeyPair,
    pub group_id: String,
    pub protocol_id: String,
    /// This side's own ticket (what it advertises when it leads).
    pub ticket: String,
    pub dir: PathBuf,
    pub sink: Arc<StateSink>,
}

impl Room {
    /// One line in events.jsonl.
    pub fn event(&self, kind: &str, data: Map) {
        self.sink.event(kind, data, None);
    }

    /// Merges `patch` into session.json. A failed write is recorded (see
    /// [`Room::write_failed`]); the room goes on with its memory.
    pub fn meta(&self, patch: Map) {
        if let Err(e) = update_session_file(&self.dir.join("session.json"), patch) {
            self.write_failed("session.json", &e);
        }
    }

    /// Records that a state file could not be written: an event in
    /// events.jsonl (when that file can still be written) and a warning in
    /// the log, so a record that lags says why.
    pub fn write_failed(&self, file: &str, e: &std::io::Error) {
        tracing::warn!(room = %self.group_id, file, error = %e, "a room's state file could not be written");
        self.event(
            "state_write_failed",
            obj! { "file" => file, "error" => e.to_string() },
        );
    }
}

/// How long a host waits, after its room ended, for its bots to take the
/// last frames and write their records.
const BOTS_FINISH: Duration = Duration::from_secs(10);

/// A spawned task that is aborted when dropped: a side whose future is
/// dropped (a console closing, a test aborting a "crashed" leader) leaves
/// no lease keeper, accept loop or heartbeat running behind it.
pub struct Task<T>(tokio::task::JoinHandle<T>);

impl<T: Send + 'static> Task<T> {
    pub fn spawn(f: impl std::future::Future<Output = T> + Send + 'static) -> Task<T> {
        Task(tokio::spawn(f))
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> std::future::Future for Task<T> {
    type Output = Result<T, tokio::task::JoinError>;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

/// How often a side looks for new lines in its group-actions.jsonl (and,
/// as leader, for members owing an ack). A person's action waits half of
/// it on average; a look that finds nothing costs one stat and no rules
/// (the seat's bot is asked once per frame, and right when a frame comes).
pub const ACTION_POLL: Duration = Duration::from_millis(3);

/// How many frames a member that takes a room over leaves between its
/// checkpoint and its first frame ([`Authority::taking_over_past`]): the
/// dying leader may have sent other members frames this member never got,
/// and a reference member holding one refuses a first frame at or before it
/// and cannot follow the room (palaver's replica takes it). A thousand is
/// far more than a leader runs ahead of its slowest member.
pub const EPOCH_SEQ_GAP: u64 = 1000;

/// How a leader's run ended.
#[derive(Debug)]
pub enum RunEnd {
    Completed {
        outcome: Option<String>,
    },
    /// The lease could not be renewed: another member may lead by now.
    Fenced(String),
    Cancelled,
    Failed(String),
}

/// How a room ended for this side.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RoomFinished {
    pub group_id: String,
    pub post_id: String,
    pub completed: bool,
    pub outcome: Option<String>,
    /// Why it ended without completing.
    pub reason: Option<String>,
    /// Whether this side led the room when it ended.
    pub led: bool,
    pub state_dir: PathBuf,
}

/// The files one authority or replica step writes.
pub mod files {
    use super::*;

    /// Writes one frame's files: group-checkpoint.json (replaced), its
    /// details lines, the snapshot's group keys (each replaced whole: the
    /// view is the verified one, not a merge of every view so far) and
    /// the event.
    pub fn write_record(room: &Room, rec: FrameRecord) {
        if let Err(e) = crate::fsutil::write_atomic_fast(
            &room.dir.join("group-checkpoint.json"),
            &rec.checkpoint_json,
        ) {
            room.write_failed("group-checkpoint.json", &e);
        }
        for d in rec.details {
            if let Value::Object(m) = d {
                room.sink.detail(m);
            }
        }
        room.sink.snapshot_replacing(rec.snapshot);
        let (kind, data) = rec.event;
        room.sink
            .event(kind, data.as_object().cloned().unwrap_or_default(), None);
    }
}

/// A fresh one-level state dir `<data>/sessions/<role>-group-<ms>/`.
pub fn state_dir(data_dir: &Path, role: Role) -> std::io::Result<PathBuf> {
    let root = data_dir.join("sessions");
    std::fs::create_dir_all(&root)?;
    let mut ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    loop {
        let p = root.join(format!("{}-group-{ms}", role.as_str()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => ms += 1,
            Err(e) => return Err(e),
        }
    }
}

fn sink_for(dir: &Path) -> Arc<StateSink> {
    Arc::new(StateSink::new(StateDir {
        parent: Some(dir.to_owned()),
        child: dir.to_owned(),
    }))
}

/// Builds the hooks of a group protocol (once per leadership: the host's,
/// and a member's that takes over).
pub type HooksFactory = Arc<dyn Fn(&Map) -> Result<Box<dyn GroupHooks>, String> + Send + Sync>;

/// What a room's host offers.
pub struct HostRoomPlan {
    /// Bots to seat in the room as members (a table's empty seats).
    pub bots: usize,
    pub spec: Spec,
    pub hooks: HooksFactory,
    pub message: String,
    pub options: Map,
    pub mode: crate::engine::ControlMode,
    pub ttl: Duration,
    pub peer: PeerOpts,
    pub data_dir: PathBuf,
    /// The room's state dir, made by a daemon launcher (None: a fresh one
    /// under `data_dir/sessions`).
    pub state_dir: Option<PathBuf>,
}

/// Which room a member joins.
pub struct JoinRoomPlan {
    pub post_id: String,
    pub spec: Spec,
    pub hooks: HooksFactory,
    pub mode: crate::engine::ControlMode,
    pub peer: PeerOpts,
    pub data_dir: PathBuf,
    /// As [`HostRoomPlan::state_dir`].
    pub state_dir: Option<PathBuf>,
}

/// Is the room ready to start with `count` members?
pub fn start_ready(cfg: &GroupConfig, count: u64) -> bool {
    if matches!(cfg.start_policy.as_str(), "full" | "fixed_full") {
        count >= cfg.max_participants
    } else {
        count >= cfg.min_participants
    }
}

fn api_err(e: api::ApiError) -> RemoteError {
    match e {
        api::ApiError::Client(c) => RemoteError::Client(c),
        api::ApiError::Shape(s) => RemoteError::Server(s),
    }
}

/// Admissions a leader runs at once (a room seats at most 32).
pub const MAX_ADMISSIONS: usize = 32;

/// Accepts connections on `ep` and admits each member in its own task,
/// handing admitted members to the leader's queue.
fn accept_loop(
    ep: iroh::Endpoint,
    room: Arc<Room>,
    hub: tokio::sync::mpsc::Sender<leader::Msg>,
) -> Task<()> {
    Task::spawn(async move {
        let admitting = Arc::new(tokio::sync::Semaphore::new(MAX_ADMISSIONS));
        while let Some(incoming) = ep.accept().await {
            // At most MAX_ADMISSIONS at once; the next connection waits for
            // a slot (each admission step is bounded by admit::STEP).
            let Ok(permit) = admitting.clone().acquire_owned().await else {
                return;
            };
            let (room, hub) = (room.clone(), hub.clone());
            tokio::spawn(async move {
                let _permit = permit;
                let Ok((link, mut ch)) = crate::net::establish(incoming).await else {
                    return;
                };
                let admitted = async {
                    let group = api::get(&room.client, &room.group_id)
                        .await
                        .map_err(|e| e.to_string())?;
                    let member =
                        admit::admit_member(&mut ch, &room.client, &room.keys, &group).await?;
                    let latest = api::get(&room.client, &room.group_id)
                        .await
                        .map_err(|e| e.to_string())?;
                    let mv =
                        api::count(&latest, "membership_version").map_err(|e| e.to_string())?;
                    Ok::<_, String>((member, mv))
                };
                match admitted.await {
                    Ok((member, mv)) => {
                        room.event("group_member_admitted", obj! { "group_id" => room.group_id.as_str(), "public_key" => member.get("public_key").cloned().unwrap_or(Value::Null), "seat" => member.get("seat").cloned().unwrap_or(Value::Null) });
                        let _ = hub
                            .send(leader::Msg::Admitted {
                                member,
                                ch,
                                link,
                                membership_version: mv,
                            })
                            .await;
                    }
                    Err(reason) => {
                        let reason: String = reason.chars().take(256).collect();
                        room.event("group_join_rejected", obj! { "reason" => reason.as_str() });
                        let err = obj! { "_group" => "error", "reason" => reason.as_str() };
                        let _ = ch
                            .tx
                            .send_within(&Value::Object(err), Duration::from_secs(1))
                            .await;
                        link.finish(Duration::from_millis(200)).await;
                    }
                }
            });
        }
    })
}

/// What a leadership starts from.
struct Lead<'a> {
    spec: &'a Spec,
    hooks: &'a HooksFactory,
    options: &'a Map,
    /// The group as the server has it now (epoch, membership, members).
    group: &'a Map,
    /// A replicated checkpoint (a member taking over), or none (a new room).
    checkpoint: Option<Value>,
    /// The leader's queue; the accept loop already sends into it.
    queue: (
        tokio::sync::mpsc::Sender<leader::Msg>,
        tokio::sync::mpsc::Receiver<leader::Msg>,
    ),
    /// Members admitted in the lobby.
    pending: Vec<leader::Msg>,
    /// The lease keeper (see [`leader::keep_lease`]).
    lease: Task<String>,
    replicated: leader::Replicated,
}

/// Leads a room until it ends.
async fn lead(
    room: Arc<Room>,
    l: Lead<'_>,
    cancel: impl std::future::Future<Output = ()>,
) -> Result<RunEnd, RemoteError> {
    let Lead {
        spec,
        hooks,
        options,
        group,
        checkpoint,
        queue,
        pending,
        lease,
        replicated,
    } = l;
    let epoch = api::count(group, "leader_epoch").map_err(api_err)?;
    let mv = api::count(group, "membership_version").map_err(api_err)?;
    let cfg = GroupConfig::from_spec(spec).map_err(|e| RemoteError::Protocol(e.to_string()))?;
    let h = (hooks)(options).map_err(RemoteError::Protocol)?;
    let authority = Authority::taking_over_past(
        crate::engine::group::AuthorityInit {
            config: cfg,
            hooks: h,
            protocol_name: spec.name().unwrap_or("Group Protocol").to_owned(),
            group_id: room.group_id.clone(),
            keys: room.keys.clone(),
            leader_epoch: epoch,
            membership_version: mv,
            members: api::active_members(group),
            checkpoint,
        },
        EPOCH_SEQ_GAP,
    )
    .map_err(|e| RemoteError::Protocol(format!("the room could not start: {e}")))?;
    let mut hub = leader::Hub::new(authority, &room, replicated, queue).map_err(RemoteError::Io)?;
    hub.flush(&room);
    for msg in pending {
        if let leader::Msg::Admitted {
            member, ch, link, ..
        } = msg
        {
            hub.attach_quiet(&member, ch, link);
        }
    }
    let boot = hub
        .authority
        .bootstrap_envelopes()
        .map_err(|e| RemoteError::Protocol(format!("the room could not start: {e}")))?;
    let dropped = hub.broadcast(&boot);
    for d in dropped {
        hub.detach(&room, &d, "bootstrap_send_failed");
    }
    if group.get_str("status") == Some("lobby")
        && let Err(e) = api::set_status(&room.client, &room.group_id, epoch, "active").await
    {
        room.event(
            "group_status_update_failed",
            obj! { "status" => "active", "error" => e.to_string() },
        );
    }
    room.event("group_started", obj! { "group_id" => room.group_id.as_str(), "leader_epoch" => epoch, "participant_count" => group.get("participant_count").cloned().unwrap_or(Value::Null) });
    room.meta(obj! { "group_role" => "leader", "leader_epoch" => epoch, "participant_count" => group.get("participant_count").cloned().unwrap_or(Value::Null), "status" => "running" });
    Ok(leader::run(hub, room, epoch, lease, cancel).await)
}

/// Hosts a room: posts the invitation and the group, admits members while
/// the lobby fills, then leads the room until it completes.
pub async fn host(
    client: &Client,
    plan: HostRoomPlan,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: impl std::future::Future<Output = ()>,
) -> Result<RoomFinished, RemoteError> {
    let HostRoomPlan {
        bots,
        spec,
        hooks,
        message,
        options,
        mode,
        ttl,
        peer,
        data_dir,
        state_dir: made,
    } = plan;
    let cfg = GroupConfig::from_spec(&spec).map_err(|e| RemoteError::Protocol(e.to_string()))?;
    (hooks)(&options).map_err(RemoteError::Protocol)?;
    if !options.is_empty() {
        spec.validate_options(&Value::Object(options.clone()))
            .map_err(|e| RemoteError::Protocol(format!("invitation options: {e}")))?;
    }
    let mut cancel = std::pin::pin!(cancel);
    let ep = crate::net::bind_via(peer.reach, &peer.relays, peer.bind).await?;
    let ticket = crate::net::ticket(&ep).await;
    let dir = match made {
        Some(d) => d,
        None => state_dir(&data_dir, Role::Host)?,
    };
    progress(Progress::StateDir {
        parent: dir.clone(),
        child: dir.clone(),
    });
    let pid = spec.protocol_id().to_owned();
    let meta = host_metadata(&spec);
    let post_id = crate::services::remote::post_invitation(
        client, &spec, &ticket, &meta, &message, mode, &options,
    )
    .await?;
    progress(Progress::InvitationOpen {
        post_id: post_id.clone(),
    });
    let withdraw = async |client: &Client| {
        let _ = client
            .call(
                "DELETE",
                &format!("/api/v1/invitations/{post_id}"),
                None,
                &[204, 404],
            )
            .await;
    };
    let group = match api::create(client, &post_id, &cfg).await {
        Ok(g) => g,
        Err(e) => {
            withdraw(client).await;
            return Err(api_err(e));
        }
    };
    let group_id = api::text(&group, "group_id").map_err(api_err)?.to_owned();
    let sink = sink_for(&dir);
    let room = Arc::new(Room {
        autopilot: autopilot::for_seat(&spec, &options, mode, Some((&sink, Role::Host))),
        client: client.clone(),
        keys: client.keys().clone(),
        group_id: group_id.clone(),
        protocol_id: pid.clone(),
        ticket,
        dir: dir.clone(),
        sink,
    });
    room.event("invite_created", obj! { "post_id" => post_id.as_str(), "protocol_id" => pid.as_str(), "group_id" => group_id.as_str(), "min_participants" => cfg.min_participants, "max_participants" => cfg.max_participants });
    room.meta(obj! { "role" => "host", "post_id" => post_id.as_str(), "protocol_id" => pid.as_str(), "group_id" => group_id.as_str(), "session_id" => group_id.as_str(), "group_role" => "leader", "leader_epoch" => 0, "local_control_mode" => mode.as_str(), "status" => "waiting" });
    progress(Progress::Group(format!("group_id: {group_id}")));
    let seated = match seat_bots(client, &spec, &options, &peer, &dir, &post_id, bots).await {
        Ok(b) => b,
        Err(e) => {
            withdraw(client).await;
            return Err(e);
        }
    };
    if bots > 0 {
        progress(Progress::Group(format!(
            "{bots} bot(s) take the empty seats"
        )));
    }
    let replicated: leader::Replicated = Arc::new(std::sync::Mutex::new((
        api::count(&group, "checkpoint_seq").unwrap_or(0),
        group
            .get_str("checkpoint_hash")
            .unwrap_or(crate::engine::group::core::ZERO_HASH)
            .to_owned(),
    )));
    let lease_task = Task::spawn(leader::keep_lease(
        room.clone(),
        0,
        api::lease_seconds(&group),
        replicated.clone(),
    ));
    let renew = Task::spawn({
        let (client, post_id) = (client.clone(), post_id.clone());
        async move {
            // A ttl beyond any clock's range renews (practically) forever.
            let now = tokio::time::Instant::now();
            let deadline = now
                .checked_add(ttl)
                .unwrap_or(now + Duration::from_secs(100 * 365 * 24 * 3600));
            while tokio::time::Instant::now() < deadline {
                tokio::time::sleep(crate::services::remote::RENEW_EVERY).await;
                if client
                    .call(
                        "POST",
                        &format!("/api/v1/invitations/{post_id}/renew"),
                        None,
                        &[200],
                    )
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    });
    let (tx, mut rx) = tokio::sync::mpsc::channel::<leader::Msg>(1024);
    let acceptor = accept_loop(ep.clone(), room.clone(), tx.clone());
    // The lobby: members are admitted until the start policy is met.
    let mut pending = Vec::new();
    let mut group = group;
    let mut lease_task = lease_task;
    let lobby = loop {
        let count = api::count(&group, "participant_count").unwrap_or(0);
        if start_ready(&cfg, count) {
            break Ok(());
        }
        tokio::select! {
            m = rx.recv() => if let Some(m) = m { pending.push(m) },
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            lost = &mut lease_task => break Err(RemoteError::Server(format!("the leader lease expired before the room started: {}", lost.unwrap_or_default()))),
            _ = cancel.as_mut() => break Err(RemoteError::Cancelled),
        }
        match api::get(client, &group_id).await {
            Ok(g) => group = g,
            Err(e) => progress(Progress::Warning(format!("reading the group: {e}"))),
        }
    };
    if let Err(e) = lobby {
        drop((acceptor, renew, lease_task, seated));
        withdraw(client).await;
        room.meta(obj! { "status" => "aborted", "end_reason" => e.to_string() });
        crate::net::close(ep).await;
        return Err(e);
    }
    progress(Progress::Established {
        session_id: group_id.clone(),
    });
    let options = merged_options(&spec, &options);
    let end = lead(
        room.clone(),
        Lead {
            spec: &spec,
            hooks: &hooks,
            options: &options,
            group: &group,
            checkpoint: None,
            queue: (tx, rx),
            pending,
            lease: lease_task,
            replicated,
        },
        cancel,
    )
    .await;
    // The host's bots read the last frames and write their records before
    // they are stopped (bounded: a bot that does not end is stopped then).
    let mut seated = seated;
    if end.is_ok() {
        let _ = tokio::time::timeout(
            BOTS_FINISH,
            futures_util::future::join_all(seated.iter_mut()),
        )
        .await;
    }
    drop((acceptor, renew, seated));
    crate::net::close(ep).await;
    let end = end?;
    Ok(finish(&room, &post_id, end, true))
}

/// Seats `count` bots in the room of invitation `post_id` (a table's
/// empty seats): each registers its own identity on the community, joins
/// as an autonomous member and plays with the table's bot. Their tasks run
/// until dropped.
pub async fn seat_bots(
    client: &Client,
    spec: &Spec,
    options: &Map,
    peer: &PeerOpts,
    host_dir: &Path,
    post_id: &str,
    count: usize,
) -> Result<Vec<Task<()>>, RemoteError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if count > autopilot::MAX_BOTS {
        return Err(RemoteError::Protocol(format!(
            "{count} bots: a room seats at most {} besides its host",
            autopilot::MAX_BOTS
        )));
    }
    let alias = autopilot::alias_of(spec).unwrap_or_default();
    if crate::protocols::tables::table_for_alias(&alias, options).is_none() {
        return Err(RemoteError::Protocol(format!(
            "{} has no bots: they play the tables ({})",
            spec.name().unwrap_or("this protocol"),
            crate::protocols::tables::TABLES.join(", ")
        )));
    }
    let mut tasks = Vec::with_capacity(count);
    for n in 1..=count {
        let keys = crate::identity::KeyPair::generate();
        let bot = Client::new(client.base(), keys)?;
        bot.register(&format!("bot-{n}"), "a palaver table bot")
            .await?;
        let dir = host_dir.join("bots").join(format!("bot-{n}"));
        std::fs::create_dir_all(&dir)?;
        let plan = JoinRoomPlan {
            post_id: post_id.to_owned(),
            spec: spec.clone(),
            hooks: member_hooks(spec),
            mode: crate::engine::ControlMode::Autonomous,
            peer: peer.clone(),
            data_dir: host_dir.join("bots"),
            state_dir: Some(dir),
        };
        tasks.push(Task::spawn(async move {
            let _ = member::join(&bot, plan, &|_| {}, std::future::pending()).await;
        }));
    }
    Ok(tasks)
}

/// What a group protocol's hooks say about an invitation to it (name,
/// tags, type, default options); the spec's name and defaults for a
/// protocol palaver has no native hooks for.
pub fn host_metadata(spec: &Spec) -> crate::engine::HostMetadata {
    crate::library::Library::bundled()
        .entries()
        .iter()
        .find(|e| e.protocol_id == spec.protocol_id())
        .and_then(|e| crate::protocols::rooms::group_host_metadata(&e.alias))
        .unwrap_or_else(|| crate::engine::HostMetadata {
            display_name: spec.name().unwrap_or("Group Protocol").to_owned(),
            tags: String::new(),
            invite_type: "chat".to_owned(),
            default_options: Map::new(),
        })
}

/// Native hooks for a bundled group protocol, as a [`HooksFactory`].
pub fn native_hooks(spec: &Spec) -> Option<HooksFactory> {
    let pid = spec.protocol_id().to_owned();
    crate::protocols::rooms::group_hooks_by_id(&pid, &Map::new())?;
    Some(Arc::new(move |options: &Map| {
        crate::protocols::rooms::group_hooks_by_id(&pid, options)
            .ok_or_else(|| format!("palaver has no hooks for group protocol {pid}"))
    }))
}

/// The rules a member holds for a room: palaver's native hooks, or, for a
/// group protocol palaver has none for, a refusal that surfaces only if the
/// member ever has to take the room over.
pub fn member_hooks(spec: &Spec) -> HooksFactory {
    native_hooks(spec).unwrap_or_else(|| {
        let pid = spec.protocol_id().to_owned();
        Arc::new(move |_: &Map| {
            Err(format!(
                "palaver has no rules for group protocol {pid}: it cannot lead this room"
            ))
        })
    })
}

/// The spec of protocol `pid` when it is a group protocol palaver knows
/// (installed in the data dir's library, or bundled).
pub fn room_spec(data_dir: Option<&Path>, pid: &str) -> Option<Spec> {
    let lib = crate::library::Library::open(data_dir).ok();
    lib.as_ref()
        .and_then(|l| l.resolve(pid).ok().and_then(|e| l.load(e).ok()))
        .or_else(|| crate::library::bundled_spec_by_id(pid).cloned())
        .filter(|s| s.flow_mode() == "authoritative_group")
}

/// The hooks' default options under the invitation's own.
fn merged_options(spec: &Spec, options: &Map) -> Map {
    let mut out = host_metadata(spec).default_options;
    for (k, v) in options.iter() {
        out.insert(k, v.clone());
    }
    out
}

fn finish(room: &Room, post_id: &str, end: RunEnd, led: bool) -> RoomFinished {
    let (completed, outcome, reason) = match end {
        RunEnd::Completed { outcome } => (true, outcome, None),
        RunEnd::Fenced(e) => (false, None, Some(format!("leader_lease_lost: {e}"))),
        RunEnd::Cancelled => (false, None, Some("cancelled".to_owned())),
        RunEnd::Failed(e) => (false, None, Some(e)),
    };
    room.sink.flush();
    let mut end = obj! {
        "status" => if completed { "closed" } else { "aborted" }, "completed" => completed,
        "ended_at" => crate::session::files::epoch_now(),
        "end_reason" => reason.clone().map_or(Value::Null, Value::from),
    };
    // A record that lags says so where it is read first.
    let (failed, last) = room.sink.write_errors();
    if failed > 0 {
        end.insert("state_write_errors", Value::from(failed));
        end.insert(
            "last_state_write_error",
            last.map_or(Value::Null, Value::from),
        );
    }
    room.meta(end);
    // A failure to write session.json is an event: on disk before returning.
    room.sink.flush();
    RoomFinished {
        group_id: room.group_id.clone(),
        post_id: post_id.to_owned(),
        completed,
        outcome,
        reason,
        led,
        state_dir: room.dir.clone(),
    }
}

pub use member::join;
