//! One side of a session with a remote peer over iroh, introduced by the
//! community server and proven by a signed session proof: `palaver host`,
//! `palaver join`, the console, and the house agent all run this.
//!
//! The caller gets what happens as [`Progress`] values (the CLI prints them,
//! the console shows them) and stops a side with its `cancel` future: before
//! the session is established that withdraws the invitation and returns
//! [`RemoteError::Cancelled`]; afterwards it aborts the session, whose
//! outcome then says `cancelled`.

use crate::engine::mental_poker::keys::PendingKey;
use crate::engine::{
    self, Channel, ChatSource, ControlMode, CountingSink, Dir, Event, EventSink, Hooks, Role,
    SessionOutcome, Strategy,
};
use crate::json::{Map, Value};
use crate::net::handshake::{self, Established, HandshakeError};
use crate::net::{self, NetError, Reach};
use crate::obj;
use crate::services::local::{self, Side};
use crate::services::run;
use crate::session::files::InboxChat;
use crate::session::{StateDir, update_session_file};
use crate::spec::Spec;
use crate::web::{Client, ClientError, auth};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

mod lobby;
mod settle;
pub use lobby::{Closed, RENEW_EVERY, Upkeep, WATCH_EVERY};
use lobby::{Invited, Lobby, keep_open};
use settle::{Tap, close_on_server, settle};

/// How long the side that sent a session's last frame waits for the peer
/// to read it and close the connection (the reference client takes an end
/// of stream right after its peer's final frame for a disconnect).
pub const FINISH_GRACE: Duration = Duration::from_secs(2);

/// How long a cancel mid-session waits for the server to record it before
/// the stream is closed anyway.
pub const CANCEL_SETTLE: Duration = Duration::from_secs(3);

/// The `reason` of a session this side cancelled after it was established.
pub const CANCELLED_REASON: &str = "cancelled";

/// How this side reaches its peer and watches its health.
#[derive(Debug, Clone)]
pub struct PeerOpts {
    pub reach: Reach,
    /// With `Reach::Relay`: these relays instead of n0's, and no discovery
    /// service (empty: n0's relays and discovery, the default).
    pub relays: Vec<iroh::RelayUrl>,
    /// Local UDP address of the iroh endpoint (None: any interface, any port).
    pub bind: Option<SocketAddrV4>,
    /// Give up on a silent peer after this long (turn-based modes); flags
    /// reach it through `limits::PEER_TIMEOUT`.
    pub peer_timeout: Duration,
    /// Time between heartbeat pings after the handshake (zero: none).
    pub heartbeat_interval: Duration,
    /// Silence before the peer is reported unresponsive (zero: three intervals).
    pub heartbeat_timeout: Duration,
}

impl PeerOpts {
    /// Direct addresses on loopback: one machine, works offline (tests, the
    /// console's embedded community).
    pub fn direct() -> PeerOpts {
        PeerOpts {
            reach: Reach::Direct,
            bind: Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
            ..PeerOpts::relay()
        }
    }

    /// n0's relays and discovery on any interface, as the reference client
    /// does: works across networks.
    pub fn relay() -> PeerOpts {
        PeerOpts {
            reach: Reach::Relay,
            relays: Vec::new(),
            bind: None,
            peer_timeout: Duration::from_secs(300),
            heartbeat_interval: Duration::from_secs(10),
            heartbeat_timeout: Duration::from_secs(30),
        }
    }
}

/// What a side reports while it runs.
#[derive(Debug, Clone)]
pub enum Progress {
    /// The host's invitation is up: guests join it by this id.
    InvitationOpen { post_id: String },
    /// A guest failed the handshake; the invitation stays up for the next one.
    TurnedAway { reason: String },
    /// The guest dials the invitation's host.
    Connecting { host_public_key: String },
    /// Both sides hold the session proof; play starts.
    Established { session_id: String },
    /// The session is written to this state dir (only with a data dir).
    StateDir { parent: PathBuf, child: PathBuf },
    /// The invitation's protocol was not in the library: it was fetched
    /// from the server, checked against its id and installed.
    Fetched(Box<super::protocol::Fetched>),
    /// Something failed that does not stop the session (renewals, settling
    /// on the server, withdrawing an invitation).
    Warning(String),
    /// A room's news for the person running it (its group id, who leads).
    Group(String),
}

