//! The string formats field types accept: lowercase hex of a length, safe
//! identifiers, tickets. Most frames carry hashes and keys, so the hex test
//! is tuned for a whole string at once.

/// 1 to 128 of `A-Za-z0-9_.:-`.
pub(super) fn safe_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes().fold(true, |acc, b| {
            acc & (b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
        })
}

/// Lowercase hex of `min` to `max` characters.
pub(super) fn lower_hex_len(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && all_lower_hex(s.as_bytes())
}

/// Non-empty lowercase hex of even length.
pub(super) fn even_lower_hex(s: &str) -> bool {
    !s.is_empty() && s.len().is_multiple_of(2) && all_lower_hex(s.as_bytes())
}

/// At most `max` characters.
pub(super) fn char_len_at_most(s: &str, max: usize) -> bool {
    s.len() <= max || s.chars().count() <= max
}

fn is_lower_hex(b: u8) -> bool {
    (b.wrapping_sub(b'0') < 10) | (b.wrapping_sub(b'a') < 6)
}

/// Every byte is `0-9` or `a-f`. Sixteen bytes at a time with no early
/// exit, which compiles to a few vector instructions per block; a ragged
/// end is covered by a last block that overlaps the one before it.
fn all_lower_hex(b: &[u8]) -> bool {
    fn block(c: &[u8; 16]) -> bool {
        c.iter().fold(true, |acc, &x| acc & is_lower_hex(x))
    }
    let n = b.len();
    if n < 8 {
        return b.iter().fold(true, |acc, &x| acc & is_lower_hex(x));
    }
    let mut w = [0u8; 16];
    if n < 16 {
        w[..8].copy_from_slice(&b[..8]);
        w[8..].copy_from_slice(&b[n - 8..]);
        return block(&w);
    }
    let mut ok = true;
    let mut blocks = b.chunks_exact(16);
    for c in &mut blocks {
        w.copy_from_slice(c);
        ok &= block(&w);
    }
    if !blocks.remainder().is_empty() {
        w.copy_from_slice(&b[n - 16..]);
        ok &= block(&w);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hex_scan_agrees_with_the_byte_rule_at_every_length_and_position() {
        let rule = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        for len in 0..=40 {
            let good = vec![b'a'; len];
            assert!(all_lower_hex(&good), "length {len}");
            for pos in 0..len {
                for b in 0..=255u8 {
                    let mut v = good.clone();
                    v[pos] = b;
                    assert_eq!(
                        all_lower_hex(&v),
                        rule(b),
                        "len {len} pos {pos} byte {b:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn formats() {
        assert!(lower_hex_len(&"0f".repeat(32), 64, 64));
        assert!(!lower_hex_len(&"0f".repeat(31), 64, 64));
        assert!(even_lower_hex("00ff") && !even_lower_hex("0ff") && !even_lower_hex(""));
        assert!(safe_id("a.b:c-d_9") && !safe_id("a b") && !safe_id(""));
        assert!(safe_id(&"x".repeat(128)) && !safe_id(&"x".repeat(129)));
        assert!(char_len_at_most("人狼", 2) && !char_len_at_most("人狼x", 2));
    }
}
