//! In-process games: bots (and optionally one seat driven through a
//! decision channel) played by the game master without sockets. This is
//! what a console "watch a game" / "take a seat" view runs, what tests and
//! benchmarks use, and how packets can be captured for conformance checks.

use super::WolfError;
use super::agent::{ChannelDecider, Decider, DecisionRequest, fallback, safety_margin};
use super::bot::Bot;
use super::config::Config;
use super::game::{Entrant, Game, GameEvent, Observer, Outcome, Reply, Transport};
use super::packet::{Packet, Request};
use super::view::View;
use crate::engine::ControlMode;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;

enum Driver {
    Bot(Bot),
    Channel(ChannelDecider),
}

struct LocalSeat {
    view: View,
    driver: Driver,
    rng: StdRng,
}

/// Seats played in-process.
pub struct LocalTransport {
    seats: Vec<LocalSeat>,
    chat: VecDeque<(usize, String)>,
    /// Every packet sent, per seat (for conformance checks), when enabled.
    pub capture: Option<Vec<(usize, Packet)>>,
}

impl LocalTransport {
    /// `n` bots seeded from `seed`.
    pub fn bots(n: usize, seed: u64) -> LocalTransport {
        LocalTransport {
            seats: (0..n)
                .map(|i| LocalSeat {
                    view: View::default(),
                    driver: Driver::Bot(Bot::new(seed.wrapping_mul(31).wrapping_add(i as u64 + 1))),
                    rng: StdRng::seed_from_u64(seed ^ (i as u64) << 8),
                })
                .collect(),
            chat: VecDeque::new(),
            capture: None,
        }
    }

    /// Replaces seat `seat` (0-based) by a channel-driven decider.
    pub fn take_seat(&mut self, seat: usize, decider: ChannelDecider) -> Result<(), WolfError> {
        let s = self
            .seats
            .get_mut(seat)
            .ok_or_else(|| WolfError::Config(format!("no seat {seat}")))?;
        s.driver = Driver::Channel(decider);
        Ok(())
    }

    fn deliver(&mut self, seat: usize, p: &Packet) {
        if let Some(c) = &mut self.capture {
            c.push((seat, p.clone()));
        }
        let s = &mut self.seats[seat];
        s.view.update(p);
        let chat = match &mut s.driver {
            Driver::Bot(b) => {
                b.observe(&s.view, p);
                matches!(
                    p.request,
                    Request::TalkPhaseStart
                        | Request::WhisperPhaseStart
                        | Request::TalkBroadcast
                        | Request::WhisperBroadcast
                )
                .then(|| b.chat(&s.view, p))
                .flatten()
            }
            Driver::Channel(d) => {
                d.observe(&s.view, p);
                None
            }
        };
        if let Some(c) = chat {
            self.chat.push_back((seat, c));
        }
    }
}

impl Transport for LocalTransport {
    async fn send(&mut self, seat: usize, packet: &Packet) -> Result<(), String> {
        self.deliver(seat, packet);
        Ok(())
    }

    async fn ask(&mut self, seat: usize, packet: &Packet) -> Reply {
        self.deliver(seat, packet);
        let s = &mut self.seats[seat];
        match &mut s.driver {
            Driver::Bot(b) => Reply::Text(b.decide(&s.view, packet.request)),
            Driver::Channel(d) => {
                let action = s.view.action_timeout();
                let deadline = Instant::now() + action.saturating_sub(safety_margin(action));
                let view = s.view.clone();
                let answer = match tokio::time::timeout_at(
                    deadline,
                    d.decide(&view, packet, deadline),
                )
                .await
                {
                    Ok(Some(a)) => a,
                    _ => fallback(&view, packet.request, &mut s.rng),
                };
                Reply::Text(answer)
            }
        }
    }

    async fn next_chat(
        &mut self,
        seats: &[usize],
        _deadline: tokio::time::Instant,
    ) -> Option<(usize, String)> {
        while let Some((s, text)) = self.chat.pop_front() {
            if seats.contains(&s) {
                return Some((s, text));
            }
        }
        None
    }

    async fn drain(&mut self, seats: &[usize]) {
        self.chat.retain(|(s, _)| !seats.contains(s));
    }
}

/// Entrants named `bot1..botN` (team `bot`).
pub fn bot_entrants(n: usize) -> Vec<Entrant> {
    (1..=n).map(|i| Entrant::new(&format!("bot{i}"))).collect()
}

/// Plays one all-bot game to the end on the current task.
pub async fn play_bot_game(
    cfg: Arc<Config>,
    seed: u64,
    obs: &mut dyn Observer,
) -> Result<Outcome, WolfError> {
    let n = cfg.game.agent_count;
    let game = Game::new(cfg, &bot_entrants(n), seed, None)?;
    let mut io = LocalTransport::bots(n, seed);
    Ok(game.run(&mut io, obs).await)
}

/// Plays one all-bot game and returns the outcome with every packet each
/// seat received.
pub async fn play_captured(
    cfg: Arc<Config>,
    seed: u64,
) -> Result<(Outcome, Vec<(usize, Packet)>), WolfError> {
    let n = cfg.game.agent_count;
    let game = Game::new(cfg, &bot_entrants(n), seed, None)?;
    let mut io = LocalTransport::bots(n, seed);
    io.capture = Some(Vec::new());
    let mut sink: Vec<GameEvent> = Vec::new();
    let out = game.run(&mut io, &mut sink).await;
    Ok((out, io.capture.take().unwrap_or_default()))
}

/// A running in-process game a console can follow.
pub struct LocalGame {
    /// God-view events, in order, ending with `GameEvent::Finished`.
    pub events: mpsc::UnboundedReceiver<GameEvent>,
    /// Decisions for the seat taken with [`spawn_seat_game`] (None for a
    /// pure bot game).
    pub decisions: Option<mpsc::Receiver<DecisionRequest>>,
    pub handle: tokio::task::JoinHandle<Result<Outcome, WolfError>>,
}

/// Starts a bot game with 5, 9 or 13 players on the current runtime.
pub fn spawn_bot_game(players: usize, seed: u64) -> Result<LocalGame, WolfError> {
    let cfg = Arc::new(Config::default_for(players)?);
    let (tx, rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(async move {
        let mut tx = tx;
        play_bot_game(cfg, seed, &mut tx).await
    });
    Ok(LocalGame {
        events: rx,
        decisions: None,
        handle,
    })
}

/// Starts a bot game where seat `seat` (0-based) is played through the
/// returned decision channel in `mode` (human or hybrid; the bot proposes
/// in hybrid). Unanswered decisions get the safe fallback (human) or the
/// proposal (hybrid) at the margin before `setting.timeout.action`.
pub fn spawn_seat_game(
    cfg: Config,
    seed: u64,
    seat: usize,
    mode: ControlMode,
) -> Result<LocalGame, WolfError> {
    let cfg = Arc::new(cfg);
    let n = cfg.game.agent_count;
    let game = Game::new(cfg, &bot_entrants(n), seed, None)?;
    let mut io = LocalTransport::bots(n, seed);
    let (decider, decisions) = ChannelDecider::new(mode, seed.wrapping_add(seat as u64));
    io.take_seat(seat, decider)?;
    let (tx, rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(async move {
        let mut tx = tx;
        Ok(game.run(&mut io, &mut tx).await)
    });
    Ok(LocalGame {
        events: rx,
        decisions: Some(decisions),
        handle,
    })
}
