//! `palaver wolf serve`: an AIWolf NLP compatible game server. WebSocket at
//! `/ws` (NAME handshake, team = name without trailing digits, per-team
//! waiting room, self-match or mixed-team matching, many games at once,
//! optional HS256 JWT auth), plus read-only spectator routes: SSE per game
//! (`/api/v1/games/{id}/events` in the reference format, `/api/v1/games/{id}/god`
//! with palaver's typed god-view events), `/api/v1/games`, `/api/v1/healthz`,
//! and the polled `/realtime/games.json` + `/realtime/{file}.jsonl`.
//!
//! Reply discipline (differences from v0.4.12 are deliberate):
//! - A frame that arrives while no request is outstanding (e.g. an answer
//!   to INITIALIZE) is discarded before the next request is sent, so it
//!   can never be taken as the next answer. A request that follows a
//!   no-reply packet to the same seat waits out a short settle window
//!   (`server.settle`, default 50 ms) first, so an immediate stray answer
//!   lands before the discard. (The protocol has no request ids: a stray
//!   frame slower than that can still be taken once; it never shifts
//!   later answers, because every request starts with the discard.)
//! - After a timeout the server sends NAME and waits `response` for a frame
//!   equal to the connection name; other frames in that window (typically
//!   the late answer) are discarded instead of marking the agent broken.
//! - Binary frames never count as answers: the action fails, the agent
//!   stays. Frames over `max_frame_bytes` close the connection.

use super::WolfError;
use super::config::Config;
use super::game::{
    Entrant, Fanout, Game, GameEvent, Observer, Outcome, Reply, SeatView, Transport, now_ms,
    team_name,
};
use super::jwt;
use super::logs::{GameLog, JsonLog, JsonLogEntry, RealtimeFeed, log_filename};
use super::packet::{Packet, Request};
use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, broadcast, mpsc};

enum Incoming {
    Text(String),
    Binary(usize),
    Closed(String),
}

/// One agent connection.
struct Conn {
    name: String,
    team: String,
    sink: SplitSink<WebSocket, Message>,
    inbox: mpsc::Receiver<Incoming>,
    closed: Arc<AtomicBool>,
}

/// A game as spectators see it.
pub struct GameFeed {
    pub id: String,
    pub filename: String,
    pub seats: Vec<SeatView>,
    events: Mutex<Vec<GameEvent>>,
    realtime: Mutex<Vec<Value>>,
    tx: broadcast::Sender<(Option<GameEvent>, Option<Value>)>,
    finished: AtomicBool,
}

impl GameFeed {
    pub fn events(&self) -> Vec<GameEvent> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }
}

struct FeedObserver {
    feed: Arc<GameFeed>,
    realtime: RealtimeFeed,
}

impl Observer for FeedObserver {
    fn event(&mut self, e: &GameEvent) {
        let before = self.realtime.packets.len();
        self.realtime.event(e);
        let rt = self.realtime.packets.get(before).cloned();
        if let Ok(mut ev) = self.feed.events.lock() {
            ev.push(e.clone());
        }
        if let Some(p) = &rt
            && let Ok(mut r) = self.feed.realtime.lock()
        {
            r.push(p.clone());
        }
        if matches!(e, GameEvent::Finished { .. }) {
            self.feed.finished.store(true, Ordering::SeqCst);
        }
        let _ = self.feed.tx.send((Some(e.clone()), rt));
    }
}

/// The server's shared state.
pub struct Server {
    cfg: Arc<Config>,
    secret: Option<String>,
    lobby: Mutex<BTreeMap<String, VecDeque<Conn>>>,
    games: Mutex<Vec<Arc<GameFeed>>>,
    outcomes: Mutex<Vec<Outcome>>,
    seed: AtomicU64,
    done: Notify,
    /// Log file names given out, so two games with the same teams that
    /// start in the same second do not overwrite each other's logs.
    filenames: Mutex<std::collections::HashSet<String>>,
}

