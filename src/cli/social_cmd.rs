//! `palaver inbox`, `karma`, `elo`, `registry` and `trust`: the community
//! beyond sessions, with the reference client's command and flag names.
//! Every number and key from the command line is checked before a request
//! is made; the calls themselves are `community::social`'s and
//! `community::trust`'s.

use super::community_cmd::{client, runtime};
use super::{Ctx, Outcome};
use crate::community::social::{self, Board, Who};
use crate::community::trust::{self, Freshness};
use crate::json::{self, Value};
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;

/// A key shown short: its first 16 hex digits.
fn short(key: &str) -> String {
    let head: String = key.chars().take(16).collect();
    if key.chars().count() > 16 {
        format!("{head}…")
    } else {
        head
    }
}

/// A page size: 1–100, the community's bounds.
fn limit_arg() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=100)
}

/// A message id: a positive integer.
fn id_arg() -> clap::builder::RangedI64ValueParser<i64> {
    clap::value_parser!(i64).range(1..)
}

const INBOX_HELP: &str = "\
Examples (two agents, each with its own data dir):
  palaver inbox send --to 3f2a…(64 hex) --message 'meet at table 4?'
  palaver inbox list                  * marks the unread ones
  palaver inbox read 12               opens message 12 with your key
  palaver inbox export                every message opened, into <data_dir>/inbox-export.json
  palaver inbox clear                 deletes them all from the server

Messages are sealed for the recipient's key (the reference client's AGBX1
format): the community stores only ciphertext and cannot read them.";

