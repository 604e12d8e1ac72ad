//! The parser: one JSON document into a [`Value`], with the line, column
//! and member path of every error.
//!
//! A [`Dialect`] makes the choices JSON leaves open: what a repeated object
//! key means, how deep documents may nest, and any further checks on keys
//! and numbers. [`Python`] is the reference client's (`json.loads`); the
//! GTL market's strict dialect refuses repeated keys.

use super::short;
use super::value::{Key, Map, Number, Value};
use std::borrow::Cow;
use std::collections::HashMap;

/// Deepest nesting the [`Python`] dialect accepts. The reference (CPython's
/// `json`) fails around a depth of 1000 with a RecursionError; we stop
/// earlier with a clear error so a hostile frame can never exhaust a
/// thread's stack.
pub const MAX_DEPTH: usize = 512;

/// What a parse does with a key its object already has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuplicateKeys {
    /// Python's `dict`: the key keeps its first position and takes the last
    /// value.
    LastWins,
    /// The document is refused, for the reason given.
    Reject(&'static str),
}

/// The choices a parse makes beyond JSON's grammar. Every check runs in
/// document order, so the first problem in the text is the one reported.
pub trait Dialect {
    const DUPLICATE_KEYS: DuplicateKeys;
    /// Deepest nesting of arrays and objects accepted.
    const MAX_DEPTH: usize;

    /// Checks an object key before its value is read; `Err(reason)`
    /// refuses the document.
    #[inline(always)]
    fn key(_key: &str) -> Result<(), String> {
        Ok(())
    }

    /// Checks a number, given with its literal text (`-0` parses as the
    /// integer 0); `Err(reason)` refuses the document.
    #[inline(always)]
    fn number(_literal: &str, _n: &Number) -> Result<(), String> {
        Ok(())
    }
}

/// The reference client's dialect: duplicate keys as Python's `dict` takes
/// them, nesting up to [`MAX_DEPTH`], no further checks.
pub struct Python;

impl Dialect for Python {
    const DUPLICATE_KEYS: DuplicateKeys = DuplicateKeys::LastWins;
    const MAX_DEPTH: usize = MAX_DEPTH;
}

/// A document that could not be parsed, with its position (1-based line and
/// column, 0-based byte offset) and the member it was in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg} at line {line}, column {column}")]
pub struct ParseError {
    pub msg: String,
    pub line: usize,
    pub column: usize,
    pub offset: usize,
    /// The member being read, as `a.b[2]` (empty for the document itself).
    pub path: String,
}

/// Parses one JSON document from bytes in the [`Python`] dialect. Rejects
/// what the reference cannot hash or send: invalid UTF-8, a byte-order mark,
/// `NaN`/`Infinity`, floats that overflow to infinity, lone surrogates, raw
/// control characters in strings, nesting deeper than [`MAX_DEPTH`], and
/// trailing data.
pub fn parse_bytes(input: &[u8]) -> Result<Value, ParseError> {
    parse_with::<Python>(input)
}

/// Parses one JSON document from text; see [`parse_bytes`].
pub fn parse_str(text: &str) -> Result<Value, ParseError> {
    parse_text::<Python>(text)
}

/// Parses one JSON document from bytes in dialect `D`.
pub fn parse_with<D: Dialect>(input: &[u8]) -> Result<Value, ParseError> {
    match std::str::from_utf8(input) {
        Ok(text) => parse_text::<D>(text),
        Err(e) => {
            let mut p = Parser::<D>::new("", input);
            p.pos = e.valid_up_to();
            Err(p.err("invalid UTF-8"))
        }
    }
}

