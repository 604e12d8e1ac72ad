//! The console's shell: which screen shows, the help overlay, quitting,
//! the header and the status bar. Keys become commands through the keymap
//! (`key_message`); `update` hands each message to the screen it is for,
//! shows the status lines screens ask for and starts the tasks they
//! return; `render` only draws.

use super::command::Command;
use super::community::Community;
use super::effect::{Effect, Effects};
use super::keymap::{Context, Keymap};
use super::msg::Msg;
use super::panes::dialogs;
use super::report::Report;
use super::screen::{Env, Paint, Screen};
use super::screens::inbox::InboxView;
use super::screens::leaders::LeadersView;
use super::screens::market::MarketView;
use super::screens::sessions::SessionsView;
use super::screens::wolf::WolfView;
use super::tasks::Tasks;
use super::theme::{Slot, Theme};
use crate::tui::effect::JoinSpec;
use crate::tui::note::Note;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// The console's screens (F2 … F6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScreenId {
    Sessions,
    Werewolf,
    Market,
    Inbox,
    Leaders,
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
    pub tasks: Tasks,
    pub community: Option<Community>,
    pub community_status: String,
    pub status: Note,
    pub quit: bool,
    pub size: (u16, u16),
    pub screen: ScreenId,
    /// The help overlay and how far it is scrolled.
    pub help: Option<u16>,
    pub sessions: SessionsView,
    pub wolf: WolfView,
    pub market: MarketView,
    pub inbox: InboxView,
    pub leaders: LeadersView,
    /// A first quit while sessions run here asks for a second one.
    quit_armed: Option<Instant>,
}

/// What screens read while updating, borrowed field by field (a screen
/// is borrowed mutably at the same time).
fn env<'a>(community: &'a Option<Community>, settings: &'a Settings, size: (u16, u16)) -> Env<'a> {
    Env {
        community: community.as_ref(),
        data_dir: &settings.data_dir,
        me: &settings.me,
        size,
    }
}

impl App {
    pub fn new(settings: Settings, tx: UnboundedSender<Report>) -> App {
        App {
            settings,
            tasks: Tasks::new(tx),
            community: None,
            community_status: "starting the community…".into(),
            status: Note::ok(String::new()),
            quit: false,
            size: (80, 24),
            screen: ScreenId::Sessions,
            help: None,
            sessions: SessionsView::default(),
            wolf: WolfView::default(),
            market: MarketView::default(),
            inbox: InboxView::default(),
            leaders: LeadersView::default(),
            quit_armed: None,
        }
    }

    fn shown(&self) -> &dyn Screen {
        match self.screen {
            ScreenId::Sessions => &self.sessions,
            ScreenId::Werewolf => &self.wolf,
            ScreenId::Market => &self.market,
            ScreenId::Inbox => &self.inbox,
            ScreenId::Leaders => &self.leaders,
        }
    }

    /// The keymap context of the key about to be pressed.
    pub fn context(&self) -> Context {
        // Help scrolls like a list; `?` (global) closes it again.
        if self.help.is_some() {
            return Context::List;
        }
        self.shown().context()
    }

    /// What a key means in the current context: a command, a key typed
    /// into a field, or nothing.
    pub fn key_message(&self, key: KeyEvent) -> Option<Msg> {
        let ctx = self.context();
        if let Some(c) = self.settings.keymap.lookup(ctx, &key) {
            return Some(Msg::Command(c));
        }
        if self.help.is_none() && self.shown().typing() {
            return match key.code {
                KeyCode::Char(_) | KeyCode::Backspace => Some(Msg::Input(key)),
                _ if ctx == Context::Editor => Some(Msg::Input(key)),
                _ => None,
            };
        }
        None
    }

    /// Follows the session in `path` (a parent or an engine dir).
    pub fn attach(&mut self, path: &Path) {
        let fx = self.sessions.attach(path);
        self.perform(fx);
    }

    /// Opens the werewolf screen seated at a remote server.
    pub fn join_wolf(&mut self, spec: JoinSpec) {
        self.screen = ScreenId::Werewolf;
        let fx = self.wolf.join(spec);
        self.perform(fx);
    }

