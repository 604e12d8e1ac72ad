//! `palaver host` and `palaver join`: a session with a remote peer over
//! iroh, introduced by the community server and proven by a signed session
//! proof. The local side is written to a state dir like every session, so
//! `palaver session …` (and the console) can watch and steer it.

use super::community_cmd::{client, runtime};
use super::test_cmd::{Subject, subject};
use super::{Ctx, Outcome};
use crate::engine::{ControlMode, Role, SessionOutcome};
use crate::json::{Map, Value};
use crate::limits;
use crate::net::Reach;
use crate::obj;
use crate::services::remote::{self, HostPlan, JoinPlan, PeerOpts, Progress, RemoteError};
use crate::services::{group, run};
use crate::session::{StateDir, files, update_session_file};
use anyhow::{Context, Result, anyhow};
use clap::Args;
use std::io::Write;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Options host and join share.
#[derive(Debug, Args)]
pub struct PeerArgs {
    /// autonomous (plays from strategy.json), hybrid (plays, but takes your
    /// decisions) or human (waits for every decision). Default: the
    /// protocol's `decision.mode` (for join, of the invitation's protocol):
    /// manual is human, autonomous autonomous, auto or none hybrid.
    #[arg(long, value_name = "MODE")]
    pub control_mode: Option<String>,
    /// Reach the peer by direct addresses only, without n0's relays and
    /// discovery (same machine or LAN; works offline).
    #[arg(long)]
    pub direct: bool,
    /// Use this relay server instead of n0's (repeat the flag, or separate
    /// URLs with commas, for more; http:// or https://). No discovery service
    /// runs then: the ticket carries the relay and the direct addresses. At
    /// least one relay must accept a connection within 10 s. Default:
    /// `relay_url` in config.toml, else n0's relays and discovery. --direct
    /// uses no relay, so it overrides this.
    #[arg(
        long = "relay",
        value_name = "URL",
        env = "PALAVER_RELAY_URL",
        value_delimiter = ',',
        value_parser = |s: &str| crate::net::parse_relay_url(s).map_err(|e| e.to_string())
    )]
    pub relay: Vec<iroh::RelayUrl>,
    /// Local UDP address for the iroh endpoint (default: any interface, any port).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddrV4>,
    /// Give up on a silent peer after this many seconds (0.01 to 86400).
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS", value_parser = super::test_cmd::peer_timeout_arg)]
    pub peer_timeout: f64,
    /// Run in the background: print where it runs as JSON once the
    /// invitation is up (host) or the session is proven (join), and return.
    /// Its state dir is made at once; its output goes to daemon.out.log and
    /// daemon.err.log there (`palaver session logs`).
    #[arg(long)]
    pub daemon: bool,
    /// Pause this many seconds before each frame this side sends (0: none;
    /// else 0.01 to 600), so people can follow or coach the game.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS", value_parser = |s: &str| limits::PACE.parse_arg(s))]
    pub pace: f64,
    /// With --control-mode human in a terminal, host and join open the
    /// console on the session (the session runs in the background and goes
    /// on when the console closes); this keeps them in the terminal
    /// instead, printing as a script expects.
    #[arg(long)]
    pub no_console: bool,
    /// The state dir a `--daemon` launcher made for this run (internal).
    #[arg(long, value_name = "DIR", hide = true, conflicts_with = "daemon")]
    pub daemon_state_dir: Option<std::path::PathBuf>,
    /// Seconds between heartbeat pings after the handshake (0: none; else
    /// 0.01 to 3600).
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS", value_parser = |s: &str| limits::HEARTBEAT_INTERVAL.parse_arg(s))]
    pub heartbeat_interval: f64,
    /// Seconds of silence before the peer is reported unresponsive (it is
    /// not dropped for it; see --peer-timeout). 0: three intervals; else
    /// 0.01 to 86400.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS", value_parser = |s: &str| limits::HEARTBEAT_TIMEOUT.parse_arg(s))]
    pub heartbeat_timeout: f64,
    /// Run hooks programs even if they are the untouched scaffold skeleton.
    #[arg(long)]
    pub allow_skeleton_hooks: bool,
    /// A realtime protocol (tank-battle-v1) only: present the ruleset hash
    /// of this protocol dir (every file but ui/, caches and dot-files, as
    /// the reference hashes it) instead of palaver's native one, to play a
    /// peer that runs those rules, e.g. the reference client's bundled
    /// tank-battle dir (docs/realtime.md, Rulesets).
    #[arg(long, value_name = "DIR")]
    pub ruleset_dir: Option<PathBuf>,
}

