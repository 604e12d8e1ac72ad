//! The werewolf screen's small dialogs: what they hold, their keys and
//! their drawing.

use super::WolfView;
use crate::engine::ControlMode;
use crate::tui::command::Command;
use crate::tui::effect::{Effects, JoinSpec};
use crate::tui::msg::Msg;
use crate::tui::panes::dialogs::centered;
use crate::tui::panes::dialogs::edit_line;
use crate::tui::report::wolf::GameInfo;
use crate::tui::screen::Paint;
use crate::tui::theme::{Slot, Theme};
use crossterm::event::KeyCode;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// Seat counts with shipped configurations.
pub const SEAT_CHOICES: [usize; 3] = [5, 9, 13];
pub const MODE_CHOICES: [ControlMode; 3] = [
    ControlMode::Human,
    ControlMode::Hybrid,
    ControlMode::Autonomous,
];

/// The small dialogs of the screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Dialog {
    /// How many seats to watch.
    Seats(usize),
    /// Which control mode to play in.
    Mode(usize),
    /// A server's base URL and an optional spectator token.
    Server {
        url: String,
        token: String,
        field: usize,
    },
    /// A remote seat: ws URL, name, optional token (fields 0-2) and the
    /// control mode (field 3, ←/→).
    Join {
        url: String,
        name: String,
        token: String,
        mode: usize,
        field: usize,
    },
    /// A server's games (newest first).
    Games {
        url: String,
        token: String,
        list: Option<Result<Vec<GameInfo>, String>>,
        selected: usize,
    },
}

