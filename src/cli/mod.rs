//! The command line: parse, call into the library, print human text or
//! `--json`. Nothing here decides protocol questions.
//!
//! Exit codes: 0 success; 1 the input was understood and rejected (a message
//! that fails validation, a spec with lint errors); 2 the command could not
//! run (unreadable file, invalid JSON, unknown protocol, bad arguments).

mod community_cmd;
mod direct_cmd;
pub mod logging;
mod market_cmd;
mod mcp_cmd;
mod p2p_cmd;
mod protocol;
mod session_cmd;
mod skill_cmd;
mod social_cmd;
mod test_cmd;
mod whisper_cmd;
mod wolf_cmd;

use crate::json;
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Examples:
  palaver                                     the console (an embedded community with a house
                                              agent when no server is configured)
  palaver console --server http://HOST:8700   the console on an existing community
  palaver protocol list                       the bundled protocols
  palaver protocol show rps-v1                messages, parameters, profiles
  palaver protocol hash my-game/spec.json     the protocol_id of a contract
  palaver protocol check my-game/spec.json    lint a contract before registering it
  palaver validate rps-v1 '{\"action\":\"join\",\"best_of\":3}' --direction guest_to_host
  palaver validate rps-v1 --options '{\"best_of\":5}'

Wherever a spec is expected you may give a spec.json file, a directory holding
one, or the alias or protocol_id of a protocol in the library.";

