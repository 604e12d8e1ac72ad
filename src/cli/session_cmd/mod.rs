//! `palaver session …`: look at and steer session state dirs — palaver's
//! and the reference client's alike (same layout, same files).

mod bundle_cmd;
mod replay;

use super::{Ctx, Outcome};
use crate::json::{self, Map, Value};
use crate::services::run;
use crate::session::{
    StateDir, StateSink, StrategyFile, SubmitOptions, files, submit, update_session_file,
};
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use replay::{check_speed, print_timeline, replay};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct Target {
    /// The session's state dir (the parent printed at start, or its engine
    /// dir). Default: the newest session in the data dir.
    pub dir: Option<PathBuf>,
    /// Same as the positional DIR (the reference client's spelling).
    #[arg(long = "state-dir", value_name = "DIR", conflicts_with = "dir")]
    pub state_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SessionCmd {
    /// List sessions in the data dir with their status (dead daemons are
    /// marked crashed or stopped).
    List,
    /// Print a session's events; --follow keeps printing new ones.
    Events {
        #[command(flatten)]
        target: Target,
        #[arg(long, short)]
        follow: bool,
    },
    /// Print a session's snapshot (phase, role, score, last event…).
    Snapshot {
        #[command(flatten)]
        target: Target,
    },
    /// Print a session's protocol details; --follow keeps printing new ones.
    Details {
        #[command(flatten)]
        target: Target,
        #[arg(long, short)]
        follow: bool,
    },
    /// Print the strategy, or replace it (--set) or deep-merge into it (--merge).
    Strategy {
        #[command(flatten)]
        target: Target,
        /// Replace strategy.json with this JSON object.
        #[arg(long = "set", value_name = "JSON", conflicts_with = "merge")]
        set: Option<String>,
        /// Deep-merge this JSON object into strategy.json.
        #[arg(long = "merge", value_name = "JSON")]
        merge: Option<String>,
    },
    /// Submit a decision for the open (or named) window, e.g.
    /// '{"round":0,"choice":"rock"}'; without a round/turn/attempt key it
    /// goes to the window open now.
    Decide {
        #[command(flatten)]
        target: Target,
        /// The decision as a JSON object.
        #[arg(long, value_name = "JSON")]
        decision: String,
        #[arg(long, value_name = "ID")]
        agent_id: Option<String>,
        /// With --agent-id: a repeated submission with this key is a no-op.
        #[arg(long, value_name = "KEY")]
        idempotency_key: Option<String>,
    },
    /// Send an action in a room (a group protocol), e.g.
    /// '{"kind":"send","text":"hello"}': appended to the session's
    /// group-actions.jsonl, from where the running session sends it to the
    /// leader (in order, one at a time, retried with the same client_seq
    /// after a reconnect). A JSON object of at most 64 KiB.
    Action {
        #[command(flatten)]
        target: Target,
        /// The action as a JSON object.
        #[arg(value_name = "JSON", required_unless_present_any = ["action_flag", "action_file"])]
        action: Option<String>,
        /// The action, as the reference client spells it.
        #[arg(long = "action", value_name = "JSON", conflicts_with_all = ["action", "action_file"])]
        action_flag: Option<String>,
        /// Read the action from this file (UTF-8, at most 1 MiB).
        #[arg(long, value_name = "FILE", conflicts_with = "action")]
        action_file: Option<PathBuf>,
    },
    /// Replay a finished session from its state dir: every frame, round
    /// result, decision (and who took it), whisper and the end, with the
    /// round, score and board as they stood after each step. A file is
    /// read as a finished werewolf game's .log (the AIWolf server's format,
    /// told by its content; `palaver wolf serve` and `wolf play --game-log`
    /// write it): every talk, whisper, vote, divination, guard, attack and
    /// execution, each day's status and the result, with who is alive, the
    /// roles, the day's talk and votes as they stood. --json prints the
    /// reconstructed timeline. The subcommands export, verify and reconcile
    /// signed replay bundles (the reference client's format).
    Replay(bundle_cmd::ReplayArgs),
    /// Whisper to your own side: "always paper", "下一轮出石头", "counter
    /// them", "bid 7". Recorded in whispers.jsonl; a user whisper also sets
    /// strategy.operator_hint and becomes a strategy, a decision or a
    /// queued intent by the protocol's keywords (see docs/usage.md).
    Whisper(super::whisper_cmd::WhisperArgs),
    /// Stop a running daemon session (SIGTERM) and record why.
    Abort {
        #[command(flatten)]
        target: Target,
        #[arg(long, default_value = "aborted_by_agent")]
        reason: String,
    },
    /// Print the tail of a daemon session's logs (stderr by default).
    Logs {
        #[command(flatten)]
        target: Target,
        /// Standard output instead of standard error.
        #[arg(long)]
        out: bool,
        #[arg(long, default_value_t = 50)]
        tail: usize,
    },
    /// The community server's record of a session (by session_id).
    Get { session_id: String },
    /// Close a session record on the server: closed, failed or cancelled
    /// (once; a terminal session answers 409).
    Status { session_id: String, status: String },
    /// Report a session's winner to the server (host, guest or draw); two
    /// different reports mark it disputed.
    Result { session_id: String, winner: String },
    /// A session's transport record on the server (its iroh ticket).
    TransportGet { session_id: String },
    /// Publish a new iroh ticket for a session, signed with a transport
    /// binding (for a host whose address changed).
    TransportUpdate { session_id: String, ticket: String },
}

fn sessions_root(ctx: &Ctx) -> Result<PathBuf> {
    Ok(ctx.data_dir()?.join("sessions"))
}

/// The state dir named by the user, or the newest session.
fn resolve(ctx: &Ctx, t: &Target) -> Result<StateDir> {
    let named = t.dir.clone().or_else(|| t.state_dir.clone());
    let path = match named {
        Some(p) => p,
        None => {
            let root = sessions_root(ctx)?;
            run::newest_session(&root)
                .with_context(|| format!("no sessions in {}", root.display()))?
                .ok_or_else(|| anyhow!("no sessions in {}", root.display()))?
        }
    };
    StateDir::resolve(&path).ok_or_else(|| {
        anyhow!(
            "{} is not a session state dir (no session.json, snapshot.json or details.jsonl)",
            path.display()
        )
    })
}

fn ts_short(line: &Map) -> String {
    line.get("ts")
        .and_then(Value::as_str)
        .and_then(|t| t.get(11..19))
        .unwrap_or("")
        .to_owned()
}

/// One events.jsonl line for people, as the reference prints it.
pub fn format_event(e: &Map) -> String {
    let ts = ts_short(e);
    let kind = e.get("type").and_then(Value::as_str).unwrap_or("?");
    let data = e
        .get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let s = |k: &str| data.get(k).map(Value::py_str).unwrap_or_default();
    match kind {
        "protocol_message" => {
            let action = data
                .get("msg")
                .and_then(|m| m.get("action"))
                .map(Value::py_str)
                .unwrap_or_else(|| "?".into());
            match e.get("summary").and_then(Value::as_str) {
                Some(sum) => format!("[{ts}] {}: {action} | {sum}", s("direction")),
                None => format!("[{ts}] {}: {action}", s("direction")),
            }
        }
        "session_ended" => format!("[{ts}] session_ended: {}", s("reason")),
        "peer_unresponsive" => format!("[{ts}] peer_unresponsive: {}s no response", s("elapsed")),
        "peer_resumed" => format!("[{ts}] peer_resumed: peer reconnected"),
        _ if data.is_empty() => format!("[{ts}] {kind}: "),
        _ => format!(
            "[{ts}] {kind}: {}",
            crate::json::canonical::to_string_ordered(&Value::Object(data))
        ),
    }
}

fn detail_line(d: &Map) -> String {
    let summary = d
        .get("summary")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let rest: Map = d
                .iter()
                .filter(|(k, _)| *k != "ts" && *k != "summary")
                .map(|(k, v)| (k, v.clone()))
                .collect();
            crate::json::canonical::to_string_ordered(&Value::Object(rest))
        });
    format!("[{}] {summary}", ts_short(d))
}

