//! Verifying a long session's replay bundle, as a user runs it, beside the
//! reference in the same run (issue 41's target: ≤ 1 s for a 10,000-round
//! RPS bundle).
//!
//! Setup (not timed): one rps-v1 session of `best_of` 9,999 fixed rounds
//! (the most the spec allows) played in this process by palaver's engine
//! into a state dir, as `palaver host` writes it (session.json,
//! events.jsonl, details.jsonl with one `round_result` per round,
//! snapshot.json), then exported as a participant bundle signed by a fresh
//! key (`session::bundle::export`; its time is printed apart).
//!
//! Figures, each the median of the runs with min and max beside it:
//! - **palaver**: `palaver session replay verify BUNDLE --json`, the release
//!   binary's whole command, start to exit: reading the zip as hostile
//!   input, the manifest's signature and identity, every inventory hash,
//!   the derived and terminal evidence, printing the report.
//! - **the reference**: `python -m aigenora session replay verify BUNDLE`
//!   (aigenora 0.1.4), the whole command as well (interpreter start
//!   included), when its venv is there (`PALAVER_REFERENCE_PYTHON`, else
//!   target/reference-venv; `USER_FIGURES_REFERENCE=1` makes a missing one an
//!   error). Both must accept the bundle.
//!
//! Run: `cargo build --release && cargo bench --bench bundle`
//! (`BUNDLE_RUNS`, default 7; `BUNDLE_ROUNDS`, default 9,999). The timed
//! figures are whole commands of the release binary however this harness
//! is built; built unoptimised (`cargo test --bench bundle`), only the
//! setup and the in-process export line are slower.

mod support;

use palaver::engine::{ControlMode, Role};
use palaver::identity::KeyPair;
use palaver::json::{Map, Value};
use palaver::library;
use palaver::protocols::native_hooks_for_alias;
use palaver::services::local::{Side, play};
use palaver::services::run::{Launch, engine_config, stateful_side, write_end, write_launch};
use palaver::session::StateDir;
use palaver::session::bundle::{Scope, export};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;
use support::{binary, line, reference_python};

fn count(var: &str, default: u64, max: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| (1..=max).contains(n))
        .unwrap_or(default)
}

/// Plays the long session into a state dir under `data`; its dir.
fn long_session(data: &Path, rounds: u64) -> PathBuf {
    let spec = library::bundled_spec("rps-v1").expect("rps-v1 is bundled");
    let mut options = Map::new();
    options.insert("best_of", Value::from(rounds as i64));
    options.insert("termination", Value::from("fixed_rounds"));
    spec.validate_options(&Value::Object(options.clone()))
        .expect("rps-v1 takes these options");
    let dir = StateDir::create(data, Role::Host).expect("state dir");
    let ours = stateful_side(
        dir.clone(),
        spec,
        native_hooks_for_alias("rps-v1").expect("native rps"),
        Role::Host,
        ControlMode::Autonomous,
        &options,
        Some(5),
    );
    write_launch(
        &dir,
        &Launch {
            spec,
            protocol_dir: None,
            role: Role::Host,
            control_mode: ControlMode::Autonomous,
            options: &options,
            pid: std::process::id(),
            status: "running",
        },
    )
    .expect("session.json");
    let mut bot = Side::auto(
        native_hooks_for_alias("rps-v1").expect("native rps"),
        Arc::new(palaver::engine::CountingSink::default()),
    );
    bot.seed = Some(9);
    let cfg = engine_config(std::time::Duration::from_secs(30));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let outcome = rt.block_on(play(spec, &options, &cfg, ours.side, bot)).0;
    assert!(
        outcome.completed,
        "the long session did not complete: {outcome:?}"
    );
    write_end(&dir, &outcome).expect("the end");
    dir.parent.expect("a parent state dir")
}

fn main() {
    let runs = count("BUNDLE_RUNS", 7, 1000) as usize;
    let rounds = count("BUNDLE_ROUNDS", 9_999, 9_999);
    let bin = binary();
    let tmp = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let dir = long_session(&tmp.path().join("data"), rounds);
    // details.jsonl is the engine's, in the state dir's child.
    let details = std::fs::read_dir(&dir)
        .expect("the state dir")
        .flatten()
        .map(|e| e.path().join("details.jsonl"))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    let played = details
        .lines()
        .filter(|l| l.contains("\"round_result\""))
        .count();
    println!(
        "rps-v1, {rounds} fixed rounds played in {:.1} s ({played} round results in details.jsonl)",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(played as u64, rounds, "one round result per round");
    let bundle = tmp.path().join("long.zip");
    let t = Instant::now();
    export(
        &dir,
        &bundle,
        Scope::Participant,
        &KeyPair::generate(),
        false,
    )
    .expect("export");
    println!(
        "  export (in process): {:.1} ms, bundle {} KiB",
        t.elapsed().as_secs_f64() * 1e3,
        std::fs::metadata(&bundle).map_or(0, |m| m.len() / 1024)
    );
    println!("\nverify, the whole command (ms: median [min … max], {runs} runs)");
    let ours: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new(&bin)
                .args(["session", "replay", "verify"])
                .arg(&bundle)
                .arg("--json")
                .env("PALAVER_DATA_DIR", tmp.path().join("verifier"))
                .output()
                .expect("palaver runs");
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(
                out.status.success(),
                "palaver refused the bundle: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            ms
        })
        .collect();
    line("palaver session replay verify", ours.iter().copied());
    if let Some(py) = reference_python() {
        let theirs: Vec<f64> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let out = Command::new(&py)
                    .args(["-m", "aigenora", "session", "replay", "verify"])
                    .arg(&bundle)
                    .output()
                    .expect("the reference runs");
                let ms = t.elapsed().as_secs_f64() * 1e3;
                assert!(
                    out.status.success(),
                    "the reference refused the bundle: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                ms
            })
            .collect();
        line("aigenora session replay verify", theirs.iter().copied());
        println!(
            "  ratio (reference ÷ palaver, medians)            {:.1}×",
            support::median(theirs.into_iter()) / support::median(ours.into_iter())
        );
    } else {
        println!("  the reference: skipped (no venv)");
    }
}
