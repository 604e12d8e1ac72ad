//! The werewolf screen (F3): watch an in-process bot game of 5, 9 or 13
//! seats with the god view, follow a game on a `palaver wolf serve` server
//! the same way, or play a seat in a bot game with the decision prompt.
//!
//! Games run in tasks that forward every [`GameEvent`] (and, for a seat a
//! person plays, every [`DecisionRequest`]) as `Action::Wolf`; `update`
//! folds them into a [`board::Board`]. An in-process bot game finishes in
//! milliseconds, so a watched game is replayed at a reading pace (events
//! queue and are shown a few per second; Enter changes the speed, C-k
//! catches up); spectated and played games are shown live.

pub mod board;
pub mod prompt;
pub mod remote;
mod view;

use super::action::{Action, Shared};
use super::keymap::Context;
use super::screen::{Env, Paint, Screen};
use crate::werewolf::agent::{ChannelDecider, ControlMode, DecisionRequest, JoinOptions};
use crate::werewolf::config::Config;
use crate::werewolf::game::GameEvent;
use crate::werewolf::{Request, Role, local, spectate};
use board::Board;
use crossterm::event::{KeyCode, KeyModifiers};
use prompt::Decision;
use ratatui::Frame;
use ratatui::layout::Rect;
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// A decision request on its way to `update` (taken out exactly once).
pub type DecisionSlot = Shared<Mutex<Option<DecisionRequest>>>;

/// A game a server lists.
#[derive(Debug, Clone, PartialEq)]
pub struct GameInfo {
    pub id: String,
    pub day: i64,
    pub finished: bool,
    pub winner: Option<String>,
    pub seats: usize,
    pub alive: usize,
}

impl GameInfo {
    /// One entry of `/api/v1/games` (None if it has no id).
    pub fn from_json(v: &serde_json::Value) -> Option<GameInfo> {
        let agents = v.get("agents").and_then(|a| a.as_array());
        Some(GameInfo {
            id: v.get("id")?.as_str()?.to_owned(),
            day: v.get("day").and_then(|d| d.as_i64()).unwrap_or(0),
            finished: v.get("finished").and_then(|f| f.as_bool()).unwrap_or(false),
            winner: v
                .get("win_side")
                .and_then(|w| w.as_str())
                .map(str::to_owned),
            seats: agents.map(Vec::len).unwrap_or(0),
            alive: agents
                .map(|a| {
                    a.iter()
                        .filter(|x| x.get("alive").and_then(|b| b.as_bool()) == Some(true))
                        .count()
                })
                .unwrap_or(0),
        })
    }
}

/// Reports for this screen. Events and decisions carry the generation of
/// the game they belong to; reports of a game that was replaced are dropped.
#[derive(Debug, Clone, PartialEq)]
pub enum WolfMsg {
    /// A god-view event of the game.
    Event(u64, GameEvent),
    /// The game gives a person seat `idx` (1-based) in `mode`: the board
    /// shows only what that seat knows from here on.
    Seated(u64, usize, ControlMode),
    /// The played seat is asked something.
    Decision(u64, DecisionSlot),
    /// The game (or the stream followed) ended: a summary or why it failed.
    Ended(u64, Result<String, String>),
    /// The games of a server (its base URL, the list or the error).
    Games(String, Result<Vec<GameInfo>, String>),
    /// Roles a remote seat was told at the end (1-based seat, role).
    Reveal(u64, Vec<(usize, Role)>),
    /// Take a seat at a remote server (what `palaver wolf join
    /// --control-mode human|hybrid` opens the console with).
    Join(JoinSpec),
}

/// A remote seat to take: where, as whom, and who decides.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinSpec {
    /// The server's WebSocket URL, e.g. `ws://127.0.0.1:8080/ws`.
    pub url: String,
    /// The connection name answered to NAME, e.g. `team1`.
    pub name: String,
    pub token: Option<String>,
    pub mode: ControlMode,
    pub seed: u64,
}

fn wolf(m: WolfMsg) -> Action {
    Action::Wolf(Box::new(m))
}

/// Where the board's events come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Events handed in directly (generation 0: nothing started here).
    Replay,
    Watch(usize),
    Spectate {
        url: String,
        game: String,
    },
    Play(ControlMode),
}