/// Parses one JSON document from text in dialect `D`.
fn parse_text<D: Dialect>(text: &str) -> Result<Value, ParseError> {
    let mut p = Parser::<D>::new(text, text.as_bytes());
    if text.starts_with('\u{feff}') {
        return Err(p.err("unexpected byte-order mark (save the file as UTF-8 without BOM)"));
    }
    p.skip_ws();
    let v = match p.value() {
        Ok(v) => v,
        Err(mut e) => {
            e.path = p.path();
            return Err(e);
        }
    };
    p.skip_ws();
    if p.pos < p.s.len() {
        return Err(p.err("unexpected data after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a, D> {
    /// The same input as text (empty when it is not valid UTF-8).
    text: &'a str,
    s: &'a [u8],
    pos: usize,
    depth: usize,
    /// Strings so far whose text needs an escape in canonical JSON; an
    /// object is plain when parsing it did not raise this count.
    escaped: usize,
    /// The members an error unwound through, innermost first.
    trail: Vec<Step>,
    dialect: std::marker::PhantomData<D>,
}

/// One step of an error's member path.
enum Step {
    Key(Key),
    Index(usize),
}

/// An object's members as they are read, with the duplicate-key lookup:
/// up to [`SCANNED`] keys are compared in turn, more are indexed, so a
/// frame with many keys cannot make parsing quadratic.
#[derive(Default)]
struct Members {
    entries: Vec<(Key, Value)>,
    index: Option<HashMap<Key, usize>>,
}

/// Objects up to this size look keys up by scanning.
const SCANNED: usize = 16;

impl Members {
    /// Where `k` already is, if it is.
    fn find(&self, k: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(k).copied(),
            None => self.entries.iter().position(|(e, _)| short::str_eq(e, k)),
        }
    }

    /// Adds a key the object does not have yet.
    fn push(&mut self, k: Key, v: Value) {
        if let Some(index) = &mut self.index {
            index.insert(k.clone(), self.entries.len());
        } else if self.entries.len() == SCANNED {
            let mut index = HashMap::with_capacity(2 * SCANNED);
            for (i, (e, _)) in self.entries.iter().enumerate() {
                index.insert(e.clone(), i);
            }
            index.insert(k.clone(), self.entries.len());
            self.index = Some(index);
        }
        self.entries.push((k, v));
    }
}

impl<'a, D: Dialect> Parser<'a, D> {
    fn new(text: &'a str, s: &'a [u8]) -> Self {
        Parser {
            text,
            s,
            pos: 0,
            depth: 0,
            escaped: 0,
            trail: Vec::new(),
            dialect: std::marker::PhantomData,
        }
    }

    /// The path the error unwound through, as `a.b[2]`.
    fn path(&self) -> String {
        let mut out = String::new();
        for step in self.trail.iter().rev() {
            match step {
                Step::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Step::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }

    fn err(&mut self, msg: impl Into<String>) -> ParseError {
        let upto = &self.s[..self.pos.min(self.s.len())];
        let line = upto.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = upto.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        // Columns count characters, not bytes.
        let column = String::from_utf8_lossy(&upto[line_start..]).chars().count() + 1;
        ParseError {
            msg: msg.into(),
            line,
            column,
            offset: self.pos,
            path: String::new(),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.err("unexpected end of input, expected a value")),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => Ok(Value::from(self.string()?.as_ref())),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'N') if self.s[self.pos..].starts_with(b"NaN") => {
                Err(self.err("NaN is not valid JSON"))
            }
            Some(b'I') if self.s[self.pos..].starts_with(b"Infinity") => {
                Err(self.err("Infinity is not valid JSON"))
            }
            Some(_) => Err(self.err("expected a value")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, ParseError> {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.err("expected a value"))
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > D::MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {} levels", D::MAX_DEPTH)));
        }
        Ok(())
    }

    fn object(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        self.pos += 1;
        let escaped_before = self.escaped;
        let mut members = Members::default();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Object(Map::new()));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key in double quotes"));
            }
            let key_at = self.pos;
            let k = Key::from(self.string()?);
            let seen = members.find(&k);
            if let Err(why) = self.key_allowed(&k, seen.is_some()) {
                self.pos = key_at;
                let e = self.err(why);
                self.trail.push(Step::Key(k));
                return Err(e);
            }
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.err("expected ':' after an object key"));
            }
            self.pos += 1;
            self.skip_ws();
            let v = match self.value() {
                Ok(v) => v,
                Err(e) => {
                    self.trail.push(Step::Key(k));
                    return Err(e);
                }
            };
            match seen {
                Some(j) => members.entries[j].1 = v,
                None => members.push(k, v),
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.err("expected ',' or '}' after an object member")),
            }
        }
        self.depth -= 1;
        Ok(Value::Object(Map::from_parsed(
            members.entries,
            self.escaped == escaped_before,
        )))
    }

    /// The dialect's verdict on a key, `repeated` when the object has it.
    #[inline(always)]
    fn key_allowed(&self, k: &str, repeated: bool) -> Result<(), String> {
        D::key(k)?;
        match D::DUPLICATE_KEYS {
            DuplicateKeys::Reject(why) if repeated => Err(why.to_owned()),
            _ => Ok(()),
        }
    }

    fn array(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            match self.value() {
                Ok(v) => items.push(v),
                Err(e) => {
                    self.trail.push(Step::Index(items.len()));
                    return Err(e);
                }
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.err("expected ',' or ']' after an array element")),
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// A string literal at `pos`, borrowed from the input when it has no
    /// escapes.
    fn string(&mut self) -> Result<Cow<'a, str>, ParseError> {
        self.pos += 1; // opening quote
        let start = self.pos;
        // Fast path: no escapes.
        while let Some(&b) = self.s.get(self.pos) {
            match b {
                b'"' => {
                    let end = self.pos;
                    self.pos += 1;
                    // The input is valid UTF-8 and both ends are ASCII
                    // quotes, so the slice is on character boundaries.
                    return Ok(match self.text.get(start..end) {
                        Some(t) => Cow::Borrowed(t),
                        None => String::from_utf8_lossy(&self.s[start..end]),
                    });
                }
                b'\\' => break,
                0..=0x1f => return Err(self.err("control character in string (escape it)")),
                _ => self.pos += 1,
            }
        }
        let mut buf: Vec<u8> = self.s[start..self.pos].to_vec();
        loop {
            let Some(&b) = self.s.get(self.pos) else {
                return Err(self.err("unterminated string"));
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    if buf.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
                        self.escaped += 1;
                    }
                    return String::from_utf8(buf)
                        .map(Cow::Owned)
                        .map_err(|_| self.err("invalid UTF-8 in string"));
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(&e) = self.s.get(self.pos) else {
                        return Err(self.err("unterminated string"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => buf.push(b'"'),
                        b'\\' => buf.push(b'\\'),
                        b'/' => buf.push(b'/'),
                        b'b' => buf.push(8),
                        b'f' => buf.push(12),
                        b'n' => buf.push(b'\n'),
                        b'r' => buf.push(b'\r'),
                        b't' => buf.push(b'\t'),
                        b'u' => {
                            let c = self.unicode_escape()?;
                            let mut tmp = [0u8; 4];
                            buf.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.err("invalid escape in string"));
                        }
                    }
                }
                0..=0x1f => return Err(self.err("control character in string (escape it)")),
                _ => {
                    buf.push(b);
                    self.pos += 1;
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let Some(h) = self.s.get(self.pos..self.pos + 4) else {
            return Err(self.err("truncated \\u escape"));
        };
        let mut v = 0u32;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(self.err("invalid \\u escape")),
            };
            v = v * 16 + u32::from(d);
        }
        self.pos += 4;
        Ok(v)
    }

    fn unicode_escape(&mut self) -> Result<char, ParseError> {
        let hi = self.hex4()?;
        if (0xdc00..0xe000).contains(&hi) {
            return Err(self.err("lone surrogate in \\u escape (not encodable as UTF-8)"));
        }
        if (0xd800..0xdc00).contains(&hi) {
            if self.s[self.pos..].starts_with(b"\\u") {
                self.pos += 2;
                let lo = self.hex4()?;
                if (0xdc00..0xe000).contains(&lo) {
                    let cp = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                    return char::from_u32(cp).ok_or_else(|| self.err("invalid \\u escape"));
                }
            }
            return Err(self.err("lone surrogate in \\u escape (not encodable as UTF-8)"));
        }
        char::from_u32(hi).ok_or_else(|| self.err("invalid \\u escape"))
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = self.peek() {
                    self.pos += 1;
                }
            }
            _ => {
                if self.s[self.pos..].starts_with(b"Infinity") {
                    return Err(self.err("-Infinity is not valid JSON"));
                }
                return Err(self.err("expected digits in number"));
            }
        }
        let mut is_float = false;
        if self.peek() == Some(b'.') {
            is_float = true;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("expected digits after the decimal point"));
            }
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            is_float = true;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("expected digits in the exponent"));
            }
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        let lit = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("0");
        let n = if is_float {
            let f: f64 = lit.parse().map_err(|_| self.err("invalid number"))?;
            if !f.is_finite() {
                self.pos = start;
                return Err(self.err("number too large (would be Infinity)"));
            }
            Number::Float(f)
        } else {
            int_from_literal(lit)
        };
        if let Err(why) = D::number(lit, &n) {
            self.pos = start;
            return Err(self.err(why));
        }
        Ok(Value::Number(n))
    }
}