/// `--ruleset-dir`: the hooks present that dir's ruleset hash.
pub(super) fn present_ruleset(
    hooks: &mut dyn crate::engine::Hooks,
    dir: Option<&Path>,
) -> Result<(), String> {
    let Some(dir) = dir else {
        return Ok(());
    };
    let hash =
        crate::engine::realtime::ruleset_hash(dir).map_err(|e| format!("--ruleset-dir: {e}"))?;
    hooks
        .realtime()
        .ok_or("--ruleset-dir is for realtime protocols (tank-battle-v1) only")?
        .present_ruleset(hash);
    Ok(())
}

#[derive(Debug, Args)]
pub struct HostArgs {
    /// Protocol: a library alias or protocol_id, a protocol dir, or a spec.json.
    #[arg(
        required_unless_present = "protocol_flag",
        conflicts_with = "protocol_flag"
    )]
    pub protocol: Option<String>,
    /// The protocol, as the reference client spells it.
    #[arg(long = "protocol", value_name = "PROTOCOL")]
    pub protocol_flag: Option<String>,
    /// Invitation options as a JSON object (checked against the spec's parameters).
    #[arg(long, value_name = "JSON")]
    pub options: Option<String>,
    /// Start from this profile's options (`palaver protocol show` lists
    /// them); --options then changes single keys.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// The invitation's message in `browse`.
    #[arg(long, default_value = "")]
    pub message: String,
    /// Keep the invitation open this long, renewing it every 2 minutes; with
    /// no guest by then it is cancelled and host exits (1/60 to 10080, a week).
    #[arg(long, default_value_t = 30.0, value_name = "MINUTES", value_parser = |s: &str| limits::INVITATION_TTL_MINUTES.parse_arg(s))]
    pub invitation_ttl_minutes: f64,
    /// Do not renew the invitation: it lives as long as the server keeps
    /// one (`palaver serve --invitation-ttl`, 5 minutes by default), and the
    /// host stops when it expires.
    #[arg(long)]
    pub no_invitation_renew: bool,
    /// A table only (four-player-landlord-v1, …): seat this many bots as
    /// members, so the table starts with fewer people (0 to 31; a table of
    /// four with --bots 3 starts at once).
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=31))]
    pub bots: u8,
    #[command(flatten)]
    pub peer: PeerArgs,
    /// Skip the community: print an iroh ticket and play the first guest
    /// that dials it with `palaver guest --iroh-ticket TICKET PROTOCOL` (or
    /// the reference's `guest --iroh-ticket`), within
    /// --invitation-ttl-minutes. No invitation, no session proof, nothing
    /// reported to a server; the session is written to a state dir as usual.
    #[arg(long, conflicts_with = "daemon")]
    pub no_server: bool,
    /// Arguments for the hooks after `--` (the reference's extra_args):
    /// taken only by a protocol whose spec says `decision.mode: manual`,
    /// and handed to its hooks program's `init` as `args`.
    #[arg(last = true, value_name = "ARGS")]
    pub extra_args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The invitation to accept (its post_id from `palaver browse`).
    pub post_id: String,
    #[command(flatten)]
    pub peer: PeerArgs,
    /// Arguments for the hooks after `--`, as for host.
    #[arg(last = true, value_name = "ARGS")]
    pub extra_args: Vec<String>,
}

/// The peer options, each duration checked against its range again (clap
/// checked the flags; a daemon's job file is read back from disk).
pub(super) fn peer_opts(p: &PeerArgs) -> Result<PeerOpts> {
    Ok(PeerOpts {
        reach: if p.direct {
            Reach::Direct
        } else {
            Reach::Relay
        },
        relays: if p.direct {
            Vec::new()
        } else {
            crate::config::Settings::load(&crate::config::Flags {
                relay: p.relay.clone(),
                ..Default::default()
            })?
            .relays
        },
        bind: p.bind,
        peer_timeout: limits::PEER_TIMEOUT.check(p.peer_timeout)?,
        heartbeat_interval: limits::HEARTBEAT_INTERVAL.check(p.heartbeat_interval)?,
        heartbeat_timeout: limits::HEARTBEAT_TIMEOUT.check(p.heartbeat_timeout)?,
        pace: limits::PACE.check(p.pace)?,
    })
}

