//! Contract-core benchmarks: protocol_id of rps-v1, the SHA-256 floor under
//! it, and message validation over the whole conformance case set.
//!
//! Run: `cargo bench --bench contract`. The README records the figures next
//! to the reference client's, measured by `scripts/reference_timings.py`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use palaver::json::{self, Value};
use palaver::library;
use palaver::spec::{self, Spec};
use sha2::{Digest, Sha256};
use std::hint::black_box;

fn rps() -> &'static Spec {
    library::bundled_spec("rps-v1").expect("rps-v1 is bundled")
}

fn protocol_id(c: &mut Criterion) {
    let doc = rps().doc();
    let bytes = spec::contract_bytes(doc);
    let mut g = c.benchmark_group("protocol_id");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("rps-v1 (parsed spec -> id)", |b| {
        b.iter(|| spec::protocol_id_of(black_box(doc)))
    });
    g.bench_function("sha256 floor (contract bytes only)", |b| {
        b.iter(|| Sha256::digest(black_box(&bytes)))
    });
    let text = library::BUNDLED_SPECS
        .iter()
        .find(|(a, _)| *a == "rps-v1")
        .map(|(_, t)| *t)
        .unwrap_or_default();
    g.bench_function("rps-v1 (file text -> parse -> id)", |b| {
        b.iter(|| {
            let v = json::parse_str(black_box(text)).unwrap_or_default();
            v.as_object().map(spec::protocol_id_of)
        })
    });
    g.finish();
}

struct Case {
    spec: &'static Spec,
    msg: Value,
    direction: Option<String>,
    message: Option<String>,
}

fn load_cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/aigenora/validation_cases.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("validation cases");
    text.lines()
        .filter_map(|l| json::parse_str(l).ok())
        .filter_map(|c| {
            Some(Case {
                spec: library::bundled_spec(c.get("protocol")?.as_str()?)?,
                msg: c.get("msg")?.clone(),
                direction: c
                    .get("direction")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                message: c.get("message").and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect()
}

fn validation(c: &mut Criterion) {
    let cases = load_cases();
    let mut g = c.benchmark_group("validate_message");
    g.throughput(Throughput::Elements(cases.len() as u64));
    g.bench_function(format!("all {} conformance cases", cases.len()), |b| {
        b.iter(|| {
            let mut ok = 0usize;
            for k in &cases {
                ok += usize::from(
                    k.spec
                        .validate_message(
                            black_box(&k.msg),
                            k.direction.as_deref(),
                            k.message.as_deref(),
                        )
                        .is_ok(),
                );
            }
            ok
        })
    });
    let join = json::parse_str(r#"{"action":"join","best_of":3}"#).unwrap_or_default();
    g.throughput(Throughput::Elements(1));
    g.bench_function("rps join (valid)", |b| {
        b.iter(|| rps().validate_message(black_box(&join), Some("guest_to_host"), None))
    });
    g.finish();
}

criterion_group!(benches, protocol_id, validation);
criterion_main!(benches);
