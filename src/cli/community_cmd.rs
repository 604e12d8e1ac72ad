//! `palaver init`, `register`, `serve`, `browse`, `cancel`, `feedback`,
//! `rating`, `protocol register` and the server-side `session` commands.

use super::logging::LogFormat;
use super::{Ctx, Outcome};
use crate::community::{Config, Database};
use crate::identity::KeyPair;
use crate::json::Value;
use crate::web::Client;
use anyhow::{Context, Result, anyhow};
use clap::Args;
use serde::Serialize;
use std::io::Write;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8700")]
    pub bind: String,
    /// Where the community is kept: a SQLite file (a path or sqlite:PATH;
    /// default community.sqlite in the data dir, or `db` in config.toml) or
    /// a PostgreSQL database several instances share (postgres://USER@HOST/DB).
    #[arg(long, env = "PALAVER_DB", value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Connections this instance keeps to a PostgreSQL database at most
    /// (1–256).
    #[arg(long, default_value_t = 16, value_parser = parse_db_pool)]
    pub db_pool: u32,
    /// Create or migrate the database's schema, say what was done, and exit.
    #[arg(long)]
    pub migrate_only: bool,
    /// Seconds a stopping server (SIGTERM, Ctrl-C) gives the requests in
    /// flight before it exits anyway (0–600).
    #[arg(long, default_value_t = 30.0, value_parser = |s: &str| crate::limits::SERVE_SHUTDOWN_GRACE.parse_arg(s))]
    pub shutdown_grace: f64,
    /// Registration proof of work, in leading zero bytes (1 ≈ 256 hashes).
    #[arg(long, default_value_t = 1)]
    pub difficulty: u32,
    /// Requests per second allowed per key (0: no limit).
    #[arg(long, default_value_t = 20.0, value_parser = parse_rate_limit)]
    pub rate_limit: f64,
    /// Invitation time to live in seconds (hosts renew them).
    #[arg(long, default_value_t = 300.0, value_parser = |s: &str| crate::limits::SERVE_INVITATION_TTL.parse_arg(s))]
    pub invitation_ttl: f64,
    /// Seconds a client has to send a request's head, and then its body
    /// (slower ones are cut off; idle connections close after as long).
    #[arg(long, default_value_t = 30.0, value_parser = |s: &str| crate::limits::SERVE_READ_TIMEOUT.parse_arg(s))]
    pub read_timeout: f64,
    /// A group room's leader lease in seconds (3–300): how long a leader
    /// that stops renewing keeps the room before a member may take over.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u16).range(3..=300))]
    pub group_lease: u16,
    /// Log lines on stderr as text (for people) or json (one object per
    /// line, for a log shipper).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// What to log: a level (error, warn, info, debug, trace) or directives
    /// like palaver=debug,info. Default: RUST_LOG, else info.
    #[arg(long, value_name = "LEVEL", value_parser = super::logging::parse_level)]
    pub log_level: Option<String>,
    /// Serve GET /metrics (Prometheus text) on the --bind address too:
    /// anyone who reaches it can read it, so prefer --metrics-bind.
    #[arg(long, conflicts_with = "metrics_bind")]
    pub metrics: bool,
    /// Serve GET /metrics on this address only (e.g. 127.0.0.1:9700, or a
    /// private interface), not on --bind.
    #[arg(long, value_name = "ADDR")]
    pub metrics_bind: Option<String>,
    /// A store call taking this many milliseconds or more is counted
    /// (palaver_store_slow_calls_total) and logged as a warning.
    #[arg(long, value_name = "MS", default_value_t = 250, value_parser = clap::value_parser!(u32).range(1..=600_000))]
    pub slow_query_ms: u32,
}

/// `--rate-limit`: a finite number of requests per second, 0 to 1,000,000.
fn parse_rate_limit(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1_000_000.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "--rate-limit = {s} is out of range (allowed 0..=1000000 requests per second)"
        )),
    }
}

/// `--db-pool`: a whole number of connections in range.
fn parse_db_pool(s: &str) -> Result<u32, String> {
    let n: i64 = s
        .trim()
        .parse()
        .map_err(|_| format!("--db-pool = {s} is not a whole number of connections"))?;
    crate::limits::SERVE_DB_POOL
        .check(n)
        .map_err(|e| e.to_string())
        .and_then(|n| u32::try_from(n).map_err(|e| e.to_string()))
}

pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// The server URL: --server, PALAVER_SERVER, `server` in config.toml, or an
/// error that says how to get one.
pub fn server_url(ctx: &Ctx) -> Result<String> {
    let settings = crate::config::Settings::load(&crate::config::Flags {
        server: ctx.server.clone(),
        ..Default::default()
    })?;
    settings.server.map(|(url, _)| url).ok_or_else(|| {
        anyhow!("no community server: pass --server http://HOST:PORT, set PALAVER_SERVER, or put server = \"…\" in config.toml (to run one here: palaver serve)")
    })
}

pub fn client(ctx: &Ctx) -> Result<Client> {
    let url = server_url(ctx)?;
    let keys = KeyPair::load(&ctx.data_dir()?)?;
    Ok(Client::new(&url, keys)?)
}

fn print(
    ctx: &Ctx,
    human: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    v: &Value,
) -> Result<()> {
    if ctx.json {
        ctx.print_json(v)?;
    } else {
        human(&mut std::io::stdout().lock())?;
    }
    Ok(())
}

pub fn init(ctx: &Ctx, force: bool) -> Result<Outcome> {
    let dir = ctx.data_dir()?;
    let (kp, created) = KeyPair::init(&dir, force)?;
    let root = crate::library::install_bundled(&dir)?;
    #[derive(Serialize)]
    struct Out<'a> {
        public_key: &'a str,
        created: bool,
        data_dir: &'a std::path::Path,
        protocols: &'a std::path::Path,
    }
    if ctx.json {
        ctx.print_json(&Out {
            public_key: &kp.public_key,
            created,
            data_dir: &dir,
            protocols: &root,
        })?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "{} identity in {}",
            if created {
                "Created an"
            } else {
                "Using the existing"
            },
            dir.display()
        )?;
        writeln!(out, "public_key: {}", kp.public_key)?;
        writeln!(
            out,
            "protocols: {} bundled protocols in {}",
            crate::library::BUNDLED_SPECS.len(),
            root.display()
        )?;
    }
    Ok(Outcome::Ok)
}

pub fn register(ctx: &Ctx, nickname: &str, bio: &str) -> Result<Outcome> {
    let c = client(ctx)?;
    let (status, v) = runtime()?.block_on(c.register(nickname, bio))?;
    print(
        ctx,
        |out| match status {
            409 => writeln!(out, "Already registered ({}).", c.keys().public_key),
            _ => writeln!(out, "Registered {nickname} ({}).", c.keys().public_key),
        },
        &v,
    )?;
    Ok(Outcome::Ok)
}

/// The database `serve` uses: `--db` / `PALAVER_DB`, `db` in config.toml,
/// or community.sqlite in the data dir.
fn serve_database(ctx: &Ctx, flag: Option<&str>) -> Result<Database> {
    let settings = crate::config::Settings::load(&crate::config::Flags {
        db: flag.map(str::to_owned),
        ..Default::default()
    })?;
    match settings.db {
        Some((db, _)) => Ok(db),
        None => Ok(Database::sqlite(&ctx.data_dir()?.join("community.sqlite"))),
    }
}

/// What `serve --migrate-only` did to one part of the schema.
#[derive(Serialize)]
struct MigrationOut {
    component: &'static str,
    from: Option<i64>,
    to: Option<i64>,
    status: &'static str,
}

