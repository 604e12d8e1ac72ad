//! Whispers: a coach's short natural-language note to its own side ("always
//! paper", "下一轮出石头", "counter them") read as something the engine can act
//! on. Pure: text (and the protocol's decision schema) in, a structured
//! [`Intent`] or a legacy [`Command`] out, identical to the reference client's
//! keyword bridge for the same input.
//!
//! The rules, in the reference's order:
//! - scope: any one-shot word → once, else persistent;
//! - target window: persistent words → persist, then "next" words, then
//!   "this round" words, else persist;
//! - a policy word (mirror / counter / repeat, or their one-shot forms) wins;
//! - else the protocol's choice keywords (longest alias first, substring of
//!   the lowercased text with runs of white space made one space);
//! - else the first run of decimal digits in the raw text.

use crate::json::{Map, Number, Value};
use crate::obj;

const PERSIST_WORDS: [&str; 22] = [
    "一直",
    "总是",
    "永远",
    "以后",
    "接下来都",
    "接下来",
    "持续",
    "保持",
    "固定",
    "循环",
    "重复",
    "每轮都",
    "每手都",
    "全都",
    "always",
    "keep",
    "forever",
    "from now on",
    "all future",
    "every",
    "persist",
    "sticky",
];

const ONCE_WORDS: [&str; 17] = [
    "这手",
    "这轮",
    "这一手",
    "这一轮",
    "下一手",
    "下一轮",
    "下次",
    "只",
    "仅",
    "就这次",
    "这一次",
    "this round",
    "this turn",
    "next",
    "once",
    "just this",
    "one time",
];

const NEXT_WORDS: [&str; 5] = ["下一轮", "下一手", "下次", "next", "下一局"];
const CURRENT_WORDS: [&str; 6] = [
    "这轮",
    "这一轮",
    "这手",
    "这一手",
    "this round",
    "this turn",
];

/// Policies that stay on until replaced, with their trigger words.
const POLICIES: [(&str, &[&str]); 3] = [
    (
        "mirror_previous_opponent",
        &[
            "模仿对方上一轮",
            "模仿对方上一次",
            "跟着对方上一轮",
            "跟着对方出",
            "学对方上一轮",
            "学对方出",
            "对方出啥我出啥",
            "mirror",
            "copy opponent",
        ],
    ),
    (
        "counter_previous_opponent",
        &[
            "克制对方上一轮",
            "克制对方上一次",
            "打败对方上一轮",
            "克制上一轮",
            "打败上一轮",
            "克制对方",
            "counter",
            "beat opponent",
        ],
    ),
    (
        "repeat_own_previous",
        &["重复自己上一轮", "重复上一轮的", "继续上一次", "repeat own"],
    ),
];

/// Policies for the next window only (checked first: they are more specific).
const ONCE_POLICIES: [(&str, &[&str]); 2] = [
    (
        "counter_once",
        &[
            "下一轮克制",
            "下一手克制",
            "下次克制",
            "下一轮打败",
            "下一手打败",
        ],
    ),
    (
        "mirror_once",
        &[
            "下一轮模仿",
            "下一手模仿",
            "下次模仿",
            "下一轮跟着",
            "下一手跟着",
        ],
    ),
];

/// Persistent or one-shot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Persist,
    Once,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Persist => "persist",
            Scope::Once => "once",
        }
    }
}

/// Which window a whisper aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetWindow {
    Current,
    Next,
    Persist,
}

impl TargetWindow {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetWindow::Current => "current",
            TargetWindow::Next => "next",
            TargetWindow::Persist => "persist",
        }
    }
}

/// A protocol's decision schema as far as whispers use it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// The decision window's key (`round`, `attempt`, `action_seq`).
    pub match_key: Option<&'static str>,
    /// The decision body's value field (`choice`, `bid`, `number`…).
    pub value_field: Option<&'static str>,
    /// The strategy.json key a persistent value goes to (`fixed`, `bid`…).
    pub strategy_field: Option<&'static str>,
    /// Each choice with its aliases, in declaration order.
    pub choices: Vec<(&'static str, Vec<String>)>,
}

const RPS_WORDS: [(&str, &[&str]); 3] = [
    ("rock", &["rock", "石头", "石", "r"]),
    ("paper", &["paper", "布", "纸", "p"]),
    ("scissors", &["scissors", "剪刀", "剪", "s"]),
];
const COIN_WORDS: [(&str, &[&str]); 2] = [
    ("heads", &["heads", "head", "正面", "正", "h"]),
    ("tails", &["tails", "tail", "反面", "反", "t"]),
];

