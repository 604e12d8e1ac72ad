//! Hostile peers on the real wire (issue #16): a scripted peer over iroh 0.35
//! deviates at each step of a guess-number session, in each way the issue
//! names, against the real `palaver host` and `palaver join` binaries.
//!
//! Every case asserts that the victim ends in bounded time without a panic,
//! with its peak RSS (VmHWM) under 100 MB, and either
//! - `Ended`: exactly one `session_ended` in its state dir whose reason and
//!   error name what happened, or
//! - `Refused` (the deviation is inside the handshake, before any session
//!   exists): a join exits with an error naming it; a host turns the guest
//!   away with that reason and keeps its invitation open (checked on the
//!   server), then exits cleanly on Ctrl-C.
//!
//! The table is listed in docs/reliability.md.

use palaver::identity::KeyPair;
use palaver::json::{Map, Value};
use palaver::obj;
use palaver::web::Client;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common;
#[path = "common/hostile.rs"]
mod hostile;

use hostile::scripts::*;
use hostile::{Act, Ctx, Script, Step};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");
const PROTOCOL: &str = "guess-number-v1";
/// The victims' `--peer-timeout`: silence cases end after this.
const PEER_TIMEOUT: &str = "2";
/// Peak resident memory a victim may reach.
const RSS_LIMIT_KB: u64 = 100 * 1024;
/// How long a victim may take to end after the hostile peer's last act.
const BOUND: Duration = Duration::from_secs(40);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Victim {
    /// `palaver host`; the hostile peer is its guest.
    Host,
    /// `palaver join`; the hostile peer is the invitation's host.
    Guest,
}

/// What a case must end with.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// One `session_ended` whose `reason` is this and whose reason+error
    /// contains the text.
    Ended(&'static str, &'static str),
    /// No session; the victim says this (a host then keeps its invitation).
    Refused(&'static str),
}

#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    /// The victim's `--peer-timeout` (longer where 100,000 pings must be
    /// worked through before the frame that matters).
    peer_timeout: &'static str,
    victim: Victim,
    step: Step,
    send: Script,
    expect: Expect,
}

fn invalid_utf8(_: &Ctx) -> Vec<Act> {
    vec![Act::Bytes(
        b"{\"action\":\"join\",\"x\":\"\xff\xfe\xc0\"}\n".to_vec(),
    )]
}
fn near_limit(c: &Ctx) -> Vec<Act> {
    vec![Act::Bytes(hostile::padded(&c.valid, MAX_LINE - 64))]
}
fn silence(_: &Ctx) -> Vec<Act> {
    vec![]
}
fn deep_object(c: &Ctx) -> Vec<Act> {
    let nest = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    vec![line(hostile::with_raw(&c.valid, "x", &nest))]
}
fn leave_before_stream(_: &Ctx) -> Vec<Act> {
    vec![Act::LeaveBeforeStream]
}
fn ping_burst_then_silence(_: &Ctx) -> Vec<Act> {
    vec![Act::Deaf, Act::Bytes(hostile::pings(100_000))]
}
/// Never reads: floods pings (whose pongs fill the stream) and then sends
/// the valid frame, so the victim must write to a peer that takes nothing.
fn never_reads(c: &Ctx) -> Vec<Act> {
    vec![
        Act::Deaf,
        Act::Bytes(hostile::pings(100_000)),
        frame(c.valid.clone()),
    ]
}
fn not_an_object(_: &Ctx) -> Vec<Act> {
    vec![line("[\"join\"]")]
}
fn bom(c: &Ctx) -> Vec<Act> {
    let s = palaver::json::canonical::to_string_ordered(&Value::Object(c.valid.clone()));
    vec![line(format!("\u{feff}{s}"))]
}
fn peer_error(_: &Ctx) -> Vec<Act> {
    vec![frame(
        obj! { "action" => "error", "reason" => "invalid_message" },
    )]
}

