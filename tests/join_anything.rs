//! Joining what a community offers beyond the bundled games, against a real
//! `palaver serve`: `protocol fetch` (the spec must hash to its id; a
//! scaffold is written when nothing can run it; the skeleton guard), `join`
//! fetching an unknown protocol by itself and playing once hooks are there,
//! ratings and agent stats, browse's `--tags`, `--post-id` and `--oneline`,
//! and `palaver doctor`, each of its checks shown failing and passing.

use crate::common;

use common::{Kill, ok, read_until};
use palaver::json::{self, Value};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

struct World {
    url: String,
    db: PathBuf,
    tmp: tempfile::TempDir,
    _serve: common::Serve,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("community.sqlite");
        let (serve, url) = common::palaver_serve(&db, &["--rate-limit", "0"]);
        World {
            url,
            db,
            tmp,
            _serve: serve,
        }
    }

    fn data(&self, who: &str) -> PathBuf {
        self.tmp.path().join(who)
    }

    fn palaver(&self, who: &str, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(self.data(who))
            .arg("--server")
            .arg(&self.url)
            .args(args)
            .env_remove("PALAVER_HOOKS_PYTHON")
            .env("PALAVER_CONFIG_DIR", self.tmp.path().join("config"))
            .stdin(Stdio::null());
        c
    }

    fn run(&self, who: &str, args: &[&str]) -> Output {
        self.palaver(who, args).output().unwrap()
    }

    fn identity(&self, who: &str) -> String {
        ok(self.run(who, &["init"]), "init");
        ok(self.run(who, &["register", "--nickname", who]), "register");
        let key = std::fs::read_to_string(self.data(who).join("key.json")).unwrap();
        json::parse_str(&key)
            .unwrap()
            .get_str("public_key")
            .unwrap()
            .to_owned()
    }
}

fn json_of(o: &Output, what: &str) -> Value {
    let out = ok(o, what);
    json::parse_str(&out).unwrap_or_else(|e| panic!("{what}: {e}: {out}"))
}

fn failed(o: &Output) -> String {
    assert!(!o.status.success(), "expected a failure: {o:?}");
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// rps-v1 with one timing value changed: a protocol no library has. In
/// `dir` with palaver's example hooks program (palaver's contract).
fn changed_rps(dir: &Path) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rps-external");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(src.join("hooks.py"), dir.join("hooks.py")).unwrap();
    let mut spec =
        json::parse_str(&std::fs::read_to_string(src.join("spec.json")).unwrap()).unwrap();
    let timing = match &mut spec {
        Value::Object(m) => m.get_mut("timing").unwrap(),
        _ => unreachable!(),
    };
    let think = timing
        .get("max_think_seconds")
        .and_then(Value::as_i64)
        .unwrap();
    if let Value::Object(t) = timing {
        t.insert("max_think_seconds", Value::from(think + 1));
    }
    std::fs::write(
        dir.join("spec.json"),
        serde_json::to_string_pretty(&spec).unwrap(),
    )
    .unwrap();
    let id = ok(
        Command::new(BIN)
            .args(["protocol", "hash"])
            .arg(dir.join("spec.json"))
            .output()
            .unwrap(),
        "protocol hash",
    );
    id.trim().to_owned()
}

