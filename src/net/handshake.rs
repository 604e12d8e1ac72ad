//! The `_session_init` / `_session_proof` / `_session_ready` exchange that
//! opens every P2P session, in the reference client's exact frames:
//!
//! ```text
//! G→H {"_session_init":true,"guest_public_key","session_nonce","guest_control_mode"}
//! H→G {"_session_proof":true,"host_public_key","host_signature","protocol_id","host_control_mode"}
//!     the guest checks the host key and protocol against the invitation and the
//!     signature, countersigns, and records the session on the server
//! G→H {"_session_ready":true,"session_id"}
//! ```

use crate::engine::{Channel, ControlMode, Sender};
use crate::identity::{KeyPair, is_key_hex, verify};
use crate::json::{Map, Value};
use crate::obj;
use crate::web::auth;
use std::time::Duration;

/// How long each handshake step may take.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The stream failed: the peer left, or sent a line that is not a
    /// frame (malformed, oversized), or stopped reading.
    #[error("during the handshake: {0}")]
    Channel(String),
    #[error("the peer sent no {frame} within {limit:?}")]
    Timeout {
        frame: &'static str,
        limit: Duration,
    },
    #[error("bad {frame} frame: {msg}")]
    Bad { frame: &'static str, msg: String },
    #[error("the host's session proof does not match the invitation: {0}")]
    Mismatch(String),
    #[error("recording the session on the server failed: {0}")]
    Register(String),
}

/// What both sides know once the handshake is done.
#[derive(Debug, Clone)]
pub struct Established {
    pub session_id: String,
    pub host_public_key: String,
    pub guest_public_key: String,
    pub session_nonce: String,
    /// The other side's declared control mode.
    pub peer_control_mode: ControlMode,
}

async fn next(
    ch: &mut Channel,
    frame: &'static str,
    step: Duration,
) -> Result<Map, HandshakeError> {
    match tokio::time::timeout(step, ch.rx.recv()).await {
        Err(_) => Err(HandshakeError::Timeout { frame, limit: step }),
        Ok(Err(e)) => Err(HandshakeError::Channel(e.to_string())),
        Ok(Ok(m)) => Ok(m),
    }
}

/// Sends one handshake frame; a peer that does not take it within `step`
/// stopped reading.
async fn send(tx: &Sender, frame: Map, step: Duration) -> Result<(), HandshakeError> {
    tx.send_within(&Value::Object(frame), step)
        .await
        .map_err(|e| HandshakeError::Channel(e.to_string()))
}

fn field<'a>(m: &'a Map, frame: &'static str, k: &str) -> Result<&'a str, HandshakeError> {
    m.get(k)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| HandshakeError::Bad {
            frame,
            msg: format!("`{k}` missing or not a string"),
        })
}

fn mode(m: &Map, k: &str) -> ControlMode {
    // The reference treats anything outside the three modes as hybrid.
    m.get(k)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(ControlMode::Hybrid)
}

