//! Peer-to-peer transport: iroh 0.35 endpoints speaking ALPN `/agent-chat/1`,
//! one bidirectional QUIC stream of newline-delimited JSON per session, and
//! the `_session_*` handshake that binds the stream to a signed session proof.

pub mod handshake;

use crate::engine::Channel;
use iroh::endpoint::{Connection, SendStream};
use iroh::{Endpoint, NodeAddr, RelayMode};
use iroh_base::ticket::NodeTicket;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWrite;

/// The ALPN every reference session uses.
pub const ALPN: &[u8] = b"/agent-chat/1";

/// Why the transport failed.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("iroh endpoint: {0}")]
    Bind(String),
    #[error("bad iroh ticket {ticket:.24}…: {msg}")]
    Ticket { ticket: String, msg: String },
    #[error("connecting to {node}: {msg}")]
    Connect { node: String, msg: String },
    #[error("accepting a peer: {0}")]
    Accept(String),
    #[error("no peer connected within {0:?}")]
    Timeout(Duration),
}

/// How an endpoint reaches peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// n0's relays and DNS discovery, as the reference client does: works
    /// across networks.
    Relay,
    /// Direct addresses only (a LAN, one machine, tests).
    Direct,
}

/// Binds an endpoint; with `Reach::Direct` on `bind` (default: all v4 interfaces).
pub async fn bind(reach: Reach, bind: Option<SocketAddrV4>) -> Result<Endpoint, NetError> {
    let mut b = Endpoint::builder().alpns(vec![ALPN.to_vec()]);
    b = match reach {
        Reach::Relay => b.discovery_n0(),
        Reach::Direct => b.relay_mode(RelayMode::Disabled),
    };
    b = b.bind_addr_v4(bind.unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)));
    b.bind().await.map_err(|e| NetError::Bind(format!("{e:#}")))
}

/// The endpoint's ticket (`node…`, the reference's NodeTicket format): its
/// node id, home relay when it has one, and direct addresses.
pub async fn ticket(ep: &Endpoint) -> String {
    let addr = match tokio::time::timeout(Duration::from_secs(5), ep.node_addr()).await {
        Ok(Ok(a)) if !a.direct_addresses.is_empty() || a.relay_url.is_some() => a,
        _ => {
            let (v4, v6) = ep.bound_sockets();
            let local = |a: std::net::SocketAddr| {
                if a.ip().is_unspecified() {
                    std::net::SocketAddr::new(Ipv4Addr::LOCALHOST.into(), a.port())
                } else {
                    a
                }
            };
            NodeAddr::new(ep.node_id()).with_direct_addresses(std::iter::once(local(v4)).chain(v6))
        }
    };
    NodeTicket::new(addr).to_string()
}

/// Parses a ticket into the address to dial.
pub fn parse_ticket(ticket: &str) -> Result<NodeAddr, NetError> {
    ticket
        .trim()
        .parse::<NodeTicket>()
        .map(|t| t.node_addr().clone())
        .map_err(|e| NetError::Ticket {
            ticket: ticket.to_owned(),
            msg: e.to_string(),
        })
}

/// A live session stream: keep it while the channel is in use.
pub struct Link {
    pub conn: Connection,
    parked: Arc<Mutex<Option<SendStream>>>,
}

impl Link {
    fn new(conn: Connection, send: SendStream) -> (Link, Parked) {
        let parked = Arc::new(Mutex::new(None));
        (
            Link {
                conn,
                parked: parked.clone(),
            },
            Parked {
                inner: Some(send),
                slot: parked,
            },
        )
    }

    /// Lets the peer read the last frames and leave first (the reference
    /// client treats an early end of stream as a disconnect, even after its
    /// final frame), then finishes the stream and closes the connection.
    pub async fn finish(self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.conn.closed()).await;
        let send = self.parked.lock().ok().and_then(|mut s| s.take());
        if let Some(mut s) = send {
            let _ = s.finish();
        }
        self.conn.close(0u32.into(), b"done");
    }
}

/// The session's send stream as the channel sees it: shutting it down only
/// flushes, and dropping it parks the stream in its [`Link`], so the stream
/// stays open until [`Link::finish`].
struct Parked {
    inner: Option<SendStream>,
    slot: Arc<Mutex<Option<SendStream>>>,
}

