//! Replay of a finished werewolf game from its game .log (the AIWolf
//! server's format: `palaver wolf serve` and `palaver wolf play --game-log`
//! write it, the reference aiwolf-nlp-server writes the same), rebuilt as a
//! [`Timeline`] the session replay shows: `palaver session replay <file>`
//! and the console's replay view.
//!
//! One step per line that says something (a talk or whisper, a vote, an
//! attack vote, a divination, a guard, an attack, an execution, the result),
//! and one for each status block (the agents' roles and lives at the start
//! of a day, and at the end). Each step's state is the werewolf day as it
//! stood after it (see [`state`]'s keys): since the game is over, the god
//! view, with every agent's role.
//!
//! The .log has no times: steps are paced by what they hold (a second for a
//! line that says something, less for `Over`/`Skip` and votes), so playing
//! at ×1 reads like a game. Pure over the text: damaged or unknown lines are
//! skipped and counted ([`Timeline::skipped`]), the steps stop at
//! [`MAX_STEPS`] and the input at [`MAX_BYTES`]; nothing in a file can make
//! it panic.

use crate::json::{Map, Value};
use crate::obj;
use crate::session::replay::{Step, StepKind, Timeline};
use std::io::Read;
use std::path::Path;

/// At most this many steps are kept (the rest is dropped, `truncated` set).
/// Lower than the session replay's bound: every step carries the day's talk.
pub const MAX_STEPS: usize = 10_000;
/// At most this many bytes of a file are read (a real game is tens of KiB).
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;
/// A step's state keeps the day's last this many talk and whisper lines
/// that say something (`Over` and `Skip` are steps, not kept).
pub const TALK_LINES: usize = 20;
/// Talk text in a state is cut to this many characters.
const TEXT_CHARS: usize = 300;
/// Summaries are cut to this many characters.
const SUMMARY_CHARS: usize = 160;
/// Agent numbers above this are taken for damage (the most seats a game
/// has, [`crate::limits::WOLF_AGENTS`]).
pub const MAX_AGENTS: i64 = crate::limits::WOLF_AGENTS.max;
/// Days above this are taken for damage (the last day a game has, plus the
/// status block after it).
const MAX_DAY: i64 = crate::limits::WOLF_DAYS.max + 1;
/// Names are cut to this many characters.
const NAME_CHARS: usize = 64;
/// The steps' states together stay under about this many bytes (a log of
/// many agents with long names and talk stops early, `truncated` set).
pub const MAX_STATE_BYTES: usize = 192 << 20;
/// How much of a file [`sniff`] reads to tell a game log.
const SNIFF_BYTES: u64 = 8 * 1024;
/// How many of the first lines [`is_game_log`] looks at.
const SNIFF_LINES: usize = 10;

/// Why a file cannot be replayed as a werewolf game.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} is not a werewolf game log (its first lines are not in the AIWolf .log format)")]
    NotAGameLog(String),
}

/// One line of a game .log, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// `{d},status,{idx},{ROLE},{ALIVE|DEAD|},{original_name},{name}`; an
    /// empty status is the reference's mark of an agent that errored.
    Status {
        day: i64,
        agent: i64,
        role: String,
        status: String,
        original_name: String,
        name: String,
    },
    /// `{d},talk|whisper,{idx},{turn},{agent},{text}` (text may hold commas).
    Talk {
        day: i64,
        whisper: bool,
        idx: i64,
        turn: i64,
        agent: i64,
        text: String,
    },
    /// `{d},vote|attackVote,{agent},{target}`.
    Vote {
        day: i64,
        attack: bool,
        agent: i64,
        target: i64,
    },
    /// `{d},execute,{idx},{ROLE}`.
    Execute { day: i64, agent: i64, role: String },
    /// `{d},divine,{seer},{target},{SPECIES}`.
    Divine {
        day: i64,
        seer: i64,
        target: i64,
        species: String,
    },
    /// `{d},guard,{bodyguard},{target},{ROLE of the target}`.
    Guard {
        day: i64,
        bodyguard: i64,
        target: i64,
        role: String,
    },
    /// `{d},attack,{idx},true|false` (`-1,true`: nobody attacked).
    Attack {
        day: i64,
        target: Option<i64>,
        killed: bool,
    },
    /// `{d},result,{alive humans},{alive werewolves},{VILLAGER|WEREWOLF|NONE}`.
    Result {
        day: i64,
        humans: i64,
        wolves: i64,
        winner: String,
    },
}

