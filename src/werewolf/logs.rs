//! Logs in the reference server's formats: the game .log (lines compatible
//! with the old AIWolfNLPServer, what contestants submit), the JSON log of
//! every packet and answer, and the realtime broadcast feed (JSONL plus
//! games.json) the public viewer polls.

use super::game::{GameEvent, Observer, Phase, SeatView};
use super::packet::Team;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `{timestamp}_{teams}`: Unix seconds and the seats' teams, sorted.
/// Characters other than letters, digits, `-`, `_` and `.` become `_`, and
/// the name stops at 200 bytes, so a team name can neither leave the log
/// directory nor make the file name too long to write.
pub fn log_filename(unix_s: i64, seats: &[SeatView]) -> String {
    let mut teams: Vec<&str> = seats.iter().map(|s| s.team.as_str()).collect();
    teams.sort_unstable();
    let raw = format!("{unix_s}_{}", teams.join("_"));
    let mut out = String::new();
    for c in raw.chars() {
        let c = if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
            c
        } else {
            '_'
        };
        if out.len() + c.len_utf8() > 200 {
            break;
        }
        out.push(c);
    }
    out
}

/// Builds the game .log lines from events.
#[derive(Debug, Default)]
pub struct GameLog {
    pub seats: Vec<SeatView>,
    pub lines: Vec<String>,
    alive: Vec<bool>,
    /// Written (whole file, no trailing newline) when set.
    pub path: Option<PathBuf>,
}

impl GameLog {
    pub fn new(path: Option<PathBuf>) -> GameLog {
        GameLog {
            path,
            ..GameLog::default()
        }
    }

    /// The file's text: lines joined by `\n`, no trailing newline.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    fn status(&mut self, day: i64) {
        for (i, s) in self.seats.iter().enumerate() {
            let st = if self.alive.get(i).copied().unwrap_or(true) {
                "ALIVE"
            } else {
                "DEAD"
            };
            self.lines.push(format!(
                "{day},status,{},{},{st},{},{}",
                s.idx,
                s.role.as_str(),
                s.original_name,
                s.name
            ));
        }
    }

    fn flush(&self) {
        if let Some(p) = &self.path {
            kept(
                p,
                crate::fsutil::write_atomic_fast(p, self.text().as_bytes()),
            );
        }
    }
}

impl Observer for GameLog {
    fn event(&mut self, e: &GameEvent) {
        let line = match e {
            GameEvent::Started { seats, .. } => {
                self.seats = seats.clone();
                self.alive = vec![true; seats.len()];
                None
            }
            GameEvent::DayStarted { day, alive } => {
                self.alive = alive.clone();
                self.status(*day);
                self.flush();
                None
            }
            GameEvent::Talk { whisper, idx, talk } => Some(format!(
                "{},{},{},{},{idx},{}",
                talk.day,
                if *whisper { "whisper" } else { "talk" },
                talk.idx,
                talk.turn,
                talk.text
            )),
            GameEvent::Vote {
                day,
                voter,
                target: Some(t),
                ..
            } => Some(format!("{day},vote,{voter},{t}")),
            GameEvent::AttackVote {
                day,
                wolf,
                target: Some(t),
                ..
            } => Some(format!("{day},attackVote,{wolf},{t}")),
            GameEvent::Executed { day, idx, role } => {
                Some(format!("{day},execute,{idx},{}", role.as_str()))
            }
            GameEvent::Divine {
                day,
                seer,
                target,
                result,
            } => Some(format!("{day},divine,{seer},{target},{}", result.as_str())),
            GameEvent::Guard {
                day,
                bodyguard,
                target,
                target_role,
            } => Some(format!(
                "{day},guard,{bodyguard},{target},{}",
                target_role.as_str()
            )),
            GameEvent::Attack {
                day,
                target,
                killed,
            } => Some(match target {
                Some(t) => format!("{day},attack,{t},{killed}"),
                None => format!("{day},attack,-1,true"),
            }),
            GameEvent::Finished {
                day,
                winner,
                alive,
                alive_humans,
                alive_wolves,
                ..
            } => {
                self.alive = alive.clone();
                self.status(*day);
                self.lines.push(format!(
                    "{day},result,{alive_humans},{alive_wolves},{}",
                    winner.as_str()
                ));
                self.flush();
                None
            }
            _ => None,
        };
        if let Some(l) = line {
            self.lines.push(l);
        }
    }
}

