//! The JSON value model used wherever bytes must match the reference client.
//!
//! `serde_json::Value` cannot carry what the protocol contract needs: integers
//! beyond 64 bits, the distinction between `1` and `1.0`, and object key order
//! as written (the reference reports unknown message fields in the order the
//! sender wrote them). This module owns a small value type with those
//! properties, a strict parser that names the line and column of every error,
//! and the handful of Python semantics (equality, truthiness, `repr`) that the
//! reference's error texts and decisions depend on.

use std::cmp::Ordering;
use std::fmt::{self, Write as _};

/// An object key: up to 24 bytes are stored inline in the entry, so reading
/// a key costs no pointer chase.
pub use compact_str::CompactString as Key;

/// Deepest nesting the parser accepts. The reference (CPython's `json`) fails
/// around a depth of 1000 with a RecursionError; we stop earlier with a clear
/// error so a hostile frame can never exhaust a thread's stack.
pub const MAX_DEPTH: usize = 512;

/// A JSON number, kept exactly as the reference's Python model sees it.
#[derive(Debug, Clone)]
pub enum Number {
    /// An integer that fits in 64 bits.
    Int(i64),
    /// An integer outside the 64-bit range, as normalised decimal digits
    /// (optional `-`, no leading zeros).
    BigInt(Box<str>),
    /// A finite binary64 float (the literal had a fraction or exponent).
    Float(f64),
}

/// A parsed JSON value. Objects keep insertion order; a duplicate key keeps
/// its first position and takes the last value, as Python's `dict` does.
#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Map),
}

/// An insertion-ordered JSON object.
///
/// A parsed map also remembers what canonical serialisation (which hashes
/// depend on) would otherwise find out on every call: its key order by code
/// point, and whether any string in it or below it needs an escape.
#[derive(Debug, Clone, Default)]
pub struct Map {
    entries: Vec<(Key, Value)>,
    /// What the parser learned, kept in one allocation so a `Value` stays
    /// five words: `[flags]` when insertion order is key order, else
    /// `[flags, index of the entries in key order...]`. `None` (built or
    /// changed maps) knows nothing: the writer checks the order and scans
    /// every string.
    meta: Option<Box<[u32]>>,
}

/// String equality tuned for the short keys that fill objects: up to 16
/// bytes compare as two overlapping words (or three bytes), with no loop
/// and no `memcmp` call.
#[inline]
pub(crate) fn key_eq(a: &str, b: &str) -> bool {
    bytes_eq(a.as_bytes(), b.as_bytes())
}

/// [`key_eq`] on bytes.
#[inline]
pub(crate) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        if n > 16 {
            return a == b;
        }
        return w64(a) == w64(b) && w64(&a[n - 8..]) == w64(&b[n - 8..]);
    }
    if n >= 4 {
        return w32(a) == w32(b) && w32(&a[n - 4..]) == w32(&b[n - 4..]);
    }
    n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1])
}

/// The first eight bytes as a word (zero when `s` is shorter).
#[inline(always)]
fn w64(s: &[u8]) -> u64 {
    s.first_chunk::<8>().map_or(0, |c| u64::from_le_bytes(*c))
}

/// The first four bytes as a word (zero when `s` is shorter).
#[inline(always)]
fn w32(s: &[u8]) -> u32 {
    s.first_chunk::<4>().map_or(0, |c| u32::from_le_bytes(*c))
}

/// `meta[0]`: no key or string anywhere in this object (nested objects and
/// arrays included) contains `"`, `\` or a control character. Cleared by
/// every method that hands out or changes a member, so it can only be
/// stale in the safe direction.
const PLAIN: u32 = 1;

