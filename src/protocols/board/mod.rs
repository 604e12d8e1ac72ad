//! gomoku-v1, connect4-v1 and reversi-v1 (session_loop): the guest moves
//! first; the host applies the guest's move, answers with its own in one
//! `round_result`, and adjudicates wins.
//!
//! Both sides keep the board. The host rejects illegal moves with the
//! spec's `error` frame (out of bounds, occupied, full column, illegal
//! reversi move or pass, wrong turn); the guest checks the host's moves and
//! win claims against its own board and ends the session on a lie.
//! Automatic play is a legal, sensible move: win now, block the opponent's
//! win, then the best-scoring cell (`{"mode":"random"}` plays any legal move).
//!
//! Here: the game's frames and hooks; `rules` holds the grid, the legal
//! moves and the automatic player.

mod rules;

use super::{int_field, last_event, opt_int, str_field};
use crate::engine::{Ctx, Dir, HookError, HookResult, Hooks, HostMetadata};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;
pub use rules::Cell;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gomoku,
    Connect4,
    Reversi,
}

pub struct BoardGame {
    kind: Kind,
    rows: i64,
    cols: i64,
    board: Vec<Vec<Cell>>,
    /// The next guest turn (guest turns are odd, host turns even).
    turn: i64,
    /// The guest's last own move, to recognise its echo in a final result.
    last_own: Option<(i64, i64)>,
}

impl BoardGame {
    pub fn new(kind: Kind) -> Self {
        BoardGame {
            kind,
            rows: 0,
            cols: 0,
            board: Vec::new(),
            turn: 1,
            last_own: None,
        }
    }

    fn win_len(&self) -> i64 {
        match self.kind {
            Kind::Gomoku => 5,
            _ => 4,
        }
    }

    fn symbols(&self) -> (&'static str, &'static str) {
        match self.kind {
            Kind::Connect4 => ("R", "Y"),
            _ => ("B", "W"),
        }
    }

    fn reset(&mut self) {
        self.board = vec![vec![Cell::Empty; self.cols.max(0) as usize]; self.rows.max(0) as usize];
        // The four middle stones of reversi's square board (a board read
        // back from a file may be of any shape: no stones, no panic).
        if self.kind == Kind::Reversi && self.rows >= 2 && self.cols == self.rows {
            let m = (self.rows / 2) as usize;
            self.board[m - 1][m - 1] = Cell::Host;
            self.board[m - 1][m] = Cell::Guest;
            self.board[m][m - 1] = Cell::Guest;
            self.board[m][m] = Cell::Host;
        }
        self.turn = 1;
        self.last_own = None;
    }

    fn board_value(&self) -> Value {
        let (g, h) = self.symbols();
        Value::Array(
            self.board
                .iter()
                .map(|row| {
                    Value::Array(
                        row.iter()
                            .map(|c| {
                                Value::from(match c {
                                    Cell::Empty => "",
                                    Cell::Guest => g,
                                    Cell::Host => h,
                                })
                            })
                            .collect(),
                    )
                })
                .collect(),
        )
    }

    fn push_snapshot(&self, ctx: &Ctx, last: Option<(i64, i64, Cell)>, over: bool, winner: &str) {
        let next = if over {
            "none"
        } else if last.is_some_and(|l| l.2 == Cell::Guest) {
            "host"
        } else {
            "guest"
        };
        let mut snap = obj! {
            "board" => self.board_value(), "turn" => self.turn, "current" => next,
            "phase" => if over { "game_over" } else { "playing" }, "winner" => winner,
            "moves" => self.count(Cell::Guest) + self.count(Cell::Host),
        };
        if self.kind == Kind::Reversi {
            snap.insert("black", Value::from(self.count(Cell::Guest)));
            snap.insert("white", Value::from(self.count(Cell::Host)));
        }
        let summary = match (over, last) {
            (true, _) if winner == "none" => "Game over: draw".to_owned(),
            (true, _) => format!("Game over: {winner} wins"),
            (false, Some((r, c, who))) => format!("{} played ({r},{c})", who.player()),
            (false, None) => "Guest to move".to_owned(),
        };
        if let Some((r, c, who)) = last {
            snap.insert(
                "last_move",
                Value::Object(obj! { "row" => r, "col" => c, "player" => who.player() }),
            );
        }
        snap.insert(
            "last_event",
            last_event(summary, obj! { "game_over" => over, "winner" => winner }),
        );
        ctx.sink.snapshot(snap);
    }

