//! The MCP entry: `palaver serve`'s streamable HTTP endpoint (`/mcp`) and
//! `palaver mcp` over stdio, as processes.
//!
//! Without Python: the HTTP entry refuses what REST refuses (no token, an
//! unknown token, an oversized or slow body, a body that is not JSON), a
//! client that never reads does not stop the others, and `palaver mcp`
//! answers every bad line and keeps serving.
//!
//! With the official MCP Python SDK (`mcp` pinned in
//! tests/reference/requirements.txt; `PALAVER_REFERENCE_PYTHON`): a whole
//! GTL transaction over each transport, checked against REST's view of the
//! same transaction (event hashes, chain, refusal codes, the hard gate's
//! missing fields), and an agent that joins a house game through
//! `palaver mcp` and decides every window until the session ends. Those are
//! `#[ignore]`d (run with `-- --include-ignored`, as scripts/test does);
//! there a missing interpreter is a failure, never a skip.

use crate::common;

use common::cli::{identity, json, palaver};

use palaver::json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

fn token(dir: &Path, url: &str) -> String {
    let (code, v) = json(dir, url, &["market", "token"]);
    assert_eq!(code, 0, "{v:?}");
    v.get("token").and_then(Value::as_str).unwrap().to_owned()
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut at = v;
    for k in path {
        at = at.get(k).unwrap_or(&Value::Null);
    }
    at.as_str().unwrap_or("")
}

/// One HTTP/1.1 request on its own connection; the status and the body.
fn http(url: &str, path: &str, headers: &[(&str, String)], body: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    c.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_owned())
}

fn parse(body: &str) -> Value {
    palaver::json::parse_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn bearer(t: &str) -> Vec<(&'static str, String)> {
    vec![("Authorization", format!("Bearer {t}"))]
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

fn call_body(id: u32, name: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{args}}}}}"#
    )
}

