//! The leaderboard screen (F6): the community's ELO and karma boards (a
//! key toggles), a page at a time by the community's cursor (the next
//! page, back to the first), this identity's row highlighted, and
//! "message this agent" on a row (the inbox's compose form, pre-filled).

mod view;

use crate::community::social::{Board, LeaderRow};
use crate::tui::command::Command;
use crate::tui::effect::{Effect, Effects, SocialTask};
use crate::tui::keymap::Context;
use crate::tui::msg::Msg;
use crate::tui::panes::lists::Cursor;
use crate::tui::report::Report;
use crate::tui::report::social::LeaderReport;
use crate::tui::screen::{Env, Paint, Screen};
use ratatui::Frame;
use ratatui::layout::Rect;

pub struct LeadersView {
    pub board: Board,
    pub rows: Vec<LeaderRow>,
    pub cur: Cursor,
    /// The shown page's cursor (None: the first page) and its number.
    pub cursor: Option<String>,
    pub page_no: usize,
    /// Where the next page starts (None: this is the last).
    pub next_cursor: Option<String>,
    /// The page asked for: (board, cursor, its number).
    loading: Option<(Board, Option<String>, usize)>,
    /// Why the last read failed.
    pub error: Option<String>,
    /// Read once the screen is first shown.
    loaded: bool,
}

impl Default for LeadersView {
    fn default() -> Self {
        LeadersView {
            board: Board::Elo,
            rows: Vec::new(),
            cur: Cursor::default(),
            cursor: None,
            page_no: 1,
            next_cursor: None,
            loading: None,
            error: None,
            loaded: false,
        }
    }
}

impl LeadersView {
    pub fn selected(&self) -> Option<&LeaderRow> {
        self.rows.get(self.cur.selected)
    }

    pub fn loading(&self) -> bool {
        self.loading.is_some()
    }

    /// Reads `board` from `cursor` (page `page_no`).
    fn load(
        &mut self,
        board: Board,
        cursor: Option<String>,
        page_no: usize,
        env: &Env<'_>,
        fx: &mut Effects,
    ) {
        let Some(c) = env.community else {
            self.error = Some("the community is not reachable yet".into());
            return;
        };
        self.loaded = true;
        self.loading = Some((board, cursor.clone(), page_no));
        fx.push(
            SocialTask::Board {
                client: c.client.clone(),
                board,
                cursor,
            }
            .into(),
        );
    }

    /// The screen is shown: read the first page once.
    pub fn shown(&mut self, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        if !self.loaded && self.loading.is_none() {
            self.load(self.board, None, 1, env, &mut fx);
        }
        fx
    }

    fn report(&mut self, r: LeaderReport) {
        let LeaderReport::Page {
            board,
            cursor,
            page,
        } = r;
        // Only the page last asked for counts.
        let Some((want_board, want_cursor, page_no)) = self.loading.clone() else {
            return;
        };
        if want_board != board || want_cursor != cursor {
            return;
        }
        self.loading = None;
        match page {
            Ok(p) => {
                self.board = board;
                self.cursor = cursor;
                self.page_no = page_no;
                self.rows = p.entries;
                self.next_cursor = p.next_cursor;
                self.cur = Cursor::default();
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn command(&mut self, c: Command, env: &Env<'_>, fx: &mut Effects) {
        let page = usize::from(env.size.1 / 2).max(1);
        if self.cur.navigate(c, self.rows.len(), page) {
            return;
        }
        match c {
            Command::ToggleBoard => {
                let other = match self.board {
                    Board::Elo => Board::Karma,
                    Board::Karma => Board::Elo,
                };
                // The other board, from its first page.
                self.board = other;
                self.rows.clear();
                self.cursor = None;
                self.next_cursor = None;
                self.page_no = 1;
                self.cur = Cursor::default();
                self.load(other, None, 1, env, fx);
            }
            Command::NextPage => match self.next_cursor.clone() {
                Some(next) => self.load(self.board, Some(next), self.page_no + 1, env, fx),
                None => fx.push(Effect::Status(true, "this is the last page".into())),
            },
            Command::FirstPage | Command::Refresh => self.load(self.board, None, 1, env, fx),
            Command::MessageAgent | Command::Activate => match self.selected() {
                Some(r) if r.public_key == env.me => {
                    fx.push(Effect::Status(false, "that is you".into()))
                }
                Some(r) => fx.push(Effect::MessageAgent {
                    key: r.public_key.clone(),
                    nickname: r.nickname.clone(),
                }),
                None => fx.push(Effect::Status(false, "no row selected".into())),
            },
            _ => {}
        }
    }
}

impl Screen for LeadersView {
    fn title(&self) -> &'static str {
        "Leaders"
    }

    fn context(&self) -> Context {
        Context::Leaders
    }

    fn update(&mut self, m: Msg, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        match m {
            Msg::Report(Report::Leaders(r)) => self.report(*r),
            Msg::Command(c) => self.command(c, env, &mut fx),
            _ => {}
        }
        fx
    }

    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        self.draw_body(f, area, p);
    }

    fn hints(&self) -> Vec<Command> {
        vec![
            Command::ToggleBoard,
            Command::NextPage,
            Command::FirstPage,
            Command::MessageAgent,
            Command::Refresh,
            Command::Help,
            Command::Quit,
        ]
    }
}
