//! `palaver session whisper`: a coach's note to its own side, read with the
//! protocol's decision schema and written where the running session (or the
//! reference client's) picks it up.

use super::{Ctx, Outcome};
use crate::engine::whisper::{Intent, Schema, Scope};
use crate::json::{Map, Value};
use crate::session::whisper::{self, Whispered};
use crate::session::{StateDir, files};
use anyhow::{Context, Result, bail};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct WhisperArgs {
    /// The state dir, then the text (`DIR TEXT`); with --state-dir or
    /// --text, the one positional is the other; the text alone goes to the
    /// newest session.
    #[arg(value_name = "DIR|TEXT", num_args = 0..=2)]
    pub positional: Vec<String>,
    /// The session's state dir (the reference client's spelling).
    #[arg(long = "state-dir", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The whisper (the reference client's spelling).
    #[arg(long = "text", value_name = "TEXT")]
    pub text: Option<String>,
    /// Who is whispering; only a user whisper steers the side.
    #[arg(long, default_value = "user", value_parser = ["user", "agent", "system"])]
    pub role: String,
    /// Read the decision schema from this protocol (a dir with spec.json);
    /// default: the protocol in the session's session.json.
    #[arg(long = "protocol-dir", value_name = "DIR")]
    pub protocol_dir: Option<PathBuf>,
    #[arg(long = "agent-id", value_name = "ID")]
    pub agent_id: Option<String>,
}

impl WhisperArgs {
    /// (the named dir, the text).
    pub fn split(&self) -> Result<(Option<PathBuf>, String)> {
        let mut pos = self.positional.clone();
        let text = match &self.text {
            Some(t) => t.clone(),
            None => match pos.pop() {
                Some(t) => t,
                None => bail!("no whisper text given"),
            },
        };
        let dir = match (&self.state_dir, pos.as_slice()) {
            (Some(d), []) => Some(d.clone()),
            (None, [d]) => Some(PathBuf::from(d)),
            (None, []) => None,
            _ => bail!("give the state dir once and the text once"),
        };
        Ok((dir, text))
    }
}

fn spec_name(dir: &Path) -> Option<String> {
    let spec = files::read_json_object(&dir.join("spec.json"))?;
    spec.get("name")?.as_str().map(str::to_owned)
}

/// The protocol's schema: from --protocol-dir, else session.json's
/// protocol_name or protocol_dir (parent first, then the engine dir), else
/// the snapshot's protocol_name (a bare engine dir, as the reference's
/// `protocol test` leaves).
pub fn schema_of(dir: &StateDir, protocol_dir: Option<&Path>) -> Option<Schema> {
    if let Some(p) = protocol_dir {
        let by_name = spec_name(p).and_then(|n| Schema::for_protocol(&n));
        let by_dir = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(Schema::for_protocol);
        return by_name.or(by_dir);
    }
    let sessions = [dir.session_file(), Some(dir.child.join("session.json"))];
    for s in sessions.into_iter().flatten() {
        let Some(meta) = files::read_json_object(&s) else {
            continue;
        };
        if let Some(n) = meta.get("protocol_name").and_then(Value::as_str) {
            return Schema::for_protocol(n);
        }
        if let Some(pd) = meta.get("protocol_dir").and_then(Value::as_str) {
            return spec_name(Path::new(pd)).and_then(|n| Schema::for_protocol(&n));
        }
    }
    files::read_json_object(&dir.child.join("snapshot.json"))
        .and_then(|snap| {
            snap.get("protocol_name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .and_then(|n| Schema::for_protocol(&n))
}

/// One line for people: what the whisper was understood as.
pub fn describe(w: &Whispered) -> String {
    let Some(intent) = &w.intent else {
        return "not understood as a move: kept as a hint (strategy.operator_hint)".into();
    };
    let what = what(intent);
    let applied = w.applied.as_ref();
    let get = |k: &str| {
        applied
            .and_then(|a| a.get(k))
            .map(Value::py_str)
            .unwrap_or_default()
    };
    match w.ack_status {
        "strategy_active" | "policy_active" => {
            format!("from now on: {what} (strategy.json)")
        }
        "decision_queued" => format!(
            "once: {what} for {}={} (decision {})",
            get("match_key"),
            get("match_value"),
            get("decision_id")
        ),
        "intent_queued" => format!(
            "once: {what}, {} window (queued as {})",
            intent.target.as_str(),
            get("intent_id")
        ),
        "rejected_finalized" => format!("once: {what}, but that window is already closed"),
        other => format!("{what}: {other}"),
    }
}

fn what(i: &Intent) -> String {
    match (&i.policy, &i.value) {
        (Some(p), _) => format!("policy {p}"),
        (None, Some((f, v))) => format!("{f} {}", v.py_str()),
        (None, None) if i.scope == Scope::Once => "a one-shot move".into(),
        (None, None) => "a move".into(),
    }
}

/// Runs the command on a resolved state dir.
pub fn run(ctx: &Ctx, dir: &StateDir, args: &WhisperArgs, text: &str) -> Result<Outcome> {
    let schema = schema_of(dir, args.protocol_dir.as_deref());
    let w = whisper::send(
        &dir.child,
        text,
        &args.role,
        "cli",
        args.agent_id.as_deref(),
        schema.as_ref(),
    )
    .with_context(|| format!("whispering to {}", dir.child.display()))?;
    let mut out = std::io::stdout();
    let opt = |m: &Option<Map>| m.clone().map(Value::Object).unwrap_or(Value::Null);
    if ctx.json {
        let v = crate::obj! {
            "entry" => w.entry.clone(), "ack_status" => w.ack_status, "applied" => opt(&w.applied),
            "intent" => w.intent.as_ref().map(|i| Value::Object(i.to_json())).unwrap_or(Value::Null),
        };
        writeln!(out, "{}", files::pretty(&Value::Object(v)))?;
        return Ok(Outcome::Ok);
    }
    let id = w.entry.get("id").map(Value::py_str).unwrap_or_default();
    writeln!(out, "whisper [{id}] ack={}", w.ack_status)?;
    if args.role == "user" {
        writeln!(out, "  {}", describe(&w))?;
    } else {
        writeln!(out, "  recorded ({} whispers do not steer)", args.role)?;
    }
    if let Some(a) = &w.applied {
        writeln!(
            out,
            "  applied: {}",
            crate::json::canonical::to_string_ordered(&Value::Object(a.clone()))
        )?;
    }
    Ok(Outcome::Ok)
}
