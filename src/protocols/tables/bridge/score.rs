//! The score of a finished board: duplicate bridge scoring of the
//! contract (trick points, game and part-score bonuses, slams, doubling,
//! overtricks and undertricks by vulnerability), credited to the side that
//! earned it.

use super::{Hooked, completed, obj_mut};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::{int, obj, text};

pub(super) fn complete_board(mut state: Map, events: Vec<Value>) -> Hooked<Value> {
    let contract = obj(&state, "contract");
    let team = contract
        .get_str("partnership")
        .unwrap_or_default()
        .to_owned();
    let tricks = int(&obj(&state, "tricks"), &team);
    let vul = text(&state, "vulnerability");
    let vulnerable = vul == team || vul == "both";
    let score = duplicate_score(
        int(&contract, "level"),
        contract.get_str("denomination").unwrap_or_default(),
        int(&contract, "doubled"),
        tricks,
        vulnerable,
    );
    let other = if team == "ns" { "ew" } else { "ns" };
    let scoring = if score >= 0 { team.as_str() } else { other };
    {
        let scores = obj_mut(&mut state, "scores")?;
        let now = int(scores, scoring).saturating_add(score.saturating_abs());
        scores.insert(scoring, Value::from(now));
    }
    state.insert("phase", Value::from("completed"));
    let outcome = format!("{team}_{}", if score >= 0 { "made" } else { "down" });
    let mut events = events;
    events.push(Value::Object(obj! {
        "kind" => "bridge_board_complete", "outcome" => outcome.as_str(), "contract_score" => score,
        "tricks" => tricks, "scores" => state.get("scores").cloned().unwrap_or(Value::Null),
    }));
    Ok(completed(state, events, &outcome))
}

/// Duplicate bridge's score of a contract for the declaring side (negative:
/// the undertrick penalty the defenders earn).
pub fn duplicate_score(
    level: i64,
    denomination: &str,
    doubled: i64,
    tricks: i64,
    vulnerable: bool,
) -> i64 {
    // Wide enough for any i64 level or trick count of a broken state.
    let score = wide_score(
        i128::from(level),
        denomination,
        doubled,
        i128::from(tricks),
        vulnerable,
    );
    i64::try_from(score).unwrap_or(if score < 0 { i64::MIN } else { i64::MAX })
}

fn wide_score(
    level: i128,
    denomination: &str,
    doubled: i64,
    tricks: i128,
    vulnerable: bool,
) -> i128 {
    let delta = tricks - (level + 6);
    let multiplier = match doubled {
        1 => 2,
        2 => 4,
        _ => 1,
    };
    let redoubled = if doubled == 2 { 2 } else { 1 };
    if delta < 0 {
        let under = -delta;
        if doubled == 0 {
            return -under * if vulnerable { 100 } else { 50 };
        }
        let penalty = if vulnerable {
            200 + (under - 1).max(0) * 300
        } else {
            let mut p = 100;
            if under >= 2 {
                p += (under - 1).min(2) * 200;
            }
            if under >= 4 {
                p += (under - 3) * 300;
            }
            p
        };
        return -penalty * redoubled;
    }
    let (base, overtrick) = match denomination {
        "clubs" | "diamonds" => (level * 20, 20),
        "hearts" | "spades" => (level * 30, 30),
        _ => (40 + (level - 1).max(0) * 30, 30),
    };
    let points = base * multiplier;
    let mut total = points;
    if points >= 100 {
        total += if vulnerable { 500 } else { 300 };
    } else {
        total += 50;
    }
    if level == 6 {
        total += if vulnerable { 750 } else { 500 };
    } else if level == 7 {
        total += if vulnerable { 1500 } else { 1000 };
    }
    total += match doubled {
        1 => 50,
        2 => 100,
        _ => 0,
    };
    if delta > 0 {
        total += if doubled == 0 {
            delta * overtrick
        } else {
            delta * if vulnerable { 200 } else { 100 } * redoubled
        };
    }
    total
}

#[cfg(test)]
mod tests {
    use super::super::DENOMINATIONS;
    use super::*;

    #[test]
    fn duplicate_scores() {
        assert_eq!(duplicate_score(4, "spades", 0, 10, true), 620);
        assert_eq!(duplicate_score(3, "nt", 0, 9, false), 400);
        assert_eq!(duplicate_score(1, "nt", 0, 8, false), 120);
        assert_eq!(duplicate_score(2, "clubs", 1, 8, false), 180);
        assert_eq!(duplicate_score(4, "hearts", 1, 7, false), -500);
        assert_eq!(duplicate_score(4, "hearts", 2, 8, true), -1000);
        assert_eq!(duplicate_score(7, "nt", 2, 13, true), 2980);
        assert_eq!(duplicate_score(3, "diamonds", 0, 7, true), -200);
        // Every contract, doubling, trick count and vulnerability, weighted
        // by position: the same sum as the reference's `_duplicate_score`.
        let (mut i, mut sum) = (0i64, 0i64);
        for level in 1..=7 {
            for d in DENOMINATIONS {
                for doubled in 0..3 {
                    for tricks in 0..14 {
                        for vulnerable in [false, true] {
                            i += 1;
                            sum += i * duplicate_score(level, d, doubled, tricks, vulnerable);
                        }
                    }
                }
            }
        }
        assert_eq!((i, sum), (2940, -5_155_784_570));
    }
}