impl Line {
    /// Reads one line (without its line end); `None` when it is not one.
    pub fn parse(text: &str) -> Option<Line> {
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (day, rest) = text.split_once(',')?;
        let day = num(day).filter(|d| (0..=MAX_DAY).contains(d))?;
        let (kind, rest) = rest.split_once(',')?;
        let agent = |s: &str| num(s).filter(|a| (1..=MAX_AGENTS).contains(a));
        Some(match kind {
            "status" => {
                let f: Vec<&str> = rest.splitn(5, ',').collect();
                let [idx, role, status, original, name] = f.as_slice() else {
                    return None;
                };
                if !matches!(*status, "ALIVE" | "DEAD" | "") {
                    return None;
                }
                Line::Status {
                    day,
                    agent: agent(idx)?,
                    role: word(role)?,
                    status: (*status).to_owned(),
                    original_name: clean(original, NAME_CHARS),
                    name: clean(name, NAME_CHARS),
                }
            }
            "talk" | "whisper" => {
                let f: Vec<&str> = rest.splitn(4, ',').collect();
                let [idx, turn, who, said] = f.as_slice() else {
                    return None;
                };
                Line::Talk {
                    day,
                    whisper: kind == "whisper",
                    idx: num(idx).filter(|i| *i >= 0)?,
                    turn: num(turn).filter(|t| *t >= 0)?,
                    agent: agent(who)?,
                    text: clean(said, TEXT_CHARS),
                }
            }
            "vote" | "attackVote" => {
                let (a, t) = rest.split_once(',')?;
                Line::Vote {
                    day,
                    attack: kind == "attackVote",
                    agent: agent(a)?,
                    target: agent(t)?,
                }
            }
            "execute" => {
                let (a, role) = rest.split_once(',')?;
                Line::Execute {
                    day,
                    agent: agent(a)?,
                    role: word(role)?,
                }
            }
            "divine" | "guard" => {
                let f: Vec<&str> = rest.split(',').collect();
                let [who, target, what] = f.as_slice() else {
                    return None;
                };
                let (who, target, what) = (agent(who)?, agent(target)?, word(what)?);
                if kind == "divine" {
                    Line::Divine {
                        day,
                        seer: who,
                        target,
                        species: what,
                    }
                } else {
                    Line::Guard {
                        day,
                        bodyguard: who,
                        target,
                        role: what,
                    }
                }
            }
            "attack" => {
                let (t, killed) = rest.split_once(',')?;
                let killed = match killed {
                    "true" => true,
                    "false" => false,
                    _ => return None,
                };
                let target = match num(t)? {
                    -1 => None,
                    t if (1..=MAX_AGENTS).contains(&t) => Some(t),
                    _ => return None,
                };
                Line::Attack {
                    day,
                    target,
                    killed,
                }
            }
            "result" => {
                let f: Vec<&str> = rest.split(',').collect();
                let [h, w, team] = f.as_slice() else {
                    return None;
                };
                let count = |s: &str| num(s).filter(|n| (0..=MAX_AGENTS).contains(n));
                Line::Result {
                    day,
                    humans: count(h)?,
                    wolves: count(w)?,
                    winner: word(team)?,
                }
            }
            _ => return None,
        })
    }

    pub fn day(&self) -> i64 {
        match self {
            Line::Status { day, .. }
            | Line::Talk { day, .. }
            | Line::Vote { day, .. }
            | Line::Execute { day, .. }
            | Line::Divine { day, .. }
            | Line::Guard { day, .. }
            | Line::Attack { day, .. }
            | Line::Result { day, .. } => *day,
        }
    }

    /// The line's kind as the log spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Line::Status { .. } => "status",
            Line::Talk { whisper: false, .. } => "talk",
            Line::Talk { whisper: true, .. } => "whisper",
            Line::Vote { attack: false, .. } => "vote",
            Line::Vote { attack: true, .. } => "attackVote",
            Line::Execute { .. } => "execute",
            Line::Divine { .. } => "divine",
            Line::Guard { .. } => "guard",
            Line::Attack { .. } => "attack",
            Line::Result { .. } => "result",
        }
    }
}

