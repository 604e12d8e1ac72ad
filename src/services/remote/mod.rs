//! One side of a session with a remote peer over iroh, introduced by the
//! community server and proven by a signed session proof: `palaver host`,
//! `palaver join`, the console, and the house agent all run this.
//!
//! The caller gets what happens as [`Progress`] values (the CLI prints them,
//! the console shows them) and stops a side with its `cancel` future: before
//! the session is established that withdraws the invitation and returns
//! [`RemoteError::Cancelled`]; afterwards it aborts the session, whose
//! outcome then says `cancelled`.

use crate::engine::{ChatSource, ControlMode, Dir, Event, EventSink, Hooks, SessionOutcome};
use crate::json::{Map, Value};
use crate::net::handshake::{self, HandshakeError};
use crate::net::{NetError, Reach};
use crate::obj;
use crate::spec::Spec;
use crate::web::{Client, ClientError};
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

mod host;
mod join;
mod lobby;
mod session;
mod settle;
pub use host::{MAX_HANDSHAKES, host, post_invitation};
pub use join::{join, unjoinable};
pub use lobby::{Closed, RENEW_EVERY, Upkeep, WATCH_EVERY};

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
    /// A pause before each frame this side sends (zero: none), so people
    /// can follow or coach the game (the reference's `--pace`).
    pub pace: Duration,
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
            pace: Duration::ZERO,
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

/// How long each handshake step may take: the peer timeout, at most
/// [`handshake::STEP_TIMEOUT`] (a silent or non-reading peer is given up on
/// as quickly during the handshake as during play).
fn handshake_step(peer: &PeerOpts) -> Duration {
    peer.peer_timeout.min(handshake::STEP_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_peers_stay_on_loopback_and_relay_peers_anywhere() {
        let d = PeerOpts::direct();
        assert!(matches!(d.reach, Reach::Direct));
        assert_eq!(d.bind, Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)));
        let r = PeerOpts::relay();
        assert!(matches!(r.reach, Reach::Relay));
        assert_eq!(r.bind, None);
        assert!(r.relays.is_empty());
        // Both watch the peer alike.
        for p in [&d, &r] {
            assert_eq!(p.peer_timeout, Duration::from_secs(300));
            assert_eq!(p.heartbeat_interval, Duration::from_secs(10));
            assert_eq!(p.heartbeat_timeout, Duration::from_secs(30));
        }
    }

    #[test]
    fn a_handshake_step_is_the_peer_timeout_at_most_the_step_cap() {
        let mut p = PeerOpts::direct();
        assert_eq!(handshake_step(&p), handshake::STEP_TIMEOUT);
        p.peer_timeout = Duration::from_secs(5);
        assert_eq!(handshake_step(&p), Duration::from_secs(5));
        p.peer_timeout = handshake::STEP_TIMEOUT;
        assert_eq!(handshake_step(&p), handshake::STEP_TIMEOUT);
    }

    #[test]
    fn errors_say_what_went_wrong() {
        assert_eq!(
            RemoteError::NoGuest(Duration::from_secs(3)).to_string(),
            "no guest passed the handshake within 3s"
        );
        assert_eq!(
            RemoteError::Closed {
                post_id: "p1".into(),
                reason: "expired".into()
            }
            .to_string(),
            "invitation p1 was closed on the server (expired)"
        );
        assert_eq!(
            RemoteError::Cancelled.to_string(),
            "cancelled before a session was established"
        );
    }
}