fn is_nonce(s: &str) -> bool {
    (8..=128).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The host's side: answers the guest's init with a signed proof and waits
/// for the session id the server assigned (each step within [`STEP_TIMEOUT`]).
pub async fn host(
    ch: &mut Channel,
    keys: &KeyPair,
    post_id: &str,
    protocol_id: &str,
    control_mode: ControlMode,
) -> Result<Established, HandshakeError> {
    host_within(ch, keys, post_id, protocol_id, control_mode, STEP_TIMEOUT).await
}

/// As [`host`], each step (a frame from the guest, or the guest taking
/// ours) within `step`.
pub async fn host_within(
    ch: &mut Channel,
    keys: &KeyPair,
    post_id: &str,
    protocol_id: &str,
    control_mode: ControlMode,
    step: Duration,
) -> Result<Established, HandshakeError> {
    let init = next(ch, "_session_init", step).await?;
    if init.get("_session_init") != Some(&Value::Bool(true)) {
        return Err(HandshakeError::Bad {
            frame: "_session_init",
            msg: "the first frame is not a session init".into(),
        });
    }
    let guest = field(&init, "_session_init", "guest_public_key")?.to_ascii_lowercase();
    if !is_key_hex(&guest) {
        return Err(HandshakeError::Bad {
            frame: "_session_init",
            msg: "guest_public_key is not 64 hex digits".into(),
        });
    }
    let nonce = field(&init, "_session_init", "session_nonce")?.to_owned();
    if !is_nonce(&nonce) {
        return Err(HandshakeError::Bad {
            frame: "_session_init",
            msg: "session_nonce is not 8–128 hex digits".into(),
        });
    }
    let canonical =
        auth::session_canonical(post_id, &keys.public_key, &guest, Some(protocol_id), &nonce);
    let proof = obj! {
        "_session_proof" => true, "host_public_key" => keys.public_key.as_str(), "host_signature" => keys.sign(canonical.as_bytes()),
        "protocol_id" => protocol_id, "host_control_mode" => control_mode.as_str(),
    };
    send(&ch.tx, proof, step).await?;
    let ready = next(ch, "_session_ready", step).await?;
    if ready.get("_session_ready") != Some(&Value::Bool(true)) {
        return Err(HandshakeError::Bad {
            frame: "_session_ready",
            msg: "expected {\"_session_ready\":true,…}".into(),
        });
    }
    let session_id = field(&ready, "_session_ready", "session_id")?.to_owned();
    if session_id != auth::session_id(&canonical) {
        return Err(HandshakeError::Bad {
            frame: "_session_ready",
            msg: "session_id is not sha256 of this session's canonical string (forged, or replayed from another session)".into(),
        });
    }
    Ok(Established {
        session_id,
        host_public_key: keys.public_key.clone(),
        guest_public_key: guest,
        session_nonce: nonce,
        peer_control_mode: mode(&init, "guest_control_mode"),
    })
}

/// What the guest expects of the host, from the invitation.
pub struct Expect<'a> {
    pub post_id: &'a str,
    pub host_public_key: &'a str,
    pub protocol_id: &'a str,
}

/// The guest's side: sends init, checks the proof against the invitation,
/// countersigns, has `record` store the proof (POST /api/v1/sessions, which
/// returns the session id), and sends ready (each step within [`STEP_TIMEOUT`]).
pub async fn guest<F, Fut>(
    ch: &mut Channel,
    keys: &KeyPair,
    expect: &Expect<'_>,
    control_mode: ControlMode,
    record: F,
) -> Result<Established, HandshakeError>
where
    F: FnOnce(Value) -> Fut,
    Fut: std::future::Future<Output = Result<String, String>>,
{
    guest_within(ch, keys, expect, control_mode, record, STEP_TIMEOUT).await
}

