//! What one seat knows: [`View`], accumulated from the packets it is
//! sent (the per-day history diffs, results, remain counts).

use super::packet::{Judge, Packet, Request, Role, Setting, Status, Talk, Team, Vote};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

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

    /// The announced action timeout; the servers' default (60 s) when no
    /// setting came yet or it did not say (0: the official library's value
    /// for an absent `timeout.action`).
    pub fn action_timeout(&self) -> Duration {
        let ms = self
            .setting
            .as_ref()
            .map(|s| s.timeout.action)
            .filter(|ms| *ms > 0)
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
