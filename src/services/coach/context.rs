//! The situation a prompt carries: a one-line summary of the session's
//! snapshot and the tail of its events, noise left out.

use crate::json::{Map, Value};
use std::path::Path;

/// The most characters of snapshot summary the prompt carries.
const MAX_SNAPSHOT_CHARS: usize = 6000;
/// The most bytes of events.jsonl read back for the prompt.
const MAX_EVENTS_TAIL_BYTES: u64 = 1 << 20;
/// The most characters of one event line in the prompt.
const MAX_EVENT_CHARS: usize = 1000;

/// Decision-window bookkeeping the engine writes every round: no tactics in
/// it, and left out of the prompt so real moves survive the tail.
const NOISE_EVENTS: [&str; 5] = [
    "local_decision_window_started",
    "local_decision_updated",
    "local_decision_fallback",
    "local_decision_finalized",
    "local_decision_ready",
];

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    })
}

/// The public part of `state_dir/snapshot.json` in one line: phase, role,
/// round, score, winner, the real-time transport and world basics, the last
/// event's summary (at most 6000 characters).
pub fn summarize_snapshot(state_dir: &Path) -> String {
    let Ok(bytes) = std::fs::read(state_dir.join("snapshot.json")) else {
        return String::new();
    };
    let Ok(v) = crate::json::parse_bytes(&bytes) else {
        return String::new();
    };
    let Some(snap) = v.as_object() else {
        return String::new();
    };
    let mut parts: Vec<String> = Vec::new();
    let mut keys: Vec<&str> = Vec::new();
    for k in [
        "phase",
        "role",
        "round",
        "tick",
        "score",
        "summary",
        "host_alive",
        "guest_alive",
        "winner",
    ] {
        if let Some(v) = present(snap.get(k)) {
            parts.push(format!("{k}={}", v.py_str()));
            keys.push(k);
        }
    }
    let transport = snap
        .get("realtime")
        .and_then(Value::as_object)
        .and_then(|r| r.get("transport"))
        .and_then(Value::as_object);
    if let Some(t) = transport {
        let bits: Vec<String> = [
            "status",
            "smoothed_rtt_ms",
            "jitter_ms",
            "command_lead_ticks",
            "recommended_control",
            "micro_suitable",
        ]
        .iter()
        .filter_map(|k| present(t.get(k)).map(|v| format!("{k}={}", v.py_str())))
        .collect();
        if !bits.is_empty() {
            parts.push(format!("transport({})", bits.join(", ")));
        }
    }
    if let Some(world) = snap.get("world").and_then(Value::as_object) {
        for k in ["tick", "host_alive", "guest_alive", "winner"] {
            if keys.contains(&k) {
                continue;
            }
            if let Some(v) = present(world.get(k)) {
                parts.push(format!("{k}={}", v.py_str()));
            }
        }
    }
    if let Some(s) = snap
        .get("last_event")
        .and_then(Value::as_object)
        .and_then(|e| present(e.get("summary")))
    {
        parts.push(format!("last={}", s.py_str()));
    }
    parts.join("; ").chars().take(MAX_SNAPSHOT_CHARS).collect()
}

/// The last `max_events` meaningful lines of `state_dir/events.jsonl`, one
/// `- [ts] summary` a line; decision-window bookkeeping is left out before
/// the tail is taken.
pub fn summarize_events(state_dir: &Path, max_events: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(state_dir.join("events.jsonl")) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(MAX_EVENTS_TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.lines();
    if start > 0 {
        lines.next(); // a partial line
    }
    let events: Vec<Map> = lines
        .filter_map(|l| match crate::json::parse_str(l) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        })
        .filter(|o| {
            let t = o.get("type").and_then(Value::as_str);
            !t.is_some_and(|t| NOISE_EVENTS.contains(&t))
        })
        .collect();
    let skip = if max_events > 0 {
        events.len().saturating_sub(max_events)
    } else {
        0
    };
    events[skip..]
        .iter()
        .filter_map(|e| {
            let s = present(e.get("summary"))
                .or_else(|| present(e.get("event")))
                .or_else(|| present(e.get("type")))?
                .py_str();
            let line = match present(e.get("ts")) {
                Some(ts) => format!("- [{}] {s}", ts.py_str()),
                None => format!("- {s}"),
            };
            Some(line.chars().take(MAX_EVENT_CHARS).collect::<String>())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_summary_keeps_the_public_basics() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(summarize_snapshot(d.path()), "");
        std::fs::write(
            d.path().join("snapshot.json"),
            r#"{"phase":"play","role":"host","round":3,"summary":"","winner":null,
                "secret":"x","realtime":{"transport":{"status":"ok","jitter_ms":4,"other":1}},
                "world":{"tick":7,"winner":"guest"},"last_event":{"summary":"guest moved"}}"#,
        )
        .unwrap();
        assert_eq!(
            summarize_snapshot(d.path()),
            "phase=play; role=host; round=3; transport(status=ok, jitter_ms=4); tick=7; winner=guest; last=guest moved"
        );
        std::fs::write(d.path().join("snapshot.json"), "not json").unwrap();
        assert_eq!(summarize_snapshot(d.path()), "");
    }

    #[test]
    fn the_events_tail_leaves_out_decision_window_noise() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(summarize_events(d.path(), 3), "");
        let lines = [
            r#"{"type":"a","summary":"first","ts":"t1"}"#,
            r#"{"type":"b","event":"second"}"#,
            "garbage",
            r#"{"type":"c","summary":"third","ts":"t3"}"#,
            r#"{"type":"local_decision_updated","summary":"noise"}"#,
            r#"{"type":"d"}"#,
            r#"{"type":"local_decision_ready","summary":"noise"}"#,
        ];
        std::fs::write(d.path().join("events.jsonl"), lines.join("\n")).unwrap();
        assert_eq!(summarize_events(d.path(), 3), "- second\n- [t3] third\n- d");
        // 0 means every event.
        assert_eq!(
            summarize_events(d.path(), 0),
            "- [t1] first\n- second\n- [t3] third\n- d"
        );
    }

    #[test]
    fn one_event_line_is_capped() {
        let d = tempfile::tempdir().unwrap();
        let long = "x".repeat(5000);
        std::fs::write(
            d.path().join("events.jsonl"),
            format!("{{\"summary\":\"{long}\"}}\n"),
        )
        .unwrap();
        let out = summarize_events(d.path(), 1);
        assert_eq!(out.chars().count(), MAX_EVENT_CHARS);
        assert!(out.starts_with("- xxx"));
    }
}
