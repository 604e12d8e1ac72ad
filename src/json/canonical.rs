//! Canonical JSON, byte-identical with the reference client's
//! `json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))`,
//! and the SHA-256 helpers built on it.
//!
//! Keys are sorted by code point (UTF-8 byte order is the same order), text
//! is raw UTF-8 with only `"`, `\`, and control characters below U+0020
//! escaped (short escapes where JSON has them, `\u00xx` with lowercase hex
//! otherwise), integers are exact at any size, and floats use Python's
//! `repr`. Values that cannot be canonical (NaN, infinities, lone surrogates)
//! never reach this module: the parser rejects them.
//!
//! The writer threads its position by value through the buffer functions
//! of `out.rs`, and tells a [`Tap`] after every member and element how far
//! its output is final (protocol_id hashes it as it is written).

mod escape;
mod out;
mod sha256;

pub(crate) use out::{decimal_digits, put1, room_after};
pub use sha256::sha256_hex;
pub(crate) use sha256::{NoTap, SHA256_H0, Sha256Tap, Tap};

use super::python::python_float_repr;
use super::value::{Key, Map, Number, Value};
use escape::needs_escape;
use out::{put, put_int, put_quoted};
use std::fmt;

/// The longest buffer [`sha256_hex_of`] keeps for its thread's next call.
const KEPT_BUFFER: usize = 8 << 20;

/// Lowercase hex SHA-256 of a value's canonical bytes, hashed while they
/// are written, into a buffer each thread keeps for its next call (its
/// old bytes are written over, never zeroed again). A table's leader
/// hashes its whole state for every frame: written into fresh memory each
/// time, growing it cost more in zeroing, copies and page faults than the
/// hashing itself.
pub fn sha256_hex_of(v: &Value) -> String {
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|kept| {
        let mut buf = kept.take();
        if buf.len() < 64 {
            buf.resize(64, 0);
        }
        let mut tap = Sha256Tap::default();
        let end = put_value(&mut buf, 0, v, &mut tap);
        let digest = tap.finish(&buf, end);
        if buf.capacity() <= KEPT_BUFFER {
            kept.replace(buf);
        }
        hex::encode(digest)
    })
}

/// Canonical bytes of a value.
pub fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_value(v, &mut out);
    out
}

/// Canonical text of a value.
pub fn to_string(v: &Value) -> String {
    // Every byte written is valid UTF-8: strings come from `String`s and the
    // rest is ASCII.
    String::from_utf8(to_vec(v)).unwrap_or_default()
}

