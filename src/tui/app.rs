//! The console's state and its one `update`. Keys become actions through
//! the keymap (`key_action`); `update` changes state and starts slow work
//! as tasks that report back with actions; `render` only draws.

use super::action::Action;
use super::data::{Invitation, SessionRow};
use super::keymap::{Context, Keymap};
use super::market_view::MarketView;
use super::panes::dialogs::{self, HostForm, JoinDialog};
use super::panes::editor::{self, Editor};
use super::panes::feed::{Feed, WINDOW};
use super::panes::lists::{self, Cursor};
use super::panes::prompt::{self, Prompt};
use super::panes::snapshot;
use super::screen::{Env, Paint as ScreenPaint, Screen};
use super::tasks::{self, Community};
use super::theme::Theme;
use super::watch::{self, OpenWindow, WatchUpdate};
use super::wolf::WolfView;
use crate::engine::ControlMode;
use crate::json::{Map, Value};
use crate::session::StateDir;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// How often invitations and sessions are refreshed.
pub const REFRESH: Duration = Duration::from_secs(2);

/// The console's screens (F2, F3, F4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScreenId {
    Sessions,
    Werewolf,
    Market,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Invitations,
    Sessions,
    Feed,
    Prompt,
}

pub enum Modal {
    Help(u16),
    Join(JoinDialog),
    Host(HostForm),
    Strategy(Box<Editor>),
    Search {
        target: Focus,
        text: String,
    },
    /// Attach a state dir typed by path.
    Open(String),
}

/// The session the right-hand panes show.
pub struct Attached {
    pub key: PathBuf,
    pub dir: StateDir,
    pub generation: u64,
    pub feed: Feed,
    pub snapshot: Map,
    pub session: Map,
    pub strategy: Map,
    pub window: Option<OpenWindow>,
    pub schema: Option<Map>,
    pub prompt: Option<Prompt>,
    /// Recent decisions.jsonl lines (the prompt shows the one on file).
    pub decisions: Vec<Map>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl Attached {
    fn is_free_chat(&self) -> bool {
        self.schema
            .as_ref()
            .is_some_and(|s| s.get("free_text") == Some(&Value::Bool(true)))
    }
    fn running(&self) -> bool {
        matches!(
            self.session.get("status").and_then(Value::as_str),
            Some("running" | "starting") | None
        )
    }
    fn local_mode(&self) -> Option<&str> {
        self.session
            .get("local_control_mode")
            .and_then(Value::as_str)
            .or_else(|| self.snapshot.get("control_mode").and_then(Value::as_str))
    }
    fn title(&self) -> String {
        self.key
            .file_name()
            .map(|n| format!("{} ", n.to_string_lossy()))
            .unwrap_or_default()
    }
}

/// Settings the console starts with.
pub struct Settings {
    pub data_dir: PathBuf,
    pub keymap: Keymap,
    pub theme: Theme,
    pub me: String,
    /// Relays for sessions on a remote community (config.toml's
    /// `relay_url`; empty: n0's relays and discovery).
    pub relays: Vec<iroh::RelayUrl>,
}

pub struct App {
    pub settings: Settings,
    tx: UnboundedSender<Action>,
    pub community: Option<Community>,
    pub community_status: String,
    pub invitations: Vec<Invitation>,
    pub inv_cur: Cursor,
    pub sessions: Vec<SessionRow>,
    pub ses_cur: Cursor,
    pub focus: Focus,
    pub modal: Option<Modal>,
    pub attached: Option<Attached>,
    generation: u64,
    pub status: (bool, String),
    pub quit: bool,
    pub size: (u16, u16),
    last_refresh: Option<Instant>,
    /// In-process sessions and host/join tasks, cancelled on quit.
    pub cancel: tokio::sync::watch::Sender<bool>,
    pub running_tasks: usize,
    /// A session to attach as soon as it shows up.
    pending_attach: Option<PathBuf>,
    pub screen: ScreenId,
    pub wolf: WolfView,
    pub market: MarketView,
    /// A first quit while sessions run here asks for a second one.
    quit_armed: Option<Instant>,
    /// Invitations this console hosts: post_id → its task's cancel switch.
    hosting: Vec<(Option<String>, tokio::sync::watch::Sender<bool>)>,
}

fn now_epoch() -> f64 {
    crate::session::files::epoch_now()
}

impl App {
    pub fn new(settings: Settings, tx: UnboundedSender<Action>) -> App {
        App {
            settings,
            tx,
            community: None,
            community_status: "starting the community…".into(),
            invitations: Vec::new(),
            inv_cur: Cursor::default(),
            sessions: Vec::new(),
            ses_cur: Cursor::default(),
            focus: Focus::Invitations,
            modal: None,
            attached: None,
            generation: 0,
            status: (true, String::new()),
            quit: false,
            size: (80, 24),
            last_refresh: None,
            cancel: tokio::sync::watch::channel(false).0,
            running_tasks: 0,
            pending_attach: None,
            hosting: Vec::new(),
            quit_armed: None,
            screen: ScreenId::Sessions,
            wolf: WolfView::default(),
            market: MarketView::default(),
        }
    }

