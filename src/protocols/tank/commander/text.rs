//! The few pieces of Python's text model the whisper parser depends on:
//! what `\s` and `\d` match in a `str` pattern, how `re.IGNORECASE` widens
//! an ASCII letter, `str.lower()` where it can make an ASCII letter, and
//! `int()` of a run of decimal digits (any script) as an exact natural
//! number.

use crate::json::{Number, Value};
use std::cmp::Ordering;

/// The first code point of every run of ten Unicode decimal digits (category
/// Nd) in Unicode 14.0, the database of the reference's Python 3.11.
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50,
    0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// The value of `c` if Python's `\d` (and `int()`) takes it as a digit.
pub fn digit(c: char) -> Option<u8> {
    let c = c as u32;
    let i = DIGIT_ZEROS.partition_point(|&z| z <= c);
    let zero = *DIGIT_ZEROS.get(i.checked_sub(1)?)?;
    (c - zero < 10).then(|| (c - zero) as u8)
}

pub fn is_digit(c: char) -> bool {
    digit(c).is_some()
}

/// Python's `str.isspace()`, which is also what `\s` and `str.strip()` take.
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1c}'..='\u{1f}')
}

/// Python's `str.strip()` without arguments.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Whether text char `c` matches the pattern letter `lit` (lower-case ASCII)
/// under `re.IGNORECASE`: either case, plus the three non-ASCII letters
/// Python folds onto `i`, `k` and `s`.
pub fn ci_char(c: char, lit: char) -> bool {
    c.to_ascii_lowercase() == lit
        || matches!(
            (lit, c),
            ('i', '\u{130}') | ('i', '\u{131}') | ('k', '\u{212a}') | ('s', '\u{17f}')
        )
}

/// Whether `word` (lower-case ASCII or any literal text) starts `chars[at..]`
/// under `re.IGNORECASE`; returns the position after it.
pub fn ci_at(chars: &[char], at: usize, word: &str) -> Option<usize> {
    let mut i = at;
    for w in word.chars() {
        let c = *chars.get(i)?;
        let ok = if w.is_ascii_alphabetic() {
            ci_char(c, w)
        } else {
            c == w
        };
        if !ok {
            return None;
        }
        i += 1;
    }
    Some(i)
}

/// Case-sensitive `word` at `chars[at..]`; the position after it.
pub fn lit_at(chars: &[char], at: usize, word: &str) -> Option<usize> {
    let mut i = at;
    for w in word.chars() {
        if *chars.get(i)? != w {
            return None;
        }
        i += 1;
    }
    Some(i)
}

/// The first of `words` at `chars[at..]` (case-insensitive when `ci`).
pub fn any_at(chars: &[char], at: usize, words: &[&str], ci: bool) -> Option<usize> {
    words.iter().find_map(|w| {
        if ci {
            ci_at(chars, at, w)
        } else {
            lit_at(chars, at, w)
        }
    })
}

/// Whether any of `words` occurs anywhere in `chars` (a `re.search` of an
/// alternation of literals).
pub fn contains_any(chars: &[char], words: &[&str], ci: bool) -> bool {
    (0..=chars.len()).any(|i| any_at(chars, i, words, ci).is_some())
}

/// Skip `\s*` from `at`.
pub fn skip_space(chars: &[char], mut at: usize) -> usize {
    while chars.get(at).is_some_and(|&c| is_space(c)) {
        at += 1;
    }
    at
}

/// The maximal run of digits from `at` (none: `None`), and where it ends.
pub fn digits_at(chars: &[char], at: usize) -> Option<(Nat, usize)> {
    let mut end = at;
    while chars.get(end).is_some_and(|&c| is_digit(c)) {
        end += 1;
    }
    (end > at).then(|| (Nat::from_digits(&chars[at..end]), end))
}

/// Python's `str.lower()` as far as it can produce an ASCII letter: ASCII
/// capitals, the Kelvin sign and the dotted capital I (which becomes `i`
/// and a combining dot). Other characters are left as they are: their
/// lower-case forms hold no ASCII letter, so no alias can match in them.
pub fn lower_for_aliases(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            'A'..='Z' => out.push(c.to_ascii_lowercase()),
            '\u{212a}' => out.push('k'),
            '\u{130}' => out.push_str("i\u{307}"),
            _ => out.push(c),
        }
    }
    out
}

/// The first `n` code points of `s` (Python's `s[:n]`).
pub fn prefix_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A natural number of any size, as Python's `int()` reads a digit run:
/// decimal ASCII digits without leading zeros (`"0"` for zero).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Nat(String);

