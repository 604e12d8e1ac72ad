//! Drawing the sessions screen from `&SessionsView`: the two lists on the
//! left, the attached session's snapshot, feed and prompt on the right,
//! the dialog on top. Nothing here changes state.

use super::{Focus, Modal, SessionsView};
use crate::json::Map;
use crate::tui::command::Command;
use crate::tui::panes::dialogs;
use crate::tui::panes::feed::Feed;
use crate::tui::panes::lists;
use crate::tui::panes::prompt::{self, Prompt};
use crate::tui::panes::room;
use crate::tui::panes::snapshot;
use crate::tui::panes::table;
use crate::tui::panes::task;
use crate::tui::screen::Paint;
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};

pub(super) fn draw(v: &SessionsView, f: &mut Frame, area: Rect, p: &Paint<'_>) {
    let theme = p.theme;
    let full = f.area();
    // A battlefield wants its 31 cells two columns each.
    let left_w = if v.tank().is_some() && full.width < 160 {
        26
    } else if full.width >= 140 {
        48
    } else if full.width >= 100 {
        40
    } else {
        32
    };
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([
            Constraint::Length(left_w.min(full.width / 2)),
            Constraint::Min(20),
        ])
        .split(area);
    let left = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(55), Constraint::Percentage(45)])
        .split(cols[0]);
    let now = crate::session::files::epoch_now();
    let paint = |area, pane| lists::Paint {
        area,
        theme,
        focused: v.focus == pane && v.modal.is_none() && !p.covered,
        now,
    };
    lists::draw_invitations(
        f,
        &paint(left[0], Focus::Invitations),
        &v.invitations,
        &v.inv_cur,
        p.me,
        p.offline,
    );
    lists::draw_sessions(
        f,
        &paint(left[1], Focus::Sessions),
        &v.rows,
        &v.ses_cur,
        v.attached.as_ref().map(|a| a.key.as_path()),
    );
    draw_right(v, f, cols[1], p);
    match &v.modal {
        Some(Modal::Join(d)) => {
            let spec = crate::library::Library::bundled()
                .entries()
                .iter()
                .find(|e| e.protocol_id == d.invitation.protocol_id)
                .and_then(|e| crate::library::bundled_spec(&e.alias));
            d.draw(f, full, theme, spec)
        }
        Some(Modal::Host(h)) => h.draw(f, full, theme),
        Some(Modal::Pick(h, picker)) => {
            h.draw(f, full, theme);
            let hint = p
                .keymap
                .hints(
                    crate::tui::keymap::Context::Picker,
                    &[Command::Submit, Command::NextPage, Command::Back],
                )
                .into_iter()
                .map(|(k, label)| format!("{k} {label}"))
                .collect::<Vec<_>>()
                .join(" · ");
            picker.draw(f, full, theme, &hint);
        }
        Some(Modal::Replay(r)) => crate::tui::panes::replay::ReplayPaint {
            timeline: &r.timeline,
            pos: r.pos,
            playing: r.playing,
            speed: r.speed(),
        }
        .draw(f, area, theme),
        Some(Modal::TankReplay(r)) => {
            let hint = p
                .keymap
                .hints(
                    crate::tui::keymap::Context::Replay,
                    &[
                        Command::Right,
                        Command::ReplayPlay,
                        Command::ReplayFaster,
                        Command::ReplaySlower,
                        Command::Top,
                        Command::Bottom,
                    ],
                )
                .into_iter()
                .map(|(k, label)| format!("{k} {label}"))
                .collect::<Vec<_>>()
                .join(" · ");
            let status = r.status();
            let side = r.role.map(|t| if r.spectate { t.other() } else { t });
            crate::tui::panes::battlefield::BattlePaint {
                world: r.world().ok_or("no frame"),
                title: "· replay ",
                side,
                spectating: r.spectate,
                selected: None,
                target: None,
                cursor: None,
                status: &status,
                line: None,
                note: None,
                hint: &hint,
                focused: true,
            }
            .draw(f, area, theme);
        }
        Some(Modal::Strategy(e)) => e.draw(f, full, theme),
        Some(Modal::Whisper(w)) => w.draw(f, cols[1], theme),
        Some(Modal::Coach(c)) => c.draw(f, cols[1], theme),
        Some(Modal::Open(text)) => dialogs::draw_search(
            f,
            area,
            theme,
            "Attach a state dir, or replay a bundle or a werewolf .log (path)",
            text,
        ),
        Some(Modal::Topic(text)) => dialogs::draw_search(
            f,
            area,
            theme,
            "The room's topic (Enter sets it for everyone · Esc cancels)",
            text,
        ),
        Some(Modal::CloseRoom(action)) => {
            let meeting = action.get_str("kind") == Some("end_meeting");
            let (title, lines) = if meeting {
                (
                    "End the meeting?",
                    vec![
                        "The meeting ends for everyone in it.".to_owned(),
                        "Its record stays in each member's state dir.".to_owned(),
                    ],
                )
            } else {
                (
                    "Close the room?",
                    vec![
                        "It closes for everyone in it (you own it: seat 0).".to_owned(),
                        "Its history stays in each member's state dir.".to_owned(),
                    ],
                )
            };
            dialogs::draw_confirm(f, full, theme, title, &lines)
        }
        Some(Modal::Search { target, text }) => {
            let what = match target {
                Focus::Invitations => "Search invitations",
                Focus::Sessions => "Search sessions",
                _ => "Search the feed (Enter searches the whole session)",
            };
            dialogs::draw_search(f, area, theme, what, text)
        }
        None => {}
    }
}