impl Map {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        Self {
            entries: Vec::with_capacity(n),
            meta: None,
        }
    }

    fn from_entries(entries: Vec<(Key, Value)>, plain: bool) -> Self {
        let flags = if plain { PLAIN } else { 0 };
        let in_order = entries.windows(2).all(|w| w[0].0 < w[1].0);
        let meta = if in_order {
            Some(vec![flags].into_boxed_slice())
        } else if entries.len() >= u32::MAX as usize {
            None
        } else {
            let mut idx: Vec<u32> = Vec::with_capacity(entries.len() + 1);
            idx.push(flags);
            idx.extend(0..entries.len() as u32);
            idx[1..].sort_unstable_by(|a, b| entries[*a as usize].0.cmp(&entries[*b as usize].0));
            Some(idx.into_boxed_slice())
        };
        Self { entries, meta }
    }

    /// Entries in key (code point) order, when the map knows it without
    /// sorting: `Some(None)` means insertion order is key order.
    pub(crate) fn known_key_order(&self) -> Option<Option<&[u32]>> {
        match self.meta.as_deref() {
            Some([_]) => Some(None),
            Some([_, idx @ ..]) if idx.len() == self.entries.len() => Some(Some(idx)),
            _ if self.entries.windows(2).all(|w| w[0].0 < w[1].0) => Some(None),
            _ => None,
        }
    }

    /// No string in this object or below it needs an escape (known for
    /// parsed objects that were not changed since).
    pub(crate) fn is_plain(&self) -> bool {
        self.meta.as_deref().is_some_and(|m| m[0] & PLAIN != 0)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, _)| key_eq(k, key))
            .map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        if let Some(m) = self.meta.as_deref_mut() {
            m[0] &= !PLAIN;
        }
        self.entries
            .iter_mut()
            .find(|(k, _)| key_eq(k, key))
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| key_eq(k, key))
    }

    /// Inserts or replaces; a replaced key keeps its original position.
    pub fn insert(&mut self, key: impl Into<Key>, value: Value) -> Option<Value> {
        let key = key.into();
        if let Some(slot) = self.get_mut(&key) {
            return Some(std::mem::replace(slot, value));
        }
        self.meta = None;
        self.entries.push((key, value));
        None
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let idx = self.entries.iter().position(|(k, _)| k == key)?;
        self.meta = None;
        Some(self.entries.remove(idx).1)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The members, by value, in insertion order.
    pub fn into_entries(self) -> Vec<(Key, Value)> {
        self.entries
    }

    pub(crate) fn entries(&self) -> &[(Key, Value)] {
        &self.entries
    }

    /// Builds a map from parsed entries, folding duplicate keys the way
    /// Python does. Small objects use a quadratic scan; large ones a hash
    /// index, so a frame with many keys cannot make parsing quadratic.
    fn from_parsed(mut entries: Vec<(Key, Value)>, plain: bool) -> Self {
        if entries.len() <= 16 {
            let mut i = 1;
            while i < entries.len() {
                if let Some(j) = entries[..i].iter().position(|(k, _)| *k == entries[i].0) {
                    let (_, v) = entries.remove(i);
                    entries[j].1 = v;
                } else {
                    i += 1;
                }
            }
            return Self::from_entries(entries, plain);
        }
        let mut seen: std::collections::HashMap<Key, usize> =
            std::collections::HashMap::with_capacity(entries.len());
        let mut out: Vec<(Key, Value)> = Vec::with_capacity(entries.len());
        for (k, v) in entries.drain(..) {
            match seen.get(&k) {
                Some(&j) => out[j].1 = v,
                None => {
                    seen.insert(k.clone(), out.len());
                    out.push((k, v));
                }
            }
        }
        Self::from_entries(out, plain)
    }
}

impl<K: Into<Key>> FromIterator<(K, Value)> for Map {
    fn from_iter<T: IntoIterator<Item = (K, Value)>>(iter: T) -> Self {
        let mut m = Map::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

/// Same JSON document: objects compare as sets of members (key order does
/// not matter), `1` and `1.0` differ. (Python's looser `==` is
/// [`Value::py_eq`].)
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(Number::Int(a)), Value::Number(Number::Int(b))) => a == b,
            (Value::Number(Number::BigInt(a)), Value::Number(Number::BigInt(b))) => a == b,
            (Value::Number(Number::Float(a)), Value::Number(Number::Float(b))) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => a == b,
            _ => false,
        }
    }
}

impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl Value {
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value as an `i64` if it is a JSON integer (never a bool, never a
    /// float) that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i),
            _ => None,
        }
    }

    /// The value as an `f64` if it is a JSON number (integers converted;
    /// big integers approximately).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i as f64),
            Value::Number(Number::Float(f)) => Some(*f),
            Value::Number(Number::BigInt(s)) => s.parse().ok(),
            _ => None,
        }
    }

    /// Python's `isinstance(v, int) and not isinstance(v, bool)`.
    pub fn is_integer(&self) -> bool {
        matches!(self, Value::Number(Number::Int(_) | Number::BigInt(_)))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// `obj.get(key)` on an object; `None` for every other type.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|m| m.get(key))
    }

    /// The JSON type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(Number::Float(_)) => "number",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// Python truthiness of the value as the reference would hold it.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(Number::Int(i)) => *i != 0,
            Value::Number(Number::BigInt(_)) => true,
            Value::Number(Number::Float(f)) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(m) => !m.is_empty(),
        }
    }

    /// Python `==` between the two values as Python would hold them
    /// (`1 == 1.0 == True`, lists and dicts element-wise).
    pub fn py_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.py_eq(y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v.py_eq(w)))
            }
            _ => match (self.py_number(), other.py_number()) {
                (Some(a), Some(b)) => a.py_cmp(&b) == Some(Ordering::Equal),
                _ => false,
            },
        }
    }

    /// The value as a Python number (bools are ints in Python).
    pub fn py_number(&self) -> Option<Number> {
        match self {
            Value::Bool(b) => Some(Number::Int(i64::from(*b))),
            Value::Number(n) => Some(n.clone()),
            _ => None,
        }
    }

    /// Python's `str(value)`: strings bare, everything else as `repr`.
    pub fn py_str(&self) -> String {
        match self {
            Value::String(s) => s.clone(),
            other => other.py_repr(),
        }
    }

    /// Python's `repr(value)` for the value as the reference holds it.
    pub fn py_repr(&self) -> String {
        let mut out = String::new();
        self.write_py_repr(&mut out);
        out
    }

    /// Appends `repr(self)` to `out`.
    pub fn write_py_repr<W: fmt::Write>(&self, out: &mut W) {
        // Writing to a String or an error text cannot fail.
        let _ = self.py_repr_into(out);
    }

    fn py_repr_into<W: fmt::Write>(&self, out: &mut W) -> fmt::Result {
        match self {
            Value::Null => out.write_str("None"),
            Value::Bool(true) => out.write_str("True"),
            Value::Bool(false) => out.write_str("False"),
            Value::Number(n) => write!(out, "{n}"),
            Value::String(s) => py_repr_str(s, out),
            Value::Array(a) => {
                out.write_char('[')?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    v.py_repr_into(out)?;
                }
                out.write_char(']')
            }
            Value::Object(m) => {
                out.write_char('{')?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    py_repr_str(k, out)?;
                    out.write_str(": ")?;
                    v.py_repr_into(out)?;
                }
                out.write_char('}')
            }
        }
    }

    /// Byte length of `str(value).encode("utf-8")` without building it for
    /// the common case of a string.
    pub fn py_str_len(&self) -> usize {
        match self {
            Value::String(s) => s.len(),
            other => other.py_repr().len(),
        }
    }
}

impl Number {
    /// Exact numeric comparison, as Python compares `int` and `float`.
    pub fn py_cmp(&self, other: &Number) -> Option<Ordering> {
        use Number::*;
        match (self, other) {
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (BigInt(a), BigInt(b)) => Some(cmp_big(a, b)),
            (Int(_), BigInt(b)) => Some(if b.starts_with('-') {
                Ordering::Greater
            } else {
                Ordering::Less
            }),
            (BigInt(a), Int(_)) => Some(if a.starts_with('-') {
                Ordering::Less
            } else {
                Ordering::Greater
            }),
            (Float(a), Float(b)) => a.partial_cmp(b),
            (Int(a), Float(b)) => cmp_int_float(*a, *b),
            (Float(a), Int(b)) => cmp_int_float(*b, *a).map(Ordering::reverse),
            (BigInt(a), Float(b)) => cmp_big_float(a, *b),
            (Float(a), BigInt(b)) => cmp_big_float(b, *a).map(Ordering::reverse),
        }
    }
}

