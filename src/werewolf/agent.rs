//! The agent side: what one seat knows ([`View`], accumulated from the
//! per-day history diffs), the decision hook ([`Decider`]: a bot, or a
//! channel a console prompt answers), the safe fallback, and the WebSocket
//! client loop behind `palaver wolf join`.

use super::WolfError;
use super::bot::Bot;
use super::packet::{Judge, Packet, Request, Role, Setting, Status, Talk, Team, Vote};
use futures_util::{SinkExt, StreamExt};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Everything one seat has been told, accumulated across packets.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct View {
    pub game_id: String,
    pub me: String,
    pub role: Option<Role>,
    pub day: i64,
    pub status: BTreeMap<String, Status>,
    /// Roles this seat may see (own; wolves see wolves; all at FINISH).
    pub roles: BTreeMap<String, Role>,
    pub setting: Option<Setting>,
    pub profile: Option<String>,
    /// All talks of the game, in order (own included).
    pub talks: Vec<Talk>,
    pub whispers: Vec<Talk>,
    pub divines: Vec<Judge>,
    pub mediums: Vec<Judge>,
    pub votes: Vec<Vote>,
    pub attack_votes: Vec<Vote>,
    /// Yesterday's exile and last night's victim, as told today.
    pub executed_today_news: Option<String>,
    pub attacked_today_news: Option<String>,
    pub remain_count: Option<i64>,
    pub remain_length: Option<i64>,
    pub remain_skip: Option<i64>,
    pub last_request: Option<Request>,
    /// Winner derived from the final role map, after FINISH.
    pub finished: Option<Team>,
    #[serde(skip)]
    seen_talk: BTreeSet<(i64, i64)>,
    #[serde(skip)]
    seen_whisper: BTreeSet<(i64, i64)>,
}

impl View {
    /// Folds one packet in.
    pub fn update(&mut self, p: &Packet) {
        self.last_request = Some(p.request);
        if let Some(s) = &p.setting {
            self.setting = Some(s.clone());
        }
        if let Some(info) = &p.info {
            if p.request == Request::Initialize {
                *self = View {
                    setting: self.setting.take(),
                    ..View::default()
                };
                self.last_request = Some(p.request);
                self.profile = info.profile.clone();
            }
            self.game_id = info.game_id.clone();
            self.me = info.agent.clone();
            self.day = info.day;
            self.status = info.status_map.clone();
            self.roles = info.role_map.clone();
            self.role = info.role_map.get(&info.agent).copied();
            self.remain_count = info.remain_count;
            self.remain_length = info.remain_length;
            self.remain_skip = info.remain_skip;
            if p.request == Request::DailyInitialize {
                self.executed_today_news = info.executed_agent.clone();
                self.attacked_today_news = info.attacked_agent.clone();
                if let Some(j) = &info.divine_result
                    && !self.divines.contains(j)
                {
                    self.divines.push(j.clone());
                }
                if let Some(j) = &info.medium_result
                    && !self.mediums.contains(j)
                {
                    self.mediums.push(j.clone());
                }
                for v in &info.vote_list {
                    if !self.votes.contains(v) {
                        self.votes.push(v.clone());
                    }
                }
                for v in &info.attack_vote_list {
                    if !self.attack_votes.contains(v) {
                        self.attack_votes.push(v.clone());
                    }
                }
            }
            if p.request == Request::Finish {
                self.finished = Some(winner_from_roles(&self.status, &self.roles));
            }
        }
        let add = |list: &mut Vec<Talk>, seen: &mut BTreeSet<(i64, i64)>, t: &Talk| {
            if seen.insert((t.day, t.idx)) {
                list.push(t.clone());
            }
        };
        for t in p.talk_history.iter().flatten().chain(p.new_talk.iter()) {
            add(&mut self.talks, &mut self.seen_talk, t);
        }
        for t in p
            .whisper_history
            .iter()
            .flatten()
            .chain(p.new_whisper.iter())
        {
            add(&mut self.whispers, &mut self.seen_whisper, t);
        }
    }

    /// Every in-game name.
    pub fn names(&self) -> Vec<String> {
        self.status.keys().cloned().collect()
    }