/// How a session ended.
#[derive(Debug, Clone)]
pub struct Finished {
    pub session_id: String,
    pub outcome: SessionOutcome,
    /// The session's parent state dir, when it was written to a data dir.
    pub state_dir: Option<PathBuf>,
    pub post_id: String,
    /// The other side's key, as the session proof names it.
    pub peer_public_key: String,
}

/// Why a side produced no session (or could not record one).
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(transparent)]
    Net(#[from] NetError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("the session handshake failed: {0}")]
    Handshake(#[from] HandshakeError),
    /// The invitation is unusable: not open, unsigned, or incomplete.
    #[error("{0}")]
    Invitation(String),
    /// The invitation's protocol or options cannot be run here.
    #[error("{0}")]
    Protocol(String),
    /// The server answered something this side cannot use.
    #[error("{0}")]
    Server(String),
    #[error("session files: {0}")]
    Io(#[from] std::io::Error),
    #[error("cancelled before a session was established")]
    Cancelled,
    #[error("no guest passed the handshake within {0:?}")]
    NoGuest(Duration),
    /// The invitation was closed on the server (cancelled elsewhere, or
    /// expired) while the host waited.
    #[error("invitation {post_id} was closed on the server ({reason})")]
    Closed { post_id: String, reason: String },
}

/// What a host offers and how it plays.
pub struct HostPlan {
    pub spec: Spec,
    pub hooks: Box<dyn Hooks>,
    /// The invitation's message in `browse` (empty: the protocol's name).
    pub message: String,
    /// Invitation options (checked against the spec before anything is posted).
    pub options: Map,
    pub mode: ControlMode,
    /// How long the invitation waits for a guest (renewed every [`RENEW_EVERY`]).
    pub ttl: Duration,
    /// How the invitation is kept open while it waits.
    pub upkeep: Upkeep,
    pub peer: PeerOpts,
    /// Some: the session is written to a state dir under `data_dir/sessions`
    /// (steerable with `palaver session …`; free mode reads its lines from
    /// the inbox). None: no files, events go to `observer` only. A host's
    /// state dir exists from the moment its invitation is up.
    pub data_dir: Option<PathBuf>,
    /// With a data dir: the session's parent state dir, made (with its
    /// session.json) by a daemon launcher; None: a fresh one.
    pub state_dir: Option<PathBuf>,
    /// Free mode: where this side's chat lines come from (default: the
    /// state dir's inbox with a data dir, else nothing).
    pub chat: Option<Box<dyn ChatSource>>,
    /// Sees every event, snapshot patch and detail of the session too.
    pub observer: Option<Arc<dyn EventSink>>,
}

/// Which invitation a guest accepts and how it plays.
pub struct JoinPlan {
    pub post_id: String,
    pub mode: ControlMode,
    pub peer: PeerOpts,
    /// As [`HostPlan::data_dir`].
    pub data_dir: Option<PathBuf>,
    /// As [`HostPlan::state_dir`].
    pub state_dir: Option<PathBuf>,
    /// As [`HostPlan::chat`].
    pub chat: Option<Box<dyn ChatSource>>,
    /// As [`HostPlan::observer`].
    pub observer: Option<Arc<dyn EventSink>>,
}

impl JoinPlan {
    /// A plan with no chat source and no observer.
    pub fn new(
        post_id: impl Into<String>,
        mode: ControlMode,
        peer: PeerOpts,
        data_dir: Option<PathBuf>,
    ) -> JoinPlan {
        JoinPlan {
            post_id: post_id.into(),
            mode,
            peer,
            data_dir,
            state_dir: None,
            chat: None,
            observer: None,
        }
    }
}

type Report<'a> = &'a (dyn Fn(Progress) + Send + Sync);

/// Has `cancel` resolved? Polls it once.
async fn cancelled<C: Future<Output = ()>>(cancel: &mut Pin<&mut C>) -> bool {
    tokio::select! {
        biased;
        _ = cancel.as_mut() => true,
        _ = std::future::ready(()) => false,
    }
}

/// Hosts one session: posts the invitation, waits for a guest that passes
/// the handshake, plays, and settles the session on the server.
pub async fn host(
    client: &Client,
    plan: HostPlan,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: impl Future<Output = ()>,
) -> Result<Finished, RemoteError> {
    let mut cancel = std::pin::pin!(cancel);
    if !plan.options.is_empty() {
        plan.spec
            .validate_options(&Value::Object(plan.options.clone()))
            .map_err(|e| RemoteError::Protocol(format!("invitation options: {e}")))?;
    }
    crate::limits::check_session(plan.spec.doc(), &plan.options).map_err(|e| {
        RemoteError::Protocol(format!(
            "palaver cannot honour these invitation options: {e}"
        ))
    })?;
    if cancelled(&mut cancel).await {
        return Err(RemoteError::Cancelled);
    }
    let ep = net::bind_via(plan.peer.reach, &plan.peer.relays, plan.peer.bind).await?;
    let r = host_on(&ep, client, plan, progress, &mut cancel).await;
    net::close(ep).await;
    r
}

async fn host_on<C: Future<Output = ()>>(
    ep: &iroh::Endpoint,
    client: &Client,
    plan: HostPlan,
    progress: Report<'_>,
    cancel: &mut Pin<&mut C>,
) -> Result<Finished, RemoteError> {
    let HostPlan {
        spec,
        mut hooks,
        message,
        options,
        mode,
        ttl,
        upkeep,
        peer,
        data_dir,
        state_dir,
        chat,
        observer,
    } = plan;
    // RSA-2048 key generation takes a while: a spare from the data dir's
    // pool, else one made while the invitation waits for a guest.
    let rsa =
        (spec.flow_mode() == "mental_poker").then(|| PendingKey::start_in(data_dir.as_deref()));
    let ticket = net::ticket(ep).await;
    let pid = spec.protocol_id().to_owned();
    let keys = client.keys();
    // The invitation shows the hooks' own name, tags and type, as the
    // reference's does.
    hooks.prepare().await.map_err(|e| {
        RemoteError::Protocol(format!("the protocol's hooks cannot describe it: {e}"))
    })?;
    let meta = hooks.host_metadata();
    // The post itself is never cut short: a cancel during it would leave an
    // invitation nobody knows the id of.
    if cancelled(cancel).await {
        return Err(RemoteError::Cancelled);
    }
    let post_id = post_invitation(client, &spec, &ticket, &meta, &message, mode, &options).await?;
    progress(Progress::InvitationOpen {
        post_id: post_id.clone(),
    });
    // The session's state dir exists from here on: a waiting host shows in
    // `session list` and the console with its post_id.
    let lobby = match &data_dir {
        Some(d) => {
            let invited = Invited {
                spec: &spec,
                mode,
                options: &options,
                post_id: &post_id,
                ttl,
            };
            match Lobby::open(d, state_dir.as_deref(), &invited) {
                Ok(l) => Some(l),
                Err(e) => {
                    withdraw(client, &post_id, progress).await;
                    return Err(RemoteError::Io(e));
                }
            }
        }
        None => None,
    };
    if let Some(l) = &lobby {
        progress(Progress::StateDir {
            parent: l.dir.parent.clone().unwrap_or_else(|| l.dir.child.clone()),
            child: l.dir.child.clone(),
        });
    }

    let waited = {
        let wait = async {
            let now = tokio::time::Instant::now();
            // A ttl beyond any clock's range waits (practically) forever.
            let deadline = now
                .checked_add(ttl.max(Duration::from_secs(1)))
                .unwrap_or(now + Duration::from_secs(100 * 365 * 24 * 3600));
            // Guests are taken in parallel, each through its own QUIC and
            // session handshake, so a guest that stalls or misbehaves holds
            // up nobody else; the first to pass the handshake plays.
            let mut trying = FuturesUnordered::new();
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                tokio::select! {
                    incoming = tokio::time::timeout(left, ep.accept()) => {
                        let Ok(incoming) = incoming else {
                            return Err(RemoteError::NoGuest(ttl));
                        };
                        let Some(incoming) = incoming else {
                            return Err(RemoteError::Net(NetError::Accept("endpoint closed".into())));
                        };
                        if trying.len() >= MAX_HANDSHAKES {
                            incoming.refuse();
                            progress(Progress::Warning(format!(
                                "refused a connection: {MAX_HANDSHAKES} guests are already in their handshake"
                            )));
                            continue;
                        }
                        let (keys, post_id, pid, peer) = (keys, &post_id, &pid, &peer);
                        trying.push(async move {
                            let (link, mut ch) = net::establish(incoming).await.map_err(Progress::Warning)?;
                            let step = handshake_step(peer);
                            match handshake::host_within(&mut ch, keys, post_id, pid, mode, step).await {
                                Ok(est) => Ok((link, ch, est)),
                                Err(e) => {
                                    link.conn.close(1u32.into(), b"handshake failed");
                                    Err(Progress::TurnedAway { reason: e.to_string() })
                                }
                            }
                        });
                    }
                    Some(done) = trying.next(), if !trying.is_empty() => match done {
                        Ok(x) => return Ok(x),
                        Err(p) => progress(p),
                    },
                }
            }
        };
        tokio::select! {
            r = wait => r,
            closed = keep_open(client, &post_id, upkeep, lobby.as_ref(), progress) => Err(RemoteError::Closed {
                post_id: post_id.clone(),
                reason: closed.reason,
            }),
            _ = cancel.as_mut() => Err(RemoteError::Cancelled),
        }
    };
    let (link, ch, est) = match waited {
        Ok(x) => x,
        Err(e) => {
            if let Some(l) = &lobby {
                let (reason, extra, summary) = match &e {
                    RemoteError::NoGuest(_) => (
                        "max_session_minutes_reached".to_owned(),
                        obj! { "max_session_minutes" => ttl.as_secs_f64() / 60.0 },
                        "No guest came before the invitation's time ran out".to_owned(),
                    ),
                    RemoteError::Closed { reason, .. } => (
                        reason.clone(),
                        Map::new(),
                        format!("The invitation was closed on the server ({reason})"),
                    ),
                    RemoteError::Cancelled => (
                        CANCELLED_REASON.to_owned(),
                        Map::new(),
                        "The host cancelled its invitation".to_owned(),
                    ),
                    other => (
                        "error".to_owned(),
                        obj! { "error" => other.to_string() },
                        format!("Waiting for a guest failed: {other}"),
                    ),
                };
                // The session.json reason: how the invitation ended.
                let end = match &e {
                    RemoteError::NoGuest(_) => "invitation_expired",
                    _ => reason.as_str(),
                };
                l.stopped(&reason, end, extra, &summary);
            }
            if !matches!(e, RemoteError::Closed { .. }) {
                withdraw(client, &post_id, progress).await;
            }
            return Err(e);
        }
    };
    progress(Progress::Established {
        session_id: est.session_id.clone(),
    });
    let announced = lobby.is_some();
    let session = Session {
        spec: &spec,
        role: Role::Host,
        mode,
        options: &options,
        peer: &peer,
        est: &est,
        post_id: &post_id,
        data_dir: data_dir.as_deref(),
        dir: lobby.map(Lobby::into_dir),
        announced,
        chat,
        observer,
        rsa,
        identity: client.keys().clone(),
    };
    session
        .finish(client, hooks, ch, link, progress, cancel)
        .await
}

/// Posts an invitation for `spec` at `ticket` (signed transport binding,
/// the hooks' name, tags and type) and returns its post_id.
pub async fn post_invitation(
    client: &Client,
    spec: &Spec,
    ticket: &str,
    meta: &engine::HostMetadata,
    message: &str,
    mode: ControlMode,
    options: &Map,
) -> Result<String, RemoteError> {
    let pid = spec.protocol_id();
    let keys = client.keys();
    let binding = auth::transport_binding_canonical(&keys.public_key, "iroh", ticket, Some(pid));
    let message = if !message.is_empty() {
        message.to_owned()
    } else if !meta.display_name.is_empty() {
        meta.display_name.clone()
    } else {
        spec.name().unwrap_or(pid).to_owned()
    };
    let tags: Vec<Value> = meta
        .tags
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(Value::from)
        .collect();
    let kind = match meta.invite_type.as_str() {
        k @ ("supply" | "demand" | "chat") => k.to_owned(),
        _ => "supply".to_owned(),
    };
    let mut body = obj! {
        "message" => message, "tags" => Value::Array(tags), "iroh_ticket" => ticket, "transport" => "iroh",
        "transport_info" => Value::Object(obj! { "version" => 1, "endpoint_id" => keys.public_key.as_str(), "ticket" => ticket }),
        "transport_binding_signature" => keys.sign(binding.as_bytes()), "protocol_id" => pid,
        "host_control_mode" => mode.as_str(), "type" => kind,
    };
    if !options.is_empty() {
        body.insert("options", Value::Object(options.clone()));
    }
    let inv = client
        .call(
            "POST",
            "/api/v1/invitations",
            Some(&Value::Object(body)),
            &[201],
        )
        .await?;
    Ok(inv
        .get_str("post_id")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| RemoteError::Server("the server's invitation reply has no post_id".into()))?
        .to_owned())
}

