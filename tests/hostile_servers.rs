//! palaver's clients against hostile servers (issue #35: every byte from
//! outside is bounded). Tiny servers on 127.0.0.1 write crafted bytes; each
//! client must end with an error that names what was wrong (and the URL),
//! never panic, never read without bound and never wait without bound.
//!
//! - HTTP (`web::http`, under the community client, the market client and
//!   the werewolf spectator): a chunk size of `ffffffffffffffff` with
//!   endless data, a chunk size that overflows 64 bits, an endless header
//!   line, an endless body, a Content-Length past the cap, an endless SSE
//!   line, a head and a body dripped one byte per 100 ms, silence inside a
//!   stream, a garbage status line.
//! - `wolf join` (WebSocket): an upgrade never answered, an endless or
//!   dripped answer to the upgrade, a garbage status line, a frame header
//!   claiming 2^63 bytes, endless continuation frames.
//! - The coach's agent CLI: one endless line, endless lines, endless
//!   stderr, never exiting, a left-behind process holding stderr open.
//! - The console: the spectator meeting such a server reports the error on
//!   the werewolf screen and the console goes on.
//!
//! Every test is bounded by [`WALL`]; every server loop by a count.

use crate::common;

use common::console::{ch, key};
use crossterm::event::KeyCode;
use palaver::identity::KeyPair;
use palaver::market::client::MarketClient;
use palaver::services::coach::{Coach, CoachConfig, CoachError, MAX_STDOUT_BYTES};
use palaver::tui::app::ScreenId;
use palaver::tui::screens::wolf::{Dialog, Source};
use palaver::tui::{Headless, load_settings};
use palaver::web::{Client, HttpLimits};
use palaver::werewolf::WolfError;
use palaver::werewolf::agent::{BotDecider, JoinLimits, JoinOptions, join_with};
use palaver::werewolf::bot::Bot;
use palaver::werewolf::spectate;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest any test here may take.
const WALL: Duration = Duration::from_secs(60);
/// One piece of an endless answer.
const PIECE: usize = 64 << 10;
/// Pieces an endless writer sends at most (4 GiB): far past every cap,
/// and still a bounded loop.
const MAX_PIECES: usize = 65_536;
/// Bytes a dripping writer sends at most (one per 100 ms: a minute).
const MAX_DRIPS: usize = 600;

async fn bounded<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(WALL, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: still running after {WALL:?}"),
    }
}

/// Small limits so each case ends fast: 1 s for a head, 2 s for a plain
/// request, 16 KiB heads, 1 MiB bodies, 64 KiB lines, 50 ms of silence in
/// a stream (the drip writes every 100 ms).
fn quick() -> HttpLimits {
    HttpLimits {
        connect: Duration::from_secs(2),
        head: Duration::from_secs(1),
        request: Duration::from_secs(2),
        idle: Duration::from_millis(50),
        max_head: 16 << 10,
        max_body: 1 << 20,
        max_line: 64 << 10,
    }
}

// ---------------------------------------------------------------------------
// Hostile HTTP servers.

/// What a hostile server does with a request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Evil {
    /// A chunked body whose first chunk claims `ffffffffffffffff` bytes,
    /// then endless data.
    HugeChunk,
    /// A chunk size of 17 hex digits (past 64 bits).
    OverflowChunk,
    /// A header line that never ends.
    EndlessHeader,
    /// A body without a length, endless until the client goes.
    EndlessBody,
    /// `Content-Length` past every cap (10^15), then endless data.
    HugeLength,
    /// `Content-Length` of 2^64-1.
    ImpossibleLength,
    /// An SSE stream whose first `data:` line never ends.
    EndlessSseLine,
    /// A valid head, one byte per 100 ms.
    DripHead,
    /// A valid head at once, then the body one byte per 100 ms.
    DripBody,
    /// Not HTTP at all.
    GarbageStatus,
}

/// A server's answer to one path.
#[derive(Debug, Clone)]
enum Reply {
    Json(String),
    /// A refusal: status and text.
    Refuse(u16, String),
    Evil(Evil),
}

