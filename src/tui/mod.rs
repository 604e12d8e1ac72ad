//! The terminal console (`palaver` with no command): panes for invitations,
//! sessions, the live feed, snapshot and score, the strategy editor and the
//! decision prompt, over the engine running in-process.
//!
//! Shape: keys become [`command::Command`]s through the [`keymap`] (data,
//! TOML); everything that happens is a [`msg::Msg`] (a command, typed text,
//! a tick, a task's [`report::Report`]); [`app::App::update`] hands it to
//! the screen it is for (`screens/`: sessions, werewolf, market), whose
//! `update` is the only place its state changes and returns
//! [`effect::Effect`]s; [`tasks`] runs them and the tasks report back.
//! Panes draw from `&self`. [`Headless`] drives the same app without a
//! terminal (tests, benchmarks).

pub mod app;
pub mod command;
pub mod community;
pub mod effect;
pub mod keymap;
pub mod msg;
pub mod note;
pub mod panes;
pub mod report;
pub mod screen;
pub mod screens;
pub mod tank_journal;
pub mod tank_order;
pub mod tasks;
pub mod theme;
pub mod watch;

use app::{App, Settings};
use command::Command;
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures_util::StreamExt;
use keymap::Keymap;
use msg::Msg;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use report::Report;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use theme::Theme;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Redraw and refresh cadence of the console.
pub const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error(transparent)]
    Theme(#[from] theme::ThemeError),
    #[error(transparent)]
    Keymap(#[from] keymap::KeymapError),
    #[error(
        "the console needs a terminal (stdin and stdout must be a tty); see `palaver --help` for the commands"
    )]
    NoTerminal,
    #[error("terminal: {0}")]
    Io(#[from] std::io::Error),
}

/// What the console starts with.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    pub data_dir: PathBuf,
    /// `None`: the embedded community (and its house agent).
    pub server: Option<String>,
    pub house: bool,
    /// The pause between the house's rounds (config.toml `[house]`).
    pub house_round_delay: i64,
    pub theme: Option<String>,
    pub nickname: String,
    /// Relays for sessions on a remote community (config.toml's
    /// `relay_url`; empty: n0's relays and discovery).
    pub relays: Vec<iroh::RelayUrl>,
    /// Sessions to attach at start (the last one is shown).
    pub attach: Vec<PathBuf>,
    /// Open on the werewolf screen seated at this server (`palaver wolf
    /// join --control-mode human|hybrid`).
    pub wolf_join: Option<effect::JoinSpec>,
}

/// Loads the keymap and theme: built-ins, with the user's files from the
/// config dir (`keymap.toml`, `themes/<name>.toml`) on top.
pub fn load_settings(
    data_dir: &Path,
    theme_name: Option<&str>,
    config_dir: Option<&Path>,
) -> Result<Settings, TuiError> {
    let keymap = match config_dir.map(|d| d.join("keymap.toml")) {
        Some(p) if p.is_file() => {
            let text = std::fs::read_to_string(&p)?;
            Keymap::with_user(&text, &p.display().to_string())?
        }
        _ => Keymap::builtin(),
    };
    let theme = Theme::load(
        theme_name.unwrap_or("default"),
        config_dir.map(|d| d.join("themes")).as_deref(),
    )?;
    let me = crate::identity::KeyPair::load(data_dir)
        .map(|k| k.public_key)
        .unwrap_or_default();
    Ok(Settings {
        data_dir: data_dir.to_owned(),
        keymap,
        theme,
        me,
        relays: Vec::new(),
    })
}

/// The settings a console started with `opts` runs on: [`load_settings`]
/// plus what the options carry over from config.toml (the relays).
pub fn console_settings(
    opts: &ConsoleOptions,
    config_dir: Option<&Path>,
) -> Result<Settings, TuiError> {
    let mut settings = load_settings(&opts.data_dir, opts.theme.as_deref(), config_dir)?;
    settings.relays = opts.relays.clone();
    Ok(settings)
}

/// Appends one line to the console's log file (never the screen).
pub struct Log(Option<std::fs::File>);