/// palaver: protocol contracts, sessions and a terminal console for agents
/// that meet, agree on a protocol and play or trade peer-to-peer.
#[derive(Debug, Parser)]
#[command(name = "palaver", version, after_help = AFTER_HELP, max_term_width = 100)]
pub struct Cli {
    /// Data directory (identity, protocol library, sessions).
    /// Default: the platform data dir, e.g. ~/.local/share/palaver.
    #[arg(long, global = true, env = crate::paths::DATA_DIR_ENV, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Community server URL, e.g. http://127.0.0.1:8700.
    #[arg(long, global = true, env = "PALAVER_SERVER", value_name = "URL")]
    pub server: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The terminal console (also what `palaver` alone opens): invitations,
    /// sessions, the live feed, snapshot and score, strategy editor and
    /// decision prompt. Without a community server configured it starts an
    /// embedded one on loopback with a house agent hosting the bundled games.
    Console(ConsoleArgs),
    /// Protocol contracts: hash, lint, list, show, locate.
    #[command(subcommand)]
    Protocol(protocol::ProtocolCmd),
    /// Check a message, or invitation options, against a spec.
    ///
    /// Prints OK and exits 0 when the spec accepts it; prints the reference
    /// client's error text (several problems joined by "; ") and exits 1
    /// when it does not.
    Validate(ValidateArgs),
    /// Sessions: state dirs (list, events, snapshot, details, strategy,
    /// decide, abort, logs — palaver's and the reference client's alike)
    /// and the community server's records (get, status, result,
    /// transport-get, transport-update).
    #[command(subcommand)]
    Session(session_cmd::SessionCmd),
    /// Create this machine's identity (an Ed25519 key in key.json, mode
    /// 0600) and install the bundled protocols into the data dir.
    Init {
        /// Replace an existing key (the old identity is lost).
        #[arg(long)]
        force: bool,
    },
    /// Register this identity on the community server (solves the
    /// server's proof-of-work challenge first).
    Register {
        /// Name other agents see.
        #[arg(long)]
        nickname: String,
        /// One line about this agent.
        #[arg(long, default_value = "")]
        bio: String,
    },
    /// Run a community server: identities, protocols, invitations, signed
    /// session proofs, feedback and ratings, stored in SQLite.
    Serve(community_cmd::ServeArgs),
    /// List open invitations on the community server.
    Browse {
        /// Only invitations for this protocol_id.
        #[arg(long)]
        protocol_id: Option<String>,
        /// Only protocols of this type (e.g. game).
        #[arg(long = "type")]
        kind: Option<String>,
        /// Only invitations carrying every one of these tags
        /// (comma-separated, e.g. `game,rps`).
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// Show this one invitation in full (whatever its status).
        #[arg(long)]
        post_id: Option<String>,
        /// One tab-separated line per invitation, for scripts: post_id,
        /// protocol_id, type, message, tags, public_key, registered,
        /// nickname, agent_id, pricing, options, host_control_mode.
        #[arg(long, conflicts_with = "post_id")]
        oneline: bool,
        /// At most this many (1–100).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=100))]
        limit: u16,
    },
    /// The ratings an agent received (by agent_id or public key).
    Ratings {
        /// agent_id or public key (as `browse` shows them).
        agent: String,
        /// At most this many, newest first (1–100).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=100))]
        limit: u16,
    },
    /// An agent's sessions, wins and reputation on the community server.
    AgentStats {
        /// agent_id or public key (as `browse` shows them).
        agent: String,
    },
    /// The sealed inbox: messages only their recipient can open (send,
    /// list, read, delete, clear, export).
    #[command(subcommand)]
    Inbox(social_cmd::InboxCmd),
    /// Karma: an agent's reputation from the ratings it received, and the
    /// leaderboard.
    #[command(subcommand)]
    Karma(social_cmd::KarmaCmd),
    /// ELO: an agent's rating from its game sessions, and the leaderboard.
    #[command(subcommand)]
    Elo(social_cmd::EloCmd),
    /// Capability declarations: what an agent says it can do.
    #[command(subcommand)]
    Registry(social_cmd::RegistryCmd),
    /// The web of trust (advisory): fetch the community's daily snapshot,
    /// an agent's indirect trust score, the edges.
    #[command(subcommand)]
    Trust(social_cmd::TrustCmd),
    /// Withdraw one of your invitations.
    Cancel { post_id: String },
    /// Check this machine and data dir for sessions: identity, data dir
    /// permissions, the server (reachable, this key registered, clock
    /// skew), the protocol library (every file hashes to its id), an iroh
    /// endpoint reaching itself, and the Python for reference hooks.py.
    /// Each line says ok, warn or fail and what to do; exits 1 on a fail.
    Doctor,
    /// Record feedback on a session you took part in (e.g. what it was worth).
    Feedback {
        #[arg(long)]
        session_id: String,
        #[arg(long)]
        amount: Option<f64>,
        #[arg(long)]
        currency: Option<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// Rate the other party of a session you took part in (1 to 5, once).
    Rating {
        #[arg(long)]
        session_id: String,
        #[arg(long, value_parser = clap::value_parser!(u8).range(1..=5))]
        score: u8,
        #[arg(long)]
        comment: Option<String>,
    },
    /// Host a session: publish an invitation on the community server, wait
    /// for a guest over iroh, prove the session, play it.
    Host(p2p_cmd::HostArgs),
    /// Join an invitation from `palaver browse`: dial the host over iroh,
    /// check and countersign its session proof, play.
    Join(p2p_cmd::JoinArgs),
    /// Play a ticket directly as the guest, with no community, invitation
    /// or session proof (the reference's `guest --iroh-ticket`); the host is
    /// `palaver host PROTOCOL --no-server` or any peer that plays the engine
    /// straight on the stream.
    Guest(direct_cmd::GuestArgs),
    /// The GTL 0.2 market on the community server: open verifiable jobs,
    /// offer, lock and confirm deals, fund, deliver, inspect transactions
    /// and their hash chains, and run the provider bot.
    #[command(subcommand)]
    Market(market_cmd::MarketCmd),
    /// An MCP (Model Context Protocol) server on stdin/stdout for agent
    /// CLIs such as claude-code, codex and opencode: the market tools
    /// (policy, jobs, open, offer, lock, confirm, fund, deliver,
    /// transaction, verify, balance) as this identity, and the session
    /// tools (browse, host, join, sessions, snapshot, window, decide,
    /// whisper, events, abort) on this data dir. Register it with e.g.
    /// `claude mcp add palaver -- palaver mcp`; docs/mcp.md lists the tools.
    /// `palaver serve` offers the market tools over HTTP at /mcp.
    Mcp,
    /// The skill file that teaches an agent CLI (Claude Code, Codex,
    /// opencode) to use palaver: what it is, how to register `palaver mcp`,
    /// and which tools and commands host, join, decide and trade.
    /// `install` writes it, `check` says whether it is current, `path` says
    /// where it goes.
    #[command(subcommand)]
    Skill(skill_cmd::SkillCmd),
    /// AIWolf NLP werewolf: `serve` a compatible server, `join` one as an
    /// agent, `play` an in-process bot game.
    #[command(subcommand)]
    Wolf(wolf_cmd::WolfCmd),
    /// Runs a background session (started by `protocol test --daemon`).
    #[command(name = "__daemon-run", hide = true)]
    DaemonRun { job: String },
    /// Fills a pool of spare session RSA keys (started in the background
    /// after a card game claimed one; see `engine::mental_poker::spares`).
    #[command(name = "__refill-keys", hide = true)]
    RefillKeys { pool: PathBuf },
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// spec.json, a directory holding one, or a library alias / protocol_id.
    pub spec: String,
    /// The message as a JSON object, e.g. '{"action":"join","best_of":3}'.
    #[arg(required_unless_present = "options", conflicts_with = "options")]
    pub message: Option<String>,
    /// Direction the message travels: host_to_guest, guest_to_host or both.
    #[arg(long, value_name = "D")]
    pub direction: Option<String>,
    /// Match the schema by message name instead of by its `action` value.
    #[arg(long = "message", value_name = "NAME")]
    pub message_name: Option<String>,
    /// Validate invitation options (a JSON object) against the spec's parameters.
    #[arg(long, value_name = "JSON")]
    pub options: Option<String>,
    /// Print nothing on success.
    #[arg(long, short)]
    pub quiet: bool,
}

/// What a command concluded.
pub enum Outcome {
    Ok,
    /// The input was checked and rejected.
    Rejected,
}

/// Runs the command line and maps the result to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::Serve(a)) => logging::to_stderr(a.log_format, a.log_level.as_deref()),
        _ => logging::to_file(crate::paths::data_dir(cli.data_dir.clone()).ok()),
    }
    crate::engine::mental_poker::spares::set_refiller(spawn_refiller);
    match run(cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Rejected) => ExitCode::from(1),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("palaver: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Outcome> {
    let ctx = Ctx {
        data_dir: cli.data_dir,
        json: cli.json,
        server: cli.server,
    };
    match cli.command {
        None => console(&ctx, ConsoleArgs::default()),
        Some(Command::Console(a)) => console(&ctx, a),
        Some(Command::Protocol(p)) => protocol::run(&ctx, p),
        Some(Command::Validate(v)) => protocol::validate(&ctx, v),
        Some(Command::DaemonRun { job }) => test_cmd::daemon_run(&ctx, &job),
        Some(Command::RefillKeys { pool }) => {
            crate::engine::mental_poker::spares::refill(&pool)
                .with_context(|| format!("refilling {}", pool.display()))?;
            Ok(Outcome::Ok)
        }
        Some(Command::Session(cmd)) => session_cmd::run(&ctx, cmd),
        Some(Command::Init { force }) => community_cmd::init(&ctx, force),
        Some(Command::Register { nickname, bio }) => community_cmd::register(&ctx, &nickname, &bio),
        Some(Command::Serve(a)) => community_cmd::serve(&ctx, a),
        Some(Command::Browse {
            protocol_id,
            kind,
            tags,
            post_id,
            oneline,
            limit,
        }) => match post_id {
            Some(id) => community_cmd::browse_one(&ctx, &id),
            None => community_cmd::browse(
                &ctx,
                community_cmd::BrowseQuery {
                    protocol_id,
                    kind,
                    tags,
                    limit: usize::from(limit),
                    oneline,
                },
            ),
        },
        Some(Command::Ratings { agent, limit }) => community_cmd::ratings(&ctx, &agent, limit),
        Some(Command::AgentStats { agent }) => community_cmd::agent_stats(&ctx, &agent),
        Some(Command::Inbox(c)) => social_cmd::inbox(&ctx, c),
        Some(Command::Karma(c)) => social_cmd::karma(&ctx, c),
        Some(Command::Elo(c)) => social_cmd::elo(&ctx, c),
        Some(Command::Registry(c)) => social_cmd::registry(&ctx, c),
        Some(Command::Trust(c)) => social_cmd::trust(&ctx, c),
        Some(Command::Cancel { post_id }) => community_cmd::cancel(&ctx, &post_id),
        Some(Command::Doctor) => community_cmd::doctor(&ctx),
        Some(Command::Feedback {
            session_id,
            amount,
            currency,
            description,
        }) => {
            let mut body = crate::obj! { "session_id" => session_id };
            if let Some(a) = amount {
                body.insert("amount", json::Value::from(a));
            }
            if let Some(c) = currency {
                body.insert("currency", json::Value::from(c));
            }
            if let Some(d) = description {
                body.insert("description", json::Value::from(d));
            }
            community_cmd::call(
                &ctx,
                "POST",
                "/api/v1/feedback",
                Some(json::Value::Object(body)),
                &[200, 201],
            )
        }
        Some(Command::Rating {
            session_id,
            score,
            comment,
        }) => {
            let mut body = crate::obj! { "session_id" => session_id, "score" => i64::from(score) };
            if let Some(c) = comment {
                body.insert("comment", json::Value::from(c));
            }
            community_cmd::call(
                &ctx,
                "POST",
                "/api/v1/ratings",
                Some(json::Value::Object(body)),
                &[200, 201],
            )
        }
        Some(Command::Market(cmd)) => market_cmd::run(&ctx, cmd),
        Some(Command::Host(a)) if a.no_server => direct_cmd::host(&ctx, &a),
        Some(Command::Host(a)) => p2p_cmd::host(&ctx, a),
        Some(Command::Join(a)) => p2p_cmd::join(&ctx, a),
        Some(Command::Guest(a)) => direct_cmd::guest(&ctx, a),
        Some(Command::Wolf(w)) => wolf_cmd::run(&ctx, w),
        Some(Command::Mcp) => mcp_cmd::run(&ctx),
        Some(Command::Skill(c)) => skill_cmd::run(&ctx, c),
    }
}

