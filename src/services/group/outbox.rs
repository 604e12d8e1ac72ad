//! A member's own actions, in the files the reference uses:
//! `group-actions.jsonl` (what the user asked, appended by `palaver session
//! action`), `group-action-outbox.json` (which byte range is in flight, with
//! its `client_seq` and `action_id`), and `group-client-seq`. One action is
//! in flight at a time; after a reconnect or a crash it is retried with the
//! same `client_seq` and id, so the leader answers `duplicate` instead of
//! applying it twice.

use crate::json::{Map, Value};
use crate::obj;
use std::io;
use std::path::{Path, PathBuf};

pub const ACTIONS_FILE: &str = "group-actions.jsonl";
pub const OUTBOX_FILE: &str = "group-action-outbox.json";
pub const SEQ_FILE: &str = "group-client-seq";

/// The biggest action `session action` accepts (canonical bytes).
pub const MAX_ACTION_BYTES: usize = 65_536;

/// The action in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub client_seq: u64,
    pub action_id: String,
    /// Where its line ends in group-actions.jsonl.
    pub end_offset: u64,
    pub action: Map,
}

impl Pending {
    fn to_value(&self) -> Value {
        Value::Object(obj! {
            "action" => Value::Object(self.action.clone()), "action_id" => self.action_id.as_str(),
            "client_seq" => self.client_seq, "end_offset" => self.end_offset,
        })
    }

    fn from_value(v: &Value) -> Option<Pending> {
        let n = |k: &str| {
            v.get(k)
                .filter(|x| x.is_integer())
                .and_then(Value::as_i64)
                .and_then(|x| u64::try_from(x).ok())
        };
        let client_seq = n("client_seq").filter(|s| *s > 0)?;
        let action_id = v
            .get_str("action_id")
            .filter(|s| is_action_id(s))?
            .to_owned();
        Some(Pending {
            client_seq,
            action_id,
            end_offset: n("end_offset")?,
            action: v.get("action").and_then(Value::as_object)?.clone(),
        })
    }
}

