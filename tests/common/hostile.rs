//! A scripted hostile peer over real iroh 0.35 (ALPN `/agent-chat/1`), built
//! from palaver's library: it registers real invitations on a `palaver
//! serve` (playing host) or dials a real host's invitation (playing guest),
//! and then writes whatever bytes a test wants on the session's bi-stream.
//!
//! Include it as `#[path = "common/hostile.rs"] mod hostile;` next to
//! `mod common;` (it uses `crate::common`).
#![allow(dead_code)]

use iroh::Endpoint;
use iroh::endpoint::{Connection, RecvStream, SendStream};
use palaver::identity::KeyPair;
use palaver::json::{self, Map, Value};
use palaver::net::{self, ALPN, Reach};
use palaver::obj;
use palaver::web::{Client, auth};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// One end of a session stream, byte for byte.
pub struct Raw {
    pub ep: Endpoint,
    pub conn: Connection,
    pub send: SendStream,
    pub recv: BufReader<RecvStream>,
}

impl Raw {
    /// Writes bytes as they are; false once the victim is gone.
    pub async fn write(&mut self, bytes: &[u8]) -> bool {
        self.send.write_all(bytes).await.is_ok()
    }

    /// Writes one line (a newline is added).
    pub async fn line(&mut self, line: &str) -> bool {
        let mut v = Vec::with_capacity(line.len() + 1);
        v.extend_from_slice(line.as_bytes());
        v.push(b'\n');
        self.write(&v).await
    }

    /// Writes one frame as a line.
    pub async fn frame(&mut self, m: &Map) -> bool {
        self.line(&palaver::json::canonical::to_string_ordered(
            &Value::Object(m.clone()),
        ))
        .await
    }

    /// The next frame that is not a `_sys` heartbeat, within `within`
    /// (None: the stream ended, timed out or the line is not a JSON object).
    pub async fn read(&mut self, within: Duration) -> Option<Map> {
        let fut = async {
            loop {
                let mut buf = Vec::new();
                let n = (&mut self.recv)
                    .take(16 << 20)
                    .read_until(b'\n', &mut buf)
                    .await
                    .ok()?;
                if n == 0 {
                    return None;
                }
                let text = String::from_utf8(buf).ok()?;
                let text = text.trim();
                if text.is_empty() {
                    continue;
                }
                match json::parse_str(text).ok()? {
                    Value::Object(m) if m.contains_key("_sys") => continue,
                    Value::Object(m) => return Some(m),
                    _ => return None,
                }
            }
        };
        tokio::time::timeout(within, fut).await.ok().flatten()
    }

    /// Reads and drops everything until the victim closes its side.
    pub async fn drain(&mut self) {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = self.recv.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    }

    /// Leaves: finishes the stream, lets what was written arrive (a QUIC
    /// close would drop it), and closes the connection.
    pub async fn close(mut self) {
        let _ = self.send.finish();
        let _ = tokio::time::timeout(Duration::from_secs(3), self.send.stopped()).await;
        self.conn.close(0u32.into(), b"bye");
        self.ep.close().await;
    }
}

/// A direct-only endpoint on loopback.
pub async fn endpoint() -> Endpoint {
    net::bind(
        Reach::Direct,
        Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
    )
    .await
    .expect("bind an iroh endpoint")
}

/// Posts an invitation for `pid` on the server whose ticket is `ep`'s,
/// signed like a real host's; returns its post id.
pub async fn open_invitation(client: &Client, ep: &Endpoint, pid: &str) -> String {
    let ticket = net::ticket(ep).await;
    let body = crate::common::invitation_body(client.keys(), &ticket, pid, "hostile");
    crate::common::post_invitation(client, body).await
}

/// Waits for the victim guest's connection and its stream.
pub async fn accept(ep: Endpoint, within: Duration) -> Option<Raw> {
    let fut = async {
        let conn = ep.accept().await?.accept().ok()?.await.ok()?;
        let (send, recv) = conn.accept_bi().await.ok()?;
        Some((conn, send, recv))
    };
    let (conn, send, recv) = tokio::time::timeout(within, fut).await.ok().flatten()?;
    Some(Raw {
        ep,
        conn,
        send,
        recv: BufReader::new(recv),
    })
}

/// What a guest learns from an open invitation.
pub struct Invitation {
    pub ticket: String,
    pub host_public_key: String,
    pub protocol_id: String,
}