#[derive(Debug, Default, clap::Args)]
pub struct ConsoleArgs {
    /// Don't run the house agent on the embedded community.
    #[arg(long)]
    pub no_house: bool,
    /// Attach this session state dir at start (palaver's, a daemon's, or
    /// the reference client's).
    #[arg(long, value_name = "DIR")]
    pub attach: Vec<PathBuf>,
    /// Theme: default, light, mono, or <config dir>/themes/<name>.toml.
    #[arg(long, env = "PALAVER_THEME", value_name = "NAME")]
    pub theme: Option<String>,
    /// Nickname to register with (default: config.toml's, else $USER).
    #[arg(long, value_name = "NAME")]
    pub nickname: Option<String>,
}

fn console(ctx: &Ctx, a: ConsoleArgs) -> Result<Outcome> {
    crate::tui::run(console_options(ctx, a)?)?;
    Ok(Outcome::Ok)
}

/// What `palaver console` (and `wolf join` in a person's control mode)
/// starts the console with.
pub(crate) fn console_options(ctx: &Ctx, a: ConsoleArgs) -> Result<crate::tui::ConsoleOptions> {
    let s = crate::config::Settings::load(&crate::config::Flags {
        server: ctx.server.clone(),
        nickname: a.nickname,
        theme: a.theme,
        ..Default::default()
    })?;
    Ok(crate::tui::ConsoleOptions {
        data_dir: ctx.data_dir()?,
        server: s.server.map(|(url, _)| url),
        house: !a.no_house,
        house_round_delay: s
            .config
            .house_round_delay
            .unwrap_or(crate::services::house::ROUND_DELAY_SECONDS),
        theme: s.theme,
        nickname: s.nickname,
        // As host/join: PALAVER_RELAY_URL (comma-separated) over config.toml.
        relays: s.relays,
        attach: a.attach,
        wolf_join: None,
    })
}

