//! Shared test helpers: proptest strategies for JSON values, a `palaver
//! serve` process, signed invitations, the headless console.
#![allow(dead_code)]

pub mod cli;
pub mod console;
pub mod forge;
pub mod pg;
pub mod played;
pub mod realtime;
pub mod rng;
pub mod rooms;
pub mod table_seat;
pub mod tmux;
pub mod tmux_dirs;

use palaver::json::{Map, Number, Value};
use proptest::prelude::*;

pub fn big_int() -> impl Strategy<Value = Number> {
    ("-?[1-9][0-9]{19,40}").prop_map(|s| Number::BigInt(s.into()))
}

pub fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::Int),
        big_int(),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Number::Float),
        prop_oneof![
            Just(1e16),
            Just(1e-5),
            Just(-0.0),
            Just(0.1),
            Just(5e-324),
            Just(1.0)
        ]
        .prop_map(Number::Float),
    ]
}

/// Text that exercises escapes, non-ASCII and quotes.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[\\x00-\\x1f\"\\\\/a'é人\u{2028}\u{7f}]{0,8}"
    ]
}

/// Arbitrary JSON values.
pub fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number().prop_map(Value::Number),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map>())),
        ]
    })
}

/// The Python with the reference client installed (`PALAVER_REFERENCE_PYTHON`,
/// set by scripts/test). The tests that call this are `#[ignore]`d, so a
/// plain `cargo test` lists them as ignored; run with `--include-ignored`
/// (as scripts/test does), a missing interpreter is a failure, never a skip.
pub fn reference_python() -> String {
    peer_python(
        "PALAVER_REFERENCE_PYTHON",
        "a Python with aigenora==0.1.4 (scripts/test makes one in target/reference-venv)",
    )
}

/// `python -m aigenora <args> --server <url> --data-dir <dir>`: the
/// reference client with the identity in `dir`.
pub fn aigenora(
    py: &str,
    url: &str,
    dir: &std::path::Path,
    args: &[&str],
) -> std::process::Command {
    let mut c = std::process::Command::new(py);
    c.args(["-m", "aigenora"])
        .args(args)
        .arg("--server")
        .arg(url)
        .arg("--data-dir")
        .arg(dir);
    c
}

/// A new reference identity in `dir`, registered on `url` as `nick`.
pub fn reference_identity(py: &str, url: &str, dir: &std::path::Path, nick: &str) {
    ok(
        std::process::Command::new(py)
            .args(["-m", "aigenora", "init", "--data-dir"])
            .arg(dir)
            .output()
            .unwrap(),
        "aigenora init",
    );
    ok(
        aigenora(py, url, dir, &["register", "--nickname", nick])
            .output()
            .unwrap(),
        "aigenora register",
    );
}

/// The interpreter named by `var`; panics naming what is missing.
pub fn peer_python(var: &str, what: &str) -> String {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => {
            assert!(
                std::path::Path::new(&p).exists(),
                "{var}={p} does not exist: it must name {what}"
            );
            p
        }
        _ => panic!("{var} is not set: this test needs {what}; run it through scripts/test"),
    }
}