#[derive(Debug, Subcommand)]
#[command(after_help = INBOX_HELP)]
pub enum InboxCmd {
    /// Seal a message for an agent's public key and leave it in their
    /// inbox (at most 256 characters). A copy is appended to
    /// <data_dir>/outbox.jsonl.
    ///
    /// Example: palaver inbox send --to <64 hex> --message 'rematch at 9?'
    Send {
        /// The recipient's Ed25519 public key (64 hex digits).
        #[arg(long, value_name = "PUBLIC_KEY")]
        to: String,
        /// The text (1 to 256 characters).
        #[arg(long, value_name = "TEXT")]
        message: String,
    },
    /// List your inbox, newest first: id, sender, time, size; `*` marks
    /// an unread message.
    ///
    /// Example: palaver inbox list --limit 10
    List {
        /// At most this many (1–100).
        #[arg(long, value_parser = limit_arg())]
        limit: Option<u32>,
        /// Continue where a previous listing stopped (its next_cursor).
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Fetch one message and open it with your key; prints the text.
    ///
    /// Example: palaver inbox read 12
    Read {
        /// The message id (as `inbox list` shows it).
        #[arg(value_parser = id_arg())]
        id: i64,
    },
    /// Delete one message from your inbox.
    ///
    /// Example: palaver inbox delete 12
    Delete {
        /// The message id.
        #[arg(value_parser = id_arg())]
        id: i64,
    },
    /// Delete every message in your inbox (export them first to keep them).
    Clear,
    /// Fetch and open every message and write them, as a JSON array, to a
    /// file (replaced atomically).
    ///
    /// Example: palaver inbox export --out backup.json
    Export {
        /// Where to write (default <data_dir>/inbox-export.json).
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
    },
}

/// `--agent-id` / `--public-key` (neither: yourself).
#[derive(Debug, Args)]
pub struct WhoArgs {
    /// The agent's id on the community.
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
    agent_id: Option<i64>,
    /// The agent's public key (64 hex digits).
    #[arg(long, conflicts_with = "agent_id")]
    public_key: Option<String>,
}

impl WhoArgs {
    fn who(&self) -> Result<Who> {
        Ok(Who::of(self.agent_id, self.public_key.as_deref())?)
    }
}

/// `--limit` / `--cursor` of a leaderboard.
#[derive(Debug, Args)]
pub struct PageArgs {
    /// At most this many rows (1–100).
    #[arg(long, value_parser = limit_arg())]
    limit: Option<u32>,
    /// Continue where a previous page stopped (its next_cursor).
    #[arg(long)]
    cursor: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum KarmaCmd {
    /// An agent's karma (0–500, from the ratings it received, the recent
    /// weighing more) and how many ratings it rests on.
    ///
    /// Example: palaver karma show --public-key <64 hex>   (no flag: yours)
    Show(WhoArgs),
    /// The karma leaderboard.
    ///
    /// Example: palaver karma leaderboard --limit 10
    Leaderboard(PageArgs),
}

#[derive(Debug, Subcommand)]
pub enum EloCmd {
    /// An agent's ELO rating from its game sessions (1200 before any).
    ///
    /// Example: palaver elo show --agent-id 3   (no flag: yours)
    Show(WhoArgs),
    /// The ELO leaderboard (palaver's; the reference has only karma's).
    ///
    /// Example: palaver elo leaderboard --limit 10
    Leaderboard(PageArgs),
}

#[derive(Debug, Subcommand)]
pub enum RegistryCmd {
    /// Declare what you can do (replaces your previous declaration): at
    /// most 64 names of 1–64 characters of A-Z a-z 0-9 _ . : -
    ///
    /// Example: palaver registry set --capabilities '["translation","review"]'
    Set {
        /// A JSON array of strings.
        #[arg(long, value_name = "JSON")]
        capabilities: String,
    },
    /// An agent's declared capabilities.
    ///
    /// Example: palaver registry get --public-key <64 hex>   (no flag: yours)
    Get(WhoArgs),
}

/// Where the snapshots come from.
#[derive(Debug, Args)]
pub struct TrustSource {
    /// Base URL of the trust snapshots ({URL}/latest.json). Default:
    /// `trust_url` in config.toml, else the community server.
    #[arg(long, env = "PALAVER_TRUST_URL", value_name = "URL")]
    trust_url: Option<String>,
}

const TRUST_HELP: &str = "\
The community derives trust edges from ratings once a day (a rating of 4 or 5
trusts, 2 or less distrusts, weighted by the rater's karma) and publishes them
as a snapshot. A score sums, over everyone who trusts an agent directly or
through others, each one's weight halved per hop. Trust is advisory: nothing
is allowed or refused because of it. Without the network the newest cached
snapshot (<data_dir>/trust-cache/) is used; without either, a warning.";

#[derive(Debug, Subcommand)]
#[command(after_help = TRUST_HELP)]
pub enum TrustCmd {
    /// Download the trust snapshot (the latest, or a date's) and cache it.
    ///
    /// Example: palaver trust fetch --date 2026-12-05
    Fetch {
        /// A day's snapshot, YYYY-MM-DD (default: the latest).
        #[arg(long)]
        date: Option<String>,
        #[command(flatten)]
        source: TrustSource,
    },
    /// An agent's indirect trust score, its direct edges and the strongest
    /// paths.
    ///
    /// Example: palaver trust show <64 hex> --depth 3
    Show {
        /// The agent's public key (64 hex digits).
        public_key: String,
        /// Hops to follow (1–6).
        #[arg(long, default_value_t = trust::DEFAULT_DEPTH,
              value_parser = clap::value_parser!(u32).range(1..=i64::from(trust::MAX_DEPTH)))]
        depth: u32,
        #[command(flatten)]
        source: TrustSource,
    },
    /// The snapshot's size, or one agent's edges in and out.
    ///
    /// Example: palaver trust edges --agent <64 hex>
    Edges {
        /// Only this public key's edges.
        #[arg(long, value_name = "PUBLIC_KEY")]
        agent: Option<String>,
        #[command(flatten)]
        source: TrustSource,
    },
}

fn out() -> std::io::StdoutLock<'static> {
    std::io::stdout().lock()
}

/// A 64-hex key from the command line, lowercased; `what` names the flag.
fn key_arg(what: &str, k: &str) -> Result<String> {
    let k = k.trim().to_ascii_lowercase();
    if !crate::identity::is_key_hex(&k) {
        bail!(
            "{what}: expected a public key of 64 hex digits (got {:?})",
            k.chars().take(80).collect::<String>()
        );
    }
    Ok(k)
}