/// Builds an integer from a validated JSON integer literal.
fn int_from_literal(lit: &str) -> Number {
    match lit.parse::<i64>() {
        Ok(i) => Number::Int(i),
        Err(_) => Number::BigInt(lit.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_keeps_order_and_folds_duplicates_like_python() {
        let v = parse_str(r#"{"b":1,"a":2,"b":3}"#).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(v.get("b").unwrap().as_i64(), Some(3));
    }

    #[test]
    fn parse_errors_name_position() {
        let e = parse_str("{\n  \"a\": 1,\n  \"b\" 2\n}").unwrap_err();
        assert_eq!((e.line, e.column), (3, 7));
        assert!(e.msg.contains("':'"));
        assert!(parse_str("NaN").is_err());
        assert!(parse_str("[1e400]").is_err());
        assert!(parse_str(r#""\ud800""#).is_err());
        assert!(parse_str(r#""\udc00\ud800""#).is_err());
        assert_eq!(parse_str(r#""\ud83d\ude00""#).unwrap().as_str(), Some("😀"));
        assert!(parse_str("{} x").is_err());
        assert!(parse_str("\"a\u{1}\"").is_err());
        assert!(parse_bytes(b"\"\xff\"").is_err());
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert!(parse_str(&deep).unwrap_err().msg.contains("nesting"));
    }

    #[test]
    fn big_integers_stay_exact() {
        let v = parse_str("[12345678901234567890, -99999999999999999999, -0]").unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a[0].py_repr(), "12345678901234567890");
        assert_eq!(a[1].py_repr(), "-99999999999999999999");
        assert_eq!(a[2].as_i64(), Some(0));
    }

    #[test]
    fn many_keys_fold_like_python_too() {
        // Past the scanned size the lookup is indexed; the rule is the same.
        let mut src = String::from("{");
        for i in 0..40 {
            src.push_str(&format!("\"k{}\":{i},", i % 25));
        }
        src.push_str("\"k3\":\"last\"}");
        let v = parse_str(&src).unwrap();
        let m = v.as_object().unwrap();
        let keys: Vec<_> = m.keys().collect();
        let want: Vec<String> = (0..25).map(|i| format!("k{i}")).collect();
        assert_eq!(keys, want);
        assert_eq!(m.get("k3").unwrap().as_str(), Some("last"));
        assert_eq!(m.get("k10").unwrap().as_i64(), Some(35));
    }

    /// A dialect with every choice and check taken.
    struct Strict;

    impl Dialect for Strict {
        const DUPLICATE_KEYS: DuplicateKeys = DuplicateKeys::Reject("duplicate key");
        const MAX_DEPTH: usize = 4;

        fn key(key: &str) -> Result<(), String> {
            match key {
                "bad" => Err("bad key".into()),
                _ => Ok(()),
            }
        }

        fn number(literal: &str, n: &Number) -> Result<(), String> {
            match n {
                Number::Int(_) if literal != "-0" => Ok(()),
                _ => Err(format!("{literal} refused")),
            }
        }
    }

    fn strict(src: &str) -> Result<Value, ParseError> {
        parse_with::<Strict>(src.as_bytes())
    }

    #[test]
    fn a_dialect_refuses_with_the_member_path_in_document_order() {
        let e = strict(r#"{"a":{"b":[1,{"c":2,"c":3}]}}"#).unwrap_err();
        assert_eq!(
            (e.msg.as_str(), e.path.as_str()),
            ("duplicate key", "a.b[1].c")
        );
        assert_eq!(e.column, 21, "at the repeated key");
        let e = strict(r#"{"x":[0,-0]}"#).unwrap_err();
        assert_eq!((e.msg.as_str(), e.path.as_str()), ("-0 refused", "x[1]"));
        // The first problem in the text wins: the float before the key.
        let e = strict(r#"{"f":1.5,"bad":1,"f":2}"#).unwrap_err();
        assert_eq!((e.msg.as_str(), e.path.as_str()), ("1.5 refused", "f"));
        let e = strict(r#"{"ok":1,"bad":1}"#).unwrap_err();
        assert_eq!((e.msg.as_str(), e.path.as_str()), ("bad key", "bad"));
        assert_eq!(strict("2.0").unwrap_err().path, "");
        assert!(strict("[[[[1]]]]").is_ok());
        let deep = strict("[[[[[1]]]]]").unwrap_err();
        assert!(deep.msg.contains("deeper than 4"), "{deep}");
        // Syntax errors carry the path too; the Python dialect's as well.
        assert_eq!(strict(r#"{"a":[tru]}"#).unwrap_err().path, "a[0]");
        assert_eq!(parse_str(r#"{"a":{"b":nul}}"#).unwrap_err().path, "a.b");
        // Its dialect folds what this one refuses.
        assert!(parse_str(r#"{"c":2,"c":3,"bad":-0}"#).is_ok());
    }
}
