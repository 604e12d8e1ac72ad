//! Peer-to-peer transport: iroh 0.35 endpoints speaking ALPN `/agent-chat/1`,
//! one bidirectional QUIC stream of newline-delimited JSON per session, and
//! the `_session_*` handshake that binds the stream to a signed session proof.

pub mod handshake;

use crate::engine::Channel;
use iroh::endpoint::{Connection, SendStream};
use iroh::{Endpoint, NodeAddr, RelayMap, RelayMode, RelayUrl};
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
    /// A relay URL that is not one (from a flag, the environment or config.toml).
    #[error("bad relay URL {url:?}: {msg}")]
    RelayUrl { url: String, msg: String },
    /// None of the chosen relays could be reached, or the endpoint took
    /// none of them as its home.
    #[error("no relay reachable: {0}")]
    Relay(String),
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
    bind_via(reach, &[], bind).await
}

/// How long a chosen relay may take to accept a TCP connection, and the
/// endpoint to take one of them as its home relay.
pub const RELAY_WAIT: Duration = Duration::from_secs(10);

/// Parses a relay URL given by a user: `http://` or `https://`, a host, no
/// credentials, query or fragment (iroh dials `<url>/relay`).
pub fn parse_relay_url(text: &str) -> Result<RelayUrl, NetError> {
    let bad = |msg: &str| NetError::RelayUrl {
        url: text.to_owned(),
        msg: msg.to_owned(),
    };
    let url: RelayUrl = text.trim().parse().map_err(|e| bad(&format!("{e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("credentials in a relay URL are not supported"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("a relay URL takes no query or fragment"));
    }
    Ok(url)
}

/// Binds an endpoint like [`bind`]. With `Reach::Relay` and `relays` named,
/// those relays replace n0's and no discovery service runs (the ticket
/// carries the relay URL and the direct addresses, so none is needed, and
/// nothing waits on n0's DNS offline). Before binding, at least one of them
/// must accept a TCP connection within [`RELAY_WAIT`]; after binding, the
/// endpoint must take one as its home relay within [`RELAY_WAIT`], so its
/// ticket names it. `Reach::Direct` ignores `relays`.
pub async fn bind_via(
    reach: Reach,
    relays: &[RelayUrl],
    bind: Option<SocketAddrV4>,
) -> Result<Endpoint, NetError> {
    let custom = reach == Reach::Relay && !relays.is_empty();
    if custom {
        reachable(relays, RELAY_WAIT).await?;
    }
    let mut b = Endpoint::builder()
        .alpns(vec![ALPN.to_vec()])
        .transport_config(transport());
    b = match reach {
        Reach::Relay if custom => b.relay_mode(RelayMode::Custom(
            relays.iter().cloned().collect::<RelayMap>(),
        )),
        Reach::Relay => b.discovery_n0(),
        Reach::Direct => b.relay_mode(RelayMode::Disabled),
    };
    b = b.bind_addr_v4(bind.unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)));
    let ep = b
        .bind()
        .await
        .map_err(|e| NetError::Bind(format!("{e:#}")))?;
    if custom {
        let home = tokio::time::timeout(RELAY_WAIT, ep.home_relay().initialized()).await;
        if !matches!(home, Ok(Ok(_))) {
            ep.close().await;
            return Err(NetError::Relay(format!(
                "the endpoint took none of {} as its home relay within {RELAY_WAIT:?}",
                list(relays)
            )));
        }
    }
    Ok(ep)
}

/// iroh's transport settings (a keep-alive every second), and the peer
/// asked to acknowledge every tenth packet instead of every second one
/// (the QUIC ACK-frequency extension; a peer without it ignores the ask).
/// A session's frames go back and forth and carry the acknowledgements
/// anyway: the lone ACK packets only woke the other side for nothing.
fn transport() -> iroh::endpoint::TransportConfig {
    let mut t = iroh::endpoint::TransportConfig::default();
    t.keep_alive_interval(Some(std::time::Duration::from_secs(1)));
    let mut ack = iroh::endpoint::AckFrequencyConfig::default();
    ack.ack_eliciting_threshold(iroh::endpoint::VarInt::from_u32(9));
    t.ack_frequency_config(Some(ack));
    t
}

