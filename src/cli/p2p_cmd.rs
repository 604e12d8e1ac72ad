//! `palaver host` and `palaver join`: a session with a remote peer over
//! iroh, introduced by the community server and proven by a signed session
//! proof. The local side is written to a state dir like every session, so
//! `palaver session …` (and the console) can watch and steer it.

use super::community_cmd::{client, runtime};
use super::test_cmd::{Subject, subject};
use super::{Ctx, Outcome};
use crate::community::{Client, auth};
use crate::engine::{ControlMode, Role, SessionOutcome};
use crate::json::{Map, Value};
use crate::net::{self, Reach, handshake};
use crate::obj;
use crate::services::{local, run};
use crate::session::{StateDir, update_session_file};
use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use std::io::Write;
use std::net::SocketAddrV4;
use std::time::Duration;

/// Options host and join share.
#[derive(Debug, Args)]
pub struct PeerArgs {
    /// autonomous (plays from strategy.json), hybrid (default: plays, but
    /// takes your decisions) or human (waits for every decision).
    #[arg(long, value_name = "MODE", default_value = "hybrid")]
    pub control_mode: String,
    /// Reach the peer by direct addresses only, without n0's relays and
    /// discovery (same machine or LAN; works offline).
    #[arg(long)]
    pub direct: bool,
    /// Local UDP address for the iroh endpoint (default: any interface, any port).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddrV4>,
    /// Give up on a silent peer after this many seconds.
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
    pub peer_timeout: f64,
    /// Run in the background: print where it runs as JSON once the
    /// invitation is up (host) or the session is proven (join), and return.
    /// Its output goes to sessions/daemons/ in the data dir.
    #[arg(long)]
    pub daemon: bool,
    /// Seconds between heartbeat pings after the handshake (0: none).
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub heartbeat_interval: f64,
    /// Seconds of silence before the peer is reported unresponsive (it is
    /// not dropped for it; see --peer-timeout).
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub heartbeat_timeout: f64,
    /// Run hooks programs even if they are the untouched scaffold skeleton.
    #[arg(long)]
    pub allow_skeleton_hooks: bool,
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
    /// The invitation's message in `browse`.
    #[arg(long, default_value = "")]
    pub message: String,
    /// Keep the invitation open this long, renewing it every 2 minutes; with
    /// no guest by then it is cancelled and host exits.
    #[arg(long, default_value_t = 30.0, value_name = "MINUTES")]
    pub invitation_ttl_minutes: f64,
    #[command(flatten)]
    pub peer: PeerArgs,
}

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The invitation to accept (its post_id from `palaver browse`).
    pub post_id: String,
    #[command(flatten)]
    pub peer: PeerArgs,
}

fn reach(p: &PeerArgs) -> Reach {
    if p.direct {
        Reach::Direct
    } else {
        Reach::Relay
    }
}

fn s<'a>(m: &'a Value, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str).filter(|v| !v.is_empty())
}