pub fn serve(ctx: &Ctx, a: ServeArgs) -> Result<Outcome> {
    let database = serve_database(ctx, a.db.as_deref())?;
    let grace = crate::limits::SERVE_SHUTDOWN_GRACE.check(a.shutdown_grace)?;
    let cfg = Config {
        difficulty: a.difficulty,
        invitation_ttl: a.invitation_ttl,
        max_active_invitations: 3,
        rate_limit: a.rate_limit,
        read_timeout: crate::limits::SERVE_READ_TIMEOUT.check(a.read_timeout)?,
        group_lease_seconds: i64::from(a.group_lease),
    };
    // Opening migrates (the community's schema, then the market's); every
    // instance may do it at start, one at a time.
    let pool = if a.migrate_only { 1 } else { a.db_pool };
    let (store, migrated) = database
        .open(pool)
        .with_context(|| format!("opening the database {}", database.shown()))?;
    // The GTL market shares the database (its own tables and schema
    // version) and the router; on PostgreSQL with a pool of its own, as
    // large as the community's.
    let market = std::sync::Arc::new(match &database {
        Database::Sqlite(path) => {
            crate::market::Market::open(path, crate::market::MarketConfig::default())
                .with_context(|| format!("opening the market tables in {}", path.display()))?
        }
        Database::Postgres(url) => {
            let pool =
                crate::sql::pg::pool(url, pool, "market").context("the market's connections")?;
            crate::market::Market::postgres(pool, crate::market::MarketConfig::default())
                .with_context(|| format!("opening the market tables in {}", database.shown()))?
        }
    });
    if a.migrate_only {
        let parts = [
            MigrationOut {
                component: migrated.component,
                from: Some(migrated.from),
                to: Some(migrated.to),
                status: if migrated.from == migrated.to {
                    "up to date"
                } else {
                    "migrated"
                },
            },
            {
                // Opening it applied whatever was pending.
                let (from, to) = market.migrated();
                MigrationOut {
                    component: "market",
                    from: Some(from),
                    to: Some(to),
                    status: if from == to { "up to date" } else { "migrated" },
                }
            },
        ];
        let v = serde_json::json!({
            "db": database.shown(), "store": database.kind(), "migrations": parts,
        });
        if ctx.json {
            ctx.print_json(&v)?;
        } else {
            let mut out = std::io::stdout().lock();
            writeln!(out, "database {} ({})", database.shown(), database.kind())?;
            for p in &parts {
                match (p.from, p.to) {
                    (Some(f), Some(t)) if f == t => {
                        writeln!(out, "  {}: schema version {t}, up to date", p.component)?
                    }
                    (Some(f), Some(t)) => writeln!(
                        out,
                        "  {}: schema version {f} → {t} (migrated)",
                        p.component
                    )?,
                    _ => writeln!(out, "  {}: {}", p.component, p.status)?,
                }
            }
        }
        return Ok(Outcome::Ok);
    }
    // The last references to the store and the market are dropped here,
    // off the runtime: a PostgreSQL client must not close on an async
    // worker thread.
    let keep = (store.clone(), market.clone());
    crate::web::metrics::set_slow_call(std::time::Duration::from_millis(u64::from(
        a.slow_query_ms,
    )));
    let rt = runtime()?;
    let served = rt.block_on(async move {
        use crate::services::server::{MetricsAt, Shutdown, serve_until};
        let listener = tokio::net::TcpListener::bind(&a.bind)
            .await
            .with_context(|| format!("binding {}", a.bind))?;
        let metrics = match &a.metrics_bind {
            Some(addr) => MetricsAt::Own(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding --metrics-bind {addr}"))?,
            ),
            None if a.metrics => MetricsAt::Main,
            None => MetricsAt::Off,
        };
        let url = format!("http://{}", listener.local_addr()?);
        banner(a.log_format, &url, &database.shown());
        match &metrics {
            MetricsAt::Own(l) => tracing::info!("metrics on http://{}/metrics", l.local_addr()?),
            MetricsAt::Main => tracing::info!("metrics on {url}/metrics"),
            MetricsAt::Off => {}
        }
        if let Some(w) = super::logging::deferred_warning() {
            tracing::warn!("{w}");
        }
        let shutdown = Shutdown::on_signals(grace)?;
        let drained = serve_until(listener, store, cfg, Some(market), shutdown, metrics).await?;
        Ok::<_, anyhow::Error>(drained)
    })?;
    // Work still queued on the blocking pool after the grace period is cut
    // off here rather than waited for.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    drop(keep);
    if served.cut_off > 0 {
        tracing::warn!(
            cut_off = served.cut_off,
            "palaver serve stopped; {} connection(s) still busy after {grace:?} were cut off",
            served.cut_off
        );
    } else {
        tracing::info!("palaver serve stopped; every request in flight was answered");
    }
    Ok(Outcome::Ok)
}

/// The line that says the server is up: plain text, whatever the log
/// level (scripts wait for it), or with `--log-format json` a JSON line
/// like the rest (an info event with `url` and `database`). Nothing may
/// come before it: whoever started the server may read this one line and
/// stop reading stderr (the later lines ignore a closed stderr).
fn banner(format: LogFormat, url: &str, database: &str) {
    let text = format!("palaver community server on {url} (database {database})");
    match format {
        LogFormat::Text => eprintln!("{text}"),
        LogFormat::Json => tracing::info!(url, database, "{text}"),
    }
}

