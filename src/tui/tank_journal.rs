//! Reading a tank-battle-v1 session's `realtime-frames.jsonl` for the
//! console's replay: one world per tick, read back through
//! `World::from_value` (so each is checked), bounded in lines and line
//! length. Called by a task, never from the draw path.

use crate::json::Value;
use crate::protocols::tank::{Team, World};
use std::io::{BufRead, Read};
use std::path::Path;

/// The journal's file name in the engine state dir.
pub const FRAMES_FILE: &str = "realtime-frames.jsonl";
/// Lines read at most (a 10 Hz match of 100 000 ticks has about as many).
pub const MAX_LINES: usize = 200_000;
/// A longer line is skipped.
pub const MAX_LINE: usize = 8 << 20;

/// Why a journal could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} holds no readable frame")]
    Empty(String),
}

/// The frames of a match, in tick order.
#[derive(Debug, Clone, Default)]
pub struct Journal {
    pub frames: Vec<World>,
    /// Lines that were not a readable frame (torn, too long, out of order).
    pub skipped: usize,
    /// The side that wrote it: the host writes its frames `sent`, the
    /// guest `received` (from the first frame read).
    pub role: Option<Team>,
    /// The line cap was reached before the end of the file.
    pub truncated: bool,
}

impl Journal {
    /// Whether the last frame ends the match.
    pub fn finished(&self) -> bool {
        self.frames.last().is_some_and(|w| w.game_over)
    }
}

/// One line's frame state, when it is a frame line whose state reads, and
/// the side its direction says wrote it.
pub fn frame_world(line: &[u8]) -> Option<(World, Option<Team>)> {
    let v = crate::json::parse_bytes(line).ok()?;
    let side = match v.get_str("direction") {
        Some("sent") => Some(Team::Host),
        Some("received") => Some(Team::Guest),
        _ => None,
    };
    if v.get_str("kind").is_some_and(|k| k != "frame") {
        return None;
    }
    let frame = v.get("frame")?;
    let state = frame.get("state")?;
    let world = World::from_value(state).ok()?;
    // A frame whose tick disagrees with its state is not trusted.
    match frame.get("tick").and_then(Value::as_i64) {
        Some(t) if t != world.tick => None,
        _ => Some((world, side)),
    }
}

/// Reads the journal at `path`.
pub fn load(path: &Path) -> Result<Journal, JournalError> {
    let io = |source| JournalError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, file);
    let mut j = Journal::default();
    let mut line = Vec::new();
    let mut lines = 0usize;
    loop {
        if lines >= MAX_LINES {
            j.truncated = true;
            break;
        }
        line.clear();
        let n = (&mut r)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(io)?;
        if n == 0 {
            break;
        }
        lines += 1;
        if line.last() != Some(&b'\n') {
            if line.len() > MAX_LINE {
                // Too long: skip to the end of that line.
                j.skipped += 1;
                skip_line(&mut r).map_err(io)?;
                continue;
            }
            // A last line without its newline: a crash tore it.
            if !line.iter().all(u8::is_ascii_whitespace) {
                j.skipped += 1;
            }
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match frame_world(&line) {
            Some((w, side)) if j.frames.last().is_none_or(|p| p.tick < w.tick) => {
                if j.frames.is_empty() {
                    j.role = side;
                }
                j.frames.push(w)
            }
            _ => j.skipped += 1,
        }
    }
    if j.frames.is_empty() {
        return Err(JournalError::Empty(path.display().to_string()));
    }
    Ok(j)
}

fn skip_line(r: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            r.consume(i + 1);
            return Ok(());
        }
        let n = buf.len();
        r.consume(n);
    }
}

/// A frame line as the realtime runtime writes it (for tests and fixtures).
pub fn frame_line(world: &World, prev: Option<&World>, direction: &str) -> String {
    use crate::obj;
    let hash = world.state_hash();
    let prev_hash = prev.map(World::state_hash).unwrap_or_default();
    let frame = obj! {
        "tick" => world.tick,
        "state" => world.to_value(),
        "state_hash" => hash.clone(),
        "prev_state_hash" => prev_hash,
        "prev_chain_hash" => "",
        "applied_commands" => obj! { "host" => crate::json::Map::new(), "guest" => crate::json::Map::new() },
        "events" => crate::protocols::tank::events_value(&world.events),
        "outcome" => world.outcome().as_str(),
        "host_time_ns" => 0,
        "chain_hash" => hash,
    };
    let line = obj! {
        "direction" => direction,
        "frame" => frame,
        "kind" => "frame",
        "recorded_at_ns" => 0,
    };
    crate::json::canonical::to_string(&Value::Object(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::tank::Command;
    use crate::protocols::tank::{Dir, Team, UnitId};

    fn journal(ticks: usize) -> (Vec<World>, String) {
        let mut w = World::from_options(&crate::json::Map::new()).unwrap();
        let mut worlds = vec![w.clone()];
        let mut text = frame_line(&w, None, "sent") + "\n";
        let host = [Command {
            unit: UnitId {
                team: Team::Host,
                index: 0,
            },
            mv: Dir::Up,
            aim: Dir::Up,
            fire: true,
        }];
        for _ in 0..ticks {
            let prev = w.clone();
            w.step(&host, &[]);
            text += &frame_line(&w, Some(&prev), "sent");
            text.push('\n');
            worlds.push(w.clone());
        }
        (worlds, text)
    }

    #[test]
    fn a_journal_reads_back_every_tick_and_skips_a_torn_last_line() {
        let (worlds, mut text) = journal(5);
        text += "{\"direction\":\"sent\",\"frame\":{\"tick\":6";
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FRAMES_FILE);
        std::fs::write(&p, &text).unwrap();
        let j = load(&p).unwrap();
        assert_eq!(j.frames, worlds);
        assert_eq!(j.skipped, 1);
        assert_eq!(j.role, Some(Team::Host));
        assert!(!j.finished());
    }

    #[test]
    fn a_line_over_the_cap_is_skipped_and_the_next_one_read() {
        let (worlds, text) = journal(1);
        let lines: Vec<&str> = text.lines().collect();
        let long = format!("{{\"pad\":\"{}\"}}", "x".repeat(MAX_LINE));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FRAMES_FILE);
        std::fs::write(&p, format!("{}\n{long}\n{}\n", lines[0], lines[1])).unwrap();
        let j = load(&p).unwrap();
        assert_eq!(j.frames, worlds);
        assert_eq!(j.skipped, 1);
    }

    #[test]
    fn garbage_and_out_of_order_lines_are_skipped_and_nothing_is_an_error() {
        let (worlds, text) = journal(2);
        let lines: Vec<&str> = text.lines().collect();
        let mixed = format!(
            "not json\n{}\n[1,2]\n{}\n{}\n{}\n",
            lines[0], lines[2], lines[1], lines[2]
        );
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FRAMES_FILE);
        std::fs::write(&p, mixed).unwrap();
        let j = load(&p).unwrap();
        assert_eq!(j.frames, vec![worlds[0].clone(), worlds[2].clone()]);
        assert_eq!(j.skipped, 4);
        std::fs::write(&p, "{}\n").unwrap();
        assert!(matches!(load(&p), Err(JournalError::Empty(_))));
        assert!(matches!(
            load(&d.path().join("absent")),
            Err(JournalError::Io { .. })
        ));
    }
}