    fn record(
        &self,
        ctx: &Ctx,
        turn: i64,
        (r, c): (i64, i64),
        who: Cell,
        over: bool,
        winner: &str,
    ) {
        ctx.sink.detail(obj! {
            "type" => "move", "turn" => turn, "row" => r, "col" => c, "player" => who.player(),
            "game_over" => over, "winner" => winner,
        });
        self.push_snapshot(ctx, Some((r, c, who)), over, winner);
    }

    fn error(&self, turn: Option<i64>, reason: &str) -> HookResult {
        let mut m = obj! { "action" => "error" };
        if let Some(t) = turn.filter(|t| *t >= 1) {
            m.insert("turn", Value::from(t));
        }
        m.insert("reason", Value::from(reason));
        HookResult::abort_with(m)
    }

    fn result_frame(
        &self,
        turn: i64,
        (r, c): (i64, i64),
        who: Cell,
        over: bool,
        winner: &str,
    ) -> Map {
        match self.kind {
            Kind::Connect4 => obj! {
                "action" => "round_result", "turn" => turn, "col" => c, "row" => r, "player" => who.player(),
                "game_over" => over, "winner" => winner,
            },
            _ => obj! {
                "action" => "round_result", "turn" => turn, "row" => r, "col" => c, "player" => who.player(),
                "game_over" => over, "winner" => winner,
            },
        }
    }

    /// The guest's frame for `turn`: a move, or a reversi pass.
    async fn guest_action(&mut self, ctx: &Ctx) -> Result<Map, HookError> {
        let turn = self.turn;
        match self.pick(ctx, Cell::Guest, turn).await? {
            None if self.kind == Kind::Reversi => {
                ctx.sink
                    .detail(obj! { "type" => "pass", "turn" => turn, "player" => "guest" });
                Ok(obj! { "action" => "pass", "turn" => turn })
            }
            None => Err(HookError::Invalid("no legal move left".into())),
            Some((r, c)) => {
                match self.kind {
                    Kind::Reversi => {
                        self.reversi_apply(r, c, Cell::Guest);
                    }
                    _ => self.set(r, c, Cell::Guest),
                }
                self.last_own = Some((r, c));
                self.record(ctx, turn, (r, c), Cell::Guest, false, "none");
                Ok(match self.kind {
                    Kind::Connect4 => obj! { "action" => "move", "turn" => turn, "col" => c },
                    _ => obj! { "action" => "move", "turn" => turn, "row" => r, "col" => c },
                })
            }
        }
    }

    async fn host_reply_reversi(
        &mut self,
        ctx: &Ctx,
        guest_turn: i64,
    ) -> Result<HookResult, HookError> {
        let hturn = guest_turn + 1;
        let (pos, flipped, passed) = match self.pick(ctx, Cell::Host, hturn).await? {
            Some((r, c)) => {
                let f = self.reversi_apply(r, c, Cell::Host);
                ((r, c), f, false)
            }
            None => ((0, 0), 0, true),
        };
        let over = self.reversi_over();
        let winner = if over { self.reversi_winner() } else { "none" };
        ctx.sink.detail(obj! {
            "type" => if passed { "pass" } else { "move" }, "turn" => hturn, "row" => pos.0, "col" => pos.1,
            "player" => "host", "flipped" => flipped, "game_over" => over, "winner" => winner,
        });
        self.turn = hturn + 1;
        self.push_snapshot(
            ctx,
            (!passed).then_some((pos.0, pos.1, Cell::Host)),
            over,
            winner,
        );
        let frame = obj! {
            "action" => "round_result", "turn" => hturn, "row" => pos.0, "col" => pos.1, "player" => "host",
            "flipped" => flipped, "passed" => passed, "game_over" => over, "winner" => winner,
            "black" => self.count(Cell::Guest), "white" => self.count(Cell::Host),
        };
        Ok(HookResult {
            response: Some(frame),
            completed: over,
            abort: false,
        })
    }
}