impl Parked {
    fn stream(&mut self) -> std::io::Result<Pin<&mut SendStream>> {
        self.inner
            .as_mut()
            .map(Pin::new)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stream parked"))
    }
}

impl AsyncWrite for Parked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.stream() {
            Ok(s) => AsyncWrite::poll_write(s, cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(s) => AsyncWrite::poll_flush(s, cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(cx)
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        if let (Some(s), Ok(mut slot)) = (self.inner.take(), self.slot.lock()) {
            *slot = Some(s);
        }
    }
}

/// Waits for one peer and its bidirectional stream (the guest writes first).
/// Failed connection attempts are told to `failed` and waiting goes on.
pub async fn accept(
    ep: &Endpoint,
    wait: Duration,
    failed: &(dyn Fn(String) + Send + Sync),
) -> Result<(Link, Channel), NetError> {
    let fut = async {
        loop {
            let incoming = ep
                .accept()
                .await
                .ok_or_else(|| NetError::Accept("endpoint closed".into()))?;
            let conn = match incoming.accept() {
                Ok(connecting) => match connecting.await {
                    Ok(c) => c,
                    Err(e) => {
                        failed(format!("a connection attempt failed: {e}"));
                        continue;
                    }
                },
                Err(e) => {
                    failed(format!("a connection attempt was refused: {e}"));
                    continue;
                }
            };
            let (send, recv) = conn
                .accept_bi()
                .await
                .map_err(|e| NetError::Accept(e.to_string()))?;
            let (link, send) = Link::new(conn, send);
            return Ok((link, Channel::from_stream(recv, send).pumped()));
        }
    };
    tokio::time::timeout(wait, fut)
        .await
        .map_err(|_| NetError::Timeout(wait))?
}

/// Dials a ticket and opens the session stream.
pub async fn connect(ep: &Endpoint, ticket: &str) -> Result<(Link, Channel), NetError> {
    let addr = parse_ticket(ticket)?;
    let node = addr.node_id.fmt_short();
    let err = |e: String| NetError::Connect {
        node: node.clone(),
        msg: e,
    };
    let conn = tokio::time::timeout(Duration::from_secs(30), ep.connect(addr.clone(), ALPN))
        .await
        .map_err(|_| err("no answer within 30 s".into()))?
        .map_err(|e| err(format!("{e:#}")))?;
    let (send, recv) = conn.open_bi().await.map_err(|e| err(e.to_string()))?;
    let (link, send) = Link::new(conn, send);
    Ok((link, Channel::from_stream(recv, send).pumped()))
}

/// Sends `_sys` pings every `interval` after the handshake and reports a
/// peer silent for `timeout` (`peer_unresponsive`) and its return
/// (`peer_resumed`) through `emit`. Like the reference, silence never ends
/// the session by itself. Stops when the channel is closed; abort it when
/// the session ends.
pub fn heartbeat(
    tx: crate::engine::Sender,
    live: std::sync::Arc<crate::engine::Liveness>,
    interval: Duration,
    timeout: Duration,
    emit: impl Fn(&'static str, crate::json::Map) + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let tag = crate::canonical::hex(&rand::random::<[u8; 4]>());
        let check = interval
            .min(Duration::from_secs(1))
            .max(Duration::from_millis(5));
        let (mut seq, mut down, mut since_ping) = (0u64, false, Duration::ZERO);
        loop {
            tokio::time::sleep(check).await;
            since_ping += check;
            if since_ping >= interval {
                since_ping = Duration::ZERO;
                seq += 1;
                let ping = crate::obj! { "_sys" => "ping", "probe_id" => format!("{tag}-{seq:x}"), "ts" => crate::session::files::epoch_now() };
                if tx.send(&crate::json::Value::Object(ping)).await.is_err() {
                    return;
                }
            }
            let silent = live.silent_for();
            if !down && silent >= timeout {
                down = true;
                emit(
                    "peer_unresponsive",
                    crate::obj! { "silent_seconds" => silent.as_secs_f64(), "pongs" => live.pongs() as i64 },
                );
            } else if down && silent < timeout {
                down = false;
                emit(
                    "peer_resumed",
                    crate::obj! { "pongs" => live.pongs() as i64 },
                );
            }
        }
    })
}
