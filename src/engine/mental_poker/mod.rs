//! The cryptographic core of the `mental_poker` flow mode, byte-compatible
//! with the reference client: two-layer AEAD deck blobs ([`deck`]), the
//! blind-RSA token oblivious transfer ([`ot`], [`keys`]), the transcript
//! root ([`transcript`]) and the Ed25519 receipt over it ([`receipt`]); the
//! public ledger ([`ledger`]), the post-match audit ([`audit`]) and what a
//! card game supplies ([`game`]).
//!
//! Pure: no I/O. Randomness (blinding factors, OT `r`) comes from
//! `rand::rng()`, never from a seedable generator.

pub mod audit;
pub mod deck;
pub mod fault;
pub mod game;
pub mod keys;
pub mod ledger;
pub mod monty;
pub mod num;
pub mod ot;
pub mod pending;
pub mod receipt;
pub mod side;
pub mod spares;
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

/// Why a match cannot go on at a step of the flow (the reason strings are
/// the reference's where it has one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MpError {
    /// A peer frame whose content is unusable (the reference's ValueError
    /// texts): the session ends `invalid_frame`.
    #[error("{0}")]
    Invalid(String),
    /// A well-formed frame at the wrong moment: `unexpected_frame`.
    #[error("{0}")]
    Unexpected(String),
    /// A cryptographic check failed: the session ends with `reason`.
    #[error("{reason}: {detail}")]
    Refused {
        reason: &'static str,
        detail: String,
    },
    #[error(transparent)]
    Crypto(#[from] CryptoError),
}
