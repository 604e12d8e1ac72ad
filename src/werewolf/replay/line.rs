//! One line of a game .log read into a [`Line`]: its day, its kind and
//! what it says, checked field by field (numbers, role words, clean text).

use super::{MAX_AGENTS, MAX_DAY, NAME_CHARS, TEXT_CHARS};

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
pub(super) fn num(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A role, species or team word: `A-Z`, `_`, 1 to 32 of them.
pub(super) fn word(s: &str) -> Option<String> {
    (!s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
        .then(|| s.to_owned())
}

/// Text from a line: control characters become spaces, cut to `max`
/// characters.
pub(super) fn clean(s: &str, max: usize) -> String {
    s.chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
