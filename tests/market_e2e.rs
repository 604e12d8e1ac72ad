//! Buyer and provider as separate `palaver` processes over HTTP against
//! `palaver serve`: a job the provider bot solves ends SETTLED, a wrong
//! digest ends REFUNDED, and an incomplete JOB_OPEN is refused whole.

use crate::common;

use common::cli::{identity, json};

use palaver::json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn ok(dir: &Path, url: &str, args: &[&str]) -> Value {
    let (code, v) = json(dir, url, args);
    assert_eq!(code, 0, "{args:?} → {v:?}");
    v
}

fn wait_for(dir: &Path, url: &str, tx: &str, what: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let v = ok(dir, url, &["market", "show", tx]);
        if what(&v) {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "timed out waiting on {tx}: {v:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn state(v: &Value) -> &str {
    v.get("state").and_then(Value::as_str).unwrap_or("")
}

fn balance(dir: &Path, url: &str) -> i64 {
    ok(dir, url, &["market", "balance"])
        .get("balance")
        .and_then(Value::as_i64)
        .unwrap()
}

#[test]
fn two_processes_settle_a_solved_job_and_refund_a_wrong_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let (_serve, url) =
        common::palaver_serve(&tmp.path().join("community.sqlite"), &["--rate-limit", "0"]);
    let (buyer, provider) = (tmp.path().join("buyer"), tmp.path().join("provider"));
    identity(&buyer, &url, "buyer");
    identity(&provider, &url, "provider");

    // The hard gate over HTTP: three fields missing, all reported, exit 1.
    let partial = tmp.path().join("partial.json");
    std::fs::write(&partial, r#"{"type":"JOB_OPEN","transaction_id":"half","job":{"task_type":"sha256_nonce.v1","input":{"prefix":"p","target":"00"},"output_format":{"type":"object"}}}"#).unwrap();
    let (code, v) = json(
        &buyer,
        &url,
        &["market", "open", "--file", partial.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{v:?}");
    let missing: Vec<String> = v
        .get("missing_fields")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(Value::py_str)
        .collect();
    assert_eq!(
        missing,
        [
            "job.deadline",
            "job.budget",
            "job.verification_policy",
            "job.authority"
        ]
    );
    let (code, v) = json(&buyer, &url, &["market", "show", "half"]);
    assert_eq!(
        (code, v.get("error").and_then(Value::as_str)),
        (1, Some("not_found")),
        "nothing was written"
    );

    // A provider bot in its own process.
    let mut bot = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .arg("--data-dir")
        .arg(&provider)
        .args([
            "--server",
            &url,
            "market",
            "bot",
            "--jobs",
            "1",
            "--poll-ms",
            "100",
            "--price",
            "12",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    let opened = ok(
        &buyer,
        &url,
        &[
            "market", "open", "--id", "e2e_ok", "--target", "0000", "--budget", "15",
        ],
    );
    assert_eq!(state(&opened), "JOB_OPEN");
    let v = wait_for(&buyer, &url, "e2e_ok", |v| {
        v.get("offers")
            .and_then(Value::as_array)
            .is_some_and(|o| !o.is_empty())
    });
    let offer = v.get("offers").and_then(Value::as_array).unwrap()[0]
        .get("offer_hash")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    ok(&buyer, &url, &["market", "lock", "e2e_ok", &offer]);
    wait_for(&buyer, &url, "e2e_ok", |v| state(v) == "DEAL_LOCKED");
    let funded = ok(&buyer, &url, &["market", "fund", "e2e_ok"]);
    assert_eq!(funded.get("balance").and_then(Value::as_i64), Some(988));
    let done = wait_for(&buyer, &url, "e2e_ok", |v| {
        palaver::market::State::parse(state(v)).is_some_and(|s| s.is_terminal())
    });
    assert_eq!(state(&done), "SETTLED", "{done:?}");
    let digest = done
        .get("delivery")
        .and_then(|d| d.get("object"))
        .and_then(|o| o.get("artifact"))
        .and_then(|a| a.get("digest"))
        .and_then(Value::as_str)
        .unwrap();
    assert!(digest.starts_with("0000"));
    assert!(
        bot.wait().unwrap().success(),
        "the bot exits after its one job"
    );
    let chain = ok(&buyer, &url, &["market", "verify-chain", "e2e_ok"]);
    assert_eq!(chain.get("events").and_then(Value::as_i64), Some(8));
    transaction_bundle(&buyer, &url, tmp.path(), &chain);
    assert_eq!(
        (balance(&buyer, &url), balance(&provider, &url)),
        (988, 1012)
    );

    // By hand this time, and the provider delivers a wrong digest.
    ok(
        &buyer,
        &url,
        &[
            "market", "open", "--id", "e2e_bad", "--target", "00", "--budget", "9",
        ],
    );
    let o = ok(
        &provider,
        &url,
        &["market", "offer", "e2e_bad", "--price", "5"],
    );
    let offer = o
        .get("hashes")
        .and_then(|h| h.get("offer_hash"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    ok(&buyer, &url, &["market", "lock", "e2e_bad", &offer]);
    ok(&provider, &url, &["market", "confirm", "e2e_bad"]);
    ok(&buyer, &url, &["market", "fund", "e2e_bad"]);
    assert_eq!(balance(&buyer, &url), 983);
    let zeros = "0".repeat(64);
    let d = ok(
        &provider,
        &url,
        &[
            "market", "deliver", "e2e_bad", "--nonce", "1", "--digest", &zeros,
        ],
    );
    assert_eq!(d.get("result").and_then(Value::as_str), Some("FAIL"));
    assert_eq!(state(&d), "REFUNDED");
    assert_eq!(
        (balance(&buyer, &url), balance(&provider, &url)),
        (988, 1012)
    );
    ok(&buyer, &url, &["market", "verify-chain", "e2e_bad"]);
    // Nothing moves after a terminal state.
    let (code, _) = json(&provider, &url, &["market", "deliver", "e2e_bad"]);
    assert_eq!(code, 1);
}

/// The settled transaction as a signed bundle (`market bundle`): verified by
/// `session replay verify` with the chain's head; a byte of an event changed
/// and the manifest re-signed by a forger is refused by the chain check; the
/// bundle moved anywhere still verifies (it needs no market).
fn transaction_bundle(buyer: &Path, url: &str, tmp: &Path, chain: &Value) {
    use palaver::session::bundle::{BundleError, archive};
    let out = tmp.join("e2e_ok.zip");
    let m = ok(
        buyer,
        url,
        &[
            "market",
            "bundle",
            "e2e_ok",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(
        m.get("bundle_kind").and_then(Value::as_str),
        Some(palaver::market::bundle::KIND)
    );
    let moved = tmp.join("elsewhere.zip");
    std::fs::rename(&out, &moved).unwrap();
    let v = ok(
        buyer,
        "http://127.0.0.1:9",
        &["session", "replay", "verify", moved.to_str().unwrap()],
    );
    assert_eq!(v.get("status").and_then(Value::as_str), Some("verified"));
    let te = v.get("terminal_evidence").unwrap();
    assert_eq!(te.get("state").and_then(Value::as_str), Some("SETTLED"));
    assert_eq!(te.get("head"), chain.get("head"));
    // A forger changes an event's body and signs the bundle again.
    let mut files = archive::read_entries(&moved).unwrap();
    let tx = &mut files
        .iter_mut()
        .find(|(n, _)| n == palaver::market::bundle::TRANSACTION)
        .unwrap()
        .1;
    let text = String::from_utf8(tx.clone()).unwrap();
    let forged = text.replacen("\"SETTLED\"", "\"REFUNDED\"", 1);
    assert_ne!(forged, text);
    *tx = forged.into_bytes();
    common::forge::resign(&mut files, &palaver::identity::KeyPair::generate());
    let forged_zip = tmp.join("forged.zip");
    std::fs::write(&forged_zip, archive::zip_bytes(&files).unwrap()).unwrap();
    match palaver::market::bundle::verify(&forged_zip) {
        Err(BundleError::Failed(f)) => assert!(matches!(f.check, "chain" | "transaction"), "{f}"),
        other => panic!(
            "a forged transaction verified: {:?}",
            other.map(|v| v.manifest)
        ),
    }
}
