//! The werewolf day being rebuilt, line by line: the agents (roles, lives,
//! votes), the day's talk, and one step per line that says something.

use super::line::Line;
use super::{MAX_STATE_BYTES, MAX_STEPS, TALK_LINES, short};
use crate::json::{Map, Value};
use crate::obj;
use crate::session::replay::{Step, StepKind};

/// One agent as the replay knows it.
#[derive(Debug, Clone, Default)]
pub(super) struct Agent {
    pub(super) idx: i64,
    pub(super) name: String,
    pub(super) original_name: String,
    pub(super) role: String,
    /// `alive`, `dead`, or `error` (an errored agent, the reference's
    /// empty status).
    pub(super) status: &'static str,
    /// How and when it died (`executed on day 1`, `attacked on night 2`).
    pub(super) death: Option<String>,
}

#[derive(Debug, Clone)]
pub(super) struct TalkLine {
    pub(super) day: i64,
    pub(super) idx: i64,
    pub(super) turn: i64,
    pub(super) agent: i64,
    pub(super) text: String,
    pub(super) whisper: bool,
}

/// The werewolf day being rebuilt.
pub(super) struct Wolf {
    pub(super) agents: Vec<Agent>,
    pub(super) day: i64,
    pub(super) phase: &'static str,
    /// A talk line came today (a whisper after it is the night's).
    pub(super) talked: bool,
    pub(super) talk: std::collections::VecDeque<TalkLine>,
    pub(super) votes: Vec<(i64, i64)>,
    pub(super) vote_round: i64,
    pub(super) attack_votes: Vec<(i64, i64)>,
    pub(super) executed: Option<Map>,
    pub(super) attacked: Option<Map>,
    pub(super) divined: Option<Map>,
    pub(super) guarded: Option<Map>,
    pub(super) result: Option<Map>,
    pub(super) last_summary: String,
    pub(super) steps: Vec<Step>,
    pub(super) t: f64,
    /// About how many bytes the steps' states take.
    pub(super) bytes: usize,
    pub(super) truncated: bool,
}

impl Wolf {
    pub(super) fn agent(&mut self, idx: i64) -> &mut Agent {
        let pos = match self.agents.binary_search_by_key(&idx, |a| a.idx) {
            Ok(p) => p,
            Err(p) => {
                self.agents.insert(
                    p,
                    Agent {
                        idx,
                        status: "alive",
                        ..Agent::default()
                    },
                );
                p
            }
        };
        &mut self.agents[pos]
    }

    /// `5 ミヅキ` (or `agent 5` when no name is known).
    pub(super) fn who(&self, idx: i64) -> String {
        match self.agents.iter().find(|a| a.idx == idx) {
            Some(a) if !a.name.is_empty() => format!("{idx} {}", a.name),
            _ => format!("agent {idx}"),
        }
    }

    pub(super) fn role_of(&self, idx: i64) -> String {
        self.agents
            .iter()
            .find(|a| a.idx == idx)
            .map(|a| a.role.clone())
            .unwrap_or_default()
    }

    /// A new day: its talk and votes start empty.
    pub(super) fn enter_day(&mut self, day: i64) {
        if day != self.day {
            self.day = day;
            self.talk.clear();
            self.votes.clear();
            self.attack_votes.clear();
            self.vote_round = 0;
            self.talked = false;
        }
    }

    pub(super) fn kill(&mut self, idx: i64, how: String) {
        let a = self.agent(idx);
        a.status = "dead";
        a.death.get_or_insert(how);
    }

    /// The state after a step (see [`state`]).
    pub(super) fn state(&self) -> Map {
        let alive = self.agents.iter().filter(|a| a.status != "dead").count();
        let agents: Vec<Value> = self
            .agents
            .iter()
            .map(|a| {
                let mut m = obj! {
                    "idx" => a.idx,
                    "name" => a.name.as_str(),
                    "original_name" => a.original_name.as_str(),
                    "role" => a.role.as_str(),
                    "status" => a.status,
                };
                if let Some(d) = &a.death {
                    m.insert("death", Value::from(d.as_str()));
                }
                Value::Object(m)
            })
            .collect();
        let talk: Vec<Value> = self
            .talk
            .iter()
            .map(|l| {
                Value::Object(obj! {
                    "day" => l.day,
                    "idx" => l.idx,
                    "turn" => l.turn,
                    "agent" => l.agent,
                    "name" => self.who(l.agent),
                    "text" => l.text.as_str(),
                    "whisper" => l.whisper,
                })
            })
            .collect();
        let pairs = |v: &[(i64, i64)]| -> Value {
            Value::Array(
                v.iter()
                    .map(|(a, t)| Value::Object(obj! { "agent" => *a, "target" => *t }))
                    .collect(),
            )
        };
        let opt = |m: &Option<Map>| m.clone().map_or(Value::Null, Value::Object);
        let mut m = obj! {
            "phase" => self.phase,
            "day" => self.day,
            "alive" => alive,
            "agents" => agents,
            "talk" => talk,
            "votes" => pairs(&self.votes),
            "vote_round" => self.vote_round,
            "attack_votes" => pairs(&self.attack_votes),
            "executed" => opt(&self.executed),
            "attacked" => opt(&self.attacked),
            "divined" => opt(&self.divined),
            "guarded" => opt(&self.guarded),
            "last_event" => obj! { "summary" => self.last_summary.as_str() },
        };
        if let Some(r) = &self.result {
            m.insert("result", Value::Object(r.clone()));
        }
        m
    }

