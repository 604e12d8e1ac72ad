//! The werewolf screen's work: in-process games (watched or with a person
//! at a seat), a seat at a remote server, following a server's game, and
//! listing a server's games. Every `GameEvent` (and, for a seat a person
//! plays, every `DecisionRequest`) goes back as a `WolfReport`.

use super::seat::{ConsoleDecider, SeatFeed, SeatNews};
use crate::engine::ControlMode;
use crate::tui::effect::{JoinSpec, WolfTask};
use crate::tui::report::Report;
use crate::tui::report::wolf::{GameInfo, WolfReport};
use crate::web::HttpLimits;
use crate::werewolf::agent::{ChannelDecider, DecisionRequest, JoinOptions};
use crate::werewolf::config::Config;
use crate::werewolf::game::GameEvent;
use crate::werewolf::{local, spectate};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

fn wolf(m: WolfReport) -> Report {
    Report::Wolf(Box::new(m))
}

/// Starts `t`; the handles of a game's tasks (the runner ends them when
/// the next game starts).
pub(super) fn start(t: WolfTask, tx: &UnboundedSender<Report>) -> Vec<AbortHandle> {
    let tx = tx.clone();
    match t {
        WolfTask::Watch {
            generation,
            seats,
            seed,
        } => watch(generation, seats, seed, tx),
        WolfTask::Play {
            generation,
            config,
            seed,
            seat,
            mode,
        } => play(generation, config, seed, seat, mode, tx),
        WolfTask::Join { generation, spec } => join(generation, spec, tx),
        WolfTask::Spectate {
            generation,
            url,
            token,
            game,
        } => vec![spectate(generation, url, token, game, tx)],
        WolfTask::Games { url, token } => {
            list_games(url, token, tx);
            Vec::new()
        }
    }
}

/// The library asks in hybrid mode for the bot's proposal; the console
/// answers it at once when the person chose autonomous.
fn asked_mode(mode: ControlMode) -> ControlMode {
    if mode == ControlMode::Human {
        ControlMode::Human
    } else {
        ControlMode::Hybrid
    }
}

fn watch(g: u64, seats: usize, seed: u64, tx: UnboundedSender<Report>) -> Vec<AbortHandle> {
    let game = match local::spawn_bot_game(seats, seed) {
        Ok(game) => game,
        Err(e) => {
            let _ = tx.send(wolf(WolfReport::Ended(g, Err(e.to_string()))));
            return Vec::new();
        }
    };
    let game_task = game.handle.abort_handle();
    let t = tokio::spawn(async move {
        let local::LocalGame {
            mut events, handle, ..
        } = game;
        while let Some(e) = events.recv().await {
            if tx.send(wolf(WolfReport::Event(g, e))).is_err() {
                return;
            }
        }
        let r = match handle.await {
            Ok(Ok(o)) => Ok(format!(
                "game {} over: {} ({seats} bots, seed {seed})",
                o.game_id,
                o.winner.as_str()
            )),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("the game task ended: {e}")),
        };
        let _ = tx.send(wolf(WolfReport::Ended(g, r)));
    });
    vec![game_task, t.abort_handle()]
}

fn play(
    g: u64,
    cfg: Box<Config>,
    seed: u64,
    seat: usize,
    mode: ControlMode,
    tx: UnboundedSender<Report>,
) -> Vec<AbortHandle> {
    let game = match local::spawn_seat_game(*cfg, seed, seat, asked_mode(mode)) {
        Ok(game) => game,
        Err(e) => {
            let _ = tx.send(wolf(WolfReport::Ended(g, Err(e.to_string()))));
            return Vec::new();
        }
    };
    let game_task = game.handle.abort_handle();
    let t = tokio::spawn(async move {
        let local::LocalGame {
            events,
            decisions,
            handle,
        } = game;
        let _ = tx.send(wolf(WolfReport::Seated(g, seat + 1, mode)));
        let Some(decisions) = decisions else {
            return;
        };
        let to_msgs = |e| vec![WolfReport::Event(g, e)];
        if !forward_seat(g, events, to_msgs, decisions, &tx).await {
            return;
        }
        let r = match handle.await {
            Ok(Ok(o)) => Ok(format!("game over: {} wins", o.winner.as_str())),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("the game task ended: {e}")),
        };
        let _ = tx.send(wolf(WolfReport::Ended(g, r)));
    });
    vec![game_task, t.abort_handle()]
}

