//! The poker evaluator and the pots: a card's [`Face`], a hand's
//! [`HandRank`] (the reference's rank tuples), the best five of seven
//! cards, the main and side pots, the uncalled excess refunded, and the
//! standard 52 faces of the deck.

use super::{Hooked, Ledger};
use crate::json::{Map, Value};
use crate::obj;

const SUITS: [&str; 4] = ["clubs", "diamonds", "hearts", "spades"];

/// A card as the evaluator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Face {
    pub(super) rank: u8,
    pub(super) suit: u8,
}

impl Face {
    pub(super) fn of(card: &Value) -> Option<Face> {
        let rank = card.get("rank")?.as_i64()?;
        let suit = SUITS.iter().position(|s| card.get_str("suit") == Some(s))?;
        ((2..=14).contains(&rank)).then_some(Face {
            rank: rank as u8,
            suit: suit as u8,
        })
    }
}

/// A five-card hand's rank, compared as the reference's rank tuples are:
/// the category, then the values that break ties within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HandRank {
    values: [u8; 6],
    len: u8,
}

impl HandRank {
    /// `(category, *tail)`; at most five tie-breakers.
    fn of(category: u8, tail: &[u8]) -> Self {
        let tail = &tail[..tail.len().min(5)];
        let mut values = [0u8; 6];
        values[0] = category;
        values[1..=tail.len()].copy_from_slice(tail);
        HandRank {
            values,
            len: tail.len() as u8 + 1,
        }
    }

    /// The rank as the reference's list: `[category, tie-breakers…]`.
    pub fn to_list(&self) -> Vec<i64> {
        self.values[..self.len as usize]
            .iter()
            .map(|v| i64::from(*v))
            .collect()
    }

    /// The category's name (`"straight_flush"` … `"high_card"`).
    pub fn category(&self) -> &'static str {
        match self.values[0] {
            8 => "straight_flush",
            7 => "four_of_a_kind",
            6 => "full_house",
            5 => "flush",
            4 => "straight",
            3 => "three_of_a_kind",
            2 => "two_pair",
            1 => "one_pair",
            _ => "high_card",
        }
    }
}

/// The rank of exactly five cards (the reference's `evaluate_five`).
fn evaluate_five(cards: [Face; 5]) -> HandRank {
    let mut desc = cards.map(|c| c.rank);
    desc.sort_unstable_by(|a, b| b.cmp(a));
    let mut counts = [0u8; 15];
    for r in desc {
        counts[r as usize] += 1;
    }
    let flush = cards.iter().all(|c| c.suit == cards[0].suit);
    // (count, rank) of each distinct rank: most copies first, then highest.
    let mut groups = [(0u8, 0u8); 5];
    let mut n = 0;
    for r in desc {
        if n == 0 || groups[n - 1].1 != r {
            groups[n] = (counts[r as usize], r);
            n += 1;
        }
    }
    let straight_high = match (n, groups.map(|g| g.1)) {
        (5, [14, 5, 4, 3, 2]) => Some(5),
        (5, [hi, .., lo]) if hi - lo == 4 => Some(hi),
        _ => None,
    };
    groups[..n].sort_unstable_by(|a, b| b.cmp(a));
    let g = groups.map(|g| g.1);
    let top = (groups[0].0, groups[1].0);
    match (flush, straight_high, top) {
        (true, Some(high), _) => HandRank::of(8, &[high]),
        (_, _, (4, _)) => HandRank::of(7, &g[..2]),
        (_, _, (3, 2)) => HandRank::of(6, &g[..2]),
        (true, None, _) => HandRank::of(5, &desc),
        (false, Some(high), _) => HandRank::of(4, &[high]),
        (_, _, (3, _)) => HandRank::of(3, &g[..n]),
        (_, _, (2, 2)) => HandRank::of(2, &g[..n]),
        (_, _, (2, _)) => HandRank::of(1, &g[..n]),
        _ => HandRank::of(0, &desc),
    }
}

