//! Frames between two peers: newline-delimited JSON objects, compact, keys in
//! insertion order (the reference's `json.dumps(msg, ensure_ascii=False,
//! separators=(",", ":"))`), at most 8 MiB a line.
//!
//! A [`Channel`] is a sending half ([`Sender`], cheap to share) and a
//! receiving half ([`Receiver`]). Transports implement the two small traits
//! [`LineTx`] and [`LineRx`]; this module owns everything above the line:
//! the size limit, parsing, and the `_sys` heartbeat frames, which are
//! answered or dropped here and never reach a protocol.

use crate::json::canonical;
use crate::json::{self, Map, Value};
use async_trait::async_trait;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest frame accepted, in bytes (the reference's `MAX_JSON_LINE_BYTES`).
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

/// Why a frame could not be sent or received.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// The peer went away (EOF, reset, dropped channel).
    #[error("peer disconnected")]
    Closed,
    /// A line that is not a JSON object.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// A line over [`MAX_FRAME_BYTES`].
    #[error("frame of {0} bytes exceeds the 8 MiB limit")]
    Oversized(usize),
    /// A transport failure other than a clean close.
    #[error("transport error: {0}")]
    Transport(String),
    /// The peer stopped reading: a frame could not be written for this long.
    #[error("the peer stopped reading: a frame waited {0:?} to be written")]
    Stalled(Duration),
}

/// The most bytes of peer lines a pumped channel holds for a reader that is
/// busy elsewhere; past it the pump stops reading and the peer's own writes
/// wait (QUIC flow control), so a flooding peer cannot grow our memory.
pub const MAX_QUEUED_BYTES: usize = MAX_FRAME_BYTES + 64 * 1024;

/// How long closing a stream waits for frames already handed to it to be
/// written; a peer that does not read by then is left behind.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The sending side of a line transport.
#[async_trait]
pub trait LineTx: Send + Sync {
    /// Sends one line (without its newline). Cancel-safe: a send dropped
    /// half way never leaves half a line behind for the next one.
    async fn send_line(&self, line: String) -> Result<(), ChannelError>;
    /// Sends one line only if that needs no waiting (the transport is not
    /// congested): `Ok(false)` when the line was dropped instead. Heartbeat
    /// traffic goes this way, so it can never pile up behind a peer that
    /// does not read.
    async fn try_send_line(&self, line: String) -> Result<bool, ChannelError> {
        self.send_line(line).await.map(|()| true)
    }
    /// Closes the sending direction; the peer sees the end of the stream.
    async fn close(&self);
}

/// The receiving side of a line transport.
#[async_trait]
pub trait LineRx: Send {
    /// The next non-empty line, or `Closed` at the end of the stream.
    async fn recv_line(&mut self) -> Result<String, ChannelError>;
}

/// The shareable sending half of a channel.
#[derive(Clone)]
pub struct Sender {
    tx: Arc<dyn LineTx>,
}

impl Sender {
    pub fn new(tx: Arc<dyn LineTx>) -> Self {
        Sender { tx }
    }

    /// Sends one frame.
    pub async fn send(&self, frame: &Value) -> Result<(), ChannelError> {
        self.tx.send_line(canonical::to_string_ordered(frame)).await
    }

    /// Sends one frame, giving up with [`ChannelError::Stalled`] when the
    /// peer has not taken it within `limit` (it stopped reading).
    pub async fn send_within(&self, frame: &Value, limit: Duration) -> Result<(), ChannelError> {
        tokio::time::timeout(limit, self.send(frame))
            .await
            .unwrap_or(Err(ChannelError::Stalled(limit)))
    }

    /// Sends one frame if the transport can take it without waiting;
    /// `Ok(false)` when it was dropped because the peer is not reading.
    pub async fn try_send(&self, frame: &Value) -> Result<bool, ChannelError> {
        self.tx
            .try_send_line(canonical::to_string_ordered(frame))
            .await
    }

    /// Sends a raw line as it is (for tests that play a misbehaving peer).
    pub async fn send_raw(&self, line: String) -> Result<(), ChannelError> {
        self.tx.send_line(line).await
    }

    pub async fn close(&self) {
        self.tx.close().await;
    }
}