// Handshake, host victim (the hostile peer is the guest).
fn init_nonce_1e400(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_raw(&c.valid, "session_nonce", "1e400"))]
}
fn init_nonce_bigint(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_raw(
        &c.valid,
        "session_nonce",
        &"7".repeat(400),
    ))]
}
fn init_duplicate_key(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_duplicate(
        &c.valid,
        "guest_public_key",
        "\"not-a-key\"",
    ))]
}
fn init_as_proof(c: &Ctx) -> Vec<Act> {
    vec![frame(hostile::proof(
        c.me, c.post_id, c.peer_pk, c.pid, c.nonce,
    ))]
}
fn business_before_init(_: &Ctx) -> Vec<Act> {
    vec![frame(obj! { "action" => "join" })]
}
fn ready_before_init(c: &Ctx) -> Vec<Act> {
    vec![frame(hostile::ready(
        c.post_id,
        c.peer_pk,
        &c.me.public_key,
        c.pid,
        c.nonce,
    ))]
}
fn ready_forged(_: &Ctx) -> Vec<Act> {
    vec![frame(
        obj! { "_session_ready" => true, "session_id" => "ab".repeat(32) },
    )]
}
fn ready_bigint(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_raw(
        &c.valid,
        "session_id",
        &"9".repeat(400),
    ))]
}
fn ready_1e400(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_raw(&c.valid, "session_id", "1e400"))]
}
fn ready_duplicate_key(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_duplicate(
        &c.valid,
        "session_id",
        &format!("\"{}\"", "cd".repeat(32)),
    ))]
}
fn init_twice(c: &Ctx) -> Vec<Act> {
    vec![frame(hostile::init(c.me, c.nonce))]
}

// Handshake, guest victim (the hostile peer is the host).
fn proof_wrong_host(c: &Ctx) -> Vec<Act> {
    let impostor = KeyPair::generate();
    vec![frame(hostile::proof(
        &impostor, c.post_id, c.peer_pk, c.pid, c.nonce,
    ))]
}
fn proof_duplicate_key(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_duplicate(
        &c.valid,
        "protocol_id",
        &format!("\"{}\"", "0f".repeat(32)),
    ))]
}
fn proof_1e400(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_raw(&c.valid, "host_signature", "1e400"))]
}
fn proof_bigint(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_raw(
        &c.valid,
        "host_signature",
        &"3".repeat(400),
    ))]
}
fn proof_as_init(c: &Ctx) -> Vec<Act> {
    vec![frame(hostile::init(c.me, c.nonce))]
}

// Play: the host victim expects `join` (Play0) and `guess` (Play1); the
// guest victim `ready` (Play0) and `hint` (Play1).
fn negative_bigint(c: &Ctx) -> Vec<Act> {
    let key = first_int_field(&c.valid);
    vec![line(hostile::with_raw(
        &c.valid,
        key,
        &format!("-{}", "4".repeat(400)),
    ))]
}
fn action_duplicate_key(c: &Ctx) -> Vec<Act> {
    vec![line(hostile::with_duplicate(
        &c.valid,
        "action",
        "\"game_over\"",
    ))]
}
fn wrong_role(c: &Ctx) -> Vec<Act> {
    // A frame of the victim's own direction.
    vec![frame(match c.valid.get("action").and_then(Value::as_str) {
        Some("join") | Some("guess") => {
            obj! { "action" => "ready", "range_min" => 1, "range_max" => 100, "max_attempts" => 7 }
        }
        _ => obj! { "action" => "join" },
    })]
}
fn empty_object(_: &Ctx) -> Vec<Act> {
    vec![line("{}")]
}
/// A ready whose range sits at the top of i64, then "higher": the guest's
/// range arithmetic must not overflow.
fn ready_at_i64_max(_: &Ctx) -> Vec<Act> {
    let max = i64::MAX;
    vec![
        frame(
            obj! { "action" => "ready", "range_min" => max, "range_max" => max, "max_attempts" => 7 },
        ),
        Act::Read,
        frame(
            obj! { "action" => "hint", "attempt" => 1, "result" => "higher", "attempts_used" => 1 },
        ),
    ]
}
/// A range of one number, then "higher" than the only possible guess.
fn contradicting_hint(_: &Ctx) -> Vec<Act> {
    vec![
        frame(
            obj! { "action" => "ready", "range_min" => 5, "range_max" => 5, "max_attempts" => 7 },
        ),
        Act::Read,
        frame(
            obj! { "action" => "hint", "attempt" => 1, "result" => "higher", "attempts_used" => 1 },
        ),
    ]
}