    /// The single place state changes.
    pub fn update(&mut self, m: impl Into<Msg>) {
        let fx = self.step(m.into());
        self.perform(fx);
    }

    fn perform(&mut self, fx: Effects) {
        for e in fx {
            match e {
                Effect::Status(ok, text) => self.status = Note::new(ok, text),
                Effect::Task(t) => self.tasks.perform(t),
                Effect::MessageAgent { key, nickname } => {
                    self.help = None;
                    self.screen = ScreenId::Inbox;
                    self.inbox.compose_to(&key, &nickname);
                }
            }
        }
    }

    /// Hands `m` to a screen.
    fn to(&mut self, which: ScreenId, m: Msg) -> Effects {
        let env = env(&self.community, &self.settings, self.size);
        match which {
            ScreenId::Sessions => self.sessions.update(m, &env),
            ScreenId::Werewolf => self.wolf.update(m, &env),
            ScreenId::Market => self.market.update(m, &env),
            ScreenId::Inbox => self.inbox.update(m, &env),
            ScreenId::Leaders => self.leaders.update(m, &env),
        }
    }

    fn step(&mut self, m: Msg) -> Effects {
        match m {
            Msg::Command(Command::Quit) => {
                self.ask_quit();
                Effects::new()
            }
            Msg::Command(Command::Help) => {
                self.help = match self.help {
                    Some(_) => None,
                    None => Some(0),
                };
                Effects::new()
            }
            Msg::Command(Command::ViewSessions) => self.switch(ScreenId::Sessions),
            Msg::Command(Command::ViewWerewolf) => self.switch(ScreenId::Werewolf),
            Msg::Command(Command::ViewMarket) => self.switch(ScreenId::Market),
            Msg::Command(Command::ViewInbox) => self.switch(ScreenId::Inbox),
            Msg::Command(Command::ViewLeaders) => self.switch(ScreenId::Leaders),
            Msg::Command(Command::Refresh) => {
                let env = env(&self.community, &self.settings, self.size);
                let mut fx = self.sessions.refresh(&env);
                // A screen refreshes its own data too (the market now).
                if self.help.is_none() && self.screen != ScreenId::Sessions {
                    fx.extend(self.to(self.screen, Msg::Command(Command::Refresh)));
                }
                fx
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                Effects::new()
            }
            Msg::Tick => {
                let mut fx = self.to(ScreenId::Sessions, Msg::Tick);
                fx.extend(self.to(ScreenId::Werewolf, Msg::Tick));
                fx.extend(self.to(ScreenId::Market, Msg::Tick));
                // The inbox polls its unread count whichever screen shows.
                fx.extend(self.to(ScreenId::Inbox, Msg::Tick));
                fx
            }
            Msg::Report(r) => self.report(r),
            Msg::Command(c) if self.help.is_some() => {
                self.help_command(c);
                Effects::new()
            }
            m => self.to(self.screen, m),
        }
    }

    fn switch(&mut self, to: ScreenId) -> Effects {
        self.screen = to;
        if to == ScreenId::Leaders {
            let env = env(&self.community, &self.settings, self.size);
            return self.leaders.shown(&env);
        }
        Effects::new()
    }

    fn ask_quit(&mut self) {
        let confirmed = self
            .quit_armed
            .is_some_and(|t| t.elapsed() < Duration::from_secs(5));
        let n = self.sessions.running() + self.wolf.running() + self.market.running();
        if n > 0 && !confirmed {
            self.quit_armed = Some(Instant::now());
            self.status = Note::err(format!(
                "{n} session(s) run in this console: quit again to end them"
            ));
            return;
        }
        self.quit = true;
        self.tasks.quit();
    }

    fn help_command(&mut self, c: Command) {
        let Some(s) = self.help else {
            return;
        };
        self.help = match c {
            Command::Back => None,
            Command::Down => Some(s.saturating_add(1)),
            Command::Up => Some(s.saturating_sub(1)),
            _ => Some(s),
        };
    }

