//! The rules on the grid: cells, lines, connect4's drop, reversi's flips,
//! wins, and the automatic player (win now, block, then the best-scoring
//! cell; `{"mode":"random"}` any legal move).

use super::{BoardGame, Kind};
use crate::engine::{ControlMode, Ctx, HookError, Window};
use crate::json::Value;
use crate::obj;
use crate::protocols::{as_int, str_field};

/// A cell of the grid: empty or one side's stone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Empty,
    Guest,
    Host,
}

impl Cell {
    /// The other side's stone (empty stays empty).
    pub fn other(self) -> Cell {
        match self {
            Cell::Guest => Cell::Host,
            Cell::Host => Cell::Guest,
            Cell::Empty => Cell::Empty,
        }
    }

    pub fn player(self) -> &'static str {
        if self == Cell::Guest { "guest" } else { "host" }
    }
}

const LINES: [(i64, i64); 4] = [(0, 1), (1, 0), (1, 1), (1, -1)];
const AROUND: [(i64, i64); 8] = [
    (-1, -1),
    (-1, 0),
    (-1, 1),
    (0, -1),
    (0, 1),
    (1, -1),
    (1, 0),
    (1, 1),
];

/// The grid read back from a game's frames (`session::replay`), by the
/// same rules the game plays by.
impl BoardGame {
    /// A `rows`×`cols` board of `kind` in its opening position.
    pub fn sized(kind: Kind, rows: i64, cols: i64) -> BoardGame {
        let mut b = BoardGame::new(kind);
        b.rows = rows;
        b.cols = cols;
        b.reset();
        b
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn rows(&self) -> i64 {
        self.rows
    }

    pub fn cols(&self) -> i64 {
        self.cols
    }

    /// The cell at (r, c); empty outside the board.
    pub fn cell(&self, r: i64, c: i64) -> Cell {
        self.at(r, c)
    }

    /// Places `v`'s stone at (r, c) as a move does (reversi flips the lines
    /// it closes); false when the cell is taken or outside the board.
    pub fn place(&mut self, r: i64, c: i64, v: Cell) -> bool {
        if !self.inside(r, c) || self.at(r, c) != Cell::Empty {
            return false;
        }
        if self.kind == Kind::Reversi {
            self.reversi_apply(r, c, v);
        } else {
            self.set(r, c, v);
        }
        true
    }

    /// How many of `v`'s stones are on the board.
    pub fn stones(&self, v: Cell) -> i64 {
        self.count(v)
    }

    /// The board as the snapshot's `board` shows it.
    pub fn grid(&self) -> Value {
        self.board_value()
    }
}

impl BoardGame {
    pub(super) fn inside(&self, r: i64, c: i64) -> bool {
        (0..self.rows).contains(&r) && (0..self.cols).contains(&c)
    }

    pub(super) fn at(&self, r: i64, c: i64) -> Cell {
        if self.inside(r, c) {
            self.board[r as usize][c as usize]
        } else {
            Cell::Empty
        }
    }

    pub(super) fn set(&mut self, r: i64, c: i64, v: Cell) {
        if self.inside(r, c) {
            self.board[r as usize][c as usize] = v;
        }
    }

    pub(super) fn full(&self) -> bool {
        self.board
            .iter()
            .all(|row| row.iter().all(|c| *c != Cell::Empty))
    }

    pub(super) fn count(&self, v: Cell) -> i64 {
        self.board
            .iter()
            .map(|row| row.iter().filter(|c| **c == v).count() as i64)
            .sum()
    }

    /// Stones in a row through (r, c) along (dr, dc), and how many of the
    /// two ends are open.
    fn run(&self, r: i64, c: i64, (dr, dc): (i64, i64), v: Cell) -> (i64, i64) {
        let mut len = 1;
        let mut open = 0;
        for sign in [1, -1] {
            let (mut y, mut x) = (r + sign * dr, c + sign * dc);
            while self.inside(y, x) && self.at(y, x) == v {
                len += 1;
                y += sign * dr;
                x += sign * dc;
            }
            if self.inside(y, x) && self.at(y, x) == Cell::Empty {
                open += 1;
            }
        }
        (len, open)
    }

