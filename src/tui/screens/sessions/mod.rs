//! The sessions screen (F2): the community's open invitations and the
//! sessions in the data dir on the left; the attached session's snapshot,
//! feed and decision prompt on the right; the join dialog, the host form,
//! the strategy editor, the search box and the attach-by-path box over
//! them.

mod aside;
mod attached;
mod coach;
mod modal;
pub mod replay;
mod room;
mod room_state;
mod social;
mod table;
mod table_state;
mod tank;
pub mod tank_replay;
mod view;

pub use aside::{Aside, WhisperMark};
pub use attached::Attached;
pub use modal::Modal;
pub use room_state::RoomState;
pub use table_state::{CHOICE_PAGE, TableState, table_alias};
pub use tank::{TANK_PROTOCOL, TankState};

use crate::engine::ControlMode;
use crate::tui::command::Command;
use crate::tui::effect::{Effect, Effects, SessionTask};
use crate::tui::keymap::Context;
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::panes::dialogs::{HostForm, JoinDialog};
use crate::tui::panes::lists::{self, Cursor};
use crate::tui::panes::prompt::Prompt;
use crate::tui::report::Report;
use crate::tui::report::rows::{Invitation, SessionRow};
use crate::tui::screen::{Env, Paint, Screen};
use ratatui::Frame;
use ratatui::layout::Rect;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Nicknames remembered at most.
const MAX_NICKS: usize = 1024;

/// How often invitations and sessions are refreshed.
pub const REFRESH: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Invitations,
    Sessions,
    Feed,
    Prompt,
}

pub struct SessionsView {
    pub invitations: Vec<Invitation>,
    pub inv_cur: Cursor,
    /// The sessions in the data dir, newest first.
    pub rows: Vec<SessionRow>,
    pub ses_cur: Cursor,
    pub focus: Focus,
    pub modal: Option<Modal>,
    pub attached: Option<Attached>,
    generation: u64,
    last_refresh: Option<Instant>,
    /// Sessions and host/join tasks this console runs.
    pub running_tasks: usize,
    /// A session to attach as soon as it shows up.
    pending_attach: Option<PathBuf>,
    /// Invitations this console hosts: post_id → its task's cancel switch.
    hosting: Vec<(Option<String>, tokio::sync::watch::Sender<bool>)>,
    /// Nicknames the invitations and the community told, by public key
    /// (rooms show them).
    pub nicks: BTreeMap<String, String>,
    /// Keys whose nickname was asked for already.
    asked: std::collections::BTreeSet<String>,
    /// Hosts' ELO and karma, as the invitations show them.
    pub reputation: social::ReputationCache,
}

impl Default for SessionsView {
    fn default() -> Self {
        SessionsView {
            invitations: Vec::new(),
            inv_cur: Cursor::default(),
            rows: Vec::new(),
            ses_cur: Cursor::default(),
            focus: Focus::Invitations,
            modal: None,
            attached: None,
            generation: 0,
            last_refresh: None,
            running_tasks: 0,
            pending_attach: None,
            hosting: Vec::new(),
            nicks: BTreeMap::new(),
            asked: Default::default(),
            reputation: Default::default(),
        }
    }
}

fn say(fx: &mut Effects, ok: bool, s: impl Into<String>) {
    fx.push(Effect::Status(ok, s.into()));
}

impl SessionsView {
    fn prompt(&self) -> Option<&Prompt> {
        self.attached.as_ref().and_then(|a| a.prompt.as_ref())
    }

    /// Reads invitations and sessions again now.
    pub fn refresh(&mut self, env: &Env<'_>) -> Effects {
        self.last_refresh = Some(Instant::now());
        let mut fx = vec![scan(env)];
        if let Some(c) = env.community {
            fx.push(
                SessionTask::ListInvitations {
                    client: c.client.clone(),
                    data_dir: env.data_dir.to_owned(),
                }
                .into(),
            );
        }
        fx
    }

    fn tick(&mut self, env: &Env<'_>) -> Effects {
        match self.modal.as_mut() {
            Some(Modal::Replay(r)) => r.tick(Instant::now()),
            Some(Modal::TankReplay(r)) => r.tick(Instant::now()),
            _ => {}
        }
        let due = self.last_refresh.is_none_or(|t| t.elapsed() >= REFRESH);
        if due {
            self.refresh(env)
        } else {
            Effects::new()
        }
    }