#[test]
fn fetch_checks_the_hash_installs_and_scaffolds_behind_the_guard() {
    let w = World::new();
    w.identity("author");
    w.identity("user");
    let dir = w.tmp.path().join("changed-rps");
    let id = changed_rps(&dir);
    assert_eq!(id.len(), 64);
    ok(
        w.run("author", &["protocol", "register", dir.to_str().unwrap()]),
        "protocol register",
    );

    // Not a protocol id, and an id the server does not have.
    let e = failed(&w.run("user", &["protocol", "fetch", "rps"]));
    assert!(e.contains("expected 64 hex digits"), "{e}");
    let e = failed(&w.run("user", &["protocol", "fetch", &"ab".repeat(32)]));
    assert!(e.contains("the server has no protocol"), "{e}");

    let f = json_of(
        &w.run("user", &["--json", "protocol", "fetch", &id]),
        "protocol fetch",
    );
    assert_eq!(f.get_str("protocol_id"), Some(id.as_str()));
    assert_eq!(f.get("new"), Some(&Value::Bool(true)));
    let next = f.get("next").unwrap();
    assert_eq!(next.get_str("kind"), Some("scaffold"), "{f:?}");
    let lib_dir = PathBuf::from(f.get_str("dir").unwrap());
    assert!(lib_dir.starts_with(w.data("user").join("protocols")));
    assert!(lib_dir.ends_with(format!("{}/{}", &id[..8], &id[8..])));
    for file in ["spec.json", "hooks.py", ".palaver-hooks.json"] {
        assert!(lib_dir.join(file).is_file(), "{file} missing");
    }
    // The library lists it under its family and the head of its id.
    let list = ok(w.run("user", &["protocol", "list"]), "protocol list");
    assert!(list.contains(&format!("rps@{}", &id[..8])), "{list}");

    // A second fetch changes nothing.
    let again = ok(w.run("user", &["protocol", "fetch", &id]), "fetch again");
    assert!(again.contains("in the library already"), "{again}");

    // The scaffold is refused until implemented, and the bypass runs it.
    let e = failed(&w.run("user", &["protocol", "test", &id]));
    assert!(e.contains("unimplemented hooks skeleton"), "{e}");
    let e = failed(&w.run("user", &["protocol", "test", &id, "--allow-skeleton-hooks"]));
    assert!(!e.contains("unimplemented hooks skeleton"), "{e}");
    assert!(e.contains("hook_error"), "{e}");

    // A server that changed the spec is refused, and nothing is installed.
    let c = rusqlite::Connection::open(&w.db).unwrap();
    let text: String = c
        .query_row(
            "SELECT spec_json FROM protocols WHERE protocol_id = ?1",
            [&id],
            |r| r.get(0),
        )
        .unwrap();
    let tampered = text.replacen(
        "\"max_think_seconds\"",
        "\"min_think_seconds\":2,\"max_think_seconds\"",
        1,
    );
    assert_ne!(tampered, text);
    c.execute(
        "UPDATE protocols SET spec_json = ?1 WHERE protocol_id = ?2",
        [&tampered, &id],
    )
    .unwrap();
    w.identity("other");
    let e = failed(&w.run("other", &["protocol", "fetch", &id]));
    assert!(e.contains("refusing it"), "{e}");
    assert!(
        !w.data("other").join("protocols").join(&id[..8]).exists(),
        "a refused spec was installed"
    );
}