#[async_trait]
impl Hooks for BoardGame {
    fn decision_schema(&self) -> Option<Map> {
        let fields: Vec<Value> = match self.kind {
            Kind::Connect4 => vec![Value::from("col")],
            _ => vec![Value::from("row"), Value::from("col")],
        };
        Some(
            obj! { "match_key" => "turn", "value_fields" => fields, "board" => true, "rows" => self.rows, "cols" => self.cols },
        )
    }

    fn host_metadata(&self) -> HostMetadata {
        let (name, tags, opts) = match self.kind {
            Kind::Gomoku => (
                "Gomoku",
                "game,gomoku,board",
                obj! { "board_size" => self.rows },
            ),
            Kind::Connect4 => (
                "Connect Four",
                "game,connect4,board",
                obj! { "cols" => self.cols, "rows" => self.rows },
            ),
            Kind::Reversi => (
                "Reversi",
                "game,reversi,board",
                obj! { "board_size" => self.rows },
            ),
        };
        HostMetadata {
            display_name: name.into(),
            tags: tags.into(),
            invite_type: "supply".into(),
            default_options: opts,
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        let o = &ctx.options;
        match self.kind {
            Kind::Gomoku => {
                self.rows = opt_int(o, "board_size", 15).clamp(5, 19);
                self.cols = self.rows;
            }
            Kind::Reversi => {
                self.rows = opt_int(o, "board_size", 8).clamp(4, 8) / 2 * 2;
                self.cols = self.rows;
            }
            Kind::Connect4 => {
                self.cols = opt_int(o, "cols", 7).clamp(4, 10);
                self.rows = opt_int(o, "rows", 6).clamp(4, 10);
            }
        }
        self.reset();
        let mut snap = obj! { "board_size" => self.rows };
        if self.kind == Kind::Connect4 {
            snap = obj! { "cols" => self.cols, "rows" => self.rows };
        }
        ctx.sink.snapshot(snap);
        self.push_snapshot(ctx, None, false, "none");
        Ok(())
    }

    async fn host_handle_join(&mut self, ctx: &Ctx, join: &Map) -> Result<HookResult, HookError> {
        match self.kind {
            Kind::Connect4 => {
                if let Some(c) = join.get("cols").and_then(super::as_int).filter(|c| *c > 0) {
                    self.cols = c;
                }
                if let Some(r) = join.get("rows").and_then(super::as_int).filter(|r| *r > 0) {
                    self.rows = r;
                }
            }
            _ => {
                if let Some(n) = join
                    .get("board_size")
                    .and_then(super::as_int)
                    .filter(|n| *n > 0)
                {
                    self.rows = n;
                    self.cols = n;
                }
            }
        }
        self.reset();
        self.push_snapshot(ctx, None, false, "none");
        Ok(HookResult::send(match self.kind {
            Kind::Connect4 => {
                obj! { "action" => "ready", "cols" => self.cols, "rows" => self.rows, "first" => "guest" }
            }
            _ => obj! { "action" => "ready", "board_size" => self.rows, "first" => "guest" },
        }))
    }

    async fn host_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        let action = str_field(msg, "action");
        let turn = msg.get("turn").and_then(super::as_int);
        let playing = action == "move" || (self.kind == Kind::Reversi && action == "pass");
        if !playing || turn != Some(self.turn) {
            return Ok(self.error(turn, "not_your_turn"));
        }
        let gturn = self.turn;
        let col = int_field(msg, "col");
        let guest_cell = match self.kind {
            Kind::Gomoku => {
                let row = int_field(msg, "row");
                if !self.inside(row, col) {
                    return Ok(self.error(Some(gturn), "out_of_bounds"));
                }
                if self.at(row, col) != Cell::Empty {
                    return Ok(self.error(Some(gturn), "occupied"));
                }
                self.set(row, col, Cell::Guest);
                (row, col)
            }
            Kind::Connect4 => {
                if !(0..self.cols).contains(&col) {
                    return Ok(self.error(Some(gturn), "invalid_column"));
                }
                let Some(row) = self.drop_row(col) else {
                    return Ok(self.error(Some(gturn), "column_full"));
                };
                self.set(row, col, Cell::Guest);
                (row, col)
            }
            Kind::Reversi => {
                if action == "pass" {
                    if !self.reversi_moves(Cell::Guest).is_empty() {
                        return Ok(self.error(Some(gturn), "illegal_move"));
                    }
                    ctx.sink
                        .detail(obj! { "type" => "pass", "turn" => gturn, "player" => "guest" });
                    return self.host_reply_reversi(ctx, gturn).await;
                }
                let row = int_field(msg, "row");
                if self.flips(row, col, Cell::Guest).is_empty() {
                    return Ok(self.error(Some(gturn), "illegal_move"));
                }
                self.reversi_apply(row, col, Cell::Guest);
                self.record(ctx, gturn, (row, col), Cell::Guest, false, "none");
                return self.host_reply_reversi(ctx, gturn).await;
            }
        };
        if self.wins_at(guest_cell.0, guest_cell.1, Cell::Guest) {
            self.record(ctx, gturn, guest_cell, Cell::Guest, true, "guest");
            return Ok(HookResult::finish(self.result_frame(
                gturn,
                guest_cell,
                Cell::Guest,
                true,
                "guest",
            )));
        }
        self.record(ctx, gturn, guest_cell, Cell::Guest, false, "none");
        let hturn = gturn + 1;
        let Some(host_cell) = self.pick(ctx, Cell::Host, hturn).await? else {
            // The guest filled the board.
            return Ok(HookResult::finish(self.result_frame(
                gturn,
                guest_cell,
                Cell::Guest,
                true,
                "none",
            )));
        };
        self.set(host_cell.0, host_cell.1, Cell::Host);
        let (over, winner) = if self.wins_at(host_cell.0, host_cell.1, Cell::Host) {
            (true, "host")
        } else if self.full() {
            (true, "none")
        } else {
            (false, "none")
        };
        self.turn = hturn + 1;
        self.record(ctx, hturn, host_cell, Cell::Host, over, winner);
        let frame = self.result_frame(hturn, host_cell, Cell::Host, over, winner);
        Ok(HookResult {
            response: Some(frame),
            completed: over,
            abort: false,
        })
    }