/// Replay speeds of a watched game, in shown events per second (`None`:
/// as fast as they come).
pub const SPEEDS: [Option<u32>; 5] = [Some(1), Some(2), Some(4), Some(10), None];
/// The speed a watched in-process game starts with (index in [`SPEEDS`]).
pub const WATCH_SPEED: usize = 2;
const LIVE: usize = SPEEDS.len() - 1;

/// Seat counts with shipped configurations.
pub const SEAT_CHOICES: [usize; 3] = [5, 9, 13];
pub const MODE_CHOICES: [ControlMode; 3] = [
    ControlMode::Human,
    ControlMode::Hybrid,
    ControlMode::Autonomous,
];

/// The small dialogs of the screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Dialog {
    /// How many seats to watch.
    Seats(usize),
    /// Which control mode to play in.
    Mode(usize),
    /// A server's base URL and an optional spectator token.
    Server {
        url: String,
        token: String,
        field: usize,
    },
    /// A remote seat: ws URL, name, optional token (fields 0-2) and the
    /// control mode (field 3, ←/→).
    Join {
        url: String,
        name: String,
        token: String,
        mode: usize,
        field: usize,
    },
    /// A server's games (newest first).
    Games {
        url: String,
        token: String,
        list: Option<Result<Vec<GameInfo>, String>>,
        selected: usize,
    },
}

pub struct WolfView {
    pub board: Option<Board>,
    pub source: Source,
    pub dialog: Option<Dialog>,
    pub decision: Option<Decision>,
    /// The talk line has the keys (else the arrows scroll the board).
    pub typing: bool,
    generation: u64,
    /// Events received but not shown yet (paced replay).
    pub queue: VecDeque<GameEvent>,
    pub speed: usize,
    /// Tenths of an event earned by ticks.
    credit: u32,
    /// The day shown (None: the current one).
    pub day: Option<i64>,
    /// Feed lines scrolled back from the end of the day.
    pub back: usize,
    pub hide_roles: bool,
    /// The last thing worth saying (ok?, text).
    pub note: Option<(bool, String)>,
    /// The stream's end was reported.
    pub ended: bool,
    /// What the end said, held back until the replay reaches it (a note
    /// must not tell the winner before the board does).
    end_note: Option<(bool, String)>,
    /// A second `w`/`p`/`c`/`J` abandons a played seat.
    abandon_armed: bool,
    /// The server and name of a remote seat being played.
    pub remote: Option<(String, String)>,
    tasks: Vec<AbortHandle>,
}

impl Default for WolfView {
    fn default() -> Self {
        WolfView {
            board: None,
            source: Source::Replay,
            dialog: None,
            decision: None,
            typing: false,
            generation: 0,
            queue: VecDeque::new(),
            speed: LIVE,
            credit: 0,
            day: None,
            back: 0,
            hide_roles: false,
            note: None,
            ended: false,
            end_note: None,
            abandon_armed: false,
            remote: None,
            tasks: Vec::new(),
        }
    }
}

impl Drop for WolfView {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What one event costs in replay steps: talk that says something, votes,
/// deaths and results take a step; bookkeeping and Skip/Over are free.
fn weight(e: &GameEvent) -> u32 {
    match e {
        GameEvent::Talk { talk, .. } => u32::from(!talk.skip && !talk.over),
        GameEvent::Phase { .. } | GameEvent::Vote { .. } | GameEvent::Started { .. } => 0,
        _ => 1,
    }
}

impl WolfView {
    /// The generation of the current game (reports must carry it).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether a person's seat is in a game that goes on.
    pub fn playing(&self) -> bool {
        matches!(self.source, Source::Play(_)) && !self.ended
    }

    fn stop(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }

    /// Ends the current game's tasks and starts a fresh board.
    fn reset(&mut self, source: Source) -> u64 {
        self.stop();
        self.generation += 1;
        self.speed = if matches!(source, Source::Watch(_)) {
            WATCH_SPEED
        } else {
            LIVE
        };
        // An empty board until the first event: the screen shows the game
        // is on its way (and its keys work) rather than the intro.
        self.board = match source {
            Source::Play(_) => None,
            _ => Some(Board::god()),
        };
        self.source = source;
        self.queue.clear();
        self.credit = 0;
        self.decision = None;
        self.typing = false;
        self.day = None;
        self.back = 0;
        self.ended = false;
        self.end_note = None;
        self.abandon_armed = false;
        self.remote = None;
        self.generation
    }