pub async fn invitation(client: &Client, post_id: &str) -> Invitation {
    let inv = client
        .call(
            "GET",
            &format!("/api/v1/invitations/{post_id}"),
            None,
            &[200],
        )
        .await
        .expect("fetch the invitation");
    let s = |k: &str| {
        inv.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Invitation {
        ticket: s("iroh_ticket"),
        host_public_key: s("public_key"),
        protocol_id: s("protocol_id"),
    }
}

/// Dials the host of `ticket` and opens the session stream (the host sees
/// it once something is written).
pub async fn dial(ticket: &str) -> Raw {
    let ep = endpoint().await;
    let addr = net::parse_ticket(ticket).expect("a ticket");
    let conn = tokio::time::timeout(Duration::from_secs(20), ep.connect(addr, ALPN))
        .await
        .expect("dial in time")
        .expect("dial");
    let (send, recv) = conn.open_bi().await.expect("open the stream");
    Raw {
        ep,
        conn,
        send,
        recv: BufReader::new(recv),
    }
}

/// Dials and leaves before opening any stream.
pub async fn dial_and_leave(ticket: &str) {
    let ep = endpoint().await;
    let addr = net::parse_ticket(ticket).expect("a ticket");
    if let Ok(Ok(conn)) =
        tokio::time::timeout(Duration::from_secs(20), ep.connect(addr, ALPN)).await
    {
        conn.close(0u32.into(), b"bye");
    }
    ep.close().await;
}

/// A fresh session nonce.
pub fn nonce() -> String {
    hex::encode(rand::random::<[u8; 8]>())
}

/// The guest's `_session_init`.
pub fn init(guest: &KeyPair, nonce: &str) -> Map {
    obj! {
        "_session_init" => true, "guest_public_key" => guest.public_key.as_str(), "session_nonce" => nonce,
        "guest_control_mode" => "autonomous",
    }
}

/// A host's `_session_proof` signed over (post, host, guest, pid, nonce).
pub fn proof(host: &KeyPair, post_id: &str, guest_pk: &str, pid: &str, nonce: &str) -> Map {
    let canonical = auth::session_canonical(post_id, &host.public_key, guest_pk, Some(pid), nonce);
    obj! {
        "_session_proof" => true, "host_public_key" => host.public_key.as_str(), "host_signature" => host.sign(canonical.as_bytes()),
        "protocol_id" => pid, "host_control_mode" => "autonomous",
    }
}

/// The guest's `_session_ready` for that session.
pub fn ready(post_id: &str, host_pk: &str, guest_pk: &str, pid: &str, nonce: &str) -> Map {
    let canonical = auth::session_canonical(post_id, host_pk, guest_pk, Some(pid), nonce);
    obj! { "_session_ready" => true, "session_id" => auth::session_id(&canonical) }
}

/// `frame` serialised, with `key`'s value written as the raw JSON text
/// `raw` (numbers no model can hold, say).
pub fn with_raw(frame: &Map, key: &str, raw: &str) -> String {
    let mut m = frame.clone();
    m.insert(key, Value::from("\u{1}RAW\u{1}"));
    palaver::json::canonical::to_string_ordered(&Value::Object(m))
        .replace("\"\\u0001RAW\\u0001\"", raw)
}

/// `frame` serialised with `"key":raw` appended once more (a duplicate key).
pub fn with_duplicate(frame: &Map, key: &str, raw: &str) -> String {
    let s = palaver::json::canonical::to_string_ordered(&Value::Object(frame.clone()));
    format!("{},\"{key}\":{raw}}}", &s[..s.len() - 1])
}

/// `n` heartbeat pings, one line each.
pub fn pings(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 48);
    for i in 0..n {
        out.extend_from_slice(
            format!("{{\"_sys\":\"ping\",\"probe_id\":\"x-{i:x}\",\"ts\":1.0}}\n").as_bytes(),
        );
    }
    out
}

/// JSON nested `depth` arrays deep, as one line.
pub fn deep(depth: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(2 * depth + 1);
    v.extend(std::iter::repeat_n(b'[', depth));
    v.extend(std::iter::repeat_n(b']', depth));
    v.push(b'\n');
    v
}

