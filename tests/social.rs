//! `palaver inbox`, `karma`, `elo`, `registry`, `trust` and `protocol
//! discover` as processes: text and `--json`, bad flags refused by name
//! before any request, and the trust snapshot's fresh / stale /
//! unavailable fallback against a static file server.

use crate::common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

fn palaver(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let config = dir.join("config");
    let mut c = Command::new(BIN);
    c.arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("PALAVER_SERVER")
        .env_remove("PALAVER_TRUST_URL")
        .env("PALAVER_CONFIG_DIR", &config);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json_of(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A listener that counts the connections made to it (and answers none).
struct Counter {
    url: String,
    hits: Arc<AtomicUsize>,
}

fn counter() -> Counter {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            h.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    Counter { url, hits }
}

#[test]
fn bad_flags_are_named_and_refused_before_any_request() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    assert!(palaver(dir, &["init"], &[]).status.success());
    let server = counter();
    let key = "ab".repeat(32);
    let long = "x".repeat(257);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["inbox", "list", "--limit", "0"], "--limit"),
        (vec!["inbox", "list", "--limit", "101"], "--limit"),
        (vec!["inbox", "read", "0"], "<ID>"),
        (
            vec!["inbox", "send", "--to", "abc", "--message", "hi"],
            "--to",
        ),
        (
            vec!["inbox", "send", "--to", &key, "--message", &long],
            "257 characters",
        ),
        (
            vec!["inbox", "send", "--to", &key, "--message", ""],
            "empty",
        ),
        (vec!["karma", "show", "--public-key", "zz"], "--public-key"),
        (vec!["karma", "show", "--agent-id", "0"], "--agent-id"),
        (vec!["karma", "leaderboard", "--limit", "0"], "--limit"),
        (vec!["elo", "leaderboard", "--limit", "500"], "--limit"),
        (
            vec!["elo", "show", "--agent-id", "1", "--public-key", &key],
            "--public-key",
        ),
        (
            vec!["registry", "set", "--capabilities", "translation"],
            "--capabilities",
        ),
        (
            vec!["registry", "set", "--capabilities", "[1]"],
            "--capabilities",
        ),
        (
            vec!["registry", "set", "--capabilities", r#"["a b"]"#],
            "capability 0",
        ),
        (vec!["trust", "show", "abc"], "PUBLIC_KEY"),
        (vec!["trust", "show", &key, "--depth", "7"], "--depth"),
        (vec!["trust", "show", &key, "--depth", "0"], "--depth"),
        (vec!["trust", "fetch", "--date", "2026-02-30"], "--date"),
        (vec!["trust", "fetch", "--date", "../../x"], "--date"),
        (vec!["trust", "edges", "--agent", "nope"], "--agent"),
        (vec!["protocol", "discover", "--limit", "0"], "--limit"),
        (
            vec!["protocol", "discover", "--max-pages", "0"],
            "--max-pages",
        ),
    ];
    for (args, named) in cases {
        let mut all = vec!["--server", server.url.as_str()];
        all.extend(&args);
        let o = palaver(dir, &all, &[("PALAVER_TRUST_URL", &server.url)]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(named), "{args:?} should name {named}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(server.hits.load(Ordering::SeqCst), 0, "a request was made");
    assert!(!dir.join("outbox.jsonl").exists());
}

#[test]
fn the_help_teaches_with_examples() {
    let d = tempfile::tempdir().unwrap();
    for (args, want) in [
        (&["inbox", "--help"][..], "palaver inbox send --to"),
        (&["inbox", "send", "--help"], "at most 256 characters"),
        (&["trust", "--help"], "advisory"),
        (&["trust", "show", "--help"], "Example: palaver trust show"),
        (
            &["registry", "set", "--help"],
            r#"'["translation","review"]'"#,
        ),
        (&["protocol", "discover", "--help"], "--fetch"),
        (&["elo", "leaderboard", "--help"], "Example"),
    ] {
        let (out, err) = text(&palaver(d.path(), args, &[]));
        assert!(out.contains(want), "{args:?}: {out}{err}");
    }
}

/// A static HTTP file server: path → body; every request is logged.
struct Files {
    url: String,
    files: Arc<Mutex<HashMap<String, String>>>,
    log: Arc<Mutex<Vec<String>>>,
}

fn files() -> Files {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let files = Arc::new(Mutex::new(HashMap::<String, String>::new()));
    let log = Arc::new(Mutex::new(Vec::new()));
    let (f, lg) = (files.clone(), log.clone());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut head = Vec::new();
            let mut b = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
                head.push(b[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
            lg.lock().unwrap().push(path.clone());
            let answer = match f.lock().unwrap().get(&path) {
                Some(body) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_owned(),
            };
            let _ = s.write_all(answer.as_bytes());
        }
    });
    Files { url, files, log }
}

/// A snapshot as the community writes one (canonical edges, their digest).
fn snapshot(date: &str, edges: &[(&str, &str, i64)], tamper: bool) -> String {
    let list: Vec<serde_json::Value> = edges
        .iter()
        .map(|(a, b, w)| serde_json::json!({ "truster": a, "trustee": b, "weight": w }))
        .collect();
    let value = palaver::json::parse_str(&serde_json::to_string(&list).unwrap()).unwrap();
    let mut sha = palaver::json::canonical::sha256_hex(palaver::json::canonical::to_vec(&value));
    if tamper {
        sha = sha.replace(&sha[..1], if sha.starts_with('0') { "1" } else { "0" });
    }
    serde_json::json!({
        "meta": { "snapshot_date": date, "edges_sha256": sha, "edges_count": edges.len() },
        "trust_edges": list,
    })
    .to_string()
}

#[test]
fn trust_is_fetched_fresh_then_stale_then_unavailable_and_never_fails() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let srv = files();
    let (a, b, c, x) = (
        "a".repeat(64),
        "b".repeat(64),
        "c".repeat(64),
        "d".repeat(64),
    );
    let edges = [
        (&b[..], &a[..], 300),
        (&c[..], &b[..], 200),
        (&x[..], &a[..], -101),
    ];
    srv.files.lock().unwrap().insert(
        "/t/latest.json".into(),
        snapshot("2026-12-05", &edges, false),
    );
    srv.files.lock().unwrap().insert(
        "/t/trust-2026-12-01.json".into(),
        snapshot("2026-12-01", &edges[..1], false),
    );
    let base = format!("{}/t", srv.url);

    // Fresh, by the flag: cached under its date.
    let o = palaver(
        dir,
        &["--json", "trust", "fetch", "--trust-url", &base],
        &[],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v = json_of(&out);
    assert_eq!(v["status"], "fresh");
    assert_eq!(v["edges_count"], 3);
    assert_eq!(v["meta"]["snapshot_date"], "2026-12-05");
    assert!(dir.join("trust-cache/trust-2026-12-05.json").exists());
    // A date's snapshot, by the environment.
    let o = palaver(
        dir,
        &["trust", "fetch", "--date", "2026-12-01"],
        &[("PALAVER_TRUST_URL", &base)],
    );
    let (out, _) = text(&o);
    assert!(
        out.contains("status:  fresh") && out.contains("2026-12-01"),
        "{out}"
    );
    assert!(
        srv.log
            .lock()
            .unwrap()
            .contains(&"/t/trust-2026-12-01.json".to_owned())
    );

    // The score, text and JSON, by config.toml's trust_url.
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/config.toml"),
        format!("trust_url = \"{base}\"\n"),
    )
    .unwrap();
    let o = palaver(dir, &["--json", "trust", "show", &a], &[]);
    let v = json_of(&text(&o).0);
    // b: 300 × 0.5 = 150, d: -101 × 0.5 = -50.5 (→ -50), c: 200 × 0.25 = 50.
    assert_eq!(v["score"], 150);
    assert_eq!(v["status"], "fresh");
    assert_eq!(v["paths"][0]["contribution"], 150);
    assert_eq!(v["paths"][1]["contribution"], -50);
    assert_eq!(v["direct"].as_array().unwrap().len(), 2);
    let (out, _) = text(&palaver(dir, &["trust", "show", &a, "--depth", "1"], &[]));
    // 150 - 50.5 = 99.5, a half: to the even 100, as Python rounds.
    assert!(out.contains("(depth 1): 100"), "{out}");
    let (out, _) = text(&palaver(dir, &["trust", "edges", "--agent", &a], &[]));
    assert!(
        out.contains("[DISTRUST]") && out.contains("<- bbbb"),
        "{out}"
    );
    let v = json_of(&text(&palaver(dir, &["--json", "trust", "edges"], &[])).0);
    assert_eq!(
        (
            v["edges"].clone(),
            v["nodes"].clone(),
            v["distrust"].clone()
        ),
        (3.into(), 4.into(), 1.into())
    );

    // A tampered snapshot is a failed source: the cache answers, stale.
    srv.files.lock().unwrap().insert(
        "/t/latest.json".into(),
        snapshot("2026-12-06", &edges, true),
    );
    let o = palaver(dir, &["--json", "trust", "fetch"], &[]);
    let (out, err) = text(&o);
    assert!(o.status.success());
    let v = json_of(&out);
    assert_eq!(v["status"], "stale", "{out}");
    assert!(
        v["source"]
            .as_str()
            .unwrap()
            .ends_with("trust-2026-12-05.json")
    );
    assert!(
        err.contains("edges_sha256") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!dir.join("trust-cache/trust-2026-12-06.json").exists());

    // Nothing anywhere: a one-line warning, exit 0.
    let e = tempfile::tempdir().unwrap();
    let o = palaver(
        e.path(),
        &["trust", "show", &a, "--trust-url", "http://127.0.0.1:9"],
        &[],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("unavailable") && err.lines().count() == 1,
        "{err}"
    );
    let o = palaver(e.path(), &["--json", "trust", "fetch"], &[]);
    assert!(o.status.success());
    assert_eq!(json_of(&text(&o).0)["status"], "unavailable");
}