#[test]
fn the_http_entry_refuses_what_rest_refuses_and_lists_the_market_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let (_serve, url) = common::palaver_serve(
        &tmp.path().join("community.sqlite"),
        &["--rate-limit", "0", "--read-timeout", "1"],
    );
    let buyer = tmp.path().join("buyer");
    identity(&buyer, &url, "buyer");
    let t = token(&buyer, &url);

    // Discovery names the entry.
    let mut c = TcpStream::connect(url.trim_start_matches("http://")).unwrap();
    write!(
        c,
        "GET /.well-known/aiguishi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut d = String::new();
    c.read_to_string(&mut d).unwrap();
    assert!(d.contains(r#""mcp":"/mcp""#), "{d}");

    // No token, an unknown token: the market's 401 envelope.
    let (st, b) = http(&url, "/mcp", &[], LIST);
    assert_eq!(st, 401, "{b}");
    assert_eq!(s(&parse(&b), &["error"]), "unauthorized");
    let (st, b) = http(&url, "/mcp", &bearer("0000"), LIST);
    assert_eq!(
        (st, s(&parse(&b), &["error"])),
        (401, "unauthorized"),
        "{b}"
    );

    // The market's body limit and read timeout.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(70 * 1024)
    );
    let (st, b) = http(&url, "/mcp", &bearer(&t), &big);
    assert_eq!((st, s(&parse(&b), &["error"])), (413, "too_large"), "{b}");
    let addr = url.trim_start_matches("http://");
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(slow, "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"").unwrap();
    let mut got = String::new();
    let _ = slow.read_to_string(&mut got);
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");

    // Not JSON: the JSON-RPC parse error.
    let (st, b) = http(&url, "/mcp", &bearer(&t), "{not json");
    assert_eq!(st, 400, "{b}");
    let v = parse(&b);
    assert_eq!(
        v.get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64),
        Some(-32700)
    );

    // The market tools, and no session tools (the server has no data dir).
    let (st, b) = http(&url, "/mcp", &bearer(&t), LIST);
    assert_eq!(st, 200, "{b}");
    let v = parse(&b);
    let names: Vec<String> = v
        .get("result")
        .and_then(|r| r.get("tools"))
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|t| s(t, &["name"]).to_owned())
        .collect();
    assert_eq!(names.len(), 14, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("market_")), "{names:?}");

    // An unknown tool is a JSON-RPC error; arguments off the schema and a
    // market refusal are tool errors with their codes.
    let (_, b) = http(&url, "/mcp", &bearer(&t), &call_body(2, "host", "{}"));
    let v = parse(&b);
    assert_eq!(
        v.get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64),
        Some(-32602),
        "{b}"
    );
    let (_, b) = http(
        &url,
        "/mcp",
        &bearer(&t),
        &call_body(3, "market_fund", r#"{"transaction_id":5}"#),
    );
    let v = parse(&b);
    assert_eq!(
        v.get("result").and_then(|r| r.get("isError")),
        Some(&Value::Bool(true)),
        "{b}"
    );
    assert_eq!(
        s(&v, &["result", "structuredContent", "error"]),
        "invalid_arguments"
    );
    let (_, b) = http(
        &url,
        "/mcp",
        &bearer(&t),
        &call_body(4, "market_fund", r#"{"transaction_id":"job_none"}"#),
    );
    let v = parse(&b);
    assert_eq!(
        s(&v, &["result", "structuredContent", "error"]),
        "not_found",
        "{b}"
    );
    let (_, b) = http(
        &url,
        "/mcp",
        &bearer(&t),
        &call_body(5, "market_balance", "{}"),
    );
    let v = parse(&b);
    let sc = v
        .get("result")
        .and_then(|r| r.get("structuredContent"))
        .unwrap();
    let (_, rest) = json(&buyer, &url, &["market", "balance"]);
    assert_eq!(sc.get("balance"), rest.get("balance"), "{b}");
    assert_eq!(sc.get("principal_id"), rest.get("principal_id"), "{b}");
}

#[test]
fn a_client_that_never_reads_does_not_stop_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let (_serve, url) =
        common::palaver_serve(&tmp.path().join("community.sqlite"), &["--rate-limit", "0"]);
    let buyer = tmp.path().join("buyer");
    identity(&buyer, &url, "buyer");
    let t = token(&buyer, &url);
    let addr = url.trim_start_matches("http://").to_owned();
    // Clients that pipeline request after request and never read a byte
    // of the answers (each ~10 KB), until their socket buffers fill.
    let mut stuck = Vec::new();
    for _ in 0..4 {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        let one = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{LIST}",
            LIST.len()
        );
        for _ in 0..200 {
            if c.write_all(one.as_bytes()).is_err() {
                break;
            }
        }
        stuck.push(c);
    }
    let start = Instant::now();
    let (st, b) = http(
        &url,
        "/mcp",
        &bearer(&t),
        &call_body(9, "market_balance", "{}"),
    );
    assert_eq!(st, 200, "{b}");
    assert!(b.contains("\"balance\""), "{b}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    drop(stuck);
}

/// A `palaver mcp` child with its stdin and stdout.
struct McpChild {
    child: common::Kill,
    out: std::sync::mpsc::Receiver<String>,
}