/// How many guests a host takes through their handshakes at once; a further
/// connection is refused until one of them ends.
pub const MAX_HANDSHAKES: usize = 16;

/// Withdraws an invitation nobody will join now (a warning if that fails).
async fn withdraw(client: &Client, post_id: &str, progress: Report<'_>) {
    if let Err(d) = client
        .call(
            "DELETE",
            &format!("/api/v1/invitations/{post_id}"),
            None,
            &[204, 404],
        )
        .await
    {
        progress(Progress::Warning(format!(
            "withdrawing the invitation failed: {d}"
        )));
    }
}

/// Why palaver cannot join an invitation as listed, if it cannot: options
/// it cannot honour (`limits::check_options`), or timing in its protocol's
/// spec beyond `limits::THINK` when the protocol is bundled. `browse` and
/// the console's invitation list show this; `join` refuses such an
/// invitation before it dials.
pub fn unjoinable(invitation: &Map) -> Option<String> {
    let options = invitation
        .get("options")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let pid = invitation
        .get("protocol_id")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = crate::library::bundled_spec_by_id(pid);
    let checked = match &spec {
        Some(spec) => crate::limits::check_session(spec.doc(), &options),
        None => crate::limits::check_options(&options),
    };
    checked.err().map(|e| e.to_string())
}