/// Prints one progress line (stdout, or stderr under --json).
fn say(ctx: &Ctx, line: &str) {
    if ctx.json {
        eprintln!("{line}");
    } else {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

pub fn host(ctx: &Ctx, a: HostArgs) -> Result<Outcome> {
    if a.peer.daemon {
        return daemonize(ctx, "host", &["post_id:"]);
    }
    let mode: ControlMode = a.peer.control_mode.parse().map_err(anyhow::Error::msg)?;
    let protocol = a
        .protocol
        .clone()
        .or(a.protocol_flag.clone())
        .ok_or_else(|| anyhow!("name a protocol"))?;
    let subj = subject(ctx, &protocol, a.peer.allow_skeleton_hooks)?;
    let options = options_of(&subj, a.options.as_deref())?;
    let c = client(ctx)?;
    let rt = runtime()?;
    let _guard = rt.enter();
    rt.block_on(async {
        let ep = net::bind(reach(&a.peer), a.peer.bind).await?;
        let ticket = net::ticket(&ep).await;
        let pid = subj.spec.protocol_id().to_owned();
        let keys = c.keys().clone();
        let binding = auth::transport_binding_canonical(&keys.public_key, "iroh", &ticket, Some(&pid));
        let mut body = obj! {
            "message" => if a.message.is_empty() { subj.name.clone() } else { a.message.clone() },
            "tags" => Value::Array(vec![]), "iroh_ticket" => ticket.as_str(), "transport" => "iroh",
            "transport_info" => Value::Object(obj! { "version" => 1, "endpoint_id" => keys.public_key.as_str(), "ticket" => ticket.as_str() }),
            "transport_binding_signature" => keys.sign(binding.as_bytes()), "protocol_id" => pid.as_str(),
            "host_control_mode" => mode.as_str(), "type" => "supply",
        };
        if !options.is_empty() {
            body.insert("options", Value::Object(options.clone()));
        }
        // Listen for Ctrl-C before the invitation exists, so an interrupt
        // always finds the handler that cancels it.
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).context("listening for Ctrl-C")?;
        let inv = c.call("POST", "/api/v1/invitations", Some(&Value::Object(body)), &[201]).await?;
        let post_id = s(&inv, "post_id").ok_or_else(|| anyhow!("the server's invitation reply has no post_id"))?.to_owned();
        say(ctx, &format!("post_id: {post_id}"));
        say(ctx, &format!("waiting for a guest (palaver join {post_id})"));

        // Keep the invitation alive while waiting.
        let renew = {
            let path = format!("/api/v1/invitations/{post_id}/renew");
            let c2 = c.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(120)).await;
                    if let Err(e) = c2.call("POST", &path, None, &[200]).await {
                        eprintln!("palaver: renewing the invitation failed: {e}");
                    }
                }
            })
        };
        // A guest that fails the handshake is turned away with its reason;
        // the invitation stays up for the next one until the time is spent.
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64((a.invitation_ttl_minutes * 60.0).max(1.0));
        let accepted = loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let accepted = tokio::select! {
                a = net::accept(&ep, left.max(Duration::from_millis(1))) => a.map_err(anyhow::Error::new),
                _ = sigint.recv() => Err(anyhow!("interrupted")),
            };
            let (link, mut ch) = match accepted {
                Ok(x) => x,
                Err(e) => break Err(e),
            };
            match handshake::host(&mut ch, &keys, &post_id, &pid, mode).await {
                Ok(est) => break Ok((link, ch, est)),
                Err(e) => {
                    eprintln!("palaver: turned a guest away: {e}");
                    link.conn.close(1u32.into(), b"handshake failed");
                }
            }
        };
        renew.abort();
        let (link, ch, est) = match accepted {
            Ok(x) => x,
            Err(e) => {
                let _ = c.call("DELETE", &format!("/api/v1/invitations/{post_id}"), None, &[204, 404]).await;
                ep.close().await;
                return Err(e.context("no session (the invitation is cancelled)"));
            }
        };
        say(ctx, &format!("session_id: {}", est.session_id));
        let outcome = play(ctx, &subj, Role::Host, mode, &options, &a.peer, &est, &post_id, ch).await?;
        settle(&c, &est.session_id, &outcome).await;
        link.finish(Duration::from_secs(2)).await;
        ep.close().await;
        report(ctx, &outcome, &est.session_id)
    })
}