pub fn protocol_register(ctx: &Ctx, text: &str, label: &str) -> Result<Outcome> {
    let spec = crate::spec::Spec::from_json_str(text).with_context(|| label.to_owned())?;
    let s = |k: &str| spec.get(k).and_then(Value::as_str).map(str::to_owned);
    let body = Value::Object(crate::obj! {
        "protocol_id" => spec.protocol_id(),
        "name" => s("name").unwrap_or_else(|| spec.protocol_id().to_owned()),
        "description" => s("description").unwrap_or_default(),
        "type" => s("type").unwrap_or_else(|| "protocol".into()),
        "spec_json" => Value::Object(spec.doc().clone()),
    });
    let c = client(ctx)?;
    let (status, v) = runtime()?.block_on(c.raw("POST", "/api/v1/protocols", Some(&body)))?;
    match status {
        200 | 201 | 409 => {
            print(
                ctx,
                |out| {
                    writeln!(
                        out,
                        "{} {}",
                        if status == 409 {
                            "Already registered:"
                        } else {
                            "Registered"
                        },
                        spec.protocol_id()
                    )
                },
                &v,
            )?;
            Ok(Outcome::Ok)
        }
        _ => Err(anyhow!(
            "POST /api/v1/protocols failed: HTTP {status}: {}",
            v.get("message").map(Value::py_str).unwrap_or_default()
        )),
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// What `palaver browse` asks for.
pub struct BrowseQuery {
    pub protocol_id: Option<String>,
    pub kind: Option<String>,
    pub tags: Vec<String>,
    pub limit: usize,
    pub oneline: bool,
}

/// Does the invitation carry every tag asked for?
fn has_tags(inv: &Value, want: &[String]) -> bool {
    let have: Vec<String> = match inv.get("tags") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(s)) => s.split(',').map(|t| t.trim().to_owned()).collect(),
        _ => Vec::new(),
    };
    want.iter().all(|t| have.iter().any(|h| h == t))
}

pub fn browse(ctx: &Ctx, b: BrowseQuery) -> Result<Outcome> {
    let tags: Vec<String> = b
        .tags
        .iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    let mut q = vec![format!("limit={}", b.limit)];
    if let Some(p) = b.protocol_id {
        q.insert(0, format!("protocol_id={}", encode(&p)));
    }
    if let Some(t) = b.kind {
        q.push(format!("type={}", encode(&t)));
    }
    if !tags.is_empty() {
        q.push(format!("tags={}", encode(&tags.join(","))));
    }
    let path = format!("/api/v1/invitations?{}", q.join("&"));
    let c = client(ctx)?;
    let v = runtime()?.block_on(c.call("GET", &path, None, &[200]))?;
    // Each row says whether palaver can join it (`unjoinable`: the reason,
    // or null).
    let list: Vec<Value> = v
        .get("results")
        .and_then(Value::as_array)
        .cloned()
        .or_else(|| v.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        // A server that filters by one tag only still gets the rest checked.
        .filter(|inv| has_tags(inv, &tags))
        .map(|inv| match inv {
            Value::Object(mut m) => {
                let why = crate::services::remote::unjoinable(&m);
                m.insert("unjoinable", why.map_or(Value::Null, Value::from));
                Value::Object(m)
            }
            other => other,
        })
        .collect();
    if b.oneline && !ctx.json {
        let mut out = std::io::stdout().lock();
        for inv in &list {
            writeln!(out, "{}", oneline(inv))?;
        }
        return Ok(Outcome::Ok);
    }
    print(
        ctx,
        |out| {
            if list.is_empty() {
                return writeln!(out, "No open invitations.");
            }
            for inv in &list {
                let g = |k: &str| inv.get(k).map(Value::py_str).unwrap_or_default();
                let alias = crate::library::Library::bundled()
                    .entries()
                    .iter()
                    .find(|e| e.protocol_id == g("protocol_id"))
                    .map(|e| e.alias.clone())
                    .unwrap_or_else(|| g("protocol_id").chars().take(12).collect());
                let opts = inv
                    .get("options")
                    .map(crate::json::canonical::to_string_ordered)
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{}  {:18} {:12} host={} ({})  {}",
                    g("post_id"),
                    alias,
                    g("host_control_mode"),
                    g("nickname"),
                    g("message"),
                    opts
                )?;
                if let Some(why) = inv.get("unjoinable").and_then(Value::as_str) {
                    writeln!(out, "    cannot join: {why}")?;
                }
            }
            Ok(())
        },
        &Value::Array(list.clone()),
    )?;
    Ok(Outcome::Ok)
}

