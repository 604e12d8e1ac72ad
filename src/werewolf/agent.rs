//! The agent side: the decision hook ([`Decider`]: a bot, or a channel a
//! console prompt answers) over a seat's [`View`], the safe fallback, and
//! the WebSocket client loop behind `palaver wolf join`.

use super::WolfError;
use super::bot::Bot;
use super::packet::{Packet, Request};
use super::view::View;
use crate::engine::ControlMode;
use futures_util::{SinkExt, StreamExt};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use std::future::Future;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// How long before the announced deadline a seat answers at the latest:
/// a fifth of the action timeout, at most 5 s.
pub fn safety_margin(action: Duration) -> Duration {
    (action / 5).min(Duration::from_secs(5))
}

/// The answer sent when nobody decided in time: never loses the seat.
/// TALK/WHISPER: `Skip` while skips remain, else `Over`; targets: a random
/// alive other agent (not a fellow wolf when attacking).
pub fn fallback(view: &View, request: Request, rng: &mut StdRng) -> String {
    match request {
        Request::Talk | Request::Whisper => {
            if view.remain_skip.unwrap_or(0) > 0 {
                "Skip".into()
            } else {
                "Over".into()
            }
        }
        _ => {
            let wolves = view.wolves();
            let pool: Vec<String> = view
                .alive()
                .into_iter()
                .filter(|n| *n != view.me && !(request == Request::Attack && wolves.contains(n)))
                .collect();
            pool.choose(rng).cloned().unwrap_or_else(|| view.me.clone())
        }
    }
}

/// The decision hook. `observe` sees every packet (after the view was
/// updated); `decide` answers a reply-needing request — the caller sends
/// the safe fallback if it returns None or misses `deadline`; `chat` may
/// post in a group-chat phase.
pub trait Decider: Send {
    fn observe(&mut self, _view: &View, _packet: &Packet) {}
    fn decide(
        &mut self,
        view: &View,
        packet: &Packet,
        deadline: Instant,
    ) -> impl Future<Output = Option<String>> + Send;
    fn chat(&mut self, _view: &View, _packet: &Packet) -> Option<String> {
        None
    }
}

/// The rule-based bot as a decider.
pub struct BotDecider(pub Bot);

impl Decider for BotDecider {
    fn observe(&mut self, view: &View, packet: &Packet) {
        self.0.observe(view, packet);
    }
    fn decide(
        &mut self,
        view: &View,
        packet: &Packet,
        _deadline: Instant,
    ) -> impl Future<Output = Option<String>> + Send {
        let answer = self.0.decide(view, packet.request);
        std::future::ready(Some(answer))
    }
    fn chat(&mut self, view: &View, packet: &Packet) -> Option<String> {
        self.0.chat(view, packet)
    }
}

/// One decision a person is asked for (human and hybrid modes).
#[derive(Debug)]
pub struct DecisionRequest {
    pub request: Request,
    /// The seat's view when asked (history, results, remain_*).
    pub view: View,
    /// The bot's proposal (hybrid mode).
    pub proposal: Option<String>,
    /// Answer before this instant; afterwards the proposal (hybrid) or the
    /// safe fallback (human) is sent.
    pub deadline: Instant,
    /// Where the answer goes (text, `Skip`, `Over`, or a target name).
    pub answer: oneshot::Sender<String>,
}

/// A decider driven by a channel (a console prompt on the other end).
pub struct ChannelDecider {
    tx: mpsc::Sender<DecisionRequest>,
    bot: Option<Bot>,
}

impl ChannelDecider {
    /// `mode` Human: no proposals; Hybrid: the bot seeded `seed` proposes.
    /// Autonomous is served by [`BotDecider`]; here it behaves as Hybrid.
    pub fn new(mode: ControlMode, seed: u64) -> (ChannelDecider, mpsc::Receiver<DecisionRequest>) {
        let (tx, rx) = mpsc::channel(4);
        let bot = (mode != ControlMode::Human).then(|| Bot::new(seed));
        (ChannelDecider { tx, bot }, rx)
    }
}