/// Compact JSON that keeps each object's insertion order (what Python's
/// `json.dumps(v, ensure_ascii=False, separators=(",", ":"))` writes): the
/// form for frames whose key order a peer may observe.
pub fn to_string_ordered(v: &Value) -> String {
    fn write(v: &Value, out: &mut Vec<u8>) {
        match v {
            Value::Array(a) => {
                out.push(b'[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(x, out);
                }
                out.push(b']');
            }
            Value::Object(m) => {
                out.push(b'{');
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(k, out);
                    out.push(b':');
                    write(x, out);
                }
                out.push(b'}');
            }
            // Strings go straight on the end: the windowed writer behind
            // `write_value` would zero-fill room in proportion to the whole
            // buffer for each long string (quadratic for a large document).
            Value::String(s) => write_str(s, out),
            scalar => write_value(scalar, out),
        }
    }
    let mut out = Vec::with_capacity(128);
    write(v, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Appends the canonical form of `v` to `out`.
pub fn write_value(v: &Value, out: &mut Vec<u8>) {
    let pos = out.len();
    let mut buf = room_after(std::mem::take(out), pos, 64);
    let end = put_value(&mut buf, pos, v, &mut NoTap);
    buf.truncate(end);
    *out = buf;
}

/// `s` as an escaped string literal, then `suffix`.
#[cold]
#[inline(never)]
fn put_escaped(buf: &mut Vec<u8>, pos: usize, s: &[u8], suffix: &[u8]) -> usize {
    let mut tmp = Vec::with_capacity(s.len() + 8);
    tmp.push(b'"');
    write_escaped(s, &mut tmp);
    tmp.push(b'"');
    tmp.extend_from_slice(suffix);
    put(buf, pos, &tmp)
}

/// A string literal with the reference's escapes.
#[inline]
pub(crate) fn put_str(buf: &mut Vec<u8>, pos: usize, s: &str) -> usize {
    if needs_escape(s.as_bytes()) {
        put_escaped(buf, pos, s.as_bytes(), b"")
    } else {
        put_quoted::<false>(buf, pos, s.as_bytes(), None)
    }
}

/// An object key and its colon, after `lead` (`{` or `,`) if given
/// (`plain`: the key is known to need no escape).
#[inline(always)]
pub(crate) fn put_key(
    buf: &mut Vec<u8>,
    pos: usize,
    k: &str,
    plain: bool,
    lead: Option<u8>,
) -> usize {
    if plain || !needs_escape(k.as_bytes()) {
        put_quoted::<true>(buf, pos, k.as_bytes(), lead)
    } else {
        let pos = match lead {
            Some(b) => put1(buf, pos, b),
            None => pos,
        };
        put_escaped(buf, pos, k.as_bytes(), b":")
    }
}

/// The canonical form of `v` at `pos`.
pub(crate) fn put_value<T: Tap>(buf: &mut Vec<u8>, pos: usize, v: &Value, tap: &mut T) -> usize {
    put_any::<false, T>(buf, pos, v, tap)
}

/// The writer, specialised on what is known about the strings below `v`:
/// with `PLAIN`, none of them needs an escape, so none is scanned.
fn put_any<const PLAIN: bool, T: Tap>(
    buf: &mut Vec<u8>,
    pos: usize,
    v: &Value,
    tap: &mut T,
) -> usize {
    match v {
        Value::Null => put(buf, pos, b"null"),
        Value::Bool(true) => put(buf, pos, b"true"),
        Value::Bool(false) => put(buf, pos, b"false"),
        Value::Number(Number::Int(i)) => put_int(buf, pos, *i),
        Value::Number(Number::BigInt(s)) => put(buf, pos, s.as_bytes()),
        Value::Number(Number::Float(f)) => put(buf, pos, python_float_repr(*f).as_bytes()),
        Value::String(s) if PLAIN => put_quoted::<false>(buf, pos, s.as_bytes(), None),
        Value::String(s) => put_str(buf, pos, s),
        Value::Array(a) => {
            if a.is_empty() {
                return put(buf, pos, b"[]");
            }
            // Each element comes after one byte: `[` for the first, `,`
            // after that, written with the element.
            let mut pos = pos;
            let mut lead = b'[';
            for x in a {
                pos = match x {
                    Value::String(s) if PLAIN => {
                        put_quoted::<false>(buf, pos, s.as_bytes(), Some(lead))
                    }
                    _ => {
                        let pos = put1(buf, pos, lead);
                        put_any::<PLAIN, T>(buf, pos, x, tap)
                    }
                };
                tap.written(buf, pos);
                lead = b',';
            }
            put1(buf, pos, b']')
        }
        Value::Object(m) => put_object(buf, pos, m, None, tap),
    }
}

/// An object with sorted keys, leaving out `skip` if given (used to drop
/// `default` from parameter entries without copying them).
///
/// A whole object written a second time unchanged (a state's catalog, a
/// card face, a finished trick: what every frame's state and views carry
/// again) is remembered in canonical form, and copied from there after
/// that.
pub(crate) fn put_object<T: Tap>(
    buf: &mut Vec<u8>,
    pos: usize,
    m: &Map,
    skip: Option<&str>,
    tap: &mut T,
) -> usize {
    if skip.is_some() {
        return put_object_fresh(buf, pos, m, skip, tap);
    }
    if let Some(bytes) = m.cached_canonical() {
        return put(buf, pos, bytes);
    }
    let end = put_object_fresh(buf, pos, m, None, tap);
    if m.len() > 1 && end - pos <= MAX_REMEMBERED && m.written_again() {
        m.remember_canonical(&buf[pos..end]);
    }
    end
}

/// The largest canonical form [`put_object`] remembers.
const MAX_REMEMBERED: usize = 1 << 20;

/// [`put_object`], written member by member.
fn put_object_fresh<T: Tap>(
    buf: &mut Vec<u8>,
    pos: usize,
    m: &Map,
    skip: Option<&str>,
    tap: &mut T,
) -> usize {
    if m.is_plain() {
        // Strings, the commonest members, are written inline.
        put_object_with(buf, pos, m, skip, tap, |buf, pos, v, tap| match v {
            Value::String(s) => put_quoted::<false>(buf, pos, s.as_bytes(), None),
            Value::Bool(true) => put(buf, pos, b"true"),
            Value::Bool(false) => put(buf, pos, b"false"),
            Value::Number(Number::Int(i)) => put_int(buf, pos, *i),
            other => put_any::<true, T>(buf, pos, other, tap),
        })
    } else {
        put_object_with(buf, pos, m, skip, tap, put_any::<false, T>)
    }
}

/// An object with sorted keys, each member value through `value`.
pub(crate) fn put_object_with<T: Tap>(
    buf: &mut Vec<u8>,
    pos: usize,
    m: &Map,
    skip: Option<&str>,
    tap: &mut T,
    value: impl Fn(&mut Vec<u8>, usize, &Value, &mut T) -> usize,
) -> usize {
    let entries = m.entries();
    let plain = m.is_plain();
    // Each member comes after one byte, `{` for the first and `,` after
    // that, written with its key.
    let begin = pos;
    let mut pos = pos;
    // The position is threaded through by value (a closure capturing it
    // would keep it in memory).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn emit<T: Tap, F: Fn(&mut Vec<u8>, usize, &Value, &mut T) -> usize>(
        buf: &mut Vec<u8>,
        pos: usize,
        begin: usize,
        (k, v): (&str, &Value),
        skip: Option<&str>,
        plain: bool,
        tap: &mut T,
        value: &F,
    ) -> usize {
        if skip.is_some_and(|s| s == k) {
            return pos;
        }
        let lead = if pos == begin { b'{' } else { b',' };
        let pos = put_key(buf, pos, k, plain, Some(lead));
        let pos = value(buf, pos, v, tap);
        tap.written(buf, pos);
        pos
    }
    match m.known_key_order() {
        Some(None) => {
            for (k, v) in entries {
                pos = emit(buf, pos, begin, (k, v), skip, plain, tap, &value);
            }
        }
        Some(Some(order)) => {
            for &i in order {
                let (k, v) = &entries[i as usize];
                pos = emit(buf, pos, begin, (k, v), skip, plain, tap, &value);
            }
        }
        None => {
            let mut idx: Vec<&(Key, Value)> = entries.iter().collect();
            idx.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (k, v) in idx {
                pos = emit(buf, pos, begin, (k, v), skip, plain, tap, &value);
            }
        }
    }
    if pos == begin {
        put(buf, pos, b"{}")
    } else {
        put1(buf, pos, b'}')
    }
}