/// 32 lowercase hex characters.
pub fn is_action_id(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A fresh action id.
pub fn new_action_id() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

pub struct Outbox {
    dir: PathBuf,
    accepted: u64,
    committed_offset: u64,
    pending: Option<Pending>,
}

impl Outbox {
    /// Opens the outbox of `dir`, aligned with the newest `client_seq` the
    /// leader's checkpoint says it accepted from this member.
    pub fn open(dir: &Path, accepted: u64) -> io::Result<Outbox> {
        let mut o = Outbox {
            dir: dir.to_owned(),
            accepted,
            committed_offset: 0,
            pending: None,
        };
        if !o.load() {
            o.committed_offset = o.legacy_offset(accepted);
        }
        o.reconcile(accepted)?;
        Ok(o)
    }

    pub fn pending(&self) -> Option<&Pending> {
        self.pending.as_ref()
    }

    fn load(&mut self) -> bool {
        let Some(m) = crate::session::files::read_json_object(&self.dir.join(OUTBOX_FILE)) else {
            return false;
        };
        let version = m.get("version").and_then(Value::as_i64);
        if !matches!(version, Some(1 | 2)) || m.get("version").is_some_and(|v| !v.is_integer()) {
            return false;
        }
        let Some(offset) = m
            .get("committed_offset")
            .filter(|v| v.is_integer())
            .and_then(Value::as_i64)
            .and_then(|x| u64::try_from(x).ok())
        else {
            return false;
        };
        let pending = match m.get("pending") {
            None | Some(Value::Null) => None,
            Some(p) if version == Some(1) => {
                // Version 1 kept no action id: give the action a new one.
                let mut p = p.clone();
                if let Some(o) = p.as_object_mut() {
                    o.insert("action_id", Value::from(new_action_id()));
                }
                match Pending::from_value(&p) {
                    Some(p) => Some(p),
                    None => return false,
                }
            }
            Some(p) => match Pending::from_value(p) {
                Some(p) => Some(p),
                None => return false,
            },
        };
        self.committed_offset = offset;
        self.pending = pending;
        if version == Some(1) {
            // Upgrading the file's format in place is a courtesy: a version
            // 1 file that stays reads the same way next time.
            let _ = self.persist();
        }
        true
    }

    /// Without an outbox file: skip as many actions as the leader accepted.
    fn legacy_offset(&self, accepted: u64) -> u64 {
        if accepted == 0 {
            return 0;
        }
        let (records, scanned) = read_records(&self.dir.join(ACTIONS_FILE), 0);
        let mut used = 0;
        for (entry, end) in records {
            if entry.get("action").and_then(Value::as_object).is_some() {
                used += 1;
                if used >= accepted {
                    return end;
                }
            }
        }
        scanned
    }

    /// Aligns the action in flight with what a checkpoint says was accepted.
    pub fn reconcile(&mut self, accepted: u64) -> io::Result<()> {
        let mut changed = false;
        if let Some(p) = &mut self.pending {
            if p.client_seq <= accepted {
                self.committed_offset = self.committed_offset.max(p.end_offset);
                self.pending = None;
                changed = true;
            } else if p.client_seq != accepted + 1 {
                p.client_seq = accepted + 1;
                changed = true;
            }
        }
        self.accepted = accepted;
        if changed || !self.dir.join(OUTBOX_FILE).exists() {
            self.persist()?;
        }
        self.write_seq()
    }

    /// The one action in flight, taking the next line of group-actions.jsonl
    /// (durably, before it is sent) when none is.
    pub fn prepare(&mut self) -> io::Result<Option<Pending>> {
        if let Some(p) = &self.pending {
            return Ok(Some(p.clone()));
        }
        // Polled every few milliseconds: nothing new appended (the usual
        // case) costs one stat, not an open and a read.
        let path = self.dir.join(ACTIONS_FILE);
        match std::fs::metadata(&path) {
            Ok(m) if m.len() > self.committed_offset => {}
            _ => return Ok(None),
        }
        let (records, scanned) = read_records(&path, self.committed_offset);
        for (entry, end) in records {
            let Some(action) = entry.get("action").and_then(Value::as_object) else {
                continue;
            };
            let p = Pending {
                client_seq: self.accepted + 1,
                action_id: new_action_id(),
                end_offset: end,
                action: action.clone(),
            };
            self.pending = Some(p.clone());
            self.persist()?;
            self.write_seq()?;
            return Ok(Some(p));
        }
        if scanned > self.committed_offset {
            self.committed_offset = scanned;
            self.persist()?;
        }
        Ok(None)
    }

    /// Commits the action in flight on its terminal receipt; false for a
    /// receipt about something else or a retryable refusal (then the same
    /// action goes again with the same `client_seq`).
    /// The action in flight, if one is.
    pub fn pending_action(&self) -> Option<&Map> {
        self.pending.as_ref().map(|p| &p.action)
    }

    pub fn receipt(&mut self, r: &Map) -> io::Result<bool> {
        let Some(p) = &self.pending else {
            return Ok(false);
        };
        let seq = r
            .get("client_seq")
            .filter(|v| v.is_integer())
            .and_then(Value::as_i64);
        if seq != i64::try_from(p.client_seq).ok()
            || r.get_str("action_id") != Some(p.action_id.as_str())
        {
            return Ok(false);
        }
        let status = r.get_str("status");
        if !matches!(status, Some("accepted" | "duplicate" | "rejected")) {
            return Ok(false);
        }
        if status == Some("rejected") && r.get("retryable") == Some(&Value::Bool(true)) {
            return Ok(false);
        }
        if status != Some("rejected") {
            self.accepted = self.accepted.max(p.client_seq);
        }
        self.committed_offset = self.committed_offset.max(p.end_offset);
        self.pending = None;
        self.persist()?;
        self.write_seq()?;
        Ok(true)
    }

    fn persist(&self) -> io::Result<()> {
        let v = Value::Object(obj! {
            "version" => 2, "committed_offset" => self.committed_offset,
            "pending" => self.pending.as_ref().map_or(Value::Null, Pending::to_value),
        });
        crate::fsutil::write_atomic(
            &self.dir.join(OUTBOX_FILE),
            &crate::json::canonical::to_vec(&v),
        )
    }

    fn write_seq(&self) -> io::Result<()> {
        let seq = self
            .pending
            .as_ref()
            .map_or(self.accepted, |p| p.client_seq.max(self.accepted));
        crate::fsutil::write_atomic(&self.dir.join(SEQ_FILE), seq.to_string().as_bytes())
    }
}

/// The complete JSON-object lines after `offset`, each with the offset its
/// line ends at, and where scanning stopped (a torn last line is left for
/// later; lines that are not objects are skipped).
fn read_records(path: &Path, offset: u64) -> (Vec<(Map, u64)>, u64) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return (Vec::new(), offset);
    };
    let mut chunk = Vec::new();
    if f.seek(SeekFrom::Start(offset)).is_err() || f.read_to_end(&mut chunk).is_err() {
        return (Vec::new(), offset);
    }
    let Some(last) = chunk.iter().rposition(|b| *b == b'\n') else {
        return (Vec::new(), offset);
    };
    let complete = &chunk[..=last];
    let mut out = Vec::new();
    let mut at = offset;
    for line in complete.split_inclusive(|b| *b == b'\n') {
        at += line.len() as u64;
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.trim().is_empty() {
            continue;
        }
        if let Ok(Value::Object(m)) = crate::json::parse_str(text) {
            out.push((m, at));
        }
    }
    (out, offset + complete.len() as u64)
}

