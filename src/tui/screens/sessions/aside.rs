//! The attached session's coaching state: the whisper line and the mark of
//! the last whisper (sent, acknowledged, took effect), the peer banner, the
//! detail records and the history/details toggles.

use super::{Modal, SessionsView, say};
use crate::engine::whisper::Schema;
use crate::json::{Map, Value};
use crate::tui::command::Command;
use crate::tui::effect::{Effects, SessionTask};
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::panes::dialogs;
use crate::tui::panes::whisper::WhisperLine;
use crate::tui::report::feed::WatchUpdate;
use crate::tui::watch::{DETAILS_KEPT, whisper_applied_line};
use std::collections::VecDeque;

/// The last whisper this console sent to the attached session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WhisperMark {
    pub id: String,
    pub text: String,
    /// What it was understood as, then what happened to it.
    pub status: String,
    /// A `whisper_applied` event (or the engine's ack) said it took effect.
    pub applied: bool,
}

/// See the module doc.
#[derive(Debug, Clone, Default)]
pub struct Aside {
    pub whisper: Option<WhisperMark>,
    /// The peer banner: (ok?, text).
    pub banner: Option<Note>,
    /// The newest details.jsonl records.
    pub details: VecDeque<Map>,
    /// The feed shows details.jsonl instead of events (d).
    pub show_details: bool,
    /// The snapshot pane shows the round-by-round history (H).
    pub show_history: bool,
}

fn time_of(ev: &Map) -> String {
    ev.get("ts")
        .and_then(Value::as_str)
        .and_then(|t| t.get(11..19))
        .unwrap_or("--:--:--")
        .to_owned()
}

impl Aside {
    /// Takes what the watcher saw.
    pub fn take(&mut self, u: &mut WatchUpdate) {
        for d in std::mem::take(&mut u.details) {
            self.details.push_back(d);
        }
        while self.details.len() > DETAILS_KEPT {
            self.details.pop_front();
        }
        for ev in std::mem::take(&mut u.aside_events) {
            let data = ev
                .get("data")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            match ev.get("type").and_then(Value::as_str) {
                Some("peer_unresponsive") => {
                    let secs = data
                        .get("silent_seconds")
                        .map(|v| format!(" for {}s", v.py_str()))
                        .unwrap_or_default();
                    self.banner = Some(Note::err(format!(
                        "⚠ the peer has gone silent{secs} (since {}): waiting for it",
                        time_of(&ev)
                    )));
                }
                Some("peer_resumed") => {
                    self.banner = Some(Note::ok(format!("✓ the peer is back ({})", time_of(&ev))));
                }
                Some("whisper_applied") => {
                    let id = data.get("whisper_id").and_then(Value::as_str);
                    if let Some(w) = self.whisper.as_mut()
                        && id == Some(w.id.as_str())
                    {
                        w.applied = true;
                        w.status = whisper_applied_line(&Value::Object(data.clone()))
                            .trim_start_matches("✓ whisper ")
                            .to_owned();
                    }
                }
                _ => {}
            }
        }
        for ack in std::mem::take(&mut u.whisper_acks) {
            let Some(w) = self.whisper.as_mut() else {
                continue;
            };
            if ack.get("whisper_id").and_then(Value::as_str) != Some(w.id.as_str()) || w.applied {
                continue;
            }
            if let Some(st) = ack.get("status").and_then(Value::as_str) {
                if st == "decision_produced" {
                    w.applied = true;
                    w.status = "took effect".into();
                } else {
                    w.status = match st {
                        "strategy_active" | "policy_active" => {
                            "in strategy.json, waiting to take effect".to_owned()
                        }
                        "decision_queued" | "intent_queued" => {
                            "queued, waiting to take effect".to_owned()
                        }
                        other => other.replace('_', " "),
                    };
                }
            }
        }
    }

    /// The feed title's note of the last whisper.
    pub fn whisper_note(&self) -> Option<String> {
        let w = self.whisper.as_ref()?;
        let text: String = w.text.chars().take(24).collect();
        let mark = if w.applied { "✓" } else { "…" };
        Some(format!("· whisper “{text}” {mark} {}", w.status))
    }
}

impl SessionsView {
    /// w: the whisper line for the attached session.
    pub(super) fn open_whisper(&mut self, fx: &mut Effects) {
        let Some(att) = self.attached.as_ref() else {
            say(
                fx,
                false,
                "attach a session first: a whisper goes to a session",
            );
            return;
        };
        if self.room().is_some() {
            say(
                fx,
                false,
                "rooms take no whispers: write in the compose line",
            );
            return;
        }
        let name = att
            .session
            .get("protocol_name")
            .or_else(|| att.snapshot.get("protocol_name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let schema = Schema::for_protocol(name);
        let window = att
            .window
            .as_ref()
            .filter(|_| att.running())
            .map(|w| (w.match_key.clone(), w.match_value.clone()));
        self.modal = Some(Modal::Whisper(WhisperLine {
            text: String::new(),
            schema,
            window,
        }));
    }

    /// Keys on the whisper line; `None` closes it.
    pub(super) fn whisper_msg(
        &mut self,
        mut line: WhisperLine,
        m: Msg,
        fx: &mut Effects,
    ) -> Option<Modal> {
        match m {
            Msg::Command(Command::Back) => None,
            Msg::Command(Command::Submit) => {
                let text = line.text.trim().to_owned();
                if text.is_empty() {
                    say(fx, false, "a whisper needs some text");
                    return Some(Modal::Whisper(line));
                }
                let att = self.attached.as_mut()?;
                let (_, what) = line.preview();
                att.aside.whisper = Some(WhisperMark {
                    id: String::new(),
                    text: text.clone(),
                    status: "sending…".into(),
                    applied: false,
                });
                say(fx, true, format!("whispering: {what}"));
                fx.push(
                    SessionTask::Whisper {
                        child: att.dir.child.clone(),
                        text,
                        schema: line.schema,
                    }
                    .into(),
                );
                None
            }
            Msg::Input(k) => {
                dialogs::edit_line(&mut line.text, &k);
                Some(Modal::Whisper(line))
            }
            _ => Some(Modal::Whisper(line)),
        }
    }

    /// The whisper task's answer.
    pub(super) fn whispered(&mut self, r: Result<(String, String), String>, fx: &mut Effects) {
        let att = self.attached.as_mut();
        match r {
            Ok((id, what)) => {
                if let Some(w) = att.and_then(|a| a.aside.whisper.as_mut())
                    && w.id.is_empty()
                {
                    w.id = id.clone();
                    if !w.applied {
                        w.status = format!("sent as {what}");
                    }
                }
                say(fx, true, format!("whisper {id} sent: {what}"));
            }
            Err(e) => {
                if let Some(a) = att {
                    a.aside.whisper = None;
                }
                say(fx, false, e);
            }
        }
    }

    /// d and H on the feed.
    pub(super) fn aside_command(&mut self, c: Command) -> bool {
        let Some(att) = self.attached.as_mut() else {
            return false;
        };
        match c {
            Command::DetailsToggle => att.aside.show_details = !att.aside.show_details,
            Command::HistoryToggle => att.aside.show_history = !att.aside.show_history,
            _ => return false,
        }
        true
    }
}
