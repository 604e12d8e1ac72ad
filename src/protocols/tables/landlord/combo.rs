//! Landlord's combinations, as the reference's `_classify` reads them: a
//! play classified (single, pair, straight, bomb…), whether it beats the
//! last one, and every play a hand could make.

use super::Hooked;
use crate::json::{Map, Value};
use crate::obj;

pub(super) fn value_of(card: &Map) -> i64 {
    card.get("value").and_then(Value::as_i64).unwrap_or(0)
}

/// A classified play, as the reference's `_classify` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Combination {
    pub kind: String,
    pub primary: i64,
    pub length: i64,
    pub tier: i64,
}

impl Combination {
    fn new(kind: &str, primary: i64, length: usize, tier: i64) -> Self {
        Combination {
            kind: kind.to_owned(),
            primary,
            length: length as i64,
            tier,
        }
    }

    pub(super) fn to_map(&self) -> Map {
        obj! { "kind" => self.kind.as_str(), "primary" => self.primary, "length" => self.length, "tier" => self.tier }
    }

    pub(super) fn from_map(m: &Map) -> Self {
        Combination {
            kind: m.get_str("kind").unwrap_or_default().to_owned(),
            primary: m.get("primary").and_then(Value::as_i64).unwrap_or(0),
            length: m.get("length").and_then(Value::as_i64).unwrap_or(0),
            tier: m.get("tier").and_then(Value::as_i64).unwrap_or(0),
        }
    }
}

pub(super) fn consecutive(values: &[i64]) -> bool {
    values.windows(2).all(|w| w[1] == w[0] + 1)
}

