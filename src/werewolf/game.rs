//! The game master: a pure, seeded state machine over the AIWolf rules. It
//! does no I/O of its own — every packet goes through a [`Transport`] (the
//! WebSocket server, or in-process bots) and every god-view fact goes to an
//! [`Observer`] (logs, the realtime feed, a console). Given the same seed,
//! configuration and answers, a game replays exactly.

use super::config::{Config, LengthConfig, TalkConfig};
use super::length;
use super::packet::{Info, Judge, Packet, Request, Role, Species, Status, Talk, Team, Vote};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Group chat: unusable frames (empty, past the length budget) a seat may
/// send in one phase before it is no longer read until the phase ends.
pub const IGNORED_CHAT_FRAMES: usize = 100;

/// Team name from a connection name: trailing ASCII digits removed, after
/// trailing newlines are stripped (`kanolab12` → `kanolab`, `123` → ``).
pub fn team_name(connection_name: &str) -> String {
    connection_name
        .trim_end_matches('\n')
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .to_owned()
}

/// `Agent[01]` … the default in-game names.
pub fn agent_name(idx: usize) -> String {
    format!("Agent[{idx:02}]")
}

/// One role per seat, drawn from the counts (shuffled).
pub fn assign_roles(counts: &BTreeMap<Role, i64>, rng: &mut StdRng) -> Vec<Role> {
    let mut roles: Vec<Role> = counts
        .iter()
        .flat_map(|(r, n)| std::iter::repeat_n(*r, usize::try_from(*n).unwrap_or(0)))
        .collect();
    roles.shuffle(rng);
    roles
}

/// The targets with the most votes (seat indices, ascending).
pub fn top_candidates(targets: &[usize]) -> Vec<usize> {
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for t in targets {
        *counts.entry(*t).or_default() += 1;
    }
    let max = counts.values().copied().max().unwrap_or(0);
    counts
        .into_iter()
        .filter(|(_, n)| *n == max && max > 0)
        .map(|(t, _)| t)
        .collect()
}

/// Who wins, given the roles of the seats still alive: wolves reach
/// parity (the possessed counts as human) → WEREWOLF; no wolf → VILLAGER.
pub fn winner(alive_roles: &[Role]) -> Option<Team> {
    let wolves = alive_roles
        .iter()
        .filter(|r| r.species() == Species::Werewolf)
        .count();
    let humans = alive_roles.len() - wolves;
    if wolves == 0 {
        Some(Team::Villager)
    } else if wolves >= humans {
        Some(Team::Werewolf)
    } else {
        None
    }
}

/// A new ULID (26 chars, Crockford base32) from a time and an RNG.
pub fn ulid(now_ms: u64, rng: &mut StdRng) -> String {
    use rand::Rng;
    const ALPHA: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let rand_bits: u128 = rng.random::<u128>() & ((1u128 << 80) - 1);
    let v: u128 = ((now_ms as u128 & ((1u128 << 48) - 1)) << 80) | rand_bits;
    (0..26)
        .rev()
        .map(|i| ALPHA[((v >> (i * 5)) & 31) as usize] as char)
        .collect()
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

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

/// A player entering a game: connection name and team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entrant {
    pub original_name: String,
    pub team: String,
}

impl Entrant {
    pub fn new(original_name: &str) -> Entrant {
        Entrant {
            original_name: original_name.to_owned(),
            team: team_name(original_name),
        }
    }
}

/// How the game ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub game_id: String,
    pub winner: Team,
    pub reason: FinishReason,
    pub day: i64,
    pub seats: Vec<SeatView>,
    /// (idx, reason) of seats that broke.
    pub errors: Vec<(usize, String)>,
}

struct Seat {
    view: SeatView,
    alive: bool,
    error: Option<String>,
    talk_ptr: usize,
    whisper_ptr: usize,
}

#[derive(Clone, Copy)]
struct Remain {
    count: i64,
    length: Option<i64>,
    skip: i64,
}

/// One game of werewolf.
pub struct Game {
    cfg: Arc<Config>,
    setting: super::packet::Setting,
    rng: StdRng,
    game_id: String,
    seats: Vec<Seat>,
    day: i64,
    talks: Vec<Talk>,
    whispers: Vec<Talk>,
    executed: Option<(i64, usize)>,
    attacked: Option<(i64, usize)>,
    votes: (i64, Vec<Vote>),
    attack_votes: (i64, Vec<Vote>),
    divine: Option<Judge>,
    medium: Option<Judge>,
    guard: Option<usize>,
}