impl Server {
    /// A server for `cfg`; `seed` makes role draws and talk orders replayable.
    pub fn new(cfg: Config, seed: u64) -> Result<Arc<Server>, WolfError> {
        cfg.validate()?;
        let secret = if cfg.server.authentication.enable {
            let s = if cfg.server.authentication.secret_key.is_empty() {
                std::env::var("SECRET_KEY").unwrap_or_default()
            } else {
                cfg.server.authentication.secret_key.clone()
            };
            if s.is_empty() {
                return Err(WolfError::Config(
                    "authentication is enabled but no secret (server.authentication.secret_key or SECRET_KEY)".into(),
                ));
            }
            Some(s)
        } else {
            None
        };
        Ok(Arc::new(Server {
            cfg: Arc::new(cfg),
            secret,
            lobby: Mutex::new(BTreeMap::new()),
            games: Mutex::new(Vec::new()),
            outcomes: Mutex::new(Vec::new()),
            seed: AtomicU64::new(seed),
            done: Notify::new(),
            filenames: Mutex::new(std::collections::HashSet::new()),
        }))
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Outcomes of the games finished so far.
    pub fn outcomes(&self) -> Vec<Outcome> {
        self.outcomes.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Games started so far (running and finished).
    pub fn games(&self) -> Vec<Arc<GameFeed>> {
        self.games.lock().map(|g| g.clone()).unwrap_or_default()
    }

    /// Waits until at least `n` games have finished.
    pub async fn wait_finished(&self, n: usize) -> Vec<Outcome> {
        loop {
            let notified = self.done.notified();
            let o = self.outcomes();
            if o.len() >= n {
                return o;
            }
            notified.await;
        }
    }

    /// The HTTP routes.
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/ws", get(ws_handler))
            .route(
                "/api/v1/healthz",
                get(|| async {
                    axum::Json(json!({"status":"ok","version": env!("CARGO_PKG_VERSION")}))
                }),
            )
            .route("/api/v1/games", get(games_list))
            .route("/api/v1/games/{id}/events", get(game_events))
            .route("/api/v1/games/{id}/god", get(game_god))
            .route("/realtime/games.json", get(realtime_games))
            .route("/realtime/{file}", get(realtime_file))
            .with_state(self.clone())
    }

    fn enqueue(self: &Arc<Self>, conn: Conn) {
        let Ok(mut lobby) = self.lobby.lock() else {
            return;
        };
        lobby.entry(conn.team.clone()).or_default().push_back(conn);
        let n = self.cfg.game.agent_count;
        loop {
            for q in lobby.values_mut() {
                q.retain(|c| !c.closed.load(Ordering::SeqCst));
            }
            lobby.retain(|_, q| !q.is_empty());
            let picked: Vec<Conn> = if self.cfg.matching.self_match {
                let Some(team) = lobby
                    .iter()
                    .find(|(_, q)| q.len() >= n)
                    .map(|(t, _)| t.clone())
                else {
                    break;
                };
                let q = lobby.entry(team).or_default();
                q.drain(..n).collect()
            } else {
                if lobby.len() < n {
                    break;
                }
                let mut teams: Vec<String> = lobby.keys().cloned().collect();
                let s = self.seed.fetch_add(1, Ordering::SeqCst);
                use rand::SeedableRng;
                use rand::seq::SliceRandom;
                teams.shuffle(&mut rand::rngs::StdRng::seed_from_u64(s));
                teams.truncate(n);
                teams
                    .iter()
                    .filter_map(|t| lobby.get_mut(t).and_then(VecDeque::pop_front))
                    .collect()
            };
            let me = self.clone();
            tokio::spawn(async move { me.run_game(picked).await });
        }
    }

    /// `base`, or `base_2`, `base_3`, … when a game of this server or a file
    /// in a log directory already has that name.
    fn unique_filename(&self, base: String) -> String {
        let Ok(mut used) = self.filenames.lock() else {
            return base;
        };
        let l = &self.cfg.log;
        let taken = |name: &str| {
            used.contains(name)
                || [
                    (&l.game_dir, ".log"),
                    (&l.json_dir, ".json"),
                    (&l.realtime_dir, ".jsonl"),
                ]
                .iter()
                .any(|(d, ext)| {
                    !d.is_empty()
                        && std::path::Path::new(d)
                            .join(format!("{name}{ext}"))
                            .exists()
                })
        };
        let mut name = base.clone();
        let mut n = 1;
        while taken(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        used.insert(name.clone());
        name
    }

    async fn run_game(self: Arc<Self>, conns: Vec<Conn>) {
        let entrants: Vec<Entrant> = conns
            .iter()
            .map(|c| Entrant {
                original_name: c.name.clone(),
                team: c.team.clone(),
            })
            .collect();
        let seed = self.seed.fetch_add(1, Ordering::SeqCst);
        let game = match Game::new(self.cfg.clone(), &entrants, seed, None) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("palaver wolf: cannot start a game: {e}");
                return;
            }
        };
        let seats = game.seats();
        let filename = self.unique_filename(log_filename(now_ms() / 1000, &seats));
        let (tx, _) = broadcast::channel(1024);
        let feed = Arc::new(GameFeed {
            id: game.game_id().to_owned(),
            filename: filename.clone(),
            seats: seats.clone(),
            events: Mutex::new(Vec::new()),
            realtime: Mutex::new(Vec::new()),
            tx,
            finished: AtomicBool::new(false),
        });
        if let Ok(mut g) = self.games.lock() {
            g.push(feed.clone());
        }
        let dir = |d: &str| (!d.is_empty()).then(|| PathBuf::from(d));
        let logc = &self.cfg.log;
        let mut observers: Vec<Box<dyn Observer>> = vec![Box::new(FeedObserver {
            feed: feed.clone(),
            realtime: RealtimeFeed::new(dir(&logc.realtime_dir).map(|d| (d, filename.clone()))),
        })];
        if let Some(d) = dir(&logc.game_dir) {
            observers.push(Box::new(GameLog::new(Some(
                d.join(format!("{filename}.log")),
            ))));
        }
        let mut io = NetTransport {
            conns,
            names: seats.iter().map(|s| s.name.clone()).collect(),
            broken: HashMap::new(),
            last_noreply: HashMap::new(),
            settle: self.cfg.server.settle.0,
            action: self.cfg.server.timeout.action.0 + self.cfg.server.timeout.acceptable.0,
            response: self.cfg.server.timeout.response.0,
            log: JsonLog::new(game.game_id(), &seats),
        };
        let outcome = game.run(&mut io, &mut Fanout(observers)).await;
        for c in &mut io.conns {
            let _ = c
                .sink
                .send(Message::Close(Some(CloseFrame {
                    code: 1000,
                    reason: "game over".into(),
                })))
                .await;
        }
        io.log.win_side = Some(outcome.winner);
        if let Some(d) = dir(&logc.json_dir) {
            let path = d.join(format!("{filename}.json"));
            if let Err(e) = io.log.write(&path) {
                tracing::warn!(file = %path.display(), error = %e, "the game's JSON log could not be written");
            }
        }
        feed.finished.store(true, Ordering::SeqCst);
        let _ = feed.tx.send((None, None));
        if let Ok(mut o) = self.outcomes.lock() {
            o.push(outcome);
        }
        self.done.notify_waiters();
    }
}