fn cmp_big(a: &str, b: &str) -> Ordering {
    let (an, ad) = a.strip_prefix('-').map_or((false, a), |d| (true, d));
    let (bn, bd) = b.strip_prefix('-').map_or((false, b), |d| (true, d));
    match (an, bn) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        _ => {
            let mag = ad.len().cmp(&bd.len()).then_with(|| ad.cmp(bd));
            if an { mag.reverse() } else { mag }
        }
    }
}

fn cmp_int_float(i: i64, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // Every f64 at or beyond 2^63 in magnitude is outside i64; below that
    // the integral part converts exactly, so compare integral parts first
    // and let the fraction break a tie.
    if f >= 9.223_372_036_854_776e18 {
        return Some(Ordering::Less);
    }
    if f < -9.223_372_036_854_776e18 {
        return Some(Ordering::Greater);
    }
    let t = f.trunc();
    let ti = t as i64;
    Some(i.cmp(&ti).then_with(|| {
        let frac = f - t;
        if frac > 0.0 {
            Ordering::Less
        } else if frac < 0.0 {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }))
}

fn cmp_big_float(big: &str, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // A BigInt is outside ±2^63; f64 comparison of its parsed value is exact
    // enough except for astronomically close values, which only matter for
    // equality with an integral float of the same magnitude.
    let b: f64 = big.parse().ok()?;
    match b.partial_cmp(&f) {
        Some(Ordering::Equal) => {
            // Compare exactly through the float's integer digits.
            let fd = format!("{f:.0}");
            Some(cmp_big(big, &fd))
        }
        o => o,
    }
}

impl fmt::Display for Number {
    /// Python's `str()` / `repr()` of the number.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Int(i) => write!(f, "{i}"),
            Number::BigInt(s) => f.write_str(s),
            Number::Float(x) => f.write_str(&python_float_repr(*x)),
        }
    }
}