/// The best five of `cards` (five to seven distinct faces).
fn best_of(cards: &[Face]) -> HandRank {
    let n = cards.len();
    let mut best: Option<HandRank> = None;
    for a in 0..n {
        for b in a + 1..n {
            for c in b + 1..n {
                for d in c + 1..n {
                    for e in d + 1..n {
                        let r = evaluate_five([cards[a], cards[b], cards[c], cards[d], cards[e]]);
                        if best.is_none_or(|x| r > x) {
                            best = Some(r);
                        }
                    }
                }
            }
        }
    }
    best.unwrap_or(HandRank::of(0, &[]))
}

/// The same rank as [`best_of`], read straight off the rank and suit
/// counts of up to seven cards instead of trying every five (the bot's
/// evaluator; a test holds the two equal).
pub(super) fn rank_direct(cards: &[Face]) -> HandRank {
    let mut counts = [0u8; 15];
    let mut by_suit = [0u16; 4];
    let mut all = 0u16;
    for c in cards {
        counts[c.rank as usize] += 1;
        by_suit[c.suit as usize & 3] |= 1 << c.rank;
        all |= 1 << c.rank;
    }
    let straight = |mask: u16| -> Option<u8> {
        (6..=14u8)
            .rev()
            .find(|h| (mask >> (h - 4)) & 0b11111 == 0b11111)
            .or_else(|| {
                let wheel = (1 << 14) | 0b11_1100;
                (mask & wheel == wheel).then_some(5)
            })
    };
    let ranks_of =
        |mask: u16| -> Vec<u8> { (2..=14u8).rev().filter(|r| mask & (1 << r) != 0).collect() };
    let with = |n: u8| -> Vec<u8> {
        (2..=14u8)
            .rev()
            .filter(|r| counts[*r as usize] == n)
            .collect()
    };
    let others = |not: &[u8], k: usize| -> Vec<u8> {
        (2..=14u8)
            .rev()
            .filter(|r| counts[*r as usize] > 0 && !not.contains(r))
            .take(k)
            .collect()
    };
    let flush = by_suit.iter().find(|m| m.count_ones() >= 5).copied();
    if let Some(high) = flush.and_then(straight) {
        return HandRank::of(8, &[high]);
    }
    let (fours, threes, pairs) = (with(4), with(3), with(2));
    if let Some(&q) = fours.first() {
        return HandRank::of(7, &[q, others(&[q], 1)[0]]);
    }
    if let Some(&t) = threes.first() {
        let second = threes
            .get(1)
            .copied()
            .into_iter()
            .chain(pairs.first().copied())
            .max();
        if let Some(p) = second {
            return HandRank::of(6, &[t, p]);
        }
    }
    if let Some(mask) = flush {
        return HandRank::of(5, &ranks_of(mask)[..5]);
    }
    if let Some(high) = straight(all) {
        return HandRank::of(4, &[high]);
    }
    if let Some(&t) = threes.first() {
        return HandRank::of(3, &[&[t], others(&[t], 2).as_slice()].concat());
    }
    if let [p, q, ..] = pairs.as_slice() {
        return HandRank::of(2, &[*p, *q, others(&[*p, *q], 1)[0]]);
    }
    if let Some(&p) = pairs.first() {
        return HandRank::of(1, &[&[p], others(&[p], 3).as_slice()].concat());
    }
    HandRank::of(0, &others(&[], 5))
}

/// The reference's `best_poker_hand` over card objects: five to seven
/// standard cards (rank 2–14, a standard suit, no face twice).
pub fn best_poker_hand(cards: &[Map]) -> Hooked<HandRank> {
    if cards.len() < 5 || cards.len() > 7 {
        return Err("poker evaluation requires five to seven cards".into());
    }
    let mut faces: Vec<Face> = Vec::with_capacity(cards.len());
    for card in cards {
        let face =
            Face::of(&Value::Object(card.clone())).ok_or("poker card rank or suit is invalid")?;
        if faces.contains(&face) {
            return Err("a standard poker hand cannot repeat a card face".into());
        }
        faces.push(face);
    }
    Ok(best_of(&faces))
}