/// One entry of the JSON log: a packet sent and what came back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonLogEntry {
    pub agent: String,
    /// The packet's JSON text (a string, as in the reference).
    pub request: String,
    pub request_timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_timestamp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonLogAgent {
    pub idx: usize,
    pub team: String,
    /// The connection name.
    pub name: String,
    pub role: String,
}

/// The JSON log of a game.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JsonLog {
    pub game_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub win_side: Option<Team>,
    pub agents: Vec<JsonLogAgent>,
    pub entries: Vec<JsonLogEntry>,
}

impl JsonLog {
    pub fn new(game_id: &str, seats: &[SeatView]) -> JsonLog {
        JsonLog {
            game_id: game_id.to_owned(),
            win_side: None,
            agents: seats
                .iter()
                .map(|s| JsonLogAgent {
                    idx: s.idx,
                    team: s.team.clone(),
                    name: s.original_name.clone(),
                    role: s.role.as_str().to_owned(),
                })
                .collect(),
            entries: Vec::new(),
        }
    }

    /// Replaces `path` with the log (atomically: a reader sees the old
    /// log or the new one, never half of it).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string(self).map_err(std::io::Error::other)?;
        crate::fsutil::write_atomic_fast(path, text.as_bytes())
    }
}

/// Builds the realtime broadcast packets (§5.3, Japanese event literals).
#[derive(Debug, Default)]
pub struct RealtimeFeed {
    pub game_id: String,
    pub seats: Vec<SeatView>,
    alive: Vec<bool>,
    day: i64,
    is_day: bool,
    pub packets: Vec<Value>,
    /// `<dir>/<filename>.jsonl` and `<dir>/games.json` when set.
    pub dir: Option<(PathBuf, String)>,
}

impl RealtimeFeed {
    pub fn new(dir: Option<(PathBuf, String)>) -> RealtimeFeed {
        RealtimeFeed {
            dir,
            is_day: true,
            ..RealtimeFeed::default()
        }
    }

    fn push(
        &mut self,
        event: &str,
        message: Option<String>,
        from: Option<i64>,
        to: Option<i64>,
        bubble: Option<i64>,
    ) {
        let agents: Vec<Value> = self
            .seats
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut a = json!({"idx": s.idx, "team": s.team, "name": s.name});
                if let Some(p) = &s.profile {
                    a["profile"] = json!(p);
                    if let Some(u) = &s.avatar {
                        a["avatar"] = json!(u);
                    }
                }
                a["role"] = json!(s.role.as_str());
                a["is_alive"] = json!(self.alive.get(i).copied().unwrap_or(true));
                a
            })
            .collect();
        let mut p = json!({
            "id": self.game_id, "idx": self.packets.len() + 1, "day": self.day,
            "is_day": self.is_day, "agents": agents, "event": event,
        });
        if let Some(m) = message {
            p["message"] = json!(m);
        }
        if let Some(f) = from {
            p["from_idx"] = json!(f);
        }
        if let Some(t) = to {
            p["to_idx"] = json!(t);
        }
        if let Some(b) = bubble {
            p["bubble_idx"] = json!(b);
        }
        p["timestamp"] = json!(super::game::now_ms() / 1000);
        self.packets.push(p);
        self.flush();
    }

    /// The JSONL text: packets separated by `\n`, no trailing newline.
    pub fn jsonl(&self) -> String {
        self.packets
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn flush(&self) {
        let Some((dir, filename)) = &self.dir else {
            return;
        };
        let log = dir.join(format!("{filename}.jsonl"));
        kept(
            &log,
            crate::fsutil::write_atomic_fast(&log, self.jsonl().as_bytes()),
        );
        let games =
            json!([{"id": self.game_id, "filename": filename, "updated_at": rfc3339_now()}]);
        let index = dir.join("games.json");
        kept(
            &index,
            crate::fsutil::write_atomic_fast(&index, games.to_string().as_bytes()),
        );
    }
}