/// Joins an invitation: fetches and checks it (open, transport binding
/// signed by its author), resolves its protocol through `resolve`, dials
/// the host, runs the handshake (which records the session on the server),
/// plays, and settles the session.
pub async fn join(
    client: &Client,
    plan: JoinPlan,
    resolve: impl FnOnce(&str) -> Result<(Spec, Box<dyn Hooks>), String>,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: impl Future<Output = ()>,
) -> Result<Finished, RemoteError> {
    let mut cancel = std::pin::pin!(cancel);
    let post = plan.post_id.as_str();
    let inv = client
        .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
        .await?;
    if let Some(status) = inv
        .get_str("status")
        .filter(|v| !v.is_empty())
        .filter(|st| *st != "open")
    {
        return Err(RemoteError::Invitation(format!(
            "invitation {post} is {status}: pick an open one from `palaver browse`"
        )));
    }
    let bad = |what: &str| RemoteError::Invitation(format!("invitation {post} {what}"));
    let host_pk = inv
        .get_str("public_key")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| bad("names no host key"))?
        .to_owned();
    let pid = inv
        .get_str("protocol_id")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| bad("names no protocol"))?
        .to_owned();
    let ticket = inv
        .get_str("iroh_ticket")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| bad("has no iroh ticket"))?
        .to_owned();
    let binding_sig = inv
        .get_str("transport_binding_signature")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            bad("has no transport binding signature: refusing it (possible man in the middle)")
        })?;
    let binding = auth::transport_binding_canonical(
        &host_pk,
        inv.get_str("transport")
            .filter(|v| !v.is_empty())
            .unwrap_or("iroh"),
        &ticket,
        Some(&pid),
    );
    if !crate::identity::verify(&host_pk, binding.as_bytes(), binding_sig) {
        return Err(RemoteError::Invitation(format!(
            "invitation {post}: the transport binding is not signed by the host's key: refusing it (possible man in the middle)"
        )));
    }
    if let Some(dir) = &plan.data_dir
        && crate::library::Library::open(Some(dir))
            .map(|lib| lib.resolve(&pid).is_err())
            .unwrap_or(false)
    {
        let f = super::protocol::fetch(client, dir, &pid)
            .await
            .map_err(|e| {
                RemoteError::Protocol(format!(
                    "protocol {pid} of invitation {post} is not in the library and could not be fetched: {e}"
                ))
            })?;
        progress(Progress::Fetched(Box::new(f)));
    }
    let (spec, hooks) = resolve(&pid).map_err(|e| {
        RemoteError::Protocol(format!(
            "protocol {pid} of invitation {post} (register or install it first): {e}"
        ))
    })?;
    if spec.protocol_id() != pid {
        return Err(RemoteError::Protocol(format!(
            "protocol {pid} of invitation {post} resolved to a different spec ({})",
            spec.protocol_id()
        )));
    }
    let options = inv
        .get("options")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    spec.validate_options(&Value::Object(options.clone()))
        .map_err(|e| {
            RemoteError::Protocol(format!(
                "invitation {post} has options its protocol refuses: {e}"
            ))
        })?;
    crate::limits::check_session(spec.doc(), &options).map_err(|e| {
        RemoteError::Protocol(format!(
            "invitation {post} cannot be joined: {e} (not dialling the host)"
        ))
    })?;
    if cancelled(&mut cancel).await {
        return Err(RemoteError::Cancelled);
    }
    let ep = net::bind_via(plan.peer.reach, &plan.peer.relays, plan.peer.bind).await?;
    let dial = Dial {
        host_pk: &host_pk,
        pid: &pid,
        ticket: &ticket,
        spec: &spec,
        options: &options,
    };
    let r = join_on(&ep, client, plan, dial, hooks, progress, &mut cancel).await;
    net::close(ep).await;
    r
}

