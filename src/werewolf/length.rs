//! Talk-length rules (§3.3 of the AIWolf reference): counting modes,
//! the mention split with its own allowance, the per-agent daily budget and
//! the per-talk cap.

use super::config::LengthConfig;

/// How text is counted: words, all characters, or characters other than
/// whitespace (the default; U+3000 is whitespace).
pub fn count(text: &str, cfg: &LengthConfig) -> i64 {
    let n = if cfg.count_in_word {
        text.split_whitespace().count()
    } else if cfg.count_spaces {
        text.chars().count()
    } else {
        text.chars().filter(|c| !c.is_whitespace()).count()
    };
    n as i64
}

/// The longest prefix of `text` whose count is at most `limit`.
pub fn trim(text: &str, limit: i64, cfg: &LengthConfig) -> String {
    if limit <= 0 {
        return String::new();
    }
    if count(text, cfg) <= limit {
        return text.to_owned();
    }
    if cfg.count_in_word {
        // Keep the text up to the end of the limit-th word.
        let mut words = 0;
        let mut in_word = false;
        for (i, c) in text.char_indices() {
            if c.is_whitespace() {
                if in_word {
                    words += 1;
                    in_word = false;
                    if words == limit {
                        return text[..i].to_owned();
                    }
                }
            } else {
                in_word = true;
            }
        }
        return text.to_owned();
    }
    let mut n = 0;
    for (i, c) in text.char_indices() {
        let counts = cfg.count_spaces || !c.is_whitespace();
        if counts {
            if n == limit {
                return text[..i].to_owned();
            }
            n += 1;
        }
    }
    text.to_owned()
}

/// The earliest `@Name` mention of any of `names` (longest name wins at
/// one position): byte offset and the name.
pub fn find_mention<'a>(text: &str, names: &[&'a str]) -> Option<(usize, &'a str)> {
    let mut best: Option<(usize, &'a str)> = None;
    for name in names {
        if name.is_empty() {
            continue;
        }
        let needle = format!("@{name}");
        if let Some(pos) = text.find(&needle) {
            let better = match best {
                None => true,
                Some((p, n)) => pos < p || (pos == p && name.len() > n.len()),
            };
            if better {
                best = Some((pos, name));
            }
        }
    }
    best
}

/// Applies the length rules to one talk. `others` are the in-game names
/// of the other agents (mention targets); `remain_length` is the speaker's
/// daily budget when `per_agent` is set, and is updated. Returns the text
/// to record; an empty result becomes `Over`.
pub fn apply(
    text: &str,
    cfg: &LengthConfig,
    others: &[&str],
    remain_length: &mut Option<i64>,
) -> String {
    let mention = cfg
        .mention_length()
        .and_then(|_| find_mention(text, others));
    let (mut before, mut name, mut after) = match mention {
        Some((pos, n)) => (
            text[..pos].to_owned(),
            Some(n),
            text[pos + 1 + n.len()..].to_owned(),
        ),
        None => (text.to_owned(), None, String::new()),
    };
    if cfg.per_agent().is_some() || cfg.base_length().is_some() {
        let base = cfg.base_length().unwrap_or(0);
        let mut budget = remain_length.unwrap_or(0).max(0);
        before = trim(&before, base + budget, cfg);
        budget -= (count(&before, cfg) - base).max(0);
        if name.is_some() {
            let ml = cfg.mention_length().unwrap_or(0);
            after = trim(&after, ml + budget, cfg);
            budget -= (count(&after, cfg) - ml).max(0);
        }
        if cfg.per_agent().is_some() {
            *remain_length = Some(budget.max(0));
        }
    }
    if let Some(per_talk) = cfg.per_talk() {
        let (cb, ca) = (count(&before, cfg), count(&after, cfg));
        if cb + ca > per_talk {
            if cb > per_talk {
                before = trim(&before, per_talk, cfg);
                name = None;
                after.clear();
            } else {
                after = trim(&after, per_talk - cb, cfg);
            }
        }
    }
    let out = match name {
        Some(n) => format!("{before} @{n} {after}"),
        None => before,
    };
    if out.trim().is_empty() {
        "Over".to_owned()
    } else {
        out
    }
}