pub fn join(ctx: &Ctx, a: JoinArgs) -> Result<Outcome> {
    if a.peer.daemon {
        return daemonize(ctx, "guest", &["session_id:", "session state:"]);
    }
    let mode: ControlMode = a.peer.control_mode.parse().map_err(anyhow::Error::msg)?;
    let c = client(ctx)?;
    let rt = runtime()?;
    let _guard = rt.enter();
    rt.block_on(async {
        let inv = c.call("GET", &format!("/api/v1/invitations/{}", a.post_id), None, &[200]).await?;
        if let Some(status) = s(&inv, "status").filter(|st| *st != "open") {
            bail!("invitation {} is {status}: pick an open one from `palaver browse`", a.post_id);
        }
        let host_pk = s(&inv, "public_key").ok_or_else(|| anyhow!("invitation {} names no host key", a.post_id))?.to_owned();
        let pid = s(&inv, "protocol_id").ok_or_else(|| anyhow!("invitation {} names no protocol", a.post_id))?.to_owned();
        let ticket = s(&inv, "iroh_ticket").ok_or_else(|| anyhow!("invitation {} has no iroh ticket", a.post_id))?.to_owned();
        let binding_sig = s(&inv, "transport_binding_signature")
            .ok_or_else(|| anyhow!("invitation {} has no transport binding signature: refusing it (possible man in the middle)", a.post_id))?;
        let binding = auth::transport_binding_canonical(&host_pk, s(&inv, "transport").unwrap_or("iroh"), &ticket, Some(&pid));
        if !crate::identity::verify(&host_pk, binding.as_bytes(), binding_sig) {
            bail!("invitation {}: the transport binding is not signed by the host's key: refusing it (possible man in the middle)", a.post_id);
        }
        let subj = subject(ctx, &pid, a.peer.allow_skeleton_hooks)
            .with_context(|| format!("protocol {pid} of invitation {} (register or install it first)", a.post_id))?;
        let options = inv.get("options").and_then(Value::as_object).cloned().unwrap_or_default();
        subj.spec
            .validate_options(&Value::Object(options.clone()))
            .map_err(|e| anyhow!("invitation {} has options its protocol refuses: {e}", a.post_id))?;

        let ep = net::bind(reach(&a.peer), a.peer.bind).await?;
        say(ctx, &format!("connecting to {}…", host_pk.chars().take(12).collect::<String>()));
        let (link, mut ch) = net::connect(&ep, &ticket).await?;
        let expect = handshake::Expect { post_id: &a.post_id, host_public_key: &host_pk, protocol_id: &pid };
        let record = |body: Value| {
            let c = &c;
            async move {
                let v = c.call("POST", "/api/v1/sessions", Some(&body), &[201]).await.map_err(|e| e.to_string())?;
                s(&v, "session_id").map(str::to_owned).ok_or_else(|| "the reply has no session_id".to_owned())
            }
        };
        let est = match handshake::guest(&mut ch, c.keys(), &expect, mode, record).await {
            Ok(e) => e,
            Err(e) => {
                ep.close().await;
                return Err(anyhow::Error::new(e).context("the session handshake failed"));
            }
        };
        say(ctx, &format!("session_id: {}", est.session_id));
        let outcome = play(ctx, &subj, Role::Guest, mode, &options, &a.peer, &est, &a.post_id, ch).await?;
        settle(&c, &est.session_id, &outcome).await;
        link.finish(Duration::from_secs(2)).await;
        ep.close().await;
        report(ctx, &outcome, &est.session_id)
    })
}

/// Starts this same command without `--daemon` in its own process group,
/// waits until its output shows every line in `wait_for`, and prints those
/// values with the pid and log paths.
fn daemonize(ctx: &Ctx, role: &str, wait_for: &[&str]) -> Result<Outcome> {
    use std::os::unix::process::CommandExt;
    let logs = ctx.data_dir()?.join("sessions").join("daemons");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let (out_log, err_log) = (
        logs.join(format!("{role}-{stamp}.out.log")),
        logs.join(format!("{role}-{stamp}.err.log")),
    );
    let args: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|a| a != "--daemon")
        .collect();
    let mut child =
        std::process::Command::new(std::env::current_exe().context("locating the palaver binary")?)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&out_log)?)
            .stderr(std::fs::File::create(&err_log)?)
            .process_group(0)
            .spawn()
            .context("starting the background session")?;
    let start = std::time::Instant::now();
    let mut found: Vec<(String, String)> = Vec::new();
    while found.len() < wait_for.len() {
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
                            "state_dir".to_owned()
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
                bail!("the background {role} stopped ({status}) before it was ready:\n{tail}");
            }
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            bail!(
                "the background {role} (pid {}) was not ready after 120 s; see {}",
                child.id(),
                err_log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = obj! { "status" => "started", "role" => role, "pid" => child.id() };
    for (k, v) in found {
        out.insert(k, Value::from(v));
    }
    out.insert("out_log", Value::from(out_log.display().to_string()));
    out.insert("err_log", Value::from(err_log.display().to_string()));
    ctx.print_json(&Value::Object(out))?;
    Ok(Outcome::Ok)
}

fn options_of(subj: &Subject, raw: Option<&str>) -> Result<Map> {
    let Some(raw) = raw else {
        return Ok(Map::new());
    };
    let v = crate::json::parse_str(raw).context("--options: invalid JSON")?;
    subj.spec
        .validate_options(&v)
        .map_err(|e| anyhow!("--options: {e}"))?;
    Ok(v.as_object().cloned().unwrap_or_default())
}