/// A frame whose line is `len` bytes long (padding in an extra field).
pub fn padded(frame: &Map, len: usize) -> Vec<u8> {
    let s = palaver::json::canonical::to_string_ordered(&Value::Object(frame.clone()));
    let head = format!("{},\"pad\":\"", &s[..s.len() - 1]);
    let fill = len.saturating_sub(head.len() + 2);
    let mut v = Vec::with_capacity(len + 1);
    v.extend_from_slice(head.as_bytes());
    v.extend(std::iter::repeat_n(b'a', fill));
    v.extend_from_slice(b"\"}\n");
    v
}

/// Every `session_ended` event under a data dir's sessions, with the
/// events.jsonl it is in.
pub fn session_ended_events(data: &Path) -> Vec<(PathBuf, Map)> {
    let mut found = Vec::new();
    let mut stack = vec![data.join("sessions")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "events.jsonl") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for l in text.lines() {
                    if let Ok(Value::Object(ev)) = json::parse_str(l)
                        && ev.get("type").and_then(Value::as_str) == Some("session_ended")
                    {
                        found.push((p.clone(), ev));
                    }
                }
            }
        }
    }
    found
}

// ---- Scripts: what a hostile peer does at a chosen step of a
// guess-number-v1 session (tests/hostile_peer.rs and tests/console_hostile.rs
// play them; the scripts only one of them uses live there).

/// Where the hostile peer deviates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// The first handshake frame it owes: the guest's `_session_init`, the
    /// host's `_session_proof`.
    Hs1,
    /// The guest's `_session_ready` (when the victim hosts).
    Hs2,
    /// The first business frame it owes: the guest's `join`, the host's `ready`.
    Play0,
    /// The second: the guest's first `guess`, the host's first `hint`.
    Play1,
}

/// What the hostile peer does, in order; afterwards it keeps the connection
/// and reads (and drops) what comes, unless it turned `Deaf`.
#[derive(Clone, Debug)]
pub enum Act {
    Bytes(Vec<u8>),
    Line(String),
    /// Reads one frame (skipping heartbeats).
    Read,
    /// Stops reading for good (and keeps the connection).
    Deaf,
    /// Finishes the stream and closes the connection.
    Close,
    /// Connects and leaves without opening a stream (a guest at `Hs1` only:
    /// [`as_guest`] plays it in place of dialling).
    LeaveBeforeStream,
}

/// What a payload is built from.
pub struct Ctx<'a> {
    /// The frame that belongs at this step.
    pub valid: Map,
    pub me: &'a KeyPair,
    pub peer_pk: &'a str,
    pub post_id: &'a str,
    pub pid: &'a str,
    pub nonce: &'a str,
}

pub type Script = fn(&Ctx) -> Vec<Act>;

/// Plays the acts; afterwards holds the connection, reading unless deaf.
pub async fn play(mut raw: Raw, acts: Vec<Act>) {
    let mut deaf = false;
    for a in acts {
        let ok = match a {
            Act::Bytes(b) => raw.write(&b).await,
            Act::Line(l) => raw.line(&l).await,
            Act::Read => {
                let _ = raw.read(Duration::from_secs(15)).await;
                true
            }
            Act::Deaf => {
                deaf = true;
                true
            }
            Act::Close => {
                raw.close().await;
                return;
            }
            Act::LeaveBeforeStream => unreachable!("as_guest plays it before dialling, at Hs1"),
        };
        if !ok {
            break;
        }
    }
    if !deaf {
        raw.drain().await;
    }
    std::future::pending::<()>().await;
}