/// What the guest learned from the invitation.
struct Dial<'a> {
    host_pk: &'a str,
    pid: &'a str,
    ticket: &'a str,
    spec: &'a Spec,
    options: &'a Map,
}

async fn join_on<C: Future<Output = ()>>(
    ep: &iroh::Endpoint,
    client: &Client,
    plan: JoinPlan,
    d: Dial<'_>,
    hooks: Box<dyn Hooks>,
    progress: Report<'_>,
    cancel: &mut Pin<&mut C>,
) -> Result<Finished, RemoteError> {
    let JoinPlan {
        post_id,
        mode,
        peer,
        data_dir,
        state_dir,
        chat,
        observer,
    } = plan;
    // The session RSA key: a spare from the pool, else made while dialling
    // and handshaking.
    let rsa =
        (d.spec.flow_mode() == "mental_poker").then(|| PendingKey::start_in(data_dir.as_deref()));
    progress(Progress::Connecting {
        host_public_key: d.host_pk.to_owned(),
    });
    // The session id the server recorded, should a cancel cut in after
    // the handshake recorded it.
    let recorded = std::sync::Mutex::new(None::<String>);
    let established = async {
        let (link, mut ch) = net::connect(ep, d.ticket).await?;
        let expect = handshake::Expect {
            post_id: &post_id,
            host_public_key: d.host_pk,
            protocol_id: d.pid,
        };
        let record = |body: Value| {
            let recorded = &recorded;
            async move {
                let v = client
                    .call("POST", "/api/v1/sessions", Some(&body), &[201])
                    .await
                    .map_err(|e| e.to_string())?;
                let id = v
                    .get_str("session_id")
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
                    .ok_or_else(|| "the reply has no session_id".to_owned())?;
                if let Ok(mut r) = recorded.lock() {
                    *r = Some(id.clone());
                }
                Ok(id)
            }
        };
        let step = handshake_step(&peer);
        let est =
            handshake::guest_within(&mut ch, client.keys(), &expect, mode, record, step).await?;
        Ok::<_, RemoteError>((link, ch, est))
    };
    let (link, ch, est) = tokio::select! {
        r = established => r?,
        _ = cancel.as_mut() => {
            let id = recorded.lock().ok().and_then(|mut r| r.take());
            if let Some(id) = id {
                close_on_server(client, &id, "cancelled", progress).await;
            }
            return Err(RemoteError::Cancelled);
        }
    };
    progress(Progress::Established {
        session_id: est.session_id.clone(),
    });
    let dir = match &state_dir {
        Some(p) => Some(lobby::adopt(p, Role::Guest)?),
        None => None,
    };
    let session = Session {
        spec: d.spec,
        role: Role::Guest,
        mode,
        options: d.options,
        peer: &peer,
        est: &est,
        post_id: &post_id,
        data_dir: data_dir.as_deref(),
        dir,
        announced: false,
        chat,
        observer,
        rsa,
        identity: client.keys().clone(),
    };
    session
        .finish(client, hooks, ch, link, progress, cancel)
        .await
}