    pub(super) fn wins_at(&self, r: i64, c: i64, v: Cell) -> bool {
        LINES
            .iter()
            .any(|d| self.run(r, c, *d, v).0 >= self.win_len())
    }

    /// Connect 4: the row a stone dropped in `col` lands on.
    pub fn drop_row(&self, col: i64) -> Option<i64> {
        if !(0..self.cols).contains(&col) {
            return None;
        }
        (0..self.rows)
            .rev()
            .find(|r| self.at(*r, col) == Cell::Empty)
    }

    /// Reversi: the stones a move at (r, c) would flip.
    pub(super) fn flips(&self, r: i64, c: i64, v: Cell) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        if !self.inside(r, c) || self.at(r, c) != Cell::Empty {
            return out;
        }
        for (dr, dc) in AROUND {
            let mut line = Vec::new();
            let (mut y, mut x) = (r + dr, c + dc);
            while self.inside(y, x) && self.at(y, x) == v.other() {
                line.push((y, x));
                y += dr;
                x += dc;
            }
            if !line.is_empty() && self.inside(y, x) && self.at(y, x) == v {
                out.extend(line);
            }
        }
        out
    }

    pub(super) fn reversi_moves(&self, v: Cell) -> Vec<(i64, i64)> {
        let mut moves = Vec::new();
        for r in 0..self.rows {
            for c in 0..self.cols {
                if !self.flips(r, c, v).is_empty() {
                    moves.push((r, c));
                }
            }
        }
        moves
    }

    pub(super) fn reversi_apply(&mut self, r: i64, c: i64, v: Cell) -> i64 {
        let flipped = self.flips(r, c, v);
        for (y, x) in &flipped {
            self.set(*y, *x, v);
        }
        self.set(r, c, v);
        flipped.len() as i64
    }

    pub(super) fn reversi_over(&self) -> bool {
        self.full()
            || (self.reversi_moves(Cell::Guest).is_empty()
                && self.reversi_moves(Cell::Host).is_empty())
    }