impl WolfView {
    /// Keys while a dialog is open.
    pub(super) fn dialog_msg(&mut self, m: Msg, fx: &mut Effects) {
        let Some(d) = self.dialog.as_mut() else {
            return;
        };
        match (d, m) {
            (_, Msg::Command(Command::Back)) => self.dialog = None,
            (Dialog::Seats(i), Msg::Command(Command::Up) | Msg::Command(Command::Left)) => {
                *i = (*i + 2) % 3
            }
            (Dialog::Seats(i), Msg::Command(Command::Down) | Msg::Command(Command::Right)) => {
                *i = (*i + 1) % 3
            }
            (Dialog::Mode(i), Msg::Command(Command::Up) | Msg::Command(Command::Left)) => {
                *i = (*i + 2) % 3
            }
            (Dialog::Mode(i), Msg::Command(Command::Down) | Msg::Command(Command::Right)) => {
                *i = (*i + 1) % 3
            }
            (Dialog::Seats(i), Msg::Command(Command::Submit)) => {
                let n = SEAT_CHOICES[*i % 3];
                self.dialog = None;
                self.start_watch(n, fx);
            }
            (Dialog::Mode(i), Msg::Command(Command::Submit)) => {
                let m = MODE_CHOICES[*i % 3];
                self.dialog = None;
                self.start_play(m, fx);
            }
            (
                Dialog::Server { field, .. },
                Msg::Command(Command::FocusNext) | Msg::Command(Command::FocusPrev),
            ) => *field = 1 - (*field).min(1),
            (Dialog::Server { url, token, field }, Msg::Input(k)) => {
                let f = if *field == 0 { url } else { token };
                edit_line(f, &k);
            }
            (Dialog::Server { url, token, field }, Msg::Paste(s)) => {
                let f = if *field == 0 { url } else { token };
                f.push_str(s.lines().next().unwrap_or("").trim());
            }
            (Dialog::Server { url, token, .. }, Msg::Command(Command::Submit)) => {
                let (u, t) = (url.trim().to_owned(), token.trim().to_owned());
                if u.is_empty() {
                    self.say(
                        false,
                        "type the server's base URL, e.g. http://127.0.0.1:8080",
                    );
                    return;
                }
                self.list_games(u, t, fx);
            }
            (
                Dialog::Join { mode, field: 3, .. },
                Msg::Command(Command::Left) | Msg::Command(Command::Up),
            ) => *mode = (*mode + 2) % 3,
            (
                Dialog::Join { mode, field: 3, .. },
                Msg::Command(Command::Right) | Msg::Command(Command::Down),
            ) => *mode = (*mode + 1) % 3,
            (Dialog::Join { field, .. }, Msg::Command(Command::FocusNext)) => {
                *field = (*field + 1) % 4
            }
            (Dialog::Join { field, .. }, Msg::Command(Command::FocusPrev)) => {
                *field = (*field + 3) % 4
            }
            (
                Dialog::Join {
                    url,
                    name,
                    token,
                    mode,
                    field,
                },
                Msg::Input(k),
            ) => {
                let f = match *field {
                    0 => url,
                    1 => name,
                    2 => token,
                    _ => {
                        match k.code {
                            KeyCode::Left | KeyCode::Up => *mode = (*mode + 2) % 3,
                            KeyCode::Right | KeyCode::Down | KeyCode::Char(' ') => {
                                *mode = (*mode + 1) % 3
                            }
                            _ => {}
                        }
                        return;
                    }
                };
                edit_line(f, &k);
            }
            (
                Dialog::Join {
                    url,
                    name,
                    token,
                    field,
                    ..
                },
                Msg::Paste(s),
            ) => {
                let f = match *field {
                    0 => url,
                    1 => name,
                    2 => token,
                    _ => return,
                };
                f.push_str(s.lines().next().unwrap_or("").trim());
            }
            (
                Dialog::Join {
                    url,
                    name,
                    token,
                    mode,
                    ..
                },
                Msg::Command(Command::Submit),
            ) => {
                let (u, n, t) = (
                    url.trim().to_owned(),
                    name.trim().to_owned(),
                    token.trim().to_owned(),
                );
                if !(u.starts_with("ws://") || u.starts_with("wss://")) {
                    self.say(
                        false,
                        "type the server's WebSocket URL, e.g. ws://127.0.0.1:8080/ws",
                    );
                    return;
                }
                if n.is_empty() {
                    self.say(false, "type a connection name, e.g. team1");
                    return;
                }
                let spec = JoinSpec {
                    url: u,
                    name: n,
                    token: (!t.is_empty()).then_some(t),
                    mode: MODE_CHOICES[*mode % 3],
                    seed: rand::random(),
                };
                self.dialog = None;
                self.start_join(spec, fx);
            }
            (Dialog::Games { selected, .. }, Msg::Command(Command::Up)) => {
                *selected = selected.saturating_sub(1);
            }
            (Dialog::Games { list, selected, .. }, Msg::Command(Command::Down)) => {
                let n = match list {
                    Some(Ok(l)) => l.len(),
                    _ => 0,
                };
                if *selected + 1 < n {
                    *selected += 1;
                }
            }
            (Dialog::Games { url, token, .. }, Msg::Command(Command::Refresh)) => {
                let (u, t) = (url.clone(), token.clone());
                self.list_games(u, t, fx);
            }
            (
                Dialog::Games {
                    url,
                    token,
                    list,
                    selected,
                },
                Msg::Command(Command::Submit),
            ) => match list {
                Some(Ok(l)) if !l.is_empty() => {
                    let id = l[(*selected).min(l.len() - 1)].id.clone();
                    let (u, t) = (url.clone(), token.clone());
                    self.dialog = None;
                    self.start_spectate(u, t, id, fx);
                }
                Some(Ok(_)) => {
                    let (u, t) = (url.clone(), token.clone());
                    self.say(false, format!("{u} has no games yet; trying again"));
                    self.list_games(u, t, fx);
                }
                Some(Err(_)) => {
                    // Back to the address to fix it.
                    let (u, t) = (url.clone(), token.clone());
                    self.dialog = Some(Dialog::Server {
                        url: u,
                        token: t,
                        field: 0,
                    });
                }
                None => {}
            },
            _ => {}
        }
    }
}

fn choice_line<T: Copy>(
    items: &[T],
    sel: usize,
    label: impl Fn(T) -> String,
    t: &Theme,
) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    for (i, it) in items.iter().enumerate() {
        let s = format!(" {} ", label(*it));
        spans.push(if i == sel {
            Span::styled(s, t.selected())
        } else {
            Span::styled(s, t.text())
        });
        spans.push(Span::raw(" "));
    }
    Line::from(spans)
}