/// An invitation as one tab-separated line (tabs and newlines inside a
/// field become spaces).
fn oneline(inv: &Value) -> String {
    let field = |k: &str| -> String {
        let text = match inv.get(k) {
            None | Some(Value::Null) => String::new(),
            Some(Value::Array(a)) => a.iter().map(Value::py_str).collect::<Vec<_>>().join(","),
            Some(Value::String(s)) => s.to_string(),
            Some(other) => crate::json::canonical::to_string_ordered(other),
        };
        text.replace(['\t', '\n', '\r'], " ")
    };
    [
        "post_id",
        "protocol_id",
        "type",
        "message",
        "tags",
        "public_key",
        "registered",
        "nickname",
        "agent_id",
        "pricing",
        "options",
        "host_control_mode",
    ]
    .map(field)
    .join("\t")
}

/// `browse --post-id`: one invitation in full.
pub fn browse_one(ctx: &Ctx, post_id: &str) -> Result<Outcome> {
    let c = client(ctx)?;
    let path = format!("/api/v1/invitations/{}", encode(post_id));
    let mut v = runtime()?.block_on(c.call("GET", &path, None, &[200]))?;
    if let Value::Object(m) = &mut v {
        let why = crate::services::remote::unjoinable(m);
        m.insert("unjoinable", why.map_or(Value::Null, Value::from));
    }
    writeln!(std::io::stdout(), "{}", crate::session::files::pretty(&v))?;
    Ok(Outcome::Ok)
}

/// `palaver ratings <agent>`.
pub fn ratings(ctx: &Ctx, agent: &str, limit: u16) -> Result<Outcome> {
    let c = client(ctx)?;
    let path = format!("/api/v1/agents/{}/ratings?limit={limit}", encode(agent));
    let v = runtime()?.block_on(c.call("GET", &path, None, &[200]))?;
    print(
        ctx,
        |out| {
            let g = |k: &str| v.get(k).map(Value::py_str).unwrap_or_default();
            let avg = v
                .get("average")
                .and_then(Value::as_f64)
                .map_or("-".to_owned(), |a| format!("{a:.2}"));
            writeln!(
                out,
                "{} ({}): {} ratings, average {avg}",
                g("nickname"),
                g("agent_id"),
                g("count")
            )?;
            for r in v
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let f = |k: &str| r.get(k).map(Value::py_str).unwrap_or_default();
                let rater: String = f("rater_public_key").chars().take(12).collect();
                let session: String = f("session_id").chars().take(12).collect();
                writeln!(
                    out,
                    "  {}  by {rater}  session {session}  {}",
                    f("score"),
                    f("comment")
                )?;
            }
            Ok(())
        },
        &v,
    )?;
    Ok(Outcome::Ok)
}

/// `palaver agent-stats <agent>`.
pub fn agent_stats(ctx: &Ctx, agent: &str) -> Result<Outcome> {
    let c = client(ctx)?;
    let path = format!("/api/v1/agents/{}/stats", encode(agent));
    let v = runtime()?.block_on(c.call("GET", &path, None, &[200]))?;
    print(
        ctx,
        |out| {
            for k in [
                "nickname",
                "agent_id",
                "total_sessions",
                "successful_sessions",
                "success_rate",
                "wins",
                "ratings",
                "rating_average",
                "weighted_score",
                "confidence_level",
            ] {
                let shown = match v.get(k) {
                    Some(Value::Number(crate::json::Number::Float(f))) => format!("{f:.3}"),
                    Some(Value::Null) | None => "-".to_owned(),
                    Some(x) => x.py_str(),
                };
                writeln!(out, "{k}: {shown}")?;
            }
            Ok(())
        },
        &v,
    )?;
    Ok(Outcome::Ok)
}

