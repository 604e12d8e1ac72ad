//! A seat at a remote `palaver wolf serve` (or any AIWolf NLP) server: the
//! packets that seat receives, turned into the events the player board
//! folds — only what the seat was told (its own role, fellow wolves,
//! results addressed to it, the talk it heard, the roles at FINISH).

use crate::werewolf::View;
use crate::werewolf::agent::{ChannelDecider, Decider};
use crate::werewolf::game::{FinishReason, GameEvent, Phase, SeatView};
use crate::werewolf::{Packet, Request, Role, Species, Status, Team};
use std::collections::BTreeMap;
use std::future::Future;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

/// What the board learns from one packet.
#[derive(Debug, Clone, PartialEq)]
pub enum SeatNews {
    /// The seat is known: seat `idx` (1-based) of the game.
    Seated(usize),
    Event(GameEvent),
    /// Roles told at FINISH (1-based seat, role).
    Reveal(Vec<(usize, Role)>),
}

/// Turns a seat's packets into board news.
#[derive(Debug, Default)]
pub struct SeatFeed {
    /// In-game names, in seat order (the status map's order).
    names: Vec<String>,
    day: i64,
    phase: Option<(i64, Phase)>,
    talks: std::collections::BTreeSet<(bool, i64, i64)>,
    my_role: Option<Role>,
    finished: bool,
}