impl Game {
    /// Seats the entrants (in order; idx 1..N) with roles drawn from the
    /// configuration, or from `roles` when given (match schedules, tests).
    pub fn new(
        cfg: Arc<Config>,
        entrants: &[Entrant],
        seed: u64,
        roles: Option<Vec<Role>>,
    ) -> Result<Game, super::WolfError> {
        let n = cfg.game.agent_count;
        if entrants.len() != n {
            return Err(super::WolfError::Config(format!(
                "{} entrants for a {n}-player game",
                entrants.len()
            )));
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let counts = cfg.role_counts()?;
        let roles = match roles {
            Some(r) if r.len() == n => r,
            Some(r) => {
                return Err(super::WolfError::Config(format!(
                    "{} roles for a {n}-player game",
                    r.len()
                )));
            }
            None => assign_roles(&counts, &mut rng),
        };
        let profiles: Vec<&super::config::Profile> = if cfg.custom_profile.enable {
            let mut p: Vec<_> = cfg.custom_profile.profiles.iter().collect();
            p.shuffle(&mut rng);
            p.truncate(n);
            p
        } else {
            Vec::new()
        };
        let game_id = ulid(now_ms() as u64, &mut rng);
        let seats = entrants
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let avatar = profiles.get(i).and_then(|p| p.avatar.clone());
                let (name, profile) = match profiles.get(i) {
                    Some(p) => (
                        p.name.clone(),
                        Some(
                            p.fields
                                .iter()
                                .map(|(k, v)| format!("{k}: {v}"))
                                .collect::<Vec<_>>()
                                .join("\n"),
                        )
                        .filter(|s| !s.is_empty()),
                    ),
                    None => (agent_name(i + 1), None),
                };
                Seat {
                    view: SeatView {
                        idx: i + 1,
                        name,
                        original_name: e.original_name.clone(),
                        team: e.team.clone(),
                        role: roles[i],
                        profile,
                        avatar,
                    },
                    alive: true,
                    error: None,
                    talk_ptr: 0,
                    whisper_ptr: 0,
                }
            })
            .collect();
        let setting = cfg.setting();
        Ok(Game {
            cfg,
            setting,
            rng,
            game_id,
            seats,
            day: 0,
            talks: Vec::new(),
            whispers: Vec::new(),
            executed: None,
            attacked: None,
            votes: (-1, Vec::new()),
            attack_votes: (-1, Vec::new()),
            divine: None,
            medium: None,
            guard: None,
        })
    }

    pub fn game_id(&self) -> &str {
        &self.game_id
    }

    pub fn seats(&self) -> Vec<SeatView> {
        self.seats.iter().map(|s| s.view.clone()).collect()
    }

    fn name(&self, seat: usize) -> &str {
        &self.seats[seat].view.name
    }

    fn role(&self, seat: usize) -> Role {
        self.seats[seat].view.role
    }

    /// Seats that still get requests: alive and not broken.
    fn active(&self, seat: usize) -> bool {
        self.seats[seat].alive && self.seats[seat].error.is_none()
    }

    fn seat_by_name(&self, name: &str) -> Option<usize> {
        self.seats.iter().position(|s| s.view.name == name)
    }

    fn alive_flags(&self) -> Vec<bool> {
        self.seats.iter().map(|s| s.alive).collect()
    }

    /// The `info` object for one seat. `remain` only inside a session.
    fn info(&self, seat: usize, remain: Option<Remain>, finish: bool) -> Info {
        let role = self.role(seat);
        let prev = self.day - 1;
        let mut info = Info {
            game_id: self.game_id.clone(),
            day: self.day,
            agent: self.name(seat).to_owned(),
            ..Info::default()
        };
        if role == Role::Seer {
            info.divine_result = self.divine.clone().filter(|j| j.day == prev);
        }
        if role == Role::Medium {
            info.medium_result = self.medium.clone().filter(|j| j.day == prev);
        }
        if let Some((d, s)) = self.executed
            && d == prev
        {
            info.executed_agent = Some(self.name(s).to_owned());
        }
        if let Some((d, s)) = self.attacked
            && d == prev
        {
            info.attacked_agent = Some(self.name(s).to_owned());
        }
        if self.cfg.game.vote_visibility {
            if self.votes.0 == prev {
                info.vote_list = self.votes.1.clone();
            }
            if role == Role::Werewolf && self.attack_votes.0 == prev {
                info.attack_vote_list = self.attack_votes.1.clone();
            }
        }
        if let Some(r) = remain {
            info.remain_count = Some(r.count);
            info.remain_length = r.length;
            info.remain_skip = Some(r.skip);
        }
        for s in &self.seats {
            info.status_map.insert(
                s.view.name.clone(),
                if s.alive { Status::Alive } else { Status::Dead },
            );
        }
        for s in &self.seats {
            let visible = finish
                || s.view.idx == seat + 1
                || (role == Role::Werewolf && s.view.role == Role::Werewolf);
            if visible {
                info.role_map.insert(s.view.name.clone(), s.view.role);
            }
        }
        info
    }

    fn talk_diff(&mut self, seat: usize) -> Vec<Talk> {
        let from = self.seats[seat].talk_ptr.min(self.talks.len());
        self.seats[seat].talk_ptr = self.talks.len();
        self.talks[from..].to_vec()
    }

    fn whisper_diff(&mut self, seat: usize) -> Vec<Talk> {
        let from = self.seats[seat].whisper_ptr.min(self.whispers.len());
        self.seats[seat].whisper_ptr = self.whispers.len();
        self.whispers[from..].to_vec()
    }

    async fn fail(&mut self, seat: usize, reason: String, obs: &mut dyn Observer) {
        if self.seats[seat].error.is_none() {
            obs.event(&GameEvent::SeatError {
                day: self.day,
                idx: seat + 1,
                reason: reason.clone(),
            });
            self.seats[seat].error = Some(reason);
        }
    }

    async fn send<T: Transport>(
        &mut self,
        io: &mut T,
        seat: usize,
        p: Packet,
        obs: &mut dyn Observer,
    ) {
        if self.seats[seat].error.is_some() {
            return;
        }
        if let Err(e) = io.send(seat, &p).await {
            self.fail(seat, e, obs).await;
        }
    }

    /// Asks and returns the usable text (newlines removed), or None when
    /// the action failed or the seat broke.
    async fn ask<T: Transport>(
        &mut self,
        io: &mut T,
        seat: usize,
        p: Packet,
        obs: &mut dyn Observer,
    ) -> Option<String> {
        if self.seats[seat].error.is_some() {
            return None;
        }
        match io.ask(seat, &p).await {
            Reply::Text(t) => Some(t.replace('\n', "")),
            Reply::Failed(_) => None,
            Reply::Error(e) => {
                self.fail(seat, e, obs).await;
                None
            }
        }
    }

    fn error_count(&self) -> usize {
        self.seats.iter().filter(|s| s.error.is_some()).count()
    }

    /// Abort check first, then the win check.
    fn check(&self) -> Option<(Team, FinishReason)> {
        if self.error_count() >= self.cfg.abort_threshold() {
            return Some((Team::None, FinishReason::AbortedByError));
        }
        let alive: Vec<Role> = self
            .seats
            .iter()
            .filter(|s| s.alive)
            .map(|s| s.view.role)
            .collect();
        winner(&alive).map(|t| (t, FinishReason::Victory))
    }

    /// Plays the game to the end.
    pub async fn run<T: Transport>(mut self, io: &mut T, obs: &mut dyn Observer) -> Outcome {
        obs.event(&GameEvent::Started {
            game_id: self.game_id.clone(),
            seats: self.seats(),
        });
        for seat in 0..self.seats.len() {
            let mut info = self.info(seat, None, false);
            info.profile = self.seats[seat].view.profile.clone();
            let p = Packet {
                setting: Some(self.setting.clone()),
                ..Packet::with_info(Request::Initialize, info)
            };
            self.send(io, seat, p, obs).await;
        }
        let (winner, reason) = loop {
            if let Some(end) = self.play_day(io, obs).await {
                self.day += 1;
                break end;
            }
            self.day += 1;
            // Unset max_day still stops at the limit: agents that never
            // vote or attack validly would otherwise play forever.
            let max_day = match self.cfg.game.max_day {
                d if d >= 0 => d.min(crate::limits::WOLF_DAYS.max),
                _ => crate::limits::WOLF_DAYS.max,
            };
            if self.day > max_day {
                break (Team::None, FinishReason::MaxDay);
            }
            if let Some(end) = self.check() {
                break end;
            }
        };
        self.finish(io, obs, winner, reason).await
    }

    async fn finish<T: Transport>(
        &mut self,
        io: &mut T,
        obs: &mut dyn Observer,
        winner: Team,
        reason: FinishReason,
    ) -> Outcome {
        let wolves = self
            .seats
            .iter()
            .filter(|s| s.alive && s.view.role.species() == Species::Werewolf)
            .count();
        let alive = self.seats.iter().filter(|s| s.alive).count();
        obs.event(&GameEvent::Finished {
            day: self.day,
            winner,
            reason,
            alive: self.alive_flags(),
            alive_humans: alive - wolves,
            alive_wolves: wolves,
        });
        for seat in 0..self.seats.len() {
            let info = self.info(seat, None, true);
            self.send(io, seat, Packet::with_info(Request::Finish, info), obs)
                .await;
        }
        Outcome {
            game_id: self.game_id.clone(),
            winner,
            reason,
            day: self.day,
            seats: self.seats(),
            errors: self
                .seats
                .iter()
                .filter_map(|s| s.error.clone().map(|e| (s.view.idx, e)))
                .collect(),
        }
    }

    /// One day and its night. Some(..) when the game ends.
    async fn play_day<T: Transport>(
        &mut self,
        io: &mut T,
        obs: &mut dyn Observer,
    ) -> Option<(Team, FinishReason)> {
        let d = self.day;
        self.talks.clear();
        self.whispers.clear();
        for s in &mut self.seats {
            s.talk_ptr = 0;
            s.whisper_ptr = 0;
        }
        obs.event(&GameEvent::DayStarted {
            day: d,
            alive: self.alive_flags(),
        });
        for seat in 0..self.seats.len() {
            let info = self.info(seat, None, false);
            let p = Packet {
                setting: Some(self.setting.clone()),
                ..Packet::with_info(Request::DailyInitialize, info)
            };
            self.send(io, seat, p, obs).await;
        }
        if let Some(end) = self.check() {
            return Some(end);
        }
        macro_rules! phase {
            ($phase:expr, $body:expr) => {{
                obs.event(&GameEvent::Phase {
                    day: d,
                    phase: $phase,
                });
                $body;
                if let Some(end) = self.check() {
                    return Some(end);
                }
            }};
        }
        if d == 0 {
            phase!(Phase::MorningWhisper, self.session(io, obs, true).await);
        }
        phase!(Phase::Talk, self.session(io, obs, false).await);
        for seat in 0..self.seats.len() {
            let info = self.info(seat, None, false);
            let talk = self.talk_diff(seat);
            let whisper = (self.role(seat) == Role::Werewolf).then(|| self.whisper_diff(seat));
            let p = Packet {
                talk_history: Some(talk),
                whisper_history: whisper,
                ..Packet::with_info(Request::DailyFinish, info)
            };
            self.send(io, seat, p, obs).await;
        }
        if d == 0 {
            phase!(Phase::EveningWhisper, self.session(io, obs, true).await);
        } else {
            phase!(Phase::Execution, self.execution(io, obs).await);
        }
        phase!(Phase::Divine, self.divine(io, obs).await);
        if d >= 1 {
            phase!(Phase::NightWhisper, self.session(io, obs, true).await);
            phase!(Phase::Guard, self.guard(io, obs).await);
            phase!(Phase::Attack, self.attack(io, obs).await);
        }
        None
    }

    fn others(&self, seat: usize) -> Vec<String> {
        self.seats
            .iter()
            .filter(|s| s.view.idx != seat + 1)
            .map(|s| s.view.name.clone())
            .collect()
    }

    /// Runs one talk (or whisper) answer through the skip/over/length rules
    /// and records it. Returns true when the speaker is done (Over).
    #[allow(clippy::too_many_arguments)]
    fn record_talk(
        &mut self,
        seat: usize,
        whisper: bool,
        turn: i64,
        text: Option<String>,
        remain: &mut Remain,
        tc: &TalkConfig,
        obs: &mut dyn Observer,
    ) -> Talk {
        let lc: LengthConfig = tc.max_length;
        let text = match text.as_deref() {
            None => "Skip".to_owned(), // failed request: Skip, budget untouched
            Some("ForceSkip") | Some("Skip") => {
                if remain.skip > 0 {
                    remain.skip -= 1;
                    "Skip".to_owned()
                } else {
                    "Over".to_owned()
                }
            }
            Some("Over") => "Over".to_owned(),
            Some(t) => {
                remain.skip = tc.max_skip;
                let others = self.others(seat);
                let refs: Vec<&str> = others.iter().map(String::as_str).collect();
                length::apply(t, &lc, &refs, &mut remain.length)
            }
        };
        let list = if whisper {
            &mut self.whispers
        } else {
            &mut self.talks
        };
        let talk = Talk {
            idx: list.len() as i64,
            day: self.day,
            turn,
            agent: self.seats[seat].view.name.clone(),
            skip: text == "Skip",
            over: text == "Over",
            text,
            time: now_ms(),
        };
        list.push(talk.clone());
        if talk.over {
            remain.count = 0;
        }
        obs.event(&GameEvent::Talk {
            whisper,
            idx: seat + 1,
            talk: talk.clone(),
        });
        talk
    }

    async fn session<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer, whisper: bool) {
        let tc = if whisper {
            self.cfg.game.whisper
        } else {
            self.cfg.game.talk
        };
        let mut order: Vec<usize> = (0..self.seats.len())
            .filter(|&s| self.active(s) && (!whisper || self.role(s) == Role::Werewolf))
            .collect();
        let alive_members = (0..self.seats.len())
            .filter(|&s| self.seats[s].alive && (!whisper || self.role(s) == Role::Werewolf))
            .count();
        if alive_members < 2 || order.is_empty() || tc.max_count.per_agent <= 0 {
            return;
        }
        order.shuffle(&mut self.rng);
        let mut remain: BTreeMap<usize, Remain> = order
            .iter()
            .map(|&s| {
                (
                    s,
                    Remain {
                        count: tc.max_count.per_agent,
                        length: tc.max_length.per_agent(),
                        skip: tc.max_skip,
                    },
                )
            })
            .collect();
        if let Some(dur) = tc.duration {
            self.group_chat(io, obs, whisper, &tc, &order, &mut remain, dur.0)
                .await;
            return;
        }
        for turn in 0..tc.max_count.per_day {
            let mut spoke = false;
            for &seat in &order {
                let mut r = remain[&seat];
                if self.seats[seat].error.is_some()
                    || r.count <= 0
                    || r.length.is_some_and(|l| l <= 0)
                {
                    continue;
                }
                r.count -= 1;
                let info = self.info(seat, Some(r), false);
                let p = if whisper {
                    Packet {
                        whisper_history: Some(self.whisper_diff(seat)),
                        ..Packet::with_info(Request::Whisper, info)
                    }
                } else {
                    Packet {
                        talk_history: Some(self.talk_diff(seat)),
                        ..Packet::with_info(Request::Talk, info)
                    }
                };
                let text = self.ask(io, seat, p, obs).await;
                if self.seats[seat].error.is_some() {
                    remain.insert(seat, r);
                    continue;
                }
                let t = self.record_talk(seat, whisper, turn, text, &mut r, &tc, obs);
                if !t.over {
                    spoke = true;
                }
                remain.insert(seat, r);
            }
            if !spoke {
                break;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn group_chat<T: Transport>(
        &mut self,
        io: &mut T,
        obs: &mut dyn Observer,
        whisper: bool,
        tc: &TalkConfig,
        members: &[usize],
        remain: &mut BTreeMap<usize, Remain>,
        duration: Duration,
    ) {
        let (start, bcast, end) = if whisper {
            (
                Request::WhisperPhaseStart,
                Request::WhisperBroadcast,
                Request::WhisperPhaseEnd,
            )
        } else {
            (
                Request::TalkPhaseStart,
                Request::TalkBroadcast,
                Request::TalkPhaseEnd,
            )
        };
        for &s in members {
            let info = self.info(s, Some(remain[&s]), false);
            self.send(io, s, Packet::with_info(start, info), obs).await;
        }
        let deadline = tokio::time::Instant::now() + duration;
        let mut turns: BTreeMap<usize, i64> = BTreeMap::new();
        // Frames that count for nothing (empty, or past the length budget);
        // a seat that sends too many is not read again this phase.
        let mut ignored: BTreeMap<usize, usize> = BTreeMap::new();
        loop {
            let open: Vec<usize> = members
                .iter()
                .copied()
                .filter(|s| {
                    self.seats[*s].error.is_none()
                        && remain[s].count > 0
                        && ignored.get(s).copied().unwrap_or(0) < IGNORED_CHAT_FRAMES
                })
                .collect();
            if open.is_empty() {
                break;
            }
            let Some((seat, raw)) = io.next_chat(&open, deadline).await else {
                break;
            };
            if !open.contains(&seat) {
                continue;
            }
            let text = raw.replace('\n', "").trim().to_owned();
            let mut r = remain[&seat];
            if text.is_empty()
                || (text != "Over" && (r.count <= 0 || r.length.is_some_and(|l| l <= 0)))
            {
                *ignored.entry(seat).or_default() += 1;
                continue;
            }
            r.count -= 1;
            let turn = *turns.entry(seat).and_modify(|t| *t += 1).or_insert(0);
            let talk = self.record_talk(seat, whisper, turn, Some(text), &mut r, tc, obs);
            remain.insert(seat, r);
            for &s in members {
                if self.seats[s].error.is_some() {
                    continue;
                }
                let info = self.info(s, Some(remain[&s]), false);
                let mut p = Packet::with_info(bcast, info);
                if whisper {
                    p.new_whisper = Some(talk.clone());
                } else {
                    p.new_talk = Some(talk.clone());
                }
                self.send(io, s, p, obs).await;
            }
        }
        io.drain(members).await;
        for &s in members {
            let info = self.info(s, Some(remain[&s]), false);
            self.send(io, s, Packet::with_info(end, info), obs).await;
        }
    }

    /// Parses a target reply: a known name, else None.
    fn target(&self, text: Option<String>) -> Option<usize> {
        text.and_then(|t| self.seat_by_name(t.trim_end_matches('\r')))
    }

    async fn execution<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer) {
        let d = self.day;
        let rounds = self.cfg.game.vote.max_count;
        let allow_self = self.cfg.game.vote.allow_self_vote;
        let mut exiled = None;
        for round in 1..=rounds {
            let mut votes = Vec::new();
            let mut targets = Vec::new();
            for seat in 0..self.seats.len() {
                if !self.active(seat) {
                    continue;
                }
                let info = self.info(seat, None, false);
                let reply = self
                    .ask(io, seat, Packet::with_info(Request::Vote, info), obs)
                    .await;
                let t = self
                    .target(reply)
                    .filter(|&t| self.seats[t].alive && (allow_self || t != seat));
                obs.event(&GameEvent::Vote {
                    day: d,
                    round,
                    voter: seat + 1,
                    target: t.map(|t| t + 1),
                });
                if let Some(t) = t {
                    targets.push(t);
                    votes.push(Vote {
                        day: d,
                        agent: self.name(seat).to_owned(),
                        target: self.name(t).to_owned(),
                    });
                }
            }
            let top = top_candidates(&targets);
            let last = round == rounds;
            let chosen = match top.len() {
                0 => None,
                1 => top.first().copied(),
                _ if last => top.choose(&mut self.rng).copied(),
                _ => None,
            };
            let mut tally: BTreeMap<usize, usize> = BTreeMap::new();
            for t in &targets {
                *tally.entry(t + 1).or_default() += 1;
            }
            let mut tally: Vec<(usize, usize)> = tally.into_iter().collect();
            tally.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            obs.event(&GameEvent::VoteTally {
                day: d,
                round,
                last: last || chosen.is_some(),
                tally,
                executed: chosen.map(|c| c + 1),
            });
            if chosen.is_some() || last {
                self.votes = (d, votes);
                exiled = chosen;
                break;
            }
        }
        if let Some(x) = exiled {
            self.seats[x].alive = false;
            self.executed = Some((d, x));
            let role = self.role(x);
            obs.event(&GameEvent::Executed {
                day: d,
                idx: x + 1,
                role,
            });
            if self
                .seats
                .iter()
                .any(|s| s.view.role == Role::Medium && s.alive)
            {
                self.medium = Some(Judge {
                    day: d,
                    agent: self.name(x).to_owned(),
                    target: self.name(x).to_owned(),
                    result: role.species(),
                });
            }
        }
    }

    fn first_active(&self, role: Role) -> Option<usize> {
        (0..self.seats.len()).find(|&s| self.active(s) && self.role(s) == role)
    }

    async fn divine<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer) {
        let Some(seer) = self.first_active(Role::Seer) else {
            return;
        };
        let info = self.info(seer, None, false);
        let reply = self
            .ask(io, seer, Packet::with_info(Request::Divine, info), obs)
            .await;
        if let Some(t) = self
            .target(reply)
            .filter(|&t| t != seer && self.seats[t].alive)
        {
            let result = self.role(t).species();
            self.divine = Some(Judge {
                day: self.day,
                agent: self.name(seer).to_owned(),
                target: self.name(t).to_owned(),
                result,
            });
            obs.event(&GameEvent::Divine {
                day: self.day,
                seer: seer + 1,
                target: t + 1,
                result,
            });
        }
    }

    async fn guard<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer) {
        self.guard = None;
        let Some(bg) = self.first_active(Role::Bodyguard) else {
            return;
        };
        let info = self.info(bg, None, false);
        let reply = self
            .ask(io, bg, Packet::with_info(Request::Guard, info), obs)
            .await;
        if let Some(t) = self
            .target(reply)
            .filter(|&t| t != bg && self.seats[t].alive)
        {
            self.guard = Some(t);
            obs.event(&GameEvent::Guard {
                day: self.day,
                bodyguard: bg + 1,
                target: t + 1,
                target_role: self.role(t),
            });
        }
    }

    async fn attack<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer) {
        let d = self.day;
        let wolves: Vec<usize> = (0..self.seats.len())
            .filter(|&s| self.seats[s].alive && self.role(s) == Role::Werewolf)
            .collect();
        if wolves.is_empty() {
            return;
        }
        let rounds = self.cfg.game.attack_vote.max_count;
        let allow_none = self.cfg.game.attack_vote.allow_no_target;
        let allow_self = self.cfg.game.attack_vote.allow_self_vote;
        let mut target = None;
        for round in 1..=rounds {
            let mut votes = Vec::new();
            let mut targets = Vec::new();
            for &w in &wolves {
                if self.seats[w].error.is_some() {
                    continue;
                }
                let info = self.info(w, None, false);
                let p = Packet {
                    whisper_history: Some(self.whisper_diff(w)),
                    ..Packet::with_info(Request::Attack, info)
                };
                let reply = self.ask(io, w, p, obs).await;
                let t = self
                    .target(reply)
                    .filter(|&t| self.seats[t].alive && (allow_self || t != w));
                obs.event(&GameEvent::AttackVote {
                    day: d,
                    round,
                    wolf: w + 1,
                    target: t.map(|t| t + 1),
                });
                if let Some(t) = t {
                    votes.push(Vote {
                        day: d,
                        agent: self.name(w).to_owned(),
                        target: self.name(t).to_owned(),
                    });
                    if self.role(t) != Role::Werewolf {
                        targets.push(t);
                    }
                }
            }
            let top = top_candidates(&targets);
            let last = round == rounds;
            let chosen = match top.len() {
                0 => None,
                1 => top.first().copied(),
                _ if last && !allow_none => top.choose(&mut self.rng).copied(),
                _ => None,
            };
            if chosen.is_some() || last {
                self.attack_votes = (d, votes);
                target = chosen;
                break;
            }
        }
        let guarded = |t: usize| {
            self.guard == Some(t)
                && self
                    .seats
                    .iter()
                    .any(|s| s.alive && s.view.role == Role::Bodyguard)
        };
        match target {
            Some(t) if guarded(t) => {
                obs.event(&GameEvent::Attack {
                    day: d,
                    target: Some(t + 1),
                    killed: false,
                });
            }
            Some(t) => {
                self.seats[t].alive = false;
                self.attacked = Some((d, t));
                obs.event(&GameEvent::Attack {
                    day: d,
                    target: Some(t + 1),
                    killed: true,
                });
            }
            None => obs.event(&GameEvent::Attack {
                day: d,
                target: None,
                killed: true,
            }),
        }
    }
}
