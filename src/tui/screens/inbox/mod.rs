//! The inbox screen (F5): the sealed messages other agents left for this
//! identity (sender, size, when, unread), the one opened (its plaintext;
//! opening marks it read), a compose form (a 64-hex recipient and a
//! message counted against 256 characters), reply, delete after a
//! confirm. It also keeps the unread count the header shows on every
//! screen: a light poll every 30 s and after each send and read, whose
//! failure is said once in the status bar, not on every poll.
//!
//! Everything slow is a [`SocialTask`] whose outcome comes back as an
//! [`InboxReport`].

mod compose;
mod view;

pub use compose::Compose;

use crate::community::social::{InboxEntry, Opened};
use crate::tui::command::Command;
use crate::tui::effect::{Effect, Effects, SocialTask};
use crate::tui::keymap::Context;
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::panes::lists::Cursor;
use crate::tui::report::Report;
use crate::tui::report::social::{InboxList, InboxReport};
use crate::tui::screen::{Env, Paint, Screen};
use ratatui::Frame;
use ratatui::layout::Rect;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often the inbox is polled for the unread count.
pub const POLL: Duration = Duration::from_secs(30);

/// Sender nicknames remembered at most.
const MAX_NICKS: usize = 1024;

#[derive(Default)]
pub struct InboxView {
    /// The newest messages, as the community lists them.
    pub entries: Vec<InboxEntry>,
    /// Unread messages (None until the first listing).
    pub unread: Option<i64>,
    pub total: i64,
    pub cur: Cursor,
    /// Senders' nicknames by public key.
    pub nicks: BTreeMap<String, String>,
    /// The message opened, shown in the reading pane.
    pub open: Option<Opened>,
    /// The message being fetched to open.
    pub reading: Option<i64>,
    pub compose: Option<Compose>,
    /// The message to delete once confirmed.
    pub confirm_delete: Option<i64>,
    /// The last action's outcome.
    pub note: Option<Note>,
    /// Why the last poll failed (said once in the status bar).
    pub poll_error: Option<String>,
    listing: bool,
    last_poll: Option<Instant>,
    poll_due: bool,
}

fn say(fx: &mut Effects, ok: bool, text: impl Into<String>) {
    fx.push(Effect::Status(ok, text.into()));
}

/// `3f9a21c0…` for a key without a nickname.
pub fn short_key(k: &str) -> String {
    let head: String = k.chars().take(8).collect();
    if k.chars().count() > 8 {
        format!("{head}…")
    } else {
        head
    }
}

impl InboxView {
    /// A sender as the list names it: nickname, else the key's head.
    pub fn sender(&self, key: &str) -> String {
        self.nicks
            .get(key)
            .cloned()
            .unwrap_or_else(|| short_key(key))
    }

    pub fn selected(&self) -> Option<&InboxEntry> {
        self.entries.get(self.cur.selected)
    }

    /// Opens the compose form to `key` (pre-filled; the message field
    /// focused), as "message this agent" does from the other screens.
    pub fn compose_to(&mut self, key: &str, nickname: &str) {
        if !nickname.is_empty() {
            self.remember(key, nickname);
        }
        self.confirm_delete = None;
        self.compose = Some(Compose::to(key, &self.sender(key)));
    }

    fn remember(&mut self, key: &str, nick: &str) {
        if self.nicks.len() < MAX_NICKS || self.nicks.contains_key(key) {
            self.nicks.insert(key.to_owned(), nick.to_owned());
        }
    }

    fn poll(&mut self, env: &Env<'_>, fx: &mut Effects) {
        let Some(c) = env.community else {
            return;
        };
        self.listing = true;
        self.poll_due = false;
        self.last_poll = Some(Instant::now());
        fx.push(
            SocialTask::Inbox {
                client: c.client.clone(),
                known: self.nicks.keys().cloned().collect(),
            }
            .into(),
        );
    }