impl Decider for ChannelDecider {
    fn observe(&mut self, view: &View, packet: &Packet) {
        if let Some(b) = &mut self.bot {
            b.observe(view, packet);
        }
    }
    fn decide(
        &mut self,
        view: &View,
        packet: &Packet,
        deadline: Instant,
    ) -> impl Future<Output = Option<String>> + Send {
        let proposal = self.bot.as_mut().map(|b| b.decide(view, packet.request));
        let (answer, rx) = oneshot::channel();
        let req = DecisionRequest {
            request: packet.request,
            view: view.clone(),
            proposal: proposal.clone(),
            deadline,
            answer,
        };
        let tx = self.tx.clone();
        async move {
            if tx.send(req).await.is_err() {
                return proposal;
            }
            match tokio::time::timeout_at(deadline, rx).await {
                Ok(Ok(a)) => Some(a),
                _ => proposal,
            }
        }
    }
}

/// Options of `palaver wolf join`.
#[derive(Debug, Clone)]
pub struct JoinOptions {
    pub url: String,
    /// The connection name answered to NAME, e.g. `team1`.
    pub name: String,
    pub token: Option<String>,
    pub seed: u64,
}

/// What a client saw of its game.
#[derive(Debug, Clone, Default)]
pub struct ClientReport {
    pub view: View,
    pub packets: usize,
    pub answered: usize,
    pub fallbacks: usize,
    pub finished: bool,
    /// Every text frame received, verbatim (for conformance checks).
    pub frames: Vec<String>,
}

/// How long `join` waits for the server and how much it takes from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JoinLimits {
    /// TCP connect plus the WebSocket upgrade.
    pub connect: Duration,
    /// The longest silence from the server (the waiting room included).
    pub idle: Duration,
    /// The largest packet accepted, in bytes.
    pub max_packet: usize,
}

impl Default for JoinLimits {
    /// 30 s to connect, 10 minutes of silence, 4 MiB packets.
    fn default() -> Self {
        JoinLimits {
            connect: Duration::from_secs(30),
            idle: Duration::from_secs(600),
            max_packet: crate::limits::WOLF_MAX_PACKET_BYTES,
        }
    }
}

/// Bytes of received frames a [`ClientReport`] keeps verbatim; later
/// frames are counted but not kept.
const REPORT_FRAME_BYTES: usize = 32 << 20;

/// Up to 80 characters of `s`, for quoting a peer's text in an error.
fn excerpt(s: &str) -> String {
    let mut out: String = s.chars().take(80).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    format!("{out:?}")
}

/// Parses one server packet the way `palaver wolf join` does and checks
/// what the client relies on: a known request kind, `info` on everything
/// but NAME, and every number it computes with (day, remain counts and
/// lengths, the setting's counts, lengths and timeouts) inside
/// [`crate::limits`]. Unknown keys are ignored.
pub fn decode_packet(text: &str) -> Result<Packet, WolfError> {
    let p = match Packet::from_json(text) {
        Ok(p) => p,
        Err(e) => {
            // Name an unknown request kind rather than serde's variant list.
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(text)
                && let Some(r) = v.get("request")
            {
                let known = serde_json::from_value::<Request>(r.clone()).is_ok();
                if !known {
                    let kind = match r.as_str() {
                        Some(k) => excerpt(k),
                        None => excerpt(&r.to_string()),
                    };
                    return Err(WolfError::Protocol(format!("unknown request kind {kind}")));
                }
            }
            return Err(WolfError::Protocol(format!(
                "undecodable packet {}: {e}",
                excerpt(text)
            )));
        }
    };
    check_packet(&p)?;
    Ok(p)
}