/// One pot of the reference's `build_side_pots`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pot {
    pub amount: i64,
    pub cap: i64,
    pub contributors: Vec<String>,
    pub eligible: Vec<String>,
}

/// Main and side pots from every seat's total contribution: one pot per
/// distinct contribution level, shared by those who put in at least that
/// much, won only by those of them who did not fold.
pub fn build_side_pots(contributions: &[(String, i64)], folded: &[String]) -> Hooked<Vec<Pot>> {
    if contributions.is_empty() {
        return Err("contributions must be a non-empty object".into());
    }
    if folded
        .iter()
        .any(|f| !contributions.iter().any(|(k, _)| k == f))
    {
        return Err("folded player is missing from contributions".into());
    }
    for (k, amount) in contributions {
        if k.is_empty() {
            return Err("contribution owner is invalid".into());
        }
        if *amount < 0 {
            return Err("contributions must be non-negative integers".into());
        }
    }
    let mut levels: Vec<i64> = contributions
        .iter()
        .map(|(_, a)| *a)
        .filter(|a| *a > 0)
        .collect();
    levels.sort_unstable();
    levels.dedup();
    let mut previous = 0;
    let mut pots = Vec::new();
    for level in levels {
        let mut participants: Vec<String> = contributions
            .iter()
            .filter(|(_, a)| *a >= level)
            .map(|(k, _)| k.clone())
            .collect();
        participants.sort();
        let amount = (level - previous) * participants.len() as i64;
        let eligible: Vec<String> = participants
            .iter()
            .filter(|k| !folded.contains(k))
            .cloned()
            .collect();
        if amount > 0 {
            if eligible.is_empty() {
                return Err("a side pot has no eligible winner".into());
            }
            pots.push(Pot {
                amount,
                cap: level,
                contributors: participants,
                eligible,
            });
        }
        previous = level;
    }
    Ok(pots)
}

/// The reference's `normalize_uncalled_contributions`: the one largest
/// contribution, when nobody matched it, is cut to the second largest and
/// the excess refunded. Returns (contributions, refunds), both in the
/// given order.
pub fn normalize_uncalled_contributions(
    contributions: &[(String, i64)],
) -> Hooked<(Ledger, Ledger)> {
    if contributions.is_empty() {
        return Err("contributions must be a non-empty object".into());
    }
    for (k, amount) in contributions {
        if k.is_empty() {
            return Err("contribution owner is invalid".into());
        }
        if *amount < 0 {
            return Err("contributions must be non-negative integers".into());
        }
    }
    let mut normalized = contributions.to_vec();
    let mut refunds: Ledger = contributions.iter().map(|(k, _)| (k.clone(), 0)).collect();
    let mut ranked = contributions.to_vec();
    ranked.sort_by(|(ka, a), (kb, b)| b.cmp(a).then_with(|| ka.cmp(kb)));
    if ranked.len() >= 2 && ranked[0].1 > ranked[1].1 {
        let top = ranked[0].0.as_str();
        let refund = ranked[0].1 - ranked[1].1;
        for (k, a) in normalized.iter_mut() {
            if k == top {
                *a -= refund;
            }
        }
        for (k, r) in refunds.iter_mut() {
            if k == top {
                *r = refund;
            }
        }
    }
    Ok((normalized, refunds))
}