/// Writes a JSON string literal with the reference's escapes.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if needs_escape(bytes) {
        write_escaped(bytes, out);
    } else {
        out.extend_from_slice(bytes);
    }
    out.push(b'"');
}

/// Writes `bytes` with the reference's escapes: `\"`, `\\`, the short
/// escapes JSON has for controls, `\u00xx` (lowercase hex) for the rest.
#[cold]
#[inline(never)]
fn write_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Length in bytes of the canonical form, computed without writing it.
pub fn canonical_len(v: &Value) -> usize {
    len_of::<false>(v)
}

/// [`canonical_len`]; with `PLAIN`, no string below `v` needs an escape,
/// so none is scanned.
fn len_of<const PLAIN: bool>(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(Number::Int(i)) => {
            let digits = i
                .unsigned_abs()
                .checked_ilog10()
                .map_or(1, |d| d as usize + 1);
            digits + usize::from(*i < 0)
        }
        Value::Number(Number::BigInt(s)) => s.len(),
        Value::Number(Number::Float(f)) => python_float_repr(*f).len(),
        Value::String(s) if PLAIN => s.len() + 2,
        Value::String(s) => str_len(s),
        Value::Array(a) => {
            2 + a.len().saturating_sub(1) + a.iter().map(len_of::<PLAIN>).sum::<usize>()
        }
        Value::Object(m) if !PLAIN && m.is_plain() => len_of::<true>(v),
        Value::Object(m) => {
            2 + m.len().saturating_sub(1)
                + m.iter()
                    .map(|(k, v)| {
                        let k = if PLAIN { k.len() + 2 } else { str_len(k) };
                        k + 1 + len_of::<PLAIN>(v)
                    })
                    .sum::<usize>()
        }
    }
}