    pub fn alive(&self) -> Vec<String> {
        self.status
            .iter()
            .filter(|(_, s)| **s == Status::Alive)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Known werewolves (all of them, if this seat is one).
    pub fn wolves(&self) -> Vec<String> {
        self.roles
            .iter()
            .filter(|(_, r)| **r == Role::Werewolf)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The announced action timeout.
    pub fn action_timeout(&self) -> Duration {
        let ms = self
            .setting
            .as_ref()
            .map(|s| s.timeout.action)
            .unwrap_or(60_000);
        Duration::from_millis(u64::try_from(ms).unwrap_or(60_000))
    }
}

fn winner_from_roles(status: &BTreeMap<String, Status>, roles: &BTreeMap<String, Role>) -> Team {
    let alive: Vec<Role> = roles
        .iter()
        .filter(|(n, _)| status.get(*n) == Some(&Status::Alive))
        .map(|(_, r)| *r)
        .collect();
    super::game::winner(&alive).unwrap_or(Team::None)
}

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

/// Who decides a seat's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlMode {
    /// The bot answers.
    Autonomous,
    /// The bot proposes; a person may override before the margin.
    Hybrid,
    /// A person answers; the safe fallback at the margin.
    Human,
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

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send_text(ws: &mut Ws, text: &str) -> Result<(), WolfError> {
    ws.send(tokio_tungstenite::tungstenite::Message::text(text))
        .await
        .map_err(|e| WolfError::Connection(e.to_string()))
}

/// Connects and plays one game. NAME is answered at any time with the exact
/// name; no-reply requests are never answered; every action is answered by
/// `action − margin` at the latest (the decider's answer or the fallback).
pub async fn join<D: Decider>(
    opts: &JoinOptions,
    decider: &mut D,
) -> Result<ClientReport, WolfError> {
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
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
    let (mut ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .map_err(|e| WolfError::Connection(format!("{}: {e}", opts.url)))?;
    let mut rng = StdRng::seed_from_u64(opts.seed ^ 0x5eed);
    let mut report = ClientReport::default();
    let mut in_chat = false;
    loop {
        let Some(frame) = ws.next().await else { break };
        let frame = match frame {
            Ok(f) => f,
            Err(e) => {
                if report.finished {
                    break;
                }
                return Err(WolfError::Connection(e.to_string()));
            }
        };
        let text = match frame {
            Message::Text(t) => t.to_string(),
            Message::Close(_) => break,
            _ => continue,
        };
        let packet = Packet::from_json(&text)
            .map_err(|e| WolfError::Protocol(format!("undecodable packet: {e}")))?;
        report.frames.push(text.clone());
        report.packets += 1;
        if packet.request == Request::Name {
            send_text(&mut ws, &opts.name).await?;
            continue;
        }
        report.view.update(&packet);
        decider.observe(&report.view, &packet);
        match packet.request {
            Request::TalkPhaseStart | Request::WhisperPhaseStart => in_chat = true,
            Request::TalkPhaseEnd | Request::WhisperPhaseEnd => in_chat = false,
            Request::Finish => report.finished = true,
            _ => {}
        }
        if in_chat
            && matches!(
                packet.request,
                Request::TalkPhaseStart
                    | Request::WhisperPhaseStart
                    | Request::TalkBroadcast
                    | Request::WhisperBroadcast
            )
            && let Some(msg) = decider.chat(&report.view, &packet)
        {
            send_text(&mut ws, &msg).await?;
        }
        if !packet.request.needs_reply() {
            continue;
        }
        let action = report.view.action_timeout();
        let deadline = Instant::now() + action.saturating_sub(safety_margin(action));
        let view = report.view.clone();
        let decision = decider.decide(&view, &packet, deadline);
        tokio::pin!(decision);
        // Keep reading while deciding so a NAME probe is always answered.
        let answer = loop {
            tokio::select! {
                a = tokio::time::timeout_at(deadline, &mut decision) => break a.ok().flatten(),
                f = ws.next() => match f {
                    Some(Ok(Message::Text(t))) if Packet::from_json(&t).is_ok_and(|p| p.request == Request::Name) => {
                        send_text(&mut ws, &opts.name).await?;
                    }
                    Some(Ok(Message::Close(_))) | None => return Ok(report),
                    Some(Err(e)) => return Err(WolfError::Connection(e.to_string())),
                    _ => {}
                }
            }
        };
        let answer = match answer {
            Some(a) => a,
            None => {
                report.fallbacks += 1;
                fallback(&report.view, packet.request, &mut rng)
            }
        };
        report.answered += 1;
        send_text(&mut ws, &answer).await?;
    }
    Ok(report)
}