/// Draws `d` over the middle of `area`.
pub(super) fn draw(d: &Dialog, f: &mut Frame, area: Rect, p: &Paint<'_>) {
    let t = p.theme;
    let (title, lines, h): (&str, Vec<Line>, u16) = match d {
        Dialog::Seats(i) => (
            " Watch a bot game ",
            vec![
                Line::from(Span::styled(" How many seats?", t.text())),
                choice_line(&SEAT_CHOICES, *i, |n| n.to_string(), t),
                Line::raw(""),
                Line::from(Span::styled(
                    " ←/→ choose · Enter start · Esc cancel",
                    t.muted(),
                )),
            ],
            6,
        ),
        Dialog::Mode(i) => {
            let help = match MODE_CHOICES[*i % 3] {
                ControlMode::Human => " you answer; the safe fallback at the margin",
                ControlMode::Hybrid => " the bot proposes; you may override",
                ControlMode::Autonomous => " the bot answers; you watch your seat",
            };
            (
                " Play a seat (5 seats) ",
                vec![
                    Line::from(Span::styled(" Control mode:", t.text())),
                    choice_line(&MODE_CHOICES, *i, |m| m.as_str().to_owned(), t),
                    Line::from(Span::styled(help, t.muted())),
                    Line::from(Span::styled(
                        " ←/→ choose · Enter start · Esc cancel",
                        t.muted(),
                    )),
                ],
                6,
            )
        }
        Dialog::Server { url, token, field } => {
            let fld = |label: &str, value: &str, on: bool| {
                let mut s = vec![
                    Span::styled(format!(" {label:<6}"), t.muted()),
                    Span::styled(value.to_owned(), t.text()),
                ];
                if on {
                    s.push(Span::styled(" ", t.cursor()));
                }
                Line::from(s)
            };
            (
                " Spectate a wolf server ",
                vec![
                    fld("URL", url, *field == 0),
                    fld("token", &"•".repeat(token.chars().count()), *field == 1),
                    Line::raw(""),
                    Line::from(Span::styled(
                        " Tab field · Enter list games · Esc cancel",
                        t.muted(),
                    )),
                ],
                6,
            )
        }
        Dialog::Join {
            url,
            name,
            token,
            mode,
            field,
        } => {
            let fld = |label: &str, value: &str, on: bool| {
                let mut s = vec![
                    Span::styled(format!(" {label:<6}"), t.muted()),
                    Span::styled(value.to_owned(), t.text()),
                ];
                if on {
                    s.push(Span::styled(" ", t.cursor()));
                }
                Line::from(s)
            };
            let mut mode_line = vec![Span::styled(
                " mode  ",
                if *field == 3 { t.accent() } else { t.muted() },
            )];
            mode_line
                .extend(choice_line(&MODE_CHOICES, *mode % 3, |m| m.as_str().to_owned(), t).spans);
            (
                " Take a seat at a wolf server ",
                vec![
                    fld("URL", url, *field == 0),
                    fld("name", name, *field == 1),
                    fld("token", &"•".repeat(token.chars().count()), *field == 2),
                    Line::from(mode_line),
                    Line::raw(""),
                    Line::from(Span::styled(
                        " Tab field · ←/→ mode · Enter join · Esc cancel",
                        t.muted(),
                    )),
                ],
                8,
            )
        }
        Dialog::Games {
            url,
            list,
            selected,
            ..
        } => {
            let mut lines = vec![Line::from(Span::styled(format!(" {url}"), t.muted()))];
            match list {
                None => lines.push(Line::from(Span::styled(" listing games…", t.muted()))),
                Some(Err(e)) => {
                    lines.push(Line::from(Span::styled(format!(" {e}"), t.fg(Slot::Error))));
                    lines.push(Line::from(Span::styled(
                        " Enter edit the address · Esc cancel",
                        t.muted(),
                    )));
                }
                Some(Ok(l)) if l.is_empty() => {
                    lines.push(Line::from(Span::styled(
                        " no games yet · Enter lists again",
                        t.muted(),
                    )));
                }
                Some(Ok(l)) => {
                    for (i, g) in l.iter().enumerate().take(8) {
                        let state = match (&g.winner, g.finished) {
                            (Some(w), _) => format!("over, {w} won"),
                            (None, true) => "over".to_owned(),
                            (None, false) => {
                                format!("day {} · {}/{} alive", g.day, g.alive, g.seats)
                            }
                        };
                        let s =
                            format!(" {}{} {state}", g.id, if i == 0 { " (newest)" } else { "" });
                        lines.push(Line::from(Span::styled(
                            s,
                            if i == *selected {
                                t.selected()
                            } else {
                                t.text()
                            },
                        )));
                    }
                    lines.push(Line::from(Span::styled(
                        " ↑/↓ choose · Enter follow · Esc cancel",
                        t.muted(),
                    )));
                }
            }
            let h = lines.len() as u16 + 2;
            (" Games ", lines, h)
        }
    };
    let r = centered(area, 64, h);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.border(true))
                .title(Span::styled(title, t.title())),
        ),
        r,
    );
}