    fn say(&mut self, ok: bool, s: impl Into<String>) {
        self.status = (ok, s.into());
    }

    /// The keymap context of the key about to be pressed.
    pub fn context(&self) -> Context {
        match (self.screen, &self.modal) {
            (ScreenId::Werewolf, None) => return self.wolf.context(),
            (ScreenId::Market, None) => return self.market.context(),
            _ => {}
        }
        match &self.modal {
            // Help scrolls like a list; `?` (global) closes it again.
            Some(Modal::Help(_)) => Context::List,
            Some(Modal::Join(_)) | Some(Modal::Host(_)) => Context::Dialog,
            Some(Modal::Strategy(_)) => Context::Editor,
            Some(Modal::Search { .. }) | Some(Modal::Open(_)) => Context::Text,
            None => match self.focus {
                Focus::Invitations | Focus::Sessions => Context::List,
                Focus::Feed => Context::Feed,
                Focus::Prompt => {
                    if self.prompt().is_some_and(Prompt::takes_text) {
                        Context::Text
                    } else {
                        Context::Prompt
                    }
                }
            },
        }
    }

    fn prompt(&self) -> Option<&Prompt> {
        self.attached.as_ref().and_then(|a| a.prompt.as_ref())
    }

    /// The action of a key in the current context.
    pub fn key_action(&self, key: KeyEvent) -> Option<Action> {
        let ctx = self.context();
        if let Some(a) = self.settings.keymap.lookup(ctx, &key) {
            // In a text prompt, Tab leaves the prompt.
            return Some(a);
        }
        let texty = match ctx {
            Context::Text | Context::Editor => true,
            Context::Dialog => matches!(self.modal, Some(Modal::Host(_))),
            _ => false,
        };
        if texty {
            return match key.code {
                KeyCode::Char(_) | KeyCode::Backspace => Some(Action::Input(key)),
                _ if ctx == Context::Editor => Some(Action::Input(key)),
                _ => None,
            };
        }
        None
    }

