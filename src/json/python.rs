//! Python semantics of a [`Value`] as the reference holds it: equality,
//! ordering of numbers, truthiness, and `str()`/`repr()` (float formatting
//! and the printable-character rule included), for the decisions and error
//! texts that depend on them.

use super::printable::NON_PRINTABLE;
use super::value::{Number, Value};
use std::cmp::Ordering;
use std::fmt::{self, Write as _};

impl Value {
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
            Value::String(s) => s.to_string(),
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
/// of the Python the reference runs on (see `printable.rs`).
fn py_printable(c: char) -> bool {
    let cp = c as u32;
    if (0x20..0x7f).contains(&cp) {
        return true;
    }
    let table = NON_PRINTABLE;
    // Last range starting at or before cp.
    let i = table.partition_point(|(start, _)| *start <= cp);
    !(i > 0 && cp <= table[i - 1].1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

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
