//! Deck blobs: ChaCha20-Poly1305 (RFC 8439), written as `nonce ‖ ct ‖ tag`.
//!
//! `blob_A` (44 B) seals `[rank, suit] ‖ pad14` under the Host's per-card
//! key; `blob_B` (72 B) seals the whole `blob_A` under the Guest's key.
//! Neither layer has AAD.

use super::CryptoError;
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};

pub const KEY_LEN: usize = 32;
pub const NONCE_LEN: usize = 12;
pub const TAG_LEN: usize = 16;
/// Card bytes at the front of the inner plaintext.
pub const CARD_LEN: usize = 2;
pub const PAD_LEN: usize = 14;
/// `blob_A`: nonce + 16-byte plaintext + tag.
pub const INNER_LEN: usize = NONCE_LEN + CARD_LEN + PAD_LEN + TAG_LEN;
/// `blob_B`: nonce + `blob_A` + tag.
pub const OUTER_LEN: usize = NONCE_LEN + INNER_LEN + TAG_LEN;

/// `nonce ‖ AEAD(key, nonce, pt, aad)`.
///
/// Every caller seals at most a few dozen bytes, far below the cipher's
/// 256 GiB limit, which is the only way encryption can fail.
#[allow(
    clippy::expect_used,
    reason = "ChaCha20-Poly1305 fails only past 256 GiB of plaintext; callers seal a few dozen bytes"
)]
pub fn seal(key: &[u8; KEY_LEN], nonce: &[u8; NONCE_LEN], pt: &[u8], aad: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(NONCE_LEN + pt.len() + TAG_LEN);
    out.extend_from_slice(nonce);
    out.extend_from_slice(pt);
    let tag = ChaCha20Poly1305::new(Key::from_slice(key))
        .encrypt_in_place_detached(Nonce::from_slice(nonce), aad, &mut out[NONCE_LEN..])
        .expect("plaintext far below the ChaCha20-Poly1305 length limit");
    out.extend_from_slice(&tag);
    out
}

/// Opens `nonce ‖ ct ‖ tag`; a short blob or a bad tag is [`CryptoError::Open`].
pub fn open(key: &[u8; KEY_LEN], blob: &[u8], aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
    if blob.len() < NONCE_LEN + TAG_LEN {
        return Err(CryptoError::Open);
    }
    let (nonce, rest) = blob.split_at(NONCE_LEN);
    let (ct, tag) = rest.split_at(rest.len() - TAG_LEN);
    let mut pt = ct.to_vec();
    ChaCha20Poly1305::new(Key::from_slice(key))
        .decrypt_in_place_detached(Nonce::from_slice(nonce), aad, &mut pt, Tag::from_slice(tag))
        .map_err(|_| CryptoError::Open)?;
    Ok(pt)
}

fn fixed<const N: usize>(v: Vec<u8>) -> Result<[u8; N], CryptoError> {
    let got = v.len();
    v.try_into()
        .map_err(|_| CryptoError::Length { expected: N, got })
}

/// `blob_A` for one card.
pub fn seal_inner(
    key: &[u8; KEY_LEN],
    card: [u8; CARD_LEN],
    pad: &[u8; PAD_LEN],
    nonce: &[u8; NONCE_LEN],
) -> [u8; INNER_LEN] {
    let mut pt = [0u8; CARD_LEN + PAD_LEN];
    pt[..CARD_LEN].copy_from_slice(&card);
    pt[CARD_LEN..].copy_from_slice(pad);
    let mut out = [0u8; INNER_LEN];
    out.copy_from_slice(&seal(key, nonce, &pt, &[]));
    out
}

/// `blob_B` over a whole `blob_A`.
pub fn seal_outer(
    key: &[u8; KEY_LEN],
    inner: &[u8; INNER_LEN],
    nonce: &[u8; NONCE_LEN],
) -> [u8; OUTER_LEN] {
    let mut out = [0u8; OUTER_LEN];
    out.copy_from_slice(&seal(key, nonce, inner, &[]));
    out
}

/// `blob_B` → `blob_A`.
pub fn open_outer(key: &[u8; KEY_LEN], blob: &[u8]) -> Result<[u8; INNER_LEN], CryptoError> {
    fixed(open(key, blob, &[])?)
}

/// `blob_A` → `[rank, suit]` (the pad is dropped).
pub fn open_inner(key: &[u8; KEY_LEN], blob: &[u8]) -> Result<[u8; CARD_LEN], CryptoError> {
    let pt: [u8; CARD_LEN + PAD_LEN] = fixed(open(key, blob, &[])?)?;
    Ok([pt[0], pt[1]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_round_trip_and_reject_tampering() {
        let (ki, ko) = ([1u8; 32], [2u8; 32]);
        let a = seal_inner(&ki, [6, 2], &[9; PAD_LEN], &[3; 12]);
        let b = seal_outer(&ko, &a, &[4; 12]);
        assert_eq!(open_outer(&ko, &b).unwrap(), a);
        assert_eq!(open_inner(&ki, &a).unwrap(), [6, 2]);
        assert_eq!(open_outer(&ki, &b), Err(CryptoError::Open));
        let mut bad = b;
        bad[20] ^= 1;
        assert_eq!(open_outer(&ko, &bad), Err(CryptoError::Open));
        assert_eq!(open(&ko, &b[..27], &[]), Err(CryptoError::Open));
        // A valid blob of the wrong size is refused by length, not accepted.
        let short = seal(&ko, &[0; 12], &[1, 2, 3], &[]);
        assert_eq!(
            open_outer(&ko, &short),
            Err(CryptoError::Length {
                expected: INNER_LEN,
                got: 3
            })
        );
        // AAD binds.
        let s = seal(&ki, &[0; 12], b"x", b"ctx");
        assert!(open(&ki, &s, b"ctx").is_ok());
        assert_eq!(open(&ki, &s, b"other"), Err(CryptoError::Open));
    }
}
