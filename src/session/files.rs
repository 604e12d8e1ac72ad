//! The file primitives of a state dir, in the reference's formats:
//! append-only `.jsonl` (one compact object per line, raw UTF-8), JSON
//! documents replaced atomically (pretty, two-space indent); their ISO-8601
//! timestamps (`2026-11-30T04:56:02.135642+00:00`) are [`crate::utc::iso_now`]'s.
//!
//! Appends go out as one `write` of the whole line on a file opened with
//! `O_APPEND`, under an exclusive advisory lock (`flock`) taken by every
//! appender, so lines from several processes never interleave. One `write`
//! is still not proof against `SIGKILL`: Linux stops a write between pages
//! when the process is killed, so a line that crosses a page boundary can be
//! left cut short at the end of the file. The lock dies with its holder, so
//! the next appender, holding the lock itself, knows such an unfinished last
//! line was left by a dead writer and cuts it off before it writes: the
//! fragment was never a record, and the file parses whole again. Readers
//! take complete lines only, so they never see a fragment as a record in
//! the meantime; [`repair_torn_tail`] does the same cut for a file nobody
//! appends to again (a dead daemon's files).

use crate::json::canonical;
use crate::json::{self, Map, Value};
use std::fs::OpenOptions;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the epoch, as a float (the reference's `time.time()`).
pub fn epoch_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Appends one compact JSON object as a line.
pub fn append_line(path: &Path, v: &Value) -> io::Result<()> {
    let mut line = canonical::to_string_ordered(v);
    line.push('\n');
    append_raw(path, line.as_bytes())
}

/// Appends bytes that already form whole lines, in one write under the
/// append lock (see the module notes).
pub fn append_raw(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = open_append(path)?;
    append_locked(&mut f, bytes)
}

/// Opens (creating it and its directory) a `.jsonl` file for appending with
/// [`append_locked`].
pub fn open_append(path: &Path) -> io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
}

/// Appends whole lines to a file from [`open_append`]: takes the exclusive
/// advisory lock, cuts off a last line a killed writer left unfinished,
/// writes, and lets go of the lock.
pub fn append_locked(f: &mut std::fs::File, bytes: &[u8]) -> io::Result<()> {
    append_tracked(f, bytes, &mut None)
}

/// [`append_locked`] for a writer that keeps its handle: `end` is the
/// length the file had after this writer's last line. When the file still
/// has that length nobody wrote since, so it ends in our newline and the
/// torn-tail check needs no read.
pub fn append_tracked(
    f: &mut std::fs::File,
    bytes: &[u8],
    end: &mut Option<u64>,
) -> io::Result<()> {
    f.lock()?;
    let r = (|| {
        let mut len = f.metadata()?.len();
        if *end != Some(len) {
            len -= crate::fsutil::cut_torn_tail(f)?;
        }
        f.write_all(bytes)?;
        *end = Some(len + bytes.len() as u64);
        Ok(())
    })();
    if r.is_err() {
        *end = None;
    }
    let _ = f.unlock();
    r
}

/// Cuts off an unfinished last line of a `.jsonl` file (one with no final
/// newline) under the append lock; returns how many bytes were cut. For the
/// files of a writer known to be dead; appenders do this themselves.
pub fn repair_torn_tail(path: &Path) -> io::Result<u64> {
    let f = OpenOptions::new().read(true).write(true).open(path)?;
    f.lock()?;
    let r = crate::fsutil::cut_torn_tail(&f);
    let _ = f.unlock();
    r
}

/// [`repair_torn_tail`] for every `.jsonl` file under `dir` (a dead
/// daemon's state dir); returns the bytes cut in all.
pub fn repair_tree(dir: &Path) -> io::Result<u64> {
    let mut cut = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let p = entry.path();
        if entry.file_type()?.is_dir() {
            cut += repair_tree(&p)?;
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            cut += repair_torn_tail(&p)?;
        }
    }
    Ok(cut)
}

/// Every complete, parseable object line of a `.jsonl` file (missing file:
/// none). A torn last line or a damaged line is skipped.
pub fn read_jsonl(path: &Path) -> Vec<Map> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    parse_lines(&bytes).0
}