fn draw_right(v: &SessionsView, f: &mut Frame, area: Rect, p: &Paint<'_>) {
    let theme = p.theme;
    if let Some(att) = v.attached.as_ref()
        && let Some(t) = att.tank.as_ref()
    {
        let hint = p
            .keymap
            .hints(
                crate::tui::keymap::Context::Battle,
                &[
                    Command::TankAssault,
                    Command::TankNextUnit,
                    Command::TankMoveTo,
                    Command::TankCommand,
                    Command::TankSpectate,
                    Command::Replay,
                ],
            )
            .into_iter()
            .map(|(k, label)| format!("{k} {label}"))
            .collect::<Vec<_>>()
            .join(" · ");
        let title = att.title();
        // A newer snapshot that did not read: the last good world stays,
        // and the score line says why it is not newer.
        let status = if t.world.is_some() && !t.problem.is_empty() {
            format!("{} · snapshot unreadable", t.phase)
        } else {
            t.phase.clone()
        };
        crate::tui::panes::battlefield::BattlePaint {
            world: t.world().ok_or(t.problem.as_str()),
            title: &title,
            side: t.perspective(),
            spectating: t.spectate,
            selected: t.selected,
            target: t.target,
            cursor: t.cursor,
            status: &status,
            line: t.line.as_deref(),
            note: t.note.as_ref(),
            hint: &hint,
            focused: v.battle_focused() && v.modal.is_none() && !p.covered,
        }
        .draw(f, area, theme);
        return;
    }
    if let Some(att) = v.attached.as_ref()
        && let Some(t) = att.table.as_ref()
    {
        let active = v.modal.is_none() && !p.covered;
        let status = att.session.get_str("status").unwrap_or("");
        let ended = (!att.room_live()).then_some(status);
        let waiting = if t.dealt() {
            None
        } else {
            Some(if status.is_empty() {
                "starting"
            } else {
                status
            })
        };
        let playable = t.playable_ids();
        table::TablePaint {
            name: &t.name,
            title: &att.title(),
            view: &t.view,
            waiting,
            kinds: &t.kinds,
            nicks: &v.nicks,
            log: &t.log,
            pick: table::Pick {
                cursor: t.cursor,
                selected: Some(&t.selected),
                bids: &t.bids,
                bid_cursor: t.bid_cursor,
                can_pass: t.can_pass,
                choices: &t.choices,
                choice_cursor: t.choice_cursor,
                playable: Some(&playable),
                waiting: t.waiting(),
            },
            note: t.note.as_ref(),
            ended,
            outcome: att.snapshot.get_str("outcome"),
            mode: att.session.get_str("local_control_mode").unwrap_or(""),
            keymap: p.keymap,
            focused: active && matches!(v.focus, Focus::Feed | Focus::Prompt),
        }
        .draw(f, area, theme);
        return;
    }
    if let Some(att) = v.attached.as_ref()
        && let Some(r) = att.room.as_ref()
    {
        let active = v.modal.is_none() && !p.covered;
        room::RoomPaint {
            model: &r.model,
            notices: &r.notices,
            links: &r.links,
            nicks: &v.nicks,
            me: p.me,
            title: &att.title(),
            scroll: r.scroll,
            input: &r.input,
            note: r.note.as_ref(),
            stream_focused: active && v.focus == Focus::Feed,
            compose_focused: active && v.focus == Focus::Prompt,
        }
        .draw(f, area, theme);
        return;
    }
    let Some(att) = v.attached.as_ref() else {
        let empty = Map::new();
        let view = snapshot::View {
            snapshot: &empty,
            session: &empty,
            window: None,
            cursor: None,
            mark: None,
            verdict: None,
        };
        let parts = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Length(6), Constraint::Min(3)])
            .split(area);
        view.draw(f, parts[0], theme, "");
        Feed::default().draw(f, parts[1], theme, v.focus == Focus::Feed, "");
        return;
    };
    // The peer banner takes the right column's first line while the
    // session runs.
    let area = match &att.aside.banner {
        Some(b) if area.height > 8 && att.running() => {
            let top = Rect { height: 1, ..area };
            crate::tui::panes::aside::draw_banner(f, top, theme, b);
            Rect {
                y: area.y + 1,
                height: area.height - 1,
                ..area
            }
        }
        _ => area,
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
        mark: att
            .prompt
            .as_ref()
            .and_then(Prompt::cards)
            .map(|p| p.mark()),
        verdict: Some(&att.verdict),
    };
    // A task session shows its task where others show the snapshot.
    let task = crate::session::task::TaskView::from_snapshot(&att.snapshot);
    let title = att.title();
    let task_paint = task.as_ref().map(|t| task::TaskPaint {
        view: t,
        title: &title,
        phase: att.snapshot.get_str("phase"),
    });
    let want_h = match &task_paint {
        Some(t) => t.height(theme, area.width),
        None => view.height(theme, area.width),
    };
    // The feed keeps at least a third of the height.
    let snap_h = want_h.min(area.height.saturating_sub(area.height / 3).max(3));
    let prompt_h = att.prompt.as_ref().map(|p| p.height()).unwrap_or(0);
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(snap_h),
            Constraint::Min(3),
            Constraint::Length(prompt_h),
        ])
        .split(area);
    let me = view_role(att);
    if att.aside.show_history {
        crate::tui::panes::aside::draw_history(f, parts[0], theme, &att.aside.details, &me);
    } else if let Some(t) = &task_paint {
        t.draw(f, parts[0], theme);
    } else {
        view.draw(f, parts[0], theme, &title);
    }
    let feed_focused = v.focus == Focus::Feed && v.modal.is_none() && !p.covered;
    if att.aside.show_details {
        crate::tui::panes::aside::draw_details(
            f,
            parts[1],
            theme,
            feed_focused,
            &att.aside.details,
        );
    } else {
        let note = att.aside.whisper_note().unwrap_or_default();
        att.feed.draw(f, parts[1], theme, feed_focused, &note);
    }
    if let Some(pr) = &att.prompt {
        pr.draw(
            f,
            parts[2],
            theme,
            v.focus == Focus::Prompt && v.modal.is_none() && !p.covered,
        );
    }
}

