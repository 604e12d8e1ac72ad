//! The tile set of classical-mahjong-v1 and what a hand of it makes.
//!
//! 34 faces in the catalog's order: characters (`1m`–`9m`), dots
//! (`1p`–`9p`), bamboo (`1s`–`9s`), then the winds east, south, west,
//! north and the dragons red, green, white. A hand is analysed as counts
//! per face (`[u8; 34]`, indexed in that order).
//!
//! A win is one of three shapes over the concealed tiles (the declared
//! melds count as sets): four sets and a pair (standard), seven pairs (a
//! face held four times is two pairs) or thirteen orphans, the last two
//! only with no declared meld. Scoring is the protocol's small additive
//! list of patterns. The shanten (how many tiles away from ready a hand
//! is; -1 is a complete hand) serves the bot.

use crate::json::{Map, Value};
use crate::obj;

/// Faces in the catalog.
pub const FACES: usize = 34;

/// Per-face counts of a hand.
pub type Counts = [u8; FACES];

const SUITS: [(&str, char); 3] = [("characters", 'm'), ("dots", 'p'), ("bamboo", 's')];
const HONORS: [(&str, &str); 7] = [
    ("east", "wind"),
    ("south", "wind"),
    ("west", "wind"),
    ("north", "wind"),
    ("red", "dragon"),
    ("green", "dragon"),
    ("white", "dragon"),
];

/// The 34 faces of the catalog, in the reference's order (each dealt in
/// four copies).
pub fn faces() -> Vec<Map> {
    let mut out = Vec::with_capacity(FACES);
    for (suit, letter) in SUITS {
        for rank in 1..=9 {
            out.push(obj! {
                "code" => format!("{rank}{letter}"), "suit" => suit, "rank" => rank,
                "label" => format!("{rank} {suit}"), "kind" => "numbered",
            });
        }
    }
    for (code, suit) in HONORS {
        let mut label = code.to_owned();
        label[..1].make_ascii_uppercase();
        out.push(obj! {
            "code" => code, "suit" => suit, "rank" => 0, "label" => label, "kind" => "honor",
        });
    }
    out
}

/// The index of a face code (`None`: no such face).
pub fn index_of(code: &str) -> Option<usize> {
    let b = code.as_bytes();
    if let [r @ b'1'..=b'9', s] = b {
        let suit = SUITS.iter().position(|(_, l)| *l as u8 == *s)?;
        return Some(suit * 9 + usize::from(r - b'1'));
    }
    HONORS.iter().position(|(c, _)| *c == code).map(|i| 27 + i)
}

/// The code of a face index.
pub fn code_of(index: usize) -> String {
    match index {
        0..27 => format!("{}{}", index % 9 + 1, SUITS[index / 9].1),
        27..FACES => HONORS[index - 27].0.to_owned(),
        _ => String::new(),
    }
}

/// Is this face a numbered tile (and its rank 1–9)?
fn rank_of(index: usize) -> Option<usize> {
    (index < 27).then_some(index % 9 + 1)
}

fn is_terminal_or_honor(index: usize) -> bool {
    rank_of(index).is_none_or(|r| r == 1 || r == 9)
}

/// The face index of a tile object (its `code`).
pub fn tile_index(tile: &Map) -> Option<usize> {
    index_of(tile.get_str("code")?)
}

/// Counts of the tiles' faces; `None` when a tile has no known face.
pub fn counts_of(tiles: &[Map]) -> Option<Counts> {
    let mut c = [0u8; FACES];
    for t in tiles {
        let i = tile_index(t)?;
        c[i] = c[i].saturating_add(1);
    }
    Some(c)
}

/// The winning shape of the concealed tiles with `melds` declared melds:
/// `standard`, `seven_pairs`, `thirteen_orphans`, or `None`.
pub fn win_kind(c: &Counts, melds: usize) -> Option<&'static str> {
    if melds > 4 {
        return None;
    }
    let total: usize = c.iter().map(|n| usize::from(*n)).sum();
    if total != 3 * (4 - melds) + 2 || c.iter().any(|n| *n > 4) {
        return None;
    }
    if melds == 0 && thirteen_orphans(c) {
        return Some("thirteen_orphans");
    }
    if melds == 0 && c.iter().all(|n| n % 2 == 0) {
        return Some("seven_pairs");
    }
    let mut work = *c;
    for i in 0..FACES {
        if work[i] >= 2 {
            work[i] -= 2;
            let ok = all_sets(&mut work, 0);
            work[i] += 2;
            if ok {
                return Some("standard");
            }
        }
    }
    None
}