/// Parses complete lines; returns the objects and the length of the
/// complete-line prefix consumed.
pub fn parse_lines(bytes: &[u8]) -> (Vec<Map>, usize) {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            let line = &bytes[start..i];
            if let Ok(Value::Object(m)) = json::parse_bytes(trim(line)) {
                out.push(m);
            }
            start = i + 1;
        }
    }
    (out, start)
}

fn trim(b: &[u8]) -> &[u8] {
    let mut s = b;
    while let [rest @ .., b'\r' | b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Follows a `.jsonl` file from a byte offset: new complete lines since
/// the last call.
#[derive(Debug, Default)]
pub struct Tail {
    offset: u64,
}

impl Tail {
    pub fn new() -> Tail {
        Tail { offset: 0 }
    }

    /// Objects appended since the last call (complete lines only).
    pub fn poll(&mut self, path: &Path) -> Vec<Map> {
        let Ok(mut f) = std::fs::File::open(path) else {
            return Vec::new();
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            // The file was replaced or truncated: start again.
            self.offset = 0;
        }
        if len == self.offset || f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::with_capacity((len - self.offset) as usize);
        if f.read_to_end(&mut buf).is_err() {
            return Vec::new();
        }
        let (items, used) = parse_lines(&buf);
        self.offset += used as u64;
        items
    }
}

/// Free-mode chat lines from an engine dir's `inbox.jsonl`
/// (`{"text": …}` records appended by the console, a web UI, or a script).
pub struct InboxChat {
    path: std::path::PathBuf,
    tail: Tail,
    pending: std::collections::VecDeque<String>,
}

impl InboxChat {
    pub fn new(child: &Path) -> InboxChat {
        InboxChat {
            path: child.join("inbox.jsonl"),
            tail: Tail::new(),
            pending: Default::default(),
        }
    }
}

#[async_trait::async_trait]
impl crate::engine::ChatSource for InboxChat {
    async fn next_line(&mut self) -> Option<String> {
        loop {
            if let Some(l) = self.pending.pop_front() {
                return Some(l);
            }
            for rec in self.tail.poll(&self.path) {
                if let Some(t) = rec.get("text").and_then(Value::as_str) {
                    self.pending.push_back(t.to_owned());
                }
            }
            if self.pending.is_empty() {
                // Lines are buffered before this await, so a cancelled call loses nothing.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// Reads a JSON object document; missing or damaged: None.
pub fn read_json_object(path: &Path) -> Option<Map> {
    let bytes = std::fs::read(path).ok()?;
    json::parse_bytes(&bytes).ok()?.as_object().cloned()
}

/// Writes a JSON document atomically, pretty-printed like the reference
/// (`indent=2`, raw UTF-8, keys in insertion order).
pub fn write_json_atomic(path: &Path, v: &Value, durable: bool) -> io::Result<()> {
    let mut text = pretty(v);
    text.push('\n');
    if durable {
        crate::fsutil::write_atomic(path, text.as_bytes())
    } else {
        crate::fsutil::write_atomic_fast(path, text.as_bytes())
    }
}

/// `json.dumps(v, ensure_ascii=False, indent=2)`: insertion order, `": "`.
pub fn pretty(v: &Value) -> String {
    fn go(v: &Value, depth: usize, out: &mut String) {
        let pad = |n: usize, out: &mut String| {
            out.push('\n');
            for _ in 0..n {
                out.push_str("  ");
            }
        };
        match v {
            Value::Array(a) if !a.is_empty() => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(depth + 1, out);
                    go(x, depth + 1, out);
                }
                pad(depth, out);
                out.push(']');
            }
            Value::Object(m) if !m.is_empty() => {
                out.push('{');
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(depth + 1, out);
                    out.push_str(&canonical::to_string(&Value::from(k)));
                    out.push_str(": ");
                    go(x, depth + 1, out);
                }
                pad(depth, out);
                out.push('}');
            }
            other => out.push_str(&canonical::to_string_ordered(other)),
        }
    }
    let mut out = String::new();
    go(v, 0, &mut out);
    out
}

/// The reference's `_deep_merge`: objects merge recursively, anything else
/// replaces. One difference: an empty object replaces (clears) the target,
/// which is what the reference means by `update(timing={})` but does not do.
pub fn deep_merge(base: &mut Map, patch: Map) {
    for (k, v) in patch.into_entries() {
        match (base.get_mut(&k), v) {
            (Some(Value::Object(b)), Value::Object(p)) if !p.is_empty() => deep_merge(b, p),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a writer killed in the middle of its line leaves behind.
    fn cut_short(path: &Path, bytes: &[u8]) {
        OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes))
            .unwrap();
    }

    #[test]
    fn a_tracked_appender_still_cuts_a_line_another_writer_tore() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut f = open_append(&path).unwrap();
        let mut end = None;
        append_tracked(&mut f, b"{\"a\":1}\n", &mut end).unwrap();
        append_tracked(&mut f, b"{\"a\":2}\n", &mut end).unwrap();
        assert_eq!(end, Some(16));
        // Another appender dies half-way through its line.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"torn")
            .unwrap();
        append_tracked(&mut f, b"{\"a\":3}\n", &mut end).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"
        );
        assert_eq!(end, Some(24));
        // And a whole line from another appender is kept.
        append_line(&path, &Value::from(4)).unwrap();
        append_tracked(&mut f, b"{\"a\":5}\n", &mut end).unwrap();
        assert_eq!(read_jsonl(&path).len(), 4);
    }

    #[test]
    fn an_append_after_a_line_cut_short_cuts_the_fragment_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d").join("events.jsonl");
        append_line(&path, &json::parse_str(r#"{"a":1}"#).unwrap()).unwrap();
        cut_short(&path, br#"{"b":"#);
        append_line(&path, &json::parse_str(r#"{"c":3}"#).unwrap()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"c\":3}\n"
        );
        // Through a kept-open handle too, and with a fragment longer than
        // the block the search reads backwards in.
        let mut f = open_append(&path).unwrap();
        cut_short(&path, &vec![b'x'; 200_000]);
        append_locked(&mut f, b"{\"d\":4}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"c\":3}\n{\"d\":4}\n"
        );
    }

    #[test]
    fn repair_cuts_a_torn_tail_and_leaves_whole_files_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        std::fs::write(&path, "{\"a\":1}\n").unwrap();
        assert_eq!(repair_torn_tail(&path).unwrap(), 0);
        cut_short(&path, b"{\"b\":[1,");
        assert_eq!(repair_torn_tail(&path).unwrap(), 8);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        // A file that is one fragment becomes empty.
        std::fs::write(&path, "{\"a\"").unwrap();
        assert_eq!(repair_torn_tail(&path).unwrap(), 4);
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        assert_eq!(repair_torn_tail(&path).unwrap(), 0);
    }

    #[test]
    fn torn_and_damaged_lines_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("e.jsonl");
        append_line(&p, &json::parse_str(r#"{"a":1}"#).unwrap()).unwrap();
        append_raw(&p, b"{not json}\n{\"b\":2}\n{\"c\":").unwrap();
        let got = read_jsonl(&p);
        assert_eq!(got.len(), 2);
        let mut tail = Tail::new();
        assert_eq!(tail.poll(&p).len(), 2);
        // The rest of a line another process is still writing.
        OpenOptions::new()
            .append(true)
            .open(&p)
            .and_then(|mut f| f.write_all(b"3}\n"))
            .unwrap();
        let more = tail.poll(&p);
        assert_eq!(more.len(), 1);
        assert_eq!(more[0].get("c").and_then(Value::as_i64), Some(3));
    }

    #[test]
    fn pretty_matches_python_indent_2() {
        let v = json::parse_str(r#"{"b":{"x":[1,{"y":"é"}],"e":{}},"a":[]}"#).unwrap();
        assert_eq!(
            pretty(&v),
            "{\n  \"b\": {\n    \"x\": [\n      1,\n      {\n        \"y\": \"é\"\n      }\n    ],\n    \"e\": {}\n  },\n  \"a\": []\n}"
        );
    }

    #[test]
    fn deep_merge_like_the_reference() {
        let mut base = json::parse_str(r#"{"a":{"x":1,"y":2},"b":1}"#)
            .unwrap()
            .as_object()
            .unwrap()
            .clone();
        let patch = json::parse_str(r#"{"a":{"y":3},"b":{"z":1}}"#)
            .unwrap()
            .as_object()
            .unwrap()
            .clone();
        deep_merge(&mut base, patch);
        assert_eq!(
            canonical::to_string_ordered(&Value::Object(base)),
            r#"{"a":{"x":1,"y":3},"b":{"z":1}}"#
        );
    }
}
