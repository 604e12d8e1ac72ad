//! The attached session when it is a room (community-room-v1,
//! meeting-room-v1): what its files say (`panes::room`), the notices from
//! its events, the scrollback of its stream, and the compose line whose
//! Enter queues an action in the room's `group-actions.jsonl` (a task: the
//! loop never writes files itself). `t` sets the topic, `X` closes the room
//! (seat 0; the facilitator ends a meeting) after a confirmation.

use super::room_state::{RoomNews, RoomState};
use super::{Attached, Focus, Modal, SessionsView, say};
use crate::json::{Map, Value};
use crate::obj;
use crate::session::room::{self as model, MAX_NOTICES, Notice, RoomKind, RoomModel};
use crate::tui::command::Command;
use crate::tui::effect::{Effects, SessionTask};
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::panes::dialogs;
use crate::tui::screen::Env;

/// Statuses of a room session that nothing sends from any more.
const ENDED: &[&str] = &[
    "closed",
    "aborted",
    "completed",
    "cancelled",
    "crashed",
    "stopped",
    "failed",
];

impl Attached {
    /// Is this session a room (an `authoritative_group` protocol)?
    pub fn is_room(&self) -> bool {
        self.room.is_some()
            || self
                .key
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains("-group-"))
            || matches!(self.snapshot.get("group"), Some(Value::Object(_)))
            || self.session.contains_key("group_id")
    }

    /// Does a process still run this room (so a queued action is sent)?
    pub fn room_live(&self) -> bool {
        let status = self.session.get_str("status").unwrap_or("");
        !ENDED.contains(&status)
    }
}

impl SessionsView {
    /// Is the attached session a room?
    pub fn room(&self) -> Option<&RoomState> {
        self.attached.as_ref().and_then(|a| a.room.as_ref())
    }

    /// Takes what a watch update says of a room (after the snapshot and
    /// session.json are in `Attached`).
    pub(super) fn room_watched(&mut self, u: RoomNews) {
        let Some(att) = self.attached.as_mut() else {
            return;
        };
        if !att.is_room() {
            return;
        }
        let fresh = att.room.is_none();
        let room = att.room.get_or_insert_with(RoomState::new);
        if u.snapshot {
            room.torn = u.torn;
        }
        if fresh || u.snapshot || u.session {
            room.model = if room.torn {
                Err("it is not a JSON object (torn, or not a room's)".into())
            } else {
                RoomModel::parse(&att.snapshot, &att.session)
            };
        }
        if !u.events.is_empty() {
            let kind = room.kind();
            let you = room
                .model
                .as_ref()
                .ok()
                .map(|m| m.you.clone())
                .filter(|y| !y.is_empty());
            let nicks = &self.nicks;
            let name = |pk: &str| -> String {
                if you.as_deref() == Some(pk) {
                    return "you".into();
                }
                match nicks.get(pk) {
                    Some(n) if !n.is_empty() => n.clone(),
                    _ => model::short_key(pk),
                }
            };
            let after = room
                .model
                .as_ref()
                .ok()
                .and_then(|m| m.messages.iter().filter_map(|x| x.id).max());
            for ev in &u.events {
                model::track_link(&mut room.links, ev);
                if let Some((text, bad)) = model::notice_text(ev, kind, &name) {
                    let time = ev
                        .get_str("ts")
                        .and_then(|t| t.get(11..19))
                        .unwrap_or("--:--:--")
                        .to_owned();
                    room.notices.push(Notice {
                        time,
                        text,
                        bad,
                        after,
                    });
                    if room.scroll > 0 {
                        room.scroll += 1;
                    }
                }
            }
            let over = room.notices.len().saturating_sub(MAX_NOTICES);
            room.notices.drain(..over);
        }
        room.scroll = room.scroll.min(room.len().saturating_sub(1));
        // A room this console just started (or attached) takes the keys.
        if fresh && att.room_live() && self.modal.is_none() {
            att.prompt = None;
            // A table's pane is where its keys go; a room's, its compose line.
            self.focus = if att.table.is_some() {
                Focus::Feed
            } else {
                Focus::Prompt
            };
        }
    }

    /// Keys on the room's stream.
    pub(super) fn room_command(&mut self, c: Command, page: usize) -> Effects {
        let mut fx = Effects::new();
        let Some(att) = self.attached.as_mut() else {
            return fx;
        };
        let live = att.room_live();
        let Some(room) = att.room.as_mut() else {
            return fx;
        };
        let last = room.len().saturating_sub(1);
        let step = (page / 2).max(1);
        match c {
            Command::Up => room.scroll = (room.scroll + 1).min(last),
            Command::Down => room.scroll = room.scroll.saturating_sub(1),
            Command::PageUp => room.scroll = (room.scroll + step).min(last),
            Command::PageDown => room.scroll = room.scroll.saturating_sub(step),
            Command::Top => room.scroll = last,
            Command::Bottom => room.scroll = 0,
            Command::Compose => self.focus = Focus::Prompt,
            Command::SetTopic => match &room.model {
                _ if !live => say(
                    &mut fx,
                    false,
                    "this room has ended here: nothing would send it",
                ),
                Ok(m) if m.kind == RoomKind::Community => {
                    self.modal = Some(Modal::Topic(m.topic.clone()))
                }
                Ok(m) if m.kind == RoomKind::Meeting => say(
                    &mut fx,
                    false,
                    "a meeting has a title, set when it is hosted, not a topic",
                ),
                _ => say(&mut fx, false, "this room has no topic to set"),
            },
            Command::CloseRoom => match &room.model {
                _ if !live => say(
                    &mut fx,
                    false,
                    "this room has ended here: nothing would send it",
                ),
                Ok(m) if m.kind == RoomKind::Community && m.owner() => {
                    self.modal = Some(Modal::CloseRoom(obj! { "kind" => "close_room" }))
                }
                Ok(m) if m.kind == RoomKind::Community => say(
                    &mut fx,
                    false,
                    format!(
                        "only seat 0, the room's owner, can close the room (you are {})",
                        m.you_seat
                            .map(|s| format!("seat {s}"))
                            .unwrap_or_else(|| "not seated yet".into())
                    ),
                ),
                Ok(m) if m.kind == RoomKind::Meeting && m.facilitator() => {
                    self.modal = Some(Modal::CloseRoom(obj! { "kind" => "end_meeting" }))
                }
                Ok(m) if m.kind == RoomKind::Meeting => {
                    say(&mut fx, false, "only the facilitator can end the meeting")
                }
                _ => say(
                    &mut fx,
                    false,
                    "palaver does not know how to close this room",
                ),
            },
            _ => {}
        }
        fx
    }