    fn tick(&mut self, env: &Env<'_>, fx: &mut Effects) {
        let due = self.poll_due || self.last_poll.is_none_or(|t| t.elapsed() >= POLL);
        if env.community.is_some() && !self.listing && due {
            self.poll(env, fx);
        }
    }

    fn listed(&mut self, l: InboxList) {
        for (k, n) in &l.nicknames {
            self.remember(k, n);
        }
        let keep = self.selected().map(|e| e.id);
        self.unread = Some(l.page.unread);
        self.total = l.page.total;
        self.entries = l.page.entries;
        if let Some(id) = keep
            && let Some(i) = self.entries.iter().position(|e| e.id == id)
        {
            self.cur.selected = i;
        }
        self.cur.clamp(self.entries.len());
    }

    fn report(&mut self, r: InboxReport, fx: &mut Effects) {
        match r {
            InboxReport::Listed(Ok(l)) => {
                self.listing = false;
                self.poll_error = None;
                self.listed(*l);
            }
            InboxReport::Listed(Err(e)) => {
                self.listing = false;
                // Said once; the next polls stay quiet until one succeeds.
                if self.poll_error.is_none() {
                    say(fx, false, format!("inbox: {e}"));
                }
                self.poll_error = Some(e);
            }
            InboxReport::Opened(Ok(o)) => {
                self.reading = None;
                if let Some(e) = self.entries.iter_mut().find(|e| e.id == o.entry.id)
                    && !e.read
                {
                    e.read = true;
                    self.unread = self.unread.map(|n| (n - 1).max(0));
                }
                self.open = Some(*o);
                self.note = None;
                self.poll_due = true;
            }
            InboxReport::Opened(Err((id, e))) => {
                self.reading = None;
                self.note = Some(Note::err(format!("message {id} not opened: {e}")));
            }
            InboxReport::Sent(Ok(s)) => {
                let to = self.sender(&s.to);
                self.compose = None;
                let text = format!("sealed and sent to {to} ({} bytes)", s.size);
                say(fx, true, text.clone());
                self.note = Some(Note::ok(text));
                self.poll_due = true;
            }
            InboxReport::Sent(Err(e)) => {
                if let Some(c) = self.compose.as_mut() {
                    c.sending = false;
                    c.error = Some(format!("not sent: {e}"));
                }
                say(fx, false, format!("inbox: not sent: {e}"));
            }
            InboxReport::Deleted(Ok(id)) => {
                if let Some(i) = self.entries.iter().position(|e| e.id == id) {
                    let e = self.entries.remove(i);
                    if !e.read {
                        self.unread = self.unread.map(|n| (n - 1).max(0));
                    }
                    self.total = (self.total - 1).max(0);
                }
                if self.open.as_ref().is_some_and(|o| o.entry.id == id) {
                    self.open = None;
                }
                self.cur.clamp(self.entries.len());
                self.note = Some(Note::ok(format!("message {id} deleted")));
                self.poll_due = true;
            }
            InboxReport::Deleted(Err((id, e))) => {
                self.note = Some(Note::err(format!("message {id} not deleted: {e}")));
            }
        }
    }

    fn read_selected(&mut self, env: &Env<'_>, fx: &mut Effects) {
        let Some(id) = self.selected().map(|e| e.id) else {
            return;
        };
        let Some(c) = env.community else {
            say(fx, false, "the community is not reachable yet");
            return;
        };
        self.reading = Some(id);
        fx.push(
            SocialTask::Read {
                client: c.client.clone(),
                id,
            }
            .into(),
        );
    }

    /// The sender replied to: the opened message's, else the selected one's.
    fn reply(&mut self, fx: &mut Effects) {
        let to = match (&self.open, self.selected()) {
            (Some(o), _) => o.entry.sender_public_key.clone(),
            (None, Some(e)) => e.sender_public_key.clone(),
            (None, None) => return say(fx, false, "no message to reply to"),
        };
        self.compose_to(&to, "");
    }

