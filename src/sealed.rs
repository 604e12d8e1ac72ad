//! Sealed messages for the community inbox, in the reference's format, so
//! palaver and the reference client read each other's messages.
//!
//! A message to an identity is sealed with that identity's Ed25519 public
//! key taken as an X25519 key (the Edwards point's Montgomery form): a
//! fresh ephemeral X25519 key agrees a secret with it, HKDF-SHA256 (no
//! salt, info `aigenora-inbox-v1`) turns the secret into a
//! ChaCha20-Poly1305 key, and the sealed bytes are
//! `AGBX1 ‖ ephemeral public key (32) ‖ nonce (12) ‖ ciphertext and tag`.
//! The sender is anonymous in the bytes (the community knows who posted
//! them); only the holder of the recipient's private key can open them.

use crate::identity::KeyPair;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use curve25519_dalek::edwards::CompressedEdwardsY;
use curve25519_dalek::montgomery::MontgomeryPoint;
use hkdf::Hkdf;
use sha2::Sha256;

/// The format's version prefix.
pub const MAGIC: &[u8; 5] = b"AGBX1";
const INFO: &[u8] = b"aigenora-inbox-v1";
/// Prefix, ephemeral key, nonce and tag: the size of an empty message.
pub const OVERHEAD: usize = 5 + 32 + 12 + 16;
/// The largest sealed message the community keeps (bytes, before base64).
pub const MAX_SEALED: usize = 2048;
/// The longest plaintext the reference's `inbox send` accepts, characters.
pub const MAX_MESSAGE_CHARS: usize = 256;

/// Why a message could not be sealed or opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("recipient key is not 64 hex digits of an Ed25519 public key")]
    BadRecipient,
    #[error(
        "sealed message is not in the AGBX1 format (bad prefix or shorter than {OVERHEAD} bytes)"
    )]
    BadFormat,
    #[error("sealed message is {0} bytes; the community keeps at most {MAX_SEALED}")]
    TooLarge(usize),
    #[error("the message cannot be opened with this key (not addressed to it, or altered)")]
    Unopenable,
}

fn aead_key(shared: &MontgomeryPoint) -> Result<Key, SealError> {
    // An all-zero secret means the other key was of small order: nothing
    // secret was agreed.
    if shared.as_bytes().iter().all(|b| *b == 0) {
        return Err(SealError::Unopenable);
    }
    let mut key = [0u8; 32];
    Hkdf::<Sha256>::new(None, shared.as_bytes())
        .expand(INFO, &mut key)
        .map_err(|_| SealError::Unopenable)?;
    Ok(Key::from(key))
}

/// The recipient's Ed25519 public key (hex) as an X25519 public key.
fn montgomery_of(recipient_hex: &str) -> Result<MontgomeryPoint, SealError> {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(recipient_hex, &mut bytes).map_err(|_| SealError::BadRecipient)?;
    CompressedEdwardsY(bytes)
        .decompress()
        .map(|p| p.to_montgomery())
        .ok_or(SealError::BadRecipient)
}

/// Seals `plaintext` for the identity whose Ed25519 public key is
/// `recipient_hex`.
pub fn seal(recipient_hex: &str, plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
    seal_with(
        recipient_hex,
        plaintext,
        rand::random::<[u8; 32]>(),
        rand::random::<[u8; 12]>(),
    )
}