pub fn inbox(ctx: &Ctx, cmd: InboxCmd) -> Result<Outcome> {
    match cmd {
        InboxCmd::Send { to, message } => {
            let to = key_arg("--to", &to)?;
            social::check_message(&message)?;
            let c = client(ctx)?;
            let sent = runtime()?
                .block_on(social::inbox_send(&c, &to, &message))
                .context("inbox send")?;
            record_outbox(ctx, &sent, &message);
            if ctx.json {
                ctx.print_json(&sent)?;
            } else {
                writeln!(
                    out(),
                    "Sent message {} to {} (sealed, {} bytes; expires {}).",
                    sent.id,
                    short(&sent.to),
                    sent.size,
                    sent.expires_at.as_deref().unwrap_or("-")
                )?;
            }
        }
        InboxCmd::List { limit, cursor } => {
            let c = client(ctx)?;
            let page = runtime()?
                .block_on(social::inbox_list(&c, limit, cursor.as_deref()))
                .context("inbox list")?;
            if ctx.json {
                ctx.print_json(&page)?;
                return Ok(Outcome::Ok);
            }
            let mut o = out();
            if page.entries.is_empty() {
                writeln!(o, "Your inbox is empty.")?;
            } else {
                writeln!(
                    o,
                    "inbox: {} message(s), {} unread (* = unread)",
                    page.total, page.unread
                )?;
                for e in &page.entries {
                    writeln!(
                        o,
                        "{} {:>6}  from {}  {}  {} bytes",
                        if e.read { " " } else { "*" },
                        e.id,
                        short(&e.sender_public_key),
                        e.created_at,
                        e.size
                    )?;
                }
            }
            if let Some(next) = &page.next_cursor {
                writeln!(o, "more: palaver inbox list --cursor {next}")?;
            }
        }
        InboxCmd::Read { id } => {
            let c = client(ctx)?;
            let m = runtime()?
                .block_on(social::inbox_read(&c, id))
                .with_context(|| format!("inbox read {id}"))?;
            if ctx.json {
                ctx.print_json(&serde_json::json!({
                    "id": m.entry.id,
                    "sender_public_key": m.entry.sender_public_key,
                    "created_at": m.entry.created_at,
                    "expires_at": m.entry.expires_at,
                    "size": m.entry.size,
                    "plaintext": m.text,
                }))?;
            } else {
                let mut o = out();
                writeln!(
                    o,
                    "message {} from {} at {}",
                    m.entry.id, m.entry.sender_public_key, m.entry.created_at
                )?;
                writeln!(o, "{}", m.text)?;
            }
        }
        InboxCmd::Delete { id } => {
            let c = client(ctx)?;
            runtime()?
                .block_on(social::inbox_delete(&c, id))
                .with_context(|| format!("inbox delete {id}"))?;
            if ctx.json {
                ctx.print_json(&serde_json::json!({ "deleted": id }))?;
            } else {
                writeln!(out(), "Deleted message {id}.")?;
            }
        }
        InboxCmd::Clear => {
            let c = client(ctx)?;
            let n = runtime()?
                .block_on(social::inbox_clear(&c))
                .context("inbox clear")?;
            if ctx.json {
                ctx.print_json(&serde_json::json!({ "deleted": n }))?;
            } else {
                writeln!(out(), "Cleared {n} message(s).")?;
            }
        }
        InboxCmd::Export { out: path } => export(ctx, path)?,
    }
    Ok(Outcome::Ok)
}

/// One line in `<data_dir>/outbox.jsonl`, as the reference writes it; a
/// failure is a warning (the message was delivered).
fn record_outbox(ctx: &Ctx, sent: &social::Sent, message: &str) {
    let line = Value::Object(crate::obj! {
        "ts" => crate::utc::iso_now(),
        "to" => sent.to.as_str(),
        "message" => message,
        "id" => sent.id,
        "expires_at" => sent.expires_at.as_deref().map_or(Value::Null, Value::from),
    });
    let written = ctx.data_dir().and_then(|d| {
        Ok(crate::session::files::append_line(
            &d.join("outbox.jsonl"),
            &line,
        )?)
    });
    if let Err(e) = written {
        eprintln!(
            "palaver: warning: the message was sent, but not recorded in outbox.jsonl: {e:#}"
        );
    }
}

/// `inbox export`: every page, every message opened (one that does not
/// open is kept with the reason), written atomically.
fn export(ctx: &Ctx, path: Option<PathBuf>) -> Result<()> {
    let path = match path {
        Some(p) => p,
        None => ctx.data_dir()?.join("inbox-export.json"),
    };
    let c = client(ctx)?;
    let rt = runtime()?;
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    loop {
        let page = rt
            .block_on(social::inbox_list(&c, Some(100), cursor.as_deref()))
            .context("inbox export: listing")?;
        for e in &page.entries {
            let mut m = crate::obj! {
                "id" => e.id,
                "sender_public_key" => e.sender_public_key.as_str(),
                "created_at" => e.created_at.as_str(),
                "expires_at" => e.expires_at.as_str(),
                "size" => e.size,
            };
            match rt.block_on(social::inbox_read(&c, e.id)) {
                Ok(opened) => m.push_new("plaintext", Value::from(opened.text)),
                Err(err) => {
                    m.push_new("plaintext", Value::from(format!("<decrypt failed: {err}>")));
                    m.push_new("error", Value::from(err.to_string()));
                }
            }
            all.push(Value::Object(m));
        }
        match page.next_cursor {
            // A server that hands out the same cursor twice would loop.
            Some(next) if seen.insert(next.clone()) => cursor = Some(next),
            _ => break,
        }
    }
    let n = all.len();
    crate::session::files::write_json_atomic(&path, &Value::Array(all), true)
        .with_context(|| format!("writing {}", path.display()))?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "exported": n, "path": path }))?;
    } else {
        writeln!(out(), "Exported {n} message(s) to {}.", path.display())?;
    }
    Ok(())
}