impl McpChild {
    /// On `dir`, with `server` as its community (none: no server at all).
    fn start(dir: &Path, server: Option<&str>) -> McpChild {
        let mut cmd = Command::new(BIN);
        cmd.arg("--data-dir").arg(dir);
        if let Some(u) = server {
            cmd.args(["--server", u]);
        }
        let mut c = cmd
            .arg("mcp")
            .env_remove("PALAVER_SERVER")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = c.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { return };
                if tx.send(l).is_err() {
                    return;
                }
            }
        });
        McpChild {
            child: common::Kill(c),
            out: rx,
        }
    }

    fn send(&mut self, line: &str) {
        let i = self.child.0.stdin.as_mut().unwrap();
        i.write_all(line.as_bytes()).unwrap();
        i.write_all(b"\n").unwrap();
        i.flush().unwrap();
    }

    fn recv(&self) -> Value {
        let l = self
            .out
            .recv_timeout(Duration::from_secs(30))
            .expect("palaver mcp answered");
        parse(&l)
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;

#[test]
fn palaver_mcp_answers_every_bad_line_and_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("agent");
    assert!(
        Command::new(BIN)
            .arg("--data-dir")
            .arg(&dir)
            .arg("init")
            .output()
            .unwrap()
            .status
            .success()
    );
    let mut m = McpChild::start(&dir, None);
    m.send("this is not json");
    let v = m.recv();
    assert_eq!(
        v.get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64),
        Some(-32700),
        "{v:?}"
    );
    m.send(&format!("\"{}\"", "x".repeat(2 * 1024 * 1024)));
    let v = m.recv();
    assert!(
        s(&v, &["error", "message"]).contains("limited to 1048576 bytes"),
        "{v:?}"
    );
    m.send(r#"{"jsonrpc":"2.0","id":"q","result":1,"method":7}"#);
    let v = m.recv();
    assert_eq!(
        v.get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64),
        Some(-32600),
        "{v:?}"
    );
    assert_eq!(s(&v, &["id"]), "q");
    m.send(INIT);
    let v = m.recv();
    assert_eq!(s(&v, &["result", "serverInfo", "name"]), "palaver", "{v:?}");
    m.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    m.send(LIST);
    let v = m.recv();
    let tools = v
        .get("result")
        .and_then(|r| r.get("tools"))
        .and_then(Value::as_array)
        .unwrap();
    assert_eq!(tools.len(), 25);
    for t in tools {
        assert!(
            t.get("inputSchema").is_some() && t.get("outputSchema").is_some(),
            "{t:?}"
        );
    }
    m.send(&call_body(2, "nope", "{}"));
    assert_eq!(
        m.recv()
            .get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64),
        Some(-32602)
    );
    // No server configured: a market tool says how to get one.
    m.send(&call_body(3, "market_balance", "{}"));
    let v = m.recv();
    assert_eq!(
        s(&v, &["result", "structuredContent", "error"]),
        "no_market",
        "{v:?}"
    );
    // No sessions yet.
    m.send(&call_body(4, "session_window", "{}"));
    let v = m.recv();
    assert_eq!(
        s(&v, &["result", "structuredContent", "error"]),
        "no_session",
        "{v:?}"
    );
    m.send(&call_body(5, "session_events", r#"{"limit":100000}"#));
    let v = m.recv();
    assert_eq!(
        s(&v, &["result", "structuredContent", "error"]),
        "invalid_arguments",
        "{v:?}"
    );
    // Still serving; closing stdin ends it cleanly.
    m.send(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#);
    assert!(m.recv().get("result").is_some());
    drop(m.child.0.stdin.take());
    let start = Instant::now();
    loop {
        if let Some(st) = m.child.0.try_wait().unwrap() {
            assert!(st.success(), "{st:?}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "palaver mcp did not end at EOF"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a Python MCP driver in tests/reference; its JSON answer.
fn driver(script: &str, args: &[&str]) -> Value {
    let py = common::reference_python();
    let out = Command::new(&py)
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/reference")
                .join(script),
        )
        .args(args)
        .output()
        .expect("run the MCP Python driver");
    assert!(
        out.status.success(),
        "{script} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// What the drivers' transaction reports, checked against REST's view of
/// the same transaction and REST's answers to the same refusals.
fn check_against_rest(v: &Value, buyer: &Path, url: &str) {
    let tx = s(v, &["transaction_id"]);
    assert_eq!(s(v, &["state"]), "SETTLED", "{v:?}");
    let (code, rest) = json(buyer, url, &["market", "show", tx]);
    assert_eq!(code, 0);
    let rest_hashes: Vec<Value> = rest
        .get("events")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|e| e.get("event_hash").cloned().unwrap_or(Value::Null))
        .collect();
    assert!(
        rest_hashes
            .iter()
            .all(|h| h.as_str().is_some_and(|h| h.len() == 64))
    );
    assert_eq!(
        v.get("event_hashes").and_then(Value::as_array).unwrap(),
        &rest_hashes
    );
    let (_, chain) = json(buyer, url, &["market", "verify-chain", tx]);
    assert_eq!(chain.get("ok"), Some(&Value::Bool(true)));
    assert_eq!(s(v, &["chain", "head"]), s(&chain, &["head"]));
    assert_eq!(
        v.get("chain").and_then(|c| c.get("ok")),
        Some(&Value::Bool(true))
    );
    assert_eq!(v.get("buyer_paid").and_then(Value::as_i64), Some(30));
    // The same refusals as REST, with the same codes.
    let r = palaver(buyer, url, &["--json", "market", "fund", "job_nosuchjob00"]);
    assert!(!r.status.success());
    let said = String::from_utf8_lossy(&r.stderr);
    assert!(said.contains("HTTP 404 not_found"), "{said}");
    assert_eq!(
        s(v, &["probes", "unknown_transaction", "error"]),
        "not_found"
    );
    assert_eq!(
        v.get("probes")
            .and_then(|p| p.get("unknown_transaction"))
            .and_then(|u| u.get("status"))
            .and_then(Value::as_i64),
        Some(404)
    );
    let partial = buyer.join("half.json");
    std::fs::write(&partial, r#"{"type":"JOB_OPEN","transaction_id":"half_mcp","job":{"task_type":"sha256_nonce.v1","input":{"prefix":"p","target":"00"},"output_format":{"type":"object"}}}"#).unwrap();
    let (code, r) = json(
        buyer,
        url,
        &["market", "open", "--file", partial.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    assert_eq!(s(v, &["probes", "hard_gate", "error"]), s(&r, &["error"]));
    assert_eq!(
        v.get("probes")
            .and_then(|p| p.get("hard_gate"))
            .and_then(|g| g.get("missing_fields")),
        r.get("missing_fields")
    );
    for probe in ["wrong_type", "unknown_field", "out_of_range"] {
        assert_eq!(
            s(v, &["probes", probe, "error"]),
            "invalid_arguments",
            "{probe}"
        );
    }
    assert!(
        s(v, &["probes", "unknown_tool"]).contains("no_such_tool"),
        "{v:?}"
    );
}

/// A server with a market, and a registered buyer and provider.
fn market_world() -> (
    tempfile::TempDir,
    common::Serve,
    String,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let tmp = tempfile::tempdir().unwrap();
    let (serve, url) =
        common::palaver_serve(&tmp.path().join("community.sqlite"), &["--rate-limit", "0"]);
    let (buyer, provider) = (tmp.path().join("buyer"), tmp.path().join("provider"));
    identity(&buyer, &url, "buyer");
    identity(&provider, &url, "provider");
    (tmp, serve, url, buyer, provider)
}

#[ignore = "needs the MCP Python SDK (tests/reference/requirements.txt): run scripts/test"]
#[test]
fn mcp_over_http_settles_a_transaction_with_the_hashes_rest_shows() {
    let (_tmp, _serve, url, buyer, provider) = market_world();
    let (bt, pt) = (token(&buyer, &url), token(&provider, &url));
    let v = driver("mcp_gtl.py", &["http", &url, &bt, &pt]);
    check_against_rest(&v, &buyer, &url);
}

#[ignore = "needs the MCP Python SDK (tests/reference/requirements.txt): run scripts/test"]
#[test]
fn mcp_over_stdio_settles_a_transaction_with_the_hashes_rest_shows() {
    let (_tmp, _serve, url, buyer, provider) = market_world();
    let v = driver(
        "mcp_gtl.py",
        &[
            "stdio",
            BIN,
            &url,
            buyer.to_str().unwrap(),
            provider.to_str().unwrap(),
        ],
    );
    check_against_rest(&v, &buyer, &url);
}

#[ignore = "needs the MCP Python SDK (tests/reference/requirements.txt): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_joins_a_house_game_and_decides_every_window() {
    use palaver::identity::KeyPair;
    use palaver::services::house;
    use palaver::services::remote::PeerOpts;
    use palaver::services::server::{ensure_registered, start_embedded};
    use palaver::web::Client;
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = start_embedded(&tmp.path().join("community.sqlite"))
        .await
        .unwrap();
    let house_c = Client::new(&url, KeyPair::generate()).unwrap();
    ensure_registered(&house_c, "house").await.unwrap();
    let house_pk = house_c.keys().public_key.clone();
    let _house = tokio::spawn(async move {
        house::run_house(house_c, &["rps-v1"], PeerOpts::direct(), 0, |_, _| {}).await
    });
    let agent = tmp.path().join("agent");
    let (a, u) = (agent.clone(), url.clone());
    tokio::task::spawn_blocking(move || identity(&a, &u, "mcp-agent"))
        .await
        .unwrap();
    let pid = palaver::library::bundled_spec("rps-v1")
        .unwrap()
        .protocol_id()
        .to_owned();
    let (a, u) = (agent.clone(), url.clone());
    let v = tokio::task::spawn_blocking(move || {
        driver(
            "mcp_house.py",
            &[BIN, &u, a.to_str().unwrap(), &pid, &house_pk],
        )
    })
    .await
    .unwrap();
    let decided = v.get("decided").and_then(Value::as_i64).unwrap();
    assert!(decided >= 1, "{v:?}");
    assert_eq!(
        v.get("window").and_then(|w| w.get("ended")),
        Some(&Value::Bool(true)),
        "{v:?}"
    );
    // The record says how it ended: completed, and every decision came
    // through the MCP tool.
    let state_dir = Path::new(s(&v, &["state_dir"]));
    let meta = palaver::json::parse_bytes(&std::fs::read(state_dir.join("session.json")).unwrap())
        .unwrap();
    assert_eq!(meta.get("completed"), Some(&Value::Bool(true)), "{meta:?}");
    assert_eq!(s(&meta, &["end_reason"]), "completed", "{meta:?}");
    assert!(!s(&meta, &["winner"]).is_empty(), "{meta:?}");
    let row = v.get("row").and_then(Value::as_array).unwrap();
    assert_eq!(row.len(), 1, "{v:?}");
    assert_eq!(s(&row[0], &["end_reason"]), "completed", "{row:?}");
    let types: Vec<&str> = v
        .get("event_types")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        types.contains(&"session_ended") || types.contains(&"session_completed"),
        "{types:?}"
    );
    let dir = palaver::session::StateDir::resolve(state_dir).unwrap();
    let lines =
        std::fs::read_to_string(dir.decision_dir().join("decisions.jsonl")).unwrap_or_default();
    let mcp = lines
        .lines()
        .filter(|l| l.contains("\"origin\":\"mcp\""))
        .count();
    assert_eq!(mcp as i64, decided, "{lines}");
    // The subscribed snapshot told the agent of its changes, and reads as
    // the session's snapshot.json.
    assert!(
        v.get("updates").and_then(Value::as_i64).unwrap() >= 1,
        "{v:?}"
    );
    assert_eq!(
        s(&v, &["snapshot_resource_phase"]),
        s(&v, &["snapshot", "snapshot", "phase"]),
        "{v:?}"
    );
    let res = v.get("resources").and_then(Value::as_array).unwrap();
    assert!(
        res.iter()
            .any(|r| r.as_str().is_some_and(|r| r.ends_with("/snapshot"))),
        "{res:?}"
    );
}

/// The session tools that run commands, over `palaver mcp` on a data dir
/// with a server: host (a daemon), browse, sessions, snapshot, window,
/// whisper, events, protocol_show and abort — each answering what its
/// command does.
#[test]
fn palaver_mcp_hosts_lists_steers_and_aborts_a_session() {
    let tmp = tempfile::tempdir().unwrap();
    let (_serve, url) =
        common::palaver_serve(&tmp.path().join("community.sqlite"), &["--rate-limit", "0"]);
    let dir = tmp.path().join("agent");
    identity(&dir, &url, "mcp-host");
    let mut m = McpChild::start(&dir, Some(&url));
    m.send(INIT);
    m.recv();
    m.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let mut id = 10;
    let mut call = |m: &mut McpChild, name: &str, args: &str| -> Value {
        id += 1;
        m.send(&call_body(id, name, args));
        let v = m.recv();
        assert_eq!(
            v.get("id").and_then(Value::as_i64),
            Some(id.into()),
            "{v:?}"
        );
        let r = v
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {v:?}"));
        assert_eq!(
            r.get("isError"),
            Some(&Value::Bool(false)),
            "{name}({args}): {r:?}"
        );
        r.get("structuredContent").cloned().unwrap()
    };
    let shown = call(&mut m, "protocol_show", r#"{"protocol":"rps-v1"}"#);
    let pid = s(&shown, &["protocol_id"]).to_owned();
    assert_eq!(pid.len(), 64, "{shown:?}");
    let hosted = call(
        &mut m,
        "host",
        r#"{"protocol":"rps-v1","control_mode":"human","message":"from mcp","direct":true}"#,
    );
    let state_dir = s(&hosted, &["state_dir"]).to_owned();
    let post = s(&hosted, &["post_id"]).to_owned();
    assert!(!state_dir.is_empty() && !post.is_empty(), "{hosted:?}");
    let found = call(&mut m, "browse", &format!(r#"{{"protocol_id":"{pid}"}}"#));
    let inv = found.get("invitations").and_then(Value::as_array).unwrap();
    assert!(inv.iter().any(|i| s(i, &["post_id"]) == post), "{found:?}");
    let rows = call(&mut m, "sessions", "{}");
    let rows = rows.get("sessions").and_then(Value::as_array).unwrap();
    assert!(rows.iter().any(|r| s(r, &["dir"]) == state_dir), "{rows:?}");
    let arg = format!(r#"{{"state_dir":"{state_dir}"}}"#);
    let snap = call(&mut m, "session_snapshot", &arg);
    assert_eq!(
        s(&snap, &["waiting_for_guest", "post_id"]),
        post,
        "{snap:?}"
    );
    let w = call(&mut m, "session_window", &arg);
    assert_eq!(w.get("open"), Some(&Value::Bool(false)), "{w:?}");
    assert_eq!(w.get("ended"), Some(&Value::Bool(false)), "{w:?}");
    call(
        &mut m,
        "session_whisper",
        &format!(r#"{{"state_dir":"{state_dir}","text":"always paper"}}"#),
    );
    let whispers = std::fs::read_to_string(Path::new(&state_dir).join("whispers.jsonl"))
        .or_else(|_| {
            let d = palaver::session::StateDir::resolve(Path::new(&state_dir)).unwrap();
            std::fs::read_to_string(d.child.join("whispers.jsonl"))
        })
        .unwrap_or_default();
    assert!(whispers.contains("always paper"), "{whispers}");
    let aborted = call(
        &mut m,
        "session_abort",
        &format!(r#"{{"state_dir":"{state_dir}","reason":"mcp test"}}"#),
    );
    assert_eq!(s(&aborted, &["status"]), "aborted", "{aborted:?}");
    let ev = call(
        &mut m,
        "session_events",
        &format!(r#"{{"state_dir":"{state_dir}","limit":500}}"#),
    );
    let types: Vec<String> = ev
        .get("events")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|e| s(e, &["type"]).to_owned())
        .collect();
    assert!(types.iter().any(|t| t == "session_ended"), "{types:?}");
    assert_eq!(ev.get("next"), ev.get("total"), "{ev:?}");
    let w = call(&mut m, "session_window", &arg);
    assert_eq!(w.get("ended"), Some(&Value::Bool(true)), "{w:?}");
    // A command's refusal comes back as a tool error with its text.
    m.send(&call_body(99, "join", r#"{"post_id":"nosuchpost"}"#));
    let v = m.recv();
    assert_eq!(
        s(&v, &["result", "structuredContent", "error"]),
        "command_failed",
        "{v:?}"
    );
    assert!(!s(&v, &["result", "structuredContent", "message"]).is_empty());
}
