//! Engine benchmark: rock-paper-scissors host and guest in one process over
//! the in-memory channel, validation on, 101 fixed rounds a session;
//! criterion reports the time per round.
//!
//! Run: `cargo bench --bench engine`. The README puts the figure beside the
//! reference's `protocol test` measured on the same match.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use palaver::engine::{CountingSink, EngineConfig, EventSink, MemorySink};
use palaver::json::{self, Map};
use palaver::library;
use palaver::protocols::native_hooks_for_alias;
use palaver::services::local::{Side, play};
use std::sync::Arc;

const ROUNDS: u64 = 101;

fn rps_rounds(c: &mut Criterion) {
    let spec = library::bundled_spec("rps-v1").expect("bundled");
    let options: Map = json::parse_str(r#"{"best_of":101,"termination":"fixed_rounds"}"#)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cfg = EngineConfig::default();
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(ROUNDS));
    let session = |keep: bool| {
        let mk = |seed| {
            let sink: Arc<dyn EventSink> = if keep {
                Arc::new(MemorySink::default())
            } else {
                Arc::new(CountingSink::default())
            };
            let mut s = Side::auto(native_hooks_for_alias("rps-v1").expect("hooks"), sink);
            s.seed = Some(seed);
            s
        };
        let (h, g) = rt.block_on(play(spec, &options, &cfg, mk(1), mk(2)));
        assert!(h.completed && g.completed);
    };
    g.bench_function("rps round, host+guest in-process, validation on", |b| {
        b.iter(|| session(false))
    });
    g.bench_function("rps round, events kept in memory", |b| {
        b.iter(|| session(true))
    });
    g.finish();
}

criterion_group!(benches, rps_rounds);
criterion_main!(benches);