    fn report(&mut self, r: Report, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        match r {
            Report::Invitations(Ok(mut l)) => {
                // A stable order: by protocol, oldest first.
                l.sort_by(|a, b| {
                    a.alias.cmp(&b.alias).then(
                        a.created_at
                            .partial_cmp(&b.created_at)
                            .unwrap_or(std::cmp::Ordering::Equal),
                    )
                });
                for i in &l {
                    if !i.nickname.is_empty()
                        && (self.nicks.len() < MAX_NICKS || self.nicks.contains_key(&i.public_key))
                    {
                        self.nicks.insert(i.public_key.clone(), i.nickname.clone());
                    }
                }
                self.invitations = l;
                let n = lists::filter_invitations(&self.invitations, &self.inv_cur.query).len();
                self.inv_cur.clamp(n);
                self.ask_reputation(env, &mut fx);
            }
            Report::Sessions(rows) => {
                self.rows = rows;
                let n = lists::filter_sessions(&self.rows, &self.ses_cur.query).len();
                self.ses_cur.clamp(n);
                if let Some(p) = self.pending_attach.clone()
                    && self.rows.iter().any(|s| s.dir == p)
                {
                    self.pending_attach = None;
                    fx = self.attach(&p);
                }
            }
            Report::Watch(generation, u) => {
                fx = self.watched(generation, *u);
                fx.extend(self.ask_nicknames(env));
            }
            Report::Nicknames(l) => {
                for (pk, nick) in l {
                    if self.nicks.len() < MAX_NICKS || self.nicks.contains_key(&pk) {
                        self.nicks.insert(pk, nick);
                    }
                }
            }
            Report::InvitationOpen(post_id) => {
                // The oldest host task still without an invitation owns it.
                if let Some(slot) = self.hosting.iter_mut().find(|(p, _)| p.is_none()) {
                    slot.0 = Some(post_id);
                }
                fx = self.refresh(env);
            }
            Report::Attach(p) => {
                fx = self.attach(&p);
                fx.push(scan(env));
            }
            Report::TaskDone(r) => {
                self.running_tasks = self.running_tasks.saturating_sub(1);
                self.hosting.retain(|(_, c)| !c.is_closed());
                match r {
                    Ok(s) => say(&mut fx, true, s),
                    Err(e) => say(&mut fx, false, e),
                }
                fx.extend(self.refresh(env));
            }
            Report::Submitted(r) => {
                let note = match r {
                    Ok(s) => Note::ok(s),
                    Err(e) => Note::err(e),
                };
                if let Some(p) = self.attached.as_mut().and_then(|a| a.prompt.as_mut()) {
                    if note.ok {
                        p.input.clear();
                    }
                    p.note = Some(note.clone());
                }
                say(&mut fx, note.ok, note.text);
            }
            Report::RoomAction(r) => self.room_sent(r, &mut fx),
            Report::Reputation(l) => self.reputation_told(l),
            Report::Picker(r) => self.picker_report(*r, &mut fx),
            Report::Whispered(r) => self.whispered(r, &mut fx),
            Report::Coach(r) => self.coach_report(r, &mut fx),
            Report::Replay(r) => self.replay_loaded(r, None, &mut fx),
            Report::TankReplay(r) => self.tank_replay_loaded(r, &mut fx),
            Report::TankOrdered(r) => self.tank_ordered(r, &mut fx),
            Report::BundleReplay { verified, timeline } => {
                self.replay_loaded(timeline, Some(&verified), &mut fx)
            }
            Report::Saved(r) => {
                let note = match r {
                    Ok(s) => Note::ok(s),
                    Err(e) => Note::err(e),
                };
                if let Some(Modal::Strategy(e)) = self.modal.as_mut() {
                    e.note = Some(note.clone());
                }
                say(&mut fx, note.ok, note.text);
            }
            _ => {}
        }
        fx
    }