/// As [`guest`], each step (a frame from the host, or the host taking
/// ours) within `step`.
pub async fn guest_within<F, Fut>(
    ch: &mut Channel,
    keys: &KeyPair,
    expect: &Expect<'_>,
    control_mode: ControlMode,
    record: F,
    step: Duration,
) -> Result<Established, HandshakeError>
where
    F: FnOnce(Value) -> Fut,
    Fut: std::future::Future<Output = Result<String, String>>,
{
    let nonce = hex::encode(rand::random::<[u8; 8]>());
    let init = obj! {
        "_session_init" => true, "guest_public_key" => keys.public_key.as_str(), "session_nonce" => nonce.as_str(),
        "guest_control_mode" => control_mode.as_str(),
    };
    send(&ch.tx, init, step).await?;
    let proof = next(ch, "_session_proof", step).await?;
    if proof.get("_session_proof") != Some(&Value::Bool(true)) {
        return Err(HandshakeError::Bad {
            frame: "_session_proof",
            msg: "expected {\"_session_proof\":true,…}".into(),
        });
    }
    let host = field(&proof, "_session_proof", "host_public_key")?.to_ascii_lowercase();
    if host != expect.host_public_key.to_ascii_lowercase() {
        return Err(HandshakeError::Mismatch(format!(
            "host key {}… is not the invitation's author {}…",
            &host.chars().take(12).collect::<String>(),
            &expect.host_public_key.chars().take(12).collect::<String>()
        )));
    }
    let pid = field(&proof, "_session_proof", "protocol_id")?;
    if pid != expect.protocol_id {
        return Err(HandshakeError::Mismatch(format!(
            "protocol {pid} is not the invitation's {}",
            expect.protocol_id
        )));
    }
    let canonical =
        auth::session_canonical(expect.post_id, &host, &keys.public_key, Some(pid), &nonce);
    let host_sig = field(&proof, "_session_proof", "host_signature")?;
    if !verify(&host, canonical.as_bytes(), host_sig) {
        return Err(HandshakeError::Mismatch(
            "host_signature does not sign post_id:host:guest:protocol_id:nonce of this session (forged, or replayed from another session)".into(),
        ));
    }
    let body = Value::Object(obj! {
        "post_id" => expect.post_id, "host_public_key" => host.as_str(), "guest_public_key" => keys.public_key.as_str(),
        "protocol_id" => pid, "session_nonce" => nonce.as_str(), "host_signature" => host_sig,
        "guest_signature" => keys.sign(canonical.as_bytes()),
    });
    let expected_id = auth::session_id(&canonical);
    let session_id = record(body).await.map_err(HandshakeError::Register)?;
    if session_id != expected_id {
        return Err(HandshakeError::Register(format!(
            "the server returned session_id {session_id}, expected {expected_id}"
        )));
    }
    send(
        &ch.tx,
        obj! { "_session_ready" => true, "session_id" => session_id.as_str() },
        step,
    )
    .await?;
    Ok(Established {
        session_id,
        host_public_key: host,
        guest_public_key: keys.public_key.clone(),
        session_nonce: nonce,
        peer_control_mode: mode(&proof, "host_control_mode"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn host_and_guest_agree_on_the_session_id() {
        let (mut h, mut g) = Channel::memory_pair();
        let (hk, gk) = (KeyPair::generate(), KeyPair::generate());
        let pid = "ab".repeat(32);
        let expect = Expect {
            post_id: "p1",
            host_public_key: &hk.public_key,
            protocol_id: &pid,
        };
        let host = host(&mut h, &hk, "p1", &pid, ControlMode::Autonomous);
        let guest = guest(
            &mut g,
            &gk,
            &expect,
            ControlMode::Human,
            |body: Value| async move {
                let m = body.as_object().unwrap();
                let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap().to_owned();
                let c = auth::session_canonical(
                    &s("post_id"),
                    &s("host_public_key"),
                    &s("guest_public_key"),
                    Some(&s("protocol_id")),
                    &s("session_nonce"),
                );
                assert!(verify(
                    &s("guest_public_key"),
                    c.as_bytes(),
                    &s("guest_signature")
                ));
                Ok(auth::session_id(&c))
            },
        );
        let (h, g) = tokio::join!(host, guest);
        let (h, g) = (h.unwrap(), g.unwrap());
        assert_eq!(h.session_id, g.session_id);
        assert_eq!(h.peer_control_mode, ControlMode::Human);
        assert_eq!(g.peer_control_mode, ControlMode::Autonomous);
    }

    #[tokio::test]
    async fn a_guest_refuses_a_host_that_is_not_the_invitations_author() {
        let (mut h, mut g) = Channel::memory_pair();
        let (impostor, gk, real) = (
            KeyPair::generate(),
            KeyPair::generate(),
            KeyPair::generate(),
        );
        let pid = "cd".repeat(32);
        let expect = Expect {
            post_id: "p",
            host_public_key: &real.public_key,
            protocol_id: &pid,
        };
        let host = host(&mut h, &impostor, "p", &pid, ControlMode::Autonomous);
        let guest = guest(&mut g, &gk, &expect, ControlMode::Hybrid, |_| async {
            Ok::<_, String>("never".into())
        });
        let (_, g) = tokio::join!(
            tokio::time::timeout(Duration::from_millis(200), host),
            guest
        );
        assert!(matches!(g, Err(HandshakeError::Mismatch(_))), "{g:?}");
    }

    #[tokio::test]
    async fn a_host_refuses_a_ready_with_a_foreign_session_id() {
        let (mut h, mut g) = Channel::memory_pair();
        let hk = KeyPair::generate();
        let guest_pk = KeyPair::generate().public_key;
        let script = async move {
            g.tx.send(&Value::Object(obj! { "_session_init" => true, "guest_public_key" => guest_pk.as_str(), "session_nonce" => "00112233aabbccdd", "guest_control_mode" => "weird" })).await.unwrap();
            let _proof = g.rx.recv().await.unwrap();
            g.tx.send(&Value::Object(
                obj! { "_session_ready" => true, "session_id" => "ff".repeat(32) },
            ))
            .await
            .unwrap();
            g
        };
        let pid = "ab".repeat(32);
        let (h, _g) = tokio::join!(
            host(&mut h, &hk, "p", &pid, ControlMode::Autonomous),
            script
        );
        assert!(
            matches!(
                h,
                Err(HandshakeError::Bad {
                    frame: "_session_ready",
                    ..
                })
            ),
            "{h:?}"
        );
    }
}