/// Current UTC time as `2026-11-30T04:54:54.437Z`.
pub fn rfc3339_now() -> String {
    crate::utc::format_rfc3339_utc(super::game::now_ms())
}

impl Observer for RealtimeFeed {
    fn event(&mut self, e: &GameEvent) {
        let idx = |i: usize| Some(i as i64);
        match e {
            GameEvent::Started { game_id, seats } => {
                self.game_id = game_id.clone();
                self.seats = seats.clone();
                self.alive = vec![true; seats.len()];
                self.push(
                    "開始",
                    Some("ゲームが開始されました".into()),
                    None,
                    None,
                    None,
                );
            }
            GameEvent::DayStarted { day, alive } => {
                self.day = *day;
                self.alive = alive.clone();
                self.is_day = true;
            }
            GameEvent::Phase { phase, .. } => {
                self.is_day = phase.is_day() && *phase != Phase::EveningWhisper;
            }
            GameEvent::Talk {
                whisper,
                idx: i,
                talk,
            } => {
                let ev = if *whisper { "囁き" } else { "トーク" };
                self.push(ev, Some(talk.text.clone()), None, None, idx(*i));
            }
            GameEvent::Vote {
                voter,
                target: Some(t),
                ..
            } => self.push("投票", None, idx(*voter), idx(*t), None),
            GameEvent::AttackVote {
                wolf,
                target: Some(t),
                ..
            } => self.push("襲撃投票", None, idx(*wolf), idx(*t), None),
            GameEvent::VoteTally {
                last: true,
                executed,
                ..
            } => {
                if let Some(x) = executed {
                    self.alive[x - 1] = false;
                }
                self.push("追放", None, None, executed.and_then(idx), None);
            }
            GameEvent::Divine { seer, target, .. } => {
                self.push("占い", None, idx(*seer), idx(*target), None)
            }
            GameEvent::Guard {
                bodyguard, target, ..
            } => self.push("護衛", None, idx(*bodyguard), idx(*target), None),
            GameEvent::Attack { target, killed, .. } => {
                if let (Some(t), true) = (target, killed) {
                    self.alive[t - 1] = false;
                }
                let from = (!killed).then_some(-1);
                let to = target.and_then(idx);
                self.push("襲撃", None, from, to, None);
            }
            GameEvent::Finished {
                day, winner, alive, ..
            } => {
                self.day = *day;
                self.alive = alive.clone();
                self.push("終了", Some(winner.as_str().to_owned()), None, None, None);
            }
            _ => {}
        }
    }
}

/// A game log is a record beside the game, which goes on when its file
/// cannot be written: the failure is said in the log instead.
fn kept(path: &Path, r: std::io::Result<()>) {
    if let Err(e) = r {
        tracing::warn!(file = %path.display(), error = %e, "a werewolf log file could not be written");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::werewolf::packet::Role;

    fn seat(team: &str) -> SeatView {
        SeatView {
            idx: 1,
            name: "Agent[01]".into(),
            original_name: format!("{team}1"),
            team: team.into(),
            role: Role::Villager,
            profile: None,
            avatar: None,
        }
    }

    #[test]
    fn log_file_names_stay_one_short_component() {
        assert_eq!(
            log_filename(17, &[seat("kanolab"), seat("cap")]),
            "17_cap_kanolab"
        );
        let f = log_filename(17, &[seat("../../etc/x"), seat("a\\b\0c")]);
        assert_eq!(f, "17_.._.._etc_x_a_b_c");
        let long = "チーム".repeat(200);
        let f = log_filename(17, &[seat(&long)]);
        assert!(f.len() <= 200 && f.starts_with("17_チーム"), "{f}");
    }
}