/// The 52 faces in the reference's `standard_card_faces` order.
pub(super) fn standard_faces() -> Vec<Map> {
    let label = |rank: i64| match rank {
        11 => "J".to_owned(),
        12 => "Q".to_owned(),
        13 => "K".to_owned(),
        14 => "A".to_owned(),
        n => n.to_string(),
    };
    let mut out = Vec::with_capacity(52);
    for (suit, symbol) in SUITS.iter().zip(["C", "D", "H", "S"]) {
        for rank in 2..=14 {
            let code = format!("{}{symbol}", label(rank));
            let color = if matches!(*suit, "diamonds" | "hearts") {
                "red"
            } else {
                "black"
            };
            out.push(obj! {
                "code" => code.as_str(), "suit" => *suit, "rank" => rank, "label" => code.as_str(), "color" => color,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Cards from codes like "Ah", "Tc", "9s".
    fn cards(codes: &str) -> Vec<Map> {
        codes
            .split_whitespace()
            .map(|c| {
                let (r, s) = c.split_at(1);
                let rank = match r {
                    "A" => 14,
                    "K" => 13,
                    "Q" => 12,
                    "J" => 11,
                    "T" => 10,
                    n => n.parse().unwrap(),
                };
                let suit = match s {
                    "c" => "clubs",
                    "d" => "diamonds",
                    "h" => "hearts",
                    _ => "spades",
                };
                obj! { "rank" => rank, "suit" => suit, "card_id" => c }
            })
            .collect()
    }

    fn rank(codes: &str) -> (Vec<i64>, &'static str) {
        let r = best_poker_hand(&cards(codes)).unwrap();
        (r.to_list(), r.category())
    }

    #[test]
    fn hands_rank_as_the_reference_ranks_them() {
        assert_eq!(rank("9h 8h 7h 6h 5h 2c 3d"), (vec![8, 9], "straight_flush"));
        assert_eq!(rank("Ad 2d 3d 4d 5d Kc Qc"), (vec![8, 5], "straight_flush"));
        assert_eq!(
            rank("9c 9d 9h 9s Kd 2c 3d"),
            (vec![7, 9, 13], "four_of_a_kind")
        );
        assert_eq!(rank("8c 8d 8h 5s 5d 5c 2d"), (vec![6, 8, 5], "full_house"));
        assert_eq!(
            rank("Ah 9h 7h 4h 3h 2h Ks"),
            (vec![5, 14, 9, 7, 4, 3], "flush")
        );
        assert_eq!(rank("Ac 2d 3h 4s 5c 9d Jd"), (vec![4, 5], "straight"));
        assert_eq!(rank("Tc Jd Qh Ks Ac 2d 3d"), (vec![4, 14], "straight"));
        assert_eq!(
            rank("7c 7d 7h Ks 2c 4d 9d"),
            (vec![3, 7, 13, 9], "three_of_a_kind")
        );
        assert_eq!(
            rank("Kc Kd 9h 9s 4c 4d Ad"),
            (vec![2, 13, 9, 14], "two_pair")
        );
        assert_eq!(
            rank("Qc Qd 9h 7s 4c 3d 2d"),
            (vec![1, 12, 9, 7, 4], "one_pair")
        );
        assert_eq!(
            rank("Ac Jd 9h 7s 4c 3d 2d"),
            (vec![0, 14, 11, 9, 7, 4], "high_card")
        );
        // Five cards are enough; the order is the reference's tuple order.
        let best = |c: &str| best_poker_hand(&cards(c)).unwrap();
        assert!(best("2c 3d 4h 5s 6c") > best("Ac Ad Ah Ks Qc"));
        assert!(best("Ac Kd 9h 7s 4c") > best("Ac Kd 9h 7s 3c"));
        assert!(best("Ac 2d 3h 4s 5c") < best("2c 3d 4h 5s 6d"));
        assert_eq!(best("Ac Kd 9h 7s 4c"), best("Ad Kc 9s 7h 4d"));
    }

    #[test]
    fn bad_cards_are_refused_with_the_reference_texts() {
        let err = |c: &[Map]| best_poker_hand(c).unwrap_err();
        assert_eq!(
            err(&cards("Ac Kd 9h 7s")),
            "poker evaluation requires five to seven cards"
        );
        assert_eq!(
            err(&cards("Ac Ac 9h 7s 4c")),
            "a standard poker hand cannot repeat a card face"
        );
        let mut joker = cards("Ac Kd 9h 7s");
        joker.push(obj! { "rank" => 16, "suit" => "joker" });
        assert_eq!(err(&joker), "poker card rank or suit is invalid");
        let mut boolean = cards("Ac Kd 9h 7s");
        boolean.push(obj! { "rank" => true, "suit" => "clubs" });
        assert_eq!(err(&boolean), "poker card rank or suit is invalid");
    }

    fn ledger(v: &[(&str, i64)]) -> Ledger {
        v.iter().map(|(k, a)| ((*k).to_owned(), *a)).collect()
    }

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|k| (*k).to_owned()).collect()
    }

    #[test]
    fn side_pots_follow_the_contribution_levels() {
        let c = ledger(&[("d", 20), ("a", 100), ("c", 100), ("b", 50)]);
        let pots = build_side_pots(&c, &keys(&["d"])).unwrap();
        assert_eq!(
            pots,
            vec![
                Pot {
                    amount: 80,
                    cap: 20,
                    contributors: keys(&["a", "b", "c", "d"]),
                    eligible: keys(&["a", "b", "c"]),
                },
                Pot {
                    amount: 90,
                    cap: 50,
                    contributors: keys(&["a", "b", "c"]),
                    eligible: keys(&["a", "b", "c"]),
                },
                Pot {
                    amount: 100,
                    cap: 100,
                    contributors: keys(&["a", "c"]),
                    eligible: keys(&["a", "c"]),
                },
            ]
        );
        assert_eq!(pots.iter().map(|p| p.amount).sum::<i64>(), 270);
        // Nothing in: no pot; a pot only folded seats reached: refused.
        assert!(
            build_side_pots(&ledger(&[("a", 0), ("b", 0)]), &[])
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            build_side_pots(&ledger(&[("a", 50), ("b", 20)]), &keys(&["a"])).unwrap_err(),
            "a side pot has no eligible winner"
        );
        assert_eq!(
            build_side_pots(&ledger(&[("a", 5)]), &keys(&["z"])).unwrap_err(),
            "folded player is missing from contributions"
        );
    }

    #[test]
    fn only_an_unmatched_top_contribution_is_refunded() {
        let (c, r) =
            normalize_uncalled_contributions(&ledger(&[("b", 40), ("a", 100), ("c", 40)])).unwrap();
        assert_eq!(c, ledger(&[("b", 40), ("a", 40), ("c", 40)]));
        assert_eq!(r, ledger(&[("b", 0), ("a", 60), ("c", 0)]));
        let tied = ledger(&[("a", 100), ("b", 100), ("c", 10)]);
        let (c, r) = normalize_uncalled_contributions(&tied).unwrap();
        assert_eq!(c, tied);
        assert!(r.iter().all(|(_, n)| *n == 0));
    }

    #[test]
    fn the_direct_evaluator_agrees_with_best_of_five() {
        let deck: Vec<Face> = (0..4u8)
            .flat_map(|suit| (2..=14u8).map(move |rank| Face { rank, suit }))
            .collect();
        let mut rng = StdRng::seed_from_u64(7);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..20_000 {
            let mut d = deck.clone();
            let n = 5 + i % 3;
            let hand: Vec<Face> = (0..n)
                .map(|_| d.swap_remove(rng.random_range(0..d.len())))
                .collect();
            let r = best_of(&hand);
            assert_eq!(rank_direct(&hand), r, "{hand:?}");
            seen.insert(r.category());
        }
        // Every category but (maybe) the straight flush came up.
        assert!(seen.len() >= 8, "{seen:?}");
        let royal: Vec<Face> = (10..=14).map(|rank| Face { rank, suit: 2 }).collect();
        assert_eq!(rank_direct(&royal), best_of(&royal));
    }
}