    fn paste(&mut self, s: &str) {
        if self.modal.is_none()
            && let Some(line) = self.tank_mut().and_then(|t| t.line.as_mut())
        {
            line.push_str(s.lines().next().unwrap_or(""));
            return;
        }
        let composing =
            self.focus == Focus::Prompt && self.room().is_some() && self.table().is_none();
        match &mut self.modal {
            Some(Modal::Strategy(e)) => e.paste(s),
            Some(Modal::Search { text, .. })
            | Some(Modal::Open(text))
            | Some(Modal::Topic(text)) => text.push_str(s.lines().next().unwrap_or("")),
            Some(Modal::Whisper(w)) => w.text.push_str(s.lines().next().unwrap_or("")),
            Some(Modal::Coach(c)) => c.input.push_str(s.lines().next().unwrap_or("")),
            Some(Modal::Pick(_, p)) => p.query.push_str(s.lines().next().unwrap_or("")),
            _ if composing => {
                if let Some(r) = self.attached.as_mut().and_then(|a| a.room.as_mut()) {
                    r.input.push_str(s.lines().next().unwrap_or(""));
                }
            }
            _ => {
                if let Some(p) = self.attached.as_mut().and_then(|a| a.prompt.as_mut())
                    && p.takes_text()
                {
                    p.input.push_str(s.lines().next().unwrap_or(""));
                }
            }
        }
    }

    // ---------------------------------------------------------------- panes

    fn focus_order(&self) -> Vec<Focus> {
        let mut v = vec![Focus::Invitations, Focus::Sessions, Focus::Feed];
        // A room's compose line is always there; a table and a battlefield
        // take their keys in their one pane.
        if self.table().is_some() || self.tank().is_some() {
            return v;
        }
        if self.prompt().is_some() || self.room().is_some() {
            v.push(Focus::Prompt);
        }
        v
    }

    fn pane_msg(&mut self, m: Msg, env: &Env<'_>) -> Effects {
        if self.battle_focused()
            && let Some(fx) = self.tank_msg(&m)
        {
            return fx;
        }
        let mut fx = Effects::new();
        match m {
            Msg::Command(c @ (Command::FocusNext | Command::FocusPrev)) => {
                let order = self.focus_order();
                let i = order.iter().position(|f| *f == self.focus).unwrap_or(0);
                let n = order.len();
                self.focus = order[if c == Command::FocusNext {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                }];
            }
            Msg::Command(Command::HostNew) => {
                if env.community.is_none() {
                    say(&mut fx, false, "the community is not reachable yet");
                } else {
                    self.modal = Some(Modal::Host(HostForm::new(ControlMode::Human)));
                }
            }
            Msg::Command(Command::Strategy) => self.open_strategy(&mut fx),
            Msg::Command(Command::OpenPath) => self.modal = Some(Modal::Open(String::new())),
            Msg::Command(Command::Replay) => self.open_replay(&mut fx),
            Msg::Command(Command::Whisper) => self.open_whisper(&mut fx),
            Msg::Command(Command::Coach) => self.open_coach(env, &mut fx),
            Msg::Command(Command::MessageAgent) => self.message_agent(env, &mut fx),
            Msg::Command(Command::Back) => {
                if self.focus == Focus::Prompt && !self.prompt_back() {
                    self.focus = Focus::Feed;
                }
            }
            Msg::Command(Command::Search)
                if matches!(
                    self.focus,
                    Focus::Invitations | Focus::Sessions | Focus::Feed
                ) =>
            {
                let text = match self.focus {
                    Focus::Invitations => self.inv_cur.query.clone(),
                    Focus::Sessions => self.ses_cur.query.clone(),
                    _ => self
                        .attached
                        .as_ref()
                        .and_then(|a| a.feed.search.clone())
                        .unwrap_or_default(),
                };
                self.modal = Some(Modal::Search {
                    target: self.focus,
                    text,
                });
            }
            other => match self.focus {
                Focus::Invitations => {
                    if let Msg::Command(c) = other {
                        self.invitations_command(c, env, &mut fx);
                    }
                }
                Focus::Sessions => {
                    if let Msg::Command(c) = other {
                        fx = self.sessions_command(c, env);
                    }
                }
                Focus::Feed | Focus::Prompt if self.table().is_some() => {
                    if let Msg::Command(c) = other {
                        fx = self.table_command(c);
                    }
                }
                Focus::Feed => {
                    if let Msg::Command(c) = other {
                        if self.room().is_none() && self.aside_command(c) {
                            return fx;
                        }
                        fx = if self.room().is_some() {
                            self.room_command(c, page(env))
                        } else {
                            self.feed_command(c, env)
                        };
                    }
                }
                Focus::Prompt if self.room().is_some() => fx = self.compose_msg(other),
                Focus::Prompt => fx = self.prompt_msg(other),
            },
        }
        fx
    }