use Expect::{Ended, Refused};
use Victim::{Guest, Host};
use hostile::Step::{Hs1, Hs2, Play0, Play1};

/// The cases (name, victim, step, what is sent, what must come of it).
fn cases() -> Vec<Case> {
    let c = |name, victim, step, send, expect| Case {
        name,
        peer_timeout: PEER_TIMEOUT,
        victim,
        step,
        send,
        expect,
    };
    let slow = |mut c: Case| {
        c.peer_timeout = "10";
        c
    };
    vec![
        // Host victim, in place of `_session_init`.
        c(
            "host/init/garbage-before-handshake",
            Host,
            Hs1,
            garbage as Script,
            Refused("malformed frame"),
        ),
        c(
            "host/init/invalid-utf8",
            Host,
            Hs1,
            invalid_utf8,
            Refused("not valid UTF-8"),
        ),
        c(
            "host/init/line-over-8MiB",
            Host,
            Hs1,
            oversized,
            Refused("exceeds the 8 MiB limit"),
        ),
        c(
            "host/init/no-newline-then-silence",
            Host,
            Hs1,
            no_newline_then_silence,
            Refused("sent no _session_init within"),
        ),
        c(
            "host/init/nested-100000-deep",
            Host,
            Hs1,
            deep_nesting,
            Refused("nesting deeper than 512"),
        ),
        c(
            "host/init/nonce-1e400",
            Host,
            Hs1,
            init_nonce_1e400,
            Refused("number too large"),
        ),
        c(
            "host/init/nonce-400-digit-integer",
            Host,
            Hs1,
            init_nonce_bigint,
            Refused("`session_nonce` missing or not a string"),
        ),
        c(
            "host/init/duplicate-key",
            Host,
            Hs1,
            init_duplicate_key,
            Refused("guest_public_key is not 64 hex digits"),
        ),
        c(
            "host/init/proof-from-the-guest",
            Host,
            Hs1,
            init_as_proof,
            Refused("the first frame is not a session init"),
        ),
        c(
            "host/init/business-frame-first",
            Host,
            Hs1,
            business_before_init,
            Refused("the first frame is not a session init"),
        ),
        c(
            "host/init/ready-before-init",
            Host,
            Hs1,
            ready_before_init,
            Refused("the first frame is not a session init"),
        ),
        c(
            "host/init/disconnect-mid-line",
            Host,
            Hs1,
            disconnect_mid_line,
            Refused("peer disconnected"),
        ),
        c(
            "host/init/leave-before-stream",
            Host,
            Hs1,
            leave_before_stream,
            Refused("opened no stream"),
        ),
        slow(c(
            "host/init/100000-pings-never-reading",
            Host,
            Hs1,
            ping_burst_then_silence,
            Refused("sent no _session_init within"),
        )),
        // Host victim, in place of `_session_ready`.
        c(
            "host/ready/forged-session-id",
            Host,
            Hs2,
            ready_forged,
            Refused("forged, or replayed"),
        ),
        c(
            "host/ready/replayed-from-earlier-session",
            Host,
            Hs2,
            ready_replayed,
            Refused("forged, or replayed"),
        ),
        c(
            "host/ready/session-id-400-digit-integer",
            Host,
            Hs2,
            ready_bigint,
            Refused("`session_id` missing or not a string"),
        ),
        c(
            "host/ready/session-id-1e400",
            Host,
            Hs2,
            ready_1e400,
            Refused("number too large"),
        ),
        c(
            "host/ready/duplicate-key",
            Host,
            Hs2,
            ready_duplicate_key,
            Refused("forged, or replayed"),
        ),
        c(
            "host/ready/init-again",
            Host,
            Hs2,
            init_twice,
            Refused("expected {\"_session_ready\":true"),
        ),
        c(
            "host/ready/disconnect",
            Host,
            Hs2,
            disconnect,
            Refused("peer disconnected"),
        ),
        c(
            "host/ready/silence",
            Host,
            Hs2,
            silence,
            Refused("sent no _session_ready within"),
        ),
        // Host victim, in place of `join`.
        c(
            "host/join/garbage",
            Host,
            Play0,
            garbage,
            Ended("malformed_frame", ""),
        ),
        c(
            "host/join/invalid-utf8",
            Host,
            Play0,
            invalid_utf8,
            Ended("malformed_frame", "UTF-8"),
        ),
        c(
            "host/join/line-over-8MiB",
            Host,
            Play0,
            oversized,
            Ended("oversized_frame", ""),
        ),
        c(
            "host/join/line-just-under-8MiB",
            Host,
            Play0,
            near_limit,
            Ended("invalid_frame", "pad"),
        ),
        c(
            "host/join/no-newline-then-silence",
            Host,
            Play0,
            no_newline_then_silence,
            Ended("peer_timeout", ""),
        ),
        c(
            "host/join/nested-100000-deep",
            Host,
            Play0,
            deep_nesting,
            Ended("malformed_frame", "nesting deeper than 512"),
        ),
        c(
            "host/join/object-nested-100000-deep",
            Host,
            Play0,
            deep_object,
            Ended("malformed_frame", "nesting deeper than 512"),
        ),
        c(
            "host/join/max-attempts-1e400",
            Host,
            Play0,
            number_1e400,
            Ended("malformed_frame", "too large"),
        ),
        c(
            "host/join/max-attempts-400-digits",
            Host,
            Play0,
            number_bigint,
            Ended("invalid_frame", "max_attempts"),
        ),
        c(
            "host/join/duplicate-action-key",
            Host,
            Play0,
            action_duplicate_key,
            Ended("invalid_frame", ""),
        ),
        c(
            "host/join/ready-from-the-guest",
            Host,
            Play0,
            wrong_role,
            Ended("invalid_frame", ""),
        ),
        c(
            "host/join/guess-before-join",
            Host,
            Play0,
            out_of_order,
            Ended("unexpected_frame", "join"),
        ),
        c(
            "host/join/not-an-object",
            Host,
            Play0,
            not_an_object,
            Ended("malformed_frame", "JSON object"),
        ),
        c(
            "host/join/byte-order-mark",
            Host,
            Play0,
            bom,
            Ended("malformed_frame", ""),
        ),
        slow(c(
            "host/join/100000-pings-then-disconnect",
            Host,
            Play0,
            pings_then_disconnect,
            Ended("peer_disconnected", ""),
        )),
        slow(c(
            "host/join/never-reads",
            Host,
            Play0,
            never_reads,
            Ended("peer_not_reading", "stopped reading"),
        )),
        c(
            "host/join/disconnect",
            Host,
            Play0,
            disconnect,
            Ended("peer_disconnected", ""),
        ),
        // Host victim, in place of the first `guess`.
        c(
            "host/guess/number-1e400",
            Host,
            Play1,
            number_1e400,
            Ended("malformed_frame", "too large"),
        ),
        c(
            "host/guess/number-400-digits",
            Host,
            Play1,
            number_bigint,
            Ended(
                "abort",
                "abort: sent error invalid_guess in answer to the peer's 'guess'",
            ),
        ),
        c(
            "host/guess/number-minus-400-digits",
            Host,
            Play1,
            negative_bigint,
            Ended(
                "abort",
                "abort: sent error invalid_guess in answer to the peer's 'guess'",
            ),
        ),
        c(
            "host/guess/join-again",
            Host,
            Play1,
            out_of_order,
            Ended(
                "abort",
                "abort: sent error unexpected_action in answer to the peer's 'join'",
            ),
        ),
        c(
            "host/guess/empty-object",
            Host,
            Play1,
            empty_object,
            Ended("invalid_frame", ""),
        ),
        c(
            "host/guess/error-frame",
            Host,
            Play1,
            peer_error,
            Ended("peer_error", "invalid_message"),
        ),
        c(
            "host/guess/disconnect-mid-line",
            Host,
            Play1,
            disconnect_mid_line,
            Ended("peer_disconnected", ""),
        ),
        c(
            "host/guess/silence",
            Host,
            Play1,
            silence,
            Ended("peer_timeout", ""),
        ),
        // Guest victim, in place of `_session_proof`.
        c(
            "guest/proof/garbage-before-handshake",
            Guest,
            Hs1,
            garbage,
            Refused("malformed frame"),
        ),
        c(
            "guest/proof/bad-signature",
            Guest,
            Hs1,
            proof_bad_signature,
            Refused("host_signature does not sign"),
        ),
        c(
            "guest/proof/replayed-from-earlier-session",
            Guest,
            Hs1,
            proof_replayed,
            Refused("forged, or replayed"),
        ),
        c(
            "guest/proof/wrong-protocol-id",
            Guest,
            Hs1,
            proof_wrong_protocol,
            Refused("is not the invitation's"),
        ),
        c(
            "guest/proof/impostor-host-key",
            Guest,
            Hs1,
            proof_wrong_host,
            Refused("is not the invitation's author"),
        ),
        c(
            "guest/proof/duplicate-key",
            Guest,
            Hs1,
            proof_duplicate_key,
            Refused("is not the invitation's"),
        ),
        c(
            "guest/proof/signature-1e400",
            Guest,
            Hs1,
            proof_1e400,
            Refused("number too large"),
        ),
        c(
            "guest/proof/signature-400-digit-integer",
            Guest,
            Hs1,
            proof_bigint,
            Refused("`host_signature` missing or not a string"),
        ),
        c(
            "guest/proof/nested-100000-deep",
            Guest,
            Hs1,
            deep_nesting,
            Refused("nesting deeper than 512"),
        ),
        c(
            "guest/proof/line-over-8MiB",
            Guest,
            Hs1,
            oversized,
            Refused("exceeds the 8 MiB limit"),
        ),
        c(
            "guest/proof/invalid-utf8",
            Guest,
            Hs1,
            invalid_utf8,
            Refused("not valid UTF-8"),
        ),
        c(
            "guest/proof/no-newline-then-silence",
            Guest,
            Hs1,
            no_newline_then_silence,
            Refused("sent no _session_proof within"),
        ),
        c(
            "guest/proof/init-from-the-host",
            Guest,
            Hs1,
            proof_as_init,
            Refused("expected {\"_session_proof\":true"),
        ),
        c(
            "guest/proof/disconnect",
            Guest,
            Hs1,
            disconnect,
            Refused("peer disconnected"),
        ),
        slow(c(
            "guest/proof/100000-pings-never-reading",
            Guest,
            Hs1,
            ping_burst_then_silence,
            Refused("sent no _session_proof within"),
        )),
        // Guest victim, in place of `ready`.
        c(
            "guest/ready/garbage",
            Guest,
            Play0,
            garbage,
            Ended("malformed_frame", ""),
        ),
        c(
            "guest/ready/line-over-8MiB",
            Guest,
            Play0,
            oversized,
            Ended("oversized_frame", ""),
        ),
        c(
            "guest/ready/nested-100000-deep",
            Guest,
            Play0,
            deep_nesting,
            Ended("malformed_frame", "nesting deeper than 512"),
        ),
        c(
            "guest/ready/max-attempts-1e400",
            Guest,
            Play0,
            number_1e400,
            Ended("malformed_frame", "too large"),
        ),
        c(
            "guest/ready/max-attempts-400-digits",
            Guest,
            Play0,
            number_bigint,
            Ended("protocol_violation", "max_attempts"),
        ),
        c(
            "guest/ready/range-at-i64-max",
            Guest,
            Play0,
            ready_at_i64_max,
            Ended("protocol_violation", "range_min"),
        ),
        c(
            "guest/ready/duplicate-action-key",
            Guest,
            Play0,
            action_duplicate_key,
            Ended("invalid_frame", ""),
        ),
        c(
            "guest/ready/join-from-the-host",
            Guest,
            Play0,
            wrong_role,
            Ended("invalid_frame", ""),
        ),
        c(
            "guest/ready/game-over-before-ready",
            Guest,
            Play0,
            out_of_order,
            Ended("unexpected_frame", "ready"),
        ),
        slow(c(
            "guest/ready/100000-pings-then-disconnect",
            Guest,
            Play0,
            pings_then_disconnect,
            Ended("peer_disconnected", ""),
        )),
        slow(c(
            "guest/ready/never-reads",
            Guest,
            Play0,
            never_reads,
            Ended("peer_not_reading", "stopped reading"),
        )),
        c(
            "guest/ready/silence",
            Guest,
            Play0,
            silence,
            Ended("peer_timeout", ""),
        ),
        c(
            "guest/ready/disconnect",
            Guest,
            Play0,
            disconnect,
            Ended("peer_disconnected", ""),
        ),
        // Guest victim, in place of the first `hint`.
        c(
            "guest/hint/attempt-1e400",
            Guest,
            Play1,
            number_1e400,
            Ended("malformed_frame", "too large"),
        ),
        c(
            "guest/hint/contradicting",
            Guest,
            Play0,
            contradicting_hint,
            Ended("protocol_violation", "contradict"),
        ),
        c(
            "guest/hint/disconnect-mid-line",
            Guest,
            Play1,
            disconnect_mid_line,
            Ended("peer_disconnected", ""),
        ),
        c(
            "guest/hint/invalid-utf8",
            Guest,
            Play1,
            invalid_utf8,
            Ended("malformed_frame", "UTF-8"),
        ),
    ]
}