impl SeatFeed {
    fn idx(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name).map(|i| i + 1)
    }

    fn alive(&self, status: &BTreeMap<String, Status>) -> Vec<bool> {
        self.names
            .iter()
            .map(|n| status.get(n) == Some(&Status::Alive))
            .collect()
    }

    fn phase(&mut self, out: &mut Vec<SeatNews>, phase: Phase) {
        if self.phase != Some((self.day, phase)) {
            self.phase = Some((self.day, phase));
            out.push(SeatNews::Event(GameEvent::Phase {
                day: self.day,
                phase,
            }));
        }
    }

    /// The news in `p` (already folded into `view`).
    pub fn feed(&mut self, view: &View, p: &Packet) -> Vec<SeatNews> {
        let mut out = Vec::new();
        if self.finished && p.request != Request::Initialize {
            return out;
        }
        if let Some(info) = &p.info {
            if p.request == Request::Initialize || self.names.is_empty() {
                *self = SeatFeed {
                    names: info.status_map.keys().cloned().collect(),
                    ..SeatFeed::default()
                };
                self.my_role = info.role_map.get(&info.agent).copied();
                let Some(me) = self.idx(&info.agent) else {
                    return out;
                };
                out.push(SeatNews::Seated(me));
                let seats = self
                    .names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| SeatView {
                        idx: i + 1,
                        name: n.clone(),
                        original_name: String::new(),
                        team: String::new(),
                        // Unknown roles stay hidden on a player's board.
                        role: info.role_map.get(n).copied().unwrap_or(Role::Villager),
                        profile: None,
                        avatar: None,
                    })
                    .collect();
                out.push(SeatNews::Event(GameEvent::Started {
                    game_id: info.game_id.clone(),
                    seats,
                }));
            }
            self.day = info.day;
            if p.request == Request::DailyInitialize {
                self.daily(info, &mut out);
            }
        }
        match p.request {
            Request::Talk | Request::TalkPhaseStart => self.phase(&mut out, Phase::Talk),
            Request::Whisper | Request::WhisperPhaseStart => {
                let today = self.phase.filter(|(d, _)| *d == self.day).map(|(_, p)| p);
                let ph = match today {
                    None | Some(Phase::MorningWhisper) => Phase::MorningWhisper,
                    Some(Phase::Talk | Phase::EveningWhisper) => Phase::EveningWhisper,
                    Some(_) => Phase::NightWhisper,
                };
                self.phase(&mut out, ph);
            }
            Request::Vote => self.phase(&mut out, Phase::Execution),
            Request::Divine => self.phase(&mut out, Phase::Divine),
            Request::Guard => self.phase(&mut out, Phase::Guard),
            Request::Attack => self.phase(&mut out, Phase::Attack),
            _ => {}
        }
        self.talks_of(p, &mut out);
        if p.request == Request::Finish {
            self.finish(view, &mut out);
        }
        out
    }

    fn talks_of(&mut self, p: &Packet, out: &mut Vec<SeatNews>) {
        let talks = p
            .talk_history
            .iter()
            .flatten()
            .chain(p.new_talk.iter())
            .map(|t| (false, t));
        let whispers = p
            .whisper_history
            .iter()
            .flatten()
            .chain(p.new_whisper.iter())
            .map(|t| (true, t));
        for (whisper, t) in talks.chain(whispers) {
            if !self.talks.insert((whisper, t.day, t.idx)) {
                continue;
            }
            if let Some(idx) = self.idx(&t.agent) {
                out.push(SeatNews::Event(GameEvent::Talk {
                    whisper,
                    idx,
                    talk: t.clone(),
                }));
            }
        }
    }

    fn daily(&mut self, info: &crate::werewolf::packet::Info, out: &mut Vec<SeatNews>) {
        let day = info.day;
        let yesterday = day - 1;
        // Yesterday's votes as one tally (the last round the seat saw).
        let votes: Vec<_> = info
            .vote_list
            .iter()
            .filter(|v| v.day == yesterday)
            .collect();
        let executed = info.executed_agent.as_deref().and_then(|n| self.idx(n));
        if !votes.is_empty() {
            let mut count: BTreeMap<usize, usize> = BTreeMap::new();
            for v in &votes {
                if let Some(t) = self.idx(&v.target) {
                    *count.entry(t).or_default() += 1;
                }
            }
            let mut tally: Vec<(usize, usize)> = count.into_iter().collect();
            tally.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            out.push(SeatNews::Event(GameEvent::VoteTally {
                day: yesterday,
                round: 0,
                last: true,
                tally,
                executed,
            }));
        }
        if let Some(idx) = executed {
            // Only a medium learns more than the name: its result's species.
            let role = match (&info.medium_result, self.my_role) {
                (Some(j), Some(Role::Medium)) if self.idx(&j.target) == Some(idx) => {
                    match j.result {
                        Species::Werewolf => Role::Werewolf,
                        Species::Human => Role::Villager,
                    }
                }
                _ => Role::Villager,
            };
            out.push(SeatNews::Event(GameEvent::Executed {
                day: yesterday,
                idx,
                role,
            }));
        }
        if let Some(j) = &info.divine_result
            && let (Some(seer), Some(target)) = (self.idx(&j.agent), self.idx(&j.target))
        {
            out.push(SeatNews::Event(GameEvent::Divine {
                day: j.day,
                seer,
                target,
                result: j.result,
            }));
        }
        if day >= 2 {
            let target = info.attacked_agent.as_deref().and_then(|n| self.idx(n));
            out.push(SeatNews::Event(GameEvent::Attack {
                day: yesterday,
                target,
                killed: target.is_some(),
            }));
        }
        out.push(SeatNews::Event(GameEvent::DayStarted {
            day,
            alive: self.alive(&info.status_map),
        }));
    }

    fn finish(&mut self, view: &View, out: &mut Vec<SeatNews>) {
        self.finished = true;
        let reveal: Vec<(usize, Role)> = view
            .roles
            .iter()
            .filter_map(|(n, r)| Some((self.idx(n)?, *r)))
            .collect();
        out.push(SeatNews::Reveal(reveal));
        let alive = self.alive(&view.status);
        let (mut humans, mut wolves) = (0, 0);
        for (n, r) in &view.roles {
            if view.status.get(n) == Some(&Status::Alive) {
                if r.species() == Species::Werewolf {
                    wolves += 1;
                } else {
                    humans += 1;
                }
            }
        }
        let winner = view.finished.unwrap_or(Team::None);
        out.push(SeatNews::Event(GameEvent::Finished {
            day: view.day,
            winner,
            reason: if winner == Team::None {
                FinishReason::MaxDay
            } else {
                FinishReason::Victory
            },
            alive,
            alive_humans: humans,
            alive_wolves: wolves,
        }));
    }
}

/// The console's decider for a remote seat: the prompt's channel decides,
/// and every packet is handed on for the board.
pub struct ConsoleDecider {
    pub inner: ChannelDecider,
    pub packets: UnboundedSender<(View, Packet)>,
}

impl Decider for ConsoleDecider {
    fn observe(&mut self, view: &View, packet: &Packet) {
        let _ = self.packets.send((view.clone(), packet.clone()));
        self.inner.observe(view, packet);
    }
    fn decide(
        &mut self,
        view: &View,
        packet: &Packet,
        deadline: Instant,
    ) -> impl Future<Output = Option<String>> + Send {
        self.inner.decide(view, packet, deadline)
    }
}