impl Nat {
    pub fn from_digits(chars: &[char]) -> Nat {
        let mut s: String = chars
            .iter()
            .filter_map(|&c| digit(c))
            .map(|d| char::from(b'0' + d))
            .skip_while(|&c| c == '0')
            .collect();
        if s.is_empty() {
            s.push('0');
        }
        Nat(s)
    }

    pub fn from_u64(n: u64) -> Nat {
        Nat(n.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value if it is at most `u64::MAX`.
    pub fn to_u64(&self) -> Option<u64> {
        self.0.parse().ok()
    }

    /// `min(self, cap)` as a `u64`.
    pub fn min_u64(&self, cap: u64) -> u64 {
        self.to_u64().map_or(cap, |v| v.min(cap))
    }
}

impl Ord for Nat {
    fn cmp(&self, other: &Nat) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for Nat {
    fn partial_cmp(&self, other: &Nat) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A Python int as the whisper parser makes one: a tick (any `i64`) or a
/// number read from the text, maybe beyond 64 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PyInt {
    Small(i64),
    /// Always above `i64::MAX`.
    Big(Nat),
}

impl PyInt {
    pub fn from_nat(n: &Nat) -> PyInt {
        match n.as_str().parse::<i64>() {
            Ok(v) => PyInt::Small(v),
            Err(_) => PyInt::Big(n.clone()),
        }
    }

    /// `self + n` for a small non-negative `n`.
    pub fn add(&self, n: u64) -> PyInt {
        match self {
            PyInt::Small(v) => match v.checked_add(n as i64) {
                Some(s) => PyInt::Small(s),
                None => PyInt::Big(Nat(((*v as i128) + n as i128).to_string())),
            },
            PyInt::Big(b) => PyInt::Big(add_decimal(b, n)),
        }
    }

    pub fn max(self, other: PyInt) -> PyInt {
        if self.cmp(&other) == Ordering::Less {
            other
        } else {
            self
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            PyInt::Small(v) => Value::Number(Number::Int(*v)),
            PyInt::Big(n) => Value::Number(Number::BigInt(n.as_str().into())),
        }
    }
}

impl Ord for PyInt {
    fn cmp(&self, other: &PyInt) -> Ordering {
        match (self, other) {
            (PyInt::Small(a), PyInt::Small(b)) => a.cmp(b),
            (PyInt::Small(_), PyInt::Big(_)) => Ordering::Less,
            (PyInt::Big(_), PyInt::Small(_)) => Ordering::Greater,
            (PyInt::Big(a), PyInt::Big(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for PyInt {
    fn partial_cmp(&self, other: &PyInt) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn add_decimal(a: &Nat, n: u64) -> Nat {
    let mut digits: Vec<u8> = a.0.bytes().rev().map(|b| b - b'0').collect();
    let mut carry = n;
    let mut i = 0;
    while carry > 0 {
        if i == digits.len() {
            digits.push(0);
        }
        let s = u64::from(digits[i]) + carry % 10;
        digits[i] = (s % 10) as u8;
        carry = carry / 10 + s / 10;
        i += 1;
    }
    Nat(digits.iter().rev().map(|d| char::from(b'0' + d)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_of_other_scripts_read_as_python_does() {
        assert_eq!(digit('7'), Some(7));
        assert_eq!(digit('\u{663}'), Some(3));
        assert_eq!(digit('\u{ff19}'), Some(9));
        assert_eq!(digit('a'), None);
        assert_eq!(digit('\u{2163}'), None);
        let n = Nat::from_digits(&['0', '0', '\u{ff11}', '2']);
        assert_eq!(n.as_str(), "12");
        assert_eq!(Nat::from_digits(&['0']).as_str(), "0");
    }

    #[test]
    fn big_numbers_add_and_compare() {
        let big = PyInt::from_nat(&Nat("99999999999999999999".into()));
        assert_eq!(
            big.add(1).to_value(),
            Value::Number(Number::BigInt("100000000000000000000".into()))
        );
        assert!(big > PyInt::Small(i64::MAX));
        assert_eq!(
            PyInt::Small(i64::MAX).add(1),
            PyInt::Big(Nat("9223372036854775808".into()))
        );
        assert_eq!(PyInt::Small(5).max(PyInt::Small(3)), PyInt::Small(5));
    }

    #[test]
    fn ignorecase_folds_like_python() {
        assert!(ci_char('K', 'k') && ci_char('\u{212a}', 'k') && ci_char('\u{17f}', 's'));
        assert!(!ci_char('\u{17f}', 'f'));
        assert!(is_space('\u{1f}') && is_space('\u{3000}') && !is_space('\u{200b}'));
        assert_eq!(lower_for_aliases("ATTACK \u{130}"), "attack i\u{307}");
        assert_eq!(prefix_chars("坦克abc", 3), "坦克a");
    }
}