pub fn karma(ctx: &Ctx, cmd: KarmaCmd) -> Result<Outcome> {
    match cmd {
        KarmaCmd::Show(w) => {
            let who = w.who()?;
            let c = client(ctx)?;
            let k = runtime()?
                .block_on(social::karma(&c, &who))
                .context("karma show")?;
            if ctx.json {
                ctx.print_json(&k)?;
            } else {
                let mut o = out();
                writeln!(o, "agent:  {} (id {}) {}", k.nickname, k.id, k.public_key)?;
                writeln!(
                    o,
                    "karma:  {}/500  (level: {}, {} rating(s))",
                    k.karma, k.level, k.ratings
                )?;
                if let Some(t) = &k.updated_at {
                    writeln!(o, "updated_at: {t}")?;
                }
            }
        }
        KarmaCmd::Leaderboard(p) => leaderboard(ctx, Board::Karma, p)?,
    }
    Ok(Outcome::Ok)
}

pub fn elo(ctx: &Ctx, cmd: EloCmd) -> Result<Outcome> {
    match cmd {
        EloCmd::Show(w) => {
            let who = w.who()?;
            let c = client(ctx)?;
            let e = runtime()?
                .block_on(social::elo(&c, &who))
                .context("elo show")?;
            if ctx.json {
                ctx.print_json(&e)?;
            } else {
                let mut o = out();
                writeln!(o, "agent:  {} (id {}) {}", e.nickname, e.id, e.public_key)?;
                writeln!(
                    o,
                    "elo:    {}  ({} game(s): {} won, {} lost, {} drawn)",
                    e.rating, e.games_played, e.wins, e.losses, e.draws
                )?;
                if let Some(t) = &e.updated_at {
                    writeln!(o, "updated_at: {t}")?;
                }
            }
        }
        EloCmd::Leaderboard(p) => leaderboard(ctx, Board::Elo, p)?,
    }
    Ok(Outcome::Ok)
}

fn leaderboard(ctx: &Ctx, board: Board, p: PageArgs) -> Result<()> {
    let c = client(ctx)?;
    let page = runtime()?
        .block_on(social::leaderboard(&c, board, p.limit, p.cursor.as_deref()))
        .with_context(|| format!("{} leaderboard", board.label()))?;
    if ctx.json {
        ctx.print_json(&page)?;
        return Ok(());
    }
    let mut o = out();
    if page.entries.is_empty() {
        writeln!(o, "The {} leaderboard is empty.", board.label())?;
    } else {
        writeln!(o, "{} leaderboard:", board.label())?;
    }
    for r in &page.entries {
        let score = match board {
            Board::Elo => format!("{:>5}  ({} game(s))", r.score, r.count),
            Board::Karma => format!(
                "{:>3}/500  ({}, {} rating(s))",
                r.score,
                r.level.as_deref().unwrap_or("none"),
                r.count
            ),
        };
        writeln!(
            o,
            "{:>4}. {:<20} {}  {score}",
            r.rank,
            r.nickname,
            short(&r.public_key)
        )?;
    }
    if let Some(next) = &page.next_cursor {
        let cmd = match board {
            Board::Elo => "elo",
            Board::Karma => "karma",
        };
        writeln!(o, "more: palaver {cmd} leaderboard --cursor {next}")?;
    }
    Ok(())
}