fn thirteen_orphans(c: &Counts) -> bool {
    (0..FACES).all(|i| {
        if is_terminal_or_honor(i) {
            c[i] >= 1
        } else {
            c[i] == 0
        }
    }) && (0..FACES).any(|i| c[i] == 2)
}

/// Can every tile from `from` on be split into pungs and chows?
fn all_sets(c: &mut Counts, from: usize) -> bool {
    let Some(i) = (from..FACES).find(|&i| c[i] > 0) else {
        return true;
    };
    if c[i] >= 3 {
        c[i] -= 3;
        let ok = all_sets(c, i);
        c[i] += 3;
        if ok {
            return true;
        }
    }
    if rank_of(i).is_some_and(|r| r <= 7) && c[i + 1] > 0 && c[i + 2] > 0 {
        for n in &mut c[i..i + 3] {
            *n -= 1;
        }
        let ok = all_sets(c, i);
        for n in &mut c[i..i + 3] {
            *n += 1;
        }
        return ok;
    }
    false
}

/// A scoring pattern: its code and points.
pub type Pattern = (&'static str, i64);

/// The protocol's patterns of a win over all the winner's tiles (concealed
/// and melded), in the reference's order.
pub fn patterns(
    all: &Counts,
    win_kind: &str,
    meld_kinds: &[String],
    self_draw: bool,
    concealed: bool,
) -> Vec<Pattern> {
    let mut out: Vec<Pattern> = vec![("winning_hand", 1)];
    if self_draw {
        out.push(("self_draw", 1));
    }
    if concealed {
        out.push(("concealed_hand", 1));
    }
    match win_kind {
        "seven_pairs" => out.push(("seven_pairs", 4)),
        "thirteen_orphans" => out.push(("thirteen_orphans", 13)),
        _ => {}
    }
    if win_kind == "standard"
        && meld_kinds.len() == 4
        && meld_kinds
            .iter()
            .all(|k| matches!(k.as_str(), "pung" | "kong" | "concealed_kong"))
    {
        out.push(("all_pungs", 3));
    }
    let suits = (0..3)
        .filter(|s| all[s * 9..s * 9 + 9].iter().any(|n| *n > 0))
        .count();
    let honors = all[27..].iter().any(|n| *n > 0);
    if suits == 1 {
        out.push(if honors {
            ("mixed_one_suit", 3)
        } else {
            ("pure_one_suit", 6)
        });
    }
    let any = all.iter().any(|n| *n > 0);
    if any && (0..FACES).all(|i| all[i] == 0 || !is_terminal_or_honor(i)) {
        out.push(("all_simples", 1));
    }
    out
}

/// The pairs of faces in `hand` that make a chow with the numbered
/// discard `d`, lowest sequence first.
pub fn chow_pairs(hand: &Counts, d: usize) -> Vec<[usize; 2]> {
    let Some(rank) = rank_of(d) else {
        return Vec::new();
    };
    let base = d - (rank - 1);
    let mut out = Vec::new();
    for start in rank.saturating_sub(2).max(1)..=rank.min(7) {
        let need: Vec<usize> = (start..start + 3)
            .map(|r| base + r - 1)
            .filter(|&i| i != d)
            .collect();
        if let [a, b] = need[..]
            && hand[a] > 0
            && hand[b] > 0
        {
            out.push([a, b]);
        }
    }
    out
}

/// The shanten of concealed tiles with `melds` declared melds: -1 for a
/// complete hand, 0 for one tile from it, and so on (the best of the
/// standard shape, and with no meld, seven pairs and thirteen orphans).
pub fn shanten(c: &Counts, melds: usize) -> i32 {
    let mut best = standard_shanten(c, melds);
    if melds == 0 {
        let pairs: i32 = c.iter().map(|n| i32::from(n / 2)).sum();
        best = best.min(6 - pairs.min(7));
        let kinds = (0..FACES)
            .filter(|&i| is_terminal_or_honor(i) && c[i] > 0)
            .count() as i32;
        let pair = (0..FACES).any(|i| is_terminal_or_honor(i) && c[i] >= 2);
        best = best.min(13 - kinds - i32::from(pair));
    }
    best
}

fn standard_shanten(c: &Counts, melds: usize) -> i32 {
    let melds = melds.min(4) as i32;
    let mut work = *c;
    let mut best = Search {
        best: 8,
        melds,
        pair: false,
    };
    best.run(&mut work, 0, 0, 0);
    for i in 0..FACES {
        if work[i] >= 2 {
            work[i] -= 2;
            best.pair = true;
            best.run(&mut work, 0, 0, 0);
            best.pair = false;
            work[i] += 2;
        }
    }
    best.best
}

/// A depth-first split of a hand into sets, partial sets and leftovers.
struct Search {
    best: i32,
    melds: i32,
    pair: bool,
}

impl Search {
    fn score(&self, sets: i32, partials: i32) -> i32 {
        let sets = sets + self.melds;
        let partials = partials.min(4 - sets).max(0);
        8 - 2 * sets - partials - i32::from(self.pair)
    }

    fn run(&mut self, c: &mut Counts, from: usize, sets: i32, partials: i32) {
        let Some(i) = (from..FACES).find(|&i| c[i] > 0) else {
            let s = self.score(sets, partials);
            self.best = self.best.min(s);
            return;
        };
        // No split of what is left can beat the best found so far.
        let left: i32 = c[i..].iter().map(|n| i32::from(*n)).sum();
        if self.score(sets + left / 3, partials + left % 3) >= self.best {
            return;
        }
        let room = sets + partials + self.melds < 4;
        if c[i] >= 3 {
            c[i] -= 3;
            self.run(c, i, sets + 1, partials);
            c[i] += 3;
        }
        let numbered = rank_of(i);
        if numbered.is_some_and(|r| r <= 7) && c[i + 1] > 0 && c[i + 2] > 0 {
            for n in &mut c[i..i + 3] {
                *n -= 1;
            }
            self.run(c, i, sets + 1, partials);
            for n in &mut c[i..i + 3] {
                *n += 1;
            }
        }
        if room {
            if c[i] >= 2 {
                c[i] -= 2;
                self.run(c, i, sets, partials + 1);
                c[i] += 2;
            }
            for gap in [1, 2] {
                if numbered.is_some_and(|r| r + gap <= 9) && c[i + gap] > 0 {
                    c[i] -= 1;
                    c[i + gap] -= 1;
                    self.run(c, i, sets, partials + 1);
                    c[i] += 1;
                    c[i + gap] += 1;
                }
            }
        }
        c[i] -= 1;
        self.run(c, i, sets, partials);
        c[i] += 1;
    }
}

/// Tile objects as JSON values.
pub fn values(tiles: Vec<Map>) -> Value {
    Value::Array(tiles.into_iter().map(Value::Object).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hand(codes: &str) -> Counts {
        let mut c = [0u8; FACES];
        for code in codes.split_whitespace() {
            c[index_of(code).unwrap()] += 1;
        }
        c
    }

    #[test]
    fn faces_and_codes_round_trip_in_catalog_order() {
        let f = faces();
        assert_eq!(f.len(), FACES);
        for (i, face) in f.iter().enumerate() {
            let code = face.get_str("code").unwrap();
            assert_eq!(index_of(code), Some(i));
            assert_eq!(code_of(i), code);
        }
        assert_eq!(f[0].get_str("label"), Some("1 characters"));
        assert_eq!(f[33].get_str("label"), Some("White"));
        assert_eq!(index_of("0m"), None);
        assert_eq!(index_of("9x"), None);
        assert_eq!(index_of("East"), None);
    }

    #[test]
    fn the_three_winning_shapes_and_nothing_else() {
        let std = hand("1m 2m 3m 4p 5p 6p 7s 8s 9s east east east red red");
        assert_eq!(win_kind(&std, 0), Some("standard"));
        let pairs = hand("1m 1m 2m 2m 3p 3p 3p 3p 9s 9s east east red red");
        assert_eq!(win_kind(&pairs, 0), Some("seven_pairs"));
        let orphans = hand("1m 9m 1p 9p 1s 9s east south west north red green white white");
        assert_eq!(win_kind(&orphans, 0), Some("thirteen_orphans"));
        let near = hand("1m 2m 3m 4p 5p 6p 7s 8s 9s east east east red green");
        assert_eq!(win_kind(&near, 0), None);
        // Seven pairs and orphans need a closed hand; sets count melds.
        assert_eq!(win_kind(&hand("2m 3m 4m red red"), 3), Some("standard"));
        assert_eq!(win_kind(&hand("red red"), 4), Some("standard"));
        assert_eq!(win_kind(&hand("1m 1m 2m 2m red red"), 2), None);
        assert_eq!(win_kind(&hand("1m 1m 1m 2m 3m"), 3), Some("standard"));
        // A tile too many or too few is never a win.
        assert_eq!(win_kind(&hand("red red red"), 4), None);
        // 111 222 333 as three chows or three pungs, 44 the pair.
        let c = hand("1p 1p 1p 2p 2p 2p 3p 3p 3p 4p 4p 7s 8s 9s");
        assert_eq!(win_kind(&c, 0), Some("standard"));
    }

    #[test]
    fn patterns_follow_the_reference_profile() {
        let all = hand("2m 3m 4m 5m 5m 5m 6m 7m 8m 4m 4m 4m 6m 6m");
        let kinds = vec!["pung".to_owned(), "chow".to_owned()];
        assert_eq!(
            patterns(&all, "standard", &kinds, true, false),
            [
                ("winning_hand", 1),
                ("self_draw", 1),
                ("pure_one_suit", 6),
                ("all_simples", 1)
            ]
        );
        let mixed = hand("1m 1m 1m 2m 2m 2m 3m 3m 3m east east east red red");
        let pungs = vec!["pung".to_owned(); 4];
        assert_eq!(
            patterns(&mixed, "standard", &pungs, false, false),
            [("winning_hand", 1), ("all_pungs", 3), ("mixed_one_suit", 3)]
        );
        let orphans = hand("1m 9m 1p 9p 1s 9s east south west north red green white white");
        assert_eq!(
            patterns(&orphans, "thirteen_orphans", &[], false, true),
            [
                ("winning_hand", 1),
                ("concealed_hand", 1),
                ("thirteen_orphans", 13)
            ]
        );
    }

    #[test]
    fn chows_take_every_sequence_through_the_discard() {
        let h = hand("3s 4s 6s 7s east");
        let d = index_of("5s").unwrap();
        let got: Vec<[String; 2]> = chow_pairs(&h, d)
            .into_iter()
            .map(|[a, b]| [code_of(a), code_of(b)])
            .collect();
        assert_eq!(
            got,
            [
                ["3s".to_owned(), "4s".to_owned()],
                ["4s".into(), "6s".into()],
                ["6s".into(), "7s".into()]
            ]
        );
        assert!(chow_pairs(&h, index_of("east").unwrap()).is_empty());
        assert!(chow_pairs(&hand("2m 3m"), index_of("1m").unwrap()).len() == 1);
        assert!(chow_pairs(&hand("8p 9p"), index_of("7m").unwrap()).is_empty());
    }

    #[test]
    fn shanten_counts_the_tiles_still_missing() {
        let win = hand("1m 2m 3m 4p 5p 6p 7s 8s 9s east east east red red");
        assert_eq!(shanten(&win, 0), -1);
        let ready = hand("1m 2m 3m 4p 5p 6p 7s 8s 9s east east east red");
        assert_eq!(shanten(&ready, 0), 0);
        let one = hand("1m 2m 3m 4p 5p 6p 7s 8s east east east red green");
        assert_eq!(shanten(&one, 0), 1);
        let pairs = hand("1m 1m 4m 4m 7p 7p 2s 2s 5s 5s red red white");
        assert_eq!(shanten(&pairs, 0), 0);
        let orphans = hand("1m 9m 1p 9p 1s 9s east south west north red green white");
        assert_eq!(shanten(&orphans, 0), 0);
        let short = hand("1m 9m 1p 9p 1s 9s east south west north red green 5m");
        assert_eq!(shanten(&short, 0), 1);
        assert_eq!(shanten(&hand("red"), 4), 0);
        assert_eq!(shanten(&hand("red green"), 4), 0);
        // Three melds and four loose tiles: a pair and a partial set to go.
        assert_eq!(shanten(&hand("2m 5m 9p east"), 3), 2);
        assert_eq!(shanten(&hand("2m 2m 5m east"), 3), 1);
        let scattered = hand("1m 4m 7m 2p 5p 8p 3s 6s 9s east south west north");
        // No pair or partial set: seven pairs (six away) is the nearest.
        assert_eq!(shanten(&scattered, 0), 6);
    }
}