/// The game's I/O over WebSocket connections.
struct NetTransport {
    conns: Vec<Conn>,
    names: Vec<String>,
    broken: HashMap<usize, String>,
    last_noreply: HashMap<usize, tokio::time::Instant>,
    settle: Duration,
    action: Duration,
    response: Duration,
    log: JsonLog,
}

impl NetTransport {
    async fn write(&mut self, seat: usize, json: String) -> Result<(), String> {
        if let Some(r) = self.broken.get(&seat) {
            return Err(r.clone());
        }
        if self.conns[seat].closed.load(Ordering::SeqCst) {
            return Err("connection closed".into());
        }
        self.conns[seat]
            .sink
            .send(Message::Text(json.into()))
            .await
            .map_err(|e| format!("write failed: {e}"))
    }

    /// Drops frames that arrived while no request was outstanding.
    fn discard_stale(&mut self, seat: usize) -> Result<(), String> {
        // Bounded, so an agent flooding frames cannot hold the game here.
        for _ in 0..4 * INBOX_FRAMES {
            let Ok(m) = self.conns[seat].inbox.try_recv() else {
                break;
            };
            if let Incoming::Closed(r) = m {
                self.broken.insert(seat, r.clone());
                return Err(r);
            }
        }
        Ok(())
    }

    fn entry(&mut self, seat: usize, request: String, ts: i64) -> usize {
        self.log.entries.push(JsonLogEntry {
            agent: self.names[seat].clone(),
            request,
            request_timestamp: ts,
            response: None,
            response_timestamp: None,
            error: None,
        });
        self.log.entries.len() - 1
    }