    fn say(&mut self, ok: bool, s: impl Into<String>) {
        self.note = Some((ok, s.into()));
    }

    fn start_watch(&mut self, seats: usize, env: &Env<'_>) {
        let seed: u64 = rand::random();
        let g = self.reset(Source::Watch(seats));
        match local::spawn_bot_game(seats, seed) {
            Ok(game) => {
                self.tasks.push(game.handle.abort_handle());
                let tx = env.tx.clone();
                let t = tokio::spawn(async move {
                    let local::LocalGame {
                        mut events, handle, ..
                    } = game;
                    while let Some(e) = events.recv().await {
                        if tx.send(wolf(WolfMsg::Event(g, e))).is_err() {
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
                    let _ = tx.send(wolf(WolfMsg::Ended(g, r)));
                });
                self.tasks.push(t.abort_handle());
                self.say(true, format!("watching {seats} bots (seed {seed})"));
            }
            Err(e) => self.say(false, e.to_string()),
        }
    }

    fn start_play(&mut self, mode: ControlMode, env: &Env<'_>) {
        let seed: u64 = rand::random();
        let g = self.reset(Source::Play(mode));
        let cfg = match Config::default_for(5) {
            Ok(c) => c,
            Err(e) => return self.say(false, e.to_string()),
        };
        let seat = (seed % 5) as usize;
        // The library asks in hybrid mode for the bot's proposal; the
        // console answers it at once in autonomous mode.
        let lib_mode = if mode == ControlMode::Human {
            ControlMode::Human
        } else {
            ControlMode::Hybrid
        };
        match local::spawn_seat_game(cfg, seed, seat, lib_mode) {
            Ok(game) => {
                self.tasks.push(game.handle.abort_handle());
                let tx = env.tx.clone();
                let t = tokio::spawn(async move {
                    let local::LocalGame {
                        events,
                        decisions,
                        handle,
                    } = game;
                    let _ = tx.send(wolf(WolfMsg::Seated(g, seat + 1, mode)));
                    let Some(decisions) = decisions else {
                        return;
                    };
                    let to_msgs = |e| vec![WolfMsg::Event(g, e)];
                    if !forward_seat(g, events, to_msgs, decisions, &tx).await {
                        return;
                    }
                    let r = match handle.await {
                        Ok(Ok(o)) => Ok(format!("game over: {} wins", o.winner.as_str())),
                        Ok(Err(e)) => Err(e.to_string()),
                        Err(e) => Err(format!("the game task ended: {e}")),
                    };
                    let _ = tx.send(wolf(WolfMsg::Ended(g, r)));
                });
                self.tasks.push(t.abort_handle());
                self.say(
                    true,
                    format!(
                        "you play seat {} ({}) in a 5-seat game",
                        seat + 1,
                        mode_name(mode)
                    ),
                );
            }
            Err(e) => self.say(false, e.to_string()),
        }
    }

    /// Takes a seat at a remote server: `agent::join` runs in a task with
    /// the prompt's channel deciding; the seat's packets become the board.
    pub fn start_join(&mut self, spec: JoinSpec, tx: &UnboundedSender<Action>) {
        let g = self.reset(Source::Play(spec.mode));
        self.remote = Some((spec.url.clone(), spec.name.clone()));
        // As for a local seat: the library asks in hybrid mode for the
        // bot's proposal; the console answers it at once when autonomous.
        let lib_mode = if spec.mode == ControlMode::Human {
            ControlMode::Human
        } else {
            ControlMode::Hybrid
        };
        let (inner, decisions) = ChannelDecider::new(lib_mode, spec.seed);
        let (ptx, packets) = tokio::sync::mpsc::unbounded_channel();
        let opts = JoinOptions {
            url: spec.url.clone(),
            name: spec.name.clone(),
            token: spec.token.clone().filter(|t| !t.is_empty()),
            seed: spec.seed,
        };
        let client = tokio::spawn(async move {
            let mut d = remote::ConsoleDecider {
                inner,
                packets: ptx,
            };
            crate::werewolf::agent::join(&opts, &mut d).await
        });
        self.tasks.push(client.abort_handle());
        let tx = tx.clone();
        let mode = spec.mode;
        let t = tokio::spawn(async move {
            let mut feed = remote::SeatFeed::default();
            let to_msgs = |(view, p)| {
                feed.feed(&view, &p)
                    .into_iter()
                    .map(|n| match n {
                        remote::SeatNews::Seated(i) => WolfMsg::Seated(g, i, mode),
                        remote::SeatNews::Event(e) => WolfMsg::Event(g, e),
                        remote::SeatNews::Reveal(r) => WolfMsg::Reveal(g, r),
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
            let _ = tx.send(wolf(WolfMsg::Ended(g, r)));
        });
        self.tasks.push(t.abort_handle());
        self.say(
            true,
            format!(
                "joining {} as {} ({}); waiting for a game",
                spec.url,
                spec.name,
                mode_name(spec.mode)
            ),
        );
    }

    fn list_games(&mut self, url: String, token: String, tx: &UnboundedSender<Action>) {
        let tx = tx.clone();
        let (u, t) = (url.clone(), token.clone());
        tokio::spawn(async move {
            let tok = (!t.is_empty()).then_some(t.as_str());
            let r = spectate::list_games(&u, tok)
                .await
                .map(|l| {
                    let mut v: Vec<GameInfo> = l.iter().filter_map(GameInfo::from_json).collect();
                    v.reverse();
                    v
                })
                .map_err(|e| e.to_string());
            let _ = tx.send(wolf(WolfMsg::Games(u, r)));
        });
        self.dialog = Some(Dialog::Games {
            url,
            token,
            list: None,
            selected: 0,
        });
    }

    fn start_spectate(&mut self, url: String, token: String, game: String, env: &Env<'_>) {
        let g = self.reset(Source::Spectate {
            url: url.clone(),
            game: game.clone(),
        });
        let tx = env.tx.clone();
        let id = game.clone();
        let t = tokio::spawn(async move {
            let tok = (!token.is_empty()).then_some(token.as_str());
            match spectate::follow(&url, &id, tok).await {
                Ok(mut rx) => {
                    let mut finished = false;
                    while let Some(e) = rx.recv().await {
                        finished |= matches!(e, GameEvent::Finished { .. });
                        if tx.send(wolf(WolfMsg::Event(g, e))).is_err() {
                            return;
                        }
                    }
                    let r = if finished {
                        Ok(format!("game {id} is over"))
                    } else {
                        Err(format!("the stream of game {id} closed before its end"))
                    };
                    let _ = tx.send(wolf(WolfMsg::Ended(g, r)));
                }
                Err(e) => {
                    let _ = tx.send(wolf(WolfMsg::Ended(g, Err(e.to_string()))));
                }
            }
        });
        self.tasks.push(t.abort_handle());
        self.say(true, format!("following game {game}"));
    }

    /// `w`/`p`/`c` while a seat is played: the first press only warns.
    fn may_abandon(&mut self) -> bool {
        if !self.playing() || self.abandon_armed {
            return true;
        }
        self.abandon_armed = true;
        self.say(false, "you are playing a seat: press again to abandon it");
        false
    }

    fn shown(&mut self, e: GameEvent) {
        let b = self.board.get_or_insert_with(Board::god);
        b.apply(&e);
        if self.queue.is_empty()
            && let Some(n) = self.end_note.take()
        {
            self.note = Some(n);
        }
    }

    /// Shows queued events as the replay speed allows.
    fn pace(&mut self) {
        let Some(per_sec) = SPEEDS.get(self.speed).copied().flatten() else {
            while let Some(e) = self.queue.pop_front() {
                self.shown(e);
            }
            return;
        };
        // A tick is a tenth of a second: credit in tenths of a step.
        self.credit = (self.credit + per_sec).min(10 * per_sec.max(1));
        while let Some(e) = self.queue.front() {
            let cost = weight(e) * 10;
            if cost > self.credit {
                break;
            }
            self.credit -= cost;
            if let Some(e) = self.queue.pop_front() {
                self.shown(e);
            }
        }
    }

    fn catch_up(&mut self) {
        while let Some(e) = self.queue.pop_front() {
            self.shown(e);
        }
    }

    fn on_msg(&mut self, m: WolfMsg) {
        match m {
            WolfMsg::Event(g, e) if g == self.generation => {
                if self.speed == LIVE && self.queue.is_empty() {
                    self.shown(e);
                } else {
                    self.queue.push_back(e);
                }
            }
            WolfMsg::Seated(g, idx, mode) if g == self.generation => {
                self.source = Source::Play(mode);
                self.speed = LIVE;
                self.board = Some(Board::player(idx));
            }
            WolfMsg::Decision(g, slot) if g == self.generation => {
                let req = slot.0.lock().ok().and_then(|mut s| s.take());
                let Some(req) = req else { return };
                let mode = match self.source {
                    Source::Play(m) => m,
                    _ => ControlMode::Human,
                };
                let mut d = Decision::new(req, mode, Instant::now());
                if mode == ControlMode::Autonomous {
                    let a = d.proposal.clone().unwrap_or_else(|| "Over".into());
                    d.send(a.clone());
                    self.say(
                        true,
                        format!("the bot answered {}: {a}", d.request.as_str()),
                    );
                    return;
                }
                self.typing = matches!(d.request, Request::Talk | Request::Whisper);
                self.decision = Some(d);
                self.back = 0;
                self.day = None;
            }
            WolfMsg::Ended(g, r) if g == self.generation => {
                self.ended = true;
                self.decision = None;
                self.typing = false;
                let n = match r {
                    Ok(s) => (true, s),
                    Err(e) => (false, e),
                };
                if self.queue.is_empty() {
                    self.note = Some(n);
                } else {
                    self.end_note = Some(n);
                }
            }
            WolfMsg::Reveal(g, roles) if g == self.generation => {
                if let Some(b) = self.board.as_mut() {
                    b.reveal(&roles);
                }
            }
            WolfMsg::Games(url, r) => {
                if let Some(Dialog::Games {
                    url: u,
                    list,
                    selected,
                    ..
                }) = &mut self.dialog
                    && *u == url
                {
                    *selected = 0;
                    *list = Some(r);
                }
            }
            // A replaced game's reports.
            _ => {}
        }
    }

    fn dialog_action(&mut self, a: Action, env: &Env<'_>) {
        let Some(d) = self.dialog.as_mut() else {
            return;
        };
        match (d, a) {
            (_, Action::Back) => self.dialog = None,
            (Dialog::Seats(i), Action::Up | Action::Left) => *i = (*i + 2) % 3,
            (Dialog::Seats(i), Action::Down | Action::Right) => *i = (*i + 1) % 3,
            (Dialog::Mode(i), Action::Up | Action::Left) => *i = (*i + 2) % 3,
            (Dialog::Mode(i), Action::Down | Action::Right) => *i = (*i + 1) % 3,
            (Dialog::Seats(i), Action::Submit) => {
                let n = SEAT_CHOICES[*i % 3];
                self.dialog = None;
                self.start_watch(n, env);
            }
            (Dialog::Mode(i), Action::Submit) => {
                let m = MODE_CHOICES[*i % 3];
                self.dialog = None;
                self.start_play(m, env);
            }
            (Dialog::Server { field, .. }, Action::FocusNext | Action::FocusPrev) => {
                *field = 1 - (*field).min(1)
            }
            (Dialog::Server { url, token, field }, Action::Input(k)) => {
                let f = if *field == 0 { url } else { token };
                super::panes::dialogs::edit_line(f, &k);
            }
            (Dialog::Server { url, token, field }, Action::Paste(s)) => {
                let f = if *field == 0 { url } else { token };
                f.push_str(s.lines().next().unwrap_or("").trim());
            }
            (Dialog::Server { url, token, .. }, Action::Submit) => {
                let (u, t) = (url.trim().to_owned(), token.trim().to_owned());
                if u.is_empty() {
                    self.say(
                        false,
                        "type the server's base URL, e.g. http://127.0.0.1:8080",
                    );
                    return;
                }
                self.list_games(u, t, env.tx);
            }
            (Dialog::Join { mode, field: 3, .. }, Action::Left | Action::Up) => {
                *mode = (*mode + 2) % 3
            }
            (Dialog::Join { mode, field: 3, .. }, Action::Right | Action::Down) => {
                *mode = (*mode + 1) % 3
            }
            (Dialog::Join { field, .. }, Action::FocusNext) => *field = (*field + 1) % 4,
            (Dialog::Join { field, .. }, Action::FocusPrev) => *field = (*field + 3) % 4,
            (
                Dialog::Join {
                    url,
                    name,
                    token,
                    mode,
                    field,
                },
                Action::Input(k),
            ) => {
                let f = match *field {
                    0 => url,
                    1 => name,
                    2 => token,
                    _ => {
                        match k.code {
                            KeyCode::Left | KeyCode::Up => *mode = (*mode + 2) % 3,
                            KeyCode::Right | KeyCode::Down | KeyCode::Char(' ') => {
                                *mode = (*mode + 1) % 3
                            }
                            _ => {}
                        }
                        return;
                    }
                };
                super::panes::dialogs::edit_line(f, &k);
            }
            (
                Dialog::Join {
                    url,
                    name,
                    token,
                    field,
                    ..
                },
                Action::Paste(s),
            ) => {
                let f = match *field {
                    0 => url,
                    1 => name,
                    2 => token,
                    _ => return,
                };
                f.push_str(s.lines().next().unwrap_or("").trim());
            }
            (
                Dialog::Join {
                    url,
                    name,
                    token,
                    mode,
                    ..
                },
                Action::Submit,
            ) => {
                let (u, n, t) = (
                    url.trim().to_owned(),
                    name.trim().to_owned(),
                    token.trim().to_owned(),
                );
                if !(u.starts_with("ws://") || u.starts_with("wss://")) {
                    self.say(
                        false,
                        "type the server's WebSocket URL, e.g. ws://127.0.0.1:8080/ws",
                    );
                    return;
                }
                if n.is_empty() {
                    self.say(false, "type a connection name, e.g. team1");
                    return;
                }
                let spec = JoinSpec {
                    url: u,
                    name: n,
                    token: (!t.is_empty()).then_some(t),
                    mode: MODE_CHOICES[*mode % 3],
                    seed: rand::random(),
                };
                self.dialog = None;
                self.start_join(spec, env.tx);
            }
            (Dialog::Games { selected, .. }, Action::Up) => {
                *selected = selected.saturating_sub(1);
            }
            (Dialog::Games { list, selected, .. }, Action::Down) => {
                let n = match list {
                    Some(Ok(l)) => l.len(),
                    _ => 0,
                };
                if *selected + 1 < n {
                    *selected += 1;
                }
            }
            (Dialog::Games { url, token, .. }, Action::Refresh) => {
                let (u, t) = (url.clone(), token.clone());
                self.list_games(u, t, env.tx);
            }
            (
                Dialog::Games {
                    url,
                    token,
                    list,
                    selected,
                },
                Action::Submit,
            ) => match list {
                Some(Ok(l)) if !l.is_empty() => {
                    let id = l[(*selected).min(l.len() - 1)].id.clone();
                    let (u, t) = (url.clone(), token.clone());
                    self.dialog = None;
                    self.start_spectate(u, t, id, env);
                }
                Some(Ok(_)) => {
                    let (u, t) = (url.clone(), token.clone());
                    self.say(false, format!("{u} has no games yet; trying again"));
                    self.list_games(u, t, env.tx);
                }
                Some(Err(_)) => {
                    // Back to the address to fix it.
                    let (u, t) = (url.clone(), token.clone());
                    self.dialog = Some(Dialog::Server {
                        url: u,
                        token: t,
                        field: 0,
                    });
                }
                None => {}
            },
            _ => {}
        }
    }

    /// Keys while the decision prompt is open.
    fn decision_action(&mut self, a: Action) -> bool {
        let typing = self.typing;
        let Some(d) = self.decision.as_mut() else {
            return false;
        };
        let text = matches!(d.input, prompt::Input::Text { .. });
        let answer = match a {
            Action::Input(k) if typing => {
                let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
                match k.code {
                    KeyCode::Char('k') if ctrl => Some("Skip".to_owned()),
                    KeyCode::Char('o') if ctrl => Some("Over".to_owned()),
                    KeyCode::Char(c) if !ctrl && !k.modifiers.contains(KeyModifiers::ALT) => {
                        d.typed(c);
                        None
                    }
                    KeyCode::Backspace => {
                        d.backspace();
                        None
                    }
                    _ => None,
                }
            }
            Action::Paste(s) if typing => {
                d.paste(&s);
                None
            }
            Action::FocusNext if typing => {
                d.complete();
                None
            }
            Action::Back if typing => {
                // Esc: the arrows go back to the board; Enter returns.
                self.typing = false;
                return true;
            }
            Action::Skip if text => Some("Skip".to_owned()),
            Action::Over if text => Some("Over".to_owned()),
            Action::Submit if text && !typing => {
                self.typing = true;
                return true;
            }
            Action::Submit => match d.current() {
                Some(a) => Some(a),
                None => {
                    self.note = Some((
                        false,
                        "type something first, or C-k Skip / C-o Over".to_owned(),
                    ));
                    return true;
                }
            },
            Action::Up if !text => {
                d.move_by(-1);
                None
            }
            Action::Down if !text => {
                d.move_by(1);
                None
            }
            _ => return false,
        };
        if let Some(a) = answer {
            if let Some(why) = d.refusal(&a) {
                // Nothing the server would cut or turn into Over goes out.
                self.note = Some((false, format!("not sent: {why}")));
                return true;
            }
            let req = d.request;
            if d.send(a.clone()) {
                self.note = Some((true, format!("sent {}: {a}", req.as_str())));
            } else {
                self.note = Some((false, "too late: the safe answer was already sent".into()));
            }
            self.decision = None;
            self.typing = false;
        }
        true
    }

    fn tick(&mut self) {
        self.pace();
        if let Some(d) = self.decision.as_mut() {
            d.tick(Instant::now());
            if !d.open() {
                let what = if d.mode == ControlMode::Hybrid {
                    "time's up: the bot's proposal was sent"
                } else {
                    "time's up: the safe fallback was sent"
                };
                self.note = Some((false, what.to_owned()));
                self.decision = None;
                self.typing = false;
            }
        }
    }

    /// Days of the board, and the index of the one shown.
    fn day_pos(&self) -> Option<(Vec<i64>, usize)> {
        let days = self.board.as_ref()?.day_list();
        if days.is_empty() {
            return None;
        }
        let i = match self.day {
            Some(d) => days.iter().position(|x| *x == d).unwrap_or(days.len() - 1),
            None => days.len() - 1,
        };
        Some((days, i))
    }

    fn move_day(&mut self, d: isize) {
        let Some((days, i)) = self.day_pos() else {
            return;
        };
        let j = (i as isize + d).clamp(0, days.len() as isize - 1) as usize;
        self.day = (j + 1 < days.len()).then(|| days[j]);
        self.back = 0;
    }

    fn scroll(&mut self, d: isize, env: &Env<'_>) {
        let max = self.max_back(env.size);
        self.back = (self.back as isize + d).clamp(0, max as isize) as usize;
    }
}

pub fn mode_name(m: ControlMode) -> &'static str {
    match m {
        ControlMode::Human => "human",
        ControlMode::Hybrid => "hybrid",
        ControlMode::Autonomous => "autonomous",
    }
}

impl Screen for WolfView {
    fn title(&self) -> &'static str {
        "Werewolf"
    }

    fn context(&self) -> Context {
        match &self.dialog {
            Some(Dialog::Server { .. } | Dialog::Join { .. }) => Context::Text,
            Some(_) => Context::Werewolf,
            None if self.typing && self.decision.is_some() => Context::Text,
            None => Context::Werewolf,
        }
    }

    fn update(&mut self, a: Action, env: &Env<'_>) {
        match a {
            Action::Wolf(m) => {
                if let WolfMsg::Join(spec) = *m {
                    self.dialog = None;
                    return self.start_join(spec, env.tx);
                }
                return self.on_msg(*m);
            }
            Action::Tick => return self.tick(),
            _ => {}
        }
        if self.dialog.is_some() {
            return self.dialog_action(a, env);
        }
        if self.decision.is_some() && self.decision_action(a.clone()) {
            return;
        }
        let starts = matches!(
            a,
            Action::WatchGame | Action::PlaySeat | Action::Spectate | Action::JoinServer
        );
        if !starts {
            self.abandon_armed = false;
        }
        match a {
            Action::WatchGame if self.may_abandon() => self.dialog = Some(Dialog::Seats(0)),
            Action::PlaySeat if self.may_abandon() => self.dialog = Some(Dialog::Mode(0)),
            Action::Spectate if self.may_abandon() => {
                let (url, token) = match &self.source {
                    Source::Spectate { url, .. } => (url.clone(), String::new()),
                    _ => ("http://127.0.0.1:8080".to_owned(), String::new()),
                };
                self.dialog = Some(Dialog::Server {
                    url,
                    token,
                    field: 0,
                });
            }
            Action::JoinServer if self.may_abandon() => {
                let (url, name) = self
                    .remote
                    .clone()
                    .unwrap_or_else(|| ("ws://127.0.0.1:8080/ws".to_owned(), "team1".to_owned()));
                self.dialog = Some(Dialog::Join {
                    url,
                    name,
                    token: String::new(),
                    mode: 0,
                    field: 0,
                });
            }
            Action::ToggleRoles => {
                self.hide_roles = !self.hide_roles;
                if matches!(self.source, Source::Play(_)) {
                    self.say(
                        true,
                        "while you play, other roles stay hidden until the game ends",
                    );
                }
            }
            Action::Submit if self.board.is_some() && !matches!(self.source, Source::Play(_)) => {
                self.speed = (self.speed + 1) % SPEEDS.len();
                self.credit = 0;
                let s = speed_name(self.speed);
                self.say(true, format!("replay speed: {s}"));
            }
            Action::Skip if !self.queue.is_empty() => {
                self.catch_up();
                self.say(true, "caught up with the game");
            }
            Action::Up => self.scroll(1, env),
            Action::Down => self.scroll(-1, env),
            Action::Left | Action::PageUp => self.move_day(-1),
            Action::Right | Action::PageDown => self.move_day(1),
            _ => {}
        }
    }

    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        view::draw(self, f, area, p);
    }

    fn hints(&self) -> Vec<Action> {
        let mut v = Vec::new();
        // While typing, plain keys are text: only chords and Enter/Esc hint.
        if self.dialog.is_some() || self.context() == Context::Text {
            return vec![Action::Submit, Action::Back];
        }
        if self.decision.is_some() {
            v.push(Action::Submit);
        }
        v.extend([
            Action::WatchGame,
            Action::PlaySeat,
            Action::Spectate,
            Action::JoinServer,
        ]);
        if self.board.is_some() {
            v.push(Action::ToggleRoles);
        }
        if !self.queue.is_empty() {
            v.push(Action::Skip);
        }
        v.extend([Action::ViewSessions, Action::Help, Action::Quit]);
        v
    }

    fn running(&self) -> usize {
        usize::from(self.playing() && self.board.as_ref().is_none_or(Board::running))
    }
}

pub fn speed_name(i: usize) -> String {
    match SPEEDS.get(i).copied().flatten() {
        Some(n) => format!("{n}/s"),
        None => "live".to_owned(),
    }
}

/// Forwards a seat's news and its decision requests as actions until the
/// news ends, news first: the seat is told what happened before it is
/// asked, and the prompt needs that shown. False when the console is gone.
async fn forward_seat<T>(
    g: u64,
    mut news: tokio::sync::mpsc::UnboundedReceiver<T>,
    mut to_msgs: impl FnMut(T) -> Vec<WolfMsg>,
    mut decisions: tokio::sync::mpsc::Receiver<DecisionRequest>,
    tx: &UnboundedSender<Action>,
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
                    let slot = Shared::new(Mutex::new(Some(d)));
                    if tx.send(wolf(WolfMsg::Decision(g, slot))).is_err() {
                        return false;
                    }
                }
                None => asking = false,
            },
        }
    }
}
