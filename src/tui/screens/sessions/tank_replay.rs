//! The replay of a tank battle (R on a tank-battle-v1 session): its frames
//! from realtime-frames.jsonl (read by a task), the tick shown, and
//! playback at 0.5×–8× of the match's 10 Hz, driven by the console's ticks.

use crate::protocols::tank::{Team, World};
use crate::tui::command::Command;
use crate::tui::panes::battlefield::TICK_HZ;
use crate::tui::tank_journal::Journal;
use std::time::Instant;

/// Speeds playback offers, × the match's pace.
pub const SPEEDS: [f64; 5] = [0.5, 1.0, 2.0, 4.0, 8.0];
const START_SPEED: usize = 1;

pub struct TankReplay {
    pub journal: Box<Journal>,
    /// The frame shown (index into the frames).
    pub pos: usize,
    pub playing: bool,
    /// Index into [`SPEEDS`].
    pub speed: usize,
    /// The side the session played (its units are listed).
    pub role: Option<Team>,
    pub spectate: bool,
    /// Match ticks gone since the frame shown, and when last counted.
    waited: f64,
    last: Option<Instant>,
}

impl TankReplay {
    pub fn new(journal: Box<Journal>, role: Option<Team>) -> TankReplay {
        TankReplay {
            journal,
            pos: 0,
            playing: false,
            speed: START_SPEED,
            role,
            spectate: false,
            waited: 0.0,
            last: None,
        }
    }

    pub fn len(&self) -> usize {
        self.journal.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.journal.frames.is_empty()
    }

    pub fn world(&self) -> Option<&World> {
        self.journal.frames.get(self.pos)
    }

    pub fn speed(&self) -> f64 {
        SPEEDS[self.speed.min(SPEEDS.len() - 1)]
    }

    fn go(&mut self, pos: usize) {
        self.pos = pos.min(self.len().saturating_sub(1));
        self.waited = 0.0;
    }

    /// What the score line says of the replay.
    pub fn status(&self) -> String {
        let state = if self.playing { "▶" } else { "⏸" };
        let more = if self.journal.truncated {
            " (first 200 000 lines)"
        } else {
            ""
        };
        format!(
            "replay {state} {}× · frame {}/{}{more}",
            self.speed(),
            self.pos + 1,
            self.len()
        )
    }

    /// A key's command; false when the replay does not use it.
    pub fn command(&mut self, c: Command, now: Instant) -> bool {
        match c {
            Command::Right | Command::Down => {
                self.playing = false;
                self.go(self.pos + 1)
            }
            Command::Left | Command::Up => {
                self.playing = false;
                self.go(self.pos.saturating_sub(1))
            }
            Command::PageDown | Command::ReplayNextRound => {
                self.go(self.pos + 10 * TICK_HZ as usize)
            }
            Command::PageUp | Command::ReplayPrevRound => {
                self.go(self.pos.saturating_sub(10 * TICK_HZ as usize))
            }
            Command::Top => self.go(0),
            Command::Bottom => self.go(usize::MAX),
            Command::ReplayPlay => {
                if !self.playing && self.pos + 1 >= self.len() {
                    self.go(0);
                }
                self.playing = !self.playing;
                self.last = Some(now);
            }
            Command::ReplayFaster => self.speed = (self.speed + 1).min(SPEEDS.len() - 1),
            Command::ReplaySlower => self.speed = self.speed.saturating_sub(1),
            Command::TankSpectate => self.spectate = !self.spectate,
            _ => return false,
        }
        true
    }

    /// Plays on: a frame every tenth of a match second.
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
        // Counted in match ticks, so whole ticks subtract exactly.
        self.waited += since * self.speed() * TICK_HZ as f64;
        while self.waited >= 1.0 {
            if self.pos + 1 >= self.len() {
                self.playing = false;
                self.waited = 0.0;
                return;
            }
            self.waited -= 1.0;
            self.pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn replay(n: usize) -> TankReplay {
        let mut w = World::from_options(&crate::json::Map::new()).unwrap();
        let mut frames = vec![w.clone()];
        for _ in 0..n {
            w.step(&[], &[]);
            frames.push(w.clone());
        }
        let j = Journal {
            frames,
            ..Journal::default()
        };
        TankReplay::new(Box::new(j), Some(Team::Host))
    }

    #[test]
    fn playing_at_a_speed_moves_a_frame_per_tenth_of_a_match_second() {
        let mut r = replay(100);
        let t0 = Instant::now();
        r.command(Command::ReplayPlay, t0);
        r.tick(t0 + Duration::from_millis(1000));
        assert_eq!(r.pos, 10);
        r.command(Command::ReplayFaster, t0);
        r.command(Command::ReplayFaster, t0);
        assert_eq!(r.speed(), 4.0);
        r.tick(t0 + Duration::from_millis(1500));
        assert_eq!(r.pos, 30);
        for _ in 0..9 {
            r.command(Command::ReplaySlower, t0);
        }
        assert_eq!(r.speed(), 0.5);
        r.tick(t0 + Duration::from_millis(3500));
        assert_eq!(r.pos, 40);
        // The end stops it there.
        r.command(Command::ReplayFaster, t0);
        r.command(Command::ReplayFaster, t0);
        r.command(Command::ReplayFaster, t0);
        r.command(Command::ReplayFaster, t0);
        assert_eq!(r.speed(), 8.0);
        r.tick(t0 + Duration::from_secs(60));
        assert_eq!(r.pos, 100);
        assert!(!r.playing);
        // Play again from the end starts over.
        r.command(Command::ReplayPlay, t0);
        assert_eq!(r.pos, 0);
        assert!(r.playing);
    }

    #[test]
    fn stepping_and_jumping_stay_inside_the_match() {
        let mut r = replay(20);
        let now = Instant::now();
        r.command(Command::Left, now);
        assert_eq!(r.pos, 0);
        r.command(Command::Right, now);
        r.command(Command::Right, now);
        assert_eq!(r.world().unwrap().tick, 2);
        r.command(Command::Bottom, now);
        assert_eq!(r.pos, 20);
        r.command(Command::Right, now);
        assert_eq!(r.pos, 20);
        // Ten match seconds back: the start.
        r.command(Command::PageUp, now);
        assert_eq!(r.pos, 0);
        r.command(Command::PageDown, now);
        assert_eq!(r.pos, 20);
        r.command(Command::Top, now);
        assert_eq!(r.pos, 0);
        assert!(!r.command(Command::Quit, now));
        assert!(r.status().contains("frame 1/21"), "{}", r.status());
    }
}