impl Log {
    pub fn open(data_dir: &Path) -> Log {
        // Without the dir, the open below fails and the diary is off.
        let _ = std::fs::create_dir_all(data_dir);
        Log(std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data_dir.join("console.log"))
            .ok())
    }
    pub fn line(&mut self, msg: &str) {
        if let Some(f) = &mut self.0 {
            // The console's own diary: a line it cannot write is not worth
            // interrupting the person for.
            let _ = writeln!(f, "{} {msg}", crate::utc::iso_now());
        }
    }
    /// Logs what is worth keeping of a report.
    pub fn report(&mut self, r: &Report) {
        match r {
            Report::Progress(p) => self.line(p),
            Report::TaskDone(Ok(s))
            | Report::Submitted(Ok(s))
            | Report::Saved(Ok(s))
            | Report::RoomAction(Ok(s)) => self.line(s),
            Report::TaskDone(Err(e))
            | Report::Submitted(Err(e))
            | Report::Saved(Err(e))
            | Report::RoomAction(Err(e)) => self.line(&format!("error: {e}")),
            Report::Invitations(Err(e)) => self.line(&format!("community: {e}")),
            Report::CommunityReady { url, embedded, .. } => {
                self.line(&format!("community ready at {url} (embedded: {embedded})"))
            }
            Report::Attach(p) => self.line(&format!("attached {}", p.display())),
            _ => {}
        }
    }
}

/// Restores the terminal when dropped, so every exit path (errors, `?`,
/// panics unwinding through `run`) leaves a usable terminal.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableBracketedPaste);
        ratatui::restore();
        // ratatui 0.30 no longer shows the cursor again on its own.
        let _ = crossterm::execute!(std::io::stdout(), crossterm::cursor::Show);
    }
}

/// Runs the console until the user quits.
pub fn run(opts: ConsoleOptions) -> Result<(), TuiError> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(TuiError::NoTerminal);
    }
    let settings = console_settings(&opts, crate::paths::config_dir().as_deref())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(run_loop(opts, settings))
}

async fn run_loop(opts: ConsoleOptions, settings: Settings) -> Result<(), TuiError> {
    let mut log = Log::open(&opts.data_dir);
    log.line("console started");
    let (tx, mut rx) = unbounded_channel();
    let mut app = App::new(settings, tx.clone());
    // ratatui::init installs a panic hook that restores the terminal first.
    let mut terminal = ratatui::init();
    // Its hook restores raw mode and the screen; the cursor comes back too.
    let restore_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_hook(info);
        let _ = crossterm::execute!(std::io::stdout(), crossterm::cursor::Show);
    }));
    let _restore = Restore;
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste);
    if let Ok(sz) = terminal.size() {
        app.size = (sz.width, sz.height);
    }
    for p in &opts.attach {
        app.attach(p);
    }
    if let Some(spec) = opts.wolf_join.clone() {
        app.join_wolf(spec);
    }
    // The first frame comes before any slow work.
    terminal.draw(|f| app.render(f))?;
    let community = tasks::start_community(
        tasks::Startup {
            data_dir: opts.data_dir.clone(),
            server: opts.server.clone(),
            nickname: opts.nickname.clone(),
            house: opts.house,
            house_round_delay: opts.house_round_delay,
        },
        tx.clone(),
    );
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    while !app.quit {
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => {
                    if let Some(m) = app.key_message(k) {
                        app.update(m);
                    }
                }
                Some(Ok(Event::Paste(s))) => app.update(Msg::Paste(s)),
                Some(Ok(Event::Resize(w, h))) => app.update(Msg::Resize(w, h)),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => app.update(Command::Quit),
            },
            Some(r) = rx.recv() => {
                log.report(&r);
                app.update(r);
                // Coalesce a burst of reports into one frame.
                while let Ok(r) = rx.try_recv() {
                    log.report(&r);
                    app.update(r);
                }
            }
            _ = tick.tick() => app.update(Msg::Tick),
            _ = term.recv() => app.update(Command::Quit),
            _ = hup.recv() => app.update(Command::Quit),
        }
        terminal.draw(|f| app.render(f))?;
    }
    // Sessions this console runs are cancelled; give them a moment to end
    // cleanly and record why.
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    while app.sessions.running_tasks > 0 {
        match tokio::time::timeout_at(until, rx.recv()).await {
            Ok(Some(r)) => {
                log.report(&r);
                app.update(r);
            }
            _ => break,
        }
    }
    community.abort();
    log.line("console stopped");
    Ok(())
}

/// The console without a terminal: feed messages and keys, let the tasks
/// report, draw into a `TestBackend`.
pub struct Headless {
    pub app: App,
    pub tx: UnboundedSender<Report>,
    rx: UnboundedReceiver<Report>,
    pub terminal: Terminal<TestBackend>,
    community: Option<tokio::task::JoinHandle<()>>,
}

