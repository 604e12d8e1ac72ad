//! What the werewolf screen's tasks report: a game's events, the seat a
//! person is given and the decisions it is asked for, the end, and the
//! games a server lists. Events and decisions carry the generation of the
//! game they belong to; reports of a game that was replaced are dropped.

use crate::engine::ControlMode;
use crate::werewolf::Role;
use crate::werewolf::agent::DecisionRequest;
use crate::werewolf::game::GameEvent;

/// Reports for the werewolf screen.
#[derive(Debug)]
pub enum WolfReport {
    /// A god-view event of the game.
    Event(u64, GameEvent),
    /// The game gives a person seat `idx` (1-based) in `mode`: the board
    /// shows only what that seat knows from here on.
    Seated(u64, usize, ControlMode),
    /// The played seat is asked something.
    Decision(u64, Box<DecisionRequest>),
    /// The game (or the stream followed) ended: a summary or why it failed.
    Ended(u64, Result<String, String>),
    /// The games of a server (its base URL, the list or the error).
    Games(String, Result<Vec<GameInfo>, String>),
    /// Roles a remote seat was told at the end (1-based seat, role).
    Reveal(u64, Vec<(usize, Role)>),
}

/// A game a server lists.
#[derive(Debug, Clone, PartialEq)]
pub struct GameInfo {
    pub id: String,
    pub day: i64,
    pub finished: bool,
    pub winner: Option<String>,
    pub seats: usize,
    pub alive: usize,
}

impl GameInfo {
    /// One entry of `/api/v1/games` (None if it has no id).
    pub fn from_json(v: &serde_json::Value) -> Option<GameInfo> {
        let agents = v.get("agents").and_then(|a| a.as_array());
        Some(GameInfo {
            id: v.get("id")?.as_str()?.to_owned(),
            day: v.get("day").and_then(|d| d.as_i64()).unwrap_or(0),
            finished: v.get("finished").and_then(|f| f.as_bool()).unwrap_or(false),
            winner: v
                .get("win_side")
                .and_then(|w| w.as_str())
                .map(str::to_owned),
            seats: agents.map(Vec::len).unwrap_or(0),
            alive: agents
                .map(|a| {
                    a.iter()
                        .filter(|x| x.get("alive").and_then(|b| b.as_bool()) == Some(true))
                        .count()
                })
                .unwrap_or(0),
        })
    }
}