    /// The single place state changes.
    pub fn update(&mut self, action: Action) {
        match action {
            Action::Quit => {
                let confirmed = self
                    .quit_armed
                    .is_some_and(|t| t.elapsed() < Duration::from_secs(5));
                let n = self.running_tasks + self.wolf.running() + self.market.running();
                if n > 0 && !confirmed {
                    self.quit_armed = Some(Instant::now());
                    self.say(
                        false,
                        format!("{n} session(s) run in this console: quit again to end them"),
                    );
                    return;
                }
                self.quit = true;
                let _ = self.cancel.send(true);
            }
            Action::Tick => {
                self.tick();
                self.route_to(ScreenId::Werewolf, Action::Tick);
                self.route_to(ScreenId::Market, Action::Tick);
            }
            Action::ViewSessions => self.screen = ScreenId::Sessions,
            Action::ViewWerewolf => self.screen = ScreenId::Werewolf,
            Action::ViewMarket => self.screen = ScreenId::Market,
            Action::Wolf(m) => self.route_to(ScreenId::Werewolf, Action::Wolf(m)),
            Action::Market(m) => self.route_to(ScreenId::Market, Action::Market(m)),
            Action::Resize(w, h) => self.size = (w, h),
            Action::Help => {
                self.modal = match self.modal {
                    Some(Modal::Help(_)) => None,
                    _ => Some(Modal::Help(0)),
                }
            }
            Action::CommunityReady {
                url,
                embedded,
                nickname,
            } => {
                match tasks::Community::connect(
                    &url,
                    embedded,
                    &nickname,
                    &self.settings.data_dir,
                    &self.settings.relays,
                ) {
                    Ok(c) => {
                        // The identity may be new: startup created it.
                        self.settings.me = c.client.keys().public_key.clone();
                        self.community_status = format!(
                            "{} {url} · you are {nickname}",
                            if embedded {
                                "embedded community"
                            } else {
                                "community"
                            }
                        );
                        self.community = Some(c);
                        self.refresh();
                        let env = Env {
                            tx: &self.tx,
                            community: self.community.as_ref(),
                            data_dir: &self.settings.data_dir,
                            size: self.size,
                        };
                        self.wolf.community_ready(&env);
                        self.market.community_ready(&env);
                    }
                    Err(e) => self.community_status = format!("community unavailable: {e}"),
                }
            }
            Action::Invitations(r) => match r {
                Ok(mut l) => {
                    // A stable order: by protocol, oldest first.
                    l.sort_by(|a, b| {
                        a.alias.cmp(&b.alias).then(
                            a.created_at
                                .partial_cmp(&b.created_at)
                                .unwrap_or(std::cmp::Ordering::Equal),
                        )
                    });
                    self.invitations = l;
                    let n = lists::filter_invitations(&self.invitations, &self.inv_cur.query).len();
                    self.inv_cur.clamp(n);
                }
                Err(e) => self.community_status = format!("community: {e}"),
            },
            Action::Sessions(rows) => {
                self.sessions = rows;
                let n = lists::filter_sessions(&self.sessions, &self.ses_cur.query).len();
                self.ses_cur.clamp(n);
                if let Some(p) = self.pending_attach.clone()
                    && self.sessions.iter().any(|s| s.dir == p)
                {
                    self.pending_attach = None;
                    self.attach(&p);
                }
            }
            Action::Watch(generation, u) => self.watched(generation, *u),
            Action::Progress(p) => self.say(true, p),
            Action::InvitationOpen(post_id) => {
                // The oldest host task still without an invitation owns it.
                if let Some(slot) = self.hosting.iter_mut().find(|(p, _)| p.is_none()) {
                    slot.0 = Some(post_id);
                }
                self.refresh();
            }
            Action::Attach(p) => {
                self.attach(&p);
                self.refresh_sessions();
            }
            Action::TaskDone(r) => {
                self.running_tasks = self.running_tasks.saturating_sub(1);
                self.hosting.retain(|(_, c)| !c.is_closed());
                match r {
                    Ok(s) => self.say(true, s),
                    Err(e) => self.say(false, e),
                }
                self.refresh();
            }
            Action::Submitted(r) => {
                let note = match r {
                    Ok(s) => (true, s),
                    Err(e) => (false, e),
                };
                if let Some(p) = self.attached.as_mut().and_then(|a| a.prompt.as_mut()) {
                    if note.0 {
                        p.input.clear();
                    }
                    p.note = Some(note.clone());
                }
                self.say(note.0, note.1);
            }
            Action::Saved(r) => {
                let note = match r {
                    Ok(s) => (true, s),
                    Err(e) => (false, e),
                };
                if let Some(Modal::Strategy(e)) = self.modal.as_mut() {
                    e.note = Some(note.clone());
                }
                self.say(note.0, note.1);
            }
            Action::Refresh => {
                self.refresh();
                // A screen refreshes its own data too (the market now).
                if self.modal.is_none() && self.screen != ScreenId::Sessions {
                    self.route_to(self.screen, Action::Refresh);
                }
            }
            // A screen's own text fields (the market's job form) take pastes.
            Action::Paste(s) if self.modal.is_none() && self.screen != ScreenId::Sessions => {
                self.route_to(self.screen, Action::Paste(s))
            }
            Action::Paste(s) => self.paste(&s),
            other => {
                if self.modal.is_some() {
                    self.modal_action(other);
                } else if self.screen != ScreenId::Sessions {
                    self.route_to(self.screen, other);
                } else {
                    self.pane_action(other);
                }
            }
        }
    }

    /// Hands an action to a screen's own update.
    fn route_to(&mut self, which: ScreenId, a: Action) {
        let env = Env {
            tx: &self.tx,
            community: self.community.as_ref(),
            data_dir: &self.settings.data_dir,
            size: self.size,
        };
        match which {
            ScreenId::Werewolf => self.wolf.update(a, &env),
            ScreenId::Market => self.market.update(a, &env),
            ScreenId::Sessions => {}
        }
    }

    fn tick(&mut self) {
        let due = self.last_refresh.is_none_or(|t| t.elapsed() >= REFRESH);
        if due {
            self.refresh();
        }
    }

    fn refresh(&mut self) {
        self.last_refresh = Some(Instant::now());
        self.refresh_sessions();
        if let Some(c) = &self.community {
            tasks::list_invitations(c.client.clone(), self.tx.clone());
        }
    }

    fn refresh_sessions(&self) {
        tasks::scan_sessions(self.settings.data_dir.clone(), self.tx.clone());
    }