/// The community server and the identities the cases share.
struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    _serve: common::Serve,
    url: String,
    pid: String,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_owned();
    let (serve, url) = common::palaver_serve(&root.join("db.sqlite"), &["--rate-limit", "0"]);
    let pid = palaver::library::bundled_spec(PROTOCOL)
        .unwrap()
        .protocol_id()
        .to_owned();
    World {
        _tmp: tmp,
        root,
        _serve: serve,
        url,
        pid,
    }
}

/// Registers `keys` on the server (each case has its own identities: the
/// server allows a key three open invitations).
fn register(world: &World, keys: &KeyPair) {
    rt().block_on(async {
        Client::new(&world.url, keys.clone())
            .unwrap()
            .register("peer", "")
            .await
            .unwrap();
    });
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A running victim: its output so far and its peak RSS.
struct Proc {
    child: Child,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
    hwm_kb: Arc<AtomicU64>,
}

fn spawn(world: &World, data: &Path, args: &[&str], peer_timeout: &str) -> Proc {
    std::fs::create_dir_all(data).unwrap();
    let (keys, _) = KeyPair::init(data, false).unwrap();
    register(world, &keys);
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .arg("--server")
        .arg(&world.url)
        .args(args)
        .args([
            "--direct",
            "--control-mode",
            "autonomous",
            "--peer-timeout",
            peer_timeout,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let collect = |mut r: Box<dyn Read + Send>| {
        let buf = Arc::new(Mutex::new(String::new()));
        let b = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                b.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        buf
    };
    let out = collect(Box::new(child.stdout.take().unwrap()));
    let err = collect(Box::new(child.stderr.take().unwrap()));
    let hwm_kb = Arc::new(AtomicU64::new(0));
    let (h, pid) = (hwm_kb.clone(), child.id());
    std::thread::spawn(move || {
        let path = format!("/proc/{pid}/status");
        while let Ok(s) = std::fs::read_to_string(&path) {
            let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            else {
                break; // a zombie: no memory any more
            };
            h.fetch_max(kb, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(15));
        }
    });
    Proc {
        child,
        out,
        err,
        hwm_kb,
    }
}

impl Proc {
    fn wait_for(&self, which: &Arc<Mutex<String>>, text: &str, within: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < within {
            if which.lock().unwrap().contains(text) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Waits for the exit; None when it did not come in time (then killed).
    fn exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < within {
            if let Ok(Some(s)) = self.child.try_wait() {
                // Let the readers take the last output.
                std::thread::sleep(Duration::from_millis(50));
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }

    /// The invitation a host victim printed.
    fn post_id(&self) -> Option<String> {
        let out = self.out.lock().unwrap();
        out.lines()
            .find_map(|l| l.strip_prefix("post_id: "))
            .map(|p| p.trim().to_owned())
    }

    fn text(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.out.lock().unwrap(),
            self.err.lock().unwrap()
        )
    }
}

/// The data of every `session_ended` event under a data dir's sessions.
fn session_ends(data: &Path) -> Vec<Map> {
    hostile::session_ended_events(data)
        .into_iter()
        .map(|(_, ev)| {
            ev.get("data")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

/// Runs one case; Err says what went wrong.
fn run_case(world: &Arc<World>, case: &Case) -> Result<String, String> {
    let data = world.root.join(case.name.replace('/', "_"));
    let rt = rt();
    let hostile;
    let mut victim;
    match case.victim {
        Host => {
            victim = spawn(world, &data, &["host", PROTOCOL], case.peer_timeout);
            if !victim.wait_for(&victim.out, "post_id: ", Duration::from_secs(30)) {
                let _ = victim.exit(Duration::ZERO);
                return Err(format!(
                    "the host never opened its invitation\n{}",
                    victim.text()
                ));
            }
            let post = victim.post_id().unwrap();
            let (w, case) = (world.clone(), *case);
            hostile = rt
                .spawn(async move { hostile::as_guest(&w.url, &post, case.step, case.send).await });
        }
        Guest => {
            let me = KeyPair::generate();
            register(world, &me);
            let (ep, post) = rt.block_on(async {
                let c = Client::new(&world.url, me.clone()).unwrap();
                let ep = hostile::endpoint().await;
                let post = hostile::open_invitation(&c, &ep, &world.pid).await;
                (ep, post)
            });
            victim = spawn(world, &data, &["join", &post], case.peer_timeout);
            let (w, case) = (world.clone(), *case);
            hostile = rt.spawn(async move {
                hostile::as_host(me, ep, &post, &w.pid, case.step, case.send).await
            });
        }
    }
    let result = judge(world, case, &mut victim, &data, &hostile);
    hostile.abort();
    rt.shutdown_timeout(Duration::from_secs(1));
    let peak = victim.hwm_kb.load(Ordering::Relaxed);
    let verdict = result?;
    if peak == 0 || peak > RSS_LIMIT_KB {
        return Err(format!("peak RSS {peak} kB (limit {RSS_LIMIT_KB} kB)"));
    }
    let text = victim.text();
    if text.contains("panicked") {
        return Err(format!("the victim panicked\n{text}"));
    }
    Ok(format!("{verdict}; peak RSS {} MB", peak / 1024))
}

fn judge(
    world: &World,
    case: &Case,
    victim: &mut Proc,
    data: &Path,
    hostile: &tokio::task::JoinHandle<Result<(), String>>,
) -> Result<String, String> {
    match case.expect {
        Refused(what) if case.victim == Host => {
            if !victim.wait_for(&victim.err, what, BOUND) {
                let _ = victim.exit(Duration::ZERO);
                return Err(format!("the host never said {what:?}\n{}", victim.text()));
            }
            if let Ok(Some(s)) = victim.child.try_wait() {
                return Err(format!(
                    "the host exited ({s}) after a hostile guest\n{}",
                    victim.text()
                ));
            }
            // The invitation is still open for the next guest.
            let post = victim.post_id().unwrap_or_default();
            let status = rt().block_on(async {
                let c = Client::new(&world.url, KeyPair::generate()).unwrap();
                c.call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
                    .await
                    .ok()
                    .and_then(|v| v.get("status").and_then(Value::as_str).map(str::to_owned))
            });
            if status.as_deref() != Some("open") {
                let _ = victim.exit(Duration::ZERO);
                return Err(format!(
                    "the invitation is {status:?} after a hostile guest"
                ));
            }
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(victim.child.id() as i32),
                nix::sys::signal::Signal::SIGINT,
            )
            .unwrap();
            let Some(s) = victim.exit(Duration::from_secs(15)) else {
                return Err(format!(
                    "the host did not stop on Ctrl-C\n{}",
                    victim.text()
                ));
            };
            if s.code() != Some(2) || !victim.err.lock().unwrap().contains("interrupted") {
                return Err(format!(
                    "the host ended with {s} on Ctrl-C\n{}",
                    victim.text()
                ));
            }
            if !session_ends(data).is_empty() {
                return Err("a refused guest left a session behind".into());
            }
            Ok(format!("turned away: {what}"))
        }
        Refused(what) => {
            let Some(s) = victim.exit(BOUND) else {
                return Err(format!(
                    "the guest did not end within {BOUND:?}\n{}",
                    victim.text()
                ));
            };
            if s.success() || s.code() == Some(101) || s.code().is_none() {
                return Err(format!("the guest ended with {s}\n{}", victim.text()));
            }
            if !victim.err.lock().unwrap().contains(what) {
                return Err(format!(
                    "the guest's error does not say {what:?}\n{}",
                    victim.text()
                ));
            }
            if !session_ends(data).is_empty() {
                return Err("a refused handshake left a session behind".into());
            }
            Ok(format!("refused ({s}): {what}"))
        }
        Ended(reason, detail) => {
            let Some(s) = victim.exit(BOUND) else {
                let h = if hostile.is_finished() {
                    "the hostile peer had stopped"
                } else {
                    ""
                };
                return Err(format!(
                    "the victim did not end within {BOUND:?} {h}\n{}",
                    victim.text()
                ));
            };
            if s.code() == Some(101) || s.code().is_none() {
                return Err(format!("the victim ended with {s}\n{}", victim.text()));
            }
            let ends = session_ends(data);
            if ends.len() != 1 {
                return Err(format!(
                    "{} session_ended events: {ends:?}\n{}",
                    ends.len(),
                    victim.text()
                ));
            }
            let e = &ends[0];
            let got = e.get("reason").and_then(Value::as_str).unwrap_or_default();
            let error = e.get("error").map(Value::py_str).unwrap_or_default();
            if got != reason || !format!("{got}: {error}").contains(detail) {
                return Err(format!(
                    "session_ended says {got}: {error}; expected {reason} with {detail:?}\n{}",
                    victim.text()
                ));
            }
            Ok(format!(
                "{got}: {}",
                error.chars().take(100).collect::<String>()
            ))
        }
    }
}

#[test]
fn hostile_peers_on_the_real_wire() {
    let world = Arc::new(world());
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names repeat");
    let only = std::env::var("HOSTILE_CASE").unwrap_or_default();
    let next = AtomicU64::new(0);
    let results = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(case) = cases.get(i) else {
                        return;
                    };
                    if !case.name.contains(only.as_str()) {
                        continue;
                    }
                    let t = Instant::now();
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        run_case(&world, case)
                    }))
                    .unwrap_or_else(|_| Err("the test harness panicked".into()));
                    results.lock().unwrap().push((case.name, r, t.elapsed()));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let mut failed = Vec::new();
    for (name, r, took) in &results {
        match r {
            Ok(v) => eprintln!("ok   {name} ({:.1}s): {v}", took.as_secs_f64()),
            Err(e) => {
                eprintln!("FAIL {name} ({:.1}s): {e}", took.as_secs_f64());
                failed.push(*name);
            }
        }
    }
    eprintln!(
        "{} cases in {:.1}s",
        results.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(!results.is_empty(), "HOSTILE_CASE={only:?} matches no case");
    assert!(failed.is_empty(), "failed: {failed:?}");
}