/// When the peer was last heard from, shared between a channel's receiver
/// and whoever watches the peer's health (heartbeats).
#[derive(Debug)]
pub struct Liveness {
    start: std::time::Instant,
    last_ms: AtomicU64,
    pongs: AtomicU64,
    /// Probes waiting for their pong (at most [`MAX_PROBES`]).
    probes: std::sync::Mutex<Vec<(String, tokio::sync::oneshot::Sender<()>)>>,
}

/// Most round-trip probes waiting for a pong at once.
pub const MAX_PROBES: usize = 8;

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            start: std::time::Instant::now(),
            last_ms: AtomicU64::new(0),
            pongs: AtomicU64::new(0),
            probes: std::sync::Mutex::new(Vec::new()),
        }
    }
}

impl Liveness {
    /// Marks the peer as heard from now.
    pub fn touch(&self) {
        self.last_ms
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// How long the peer has been silent.
    pub fn silent_for(&self) -> std::time::Duration {
        let now = self.start.elapsed().as_millis() as u64;
        std::time::Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }

    /// Heartbeat pongs received.
    pub fn pongs(&self) -> u64 {
        self.pongs.load(Ordering::Relaxed)
    }

    /// Resolves when the pong of probe `id` arrives (a round-trip probe:
    /// send a `_sys` ping with this probe id after calling this). The
    /// oldest waiting probe is dropped past [`MAX_PROBES`].
    pub fn await_pong(&self, id: &str) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Ok(mut p) = self.probes.lock() {
            p.retain(|(_, t)| !t.is_closed());
            if p.len() >= MAX_PROBES {
                p.remove(0);
            }
            p.push((id.to_owned(), tx));
        }
        rx
    }

    fn pong(&self, id: Option<&str>) {
        self.pongs.fetch_add(1, Ordering::Relaxed);
        if let (Some(id), Ok(mut p)) = (id, self.probes.lock())
            && let Some(i) = p.iter().position(|(k, _)| k == id)
        {
            let (_, tx) = p.remove(i);
            let _ = tx.send(());
        }
    }
}

/// The receiving half of a channel.
pub struct Receiver {
    rx: Box<dyn LineRx>,
    /// Heartbeat pongs go back through this.
    pong: Sender,
    /// When the peer last sent anything.
    pub liveness: Arc<Liveness>,
}

/// Answers a `_sys` frame: a ping with a 1–64 character probe id gets its
/// pong, a pong is counted, anything else is dropped.
async fn answer_sys(m: &Map, pong: &Sender, live: &Liveness) {
    let kind = m.get("_sys").and_then(Value::as_str);
    if kind == Some("ping")
        && let Some(Value::String(probe)) = m.get("probe_id")
        && (1..=64).contains(&probe.chars().count())
    {
        let reply: Map = [
            ("_sys", Value::from("pong")),
            ("probe_id", Value::from(&**probe)),
        ]
        .into_iter()
        .collect();
        // A pong the transport cannot take at once is dropped: a peer that
        // pings without reading must not queue our answers in memory. A
        // failed pong surfaces on the next business send.
        let _ = pong.try_send(&Value::Object(reply)).await;
    } else if kind == Some("pong") {
        live.pong(m.get("probe_id").and_then(Value::as_str));
    }
}

/// A line that is a `_sys` frame, parsed; None for anything else.
fn sys_frame(line: &str) -> Option<Map> {
    if !line.contains("\"_sys\"") || line.len() > MAX_FRAME_BYTES {
        return None;
    }
    match json::parse_str(line) {
        Ok(Value::Object(m)) if m.contains_key("_sys") => Some(m),
        _ => None,
    }
}

/// A line the pump read, with the share of [`MAX_QUEUED_BYTES`] it holds
/// until the reader takes it.
type Pumped = (
    Result<String, ChannelError>,
    Option<tokio::sync::OwnedSemaphorePermit>,
);

/// The receiving end of a pumped channel.
struct PumpRx(mpsc::UnboundedReceiver<Pumped>);

#[async_trait]
impl LineRx for PumpRx {
    async fn recv_line(&mut self) -> Result<String, ChannelError> {
        match self.0.recv().await {
            Some((line, _permit)) => line,
            None => Err(ChannelError::Closed),
        }
    }
}

impl Receiver {
    /// The next raw line, `_sys` frames included and left unanswered (for
    /// tests that play a misbehaving or silent peer).
    pub async fn recv_raw(&mut self) -> Result<String, ChannelError> {
        self.rx.recv_line().await
    }

