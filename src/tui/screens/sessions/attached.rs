//! The attached session: following its files, its feed and its decision
//! prompt.

use super::room_state::{RoomNews, RoomState};
use super::table_state::{TableNews, TableState};
use super::{Focus, SessionsView, page, say};
use crate::json::{Map, Value};
use crate::session::StateDir;
use crate::tui::command::Command;
use crate::tui::effect::{Effect, Effects, SessionTask};
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::panes::card_pick::Act;
use crate::tui::panes::cards::Verdict;
use crate::tui::panes::dialogs;
use crate::tui::panes::feed::{Feed, WINDOW};
use crate::tui::panes::prompt::{self, Prompt};
use crate::tui::report::feed::{OpenWindow, WatchUpdate};
use crate::tui::screen::Env;
use crate::tui::watch;
use std::path::{Path, PathBuf};

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
    /// What the events said of a card match's end (audit, receipt).
    pub verdict: Verdict,
    /// The room, when the session is one.
    pub room: Option<RoomState>,
    /// The card table, when the room is one.
    pub table: Option<TableState>,
    /// The battlefield, when the session is a tank battle.
    pub tank: Option<super::TankState>,
    /// The whisper mark, the peer banner, details and history.
    pub aside: super::Aside,
}

impl Attached {
    fn is_free_chat(&self) -> bool {
        self.schema
            .as_ref()
            .is_some_and(|s| s.get("free_text") == Some(&Value::Bool(true)))
    }
    pub(super) fn running(&self) -> bool {
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
    pub(super) fn title(&self) -> String {
        self.key
            .file_name()
            .map(|n| format!("{} ", n.to_string_lossy()))
            .unwrap_or_default()
    }
}

impl SessionsView {
    /// Follows the session in `path` (a parent or an engine dir).
    pub fn attach(&mut self, path: &Path) -> Effects {
        let mut fx = Effects::new();
        let Some((key, dir)) = watch::resolve(path) else {
            self.pending_attach = Some(path.to_owned());
            say(
                &mut fx,
                false,
                format!("{} is not a session state dir (yet)", path.display()),
            );
            return fx;
        };
        if self.attached.as_ref().is_some_and(|a| a.key == key) {
            return fx;
        }
        self.generation += 1;
        fx.push(
            SessionTask::Watch {
                dir: dir.clone(),
                generation: self.generation,
            }
            .into(),
        );
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
            verdict: Verdict::default(),
            room: None,
            table: None,
            tank: None,
            aside: super::Aside::default(),
        });
        if self.focus == Focus::Prompt {
            self.focus = Focus::Feed;
        }
        fx
    }

    pub(super) fn watched(&mut self, generation: u64, mut u: WatchUpdate) -> Effects {
        let mut fx = Effects::new();
        let Some(att) = self.attached.as_mut() else {
            return fx;
        };
        if att.generation != generation {
            return fx;
        }
        let news = RoomNews {
            snapshot: u.snapshot.is_some(),
            session: u.session.is_some(),
            torn: u.snapshot_unreadable,
            events: std::mem::take(&mut u.room_events),
        };
        let table_news = TableNews {
            snapshot: u.snapshot.is_some(),
            session: u.session.is_some(),
            details: u
                .details
                .iter()
                .filter(|d| d.get("type").and_then(Value::as_str) == Some("group_frame"))
                .cloned()
                .collect(),
            events: news.events.clone(),
            bots: u.bots.take(),
        };
        att.aside.take(&mut u);
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
                fx.push(load_page(att, start));
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
            let is_tank = u.world.is_some()
                || s.get_str("protocol_name") == Some(super::TANK_PROTOCOL)
                || att.tank.is_some();
            if is_tank {
                // The battlefield takes the keys as soon as it shows.
                if att.tank.is_none() && self.modal.is_none() {
                    self.focus = Focus::Feed;
                }
                att.tank
                    .get_or_insert_with(Default::default)
                    .take(&s, u.world.take());
            }
            att.snapshot = s;
        }
        if let Some(s) = u.strategy {
            att.strategy = s;
        }
        if let Some(w) = u.window {
            att.window = w;
        }
        for ev in &u.facts {
            att.verdict.take(ev);
        }
        att.decisions.extend(u.decisions);
        // Only the last lines can belong to an open window.
        let drop_n = att.decisions.len().saturating_sub(64);
        att.decisions.drain(..drop_n);
        self.table_watched(table_news);
        self.room_watched(news);
        if self.room().is_some() {
            return fx;
        }
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
        fx
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

    pub(super) fn feed_command(&mut self, c: Command, env: &Env<'_>) -> Effects {
        let page = page(env);
        let Some(att) = self.attached.as_mut() else {
            return Effects::new();
        };
        let f = &mut att.feed;
        let load = match c {
            Command::Up => f.scroll_up(1),
            Command::Down => f.scroll_down(1),
            Command::PageUp => f.scroll_up(page),
            Command::PageDown => f.scroll_down(page),
            Command::Top => f.top(),
            Command::Bottom => f.follow(),
            Command::Filter => {
                f.filter = f.filter.next();
                None
            }
            Command::RawToggle => {
                f.raw = !f.raw;
                None
            }
            Command::FoldToggle => {
                f.fold = !f.fold;
                None
            }
            Command::SearchNext => f.next_match(),
            _ => None,
        };
        load.map(|start| load_page(att, start))
            .into_iter()
            .collect()
    }

    pub(super) fn prompt_msg(&mut self, m: Msg) -> Effects {
        let Some(att) = self.attached.as_mut() else {
            return Effects::new();
        };
        let Some(p) = att.prompt.as_mut() else {
            self.focus = Focus::Feed;
            return Effects::new();
        };
        if let (Some(pick), Msg::Command(c)) = (p.cards_mut(), &m) {
            match pick.command(*c) {
                Act::Decide(fields) => {
                    let body = p.decision(&fields);
                    return self.decide(Ok(body));
                }
                Act::Refuse(why) => {
                    p.note = Some(Note {
                        ok: false,
                        text: why,
                    });
                    return Effects::new();
                }
                Act::Moved => {
                    // An old complaint no longer applies to the new pick.
                    if p.note.as_ref().is_some_and(|n| !n.ok) {
                        p.note = None;
                    }
                    return Effects::new();
                }
                Act::Ignored => {}
            }
        }
        match m {
            Msg::Command(Command::Left) => p.left(),
            Msg::Command(Command::Right) => p.right(),
            Msg::Command(Command::Up) => p.up(),
            Msg::Command(Command::Down) => p.down(),
            Msg::Command(c) if c.choice().is_some_and(|n| p.choose(n)) => return self.submit(),
            Msg::Command(Command::Submit) => return self.submit(),
            Msg::Input(k) => dialogs::edit_line(&mut p.input, &k),
            _ => {}
        }
        Effects::new()
    }

    /// Writes the prompt's decision (or chat line) like `palaver session decide`.
    fn submit(&mut self) -> Effects {
        let Some(att) = self.attached.as_ref() else {
            return Effects::new();
        };
        let Some(p) = att.prompt.as_ref() else {
            return Effects::new();
        };
        let child = att.dir.child.clone();
        if p.window.is_none() {
            // Free-mode chat: the line goes to the inbox the engine reads.
            let line = p.input.trim().to_owned();
            if line.is_empty() {
                return Effects::new();
            }
            let body = prompt::chat_line(&line);
            return vec![SessionTask::Chat { child, body }.into()];
        }
        let body = p.body();
        self.decide(body)
    }

    /// Writes a decision body like `palaver session decide`, or notes why
    /// there is none.
    fn decide(&mut self, body: Result<Map, String>) -> Effects {
        let Some(att) = self.attached.as_mut() else {
            return Effects::new();
        };
        match body {
            Ok(body) => vec![
                SessionTask::Decide {
                    child: att.dir.child.clone(),
                    body,
                }
                .into(),
            ],
            Err(e) => {
                if let Some(p) = att.prompt.as_mut() {
                    p.note = Some(Note::err(e));
                }
                Effects::new()
            }
        }
    }

    /// Esc on the prompt: a card prompt's suit choice closes first (back to
    /// picking a card); true when that happened.
    pub(super) fn prompt_back(&mut self) -> bool {
        self.attached
            .as_mut()
            .and_then(|a| a.prompt.as_mut())
            .and_then(|p| p.cards_mut())
            .is_some_and(|pick| pick.back())
    }
}

/// Reads feed rows back from `start` (a window of them).
fn load_page(att: &Attached, start: usize) -> Effect {
    SessionTask::LoadPage {
        events: att.dir.events_file(),
        generation: att.generation,
        start,
        count: WINDOW,
    }
    .into()
}