/// The range checks of [`decode_packet`] on a parsed packet.
pub fn check_packet(p: &Packet) -> Result<(), WolfError> {
    use crate::limits::{
        Count, WOLF_AGENTS, WOLF_DAYS, WOLF_PACKET_TIMEOUT_MS, WOLF_TALK_COUNT, WOLF_TALK_LENGTH,
        WOLF_VOTE_ROUNDS,
    };
    let bad = |e: crate::limits::LimitError| {
        WolfError::Protocol(format!("{} packet: {e}", p.request.as_str()))
    };
    // FINISH after the last day carries the day after it.
    let day = Count {
        field: "day",
        min: 0,
        max: WOLF_DAYS.max + 1,
    };
    if p.request != Request::Name && p.info.is_none() {
        return Err(WolfError::Protocol(format!(
            "{} packet without info",
            p.request.as_str()
        )));
    }
    if let Some(i) = &p.info {
        day.check_as("info.day", i.day).map_err(bad)?;
        if let Some(n) = i.remain_count {
            WOLF_TALK_COUNT
                .check_as("info.remain_count", n)
                .map_err(bad)?;
        }
        if let Some(n) = i.remain_skip {
            WOLF_TALK_COUNT
                .check_as("info.remain_skip", n)
                .map_err(bad)?;
        }
        if let Some(n) = i.remain_length {
            WOLF_TALK_LENGTH
                .check_as("info.remain_length", n)
                .map_err(bad)?;
        }
    }
    if let Some(s) = &p.setting {
        WOLF_AGENTS
            .check_as("setting.agent_count", s.agent_count)
            .map_err(bad)?;
        if let Some(d) = s.max_day {
            WOLF_DAYS.check_as("setting.max_day", d).map_err(bad)?;
        }
        for (what, t) in [("talk", &s.talk), ("whisper", &s.whisper)] {
            let counts = [
                ("max_count.per_agent", Some(t.max_count.per_agent)),
                ("max_count.per_day", Some(t.max_count.per_day)),
                ("max_skip", Some(t.max_skip)),
            ];
            for (k, v) in counts {
                if let Some(v) = v {
                    WOLF_TALK_COUNT
                        .check_as(&format!("setting.{what}.{k}"), v)
                        .map_err(bad)?;
                }
            }
            let m = &t.max_length;
            let lengths = [
                ("per_talk", m.per_talk),
                ("mention_length", m.mention_length),
                ("per_agent", m.per_agent),
                ("base_length", m.base_length),
            ];
            for (k, v) in lengths {
                if let Some(v) = v {
                    WOLF_TALK_LENGTH
                        .check_as(&format!("setting.{what}.max_length.{k}"), v)
                        .map_err(bad)?;
                }
            }
            if let Some(d) = t.duration {
                WOLF_PACKET_TIMEOUT_MS
                    .check_as(&format!("setting.{what}.duration"), d)
                    .map_err(bad)?;
            }
        }
        // 0 is the official library's default for an absent count: not told.
        for (k, v) in [
            ("setting.vote.max_count", s.vote.max_count),
            ("setting.attack_vote.max_count", s.attack_vote.max_count),
        ] {
            if v != 0 {
                WOLF_VOTE_ROUNDS.check_as(k, v).map_err(bad)?;
            }
        }
        WOLF_PACKET_TIMEOUT_MS
            .check_as("setting.timeout.action", s.timeout.action)
            .map_err(bad)?;
        WOLF_PACKET_TIMEOUT_MS
            .check_as("setting.timeout.response", s.timeout.response)
            .map_err(bad)?;
        for (r, n) in &s.role_num_map {
            Count {
                field: "setting.role_num_map",
                min: 0,
                max: WOLF_AGENTS.max,
            }
            .check_as(&format!("setting.role_num_map.{}", r.as_str()), *n)
            .map_err(bad)?;
        }
    }
    Ok(())
}

/// One step of the client for a packet: what to send back right away and
/// whether a decision is needed. Pure; [`join`] does the I/O around it.
#[derive(Debug)]
pub struct ClientSeat {
    pub view: View,
    in_chat: bool,
    pub finished: bool,
    rng: StdRng,
}

/// What [`ClientSeat::handle`] asks the caller to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing to send.
    Quiet,
    /// Answer NAME with the connection name.
    Name,
    /// Send this group-chat message (no decision).
    Chat(String),
    /// A reply-needing request: decide (by `deadline`) and send one answer.
    Decide { deadline: Duration },
}