impl Headless {
    /// A console on `settings`, `width`×`height` cells. Needs a tokio runtime.
    pub fn new(settings: Settings, width: u16, height: u16) -> Headless {
        let (tx, rx) = unbounded_channel();
        let mut app = App::new(settings, tx.clone());
        app.size = (width, height);
        Headless {
            app,
            tx,
            rx,
            terminal: match Terminal::new(TestBackend::new(width, height)) {
                Ok(t) => t,
                Err(never) => match never {},
            },
            community: None,
        }
    }

    /// Starts the community as the console does.
    pub fn start_community(&mut self, s: tasks::Startup) {
        self.community = Some(tasks::start_community(s, self.tx.clone()));
    }

    pub fn update(&mut self, m: impl Into<Msg>) {
        self.app.update(m);
    }

    /// A key through the keymap, as the terminal loop does.
    pub fn key(&mut self, k: crossterm::event::KeyEvent) {
        if let Some(m) = self.app.key_message(k) {
            self.app.update(m);
        }
    }

    /// Applies every report that has arrived.
    pub fn drain(&mut self) {
        while let Ok(r) = self.rx.try_recv() {
            self.app.update(r);
        }
    }

    /// Pumps reports and ticks until `done` holds or `timeout` passes.
    pub async fn until(&mut self, timeout: Duration, mut done: impl FnMut(&App) -> bool) -> bool {
        let end = tokio::time::Instant::now() + timeout;
        loop {
            self.drain();
            if done(&self.app) {
                return true;
            }
            if tokio::time::Instant::now() >= end {
                return false;
            }
            tokio::select! {
                Some(r) = self.rx.recv() => self.app.update(r),
                _ = tokio::time::sleep(Duration::from_millis(20)) => self.app.update(Msg::Tick),
            }
        }
    }

    /// Draws a frame and returns it as text (one line per row).
    pub fn screen(&mut self) -> String {
        let app = &self.app;
        // Drawing into the test backend cannot fail (its error type is
        // `Infallible`).
        if let Err(never) = self.terminal.draw(|f| app.render(f)) {
            match never {}
        }
        let buf = self.terminal.backend().buffer();
        let mut out = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }
}

impl Drop for Headless {
    fn drop(&mut self) {
        self.app.tasks.quit();
        if let Some(c) = self.community.take() {
            c.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::KeyPair;
    use crate::net::Reach;

    fn relay(s: &str) -> iroh::RelayUrl {
        crate::net::parse_relay_url(s).unwrap()
    }

    #[test]
    fn the_console_options_relays_reach_its_settings() {
        let dir = tempfile::tempdir().unwrap();
        let relays = vec![relay("http://127.0.0.1:3340")];
        let opts = ConsoleOptions {
            data_dir: dir.path().to_owned(),
            server: Some("http://127.0.0.1:9".into()),
            house: false,
            house_round_delay: 0,
            theme: None,
            nickname: "me".into(),
            relays: relays.clone(),
            attach: Vec::new(),
            wolf_join: None,
        };
        let settings = console_settings(&opts, None).unwrap();
        assert_eq!(settings.relays, relays);
    }

    #[tokio::test]
    async fn the_console_takes_its_settings_relays_to_a_remote_community() {
        let dir = tempfile::tempdir().unwrap();
        KeyPair::init(dir.path(), false).unwrap();
        let relays = vec![relay("http://127.0.0.1:3340")];
        let mut settings = load_settings(dir.path(), None, None).unwrap();
        settings.relays = relays.clone();
        let mut h = Headless::new(settings, 80, 24);
        h.update(Report::CommunityReady {
            url: "http://127.0.0.1:9".into(),
            embedded: false,
            nickname: "me".into(),
        });
        let c = h.app.community.as_ref().expect("connected");
        assert_eq!(c.peer.reach, Reach::Relay);
        assert_eq!(c.peer.relays, relays);
        // The embedded community stays on loopback.
        h.update(Report::CommunityReady {
            url: "http://127.0.0.1:9".into(),
            embedded: true,
            nickname: "me".into(),
        });
        let c = h.app.community.as_ref().expect("connected");
        assert_eq!(c.peer.reach, Reach::Direct);
        assert!(c.peer.relays.is_empty());
    }
}