/// Takes a seat at a remote server: `agent::join` runs in a task with the
/// prompt's channel deciding; the seat's packets become the board.
fn join(g: u64, spec: JoinSpec, tx: UnboundedSender<Report>) -> Vec<AbortHandle> {
    let (inner, decisions) = ChannelDecider::new(asked_mode(spec.mode), spec.seed);
    let (ptx, packets) = tokio::sync::mpsc::unbounded_channel();
    let opts = JoinOptions {
        url: spec.url.clone(),
        name: spec.name.clone(),
        token: spec.token.clone().filter(|t| !t.is_empty()),
        seed: spec.seed,
    };
    let client = tokio::spawn(async move {
        let mut d = ConsoleDecider {
            inner,
            packets: ptx,
        };
        crate::werewolf::agent::join(&opts, &mut d).await
    });
    let client_task = client.abort_handle();
    let mode = spec.mode;
    let t = tokio::spawn(async move {
        let mut feed = SeatFeed::default();
        let to_msgs = |(view, p)| {
            feed.feed(&view, &p)
                .into_iter()
                .map(|n| match n {
                    SeatNews::Seated(i) => WolfReport::Seated(g, i, mode),
                    SeatNews::Event(e) => WolfReport::Event(g, e),
                    SeatNews::Reveal(r) => WolfReport::Reveal(g, r),
                })
                .collect()
        };
        if !forward_seat(g, packets, to_msgs, decisions, &tx).await {
            return;
        }
        let r = match client.await {
            Ok(Ok(rep)) if rep.finished => Ok(format!(
                "game {} over: {} wins ({} answers, {} fallbacks)",
                rep.view.game_id,
                rep.view.finished.map(|t| t.as_str()).unwrap_or("nobody"),
                rep.answered,
                rep.fallbacks
            )),
            Ok(Ok(_)) => Err("the server closed the connection before the game ended".into()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("the client task ended: {e}")),
        };
        let _ = tx.send(wolf(WolfReport::Ended(g, r)));
    });
    vec![client_task, t.abort_handle()]
}

fn list_games(url: String, token: String, tx: UnboundedSender<Report>) {
    tokio::spawn(async move {
        let tok = (!token.is_empty()).then_some(token.as_str());
        let r = spectate::list_games(&url, tok)
            .await
            .map(|l| {
                let mut v: Vec<GameInfo> = l.iter().filter_map(GameInfo::from_json).collect();
                v.reverse();
                v
            })
            .map_err(|e| e.to_string());
        let _ = tx.send(wolf(WolfReport::Games(url, r)));
    });
}

fn spectate(
    g: u64,
    url: String,
    token: String,
    id: String,
    tx: UnboundedSender<Report>,
) -> AbortHandle {
    let t = tokio::spawn(async move {
        let tok = (!token.is_empty()).then_some(token.as_str());
        let limits = HttpLimits::default();
        match spectate::follow_with(&url, &id, tok, &limits).await {
            Ok(mut rx) => {
                let mut finished = false;
                let mut broken = None;
                while let Some(e) = rx.recv().await {
                    let e = match e {
                        Ok(e) => e,
                        Err(why) => {
                            broken = Some(why.to_string());
                            break;
                        }
                    };
                    finished |= matches!(e, GameEvent::Finished { .. });
                    if tx.send(wolf(WolfReport::Event(g, e))).is_err() {
                        return;
                    }
                }
                let r = match (finished, broken) {
                    (true, _) => Ok(format!("game {id} is over")),
                    (false, Some(why)) => Err(format!("the stream of game {id} broke: {why}")),
                    (false, None) => Err(format!("the stream of game {id} closed before its end")),
                };
                let _ = tx.send(wolf(WolfReport::Ended(g, r)));
            }
            Err(e) => {
                let _ = tx.send(wolf(WolfReport::Ended(g, Err(e.to_string()))));
            }
        }
    });
    t.abort_handle()
}

/// Forwards a seat's news and its decision requests as reports until the
/// news ends, news first: the seat is told what happened before it is
/// asked, and the prompt needs that shown. False when the console is gone.
async fn forward_seat<T>(
    g: u64,
    mut news: tokio::sync::mpsc::UnboundedReceiver<T>,
    mut to_msgs: impl FnMut(T) -> Vec<WolfReport>,
    mut decisions: tokio::sync::mpsc::Receiver<DecisionRequest>,
    tx: &UnboundedSender<Report>,
) -> bool {
    let mut asking = true;
    loop {
        tokio::select! {
            biased;
            n = news.recv() => match n {
                Some(n) => {
                    for m in to_msgs(n) {
                        if tx.send(wolf(m)).is_err() {
                            return false;
                        }
                    }
                }
                None => return true,
            },
            d = decisions.recv(), if asking => match d {
                Some(d) => {
                    if tx.send(wolf(WolfReport::Decision(g, Box::new(d)))).is_err() {
                        return false;
                    }
                }
                None => asking = false,
            },
        }
    }
}