    async fn probe(&mut self, seat: usize) -> Reply {
        if let Err(e) = self
            .write(seat, Packet::bare(Request::Name).to_json())
            .await
        {
            return Reply::Error(e);
        }
        let deadline = tokio::time::Instant::now() + self.response;
        let name = self.conns[seat].name.clone();
        loop {
            match tokio::time::timeout_at(deadline, self.conns[seat].inbox.recv()).await {
                Ok(Some(Incoming::Text(t))) if t.trim_end_matches('\n') == name => {
                    return Reply::Failed("timed out; answered the NAME probe".into());
                }
                // A late answer (or anything else) is not the NAME reply: drop it.
                Ok(Some(Incoming::Text(_))) | Ok(Some(Incoming::Binary(_))) => continue,
                Ok(Some(Incoming::Closed(r))) => return Reply::Error(r),
                Ok(None) => return Reply::Error("connection closed".into()),
                Err(_) => {
                    return Reply::Error(format!(
                        "no answer in time and no NAME reply within {} ms",
                        self.response.as_millis()
                    ));
                }
            }
        }
    }
}

impl Transport for NetTransport {
    async fn send(&mut self, seat: usize, packet: &Packet) -> Result<(), String> {
        let json = packet.to_json();
        self.entry(seat, json.clone(), now_ms());
        self.last_noreply.insert(seat, tokio::time::Instant::now());
        self.write(seat, json).await
    }

    async fn ask(&mut self, seat: usize, packet: &Packet) -> Reply {
        if let Some(t) = self.last_noreply.remove(&seat) {
            tokio::time::sleep_until(t + self.settle).await;
        }
        if let Err(e) = self.discard_stale(seat) {
            return Reply::Error(e);
        }
        let json = packet.to_json();
        let e = self.entry(seat, json.clone(), now_ms());
        if let Err(err) = self.write(seat, json).await {
            self.log.entries[e].error = Some(err.clone());
            return Reply::Error(err);
        }
        let reply = match tokio::time::timeout(self.action, self.conns[seat].inbox.recv()).await {
            Ok(Some(Incoming::Text(t))) => {
                self.log.entries[e].response = Some(t.clone());
                self.log.entries[e].response_timestamp = Some(now_ms());
                Reply::Text(t)
            }
            Ok(Some(Incoming::Binary(n))) => {
                Reply::Failed(format!("binary frame ({n} bytes); answers are text frames"))
            }
            Ok(Some(Incoming::Closed(r))) => Reply::Error(r),
            Ok(None) => Reply::Error("connection closed".into()),
            Err(_) => self.probe(seat).await,
        };
        match &reply {
            Reply::Failed(r) => self.log.entries[e].error = Some(r.clone()),
            Reply::Error(r) => {
                self.log.entries[e].error = Some(r.clone());
                self.broken.insert(seat, r.clone());
            }
            Reply::Text(_) => {}
        }
        reply
    }