    fn invitations_command(&mut self, c: Command, env: &Env<'_>, fx: &mut Effects) {
        let shown = lists::filter_invitations(&self.invitations, &self.inv_cur.query).len();
        let page = page(env) / 2;
        if self.inv_cur.navigate(c, shown, page) {
            return;
        }
        match c {
            Command::Activate => {
                let Some(inv) = self.selected_invitation() else {
                    return;
                };
                if inv.public_key == env.me {
                    say(fx, false, "that is your own invitation (x cancels it)");
                    return;
                }
                if let Some(why) = &inv.unjoinable {
                    say(
                        fx,
                        false,
                        format!("palaver cannot join this invitation: {why}"),
                    );
                    return;
                }
                self.modal = Some(Modal::Join(JoinDialog {
                    invitation: inv,
                    mode: ControlMode::Human,
                }));
            }
            Command::CancelInvitation => {
                let Some(inv) = self.selected_invitation() else {
                    return;
                };
                if inv.public_key != env.me {
                    say(
                        fx,
                        false,
                        "you can only cancel your own invitations (marked ★)",
                    );
                    return;
                }
                // Our own host task withdraws it and stops waiting; an
                // invitation left by an earlier run is withdrawn directly.
                if let Some((_, c)) = self
                    .hosting
                    .iter()
                    .find(|(p, _)| p.as_deref() == Some(inv.post_id.as_str()))
                {
                    let _ = c.send(true);
                    say(fx, true, format!("cancelling invitation {}…", inv.post_id));
                } else if let Some(c) = env.community {
                    fx.push(
                        SessionTask::CancelInvitation {
                            client: c.client.clone(),
                            post_id: inv.post_id.clone(),
                        }
                        .into(),
                    );
                    self.running_tasks += 1;
                }
            }
            _ => {}
        }
    }

    /// The invitations this console hosts (their post ids, once open).
    pub fn hosting_posts(&self) -> impl Iterator<Item = &str> {
        self.hosting.iter().filter_map(|(p, _)| p.as_deref())
    }

    pub fn selected_invitation(&self) -> Option<Invitation> {
        lists::filter_invitations(&self.invitations, &self.inv_cur.query)
            .get(self.inv_cur.selected)
            .map(|i| (*i).clone())
    }

    fn sessions_command(&mut self, c: Command, env: &Env<'_>) -> Effects {
        let shown = lists::filter_sessions(&self.rows, &self.ses_cur.query).len();
        let page = page(env) / 2;
        if self.ses_cur.navigate(c, shown, page) {
            return Effects::new();
        }
        if c == Command::Activate {
            let row = lists::filter_sessions(&self.rows, &self.ses_cur.query)
                .get(self.ses_cur.selected)
                .map(|s| (s.dir.clone(), s.is_bundle()));
            if let Some((path, true)) = row {
                let mut fx = Effects::new();
                open_bundle(path, &mut fx);
                return fx;
            }
            if let Some((d, false)) = row {
                let fx = self.attach(&d);
                self.focus = Focus::Feed;
                return fx;
            }
        }
        Effects::new()
    }
}

impl SessionsView {
    /// R: the replay of the selected session (sessions list) or the
    /// attached one, loaded by a task.
    fn open_replay(&mut self, fx: &mut Effects) {
        let selected = (self.focus == Focus::Sessions)
            .then(|| {
                lists::filter_sessions(&self.rows, &self.ses_cur.query)
                    .get(self.ses_cur.selected)
                    .map(|s| (s.dir.clone(), s.is_bundle()))
            })
            .flatten();
        let selected = match selected {
            Some((path, true)) => return open_bundle(path, fx),
            Some((dir, false)) => Some(dir),
            None => None,
        };
        let dir = match selected {
            Some(p) => crate::session::StateDir::resolve(&p),
            None => self.attached.as_ref().map(|a| a.dir.clone()),
        };
        let Some(dir) = dir else {
            say(fx, false, "no session to replay: attach one (Enter) first");
            return;
        };
        say(fx, true, "reading the session for its replay…");
        fx.push(SessionTask::Replay { dir }.into());
    }

