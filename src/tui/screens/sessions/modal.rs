//! The sessions screen's dialogs: join, host, the strategy editor, the
//! search box and the attach-by-path box.

use super::{Focus, SessionsView, say};
use crate::json::Map;
use crate::obj;
use crate::tui::command::Command;
use crate::tui::effect::{Effects, HostJob, SessionTask};
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::panes::dialogs::{self, HostForm, JoinDialog};
use crate::tui::panes::editor::{self, Editor};
use crate::tui::screen::Env;
use crate::tui::watch;
use crossterm::event::KeyCode;
use std::path::PathBuf;

/// A dialog over the sessions screen.
pub enum Modal {
    Join(JoinDialog),
    Host(HostForm),
    Strategy(Box<Editor>),
    Search {
        target: Focus,
        text: String,
    },
    /// Attach a state dir typed by path.
    Open(String),
    /// A room's new topic.
    Topic(String),
    /// Close the room (end the meeting): this action, once confirmed.
    CloseRoom(Map),
    /// The replay of a finished session.
    Replay(Box<super::replay::Replay>),
    /// The replay of a tank battle (its frames).
    TankReplay(Box<super::tank_replay::TankReplay>),
    /// The whisper line (w): a note to your own side.
    Whisper(crate::tui::panes::whisper::WhisperLine),
    /// The coach pane (c): a conversation with your own agent CLI.
    Coach(Box<crate::tui::panes::coach::CoachPane>),
    /// The host form's protocol picker, over the form.
    Pick(Box<HostForm>, Box<crate::tui::panes::picker::Picker>),
}

impl SessionsView {
    /// Keys while a dialog is open.
    pub(super) fn modal_msg(&mut self, m: Msg, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        let Some(modal) = self.modal.take() else {
            return fx;
        };
        let keep = match modal {
            Modal::Whisper(line) => self.whisper_msg(line, m, &mut fx),
            Modal::Coach(p) => self.coach_msg(p, m, env, &mut fx),
            Modal::Pick(form, p) => self.picker_msg(form, p, m, env, &mut fx),
            Modal::Replay(mut r) => match m {
                Msg::Command(Command::Back) => None,
                Msg::Command(c) => {
                    r.command(c, std::time::Instant::now());
                    Some(Modal::Replay(r))
                }
                _ => Some(Modal::Replay(r)),
            },
            Modal::TankReplay(mut r) => match m {
                Msg::Command(Command::Back) => None,
                Msg::Command(c) => {
                    r.command(c, std::time::Instant::now());
                    Some(Modal::TankReplay(r))
                }
                _ => Some(Modal::TankReplay(r)),
            },
            Modal::Join(mut d) => match m {
                Msg::Command(Command::Back) => None,
                Msg::Command(Command::Left) | Msg::Command(Command::Up) => {
                    d.mode = dialogs::next_mode(d.mode, true);
                    Some(Modal::Join(d))
                }
                Msg::Command(Command::Right)
                | Msg::Command(Command::Down)
                | Msg::Command(Command::CycleMode) => {
                    d.mode = dialogs::next_mode(d.mode, false);
                    Some(Modal::Join(d))
                }
                Msg::Command(Command::Submit) => {
                    self.join(d, env, &mut fx);
                    None
                }
                _ => Some(Modal::Join(d)),
            },
            Modal::Host(mut h) => match m {
                Msg::Command(Command::Back) => None,
                Msg::Command(Command::DiscoverProtocol) => {
                    self.open_picker(h, env, &mut fx);
                    None
                }
                Msg::Command(Command::Up) => {
                    h.row = h.row.saturating_sub(1);
                    Some(Modal::Host(h))
                }
                Msg::Command(Command::Down) => {
                    h.row = (h.row + 1).min(h.rows() - 1);
                    Some(Modal::Host(h))
                }
                Msg::Command(c @ (Command::Left | Command::Right)) => {
                    h.left_right(c == Command::Left);
                    Some(Modal::Host(h))
                }
                Msg::Command(Command::CycleMode) => {
                    let r = h.row;
                    h.row = 1;
                    h.left_right(false);
                    h.row = r;
                    Some(Modal::Host(h))
                }
                Msg::Command(Command::Preset) => {
                    let r = h.row;
                    h.row = 2;
                    h.left_right(false);
                    h.row = r;
                    Some(Modal::Host(h))
                }
                Msg::Input(k) => {
                    match k.code {
                        KeyCode::Char(c) => h.edit(Some(c)),
                        KeyCode::Backspace => h.edit(None),
                        _ => {}
                    }
                    Some(Modal::Host(h))
                }
                Msg::Command(Command::Submit) => {
                    if h.validate() {
                        self.host(h, env, &mut fx);
                        None
                    } else {
                        Some(Modal::Host(h))
                    }
                }
                _ => Some(Modal::Host(h)),
            },
            Modal::Strategy(mut e) => match m {
                Msg::Command(Command::Back) => None,
                Msg::Input(k) => {
                    e.input(k);
                    Some(Modal::Strategy(e))
                }
                Msg::Command(Command::Preset) => {
                    e.next_preset();
                    Some(Modal::Strategy(e))
                }
                Msg::Command(c @ (Command::Save | Command::Merge)) => {
                    let merge = c == Command::Merge;
                    match &e.parsed {
                        Ok(strategy) => {
                            fx.push(
                                SessionTask::Strategy {
                                    child: e.child.clone(),
                                    strategy: strategy.clone(),
                                    merge,
                                }
                                .into(),
                            );
                            e.note = Some(Note::ok(if merge { "merging…" } else { "saving…" }));
                        }
                        Err(err) => e.note = Some(Note::err(format!("not saved: {err}"))),
                    }
                    Some(Modal::Strategy(e))
                }
                _ => Some(Modal::Strategy(e)),
            },
            Modal::Open(mut text) => match m {
                Msg::Command(Command::Back) => None,
                Msg::Command(Command::Submit) => {
                    let p = PathBuf::from(text.trim());
                    if watch::resolve(&p).is_some() {
                        fx = self.attach(&p);
                        self.focus = Focus::Feed;
                        None
                    } else if p.is_file() {
                        // A file: a signed replay bundle (verified first)
                        // or a werewolf game's .log, told by its content
                        // when the task reads it.
                        say(&mut fx, true, "reading the file for its replay…");
                        fx.push(SessionTask::ReplayLog { path: p }.into());
                        None
                    } else {
                        say(
                            &mut fx,
                            false,
                            format!(
                                "{} is neither a session state dir, a replay bundle nor a game log",
                                p.display()
                            ),
                        );
                        Some(Modal::Open(text))
                    }
                }
                Msg::Input(k) => {
                    dialogs::edit_line(&mut text, &k);
                    Some(Modal::Open(text))
                }
                _ => Some(Modal::Open(text)),
            },
            Modal::Topic(mut text) => match m {
                Msg::Command(Command::Back) => None,
                Msg::Command(Command::Submit) => {
                    let topic = text.trim().to_owned();
                    if topic.is_empty() {
                        say(&mut fx, false, "a topic needs some text");
                        Some(Modal::Topic(text))
                    } else {
                        self.room_action(obj! { "kind" => "set_topic", "topic" => topic }, &mut fx);
                        None
                    }
                }
                Msg::Input(k) => {
                    dialogs::edit_line(&mut text, &k);
                    Some(Modal::Topic(text))
                }
                _ => Some(Modal::Topic(text)),
            },
            Modal::CloseRoom(action) => match m {
                Msg::Command(Command::Back) => None,
                Msg::Command(Command::Submit) => {
                    self.room_action(action, &mut fx);
                    None
                }
                _ => Some(Modal::CloseRoom(action)),
            },
            Modal::Search { target, mut text } => match m {
                Msg::Command(Command::Back) => {
                    self.set_search(target, String::new(), &mut fx);
                    None
                }
                Msg::Command(Command::Submit) => {
                    self.set_search(target, text, &mut fx);
                    None
                }
                Msg::Input(k) => {
                    dialogs::edit_line(&mut text, &k);
                    if target != Focus::Feed {
                        self.set_search(target, text.clone(), &mut fx);
                    }
                    Some(Modal::Search { target, text })
                }
                _ => Some(Modal::Search { target, text }),
            },
        };
        if self.modal.is_none() {
            self.modal = keep;
        }
        fx
    }