    /// About how many bytes a state takes in memory (for
    /// [`MAX_STATE_BYTES`]; measured: a JSON map's entry is some 100 bytes).
    pub(super) fn state_bytes(&self) -> usize {
        let agents: usize = self
            .agents
            .iter()
            .map(|a| 600 + 2 * (a.name.len() + a.original_name.len()) + a.role.len())
            .sum();
        let talk: usize = self.talk.iter().map(|l| 720 + 2 * l.text.len()).sum();
        let votes = 240 * (self.votes.len() + self.attack_votes.len());
        1600 + agents + talk + votes + 2 * self.last_summary.len()
    }

    pub(super) fn push(&mut self, kind: StepKind, action: &str, summary: String, pace: f64) {
        let bytes = self.state_bytes();
        if self.steps.len() >= MAX_STEPS || self.bytes + bytes > MAX_STATE_BYTES {
            self.truncated = true;
            return;
        }
        self.bytes += bytes;
        if !self.steps.is_empty() {
            self.t += pace;
        }
        self.last_summary = short(&summary);
        let state = self.state();
        self.steps.push(Step {
            ts: String::new(),
            t: (self.t * 1000.0).round() / 1000.0,
            kind,
            action: action.to_owned(),
            summary: self.last_summary.clone(),
            by: None,
            state,
        });
    }

    /// A status block read whole: the day's lives, one step.
    pub(super) fn status_block(&mut self, day: i64, block: Vec<Line>) {
        self.enter_day(day);
        for l in block {
            if let Line::Status {
                agent,
                role,
                status,
                original_name,
                name,
                ..
            } = l
            {
                let a = self.agent(agent);
                a.role = role;
                a.original_name = original_name;
                a.name = name;
                a.status = match status.as_str() {
                    "ALIVE" => "alive",
                    "DEAD" => "dead",
                    _ => "error",
                };
                if a.status != "dead" {
                    a.death = None;
                } else if a.death.is_none() {
                    a.death = Some("dead".into());
                }
            }
        }
        self.phase = "day";
        let total = self.agents.len();
        let alive = self.agents.iter().filter(|a| a.status != "dead").count();
        let dead: Vec<String> = self
            .agents
            .iter()
            .filter(|a| a.status == "dead")
            .map(|a| self.who(a.idx))
            .collect();
        let errored: Vec<String> = self
            .agents
            .iter()
            .filter(|a| a.status == "error")
            .map(|a| self.who(a.idx))
            .collect();
        let mut summary = format!("day {day}: {alive} of {total} alive");
        if !dead.is_empty() {
            summary.push_str(&format!("; dead: {}", dead.join(", ")));
        }
        if !errored.is_empty() {
            summary.push_str(&format!("; errored: {}", errored.join(", ")));
        }
        self.push(StepKind::Werewolf, "status", summary, 1.5);
    }

