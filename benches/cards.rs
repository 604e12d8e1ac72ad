//! Hidden-hand card games (the `mental_poker` flow), measured as a user runs
//! them and beside the reference in the same run.
//!
//! Figures, each a median over the runs (min and max beside it):
//! - **one match** of crazy-eights-v1 (hand_size 5) and of briscola-v1
//!   through the release binary's `palaver protocol test <game> --json`: its
//!   `elapsed_ms`, host and guest in one process over in-memory channels,
//!   both session RSA keys made *before* the match (as a real session makes
//!   them while the invitation waits or while dialling). Includes both
//!   sealed tables (one RSA private operation per card per side), every
//!   oblivious transfer, every play check, both openings, both audits and
//!   the receipts; excludes process start and key generation.
//! - **the keys**: the same run's `keygen_ms` (two RSA-2048 keys claimed
//!   from the spare pool, or made at once on two threads when cold), stated
//!   on its own.
//! - **the whole command**: the wall time of the same `protocol test`
//!   process, start to exit (keys, match, printing), twice: *cold*, with the
//!   spare-key pool off (`PALAVER_KEY_SPARES=0`: both keys made inline, as
//!   before the pool), and *with spares*: both keys claimed from the data
//!   dir's pool (`mental_poker::spares`). Between spare runs the bench waits
//!   until the detached refiller has filled the pool again (a user's pause
//!   between two matches; the refill takes no time from the measured run).
//! - **the reference**: `python -m aigenora protocol test <its protocol dir>`
//!   (aigenora 0.1.4, its default hybrid mode), wall time of the process:
//!   interpreter start, its key generation and the match, as a user waits
//!   for it. When its venv is there (`PALAVER_REFERENCE_PYTHON`, else
//!   target/reference-venv; `USER_FIGURES_REFERENCE=1` makes a missing one an
//!   error). The ratios compare its command with palaver's match and with
//!   palaver's whole command (cold and with spares).
//! - in-process, the RSA pieces: one key generation, one private operation
//!   (CRT, blinded) and one public operation (e = 65537).
//!
//! Every palaver run must report `ok` with both audits passed and one
//! transcript hash on both sides.
//!
//! Run: `cargo build --release && cargo bench --bench cards`.
//! `CARDS_RUNS` sets the runs per game (default 7).

mod support;

use palaver::engine::mental_poker::keys::RsaKey;
use palaver::engine::mental_poker::spares;
use palaver::json::{self, Value};
use std::path::Path;
use std::process::Command;
use std::time::Instant;
use support::{binary, line, median, reference_python};

