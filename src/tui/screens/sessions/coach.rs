//! The coach pane's state changes (c on the sessions screen): open it on the
//! attached 2-party session, ask, stream the reply in, cancel, reset, adopt
//! the last reply as a whisper.

use super::modal::Modal;
use super::{SessionsView, say};
use crate::engine::whisper::Schema;
use crate::json::Value;
use crate::tui::command::Command;
use crate::tui::effect::{CoachJob, Effects, SessionTask};
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::panes::coach::CoachPane;
use crate::tui::report::CoachReport;
use crate::tui::screen::Env;
use crossterm::event::KeyCode;

/// The most characters a question may have.
const MAX_QUESTION_CHARS: usize = 4000;

impl SessionsView {
    /// c: the coach pane on the attached session.
    pub(super) fn open_coach(&mut self, env: &Env<'_>, fx: &mut Effects) {
        let Some(att) = self.attached.as_ref() else {
            say(fx, false, "no session to coach: attach one (Enter) first");
            return;
        };
        if self.room().is_some() {
            say(fx, false, "the coach is for 2-party sessions, not rooms");
            return;
        }
        self.modal = Some(Modal::Coach(Box::new(CoachPane {
            child: att.dir.child.clone(),
            ..CoachPane::default()
        })));
        fx.push(
            SessionTask::Coach(CoachJob::Load {
                data_dir: env.data_dir.to_owned(),
            })
            .into(),
        );
    }

    fn schema(&self) -> Option<Schema> {
        let att = self.attached.as_ref()?;
        let name = att
            .session
            .get("protocol_name")
            .or_else(|| att.snapshot.get("protocol_name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        Schema::for_protocol(name)
    }

    /// Keys while the coach pane is open; `None` closes it.
    pub(super) fn coach_msg(
        &mut self,
        mut p: Box<CoachPane>,
        m: Msg,
        env: &Env<'_>,
        fx: &mut Effects,
    ) -> Option<Modal> {
        match m {
            Msg::Command(Command::Back) => {
                // A running turn goes on; its reply is kept in the data dir.
                return None;
            }
            Msg::Command(Command::Submit) => {
                let q = p.input.trim().to_owned();
                if p.busy() {
                    p.note = Some(Note::err("the coach is still answering (stop it first)"));
                } else if !q.is_empty() {
                    let (tx, rx) = tokio::sync::watch::channel(false);
                    p.entries.push(("user".into(), q.clone()));
                    p.streaming = Some(Vec::new());
                    p.cancel = Some(tx);
                    p.input.clear();
                    p.scroll = 0;
                    p.note = None;
                    fx.push(
                        SessionTask::Coach(CoachJob::Turn {
                            data_dir: env.data_dir.to_owned(),
                            child: p.child.clone(),
                            question: q,
                            cancel: rx,
                        })
                        .into(),
                    );
                }
            }
            Msg::Command(Command::CoachCancel) => {
                if let Some(c) = p.cancel.take() {
                    let _ = c.send(true);
                    p.streaming = None;
                    p.note = Some(Note::err("cancelled"));
                }
            }
            Msg::Command(Command::CoachReset) => {
                if let Some(c) = p.cancel.take() {
                    let _ = c.send(true);
                }
                p.streaming = None;
                p.entries.clear();
                p.scroll = 0;
                fx.push(
                    SessionTask::Coach(CoachJob::Reset {
                        data_dir: env.data_dir.to_owned(),
                    })
                    .into(),
                );
            }
            Msg::Command(Command::CoachAdopt) => match p.last_reply() {
                Some(text) => fx.push(
                    SessionTask::Coach(CoachJob::Adopt {
                        child: p.child.clone(),
                        text: text.to_owned(),
                        schema: self.schema(),
                    })
                    .into(),
                ),
                None => p.note = Some(Note::err("no reply to adopt yet")),
            },
            Msg::Command(Command::Up) => p.scroll = p.scroll.saturating_add(1),
            Msg::Command(Command::Down) => p.scroll = p.scroll.saturating_sub(1),
            Msg::Command(Command::PageUp) => p.scroll = p.scroll.saturating_add(10),
            Msg::Command(Command::PageDown) => p.scroll = p.scroll.saturating_sub(10),
            Msg::Input(k) => match k.code {
                KeyCode::Backspace => {
                    p.input.pop();
                }
                KeyCode::Char(c) if p.input.chars().count() < MAX_QUESTION_CHARS => p.input.push(c),
                _ => {}
            },
            _ => {}
        }
        Some(Modal::Coach(p))
    }

    /// The coach's reports; the pane may be closed by now.
    pub(super) fn coach_report(&mut self, r: CoachReport, fx: &mut Effects) {
        let pane = match self.modal.as_mut() {
            Some(Modal::Coach(p)) => Some(p),
            _ => None,
        };
        match r {
            CoachReport::History(Ok(h)) => {
                if let Some(p) = pane
                    && !p.busy()
                {
                    p.entries = h;
                }
            }
            CoachReport::History(Err(e)) => match pane {
                Some(p) => p.note = Some(Note { ok: false, text: e }),
                None => say(fx, false, e),
            },
            CoachReport::Line(l) => {
                if let Some(s) = pane.and_then(|p| p.streaming.as_mut()) {
                    s.push(l);
                }
            }
            CoachReport::Done(r) => {
                let Some(p) = pane else {
                    if let Err(e) = r {
                        say(fx, false, e);
                    }
                    return;
                };
                if p.cancel.is_none() && p.streaming.is_none() {
                    return; // cancelled or reset: already shown
                }
                p.streaming = None;
                p.cancel = None;
                match r {
                    Ok(reply) => {
                        p.entries.push(("coach".into(), reply));
                        p.note = Some(Note::ok("adopt sends this reply to your side as a whisper"));
                    }
                    Err(e) => {
                        p.entries.push(("error".into(), e.clone()));
                        p.note = Some(Note::err(e));
                    }
                }
            }
            CoachReport::Reset(r) => {
                let note = match r {
                    Ok(()) => Note::ok("the coach's conversation was reset".to_owned()),
                    Err(e) => Note::err(format!("reset: {e}")),
                };
                match pane {
                    Some(p) => p.note = Some(note),
                    None => say(fx, note.ok, note.text),
                }
            }
            CoachReport::Adopted(r) => {
                let note = match r {
                    Ok(id) => Note::ok(format!("adopted as a whisper [{id}]")),
                    Err(e) => Note::err(e),
                };
                say(fx, note.ok, note.text.clone());
                if let Some(p) = pane {
                    p.note = Some(note);
                }
            }
        }
    }
}
