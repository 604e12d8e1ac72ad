//! Following a session by its files, whoever runs it (this console, a
//! daemon, `palaver host` in another terminal, the reference client): a
//! [`Watcher`] looks at the state dir and says what changed as one
//! [`WatchUpdate`] (a task polls it every [`POLL`]); feed pages and searches
//! read events.jsonl the same way.

use super::report::feed::{FeedRow, OpenWindow, RowKind, WatchUpdate};
use crate::json::{Map, Value};
use crate::session::StateDir;
use crate::session::decision::finalized_key;
use crate::session::files;
use std::io::{BufRead, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How often a watched session's files are looked at.
pub const POLL: Duration = Duration::from_millis(40);

fn time_of(ts: &str) -> Box<str> {
    ts.get(11..19).unwrap_or("--:--:--").into()
}

fn compact(v: &Value) -> String {
    crate::json::canonical::to_string_ordered(v)
}

/// Summarises one events.jsonl line.
pub fn row_of(ev: &Map) -> FeedRow {
    let ts = ev.get("ts").and_then(Value::as_str).unwrap_or("");
    let kind = ev.get("type").and_then(Value::as_str).unwrap_or("?");
    let data = ev.get("data").cloned().unwrap_or(Value::Null);
    let given = ev
        .get("summary")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if kind == "protocol_message" {
        let dir = data.get("direction").and_then(Value::as_str).unwrap_or("");
        let msg = data.get("msg").cloned().unwrap_or(Value::Null);
        let noise = msg
            .as_object()
            .is_some_and(|m| m.keys().any(|k| k.starts_with('_')));
        let summary = match given {
            Some(s) => s.to_owned(),
            None => summarise_msg(&msg),
        };
        return FeedRow {
            time: time_of(ts),
            kind: if noise {
                RowKind::Noise
            } else if dir == "sent" {
                RowKind::Sent
            } else {
                RowKind::Received
            },
            summary: summary.into(),
            raw: compact(&msg).into(),
        };
    }
    if kind == "whisper_applied" {
        return FeedRow {
            time: time_of(ts),
            kind: RowKind::Lifecycle,
            summary: whisper_applied_line(&data).into(),
            raw: compact(&Value::Object(ev.clone())).into(),
        };
    }
    let noise = matches!(kind, "peer_resumed" | "heartbeat" | "peer_ping");
    let summary = match given {
        Some(s) => format!("{kind}: {s}"),
        None => match data.as_object() {
            // A decision window's event names it as people count it.
            Some(d)
                if d.get("match_key").and_then(Value::as_str).is_some()
                    && d.contains_key("match_value") =>
            {
                let key = d.get("match_key").and_then(Value::as_str).unwrap_or("");
                let at = crate::tui::panes::numbering::label(
                    key,
                    d.get("match_value").unwrap_or(&Value::Null),
                );
                let rest: Map = d
                    .iter()
                    .filter(|(k, _)| !matches!(*k, "match_key" | "match_value"))
                    .map(|(k, v)| (k, v.clone()))
                    .collect();
                let mut s = if rest.is_empty() {
                    format!("{kind} · {at}")
                } else {
                    format!("{kind} · {at} {}", compact(&Value::Object(rest)))
                };
                truncate(&mut s, 160);
                s
            }
            Some(d) if !d.is_empty() => {
                let mut s = format!("{kind} {}", compact(&data));
                truncate(&mut s, 160);
                s
            }
            _ => kind.to_owned(),
        },
    };
    FeedRow {
        time: time_of(ts),
        kind: if noise {
            RowKind::Noise
        } else {
            RowKind::Lifecycle
        },
        summary: summary.into(),
        raw: compact(&Value::Object(ev.clone())).into(),
    }
}

/// The feed's mark for a whisper taking effect.
pub fn whisper_applied_line(data: &Value) -> String {
    let action = match data.get("action").and_then(Value::as_str) {
        Some("strategy") => "as the strategy",
        Some("decide") => "as a decision",
        _ => "",
    };
    let key = data.get("match_key").and_then(Value::as_str).unwrap_or("");
    let at = match data.get("match_value") {
        Some(v) if !key.is_empty() && !v.is_null() => {
            format!(" for {}", crate::tui::panes::numbering::label(key, v))
        }
        _ => String::new(),
    };
    let result = match data.get("result") {
        Some(Value::String(r)) => format!(": {r}"),
        Some(Value::Object(m)) => m
            .iter()
            .find(|(k, _)| {
                !k.starts_with('_') && !matches!(*k, "round" | "turn" | "attempt" | "action_seq")
            })
            .map(|(_, v)| format!(": {}", v.py_str()))
            .unwrap_or_default(),
        Some(v) if !v.is_null() => format!(": {}", v.py_str()),
        _ => String::new(),
    };
    let mut s = format!("✓ whisper took effect {action}{at}{result}");
    truncate(&mut s, 160);
    s.replace("  ", " ")
}

fn truncate(s: &mut String, max: usize) {
    if s.chars().count() > max {
        let cut: String = s.chars().take(max - 1).collect();
        *s = cut + "…";
    }
}

/// `action k=v …` for frames the runtime did not summarise.
fn summarise_msg(msg: &Value) -> String {
    let Some(m) = msg.as_object() else {
        return compact(msg);
    };
    // A chat line reads best as itself.
    if m.len() == 2
        && m.get("action").and_then(Value::as_str) == Some("chat")
        && let Some(t) = m.get("text").and_then(Value::as_str)
    {
        let mut s = format!("“{t}”");
        truncate(&mut s, 160);
        return s;
    }
    let mut s = m
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("frame")
        .to_owned();
    for (k, v) in m.iter().filter(|(k, _)| *k != "action") {
        s.push(' ');
        // Rounds read as people count them (the raw view keeps the wire's).
        if k == "round"
            && let Some(n) = v.as_i64()
        {
            s.push_str(&crate::tui::panes::numbering::label(
                "round",
                &Value::from(n),
            ));
            continue;
        }
        s.push_str(k);
        s.push('=');
        match v {
            Value::String(x) => s.push_str(x),
            other => s.push_str(&compact(other)),
        }
        if s.len() > 200 {
            break;
        }
    }
    truncate(&mut s, 160);
    s
}

/// Tails a jsonl file by byte offset, complete lines only. Reads stream
/// through a fixed buffer, and only the last `keep` new lines are parsed,
/// so attaching to a huge session costs time, not memory.
#[derive(Debug, Default)]
struct LineTail {
    offset: u64,
    count: usize,
}

impl LineTail {
    /// New complete lines: (index of the first one returned, records).
    fn poll(&mut self, path: &Path, keep: usize) -> (usize, Vec<Map>) {
        let Ok(mut f) = std::fs::File::open(path) else {
            return (self.count, Vec::new());
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            // Replaced or truncated: start over.
            *self = LineTail::default();
        }
        if len == self.offset || f.seek(SeekFrom::Start(self.offset)).is_err() {
            return (self.count, Vec::new());
        }
        let mut r = std::io::BufReader::with_capacity(1 << 16, f);
        let mut last: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
        let mut line = Vec::new();
        let mut n = 0usize;
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(k) => {
                    if line.last() != Some(&b'\n') {
                        // A line still being written: read it next time.
                        break;
                    }
                    self.offset += k as u64;
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    n += 1;
                    if keep > 0 {
                        if last.len() == keep {
                            last.pop_front();
                        }
                        last.push_back(std::mem::take(&mut line));
                    }
                }
            }
        }
        let first = self.count + n - last.len();
        self.count += n;
        let out = last
            .iter()
            .map(|l| {
                crate::json::parse_bytes(l)
                    .ok()
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_else(|| {
                        crate::obj! { "type" => "unreadable_line", "data" => crate::obj! { "line" => String::from_utf8_lossy(l).trim_end().to_owned() } }
                    })
            })
            .collect();
        (first, out)
    }
}

