//! One numbering for people. The wire counts some things from 0 (the
//! `round` of rps, coin flip, weak-wins-all and hero duel frames and their
//! decision windows) and others from 1 (guess-number attempts, board turns);
//! snapshots, summaries and details records count rounds from 1. Everything
//! a person reads counts from 1; raw JSON keeps the wire's numbers.

use crate::json::Value;

/// Whether `match_key` is counted from 0 on the wire.
pub fn zero_based(match_key: &str) -> bool {
    match_key == "round"
}

/// A window's `match_value` as people count it.
pub fn shown(match_key: &str, value: &Value) -> String {
    match value.as_i64() {
        Some(n) if zero_based(match_key) => n.saturating_add(1).to_string(),
        _ => value.py_str(),
    }
}

/// `round 2` for the wire's round 1: a window key and value for people.
pub fn label(match_key: &str, value: &Value) -> String {
    format!("{match_key} {}", shown(match_key, value))
}

/// Rewrites the wire's `round=N` and `(round N)` in a summary written from
/// wire data as people count (`round N+1`); other text is kept.
pub fn rewrite(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let mut rest = text;
    while let Some(i) = rest.find("round") {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        let after = &tail["round".len()..];
        let word_start = head
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_');
        let sep = after.chars().next();
        let digits: String = after
            .chars()
            .skip(1)
            .take_while(char::is_ascii_digit)
            .collect();
        let closes = after[1.min(after.len())..]
            .get(digits.len()..)
            .and_then(|s| s.chars().next());
        let ok_sep = match sep {
            Some('=') => true,
            Some(' ') => head.ends_with('(') && closes == Some(')'),
            _ => false,
        };
        match digits.parse::<i64>() {
            Ok(n) if word_start && ok_sep && digits.len() < 12 => {
                out.push_str(&format!("round {}", n + 1));
                rest = &after[1 + digits.len()..];
            }
            _ => {
                out.push_str("round");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_count_from_one_for_people() {
        assert_eq!(shown("round", &Value::from(0)), "1");
        assert_eq!(shown("attempt", &Value::from(1)), "1");
        assert_eq!(shown("turn", &Value::from(3)), "3");
        assert_eq!(label("action_seq", &Value::from(3)), "action_seq 3");
        assert_eq!(
            rewrite("strategy chose rock (round 0) · round=4: x"),
            "strategy chose rock (round 1) · round 5: x"
        );
        assert_eq!(rewrite("Round 1: commitment"), "Round 1: commitment");
        assert_eq!(
            rewrite("around=3 round 7 round="),
            "around=3 round 7 round="
        );
        assert_eq!(rewrite("rounds (round 2"), "rounds (round 2");
    }
}
