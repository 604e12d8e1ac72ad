//! What the game master asks of its I/O ([`Transport`]: send, ask, chat)
//! and what it tells its observers ([`GameEvent`], [`Observer`]).

use crate::werewolf::packet::{Packet, Role, Species, Talk, Team};
use serde::{Deserialize, Serialize};
use std::future::Future;

/// What a seat answered to a request that needs a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A text frame (newlines not yet removed).
    Text(String),
    /// No usable answer in time, but the agent is alive (it answered the
    /// NAME probe, or sent something unusable): the action counts as failed.
    Failed(String),
    /// The agent is gone (closed, failed the probe, write error). Permanent.
    Error(String),
}

/// When a group-chat phase ends (a tokio instant; named here so a
/// [`Transport`] can be written without depending on tokio).
pub type Deadline = tokio::time::Instant;

/// The game's I/O. Seats are 0-based; the master never talks to a seat
/// after it reported an error.
pub trait Transport: Send {
    /// A request that needs no reply. `Err` marks the seat broken.
    fn send(
        &mut self,
        seat: usize,
        packet: &Packet,
    ) -> impl Future<Output = Result<(), String>> + Send;
    /// A request that needs a reply.
    fn ask(&mut self, seat: usize, packet: &Packet) -> impl Future<Output = Reply> + Send;
    /// Group chat: the next text from any of `seats` before `deadline`
    /// (`None` when the time is up or nobody will say more).
    fn next_chat(
        &mut self,
        seats: &[usize],
        deadline: Deadline,
    ) -> impl Future<Output = Option<(usize, String)>> + Send;
    /// Group chat ended: drop whatever these seats sent that was not read.
    fn drain(&mut self, seats: &[usize]) -> impl Future<Output = ()> + Send;
}

/// A seat as everyone with the god view sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatView {
    /// 1-based, as in the logs.
    pub idx: usize,
    /// In-game name (what other agents see).
    pub name: String,
    /// Connection name (the NAME reply).
    pub original_name: String,
    pub team: String,
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The profile's picture URL (the realtime feed's `avatar`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
}

/// The phases of a day, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    MorningWhisper,
    Talk,
    EveningWhisper,
    Execution,
    Divine,
    NightWhisper,
    Guard,
    Attack,
}

impl Phase {
    /// Daytime phases (the realtime feed's `is_day`).
    pub fn is_day(self) -> bool {
        matches!(self, Phase::MorningWhisper | Phase::Talk)
    }
}

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Victory,
    MaxDay,
    AbortedByError,
}

/// Everything that happens in a game, with the god view (roles visible).
/// Seat references are 1-based `idx`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GameEvent {
    Started {
        game_id: String,
        seats: Vec<SeatView>,
    },
    /// DAILY_INITIALIZE: `alive[i]` is seat i+1.
    DayStarted {
        day: i64,
        alive: Vec<bool>,
    },
    Phase {
        day: i64,
        phase: Phase,
    },
    Talk {
        whisper: bool,
        idx: usize,
        talk: Talk,
    },
    Vote {
        day: i64,
        round: i64,
        voter: usize,
        target: Option<usize>,
    },
    /// A vote round's count: (target idx, votes), most votes first.
    VoteTally {
        day: i64,
        round: i64,
        last: bool,
        tally: Vec<(usize, usize)>,
        executed: Option<usize>,
    },
    Executed {
        day: i64,
        idx: usize,
        role: Role,
    },
    Divine {
        day: i64,
        seer: usize,
        target: usize,
        result: Species,
    },
    Guard {
        day: i64,
        bodyguard: usize,
        target: usize,
        target_role: Role,
    },
    AttackVote {
        day: i64,
        round: i64,
        wolf: usize,
        target: Option<usize>,
    },
    /// `target` None: no attack; `killed` false: guarded.
    Attack {
        day: i64,
        target: Option<usize>,
        killed: bool,
    },
    SeatError {
        day: i64,
        idx: usize,
        reason: String,
    },
    Finished {
        day: i64,
        winner: Team,
        reason: FinishReason,
        alive: Vec<bool>,
        alive_humans: usize,
        alive_wolves: usize,
    },
}

/// Receives the god-view events of a game.
pub trait Observer: Send {
    fn event(&mut self, event: &GameEvent);
}

impl Observer for Vec<GameEvent> {
    fn event(&mut self, event: &GameEvent) {
        self.push(event.clone());
    }
}

impl Observer for tokio::sync::mpsc::UnboundedSender<GameEvent> {
    fn event(&mut self, event: &GameEvent) {
        let _ = self.send(event.clone());
    }
}

/// Several observers at once.
pub struct Fanout(pub Vec<Box<dyn Observer>>);

impl Observer for Fanout {
    fn event(&mut self, event: &GameEvent) {
        for o in &mut self.0 {
            o.event(event);
        }
    }
}