fn list(relays: &[RelayUrl]) -> String {
    relays
        .iter()
        .map(|u| u.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Succeeds when at least one relay accepts a TCP connection within `wait`
/// (all are tried at once); otherwise says why each failed.
pub async fn reachable(relays: &[RelayUrl], wait: Duration) -> Result<(), NetError> {
    async fn one(url: &RelayUrl) -> Result<(), String> {
        // iroh adds a root dot to a domain; the system resolver may not
        // know `localhost.`.
        let host = url
            .host_str()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .trim_end_matches('.');
        let port = url
            .port_or_known_default()
            .ok_or_else(|| "no port".to_owned())?;
        let addrs: Vec<_> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .collect();
        let mut last = format!("{host} resolves to no address");
        for a in addrs {
            match tokio::net::TcpStream::connect(a).await {
                Ok(_) => return Ok(()),
                Err(e) => last = format!("{a}: {e}"),
            }
        }
        Err(last)
    }
    let tries = relays.iter().map(|u| async move {
        match tokio::time::timeout(wait, one(u)).await {
            Ok(r) => r,
            Err(_) => Err(format!("no TCP connection within {wait:?}")),
        }
    });
    let results = futures_util::future::join_all(tries).await;
    if results.iter().any(Result::is_ok) {
        return Ok(());
    }
    Err(NetError::Relay(
        relays
            .iter()
            .zip(results)
            .map(|(u, r)| format!("{u}: {}", r.err().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("; "),
    ))
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

    /// Ends the session's stream and connection so that neither side's last
    /// frames are lost.
    ///
    /// With a `grace` above zero this side sent the session's last frame and
    /// the peer may not have read it yet: it first lets the peer read it and
    /// leave first, for at most `grace` (the reference client treats an end
    /// of stream that comes right after its peer's final frame as a
    /// disconnect, even though the frame has arrived). With zero it does not
    /// wait for the peer.
    ///
    /// Then, unless the peer has closed already, it finishes the send stream
    /// and waits (at most [`ACK_WAIT`]) until the peer has acknowledged every
    /// byte of it: a QUIC close discards stream data that is still in
    /// flight, so closing at once could cut a frame this side sent just
    /// before it read the peer's last one (two receipts crossing at the end
    /// of a card match). Data the peer's transport has acknowledged stays
    /// readable there after the close. Finally it closes the connection and
    /// returns once the close has gone out to the peer (at most
    /// [`CLOSE_FLUSH`] later), so the peer learns of it even if this process
    /// exits next.
    pub async fn finish(self, grace: Duration) {
        if !grace.is_zero() {
            let _ = tokio::time::timeout(grace, self.conn.closed()).await;
        }
        if self.conn.close_reason().is_some() {
            // Closed by the peer (or lost): nothing is left to tell it.
            return;
        }
        if let Some(mut s) = self.parked_stream().await
            && s.finish().is_ok()
        {
            let acked = async {
                tokio::select! {
                    _ = s.stopped() => {}
                    _ = self.conn.closed() => {}
                }
            };
            let _ = tokio::time::timeout(ACK_WAIT, acked).await;
        }
        if self.conn.close_reason().is_some() {
            return;
        }
        let before = self.conn.stats().udp_tx.datagrams;
        self.conn.close(0u32.into(), b"done");
        // The connection's driver sends the CONNECTION_CLOSE as its next
        // datagram; wait for it rather than for the endpoint's drain.
        let sent = async {
            while self.conn.stats().udp_tx.datagrams == before {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        let _ = tokio::time::timeout(CLOSE_FLUSH, sent).await;
    }

    /// The session's send stream, once the channel's last sender is gone
    /// (a task that held one, aborted just before, is dropped on the
    /// runtime's next turn): waits at most [`PARK_WAIT`] for it.
    async fn parked_stream(&self) -> Option<SendStream> {
        let start = tokio::time::Instant::now();
        loop {
            match self.parked.lock() {
                Ok(mut slot) => {
                    if let Some(s) = slot.take() {
                        return Some(s);
                    }
                }
                Err(_) => return None,
            }
            if start.elapsed() >= PARK_WAIT {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// How long [`Link::finish`] waits for the peer to acknowledge the last of
/// this side's stream before it closes the connection anyway.
pub const ACK_WAIT: Duration = Duration::from_millis(500);

/// How long [`Link::finish`] waits for the channel's senders to be dropped.
pub const PARK_WAIT: Duration = Duration::from_millis(50);

/// Closes an endpoint without waiting for its drain: every connection is
/// told to close now (a session's own was closed by [`Link::finish`], its
/// close already sent), and the rest of the shutdown (the drain of three
/// probe timeouts, ~0.2 s even on loopback, and the endpoint's tasks) goes
/// on in the background, or ends with the runtime.
pub async fn close(ep: Endpoint) {
    let mut closing = Box::pin(async move { ep.close().await });
    // The first poll closes every connection; the drain comes after it.
    if tokio::time::timeout(Duration::ZERO, &mut closing)
        .await
        .is_err()
    {
        tokio::spawn(closing);
    }
}

/// How long [`Link::finish`] waits for its connection close to go out.
pub const CLOSE_FLUSH: Duration = Duration::from_millis(50);

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

/// How long an accepted connection may take to open its session stream.
pub const STREAM_WAIT: Duration = Duration::from_secs(10);

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
            match establish(incoming).await {
                Ok(x) => return Ok(x),
                Err(e) => failed(e),
            }
        }
    };
    tokio::time::timeout(wait, fut)
        .await
        .map_err(|_| NetError::Timeout(wait))?
}

/// Takes one incoming connection to its session stream: the QUIC handshake,
/// then the bidirectional stream the guest opens within [`STREAM_WAIT`]. A
/// peer that connects but opens no stream (or leaves at once) is one failed
/// attempt, said in the error, not the end of waiting.
pub async fn establish(incoming: iroh::endpoint::Incoming) -> Result<(Link, Channel), String> {
    let conn = match incoming.accept() {
        Ok(connecting) => connecting
            .await
            .map_err(|e| format!("a connection attempt failed: {e}"))?,
        Err(e) => return Err(format!("a connection attempt was refused: {e}")),
    };
    let (send, recv) = match tokio::time::timeout(STREAM_WAIT, conn.accept_bi()).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("a peer connected but opened no stream: {e}")),
        Err(_) => {
            conn.close(1u32.into(), b"no stream");
            return Err(format!(
                "a peer connected but opened no stream within {STREAM_WAIT:?}"
            ));
        }
    };
    let (link, send) = Link::new(conn, send);
    Ok((link, Channel::from_stream(recv, send).pumped()))
}

/// Dials a ticket and opens the session stream.
pub async fn connect(ep: &Endpoint, ticket: &str) -> Result<(Link, Channel), NetError> {
    connect_within(ep, ticket, Duration::from_secs(30)).await
}

/// Dials a ticket, giving up after `wait` (a peer that may be gone).
pub async fn connect_within(
    ep: &Endpoint,
    ticket: &str,
    wait: Duration,
) -> Result<(Link, Channel), NetError> {
    let addr = parse_ticket(ticket)?;
    let node = addr.node_id.fmt_short();
    let err = |e: String| NetError::Connect {
        node: node.clone(),
        msg: e,
    };
    let conn = tokio::time::timeout(wait, ep.connect(addr.clone(), ALPN))
        .await
        .map_err(|_| err(format!("no answer within {wait:?}")))?
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
        let tag = hex::encode(rand::random::<[u8; 4]>());
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
                // A ping the transport cannot take now (the peer is not
                // reading) is skipped; silence is reported below.
                if tx
                    .try_send(&crate::json::Value::Object(ping))
                    .await
                    .is_err()
                {
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