    pub(super) fn reversi_winner(&self) -> &'static str {
        match self.count(Cell::Guest).cmp(&self.count(Cell::Host)) {
            std::cmp::Ordering::Greater => "guest",
            std::cmp::Ordering::Less => "host",
            std::cmp::Ordering::Equal => "none",
        }
    }

    /// Legal cells for `v` (a connect-4 cell is its landing cell).
    fn legal_cells(&self, v: Cell) -> Vec<(i64, i64)> {
        match self.kind {
            Kind::Reversi => self.reversi_moves(v),
            Kind::Connect4 => (0..self.cols)
                .filter_map(|c| self.drop_row(c).map(|r| (r, c)))
                .collect(),
            Kind::Gomoku => {
                let mut cells = Vec::new();
                let any = self.board.iter().flatten().any(|c| *c != Cell::Empty);
                for r in 0..self.rows {
                    for c in 0..self.cols {
                        if self.at(r, c) != Cell::Empty {
                            continue;
                        }
                        // Only cells near play, which is where moves matter.
                        let near = !any
                            || (-2..=2).any(|dr| {
                                (-2..=2).any(|dc| self.at(r + dr, c + dc) != Cell::Empty)
                            });
                        if near {
                            cells.push((r, c));
                        }
                    }
                }
                if !any {
                    return vec![(self.rows / 2, self.cols / 2)];
                }
                cells
            }
        }
    }

    /// How good a line of `len` with `open` free ends is.
    fn line_value(len: i64, open: i64, win: i64) -> i64 {
        if len >= win {
            return 1_000_000;
        }
        let base = match win - len {
            1 => 20_000,
            2 => 1_500,
            3 => 120,
            _ => 10,
        };
        match open {
            2 => base * 2,
            1 => base / 2,
            _ => 0,
        }
    }

    fn score(&mut self, r: i64, c: i64, v: Cell) -> i64 {
        match self.kind {
            Kind::Reversi => {
                let n = self.rows - 1;
                let corner = (r == 0 || r == n) && (c == 0 || c == n);
                let near_corner = |y: i64, x: i64| (y <= 1 || y >= n - 1) && (x <= 1 || x >= n - 1);
                let mut s = self.flips(r, c, v).len() as i64;
                if corner {
                    s += 100;
                } else if near_corner(r, c) {
                    s -= 40;
                } else if r == 0 || r == n || c == 0 || c == n {
                    s += 10;
                }
                s
            }
            _ => {
                let win = self.win_len();
                let mut s = 0;
                for side in [v, v.other()] {
                    self.set(r, c, side);
                    let value: i64 = LINES
                        .iter()
                        .map(|d| {
                            let (len, open) = self.run(r, c, *d, side);
                            Self::line_value(len, open, win)
                        })
                        .sum();
                    self.set(r, c, Cell::Empty);
                    // Attack counts a little more than defence, a win most.
                    s += if side == v { value + value / 10 } else { value };
                }
                if self.kind == Kind::Connect4 {
                    // Don't hand the opponent a win on the cell above.
                    self.set(r, c, v);
                    if self.inside(r - 1, c)
                        && {
                            self.set(r - 1, c, v.other());
                            let w = self.wins_at(r - 1, c, v.other());
                            self.set(r - 1, c, Cell::Empty);
                            w
                        }
                        && !self.wins_at(r, c, v)
                    {
                        s -= 500_000;
                    }
                    self.set(r, c, Cell::Empty);
                    s += 3 * (self.cols / 2 - (c - self.cols / 2).abs());
                }
                s
            }
        }
    }

    fn pick_auto(&mut self, ctx: &Ctx, v: Cell) -> Option<(i64, i64)> {
        let cells = self.legal_cells(v);
        if cells.is_empty() {
            return None;
        }
        if str_field(&ctx.strategy.get(), "mode") == "random" {
            return Some(cells[ctx.random_below(cells.len())]);
        }
        let scored: Vec<((i64, i64), i64)> = cells
            .iter()
            .map(|&(r, c)| ((r, c), self.score(r, c, v)))
            .collect();
        let best = scored.iter().map(|(_, s)| *s).max().unwrap_or(0);
        let top: Vec<(i64, i64)> = scored
            .iter()
            .filter(|(_, s)| *s == best)
            .map(|(p, _)| *p)
            .collect();
        Some(top[ctx.random_below(top.len())])
    }

    /// This side's next move for `turn`: automatic, or a decision.
    pub(super) async fn pick(
        &mut self,
        ctx: &Ctx,
        v: Cell,
        turn: i64,
    ) -> Result<Option<(i64, i64)>, HookError> {
        let legal = self.legal_cells(v);
        let auto = if ctx.control_mode == ControlMode::Human {
            legal.first().copied()
        } else {
            self.pick_auto(ctx, v)
        };
        let Some(auto) = auto else { return Ok(None) };
        let full_legal: Vec<(i64, i64)> = match self.kind {
            Kind::Gomoku => (0..self.rows)
                .flat_map(|r| (0..self.cols).map(move |c| (r, c)))
                .filter(|&(r, c)| self.at(r, c) == Cell::Empty)
                .collect(),
            _ => legal,
        };
        let kind = self.kind;
        let drop_rows: Vec<Option<i64>> = (0..self.cols).map(|c| self.drop_row(c)).collect();
        let auto_body = match kind {
            Kind::Connect4 => obj! { "col" => auto.1 },
            _ => obj! { "row" => auto.0, "col" => auto.1 },
        };
        let window = Window {
            match_key: "turn",
            match_value: Value::from(turn),
            auto: auto_body,
            value_field: "",
            policy: None,
        };
        let chosen = ctx
            .choose(window, |d| {
                let col = d.get("col").and_then(as_int);
                let cell = match kind {
                    Kind::Connect4 => col
                        .and_then(|c| drop_rows.get(c as usize).copied().flatten().map(|r| (r, c))),
                    _ => d.get("row").and_then(as_int).zip(col),
                };
                match cell {
                    Some(p) if full_legal.contains(&p) => {
                        Ok(Value::Object(obj! { "row" => p.0, "col" => p.1 }))
                    }
                    Some(_) => {
                        Err("that cell is occupied, outside the board or not a legal move".into())
                    }
                    None => Err("row and col must be integers".into()),
                }
            })
            .await?;
        let r = chosen.get("row").and_then(as_int).unwrap_or(auto.0);
        let c = chosen.get("col").and_then(as_int).unwrap_or(auto.1);
        Ok(Some((r, c)))
    }
}