    /// Keys on the compose line.
    pub(super) fn compose_msg(&mut self, m: Msg) -> Effects {
        let Some(room) = self.attached.as_mut().and_then(|a| a.room.as_mut()) else {
            self.focus = Focus::Feed;
            return Effects::new();
        };
        match m {
            Msg::Input(k) => {
                dialogs::edit_line(&mut room.input, &k);
                if room.note.as_ref().is_some_and(|n| !n.ok) {
                    room.note = None;
                }
                Effects::new()
            }
            // The stream scrolls while you write.
            Msg::Command(Command::Up) => {
                room.scroll = (room.scroll + 1).min(room.len().saturating_sub(1));
                Effects::new()
            }
            Msg::Command(Command::Down) => {
                room.scroll = room.scroll.saturating_sub(1);
                Effects::new()
            }
            Msg::Command(Command::Submit) => self.send(),
            _ => Effects::new(),
        }
    }

    /// The compose line's text as an action, queued by a task.
    fn send(&mut self) -> Effects {
        let Some(att) = self.attached.as_mut() else {
            return Effects::new();
        };
        let live = att.room_live();
        let dir = att.key.clone();
        let Some(room) = att.room.as_mut() else {
            return Effects::new();
        };
        let text = room.input.trim().to_owned();
        if text.is_empty() {
            return Effects::new();
        }
        if !live {
            room.note = Some(Note::err("this room has ended here: nothing would send it"));
            return Effects::new();
        }
        let action = if text.starts_with('{') {
            match crate::json::parse_str(&text) {
                Ok(v @ Value::Object(_)) => v,
                Ok(v) => {
                    room.note = Some(Note::err(format!(
                        "an action is a JSON object, not {}",
                        v.type_name()
                    )));
                    return Effects::new();
                }
                Err(e) => {
                    room.note = Some(Note::err(format!("not JSON: {e}")));
                    return Effects::new();
                }
            }
        } else if room.kind() == RoomKind::Meeting {
            room.note = Some(Note::err(
                r#"a meeting takes actions, e.g. {"kind":"add_agenda","text":"…"} or {"kind":"request_to_speak"}"#,
            ));
            return Effects::new();
        } else {
            Value::Object(obj! { "kind" => "send", "text" => text.as_str() })
        };
        room.sending = Some(std::mem::take(&mut room.input));
        room.note = Some(Note::ok("sending…"));
        room.scroll = 0;
        vec![SessionTask::RoomAction { dir, action }.into()]
    }

    /// A room action of a dialog (topic, close), queued by a task.
    pub(super) fn room_action(&mut self, action: Map, fx: &mut Effects) {
        let Some(att) = self.attached.as_ref().filter(|a| a.room.is_some()) else {
            say(fx, false, "no room is attached");
            return;
        };
        fx.push(
            SessionTask::RoomAction {
                dir: att.key.clone(),
                action: Value::Object(action),
            }
            .into(),
        );
    }

    /// Asks the community the nicknames of a room's members nobody named
    /// yet (a few at a time, each key once).
    pub(super) fn ask_nicknames(&mut self, env: &Env<'_>) -> Effects {
        let Some(c) = env.community else {
            return Effects::new();
        };
        let Some(Ok(m)) = self.room().map(|r| &r.model) else {
            return Effects::new();
        };
        let keys: Vec<String> = m
            .members
            .iter()
            .map(|x| x.public_key.clone())
            .filter(|pk| *pk != m.you && *pk != env.me)
            .filter(|pk| !self.nicks.contains_key(pk) && !self.asked.contains(pk))
            .filter(|pk| pk.len() == 64 && pk.bytes().all(|b| b.is_ascii_hexdigit()))
            .take(8)
            .collect();
        if keys.is_empty() || self.asked.len() >= 4096 {
            return Effects::new();
        }
        self.asked.extend(keys.iter().cloned());
        vec![
            SessionTask::Nicknames {
                client: c.client.clone(),
                keys,
            }
            .into(),
        ]
    }

    /// A queued action's result.
    pub(super) fn room_sent(&mut self, r: Result<String, String>, fx: &mut Effects) {
        let note = match r {
            Ok(s) => Note::ok(s),
            Err(e) => Note::err(e),
        };
        if let Some(room) = self.attached.as_mut().and_then(|a| a.room.as_mut()) {
            let text = room.sending.take();
            if !note.ok
                && room.input.is_empty()
                && let Some(t) = text
            {
                room.input = t;
            }
            room.note = Some(note.clone());
        }
        let r = if note.ok {
            Ok(note.text.clone())
        } else {
            Err(note.text.clone())
        };
        self.table_sent(&r);
        say(fx, note.ok, note.text);
    }
}
