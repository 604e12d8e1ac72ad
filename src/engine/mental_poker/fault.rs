//! Deliberate misbehaviours of a palaver side, for the adversarial
//! catalogue (`protocol test --adversarial`): each makes the honest peer's
//! checks fire with one of the reference's reasons. Set from code only;
//! never from options, flags or the environment.

/// One way to cheat or break the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Guest: flips a byte of the last blob_B before sending mp_setup_b
    /// (the Host's audit cannot map that card: `derive_id_map_failed`).
    TamperBlob,
    /// Discloses token `<table>-0` plus one (`forged_token`).
    ForgeToken,
    /// Host: discloses a wrong k_inner for `h-0` (`payload_mismatch`).
    WrongKey,
    /// Plays a stock card it does not hold (`card_not_in_hand`).
    CardNotInHand,
    /// Plays its last played card again (`card_not_in_hand`: it left the
    /// hand).
    PlayTwice,
    /// Discloses a wrong blinding factor for its first OT (`bad_witness`).
    BadWitness,
    /// Guest: its first deal OT asks for another card's key than the one
    /// dealt (`peeked_non_hand`).
    Peek,
    /// Signs a transcript root other than the agreed one
    /// (`peer_receipt_signature_invalid`).
    ReceiptOtherRoot,
    /// Adds a field the spec does not have to its first mp_play
    /// (`invalid_frame`).
    UnknownField,
    /// Sends `"call_suit": null` in its first non-8 mp_play
    /// (`invalid_frame`).
    NullCallSuit,
    /// Announces a 2047-bit RSA modulus (`invalid_frame`).
    ShortModulus,
}
