//! The signed-request scheme and the canonical strings both ends sign.
//!
//! Every request carries `X-Public-Key`, `X-Timestamp` (unix seconds),
//! `X-Request-Id` (32 hex) and `X-Signature`: Ed25519 over
//! `"{ts}\n{METHOD}\n{path with query}\n{request_id}\n"` followed by the body
//! bytes — the reference client's scheme exactly.

use crate::identity::KeyPair;
use crate::json::canonical::sha256_hex;

/// Largest accepted clock difference, seconds.
pub const MAX_SKEW: i64 = 300;
/// How long a request id stays spent, seconds.
pub const REPLAY_WINDOW: i64 = 300;

/// The bytes a request signature covers.
pub fn signing_payload(
    ts: &str,
    method: &str,
    path: &str,
    request_id: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut v = format!(
        "{ts}\n{}\n{path}\n{request_id}\n",
        method.to_ascii_uppercase()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

/// The four auth headers for a request.
pub fn headers(
    kp: &KeyPair,
    method: &str,
    path: &str,
    body: &[u8],
    now: i64,
) -> [(&'static str, String); 4] {
    let ts = now.to_string();
    let rid = hex::encode(rand::random::<[u8; 16]>());
    let sig = kp.sign(&signing_payload(&ts, method, path, &rid, body));
    [
        ("X-Public-Key", kp.public_key.clone()),
        ("X-Timestamp", ts),
        ("X-Request-Id", rid),
        ("X-Signature", sig),
    ]
}

/// The session proof's canonical string: `post_id:host:guest:protocol_id:nonce`.
pub fn session_canonical(
    post_id: &str,
    host: &str,
    guest: &str,
    protocol_id: Option<&str>,
    nonce: &str,
) -> String {
    format!(
        "{post_id}:{host}:{guest}:{}:{nonce}",
        protocol_id.unwrap_or("")
    )
}

/// session_id = sha256(session canonical).
pub fn session_id(canonical: &str) -> String {
    sha256_hex(canonical)
}

/// What a host signs to bind its ticket to its identity and protocol.
pub fn transport_binding_canonical(
    public_key: &str,
    transport: &str,
    ticket: &str,
    protocol_id: Option<&str>,
) -> String {
    format!(
        "public_key:{public_key}\ntransport:{transport}\niroh_ticket:{ticket}\nprotocol_id:{}",
        protocol_id.unwrap_or("")
    )
}

/// The registration proof of work: `sha256("{nonce}{public_key}{counter}")`
/// starts with `difficulty` zero bytes.
pub fn pow_ok(nonce: &str, public_key: &str, counter: u64, difficulty: u32) -> bool {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(format!("{nonce}{public_key}{counter}"));
    d.iter().take(difficulty as usize).all(|b| *b == 0) && (difficulty as usize) <= d.len()
}

/// The smallest counter that satisfies the proof of work.
pub fn solve_pow(nonce: &str, public_key: &str, difficulty: u32) -> u64 {
    (0u64..)
        .find(|c| pow_ok(nonce, public_key, *c, difficulty))
        .unwrap_or(0)
}

/// What a registration signs: `"{nonce}:{public_key}:{nickname}"`.
pub fn registration_canonical(nonce: &str, public_key: &str, nickname: &str) -> String {
    format!("{nonce}:{public_key}:{nickname}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_and_pow() {
        assert_eq!(
            signing_payload("1", "get", "/a?b=1", "ff", b"{}"),
            b"1\nGET\n/a?b=1\nff\n{}".to_vec()
        );
        let c = solve_pow("n", "k", 1);
        assert!(pow_ok("n", "k", c, 1));
        assert!(c == 0 || !pow_ok("n", "k", c - 1, 1));
        assert_eq!(
            transport_binding_canonical("pk", "iroh", "node1", Some("id")),
            "public_key:pk\ntransport:iroh\niroh_ticket:node1\nprotocol_id:id"
        );
    }
}