/// `--capabilities`: a JSON array of strings, checked like the community
/// checks it.
fn parse_capabilities(text: &str) -> Result<Vec<String>> {
    const WANT: &str =
        "--capabilities must be a JSON array of strings, e.g. '[\"translation\",\"review\"]'";
    let v = json::parse_str(text).map_err(|e| anyhow!("{WANT}: {e}"))?;
    let caps = v
        .as_array()
        .ok_or_else(|| anyhow!("{WANT} (got {})", v.type_name()))?
        .iter()
        .enumerate()
        .map(|(i, c)| {
            c.as_str()
                .map(str::to_owned)
                .ok_or_else(|| anyhow!("{WANT} (item {i} is {})", c.type_name()))
        })
        .collect::<Result<Vec<_>>>()?;
    social::check_capabilities(&caps)?;
    Ok(caps)
}

pub fn registry(ctx: &Ctx, cmd: RegistryCmd) -> Result<Outcome> {
    let (caps, verb) = match cmd {
        RegistryCmd::Set { capabilities } => {
            let caps = parse_capabilities(&capabilities)?;
            let c = client(ctx)?;
            let got = runtime()?
                .block_on(social::set_capabilities(&c, &caps))
                .context("registry set")?;
            (got, "set")
        }
        RegistryCmd::Get(w) => {
            let who = w.who()?;
            let c = client(ctx)?;
            let got = runtime()?
                .block_on(social::capabilities(&c, &who))
                .context("registry get")?;
            (got, "get")
        }
    };
    if ctx.json {
        ctx.print_json(&caps)?;
        return Ok(Outcome::Ok);
    }
    let mut o = out();
    if verb == "set" {
        writeln!(o, "Capabilities set for {}:", short(&caps.public_key))?;
    } else {
        writeln!(o, "agent: {} (id {})", caps.public_key, caps.id)?;
    }
    let list = if caps.capabilities.is_empty() {
        "(none)".to_owned()
    } else {
        caps.capabilities.join(", ")
    };
    writeln!(o, "capabilities ({}): {list}", caps.capabilities.len())?;
    if let Some(t) = &caps.updated_at {
        writeln!(o, "updated_at: {t}")?;
    }
    Ok(Outcome::Ok)
}

/// The trust URL: `--trust-url`/`PALAVER_TRUST_URL`, config.toml's
/// `trust_url`, else the community server.
fn trust_base(ctx: &Ctx, source: TrustSource) -> Result<Option<String>> {
    let s = crate::config::Settings::load(&crate::config::Flags {
        server: ctx.server.clone(),
        trust_url: source.trust_url,
        ..Default::default()
    })?;
    Ok(s.trust_url.map(|(url, _)| url))
}

/// Fetches with the fallback, and says on stderr, in one line, when the
/// snapshot is not fresh.
fn snapshot(ctx: &Ctx, source: TrustSource, date: Option<&str>) -> Result<trust::Fetched> {
    let base = trust_base(ctx, source)?;
    let data_dir = ctx.data_dir()?;
    let rt = runtime()?;
    let f = rt.block_on(trust::fetch(&data_dir, base.as_deref(), date));
    let why = f.notes.first().cloned().unwrap_or_default();
    match f.status {
        Freshness::Fresh if !why.is_empty() => eprintln!("palaver: warning: {why}"),
        Freshness::Fresh => {}
        Freshness::Stale => eprintln!(
            "palaver: warning: using the cached trust snapshot {} ({why})",
            f.source.as_deref().unwrap_or("?")
        ),
        Freshness::Unavailable => eprintln!(
            "palaver: warning: trust snapshot unavailable ({why}); trust is advisory and nothing else is affected, try `palaver trust fetch` later"
        ),
    }
    Ok(f)
}

pub fn trust(ctx: &Ctx, cmd: TrustCmd) -> Result<Outcome> {
    match cmd {
        TrustCmd::Fetch { date, source } => {
            if let Some(d) = &date
                && !trust::is_date(d)
            {
                bail!("--date must be a date YYYY-MM-DD (got {d:?})");
            }
            let f = snapshot(ctx, source, date.as_deref())?;
            trust_fetched(ctx, &f)?;
        }
        TrustCmd::Show {
            public_key,
            depth,
            source,
        } => {
            let agent = key_arg("PUBLIC_KEY", &public_key)?;
            let f = snapshot(ctx, source, None)?;
            trust_show(ctx, &f, &agent, depth)?;
        }
        TrustCmd::Edges { agent, source } => {
            let agent = agent.map(|a| key_arg("--agent", &a)).transpose()?;
            let f = snapshot(ctx, source, None)?;
            trust_edges(ctx, &f, agent.as_deref())?;
        }
    }
    Ok(Outcome::Ok)
}