/// Change detection by (mtime, len).
#[derive(Debug, Default)]
struct Stamp(Option<(SystemTime, u64)>);

impl Stamp {
    fn changed(&mut self, path: &Path) -> bool {
        let now = std::fs::metadata(path)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
        if now != self.0 {
            self.0 = now;
            return true;
        }
        false
    }
}

/// Reads the open window from a decision dir.
pub fn open_window(decision_dir: &Path) -> Option<OpenWindow> {
    let st = files::read_json_object(&decision_dir.join("state.json"))?;
    let key = st.get("match_key").and_then(Value::as_str)?.to_owned();
    let value = st.get("match_value").cloned().unwrap_or(Value::Null);
    let fin = files::read_json_object(&decision_dir.join("finalized.json")).unwrap_or_default();
    if fin.contains_key(&finalized_key(&key, &value)) {
        return None;
    }
    Some(OpenWindow {
        match_key: key,
        match_value: value,
        mode: st
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        release_at: st.get("release_at").and_then(Value::as_f64).unwrap_or(0.0),
        deadline_at: st.get("deadline_at").and_then(Value::as_f64).unwrap_or(0.0),
    })
}

/// Events the attached session's banner and whisper mark follow.
pub const ASIDE_EVENTS: [&str; 3] = ["peer_unresponsive", "peer_resumed", "whisper_applied"];