/// Which side the attached session plays (host or guest).
fn view_role(att: &super::Attached) -> String {
    use crate::json::Value;
    att.snapshot
        .get("role")
        .or_else(|| att.session.get("role"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The commands the status bar hints at, by dialog and focus.
pub(super) fn hints(v: &SessionsView) -> Vec<Command> {
    match (&v.modal, v.focus) {
        (Some(Modal::Strategy(_)), _) => vec![
            Command::Save,
            Command::Merge,
            Command::Preset,
            Command::Back,
        ],
        (Some(Modal::Whisper(_)), _) => vec![Command::Submit, Command::Back],
        (Some(Modal::Coach(_)), _) => vec![
            Command::Submit,
            Command::CoachCancel,
            Command::CoachAdopt,
            Command::CoachReset,
            Command::Back,
        ],
        (Some(Modal::Replay(_) | Modal::TankReplay(_)), _) => vec![
            Command::Right,
            Command::ReplayPlay,
            Command::ReplayFaster,
            Command::ReplaySlower,
            Command::Back,
        ],
        (Some(Modal::Host(_)), _) => {
            vec![Command::Submit, Command::DiscoverProtocol, Command::Back]
        }
        (Some(Modal::Pick(..)), _) => vec![Command::Submit, Command::NextPage, Command::Back],
        (Some(_), _) => vec![Command::Submit, Command::Back],
        (None, Focus::Feed | Focus::Prompt) if v.table().is_some() => {
            let bidding = v
                .table()
                .and_then(|t| t.view.as_ref().ok())
                .is_some_and(|t| t.phase == "bidding" && t.your_turn());
            if bidding {
                vec![
                    Command::Left,
                    Command::Submit,
                    Command::PassTurn,
                    Command::FocusNext,
                    Command::Help,
                ]
            } else {
                vec![
                    Command::SelectCard,
                    Command::SelectGroup,
                    Command::Submit,
                    Command::PassTurn,
                    Command::ClearSelection,
                    Command::FocusNext,
                    Command::Help,
                ]
            }
        }
        (None, Focus::Feed | Focus::Prompt) if v.tank().is_some_and(|t| t.line.is_some()) => {
            vec![Command::Submit, Command::Back]
        }
        (None, Focus::Feed | Focus::Prompt) if v.tank().is_some() => vec![
            Command::TankAssault,
            Command::TankNextUnit,
            Command::TankCommand,
            Command::TankSpectate,
            Command::Replay,
            Command::FocusNext,
            Command::Help,
        ],
        (None, Focus::Feed) if v.room().is_some() => vec![
            Command::Compose,
            Command::SetTopic,
            Command::CloseRoom,
            Command::FocusNext,
            Command::Help,
            Command::Quit,
        ],
        (None, Focus::Prompt) if v.room().is_some() => {
            vec![Command::Submit, Command::Back, Command::Help]
        }
        (None, Focus::Invitations) => vec![
            Command::Activate,
            Command::HostNew,
            Command::Search,
            Command::CancelInvitation,
            Command::FocusNext,
            Command::Help,
            Command::Quit,
        ],
        (None, Focus::Sessions) => vec![
            Command::Activate,
            Command::OpenPath,
            Command::Strategy,
            Command::Search,
            Command::FocusNext,
            Command::Help,
            Command::Quit,
        ],
        (None, Focus::Feed) => vec![
            Command::Whisper,
            Command::Search,
            Command::Filter,
            Command::RawToggle,
            Command::FoldToggle,
            Command::Strategy,
            Command::FocusNext,
            Command::Help,
        ],
        // A typed answer has nothing to pick with the arrows.
        (None, Focus::Prompt) if v.prompt().is_some_and(Prompt::takes_text) => {
            vec![Command::Submit, Command::Back, Command::Help]
        }
        (None, Focus::Prompt) => match v.prompt().and_then(Prompt::cards) {
            Some(pick) => pick.hints(),
            None => vec![Command::Submit, Command::Left, Command::Back, Command::Help],
        },
    }
}
