//! The realtime evidence files in a session's state dir, in the
//! reference's shapes: `realtime-frames.jsonl` (one frame a line, with the
//! direction), `realtime-commands.jsonl` (commands generated, sent,
//! received, rejected, acknowledged) and `realtime-audit.json`. Each line
//! is written whole with one append, so a crash leaves lines that parse
//! (at worst the last one cut short, which readers skip). The live loop
//! never reads them back.

use super::now_ns;
use crate::json::{Map, Value};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Journal {
    dir: PathBuf,
    frames: Option<File>,
    commands: Option<File>,
    /// The first write failure, reported once at the end.
    pub error: Option<String>,
}

impl Journal {
    pub const FRAMES: &'static str = "realtime-frames.jsonl";
    pub const COMMANDS: &'static str = "realtime-commands.jsonl";
    pub const AUDIT: &'static str = "realtime-audit.json";

    /// A journal in `dir`; None (or an empty path, never the working
    /// directory) writes nothing.
    pub fn new(dir: Option<&Path>) -> Journal {
        let dir = dir.filter(|d| !d.as_os_str().is_empty());
        let mut j = Journal {
            dir: dir.map(Path::to_path_buf).unwrap_or_default(),
            frames: None,
            commands: None,
            error: None,
        };
        if let Some(d) = dir {
            let open = |name: &str| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(d.join(name))
            };
            match (open(Self::FRAMES), open(Self::COMMANDS)) {
                (Ok(f), Ok(c)) => {
                    j.frames = Some(f);
                    j.commands = Some(c);
                }
                (Err(e), _) | (_, Err(e)) => {
                    j.error = Some(format!(
                        "opening the realtime journals in {}: {e}",
                        d.display()
                    ))
                }
            }
        }
        j
    }

    fn line(kind: &str, payload: Map) -> Vec<u8> {
        let mut record = payload;
        record.insert("kind", Value::from(kind));
        record.insert("recorded_at_ns", Value::from(now_ns()));
        let mut bytes = crate::json::canonical::to_vec(&Value::Object(record));
        bytes.push(b'\n');
        bytes
    }

    fn write(file: &mut Option<File>, error: &mut Option<String>, bytes: &[u8]) {
        if let Some(f) = file
            && let Err(e) = f.write_all(bytes)
        {
            error.get_or_insert_with(|| format!("writing a realtime journal: {e}"));
        }
    }

    /// One frame, `sent` (host) or `received` (guest).
    pub fn frame(&mut self, frame: &Map, direction: &str) {
        if self.frames.is_none() {
            return;
        }
        let mut payload = Map::with_capacity(4);
        payload.insert("direction", Value::from(direction));
        payload.insert("frame", Value::Object(frame.clone()));
        let bytes = Self::line("frame", payload);
        Self::write(&mut self.frames, &mut self.error, &bytes);
    }

    /// One command record (`generated`, `sent`, `received`, `rejected`,
    /// `ack`, `local_generation_failed`, `handshake_rejected`).
    pub fn command(&mut self, kind: &str, payload: Map) {
        if self.commands.is_none() {
            return;
        }
        let bytes = Self::line(kind, payload);
        Self::write(&mut self.commands, &mut self.error, &bytes);
    }

    /// The end-of-match audit, replaced atomically.
    pub fn audit(&mut self, audit: &Map) {
        if self.frames.is_none() {
            return;
        }
        let body = crate::json::canonical::to_vec(&Value::Object(audit.clone()));
        if let Err(e) = crate::fsutil::write_atomic(&self.dir.join(Self::AUDIT), &body) {
            self.error
                .get_or_insert_with(|| format!("writing {}: {e}", Self::AUDIT));
        }
    }
}
