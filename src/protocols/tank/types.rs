//! Sides, directions and unit ids.

use std::cmp::Ordering;

/// A side of the match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Team {
    Host,
    Guest,
}

impl Team {
    pub fn as_str(self) -> &'static str {
        match self {
            Team::Host => "host",
            Team::Guest => "guest",
        }
    }

    /// The letter its unit ids start with.
    pub fn prefix(self) -> char {
        match self {
            Team::Host => 'h',
            Team::Guest => 'g',
        }
    }

    pub fn other(self) -> Team {
        match self {
            Team::Host => Team::Guest,
            Team::Guest => Team::Host,
        }
    }

    pub fn parse(s: &str) -> Option<Team> {
        match s {
            "host" => Some(Team::Host),
            "guest" => Some(Team::Guest),
            _ => None,
        }
    }
}

/// A direction to move, aim or face (`None` only moves and aims).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    Up,
    Down,
    Left,
    Right,
    None,
}

impl Dir {
    pub const ALL: [Dir; 5] = [Dir::Up, Dir::Down, Dir::Left, Dir::Right, Dir::None];

    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
            Dir::Left => "left",
            Dir::Right => "right",
            Dir::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Dir> {
        Dir::ALL.into_iter().find(|d| d.as_str() == s)
    }

    /// The unit step `(dx, dy)`; y grows downwards.
    pub fn vector(self) -> (i64, i64) {
        match self {
            Dir::Up => (0, -1),
            Dir::Down => (0, 1),
            Dir::Left => (-1, 0),
            Dir::Right => (1, 0),
            Dir::None => (0, 0),
        }
    }
}

/// A tank's id: its side and its number (`h0`, `g3`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnitId {
    pub team: Team,
    pub index: u16,
}

impl UnitId {
    /// `h<n>` or `g<n>`, n in decimal without leading zeros, below 1000.
    pub fn parse(s: &str) -> Option<UnitId> {
        let team = match s.as_bytes().first()? {
            b'h' => Team::Host,
            b'g' => Team::Guest,
            _ => return None,
        };
        let digits = &s[1..];
        if digits.is_empty()
            || digits.len() > 3
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || (digits.len() > 1 && digits.starts_with('0'))
        {
            return None;
        }
        Some(UnitId {
            team,
            index: digits.parse().ok()?,
        })
    }

    /// The order of the ids' texts (`g…` before `h…`, `h10` before `h2`),
    /// which is the order the rules take tanks in.
    pub fn text_cmp(&self, other: &UnitId) -> Ordering {
        let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
        let (la, lb) = (self.write(&mut a), other.write(&mut b));
        a[..la].cmp(&b[..lb])
    }

    fn write(&self, buf: &mut [u8; 8]) -> usize {
        buf[0] = self.team.prefix() as u8;
        let s = self.index.to_string();
        buf[1..1 + s.len()].copy_from_slice(s.as_bytes());
        1 + s.len()
    }
}

impl std::fmt::Display for UnitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.team.prefix(), self.index)
    }
}
