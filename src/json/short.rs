//! Short byte strings (object keys, field names, tokens up to 32 bytes)
//! compared and copied with a few word-sized loads and stores: no loop and
//! no call into `memcmp` or `memcpy`, which dominate at these sizes.

/// Longest string [`copy`] handles.
pub(crate) const SHORT: usize = 32;

/// `a == b`, tuned for the short keys that fill objects: up to 16 bytes
/// compare as two overlapping words (or three bytes); longer ones compare
/// their first word before the rest.
#[inline]
pub(crate) fn str_eq(a: &str, b: &str) -> bool {
    eq(a.as_bytes(), b.as_bytes())
}

/// [`str_eq`] on bytes.
#[inline]
pub(crate) fn eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        if n > 16 {
            // Long keys (card ids, public keys) almost always differ in
            // their first word: compare it before calling `memcmp`.
            return w64(a) == w64(b) && a == b;
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

/// `d[..s.len()] = s` for `s` at most [`SHORT`] long (longer does nothing):
/// two fixed-size loads and stores that overlap in the middle.
#[inline(always)]
pub(crate) fn copy(d: &mut [u8; SHORT], s: &[u8]) {
    let n = s.len();
    match n {
        0 => {}
        1..4 => {
            d[0] = s[0];
            d[n / 2] = s[n / 2];
            d[n - 1] = s[n - 1];
        }
        4..8 => {
            d[..4].copy_from_slice(&s[..4]);
            d[n - 4..n].copy_from_slice(&s[n - 4..]);
        }
        8..=16 => {
            d[..8].copy_from_slice(&s[..8]);
            d[n - 8..n].copy_from_slice(&s[n - 8..]);
        }
        17..=SHORT => {
            d[..16].copy_from_slice(&s[..16]);
            d[n - 16..n].copy_from_slice(&s[n - 16..]);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_agrees_with_slice_equality_at_every_length_and_position() {
        for n in 0..=40usize {
            let a: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(eq(&a, &a.clone()), "length {n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!eq(&a, &b), "length {n}, byte {at}");
            }
            if n > 0 {
                assert!(!eq(&a, &a[..n - 1]), "length {n}, shorter");
            }
        }
        assert!(str_eq("host_cd_a", "host_cd_a") && !str_eq("host_cd_a", "host_cd_b"));
    }

    #[test]
    fn copy_writes_exactly_the_bytes_of_every_short_length() {
        for n in 0..=SHORT + 1 {
            let s: Vec<u8> = (0..n).map(|i| i as u8 + 1).collect();
            let mut d = [0xeeu8; SHORT];
            copy(&mut d, &s);
            if n <= SHORT {
                assert_eq!(&d[..n], &s[..], "length {n}");
                assert!(d[n..].iter().all(|&b| b == 0xee), "length {n}");
            } else {
                assert!(d.iter().all(|&b| b == 0xee), "too long: untouched");
            }
        }
    }
}