impl ClientSeat {
    /// A seat before any packet; `seed` drives the fallback's choices.
    pub fn new(seed: u64) -> ClientSeat {
        ClientSeat {
            view: View::default(),
            in_chat: false,
            finished: false,
            rng: StdRng::seed_from_u64(seed ^ 0x5eed),
        }
    }

    /// The safe answer to `request` when nobody decided in time.
    pub fn fallback(&mut self, request: Request) -> String {
        fallback(&self.view, request, &mut self.rng)
    }

    /// Folds one decoded packet in and says what to do. A packet that makes
    /// the game implausible (more than [`crate::limits::WOLF_MAX_TALKS`]
    /// talks) is an error.
    pub fn handle<D: Decider>(
        &mut self,
        packet: &Packet,
        decider: &mut D,
    ) -> Result<Step, WolfError> {
        if packet.request == Request::Name {
            return Ok(Step::Name);
        }
        self.view.update(packet);
        let talks = self.view.talks.len() + self.view.whispers.len();
        if talks > crate::limits::WOLF_MAX_TALKS {
            return Err(WolfError::Protocol(format!(
                "the server sent more than {} talks and whispers in one game",
                crate::limits::WOLF_MAX_TALKS
            )));
        }
        decider.observe(&self.view, packet);
        match packet.request {
            Request::TalkPhaseStart | Request::WhisperPhaseStart => self.in_chat = true,
            Request::TalkPhaseEnd | Request::WhisperPhaseEnd => self.in_chat = false,
            Request::Finish => self.finished = true,
            _ => {}
        }
        if self.in_chat
            && matches!(
                packet.request,
                Request::TalkPhaseStart
                    | Request::WhisperPhaseStart
                    | Request::TalkBroadcast
                    | Request::WhisperBroadcast
            )
            && let Some(msg) = decider.chat(&self.view, packet)
        {
            return Ok(Step::Chat(msg));
        }
        if !packet.request.needs_reply() {
            return Ok(Step::Quiet);
        }
        let action = self.view.action_timeout();
        Ok(Step::Decide {
            deadline: action.saturating_sub(safety_margin(action)),
        })
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A read or write error of the socket, said plainly.
fn ws_error(e: tokio_tungstenite::tungstenite::Error, max: usize) -> WolfError {
    use tokio_tungstenite::tungstenite::Error as E;
    use tokio_tungstenite::tungstenite::error::CapacityError;
    match e {
        E::Capacity(CapacityError::MessageTooLong { size, .. }) => WolfError::Protocol(format!(
            "the server sent a {size}-byte frame; packets are limited to {max} bytes"
        )),
        E::Capacity(c) => WolfError::Protocol(format!("the server sent too much: {c}")),
        E::Protocol(
            tokio_tungstenite::tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
        ) => WolfError::Connection(
            "the server closed the connection before FINISH, without a close frame".into(),
        ),
        e => WolfError::Connection(e.to_string()),
    }
}

/// Why the WebSocket upgrade failed. tungstenite reads the server's
/// answer to the upgrade into at most 64 KiB (in at most 512 reads) and
/// calls anything past that an attack; say so in words.
fn handshake_error(url: &str, e: tokio_tungstenite::tungstenite::Error) -> WolfError {
    use tokio_tungstenite::tungstenite::Error as E;
    match e {
        E::AttackAttempt => WolfError::Protocol(format!(
            "{url}: the server's answer to the WebSocket upgrade is over 64 KiB \
             (or came in too many pieces)"
        )),
        e => WolfError::Connection(format!("{url}: {e}")),
    }
}

/// Whether a read error is the peer going away without a close frame.
fn is_reset(e: &tokio_tungstenite::tungstenite::Error) -> bool {
    use tokio_tungstenite::tungstenite::Error as E;
    use tokio_tungstenite::tungstenite::error::ProtocolError;
    match e {
        E::Protocol(ProtocolError::ResetWithoutClosingHandshake) => true,
        E::ConnectionClosed | E::AlreadyClosed => true,
        E::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof
        ),
        _ => false,
    }
}

/// Sends our close frame and reads until the server's close, the end of
/// the stream or [`CLOSE_WAIT`]; errors here change nothing (the game is
/// over).
async fn close_after_finish(ws: &mut Ws) {
    let _ = tokio::time::timeout(CLOSE_WAIT, async {
        if ws.close(None).await.is_err() {
            return;
        }
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}

async fn send_text(ws: &mut Ws, text: &str, limits: &JoinLimits) -> Result<(), WolfError> {
    let sent = tokio::time::timeout(
        limits.idle,
        ws.send(tokio_tungstenite::tungstenite::Message::text(text)),
    )
    .await
    .map_err(|_| {
        WolfError::Connection(format!(
            "the server took no data for {} s",
            limits.idle.as_secs_f64()
        ))
    })?;
    sent.map_err(|e| ws_error(e, limits.max_packet))
}

/// Connects and plays one game with the default [`JoinLimits`].
pub async fn join<D: Decider>(
    opts: &JoinOptions,
    decider: &mut D,
) -> Result<ClientReport, WolfError> {
    join_with(opts, &JoinLimits::default(), decider).await
}

/// Seconds after the NAME answer within which a close with no game means
/// the server refused the token (servers check it right after NAME).
const TOKEN_CHECK: Duration = Duration::from_secs(5);

/// How long the client waits for the server's half of the closing
/// handshake after FINISH.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// The team a connection name belongs to (trailing digits dropped).
fn team_of(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// The error for a connection the server ended before the game began:
/// no NAME at all, the token refused (a token was sent and the connection
/// closed within [`TOKEN_CHECK`] of the NAME answer, with no reason or one
/// about authentication), or closed in the waiting room. `close` is the
/// close frame's code and reason, None when it closed without one.
fn closed_before_game(
    opts: &JoinOptions,
    named: Option<Instant>,
    close: Option<(u16, String)>,
) -> WolfError {
    let how = match &close {
        Some((code, r)) if r.is_empty() => format!(" (close code {code})"),
        Some((code, r)) => format!(" (close code {code}: {})", excerpt(r).trim_matches('"')),
        None => " without a close frame".to_owned(),
    };
    let Some(at) = named else {
        return WolfError::Connection(format!(
            "the server closed the connection before asking for a name{how}"
        ));
    };
    let about_auth = close.as_ref().is_none_or(|(_, r)| {
        let r = r.to_lowercase();
        r.is_empty() || r.contains("auth") || r.contains("token")
    });
    if opts.token.is_some() && about_auth && at.elapsed() <= TOKEN_CHECK {
        return WolfError::Auth(format!(
            "the server refused the token: it closed the connection right after NAME{how}; \
             check --token / AIWOLF_TOKEN (a PLAYER token for team {:?}, signed with the \
             server's secret)",
            team_of(&opts.name)
        ));
    }
    let hint = if opts.token.is_none() && about_auth {
        "; if the server requires authentication, give a PLAYER token with --token or AIWOLF_TOKEN"
    } else {
        ""
    };
    WolfError::Connection(format!(
        "the server closed the connection before the game began (NAME answered as {:?}, \
         no INITIALIZE){how}{hint}",
        opts.name
    ))
}

/// Connects and plays one game. NAME is answered at any time with the exact
/// name; no-reply requests are never answered; every action is answered by
/// `action − margin` at the latest (the decider's answer or the fallback).
/// After FINISH the client closes the connection itself (and waits up to
/// [`CLOSE_WAIT`] for the server's close). A packet that does not decode or
/// is out of range ([`decode_packet`]), a frame over `limits.max_packet`,
/// or `limits.idle` of silence ends the game with an error; so does a
/// connect that takes over `limits.connect`, and a close before the game
/// began ([`WolfError::Auth`] when the server refused the token). A close
/// in the middle of a game returns the report with `finished` false.
pub async fn join_with<D: Decider>(
    opts: &JoinOptions,
    limits: &JoinLimits,
    decider: &mut D,
) -> Result<ClientReport, WolfError> {
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
    let mut req = opts
        .url
        .as_str()
        .into_client_request()
        .map_err(|e| WolfError::Connection(format!("{}: {e}", opts.url)))?;
    if let Some(t) = &opts.token {
        let v = format!("Bearer {t}")
            .parse()
            .map_err(|_| WolfError::Auth("token is not a valid header value".into()))?;
        req.headers_mut().insert("Authorization", v);
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(limits.max_packet))
        .max_frame_size(Some(limits.max_packet));
    let connect = tokio_tungstenite::connect_async_with_config(req, Some(config), true);
    let (mut ws, _) = tokio::time::timeout(limits.connect, connect)
        .await
        .map_err(|_| {
            WolfError::Connection(format!(
                "{}: no WebSocket connection within {} s",
                opts.url,
                limits.connect.as_secs_f64()
            ))
        })?
        .map_err(|e| handshake_error(&opts.url, e))?;
    let silent = || {
        WolfError::Connection(format!(
            "the server sent nothing for {} s",
            limits.idle.as_secs_f64()
        ))
    };
    let mut report = ClientReport::default();
    let mut seat = ClientSeat::new(opts.seed);
    let mut kept = 0usize;
    // When NAME was last answered; whether any game packet came.
    let mut named: Option<Instant> = None;
    let mut in_game = false;
    loop {
        let next = tokio::time::timeout(limits.idle, ws.next())
            .await
            .map_err(|_| silent())?;
        let Some(frame) = next else {
            if !in_game {
                return Err(closed_before_game(opts, named, None));
            }
            break;
        };
        let frame = match frame {
            Ok(f) => f,
            Err(e) => {
                if report.finished {
                    break;
                }
                if !in_game && is_reset(&e) {
                    return Err(closed_before_game(opts, named, None));
                }
                return Err(ws_error(e, limits.max_packet));
            }
        };
        let text = match frame {
            Message::Text(t) => t.to_string(),
            Message::Close(f) => {
                if !in_game {
                    let close = f.map(|f| (u16::from(f.code), f.reason.to_string()));
                    return Err(closed_before_game(
                        opts,
                        named,
                        Some(close.unwrap_or((1005, String::new()))),
                    ));
                }
                break;
            }
            _ => continue,
        };
        let packet = decode_packet(&text).map_err(|e| match e {
            WolfError::Protocol(m) => {
                WolfError::Protocol(format!("packet {}: {m}", report.packets + 1))
            }
            e => e,
        })?;
        kept += text.len();
        if kept <= REPORT_FRAME_BYTES {
            report.frames.push(text);
        }
        report.packets += 1;
        in_game |= packet.request != Request::Name;
        let step = seat.handle(&packet, decider);
        report.finished = seat.finished;
        if report.finished {
            // The game is over: close our side now rather than wait for
            // the server's (v0.4.12 closes every socket after FINISH).
            close_after_finish(&mut ws).await;
            break;
        }
        let deadline = match step? {
            Step::Quiet => continue,
            Step::Name => {
                send_text(&mut ws, &opts.name, limits).await?;
                named = Some(Instant::now());
                continue;
            }
            Step::Chat(msg) => {
                send_text(&mut ws, &msg, limits).await?;
                continue;
            }
            Step::Decide { deadline } => Instant::now() + deadline,
        };
        let view = seat.view.clone();
        let decision = decider.decide(&view, &packet, deadline);
        tokio::pin!(decision);
        // Keep reading while deciding so a NAME probe is always answered.
        let answer = loop {
            tokio::select! {
                a = tokio::time::timeout_at(deadline, &mut decision) => break a.ok().flatten(),
                f = ws.next() => match f {
                    Some(Ok(Message::Text(t))) if Packet::from_json(&t).is_ok_and(|p| p.request == Request::Name) => {
                        send_text(&mut ws, &opts.name, limits).await?;
                    }
                    Some(Ok(Message::Close(_))) | None => {
                        report.view = seat.view;
                        return Ok(report);
                    }
                    Some(Err(e)) => return Err(ws_error(e, limits.max_packet)),
                    _ => {}
                }
            }
        };
        let answer = match answer {
            Some(a) => a,
            None => {
                report.fallbacks += 1;
                seat.fallback(packet.request)
            }
        };
        report.answered += 1;
        send_text(&mut ws, &answer, limits).await?;
    }
    report.view = seat.view;
    Ok(report)
}