/// Appends one action for the session in `dir` to pick up, as the
/// reference's `session action` does: `{"action": {...}, "ts": "...Z"}`.
/// The action must be a JSON object of at most 64 KiB canonical bytes.
pub fn append_action(dir: &Path, action: &Value) -> Result<Map, String> {
    let Value::Object(a) = action else {
        return Err(format!(
            "the action must be a JSON object, not {}",
            action.type_name()
        ));
    };
    if a.values().any(has_float_nan) {
        return Err("the action holds a number JSON cannot carry".into());
    }
    let size = crate::json::canonical::to_vec(action).len();
    if size > MAX_ACTION_BYTES {
        return Err(format!(
            "the action is {size} bytes; at most {MAX_ACTION_BYTES} are allowed"
        ));
    }
    let ts = crate::utc::iso_now();
    let ts = ts
        .split('.')
        .next()
        .unwrap_or(&ts)
        .trim_end_matches("+00:00")
        .to_owned()
        + "Z";
    let entry = obj! { "action" => Value::Object(a.clone()), "ts" => ts };
    crate::session::files::append_line(&dir.join(ACTIONS_FILE), &Value::Object(entry.clone()))
        .map_err(|e| format!("appending to {}: {e}", dir.join(ACTIONS_FILE).display()))?;
    Ok(entry)
}

fn has_float_nan(v: &Value) -> bool {
    match v {
        Value::Number(_) => v.as_f64().is_some_and(|f| !f.is_finite()),
        Value::Array(a) => a.iter().any(has_float_nan),
        Value::Object(m) => m.values().any(has_float_nan),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(p: &Pending, status: &str, retryable: bool) -> Map {
        let mut r = obj! { "status" => status, "client_seq" => p.client_seq, "action_id" => p.action_id.as_str() };
        if retryable {
            r.insert("retryable", Value::Bool(true));
        }
        r
    }

    #[test]
    fn one_action_in_flight_keeps_its_seq_across_restarts() {
        let d = tempfile::tempdir().unwrap();
        for t in ["a", "b", "c"] {
            append_action(
                d.path(),
                &crate::json::parse_str(&format!(r#"{{"kind":"send","text":"{t}"}}"#)).unwrap(),
            )
            .unwrap();
        }
        // A torn line at the end is not taken yet.
        crate::session::files::append_raw(&d.path().join(ACTIONS_FILE), b"{\"action\":").unwrap();
        let mut o = Outbox::open(d.path(), 0).unwrap();
        let p1 = o.prepare().unwrap().unwrap();
        assert_eq!(p1.client_seq, 1);
        assert_eq!(p1.action.get_str("text"), Some("a"));
        // A crash now: the reopened outbox retries the same action and id.
        let mut o = Outbox::open(d.path(), 0).unwrap();
        assert_eq!(o.prepare().unwrap().unwrap(), p1);
        // A retryable refusal keeps it; an unrelated receipt is ignored.
        assert!(!o.receipt(&receipt(&p1, "rejected", true)).unwrap());
        let mut other = p1.clone();
        other.action_id = new_action_id();
        assert!(!o.receipt(&receipt(&other, "accepted", false)).unwrap());
        assert!(o.receipt(&receipt(&p1, "accepted", false)).unwrap());
        let p2 = o.prepare().unwrap().unwrap();
        assert_eq!((p2.client_seq, p2.action.get_str("text")), (2, Some("b")));
        // A terminal refusal moves on without spending a client_seq.
        assert!(o.receipt(&receipt(&p2, "rejected", false)).unwrap());
        let p3 = o.prepare().unwrap().unwrap();
        assert_eq!((p3.client_seq, p3.action.get_str("text")), (2, Some("c")));
        // A checkpoint that already holds it commits it.
        o.reconcile(2).unwrap();
        assert!(o.pending().is_none());
        assert!(o.prepare().unwrap().is_none());
        assert_eq!(
            std::fs::read_to_string(d.path().join(SEQ_FILE)).unwrap(),
            "2"
        );
        let saved = crate::session::files::read_json_object(&d.path().join(OUTBOX_FILE)).unwrap();
        assert_eq!(saved.get("version").and_then(Value::as_i64), Some(2));
    }

    #[test]
    fn without_an_outbox_file_accepted_actions_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        for t in ["a", "b"] {
            append_action(
                d.path(),
                &crate::json::parse_str(&format!(r#"{{"text":"{t}"}}"#)).unwrap(),
            )
            .unwrap();
        }
        let mut o = Outbox::open(d.path(), 1).unwrap();
        let p = o.prepare().unwrap().unwrap();
        assert_eq!((p.client_seq, p.action.get_str("text")), (2, Some("b")));
    }

    #[test]
    fn actions_are_objects_of_bounded_size() {
        let d = tempfile::tempdir().unwrap();
        assert!(
            append_action(d.path(), &Value::from(3))
                .unwrap_err()
                .contains("JSON object")
        );
        let big = Value::Object(obj! { "text" => "x".repeat(MAX_ACTION_BYTES) });
        assert!(
            append_action(d.path(), &big)
                .unwrap_err()
                .contains("at most")
        );
        let line = std::fs::read_to_string(d.path().join(ACTIONS_FILE)).unwrap_or_default();
        assert!(line.is_empty());
        let e = append_action(d.path(), &Value::Object(obj! {"kind" => "send"})).unwrap();
        let ts = e.get_str("ts").unwrap();
        assert!(ts.ends_with('Z') && ts.len() == 20, "{ts}");
    }
}