    async fn next_chat(
        &mut self,
        seats: &[usize],
        deadline: tokio::time::Instant,
    ) -> Option<(usize, String)> {
        let mut open: Vec<usize> = seats
            .iter()
            .copied()
            .filter(|s| !self.broken.contains_key(s))
            .collect();
        loop {
            let futs: Vec<_> = self
                .conns
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| open.contains(i))
                .map(|(i, c)| Box::pin(async move { (i, c.inbox.recv().await) }))
                .collect();
            if futs.is_empty() {
                return None;
            }
            let (i, msg) =
                match tokio::time::timeout_at(deadline, futures_util::future::select_all(futs))
                    .await
                {
                    Err(_) => return None,
                    Ok(((i, msg), _, rest)) => {
                        drop(rest);
                        (i, msg)
                    }
                };
            match msg {
                Some(Incoming::Text(t)) => {
                    let e = self.entry(i, Request::Talk.as_str().to_owned(), now_ms());
                    self.log.entries[e].response = Some(t.clone());
                    self.log.entries[e].response_timestamp = Some(now_ms());
                    return Some((i, t));
                }
                Some(Incoming::Binary(_)) => continue,
                Some(Incoming::Closed(r)) => {
                    // The next send to this seat reports the error.
                    self.broken.insert(i, r);
                    open.retain(|s| *s != i);
                }
                None => {
                    self.broken.insert(i, "connection closed".into());
                    open.retain(|s| *s != i);
                }
            }
        }
    }

    async fn drain(&mut self, seats: &[usize]) {
        for &s in seats {
            let _ = self.discard_stale(s);
        }
    }
}

#[derive(serde::Deserialize, Default)]
struct TokenQuery {
    token: Option<String>,
}

fn token_from(q: &TokenQuery, headers: &HeaderMap) -> Option<String> {
    q.token.clone().filter(|t| !t.is_empty()).or_else(|| {
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned)
    })
}

async fn ws_handler(
    State(srv): State<Arc<Server>>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let token = token_from(&q, &headers);
    let max = srv.cfg.server.max_frame_bytes;
    ws.max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| handle_socket(srv, socket, token))
}

async fn handle_socket(srv: Arc<Server>, socket: WebSocket, token: Option<String>) {
    let (mut sink, mut stream) = socket.split();
    // Bounded: an agent that floods frames while nobody reads is held back
    // by TCP flow control instead of filling the server's memory.
    let (tx, mut inbox) = mpsc::channel(INBOX_FRAMES);
    let closed = Arc::new(AtomicBool::new(false));
    let flag = closed.clone();
    tokio::spawn(async move {
        let reason = loop {
            match stream.next().await {
                Some(Ok(Message::Text(t))) => {
                    if tx.send(Incoming::Text(t.to_string())).await.is_err() {
                        break String::new();
                    }
                }
                Some(Ok(Message::Binary(b))) => {
                    if tx.send(Incoming::Binary(b.len())).await.is_err() {
                        break String::new();
                    }
                }
                Some(Ok(Message::Close(f))) => {
                    break format!(
                        "connection closed by the agent{}",
                        f.map(|f| format!(" ({})", f.code)).unwrap_or_default()
                    );
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => break format!("connection error: {e}"),
                None => break "connection closed".into(),
            }
        };
        flag.store(true, Ordering::SeqCst);
        let _ = tx.send(Incoming::Closed(reason)).await;
    });
    if sink
        .send(Message::Text(Packet::bare(Request::Name).to_json().into()))
        .await
        .is_err()
    {
        return;
    }
    // One deadline for the NAME reply, however many binary frames come first.
    let deadline = tokio::time::Instant::now() + srv.cfg.server.timeout.response.0;
    let name = loop {
        match tokio::time::timeout_at(deadline, inbox.recv()).await {
            Ok(Some(Incoming::Text(t))) => break t.replace('\n', ""),
            Ok(Some(Incoming::Binary(_))) => continue,
            _ => return,
        }
    };
    if let Err(why) = check_connection_name(&name) {
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code: 1008,
                reason: why.into(),
            })))
            .await;
        return;
    }
    let team = team_name(&name);
    if let Some(secret) = &srv.secret {
        let verdict = match &token {
            None => Err(WolfError::Auth("no token".into())),
            Some(t) => jwt::check_player(secret, t, &team, now_ms() / 1000),
        };
        if let Err(e) = verdict {
            let _ = sink
                .send(Message::Close(Some(CloseFrame {
                    code: 1008,
                    reason: e.to_string().into(),
                })))
                .await;
            return;
        }
    }
    srv.enqueue(Conn {
        name,
        team,
        sink,
        inbox,
        closed,
    });
}

