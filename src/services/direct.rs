//! A session on an iroh ticket, without a community: no invitation, no
//! session proof, the engine straight on the stream — the reference's
//! `guest --iroh-ticket`. `palaver host … --no-server` prints a ticket and
//! plays the first guest that dials it; `palaver guest --iroh-ticket T`
//! dials one. The session is written to a state dir like every other, so
//! `palaver session …` and the console can watch and steer it; nothing is
//! reported to a server, and nothing proves who the peer was.

use super::local::play_remote;
use super::remote::{FINISH_GRACE, PeerOpts};
use super::run;
use crate::engine::{ControlMode, Event, EventSink, Hooks, Role, SessionOutcome};
use crate::json::Map;
use crate::net;
use crate::session::StateDir;
use crate::spec::Spec;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a direct session could not be played.
#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    #[error(transparent)]
    Net(#[from] net::NetError),
    #[error("writing the session under {dir}: {source}")]
    State { dir: String, source: std::io::Error },
    #[error("interrupted")]
    Cancelled,
}

/// One side of a direct session.
pub struct DirectPlan {
    pub spec: Spec,
    pub hooks: Box<dyn Hooks>,
    pub options: Map,
    pub mode: ControlMode,
    pub peer: PeerOpts,
    pub data_dir: PathBuf,
    /// How long the host waits for a guest to dial.
    pub wait: Duration,
}

/// How a direct session ended and where it is written.
#[derive(Debug, serde::Serialize)]
pub struct DirectFinished {
    pub outcome: SessionOutcome,
    pub state_dir: PathBuf,
}

/// What a direct side tells its caller as it goes.
pub enum DirectProgress<'a> {
    /// The host's ticket, to hand to the guest.
    Ticket(&'a str),
    /// Where the session is written.
    StateDir(&'a Path),
    /// The peer is connected.
    Connected,
}

fn state_err(dir: &Path) -> impl FnOnce(std::io::Error) -> DirectError + '_ {
    move |source| DirectError::State {
        dir: dir.display().to_string(),
        source,
    }
}

async fn play(
    plan: DirectPlan,
    role: Role,
    ch: crate::engine::Channel,
    dir: StateDir,
) -> Result<SessionOutcome, DirectError> {
    let parent = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
    run::write_launch(
        &dir,
        &run::Launch {
            spec: &plan.spec,
            protocol_dir: None,
            role,
            control_mode: plan.mode,
            options: &plan.options,
            pid: std::process::id(),
            status: "running",
        },
    )
    .map_err(state_err(&parent))?;
    let ours = run::stateful_side(
        dir.clone(),
        &plan.spec,
        plan.hooks,
        role,
        plan.mode,
        &plan.options,
        None,
    );
    ours.sink.emit(Event {
        kind: "peer_joined",
        data: crate::obj! { "transport" => "iroh", "direct_ticket" => true },
        summary: Some("Peer connected on a ticket (no community, no session proof)".into()),
    });
    let cfg = crate::engine::EngineConfig {
        pace: plan.peer.pace,
        ..run::engine_config(plan.peer.peer_timeout)
    };
    let outcome = play_remote(&plan.spec, &plan.options, &cfg, ours.side, role, ch).await;
    run::write_end(&dir, &outcome).map_err(state_err(&parent))?;
    Ok(outcome)
}

/// Hosts on a ticket: binds, reports the ticket, plays the first guest
/// that dials it within `plan.wait`, or stops when `cancel` resolves.
pub async fn host(
    plan: DirectPlan,
    progress: &(dyn Fn(DirectProgress<'_>) + Send + Sync),
    cancel: impl std::future::Future<Output = ()>,
) -> Result<DirectFinished, DirectError> {
    let ep = net::bind_via(plan.peer.reach, &plan.peer.relays, plan.peer.bind).await?;
    let ticket = net::ticket(&ep).await;
    progress(DirectProgress::Ticket(&ticket));
    let accepted = tokio::select! {
        r = net::accept(&ep, plan.wait, &|_| {}) => r,
        _ = cancel => {
            net::close(ep).await;
            return Err(DirectError::Cancelled);
        }
    };
    let (link, ch) = match accepted {
        Ok(x) => x,
        Err(e) => {
            net::close(ep).await;
            return Err(e.into());
        }
    };
    progress(DirectProgress::Connected);
    let dir = StateDir::create(&plan.data_dir, Role::Host).map_err(state_err(&plan.data_dir))?;
    let parent = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
    progress(DirectProgress::StateDir(&parent));
    let outcome = play(plan, Role::Host, ch, dir).await;
    // The host sends most sessions' last frame: let the guest read it and
    // leave first (bounded), then close.
    link.finish(FINISH_GRACE).await;
    net::close(ep).await;
    Ok(DirectFinished {
        outcome: outcome?,
        state_dir: parent,
    })
}

/// Dials `ticket` and plays as the guest.
pub async fn guest(
    plan: DirectPlan,
    ticket: &str,
    progress: &(dyn Fn(DirectProgress<'_>) + Send + Sync),
) -> Result<DirectFinished, DirectError> {
    net::parse_ticket(ticket)?;
    let ep = net::bind_via(plan.peer.reach, &plan.peer.relays, plan.peer.bind).await?;
    let (link, ch) = match net::connect(&ep, ticket).await {
        Ok(x) => x,
        Err(e) => {
            net::close(ep).await;
            return Err(e.into());
        }
    };
    progress(DirectProgress::Connected);
    let dir = StateDir::create(&plan.data_dir, Role::Guest).map_err(state_err(&plan.data_dir))?;
    let parent = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
    progress(DirectProgress::StateDir(&parent));
    let outcome = play(plan, Role::Guest, ch, dir).await;
    link.finish(Duration::ZERO).await;
    net::close(ep).await;
    Ok(DirectFinished {
        outcome: outcome?,
        state_dir: parent,
    })
}
