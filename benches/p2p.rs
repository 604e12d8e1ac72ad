//! P2P over iroh on loopback (direct addresses, no relay): the time to
//! connect (dial, accept, open the stream, one frame each way), and the time
//! per RPS round with the engine on both ends, 101 fixed rounds a session.
//!
//! Run: `cargo bench --bench p2p`. The README puts the figures beside the
//! reference's, measured the same way with its own host and join.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use palaver::engine::{CountingSink, EngineConfig, Role};
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::net::{self, Reach};
use palaver::protocols::native_hooks_for_alias;
use palaver::services::local::{Side, play_remote};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

const ROUNDS: u64 = 101;

fn loopback() -> Option<SocketAddrV4> {
    Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
}

fn p2p(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (host_ep, guest_ep, ticket) = rt.block_on(async {
        let h = net::bind(Reach::Direct, loopback()).await.expect("bind");
        let g = net::bind(Reach::Direct, loopback()).await.expect("bind");
        let t = net::ticket(&h).await;
        (h, g, t)
    });
    let mut grp = c.benchmark_group("p2p");
    grp.sample_size(20)
        .measurement_time(Duration::from_secs(10));
    grp.bench_function("connect", |b| {
        b.iter(|| {
            rt.block_on(async {
                let accept = net::accept(&host_ep, Duration::from_secs(10), &|e| eprintln!("{e}"));
                let dial = async {
                    let (link, ch) = net::connect(&guest_ep, &ticket).await.expect("connect");
                    ch.tx
                        .send(&Value::Object(palaver::obj! { "hello" => true }))
                        .await
                        .expect("send");
                    (link, ch)
                };
                let (a, (glink, mut gch)) = tokio::join!(accept, dial);
                let (hlink, mut hch) = a.expect("accept");
                let _ = hch.rx.recv().await;
                hch.tx
                    .send(&Value::Object(palaver::obj! { "ok" => true }))
                    .await
                    .expect("send");
                gch.rx.recv().await.expect("reply");
                glink.conn.close(0u32.into(), b"bench");
                hlink.conn.close(0u32.into(), b"bench");
            })
        })
    });

    let spec = library::bundled_spec("rps-v1").expect("bundled");
    let options: Map = json::parse_str(r#"{"best_of":101,"termination":"fixed_rounds"}"#)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let cfg = EngineConfig::default();
    grp.throughput(Throughput::Elements(ROUNDS));
    grp.bench_function("rps_round", |b| {
        b.iter(|| {
            rt.block_on(async {
                let side = || {
                    Side::auto(
                        native_hooks_for_alias("rps-v1").expect("hooks"),
                        Arc::new(CountingSink::default()),
                    )
                };
                let host = async {
                    let (hl, hc) =
                        net::accept(&host_ep, Duration::from_secs(10), &|e| eprintln!("{e}"))
                            .await
                            .expect("accept");
                    (
                        hl,
                        play_remote(spec, &options, &cfg, side(), Role::Host, hc).await,
                    )
                };
                let guest = async {
                    let (gl, gc) = net::connect(&guest_ep, &ticket).await.expect("connect");
                    (
                        gl,
                        play_remote(spec, &options, &cfg, side(), Role::Guest, gc).await,
                    )
                };
                let ((hl, h), (gl, g)) = tokio::join!(host, guest);
                assert!(h.completed && g.completed, "{h:?} {g:?}");
                gl.conn.close(0u32.into(), b"bench");
                hl.conn.close(0u32.into(), b"bench");
            })
        })
    });
    grp.finish();
}

criterion_group!(benches, p2p);
criterion_main!(benches);