/// details.jsonl lines kept (and read on a first look) at most.
pub const DETAILS_KEPT: usize = 512;

/// State of one watcher between polls.
pub struct Watcher {
    dir: StateDir,
    events: LineTail,
    snapshot: Stamp,
    session: Stamp,
    state: Stamp,
    finalized: Stamp,
    strategy: Stamp,
    decisions: LineTail,
    window: Option<Option<OpenWindow>>,
    details: LineTail,
    acks: LineTail,
    /// Polls since the host's `bots/` was last read, and what it held.
    bots_age: u32,
    bots: Option<Vec<(String, Option<i64>)>>,
}

/// Polls between two reads of a table host's `bots/` (about a second).
const BOTS_EVERY: u32 = 25;

/// Bot dirs of a host read at most.
const MAX_BOTS: usize = 64;

/// The bots a room's host seated: each `bots/bot-N/session.json`'s member
/// id and seat, sorted (`None`: the dir has no `bots/`).
pub fn read_bots(room_dir: &Path) -> Option<Vec<(String, Option<i64>)>> {
    let entries = std::fs::read_dir(room_dir.join("bots")).ok()?;
    let mut out: Vec<(String, Option<i64>)> = entries
        .filter_map(Result::ok)
        .take(MAX_BOTS)
        .filter_map(|e| files::read_json_object(&e.path().join("session.json")))
        .filter_map(|s| {
            let id = s.get("member_id").and_then(Value::as_str)?.to_owned();
            let seat = s
                .get("seat")
                .filter(|v| v.is_integer())
                .and_then(Value::as_i64);
            Some((id, seat))
        })
        .collect();
    out.sort();
    Some(out)
}

impl Watcher {
    pub fn new(dir: StateDir) -> Watcher {
        Watcher {
            dir,
            events: LineTail::default(),
            snapshot: Stamp::default(),
            session: Stamp::default(),
            state: Stamp::default(),
            finalized: Stamp::default(),
            strategy: Stamp::default(),
            decisions: LineTail::default(),
            window: None,
            details: LineTail::default(),
            acks: LineTail::default(),
            bots_age: 0,
            bots: None,
        }
    }

    /// One look at the files; `None` when nothing changed.
    pub fn poll(&mut self) -> Option<WatchUpdate> {
        let mut u = WatchUpdate::default();
        let (first, evs) = self
            .events
            .poll(&self.dir.events_file(), crate::tui::panes::feed::WINDOW);
        if !evs.is_empty() {
            u.appended = Some((first, evs.iter().map(row_of).collect()));
        }
        fn kind_in(e: &Map, list: &[&str]) -> bool {
            e.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| list.contains(&t))
        }
        u.room_events = evs
            .iter()
            .filter(|e| kind_in(e, crate::session::room::NOTICE_EVENTS))
            .cloned()
            .collect();
        u.aside_events = evs
            .iter()
            .filter(|e| kind_in(e, &ASIDE_EVENTS))
            .cloned()
            .collect();
        u.details = self
            .details
            .poll(&self.dir.child.join("details.jsonl"), DETAILS_KEPT)
            .1;
        u.whisper_acks = self
            .acks
            .poll(&self.dir.child.join("whisper_acks.jsonl"), 64)
            .1;
        u.facts = evs
            .into_iter()
            .filter(|e| kind_in(e, &crate::tui::panes::cards::FACT_EVENTS))
            .collect();
        let snap = self.dir.child.join("snapshot.json");
        if self.snapshot.changed(&snap) {
            let read = files::read_json_object(&snap);
            u.snapshot_unreadable = read.is_none() && snap.is_file();
            u.world = read.as_ref().and_then(crate::tui::tank_order::tank_world);
            u.snapshot = Some(read.unwrap_or_default());
        }
        if let Some(sf) = self.dir.session_file()
            && self.session.changed(&sf)
        {
            u.session = Some(files::read_json_object(&sf).unwrap_or_default());
        }
        let strat = self.dir.child.join("strategy.json");
        if self.strategy.changed(&strat) {
            u.strategy = Some(files::read_json_object(&strat).unwrap_or_default());
        }
        let dd = self.dir.decision_dir();
        u.decisions = self.decisions.poll(&dd.join("decisions.jsonl"), 64).1;
        let a = self.state.changed(&dd.join("state.json"));
        let b = self.finalized.changed(&dd.join("finalized.json"));
        if a || b || self.window.is_none() {
            let w = open_window(&dd);
            if self.window.as_ref() != Some(&w) {
                self.window = Some(w.clone());
                u.window = Some(w);
            }
        }
        // A room's host keeps the bots it seated under `bots/`.
        if self.dir.parent.as_deref() == Some(self.dir.child.as_path()) {
            if self.bots_age == 0 {
                let bots = read_bots(&self.dir.child);
                if bots.is_some() && bots != self.bots {
                    u.bots = bots.clone();
                    self.bots = bots;
                }
            }
            self.bots_age = (self.bots_age + 1) % BOTS_EVERY;
        }
        (u != WatchUpdate::default()).then_some(u)
    }
}