fn served(dir: &Path, url: &str, args: &[&str]) -> String {
    let mut all = vec!["--server", url];
    all.extend(args);
    common::ok(palaver(dir, &all, &[]), &format!("palaver {args:?}"))
}

#[test]
fn the_social_commands_against_palaver_serve_in_text_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (_serve, url) =
        common::palaver_serve(&tmp.path().join("community.sqlite"), &["--difficulty", "1"]);
    for (dir, nick) in [(&a, "alice"), (&b, "bob")] {
        served(dir, &url, &["init"]);
        served(dir, &url, &["register", "--nickname", nick]);
    }
    let key = |dir: &Path| {
        json_of(&std::fs::read_to_string(dir.join("key.json")).unwrap())["public_key"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (ka, kb) = (key(&a), key(&b));

    let out = served(
        &a,
        &url,
        &["inbox", "send", "--to", &kb, "--message", "hi bob"],
    );
    assert!(out.starts_with("Sent message "), "{out}");
    let out = served(&b, &url, &["inbox", "list"]);
    assert!(out.contains("1 unread") && out.contains(&ka[..16]), "{out}");
    let id = json_of(&served(
        &b,
        &url,
        &["--json", "inbox", "list", "--limit", "1"],
    ))["entries"][0]["id"]
        .to_string();
    let out = served(&b, &url, &["inbox", "read", &id]);
    assert!(out.ends_with("hi bob\n"), "{out}");
    let page = json_of(&served(&b, &url, &["--json", "inbox", "list"]));
    assert_eq!(page["unread"], 0);
    let out = served(&b, &url, &["inbox", "export"]);
    assert!(out.contains("Exported 1 message"), "{out}");
    let exported = json_of(&std::fs::read_to_string(b.join("inbox-export.json")).unwrap());
    assert_eq!(exported[0]["plaintext"], "hi bob");
    let out = served(&b, &url, &["inbox", "delete", &id]);
    assert_eq!(out, format!("Deleted message {id}.\n"));
    let v = json_of(&served(&b, &url, &["--json", "inbox", "clear"]));
    assert_eq!(v["deleted"], 0);
    assert_eq!(
        served(&b, &url, &["inbox", "list"]),
        "Your inbox is empty.\n"
    );

    let out = served(&a, &url, &["karma", "show", "--public-key", &kb]);
    assert!(out.contains("bob") && out.contains("/500"), "{out}");
    let v = json_of(&served(&a, &url, &["--json", "karma", "leaderboard"]));
    assert!(v["entries"].is_array(), "{v}");
    served(&a, &url, &["karma", "leaderboard", "--limit", "1"]);
    let out = served(&a, &url, &["elo", "show"]);
    assert!(out.contains("alice") && out.contains("1200"), "{out}");
    let v = json_of(&served(
        &a,
        &url,
        &["--json", "elo", "leaderboard", "--limit", "5"],
    ));
    assert!(v["entries"].is_array(), "{v}");
    served(&a, &url, &["elo", "leaderboard"]);

    let out = served(
        &a,
        &url,
        &["registry", "set", "--capabilities", r#"["chess","go.v2"]"#],
    );
    assert!(out.contains("chess, go.v2"), "{out}");
    let out = served(&b, &url, &["registry", "get", "--public-key", &ka]);
    assert!(out.contains("capabilities (2): chess, go.v2"), "{out}");
    let v = json_of(&served(&b, &url, &["--json", "registry", "get"]));
    assert_eq!(v["capabilities"], serde_json::json!([]));

    // The trust snapshot from the server itself (its URL is the default).
    let v = json_of(&served(&a, &url, &["--json", "trust", "fetch"]));
    assert_eq!(v["status"], "fresh", "{v}");
    let out = served(&a, &url, &["trust", "show", &kb]);
    assert!(out.contains("score (depth 2): 0"), "{out}");

    served(&a, &url, &["protocol", "register", "rps-v1"]);
    let out = served(&b, &url, &["protocol", "discover"]);
    assert!(out.contains("Rock-Paper-Scissors"), "{out}");
    let out = served(&b, &url, &["protocol", "discover", "-q", "no-such-thing"]);
    assert!(out.contains("No protocols matching"), "{out}");
    let out = served(&b, &url, &["protocol", "discover", "-q", "rock", "--fetch"]);
    assert!(out.contains("in the library already"), "{out}");
    // A protocol the library does not have: one match is installed.
    let calc = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/request-response-v1"
    );
    served(&a, &url, &["protocol", "register", calc]);
    let id = served(&a, &url, &["protocol", "hash", calc])
        .trim()
        .to_owned();
    let out = served(&b, &url, &["protocol", "discover", "-q", "calc", "--fetch"]);
    assert!(out.contains(&format!("installed {id} as ")), "{out}");
    let v = json_of(&served(
        &b,
        &url,
        &[
            "--json",
            "protocol",
            "discover",
            "-q",
            "CALCULATOR",
            "--fetch",
        ],
    ));
    assert_eq!(v["results"][0]["protocol_id"], id.as_str());
    assert_eq!(v["fetched"]["new"], false, "{v}");
    let out = served(&b, &url, &["protocol", "discover", "--fetch"]);
    assert!(out.contains("--fetch needs -q"), "{out}");
}
