//! The output buffer of the canonical writer.
//!
//! Every function here takes the write position by value and returns the
//! new one, over a buffer whose length runs ahead of what was written (the
//! bytes past the position are room, zeroed or stale). The position then
//! lives in a register for a whole object or array instead of going through
//! memory at every byte, as `Vec::len` does when the vector is behind a
//! reference: that store-to-load chain, not the copying, bounded a writer
//! built on `Vec::push`.
//!
//! Short tokens are written into a fixed [`WINDOW`] of room checked once,
//! so the stores into it need no bounds checks of their own.

use crate::json::short::{self, SHORT};

/// `buf` (holding `pos` written bytes) with `extra` bytes of room after
/// them. Only that room is zeroed, never the whole spare capacity: a caller
/// that appends one scalar at a time to a growing buffer would otherwise be
/// quadratic.
pub(crate) fn room_after(mut buf: Vec<u8>, pos: usize, extra: usize) -> Vec<u8> {
    buf.truncate(pos);
    buf.resize(pos + extra, 0);
    buf
}

#[cold]
#[inline(never)]
fn grow(buf: &mut Vec<u8>, need: usize) {
    let want = need.max(buf.len() * 2).max(256);
    buf.resize(want, 0);
}

/// Bytes of room every short token is written into.
const WINDOW: usize = 64;

/// The [`WINDOW`] bytes at `pos`, the buffer grown first if they are not
/// there (so this is always `Some`). One length check on the fast path;
/// every index into the array is then known to be in bounds.
#[inline(always)]
fn window(buf: &mut Vec<u8>, pos: usize) -> Option<&mut [u8; WINDOW]> {
    if pos + WINDOW > buf.len() {
        grow(buf, pos + WINDOW);
    }
    buf.get_mut(pos..)?.first_chunk_mut::<WINDOW>()
}

/// Writes `bytes` at `pos`.
#[inline]
pub(crate) fn put(buf: &mut Vec<u8>, pos: usize, bytes: &[u8]) -> usize {
    let n = bytes.len();
    match window(buf, pos) {
        Some(w) if n <= SHORT => {
            copy_into(w, 0, bytes);
            pos + n
        }
        _ => put_long(buf, pos, bytes),
    }
}

#[inline(never)]
fn put_long(buf: &mut Vec<u8>, pos: usize, bytes: &[u8]) -> usize {
    let end = pos + bytes.len();
    if end > buf.len() {
        grow(buf, end + WINDOW);
    }
    buf[pos..end].copy_from_slice(bytes);
    end
}

/// Writes one byte at `pos`.
#[inline]
pub(crate) fn put1(buf: &mut Vec<u8>, pos: usize, b: u8) -> usize {
    if pos >= buf.len() {
        grow(buf, pos + 1);
    }
    buf[pos] = b;
    pos + 1
}

/// `"s"` after `lead` (`{`, `[` or `,`) if given, and `:` after it with
/// `COLON`, for `s` known to need no escape.
#[inline(always)]
pub(crate) fn put_quoted<const COLON: bool>(
    buf: &mut Vec<u8>,
    pos: usize,
    s: &[u8],
    lead: Option<u8>,
) -> usize {
    let n = s.len();
    let c = usize::from(lead.is_some());
    let w = match window(buf, pos) {
        Some(w) if n <= SHORT => w,
        _ => return put_quoted_long::<COLON>(buf, pos, s, lead),
    };
    // The lead byte is stored either way; without one the quote
    // overwrites it.
    w[0] = lead.unwrap_or(b'"');
    w[c] = b'"';
    copy_into(w, c + 1, s);
    w[c + 1 + n] = b'"';
    if COLON {
        w[c + 2 + n] = b':';
    }
    pos + c + n + 2 + usize::from(COLON)
}

