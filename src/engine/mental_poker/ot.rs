//! The blind-RSA token oblivious transfer: per-label context, full-domain
//! hash into Z_n*, token keys, sealed table entries, and the blinding that
//! lets a receiver fetch one entry without the sender learning which.

use super::CryptoError;
use super::deck::{self, KEY_LEN, NONCE_LEN, TAG_LEN};
use super::keys::{MODULUS_LEN, RsaKey, RsaPub};
use super::num::i2osp;
use hkdf::HkdfExtract;
use num_bigint::BigUint;
use num_integer::Integer;
use sha2::{Digest, Sha256};

/// Domain prefix of every context.
pub const CTX_MAGIC: &[u8] = b"aigenora.mp.v1";
/// HKDF `info` of token keys.
pub const TOKEN_KEY_INFO: &[u8] = b"aigenora.mp.tokenkey.v1";
/// A sealed entry: nonce + 32-byte key + tag.
pub const SEALED_LEN: usize = NONCE_LEN + KEY_LEN + TAG_LEN;

/// Whose table a label belongs to. The Host's table (`h-<id_a>`) carries
/// inner keys; the Guest's (`g-<id_b>`) carries outer keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    Host,
    Guest,
}

impl Table {
    /// (sender role byte, payload type byte) in the context.
    fn bytes(self) -> [u8; 2] {
        match self {
            Table::Host => [1, 1],
            Table::Guest => [2, 2],
        }
    }
}