/// Prints the lines of a .jsonl file, then (with follow) new ones as they come.
fn print_jsonl(
    ctx: &Ctx,
    files: &[PathBuf],
    follow: bool,
    fmt: fn(&Map) -> String,
) -> Result<Outcome> {
    let mut tails: Vec<files::Tail> = files.iter().map(|_| files::Tail::new()).collect();
    let mut out = std::io::stdout();
    loop {
        // Merge the files' new lines by timestamp.
        let mut batch: Vec<Map> = Vec::new();
        for (t, f) in tails.iter_mut().zip(files) {
            batch.extend(t.poll(f));
        }
        batch.sort_by_key(ts_short_full);
        for line in &batch {
            if ctx.json {
                writeln!(
                    out,
                    "{}",
                    crate::json::canonical::to_string_ordered(&Value::Object(line.clone()))
                )?;
            } else {
                writeln!(out, "{}", fmt(line))?;
            }
        }
        out.flush()?;
        if !follow {
            return Ok(Outcome::Ok);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn ts_short_full(m: &Map) -> String {
    m.get("ts").and_then(Value::as_str).unwrap_or("").to_owned()
}

pub fn run(ctx: &Ctx, cmd: SessionCmd) -> Result<Outcome> {
    match cmd {
        SessionCmd::List => list(ctx),
        SessionCmd::Events { target, follow } => {
            let dir = resolve(ctx, &target)?;
            let mut files = vec![dir.events_file()];
            if dir.decision_events_file() != dir.events_file() {
                files.push(dir.decision_events_file());
            }
            print_jsonl(ctx, &files, follow, format_event)
        }
        SessionCmd::Details { target, follow } => {
            let dir = resolve(ctx, &target)?;
            print_jsonl(ctx, &[dir.child.join("details.jsonl")], follow, detail_line)
        }
        SessionCmd::Snapshot { target } => snapshot(ctx, &resolve(ctx, &target)?),
        SessionCmd::Strategy { target, set, merge } => {
            strategy(ctx, &resolve(ctx, &target)?, set, merge)
        }
        SessionCmd::Decide {
            target,
            decision,
            agent_id,
            idempotency_key,
        } => decide(
            ctx,
            &resolve(ctx, &target)?,
            &decision,
            agent_id,
            idempotency_key,
        ),
        SessionCmd::Action {
            target,
            action,
            action_flag,
            action_file,
        } => group_action(
            ctx,
            &resolve(ctx, &target)?,
            action.or(action_flag),
            action_file,
        ),
        SessionCmd::Replay(bundle_cmd::ReplayArgs {
            bundle: Some(cmd), ..
        }) => bundle_cmd::run(ctx, cmd),
        SessionCmd::Replay(bundle_cmd::ReplayArgs { target, speed, .. }) => {
            match target.dir.as_ref().or(target.state_dir.as_ref()) {
                // A signed replay bundle: verified first, then replayed.
                Some(p) if p.is_file() && crate::session::bundle::is_bundle(p) => {
                    check_speed(speed)?;
                    bundle_cmd::replay_bundle(ctx, p, speed)
                }
                // A file: a werewolf game's .log (by its content).
                Some(p) if p.is_file() => {
                    check_speed(speed)?;
                    let tl = crate::werewolf::replay::load(p)?;
                    print_timeline(ctx, &tl, speed)
                }
                _ => replay(ctx, &resolve(ctx, &target)?, speed),
            }
        }
        SessionCmd::Whisper(args) => {
            let (named, text) = args.split()?;
            let dir = match named {
                Some(p) if StateDir::resolve(&p).is_none() && p.is_dir() => StateDir {
                    parent: None,
                    child: p,
                },
                named => resolve(
                    ctx,
                    &Target {
                        dir: named,
                        state_dir: None,
                    },
                )?,
            };
            super::whisper_cmd::run(ctx, &dir, &args, &text)
        }
        SessionCmd::Abort { target, reason } => abort(ctx, &resolve(ctx, &target)?, &reason),
        SessionCmd::Logs { target, out, tail } => logs(&resolve(ctx, &target)?, out, tail),
        SessionCmd::Get { session_id } => {
            super::community_cmd::remote(ctx, super::community_cmd::Remote::Get { session_id })
        }
        SessionCmd::Status { session_id, status } => super::community_cmd::remote(
            ctx,
            super::community_cmd::Remote::Status { session_id, status },
        ),
        SessionCmd::Result { session_id, winner } => super::community_cmd::remote(
            ctx,
            super::community_cmd::Remote::Result { session_id, winner },
        ),
        SessionCmd::TransportGet { session_id } => super::community_cmd::remote(
            ctx,
            super::community_cmd::Remote::Transport { session_id },
        ),
        SessionCmd::TransportUpdate { session_id, ticket } => super::community_cmd::remote(
            ctx,
            super::community_cmd::Remote::TransportSet { session_id, ticket },
        ),
    }
}

fn list(ctx: &Ctx) -> Result<Outcome> {
    let root = sessions_root(ctx)?;
    let mut rows: Vec<Map> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&root) {
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for d in dirs {
            let Some(meta) = run::check_daemon(&d) else {
                continue;
            };
            let g = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
            let mut row = crate::obj! {
                "dir" => d.display().to_string(), "role" => g("role"), "status" => g("status"), "pid" => g("pid"),
                "protocol" => g("protocol_name"), "control_mode" => g("local_control_mode"),
                "started_at" => g("started_at"), "end_reason" => g("end_reason"), "post_id" => g("post_id"),
                "phase" => run::phase_of(&d).map(Value::from).unwrap_or(Value::Null),
            };
            if let Some(w) = run::waiting(&d, &meta) {
                row.insert(
                    "waiting_seconds",
                    Value::from(w.waited(files::epoch_now()).floor()),
                );
            }
            rows.push(row);
        }
    }
    if ctx.json {
        ctx.print_json(&rows)?;
        return Ok(Outcome::Ok);
    }
    let mut out = std::io::stdout().lock();
    if rows.is_empty() {
        writeln!(out, "No sessions found in {}.", root.display())?;
    }
    for r in &rows {
        let s = |k: &str| {
            r.get(k)
                .filter(|v| !v.is_null())
                .map(Value::py_str)
                .unwrap_or_else(|| "?".into())
        };
        let waiting = r
            .get("waiting_seconds")
            .and_then(Value::as_f64)
            .map(|secs| {
                format!(
                    "  waiting {} for a guest (post_id {})",
                    duration_text(secs),
                    s("post_id")
                )
            })
            .unwrap_or_default();
        writeln!(
            out,
            "{:5}  {:8}  pid={:<8}  {:10} {:20}  {}{waiting}",
            s("role"),
            s("status"),
            s("pid"),
            s("control_mode"),
            s("protocol"),
            s("dir")
        )?;
    }
    Ok(Outcome::Ok)
}

/// A span of seconds for people: `45s`, `2m 05s`, `3h 07m`, `2d 04h`.
fn duration_text(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        3600..=86399 => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {:02}h", s / 86400, (s % 86400) / 3600),
    }
}

/// What a room's snapshot shows a person: the leader, the members, the
/// topic and the last messages of its view.
fn room_lines(out: &mut impl Write, g: &Map, view: Option<&Value>) -> Result<()> {
    let short = |v: Option<&Value>| -> String {
        v.and_then(Value::as_str)
            .map(|k| k.chars().take(12).collect())
            .unwrap_or_else(|| "?".into())
    };
    let leader = g
        .get("leader_public_key")
        .and_then(Value::as_str)
        .unwrap_or("");
    writeln!(
        out,
        "room: {} — leader {} (epoch {}), frame {}",
        g.get("group_id").map(Value::py_str).unwrap_or_default(),
        short(g.get("leader_public_key")),
        g.get("leader_epoch").map(Value::py_str).unwrap_or_default(),
        g.get("seq").map(Value::py_str).unwrap_or_default()
    )?;
    for m in g
        .get("members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let pk = m.get("public_key").and_then(Value::as_str).unwrap_or("");
        writeln!(
            out,
            "  seat {:>2}  {}  {}{}",
            m.get("seat").map(Value::py_str).unwrap_or_default(),
            short(m.get("public_key")),
            m.get("status").map(Value::py_str).unwrap_or_default(),
            if pk == leader { "  (leads)" } else { "" }
        )?;
    }
    let Some(view) = view else { return Ok(()) };
    if let Some(t) = view.get("topic").and_then(Value::as_str) {
        writeln!(out, "topic: {t}")?;
    }
    let msgs = view
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for m in &msgs[msgs.len().saturating_sub(10)..] {
        let text = m.get("text").map(Value::py_str).unwrap_or_default();
        if m.get("kind").and_then(Value::as_str) == Some("system") {
            writeln!(out, "  · {text}")?;
        } else {
            writeln!(
                out,
                "  seat {}: {text}",
                m.get("seat").map(Value::py_str).unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

fn snapshot(ctx: &Ctx, dir: &StateDir) -> Result<Outcome> {
    let snap = files::read_json_object(&dir.child.join("snapshot.json")).unwrap_or_default();
    if ctx.json {
        writeln!(std::io::stdout(), "{}", files::pretty(&Value::Object(snap)))?;
        return Ok(Outcome::Ok);
    }
    let mut out = std::io::stdout().lock();
    if snap.is_empty() {
        writeln!(out, "(snapshot not initialized)")?;
        return Ok(Outcome::Ok);
    }
    let s = |k: &str| snap.get(k).map(Value::py_str);
    writeln!(out, "phase: {}", s("phase").unwrap_or_else(|| "?".into()))?;
    writeln!(out, "role: {}", s("role").unwrap_or_else(|| "?".into()))?;
    // A host still waiting for its guest: its invitation and how long.
    let waiting = dir.parent.as_deref().and_then(|p| {
        let meta = run::check_daemon(p)?;
        run::waiting(p, &meta)
    });
    if let Some(w) = waiting {
        writeln!(out, "post_id: {}", w.post_id)?;
        writeln!(
            out,
            "waiting: {} for a guest (palaver join {})",
            duration_text(w.waited(files::epoch_now())),
            w.post_id
        )?;
    }
    if let Some(p) = s("protocol_name") {
        writeln!(out, "protocol: {p}")?;
    }
    if let Some(m) = s("control_mode") {
        writeln!(out, "control_mode: {m}")?;
    }
    if let Some(g) = snap.get("group").and_then(Value::as_object) {
        room_lines(&mut out, g, snap.get("group_view"))?;
    }
    if let Some(score) = snap.get("score") {
        writeln!(
            out,
            "score: {}",
            crate::json::canonical::to_string_ordered(score)
        )?;
    }
    if let Some(r) = s("round") {
        writeln!(out, "round: {r}")?;
    }
    if let Some(sum) = snap
        .get("last_event")
        .and_then(|l| l.get("summary"))
        .and_then(Value::as_str)
    {
        writeln!(out, "last_event: {sum}")?;
    }
    if let Some(t) = snap
        .get("timing")
        .and_then(Value::as_object)
        .filter(|t| !t.is_empty())
    {
        let left = t
            .get("deadline_at_epoch")
            .and_then(|v| v.py_number())
            .map(|n| n.to_string())
            .unwrap_or_default();
        writeln!(
            out,
            "decision window: {}={} (deadline at epoch {left})",
            t.get("match_key").map(Value::py_str).unwrap_or_default(),
            t.get("match_value").map(Value::py_str).unwrap_or_default()
        )?;
    }
    if let Some(u) = s("updated_at") {
        writeln!(out, "updated_at: {u}")?;
    }
    Ok(Outcome::Ok)
}

fn parse_object(raw: &str, what: &str) -> Result<Map> {
    match json::parse_str(raw).with_context(|| format!("{what}: invalid JSON"))? {
        Value::Object(m) => Ok(m),
        other => bail!("{what} must be a JSON object, not {}", other.type_name()),
    }
}

fn strategy(
    ctx: &Ctx,
    dir: &StateDir,
    set: Option<String>,
    merge: Option<String>,
) -> Result<Outcome> {
    let file = StrategyFile::in_dir(&dir.child);
    let meta = Some(crate::obj! { "origin" => "cli" });
    let current = match (set, merge) {
        (Some(s), _) => file.set(parse_object(&s, "--set")?, meta)?,
        (None, Some(m)) => file.merge(parse_object(&m, "--merge")?, meta)?,
        (None, None) => file.read(),
    };
    let text = files::pretty(&Value::Object(current.clone()));
    if current.is_empty() && !ctx.json {
        writeln!(std::io::stdout(), "(strategy is empty)")?;
    } else {
        writeln!(std::io::stdout(), "{text}")?;
    }
    Ok(Outcome::Ok)
}

fn decide(
    ctx: &Ctx,
    dir: &StateDir,
    raw: &str,
    agent_id: Option<String>,
    idempotency_key: Option<String>,
) -> Result<Outcome> {
    let body = parse_object(raw, "--decision")?;
    let opts = SubmitOptions {
        origin: "cli".into(),
        agent_id,
        idempotency_key,
        require_match_key: false,
    };
    let r = submit(&dir.child, body.clone(), &opts)
        .with_context(|| format!("writing to {}", dir.decision_dir().display()))?;
    #[derive(Serialize)]
    struct Rejected<'a> {
        status: &'a str,
        reason: Option<&'a str>,
        match_key: Option<&'a str>,
        match_value: &'a Option<Value>,
    }
    if !r.ok {
        let out = Rejected {
            status: r.status,
            reason: r.reason,
            match_key: r.match_key.as_deref(),
            match_value: &r.match_value,
        };
        writeln!(std::io::stdout(), "{}", serde_json::to_string(&out)?)?;
        return Ok(Outcome::Rejected);
    }
    #[derive(Serialize)]
    struct Ok<'a> {
        status: &'a str,
        decision: &'a Map,
        decision_id: Option<&'a str>,
        match_key: Option<&'a str>,
        match_value: &'a Option<Value>,
    }
    let _ = ctx;
    let out = Ok {
        status: "ok",
        decision: &body,
        decision_id: r.decision_id.as_deref(),
        match_key: r.match_key.as_deref(),
        match_value: &r.match_value,
    };
    writeln!(std::io::stdout(), "{}", serde_json::to_string(&out)?)?;
    Ok(Outcome::Ok)
}

fn abort(ctx: &Ctx, dir: &StateDir, reason: &str) -> Result<Outcome> {
    let Some(file) = dir.session_file() else {
        bail!(
            "{} has no session.json: only a daemon session can be aborted",
            dir.child.display()
        );
    };
    let meta =
        files::read_json_object(&file).ok_or_else(|| anyhow!("cannot read {}", file.display()))?;
    let pid = meta.get("pid").and_then(Value::as_i64).unwrap_or(0);
    let mut killed = false;
    let mut warning = None;
    if pid > 0 && run::pid_alive(pid as u32) {
        match nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        ) {
            Ok(()) => killed = true,
            Err(e) => warning = Some(e.to_string()),
        }
    }
    let parent = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
    StateSink::new(StateDir {
        parent: Some(parent.clone()),
        child: dir.child.clone(),
    })
    .event(
        "session_ended",
        crate::obj! { "reason" => reason, "pid" => pid, "killed" => killed },
        Some(format!("Session aborted by agent ({reason})")),
    );
    update_session_file(
        &file,
        crate::obj! { "status" => "aborted", "aborted_at" => files::epoch_now(), "abort_reason" => reason },
    )?;
    let mut out = crate::obj! { "status" => "aborted", "pid" => pid, "killed" => killed, "reason" => reason, "state_dir" => parent.display().to_string() };
    if let Some(w) = warning {
        out.insert("warning", Value::from(w));
    }
    let _ = ctx;
    writeln!(
        std::io::stdout(),
        "{}",
        crate::json::canonical::to_string_ordered(&Value::Object(out))
    )?;
    Ok(Outcome::Ok)
}

fn logs(dir: &StateDir, out_log: bool, tail: usize) -> Result<Outcome> {
    let parent: &Path = dir.parent.as_deref().unwrap_or(&dir.child);
    // A daemon gone without saying so is marked here too (`daemon_died`).
    if let Some(meta) = run::check_daemon(parent) {
        let status = meta.get("status").and_then(Value::as_str).unwrap_or("");
        let pid = meta.get("pid").and_then(Value::as_i64).unwrap_or(0);
        if pid > 0 && matches!(status, "crashed" | "stopped") && !run::pid_alive(pid as u32) {
            eprintln!("palaver: the daemon (pid {pid}) is not running: {status}");
        }
    }
    let file = parent.join(if out_log {
        "daemon.out.log"
    } else {
        "daemon.err.log"
    });
    let mut out = std::io::stdout().lock();
    let Ok(text) = std::fs::read(&file) else {
        writeln!(
            out,
            "(no {} at {})",
            file.file_name().and_then(|n| n.to_str()).unwrap_or(""),
            parent.display()
        )?;
        return Ok(Outcome::Ok);
    };
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    for l in &lines[lines.len().saturating_sub(tail)..] {
        writeln!(out, "{l}")?;
    }
    Ok(Outcome::Ok)
}

/// `session action`: appends one action to a room session's
/// group-actions.jsonl.
fn group_action(
    ctx: &Ctx,
    dir: &StateDir,
    text: Option<String>,
    file: Option<PathBuf>,
) -> Result<Outcome> {
    let (raw, source) = match (text, file) {
        (Some(t), _) => (t, "the action".to_owned()),
        (None, Some(f)) => {
            let meta = std::fs::metadata(&f).with_context(|| format!("reading {}", f.display()))?;
            if !meta.is_file() {
                bail!("--action-file {} is not a regular file", f.display());
            }
            if meta.len() > 1024 * 1024 {
                bail!(
                    "--action-file {} is over the 1 MiB input limit",
                    f.display()
                );
            }
            let t =
                std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            (t, format!("--action-file {}", f.display()))
        }
        (None, None) => bail!("give the action as JSON (or --action-file FILE)"),
    };
    let action =
        crate::json::parse_str(raw.trim()).map_err(|e| anyhow!("{source} is not JSON: {e}"))?;
    let root = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
    let entry = crate::services::group::outbox::append_action(&root, &action)
        .map_err(|e| anyhow!("{source}: {e}"))?;
    let out = Value::Object(
        crate::obj! { "status" => "ok", "action" => entry.get("action").cloned().unwrap_or(Value::Null) },
    );
    if ctx.json {
        ctx.print_json(&out)?;
    } else {
        println!(
            "queued in {}: {}",
            root.join(crate::services::group::outbox::ACTIONS_FILE)
                .display(),
            crate::json::canonical::to_string_ordered(entry.get("action").unwrap_or(&Value::Null))
        );
    }
    Ok(Outcome::Ok)
}