    fn paste(&mut self, s: &str) {
        match &mut self.modal {
            Some(Modal::Strategy(e)) => e.paste(s),
            Some(Modal::Search { text, .. }) | Some(Modal::Open(text)) => {
                text.push_str(s.lines().next().unwrap_or(""))
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
        if self.prompt().is_some() {
            v.push(Focus::Prompt);
        }
        v
    }

    fn pane_action(&mut self, a: Action) {
        match a {
            Action::FocusNext | Action::FocusPrev => {
                let order = self.focus_order();
                let i = order.iter().position(|f| *f == self.focus).unwrap_or(0);
                let n = order.len();
                self.focus = order[if a == Action::FocusNext {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                }];
            }
            Action::HostNew => {
                if self.community.is_none() {
                    self.say(false, "the community is not reachable yet");
                } else {
                    self.modal = Some(Modal::Host(HostForm::new(ControlMode::Human)));
                }
            }
            Action::Strategy => self.open_strategy(),
            Action::OpenPath => self.modal = Some(Modal::Open(String::new())),
            Action::Back => {
                if self.focus == Focus::Prompt {
                    self.focus = Focus::Feed;
                }
            }
            Action::Search
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
                Focus::Invitations => self.invitations_action(other),
                Focus::Sessions => self.sessions_action(other),
                Focus::Feed => self.feed_action(other),
                Focus::Prompt => self.prompt_action(other),
            },
        }
    }

    fn page(&self) -> usize {
        (self.size.1 as usize).saturating_sub(8).max(1)
    }

    fn invitations_action(&mut self, a: Action) {
        let shown = lists::filter_invitations(&self.invitations, &self.inv_cur.query).len();
        let page = self.page() / 2;
        if self.inv_cur.navigate(&a, shown, page) {
            return;
        }
        match a {
            Action::Activate => {
                let Some(inv) = self.selected_invitation() else {
                    return;
                };
                if inv.public_key == self.settings.me {
                    self.say(false, "that is your own invitation (x cancels it)");
                    return;
                }
                if let Some(why) = &inv.unjoinable {
                    self.say(false, format!("palaver cannot join this invitation: {why}"));
                    return;
                }
                self.modal = Some(Modal::Join(JoinDialog {
                    invitation: inv,
                    mode: ControlMode::Human,
                }));
            }
            Action::CancelInvitation => {
                let Some(inv) = self.selected_invitation() else {
                    return;
                };
                if inv.public_key != self.settings.me {
                    self.say(false, "you can only cancel your own invitations (marked ★)");
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
                    self.say(true, format!("cancelling invitation {}…", inv.post_id));
                } else if let Some(c) = &self.community {
                    tasks::cancel_invitation(
                        c.client.clone(),
                        inv.post_id.clone(),
                        self.tx.clone(),
                    );
                    self.running_tasks += 1;
                }
            }
            _ => {}
        }
    }

    pub fn selected_invitation(&self) -> Option<Invitation> {
        lists::filter_invitations(&self.invitations, &self.inv_cur.query)
            .get(self.inv_cur.selected)
            .map(|i| (*i).clone())
    }

    fn sessions_action(&mut self, a: Action) {
        let shown = lists::filter_sessions(&self.sessions, &self.ses_cur.query).len();
        let page = self.page() / 2;
        if self.ses_cur.navigate(&a, shown, page) {
            return;
        }
        if a == Action::Activate {
            let dir = lists::filter_sessions(&self.sessions, &self.ses_cur.query)
                .get(self.ses_cur.selected)
                .map(|s| s.dir.clone());
            if let Some(d) = dir {
                self.attach(&d);
                self.focus = Focus::Feed;
            }
        }
    }

    fn feed_action(&mut self, a: Action) {
        let page = self.page();
        let Some(att) = self.attached.as_mut() else {
            return;
        };
        let f = &mut att.feed;
        let load = match a {
            Action::Up => f.scroll_up(1),
            Action::Down => f.scroll_down(1),
            Action::PageUp => f.scroll_up(page),
            Action::PageDown => f.scroll_down(page),
            Action::Top => f.top(),
            Action::Bottom => f.follow(),
            Action::Filter => {
                f.filter = f.filter.next();
                None
            }
            Action::RawToggle => {
                f.raw = !f.raw;
                None
            }
            Action::FoldToggle => {
                f.fold = !f.fold;
                None
            }
            Action::SearchNext => f.next_match(),
            _ => None,
        };
        if let Some(start) = load {
            tasks::load_page(
                att.dir.events_file(),
                att.generation,
                start,
                WINDOW,
                self.tx.clone(),
            );
        }
    }

    fn prompt_action(&mut self, a: Action) {
        let Some(att) = self.attached.as_mut() else {
            return;
        };
        let Some(p) = att.prompt.as_mut() else {
            self.focus = Focus::Feed;
            return;
        };
        match a {
            Action::Left => p.left(),
            Action::Right => p.right(),
            Action::Up => p.up(),
            Action::Down => p.down(),
            Action::Choose(n) if p.choose(n) => self.submit(),
            Action::Submit => self.submit(),
            Action::Input(k) => dialogs::edit_line(&mut p.input, &k),
            _ => {}
        }
    }

    /// Writes the prompt's decision (or chat line) like `palaver session decide`.
    fn submit(&mut self) {
        let Some(att) = self.attached.as_ref() else {
            return;
        };
        let Some(p) = att.prompt.as_ref() else {
            return;
        };
        let child = att.dir.child.clone();
        if p.window.is_none() {
            // Free-mode chat: the line goes to the inbox the engine reads.
            let line = p.input.trim().to_owned();
            if line.is_empty() {
                return;
            }
            tasks::send_chat(child, prompt::chat_line(&line), self.tx.clone());
            return;
        }
        match p.body() {
            Ok(body) => tasks::submit_decision(child, body, self.tx.clone()),
            Err(e) => {
                if let Some(p) = self.attached.as_mut().and_then(|a| a.prompt.as_mut()) {
                    p.note = Some((false, e));
                }
            }
        }
    }

    // --------------------------------------------------------------- modals

    fn modal_action(&mut self, a: Action) {
        let Some(modal) = self.modal.take() else {
            return;
        };
        let keep = match modal {
            Modal::Help(s) => match a {
                Action::Back => None,
                Action::Down => Some(Modal::Help(s.saturating_add(1))),
                Action::Up => Some(Modal::Help(s.saturating_sub(1))),
                _ => Some(Modal::Help(s)),
            },
            Modal::Join(mut d) => match a {
                Action::Back => None,
                Action::Left | Action::Up => {
                    d.mode = dialogs::next_mode(d.mode, true);
                    Some(Modal::Join(d))
                }
                Action::Right | Action::Down | Action::CycleMode => {
                    d.mode = dialogs::next_mode(d.mode, false);
                    Some(Modal::Join(d))
                }
                Action::Submit => {
                    self.join(d);
                    None
                }
                _ => Some(Modal::Join(d)),
            },
            Modal::Host(mut h) => match a {
                Action::Back => None,
                Action::Up => {
                    h.row = h.row.saturating_sub(1);
                    Some(Modal::Host(h))
                }
                Action::Down => {
                    h.row = (h.row + 1).min(h.rows() - 1);
                    Some(Modal::Host(h))
                }
                Action::Left | Action::Right => {
                    h.left_right(a == Action::Left);
                    Some(Modal::Host(h))
                }
                Action::CycleMode => {
                    let r = h.row;
                    h.row = 1;
                    h.left_right(false);
                    h.row = r;
                    Some(Modal::Host(h))
                }
                Action::Preset => {
                    let r = h.row;
                    h.row = 2;
                    h.left_right(false);
                    h.row = r;
                    Some(Modal::Host(h))
                }
                Action::Input(k) => {
                    match k.code {
                        KeyCode::Char(c) => h.edit(Some(c)),
                        KeyCode::Backspace => h.edit(None),
                        _ => {}
                    }
                    Some(Modal::Host(h))
                }
                Action::Submit => {
                    if h.validate() {
                        self.host(h);
                        None
                    } else {
                        Some(Modal::Host(h))
                    }
                }
                _ => Some(Modal::Host(h)),
            },
            Modal::Strategy(mut e) => match a {
                Action::Back => None,
                Action::Input(k) => {
                    e.input(k);
                    Some(Modal::Strategy(e))
                }
                Action::Preset => {
                    e.next_preset();
                    Some(Modal::Strategy(e))
                }
                Action::Save | Action::Merge => {
                    match &e.parsed {
                        Ok(m) => {
                            tasks::write_strategy(
                                e.child.clone(),
                                m.clone(),
                                a == Action::Merge,
                                self.tx.clone(),
                            );
                            e.note = Some((
                                true,
                                if a == Action::Merge {
                                    "merging…"
                                } else {
                                    "saving…"
                                }
                                .into(),
                            ));
                        }
                        Err(err) => e.note = Some((false, format!("not saved: {err}"))),
                    }
                    Some(Modal::Strategy(e))
                }
                _ => Some(Modal::Strategy(e)),
            },
            Modal::Open(mut text) => match a {
                Action::Back => None,
                Action::Submit => {
                    let p = PathBuf::from(text.trim());
                    if watch::resolve(&p).is_some() {
                        self.attach(&p);
                        self.focus = Focus::Feed;
                        None
                    } else {
                        self.say(false, format!("{} is not a session state dir", p.display()));
                        Some(Modal::Open(text))
                    }
                }
                Action::Input(k) => {
                    dialogs::edit_line(&mut text, &k);
                    Some(Modal::Open(text))
                }
                _ => Some(Modal::Open(text)),
            },
            Modal::Search { target, mut text } => match a {
                Action::Back => {
                    self.set_search(target, String::new());
                    None
                }
                Action::Submit => {
                    self.set_search(target, text);
                    None
                }
                Action::Input(k) => {
                    dialogs::edit_line(&mut text, &k);
                    if target != Focus::Feed {
                        self.set_search(target, text.clone());
                    }
                    Some(Modal::Search { target, text })
                }
                _ => Some(Modal::Search { target, text }),
            },
        };
        if self.modal.is_none() {
            self.modal = keep;
        }
    }

    fn set_search(&mut self, target: Focus, text: String) {
        match target {
            Focus::Invitations => {
                self.inv_cur.query = text;
                self.inv_cur.selected = 0;
            }
            Focus::Sessions => {
                self.ses_cur.query = text;
                self.ses_cur.selected = 0;
            }
            _ => {
                if let Some(att) = self.attached.as_mut() {
                    att.feed.matches.clear();
                    if text.is_empty() {
                        att.feed.search = None;
                    } else {
                        att.feed.search = Some(text.clone());
                        tasks::search_feed(
                            att.dir.events_file(),
                            att.generation,
                            text,
                            self.tx.clone(),
                        );
                    }
                }
            }
        }
    }

    fn open_strategy(&mut self) {
        let Some(att) = self.attached.as_ref() else {
            self.say(
                false,
                "attach a session first: the strategy belongs to a session",
            );
            return;
        };
        let presets = editor::presets(att.schema.as_ref());
        self.modal = Some(Modal::Strategy(Box::new(Editor::new(
            att.dir.child.clone(),
            &att.strategy,
            presets,
        ))));
    }

    fn join(&mut self, d: JoinDialog) {
        let Some(c) = self.community.clone() else {
            self.say(false, "the community is not reachable");
            return;
        };
        self.say(
            true,
            format!("joining {} as {}…", d.invitation.alias, d.mode.as_str()),
        );
        self.running_tasks += 1;
        tasks::join(
            c,
            d.invitation.post_id.clone(),
            d.mode,
            self.settings.data_dir.clone(),
            self.cancel.subscribe(),
            self.tx.clone(),
        );
    }

    fn host(&mut self, h: HostForm) {
        let (Some(c), Some(spec)) = (self.community.clone(), h.spec()) else {
            self.say(false, "the community is not reachable");
            return;
        };
        let Ok(options) = h.options() else {
            return;
        };
        self.say(
            true,
            format!("hosting {} as {}…", h.alias(), h.mode.as_str()),
        );
        self.running_tasks += 1;
        let (this, this_rx) = tokio::sync::watch::channel(false);
        self.hosting.push((None, this));
        tasks::host(
            c,
            tasks::HostJob {
                spec: spec.clone(),
                options,
                mode: h.mode,
                data_dir: self.settings.data_dir.clone(),
            },
            self.cancel.subscribe(),
            this_rx,
            self.tx.clone(),
        );
    }

    // ------------------------------------------------------------- sessions

    /// Follows the session in `path` (a parent or an engine dir).
    pub fn attach(&mut self, path: &Path) {
        let Some((key, dir)) = watch::resolve(path) else {
            self.pending_attach = Some(path.to_owned());
            self.say(
                false,
                format!("{} is not a session state dir (yet)", path.display()),
            );
            return;
        };
        if self.attached.as_ref().is_some_and(|a| a.key == key) {
            return;
        }
        self.generation += 1;
        let task = watch::spawn(dir.clone(), self.generation, self.tx.clone());
        self.attached = Some(Attached {
            key,
            dir,
            generation: self.generation,
            feed: Feed::default(),
            snapshot: Map::new(),
            session: Map::new(),
            strategy: Map::new(),
            window: None,
            schema: None,
            prompt: None,
            decisions: Vec::new(),
            task: Some(task),
        });
        if self.focus == Focus::Prompt {
            self.focus = Focus::Feed;
        }
    }

    fn watched(&mut self, generation: u64, u: WatchUpdate) {
        let Some(att) = self.attached.as_mut() else {
            return;
        };
        if att.generation != generation {
            return;
        }
        if let Some((first, rows)) = u.appended {
            att.feed.append(first, rows);
        }
        if let Some((start, rows)) = u.page {
            att.feed.page(start, rows);
        }
        if let Some((needle, m)) = u.matches
            && att.feed.search.as_deref() == Some(needle.as_str())
        {
            att.feed.matches = m;
            if let Some(start) = att.feed.next_match() {
                tasks::load_page(
                    att.dir.events_file(),
                    generation,
                    start,
                    WINDOW,
                    self.tx.clone(),
                );
            }
        }
        if let Some(s) = u.session {
            att.session = s;
            if att.schema.is_none()
                && let Some(pid) = att.session.get("protocol_id").and_then(Value::as_str)
            {
                att.schema =
                    crate::protocols::native_hooks_by_id(pid).and_then(|h| h.decision_schema());
            }
        }
        if let Some(s) = u.snapshot {
            if att.schema.is_none()
                && let Some(pid) = s.get("protocol_id").and_then(Value::as_str)
            {
                att.schema =
                    crate::protocols::native_hooks_by_id(pid).and_then(|h| h.decision_schema());
            }
            att.snapshot = s;
        }
        if let Some(s) = u.strategy {
            att.strategy = s;
        }
        if let Some(w) = u.window {
            att.window = w;
        }
        att.decisions.extend(u.decisions);
        // Only the last lines can belong to an open window.
        let drop_n = att.decisions.len().saturating_sub(64);
        att.decisions.drain(..drop_n);
        self.sync_prompt();
        if let Some(att) = self.attached.as_mut()
            && let Some(p) = att.prompt.as_mut()
        {
            for rec in &att.decisions {
                p.consider(rec);
            }
            let options = att
                .session
                .get("options")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            p.complete(&att.snapshot, &options);
        }
    }

    /// Shows the prompt while a window is open on a session we steer (or a
    /// free chat runs), and focuses it when it appears.
    fn sync_prompt(&mut self) {
        let Some(att) = self.attached.as_mut() else {
            return;
        };
        let steerable = att.local_mode().is_some_and(|m| m != "autonomous");
        let want = if !att.running() {
            None
        } else if att.is_free_chat() {
            Some(None)
        } else if steerable {
            att.window.clone().map(Some)
        } else {
            None
        };
        match want {
            None => {
                att.prompt = None;
                if self.focus == Focus::Prompt {
                    self.focus = Focus::Feed;
                }
            }
            Some(None) => {
                if att.prompt.is_none() {
                    att.prompt = Some(Prompt::chat());
                    self.focus = Focus::Prompt;
                }
            }
            Some(Some(w)) => {
                if att.prompt.as_ref().and_then(|p| p.window.as_ref()) != Some(&w) {
                    let mut p = Prompt::for_window(att.schema.as_ref(), w);
                    let options = att
                        .session
                        .get("options")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    p.complete(&att.snapshot, &options);
                    // Keep the note of the last submission visible.
                    p.note = att.prompt.as_ref().and_then(|o| o.note.clone());
                    att.prompt = Some(p);
                    if self.modal.is_none() {
                        self.focus = Focus::Prompt;
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------- drawing

    pub fn render(&self, f: &mut Frame) {
        let area = f.area();
        let theme = &self.settings.theme;
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(1),
                Constraint::Min(4),
                Constraint::Length(1),
            ])
            .split(area);
        self.draw_header(f, rows[0]);
        if self.screen != ScreenId::Sessions {
            let p = ScreenPaint {
                theme,
                keymap: &self.settings.keymap,
            };
            match self.screen {
                ScreenId::Werewolf => self.wolf.draw(f, rows[1], &p),
                _ => self.market.draw(f, rows[1], &p),
            }
            self.draw_footer(f, rows[2]);
            if let Some(Modal::Help(s)) = &self.modal {
                dialogs::draw_help(f, area, theme, &self.settings.keymap, *s);
            }
            return;
        }
        let left_w = if area.width >= 140 {
            48
        } else if area.width >= 100 {
            40
        } else {
            32
        };
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(left_w.min(area.width / 2)),
                Constraint::Min(20),
            ])
            .split(rows[1]);
        let left = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(55), Constraint::Percentage(45)])
            .split(cols[0]);
        let now = now_epoch();
        let paint = |area, pane| lists::Paint {
            area,
            theme,
            focused: self.focus == pane && self.modal.is_none(),
            now,
        };
        lists::draw_invitations(
            f,
            &paint(left[0], Focus::Invitations),
            &self.invitations,
            &self.inv_cur,
            &self.settings.me,
            if self.community.is_none() {
                &self.community_status
            } else {
                ""
            },
        );
        lists::draw_sessions(
            f,
            &paint(left[1], Focus::Sessions),
            &self.sessions,
            &self.ses_cur,
            self.attached.as_ref().map(|a| a.key.as_path()),
        );
        self.draw_right(f, cols[1]);
        self.draw_footer(f, rows[2]);
        match &self.modal {
            Some(Modal::Help(s)) => dialogs::draw_help(f, area, theme, &self.settings.keymap, *s),
            Some(Modal::Join(d)) => {
                let spec = crate::library::Library::bundled()
                    .entries()
                    .iter()
                    .find(|e| e.protocol_id == d.invitation.protocol_id)
                    .and_then(|e| crate::library::bundled_spec(&e.alias));
                d.draw(f, area, theme, spec)
            }
            Some(Modal::Host(h)) => h.draw(f, area, theme),
            Some(Modal::Strategy(e)) => e.draw(f, area, theme),
            Some(Modal::Open(text)) => {
                dialogs::draw_search(f, rows[1], theme, "Attach a state dir (path)", text)
            }
            Some(Modal::Search { target, text }) => {
                let what = match target {
                    Focus::Invitations => "Search invitations",
                    Focus::Sessions => "Search sessions",
                    _ => "Search the feed (Enter searches the whole session)",
                };
                dialogs::draw_search(f, rows[1], theme, what, text)
            }
            None => {}
        }
    }