/// Frames an agent may have queued that the game has not read yet.
const INBOX_FRAMES: usize = 64;

/// Why a connection name (the NAME reply, newlines removed) is refused:
/// empty, longer than [`crate::limits::WOLF_NAME_BYTES`], or holding a
/// control character or a comma (names are written raw into the
/// comma-separated game log and into log file names).
pub fn check_connection_name(name: &str) -> Result<(), String> {
    let max = crate::limits::WOLF_NAME_BYTES;
    if name.is_empty() {
        return Err("empty connection name".into());
    }
    if name.len() > max {
        return Err(format!(
            "connection name of {} bytes (at most {max})",
            name.len()
        ));
    }
    if name.chars().any(|c| c.is_control() || c == ',') {
        return Err("connection name with a control character or a comma".into());
    }
    Ok(())
}

/// None when the request may spectate; else the refusal.
fn spectator_refusal(srv: &Server, q: &TokenQuery, headers: &HeaderMap) -> Option<Response> {
    let secret = srv.secret.as_ref()?;
    let Some(t) = token_from(q, headers) else {
        return Some((StatusCode::UNAUTHORIZED, "a RECEIVER token is required").into_response());
    };
    jwt::check_receiver(secret, &t, now_ms() / 1000)
        .err()
        .map(|e| (StatusCode::UNAUTHORIZED, e.to_string()).into_response())
}

fn game_summary(g: &GameFeed) -> Value {
    let events = g.events();
    let mut day = 0;
    let mut alive = vec![true; g.seats.len()];
    let mut win = None;
    for e in &events {
        match e {
            GameEvent::DayStarted { day: d, alive: a } => {
                day = *d;
                alive = a.clone();
            }
            GameEvent::Finished {
                day: d,
                winner,
                alive: a,
                ..
            } => {
                day = *d;
                alive = a.clone();
                win = Some(winner.as_str());
            }
            _ => {}
        }
    }
    json!({
        "id": g.id, "day": day, "finished": g.is_finished(), "win_side": win,
        "agents": g.seats.iter().zip(alive).map(|(s, a)| json!({
            "idx": s.idx, "team_name": s.team, "original_name": s.original_name,
            "game_name": s.name, "role": s.role.as_str(), "alive": a
        })).collect::<Vec<_>>()
    })
}

async fn games_list(
    State(srv): State<Arc<Server>>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = spectator_refusal(&srv, &q, &headers) {
        return r;
    }
    let list: Vec<Value> = srv.games().iter().map(|g| game_summary(g)).collect();
    axum::Json(list).into_response()
}

/// The game a spectator asked for, or the response that refuses them (no
/// valid token when one is required, or no such game).
fn spectated_game(
    srv: &Server,
    q: &TokenQuery,
    headers: &HeaderMap,
    id: &str,
) -> Result<Arc<GameFeed>, Box<Response>> {
    if let Some(r) = spectator_refusal(srv, q, headers) {
        return Err(Box::new(r));
    }
    srv.games()
        .into_iter()
        .find(|g| g.id == id)
        .ok_or_else(|| Box::new((StatusCode::NOT_FOUND, "no such game").into_response()))
}

