//! SHA-256 for the contract: a tap on the canonical writer that hashes its
//! output while it is still being written, and the lowercase hex digest.

use sha2::{Digest, Sha256};

/// Told by the writer, after each object member and array element it
/// finishes, that the bytes before `pos` are final (bytes past it may still
/// be scribbled on).
pub(crate) trait Tap {
    fn written(&mut self, buf: &[u8], pos: usize);
}

/// The tap for plain writing: compiles to nothing.
pub(crate) struct NoTap;

impl Tap for NoTap {
    #[inline(always)]
    fn written(&mut self, _: &[u8], _: usize) {}
}

/// SHA-256's initial state (FIPS 180-4, 5.3.3).
pub(crate) const SHA256_H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// SHA-256 of the bytes a writer produces, fed to the compression function
/// a block at a time while the writer is still going. The compression is one
/// long chain of dependent instructions; the writer's work is independent of
/// it, so the processor runs the two side by side instead of one after the
/// other.
pub(crate) struct Sha256Tap {
    state: [u32; 8],
    /// Bytes hashed so far (a multiple of 64).
    done: usize,
}

impl Default for Sha256Tap {
    fn default() -> Self {
        Sha256Tap {
            state: SHA256_H0,
            done: 0,
        }
    }
}

type ShaBlock = sha2::digest::generic_array::GenericArray<u8, sha2::digest::typenum::U64>;

impl Tap for Sha256Tap {
    #[inline(always)]
    fn written(&mut self, buf: &[u8], pos: usize) {
        if pos >= self.done + 64 {
            self.feed(buf, pos);
        }
    }
}

impl Sha256Tap {
    /// Hashes every whole block of `buf[..pos]` not hashed yet.
    #[inline(never)]
    fn feed(&mut self, buf: &[u8], pos: usize) {
        for block in buf[self.done..pos].chunks_exact(64) {
            self.compress(block);
        }
    }

    fn compress(&mut self, block: &[u8]) {
        sha2::compress256(
            &mut self.state,
            std::slice::from_ref(ShaBlock::from_slice(block)),
        );
        self.done += 64;
    }

    /// The digest of `buf[..end]` (the writer has finished at `end`).
    pub(crate) fn finish(mut self, buf: &[u8], end: usize) -> [u8; 32] {
        self.feed(buf, end);
        let (tail, blocks) = final_blocks(&buf[self.done..end], end);
        for block in tail[..blocks * 64].chunks_exact(64) {
            self.compress(block);
        }
        let mut out = [0u8; 32];
        for (o, w) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&w.to_be_bytes());
        }
        out
    }
}

/// SHA-256's padding of a message `total` bytes long whose last, partial
/// block is `rest`: `rest`, the byte 0x80, zeros, and the length in bits as
/// a big-endian word, making one block or two. Returns the blocks and how
/// many there are.
fn final_blocks(rest: &[u8], total: usize) -> ([u8; 128], usize) {
    let mut tail = [0u8; 128];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let blocks = if rest.len() + 9 > 64 { 2 } else { 1 };
    let bits = (total as u64).wrapping_mul(8);
    tail[blocks * 64 - 8..blocks * 64].copy_from_slice(&bits.to_be_bytes());
    (tail, blocks)
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256_hex(data: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(data.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tap_hashes_ragged_writes_like_sha256() {
        // Every padding case (one final block or two) and writes that end
        // anywhere in a block, told sometimes early and sometimes late.
        for n in 0..=300usize {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
            let mut buf = data.clone();
            buf.extend_from_slice(&[0xff; 64]);
            let mut tap = Sha256Tap::default();
            let mut pos = 0;
            while pos < n {
                pos = (pos + 1 + pos % 37).min(n);
                tap.written(&buf, pos);
            }
            assert_eq!(tap.finish(&buf, n), Sha256::digest(&data)[..], "{n} bytes");
        }
    }

    #[test]
    fn padding_fills_one_block_or_two() {
        assert_eq!(final_blocks(&[0; 55], 55).1, 1);
        assert_eq!(final_blocks(&[0; 56], 56).1, 2);
        let (tail, _) = final_blocks(b"abc", 3);
        assert_eq!(&tail[..4], b"abc\x80");
        assert_eq!(&tail[56..64], &24u64.to_be_bytes());
    }

    #[test]
    fn sha256_known_vector() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