/// A child process, killed when dropped.
pub struct Kill(pub std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `palaver serve` process, killed when dropped.
pub type Serve = Kill;

/// A command's stdout, after asserting that it succeeded (`what` names it).
pub fn ok(o: impl std::borrow::Borrow<std::process::Output>, what: &str) -> String {
    let o = o.borrow();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{what} failed ({:?}): {out}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Reads lines until one starts with `prefix` (collecting them in `seen`);
/// returns its rest.
pub fn read_until(out: &mut impl std::io::BufRead, prefix: &str, seen: &mut String) -> String {
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap();
        assert!(
            n > 0,
            "the process ended before printing {prefix:?}; it printed:\n{seen}"
        );
        seen.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix(prefix) {
            return rest.trim().to_owned();
        }
    }
}

/// Waits (up to `within`) for a process whose stdout is `out` to exit
/// successfully; returns `seen` and all it printed after.
pub fn finish(
    k: Kill,
    out: impl std::io::Read,
    seen: String,
    what: &str,
    within: std::time::Duration,
) -> String {
    let (status, seen) = finish_status(k, out, seen, what, within);
    assert!(status.success(), "{what} exited with {status}:\n{seen}");
    seen
}

/// Waits (up to `within`) for a process whose stdout is `out` to exit,
/// however it exits; returns its status with `seen` and all it printed after.
pub fn finish_status(
    mut k: Kill,
    mut out: impl std::io::Read,
    mut seen: String,
    what: &str,
    within: std::time::Duration,
) -> (std::process::ExitStatus, String) {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = k.0.try_wait().unwrap() {
            let mut rest = String::new();
            out.read_to_string(&mut rest).unwrap();
            seen.push_str(&rest);
            return (status, seen);
        }
        assert!(start.elapsed() < within, "{what} did not finish:\n{seen}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Accepts how an `aigenora host` process ended: success, or the one known
/// crash of aigenora 0.1.4 — SIGSEGV inside python iroh's endpoint shutdown
/// after it printed "done" (docs/compatibility.md) — and that only once
/// `closed()` says the server holds the session closed. Anything else fails.
pub fn reference_host_ended(
    status: std::process::ExitStatus,
    what: &str,
    seen: &str,
    closed: impl FnOnce() -> bool,
) {
    use std::os::unix::process::ExitStatusExt;
    assert!(seen.lines().any(|l| l.trim() == "done"), "{seen}");
    if status.success() {
        return;
    }
    assert_eq!(
        status.signal(),
        Some(11),
        "{what} exited with {status}:\n{seen}"
    );
    assert!(closed(), "{what} crashed before the session closed");
    eprintln!("note: {what} crashed in its iroh shutdown after finishing (SIGSEGV)");
}

/// Waits (up to 60 s) until the server in `db` holds the session of
/// `post_id` closed with at least `reports` winner reports; returns
/// (status, agreed winner, reports).
pub fn settled(db: &std::path::Path, post_id: &str, reports: i64) -> (String, Option<String>, i64) {
    let start = std::time::Instant::now();
    loop {
        let c = rusqlite::Connection::open(db).unwrap();
        let rec: Option<(String, Option<String>, i64)> = c
            .query_row(
                "SELECT status, winner, (SELECT COUNT(*) FROM results r WHERE r.session_id = s.session_id) FROM sessions s WHERE post_id = ?1",
                [post_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .ok();
        if let Some(r) = &rec
            && r.0 == "closed"
            && r.2 >= reports
        {
            return r.clone();
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "session of {post_id} never settled: {rec:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The winner in palaver's `completed: completed, winner: …` line.
pub fn winner_line(out: &str) -> String {
    out.lines()
        .find(|l| l.starts_with("completed: completed"))
        .unwrap_or_else(|| panic!("no completed game in:\n{out}"))
        .rsplit("winner: ")
        .next()
        .unwrap()
        .trim()
        .to_owned()
}

/// Starts `palaver serve` on a free loopback port with its database at
/// `db` (and any `extra` flags); returns the process and the URL it prints.
pub fn palaver_serve(db: &std::path::Path, extra: &[&str]) -> (Serve, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(extra)
        .arg("--db")
        .arg(db)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start palaver serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("read the serve banner");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("serve printed no URL: {line}"))
        .to_owned();
    (Kill(child), url)
}

/// Every row of every table, as text: what "nothing was written" compares.
pub fn dump(db: &std::path::Path) -> String {
    let c = rusqlite::Connection::open(db).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = String::new();
    for t in tables {
        let mut st = c
            .prepare(&format!("SELECT * FROM {t} ORDER BY rowid"))
            .unwrap();
        let n = st.column_count();
        let mut rows = st.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            out.push_str(&t);
            for i in 0..n {
                // Text as its length and its bytes (unambiguous, and fast
                // for long values: Debug would print each byte as a number).
                match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(t) => {
                        out.push_str(&format!(" Text[{}]", t.len()));
                        out.push_str(&String::from_utf8_lossy(t));
                    }
                    v => out.push_str(&format!(" {v:?}")),
                }
            }
            out.push('\n');
        }
    }
    out
}

/// An invitation body for protocol `pid` reachable at `ticket`, signed by
/// `keys` as `palaver host` signs it (src/services/remote.rs): iroh
/// transport with its binding signature, autonomous, a supply post.
pub fn invitation_body(
    keys: &palaver::identity::KeyPair,
    ticket: &str,
    pid: &str,
    message: &str,
) -> Map {
    use palaver::obj;
    let binding = palaver::web::auth::transport_binding_canonical(
        &keys.public_key,
        "iroh",
        ticket,
        Some(pid),
    );
    obj! {
        "message" => message, "tags" => Value::Array(vec![]), "iroh_ticket" => ticket, "transport" => "iroh",
        "transport_info" => Value::Object(obj! { "version" => 1, "endpoint_id" => keys.public_key.as_str(), "ticket" => ticket }),
        "transport_binding_signature" => keys.sign(binding.as_bytes()), "protocol_id" => pid,
        "host_control_mode" => "autonomous", "type" => "supply",
    }
}

/// Posts an invitation `body` as `client`; returns its post id.
pub async fn post_invitation(client: &palaver::web::Client, body: Map) -> String {
    let inv = client
        .call(
            "POST",
            "/api/v1/invitations",
            Some(&Value::Object(body)),
            &[201],
        )
        .await
        .expect("post the invitation");
    inv.get("post_id")
        .and_then(Value::as_str)
        .expect("post_id")
        .to_owned()
}
