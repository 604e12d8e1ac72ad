//! `palaver protocol …` and `palaver validate`.

use super::{Ctx, Outcome, ValidateArgs};
use crate::json::{self, Value};
use crate::library::{self, Entry, Library, Source};
use crate::spec::{self, Spec, lint};
use anyhow::{Context, Result, bail};
use clap::Subcommand;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Subcommand)]
pub enum ProtocolCmd {
    /// Print the protocol_id of a spec: SHA-256 of its canonical contract.
    ///
    /// Only the contract subset is hashed (messages, rules, choices,
    /// commit_reveal, normalised flow, parameters without defaults, timing);
    /// names and descriptions can change without changing the id. An unknown
    /// spec_version is warned about on stderr, and the id is still printed.
    Hash {
        /// spec.json, a directory holding one, or a library alias / protocol_id.
        spec: String,
    },
    /// Lint a spec more strictly than the reference does before using it.
    ///
    /// Reports every problem with a JSON path: message names, directions,
    /// field types and their parameters, the action enum of each message,
    /// ambiguous lookups, flow exchanges, parameter defaults. Exits 1 when
    /// there are errors (warnings alone pass).
    Check {
        /// spec.json, a directory holding one, or a library alias / protocol_id.
        spec: String,
    },
    /// List the protocols in the library (bundled and installed).
    List,
    /// Show a protocol: identity, flow, messages, parameters and profiles.
    Show {
        /// Alias (e.g. rps-v1) or protocol_id (a unique prefix of 8+ hex digits works).
        protocol: String,
    },
    /// Play a whole session in one process, bot against bot, and print the
    /// transcript and outcome; exit 0 only when both sides completed.
    ///
    /// With --adversarial, replay the catalogue of misbehaving peers
    /// (malformed, invalid, out-of-turn, forged, oversized, silent…) against
    /// each side and report that every case ended cleanly with a reason.
    Test(super::test_cmd::TestArgs),
    /// Start a protocol directory from a spec: spec.json, a Python hooks
    /// program with one stub per hook its flow mode uses, and a sidecar.
    ///
    /// `protocol test`, host and join refuse to run the untouched skeleton
    /// and list the hooks still to implement.
    Scaffold {
        /// spec.json, a directory holding one, or a library alias / protocol_id.
        spec: String,
        /// Directory to create.
        dir: PathBuf,
        /// Overwrite an existing spec.json / hooks.py there.
        #[arg(long)]
        force: bool,
    },
    /// Print the directory of a protocol in the data dir's library,
    /// installing the bundled protocols there first if needed.
    Path {
        /// Alias (e.g. rps-v1) or protocol_id.
        protocol: String,
    },
    /// Fetch a protocol from the community server into the library.
    ///
    /// The spec must hash to the protocol_id asked for, or nothing is
    /// installed. Then it says what runs it: palaver's native hooks, the
    /// protocol dir's hooks program, or, when there is none, a hooks
    /// scaffold written next to the spec (implement it; docs/hooks.md). A
    /// hooks.py written for the reference client can be dropped there in
    /// its place. `join` does the same by itself for an unknown protocol.
    Fetch {
        /// The full protocol_id (64 hex digits).
        protocol_id: String,
    },
    /// Browse the community's protocol directory, newest first; -q keeps
    /// those whose name or description holds the text (matched here, page
    /// by page: the server is never asked to search).
    ///
    /// With --fetch and exactly one match, installs it as `protocol fetch`
    /// does. Examples: palaver protocol discover; palaver protocol discover
    /// -q poker --max-pages 10 --fetch
    Discover(DiscoverArgs),
    /// Publish a protocol on the community server (needs `palaver register`
    /// first). Registering the same contract again is not an error.
    Register {
        /// spec.json, a directory holding one, or a library alias / protocol_id.
        spec: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct DiscoverArgs {
    /// Keep protocols whose name or description holds this text (any case).
    #[arg(short = 'q', long = "query", value_name = "TEXT")]
    query: Option<String>,
    /// Protocols per page (1–100).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
    limit: u32,
    /// Pages to read at most (1–50; default 1, or 5 with -q).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50))]
    max_pages: Option<u32>,
    /// Start where a previous listing stopped (its next_cursor).
    #[arg(long)]
    cursor: Option<String>,
    /// Install the match when -q finds exactly one.
    #[arg(long)]
    fetch: bool,
}

pub fn run(ctx: &Ctx, cmd: ProtocolCmd) -> Result<Outcome> {
    match cmd {
        ProtocolCmd::Hash { spec } => hash(ctx, &spec),
        ProtocolCmd::Check { spec } => check(ctx, &spec),
        ProtocolCmd::List => list(ctx),
        ProtocolCmd::Show { protocol } => show(ctx, &protocol),
        ProtocolCmd::Path { protocol } => path(ctx, &protocol),
        ProtocolCmd::Test(args) => super::test_cmd::run(ctx, args),
        ProtocolCmd::Scaffold { spec, dir, force } => scaffold(ctx, &spec, &dir, force),
        ProtocolCmd::Fetch { protocol_id } => fetch(ctx, &protocol_id),
        ProtocolCmd::Discover(a) => discover(ctx, a),
        ProtocolCmd::Register { spec } => {
            let (label, text) = spec_source(ctx, &spec)?;
            super::community_cmd::protocol_register(ctx, &text, &label)
        }
    }
}

/// What fetching a protocol did.
enum Got {
    /// It was in the library already, under this alias.
    Had(String),
    New(crate::services::protocol::Fetched),
}

impl Got {
    fn json(&self, id: &str) -> Result<serde_json::Value> {
        Ok(match self {
            Got::Had(alias) => {
                serde_json::json!({ "protocol_id": id, "alias": alias, "new": false })
            }
            Got::New(f) => serde_json::to_value(f)?,
        })
    }

    fn print(&self, id: &str) {
        match self {
            Got::Had(alias) => println!("{id} is in the library already, as {alias}"),
            Got::New(f) => {
                println!(
                    "installed {} as {} in {}",
                    f.installed.protocol_id,
                    f.installed.alias,
                    f.installed.dir.display()
                );
                println!("{}", f.next.explain(&f.installed.alias));
            }
        }
    }
}

/// Installs protocol `id` from the community unless the library has it.
fn get_protocol(ctx: &Ctx, id: &str) -> Result<Got> {
    let data_dir = ctx.data_dir()?;
    if let Ok(e) = library(ctx)?.resolve(id) {
        return Ok(Got::Had(e.alias.clone()));
    }
    let c = super::community_cmd::client(ctx)?;
    let f = super::community_cmd::runtime()?
        .block_on(crate::services::protocol::fetch(&c, &data_dir, id))
        .with_context(|| format!("fetching protocol {id}"))?;
    Ok(Got::New(f))
}

fn fetch(ctx: &Ctx, id: &str) -> Result<Outcome> {
    let id = id.trim().to_ascii_lowercase();
    if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(
            "'{id}' is not a protocol_id: expected 64 hex digits (as `palaver browse` shows them)"
        );
    }
    let got = get_protocol(ctx, &id)?;
    if ctx.json {
        ctx.print_json(&got.json(&id)?)?;
    } else {
        got.print(&id);
    }
    Ok(Outcome::Ok)
}

/// `protocol discover`: the directory, filtered here; `--fetch` installs a
/// single match.
fn discover(ctx: &Ctx, a: DiscoverArgs) -> Result<Outcome> {
    let query = a.query.as_deref().filter(|q| !q.is_empty());
    let max_pages = a.max_pages.unwrap_or(if query.is_some() { 5 } else { 1 });
    let c = super::community_cmd::client(ctx)?;
    let d = super::community_cmd::runtime()?
        .block_on(crate::community::social::discover(
            &c,
            query,
            a.limit,
            max_pages,
            a.cursor.as_deref(),
        ))
        .context("protocol discover")?;
    let single = match (&d.results[..], a.fetch, query) {
        ([one], true, Some(_)) => {
            let id = one.protocol_id.to_ascii_lowercase();
            let valid = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
            if !valid {
                bail!(
                    "the directory lists {:?}, which is not a protocol_id",
                    one.protocol_id
                );
            }
            Some((get_protocol(ctx, &id)?, id))
        }
        _ => None,
    };
    if ctx.json {
        let mut v = serde_json::to_value(&d)?;
        if let Some((got, id)) = &single {
            v["fetched"] = got.json(id)?;
        }
        ctx.print_json(&v)?;
        return Ok(Outcome::Ok);
    }
    let mut out = std::io::stdout().lock();
    if d.results.is_empty() {
        match query {
            Some(q) => writeln!(out, "No protocols matching {q:?}.")?,
            None => writeln!(out, "No protocols on this page.")?,
        }
    }
    for p in &d.results {
        let name: String = p.name.chars().take(24).collect();
        let desc: String = p.description.chars().take(60).collect();
        writeln!(out, "  {name:<24} {}  {desc}", p.protocol_id)?;
    }
    if !d.results.is_empty() {
        writeln!(
            out,
            "({} protocol(s){})",
            d.results.len(),
            query
                .map(|q| format!(" matching {q:?}"))
                .unwrap_or_default()
        )?;
    }
    match (&d.next_cursor, query) {
        (Some(_), Some(_)) => writeln!(
            out,
            "(searched the {} newest page(s); older ones were not: use --max-pages N to search further)",
            d.pages
        )?,
        (Some(next), None) => writeln!(out, "more: palaver protocol discover --cursor {next}")?,
        (None, _) => {}
    }
    if a.fetch {
        match (query, d.results.len()) {
            (None, _) => writeln!(
                out,
                "--fetch needs -q to name a single protocol; nothing fetched"
            )?,
            (Some(_), 1) => {}
            (Some(_), n) => writeln!(
                out,
                "--fetch: {n} matches, nothing fetched; narrow -q or run palaver protocol fetch <protocol_id>"
            )?,
        }
    }
    drop(out);
    if let Some((got, id)) = &single {
        got.print(id);
    }
    Ok(Outcome::Ok)
}

/// The library seen from this invocation: bundled, plus the data dir's
/// index when there is a data dir.
fn library(ctx: &Ctx) -> Result<Library> {
    let dir = ctx.data_dir().ok();
    Ok(Library::open(dir.as_deref())?)
}

/// A spec document named on the command line.
struct Doc {
    /// What to call it in messages.
    label: String,
    value: Value,
}

fn looks_like_path(arg: &str) -> bool {
    arg.contains('/') || arg.contains('\\') || arg.ends_with(".json") || arg == "." || arg == ".."
}

fn load_doc(ctx: &Ctx, arg: &str) -> Result<Doc> {
    let p = Path::new(arg);
    if p.exists() || looks_like_path(arg) {
        let file: PathBuf = if p.is_dir() {
            p.join("spec.json")
        } else {
            p.to_owned()
        };
        let value = spec::read_json_file(&file)?;
        return Ok(Doc {
            label: file.display().to_string(),
            value,
        });
    }
    let lib = library(ctx)?;
    let e = lib.resolve(arg)?;
    let text = lib.spec_text(e)?;
    let value = json::parse_str(&text).with_context(|| format!("{}: invalid JSON", e.alias))?;
    Ok(Doc {
        label: e.alias.clone(),
        value,
    })
}

/// The exact text of a spec named on the command line.
fn spec_source(ctx: &Ctx, arg: &str) -> Result<(String, String)> {
    let p = Path::new(arg);
    if p.exists() || looks_like_path(arg) {
        let file: PathBuf = if p.is_dir() {
            p.join("spec.json")
        } else {
            p.to_owned()
        };
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        return Ok((file.display().to_string(), text));
    }
    let lib = library(ctx)?;
    let e = lib.resolve(arg)?;
    Ok((e.alias.clone(), lib.spec_text(e)?))
}

fn scaffold(ctx: &Ctx, arg: &str, dir: &Path, force: bool) -> Result<Outcome> {
    let (label, text) = spec_source(ctx, arg)?;
    let spec = Spec::from_json_str(&text).with_context(|| label.clone())?;
    let written = crate::engine::scaffold::scaffold(dir, &text, &spec, force)?;
    if ctx.json {
        #[derive(Serialize)]
        struct Out<'a> {
            dir: &'a Path,
            protocol_id: &'a str,
            flow_mode: &'a str,
            files: &'a [PathBuf],
        }
        ctx.print_json(&Out {
            dir,
            protocol_id: spec.protocol_id(),
            flow_mode: spec.flow_mode(),
            files: &written,
        })?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "Scaffolded {} ({}) in {}:",
            spec.name().unwrap_or(&label),
            spec.flow_mode(),
            dir.display()
        )?;
        for f in &written {
            writeln!(out, "  {}", f.display())?;
        }
        writeln!(
            out,
            "Implement the hooks in hooks.py (docs/hooks.md), then: palaver protocol test {}",
            dir.display()
        )?;
    }
    Ok(Outcome::Ok)
}