/// Calls `f(index, line)` for each complete, non-blank line of a jsonl
/// file, streaming through a fixed buffer, until `f` returns false.
fn each_line(path: &Path, mut f: impl FnMut(usize, &[u8]) -> bool) {
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    let mut r = std::io::BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    let mut i = 0usize;
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') || line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if !f(i, &line) {
            return;
        }
        i += 1;
    }
}

/// Reads events `[start, start + count)` of an events.jsonl, streaming (the
/// file is never held in memory whole).
pub fn read_page(path: &Path, start: usize, count: usize) -> Vec<FeedRow> {
    let mut out = Vec::with_capacity(count);
    each_line(path, |i, line| {
        if i >= start {
            let m = crate::json::parse_bytes(line)
                .ok()
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            out.push(row_of(&m));
        }
        out.len() < count
    });
    out
}

/// Indices of events whose summary or JSON contains `needle` (case-blind),
/// at most `cap` of them, the newest kept.
pub fn search_file(path: &Path, needle: &str, cap: usize) -> Vec<usize> {
    let needle = needle.to_lowercase();
    let mut out = std::collections::VecDeque::new();
    each_line(path, |i, line| {
        if String::from_utf8_lossy(line)
            .to_lowercase()
            .contains(&needle)
        {
            out.push_back(i);
            if out.len() > cap {
                out.pop_front();
            }
        }
        true
    });
    out.into()
}

/// Is `path` a room's one-level state dir (`{host|guest}-group-<ms>`:
/// session.json, events.jsonl and snapshot.json side by side)?
pub fn is_room_dir(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("-group-"))
        && path.is_dir()
}

/// The state dir a path names (parent or engine dir), for attaching. A
/// room's dir is both (one level), from the moment it exists; so is any
/// dir holding session.json and snapshot.json side by side.
pub fn resolve(path: &Path) -> Option<(PathBuf, StateDir)> {
    let one_level = path.join("session.json").is_file()
        && path.join("snapshot.json").is_file()
        && !path
            .parent()
            .is_some_and(|p| p.join("session.json").is_file());
    if is_room_dir(path) || one_level {
        let d = StateDir {
            parent: Some(path.to_owned()),
            child: path.to_owned(),
        };
        return Some((path.to_owned(), d));
    }
    let d = StateDir::resolve(path)?;
    let key = d.parent.clone().unwrap_or_else(|| d.child.clone());
    Some((key, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_hosts_bots_are_read_from_its_bots_dir() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_bots(d.path()), None);
        for (n, body) in [
            (2, r#"{"member_id":"m2","seat":2}"#),
            (1, r#"{"member_id":"m1","seat":1}"#),
            // Not admitted yet: no member id.
            (3, r#"{"status":"joining"}"#),
        ] {
            let bot = d.path().join("bots").join(format!("bot-{n}"));
            std::fs::create_dir_all(&bot).unwrap();
            std::fs::write(bot.join("session.json"), body).unwrap();
        }
        assert_eq!(
            read_bots(d.path()),
            Some(vec![("m1".into(), Some(1)), ("m2".into(), Some(2))])
        );
    }

    #[test]
    fn a_first_read_keeps_only_the_last_lines_and_counts_them_all() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("events.jsonl");
        let mut text = String::new();
        for i in 0..1000 {
            text.push_str(&format!("{{\"type\":\"x\",\"data\":{{\"i\":{i}}}}}\n"));
        }
        text.push_str("{\"type\":\"partial");
        std::fs::write(&p, &text).unwrap();
        let mut t = LineTail::default();
        let (first, got) = t.poll(&p, 10);
        assert_eq!((first, got.len(), t.count), (990, 10, 1000));
        assert_eq!(
            got[0].get("data").unwrap().get("i"),
            Some(&Value::from(990))
        );
        // The partial line is read once it is complete.
        std::fs::write(&p, format!("{text}\"}}\nnot json\n")).unwrap();
        let (first, got) = t.poll(&p, 10);
        assert_eq!((first, got.len()), (1000, 2));
        assert_eq!(
            got[1].get("type").and_then(Value::as_str),
            Some("unreadable_line")
        );
    }
}
