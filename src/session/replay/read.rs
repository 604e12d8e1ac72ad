//! Reading a state dir into a timeline: which files, their lines merged in
//! time order, each fed to the [`Builder`].

use super::build::{Builder, event_summary, game_of, new_board};
use super::{Actor, Raw, Src, StepKind, Timeline, int, s};
use crate::json::{Map, Value};
use crate::protocols::board::Kind;
use crate::session::files::{read_json_object, read_jsonl};
use crate::session::state::{self, StateDir};
use std::path::Path;

/// Rebuilds the timeline of a resolved state dir.
pub fn load_dir(dir: &StateDir) -> Timeline {
    let home = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
    let session = dir
        .session_file()
        .and_then(|f| read_json_object(&f))
        .or_else(|| read_json_object(&dir.child.join("session.json")))
        .unwrap_or_default();
    let final_snap = read_json_object(&dir.child.join("snapshot.json")).unwrap_or_default();
    let pick = |k: &str| -> Option<String> {
        s(&session, k)
            .or_else(|| s(&final_snap, k))
            .map(str::to_owned)
    };
    let protocol_name = pick("protocol_name");
    let role = pick("role");
    let control_mode = s(&session, "local_control_mode")
        .or_else(|| s(&final_snap, "control_mode"))
        .map(str::to_owned);
    let room = session.contains_key("group_id") || final_snap.contains_key("group");

    // Gather every line with its time.
    let mut raws: Vec<Raw> = Vec::new();
    let has_room_details = room;
    let events = dir.events_file();
    add(&mut raws, &events, Src::Event, &|l: &Map| {
        !(has_room_details && matches!(s(l, "type"), Some("group_frame" | "group_frame_received")))
    });
    let dec = dir.decision_events_file();
    if dec != events {
        add(&mut raws, &dec, Src::Event, &|_| true);
    }
    for base in dedup_dirs(&dir.child, &home) {
        add(
            &mut raws,
            &base.join("whispers.jsonl"),
            Src::Whisper,
            &|_| true,
        );
        add(
            &mut raws,
            &base.join("whisper_acks.jsonl"),
            Src::WhisperAck,
            &|_| true,
        );
    }
    if room {
        add(
            &mut raws,
            &dir.child.join("details.jsonl"),
            Src::RoomFrame,
            &|l: &Map| s(l, "type") == Some("group_frame"),
        );
    }
    // No frames on file (the reference's `protocol test` writes none): the
    // game records of details.jsonl tell the rounds and moves instead.
    if !room
        && !raws
            .iter()
            .any(|r| s(&r.line, "type") == Some("protocol_message"))
    {
        add(
            &mut raws,
            &dir.child.join("details.jsonl"),
            Src::Detail,
            &|l: &Map| matches!(s(l, "type"), Some("round_result" | "move" | "pass")),
        );
    }
    // Whispers copied into both dirs appear once.
    let mut seen_whispers = std::collections::HashSet::new();
    raws.retain(|r| {
        r.src != Src::Whisper
            || match s(&r.line, "id") {
                Some(id) => seen_whispers.insert(id.to_owned()),
                None => true,
            }
    });
    // Stable by time; lines without a time keep their file order at the end.
    raws.sort_by(|a, b| {
        let ka = crate::utc::parse_iso_seconds(&a.ts);
        let kb = crate::utc::parse_iso_seconds(&b.ts);
        match (ka, kb) {
            (Some(x), Some(y)) => x.total_cmp(&y).then(a.order.cmp(&b.order)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.order.cmp(&b.order),
        }
    });

    let mut state = Map::new();
    state.insert("phase", Value::from("starting"));
    if let Some(r) = &role {
        state.insert("role", Value::from(r.as_str()));
    }
    if let Some(p) = &protocol_name {
        state.insert("protocol_name", Value::from(p.as_str()));
    }
    if let Some(m) = &control_mode {
        state.insert("control_mode", Value::from(m.as_str()));
    }
    let mut b = Builder {
        role: role.clone().unwrap_or_default(),
        game: protocol_name
            .as_deref()
            .and_then(|p| game_of(p, &final_snap))
            .or_else(|| game_of("", &final_snap)),
        board: None,
        state,
        messages: Vec::new(),
        steps: Vec::new(),
        first_t: None,
        last_t: f64::MIN,
        truncated: false,
    };
    if b.game.is_none() && final_snap.contains_key("board") {
        // A board game this module does not know: dims only, no rules.
        b.game = Some(Kind::Gomoku);
    }
    if let (Some(_), Some(r), Some(c)) = (
        b.game,
        int(&final_snap, "rows").or_else(|| int(&final_snap, "board_size")),
        int(&final_snap, "cols").or_else(|| int(&final_snap, "board_size")),
    ) {
        b.board = b.game.and_then(|g| new_board(g, r, c));
    }
    let mut finished = false;
    let mut end_reason = s(&session, "end_reason").map(str::to_owned);
    let mut winner = session
        .get("winner")
        .filter(|w| !w.is_null())
        .map(Value::py_str);
    for raw in &raws {
        let line = &raw.line;
        let data = line
            .get("data")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        match raw.src {
            Src::Whisper => {
                let who = s(line, "role").unwrap_or("user");
                let text = s(line, "text").unwrap_or("");
                let by = (who == "user").then_some(Actor::Whisper);
                b.push(
                    raw,
                    StepKind::Whisper,
                    "whisper",
                    format!("whisper ({who}): {text}"),
                    by,
                );
            }
            Src::WhisperAck => {
                let id = line
                    .get("whisper_id")
                    .or_else(|| line.get("id"))
                    .map(Value::py_str)
                    .unwrap_or_default();
                let status = line
                    .get("status")
                    .or_else(|| line.get("ack"))
                    .map(Value::py_str)
                    .unwrap_or_else(|| "acknowledged".into());
                b.push(
                    raw,
                    StepKind::Whisper,
                    "whisper_ack",
                    format!("whisper {id}: {status}"),
                    None,
                );
            }
            Src::RoomFrame => b.room_frame(raw),
            Src::Detail => b.detail(raw),
            Src::Event => {
                let kind = s(line, "type").unwrap_or("?").to_owned();
                match kind.as_str() {
                    "protocol_message" => b.frame(raw, &data),
                    "session_ended" => {
                        finished = true;
                        if let Some(r) = s(&data, "reason") {
                            end_reason = Some(r.to_owned());
                        }
                        if let Some(w) = data.get("winner").filter(|w| !w.is_null()) {
                            winner = Some(w.py_str());
                        }
                        // The end: what snapshot.json says, over what was rebuilt.
                        for (k, v) in final_snap.iter() {
                            if !matches!(k, "timing" | "updated_at" | "last_event") {
                                b.state.insert(k, v.clone());
                            }
                        }
                        if b.board.is_some() {
                            b.board = None; // snapshot.json's board stands
                        }
                        if !b.messages.is_empty()
                            && final_snap
                                .get("group_view")
                                .and_then(|v| v.get("messages"))
                                .is_some()
                        {
                            b.messages.clear();
                        }
                        let reason = s(&data, "reason").unwrap_or("?");
                        let summary = match data.get("winner").filter(|w| !w.is_null()) {
                            Some(w) => format!("session ended: {reason}, winner {}", w.py_str()),
                            None => format!("session ended: {reason}"),
                        };
                        b.push(raw, StepKind::Ended, "session_ended", summary, None);
                    }
                    k if state::is_decision_event(k) => b.decision_event(raw, k, &data),
                    _ => {
                        let summary = event_summary(&kind, raw, &data);
                        b.push(raw, StepKind::Event, &kind, summary, None);
                    }
                }
            }
        }
    }
    let ended_in_snapshot = matches!(
        s(&final_snap, "phase"),
        Some("game_over" | "group_completed")
    ) || final_snap.get("completed").and_then(Value::as_bool) == Some(true);
    if !finished && ended_in_snapshot {
        // No session_ended on file: the snapshot's end closes the timeline.
        let ts = s(&final_snap, "updated_at").unwrap_or("").to_owned();
        let summary = final_snap
            .get("last_event")
            .and_then(|l| l.get("summary"))
            .and_then(Value::as_str)
            .unwrap_or("game over")
            .to_owned();
        for (k, v) in final_snap.iter() {
            if !matches!(k, "timing" | "updated_at" | "last_event") {
                b.state.insert(k, v.clone());
            }
        }
        b.board = None;
        b.messages.clear();
        let raw = Raw {
            ts,
            order: usize::MAX,
            src: Src::Event,
            line: Map::new(),
        };
        b.push(
            &raw,
            StepKind::Ended,
            "session_ended",
            format!("end (snapshot.json): {summary}"),
            None,
        );
    }
    if !finished {
        finished = matches!(
            s(&session, "status"),
            Some("closed" | "completed" | "failed" | "aborted" | "crashed" | "stopped")
        ) || final_snap.get("completed").and_then(Value::as_bool) == Some(true)
            || matches!(
                s(&final_snap, "phase"),
                Some("game_over" | "group_completed")
            );
    }
    Timeline {
        dir: home.display().to_string(),
        protocol_name,
        protocol_id: pick("protocol_id"),
        role,
        control_mode,
        room,
        finished,
        end_reason,
        winner,
        truncated: b.truncated,
        werewolf: false,
        skipped: 0,
        steps: b.steps,
    }
}

/// Appends the lines of `path` that pass `filter`.
fn add(raws: &mut Vec<Raw>, path: &Path, src: Src, filter: &dyn Fn(&Map) -> bool) {
    for line in read_jsonl(path) {
        if !filter(&line) {
            continue;
        }
        let ts = s(&line, "ts").unwrap_or("").to_owned();
        let order = raws.len();
        raws.push(Raw {
            ts,
            order,
            src,
            line,
        });
    }
}

fn dedup_dirs(child: &Path, home: &Path) -> Vec<std::path::PathBuf> {
    if child == home {
        vec![child.to_owned()]
    } else {
        vec![child.to_owned(), home.to_owned()]
    }
}