fn hash(ctx: &Ctx, arg: &str) -> Result<Outcome> {
    let doc = load_doc(ctx, arg)?;
    let Some(map) = doc.value.as_object() else {
        bail!(
            "{}: spec must be a JSON object, found {}",
            doc.label,
            doc.value.type_name()
        );
    };
    let id = spec::protocol_id_of(map);
    let warning = spec::spec_version_problem(map);
    if let Some(w) = &warning {
        eprintln!("[warning] {w}");
    }
    if ctx.json {
        #[derive(Serialize)]
        struct Out<'a> {
            protocol_id: &'a str,
            spec: &'a str,
            warning: Option<&'a str>,
        }
        ctx.print_json(&Out {
            protocol_id: &id,
            spec: &doc.label,
            warning: warning.as_deref(),
        })?;
    } else {
        writeln!(std::io::stdout(), "{id}")?;
    }
    Ok(Outcome::Ok)
}

fn check(ctx: &Ctx, arg: &str) -> Result<Outcome> {
    let doc = load_doc(ctx, arg)?;
    let findings = lint::check(&doc.value);
    let errors = findings
        .iter()
        .filter(|f| f.severity == lint::Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    if ctx.json {
        #[derive(Serialize)]
        struct Out<'a> {
            spec: &'a str,
            ok: bool,
            protocol_id: Option<String>,
            errors: usize,
            warnings: usize,
            findings: &'a [lint::Finding],
        }
        let protocol_id = doc.value.as_object().map(spec::protocol_id_of);
        ctx.print_json(&Out {
            spec: &doc.label,
            ok: errors == 0,
            protocol_id,
            errors,
            warnings,
            findings: &findings,
        })?;
    } else {
        let mut out = std::io::stdout().lock();
        for f in &findings {
            let sev = match f.severity {
                lint::Severity::Error => "error",
                lint::Severity::Warning => "warning",
            };
            writeln!(out, "{sev:<7} {}: {}", f.path, f.message)?;
        }
        if findings.is_empty() {
            writeln!(out, "OK: {} has no problems", doc.label)?;
        } else {
            writeln!(
                out,
                "{}: {errors} error(s), {warnings} warning(s)",
                doc.label
            )?;
        }
    }
    Ok(if errors == 0 {
        Outcome::Ok
    } else {
        Outcome::Rejected
    })
}