    /// The next business frame: `_sys` pings are answered with a pong and
    /// other `_sys` frames dropped before the caller sees anything.
    pub async fn recv(&mut self) -> Result<Map, ChannelError> {
        loop {
            let line = self.rx.recv_line().await?;
            self.liveness.touch();
            if line.len() > MAX_FRAME_BYTES {
                return Err(ChannelError::Oversized(line.len()));
            }
            let v = json::parse_str(&line).map_err(|e| ChannelError::Malformed(e.to_string()))?;
            let Value::Object(m) = v else {
                return Err(ChannelError::Malformed(format!(
                    "expected a JSON object, found {}",
                    v.type_name()
                )));
            };
            if !m.contains_key("_sys") {
                return Ok(m);
            }
            answer_sys(&m, &self.pong, &self.liveness).await;
        }
    }
}

/// A bidirectional frame channel.
pub struct Channel {
    pub tx: Sender,
    pub rx: Receiver,
}

impl Channel {
    /// Builds a channel over a line transport.
    pub fn new(tx: Arc<dyn LineTx>, rx: Box<dyn LineRx>) -> Channel {
        let tx = Sender::new(tx);
        Channel {
            rx: Receiver {
                rx,
                pong: tx.clone(),
                liveness: Arc::new(Liveness::default()),
            },
            tx,
        }
    }

    /// Two connected in-memory channels (host end, guest end).
    pub fn memory_pair() -> (Channel, Channel) {
        let (a_tx, a_rx) = mpsc::unbounded_channel();
        let (b_tx, b_rx) = mpsc::unbounded_channel();
        let a = Channel::new(Arc::new(MemTx(a_tx)), Box::new(MemRx(b_rx)));
        let b = Channel::new(Arc::new(MemTx(b_tx)), Box::new(MemRx(a_rx)));
        (a, b)
    }
}

impl Channel {
    /// Reads the peer continuously in a background task (needs a tokio
    /// runtime): heartbeat pings are answered and liveness kept up to date
    /// even while the engine is not reading, e.g. while a human thinks.
    /// Business lines queue up for [`Receiver::recv`] unchanged.
    pub fn pumped(self) -> Channel {
        let Channel { tx, rx } = self;
        let Receiver {
            mut rx,
            pong,
            liveness,
        } = rx;
        let (lines, queue) = mpsc::unbounded_channel::<Pumped>();
        let (p, live) = (pong.clone(), liveness.clone());
        // Queued lines are bounded by bytes, not by count: the pump waits for
        // room before it reads on.
        let room = Arc::new(tokio::sync::Semaphore::new(MAX_QUEUED_BYTES));
        tokio::spawn(async move {
            loop {
                match rx.recv_line().await {
                    Ok(line) => {
                        live.touch();
                        match sys_frame(&line) {
                            Some(m) => answer_sys(&m, &p, &live).await,
                            None => {
                                let need = line.len().clamp(1, MAX_QUEUED_BYTES) as u32;
                                let permit = tokio::select! {
                                    p = room.clone().acquire_many_owned(need) => p.ok(),
                                    _ = lines.closed() => return,
                                };
                                if lines.send((Ok(line), permit)).is_err() {
                                    return;
                                }
                            }
                        }
                    }
                    Err(e) => {
                        let _ = lines.send((Err(e), None));
                        return;
                    }
                }
            }
        });
        Channel {
            tx,
            rx: Receiver {
                rx: Box::new(PumpRx(queue)),
                pong,
                liveness,
            },
        }
    }

    /// A channel over a byte stream pair (TCP, a QUIC bi-stream, pipes):
    /// lines end with `\n`, empty lines are skipped, a line over the limit
    /// is refused.
    pub fn from_stream<R, W>(reader: R, writer: W) -> Channel
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Channel::new(
            Arc::new(StreamTx(tokio::sync::Mutex::new(Some(Writer {
                w: writer,
                pending: Vec::new(),
                off: 0,
            })))),
            Box::new(StreamRx {
                reader: BufReader::new(reader),
                buf: Vec::new(),
            }),
        )
    }
}

struct StreamTx<W>(tokio::sync::Mutex<Option<Writer<W>>>);

struct StreamRx<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
}

