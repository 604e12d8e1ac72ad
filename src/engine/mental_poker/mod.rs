//! The cryptographic core of the `mental_poker` flow mode, byte-compatible
//! with the reference client: two-layer AEAD deck blobs ([`deck`]), the
//! blind-RSA token oblivious transfer ([`ot`], [`keys`]), the transcript
//! root ([`transcript`]) and the Ed25519 receipt over it ([`receipt`]).
//!
//! Pure: no I/O. Randomness (blinding factors, OT `r`) comes from
//! `rand::rng()`, never from a seedable generator.

pub mod deck;
pub mod keys;
pub mod num;
pub mod ot;
pub mod receipt;
pub mod transcript;

/// What can go wrong in the crypto core. Every malformed input ends here;
/// nothing in this module panics on peer data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    #[error("malformed hex")]
    Hex,
    #[error("wrong length: expected {expected} bytes, got {got}")]
    Length { expected: usize, got: usize },
    #[error("AEAD authentication failed")]
    Open,
    #[error("integer does not fit in {0} bytes")]
    TooLarge(usize),
    #[error("not invertible modulo n")]
    NotInvertible,
    /// A refused RSA public key or key part; the text is the reference's
    /// where it has one.
    #[error("{0}")]
    Rsa(String),
    #[error("transcript payload must not contain {0}")]
    Payload(&'static str),
}