#[test]
fn join_fetches_an_unknown_protocol_then_plays_and_the_host_can_be_rated() {
    let w = World::new();
    let host_key = w.identity("host");
    w.identity("guest");
    let dir = w.tmp.path().join("changed-rps");
    let id = changed_rps(&dir);
    ok(
        w.run("host", &["protocol", "register", dir.to_str().unwrap()]),
        "protocol register",
    );
    let mut host = w
        .palaver(
            "host",
            &[
                "host",
                dir.to_str().unwrap(),
                "--direct",
                "--control-mode",
                "autonomous",
                "--invitation-ttl-minutes",
                "30",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(host.stdout.take().unwrap());
    let mut seen = String::new();
    let post = read_until(&mut out, "post_id:", &mut seen);
    let host = Kill(host);

    // browse: tags, one line per invitation, one invitation in full.
    let line = ok(w.run("guest", &["browse", "--oneline"]), "browse --oneline");
    let fields: Vec<&str> = line.lines().next().unwrap().split('\t').collect();
    assert_eq!(fields.len(), 12, "{line}");
    assert_eq!((fields[0], fields[1]), (post.as_str(), id.as_str()));
    let tagged = json_of(
        &w.run("guest", &["--json", "browse", "--tags", "game,rps"]),
        "browse --tags",
    );
    assert_eq!(tagged.as_array().map(Vec::len), Some(1), "{tagged:?}");
    let none = json_of(
        &w.run("guest", &["--json", "browse", "--tags", "game,no-such-tag"]),
        "browse --tags",
    );
    assert_eq!(none.as_array().map(Vec::len), Some(0), "{none:?}");
    let one = json_of(
        &w.run("guest", &["--json", "browse", "--post-id", &post]),
        "browse --post-id",
    );
    assert_eq!(one.get_str("protocol_id"), Some(id.as_str()));
    assert!(one.get_str("transport_binding_signature").is_some());

    // The first join fetches the protocol, writes a scaffold and stops
    // there, saying where; the invitation stays open.
    let first = w.run(
        "guest",
        &["join", &post, "--direct", "--control-mode", "autonomous"],
    );
    let e = failed(&first);
    assert!(e.contains("fetched protocol"), "{e}");
    assert!(e.contains("a scaffold is at"), "{e}");
    assert!(e.contains("unimplemented hooks skeleton"), "{e}");
    let lib_dir = w
        .data("guest")
        .join("protocols")
        .join(&id[..8])
        .join(&id[8..]);
    // The user implements the hooks (here: the host's own program).
    std::fs::copy(dir.join("hooks.py"), lib_dir.join("hooks.py")).unwrap();
    let second = ok(
        w.run(
            "guest",
            &["join", &post, "--direct", "--control-mode", "autonomous"],
        ),
        "join once the hooks are there",
    );
    assert!(second.contains("completed: completed"), "{second}");
    assert!(
        !second.contains("fetched protocol"),
        "fetched twice: {second}"
    );
    let session = second
        .lines()
        .find_map(|l| l.strip_prefix("session_id: "))
        .unwrap()
        .trim()
        .to_owned();
    common::finish(host, out, seen, "palaver host", Duration::from_secs(60));

    // Rate the host; its ratings and stats show it.
    ok(
        w.run(
            "guest",
            &[
                "rating",
                "--session-id",
                &session,
                "--score",
                "4",
                "--comment",
                "fair play",
            ],
        ),
        "rating",
    );
    let r = json_of(
        &w.run("guest", &["--json", "ratings", &host_key]),
        "ratings",
    );
    assert_eq!(r.get("count").and_then(Value::as_i64), Some(1), "{r:?}");
    assert_eq!(r.get("average").and_then(Value::as_f64), Some(4.0));
    let first = &r.get("results").and_then(Value::as_array).unwrap()[0];
    assert_eq!(first.get("score").and_then(Value::as_i64), Some(4));
    assert_eq!(first.get_str("comment"), Some("fair play"));
    assert_eq!(first.get_str("session_id"), Some(session.as_str()));
    let text = ok(w.run("guest", &["ratings", &host_key]), "ratings");
    assert!(text.contains("1 ratings, average 4.00"), "{text}");

    let s = json_of(
        &w.run("guest", &["--json", "agent-stats", &host_key[..16]]),
        "agent-stats",
    );
    assert_eq!(s.get("total_sessions").and_then(Value::as_i64), Some(1));
    assert_eq!(
        s.get("successful_sessions").and_then(Value::as_i64),
        Some(1)
    );
    assert_eq!(s.get("success_rate").and_then(Value::as_f64), Some(1.0));
    let ws = s.get("weighted_score").and_then(Value::as_f64).unwrap();
    assert!((ws - 10.0 / 3.0).abs() < 1e-9, "{ws}");
    assert_eq!(s.get_str("confidence_level"), Some("low"));
    let e = failed(&w.run("guest", &["agent-stats", "nobody"]));
    assert!(e.contains("404"), "{e}");
    let e = failed(&w.run("guest", &["ratings", &host_key, "--limit", "0"]));
    assert!(e.contains("limit"), "{e}");
}

/// A one-shot HTTP server whose `Date` is a day behind; its URL.
fn skewed_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let yesterday = std::time::SystemTime::now() - Duration::from_secs(86_400);
        let secs = yesterday
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        for stream in listener.incoming().take(8) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = "{\"nonce\":\"n\",\"difficulty\":1}";
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nDate: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                http_date(secs),
                body.len()
            );
        }
    });
    url
}

/// IMF-fixdate of Unix seconds.
fn http_date(secs: i64) -> String {
    let form = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let t = time::UtcDateTime::from_unix_timestamp(secs).expect("a time in range");
    t.format(form).expect("a date and time format")
}