    pub(super) fn line(&mut self, l: Line, finish: &mut Finish) {
        self.enter_day(l.day());
        let kind = l.kind();
        match l {
            Line::Status { .. } => {} // read as blocks
            Line::Talk {
                day,
                whisper,
                idx,
                turn,
                agent,
                text,
            } => {
                if whisper {
                    if self.talked || self.phase == "vote" || self.phase == "night" {
                        self.phase = "night";
                    }
                } else {
                    self.talked = true;
                    self.phase = "talk";
                }
                let quiet = matches!(text.as_str(), "Over" | "Skip" | "");
                let who = self.who(agent);
                let summary = if whisper {
                    format!("{who} whispers: {text}")
                } else {
                    format!("{who}: {text}")
                };
                if !quiet {
                    self.talk.push_back(TalkLine {
                        day,
                        idx,
                        turn,
                        agent,
                        text,
                        whisper,
                    });
                    while self.talk.len() > TALK_LINES {
                        self.talk.pop_front();
                    }
                }
                self.push(
                    StepKind::Werewolf,
                    kind,
                    summary,
                    if quiet { 0.2 } else { 1.0 },
                );
            }
            Line::Vote {
                attack: false,
                agent,
                target,
                ..
            } => {
                self.phase = "vote";
                // A voter voting again: a new round (a tie's revote).
                if self.vote_round == 0 || self.votes.iter().any(|(a, _)| *a == agent) {
                    self.vote_round += 1;
                    self.votes.clear();
                }
                self.votes.push((agent, target));
                let summary = format!("{} votes for {}", self.who(agent), self.who(target));
                self.push(StepKind::Werewolf, kind, summary, 0.5);
            }
            Line::Vote {
                attack: true,
                agent,
                target,
                ..
            } => {
                self.phase = "night";
                if self.attack_votes.iter().any(|(a, _)| *a == agent) {
                    self.attack_votes.clear();
                }
                self.attack_votes.push((agent, target));
                let summary = format!("{} votes to attack {}", self.who(agent), self.who(target));
                self.push(StepKind::Werewolf, kind, summary, 0.5);
            }
            Line::Execute { day, agent, role } => {
                self.phase = "vote";
                {
                    let a = self.agent(agent);
                    if a.role.is_empty() {
                        a.role = role.clone();
                    }
                }
                self.kill(agent, format!("executed on day {day}"));
                self.executed =
                    Some(obj! { "day" => day, "agent" => agent, "role" => role.as_str() });
                let summary = format!("{} ({role}) is executed", self.who(agent));
                self.push(StepKind::Werewolf, kind, summary, 1.0);
            }
            Line::Divine {
                day,
                seer,
                target,
                species,
            } => {
                self.phase = "night";
                self.divined = Some(obj! {
                    "day" => day, "agent" => seer, "target" => target, "species" => species.as_str(),
                });
                let summary = format!("{} divines {}: {species}", self.who(seer), self.who(target));
                self.push(StepKind::Werewolf, kind, summary, 1.0);
            }
            Line::Guard {
                day,
                bodyguard,
                target,
                role,
            } => {
                self.phase = "night";
                self.guarded = Some(obj! {
                    "day" => day, "agent" => bodyguard, "target" => target, "role" => role.as_str(),
                });
                let summary = format!(
                    "{} guards {} ({role})",
                    self.who(bodyguard),
                    self.who(target)
                );
                self.push(StepKind::Werewolf, kind, summary, 1.0);
            }
            Line::Attack {
                day,
                target,
                killed,
            } => {
                self.phase = "night";
                let summary = match target {
                    None => "the werewolves attack nobody".to_owned(),
                    Some(t) if killed => {
                        self.kill(t, format!("attacked on night {day}"));
                        format!("{} ({}) is attacked and dies", self.who(t), self.role_of(t))
                    }
                    Some(t) => format!("the attack on {} fails: guarded", self.who(t)),
                };
                self.attacked = Some(obj! {
                    "day" => day,
                    "agent" => target.map_or(Value::Null, Value::from),
                    "killed" => killed && target.is_some(),
                });
                self.push(StepKind::Werewolf, kind, summary, 1.0);
            }
            Line::Result {
                humans,
                wolves,
                winner,
                ..
            } => {
                self.phase = "game over";
                let plural = |n: i64, one: &str, many: &str| {
                    format!("{n} {}", if n == 1 { one } else { many })
                };
                let alive = format!(
                    "{} and {} alive",
                    plural(humans, "human", "humans"),
                    plural(wolves, "werewolf", "werewolves")
                );
                let summary = if winner == "NONE" {
                    format!("game over, no winner (NONE): {alive}")
                } else {
                    format!("game over, {winner} wins: {alive}")
                };
                self.result = Some(obj! {
                    "winner" => winner.as_str(),
                    "alive_humans" => humans,
                    "alive_werewolves" => wolves,
                });
                finish.winner = Some(winner.clone());
                finish.reason = Some(if winner == "NONE" {
                    "no winner".to_owned()
                } else {
                    "finished".to_owned()
                });
                self.push(StepKind::Ended, kind, summary, 1.5);
            }
        }
    }
}

#[derive(Default)]
pub(super) struct Finish {
    pub(super) winner: Option<String>,
    pub(super) reason: Option<String>,
}
