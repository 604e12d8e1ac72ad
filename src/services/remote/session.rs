//! One established session, either side: writing its state dir, building
//! the local side, playing it to the end and settling it on the server.

use super::settle::{Tap, close_on_server, settle};
use super::{
    CANCEL_SETTLE, CANCELLED_REASON, FINISH_GRACE, Finished, PeerOpts, Progress, RemoteError,
    Report,
};
use crate::engine::mental_poker::pending::PendingKey;
use crate::engine::{
    self, Channel, ChatSource, ControlMode, CountingSink, Event, EventSink, Hooks, Role,
    SessionOutcome, Strategy,
};
use crate::json::{Map, Value};
use crate::net::handshake::Established;
use crate::net::{self};
use crate::obj;
use crate::services::local::{self, Side};
use crate::services::run;
use crate::session::files::InboxChat;
use crate::session::{StateDir, update_session_file};
use crate::spec::Spec;
use crate::web::Client;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// One established session's local side.
pub(super) struct Session<'a> {
    pub(super) spec: &'a Spec,
    pub(super) role: Role,
    pub(super) mode: ControlMode,
    pub(super) options: &'a Map,
    pub(super) peer: &'a PeerOpts,
    pub(super) est: &'a Established,
    pub(super) post_id: &'a str,
    pub(super) data_dir: Option<&'a Path>,
    /// The state dir made before the session (the host's from its
    /// invitation on, or a daemon launcher's); None: a fresh one under
    /// `data_dir`, or none without a data dir.
    pub(super) dir: Option<StateDir>,
    /// `dir` was reported with its session.json written (the host's
    /// waiting dir).
    pub(super) announced: bool,
    pub(super) chat: Option<Box<dyn ChatSource>>,
    pub(super) observer: Option<Arc<dyn EventSink>>,
    /// mental_poker: the session RSA key, started before the peer came.
    pub(super) rsa: Option<PendingKey>,
    pub(super) identity: crate::identity::KeyPair,
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
    pub(super) async fn finish<C: Future<Output = ()>>(
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
        let cfg = crate::engine::EngineConfig {
            pace: self.peer.pace,
            ..run::engine_config(self.peer.peer_timeout)
        };
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
