//! `palaver wolf …`: the AIWolf NLP werewolf server, client and local bot
//! games.

use crate::engine::ControlMode;
use crate::werewolf::agent::{BotDecider, JoinLimits, JoinOptions, join, join_with};
use crate::werewolf::bot::Bot;
use crate::werewolf::config::Config;
use crate::werewolf::game::GameEvent;
use crate::werewolf::server::{Server, serve};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Subcommand)]
pub enum WolfCmd {
    /// Run an AIWolf NLP compatible game server (WebSocket at /ws).
    Serve(ServeArgs),
    /// Sit at an AIWolf server as one agent.
    Join(JoinArgs),
    /// Play an in-process bot game and print it (god view).
    Play(PlayArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TOML configuration (default: the shipped 5-player one).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on (overrides server.bind).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
    /// Players per game when no --config is given: 5, 9 or 13.
    #[arg(long, default_value_t = 5)]
    pub players: usize,
    /// Seed for role draws and talk orders.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Start this many bot agents (each its own team, pbotA1, pbotB1, …)
    /// that keep joining games; with matching.self_match = false they fill
    /// the seats other teams leave.
    #[arg(long, default_value_t = 0, value_parser = parse_bots)]
    pub bots: usize,
}

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// Server URL, e.g. ws://127.0.0.1:8080/ws.
    pub url: String,
    /// Connection name (team + digits), e.g. team1.
    #[arg(long)]
    pub name: String,
    /// Who decides: autonomous (the bot, plain output here); human and
    /// hybrid open the console's werewolf screen seated at the server,
    /// with the decision prompt (they need a terminal).
    #[arg(long, value_enum, default_value = "autonomous")]
    pub control_mode: Mode,
    /// PLAYER token (JWT) when the server requires one.
    #[arg(long, env = "AIWOLF_TOKEN")]
    pub token: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Games to play (reconnecting after each).
    #[arg(long, default_value_t = 1)]
    pub games: usize,
    /// Seconds to connect and upgrade to WebSocket before giving up.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0,
          value_parser = |s: &str| crate::limits::WOLF_CONNECT_TIMEOUT.parse_arg(s))]
    pub connect_timeout: f64,
    /// Seconds of silence from the server (waiting room included) before
    /// giving up.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0,
          value_parser = |s: &str| crate::limits::WOLF_IDLE_TIMEOUT.parse_arg(s))]
    pub idle_timeout: f64,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Mode {
    Autonomous,
    Hybrid,
    Human,
}

#[derive(Debug, Args)]
pub struct PlayArgs {
    #[arg(long, default_value_t = 5)]
    pub players: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write every packet the seats received, one JSON object per line.
    #[arg(long, value_name = "FILE")]
    pub packets: Option<PathBuf>,
    /// Write the game .log here.
    #[arg(long, value_name = "FILE")]
    pub game_log: Option<PathBuf>,
}

/// `--bots`: at most [`crate::limits::WOLF_BOTS`].
fn parse_bots(s: &str) -> Result<usize, String> {
    let n: i64 = s
        .trim()
        .parse()
        .map_err(|_| format!("--bots must be a whole number, got {s:?}"))?;
    crate::limits::WOLF_BOTS
        .check(n)
        .map(|n| n as usize)
        .map_err(|e| e.to_string())
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

pub fn run(ctx: &super::Ctx, cmd: WolfCmd) -> Result<super::Outcome> {
    match cmd {
        WolfCmd::Serve(a) => serve_cmd(a),
        WolfCmd::Join(a) => join_cmd(ctx, a),
        WolfCmd::Play(a) => play_cmd(a),
    }
}

fn serve_cmd(a: ServeArgs) -> Result<super::Outcome> {
    let mut cfg = match &a.config {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Config::from_toml(&text).with_context(|| p.display().to_string())?
        }
        None => Config::default_for(a.players)?,
    };
    if let Some(b) = &a.bind {
        cfg.server.bind = b.clone();
    }
    let bind = cfg.server.bind.clone();
    let srv = Server::new(cfg, a.seed)?;
    runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&bind)
            .await
            .with_context(|| format!("binding {bind}"))?;
        let addr = listener.local_addr()?;
        eprintln!("palaver wolf server on ws://{addr}/ws (spectate: http://{addr}/api/v1/games)");
        for i in 0..a.bots {
            let letter = (b'A' + (i % 26) as u8) as char;
            let opts = JoinOptions {
                url: format!("ws://{addr}/ws"),
                name: format!("pbot{letter}1"),
                token: None,
                seed: a.seed.wrapping_add(i as u64),
            };
            tokio::spawn(async move {
                let mut n = 0u64;
                loop {
                    let mut d = BotDecider(Bot::new(opts.seed.wrapping_add(n)));
                    if join(&opts, &mut d).await.is_err() {
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    }
                    n += 1;
                }
            });
        }
        tokio::select! {
            r = serve(listener, srv) => r?,
            _ = tokio::signal::ctrl_c() => eprintln!("palaver wolf server: stopping"),
        }
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(super::Outcome::Ok)
}