fn word_choices(table: &[(&'static str, &[&str])]) -> Vec<(&'static str, Vec<String>)> {
    table
        .iter()
        .map(|(c, a)| (*c, a.iter().map(|s| (*s).to_owned()).collect()))
        .collect()
}

/// Choices whose "aliases" are a single label string: the reference iterates
/// the string, so every character of it is an alias.
fn label_choices(table: &[(&'static str, &str)]) -> Vec<(&'static str, Vec<String>)> {
    table
        .iter()
        .map(|(c, label)| (*c, label.chars().map(String::from).collect()))
        .collect()
}

impl Schema {
    /// The decision schema the reference's hooks declare for a bundled
    /// protocol, by the spec's `name` or the bundled directory name; `None`
    /// for protocols that declare none (board games, chat).
    pub fn for_protocol(name: &str) -> Option<Schema> {
        let s = match name {
            "Rock-Paper-Scissors" | "rps-v1" => Schema {
                match_key: Some("round"),
                value_field: Some("choice"),
                strategy_field: Some("fixed"),
                choices: word_choices(&RPS_WORDS),
            },
            "Coin Flip" | "coin-flip-v1" => Schema {
                match_key: Some("round"),
                value_field: Some("choice"),
                strategy_field: Some("fixed"),
                choices: word_choices(&COIN_WORDS),
            },
            "Guess Number" | "guess-number-v1" => Schema {
                match_key: Some("attempt"),
                value_field: Some("number"),
                strategy_field: Some("number"),
                choices: Vec::new(),
            },
            "Weak Wins All" | "weak-wins-all" => Schema {
                match_key: Some("round"),
                value_field: Some("bid"),
                strategy_field: Some("bid"),
                choices: Vec::new(),
            },
            "Hero Duel" | "hero-duel-v1" => Schema {
                match_key: Some("round"),
                value_field: Some("move"),
                strategy_field: Some("move"),
                choices: label_choices(&[
                    ("normal", "Normal"),
                    ("skill_a", "SkillA"),
                    ("skill_b", "SkillB"),
                    ("ult", "Ult"),
                ]),
            },
            "Crazy Eights" | "crazy-eights-v1" => Schema {
                match_key: Some("action_seq"),
                value_field: Some("kind"),
                strategy_field: None,
                choices: label_choices(&[("play", "play"), ("draw", "draw"), ("pass", "pass")]),
            },
            "Briscola" | "briscola-v1" => Schema {
                match_key: Some("action_seq"),
                value_field: Some("kind"),
                strategy_field: None,
                choices: label_choices(&[("play", "play"), ("draw", "draw")]),
            },
            _ => return None,
        };
        Some(s)
    }

    /// The choice keywords of the protocols that declare them for the
    /// legacy bridge (RPS and coin flip only, as in the reference).
    pub fn legacy_keywords(name: &str) -> Option<Vec<(&'static str, Vec<String>)>> {
        match name {
            "Rock-Paper-Scissors" | "rps-v1" => Some(word_choices(&RPS_WORDS)),
            "Coin Flip" | "coin-flip-v1" => Some(word_choices(&COIN_WORDS)),
            _ => None,
        }
    }
}

/// What a whisper was understood as.
#[derive(Debug, Clone, PartialEq)]
pub struct Intent {
    pub scope: Scope,
    pub target: TargetWindow,
    /// `(value field, value)`: a fixed choice or number.
    pub value: Option<(String, Value)>,
    /// A policy id (`counter_previous_opponent`, `mirror_once`…).
    pub policy: Option<&'static str>,
    pub raw_text: String,
    pub confidence: f64,
}

impl Intent {
    /// `{"mode": "policy", "policy": id, "params": {}}`.
    pub fn policy_object(&self) -> Option<Map> {
        self.policy
            .map(|p| obj! { "mode" => "policy", "policy" => p, "params" => Map::new() })
    }

    /// `{field: value}`.
    pub fn value_object(&self) -> Option<Map> {
        self.value.as_ref().map(|(f, v)| {
            let mut m = Map::new();
            m.insert(f.as_str(), v.clone());
            m
        })
    }

    /// The reference's intent object, key for key.
    pub fn to_json(&self) -> Map {
        let opt = |m: Option<Map>| m.map(Value::Object).unwrap_or(Value::Null);
        obj! {
            "scope" => self.scope.as_str(),
            "target_policy" => self.target.as_str(),
            "value" => opt(self.value_object()),
            "policy" => opt(self.policy_object()),
            "raw_text" => self.raw_text.as_str(),
            "confidence" => self.confidence,
        }
    }
}

/// The legacy bridge's answer: a strategy patch or a one-shot decision body.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Strategy(Map),
    Decide(Map),
}

impl Command {
    /// `{"type": "strategy"|"decide", "payload": …}`.
    pub fn to_json(&self) -> Map {
        let (t, p) = match self {
            Command::Strategy(p) => ("strategy", p),
            Command::Decide(p) => ("decide", p),
        };
        obj! { "type" => t, "payload" => p.clone() }
    }
}

/// Python's `str.isspace` (also `\s` of a `str` regex): Unicode white space
/// plus the four separators U+001C–U+001F.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
pub fn py_trim(text: &str) -> &str {
    text.trim_matches(py_space)
}

/// Trimmed, lowercased, each run of white space one space.
pub fn normalize(text: &str) -> String {
    let lower = text.trim_matches(py_space).to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut in_space = false;
    for c in lower.chars() {
        if py_space(c) {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

fn any_in(norm: &str, words: &[&str]) -> bool {
    words.iter().any(|w| norm.contains(w))
}

/// Once when a one-shot word is there, else persistent.
pub fn detect_scope(text: &str) -> Scope {
    if any_in(&normalize(text), &ONCE_WORDS) {
        Scope::Once
    } else {
        Scope::Persist
    }
}

/// The window a whisper aims at.
pub fn detect_target(text: &str) -> TargetWindow {
    let norm = normalize(text);
    if any_in(&norm, &PERSIST_WORDS) {
        TargetWindow::Persist
    } else if any_in(&norm, &NEXT_WORDS) {
        TargetWindow::Next
    } else if any_in(&norm, &CURRENT_WORDS) {
        TargetWindow::Current
    } else {
        TargetWindow::Persist
    }
}

/// The policy a whisper names, one-shot policies first.
pub fn detect_policy(text: &str) -> Option<&'static str> {
    let norm = normalize(text);
    ONCE_POLICIES
        .iter()
        .chain(POLICIES.iter())
        .find(|(_, words)| any_in(&norm, words))
        .map(|(id, _)| *id)
}

fn is_once_policy(id: &str) -> bool {
    ONCE_POLICIES.iter().any(|(p, _)| *p == id)
}

/// The choice whose alias (longest first; ties in declaration order) occurs
/// in the text.
pub fn match_choice(text: &str, choices: &[(&'static str, Vec<String>)]) -> Option<&'static str> {
    let norm = normalize(text);
    let mut pairs: Vec<(String, &'static str)> = choices
        .iter()
        .flat_map(|(c, aliases)| aliases.iter().map(move |a| (a.to_lowercase(), *c)))
        .collect();
    // Python sorts by `len` (code points), stable.
    pairs.sort_by_key(|(a, _)| std::cmp::Reverse(a.chars().count()));
    pairs
        .into_iter()
        .find(|(a, _)| !a.is_empty() && norm.contains(a.as_str()))
        .map(|(_, c)| c)
}

/// The first code points of each run of ten decimal digits (Unicode 14,
/// category Nd), as Python's `\d` and `int()` know them.
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50,
    0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

fn decimal(c: char) -> Option<u8> {
    let cp = c as u32;
    let i = DIGIT_ZEROS.partition_point(|z| *z <= cp);
    let zero = *DIGIT_ZEROS.get(i.checked_sub(1)?)?;
    let d = cp - zero;
    (d < 10).then_some(d as u8)
}

/// Python's default limit on the digits `int()` converts.
const MAX_INT_DIGITS: usize = 4300;

/// The first run of decimal digits in the text as an integer (any size;
/// `None` past Python's 4,300-digit conversion limit).
pub fn extract_number(text: &str) -> Option<Value> {
    let mut digits = String::new();
    let mut started = false;
    for c in text.chars() {
        match decimal(c) {
            Some(d) => {
                started = true;
                if digits.len() > MAX_INT_DIGITS {
                    return None;
                }
                digits.push(char::from(b'0' + d));
            }
            None if started => break,
            None => {}
        }
    }
    if !started || digits.len() > MAX_INT_DIGITS {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
    Some(match trimmed.parse::<i64>() {
        Ok(i) => Value::from(i),
        Err(_) => Value::Number(Number::BigInt(trimmed.into())),
    })
}

/// Reads a whisper as an intent, under the protocol's schema when known;
/// `None` when nothing in it can be acted on.
pub fn parse_intent(text: &str, schema: Option<&Schema>) -> Option<Intent> {
    if text.trim_matches(py_space).is_empty() {
        return None;
    }
    let default = Schema::default();
    let schema = schema.unwrap_or(&default);
    let has_choices = !schema.choices.is_empty();
    let value_field = schema
        .value_field
        .unwrap_or(if has_choices { "choice" } else { "bid" });
    let scope = detect_scope(text);
    let target = detect_target(text);
    if let Some(policy) = detect_policy(text) {
        let once = is_once_policy(policy);
        return Some(Intent {
            scope: if once { Scope::Once } else { scope },
            target: if once {
                TargetWindow::Next
            } else if scope == Scope::Persist {
                TargetWindow::Persist
            } else {
                target
            },
            value: None,
            policy: Some(policy),
            raw_text: text.to_owned(),
            confidence: 0.85,
        });
    }
    let value = if has_choices {
        match_choice(text, &schema.choices).map(Value::from)
    } else {
        None
    };
    let value = value.or_else(|| extract_number(text))?;
    Some(Intent {
        scope,
        target,
        value: Some((value_field.to_owned(), value)),
        policy: None,
        raw_text: text.to_owned(),
        confidence: 0.9,
    })
}

/// The legacy bridge (what the reference's `session whisper` command and
/// its hooks' operator_hint fallback use): choice keywords only, a
/// persistent value as `{"mode": "fixed", "fixed"|"bid": v}`, a one-shot one
/// as `{match_key: match_value, "choice"|"bid": v}`, a persistent policy as
/// the policy object; a one-shot policy is not expressible (`None`).
pub fn parse_command(
    text: &str,
    keywords: Option<&[(&'static str, Vec<String>)]>,
    match_key: &str,
    match_value: Value,
) -> Option<Command> {
    let keywords = keywords.filter(|k| !k.is_empty());
    let schema = Schema {
        choices: keywords.map(<[_]>::to_vec).unwrap_or_default(),
        ..Schema::default()
    };
    let intent = parse_intent(text, Some(&schema))?;
    if let Some(p) = intent.policy_object()
        && intent.scope == Scope::Persist
    {
        return Some(Command::Strategy(p));
    }
    let (_, v) = intent.value?;
    let field = if keywords.is_some() { "choice" } else { "bid" };
    Some(match intent.scope {
        Scope::Persist => {
            let key = if keywords.is_some() { "fixed" } else { "bid" };
            Command::Strategy(obj! { "mode" => "fixed", key => v })
        }
        Scope::Once => {
            let mut m = Map::new();
            m.insert(match_key, match_value);
            m.insert(field, v);
            Command::Decide(m)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rps() -> Schema {
        Schema::for_protocol("rps-v1").unwrap_or_default()
    }

    #[test]
    fn persistent_choice() {
        let i = parse_intent("Always PAPER", Some(&rps())).unwrap();
        assert_eq!(i.scope, Scope::Persist);
        assert_eq!(i.target, TargetWindow::Persist);
        assert_eq!(i.value, Some(("choice".into(), Value::from("paper"))));
    }

    #[test]
    fn one_shot_chinese() {
        let i = parse_intent("下一轮出石头", Some(&rps())).unwrap();
        assert_eq!(i.scope, Scope::Once);
        assert_eq!(i.target, TargetWindow::Next);
        assert_eq!(i.value, Some(("choice".into(), Value::from("rock"))));
    }

    #[test]
    fn policies_and_numbers() {
        let i = parse_intent("下一轮克制他", Some(&rps())).unwrap();
        assert_eq!(i.policy, Some("counter_once"));
        assert_eq!(i.scope, Scope::Once);
        let i = parse_intent("bid ７0 now", None).unwrap();
        assert_eq!(i.value, Some(("bid".into(), Value::from(70))));
        let big = "9".repeat(40);
        let i = parse_intent(&big, None).unwrap();
        assert!(matches!(
            i.value,
            Some((_, Value::Number(Number::BigInt(_))))
        ));
        assert!(parse_intent(&"1".repeat(5000), None).is_none());
        assert!(parse_intent("  \u{1f} ", None).is_none());
        assert!(parse_intent("hello there", None).is_none());
    }

    #[test]
    fn legacy_command() {
        let kw = Schema::legacy_keywords("rps-v1");
        let c = parse_command("always paper", kw.as_deref(), "round", Value::Null).unwrap();
        assert_eq!(
            c,
            Command::Strategy(obj! { "mode" => "fixed", "fixed" => "paper" })
        );
        assert!(parse_command("always paper", None, "round", Value::Null).is_none());
    }
}