/// The hostile guest against invitation `post_id` on the community at
/// `url`: plays the session honestly up to `step`, then `script`.
pub async fn as_guest(url: &str, post_id: &str, step: Step, script: Script) -> Result<(), String> {
    let c = Client::new(url, KeyPair::generate()).map_err(|e| e.to_string())?;
    let inv = invitation(&c, post_id).await;
    let me = KeyPair::generate();
    let nonce = nonce();
    let acts = |valid: Map| {
        script(&Ctx {
            valid,
            me: &me,
            peer_pk: &inv.host_public_key,
            post_id,
            pid: &inv.protocol_id,
            nonce: &nonce,
        })
    };
    let init = init(&me, &nonce);
    if step == Step::Hs1 {
        let acts = acts(init);
        if matches!(acts.first(), Some(Act::LeaveBeforeStream)) {
            dial_and_leave(&inv.ticket).await;
        } else {
            play(dial(&inv.ticket).await, acts).await;
        }
        return Ok(());
    }
    let mut raw = dial(&inv.ticket).await;
    raw.frame(&init).await;
    match raw.read(Duration::from_secs(15)).await {
        Some(p) if p.get("_session_proof") == Some(&Value::Bool(true)) => {}
        other => return Err(format!("expected a _session_proof, got {other:?}")),
    }
    let ready = ready(
        post_id,
        &inv.host_public_key,
        &me.public_key,
        &inv.protocol_id,
        &nonce,
    );
    if step == Step::Hs2 {
        play(raw, acts(ready)).await;
        return Ok(());
    }
    raw.frame(&ready).await;
    let join = obj! { "action" => "join" };
    if step == Step::Play0 {
        play(raw, acts(join)).await;
        return Ok(());
    }
    raw.frame(&join).await;
    match raw.read(Duration::from_secs(15)).await {
        Some(r) if r.get("action").and_then(Value::as_str) == Some("ready") => {}
        other => return Err(format!("expected ready, got {other:?}")),
    }
    play(
        raw,
        acts(obj! { "action" => "guess", "attempt" => 1, "number" => 50 }),
    )
    .await;
    Ok(())
}