fn put_prefixed(out: &mut Vec<u8>, s: &str) {
    // Protocol ids, session ids and labels are far below 4 GiB.
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The context binding one label: magic ‖ pid ‖ sid ‖ role ‖ type ‖ label,
/// each string behind its big-endian u32 length. Used as FDH input and as
/// the AAD of the label's sealed entry.
pub fn context(pid: &str, sid: &str, table: Table, label: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(CTX_MAGIC.len() + 14 + pid.len() + sid.len() + label.len());
    out.extend_from_slice(CTX_MAGIC);
    put_prefixed(&mut out, pid);
    put_prefixed(&mut out, sid);
    out.extend_from_slice(&table.bytes());
    put_prefixed(&mut out, label);
    out
}

/// MGF1-SHA256 of `seed`, 256 bytes.
fn mgf1_256(seed: &[u8]) -> [u8; MODULUS_LEN] {
    let mut out = [0u8; MODULUS_LEN];
    for (i, block) in out.chunks_mut(32).enumerate() {
        let mut h = Sha256::new();
        h.update(seed);
        h.update((i as u32).to_be_bytes());
        block.copy_from_slice(&h.finalize());
    }
    out
}

/// Full-domain hash into Z_n*: the first outer counter c whose
/// `MGF1(ctx ‖ be32(c))` read big-endian is in `(0, n)` and coprime to n.
/// Returns (c, h).
///
/// Without the private key the coprimality test is left out: a hash that
/// shares a factor with n would factor n, which is as likely as guessing
/// the key (below 2⁻¹⁰⁰⁰), and the full gcd costs as much as the rest of an
/// OT. [`fdh_for_key`] tests it exactly.
pub fn fdh(ctx: &[u8], public: &RsaPub) -> (u32, BigUint) {
    fdh_where(ctx, public, |_| true)
}

/// [`fdh`] with the exact coprimality test of the key's owner.
pub fn fdh_for_key(ctx: &[u8], key: &RsaKey) -> (u32, BigUint) {
    fdh_where(ctx, key.public(), |h| key.coprime(h))
}

fn fdh_where(ctx: &[u8], public: &RsaPub, coprime: impl Fn(&BigUint) -> bool) -> (u32, BigUint) {
    let n = public.n();
    let mut seed = Vec::with_capacity(ctx.len() + 4);
    let mut counter = 0u32;
    loop {
        seed.clear();
        seed.extend_from_slice(ctx);
        seed.extend_from_slice(&counter.to_be_bytes());
        let h = BigUint::from_bytes_be(&mgf1_256(&seed));
        if h.bits() > 0 && &h < n && coprime(&h) {
            return (counter, h);
        }
        counter = counter.wrapping_add(1);
    }
}

/// HKDF-SHA256 with a zero salt, IKM = I2OSP(token, 256) ‖ ctx, info
/// [`TOKEN_KEY_INFO`], 32 bytes (one expand block). A token of more than
/// 256 bytes is [`CryptoError::TooLarge`].
pub fn token_key(token: &BigUint, ctx: &[u8]) -> Result<[u8; 32], CryptoError> {
    let token = i2osp(token, MODULUS_LEN)?;
    // RFC 5869: no salt is a salt of HashLen zeros, as the reference has.
    let mut extract = HkdfExtract::<Sha256>::new(None);
    extract.input_ikm(&token);
    extract.input_ikm(ctx);
    let (_, hkdf) = extract.finalize();
    let mut key = [0u8; 32];
    // HKDF-SHA256 refuses only outputs over 255 × 32 bytes.
    hkdf.expand(TOKEN_KEY_INFO, &mut key)
        .map_err(|_| CryptoError::TooLarge(key.len()))?;
    Ok(key)
}

/// A sealed table entry: `nonce ‖ AEAD(key, nonce, payload, AAD = ctx)`.
pub fn seal_entry(
    key: &[u8; 32],
    nonce: &[u8; NONCE_LEN],
    payload: &[u8; KEY_LEN],
    ctx: &[u8],
) -> [u8; SEALED_LEN] {
    let mut out = [0u8; SEALED_LEN];
    out.copy_from_slice(&deck::seal(key, nonce, payload, ctx));
    out
}

/// Opens a sealed entry to its 32-byte payload.
pub fn open_entry(key: &[u8; 32], sealed: &[u8], ctx: &[u8]) -> Result<[u8; KEY_LEN], CryptoError> {
    let pt = deck::open(key, sealed, ctx)?;
    let got = pt.len();
    pt.try_into().map_err(|_| CryptoError::Length {
        expected: KEY_LEN,
        got,
    })
}

/// The receiver's request: `z = h · r^e mod n`.
pub fn blind(h: &BigUint, r: &BigUint, public: &RsaPub) -> BigUint {
    (h * public.public_op(r)) % public.n()
}

/// The token from the sender's answer: `y · r⁻¹ mod n`.
pub fn unblind(y: &BigUint, r: &BigUint, public: &RsaPub) -> Result<BigUint, CryptoError> {
    let n = public.n();
    let r_inv = r.modinv(n).ok_or(CryptoError::NotInvertible)?;
    Ok((y * r_inv) % n)
}

/// Is `token` the RSA root of the label's FDH: `1 ≤ token < n` and
/// `token^e ≡ FDH(ctx) (mod n)`?
pub fn verify_token(ctx: &[u8], token: &BigUint, public: &RsaPub) -> bool {
    let n = public.n();
    if token.bits() == 0 || token >= n {
        return false;
    }
    public.public_op(token) == fdh(ctx, public).1
}

/// Does the disclosed `r` pin request `z` to this label: `1 ≤ r < n`,
/// `gcd(r, n) = 1` and `z == FDH(ctx) · r^e mod n`?
pub fn verify_witness(z: &BigUint, ctx: &[u8], r: &BigUint, public: &RsaPub) -> bool {
    let n = public.n();
    if r.bits() == 0 || r >= n || r.gcd(n) != BigUint::from(1u8) {
        return false;
    }
    *z == blind(&fdh(ctx, public).1, r, public)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_layout() {
        let ctx = context("P", "sid", Table::Guest, "g-7");
        let mut want = b"aigenora.mp.v1".to_vec();
        want.extend_from_slice(&[0, 0, 0, 1, b'P', 0, 0, 0, 3, b's', b'i', b'd', 2, 2]);
        want.extend_from_slice(&[0, 0, 0, 3, b'g', b'-', b'7']);
        assert_eq!(ctx, want);
        assert_eq!(context("P", "sid", Table::Host, "g-7")[26..28], [1, 1]);
    }

    #[test]
    fn sealed_entry_binds_its_context() {
        let key = [7u8; 32];
        let sealed = seal_entry(&key, &[0; 12], &[5; 32], b"ctx-a");
        assert_eq!(open_entry(&key, &sealed, b"ctx-a").unwrap(), [5; 32]);
        assert_eq!(open_entry(&key, &sealed, b"ctx-b"), Err(CryptoError::Open));
        assert_eq!(
            open_entry(&[8; 32], &sealed, b"ctx-a"),
            Err(CryptoError::Open)
        );
    }

    #[test]
    fn token_key_refuses_oversized_tokens() {
        let huge = BigUint::from(1u8) << 2048usize;
        assert_eq!(token_key(&huge, b""), Err(CryptoError::TooLarge(256)));
    }
}