/// Prints one progress line (stdout, or stderr under --json).
pub(super) fn say(ctx: &Ctx, line: &str) {
    if ctx.json {
        eprintln!("{line}");
    } else {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// Prints what a side reports; `waiting` tracks whether an invitation is
/// open with no session yet (so a failure then means it was withdrawn).
fn show(ctx: &Ctx, p: Progress, waiting: &AtomicBool) {
    match p {
        Progress::InvitationOpen { post_id } => {
            waiting.store(true, Ordering::Relaxed);
            say(ctx, &format!("post_id: {post_id}"));
            say(
                ctx,
                &format!("waiting for a guest (palaver join {post_id})"),
            );
        }
        Progress::TurnedAway { reason } => eprintln!("palaver: turned a guest away: {reason}"),
        Progress::Connecting { host_public_key } => say(
            ctx,
            &format!(
                "connecting to {}…",
                host_public_key.chars().take(12).collect::<String>()
            ),
        ),
        Progress::Established { session_id } => {
            waiting.store(false, Ordering::Relaxed);
            say(ctx, &format!("session_id: {session_id}"));
        }
        Progress::StateDir { parent, .. } => say(
            ctx,
            &format!(
                "session state: {} (steer it with `palaver session … {}`)",
                parent.display(),
                parent.display()
            ),
        ),
        Progress::Fetched(f) => say(
            ctx,
            &format!(
                "fetched protocol {} ({}) into {}: {}",
                f.installed.alias,
                &f.installed.protocol_id[..12.min(f.installed.protocol_id.len())],
                f.installed.dir.display(),
                f.next.explain(&f.installed.alias)
            ),
        ),
        Progress::Warning(w) => eprintln!("palaver: warning: {w}"),
        Progress::Group(note) => say(ctx, &note),
    }
}

/// Ctrl-C, and SIGTERM (`session abort`, a service manager), listened for.
pub(super) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

/// Resolves when Ctrl-C is pressed or SIGTERM arrives (never, if both
/// signal streams end): the side is cancelled, its invitation withdrawn or
/// its session ended and reported as `cancelled`.
pub(super) async fn interrupted(s: &mut Signals) {
    async fn one(sig: &mut tokio::signal::unix::Signal) {
        if sig.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
    tokio::select! {
        _ = one(&mut s.int) => {}
        _ = one(&mut s.term) => {}
    }
}

/// Listens for Ctrl-C and SIGTERM from here on (they then no longer kill
/// the process).
pub(super) fn ctrl_c() -> Result<Signals> {
    use tokio::signal::unix::{SignalKind, signal};
    Ok(Signals {
        int: signal(SignalKind::interrupt()).context("listening for Ctrl-C")?,
        term: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
    })
}

pub fn host(ctx: &Ctx, a: HostArgs) -> Result<Outcome> {
    if a.peer.daemon {
        return daemonize(ctx, Role::Host, &["post_id:", "session state:"]);
    }
    let protocol = a
        .protocol
        .clone()
        .or(a.protocol_flag.clone())
        .ok_or_else(|| anyhow!("name a protocol"))?;
    let subj = subject(ctx, &protocol, a.peer.allow_skeleton_hooks)?;
    subj.spec
        .check_extra_args(&a.extra_args)
        .map_err(anyhow::Error::msg)?;
    let mode = match &a.peer.control_mode {
        Some(m) => m.parse().map_err(anyhow::Error::msg)?,
        None => ControlMode::author_default(&subj.spec),
    };
    if wants_console(ctx, &a.peer, mode) {
        return with_console(ctx, Role::Host, &["post_id:", "session state:"]);
    }
    let options = options_of(ctx, &subj, a.profile.as_deref(), a.options.as_deref())?;
    if subj.spec.flow_mode() == "authoritative_group" {
        return host_room(ctx, &a, subj.spec, options, mode);
    }
    let c = client(ctx)?;
    let data_dir = ctx.data_dir()?;
    let rt = session_runtime()?;
    let r = rt.block_on(async {
        // Listen for Ctrl-C before the invitation exists, so an interrupt
        // always finds the handler that cancels it.
        let mut sigint = ctrl_c()?;
        let plan = HostPlan {
            message: if a.message.is_empty() {
                subj.name.clone()
            } else {
                a.message.clone()
            },
            hooks: {
                let mut h = subj.hooks()?;
                h.set_extra_args(a.extra_args.clone())
                    .map_err(anyhow::Error::new)?;
                present_ruleset(h.as_mut(), a.peer.ruleset_dir.as_deref())
                    .map_err(anyhow::Error::msg)?;
                h
            },
            spec: subj.spec,
            options,
            mode,
            ttl: limits::INVITATION_TTL_MINUTES.check(a.invitation_ttl_minutes)?,
            upkeep: remote::Upkeep {
                renew: !a.no_invitation_renew,
                ..remote::Upkeep::default()
            },
            peer: peer_opts(&a.peer)?,
            data_dir: Some(data_dir),
            state_dir: a.peer.daemon_state_dir.clone(),
            chat: None,
            observer: None,
        };
        let waiting = AtomicBool::new(false);
        let progress = |p: Progress| show(ctx, p, &waiting);
        match remote::host(&c, plan, &progress, interrupted(&mut sigint)).await {
            Ok(f) => report(ctx, &f.outcome, &f.session_id),
            Err(e) => {
                let e = match e {
                    RemoteError::Cancelled => anyhow!("interrupted"),
                    e => anyhow::Error::new(e),
                };
                Err(if waiting.load(Ordering::Relaxed) {
                    e.context("no session (the invitation is cancelled)")
                } else {
                    e
                })
            }
        }
    });
    shut_down(rt);
    r
}

/// `palaver host` of a group protocol: leads a room.
fn host_room(
    ctx: &Ctx,
    a: &HostArgs,
    spec: crate::spec::Spec,
    options: Map,
    mode: ControlMode,
) -> Result<Outcome> {
    let hooks = group::native_hooks(&spec).ok_or_else(|| {
        anyhow!(
            "palaver has no rules for group protocol {} yet: it can host {}",
            spec.name().unwrap_or(spec.protocol_id()),
            crate::protocols::GROUP_NATIVE.join(", ")
        )
    })?;
    let c = client(ctx)?;
    let data_dir = ctx.data_dir()?;
    let rt = runtime()?;
    let r = rt.block_on(async {
        let mut sigint = ctrl_c()?;
        let plan = group::HostRoomPlan {
            bots: usize::from(a.bots),
            spec,
            hooks,
            message: a.message.clone(),
            options,
            mode,
            ttl: limits::INVITATION_TTL_MINUTES.check(a.invitation_ttl_minutes)?,
            peer: peer_opts(&a.peer)?,
            data_dir,
            state_dir: a.peer.daemon_state_dir.clone(),
        };
        let waiting = AtomicBool::new(false);
        let progress = |p: Progress| show(ctx, p, &waiting);
        match group::host(&c, plan, &progress, interrupted(&mut sigint)).await {
            Ok(f) => report_room(ctx, &f),
            Err(RemoteError::Cancelled) => Err(anyhow!("interrupted")),
            Err(e) => Err(anyhow::Error::new(e)),
        }
    });
    shut_down(rt);
    r
}

/// `palaver join` of a room's invitation.
async fn join_room(
    ctx: &Ctx,
    a: &JoinArgs,
    c: &crate::web::Client,
    spec: crate::spec::Spec,
    mode: ControlMode,
    sigint: &mut Signals,
) -> Result<Outcome> {
    let hooks = group::member_hooks(&spec);
    let plan = group::JoinRoomPlan {
        post_id: a.post_id.clone(),
        spec,
        hooks,
        mode,
        peer: peer_opts(&a.peer)?,
        data_dir: ctx.data_dir()?,
        state_dir: a.peer.daemon_state_dir.clone(),
    };
    let waiting = AtomicBool::new(false);
    let progress = |p: Progress| show(ctx, p, &waiting);
    match group::join(c, plan, &progress, interrupted(sigint)).await {
        Ok(f) => report_room(ctx, &f),
        Err(RemoteError::Cancelled) => Err(anyhow!("interrupted")),
        Err(e) => Err(anyhow::Error::new(e)),
    }
}

fn report_room(ctx: &Ctx, f: &group::RoomFinished) -> Result<Outcome> {
    if ctx.json {
        ctx.print_json(f)?;
    } else if f.completed {
        say(
            ctx,
            &format!(
                "room {} closed{}",
                f.group_id,
                f.outcome
                    .as_deref()
                    .map(|o| format!(": {o}"))
                    .unwrap_or_default()
            ),
        );
    } else {
        say(
            ctx,
            &format!(
                "left room {}: {}",
                f.group_id,
                f.reason.as_deref().unwrap_or("ended")
            ),
        );
    }
    Ok(if f.completed {
        Outcome::Ok
    } else {
        Outcome::Rejected
    })
}

/// The control mode the author of the invitation's protocol asks for
/// (`decision.mode`, see [`ControlMode::author_default`]), for a `join`
/// that names none. An invitation or protocol this cannot read here gives
/// the reference's default, hybrid: the join itself then says what is wrong.
fn invitation_default_mode(ctx: &Ctx, post_id: &str) -> ControlMode {
    let spec = (|| -> Option<crate::spec::Spec> {
        let c = client(ctx).ok()?;
        let data_dir = ctx.data_dir().ok()?;
        let rt = session_runtime().ok()?;
        let inv = rt.block_on(async {
            tokio::time::timeout(
                std::time::Duration::from_secs(15),
                c.call(
                    "GET",
                    &format!("/api/v1/invitations/{post_id}"),
                    None,
                    &[200],
                ),
            )
            .await
        });
        shut_down(rt);
        let pid = inv.ok()?.ok()?.get_str("protocol_id")?.to_owned();
        let lib = crate::library::Library::open(Some(&data_dir)).ok();
        lib.as_ref()
            .and_then(|l| l.resolve(&pid).ok().and_then(|e| l.load(e).ok()))
            .or_else(|| crate::library::bundled_spec_by_id(&pid).cloned())
    })();
    spec.map_or(ControlMode::Hybrid, |s| ControlMode::author_default(&s))
}

/// The spec of the protocol an invitation names, when it is a group
/// protocol palaver knows (installed or bundled).
async fn room_spec(
    ctx: &Ctx,
    c: &crate::web::Client,
    post_id: &str,
) -> Result<Option<crate::spec::Spec>> {
    let inv = c
        .call(
            "GET",
            &format!("/api/v1/invitations/{post_id}"),
            None,
            &[200],
        )
        .await
        .with_context(|| format!("reading invitation {post_id}"))?;
    let Some(pid) = inv.get_str("protocol_id") else {
        return Ok(None);
    };
    Ok(group::room_spec(Some(&ctx.data_dir()?), pid))
}

pub fn join(ctx: &Ctx, a: JoinArgs) -> Result<Outcome> {
    if a.peer.daemon {
        return daemonize(ctx, Role::Guest, &["session_id:", "session state:"]);
    }
    let mode: ControlMode = match &a.peer.control_mode {
        Some(m) => m.parse().map_err(anyhow::Error::msg)?,
        None => invitation_default_mode(ctx, &a.post_id),
    };
    if wants_console(ctx, &a.peer, mode) {
        return with_console(ctx, Role::Guest, &["session_id:", "session state:"]);
    }
    let c = client(ctx)?;
    let data_dir = ctx.data_dir()?;
    let rt = session_runtime()?;
    let r = rt.block_on(async {
        let mut sigint = ctrl_c()?;
        if let Some(spec) = room_spec(ctx, &c, &a.post_id).await? {
            return join_room(ctx, &a, &c, spec, mode, &mut sigint).await;
        }
        let allow = a.peer.allow_skeleton_hooks;
        let extra = a.extra_args.clone();
        let ruleset_dir = a.peer.ruleset_dir.clone();
        let resolve = |pid: &str| {
            let (spec, mut hooks) =
                crate::services::protocol::hooks_for(Some(&data_dir), pid, allow)
                    .map_err(|e| e.to_string())?;
            spec.check_extra_args(&extra)?;
            hooks
                .set_extra_args(extra.clone())
                .map_err(|e| e.to_string())?;
            present_ruleset(hooks.as_mut(), ruleset_dir.as_deref())?;
            Ok((spec, hooks))
        };
        let mut plan = JoinPlan::new(
            a.post_id.clone(),
            mode,
            peer_opts(&a.peer)?,
            Some(data_dir.clone()),
        );
        plan.state_dir = a.peer.daemon_state_dir.clone();
        let waiting = AtomicBool::new(false);
        let progress = |p: Progress| show(ctx, p, &waiting);
        match remote::join(&c, plan, resolve, &progress, interrupted(&mut sigint)).await {
            Ok(f) => report(ctx, &f.outcome, &f.session_id),
            Err(RemoteError::Cancelled) => Err(anyhow!("interrupted")),
            Err(e) => Err(anyhow::Error::new(e)),
        }
    });
    shut_down(rt);
    r
}

/// The runtime of a two-party session (`host`, `join`): one thread runs the
/// session, the QUIC connection and its I/O driver. A frame then goes from
/// the socket through iroh to the engine and its files without waking
/// another thread: on a multi-threaded runtime `block_on`'s future and
/// iroh's tasks sat on different threads, and every frame cost futex
/// wakeups and context switches (16 per RPS round on the joining side,
/// against 3 here). Nothing on the session's path blocks: hooks and the
/// server are awaited, heavy crypto goes to `spawn_blocking`.
pub(super) fn session_runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Ends a side's runtime without waiting for its blocking threads: the
/// session is settled and every file written by now, and a thread still in
/// a lookup (iroh's DNS discovery of an unreachable relay can take seconds)
/// must not hold up the exit.
fn shut_down(rt: tokio::runtime::Runtime) {
    rt.shutdown_background();
}

/// Starts this same command without `--daemon` in its own process group,
/// in a state dir made here (session.json `starting`, its output in
/// daemon.out.log and daemon.err.log there), waits until its output shows
/// every line in `wait_for`, and prints those values with the pid, the
/// state dir and the log paths. A run that stops first is recorded as
/// `startup_failed` (or `startup_timeout`) with the tail of its error log.
fn daemonize(ctx: &Ctx, role: Role, wait_for: &[&str]) -> Result<Outcome> {
    let out = start_daemon(ctx, role, wait_for)?;
    ctx.print_json(&Value::Object(out))?;
    Ok(Outcome::Ok)
}

/// Should this run open the console on its session: a person decides
/// (human), in a terminal, and nobody asked for JSON or no console.
fn wants_console(ctx: &Ctx, peer: &PeerArgs, mode: ControlMode) -> bool {
    use std::io::IsTerminal;
    mode == ControlMode::Human
        && !peer.no_console
        && !ctx.json
        && peer.daemon_state_dir.is_none()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
}

/// The human seat that opens itself: the session starts in the background
/// (as `--daemon` would start it) and the console opens attached to it.
/// Closing the console leaves the session running; one line says how to
/// find it again.
fn with_console(ctx: &Ctx, role: Role, wait_for: &[&str]) -> Result<Outcome> {
    say(
        ctx,
        "starting the session in the background, then the console on it (--no-console: stay here)",
    );
    let out = start_daemon(ctx, role, wait_for)?;
    let dir = out.get_str("state_dir").unwrap_or_default().to_owned();
    let opts = super::console_options(
        ctx,
        super::ConsoleArgs {
            no_house: true,
            attach: vec![PathBuf::from(&dir)],
            theme: None,
            nickname: None,
        },
    )?;
    crate::tui::run(opts)?;
    let meta = StateDir::resolve(Path::new(&dir))
        .and_then(|d| d.session_file())
        .and_then(|f| files::read_json_object(&f))
        .unwrap_or_default();
    match meta.get_str("status").unwrap_or("") {
        "" | "starting" | "running" => say(
            ctx,
            &format!(
                "the session goes on in the background (pid {}): palaver console --attach {dir} to return, palaver session abort {dir} to stop it",
                out.get("pid").map(Value::py_str).unwrap_or_default()
            ),
        ),
        status => say(
            ctx,
            &format!(
                "the session ended: {status}{}; palaver session replay {dir}",
                meta.get_str("end_reason")
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
        ),
    }
    Ok(Outcome::Ok)
}

/// [`daemonize`] without the printing: the values it found, the pid, the
/// state dir and the log paths.
fn start_daemon(ctx: &Ctx, role: Role, wait_for: &[&str]) -> Result<Map> {
    use std::os::unix::process::CommandExt;
    let data_dir = ctx.data_dir()?;
    // The parent only: the run makes its engine dir (a room uses the
    // parent itself, in its one-level layout).
    let parent = StateDir::create_parent(&data_dir, role)
        .with_context(|| format!("creating a session under {}", data_dir.display()))?;
    let session_file = parent.join("session.json");
    let (out_log, err_log) = (parent.join("daemon.out.log"), parent.join("daemon.err.log"));
    update_session_file(
        &session_file,
        obj! {
            "role" => role.as_str(), "status" => "starting", "pid" => 0,
            "state_dir" => parent.display().to_string(), "started_at" => files::epoch_now(), "daemon" => true,
        },
    )?;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|a| a != "--daemon")
        .collect();
    args.push("--daemon-state-dir".into());
    args.push(parent.clone().into_os_string());
    let mut child = super::daemon_command()?
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out_log)?)
        .stderr(std::fs::File::create(&err_log)?)
        .process_group(0)
        .spawn()
        .context("starting the background session")?;
    // The daemon writes its own pid when it runs; until then the launcher
    // names it, so `session list` can tell a daemon that died starting.
    crate::session::update_session_file_if(
        &session_file,
        |m| m.get("pid").and_then(Value::as_i64).unwrap_or(0) == 0,
        obj! { "pid" => child.id() },
    )?;
    let start = std::time::Instant::now();
    let mut found: Vec<(String, String)> = Vec::new();
    let failed = |status: &str, error: String, code: Option<i32>| -> anyhow::Error {
        let excerpt = run::err_excerpt(&parent);
        let _ = run::end_if_running(
            &session_file,
            obj! {
                "status" => status, "startup_error" => error.as_str(), "last_error_excerpt" => excerpt.as_str(),
                "exit_code" => code.map(Value::from).unwrap_or(Value::Null), "ended_at" => files::epoch_now(),
            },
        );
        anyhow!("{error}")
    };
    let role = role.as_str();
    while found.len() < wait_for.len() {
        // Under --json the progress lines go to stderr.
        let text = format!(
            "{}\n{}",
            std::fs::read_to_string(&out_log).unwrap_or_default(),
            std::fs::read_to_string(&err_log).unwrap_or_default()
        );
        found = wait_for
            .iter()
            .filter_map(|p| {
                text.lines().find_map(|l| l.strip_prefix(p)).map(|v| {
                    (
                        if *p == "session state:" {
                            "session_state".to_owned()
                        } else {
                            p.trim_end_matches(':').to_owned()
                        },
                        v.split_whitespace().next().unwrap_or("").to_owned(),
                    )
                })
            })
            .collect();
        if let Some(status) = child.try_wait()? {
            if found.len() < wait_for.len() {
                let tail: String = std::fs::read_to_string(&err_log)
                    .unwrap_or_default()
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(failed(
                    "startup_failed",
                    format!(
                        "the background {role} stopped ({status}) before it was ready:\n{tail}"
                    ),
                    status.code(),
                ));
            }
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(failed(
                "startup_timeout",
                format!(
                    "the background {role} (pid {}) was not ready after 120 s; see {}",
                    child.id(),
                    err_log.display()
                ),
                None,
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = obj! { "status" => "started", "role" => role, "pid" => child.id() };
    for (k, v) in found.into_iter().filter(|(k, _)| k != "session_state") {
        out.insert(k, Value::from(v));
    }
    out.insert("state_dir", Value::from(parent.display().to_string()));
    if let Some(child) = StateDir::resolve(&parent).map(|d| d.child)
        && child != parent
    {
        out.insert("engine_state_dir", Value::from(child.display().to_string()));
    }
    out.insert("out_log", Value::from(out_log.display().to_string()));
    out.insert("err_log", Value::from(err_log.display().to_string()));
    Ok(out)
}

pub(super) fn options_of(
    ctx: &Ctx,
    subj: &Subject,
    profile: Option<&str>,
    raw: Option<&str>,
) -> Result<Map> {
    let Some(v) = super::test_cmd::profiled_options(ctx, &subj.spec, profile, raw)? else {
        return Ok(Map::new());
    };
    subj.spec
        .validate_options(&v)
        .map_err(|e| anyhow!("--options: {e}"))?;
    Ok(v.as_object().cloned().unwrap_or_default())
}

fn report(ctx: &Ctx, o: &SessionOutcome, session_id: &str) -> Result<Outcome> {
    if ctx.json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            session_id: &'a str,
            outcome: &'a SessionOutcome,
        }
        ctx.print_json(&Out {
            session_id,
            outcome: o,
        })?;
    } else {
        say(ctx, &super::test_cmd::outcome_line(o));
    }
    Ok(if o.completed {
        Outcome::Ok
    } else {
        Outcome::Rejected
    })
}