    fn draw_header(&self, f: &mut Frame, area: Rect) {
        let theme = &self.settings.theme;
        let mut spans = vec![Span::styled(" palaver ", theme.title())];
        for (id, key, label) in [
            (ScreenId::Sessions, Action::ViewSessions, "Sessions"),
            (ScreenId::Werewolf, Action::ViewWerewolf, self.wolf.title()),
            (ScreenId::Market, Action::ViewMarket, self.market.title()),
        ] {
            let k = self
                .settings
                .keymap
                .key_for(Context::Global, &key)
                .unwrap_or_default();
            let style = if id == self.screen {
                theme.selected()
            } else {
                theme.muted()
            };
            spans.push(Span::styled(format!("{k} {label}"), style));
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled(
            format!("· {}", self.community_status),
            theme.muted(),
        ));
        if self.running_tasks > 0 {
            spans.push(Span::styled(
                format!(" · {} running", self.running_tasks),
                theme.accent(),
            ));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), area);
    }

    fn draw_right(&self, f: &mut Frame, area: Rect) {
        let theme = &self.settings.theme;
        let Some(att) = self.attached.as_ref() else {
            let empty = Map::new();
            let v = snapshot::View {
                snapshot: &empty,
                session: &empty,
                window: None,
                cursor: None,
            };
            let parts = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Length(6), Constraint::Min(3)])
                .split(area);
            v.draw(f, parts[0], theme, "");
            Feed::default().draw(f, parts[1], theme, self.focus == Focus::Feed, "");
            return;
        };
        let cursor = att.prompt.as_ref().and_then(|p| match p.kind {
            prompt::Kind::Board { column_only, .. } => Some((p.cursor.0, p.cursor.1, column_only)),
            _ => None,
        });
        let view = snapshot::View {
            snapshot: &att.snapshot,
            session: &att.session,
            window: att.window.as_ref().filter(|_| att.running()),
            cursor,
        };
        // The feed keeps at least a third of the height.
        let snap_h = view
            .height(theme, area.width)
            .min(area.height.saturating_sub(area.height / 3).max(3));
        let prompt_h = att.prompt.as_ref().map(|p| p.height()).unwrap_or(0);
        let parts = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(snap_h),
                Constraint::Min(3),
                Constraint::Length(prompt_h),
            ])
            .split(area);
        view.draw(f, parts[0], theme, &att.title());
        att.feed.draw(
            f,
            parts[1],
            theme,
            self.focus == Focus::Feed && self.modal.is_none(),
            "",
        );
        if let Some(p) = &att.prompt {
            p.draw(
                f,
                parts[2],
                theme,
                self.focus == Focus::Prompt && self.modal.is_none(),
            );
        }
    }

    fn draw_footer(&self, f: &mut Frame, area: Rect) {
        let theme = &self.settings.theme;
        let ctx = self.context();
        let screen_hints = match self.screen {
            ScreenId::Werewolf => self.wolf.hints(),
            ScreenId::Market => self.market.hints(),
            ScreenId::Sessions => Vec::new(),
        };
        let actions: &[Action] = match (&self.modal, self.focus) {
            (None, _) if self.screen != ScreenId::Sessions => &screen_hints,
            (Some(Modal::Strategy(_)), _) => {
                &[Action::Save, Action::Merge, Action::Preset, Action::Back]
            }
            (Some(_), _) => &[Action::Submit, Action::Back],
            (None, Focus::Invitations) => &[
                Action::Activate,
                Action::HostNew,
                Action::Search,
                Action::CancelInvitation,
                Action::FocusNext,
                Action::Help,
                Action::Quit,
            ],
            (None, Focus::Sessions) => &[
                Action::Activate,
                Action::OpenPath,
                Action::Strategy,
                Action::Search,
                Action::FocusNext,
                Action::Help,
                Action::Quit,
            ],
            (None, Focus::Feed) => &[
                Action::Search,
                Action::Filter,
                Action::RawToggle,
                Action::FoldToggle,
                Action::Strategy,
                Action::FocusNext,
                Action::Help,
            ],
            // A typed answer has nothing to pick with the arrows.
            (None, Focus::Prompt) if self.prompt().is_some_and(Prompt::takes_text) => {
                &[Action::Submit, Action::Back, Action::Help]
            }
            (None, Focus::Prompt) => &[Action::Submit, Action::Left, Action::Back, Action::Help],
        };
        let mut spans = Vec::new();
        if !self.status.1.is_empty() {
            spans.push(Span::styled(
                format!(" {} ", self.status.1),
                if self.status.0 {
                    theme.fg("ok")
                } else {
                    theme.fg("error")
                },
            ));
            spans.push(Span::styled("│", theme.muted()));
        }
        for (k, label) in self.settings.keymap.hints(ctx, actions) {
            spans.push(Span::styled(format!(" {k}"), theme.accent()));
            spans.push(Span::styled(format!(" {label}"), theme.muted()));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), area);
    }
}