/// SSE of the reference realtime packets: the latest is replayed on
/// subscribe; the stream ends when the game ends.
async fn game_events(
    State(srv): State<Arc<Server>>,
    Path(id): Path<String>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    let g = match spectated_game(&srv, &q, &headers, &id) {
        Ok(g) => g,
        Err(r) => return *r,
    };
    let rx = g.tx.subscribe();
    let last = g.realtime.lock().ok().and_then(|r| r.last().cloned());
    let done = g.is_finished();
    let first = futures_util::stream::iter(
        last.map(|p| Ok::<_, Infallible>(Event::default().event("broadcast").data(p.to_string()))),
    );
    let live = futures_util::stream::unfold((rx, done), |(mut rx, done)| async move {
        if done {
            return None;
        }
        loop {
            match rx.recv().await {
                Ok((_, Some(p))) => {
                    return Some((
                        Ok(Event::default().event("broadcast").data(p.to_string())),
                        (rx, false),
                    ));
                }
                Ok((None, None)) | Err(broadcast::error::RecvError::Closed) => return None,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
            }
        }
    });
    Sse::new(first.chain(live)).into_response()
}

/// SSE of palaver's god-view [`GameEvent`]s (`event: game`, JSON data):
/// every event from the start is replayed, then live events follow; the
/// stream ends after `finished`.
async fn game_god(
    State(srv): State<Arc<Server>>,
    Path(id): Path<String>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    let g = match spectated_game(&srv, &q, &headers, &id) {
        Ok(g) => g,
        Err(r) => return *r,
    };
    // Subscribe before reading the backlog so nothing falls in between;
    // duplicates are skipped by count.
    let rx = g.tx.subscribe();
    let backlog = g.events();
    let seen = backlog.len();
    let finished = backlog
        .iter()
        .any(|e| matches!(e, GameEvent::Finished { .. }));
    let to_event = |e: &GameEvent| {
        Ok::<_, Infallible>(
            Event::default()
                .event("game")
                .data(serde_json::to_string(e).unwrap_or_default()),
        )
    };
    let first = futures_util::stream::iter(backlog.iter().map(to_event).collect::<Vec<_>>());
    let live = futures_util::stream::unfold(
        (rx, seen, finished, 0usize),
        move |(mut rx, seen, finished, mut n)| async move {
            if finished {
                return None;
            }
            loop {
                match rx.recv().await {
                    Ok((Some(e), _)) => {
                        n += 1;
                        if n <= seen {
                            continue;
                        }
                        let end = matches!(e, GameEvent::Finished { .. });
                        let ev = Event::default()
                            .event("game")
                            .data(serde_json::to_string(&e).unwrap_or_default());
                        return Some((Ok::<_, Infallible>(ev), (rx, seen, end, n)));
                    }
                    Ok((None, _)) | Err(broadcast::error::RecvError::Closed) => return None,
                    Err(broadcast::error::RecvError::Lagged(_)) => return None,
                }
            }
        },
    );
    Sse::new(first.chain(live)).into_response()
}

async fn realtime_games(
    State(srv): State<Arc<Server>>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = spectator_refusal(&srv, &q, &headers) {
        return r;
    }
    let list: Vec<Value> = srv
        .games()
        .iter()
        .map(|g| json!({"id": g.id, "filename": g.filename, "updated_at": super::logs::rfc3339_now()}))
        .collect();
    axum::Json(list).into_response()
}

async fn realtime_file(
    State(srv): State<Arc<Server>>,
    Path(file): Path<String>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = spectator_refusal(&srv, &q, &headers) {
        return r;
    }
    let Some(stem) = file.strip_suffix(".jsonl") else {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    };
    match srv.games().into_iter().find(|g| g.filename == stem) {
        Some(g) => {
            let body = g
                .realtime
                .lock()
                .map(|r| {
                    r.iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            ([("content-type", "application/jsonl")], body).into_response()
        }
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

/// Serves until the listener fails.
pub async fn serve(listener: tokio::net::TcpListener, srv: Arc<Server>) -> Result<(), WolfError> {
    axum::serve(listener, srv.router()).await?;
    Ok(())
}