/// A byte stream's writer and the line it is in the middle of: bytes are
/// taken off `pending` only once the stream accepted them, so a send that is
/// cancelled (timed out) leaves the rest for the next send to finish first,
/// and the peer never sees two lines spliced together.
struct Writer<W> {
    w: W,
    pending: Vec<u8>,
    off: usize,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    /// Writes what is pending; `Pending` while the stream takes no more.
    fn poll_drain(&mut self, cx: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>> {
        while self.off < self.pending.len() {
            match Pin::new(&mut self.w).poll_write(cx, &self.pending[self.off..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => self.off += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.pending.clear();
        self.off = 0;
        Poll::Ready(Ok(()))
    }

    async fn drain(&mut self) -> std::io::Result<()> {
        std::future::poll_fn(|cx| self.poll_drain(cx)).await
    }

    /// One attempt to drain without waiting: true when nothing is left.
    async fn drain_now(&mut self) -> std::io::Result<bool> {
        std::future::poll_fn(|cx| {
            Poll::Ready(match self.poll_drain(cx) {
                Poll::Ready(r) => r.map(|()| true),
                Poll::Pending => Ok(false),
            })
        })
        .await
    }

    fn queue(&mut self, line: String) {
        self.pending = line.into_bytes();
        self.pending.push(b'\n');
        self.off = 0;
    }
}

#[async_trait]
impl<W: AsyncWrite + Unpin + Send + 'static> LineTx for StreamTx<W> {
    async fn send_line(&self, line: String) -> Result<(), ChannelError> {
        let mut guard = self.0.lock().await;
        let Some(w) = guard.as_mut() else {
            return Err(ChannelError::Closed);
        };
        w.drain().await.map_err(io_error)?;
        w.queue(line);
        w.drain().await.map_err(io_error)?;
        w.w.flush().await.map_err(io_error)
    }

    async fn try_send_line(&self, line: String) -> Result<bool, ChannelError> {
        let Ok(mut guard) = self.0.try_lock() else {
            return Ok(false);
        };
        let Some(w) = guard.as_mut() else {
            return Err(ChannelError::Closed);
        };
        if !w.drain_now().await.map_err(io_error)? {
            return Ok(false);
        }
        w.queue(line);
        // What the stream does not take now stays pending for the next send.
        w.drain_now().await.map_err(io_error)?;
        Ok(true)
    }

    async fn close(&self) {
        let Ok(mut guard) = tokio::time::timeout(CLOSE_GRACE, self.0.lock()).await else {
            return;
        };
        if let Some(mut w) = guard.take()
            && let Ok(Ok(())) = tokio::time::timeout(CLOSE_GRACE, w.drain()).await
        {
            let _ = w.w.shutdown().await;
        }
    }
}

fn io_error(e: std::io::Error) -> ChannelError {
    use std::io::ErrorKind::*;
    match e.kind() {
        BrokenPipe | ConnectionReset | ConnectionAborted | UnexpectedEof | NotConnected => {
            ChannelError::Closed
        }
        _ => ChannelError::Transport(e.to_string()),
    }
}

#[async_trait]
impl<R: AsyncRead + Unpin + Send + 'static> LineRx for StreamRx<R> {
    async fn recv_line(&mut self) -> Result<String, ChannelError> {
        loop {
            self.buf.clear();
            let limit = MAX_FRAME_BYTES as u64 + 1;
            let n = (&mut self.reader)
                .take(limit)
                .read_until(b'\n', &mut self.buf)
                .await
                .map_err(io_error)?;
            if n == 0 {
                return Err(ChannelError::Closed);
            }
            if self.buf.last() != Some(&b'\n') {
                if self.buf.len() as u64 >= limit {
                    return Err(ChannelError::Oversized(self.buf.len()));
                }
                // The stream ended inside a line: the peer is gone.
                return Err(ChannelError::Closed);
            }
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
            if self.buf.is_empty() {
                continue;
            }
            return String::from_utf8(std::mem::take(&mut self.buf))
                .map_err(|_| ChannelError::Malformed("frame is not valid UTF-8".into()));
        }
    }
}

/// In-memory line transport: an unbounded queue of lines; `close` sends a
/// marker so the peer sees the end of the stream even while a clone of the
/// sender lives on.
struct MemTx(mpsc::UnboundedSender<Option<String>>);

struct MemRx(mpsc::UnboundedReceiver<Option<String>>);

#[async_trait]
impl LineTx for MemTx {
    async fn send_line(&self, line: String) -> Result<(), ChannelError> {
        self.0.send(Some(line)).map_err(|_| ChannelError::Closed)
    }

    async fn close(&self) {
        let _ = self.0.send(None);
    }
}

#[async_trait]
impl LineRx for MemRx {
    async fn recv_line(&mut self) -> Result<String, ChannelError> {
        loop {
            match self.0.recv().await {
                Some(Some(line)) if line.is_empty() => continue,
                Some(Some(line)) => return Ok(line),
                Some(None) | None => return Err(ChannelError::Closed),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_in_insertion_order() {
        let (mut a, mut b) = Channel::memory_pair();
        let frame = json::parse_str(r#"{"z":1,"a":"é","n":12345678901234567890}"#).unwrap();
        a.tx.send(&frame).await.unwrap();
        let got = b.rx.recv().await.unwrap();
        assert_eq!(
            canonical::to_string_ordered(&Value::Object(got)),
            r#"{"z":1,"a":"é","n":12345678901234567890}"#
        );
        b.tx.send_raw("{not json".into()).await.unwrap();
        assert!(matches!(a.rx.recv().await, Err(ChannelError::Malformed(_))));
        b.tx.send_raw("[1]".into()).await.unwrap();
        assert!(matches!(a.rx.recv().await, Err(ChannelError::Malformed(_))));
        b.tx.close().await;
        assert_eq!(a.rx.recv().await.unwrap_err(), ChannelError::Closed);
    }

    #[tokio::test]
    async fn pings_are_answered_below_the_business_layer() {
        let (mut a, mut b) = Channel::memory_pair();
        b.tx.send_raw(r#"{"_sys":"ping","probe_id":"ab-1","ts":1.5}"#.into())
            .await
            .unwrap();
        b.tx.send_raw(r#"{"action":"join"}"#.into()).await.unwrap();
        let got = a.rx.recv().await.unwrap();
        assert_eq!(got.get("action").and_then(Value::as_str), Some("join"));
        let pong = b.rx.rx.recv_line().await.unwrap();
        assert_eq!(pong, r#"{"_sys":"pong","probe_id":"ab-1"}"#);
    }

    #[tokio::test]
    async fn stream_channels_frame_lines() {
        let (a, b) = tokio::io::duplex(64);
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let (x, mut y) = (Channel::from_stream(ar, aw), Channel::from_stream(br, bw));
        x.tx.send_raw("".into()).await.unwrap();
        x.tx.send(&json::parse_str(r#"{"action":"join","t":"a\nb"}"#).unwrap())
            .await
            .unwrap();
        let got = y.rx.recv().await.unwrap();
        assert_eq!(got.get("t").and_then(Value::as_str), Some("a\nb"));
        x.tx.close().await;
        assert_eq!(y.rx.recv().await.unwrap_err(), ChannelError::Closed);
    }

    #[tokio::test]
    async fn a_pumped_channel_answers_pings_while_nobody_reads() {
        let (a, mut b) = Channel::memory_pair();
        let a = a.pumped();
        b.tx.send_raw(r#"{"_sys":"ping","probe_id":"p-1","ts":1.0}"#.into())
            .await
            .unwrap();
        b.tx.send_raw(r#"{"_sys":"pong","probe_id":"q-1"}"#.into())
            .await
            .unwrap();
        b.tx.send_raw(r#"{"action":"move"}"#.into()).await.unwrap();
        // The engine side has not called recv, yet the pong is already there.
        let pong = b.rx.rx.recv_line().await.unwrap();
        assert_eq!(pong, r#"{"_sys":"pong","probe_id":"p-1"}"#);
        let mut a = a;
        let got = a.rx.recv().await.unwrap();
        assert_eq!(got.get("action").and_then(Value::as_str), Some("move"));
        assert_eq!(a.rx.liveness.pongs(), 1);
        b.tx.close().await;
        assert_eq!(a.rx.recv().await.unwrap_err(), ChannelError::Closed);
    }

    #[tokio::test]
    async fn oversized_frames_are_refused() {
        let (mut a, b) = Channel::memory_pair();
        let big = format!("{{\"t\":\"{}\"}}", "x".repeat(MAX_FRAME_BYTES));
        b.tx.send_raw(big).await.unwrap();
        assert!(matches!(a.rx.recv().await, Err(ChannelError::Oversized(_))));
    }
}