fn profile_names(e: &Entry) -> Vec<String> {
    e.profiles
        .as_object()
        .map(|m| m.keys().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn list(ctx: &Ctx) -> Result<Outcome> {
    let lib = library(ctx)?;
    if ctx.json {
        #[derive(Serialize)]
        struct Listed<'a> {
            #[serde(flatten)]
            entry: &'a Entry,
            /// palaver has its own rules for it (no hooks program needed).
            plays_natively: bool,
        }
        let listed: Vec<Listed> = lib
            .entries()
            .iter()
            .map(|entry| Listed {
                entry,
                plays_natively: crate::protocols::plays_natively(&entry.protocol_id),
            })
            .collect();
        ctx.print_json(&listed)?;
        return Ok(Outcome::Ok);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<24} {:<12} {:<22} {:<6} {:<30} NAME",
        "ALIAS", "ID", "FLOW", "PLAYS", "PROFILES"
    )?;
    for e in lib.entries() {
        let profiles = profile_names(e).join(",");
        let plays = if crate::protocols::plays_natively(&e.protocol_id) {
            "yes"
        } else {
            "no"
        };
        writeln!(
            out,
            "{:<24} {:<12} {:<22} {:<6} {:<30} {}",
            e.alias,
            &e.protocol_id[..e.protocol_id.len().min(12)],
            e.flow_mode,
            plays,
            truncate(&profiles, 30),
            e.name
        )?;
    }
    Ok(Outcome::Ok)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}

