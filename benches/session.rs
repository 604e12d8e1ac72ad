//! Session-runtime benchmarks: event write throughput to events.jsonl, and
//! decision latency from submission to consumption — in-process (the
//! console's path) and from a separate `palaver session decide` process.
//!
//! Run: `cargo bench --bench session` (the cross-process figure needs the
//! release binary: `cargo build --release` first).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use palaver::engine::{ControlMode, Decider, Role, Window};
use palaver::json::{Map, Value};
use palaver::library;
use palaver::obj;
use palaver::session::{DecisionBus, StateDir, StateSink, SubmitOptions, files, submit};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn event_writes(c: &mut Criterion) {
    let d = tempfile::tempdir().expect("tempdir");
    let sink = StateSink::new(StateDir::create(d.path(), Role::Host).expect("dir"));
    let msg = obj! { "action" => "commit", "round" => 3, "hash" => "a".repeat(64) };
    let mut g = c.benchmark_group("session");
    g.throughput(Throughput::Elements(1));
    g.bench_function("protocol_message event appended to events.jsonl", |b| {
        b.iter(|| {
            sink.event(
                "protocol_message",
                obj! { "direction" => "sent", "msg" => msg.clone() },
                None,
            )
        })
    });
    g.finish();
}

fn window_open(child: &Path, round: i64) {
    loop {
        if files::read_json_object(&child.join("decision/state.json"))
            .is_some_and(|s| s.get("match_value").and_then(Value::as_i64) == Some(round))
        {
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn decision_latency(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let spec = library::bundled_spec("rps-v1").expect("rps");
    let options: Map = obj! { "min_think_seconds" => 0, "max_think_seconds" => 30 };
    let bin = std::env::var("PALAVER_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/palaver").to_owned()
    });
    let mut g = c.benchmark_group("decision latency");
    g.sample_size(30);
    for cross_process in [false, true] {
        if cross_process && !Path::new(&bin).exists() {
            eprintln!("skipping the cross-process latency: build {bin} first");
            continue;
        }
        let name = if cross_process {
            "palaver session decide process -> consumed"
        } else {
            "in-process submit -> consumed"
        };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let d = tempfile::tempdir().expect("tempdir");
                let dir = StateDir::create(d.path(), Role::Host).expect("dir");
                let child = dir.child.clone();
                let sink = Arc::new(StateSink::new(dir));
                let bus = Arc::new(DecisionBus::new(sink, Role::Host, options.clone(), spec));
                let mut total = Duration::ZERO;
                for round in 0..iters as i64 {
                    let bus2 = bus.clone();
                    let waiting = rt.spawn(async move {
                        let w = Window {
                            match_key: "round",
                            match_value: Value::from(round),
                            auto: Map::new(),
                            value_field: "choice",
                            policy: None,
                        };
                        bus2.decide(ControlMode::Human, &w).await
                    });
                    window_open(&child, round);
                    let t0 = Instant::now();
                    if cross_process {
                        let body = format!(r#"{{"round":{round},"choice":"rock"}}"#);
                        let st = std::process::Command::new(&bin)
                            .args([
                                "session",
                                "decide",
                                child.to_str().unwrap_or_default(),
                                "--decision",
                                &body,
                            ])
                            .stdout(std::process::Stdio::null())
                            .status()
                            .expect("decide");
                        assert!(st.success());
                    } else {
                        submit(
                            &child,
                            obj! { "round" => round, "choice" => "rock" },
                            &SubmitOptions {
                                origin: "bench".into(),
                                ..Default::default()
                            },
                        )
                        .expect("submit");
                    }
                    let got = rt.block_on(waiting).expect("join").expect("decided");
                    total += t0.elapsed();
                    assert!(matches!(got, palaver::engine::Decided::Explicit(_)));
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, event_writes, decision_latency);
criterion_main!(benches);