/// Runs the local side with its state dir over the established channel.
#[allow(clippy::too_many_arguments)]
async fn play(
    ctx: &Ctx,
    subj: &Subject,
    role: Role,
    mode: ControlMode,
    options: &Map,
    peer: &PeerArgs,
    est: &handshake::Established,
    post_id: &str,
    ch: crate::engine::Channel,
) -> Result<SessionOutcome> {
    let data_dir = ctx.data_dir()?;
    let dir = StateDir::create(&data_dir, role)
        .with_context(|| format!("creating a session under {}", data_dir.display()))?;
    run::write_launch(
        &dir,
        &run::Launch {
            spec: &subj.spec,
            protocol_dir: None,
            role,
            control_mode: mode,
            options,
            pid: std::process::id(),
            status: "running",
        },
    )?;
    let (peer_pk, peer_role) = match role {
        Role::Host => (&est.guest_public_key, "guest"),
        Role::Guest => (&est.host_public_key, "host"),
    };
    if let Some(f) = dir.session_file() {
        update_session_file(
            &f,
            obj! {
                "session_id" => est.session_id.as_str(), "post_id" => post_id, "peer_public_key" => peer_pk.as_str(),
                "peer_role" => peer_role, "peer_control_mode" => est.peer_control_mode.as_str(), "transport" => "iroh",
            },
        )?;
    }
    let parent = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
    say(
        ctx,
        &format!(
            "session state: {} (steer it with `palaver session … {}`)",
            parent.display(),
            parent.display()
        ),
    );
    let mut ours = run::stateful_side(
        dir.clone(),
        &subj.spec,
        subj.hooks()?,
        role,
        mode,
        options,
        None,
    );
    if subj.spec.flow_mode() == "free" {
        ours.side.chat = Some(Box::new(crate::session::files::InboxChat::new(&dir.child)));
    }
    let cfg = run::engine_config(peer.peer_timeout);
    // Heartbeats run for turn-based modes only: in free mode the reference
    // has no heartbeat layer and would show the pings as chat noise.
    let beat = (peer.heartbeat_interval > 0.0 && subj.spec.flow_mode() != "free").then(|| {
        let sink = ours.sink.clone();
        let timeout = if peer.heartbeat_timeout > 0.0 {
            peer.heartbeat_timeout
        } else {
            3.0 * peer.heartbeat_interval
        };
        net::heartbeat(
            ch.tx.clone(),
            ch.rx.liveness.clone(),
            Duration::from_secs_f64(peer.heartbeat_interval),
            Duration::from_secs_f64(timeout),
            move |kind, data| {
                let summary = match kind {
                    "peer_unresponsive" => "The peer has gone silent",
                    _ => "The peer is back",
                };
                sink.event(kind, data, Some(summary.to_owned()));
            },
        )
    });
    let outcome = local::play_remote(&subj.spec, options, &cfg, ours.side, role, ch).await;
    if let Some(b) = beat {
        b.abort();
    }
    run::write_end(&dir, &outcome)?;
    Ok(outcome)
}

/// Writes the session's end back to the server: status, and the winner
/// when there is one. Failures are warnings; the local record stands.
async fn settle(c: &Client, session_id: &str, o: &SessionOutcome) {
    let status = if o.completed { "closed" } else { "failed" };
    let path = format!("/api/v1/sessions/{session_id}/status");
    if let Err(e) = c
        .call(
            "POST",
            &path,
            Some(&Value::Object(obj! { "status" => status })),
            &[200, 409],
        )
        .await
    {
        eprintln!("palaver: warning: closing the session on the server failed: {e}");
    }
    if let Some(w) = o
        .winner
        .as_deref()
        .filter(|w| matches!(*w, "host" | "guest" | "draw"))
    {
        let path = format!("/api/v1/sessions/{session_id}/result");
        if let Err(e) = c
            .call(
                "POST",
                &path,
                Some(&Value::Object(obj! { "winner" => w })),
                &[200],
            )
            .await
        {
            eprintln!("palaver: warning: reporting the result failed: {e}");
        }
    }
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
