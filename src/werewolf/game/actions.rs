//! The day's vote and the night's actions: divine, guard, attack.

use super::{GameEvent, Observer, Transport, top_candidates};
use crate::werewolf::packet::{Judge, Packet, Request, Role, Vote};
use rand::seq::IndexedRandom;
use std::collections::BTreeMap;

impl super::Game {
    /// Parses a target reply: a known name, else None.
    fn target(&self, text: Option<String>) -> Option<usize> {
        text.and_then(|t| self.seat_by_name(t.trim_end_matches('\r')))
    }

    pub(super) async fn execution<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer) {
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

    pub(super) async fn divine<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer) {
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

    pub(super) async fn guard<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer) {
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

    pub(super) async fn attack<T: Transport>(&mut self, io: &mut T, obs: &mut dyn Observer) {
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