    async fn guest_join_message(&mut self, _ctx: &Ctx) -> Result<Map, HookError> {
        Ok(match self.kind {
            Kind::Connect4 => obj! { "action" => "join", "cols" => self.cols, "rows" => self.rows },
            _ => obj! { "action" => "join", "board_size" => self.rows },
        })
    }

    async fn guest_handle_ready(&mut self, ctx: &Ctx, ready: &Map) -> Result<(), HookError> {
        match self.kind {
            Kind::Connect4 => {
                self.cols = int_field(ready, "cols");
                self.rows = int_field(ready, "rows");
            }
            _ => {
                self.rows = int_field(ready, "board_size");
                self.cols = self.rows;
            }
        }
        if !(1..=64).contains(&self.rows) || !(1..=64).contains(&self.cols) {
            return Err(HookError::Protocol(format!(
                "unusable board size {}x{}",
                self.rows, self.cols
            )));
        }
        self.reset();
        self.push_snapshot(ctx, None, false, "none");
        Ok(())
    }

    async fn guest_first_action(&mut self, ctx: &Ctx) -> Result<Option<Map>, HookError> {
        self.guest_action(ctx).await.map(Some)
    }

    async fn guest_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        match str_field(msg, "action") {
            "round_result" => {
                let turn = int_field(msg, "turn");
                let (r, c) = (int_field(msg, "row"), int_field(msg, "col"));
                let over = msg.get("game_over").is_some_and(Value::truthy);
                let winner = str_field(msg, "winner").to_owned();
                let who = if str_field(msg, "player") == "guest" {
                    Cell::Guest
                } else {
                    Cell::Host
                };
                if who == Cell::Guest {
                    // The host echoes our own final move.
                    if self.last_own != Some((r, c)) || !over {
                        return Err(HookError::Protocol(format!(
                            "the host reports a guest move at ({r},{c}) we did not make"
                        )));
                    }
                } else if self.kind == Kind::Reversi {
                    if !msg.get("passed").is_some_and(Value::truthy) {
                        if self.flips(r, c, Cell::Host).is_empty() {
                            return Err(HookError::Protocol(format!(
                                "the host's move ({r},{c}) is illegal"
                            )));
                        }
                        self.reversi_apply(r, c, Cell::Host);
                    } else if !self.reversi_moves(Cell::Host).is_empty() {
                        return Err(HookError::Protocol(
                            "the host passed while it had a legal move".into(),
                        ));
                    }
                } else {
                    let lands = match self.kind {
                        Kind::Connect4 => self.drop_row(c) == Some(r),
                        _ => self.inside(r, c) && self.at(r, c) == Cell::Empty,
                    };
                    if !lands {
                        return Err(HookError::Protocol(format!(
                            "the host's move ({r},{c}) is not a legal cell"
                        )));
                    }
                    self.set(r, c, Cell::Host);
                }
                // Check the host's adjudication against our own board.
                let truth = match self.kind {
                    Kind::Reversi if self.reversi_over() => (true, self.reversi_winner()),
                    Kind::Reversi => (false, "none"),
                    _ if self.wins_at(r, c, who) => (true, who.player()),
                    _ if self.full() => (true, "none"),
                    _ => (false, "none"),
                };
                if truth != (over, winner.as_str()) {
                    return Err(HookError::Protocol(format!(
                        "the host claims game_over={over} winner={winner}, the board says game_over={} winner={}",
                        truth.0, truth.1
                    )));
                }
                self.turn = turn + 1;
                if who == Cell::Host {
                    self.record(ctx, turn, (r, c), Cell::Host, over, &winner);
                } else {
                    self.push_snapshot(ctx, Some((r, c, Cell::Guest)), over, &winner);
                }
                if over {
                    return Ok(HookResult::done());
                }
                Ok(HookResult::send(self.guest_action(ctx).await?))
            }
            "end" => Ok(HookResult::done()),
            _ => Ok(self.error(None, "not_your_turn")),
        }
    }

    fn display(&self, msg: &Map, _dir: Dir) -> Option<String> {
        match str_field(msg, "action") {
            "round_result" => {
                let mut s = if msg.get("passed").is_some_and(Value::truthy) {
                    format!("{} passes", str_field(msg, "player"))
                } else {
                    format!(
                        "{} -> ({},{})",
                        str_field(msg, "player"),
                        int_field(msg, "row"),
                        int_field(msg, "col")
                    )
                };
                if msg.get("game_over").is_some_and(Value::truthy) {
                    s.push_str(&format!(
                        "; game over, winner: {}",
                        str_field(msg, "winner")
                    ));
                }
                Some(s)
            }
            "move" => Some(match self.kind {
                Kind::Connect4 => format!("guest drops in column {}", int_field(msg, "col")),
                _ => format!(
                    "guest -> ({},{})",
                    int_field(msg, "row"),
                    int_field(msg, "col")
                ),
            }),
            "pass" => Some("guest passes".into()),
            "error" => Some(format!("illegal: {}", str_field(msg, "reason"))),
            _ => None,
        }
    }
}
