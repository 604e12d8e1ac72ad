//! Talk and whisper sessions (turns, skips, the length rules) and the
//! group-chat phases.

use super::{GameEvent, IGNORED_CHAT_FRAMES, Observer, Remain, Transport, now_ms};
use crate::werewolf::config::{LengthConfig, TalkConfig};
use crate::werewolf::length;
use crate::werewolf::packet::{Packet, Request, Role, Talk};
use rand::seq::SliceRandom;
use std::collections::BTreeMap;
use std::time::Duration;

impl super::Game {
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

    pub(super) async fn session<T: Transport>(
        &mut self,
        io: &mut T,
        obs: &mut dyn Observer,
        whisper: bool,
    ) {
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
}