    /// A timeline loaded for replay; `verified` says how a bundle it came
    /// from was verified (shown first, in the status line).
    fn replay_loaded(
        &mut self,
        r: Result<Box<crate::session::replay::Timeline>, String>,
        verified: Option<&str>,
        fx: &mut Effects,
    ) {
        let first = verified
            .filter(|v| !v.is_empty())
            .map(|v| format!("{v} · "))
            .unwrap_or_default();
        match r {
            // A bundle that verified but has nothing to play (a public
            // scope, a transaction): its verification is the answer, green.
            Err(e) if !first.is_empty() => say(fx, true, format!("{first}{e}")),
            Err(e) => say(fx, false, format!("replay: {e}")),
            Ok(t) if !t.finished => say(
                fx,
                false,
                "that session has not finished: replay is for finished sessions",
            ),
            Ok(t) if t.steps.is_empty() => say(fx, false, "that session recorded no steps"),
            Ok(t) => {
                say(
                    fx,
                    true,
                    format!(
                        "{first}replay: {} steps (←/→ step, space plays, +/- speed, Esc leaves)",
                        t.steps.len()
                    ),
                );
                // A dialog being typed in stays; the replay waits for R again.
                if self.modal.is_none() {
                    self.modal = Some(Modal::Replay(Box::new(replay::Replay::new(t))));
                }
            }
        }
    }
}

/// A bundle listed from the data dir: verified, then replayed, by a task.
fn open_bundle(path: std::path::PathBuf, fx: &mut Effects) {
    say(fx, true, "verifying the bundle for its replay…");
    fx.push(SessionTask::ReplayLog { path }.into());
}

/// Lists the sessions in the data dir.
fn scan(env: &Env<'_>) -> Effect {
    SessionTask::Scan {
        data_dir: env.data_dir.to_owned(),
    }
    .into()
}

/// Rows a page of a list or the feed scrolls.
fn page(env: &Env<'_>) -> usize {
    (env.size.1 as usize).saturating_sub(8).max(1)
}

impl Screen for SessionsView {
    fn title(&self) -> &'static str {
        "Sessions"
    }

    fn context(&self) -> Context {
        match &self.modal {
            Some(Modal::Join(_)) | Some(Modal::Host(_)) | Some(Modal::CloseRoom(_)) => {
                Context::Dialog
            }
            Some(Modal::Strategy(_)) => Context::Editor,
            Some(Modal::Replay(_)) | Some(Modal::TankReplay(_)) => Context::Replay,
            Some(Modal::Search { .. }) | Some(Modal::Open(_)) | Some(Modal::Topic(_)) => {
                Context::Text
            }
            Some(Modal::Whisper(_)) => Context::Text,
            Some(Modal::Coach(_)) => Context::Coach,
            Some(Modal::Pick(..)) => Context::Picker,
            None => match self.focus {
                Focus::Invitations | Focus::Sessions => Context::List,
                Focus::Feed | Focus::Prompt if self.table().is_some() => Context::Table,
                Focus::Feed | Focus::Prompt if self.tank().is_some() => {
                    if self.tank().is_some_and(|t| t.line.is_some()) {
                        Context::Text
                    } else {
                        Context::Battle
                    }
                }
                Focus::Feed if self.room().is_some() => Context::Room,
                Focus::Prompt if self.room().is_some() => Context::Text,
                Focus::Feed => Context::Feed,
                Focus::Prompt => match self.prompt() {
                    Some(p) if p.takes_text() => Context::Text,
                    Some(p) => match p.cards() {
                        Some(pick) if pick.choosing_suit() => Context::Suit,
                        Some(_) => Context::Cards,
                        None => Context::Prompt,
                    },
                    None => Context::Prompt,
                },
            },
        }
    }

    fn typing(&self) -> bool {
        match self.context() {
            Context::Text | Context::Editor | Context::Coach | Context::Picker => true,
            // The host form's fields take text; the join dialog has none.
            Context::Dialog => matches!(self.modal, Some(Modal::Host(_))),
            _ => false,
        }
    }

    fn update(&mut self, m: Msg, env: &Env<'_>) -> Effects {
        match m {
            Msg::Tick => self.tick(env),
            Msg::Report(r) => self.report(r, env),
            Msg::Paste(s) => {
                self.paste(&s);
                Effects::new()
            }
            m if self.modal.is_some() => self.modal_msg(m, env),
            m => self.pane_msg(m, env),
        }
    }

    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        view::draw(self, f, area, p);
    }

    fn hints(&self) -> Vec<Command> {
        view::hints(self)
    }

    fn community_ready(&mut self, env: &Env<'_>) -> Effects {
        self.refresh(env)
    }

    fn running(&self) -> usize {
        self.running_tasks
    }
}