/// The hostile host `me` behind invitation `post_id` (for protocol `pid`)
/// whose ticket is `ep`'s: waits for the victim guest, plays honestly up to
/// `step`, then `script`.
pub async fn as_host(
    me: KeyPair,
    ep: Endpoint,
    post_id: &str,
    pid: &str,
    step: Step,
    script: Script,
) -> Result<(), String> {
    let Some(mut raw) = accept(ep, Duration::from_secs(30)).await else {
        return Err("the victim never connected".into());
    };
    let Some(init) = raw.read(Duration::from_secs(15)).await else {
        return Err("no _session_init from the victim".into());
    };
    let field = |k: &str| {
        init.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (guest_pk, nonce) = (field("guest_public_key"), field("session_nonce"));
    let acts = |valid: Map| {
        script(&Ctx {
            valid,
            me: &me,
            peer_pk: &guest_pk,
            post_id,
            pid,
            nonce: &nonce,
        })
    };
    let proof = proof(&me, post_id, &guest_pk, pid, &nonce);
    if step == Step::Hs1 {
        play(raw, acts(proof)).await;
        return Ok(());
    }
    raw.frame(&proof).await;
    match raw.read(Duration::from_secs(15)).await {
        Some(r) if r.get("_session_ready") == Some(&Value::Bool(true)) => {}
        other => return Err(format!("expected _session_ready, got {other:?}")),
    }
    match raw.read(Duration::from_secs(15)).await {
        Some(r) if r.get("action").and_then(Value::as_str) == Some("join") => {}
        other => return Err(format!("expected join, got {other:?}")),
    }
    let ready =
        obj! { "action" => "ready", "range_min" => 1, "range_max" => 100, "max_attempts" => 7 };
    if step == Step::Play0 {
        play(raw, acts(ready)).await;
        return Ok(());
    }
    raw.frame(&ready).await;
    match raw.read(Duration::from_secs(15)).await {
        Some(r) if r.get("action").and_then(Value::as_str) == Some("guess") => {}
        other => return Err(format!("expected guess, got {other:?}")),
    }
    play(
        raw,
        acts(
            obj! { "action" => "hint", "attempt" => 1, "result" => "higher", "attempts_used" => 1 },
        ),
    )
    .await;
    Ok(())
}

/// The payloads, each a [`Script`].
pub mod scripts {
    use super::{Act, Ctx};
    use palaver::json::Value;
    use palaver::obj;

    pub const MAX_LINE: usize = 8 * 1024 * 1024;

    /// One line as it is.
    pub fn line(s: impl Into<String>) -> Act {
        Act::Line(s.into())
    }
    /// One frame as a line.
    pub fn frame(m: palaver::json::Map) -> Act {
        line(palaver::json::canonical::to_string_ordered(&Value::Object(
            m,
        )))
    }
    /// The frame's first integer field (the one the number payloads replace).
    pub fn first_int_field(m: &palaver::json::Map) -> &'static str {
        [
            "max_attempts",
            "number",
            "range_min",
            "attempt",
            "attempts_used",
        ]
        .into_iter()
        .find(|k| m.contains_key(k))
        .unwrap_or("max_attempts")
    }

    /// HTTP where the frame belongs.
    pub fn garbage(_: &Ctx) -> Vec<Act> {
        vec![Act::Bytes(
            b"GET / HTTP/1.1\r\nHost: palaver\r\n\r\n".to_vec(),
        )]
    }
    /// The valid frame padded past the 8 MiB line limit.
    pub fn oversized(c: &Ctx) -> Vec<Act> {
        vec![Act::Bytes(super::padded(&c.valid, MAX_LINE + 4096))]
    }
    /// Arrays nested 100,000 deep.
    pub fn deep_nesting(_: &Ctx) -> Vec<Act> {
        vec![Act::Bytes(super::deep(100_000))]
    }
    /// The frame's first integer field written as `1e400`.
    pub fn number_1e400(c: &Ctx) -> Vec<Act> {
        let key = first_int_field(&c.valid);
        vec![line(super::with_raw(&c.valid, key, "1e400"))]
    }
    /// The frame's first integer field as a 400-digit integer.
    pub fn number_bigint(c: &Ctx) -> Vec<Act> {
        let key = first_int_field(&c.valid);
        vec![line(super::with_raw(&c.valid, key, &"4".repeat(400)))]
    }
    /// A `_session_proof` whose signature signs something else.
    pub fn proof_bad_signature(c: &Ctx) -> Vec<Act> {
        let mut p = c.valid.clone();
        p.insert("host_signature", Value::from(c.me.sign(b"something else")));
        vec![frame(p)]
    }
    /// The proof of an earlier session: same post, host and guest, another
    /// nonce.
    pub fn proof_replayed(c: &Ctx) -> Vec<Act> {
        let earlier = super::nonce();
        vec![frame(super::proof(
            c.me, c.post_id, c.peer_pk, c.pid, &earlier,
        ))]
    }
    /// A proof, correctly signed, for another protocol.
    pub fn proof_wrong_protocol(c: &Ctx) -> Vec<Act> {
        let other = "0f".repeat(32);
        vec![frame(super::proof(
            c.me, c.post_id, c.peer_pk, &other, c.nonce,
        ))]
    }
    /// The `_session_ready` of an earlier session between the same keys.
    pub fn ready_replayed(c: &Ctx) -> Vec<Act> {
        let earlier = super::nonce();
        vec![frame(super::ready(
            c.post_id,
            c.peer_pk,
            &c.me.public_key,
            c.pid,
            &earlier,
        ))]
    }
    /// A frame of the peer's own direction from a later step.
    pub fn out_of_order(c: &Ctx) -> Vec<Act> {
        vec![frame(match c.valid.get("action").and_then(Value::as_str) {
            Some("join") => obj! { "action" => "guess", "attempt" => 1, "number" => 50 },
            Some("guess") => obj! { "action" => "join" },
            _ => {
                obj! { "action" => "game_over", "winner" => "host", "secret_number" => 5, "total_attempts" => 1 }
            }
        })]
    }
    /// 100,000 heartbeat pings (never reading the pongs), then leaves.
    pub fn pings_then_disconnect(_: &Ctx) -> Vec<Act> {
        vec![Act::Deaf, Act::Bytes(super::pings(100_000)), Act::Close]
    }
    /// Never reads: floods pings (whose pongs fill the stream), then sends
    /// the valid frame, so the victim must write to a peer that takes nothing.
    pub fn never_reads(c: &Ctx) -> Vec<Act> {
        vec![
            Act::Deaf,
            Act::Bytes(super::pings(100_000)),
            frame(c.valid.clone()),
        ]
    }
    /// Leaves at once.
    pub fn disconnect(_: &Ctx) -> Vec<Act> {
        vec![Act::Close]
    }
    /// Half of the valid frame (no newline), then silence.
    pub fn no_newline_then_silence(c: &Ctx) -> Vec<Act> {
        let s = palaver::json::canonical::to_string_ordered(&Value::Object(c.valid.clone()));
        vec![Act::Bytes(s.as_bytes()[..s.len() / 2].to_vec())]
    }
    /// Half of the valid frame, then leaves.
    pub fn disconnect_mid_line(c: &Ctx) -> Vec<Act> {
        let mut v = no_newline_then_silence(c);
        v.push(Act::Close);
        v
    }
}