/// The combination `cards` form, or the reference's refusal.
pub fn classify(cards: &[Map]) -> Hooked<Combination> {
    let values: Vec<i64> = cards.iter().map(value_of).collect();
    // Counter: values in order of first appearance, with their counts.
    let mut counts: Vec<(i64, usize)> = Vec::new();
    for &v in &values {
        match counts.iter_mut().find(|(k, _)| *k == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    let mut count_values: Vec<usize> = counts.iter().map(|(_, n)| *n).collect();
    count_values.sort_unstable();
    let size = cards.len();
    let jokers = cards
        .iter()
        .filter(|c| c.get_str("suit") == Some("joker"))
        .count();
    let max = values.iter().copied().max().unwrap_or(0);
    if jokers == size && size >= 2 {
        return Ok(Combination::new("joker_bomb", max, size, 2));
    }
    if counts.len() == 1 && size >= 4 {
        return Ok(Combination::new("bomb", values[0], size, 1));
    }
    let with_count = |n: usize| {
        counts
            .iter()
            .find(|(_, c)| *c == n)
            .map(|(v, _)| *v)
            .unwrap_or(0)
    };
    match (size, count_values.as_slice()) {
        (1, _) => return Ok(Combination::new("single", values[0], 1, 0)),
        (2, [2]) => return Ok(Combination::new("pair", values[0], 2, 0)),
        (3, [3]) => return Ok(Combination::new("triple", values[0], 3, 0)),
        (4, [1, 3]) => return Ok(Combination::new("triple_single", with_count(3), 4, 0)),
        (5, [2, 3]) => return Ok(Combination::new("triple_pair", with_count(3), 5, 0)),
        _ => {}
    }
    let mut ordered: Vec<i64> = counts.iter().map(|(v, _)| *v).collect();
    ordered.sort_unstable();
    let top = ordered.last().copied().unwrap_or(0);
    if size >= 5 && counts.iter().all(|(_, n)| *n == 1) && top <= 14 && consecutive(&ordered) {
        return Ok(Combination::new("straight", top, size, 0));
    }
    if size >= 6
        && size.is_multiple_of(2)
        && counts.iter().all(|(_, n)| *n == 2)
        && top <= 14
        && consecutive(&ordered)
    {
        return Ok(Combination::new("pair_straight", top, size, 0));
    }
    let mut triples: Vec<i64> = counts
        .iter()
        .filter(|(v, n)| *n == 3 && *v <= 14)
        .map(|(v, _)| *v)
        .collect();
    triples.sort_unstable();
    if triples.len() >= 2 && consecutive(&triples) {
        let wings: Vec<usize> = counts
            .iter()
            .filter(|(v, _)| !triples.contains(v))
            .map(|(_, n)| *n)
            .collect();
        let t = triples.len();
        let kind = if size == t * 3 && wings.is_empty() {
            "airplane"
        } else if size == t * 4 && wings.len() == t && wings.iter().all(|n| *n == 1) {
            "airplane_single"
        } else if size == t * 5 && wings.len() == t && wings.iter().all(|n| *n == 2) {
            "airplane_pair"
        } else {
            ""
        };
        if !kind.is_empty() {
            return Ok(Combination::new(
                kind,
                *triples.last().unwrap_or(&0),
                size,
                0,
            ));
        }
    }
    let fours: Vec<i64> = counts
        .iter()
        .filter(|(_, n)| *n == 4)
        .map(|(v, _)| *v)
        .collect();
    if let [primary] = fours.as_slice() {
        let rest: Vec<usize> = counts
            .iter()
            .filter(|(v, _)| v != primary)
            .map(|(_, n)| *n)
            .collect();
        if size == 6 && rest.iter().sum::<usize>() == 2 {
            return Ok(Combination::new("four_two_single", *primary, 6, 0));
        }
        if size == 8 && rest.len() == 2 && rest.iter().all(|n| *n == 2) {
            return Ok(Combination::new("four_two_pair", *primary, 8, 0));
        }
    }
    Err("the selected cards are not a supported combination".into())
}

/// Does `c` beat `prev` (the reference's `_beats`)?
pub fn beats(c: &Combination, prev: &Combination) -> bool {
    if c.tier != prev.tier {
        return c.tier > prev.tier;
    }
    if c.tier > 0 {
        if c.length != prev.length {
            return c.length > prev.length;
        }
        return c.primary > prev.primary;
    }
    c.kind == prev.kind && c.length == prev.length && c.primary > prev.primary
}

/// Plays a hand can make: every single, pair, triple, triple with a single
/// or a pair, straight, pair straight, plain airplane, bomb and joker bomb
/// (one pick of cards per value and shape).
pub fn candidates(hand: &[Map]) -> Vec<(Combination, Vec<String>)> {
    let mut by_value: std::collections::BTreeMap<i64, Vec<String>> = Default::default();
    for c in hand {
        if let Some(id) = c.get_str("card_id") {
            by_value.entry(value_of(c)).or_default().push(id.to_owned());
        }
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    let values: Vec<i64> = by_value.keys().copied().collect();
    for (&v, ids) in &by_value {
        for n in 1..=ids.len().min(3) {
            out.push(ids[..n].to_vec());
        }
        for n in 4..=ids.len() {
            out.push(ids[..n].to_vec());
        }
        if ids.len() >= 3 {
            // A triple with the lowest other single or pair as its wing.
            if let Some((_, w)) = by_value.iter().find(|(k, w)| **k != v && !w.is_empty()) {
                out.push([ids[..3].to_vec(), w[..1].to_vec()].concat());
            }
            if let Some((_, w)) = by_value.iter().find(|(k, w)| **k != v && w.len() >= 2) {
                out.push([ids[..3].to_vec(), w[..2].to_vec()].concat());
            }
        }
    }
    let jokers: Vec<String> = hand
        .iter()
        .filter(|c| c.get_str("suit") == Some("joker"))
        .filter_map(|c| c.get_str("card_id").map(str::to_owned))
        .collect();
    for n in 2..=jokers.len() {
        out.push(jokers[..n].to_vec());
    }
    // Runs of singles (5+), pairs (3+ values) and triples (2+ values), up to the ace.
    for (need, min_len) in [(1usize, 5usize), (2, 3), (3, 2)] {
        for start in 0..values.len() {
            let mut run: Vec<i64> = Vec::new();
            for &v in &values[start..] {
                if v > 14 || by_value[&v].len() < need || run.last().is_some_and(|l| v != l + 1) {
                    break;
                }
                run.push(v);
                if run.len() >= min_len {
                    out.push(
                        run.iter()
                            .flat_map(|r| by_value[r][..need].to_vec())
                            .collect(),
                    );
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.into_iter()
        .filter(|ids| seen.insert(ids.clone()))
        .filter_map(|ids| {
            let faces: Vec<Map> = ids
                .iter()
                .filter_map(|id| {
                    hand.iter()
                        .find(|c| c.get_str("card_id") == Some(id))
                        .cloned()
                })
                .collect();
            classify(&faces).ok().map(|c| (c, ids))
        })
        .collect()
}