/// Formats a float exactly as Python's `repr(float)` does: the shortest digits
/// that round-trip, positional between 1e-4 and 1e16, otherwise scientific
/// with a signed two-digit-minimum exponent (`1e+16`, `1e-05`).
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Rust's `{:e}` prints the shortest round-trip digits: "d.ddde[-]N".
    let sci = format!("{:e}", x.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if x.is_sign_negative() {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        if exp >= 0 {
            let int_len = (exp + 1) as usize;
            if digits.len() <= int_len {
                out.push_str(&digits);
                for _ in 0..(int_len - digits.len()) {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        }
        let _ = n;
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let _ = write!(out, "{:02}", exp.unsigned_abs());
    }
    out
}

/// Python's `repr(str)`: single quotes unless the text has a single quote and
/// no double quote; non-printable characters escaped.
fn py_repr_str<W: fmt::Write>(s: &str, out: &mut W) -> fmt::Result {
    // Printable ASCII with no quote or backslash comes out as it is.
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'\'' && b != b'\\')
    {
        out.write_char('\'')?;
        out.write_str(s)?;
        return out.write_char('\'');
    }
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.write_char(quote)?;
    for c in s.chars() {
        match c {
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c if c == quote => {
                out.write_char('\\')?;
                out.write_char(c)?;
            }
            c if !py_printable(c) => {
                let cp = c as u32;
                if cp < 0x100 {
                    write!(out, "\\x{cp:02x}")?;
                } else if cp < 0x10000 {
                    write!(out, "\\u{cp:04x}")?;
                } else {
                    write!(out, "\\U{cp:08x}")?;
                }
            }
            c => out.write_char(c)?,
        }
    }
    out.write_char(quote)
}

/// Python's `str.isprintable()` for one character, from the Unicode tables
/// of the Python the reference runs on (see `src/printable.rs`).
fn py_printable(c: char) -> bool {
    let cp = c as u32;
    if (0x20..0x7f).contains(&cp) {
        return true;
    }
    let table = crate::printable::NON_PRINTABLE;
    // Last range starting at or before cp.
    let i = table.partition_point(|(start, _)| *start <= cp);
    !(i > 0 && cp <= table[i - 1].1)
}

// ---------------------------------------------------------------------------
// Parsing

/// A JSON syntax error with its position (1-based line and column, 0-based
/// byte offset).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg} at line {line}, column {column}")]
pub struct ParseError {
    pub msg: String,
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

/// Parses one JSON document from bytes. Rejects what the reference cannot
/// hash or send: invalid UTF-8, a byte-order mark, `NaN`/`Infinity`, floats
/// that overflow to infinity, lone surrogates, raw control characters in
/// strings, nesting deeper than [`MAX_DEPTH`], and trailing data.
pub fn parse_bytes(input: &[u8]) -> Result<Value, ParseError> {
    let text = match std::str::from_utf8(input) {
        Ok(t) => t,
        Err(e) => {
            let mut p = Parser {
                text: "",
                s: input,
                pos: e.valid_up_to(),
                depth: 0,
                escaped: 0,
            };
            return Err(p.err("invalid UTF-8"));
        }
    };
    parse_str(text)
}

/// Parses one JSON document from text; see [`parse_bytes`].
pub fn parse_str(text: &str) -> Result<Value, ParseError> {
    let mut p = Parser {
        text,
        s: text.as_bytes(),
        pos: 0,
        depth: 0,
        escaped: 0,
    };
    if text.starts_with('\u{feff}') {
        return Err(p.err("unexpected byte-order mark (save the file as UTF-8 without BOM)"));
    }
    p.skip_ws();
    let v = p.value()?;
    p.skip_ws();
    if p.pos < p.s.len() {
        return Err(p.err("unexpected data after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    /// The same input as text (empty when it is not valid UTF-8).
    text: &'a str,
    s: &'a [u8],
    pos: usize,
    depth: usize,
    /// Strings so far whose text needs an escape in canonical JSON; an
    /// object is plain when parsing it did not raise this count.
    escaped: usize,
}

impl<'a> Parser<'a> {
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
            Some(b'"') => Ok(Value::String(self.string()?.into_owned())),
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
        if self.depth > MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn object(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        self.pos += 1;
        let escaped_before = self.escaped;
        let mut entries = Vec::new();
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
            let k = Key::from(self.string()?);
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.err("expected ':' after an object key"));
            }
            self.pos += 1;
            self.skip_ws();
            let v = self.value()?;
            entries.push((k, v));
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
            entries,
            self.escaped == escaped_before,
        )))
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
            items.push(self.value()?);
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
    fn string(&mut self) -> Result<std::borrow::Cow<'a, str>, ParseError> {
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
                        Some(t) => std::borrow::Cow::Borrowed(t),
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
                        .map(std::borrow::Cow::Owned)
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
        if is_float {
            let f: f64 = lit.parse().map_err(|_| self.err("invalid number"))?;
            if !f.is_finite() {
                let end = self.pos;
                self.pos = start;
                let e = self.err("number too large (would be Infinity)");
                self.pos = end;
                return Err(e);
            }
            return Ok(Value::Number(Number::Float(f)));
        }
        Ok(Value::Number(int_from_literal(lit)))
    }
}

/// Builds an integer from a validated JSON integer literal.
fn int_from_literal(lit: &str) -> Number {
    match lit.parse::<i64>() {
        Ok(i) => Number::Int(i),
        Err(_) => Number::BigInt(lit.into()),
    }
}

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Number(Number::Int(i))
                } else if let Some(u) = n.as_u64() {
                    Value::Number(Number::BigInt(u.to_string().into()))
                } else {
                    Value::Number(Number::Float(n.as_f64().unwrap_or(0.0)))
                }
            }
            serde_json::Value::String(s) => Value::String(s),
            serde_json::Value::Array(a) => Value::Array(a.into_iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => {
                Value::Object(o.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
            }
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Number(Number::Int(i))
    }
}

