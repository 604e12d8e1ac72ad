//! The battlefield's tile map: the default 31×31 layout, the parser for a
//! `map_text` option, and where the two teams spawn.
//!
//! Tiles are single ASCII bytes, as the reference writes them: `#` steel,
//! `B` brick, `W` water, `S` bush, `P` pickup (a floor cell once the match
//! starts), `.` floor. Steel, brick and water stop tanks; steel and brick
//! stop shells (a brick breaks).

use super::TankError;

/// One cell is this many fixed-point units wide.
pub const SCALE: i64 = 1000;

pub const STEEL: u8 = b'#';
pub const BRICK: u8 = b'B';
pub const WATER: u8 = b'W';
pub const BUSH: u8 = b'S';
pub const PICKUP: u8 = b'P';
pub const FLOOR: u8 = b'.';

/// The default battlefield's side.
pub const DEFAULT_SIDE: usize = 31;

/// A cell as (row, column).
pub type Cell = (usize, usize);

/// A rectangular tile map, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    pub rows: usize,
    pub cols: usize,
    /// `rows * cols` tile bytes, row after row.
    pub cells: Vec<u8>,
}

impl Grid {
    /// The tile at a cell (steel outside the map).
    pub fn tile(&self, row: i64, col: i64) -> u8 {
        if row < 0 || col < 0 || row >= self.rows as i64 || col >= self.cols as i64 {
            return STEEL;
        }
        self.cells
            .get(row as usize * self.cols + col as usize)
            .copied()
            .unwrap_or(STEEL)
    }

    /// The tile under a fixed-point point (floor division, so a negative
    /// coordinate is outside).
    pub fn tile_at(&self, x: i64, y: i64) -> u8 {
        self.tile(y.div_euclid(SCALE), x.div_euclid(SCALE))
    }

    pub(crate) fn set(&mut self, row: usize, col: usize, tile: u8) {
        if let Some(c) = self.cells.get_mut(row * self.cols + col) {
            *c = tile;
        }
    }

    /// The map as text, one line a row, `\n` between rows.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(self.rows * (self.cols + 1));
        for r in 0..self.rows {
            if r > 0 {
                s.push('\n');
            }
            let row = &self.cells[r * self.cols..(r + 1) * self.cols];
            s.extend(row.iter().map(|&b| b as char));
        }
        s
    }
}

/// Whether a tank may not stand on this tile.
pub fn blocks_move(tile: u8) -> bool {
    matches!(tile, STEEL | BRICK | WATER)
}

/// The default battlefield: steel border, a river across the middle of the
/// centre row with three bridge gaps and open flanks, and bricks, bushes
/// and pickups laid out on the upper half and mirrored through the centre,
/// so that cell (r, c) always equals cell (n-1-r, n-1-c).
///
/// As in the reference, the cells its comments call steel pillars and
/// strongpoints are written with the bush letter `S`.
pub fn default_grid() -> Grid {
    let n = DEFAULT_SIDE;
    let mid = n / 2;
    let mut g = Grid {
        rows: n,
        cols: n,
        cells: vec![FLOOR; n * n],
    };
    for i in 0..n {
        g.set(0, i, STEEL);
        g.set(n - 1, i, STEEL);
        g.set(i, 0, STEEL);
        g.set(i, n - 1, STEEL);
    }
    let mirrored = |g: &mut Grid, r: usize, c: usize, t: u8| {
        g.set(r, c, t);
        g.set(n - 1 - r, n - 1 - c, t);
    };
    for c in 8..23 {
        if ![11, 15, 19].contains(&c) {
            g.set(mid, c, WATER);
        }
    }
    for c in [mid - 1, mid + 1] {
        mirrored(&mut g, mid - 1, c, BUSH);
    }
    const BRICKS: [(usize, usize); 18] = [
        (3, 3),
        (3, 4),
        (4, 3),
        (3, 11),
        (3, 12),
        (4, 12),
        (3, 18),
        (3, 19),
        (4, 19),
        (3, 26),
        (3, 27),
        (4, 27),
        (8, 7),
        (8, 8),
        (9, 7),
        (8, 22),
        (8, 23),
        (9, 23),
    ];
    for (r, c) in BRICKS {
        mirrored(&mut g, r, c, BRICK);
    }
    for (r, c) in [(6, mid), (10, 6), (10, n - 1 - 6)] {
        mirrored(&mut g, r, c, BUSH);
    }
    for (r, c) in [(6, 4), (6, 5), (5, 4), (11, 10), (11, 11)] {
        mirrored(&mut g, r, c, BUSH);
    }
    for (r, c) in [(2, mid), (mid - 2, mid), (5, 9)] {
        mirrored(&mut g, r, c, PICKUP);
    }
    g
}