/// One established session's local side.
struct Session<'a> {
    spec: &'a Spec,
    role: Role,
    mode: ControlMode,
    options: &'a Map,
    peer: &'a PeerOpts,
    est: &'a Established,
    post_id: &'a str,
    data_dir: Option<&'a Path>,
    /// The state dir made before the session (the host's from its
    /// invitation on, or a daemon launcher's); None: a fresh one under
    /// `data_dir`, or none without a data dir.
    dir: Option<StateDir>,
    /// `dir` was reported with its session.json written (the host's
    /// waiting dir).
    announced: bool,
    chat: Option<Box<dyn ChatSource>>,
    observer: Option<Arc<dyn EventSink>>,
    /// mental_poker: the session RSA key, started before the peer came.
    rsa: Option<PendingKey>,
    identity: crate::identity::KeyPair,
}

impl Session<'_> {
    /// Writes the state dir's first files (with a data dir) and builds the side.
    fn side(
        &mut self,
        hooks: Box<dyn Hooks>,
        progress: Report<'_>,
    ) -> Result<(Side, Option<StateDir>), RemoteError> {
        let free = self.spec.flow_mode() == "free";
        let made = self.dir.take();
        let dir = match (made, self.data_dir) {
            (Some(dir), _) => dir,
            (None, Some(data_dir)) => StateDir::create(data_dir, self.role).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("creating a session under {}: {e}", data_dir.display()),
                )
            })?,
            (None, None) => {
                let side = Side {
                    hooks,
                    control_mode: self.mode,
                    decider: Arc::new(engine::AutoDecider),
                    strategy: Arc::new(Strategy::default()),
                    sink: Arc::new(CountingSink::default()),
                    chat: self.chat.take(),
                    seed: None,
                    binding: engine::MatchBinding::default(),
                };
                return Ok((side, None));
            }
        };
        if !self.announced {
            run::write_launch(
                &dir,
                &run::Launch {
                    spec: self.spec,
                    protocol_dir: None,
                    role: self.role,
                    control_mode: self.mode,
                    options: self.options,
                    pid: std::process::id(),
                    status: "running",
                },
            )?;
        }
        let (peer_pk, peer_role) = match self.role {
            Role::Host => (&self.est.guest_public_key, "guest"),
            Role::Guest => (&self.est.host_public_key, "host"),
        };
        if let Some(f) = dir.session_file() {
            update_session_file(
                &f,
                obj! {
                    "session_id" => self.est.session_id.as_str(), "post_id" => self.post_id, "peer_public_key" => peer_pk.as_str(),
                    "peer_role" => peer_role, "peer_control_mode" => self.est.peer_control_mode.as_str(), "transport" => "iroh",
                },
            )?;
        }
        if !self.announced {
            progress(Progress::StateDir {
                parent: dir.parent.clone().unwrap_or_else(|| dir.child.clone()),
                child: dir.child.clone(),
            });
        }
        let mut ours = run::stateful_side(
            dir.clone(),
            self.spec,
            hooks,
            self.role,
            self.mode,
            self.options,
            None,
        );
        // The reference's peer_joined, in its fields for each side.
        let mut joined = match self.role {
            Role::Host => obj! { "guest_public_key" => peer_pk.as_str() },
            Role::Guest => obj! { "host_public_key" => peer_pk.as_str() },
        };
        joined.insert("session_id", Value::from(self.est.session_id.as_str()));
        if self.role == Role::Guest {
            joined.insert("protocol_id", Value::from(self.spec.protocol_id()));
        }
        joined.insert("local_control_mode", Value::from(self.mode.as_str()));
        joined.insert(
            "peer_control_mode",
            Value::from(self.est.peer_control_mode.as_str()),
        );
        ours.sink.event(
            "peer_joined",
            joined,
            Some(format!(
                "The {peer_role} joined: session {}",
                self.est.session_id.chars().take(12).collect::<String>()
            )),
        );
        ours.side.chat = match self.chat.take() {
            Some(c) => Some(c),
            None if free => Some(Box::new(InboxChat::new(&dir.child))),
            None => None,
        };
        Ok((ours.side, Some(dir)))
    }

    /// Plays, settles the session on the server and closes the link.
    async fn finish<C: Future<Output = ()>>(
        self,
        client: &Client,
        hooks: Box<dyn Hooks>,
        ch: Channel,
        link: net::Link,
        progress: Report<'_>,
        cancel: &mut Pin<&mut C>,
    ) -> Result<Finished, RemoteError> {
        let est = self.est;
        let post_id = self.post_id.to_owned();
        let peer_public_key = match self.role {
            Role::Host => est.guest_public_key.clone(),
            Role::Guest => est.host_public_key.clone(),
        };
        let (outcome, state_dir, unread) = self.play(client, hooks, ch, progress, cancel).await?;
        // The side that sent the session's last frame waits (bounded) for
        // the peer to read it and leave; the side that received it leaves
        // as soon as the peer has acknowledged everything it sent (so a
        // frame that crossed the peer's last one is never cut), which ends
        // that wait. Settling on the server meanwhile.
        let grace = if unread { FINISH_GRACE } else { Duration::ZERO };
        tokio::join!(
            settle(client, &est.session_id, &outcome, progress),
            link.finish(grace)
        );
        Ok(Finished {
            session_id: est.session_id.clone(),
            outcome,
            state_dir,
            post_id,
            peer_public_key,
        })
    }

    /// Plays to the end of the session, or until `cancel` resolves. Also
    /// says whether this side's frame was the session's last (the peer may
    /// not have read it yet).
    async fn play<C: Future<Output = ()>>(
        mut self,
        client: &Client,
        hooks: Box<dyn Hooks>,
        ch: Channel,
        progress: Report<'_>,
        cancel: &mut Pin<&mut C>,
    ) -> Result<(SessionOutcome, Option<PathBuf>, bool), RemoteError> {
        let (mut side, dir) = self.side(hooks, progress)?;
        if self.spec.flow_mode() == "mental_poker" {
            let peer_public_key = match self.role {
                Role::Host => self.est.guest_public_key.clone(),
                Role::Guest => self.est.host_public_key.clone(),
            };
            side.binding = engine::MatchBinding {
                session_id: Some(self.est.session_id.clone()),
                identity: Some(Arc::new(self.identity.clone())),
                peer_public_key: Some(peer_public_key),
                rsa: std::sync::Mutex::new(self.rsa.take()),
                fault: None,
            };
        }
        let tap = Arc::new(Tap {
            inner: side.sink.clone(),
            observer: self.observer.take(),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            last_sent: AtomicBool::new(false),
        });
        side.sink = tap.clone();
        let cfg = run::engine_config(self.peer.peer_timeout);
        // Heartbeats run for turn-based modes only: in free mode the reference
        // has no heartbeat layer and would show the pings as chat noise.
        let beat = (!self.peer.heartbeat_interval.is_zero() && self.spec.flow_mode() != "free")
            .then(|| {
                let sink = tap.clone();
                let timeout = if self.peer.heartbeat_timeout.is_zero() {
                    self.peer.heartbeat_interval.saturating_mul(3)
                } else {
                    self.peer.heartbeat_timeout
                };
                net::heartbeat(
                    ch.tx.clone(),
                    ch.rx.liveness.clone(),
                    self.peer.heartbeat_interval,
                    timeout,
                    move |kind, data| {
                        let summary = match kind {
                            "peer_unresponsive" => "The peer has gone silent",
                            _ => "The peer is back",
                        };
                        sink.emit(Event {
                            kind,
                            data,
                            summary: Some(summary.to_owned()),
                        });
                    },
                )
            });
        let tx = ch.tx.clone();
        let outcome = tokio::select! {
            o = local::play_remote(self.spec, self.options, &cfg, side, self.role, ch) => o,
            _ = cancel.as_mut() => {
                // The engine was dropped mid-session. The server hears that
                // the user cancelled before the peer can report the stream's
                // end as a failure (the first status a session gets is the
                // one it keeps); then the stream is closed so the peer sees
                // the end, and the end is recorded as the engine would.
                let sid = self.est.session_id.clone();
                let told = close_on_server(client, &sid, CANCELLED_REASON, progress);
                if tokio::time::timeout(CANCEL_SETTLE, told).await.is_err() {
                    progress(Progress::Warning(format!(
                        "the server did not take the cancel within {CANCEL_SETTLE:?}"
                    )));
                }
                tx.close().await;
                tap.cancelled()
            }
        };
        if let Some(b) = beat {
            b.abort();
        }
        if let Some(d) = &dir {
            run::write_end(d, &outcome)?;
        }
        Ok((
            outcome,
            dir.map(|d| d.parent.clone().unwrap_or(d.child)),
            // A card match ends with both receipts crossing: the guest
            // waits (bounded) for the host to leave first, as a reference
            // host whose connection is closed under its last read crashes
            // on exit (SIGSEGV in its iroh stack).
            tap.last_sent.load(Ordering::Relaxed)
                || (self.spec.flow_mode() == "mental_poker" && self.role == Role::Guest),
        ))
    }
}

/// How long each handshake step may take: the peer timeout, at most
/// [`handshake::STEP_TIMEOUT`] (a silent or non-reading peer is given up on
/// as quickly during the handshake as during play).
fn handshake_step(peer: &PeerOpts) -> Duration {
    peer.peer_timeout.min(handshake::STEP_TIMEOUT)
}