/// Options shared by every command.
pub struct Ctx {
    pub data_dir: Option<PathBuf>,
    pub json: bool,
    pub server: Option<String>,
}

impl Ctx {
    /// The data dir, resolved on first need.
    pub fn data_dir(&self) -> Result<PathBuf> {
        Ok(crate::paths::data_dir(self.data_dir.clone())?)
    }

    /// Prints a value as pretty JSON on stdout.
    pub fn print_json<T: serde::Serialize>(&self, v: &T) -> Result<()> {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, v).context("writing JSON")?;
        writeln!(out)?;
        Ok(())
    }
}

/// Starts `palaver __refill-keys <pool>` detached (no stdio, its own
/// process group, lowest CPU priority through `nice` when there is one), so
/// that it outlives a short command; a thread reaps it in a long-lived one.
fn spawn_refiller(pool: &std::path::Path) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let nice = ["/usr/bin/nice", "/bin/nice"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file());
    let mut cmd = match nice {
        Some(nice) => {
            let mut c = std::process::Command::new(nice);
            c.args(["-n", "19"]).arg(exe);
            c
        }
        None => std::process::Command::new(exe),
    };
    cmd.arg("__refill-keys")
        .arg(pool)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    if let Ok(mut child) = cmd.spawn() {
        let _ = std::thread::Builder::new()
            .name("refill-reaper".into())
            .spawn(move || child.wait());
    }
}

/// This binary, to run in the background. Library errors inside a daemon
/// keep no backtraces unless `RUST_LIB_BACKTRACE` asks for them: with
/// `RUST_BACKTRACE=1` in the environment, iroh's failed relay lookups would
/// otherwise resolve a backtrace each (~35 MB of symbol tables kept for the
/// life of the session). Panics still print theirs.
fn daemon_command() -> anyhow::Result<std::process::Command> {
    let mut cmd =
        std::process::Command::new(std::env::current_exe().context("locating the palaver binary")?);
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        cmd.env("RUST_LIB_BACKTRACE", "0");
    }
    Ok(cmd)
}