/// Python's `str.splitlines` boundaries.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Python's `str.isspace`.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Parse a `map_text` option the way the reference does: blank lines are
/// dropped, 5 to 128 rows of 5 to 128 cells, every row as wide as the first,
/// only the six tile letters, and a steel border all round.
pub fn parse_map(text: &str) -> Result<Grid, TankError> {
    let mut rows: Vec<&str> = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(is_line_break).unwrap_or(rest.len());
        let line = &rest[..end];
        let mut next = end;
        if let Some(c) = rest[end..].chars().next() {
            next += c.len_utf8();
            if c == '\r' && rest[next..].starts_with('\n') {
                next += 1;
            }
        }
        if !line.chars().all(is_py_space) {
            rows.push(line);
        }
        rest = &rest[next..];
    }
    if rows.len() < 5 || rows.len() > 128 {
        return Err(TankError::new(
            "map must contain between 5 and 128 non-empty rows",
        ));
    }
    let width = rows[0].chars().count();
    if !(5..=128).contains(&width) {
        return Err(TankError::new("map width must be between 5 and 128 cells"));
    }
    let mut cells = Vec::with_capacity(rows.len() * width);
    for (i, row) in rows.iter().enumerate() {
        let len = row.chars().count();
        if len != width {
            return Err(TankError::new(format!(
                "map row {i} is {len} cells wide, the first is {width}"
            )));
        }
        if let Some(bad) = row
            .chars()
            .find(|c| !matches!(c, '#' | 'B' | 'W' | 'S' | 'P' | '.'))
        {
            return Err(TankError::new(format!(
                "map row {i} has a tile the rules do not know: {bad:?}"
            )));
        }
        cells.extend_from_slice(row.as_bytes());
    }
    let g = Grid {
        rows: rows.len(),
        cols: width,
        cells,
    };
    let last = g.rows - 1;
    if (0..g.cols).any(|c| g.tile(0, c as i64) != STEEL || g.tile(last as i64, c as i64) != STEEL) {
        return Err(TankError::new(
            "the map's top and bottom rows must be steel (#)",
        ));
    }
    if (0..g.rows)
        .any(|r| g.tile(r as i64, 0) != STEEL || g.tile(r as i64, g.cols as i64 - 1) != STEEL)
    {
        return Err(TankError::new(
            "the map's left and right columns must be steel (#)",
        ));
    }
    Ok(g)
}

/// The spawn cells `(host, guest)`, each `team_size` long: the guest takes
/// the first open interior cells in reading order, the host the last ones
/// (read backwards), never sharing one.
pub fn spawn_cells(g: &Grid, team_size: usize) -> Result<(Vec<Cell>, Vec<Cell>), TankError> {
    let mut open = Vec::new();
    for r in 1..g.rows.saturating_sub(1) {
        for c in 1..g.cols.saturating_sub(1) {
            if matches!(g.tile(r as i64, c as i64), FLOOR | BUSH | PICKUP) {
                open.push((r, c));
            }
        }
    }
    if open.len() < team_size * 2 {
        return Err(TankError::new(format!(
            "the map has {} cells to spawn on and {} tanks need one each",
            open.len(),
            team_size * 2
        )));
    }
    let guest: Vec<_> = open[..team_size].to_vec();
    // The two ends never meet: there are at least 2 * team_size cells.
    let host: Vec<_> = open.iter().rev().take(team_size).copied().collect();
    Ok((host, guest))
}

/// The centre of a cell in fixed-point `(x, y)`.
pub fn cell_center(row: usize, col: usize) -> (i64, i64) {
    (
        col as i64 * SCALE + SCALE / 2,
        row as i64 * SCALE + SCALE / 2,
    )
}
