//! Talk-length rules (§3.3 of the AIWolf reference): counting modes,
//! the mention split with its own allowance, the per-agent daily budget and
//! the per-talk cap.

use super::config::LengthConfig;
use super::packet::MaxLength;

/// The counting rules a server announced in `setting.talk.max_length` (or
/// `whisper`): absent limits are unset (-1), absent flags false.
pub fn from_setting(m: &MaxLength) -> LengthConfig {
    LengthConfig {
        count_in_word: m.count_in_word.unwrap_or(false),
        count_spaces: m.count_spaces.unwrap_or(false),
        per_talk: m.per_talk.unwrap_or(-1),
        mention_length: m.mention_length.unwrap_or(-1),
        per_agent: m.per_agent.unwrap_or(-1),
        base_length: m.base_length.unwrap_or(-1),
    }
}

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

/// `text` split around its first `@mention` of one of `others` (when the
/// setting counts mentions apart): the text before, the name, the text
/// after; no mention: all of it before.
fn split_mention<'a>(
    text: &str,
    cfg: &LengthConfig,
    others: &[&'a str],
) -> (String, Option<&'a str>, String) {
    match cfg
        .mention_length()
        .and_then(|_| find_mention(text, others))
    {
        Some((pos, n)) => (
            text[..pos].to_owned(),
            Some(n),
            text[pos + 1 + n.len()..].to_owned(),
        ),
        None => (text.to_owned(), None, String::new()),
    }
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
    let (mut before, mut name, mut after) = split_mention(text, cfg, others);
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

/// Characters that end a sentence (where a shortened talk best stops).
fn sentence_end(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '。' | '！' | '？')
}

/// Like [`trim`], but never cuts inside a word: the longest prefix with a
/// count of at most `limit` that ends at whitespace (trailing whitespace
/// dropped), at a sentence end when one keeps at least half the limit. A
/// text without whitespace before the limit (one long word, or a script
/// written without spaces) is cut at a character, after the last sentence
/// end if that keeps half. Returns `text` unchanged when it fits.
pub fn trim_words(text: &str, limit: i64, cfg: &LengthConfig) -> String {
    let hard = trim(text, limit, cfg);
    if hard.len() == text.len() {
        return hard;
    }
    // The sentence end the shortest acceptable cut may stop at.
    let at_sentence = |s: &str| -> Option<String> {
        s.char_indices()
            .filter(|(_, c)| sentence_end(*c))
            .map(|(i, c)| &s[..i + c.len_utf8()])
            .rfind(|p| count(p, cfg) * 2 >= limit)
            .map(str::to_owned)
    };
    let rest = &text[hard.len()..];
    let at_word = if rest.starts_with(char::is_whitespace) || hard.ends_with(char::is_whitespace) {
        Some(hard.trim_end().to_owned())
    } else {
        hard.rfind(char::is_whitespace)
            .map(|i| hard[..i].trim_end().to_owned())
            .filter(|p| !p.is_empty())
    };
    match at_word {
        Some(w) => match at_sentence(&w) {
            // Stop at a sentence end inside the words kept, unless that
            // drops a clause already complete at the word boundary.
            Some(s) if !w.ends_with(sentence_end) => s,
            _ => w,
        },
        None => at_sentence(&hard).unwrap_or(hard),
    }
}

