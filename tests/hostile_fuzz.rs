//! The CI equivalent of the `ndjson_handshake` fuzz target (issue #16):
//! arbitrary and near-valid peer bytes through the NDJSON stream channel and
//! the session handshake, both sides; plus the channel's framing against an
//! oracle: business frames come out whole and in order, heartbeats never.

use palaver::engine::{Channel, ChannelError};
use palaver::json::{Map, Value};
use proptest::prelude::*;
use tokio::io::AsyncWriteExt;

#[path = "common/ndjson_handshake.rs"]
mod body;
use crate::common;

/// Bytes a hostile peer might send: noise, or lines built from frame pieces.
fn peer_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{\"_session_init\":true,\"guest_public_key\":\"".to_vec()),
        Just(b"{\"_session_proof\":true,\"host_public_key\":\"".to_vec()),
        Just(b"{\"_session_ready\":true,\"session_id\":\"".to_vec()),
        Just(b"{\"_sys\":\"ping\",\"probe_id\":\"p\"}\n".to_vec()),
        Just(b"\"session_nonce\":\"0011223344556677\"".to_vec()),
        Just(b"1e400".to_vec()),
        Just("7".repeat(400).into_bytes()),
        Just(b"[[[[[[[[[[[[[[[[".to_vec()),
        Just(b"\xff\xfe".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"}".to_vec()),
        Just(b",".to_vec()),
        Just("ab".repeat(32).into_bytes()),
        prop::collection::vec(any::<u8>(), 0..40),
    ];
    (any::<u8>(), prop::collection::vec(piece, 0..24)).prop_map(|(mode, parts)| {
        let mut v = vec![mode];
        for p in parts {
            v.extend(p);
        }
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_end_the_handshake_without_a_panic(data in prop::collection::vec(any::<u8>(), 0..600)) {
        body::run(&data);
    }

    #[test]
    fn frame_pieces_end_the_handshake_without_a_panic(data in peer_bytes()) {
        body::run(&data);
    }

    #[test]
    fn the_receiver_yields_business_frames_whole_and_in_order(
        frames in prop::collection::vec(prop::collection::vec((common::text(), common::value()), 0..4), 0..8),
        pings in prop::collection::vec(any::<bool>(), 8),
        pumped in any::<bool>(),
    ) {
        let frames: Vec<Map> = frames.into_iter().map(|kv| kv.into_iter().filter(|(k, _)| k != "_sys").collect()).collect();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got = rt.block_on(async {
            let (ours, theirs) = tokio::io::duplex(1 << 20);
            let (r, w) = tokio::io::split(ours);
            let ch = Channel::from_stream(r, w);
            let mut ch = if pumped { ch.pumped() } else { ch };
            let (_peer_r, mut peer_w) = tokio::io::split(theirs);
            let mut bytes = Vec::new();
            for (i, f) in frames.iter().enumerate() {
                if pings[i % pings.len()] {
                    bytes.extend_from_slice(b"{\"_sys\":\"ping\",\"probe_id\":\"q\"}\r\n\n");
                }
                bytes.extend_from_slice(palaver::json::canonical::to_string_ordered(&Value::Object(f.clone())).as_bytes());
                bytes.push(b'\n');
            }
            peer_w.write_all(&bytes).await.unwrap();
            peer_w.shutdown().await.unwrap();
            let mut got = Vec::new();
            loop {
                match ch.rx.recv().await {
                    Ok(m) => got.push(m),
                    Err(e) => break (got, e),
                }
            }
        });
        let (got, end) = got;
        prop_assert_eq!(end, ChannelError::Closed);
        prop_assert_eq!(got.len(), frames.len());
        for (g, f) in got.iter().zip(&frames) {
            prop_assert_eq!(
                palaver::json::canonical::to_string_ordered(&Value::Object(g.clone())),
                palaver::json::canonical::to_string_ordered(&Value::Object(f.clone()))
            );
        }
    }
}

/// A peer that pings without ever reading gets no queue of pongs in our
/// memory: the pongs the stream cannot take are dropped, and the business
/// frame behind the burst still arrives.
#[tokio::test]
async fn a_ping_burst_from_a_peer_that_never_reads_is_not_queued() {
    let (ours, theirs) = tokio::io::duplex(4096);
    let (r, w) = tokio::io::split(ours);
    let mut ch = Channel::from_stream(r, w).pumped();
    let (_peer_r, mut peer_w) = tokio::io::split(theirs);
    let writer = tokio::spawn(async move {
        let mut burst = Vec::new();
        for i in 0..100_000 {
            burst.extend_from_slice(
                format!("{{\"_sys\":\"ping\",\"probe_id\":\"p{i}\"}}\n").as_bytes(),
            );
        }
        burst.extend_from_slice(b"{\"action\":\"join\"}\n");
        peer_w.write_all(&burst).await.unwrap();
        peer_w
    });
    let m = tokio::time::timeout(std::time::Duration::from_secs(60), ch.rx.recv())
        .await
        .expect("the frame behind the burst arrives")
        .unwrap();
    assert_eq!(m.get("action").and_then(Value::as_str), Some("join"));
    let _peer_w = writer.await.unwrap();
    // Our reply cannot be written to a peer that reads nothing: it is
    // refused in bounded time instead of waiting forever.
    let r = ch
        .tx
        .send_within(
            &Value::Object(palaver::obj! { "action" => "ready" }),
            std::time::Duration::from_millis(200),
        )
        .await;
    assert!(matches!(r, Err(ChannelError::Stalled(_))), "{r:?}");
}
