//! Append-only evidence logs a flow keeps in its state dir, for signed
//! replay bundles to re-derive what the session's frames only assert
//! (palaver's extension; the reference writes neither file):
//!
//! - [`COMMIT_REVEAL_FILE`]: one line per `simultaneous_round` round whose
//!   two reveals opened their commits — each side's commit hash, revealed
//!   value and nonce, and the round's result frame;
//! - [`MP_TRANSCRIPT_FILE`]: one line per mental-poker transcript entry, in
//!   the order the flow appends them — its sequence number, type and
//!   payload, from which the transcript root is recomputed.
//!
//! Each line is one canonical JSON object written whole with one append to
//! a file opened for appending; a line a killed writer left unfinished is
//! cut off when the log is opened again, and readers take whole lines only,
//! so a crash leaves a file that parses. A log that cannot be written keeps
//! its first error for the flow to report; the session goes on.

use crate::json::{Map, Value};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The commit-reveal openings of a `simultaneous_round` session.
pub const COMMIT_REVEAL_FILE: &str = "commit-reveal.jsonl";
/// The entries of a mental-poker match's transcript.
pub const MP_TRANSCRIPT_FILE: &str = "mental-poker-transcript.jsonl";
/// The state file that keeps a passed audit's terminal receipts, as the
/// reference writes it (not a log: written once, atomically, by the flow).
pub const MP_RECEIPT_FILE: &str = "transcript_receipt.json";

/// One append-only log (or nothing, for a session without a state dir).
#[derive(Debug)]
pub struct EvidenceLog {
    path: PathBuf,
    file: Option<File>,
    /// The first failure (opening or writing), reported once by the flow.
    error: Option<String>,
    /// The error was handed out already.
    reported: bool,
}

impl EvidenceLog {
    /// The log `name` in `dir`; `None` (or an empty path, never the working
    /// directory) writes nothing.
    pub fn open(dir: Option<&Path>, name: &str) -> EvidenceLog {
        let dir = dir.filter(|d| !d.as_os_str().is_empty());
        let mut log = EvidenceLog {
            path: dir.map(|d| d.join(name)).unwrap_or_default(),
            file: None,
            error: None,
            reported: false,
        };
        if dir.is_none() {
            return log;
        }
        let opened = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&log.path)
            .and_then(|f| crate::fsutil::cut_torn_tail(&f).map(|_| f));
        match opened {
            Ok(f) => log.file = Some(f),
            Err(e) => log.error = Some(format!("opening {}: {e}", log.path.display())),
        }
        log
    }

    /// A log that writes nothing.
    pub fn none() -> EvidenceLog {
        EvidenceLog::open(None, "")
    }

    /// Appends `record` as one canonical JSON line.
    pub fn append(&mut self, record: &Map) {
        let Some(f) = self.file.as_mut() else {
            return;
        };
        let mut line = crate::json::canonical::to_vec(&Value::Object(record.clone()));
        line.push(b'\n');
        if let Err(e) = f.write_all(&line) {
            self.error
                .get_or_insert_with(|| format!("writing {}: {e}", self.path.display()));
            // A log that failed once stops: a later line after a lost one
            // would only make a gap look like a whole record.
            self.file = None;
        }
    }

    /// The first failure, once (later calls return `None`).
    pub fn take_error(&mut self) -> Option<String> {
        if self.reported {
            return None;
        }
        let e = self.error.clone();
        self.reported = e.is_some();
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_appended_whole_and_a_torn_tail_is_cut_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EvidenceLog::open(Some(dir.path()), COMMIT_REVEAL_FILE);
        let mut m = Map::new();
        m.insert("round", Value::from(0));
        log.append(&m);
        drop(log);
        let path = dir.path().join(COMMIT_REVEAL_FILE);
        let mut raw = std::fs::read(&path).unwrap();
        assert_eq!(raw, b"{\"round\":0}\n");
        raw.extend_from_slice(b"{\"round\":");
        std::fs::write(&path, &raw).unwrap();
        let mut log = EvidenceLog::open(Some(dir.path()), COMMIT_REVEAL_FILE);
        m.insert("round", Value::from(1));
        log.append(&m);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"{\"round\":0}\n{\"round\":1}\n"
        );
        assert_eq!(log.take_error(), None);
    }

    #[test]
    fn no_dir_writes_nothing_and_a_failure_is_reported_once() {
        let mut log = EvidenceLog::none();
        log.append(&Map::new());
        assert_eq!(log.take_error(), None);
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        let mut log = EvidenceLog::open(Some(&missing), MP_TRANSCRIPT_FILE);
        log.append(&Map::new());
        assert!(log.take_error().unwrap().contains("opening"));
        assert_eq!(log.take_error(), None);
        assert!(!missing.exists());
    }
}