fn doctor(w: &World, who: &str, server: &str, python: &Path) -> (bool, Value) {
    let o = Command::new(BIN)
        .arg("--data-dir")
        .arg(w.data(who))
        .args(["--server", server, "--json", "doctor"])
        .env("PALAVER_HOOKS_PYTHON", python)
        .env("PALAVER_CONFIG_DIR", w.tmp.path().join("config"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let v = json::parse_str(&out).unwrap_or_else(|e| panic!("doctor --json: {e}: {out}"));
    assert_eq!(
        v.get("ok").and_then(Value::as_bool),
        Some(o.status.success()),
        "exit status and `ok` disagree: {out}"
    );
    (o.status.success(), v)
}

fn status_of(v: &Value, name: &str) -> String {
    v.get("checks")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .find(|c| c.get_str("name") == Some(name))
        .and_then(|c| c.get_str("status"))
        .unwrap_or_else(|| panic!("no check {name}: {v:?}"))
        .to_owned()
}

#[test]
fn doctor_shows_each_check_failing_and_passing() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    // A stand-in Python that says it has aigenora 0.1.4, and one that is not there.
    let good_py = w.tmp.path().join("fake-python");
    std::fs::write(&good_py, "#!/bin/sh\necho 0.1.4\n").unwrap();
    std::fs::set_permissions(&good_py, std::fs::Permissions::from_mode(0o755)).unwrap();
    let no_py = w.tmp.path().join("no-python-here");

    // Nothing yet: no identity, no data dir.
    let (passed, v) = doctor(&w, "d", &w.url, &no_py);
    assert!(!passed);
    assert_eq!(status_of(&v, "identity"), "fail");
    assert_eq!(status_of(&v, "data dir"), "fail");
    assert_eq!(status_of(&v, "registered"), "skipped");
    assert_eq!(status_of(&v, "server"), "ok");
    assert_eq!(status_of(&v, "clock"), "ok");
    assert_eq!(status_of(&v, "library"), "ok");
    assert_eq!(status_of(&v, "iroh"), "ok");
    assert_eq!(status_of(&v, "hooks python"), "warn");

    // An identity the server does not know.
    ok(w.run("d", &["init"]), "init");
    let (passed, v) = doctor(&w, "d", &w.url, &good_py);
    assert!(!passed);
    assert_eq!(status_of(&v, "identity"), "ok");
    assert_eq!(status_of(&v, "data dir"), "ok");
    assert_eq!(status_of(&v, "registered"), "fail");
    assert_eq!(status_of(&v, "hooks python"), "ok");

    // Registered: everything passes.
    ok(w.run("d", &["register", "--nickname", "doc"]), "register");
    let (passed, v) = doctor(&w, "d", &w.url, &good_py);
    assert!(passed, "{v:?}");
    assert_eq!(status_of(&v, "registered"), "ok");
    assert_eq!(status_of(&v, "mcp"), "ok");
    assert_eq!(status_of(&v, "mcp-http"), "ok");

    // A key others can read.
    let key = w.data("d").join("key.json");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (passed, v) = doctor(&w, "d", &w.url, &good_py);
    assert!(!passed);
    assert_eq!(status_of(&v, "data dir"), "fail");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();

    // No server there.
    let (passed, v) = doctor(&w, "d", "http://127.0.0.1:9", &good_py);
    assert!(!passed);
    assert_eq!(status_of(&v, "server"), "fail");
    assert_eq!(status_of(&v, "clock"), "skipped");
    assert_eq!(status_of(&v, "mcp-http"), "warn");

    // A server whose clock is a day behind.
    let skewed = skewed_server();
    let (passed, v) = doctor(&w, "d", &skewed, &good_py);
    assert!(!passed);
    assert_eq!(status_of(&v, "clock"), "fail");

    // A library file that no longer hashes to its id.
    let dir = w.tmp.path().join("changed-rps");
    let id = changed_rps(&dir);
    ok(
        w.run("d", &["protocol", "register", dir.to_str().unwrap()]),
        "protocol register",
    );
    ok(w.run("d", &["protocol", "fetch", &id]), "protocol fetch");
    let (passed, _) = doctor(&w, "d", &w.url, &good_py);
    assert!(passed);
    let spec = w
        .data("d")
        .join("protocols")
        .join(&id[..8])
        .join(&id[8..])
        .join("spec.json");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(
        &spec,
        text.replacen(
            "\"max_think_seconds\"",
            "\"min_think_seconds\": 2, \"max_think_seconds\"",
            1,
        ),
    )
    .unwrap();
    let (passed, v) = doctor(&w, "d", &w.url, &good_py);
    assert!(!passed);
    assert_eq!(status_of(&v, "library"), "fail");

    // No network at all (a namespace whose loopback is down): iroh cannot
    // reach itself. Needs util-linux `unshare` and the right to make a
    // network namespace (root, or unprivileged user namespaces).
    let o = Command::new("unshare")
        .args(["--net", "--map-root-user"])
        .arg(BIN)
        .arg("--data-dir")
        .arg(w.data("d"))
        .args(["--json", "doctor"])
        .env("PALAVER_HOOKS_PYTHON", &good_py)
        .env("PALAVER_CONFIG_DIR", w.tmp.path().join("config"))
        .env_remove("PALAVER_SERVER")
        .output()
        .expect("util-linux `unshare` runs doctor without a network");
    let out = String::from_utf8_lossy(&o.stdout);
    let v = json::parse_str(&out).unwrap_or_else(|e| {
        panic!(
            "doctor in a network namespace: {e}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    assert_eq!(status_of(&v, "iroh"), "fail", "{out}");

    // The text report names each check and what to do.
    let o = w.run("d", &["doctor"]);
    let text = failed(&o);
    for name in [
        "identity",
        "data dir",
        "server",
        "registered",
        "clock",
        "library",
        "iroh",
        "hooks python",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(text.contains("FAIL  library"), "{text}");
    assert!(text.contains("→"), "{text}");
}

#[test]
fn http_dates_of_the_stand_in_server_are_well_formed() {
    assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
}
