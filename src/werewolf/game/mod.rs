//! The game master: a pure, seeded state machine over the AIWolf rules. It
//! does no I/O of its own — every packet goes through a [`Transport`] (the
//! WebSocket server, or in-process bots) and every god-view fact goes to an
//! [`Observer`] (logs, the realtime feed, a console). Given the same seed,
//! configuration and answers, a game replays exactly.
//!
//! Here: seating, packets and the day loop; `events` has the Transport and
//! Observer sides (re-exported here), `talk` the talk, whisper and
//! group-chat phases, `actions` the vote and the night's actions.

mod actions;
mod events;
mod talk;

use super::config::Config;
use super::packet::{Info, Judge, Packet, Request, Role, Species, Status, Talk, Team, Vote};
pub use events::{
    Deadline, Fanout, FinishReason, GameEvent, Observer, Phase, Reply, SeatView, Transport,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

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
}