fn show(ctx: &Ctx, key: &str) -> Result<Outcome> {
    let lib = library(ctx)?;
    let e = lib.resolve(key)?;
    let spec = lib.load(e)?;
    if ctx.json {
        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(flatten)]
            entry: &'a Entry,
            spec: &'a json::Map,
        }
        ctx.print_json(&Out {
            entry: e,
            spec: spec.doc(),
        })?;
        return Ok(Outcome::Ok);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{} ({})", e.name, e.alias)?;
    writeln!(out, "  protocol_id  {}", e.protocol_id)?;
    writeln!(out, "  flow         {}", spec.flow_mode())?;
    writeln!(out, "  type         {}", e.kind)?;
    if !e.description.is_empty() {
        writeln!(out, "  description  {}", e.description)?;
    }
    if let Some(t) = spec.get("timing").and_then(Value::as_object) {
        let f = |k: &str| t.get(k).map(|v| v.py_str()).unwrap_or_else(|| "-".into());
        writeln!(
            out,
            "  timing       mode {}, think {}..{} s",
            f("mode"),
            f("min_think_seconds"),
            f("max_think_seconds")
        )?;
    }
    if let Source::Installed(p) = &e.source {
        writeln!(out, "  file         {}", p.display())?;
    }
    writeln!(out, "\nmessages")?;
    for m in spec
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = m.get("name").map(Value::py_str).unwrap_or_default();
        let dir = m.get("direction").map(Value::py_str).unwrap_or_default();
        let fields: Vec<String> = m
            .get("fields")
            .and_then(Value::as_object)
            .map(|f| {
                f.iter()
                    .filter(|(k, _)| *k != "action")
                    .map(|(k, s)| {
                        let t = s.get("type").map(Value::py_str).unwrap_or_default();
                        let req = if matches!(s.get("required"), Some(Value::Bool(true))) {
                            ""
                        } else {
                            "?"
                        };
                        format!("{k}{req}:{t}")
                    })
                    .collect()
            })
            .unwrap_or_default();
        writeln!(out, "  {name:<22} {dir:<14} {}", fields.join(" "))?;
    }
    if let Some(params) = spec
        .get("parameters")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty())
    {
        writeln!(out, "\nparameters")?;
        for (k, p) in params.iter() {
            let mut desc = p.get("type").map(Value::py_str).unwrap_or_default();
            if let (Some(lo), Some(hi)) = (p.get("min"), p.get("max")) {
                desc.push_str(&format!(" {}..{}", lo.py_str(), hi.py_str()));
            }
            if let Some(vs) = p.get("values").and_then(Value::as_array) {
                let vs: Vec<String> = vs.iter().map(Value::py_str).collect();
                desc.push_str(&format!(" {}", vs.join("|")));
            }
            if let Some(d) = p.get("default") {
                desc.push_str(&format!(
                    " (default {})",
                    crate::json::canonical::to_string(d)
                ));
            }
            writeln!(out, "  {k:<22} {desc}")?;
        }
    }
    if let Some(profiles) = e.profiles.as_object().filter(|p| !p.is_empty()) {
        writeln!(out, "\nprofiles")?;
        for (name, p) in profiles.iter() {
            let marker = if e.default_profile.as_deref() == Some(name) {
                "*"
            } else {
                " "
            };
            let opts = p
                .get("options")
                .map(crate::json::canonical::to_string)
                .unwrap_or_default();
            writeln!(out, " {marker}{name:<22} {opts}")?;
        }
    }
    Ok(Outcome::Ok)
}