/// Length of a string literal with its quotes and escapes.
fn str_len(s: &str) -> usize {
    if !needs_escape(s.as_bytes()) {
        return s.len() + 2;
    }
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

impl fmt::Display for Value {
    /// Canonical (compact, sorted) JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&to_string(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

    fn canon(s: &str) -> String {
        to_string(&parse_str(s).unwrap())
    }

    #[test]
    fn matches_python_dumps() {
        assert_eq!(
            canon(r#"{"b": 1, "a": [true, null, "x"]}"#),
            r#"{"a":[true,null,"x"],"b":1}"#
        );
        assert_eq!(
            canon(r#""\u0001\u001f\b\f\n\r\t\"\\/""#),
            r#""\u0001\u001f\b\f\n\r\t\"\\/""#
        );
        assert_eq!(canon(r#""\u007f\u2028é人""#), "\"\u{7f}\u{2028}é人\"");
        assert_eq!(
            canon("[1.0, 1e16, 1e-5, -0.0, 1E5, 12345678901234567890]"),
            "[1.0,1e+16,1e-05,-0.0,100000.0,12345678901234567890]"
        );
        // Integers longer than a short token (32 bytes) and at its edge.
        let big = "[12345678901234567890123456789012,-1234567890123456789012345678901,\
                   123456789012345678901234567890123456789012345678901234567890]";
        assert_eq!(canon(big), big.replace(' ', ""));
        assert_eq!(
            canon("[0, -7, 10, 9223372036854775807, -9223372036854775808]"),
            "[0,-7,10,9223372036854775807,-9223372036854775808]"
        );
        assert_eq!(
            canon(r#"{"é":1,"z":2,"A":3,"😀":4,"ｚ":5}"#),
            r#"{"A":3,"z":2,"é":1,"ｚ":5,"😀":4}"#
        );
    }

    #[test]
    fn escapes_below_plain_and_escaped_objects() {
        // Escapes at every depth, in keys and values, inside arrays.
        assert_eq!(
            canon(r#"{"z":{"k\"":["x\n",{"q":"\\"}]},"a":{"b":"c"}}"#),
            r#"{"a":{"b":"c"},"z":{"k\"":["x\n",{"q":"\\"}]}}"#
        );
        // Escapes that decode to text needing none keep the object plain
        // and the output right either way.
        assert_eq!(canon(r#"{"b\u00e9":"\/"}"#), "{\"bé\":\"/\"}");
    }

    #[test]
    fn a_changed_object_is_escaped_again() {
        // A value replaced through get_mut, two levels down.
        let mut v = parse_str(r#"{"b":{"x":"plain"},"a":[1]}"#).unwrap();
        let m = v.as_object_mut().unwrap();
        let inner = m.get_mut("b").unwrap().as_object_mut().unwrap();
        *inner.get_mut("x").unwrap() = Value::String("line\nbreak".into());
        assert_eq!(to_string(&v), r#"{"a":[1],"b":{"x":"line\nbreak"}}"#);
        // An array element changed in place.
        let mut v = parse_str(r#"{"a":["ok"]}"#).unwrap();
        if let Some(Value::Array(a)) = v.as_object_mut().unwrap().get_mut("a") {
            a[0] = Value::String("q\"".into());
        }
        assert_eq!(to_string(&v), r#"{"a":["q\""]}"#);
        // A key added.
        let mut v = parse_str(r#"{"b":1}"#).unwrap();
        v.as_object_mut().unwrap().insert("a\t", Value::Null);
        assert_eq!(to_string(&v), r#"{"a\t":null,"b":1}"#);
    }

    #[test]
    fn a_shared_object_written_once_follows_every_later_change() {
        let mut v = parse_str(r#"{"s":{"b":{"x":1},"a":[2]},"t":3}"#).unwrap();
        let copy = v.clone();
        let first = to_string(&v);
        assert_eq!(first, r#"{"s":{"a":[2],"b":{"x":1}},"t":3}"#);
        // Remembered once written again: the same bytes after that.
        let inner = v.get("s").unwrap().as_object().unwrap();
        assert!(inner.cached_canonical().is_none());
        assert_eq!(to_string(&v), first);
        let inner = v.get("s").unwrap().as_object().unwrap();
        assert!(inner.cached_canonical().is_some());
        assert_eq!(to_string(&v), first);
        // A change two levels below a remembered object is written.
        let s = v.as_object_mut().unwrap().get_mut("s").unwrap();
        let b = s.as_object_mut().unwrap().get_mut("b").unwrap();
        b.as_object_mut().unwrap().insert("x", Value::from(5));
        assert_eq!(to_string(&v), r#"{"s":{"a":[2],"b":{"x":5}},"t":3}"#);
        if let Some(Value::Array(a)) = v
            .as_object_mut()
            .unwrap()
            .get_mut("s")
            .and_then(Value::as_object_mut)
            .unwrap()
            .get_mut("a")
        {
            a.push(Value::Null);
        }
        assert_eq!(to_string(&v), r#"{"s":{"a":[2,null],"b":{"x":5}},"t":3}"#);
        // The copy it was shared with is unchanged.
        assert_eq!(to_string(&copy), first);
    }

    #[test]
    fn every_string_length_is_copied_whole() {
        // Each size class of the short copy, and its edges, as keys and
        // values, plain and escaped, in objects and arrays.
        for n in 0..=80usize {
            let text: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            let src = format!(r#"{{"{text}":["{text}","{text}"],"e":"{text}\n"}}"#);
            // Every key made here sorts before "e".
            let want = format!(r#"{{"{text}":["{text}","{text}"],"e":"{text}\n"}}"#);
            assert_eq!(canon(&src), want, "length {n}");
        }
    }

    #[test]
    fn many_keys_sort() {
        let mut src = String::from("{");
        for i in (0..100).rev() {
            if i != 99 {
                src.push(',');
            }
            src.push_str(&format!("\"k{i:03}\":{i}"));
        }
        src.push('}');
        let out = canon(&src);
        assert!(out.starts_with(r#"{"k000":0,"k001":1,"#));
        assert!(out.ends_with(r#""k099":99}"#));
    }

    #[test]
    fn canonical_len_matches_written_length() {
        for src in [
            r#"{"a":[1,-22,3.5,1e300,null,true,false,"q\"\u0001\\\n","é"],"b":{}}"#,
            "[]",
            "0",
            "-9223372036854775808",
            "123456789012345678901234567890",
            // Longer than a short token: written through the long path.
            "-123456789012345678901234567890123456789012345678",
            r#"[12345678901234567890123456789012,123456789012345678901234567890123]"#,
        ] {
            let v = parse_str(src).unwrap();
            assert_eq!(canonical_len(&v), to_vec(&v).len(), "{src}");
        }
    }

    #[test]
    fn hashing_while_writing_matches_hashing_the_bytes() {
        // Every length class of the final padding (one block or two), and
        // values that finish blocks in the middle of a member, an element,
        // or a long string.
        for n in 0..=300usize {
            let text: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            for src in [
                format!(r#""{text}""#),
                format!(r#"{{"k":"{text}","z":[1,"{text}",{{"q":"{text}"}}]}}"#),
                format!(r#"[{}]"#, vec!["7"; n.max(1)].join(",")),
            ] {
                let v = parse_str(&src).unwrap();
                let mut buf = room_after(Vec::new(), 0, 64);
                let mut tap = Sha256Tap::default();
                let end = put_value(&mut buf, 0, &v, &mut tap);
                assert_eq!(&buf[..end], &to_vec(&v)[..], "{src}");
                assert_eq!(
                    hex::encode(tap.finish(&buf, end)),
                    sha256_hex(to_vec(&v)),
                    "length {n}: {src}"
                );
                assert_eq!(sha256_hex_of(&v), sha256_hex(to_vec(&v)), "{src}");
            }
        }
    }
}