fn main() {
    let runs: usize = std::env::var("CARDS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(7);
    let bin = binary();
    rsa_pieces();
    let py = reference_python();
    for (game, options) in [
        ("crazy-eights-v1", r#"{"hand_size":5}"#),
        ("briscola-v1", "{}"),
    ] {
        println!("\n{game} (ms: median [min … max], {runs} runs)");
        let data = tempfile::tempdir().expect("tempdir");
        let cold: Vec<(f64, f64, f64)> = (0..runs)
            .map(|_| palaver_match(&bin, data.path(), false, game, options))
            .collect();
        line("palaver cold: the whole command", cold.iter().map(|r| r.2));
        // One run to start the pool, then each run with two spares.
        palaver_match(&bin, data.path(), true, game, options);
        let ours: Vec<(f64, f64, f64)> = (0..runs)
            .map(|_| {
                pool_full(data.path());
                palaver_match(&bin, data.path(), true, game, options)
            })
            .collect();
        line(
            "palaver: one match, keys made before",
            ours.iter().map(|r| r.0),
        );
        line(
            "palaver: 2 keys claimed from spares",
            ours.iter().map(|r| r.1),
        );
        line("palaver: the whole command", ours.iter().map(|r| r.2));
        match &py {
            Some(py) => {
                let theirs: Vec<f64> = (0..runs.min(5))
                    .map(|_| reference_match(py, game))
                    .collect();
                line("reference: the whole command", theirs.iter().copied());
                let m = median(ours.iter().map(|r| r.0));
                let c = median(ours.iter().map(|r| r.2));
                let k = median(cold.iter().map(|r| r.2));
                let r = median(theirs.iter().copied());
                println!(
                    "  palaver's match is {:.1}× faster than the reference's command; its whole command {:.1}× (cold {:.1}×)",
                    r / m,
                    r / c,
                    r / k
                );
            }
            None => println!(
                "  the reference: not measured (no venv; run scripts/test once, or set PALAVER_REFERENCE_PYTHON)"
            ),
        }
    }
}

fn rsa_pieces() {
    println!("RSA-2048 in-process (ms: median [min … max])");
    let keygen: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            RsaKey::generate().expect("keygen");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    line("key generation", keygen.into_iter());
    let key = RsaKey::generate().expect("keygen");
    let z = key.public().n() - 12_345u32;
    let private: Vec<f64> = (0..200)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(key.private_op(&z));
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    line("private operation (CRT, blinded)", private.into_iter());
    let public: Vec<f64> = (0..200)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(key.public().public_op(&z));
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    line("public operation (e = 65537)", public.into_iter());
}

/// Waits (up to 30 s) until the refiller has filled the pool of `data`.
fn pool_full(data: &Path) {
    let dir = spares::pool_dir(data);
    let t = Instant::now();
    while spares::count(&dir) < spares::POOL_SIZE && t.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(spares::count(&dir), spares::POOL_SIZE, "the pool refills");
    // Let the refiller exit before the next run.
    std::thread::sleep(std::time::Duration::from_millis(50));
}

/// (match ms, keygen ms, command ms) of one `protocol test` run with the
/// data dir `data`, its spare-key pool on or off.
fn palaver_match(
    bin: &Path,
    data: &Path,
    spares_on: bool,
    game: &str,
    options: &str,
) -> (f64, f64, f64) {
    let t = Instant::now();
    let out = Command::new(bin)
        .args(["--json", "protocol", "test", game, "--options", options])
        .env("RUST_BACKTRACE", "0")
        .env("PALAVER_DATA_DIR", data)
        .env(spares::ENV, if spares_on { "1" } else { "0" })
        .output()
        .expect("run palaver");
    let wall = t.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = json::parse_str(text.trim()).unwrap_or_else(|e| panic!("{game}: {e}: {text}"));
    assert_eq!(v.get("ok"), Some(&Value::Bool(true)), "{game}: {text}");
    let side = |s: &str| v.get(s).cloned().unwrap_or(Value::Null);
    for s in ["host", "guest"] {
        assert_eq!(
            side(s).get("audit_passed"),
            Some(&Value::Bool(true)),
            "{game} {s}"
        );
    }
    assert_eq!(
        side("host").get("transcript_hash"),
        side("guest").get("transcript_hash"),
        "{game}: one transcript"
    );
    let num = |k: &str| {
        v.get(k)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("{game}: {k}"))
    };
    (num("elapsed_ms"), num("keygen_ms"), wall)
}

/// Wall ms of the reference's `protocol test` on its own copy of `game`.
fn reference_match(py: &Path, game: &str) -> f64 {
    let find = format!(
        "import aigenora,json,pathlib;r=pathlib.Path(aigenora.__file__).parent/'protocols';\
         print(r/next(p['path'] for p in json.loads((r/'index.json').read_text())['protocols'] if p['alias']=='{game}'))"
    );
    let dir = Command::new(py)
        .args(["-c", &find])
        .output()
        .expect("python");
    let dir = String::from_utf8_lossy(&dir.stdout).trim().to_owned();
    let base = tempfile::tempdir().expect("tempdir");
    let t = Instant::now();
    let out = Command::new(py)
        .args(["-m", "aigenora", "protocol", "test", "--state-base"])
        .arg(base.path())
        .arg(&dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run the reference");
    let wall = t.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[OK]"),
        "reference {game}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wall
}
