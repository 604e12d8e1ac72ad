//! The body of the `ndjson_handshake` fuzz target, shared with the proptest
//! that runs it in CI (tests/hostile_fuzz.rs): arbitrary peer bytes through
//! an NDJSON stream channel and the session handshake, host or guest side,
//! over an in-memory byte stream. It must return (no panic, no hang) for any
//! input. The peer closes its side after its bytes, so the short step
//! timeout only runs out where a side waits for a frame that never comes.
#![allow(dead_code)]

use palaver::engine::{Channel, ControlMode};
use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::net::handshake;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Runs one input. The first byte picks the side (bit 0: host, else guest)
/// and the receiver (bit 1: pumped, as over iroh, else read in place); the
/// rest is what the peer writes before it closes its side.
pub fn run(data: &[u8]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(drive(data));
}

pub async fn drive(data: &[u8]) {
    let (mode, bytes) = data.split_first().map_or((0, &[][..]), |(m, r)| (*m, r));
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(ours);
    let ch = Channel::from_stream(r, w);
    let ch = if mode & 2 != 0 { ch.pumped() } else { ch };
    let (mut peer_r, mut peer_w) = tokio::io::split(theirs);
    let bytes = bytes.to_vec();
    let writer = tokio::spawn(async move {
        let _ = peer_w.write_all(&bytes).await;
        let _ = peer_w.shutdown().await;
    });
    let reader = tokio::spawn(async move {
        let mut sink = vec![0u8; 4096];
        while let Ok(n) = peer_r.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    });
    let step = Duration::from_millis(20);
    let host_keys = KeyPair::from_seed([7; 32]);
    let guest_keys = KeyPair::from_seed([8; 32]);
    let pid = "ab".repeat(32);
    let mut ch = ch;
    if mode & 1 != 0 {
        let _ = handshake::host_within(
            &mut ch,
            &host_keys,
            "post",
            &pid,
            ControlMode::Autonomous,
            step,
        )
        .await;
    } else {
        let expect = handshake::Expect {
            post_id: "post",
            host_public_key: &host_keys.public_key,
            protocol_id: &pid,
        };
        let _ = handshake::guest_within(
            &mut ch,
            &guest_keys,
            &expect,
            ControlMode::Autonomous,
            |body: Value| async move {
                // The server's answer: the id of what the guest countersigned.
                let _ = body;
                Ok::<_, String>("00".repeat(32))
            },
            step,
        )
        .await;
    }
    // Whatever follows the handshake: every remaining frame or error.
    while let Ok(Ok(_)) = tokio::time::timeout(step, ch.rx.recv()).await {}
    ch.tx.close().await;
    drop(ch);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    reader.abort();
}