fn join_cmd(ctx: &super::Ctx, a: JoinArgs) -> Result<super::Outcome> {
    let mode = match a.control_mode {
        Mode::Autonomous => None,
        Mode::Hybrid => Some(ControlMode::Hybrid),
        Mode::Human => Some(ControlMode::Human),
    };
    if let Some(mode) = mode {
        // A person decides: the console's werewolf screen, seated there.
        if a.games != 1 {
            bail!("--games is for the autonomous client; the console plays one game");
        }
        let mut opts = super::console_options(ctx, super::ConsoleArgs::default())?;
        opts.wolf_join = Some(crate::tui::effect::JoinSpec {
            url: a.url,
            name: a.name,
            token: a.token,
            mode,
            seed: a.seed,
        });
        crate::tui::run(opts)?;
        return Ok(super::Outcome::Ok);
    }
    let opts = JoinOptions {
        url: a.url.clone(),
        name: a.name.clone(),
        token: a.token.clone(),
        seed: a.seed,
    };
    let limits = JoinLimits {
        connect: crate::limits::WOLF_CONNECT_TIMEOUT.check(a.connect_timeout)?,
        idle: crate::limits::WOLF_IDLE_TIMEOUT.check(a.idle_timeout)?,
        ..JoinLimits::default()
    };
    runtime()?.block_on(async {
        for g in 1..=a.games {
            let mut d = BotDecider(Bot::new(a.seed.wrapping_add(g as u64 - 1)));
            let at = || format!("game {g} at {}", a.url);
            let r = match join_with(&opts, &limits, &mut d).await {
                Ok(r) => r,
                Err(e) => {
                    if ctx.json {
                        json_line(&serde_json::json!({
                            "game": g,
                            "url": a.url,
                            "name": a.name,
                            "finished": false,
                            "error": e.to_string(),
                            "kind": e.kind(),
                        }))?;
                    }
                    return Err(anyhow::Error::new(e).context(at()));
                }
            };
            let v = &r.view;
            let unfinished = (!r.finished).then(|| {
                format!(
                    "the server closed the connection before FINISH (day {} of game {})",
                    v.day, v.game_id
                )
            });
            if ctx.json {
                let mut line = serde_json::json!({
                    "game": g,
                    "url": a.url,
                    "name": a.name,
                    "game_id": v.game_id,
                    "agent": v.me,
                    "role": v.role.map(|r| r.as_str()),
                    "day": v.day,
                    "packets": r.packets,
                    "answers": r.answered,
                    "fallbacks": r.fallbacks,
                    "finished": r.finished,
                    "winner": v.finished.map(|t| t.as_str()),
                });
                if let Some(u) = &unfinished {
                    line["error"] = u.clone().into();
                    line["kind"] = "connection".into();
                }
                json_line(&line)?;
            } else {
                println!(
                    "game {} as {} ({}): {} packets, {} answers, {} fallbacks, winner {}",
                    v.game_id,
                    v.me,
                    v.role.map(|r| r.as_str()).unwrap_or("?"),
                    r.packets,
                    r.answered,
                    r.fallbacks,
                    v.finished.map(|t| t.as_str()).unwrap_or("unfinished")
                );
            }
            if let Some(u) = unfinished {
                return Err(anyhow::anyhow!(u).context(at()));
            }
        }
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(super::Outcome::Ok)
}

/// One JSON object on one line of stdout (`wolf join --json`: a line per
/// game, and one for the error that ended the run).
fn json_line(v: &serde_json::Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v).context("writing JSON")?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

fn play_cmd(a: PlayArgs) -> Result<super::Outcome> {
    let cfg = Arc::new(Config::default_for(a.players)?);
    let (out, packets, events) = runtime()?.block_on(async {
        let n = cfg.game.agent_count;
        let game = crate::werewolf::Game::new(
            cfg.clone(),
            &crate::werewolf::local::bot_entrants(n),
            a.seed,
            None,
        )?;
        let mut io = crate::werewolf::local::LocalTransport::bots(n, a.seed);
        io.capture = Some(Vec::new());
        let mut events: Vec<GameEvent> = Vec::new();
        let out = game.run(&mut io, &mut events).await;
        Ok::<_, anyhow::Error>((out, io.capture.take().unwrap_or_default(), events))
    })?;
    if let Some(p) = &a.packets {
        let mut f = std::io::BufWriter::new(std::fs::File::create(p)?);
        for (_, pk) in &packets {
            writeln!(f, "{}", pk.to_json())?;
        }
    }
    let mut log = crate::werewolf::logs::GameLog::new(a.game_log.clone());
    for e in &events {
        crate::werewolf::Observer::event(&mut log, e);
    }
    println!("{}", log.text());
    println!(
        "winner: {} ({:?}, day {})",
        out.winner.as_str(),
        out.reason,
        out.day
    );
    Ok(super::Outcome::Ok)
}