impl From<i32> for Value {
    fn from(i: i32) -> Self {
        Value::Number(Number::Int(i64::from(i)))
    }
}

impl From<u32> for Value {
    fn from(u: u32) -> Self {
        Value::Number(Number::Int(i64::from(u)))
    }
}

impl From<u64> for Value {
    fn from(u: u64) -> Self {
        match i64::try_from(u) {
            Ok(i) => Value::Number(Number::Int(i)),
            Err(_) => Value::Number(Number::BigInt(u.to_string().into())),
        }
    }
}

impl From<usize> for Value {
    fn from(u: usize) -> Self {
        Value::from(u as u64)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Number(Number::Float(f))
    }
}

impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Object(m)
    }
}

impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Self {
        Value::Array(a)
    }
}

impl From<&Value> for Value {
    fn from(v: &Value) -> Self {
        v.clone()
    }
}

/// Builds a [`Map`] in insertion order: `obj! { "action" => "join", "best_of" => 3 }`.
#[macro_export]
macro_rules! obj {
    ($($k:expr => $v:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut m = $crate::json::Map::new();
        $( m.insert($k, $crate::json::Value::from($v)); )*
        m
    }};
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl fmt::Display for Value {
    /// Canonical (compact, sorted) JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::canonical::to_string(self))
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self {
            Value::Null => ser.serialize_unit(),
            Value::Bool(b) => ser.serialize_bool(*b),
            Value::Number(Number::Int(i)) => ser.serialize_i64(*i),
            Value::Number(Number::BigInt(s)) => match s.parse::<u64>() {
                Ok(u) => ser.serialize_u64(u),
                Err(_) => match s.parse::<i128>() {
                    Ok(i) => ser.serialize_i128(i),
                    Err(_) => ser.serialize_f64(s.parse().unwrap_or(0.0)),
                },
            },
            Value::Number(Number::Float(x)) => ser.serialize_f64(*x),
            Value::String(s) => ser.serialize_str(s),
            Value::Array(a) => {
                let mut seq = ser.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Object(m) => m.serialize(ser),
        }
    }
}

impl serde::Serialize for Map {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = ser.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e300, "1.5e+300"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (2.5, "2.5"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (100000.0, "100000.0"),
            (0.000123, "0.000123"),
            (-1.25e-7, "-1.25e-07"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float_repr(x), want, "{x:e}");
        }
    }

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
    fn python_semantics() {
        let one = Value::from(1);
        assert!(one.py_eq(&Value::Bool(true)));
        assert!(one.py_eq(&Value::Number(Number::Float(1.0))));
        assert!(!one.py_eq(&Value::from("1")));
        assert_eq!(Value::from("it's").py_repr(), "\"it's\"");
        assert_eq!(Value::from("a'\"b").py_repr(), "'a\\'\"b'");
        assert_eq!(Value::from("tab\there\u{7}").py_repr(), "'tab\\there\\x07'");
        assert_eq!(Value::from("人狼").py_repr(), "'人狼'");
        // The printable-ASCII shortcut and its edges.
        assert_eq!(Value::from("plain text ~!").py_repr(), "'plain text ~!'");
        assert_eq!(Value::from("").py_repr(), "''");
        assert_eq!(Value::from("back\\slash").py_repr(), "'back\\\\slash'");
        assert_eq!(Value::from("del\u{7f}").py_repr(), "'del\\x7f'");
        let v = parse_str(r#"{"k":[1,2,{"z":null}],"t":true,"f":1.5}"#).unwrap();
        assert_eq!(
            v.py_repr(),
            "{'k': [1, 2, {'z': None}], 't': True, 'f': 1.5}"
        );
        let a = Number::Int(3);
        assert_eq!(a.py_cmp(&Number::Float(2.5)), Some(Ordering::Greater));
        assert_eq!(a.py_cmp(&Number::Float(3.0)), Some(Ordering::Equal));
        assert_eq!(
            a.py_cmp(&Number::BigInt("99999999999999999999".into())),
            Some(Ordering::Less)
        );
    }
}
