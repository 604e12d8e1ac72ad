//! Which strings need an escape in canonical JSON: any byte below 0x20, `"`
//! or `\`. Most strings need none, so the scan is tuned for finding none.

/// Does any byte need an escape? Eight bytes at a time with the classic
/// SWAR tests (a byte below 0x20, or equal to `"` or `\`), the tail through
/// a table.
#[inline]
pub(crate) fn needs_escape(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(8);
    let mut hit = false;
    for c in &mut chunks {
        hit |= word_needs_escape(u64::from_le_bytes([
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
        ]));
    }
    hit || chunks.remainder().iter().any(|&b| ESCAPE[b as usize])
}

#[inline]
fn word_needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let q = w ^ (ONES * u64::from(b'"'));
    let bs = w ^ (ONES * u64::from(b'\\'));
    let below_space = w.wrapping_sub(ONES * 0x20) & !w;
    let quote = q.wrapping_sub(ONES) & !q;
    let backslash = bs.wrapping_sub(ONES) & !bs;
    (below_space | quote | backslash) & HIGH != 0
}

/// Bytes that need an escape in a JSON string: controls, `"` and `\`.
static ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_scan_agrees_with_the_byte_rule_everywhere() {
        let rule = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
        for len in 1..=19 {
            for pos in 0..len {
                for b in 0..=255u8 {
                    for fill in [b'a', 0xff, 0x80, 0x21, 0x5d] {
                        let mut v = vec![fill; len];
                        v[pos] = b;
                        let want = v.iter().any(|&x| rule(x));
                        assert_eq!(
                            needs_escape(&v),
                            want,
                            "len {len} pos {pos} byte {b:#x} fill {fill:#x}"
                        );
                    }
                }
            }
        }
        assert!(!needs_escape(b""));
    }
}