/// [`seal`] with a given ephemeral secret and nonce (tests and vectors).
pub fn seal_with(
    recipient_hex: &str,
    plaintext: &[u8],
    ephemeral: [u8; 32],
    nonce: [u8; 12],
) -> Result<Vec<u8>, SealError> {
    let recipient = montgomery_of(recipient_hex)?;
    let eph_public = MontgomeryPoint::mul_base_clamped(ephemeral);
    let key = aead_key(&recipient.mul_clamped(ephemeral))?;
    let sealed = ChaCha20Poly1305::new(&key)
        .encrypt(Nonce::from_slice(&nonce), plaintext)
        .map_err(|_| SealError::Unopenable)?;
    let mut out = Vec::with_capacity(OVERHEAD + plaintext.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(eph_public.as_bytes());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    if out.len() > MAX_SEALED {
        return Err(SealError::TooLarge(out.len()));
    }
    Ok(out)
}

/// Checks the shape of sealed bytes without opening them (what the
/// community checks before it keeps a message).
pub fn check_format(sealed: &[u8]) -> Result<(), SealError> {
    if sealed.len() > MAX_SEALED {
        return Err(SealError::TooLarge(sealed.len()));
    }
    if sealed.len() < OVERHEAD || &sealed[..5] != MAGIC {
        return Err(SealError::BadFormat);
    }
    Ok(())
}

/// Opens a message sealed for `keys`.
pub fn open(keys: &KeyPair, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
    if sealed.len() < OVERHEAD || &sealed[..5] != MAGIC {
        return Err(SealError::BadFormat);
    }
    let mut eph = [0u8; 32];
    eph.copy_from_slice(&sealed[5..37]);
    let key = aead_key(&MontgomeryPoint(eph).mul_clamped(keys.agreement_secret()))?;
    ChaCha20Poly1305::new(&key)
        .decrypt(Nonce::from_slice(&sealed[37..49]), &sealed[49..])
        .map_err(|_| SealError::Unopenable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_message_opens_only_for_its_recipient() {
        let to = KeyPair::from_seed([7; 32]);
        let other = KeyPair::from_seed([8; 32]);
        let sealed = seal(&to.public_key, "héllo".as_bytes()).unwrap();
        assert_eq!(&sealed[..5], MAGIC);
        assert_eq!(sealed.len(), OVERHEAD + "héllo".len());
        assert_eq!(open(&to, &sealed).unwrap(), "héllo".as_bytes());
        assert_eq!(open(&other, &sealed), Err(SealError::Unopenable));
    }

    #[test]
    fn an_altered_or_truncated_message_is_refused() {
        let to = KeyPair::from_seed([9; 32]);
        let mut sealed = seal(&to.public_key, b"attack at dawn").unwrap();
        assert_eq!(
            open(&to, &sealed[..OVERHEAD - 1]),
            Err(SealError::BadFormat)
        );
        let last = sealed.len() - 1;
        sealed[last] ^= 1;
        assert_eq!(open(&to, &sealed), Err(SealError::Unopenable));
        sealed[last] ^= 1;
        sealed[0] = b'X';
        assert_eq!(open(&to, &sealed), Err(SealError::BadFormat));
        assert_eq!(check_format(&sealed), Err(SealError::BadFormat));
    }

    #[test]
    fn a_small_order_ephemeral_key_agrees_nothing() {
        let to = KeyPair::from_seed([10; 32]);
        let mut sealed = seal(&to.public_key, b"x").unwrap();
        // The zero point: every secret times it is zero.
        sealed[5..37].copy_from_slice(&[0; 32]);
        assert_eq!(open(&to, &sealed), Err(SealError::Unopenable));
    }

    #[test]
    fn bad_recipients_and_oversized_messages_are_named() {
        assert_eq!(seal("zz", b"x"), Err(SealError::BadRecipient));
        let to = KeyPair::from_seed([11; 32]);
        let big = vec![b'a'; MAX_SEALED];
        assert!(matches!(
            seal(&to.public_key, &big),
            Err(SealError::TooLarge(_))
        ));
        assert!(check_format(&vec![0; MAX_SEALED + 1]).is_err());
    }

    /// Sealed by the reference client (aigenora 0.1.4 `engine.box.encrypt`)
    /// for the key of seed 0x0c×32, and the bytes palaver seals for it with
    /// a fixed ephemeral secret and nonce, which the reference opened.
    #[test]
    fn the_reference_vectors_open_both_ways() {
        let to = KeyPair::from_seed([12; 32]);
        let theirs = hex::decode(
            "4147425831dce9016d803864df3a65813a307107a5c2da4f02f4ae0d26ddb076e28a01f876ec174f\
             2f43a6964ae5eb9c0cbf4fd157273d3a51f14c03eaf27a4bdfc39adb3d2f795c005ad5b1",
        )
        .unwrap();
        assert_eq!(open(&to, &theirs).unwrap(), b"from python");
        let ours = seal_with(&to.public_key, b"hello ref", [1; 32], [2; 12]).unwrap();
        assert_eq!(
            hex::encode(ours),
            "4147425831a4e09292b651c278b9772c569f5fa9bb13d906b46ab68c9df9dc2b4409f8a209020202\
             0202020202020202022b34197d5a01916829165c361888f2e0e573a39190aa96ceac"
        );
    }

    #[test]
    fn the_same_inputs_seal_to_the_same_bytes() {
        let to = KeyPair::from_seed([12; 32]);
        let a = seal_with(&to.public_key, b"m", [1; 32], [2; 12]).unwrap();
        let b = seal_with(&to.public_key, b"m", [1; 32], [2; 12]).unwrap();
        assert_eq!(a, b);
        assert_eq!(&a[37..49], &[2; 12]);
    }
}