/// A plain decimal integer (an optional `-`, at most 12 digits).
fn num(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A role, species or team word: `A-Z`, `_`, 1 to 32 of them.
fn word(s: &str) -> Option<String> {
    (!s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
        .then(|| s.to_owned())
}

/// Text from a line: control characters become spaces, cut to `max`
/// characters.
fn clean(s: &str, max: usize) -> String {
    s.chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn short(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= SUMMARY_CHARS {
        one
    } else {
        let mut out: String = one.chars().take(SUMMARY_CHARS - 1).collect();
        out.push('…');
        out
    }
}

/// Whether `text` reads as a game log: among its first non-empty lines (up
/// to [`SNIFF_LINES`]) at least one is a game log line, and most are.
pub fn is_game_log(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut good = 0;
    let mut seen = 0;
    for l in text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(SNIFF_LINES)
    {
        seen += 1;
        if Line::parse(l).is_some() {
            good += 1;
        }
    }
    good > 0 && good * 2 > seen
}

/// Whether the file at `path` is a game log, by its content (the first
/// [`SNIFF_BYTES`]); false for dirs and unreadable files.
pub fn sniff(path: &Path) -> bool {
    if !path.is_file() {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut buf = Vec::new();
    if f.take(SNIFF_BYTES).read_to_end(&mut buf).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&buf);
    // A line cut by the read's end is not judged.
    let whole = if buf.len() as u64 == SNIFF_BYTES {
        text.rsplit_once('\n').map_or("", |(a, _)| a)
    } else {
        &text
    };
    is_game_log(whole)
}

/// Reads the game log at `path` (at most [`MAX_BYTES`]) into a timeline.
pub fn load(path: &Path) -> Result<Timeline, LogError> {
    let io = |source| LogError::Io {
        path: path.display().to_string(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut buf = Vec::new();
    f.take(MAX_BYTES + 1).read_to_end(&mut buf).map_err(io)?;
    let cut = buf.len() as u64 > MAX_BYTES;
    if cut {
        buf.truncate(MAX_BYTES as usize);
        let end = buf.iter().rposition(|b| *b == b'\n').unwrap_or(0);
        buf.truncate(end);
    }
    let text = String::from_utf8_lossy(&buf);
    if !is_game_log(&text) {
        return Err(LogError::NotAGameLog(path.display().to_string()));
    }
    let mut t = parse(&text, &path.display().to_string());
    t.truncated |= cut;
    Ok(t)
}

/// One agent as the replay knows it.
#[derive(Debug, Clone, Default)]
struct Agent {
    idx: i64,
    name: String,
    original_name: String,
    role: String,
    /// `alive`, `dead`, or `error` (an errored agent, the reference's
    /// empty status).
    status: &'static str,
    /// How and when it died (`executed on day 1`, `attacked on night 2`).
    death: Option<String>,
}

#[derive(Debug, Clone)]
struct TalkLine {
    day: i64,
    idx: i64,
    turn: i64,
    agent: i64,
    text: String,
    whisper: bool,
}

/// The werewolf day being rebuilt.
struct Wolf {
    agents: Vec<Agent>,
    day: i64,
    phase: &'static str,
    /// A talk line came today (a whisper after it is the night's).
    talked: bool,
    talk: std::collections::VecDeque<TalkLine>,
    votes: Vec<(i64, i64)>,
    vote_round: i64,
    attack_votes: Vec<(i64, i64)>,
    executed: Option<Map>,
    attacked: Option<Map>,
    divined: Option<Map>,
    guarded: Option<Map>,
    result: Option<Map>,
    last_summary: String,
    steps: Vec<Step>,
    t: f64,
    /// About how many bytes the steps' states take.
    bytes: usize,
    truncated: bool,
}

impl Wolf {
    fn agent(&mut self, idx: i64) -> &mut Agent {
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
    fn who(&self, idx: i64) -> String {
        match self.agents.iter().find(|a| a.idx == idx) {
            Some(a) if !a.name.is_empty() => format!("{idx} {}", a.name),
            _ => format!("agent {idx}"),
        }
    }

    fn role_of(&self, idx: i64) -> String {
        self.agents
            .iter()
            .find(|a| a.idx == idx)
            .map(|a| a.role.clone())
            .unwrap_or_default()
    }

    /// A new day: its talk and votes start empty.
    fn enter_day(&mut self, day: i64) {
        if day != self.day {
            self.day = day;
            self.talk.clear();
            self.votes.clear();
            self.attack_votes.clear();
            self.vote_round = 0;
            self.talked = false;
        }
    }

    fn kill(&mut self, idx: i64, how: String) {
        let a = self.agent(idx);
        a.status = "dead";
        a.death.get_or_insert(how);
    }

    /// The state after a step (see [`state`]).
    fn state(&self) -> Map {
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
    fn state_bytes(&self) -> usize {
        let agents: usize = self
            .agents
            .iter()
            .map(|a| 600 + 2 * (a.name.len() + a.original_name.len()) + a.role.len())
            .sum();
        let talk: usize = self.talk.iter().map(|l| 720 + 2 * l.text.len()).sum();
        let votes = 240 * (self.votes.len() + self.attack_votes.len());
        1600 + agents + talk + votes + 2 * self.last_summary.len()
    }

    fn push(&mut self, kind: StepKind, action: &str, summary: String, pace: f64) {
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
    fn status_block(&mut self, day: i64, block: Vec<Line>) {
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

    fn line(&mut self, l: Line, finish: &mut Finish) {
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
struct Finish {
    winner: Option<String>,
    reason: Option<String>,
}

/// Rebuilds the timeline of a game log's text; `source` names it (the
/// timeline's `dir`). Never fails: lines it cannot read are counted in
/// `skipped`.
pub fn parse(text: &str, source: &str) -> Timeline {
    let mut w = Wolf {
        agents: Vec::new(),
        day: -1,
        phase: "starting",
        talked: false,
        talk: std::collections::VecDeque::new(),
        votes: Vec::new(),
        vote_round: 0,
        attack_votes: Vec::new(),
        executed: None,
        attacked: None,
        divined: None,
        guarded: None,
        result: None,
        last_summary: String::new(),
        steps: Vec::new(),
        t: 0.0,
        bytes: 0,
        truncated: false,
    };
    let mut skipped = 0usize;
    let mut lines: Vec<Line> = Vec::new();
    // A byte order mark some editors add is no damage.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for raw in text.split('\n') {
        if raw.trim().is_empty() {
            continue;
        }
        match Line::parse(raw) {
            Some(l) => lines.push(l),
            None => skipped += 1,
        }
    }
    // The roles and names first (a finished game shows them from the start).
    for l in &lines {
        if let Line::Status {
            agent,
            role,
            original_name,
            name,
            ..
        } = l
        {
            let a = w.agent(*agent);
            if a.role.is_empty() {
                a.role = role.clone();
                a.original_name = original_name.clone();
                a.name = name.clone();
            }
        }
    }
    let mut finish = Finish::default();
    let mut it = lines.into_iter().peekable();
    while let Some(l) = it.next() {
        if w.truncated {
            break;
        }
        if let Line::Status { day, .. } = l {
            let mut block = vec![l];
            while let Some(next) =
                it.next_if(|n| matches!(n, Line::Status { day: d, .. } if *d == day))
            {
                block.push(next);
            }
            w.status_block(day, block);
        } else {
            w.line(l, &mut finish);
        }
    }
    Timeline {
        dir: source.to_owned(),
        protocol_name: Some("werewolf (AIWolf NLP)".to_owned()),
        protocol_id: None,
        role: None,
        control_mode: None,
        room: false,
        finished: finish.winner.is_some(),
        end_reason: finish.reason,
        winner: finish.winner,
        truncated: w.truncated,
        werewolf: true,
        skipped,
        steps: w.steps,
    }
}

/// A werewolf step's state in one line: day, phase, the living.
pub fn state_line(state: &Map) -> String {
    let mut parts = Vec::new();
    if let Some(d) = state.get("day").and_then(Value::as_i64).filter(|d| *d >= 0) {
        parts.push(format!("day {d}"));
    }
    if let Some(p) = state.get("phase").and_then(Value::as_str) {
        parts.push(p.to_owned());
    }
    let total = state
        .get("agents")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if let Some(a) = state.get("alive").and_then(Value::as_i64) {
        parts.push(format!("{a} of {total} alive"));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG_5P: &str = include_str!("../../tests/data/aiwolf/v0.4.12_5p_game.log");
    const LOG_13P: &str = include_str!("../../tests/data/aiwolf/v0.4.12_13p_game.log");
    const LOG_ABORT: &str =
        include_str!("../../tests/data/aiwolf/v0.4.12_5p_abort_after_timeout_game.log");

    static NULL: Value = Value::Null;

    trait At {
        fn at(&self, k: &str) -> &Value;
    }

    impl At for Map {
        fn at(&self, k: &str) -> &Value {
            self.get(k).unwrap_or(&NULL)
        }
    }

    impl At for Value {
        fn at(&self, k: &str) -> &Value {
            self.get(k).unwrap_or(&NULL)
        }
    }

    fn get<'a>(m: &'a Map, path: &[&str]) -> &'a Value {
        let mut v = m.get(path[0]).unwrap_or(&Value::Null);
        for k in &path[1..] {
            v = v.get(k).unwrap_or(&Value::Null);
        }
        v
    }

    fn agent(state: &Map, idx: i64) -> Map {
        state
            .at("agents")
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a.get("idx").and_then(Value::as_i64) == Some(idx))
            .and_then(Value::as_object)
            .cloned()
            .unwrap()
    }

    fn status(state: &Map, idx: i64) -> String {
        agent(state, idx).at("status").as_str().unwrap().to_owned()
    }

    #[test]
    fn reads_every_kind_of_line() {
        assert_eq!(
            Line::parse("0,status,1,VILLAGER,ALIVE,cap1,ユミ"),
            Some(Line::Status {
                day: 0,
                agent: 1,
                role: "VILLAGER".into(),
                status: "ALIVE".into(),
                original_name: "cap1".into(),
                name: "ユミ".into()
            })
        );
        assert_eq!(
            Line::parse("1,talk,3,0,2,a, b, c\r"),
            Some(Line::Talk {
                day: 1,
                whisper: false,
                idx: 3,
                turn: 0,
                agent: 2,
                text: "a, b, c".into()
            })
        );
        assert!(matches!(
            Line::parse("1,status,2,WEREWOLF,,cap2,Agent[02]"),
            Some(Line::Status { status, .. }) if status.is_empty()
        ));
        assert_eq!(Line::parse("1,vote,1,5").map(|l| l.kind()), Some("vote"));
        assert_eq!(
            Line::parse("1,attackVote,4,1").map(|l| l.kind()),
            Some("attackVote")
        );
        assert_eq!(
            Line::parse("1,attack,-1,true"),
            Some(Line::Attack {
                day: 1,
                target: None,
                killed: true
            })
        );
        assert_eq!(
            Line::parse("3,result,1,1,WEREWOLF"),
            Some(Line::Result {
                day: 3,
                humans: 1,
                wolves: 1,
                winner: "WEREWOLF".into()
            })
        );
        for bad in [
            "",
            "x",
            "1",
            "1,",
            "1,vote",
            "1,vote,1",
            "1,vote,1,5,6",
            "1,vote,0,5",
            "1,vote,1,99999",
            "-1,vote,1,5",
            "+1,vote,1,5",
            "1,vote, 1,5",
            "1,status,1,villager,ALIVE,a,b",
            "1,status,1,VILLAGER,MAYBE,a,b",
            "1,status,1,VILLAGER,ALIVE,a",
            "1,talk,0,0,1",
            "1,attack,2,yes",
            "1,attack,-2,true",
            "1,result,1,1",
            "1,dance,1,2",
            "99999999999999999999,vote,1,2",
        ] {
            assert_eq!(Line::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn tells_a_game_log_by_its_content() {
        assert!(is_game_log(LOG_5P));
        assert!(is_game_log(LOG_13P));
        assert!(is_game_log(LOG_ABORT));
        assert!(!is_game_log(""));
        assert!(!is_game_log("{\"type\":\"session_ended\"}\n"));
        assert!(!is_game_log("hello\nworld\n0,vote,1,2\n"));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("game.txt");
        std::fs::write(&p, LOG_5P).unwrap();
        assert!(sniff(&p));
        assert!(!sniff(dir.path()));
        assert!(!sniff(&dir.path().join("missing.log")));
        let t = load(&p).unwrap();
        assert_eq!(t.steps.len(), parse(LOG_5P, "x").steps.len());
        let q = dir.path().join("notes.log");
        std::fs::write(&q, "just some notes\n").unwrap();
        assert!(matches!(load(&q), Err(LogError::NotAGameLog(_))));
        assert!(matches!(
            load(&dir.path().join("missing.log")),
            Err(LogError::Io { .. })
        ));
    }

    #[test]
    fn replays_the_5_player_game() {
        let t = parse(LOG_5P, "5p.log");
        assert!(t.werewolf && t.finished && !t.truncated);
        assert_eq!(t.skipped, 0);
        assert_eq!(t.winner.as_deref(), Some("WEREWOLF"));
        assert_eq!(t.end_reason.as_deref(), Some("finished"));
        // 57 lines: 4 status blocks of 5 (one step each), 37 other lines.
        assert_eq!(LOG_5P.lines().count(), 57);
        assert_eq!(t.steps.len(), 4 + 37);
        let kinds = |k: &str| t.steps.iter().filter(|s| s.action == k).count();
        assert_eq!(kinds("status"), 4);
        assert_eq!(kinds("talk"), 23);
        assert_eq!(kinds("vote"), 8);
        assert_eq!(kinds("execute"), 2);
        assert_eq!(
            (kinds("divine"), kinds("attackVote"), kinds("attack")),
            (1, 1, 1)
        );
        assert_eq!(kinds("result"), 1);

        // The first step: day 0's status, everybody alive, roles known.
        let s0 = &t.steps[0];
        assert_eq!(s0.summary, "day 0: 5 of 5 alive");
        assert_eq!(get(&s0.state, &["day"]).as_i64(), Some(0));
        assert_eq!(agent(&s0.state, 5).at("role").as_str(), Some("SEER"));
        assert_eq!(agent(&s0.state, 4).at("name").as_str(), Some("ミサキ"));
        assert_eq!(s0.t, 0.0);

        // Day 1's votes: after the fifth, 5 ミヅキ has two.
        let v = t
            .steps
            .iter()
            .position(|s| s.summary == "5 ミヅキ votes for 4 ミサキ")
            .unwrap();
        let st = &t.steps[v].state;
        assert_eq!(st.at("phase").as_str(), Some("vote"));
        assert_eq!(st.at("day").as_i64(), Some(1));
        assert_eq!(st.at("votes").as_array().unwrap().len(), 5);
        assert_eq!(st.at("vote_round").as_i64(), Some(1));
        // Day 1's talk: only Over (not kept), none of day 0's.
        assert!(st.at("talk").as_array().unwrap().is_empty());
        // Day 0's talk, as it stood at the night's divination: the ten
        // lines that say something.
        let divine = t.steps.iter().find(|s| s.action == "divine").unwrap();
        let talk = divine.state.at("talk").as_array().unwrap();
        assert_eq!(talk.len(), 10);
        assert_eq!(talk[0].at("name").as_str(), Some("3 シオン"));
        assert_eq!(talk[9].at("agent").as_i64(), Some(4));
        assert!(
            talk[5]
                .at("text")
                .as_str()
                .unwrap()
                .starts_with("前置き  @アスカ")
        );

        // The execution and the night's attack.
        let e = &t.steps[v + 1];
        assert_eq!(e.summary, "5 ミヅキ (SEER) is executed");
        assert_eq!(status(&e.state, 5), "dead");
        assert_eq!(
            agent(&e.state, 5).at("death").as_str(),
            Some("executed on day 1")
        );
        let a = &t.steps[v + 3];
        assert_eq!(a.action, "attack");
        assert_eq!(a.summary, "1 ユミ (VILLAGER) is attacked and dies");
        assert_eq!(a.state.at("phase").as_str(), Some("night"));
        assert_eq!(a.state.at("alive").as_i64(), Some(3));
        assert_eq!(get(&a.state, &["attacked", "agent"]).as_i64(), Some(1));
        assert_eq!(get(&a.state, &["executed", "agent"]).as_i64(), Some(5));

        // Day 2 begins: its talk and votes are empty, the last execution
        // stays.
        let d2 = &t.steps[v + 4];
        assert_eq!(d2.summary, "day 2: 3 of 5 alive; dead: 1 ユミ, 5 ミヅキ");
        assert!(d2.state.at("talk").as_array().unwrap().is_empty());
        assert!(d2.state.at("votes").as_array().unwrap().is_empty());
        assert_eq!(get(&d2.state, &["executed", "role"]).as_str(), Some("SEER"));

        // The end.
        let end = t.steps.last().unwrap();
        assert_eq!(end.kind, StepKind::Ended);
        assert_eq!(
            end.summary,
            "game over, WEREWOLF wins: 1 human and 1 werewolf alive"
        );
        assert_eq!(end.state.at("phase").as_str(), Some("game over"));
        assert_eq!(
            get(&end.state, &["result", "winner"]).as_str(),
            Some("WEREWOLF")
        );
        assert_eq!(end.state.at("alive").as_i64(), Some(2));
        assert_eq!(state_line(&end.state), "day 3 · game over · 2 of 5 alive");
        // Times only grow.
        assert!(t.steps.windows(2).all(|w| w[0].t <= w[1].t));
        assert!(t.duration() > 10.0);
    }

    #[test]
    fn replays_the_13_player_game() {
        let t = parse(LOG_13P, "13p.log");
        assert!(t.finished);
        assert_eq!(t.skipped, 0);
        assert_eq!(t.winner.as_deref(), Some("WEREWOLF"));
        // 235 lines, 78 of them in 6 status blocks of 13.
        assert_eq!(t.steps.len(), 235 - 78 + 6);
        let whispers = t.steps.iter().filter(|s| s.action == "whisper").count();
        assert_eq!(whispers, LOG_13P.matches(",whisper,").count());
        // Day 0 opens with the wolves' whispers before any talk: still day.
        let first_whisper = t.steps.iter().find(|s| s.action == "whisper").unwrap();
        assert_eq!(first_whisper.state.at("phase").as_str(), Some("day"));
        // The night's whispers after the day's talk.
        let talk = t.steps.iter().position(|s| s.action == "talk").unwrap();
        let night = t.steps[talk..]
            .iter()
            .find(|s| s.action == "whisper")
            .unwrap();
        assert_eq!(night.state.at("day").as_i64(), Some(0));
        assert_eq!(night.state.at("phase").as_str(), Some("night"));
        let guard = t.steps.iter().find(|s| s.action == "guard").unwrap();
        assert_eq!(guard.summary, "3 Agent[03] guards 9 Agent[09] (POSSESSED)");
        assert_eq!(guard.state.at("phase").as_str(), Some("night"));
        // The talk kept per step is bounded.
        assert!(
            t.steps
                .iter()
                .all(|s| s.state.at("talk").as_array().unwrap().len() <= TALK_LINES)
        );
        let end = t.steps.last().unwrap();
        assert_eq!(end.state.at("alive").as_i64(), Some(6));
        assert_eq!(
            agent(&end.state, 6).at("death").as_str(),
            Some("executed on day 1")
        );
        assert_eq!(
            agent(&end.state, 11).at("death").as_str(),
            Some("attacked on night 1")
        );
    }

    #[test]
    fn replays_the_aborted_game() {
        let t = parse(LOG_ABORT, "abort.log");
        assert!(t.finished);
        assert_eq!(t.winner.as_deref(), Some("NONE"));
        assert_eq!(t.end_reason.as_deref(), Some("no winner"));
        // 2 status blocks, 17 talk lines, the result.
        assert_eq!(t.steps.len(), 2 + 17 + 1);
        let day1 = &t.steps[18];
        assert_eq!(day1.action, "status");
        assert_eq!(status(&day1.state, 2), "error");
        assert!(
            day1.summary.ends_with("errored: 2 Agent[02]"),
            "{}",
            day1.summary
        );
        assert_eq!(
            t.steps[19].summary,
            "game over, no winner (NONE): 4 humans and 1 werewolf alive"
        );
    }

    #[test]
    fn damaged_lines_are_skipped_and_counted() {
        let mut text = String::from("garbage first\n");
        for (i, l) in LOG_5P.lines().enumerate() {
            if i % 7 == 3 {
                text.push_str(&l[..l.len() / 2]);
                text.push_str("\u{0}\n");
            } else {
                text.push_str(l);
                text.push_str("\r\n");
            }
        }
        text.push_str("9,unknown,1,2\n\n\n");
        let t = parse(&text, "damaged");
        let bom = format!("\u{feff}{LOG_5P}");
        assert!(is_game_log(&bom));
        let b = parse(&bom, "bom");
        assert_eq!((b.skipped, b.steps.len()), (0, 41));
        let damaged = LOG_5P
            .lines()
            .enumerate()
            .filter(|(i, _)| i % 7 == 3)
            .count();
        // Some halves still read (a talk line cut in its text).
        assert!(t.skipped >= 2 && t.skipped <= damaged + 2, "{}", t.skipped);
        assert!(t.finished);
        assert_eq!(t.winner.as_deref(), Some("WEREWOLF"));
    }

    #[test]
    fn steps_are_bounded() {
        let mut text = String::from("0,status,1,VILLAGER,ALIVE,a,A\n");
        for i in 0..(MAX_STEPS + 50) {
            text.push_str(&format!("0,talk,{i},0,1,hello {i}\n"));
        }
        text.push_str("0,result,1,0,VILLAGER");
        let t = parse(&text, "long");
        assert_eq!(t.steps.len(), MAX_STEPS);
        assert!(t.truncated);
        assert!(!t.finished);
        let last = t.steps.last().unwrap();
        assert_eq!(last.state.at("talk").as_array().unwrap().len(), TALK_LINES);
    }

    #[test]
    fn many_agents_with_long_names_stop_at_the_byte_bound() {
        let long = "名".repeat(200);
        let mut text = String::new();
        for i in 1..=MAX_AGENTS {
            text.push_str(&format!("0,status,{i},VILLAGER,ALIVE,{long},{long}\n"));
        }
        for i in 0..3000 {
            text.push_str(&format!("0,talk,{i},0,{},{long}\n", i % MAX_AGENTS + 1));
        }
        let t = parse(&text, "big");
        assert!(t.truncated);
        assert!(
            t.steps.len() > 100 && t.steps.len() < 3000,
            "{}",
            t.steps.len()
        );
        let first = &t.steps[0].state;
        assert_eq!(
            first.at("agents").as_array().unwrap().len(),
            MAX_AGENTS as usize
        );
        let name = agent(first, 1).at("name").as_str().unwrap().chars().count();
        assert_eq!(name, NAME_CHARS);
    }

    #[test]
    fn a_revote_starts_a_new_round_of_votes() {
        let text = "1,status,1,VILLAGER,ALIVE,a,A\n1,status,2,WEREWOLF,ALIVE,b,B\n\
                    1,vote,1,2\n1,vote,2,1\n1,vote,1,2\n1,vote,2,2\n1,execute,2,WEREWOLF\n\
                    2,status,1,VILLAGER,ALIVE,a,A\n2,status,2,WEREWOLF,DEAD,b,B\n2,result,1,0,VILLAGER";
        let t = parse(text, "revote");
        assert_eq!(t.steps.len(), 8);
        let first = &t.steps[2].state;
        assert_eq!(first.at("vote_round").as_i64(), Some(1));
        assert_eq!(first.at("votes").as_array().unwrap().len(), 2);
        let again = &t.steps[3].state;
        assert_eq!(again.at("vote_round").as_i64(), Some(2));
        assert_eq!(again.at("votes").as_array().unwrap().len(), 1);
        assert_eq!(t.steps[4].state.at("votes").as_array().unwrap().len(), 2);
        assert_eq!(t.winner.as_deref(), Some("VILLAGER"));
        assert_eq!(
            agent(&t.steps[7].state, 2).at("death").as_str(),
            Some("executed on day 1")
        );
    }

    #[test]
    fn unknown_agents_and_out_of_order_days_do_not_break_it() {
        let text = "3,vote,7,8\n1,attack,9,true\n0,execute,2,WEREWOLF\n2,result,0,0,VILLAGER";
        let t = parse(text, "odd");
        assert_eq!(t.steps.len(), 4);
        assert_eq!(t.steps[0].summary, "agent 7 votes for agent 8");
        let end = &t.steps[3].state;
        assert_eq!(status(end, 9), "dead");
        assert_eq!(agent(end, 2).at("role").as_str(), Some("WEREWOLF"));
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        const KINDS: [&str; 12] = [
            "status",
            "talk",
            "whisper",
            "vote",
            "attackVote",
            "execute",
            "divine",
            "guard",
            "attack",
            "result",
            "",
            "x",
        ];

        fn field() -> impl Strategy<Value = String> {
            prop_oneof![
                (-3i64..20).prop_map(|n| n.to_string()),
                Just("ALIVE".to_owned()),
                Just("DEAD".to_owned()),
                Just(String::new()),
                Just("true".to_owned()),
                Just("WEREWOLF".to_owned()),
                Just("-1".to_owned()),
                "\\PC{0,8}",
                any::<u64>().prop_map(|n| n.to_string()),
            ]
        }

        fn line() -> impl Strategy<Value = String> {
            prop_oneof![
                (
                    0i64..6,
                    prop::sample::select(KINDS.to_vec()),
                    prop::collection::vec(field(), 0..7)
                )
                    .prop_map(|(d, k, f)| {
                        let mut l = format!("{d},{k}");
                        for x in f {
                            l.push(',');
                            l.push_str(&x);
                        }
                        l
                    }),
                "\\PC{0,40}",
                ".{0,40}",
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]

            #[test]
            fn random_lines_never_panic(lines in prop::collection::vec(line(), 0..80)) {
                let text = lines.join("\n");
                let t = parse(&text, "p");
                prop_assert!(t.steps.len() <= lines.len());
                prop_assert!(t.skipped <= lines.len());
                prop_assert!(t.steps.windows(2).all(|w| w[0].t <= w[1].t));
                let _ = is_game_log(&text);
                for s in &t.steps {
                    let _ = state_line(&s.state);
                }
            }

            #[test]
            fn mutated_sample_logs_never_panic(
                cuts in prop::collection::vec((0usize..3000, 0usize..40, any::<u8>()), 1..12)
            ) {
                let mut bytes = LOG_5P.as_bytes().to_vec();
                for (at, len, b) in cuts {
                    let at = at % (bytes.len() + 1);
                    let end = (at + len).min(bytes.len());
                    match b % 3 {
                        0 => { bytes.drain(at..end); }
                        1 => bytes.insert(at, b),
                        _ => bytes.insert(at, if b % 2 == 0 { b',' } else { b'\n' }),
                    }
                }
                let text = String::from_utf8_lossy(&bytes);
                let t = parse(&text, "m");
                prop_assert!(t.steps.len() <= text.split('\n').count());
            }
        }

        const LOG_5P: &str = include_str!("../../tests/data/aiwolf/v0.4.12_5p_game.log");
    }
}
