//! Commit-reveal as the reference does it: `sha256_hex("{value}:{nonce}")`
//! where the value is formatted like Python's `str()` (strings raw, integers
//! in decimal, `True`/`False`) and the nonce is 16 lowercase hex characters.

use crate::json::Value;
use crate::json::canonical::sha256_hex;

/// The commitment to `value` under `nonce`.
pub fn commit_hash(value: &Value, nonce: &str) -> String {
    sha256_hex(format!("{}:{nonce}", value.py_str()))
}

/// Does `hash` commit to `value` under `nonce`?
pub fn verify(value: &Value, nonce: &str, hash: &str) -> bool {
    commit_hash(value, nonce) == hash
}

/// A fresh nonce from 8 random bytes.
pub fn nonce_from(bytes: [u8; 8]) -> String {
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_values_like_python_str() {
        // sha256("rock:0011223344556677"), sha256("3:…"), sha256("True:…").
        assert_eq!(
            commit_hash(&Value::from("rock"), "0011223344556677"),
            sha256_hex("rock:0011223344556677")
        );
        assert_eq!(commit_hash(&Value::from(3), "ab"), sha256_hex("3:ab"));
        assert_eq!(commit_hash(&Value::Bool(true), "ab"), sha256_hex("True:ab"));
        assert!(verify(&Value::from("paper"), "n", &sha256_hex("paper:n")));
        assert_eq!(
            nonce_from([0, 1, 2, 3, 0xfe, 0xff, 0x10, 0x0a]),
            "00010203feff100a"
        );
    }
}