/// `palaver doctor`.
pub fn doctor(ctx: &Ctx) -> Result<Outcome> {
    use crate::services::doctor::{self, Status};
    let data_dir = ctx.data_dir()?;
    let server = match server_url(ctx) {
        Ok(s) => Some(s),
        Err(_) if ctx.server.is_none() => None,
        Err(e) => return Err(e),
    };
    let input = doctor::Input {
        data_dir,
        server,
        hooks_python: crate::services::protocol::hooks_python(),
        exe: std::env::current_exe().ok(),
    };
    let rt = runtime()?;
    let checks = rt.block_on(doctor::run(&input));
    rt.shutdown_background();
    let failed = checks.iter().any(|c| c.status == Status::Fail);
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "ok": !failed, "checks": checks }))?;
        return Ok(if failed {
            Outcome::Rejected
        } else {
            Outcome::Ok
        });
    }
    print(
        ctx,
        |out| {
            for c in &checks {
                let tag = match c.status {
                    Status::Ok => "ok  ",
                    Status::Warn => "warn",
                    Status::Fail => "FAIL",
                    Status::Skipped => "-   ",
                };
                writeln!(out, "{tag}  {:<13} {}", c.name, c.detail)?;
                if let Some(f) = &c.fix {
                    writeln!(out, "      {:<13} → {f}", "")?;
                }
            }
            Ok(())
        },
        &Value::Null,
    )?;
    Ok(if failed {
        Outcome::Rejected
    } else {
        Outcome::Ok
    })
}

pub fn cancel(ctx: &Ctx, post_id: &str) -> Result<Outcome> {
    let c = client(ctx)?;
    runtime()?.block_on(c.call(
        "DELETE",
        &format!("/api/v1/invitations/{}", encode(post_id)),
        None,
        &[204],
    ))?;
    print(
        ctx,
        |out| writeln!(out, "Cancelled {post_id}."),
        &Value::Object(crate::obj! { "status" => "cancelled", "post_id" => post_id }),
    )?;
    Ok(Outcome::Ok)
}

/// A JSON request whose reply is printed as it is.
pub fn call(
    ctx: &Ctx,
    method: &str,
    path: &str,
    body: Option<Value>,
    expected: &[u16],
) -> Result<Outcome> {
    let c = client(ctx)?;
    let v = runtime()?.block_on(c.call(method, path, body.as_ref(), expected))?;
    if ctx.json || !v.is_null() {
        writeln!(std::io::stdout(), "{}", crate::session::files::pretty(&v))?;
    }
    Ok(Outcome::Ok)
}

/// What `palaver session get|status|result|transport-get|transport-update`
/// asks of the community server.
pub enum Remote {
    Get { session_id: String },
    Status { session_id: String, status: String },
    Result { session_id: String, winner: String },
    Transport { session_id: String },
    TransportSet { session_id: String, ticket: String },
}

/// The community server's record of a session.
pub fn remote(ctx: &Ctx, cmd: Remote) -> Result<Outcome> {
    use Remote as RemoteCmd;
    let path = |id: &str, tail: &str| format!("/api/v1/sessions/{}{tail}", encode(id));
    match cmd {
        RemoteCmd::Get { session_id } => call(ctx, "GET", &path(&session_id, ""), None, &[200]),
        RemoteCmd::Status { session_id, status } => call(
            ctx,
            "POST",
            &path(&session_id, "/status"),
            Some(Value::Object(crate::obj! { "status" => status })),
            &[200],
        ),
        RemoteCmd::Result { session_id, winner } => call(
            ctx,
            "POST",
            &path(&session_id, "/result"),
            Some(Value::Object(crate::obj! { "winner" => winner })),
            &[200],
        ),
        RemoteCmd::Transport { session_id } => {
            call(ctx, "GET", &path(&session_id, "/transport"), None, &[200])
        }
        RemoteCmd::TransportSet { session_id, ticket } => {
            let c = client(ctx)?;
            let rt = runtime()?;
            let record = rt.block_on(c.call("GET", &path(&session_id, ""), None, &[200]))?;
            let pid = record
                .get("protocol_id")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
                .map(str::to_owned);
            let canonical = crate::web::auth::transport_binding_canonical(
                &c.keys().public_key,
                "iroh",
                &ticket,
                pid.as_deref(),
            );
            let body = Value::Object(
                crate::obj! { "iroh_ticket" => ticket.as_str(), "transport_binding_signature" => c.keys().sign(canonical.as_bytes()) },
            );
            let v = rt.block_on(c.call(
                "PATCH",
                &path(&session_id, "/transport"),
                Some(&body),
                &[200],
            ))?;
            writeln!(std::io::stdout(), "{}", crate::session::files::pretty(&v))?;
            Ok(Outcome::Ok)
        }
    }
}