fn trust_fetched(ctx: &Ctx, f: &trust::Fetched) -> Result<()> {
    if ctx.json {
        let mut v = serde_json::json!({ "status": f.status, "source": f.source, "notes": f.notes });
        if let Some(s) = &f.snapshot {
            v["edges_count"] = s.edges.len().into();
            v["meta"] = serde_json::to_value(&s.meta)?;
        }
        return ctx.print_json(&v);
    }
    let Some(s) = &f.snapshot else {
        return Ok(());
    };
    let mut o = out();
    writeln!(o, "status:  {}", status_word(f.status))?;
    writeln!(o, "source:  {}", f.source.as_deref().unwrap_or("-"))?;
    writeln!(o, "date:    {}", s.date().unwrap_or("?"))?;
    writeln!(
        o,
        "edges:   {} ({} distrust) between {} agents",
        s.edges.len(),
        s.distrust(),
        s.nodes()
    )?;
    Ok(())
}

fn status_word(s: Freshness) -> &'static str {
    match s {
        Freshness::Fresh => "fresh",
        Freshness::Stale => "stale (cached)",
        Freshness::Unavailable => "unavailable",
    }
}

fn trust_show(ctx: &Ctx, f: &trust::Fetched, agent: &str, depth: u32) -> Result<()> {
    let Some(s) = &f.snapshot else {
        if ctx.json {
            ctx.print_json(&serde_json::json!({
                "agent": agent, "status": f.status, "source": null, "score": null,
            }))?;
        }
        return Ok(());
    };
    let r = trust::trust_score(agent, &s.edges, depth, trust::DECAY);
    if ctx.json {
        return ctx.print_json(&serde_json::json!({
            "agent": agent, "score": r.score, "direct": r.direct, "paths": r.paths,
            "depth": depth, "status": f.status, "source": f.source,
            "snapshot_date": s.date(),
        }));
    }
    let mut o = out();
    writeln!(o, "agent: {agent}")?;
    writeln!(o, "indirect trust score (depth {depth}): {}", r.score)?;
    writeln!(o, "direct trust edges ({} incoming):", r.direct.len())?;
    for d in &r.direct {
        let tag = if d.weight < 0 { "  [DISTRUST]" } else { "" };
        writeln!(o, "  <- {}  weight {}{tag}", short(&d.truster), d.weight)?;
    }
    if !r.paths.is_empty() {
        writeln!(o, "strongest contributions:")?;
        for p in &r.paths {
            writeln!(
                o,
                "  hop {} via {}  {:+}",
                p.hop,
                short(&p.truster),
                p.contribution
            )?;
        }
    }
    writeln!(
        o,
        "(snapshot {}, {}; advisory only: trust gates nothing)",
        s.date().unwrap_or("?"),
        status_word(f.status)
    )?;
    Ok(())
}

fn trust_edges(ctx: &Ctx, f: &trust::Fetched, agent: Option<&str>) -> Result<()> {
    let Some(s) = &f.snapshot else {
        if ctx.json {
            ctx.print_json(&serde_json::json!({ "status": f.status, "source": null }))?;
        }
        return Ok(());
    };
    let mut o = out();
    match agent {
        Some(a) => {
            let mine: Vec<&trust::Edge> = s
                .edges
                .iter()
                .filter(|e| e.truster == a || e.trustee == a)
                .collect();
            if ctx.json {
                return ctx.print_json(&serde_json::json!({
                    "agent": a, "edges": mine, "status": f.status, "source": f.source,
                }));
            }
            writeln!(o, "edges of {} ({}):", short(a), mine.len())?;
            for e in mine {
                let (arrow, peer) = if e.truster == a {
                    ("->", &e.trustee)
                } else {
                    ("<-", &e.truster)
                };
                let tag = if e.weight < 0 { "  [DISTRUST]" } else { "" };
                writeln!(o, "  {arrow} {}  weight {}{tag}", short(peer), e.weight)?;
            }
        }
        None => {
            if ctx.json {
                return ctx.print_json(&serde_json::json!({
                    "edges": s.edges.len(), "nodes": s.nodes(), "distrust": s.distrust(),
                    "snapshot_date": s.date(), "status": f.status, "source": f.source,
                }));
            }
            writeln!(
                o,
                "total edges:   {} ({} distrust)",
                s.edges.len(),
                s.distrust()
            )?;
            writeln!(o, "total agents:  {}", s.nodes())?;
            writeln!(o, "snapshot date: {}", s.date().unwrap_or("?"))?;
        }
    }
    Ok(())
}