fn path(ctx: &Ctx, key: &str) -> Result<Outcome> {
    let dir = ctx.data_dir()?;
    let lib = Library::open(Some(&dir))?;
    let e = lib.resolve(key)?;
    let spec_dir = match &e.source {
        Source::Bundled => library::install_bundled(&dir)
            .with_context(|| format!("installing the bundled protocols into {}", dir.display()))?
            .join(&e.path),
        Source::Installed(p) => p.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    if ctx.json {
        #[derive(Serialize)]
        struct Out<'a> {
            alias: &'a str,
            protocol_id: &'a str,
            path: &'a Path,
            spec: PathBuf,
        }
        ctx.print_json(&Out {
            alias: &e.alias,
            protocol_id: &e.protocol_id,
            spec: spec_dir.join("spec.json"),
            path: &spec_dir,
        })?;
    } else {
        writeln!(std::io::stdout(), "{}", spec_dir.display())?;
    }
    Ok(Outcome::Ok)
}

pub fn validate(ctx: &Ctx, args: ValidateArgs) -> Result<Outcome> {
    let doc = load_doc(ctx, &args.spec)?;
    let label = doc.label.clone();
    let spec = Spec::from_value(doc.value).with_context(|| label.clone())?;
    let (what, result) = if let Some(raw) = &args.options {
        let v = json::parse_str(raw).context("--options: invalid JSON")?;
        ("options", spec.validate_options(&v))
    } else {
        let raw = args.message.as_deref().unwrap_or_default();
        let v = json::parse_str(raw).context("message: invalid JSON")?;
        (
            "message",
            spec.validate_message(&v, args.direction.as_deref(), args.message_name.as_deref()),
        )
    };
    if ctx.json {
        #[derive(Serialize)]
        struct Out<'a> {
            ok: bool,
            kind: &'a str,
            protocol_id: &'a str,
            error: Option<String>,
        }
        ctx.print_json(&Out {
            ok: result.is_ok(),
            kind: what,
            protocol_id: spec.protocol_id(),
            error: result.as_ref().err().map(|e| e.as_str().to_owned()),
        })?;
    } else {
        match &result {
            Ok(()) if !args.quiet => writeln!(std::io::stdout(), "OK")?,
            Ok(()) => {}
            Err(e) => eprintln!("ValidationError: {e}"),
        }
    }
    Ok(if result.is_ok() {
        Outcome::Ok
    } else {
        Outcome::Rejected
    })
}