    fn set_search(&mut self, target: Focus, text: String, fx: &mut Effects) {
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
                        fx.push(
                            SessionTask::Search {
                                events: att.dir.events_file(),
                                generation: att.generation,
                                needle: text,
                            }
                            .into(),
                        );
                    }
                }
            }
        }
    }

    pub(super) fn open_strategy(&mut self, fx: &mut Effects) {
        let Some(att) = self.attached.as_ref() else {
            say(
                fx,
                false,
                "attach a session first: the strategy belongs to a session",
            );
            return;
        };
        let mut presets = editor::presets(att.schema.as_ref());
        presets.extend(editor::user_scripts(&att.dir.child));
        self.modal = Some(Modal::Strategy(Box::new(Editor::new(
            att.dir.child.clone(),
            &att.strategy,
            presets,
        ))));
    }

    fn join(&mut self, d: JoinDialog, env: &Env<'_>, fx: &mut Effects) {
        let Some(c) = env.community.cloned() else {
            say(fx, false, "the community is not reachable");
            return;
        };
        say(
            fx,
            true,
            format!("joining {} as {}…", d.invitation.alias, d.mode.as_str()),
        );
        self.running_tasks += 1;
        fx.push(
            SessionTask::Join {
                community: Box::new(c),
                post_id: d.invitation.post_id.clone(),
                protocol_id: d.invitation.protocol_id.clone(),
                mode: d.mode,
                data_dir: env.data_dir.to_owned(),
            }
            .into(),
        );
    }

    fn host(&mut self, h: HostForm, env: &Env<'_>, fx: &mut Effects) {
        let (Some(c), Some(spec)) = (env.community.cloned(), h.spec()) else {
            say(fx, false, "the community is not reachable");
            return;
        };
        let Ok(options) = h.options() else {
            return;
        };
        say(
            fx,
            true,
            format!("hosting {} as {}…", h.alias(), h.mode.as_str()),
        );
        self.running_tasks += 1;
        let (this, cancel) = tokio::sync::watch::channel(false);
        self.hosting.push((None, this));
        fx.push(
            SessionTask::Host {
                community: Box::new(c),
                job: Box::new(HostJob {
                    spec: spec.clone(),
                    options,
                    mode: h.mode,
                    data_dir: env.data_dir.to_owned(),
                }),
                cancel,
            }
            .into(),
        );
    }
}
