//! Durations, sizes and counts from outside never reach a panicking
//! conversion: the crash found with `--options '{"min_think_seconds":1e300}'`
//! and the flags and variables of the same class each end in a clear error
//! naming the field and its range (docs/reliability.md lists the limits).

use crate::common;

use palaver::identity::KeyPair;
use palaver::json::{self, Value};
use palaver::web::Client;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

fn palaver(data: &Path, url: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.arg("--data-dir").arg(data).arg("--server").arg(url);
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args).output().expect("run palaver")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Refused with a message, not a panic (exit 101).
fn assert_refused(o: &Output, needles: &[&str]) {
    let t = text(o);
    assert!(!o.status.success(), "accepted: {t}");
    assert_ne!(o.status.code(), Some(101), "panicked: {t}");
    assert!(!t.contains("panicked"), "panicked: {t}");
    for n in needles {
        assert!(t.contains(n), "no {n:?} in: {t}");
    }
}

#[test]
fn flags_out_of_range_are_refused_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    // No server is needed: the flags are refused before anything dials.
    let url = "http://127.0.0.1:9";
    let cases: &[(&[&str], &str)] = &[
        (&["--peer-timeout", "1e20"], "--peer-timeout"),
        (&["--peer-timeout", "inf"], "--peer-timeout"),
        (&["--peer-timeout", "NaN"], "--peer-timeout"),
        (&["--peer-timeout=-1"], "--peer-timeout"),
        (&["--heartbeat-interval", "inf"], "--heartbeat-interval"),
        (&["--heartbeat-interval", "1e300"], "--heartbeat-interval"),
        (&["--heartbeat-timeout", "inf"], "--heartbeat-timeout"),
        (&["--heartbeat-timeout=-0.5"], "--heartbeat-timeout"),
        (&["--invitation-ttl-minutes", "1e300"], "--invitation-ttl"),
    ];
    for (flags, name) in cases {
        let mut args = vec!["host", "rps-v1", "--direct"];
        args.extend_from_slice(flags);
        let o = palaver(tmp.path(), url, &args, &[]);
        assert_refused(&o, &[name]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        if !flags.contains(&"--invitation-ttl-minutes") {
            let mut args = vec!["join", "some-post", "--direct"];
            args.extend_from_slice(flags);
            assert_refused(&palaver(tmp.path(), url, &args, &[]), &[name]);
        }
    }
    // `protocol test` takes the same peer timeout.
    let o = palaver(
        tmp.path(),
        url,
        &["protocol", "test", "rps-v1", "--peer-timeout", "inf"],
        &[],
    );
    assert_refused(&o, &["--peer-timeout"]);
}

#[test]
fn a_hook_timeout_out_of_range_is_refused_naming_the_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rps-external");
    for v in ["-1", "inf", "1e20", "soon"] {
        let o = palaver(
            tmp.path(),
            "http://127.0.0.1:9",
            &["protocol", "test", example.to_str().unwrap()],
            &[("PALAVER_HOOK_TIMEOUT", v)],
        );
        assert_refused(&o, &["PALAVER_HOOK_TIMEOUT"]);
    }
}

/// Two identities registered on a fresh `palaver serve`.
fn community(tmp: &Path) -> (common::Serve, String) {
    let (serve, url) = common::palaver_serve(&tmp.join("db.sqlite"), &["--rate-limit", "0"]);
    for who in ["h", "g"] {
        let d = tmp.join(who);
        assert!(palaver(&d, &url, &["init"], &[]).status.success());
        let o = palaver(&d, &url, &["register", "--nickname", who], &[]);
        assert!(o.status.success(), "{}", text(&o));
    }
    (serve, url)
}

#[test]
fn the_host_refuses_options_it_cannot_honour() {
    let tmp = tempfile::tempdir().unwrap();
    let (_serve, url) = community(tmp.path());
    let cases: &[(&str, &str, &[&str])] = &[
        // Undeclared by hero-duel, so options validation lets it through:
        // the limits catch it.
        (
            "hero-duel-v1",
            r#"{"min_think_seconds":1e300}"#,
            &["cannot honour", "option min_think_seconds"],
        ),
        (
            "hero-duel-v1",
            r#"{"round_delay_seconds":"inf"}"#,
            &["cannot honour", "round_delay_seconds"],
        ),
        (
            "hero-duel-v1",
            r#"{"total_rounds":1000000000}"#,
            &["cannot honour", "total_rounds"],
        ),
        // Declared with a range: the spec's own check names it.
        (
            "hero-duel-v1",
            r#"{"max_rounds":1000000000}"#,
            &["max_rounds", "out of range"],
        ),
        (
            "rps-v1",
            &format!(r#"{{"best_of":{}}}"#, "9".repeat(400)),
            &["best_of"],
        ),
    ];
    for (alias, opts, needles) in cases {
        let o = palaver(
            &tmp.path().join("h"),
            &url,
            &[
                "host",
                alias,
                "--direct",
                "--control-mode",
                "autonomous",
                "--options",
                opts,
            ],
            &[],
        );
        assert_refused(&o, needles);
    }
}

/// The crash as found: an invitation whose options carry a think time no
/// clock can hold (posted here straight to the server, as any other client
/// could) took `palaver join` down with a panic. Now `browse` shows it as
/// unjoinable and `join` refuses it before dialling.
#[test]
fn an_invitation_with_an_impossible_think_time_is_unjoinable() {
    let tmp = tempfile::tempdir().unwrap();
    let (_serve, url) = community(tmp.path());
    let host = KeyPair::load(&tmp.path().join("h")).expect("host key");
    let spec = palaver::library::bundled_spec("hero-duel-v1").unwrap();
    let pid = spec.protocol_id();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let post_id = rt.block_on(async {
        let client = Client::new(&url, host.clone()).unwrap();
        // A ticket of a node that is not listening: dialling it would hang
        // until the connect timeout, so a quick refusal proves no dial.
        let ep = palaver::net::bind(palaver::net::Reach::Direct, None)
            .await
            .unwrap();
        let ticket = palaver::net::ticket(&ep).await;
        ep.close().await;
        let mut body = common::invitation_body(&host, &ticket, pid, "impossible think time");
        body.insert(
            "options",
            json::parse_str(r#"{"min_think_seconds":1e300}"#).unwrap(),
        );
        common::post_invitation(&client, body).await
    });
    let g = tmp.path().join("g");

    let o = palaver(&g, &url, &["browse", "--json"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = json::parse_bytes(&o.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r.get("post_id").and_then(Value::as_str) == Some(post_id.as_str()))
        .expect("listed")
        .clone();
    let why = row.get("unjoinable").and_then(Value::as_str).unwrap_or("");
    assert!(why.contains("min_think_seconds"), "{row:?}");
    let o = palaver(&g, &url, &["browse"], &[]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("cannot join: option min_think_seconds"),
        "{}",
        text(&o)
    );

    let started = std::time::Instant::now();
    let o = palaver(&g, &url, &["join", &post_id, "--direct"], &[]);
    assert_refused(&o, &["cannot be joined", "min_think_seconds", "86400"]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "join took {:?}: it must refuse before dialling",
        started.elapsed()
    );
}
