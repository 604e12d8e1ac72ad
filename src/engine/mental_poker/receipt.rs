//! The terminal receipt: an Ed25519 signature by the long-term identity key
//! over the raw 32-byte transcript root (not its hex).

use crate::identity::{self, KeyPair};

/// 128 lowercase hex characters.
pub fn sign(key: &KeyPair, root: &[u8; 32]) -> String {
    key.sign(root)
}

/// Does `signature_hex` by `public_key_hex` cover this root? Malformed hex
/// is simply `false`.
pub fn verify(public_key_hex: &str, root: &[u8; 32], signature_hex: &str) -> bool {
    identity::verify(public_key_hex, root, signature_hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_the_raw_root() {
        let kp = KeyPair::from_seed([9; 32]);
        let root = [3u8; 32];
        let sig = sign(&kp, &root);
        assert!(verify(&kp.public_key, &root, &sig));
        assert!(!verify(&kp.public_key, &[4; 32], &sig));
        assert!(!verify(&kp.public_key, &root, "zz"));
        assert!(!verify("nothex", &root, &sig));
    }
}