    fn report(&mut self, r: Report) -> Effects {
        match r {
            Report::CommunityReady {
                url,
                embedded,
                nickname,
            } => self.community_ready(&url, embedded, &nickname),
            Report::Invitations(Err(e)) => {
                self.community_status = format!("community: {e}");
                Effects::new()
            }
            Report::Progress(p) => {
                self.status = Note::ok(p);
                Effects::new()
            }
            r @ Report::Wolf(_) => self.to(ScreenId::Werewolf, Msg::Report(r)),
            r @ Report::Market(_) => self.to(ScreenId::Market, Msg::Report(r)),
            r @ Report::Inbox(_) => self.to(ScreenId::Inbox, Msg::Report(r)),
            r @ Report::Leaders(_) => self.to(ScreenId::Leaders, Msg::Report(r)),
            r => self.to(ScreenId::Sessions, Msg::Report(r)),
        }
    }

    fn community_ready(&mut self, url: &str, embedded: bool, nickname: &str) -> Effects {
        match Community::connect(
            url,
            embedded,
            nickname,
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
                let env = env(&self.community, &self.settings, self.size);
                let mut fx = self.sessions.community_ready(&env);
                fx.extend(self.wolf.community_ready(&env));
                fx.extend(self.market.community_ready(&env));
                fx.extend(self.inbox.community_ready(&env));
                if self.screen == ScreenId::Leaders {
                    fx.extend(self.leaders.shown(&env));
                }
                fx
            }
            Err(e) => {
                self.community_status = format!("community unavailable: {e}");
                Effects::new()
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
        // The status bar first: a screen's dialog may cover it.
        self.draw_footer(f, rows[2]);
        let p = Paint {
            theme,
            keymap: &self.settings.keymap,
            me: &self.settings.me,
            offline: if self.community.is_none() {
                &self.community_status
            } else {
                ""
            },
            covered: self.help.is_some(),
        };
        self.shown().draw(f, rows[1], &p);
        if let Some(s) = self.help {
            dialogs::draw_help(f, area, theme, &self.settings.keymap, s);
        }
    }

    fn draw_header(&self, f: &mut Frame, area: Rect) {
        let theme = &self.settings.theme;
        let mut spans = vec![Span::styled(" palaver ", theme.title())];
        for (id, command, label) in [
            (
                ScreenId::Sessions,
                Command::ViewSessions,
                self.sessions.title(),
            ),
            (ScreenId::Werewolf, Command::ViewWerewolf, self.wolf.title()),
            (ScreenId::Market, Command::ViewMarket, self.market.title()),
            (ScreenId::Inbox, Command::ViewInbox, self.inbox.title()),
            (
                ScreenId::Leaders,
                Command::ViewLeaders,
                self.leaders.title(),
            ),
        ] {
            let k = self
                .settings
                .keymap
                .key_for(Context::Global, command)
                .unwrap_or_default();
            let style = if id == self.screen {
                theme.selected()
            } else {
                theme.muted()
            };
            spans.push(Span::styled(format!("{k} {label}"), style));
            // The unread count rides on the inbox's tab, on every screen.
            if id == ScreenId::Inbox
                && let Some(n) = self.inbox.unread.filter(|n| *n > 0)
            {
                spans.push(Span::styled(format!(" ✉ {n}"), theme.accent()));
            }
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled(
            format!("· {}", self.community_status),
            theme.muted(),
        ));
        let running = self.sessions.running();
        if running > 0 {
            spans.push(Span::styled(
                format!(" · {running} running"),
                theme.accent(),
            ));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), area);
    }

    fn draw_footer(&self, f: &mut Frame, area: Rect) {
        let theme = &self.settings.theme;
        let hints = match self.help {
            Some(_) => vec![Command::Submit, Command::Back],
            None => self.shown().hints(),
        };
        let mut spans = Vec::new();
        if !self.status.text.is_empty() {
            spans.push(Span::styled(
                format!(" {} ", self.status.text),
                if self.status.ok {
                    theme.fg(Slot::Ok)
                } else {
                    theme.fg(Slot::Error)
                },
            ));
            spans.push(Span::styled("│", theme.muted()));
        }
        for (k, label) in self.settings.keymap.hints(self.context(), &hints) {
            spans.push(Span::styled(format!(" {k}"), theme.accent()));
            spans.push(Span::styled(format!(" {label}"), theme.muted()));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), area);
    }
}