/// Bytes each evil answer wrote before the client went away.
type Written = Arc<Mutex<Vec<usize>>>;

/// A hostile HTTP server on 127.0.0.1 answering each request by `route`
/// (its path → reply); its base URL and what the evil answers wrote.
async fn http_server(route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> (String, Written) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let written: Written = Arc::default();
    let w = written.clone();
    let route = Arc::new(route);
    tokio::spawn(async move {
        for _ in 0..64 {
            let Ok((s, _)) = listener.accept().await else {
                return;
            };
            let route = route.clone();
            let w = w.clone();
            tokio::spawn(async move { connection(s, &*route, &w).await });
        }
    });
    (base, written)
}

/// Serves requests on one connection until an evil answer (which ends it).
async fn connection(mut s: TcpStream, route: &(dyn Fn(&str) -> Reply + Send + Sync), w: &Written) {
    for _ in 0..16 {
        let Some(path) = read_request(&mut s).await else {
            return;
        };
        let (status, body) = match route(&path) {
            Reply::Json(body) => ("200 OK".to_owned(), body),
            Reply::Refuse(code, body) => (format!("{code} No"), body),
            Reply::Evil(e) => {
                let n = evil(&mut s, e).await;
                w.lock().unwrap().push(n);
                return;
            }
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if s.write_all(head.as_bytes()).await.is_err()
            || s.write_all(body.as_bytes()).await.is_err()
        {
            return;
        }
    }
}

/// Reads one request (head at most 64 KiB, body by its length, at most
/// 1 MiB); its path.
async fn read_request(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 << 10 {
            return None;
        }
        let n = s.read(&mut b).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&b[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let path = head.split(' ').nth(1)?.to_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
        .min(1 << 20);
    let mut have = buf.len() - end;
    while have < len {
        let n = s.read(&mut b).await.ok()?;
        if n == 0 {
            return None;
        }
        have += n;
    }
    Some(path)
}

/// Writes `piece` again and again until the client goes (bounded by
/// [`MAX_PIECES`]); the bytes written.
async fn endless(s: &mut TcpStream, piece: &[u8]) -> usize {
    let mut n = 0;
    for _ in 0..MAX_PIECES {
        if s.write_all(piece).await.is_err() {
            break;
        }
        n += piece.len();
    }
    n
}

/// Writes `bytes` then `filler` forever, one byte per 100 ms (bounded by
/// [`MAX_DRIPS`]).
async fn drip(s: &mut TcpStream, bytes: &[u8], filler: u8) -> usize {
    let all = bytes.iter().copied().chain(std::iter::repeat(filler));
    let mut n = 0;
    for b in all.take(MAX_DRIPS) {
        if s.write_all(&[b]).await.is_err() || s.flush().await.is_err() {
            break;
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    n
}

async fn evil(s: &mut TcpStream, e: Evil) -> usize {
    let head = |extra: &str| format!("HTTP/1.1 200 OK\r\n{extra}\r\n").into_bytes();
    let chunked = head("transfer-encoding: chunked\r\n");
    let a = vec![b'a'; PIECE];
    let written = |s: &[u8]| s.len();
    match e {
        Evil::HugeChunk => {
            let mut start = chunked.clone();
            start.extend_from_slice(b"ffffffffffffffff\r\n");
            let _ = s.write_all(&start).await;
            written(&start) + endless(s, &a).await
        }
        Evil::OverflowChunk => {
            let mut start = chunked.clone();
            start.extend_from_slice(b"fffffffffffffffff\r\n");
            let _ = s.write_all(&start).await;
            written(&start) + endless(s, &a).await
        }
        Evil::EndlessHeader => {
            let start = b"HTTP/1.1 200 OK\r\nx-endless: ";
            let _ = s.write_all(start).await;
            start.len() + endless(s, &a).await
        }
        Evil::EndlessBody => {
            let start = head("connection: close\r\n");
            let _ = s.write_all(&start).await;
            start.len() + endless(s, &a).await
        }
        Evil::HugeLength => {
            let start = head("content-length: 1000000000000000\r\n");
            let _ = s.write_all(&start).await;
            start.len() + endless(s, &a).await
        }
        Evil::ImpossibleLength => {
            let start = head("content-length: 18446744073709551615\r\n");
            let _ = s.write_all(&start).await;
            start.len() + endless(s, &a).await
        }
        Evil::EndlessSseLine => {
            let mut start =
                head("content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n");
            let first = b"event: game\ndata: ";
            start.extend_from_slice(format!("{:x}\r\n", first.len()).as_bytes());
            start.extend_from_slice(first);
            start.extend_from_slice(b"\r\n");
            let _ = s.write_all(&start).await;
            let mut piece = format!("{PIECE:x}\r\n").into_bytes();
            piece.extend_from_slice(&a);
            piece.extend_from_slice(b"\r\n");
            start.len() + endless(s, &piece).await
        }
        Evil::DripHead => drip(s, b"HTTP/1.1 200 OK\r\nx-slow: ", b'a').await,
        Evil::DripBody => {
            let start = head("content-type: text/event-stream\r\nconnection: close\r\n");
            let _ = s.write_all(&start).await;
            start.len() + drip(s, b"data: ", b'a').await
        }
        Evil::GarbageStatus => {
            let g = b"SSH-2.0-OpenSSH_9.6 \x00\xff\r\n\r\n";
            let _ = s.write_all(g).await;
            g.len()
        }
    }
}

/// Waits (at most 10 s) for the evil answer to stop writing; the bytes
/// it wrote, which must stay near the client's cap: a client that kept
/// reading would take the whole 4 GiB.
async fn stopped_after(w: &Written) -> usize {
    let t0 = Instant::now();
    loop {
        if let Some(n) = w.lock().unwrap().first() {
            return *n;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the server never stopped writing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// At most the cap plus what the two socket buffers hold.
fn near_cap(written: usize, cap: usize) {
    assert!(
        written <= cap + (48 << 20),
        "the client read {written} bytes past a cap of {cap}"
    );
}

fn has(e: &impl std::fmt::Display, what: &[&str]) {
    let s = e.to_string();
    for w in what {
        assert!(s.contains(w), "{w:?} not in the error: {s}");
    }
}

// --- the community client (web::Client) ------------------------------------

/// The community client's GET of `/api/v1/x` against `evil`.
async fn community_get(e: Evil, limits: HttpLimits) -> (String, palaver::web::ClientError, usize) {
    let (base, w) = http_server(move |_| Reply::Evil(e)).await;
    let c = Client::with_limits(&base, KeyPair::generate(), limits).unwrap();
    let err = c.call("GET", "/api/v1/x", None, &[200]).await.unwrap_err();
    let url = format!("{base}/api/v1/x");
    let n = if matches!(e, Evil::GarbageStatus | Evil::ImpossibleLength) {
        0
    } else {
        stopped_after(&w).await
    };
    (url, err, n)
}

#[tokio::test]
async fn community_client_refuses_every_hostile_answer() {
    bounded("community client", async {
        let l = quick();
        let (url, e, n) = community_get(Evil::HugeChunk, l).await;
        has(
            &e,
            &["GET /api/v1/x", &url, "response body is over 1048576 bytes"],
        );
        near_cap(n, l.max_body);

        let (url, e, _) = community_get(Evil::OverflowChunk, l).await;
        has(&e, &[&url, "the connection broke", "invalid chunk size"]);

        let (url, e, n) = community_get(Evil::EndlessHeader, l).await;
        has(&e, &[&url, "response head is over 16384 bytes"]);
        near_cap(n, l.max_head);

        let (url, e, n) = community_get(Evil::EndlessBody, l).await;
        has(&e, &[&url, "response body is over 1048576 bytes"]);
        near_cap(n, l.max_body);

        // Refused from the length alone, before the body is read.
        let (url, e, n) = community_get(Evil::HugeLength, l).await;
        has(&e, &[&url, "response body is over 1048576 bytes"]);
        near_cap(n, l.max_body);

        let (url, e, _) = community_get(Evil::ImpossibleLength, l).await;
        has(&e, &[&url, "declares a body longer than 2^64"]);

        let t0 = Instant::now();
        let (url, e, _) = community_get(Evil::DripHead, l).await;
        has(&e, &[&url, "no response head within 1 s"]);
        assert!(t0.elapsed() < Duration::from_secs(5));

        let (url, e, _) = community_get(Evil::DripBody, l).await;
        has(&e, &[&url, "no complete answer within 2 s"]);

        let (url, e, _) = community_get(Evil::GarbageStatus, l).await;
        has(&e, &[&url, "not valid HTTP/1.1"]);
    })
    .await;
}

#[tokio::test]
async fn community_client_default_limits_cap_the_body_at_32_mib() {
    bounded("default limits", async {
        let (base, w) = http_server(|_| Reply::Evil(Evil::HugeChunk)).await;
        let c = Client::new(&base, KeyPair::generate()).unwrap();
        let e = c.call("GET", "/api/v1/x", None, &[200]).await.unwrap_err();
        has(&e, &["response body is over 33554432 bytes"]);
        near_cap(
            stopped_after(&w).await,
            palaver::limits::HTTP_MAX_BODY_BYTES,
        );

        let (base, _) = http_server(|_| Reply::Evil(Evil::EndlessHeader)).await;
        let c = Client::new(&base, KeyPair::generate()).unwrap();
        let e = c.call("GET", "/api/v1/x", None, &[200]).await.unwrap_err();
        has(&e, &["response head is over 65536 bytes"]);
    })
    .await;
}

#[tokio::test]
async fn community_client_names_a_server_that_is_not_there() {
    bounded("unreachable", async {
        // A port that was just free: nothing listens on it.
        let port = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = Client::with_limits(
            &format!("http://127.0.0.1:{port}"),
            KeyPair::generate(),
            quick(),
        )
        .unwrap();
        let e = c.call("GET", "/api/v1/x", None, &[200]).await.unwrap_err();
        has(&e, &["cannot reach", "Connection refused"]);
    })
    .await;
}

// --- the market client --------------------------------------------------------

/// A market whose token route answers well and whose other routes are `e`.
async fn market_then(e: Evil) -> (String, palaver::market::client::MarketClientError) {
    let token = r#"{"token":"t","principal_id":"p","agent_id":"a"}"#;
    let (base, _) = http_server(move |path| {
        if path == "/api/gtl/token" {
            Reply::Json(token.to_owned())
        } else {
            Reply::Evil(e)
        }
    })
    .await;
    let http = Client::with_limits(&base, KeyPair::generate(), quick()).unwrap();
    let m = MarketClient::connect_with(http, None).await.unwrap();
    assert_eq!(m.token(), "t");
    let err = m.market(false).await.unwrap_err();
    (format!("{base}/api/market"), err)
}

#[tokio::test]
async fn market_client_refuses_every_hostile_answer() {
    bounded("market client", async {
        let (url, e) = market_then(Evil::HugeChunk).await;
        has(&e, &[&url, "response body is over 1048576 bytes"]);
        let (url, e) = market_then(Evil::OverflowChunk).await;
        has(&e, &[&url, "invalid chunk size"]);
        let (url, e) = market_then(Evil::EndlessHeader).await;
        has(&e, &[&url, "response head is over 16384 bytes"]);
        let (url, e) = market_then(Evil::EndlessBody).await;
        has(&e, &[&url, "response body is over 1048576 bytes"]);
        let (url, e) = market_then(Evil::DripHead).await;
        has(&e, &[&url, "no response head within 1 s"]);
        let (url, e) = market_then(Evil::DripBody).await;
        has(&e, &[&url, "no complete answer within 2 s"]);
        let (url, e) = market_then(Evil::GarbageStatus).await;
        has(&e, &[&url, "not valid HTTP/1.1"]);
        // The token request itself meets the same bounds.
        let (base, _) = http_server(|_| Reply::Evil(Evil::EndlessBody)).await;
        let http = Client::with_limits(&base, KeyPair::generate(), quick()).unwrap();
        let e = MarketClient::connect_with(http, None).await.err().unwrap();
        has(
            &e,
            &["POST /api/gtl/token", "response body is over 1048576 bytes"],
        );
    })
    .await;
}

// --- the werewolf spectator -------------------------------------------------

async fn list_against(e: Evil) -> (String, WolfError) {
    let (base, _) = http_server(move |_| Reply::Evil(e)).await;
    let err = spectate::list_games_with(&base, None, &quick())
        .await
        .unwrap_err();
    (format!("{base}/api/v1/games"), err)
}

#[tokio::test]
async fn spectator_game_list_refuses_every_hostile_answer() {
    bounded("game list", async {
        let (url, e) = list_against(Evil::HugeChunk).await;
        has(&e, &[&url, "response body is over 1048576 bytes"]);
        let (url, e) = list_against(Evil::OverflowChunk).await;
        has(&e, &[&url, "invalid chunk size"]);
        let (url, e) = list_against(Evil::EndlessHeader).await;
        has(&e, &[&url, "response head is over 16384 bytes"]);
        let (url, e) = list_against(Evil::EndlessBody).await;
        has(&e, &[&url, "response body is over 1048576 bytes"]);
        let (url, e) = list_against(Evil::HugeLength).await;
        has(&e, &[&url, "response body is over 1048576 bytes"]);
        let (url, e) = list_against(Evil::DripHead).await;
        has(&e, &[&url, "no response head within 1 s"]);
        let (url, e) = list_against(Evil::DripBody).await;
        has(&e, &[&url, "no complete answer within 2 s"]);
        let (url, e) = list_against(Evil::GarbageStatus).await;
        has(&e, &[&url, "not valid HTTP/1.1"]);
        // A good answer, and a refusal naming its status.
        let (base, _) = http_server(|_| Reply::Json("[]".into())).await;
        assert!(
            spectate::list_games_with(&base, None, &quick())
                .await
                .unwrap()
                .is_empty()
        );
        let (base, _) = http_server(|_| Reply::Refuse(401, "no token".into())).await;
        let e = spectate::list_games_with(&base, None, &quick())
            .await
            .unwrap_err();
        has(
            &e,
            &[&format!(
                "GET {base}/api/v1/games: HTTP 401 Unauthorized: no token"
            )],
        );
    })
    .await;
}

/// Follows game `g1` at a server whose stream is `e`: the error, from the
/// head or from the stream's last item.
async fn follow_against(e: Evil) -> (String, String) {
    let (base, _) = http_server(move |_| Reply::Evil(e)).await;
    let url = format!("{base}/api/v1/games/g1/god");
    let mut rx = match spectate::follow_with(&base, "g1", None, &quick()).await {
        Ok(rx) => rx,
        Err(e) => return (url, e.to_string()),
    };
    // A hostile stream here sends no valid event: its first item is the
    // error.
    match rx.recv().await {
        Some(Ok(ev)) => panic!("an event from a hostile stream: {ev:?}"),
        Some(Err(e)) => (url, e.to_string()),
        None => panic!("the stream closed without an error"),
    }
}

#[tokio::test]
async fn spectator_stream_refuses_every_hostile_answer() {
    bounded("god-view stream", async {
        let (url, e) = follow_against(Evil::EndlessSseLine).await;
        has(&e, &[&url, "a line of the stream is over 65536 bytes"]);
        // A chunk claiming 2^64-1 bytes: read as it comes, never allocated;
        // its endless data is one endless line.
        let (url, e) = follow_against(Evil::HugeChunk).await;
        has(&e, &[&url, "a line of the stream is over 65536 bytes"]);
        let (url, e) = follow_against(Evil::OverflowChunk).await;
        has(&e, &[&url, "invalid chunk size"]);
        let (url, e) = follow_against(Evil::EndlessHeader).await;
        has(&e, &[&url, "response head is over 16384 bytes"]);
        let (url, e) = follow_against(Evil::EndlessBody).await;
        has(&e, &[&url, "a line of the stream is over 65536 bytes"]);
        let (url, e) = follow_against(Evil::DripHead).await;
        has(&e, &[&url, "no response head within 1 s"]);
        let (url, e) = follow_against(Evil::DripBody).await;
        has(&e, &[&url, "the server sent nothing for 0.05 s"]);
        let (url, e) = follow_against(Evil::GarbageStatus).await;
        has(&e, &[&url, "not valid HTTP/1.1"]);
    })
    .await;
}

#[tokio::test]
async fn spectator_stream_bounds_an_event_of_many_lines() {
    bounded("many data lines", async {
        // Lines of 1 KiB each, all `data:` of one event that never ends.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            read_request(&mut s).await;
            let head =
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let _ = s.write_all(head).await;
            let line = format!("data: {}\n", "b".repeat(1024)).into_bytes();
            endless(&mut s, &line).await;
        });
        let mut rx = spectate::follow_with(&base, "g1", None, &quick())
            .await
            .unwrap();
        let e = rx.recv().await.unwrap().unwrap_err();
        has(
            &e,
            &[
                "/api/v1/games/g1/god",
                "an event's data is over 65536 bytes",
            ],
        );
    })
    .await;
}

// --- `wolf join` (WebSocket) ------------------------------------------------

/// A one-connection WebSocket "server" on 127.0.0.1 running `script` on
/// the raw socket; the ws URL.
async fn ws_server<F, Fut>(script: F) -> String
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    tokio::spawn(async move {
        if let Ok((s, _)) = listener.accept().await {
            script(s).await;
        }
    });
    url
}

/// Reads the upgrade request; the answer that completes it.
async fn upgrade(s: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 64 << 10 {
        let n = s.read(&mut b).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&b[..n]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let key = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: {accept}\r\n\r\n"
    )
    .into_bytes()
}

fn join_limits() -> JoinLimits {
    JoinLimits {
        connect: Duration::from_secs(1),
        idle: Duration::from_secs(1),
        max_packet: 64 << 10,
    }
}

async fn join_against(url: String) -> WolfError {
    let opts = JoinOptions {
        url,
        name: "team1".into(),
        token: None,
        seed: 1,
    };
    join_with(&opts, &join_limits(), &mut BotDecider(Bot::new(1)))
        .await
        .unwrap_err()
}

#[tokio::test]
async fn wolf_join_refuses_hostile_websocket_servers() {
    bounded("wolf join", async {
        // An upgrade never answered: the connect timeout.
        let url = ws_server(|mut s| async move {
            let _ = upgrade(&mut s).await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        })
        .await;
        let t0 = Instant::now();
        let e = join_against(url.clone()).await;
        has(&e, &[&url, "no WebSocket connection within 1 s"]);
        assert!(t0.elapsed() < Duration::from_secs(5));

        // The answer to the upgrade dripped one byte per 100 ms.
        let url = ws_server(|mut s| async move {
            let _ = upgrade(&mut s).await;
            drip(
                &mut s,
                b"HTTP/1.1 101 Switching Protocols\r\nx-slow: ",
                b'a',
            )
            .await;
        })
        .await;
        let e = join_against(url.clone()).await;
        has(&e, &[&url, "no WebSocket connection within 1 s"]);

        // An endless header line in the answer to the upgrade.
        let url = ws_server(|mut s| async move {
            let _ = upgrade(&mut s).await;
            let _ = s
                .write_all(b"HTTP/1.1 101 Switching Protocols\r\nx-endless: ")
                .await;
            endless(&mut s, &vec![b'a'; PIECE]).await;
        })
        .await;
        let e = join_against(url.clone()).await;
        has(
            &e,
            &[&url, "answer to the WebSocket upgrade is over 64 KiB"],
        );

        // Not HTTP.
        let url = ws_server(|mut s| async move {
            let _ = upgrade(&mut s).await;
            let _ = s.write_all(b"SSH-2.0-OpenSSH_9.6\r\n\r\n").await;
            tokio::time::sleep(Duration::from_secs(5)).await;
        })
        .await;
        let e = join_against(url.clone()).await;
        has(&e, &[&url, "invalid HTTP version"]);

        // A frame header claiming 2^63 - 1 bytes: refused from the header.
        let url = ws_server(|mut s| async move {
            let ok = upgrade(&mut s).await;
            let _ = s.write_all(&ok).await;
            let mut frame = vec![0x81, 0x7f];
            frame.extend_from_slice(&u64::MAX.wrapping_shr(1).to_be_bytes());
            let _ = s.write_all(&frame).await;
            endless(&mut s, &vec![b'a'; PIECE]).await;
        })
        .await;
        let e = join_against(url).await;
        has(&e, &["frame", "packets are limited to 65536 bytes"]);

        // Endless continuation frames of 1 KiB: one message past the cap.
        let url = ws_server(|mut s| async move {
            let ok = upgrade(&mut s).await;
            let _ = s.write_all(&ok).await;
            let mut first = vec![0x01, 126, 0x04, 0x00];
            first.extend_from_slice(&[b'a'; 1024]);
            let _ = s.write_all(&first).await;
            let mut more = vec![0x00, 126, 0x04, 0x00];
            more.extend_from_slice(&[b'a'; 1024]);
            endless(&mut s, &more).await;
        })
        .await;
        let e = join_against(url).await;
        has(&e, &["packets are limited to 65536 bytes"]);
    })
    .await;
}

// --- the coach's agent CLI ----------------------------------------------------

/// A coach whose agent is `sh` running `script` (in a file in `dir`).
fn coach_running(dir: &std::path::Path, script: &str, timeout: Duration) -> Coach {
    let file = dir.join("agent.sh");
    std::fs::write(&file, script).unwrap();
    let mut cfg = CoachConfig::custom(&format!("sh {} {{prompt}}", file.display()), None).unwrap();
    cfg.timeout = timeout;
    Coach::open(&dir.join("data"), cfg).unwrap()
}

async fn turn(c: &Coach) -> Result<String, CoachError> {
    c.turn("go", None, |_| {}, std::future::pending()).await
}

#[tokio::test]
async fn coach_stops_an_agent_with_endless_output() {
    bounded("coach output", async {
        let d = tempfile::tempdir().unwrap();
        // One endless line (no newline ever).
        let c = coach_running(d.path(), "exec tr -d '\\n' < /dev/zero\n", WALL);
        let t0 = Instant::now();
        assert_eq!(
            turn(&c).await.unwrap_err(),
            CoachError::TooMuchOutput(MAX_STDOUT_BYTES)
        );
        assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
        let e = c.history().last().unwrap().text.clone();
        assert!(e.contains("more than 67108864 bytes"), "{e}");

        // Endless lines of 1000 bytes.
        let c = coach_running(d.path(), "exec yes \"$(printf '%01000d' 0)\"\n", WALL);
        assert_eq!(
            turn(&c).await.unwrap_err(),
            CoachError::TooMuchOutput(MAX_STDOUT_BYTES)
        );
    })
    .await;
}

#[tokio::test]
async fn coach_keeps_a_bounded_stderr_and_times_out_a_silent_agent() {
    bounded("coach stderr", async {
        let d = tempfile::tempdir().unwrap();
        // 8 MiB of stderr on one line, then a failure: 64 KiB kept.
        let c = coach_running(
            d.path(),
            "head -c 8388608 /dev/zero | tr '\\0' e >&2\nexit 3\n",
            WALL,
        );
        match turn(&c).await.unwrap_err() {
            CoachError::Failed { code, stderr } => {
                assert_eq!(code, "status 3");
                assert!(
                    stderr.len() <= 64 << 10 && stderr.starts_with("eee"),
                    "{}",
                    stderr.len()
                );
            }
            other => panic!("{other:?}"),
        }
        // Endless stderr and no exit: the turn's timeout.
        let c = coach_running(d.path(), "exec yes err >&2\n", Duration::from_millis(800));
        let t0 = Instant::now();
        assert_eq!(
            turn(&c).await.unwrap_err(),
            CoachError::Timeout(Duration::from_millis(800))
        );
        assert!(t0.elapsed() < Duration::from_secs(10));
        // Never exits, says nothing.
        let c = coach_running(d.path(), "exec sleep 30\n", Duration::from_millis(800));
        assert_eq!(
            turn(&c).await.unwrap_err(),
            CoachError::Timeout(Duration::from_millis(800))
        );
    })
    .await;
}

#[tokio::test]
async fn coach_does_not_wait_for_a_process_left_holding_stderr() {
    bounded("coach leftover", async {
        let d = tempfile::tempdir().unwrap();
        let pid_file = d.path().join("leftover.pid");
        // A process in its own session (not the turn's group) keeps
        // stderr open for 20 s; the agent answers and exits.
        let script = format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 20' &\nsleep 0.2\necho 'the reply'\n",
            pid_file.display()
        );
        let c = coach_running(d.path(), &script, WALL);
        let t0 = Instant::now();
        let r = turn(&c).await;
        let took = t0.elapsed();
        if let Ok(pid) = std::fs::read_to_string(&pid_file) {
            let _ = std::process::Command::new("kill").arg(pid.trim()).status();
        }
        assert_eq!(r.unwrap(), "the reply");
        assert!(took < Duration::from_secs(10), "{took:?}");
    })
    .await;
}

// --- the console --------------------------------------------------------------

fn console(data: &std::path::Path) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    let mut h = Headless::new(settings, 100, 30);
    h.key(key(KeyCode::F(3)));
    assert_eq!(h.app.screen, ScreenId::Werewolf);
    h
}

/// Opens the server dialog, types `base` and lists its games.
fn list_at(h: &mut Headless, base: &str) {
    h.key(ch('c'));
    let default_url = match &h.app.wolf.dialog {
        Some(Dialog::Server { url, .. }) => url.clone(),
        other => panic!("no server dialog: {other:?}"),
    };
    for _ in 0..default_url.len() {
        h.key(key(KeyCode::Backspace));
    }
    for c in base.chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_reports_a_hostile_spectated_server_and_goes_on() {
    bounded("console", async {
        let d = tempfile::tempdir().unwrap();
        let mut h = console(d.path());
        // A game list whose chunk claims 2^64-1 bytes: the dialog says so.
        let (base, _) = http_server(|_| Reply::Evil(Evil::HugeChunk)).await;
        list_at(&mut h, &base);
        assert!(
            h.until(WALL, |a| matches!(
                &a.wolf.dialog,
                Some(Dialog::Games {
                    list: Some(Err(_)),
                    ..
                })
            ))
            .await
        );
        match &h.app.wolf.dialog {
            Some(Dialog::Games {
                list: Some(Err(e)), ..
            }) => {
                assert!(e.contains("response body is over 33554432 bytes"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        h.key(key(KeyCode::Esc));

        // A good list, then a god-view stream with one endless line.
        let list = r#"[{"id":"g1","day":1,"finished":false,"agents":[{"alive":true}]}]"#;
        let (base, _) = http_server(move |path| {
            if path == "/api/v1/games" {
                Reply::Json(list.to_owned())
            } else {
                Reply::Evil(Evil::EndlessSseLine)
            }
        })
        .await;
        list_at(&mut h, &base);
        assert!(
            h.until(WALL, |a| matches!(
                &a.wolf.dialog,
                Some(Dialog::Games { list: Some(Ok(l)), .. }) if !l.is_empty()
            ))
            .await,
            "{}",
            h.screen()
        );
        h.key(key(KeyCode::Enter));
        assert!(matches!(h.app.wolf.source, Source::Spectate { .. }));
        assert!(h.until(WALL, |a| a.wolf.ended).await, "{}", h.screen());
        let note = h.app.wolf.note.clone().unwrap();
        assert!(!note.ok, "{note:?}");
        assert!(
            note.text.contains("stream of game g1 broke")
                && note
                    .text
                    .contains("a line of the stream is over 4194304 bytes")
                && note.text.contains(&format!("{base}/api/v1/games/g1/god")),
            "{note:?}"
        );
        let s = h.screen();
        assert!(s.contains("stream of game g1 broke"), "{s}");
        // Still answering keys: the server dialog opens again.
        h.key(ch('c'));
        assert!(matches!(h.app.wolf.dialog, Some(Dialog::Server { .. })));
    })
    .await;
}
