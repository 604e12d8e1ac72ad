//! The replay view's state (R on the sessions screen): a finished session's
//! timeline, loaded by a task (`SessionTask::Replay` → `Report::Replay`),
//! the step shown, and playback at a speed driven by the console's ticks.

use crate::session::replay::Timeline;
use crate::tui::command::Command;
use std::time::Instant;

/// Speeds playback offers: ×1/8 … ×64 of the recorded pace.
pub const SPEEDS: [f64; 10] = [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
/// The speed a replay starts at (×1).
const START_SPEED: usize = 3;
/// A recorded pause longer than this plays as this (seconds of replay time).
pub const MAX_GAP: f64 = 2.0;

pub struct Replay {
    pub timeline: Box<Timeline>,
    /// The step shown (index into the steps).
    pub pos: usize,
    pub playing: bool,
    /// Index into [`SPEEDS`].
    pub speed: usize,
    /// Replay time gone since the step shown, and when it was last counted.
    waited: f64,
    last: Option<Instant>,
}

impl Replay {
    pub fn new(timeline: Box<Timeline>) -> Replay {
        Replay {
            timeline,
            pos: 0,
            playing: false,
            speed: START_SPEED,
            waited: 0.0,
            last: None,
        }
    }

    pub fn len(&self) -> usize {
        self.timeline.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timeline.steps.is_empty()
    }

    pub fn speed(&self) -> f64 {
        SPEEDS[self.speed.min(SPEEDS.len() - 1)]
    }

    /// The round (a werewolf game's day, a table's round) step `i`'s state
    /// stands in, as its canonical text; steps with none share one.
    fn round_at(&self, i: usize) -> Option<String> {
        let state = &self.timeline.steps.get(i)?.state;
        ["round", "day"]
            .iter()
            .find_map(|k| state.get(k))
            .or_else(|| state.get("group_view").and_then(|v| v.get("round")))
            .filter(|v| !v.is_null())
            .map(crate::json::canonical::to_string)
    }

    fn go(&mut self, pos: usize) {
        self.pos = pos.min(self.len().saturating_sub(1));
        self.waited = 0.0;
    }

    /// A key's command; false when the view does not use it.
    pub fn command(&mut self, c: Command, now: Instant) -> bool {
        match c {
            Command::Right | Command::Down => self.go(self.pos + 1),
            Command::Left | Command::Up => self.go(self.pos.saturating_sub(1)),
            Command::PageDown => self.go(self.pos + 10),
            Command::PageUp => self.go(self.pos.saturating_sub(10)),
            Command::Top => self.go(0),
            Command::Bottom => self.go(usize::MAX),
            Command::ReplayPlay => {
                if !self.playing && self.pos + 1 >= self.len() {
                    self.go(0);
                }
                self.playing = !self.playing;
                self.last = Some(now);
            }
            Command::ReplayNextRound => {
                let here = self.round_at(self.pos);
                let next = (self.pos + 1..self.len())
                    .find(|i| self.round_at(*i) != here)
                    .unwrap_or(usize::MAX);
                self.go(next);
            }
            Command::ReplayPrevRound => {
                let start = |r: &Replay, mut i: usize| {
                    let round = r.round_at(i);
                    while i > 0 && r.round_at(i - 1) == round {
                        i -= 1;
                    }
                    i
                };
                let here = start(self, self.pos);
                let to = if here < self.pos || here == 0 {
                    here
                } else {
                    start(self, here - 1)
                };
                self.go(to);
            }
            Command::ReplayFaster => self.speed = (self.speed + 1).min(SPEEDS.len() - 1),
            Command::ReplaySlower => self.speed = self.speed.saturating_sub(1),
            _ => return false,
        }
        true
    }

    /// The gap before the next step, in replay seconds.
    fn gap(&self) -> Option<f64> {
        let steps = &self.timeline.steps;
        let next = steps.get(self.pos + 1)?;
        Some((next.t - steps[self.pos].t).clamp(0.0, MAX_GAP))
    }

    /// Plays on to `now`: every step whose (scaled) time has come.
    pub fn tick(&mut self, now: Instant) {
        if !self.playing {
            self.last = None;
            return;
        }
        let since = self
            .last
            .map(|l| now.saturating_duration_since(l).as_secs_f64())
            .unwrap_or(0.0);
        self.last = Some(now);
        self.waited += since * self.speed();
        while let Some(gap) = self.gap() {
            if self.waited < gap {
                return;
            }
            self.waited -= gap;
            self.pos += 1;
        }
        // The end: stop there.
        self.playing = false;
        self.waited = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Map;
    use crate::session::replay::{Step, StepKind};
    use std::time::Duration;

    fn timeline(ts: &[f64]) -> Box<Timeline> {
        Box::new(Timeline {
            dir: String::new(),
            protocol_name: None,
            protocol_id: None,
            role: None,
            control_mode: None,
            room: false,
            finished: true,
            end_reason: None,
            winner: None,
            truncated: false,
            werewolf: false,
            skipped: 0,
            steps: ts
                .iter()
                .map(|t| Step {
                    ts: String::new(),
                    t: *t,
                    kind: StepKind::Event,
                    action: String::new(),
                    summary: String::new(),
                    by: None,
                    state: Map::new(),
                })
                .collect(),
        })
    }

    #[test]
    fn brackets_jump_between_rounds() {
        let mut t = timeline(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        for (step, round) in t.steps.iter_mut().zip([1, 1, 2, 2, 2, 3]) {
            step.state.insert("round", crate::json::Value::from(round));
        }
        let mut r = Replay::new(t);
        let t0 = Instant::now();
        r.command(Command::ReplayNextRound, t0);
        assert_eq!(r.pos, 2);
        r.command(Command::ReplayNextRound, t0);
        assert_eq!(r.pos, 5);
        r.command(Command::ReplayNextRound, t0);
        assert_eq!(r.pos, 5, "the last round stays");
        r.command(Command::ReplayPrevRound, t0);
        assert_eq!(r.pos, 2, "from a round's first step: the previous round's");
        r.command(Command::Right, t0);
        r.command(Command::ReplayPrevRound, t0);
        assert_eq!(r.pos, 2, "from inside a round: its first step");
        r.command(Command::ReplayPrevRound, t0);
        assert_eq!(r.pos, 0);
        r.command(Command::ReplayPrevRound, t0);
        assert_eq!(r.pos, 0);
    }

    #[test]
    fn steps_and_plays_at_speed() {
        let mut r = Replay::new(timeline(&[0.0, 1.0, 1.5, 100.0]));
        let t0 = Instant::now();
        r.command(Command::Left, t0);
        assert_eq!(r.pos, 0);
        r.command(Command::Bottom, t0);
        assert_eq!(r.pos, 3);
        r.command(Command::Right, t0);
        assert_eq!(r.pos, 3);
        // Play from the end starts over.
        r.command(Command::ReplayPlay, t0);
        assert!(r.playing && r.pos == 0);
        r.command(Command::ReplayFaster, t0); // ×2
        r.tick(t0 + Duration::from_millis(400));
        assert_eq!(r.pos, 0);
        r.tick(t0 + Duration::from_millis(600));
        assert_eq!(r.pos, 1);
        r.tick(t0 + Duration::from_millis(850));
        assert_eq!(r.pos, 2);
        // A long pause plays as MAX_GAP.
        r.tick(t0 + Duration::from_millis(850 + 1000));
        assert_eq!(r.pos, 3);
        assert!(!r.playing);
        for _ in 0..20 {
            r.command(Command::ReplaySlower, t0);
        }
        assert_eq!(r.speed(), 0.125);
        let mut empty = Replay::new(timeline(&[]));
        empty.command(Command::Bottom, t0);
        empty.command(Command::ReplayPlay, t0);
        empty.tick(t0 + Duration::from_secs(1));
        assert_eq!(empty.pos, 0);
    }
}