/// [`put_quoted`] for strings longer than [`SHORT`]: byte by byte around
/// one plain copy.
#[inline(never)]
fn put_quoted_long<const COLON: bool>(
    buf: &mut Vec<u8>,
    pos: usize,
    s: &[u8],
    lead: Option<u8>,
) -> usize {
    let pos = match lead {
        Some(b) => put1(buf, pos, b),
        None => pos,
    };
    let pos = put1(buf, pos, b'"');
    let pos = put_long(buf, pos, s);
    let pos = put1(buf, pos, b'"');
    if COLON { put1(buf, pos, b':') } else { pos }
}

/// `w[at..at + s.len()] = s` for `at` at most 2 and `s` at most [`SHORT`]
/// long, through [`short::copy`].
#[inline(always)]
fn copy_into(w: &mut [u8; WINDOW], at: usize, s: &[u8]) {
    // Both callers guarantee this; the window's room for `at + SHORT`
    // bytes is then one check, and the copy needs no other.
    debug_assert!(s.len() <= SHORT && at <= 2);
    if let Some(Ok(d)) = w.get_mut(at..at + SHORT).map(<&mut [u8; SHORT]>::try_from) {
        short::copy(d, s);
    }
}

/// The decimal digits of `u`, right-aligned in `tmp`; returns where they
/// start (one byte stays free before them for a sign).
pub(crate) fn decimal_digits(mut u: u64, tmp: &mut [u8; 21]) -> usize {
    let mut at = tmp.len();
    loop {
        at -= 1;
        tmp[at] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            return at;
        }
    }
}

/// An integer in decimal at `pos`.
pub(crate) fn put_int(buf: &mut Vec<u8>, pos: usize, i: i64) -> usize {
    let mut tmp = [0u8; 21];
    let mut at = decimal_digits(i.unsigned_abs(), &mut tmp);
    if i < 0 {
        at -= 1;
        tmp[at] = b'-';
    }
    put(buf, pos, &tmp[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer holding `pos` bytes of 0xaa and no room after them.
    fn full(pos: usize) -> Vec<u8> {
        vec![0xaa; pos]
    }

    fn text(n: usize) -> Vec<u8> {
        (0..n).map(|i| b'a' + (i % 26) as u8).collect()
    }

    #[test]
    fn put_writes_every_length_at_every_position_and_grows() {
        for pos in [0, 1, 63, 64, 65, 200] {
            for n in 0..=100 {
                let s = text(n);
                for mut buf in [full(pos), room_after(full(pos), pos, 64)] {
                    let end = put(&mut buf, pos, &s);
                    assert_eq!(end, pos + n);
                    assert_eq!(&buf[pos..end], &s[..], "length {n} at {pos}");
                    assert!(buf[..pos].iter().all(|&b| b == 0xaa), "before {pos}");
                }
            }
        }
    }

    #[test]
    fn put_quoted_frames_every_length_with_lead_and_colon() {
        for n in 0..=80 {
            let s = text(n);
            let body = String::from_utf8(s.clone()).unwrap();
            for pos in [0, 5, 70] {
                let mut buf = full(pos);
                let end = put_quoted::<false>(&mut buf, pos, &s, None);
                assert_eq!(&buf[pos..end], format!("\"{body}\"").as_bytes());
                let mut buf = full(pos);
                let end = put_quoted::<true>(&mut buf, pos, &s, Some(b','));
                assert_eq!(&buf[pos..end], format!(",\"{body}\":").as_bytes());
                let end = put1(&mut buf, end, b'}');
                assert_eq!(buf[end - 1], b'}');
            }
        }
    }

    #[test]
    fn room_after_zeroes_only_the_room() {
        let mut buf = vec![7u8; 10];
        buf.reserve(1000);
        let buf = room_after(buf, 4, 3);
        assert_eq!(buf, [7, 7, 7, 7, 0, 0, 0]);
    }

    #[test]
    fn integers_in_decimal() {
        for i in [0, 7, -7, 10, -10, 99, i64::MAX, i64::MIN, 1 << 53] {
            let mut buf = Vec::new();
            let end = put_int(&mut buf, 0, i);
            assert_eq!(&buf[..end], i.to_string().as_bytes());
        }
    }
}