/// Shortens `text` so the server records it uncut under `cfg` (the same
/// mention split, budget and per-talk cap as [`apply`]), cutting between
/// words ([`trim_words`]): the text before a mention first, then the text
/// after it. When the part before the mention must be cut, the mention and
/// what follows are dropped. `remain_length` is the speaker's budget left
/// today (`info.remain_length`). The result is `text` when it fits, and
/// `Over` when nothing may be said.
pub fn fit(text: &str, cfg: &LengthConfig, others: &[&str], remain_length: Option<i64>) -> String {
    let (mut before, mut name, mut after) = split_mention(text, cfg, others);
    let cut_before = |before: &mut String, limit: i64| {
        let t = trim_words(before, limit, cfg);
        let cut = t.len() != before.len();
        *before = t;
        cut
    };
    if cfg.per_agent().is_some() || cfg.base_length().is_some() {
        let base = cfg.base_length().unwrap_or(0);
        let mut budget = remain_length.unwrap_or(0).max(0);
        if cut_before(&mut before, base + budget) {
            name = None;
            after.clear();
        }
        budget -= (count(&before, cfg) - base).max(0);
        if name.is_some() {
            let ml = cfg.mention_length().unwrap_or(0);
            after = trim_words(&after, ml + budget.max(0), cfg);
        }
    }
    if let Some(per_talk) = cfg.per_talk() {
        let cb = count(&before, cfg);
        if cb > per_talk {
            cut_before(&mut before, per_talk);
            name = None;
            after.clear();
        } else if cb + count(&after, cfg) > per_talk {
            after = trim_words(&after, per_talk - cb, cfg);
        }
    }
    let out = match name {
        Some(n) => format!("{before}@{n}{after}"),
        None => before,
    };
    let out = out.trim_end();
    if out.trim().is_empty() {
        "Over".to_owned()
    } else {
        out.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(per_talk: i64, base: i64, mention: i64, per_agent: i64) -> LengthConfig {
        LengthConfig {
            count_in_word: false,
            count_spaces: false,
            per_talk,
            mention_length: mention,
            per_agent,
            base_length: base,
        }
    }

    /// Whitespace-free text: how a recorded talk compares with the sent one
    /// (the server re-spaces around a mention).
    fn squeeze(s: &str) -> String {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    }

    #[test]
    fn a_long_line_is_cut_between_words_and_then_kept_whole() {
        let cfg = chars(20, -1, -1, -1);
        let line = "Good morning, everyone. Let's keep our heads cool today.";
        let f = fit(line, &cfg, &["Bob"], None);
        assert_eq!(f, "Good morning,");
        let mut r = None;
        assert_eq!(apply(&f, &cfg, &["Bob"], &mut r), f);
        // A sentence end within reach is preferred to a word boundary.
        let cfg = chars(24, -1, -1, -1);
        assert_eq!(fit(line, &cfg, &[], None), "Good morning, everyone.");
        // What fits is left alone.
        assert_eq!(fit("short", &cfg, &[], None), "short");
    }

    #[test]
    fn the_mention_survives_when_the_text_before_it_fits() {
        let cfg = chars(20, -1, 50, -1);
        // per_talk counts the text around the mention, not the mention.
        let f = fit(
            "I will vote for @Bob today, no doubt at all.",
            &cfg,
            &["Bob"],
            None,
        );
        assert_eq!(f, "I will vote for @Bob today, no");
        let cfg = chars(-1, 5, 50, -1);
        let f = fit("I will vote for @Bob today.", &cfg, &["Bob"], None);
        assert_eq!(f, "I will");
        // The daily budget widens both parts, once.
        let cfg = chars(-1, 4, 2, 10);
        let f = fit("one two three @Bob four five six", &cfg, &["Bob"], Some(10));
        let mut r = Some(10);
        assert_eq!(squeeze(&apply(&f, &cfg, &["Bob"], &mut r)), squeeze(&f));
        assert!(f.contains("@Bob"), "{f}");
        // Nothing allowed: Over.
        let cfg = chars(-1, 0, 0, 0);
        assert_eq!(fit("hello", &cfg, &[], Some(0)), "Over");
    }

    #[test]
    fn words_and_unspaced_scripts() {
        let words = LengthConfig {
            count_in_word: true,
            ..chars(3, -1, -1, -1)
        };
        assert_eq!(
            fit("one two three four", &words, &[], None),
            "one two three"
        );
        let cfg = chars(5, -1, -1, -1);
        assert_eq!(fit("あいう。えおかきく", &cfg, &[], None), "あいう。");
        assert_eq!(fit("あいうえおかきく", &cfg, &[], None), "あいうえお");
    }

    #[test]
    fn fitted_talk_is_never_cut_by_the_server() {
        let lines = [
            "Good morning, everyone. Let's keep our heads cool today.",
            "I am the seer. I checked @Bob: WEREWOLF!",
            "Who pushed hardest for @Cy yesterday? That matters now.",
            "@Bob, you're wrong about me.",
            "前置き @Cy いいいいいいいいいいいいいいいいいいいいいいいいいいいい",
            "x",
        ];
        let names = ["Bob", "Cy"];
        let mut checked = 0;
        for count_in_word in [false, true] {
            for count_spaces in [false, true] {
                if count_in_word && count_spaces {
                    continue;
                }
                for per_talk in [-1, 0, 3, 10, 20, 50] {
                    for (base, mention) in [(-1, -1), (0, 5), (5, 5), (10, 20), (50, 50)] {
                        for (per_agent, remain) in [(-1, None), (30, Some(30)), (30, Some(3))] {
                            let cfg = LengthConfig {
                                count_in_word,
                                count_spaces,
                                per_talk,
                                mention_length: mention,
                                per_agent,
                                base_length: base,
                            };
                            for l in lines {
                                let f = fit(l, &cfg, &names, remain);
                                if f == "Over" {
                                    continue;
                                }
                                let mut r = remain;
                                let kept = apply(&f, &cfg, &names, &mut r);
                                assert_eq!(squeeze(&kept), squeeze(&f), "{cfg:?} {l:?} -> {f:?}");
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 500, "{checked}");
    }
}
