//! The werewolf screen (F3): watch an in-process bot game of 5, 9 or 13
//! seats with the god view, follow a game on a `palaver wolf serve` server
//! the same way, or play a seat in a bot game with the decision prompt.
//!
//! Games run in tasks (started from a [`WolfTask`]) that report every
//! [`GameEvent`] (and, for a seat a person plays, every decision request)
//! as a [`WolfReport`]; `update` folds them into a [`board::Board`]. An
//! in-process bot game finishes in milliseconds, so a watched game is
//! replayed at a reading pace (events queue and are shown a few per second;
//! Enter changes the speed, C-k catches up); spectated and played games are
//! shown live.

pub mod board;
mod dialog;
pub mod prompt;
mod view;

pub use dialog::Dialog;

use crate::engine::ControlMode;
use crate::tui::command::Command;
use crate::tui::effect::{Effects, JoinSpec, WolfTask};
use crate::tui::keymap::Context;
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::report::Report;
use crate::tui::report::wolf::WolfReport;
use crate::tui::screen::{Env, Paint, Screen};
use crate::werewolf::Request;
use crate::werewolf::config::Config;
use crate::werewolf::game::GameEvent;
use board::Board;
use crossterm::event::{KeyCode, KeyModifiers};
use prompt::Decision;
use ratatui::Frame;
use ratatui::layout::Rect;
use std::collections::VecDeque;
use tokio::time::Instant;

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
    pub note: Option<Note>,
    /// The stream's end was reported.
    pub ended: bool,
    /// What the end said, held back until the replay reaches it (a note
    /// must not tell the winner before the board does).
    end_note: Option<Note>,
    /// A second `w`/`p`/`c`/`J` abandons a played seat.
    abandon_armed: bool,
    /// The server and name of a remote seat being played.
    pub remote: Option<(String, String)>,
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
        }
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

    /// Starts a fresh board for a new game; the caller returns the task
    /// that starts it (which ends the old game's tasks).
    fn reset(&mut self, source: Source) -> u64 {
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
        self.note = Some(Note::new(ok, s));
    }

    fn start_watch(&mut self, seats: usize, fx: &mut Effects) {
        let seed: u64 = rand::random();
        let generation = self.reset(Source::Watch(seats));
        fx.push(
            WolfTask::Watch {
                generation,
                seats,
                seed,
            }
            .into(),
        );
        self.say(true, format!("watching {seats} bots (seed {seed})"));
    }

    fn start_play(&mut self, mode: ControlMode, fx: &mut Effects) {
        let config = match Config::default_for(5) {
            Ok(c) => c,
            Err(e) => return self.say(false, e.to_string()),
        };
        let seed: u64 = rand::random();
        let generation = self.reset(Source::Play(mode));
        let seat = (seed % 5) as usize;
        fx.push(
            WolfTask::Play {
                generation,
                config: Box::new(config),
                seed,
                seat,
                mode,
            }
            .into(),
        );
        self.say(
            true,
            format!(
                "you play seat {} ({}) in a 5-seat game",
                seat + 1,
                mode.as_str()
            ),
        );
    }

    /// Takes a seat at a remote server (what `palaver wolf join
    /// --control-mode human|hybrid` opens the console with).
    pub fn join(&mut self, spec: JoinSpec) -> Effects {
        self.dialog = None;
        let mut fx = Effects::new();
        self.start_join(spec, &mut fx);
        fx
    }

    /// A seat at a remote server: the prompt decides for it, its packets
    /// become the board.
    fn start_join(&mut self, spec: JoinSpec, fx: &mut Effects) {
        let generation = self.reset(Source::Play(spec.mode));
        self.remote = Some((spec.url.clone(), spec.name.clone()));
        self.say(
            true,
            format!(
                "joining {} as {} ({}); waiting for a game",
                spec.url,
                spec.name,
                spec.mode.as_str()
            ),
        );
        fx.push(WolfTask::Join { generation, spec }.into());
    }

    fn list_games(&mut self, url: String, token: String, fx: &mut Effects) {
        fx.push(
            WolfTask::Games {
                url: url.clone(),
                token: token.clone(),
            }
            .into(),
        );
        self.dialog = Some(Dialog::Games {
            url,
            token,
            list: None,
            selected: 0,
        });
    }

    fn start_spectate(&mut self, url: String, token: String, game: String, fx: &mut Effects) {
        let generation = self.reset(Source::Spectate {
            url: url.clone(),
            game: game.clone(),
        });
        self.say(true, format!("following game {game}"));
        fx.push(
            WolfTask::Spectate {
                generation,
                url,
                token,
                game,
            }
            .into(),
        );
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

    fn report(&mut self, m: WolfReport) {
        match m {
            WolfReport::Event(g, e) if g == self.generation => {
                if self.speed == LIVE && self.queue.is_empty() {
                    self.shown(e);
                } else {
                    self.queue.push_back(e);
                }
            }
            WolfReport::Seated(g, idx, mode) if g == self.generation => {
                self.source = Source::Play(mode);
                self.speed = LIVE;
                self.board = Some(Board::player(idx));
            }
            WolfReport::Decision(g, req) if g == self.generation => {
                let mode = match self.source {
                    Source::Play(m) => m,
                    _ => ControlMode::Human,
                };
                let mut d = Decision::new(*req, mode, Instant::now());
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
            WolfReport::Ended(g, r) if g == self.generation => {
                self.ended = true;
                self.decision = None;
                self.typing = false;
                let n = match r {
                    Ok(s) => Note::ok(s),
                    Err(e) => Note::err(e),
                };
                if self.queue.is_empty() {
                    self.note = Some(n);
                } else {
                    self.end_note = Some(n);
                }
            }
            WolfReport::Reveal(g, roles) if g == self.generation => {
                if let Some(b) = self.board.as_mut() {
                    b.reveal(&roles);
                }
            }
            WolfReport::Games(url, r) => {
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

    /// Keys while the decision prompt is open.
    fn decision_msg(&mut self, m: &Msg) -> bool {
        let typing = self.typing;
        let Some(d) = self.decision.as_mut() else {
            return false;
        };
        let text = matches!(d.input, prompt::Input::Text { .. });
        let answer = match m {
            Msg::Input(k) if typing => {
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
            Msg::Paste(s) if typing => {
                d.paste(s);
                None
            }
            Msg::Command(Command::FocusNext) if typing => {
                d.complete();
                None
            }
            Msg::Command(Command::Back) if typing => {
                // Esc: the arrows go back to the board; Enter returns.
                self.typing = false;
                return true;
            }
            Msg::Command(Command::Skip) if text => Some("Skip".to_owned()),
            Msg::Command(Command::Over) if text => Some("Over".to_owned()),
            Msg::Command(Command::Submit) if text && !typing => {
                self.typing = true;
                return true;
            }
            Msg::Command(Command::Submit) => match d.current() {
                Some(a) => Some(a),
                None => {
                    self.note = Some(Note::err(
                        "type something first, or C-k Skip / C-o Over".to_owned(),
                    ));
                    return true;
                }
            },
            Msg::Command(Command::Up) if !text => {
                d.move_by(-1);
                None
            }
            Msg::Command(Command::Down) if !text => {
                d.move_by(1);
                None
            }
            _ => return false,
        };
        if let Some(a) = answer {
            if let Some(why) = d.refusal(&a) {
                // Nothing the server would cut or turn into Over goes out.
                self.note = Some(Note::err(format!("not sent: {why}")));
                return true;
            }
            let req = d.request;
            if d.send(a.clone()) {
                self.note = Some(Note::ok(format!("sent {}: {a}", req.as_str())));
            } else {
                self.note = Some(Note::err("too late: the safe answer was already sent"));
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
                self.note = Some(Note::err(what.to_owned()));
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

    fn update(&mut self, m: Msg, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        match m {
            Msg::Report(Report::Wolf(r)) => {
                self.report(*r);
                return fx;
            }
            Msg::Tick => {
                self.tick();
                return fx;
            }
            _ => {}
        }
        if self.dialog.is_some() {
            self.dialog_msg(m, &mut fx);
            return fx;
        }
        if self.decision.is_some() && self.decision_msg(&m) {
            return fx;
        }
        let starts = matches!(
            m,
            Msg::Command(
                Command::WatchGame | Command::PlaySeat | Command::Spectate | Command::JoinServer
            )
        );
        if !starts {
            self.abandon_armed = false;
        }
        let Msg::Command(c) = m else {
            return fx;
        };
        match c {
            Command::WatchGame if self.may_abandon() => self.dialog = Some(Dialog::Seats(0)),
            Command::PlaySeat if self.may_abandon() => self.dialog = Some(Dialog::Mode(0)),
            Command::Spectate if self.may_abandon() => {
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
            Command::JoinServer if self.may_abandon() => {
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
            Command::ToggleRoles => {
                self.hide_roles = !self.hide_roles;
                if matches!(self.source, Source::Play(_)) {
                    self.say(
                        true,
                        "while you play, other roles stay hidden until the game ends",
                    );
                }
            }
            Command::Submit if self.board.is_some() && !matches!(self.source, Source::Play(_)) => {
                self.speed = (self.speed + 1) % SPEEDS.len();
                self.credit = 0;
                let s = speed_name(self.speed);
                self.say(true, format!("replay speed: {s}"));
            }
            Command::Skip if !self.queue.is_empty() => {
                self.catch_up();
                self.say(true, "caught up with the game");
            }
            Command::Up => self.scroll(1, env),
            Command::Down => self.scroll(-1, env),
            Command::Left | Command::PageUp => self.move_day(-1),
            Command::Right | Command::PageDown => self.move_day(1),
            _ => {}
        }
        fx
    }

    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        view::draw(self, f, area, p);
    }

    fn hints(&self) -> Vec<Command> {
        let mut v = Vec::new();
        // While typing, plain keys are text: only chords and Enter/Esc hint.
        if self.dialog.is_some() || self.context() == Context::Text {
            return vec![Command::Submit, Command::Back];
        }
        if self.decision.is_some() {
            v.push(Command::Submit);
        }
        v.extend([
            Command::WatchGame,
            Command::PlaySeat,
            Command::Spectate,
            Command::JoinServer,
        ]);
        if self.board.is_some() {
            v.push(Command::ToggleRoles);
        }
        if !self.queue.is_empty() {
            v.push(Command::Skip);
        }
        v.extend([Command::ViewSessions, Command::Help, Command::Quit]);
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