    fn compose_msg(&mut self, m: Msg, env: &Env<'_>, fx: &mut Effects) {
        let Some(c) = self.compose.as_mut() else {
            return;
        };
        match m {
            Msg::Command(Command::Back) => self.compose = None,
            Msg::Command(Command::Submit | Command::Activate) => {
                if c.sending {
                    return;
                }
                let (to, text) = match c.check() {
                    Ok(x) => x,
                    Err(e) => {
                        c.error = Some(e);
                        return;
                    }
                };
                let Some(community) = env.community else {
                    c.error = Some("the community is not reachable yet".into());
                    return;
                };
                c.sending = true;
                c.error = None;
                fx.push(
                    SocialTask::Send {
                        client: community.client.clone(),
                        to,
                        text,
                    }
                    .into(),
                );
            }
            Msg::Command(Command::FocusNext | Command::FocusPrev | Command::Up | Command::Down) => {
                c.switch()
            }
            Msg::Input(k) => c.input(&k),
            Msg::Paste(p) => c.paste(&p),
            _ => {}
        }
    }

    fn confirm_msg(&mut self, m: Msg, env: &Env<'_>, fx: &mut Effects) {
        let Some(id) = self.confirm_delete else {
            return;
        };
        match m {
            Msg::Command(Command::Back) => self.confirm_delete = None,
            Msg::Command(Command::Submit | Command::Activate) => {
                self.confirm_delete = None;
                match env.community {
                    Some(c) => fx.push(
                        SocialTask::Delete {
                            client: c.client.clone(),
                            id,
                        }
                        .into(),
                    ),
                    None => say(fx, false, "the community is not reachable yet"),
                }
            }
            _ => {}
        }
    }

    fn command(&mut self, c: Command, env: &Env<'_>, fx: &mut Effects) {
        let page = usize::from(env.size.1 / 2).max(1);
        if self.cur.navigate(c, self.entries.len(), page) {
            return;
        }
        match c {
            Command::Activate => self.read_selected(env, fx),
            Command::Back => self.open = None,
            Command::Reply => self.reply(fx),
            Command::NewMessage => self.compose = Some(Compose::default()),
            Command::DeleteMessage => {
                let id = self
                    .open
                    .as_ref()
                    .map(|o| o.entry.id)
                    .or_else(|| self.selected().map(|e| e.id));
                match id {
                    Some(id) => self.confirm_delete = Some(id),
                    None => say(fx, false, "no message to delete"),
                }
            }
            Command::Refresh => {
                if env.community.is_some() && !self.listing {
                    self.poll(env, fx);
                } else {
                    self.poll_due = true;
                }
            }
            _ => {}
        }
    }
}

impl Screen for InboxView {
    fn title(&self) -> &'static str {
        "Inbox"
    }

    fn context(&self) -> Context {
        if self.compose.is_some() {
            Context::Text
        } else if self.confirm_delete.is_some() {
            Context::Dialog
        } else {
            Context::Inbox
        }
    }

    fn typing(&self) -> bool {
        self.compose.is_some()
    }

    fn update(&mut self, m: Msg, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        match m {
            Msg::Report(Report::Inbox(r)) => self.report(*r, &mut fx),
            Msg::Tick => self.tick(env, &mut fx),
            m if self.compose.is_some() => self.compose_msg(m, env, &mut fx),
            m if self.confirm_delete.is_some() => self.confirm_msg(m, env, &mut fx),
            Msg::Command(c) => self.command(c, env, &mut fx),
            _ => {}
        }
        fx
    }

    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        self.draw_body(f, area, p);
    }

    fn hints(&self) -> Vec<Command> {
        if self.compose.is_some() {
            return vec![Command::Submit, Command::FocusNext, Command::Back];
        }
        if self.confirm_delete.is_some() {
            return vec![Command::Submit, Command::Back];
        }
        vec![
            Command::Activate,
            Command::Reply,
            Command::NewMessage,
            Command::DeleteMessage,
            Command::Refresh,
            Command::Help,
            Command::Quit,
        ]
    }

    fn community_ready(&mut self, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        self.poll(env, &mut fx);
        fx
    }
}
