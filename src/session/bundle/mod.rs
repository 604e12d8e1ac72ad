//! Signed replay bundles, in the reference client's format (aigenora 0.1.4
//! `proto/replay.py`): a zip with `manifest.json` and the evidence files of a
//! scope, signed by one participant, that anyone can check offline.
//!
//! - [`export`] reads a finished session's state dir (palaver's or the
//!   reference's: same layout) and writes a bundle signed with a key pair;
//! - [`verify`] reads a bundle as hostile input ([`archive`]) and runs every
//!   check the reference runs, in its order, and reports the first failure
//!   as a [`Failure`]: which check, the reference's reason, and where (file,
//!   line, field);
//! - [`reconcile`] cross-checks several verified bundles of one group
//!   session (authority frames, peer messages, terminal evidence);
//! - [`extension`] re-derives palaver's extension evidence after the
//!   reference's checks: the commit-reveal openings of simultaneous rounds
//!   and a mental-poker match's transcript root and receipts (files the
//!   reference's verifier accepts as listed evidence and ignores).
//!
//! The manifest's body is hashed (`bundle_id`) and signed as the group
//! protocol's canonical JSON; evidence files are JSONL in the same form.

pub mod archive;
mod evidence;
mod export;
mod extension;
mod peer;
mod reconcile;
mod replay;
mod verify;

pub use export::{Scope, export, own_kind_body, own_kind_report, privacy, seal};
pub use extension::{COMMIT_REVEAL, EXTENSION_FILES, ExtensionCheck, MP_RECEIPT, MP_TRANSCRIPT};
pub use reconcile::reconcile;
pub use replay::{is_bundle, replay};
pub use verify::{Verified, check_terminal, kind_of, open, verify};

use crate::json::{Map, Value};
use serde::Serialize;
use std::fmt;

/// The format version written and accepted.
pub const REPLAY_BUNDLE_VERSION: i64 = 1;
/// `manifest.json`'s `bundle_kind`.
pub const BUNDLE_KIND: &str = "aigenora-session-replay";
/// Most entries a bundle may hold.
pub const MAX_BUNDLE_FILES: usize = 64;
/// Largest entry, decompressed.
pub const MAX_BUNDLE_ENTRY_BYTES: u64 = 32 * 1024 * 1024;
/// Largest sum of the entries, decompressed.
pub const MAX_BUNDLE_TOTAL_BYTES: u64 = 128 * 1024 * 1024;
/// Largest archive file read (palaver's own bound; the reference has none):
/// the content limit plus room for headers and incompressible data.
pub const MAX_BUNDLE_ZIP_BYTES: u64 = MAX_BUNDLE_TOTAL_BYTES + 8 * 1024 * 1024;

/// A check a bundle failed: a stable name, the reference's reason, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct Failure {
    /// Stable name of the check (`hash_mismatch`, `signature`, `path`…).
    pub check: &'static str,
    /// What failed, in the reference's words where it has them.
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line of a JSONL evidence file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl Failure {
    pub fn new(check: &'static str, reason: impl Into<String>) -> Failure {
        Failure {
            check,
            reason: reason.into(),
            file: None,
            line: None,
            field: None,
        }
    }

    pub fn file(mut self, file: impl Into<String>) -> Failure {
        self.file = Some(file.into());
        self
    }

    pub fn line(mut self, line: usize) -> Failure {
        self.line = Some(line);
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Failure {
        self.field = Some(field.into());
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.reason, self.check)?;
        let mut parts = Vec::new();
        if let Some(file) = &self.file {
            parts.push(format!("file {file}"));
        }
        if let Some(line) = self.line {
            parts.push(format!("line {line}"));
        }
        if let Some(field) = &self.field {
            parts.push(format!("field {field}"));
        }
        if !parts.is_empty() {
            write!(f, " at {}", parts.join(", "))?;
        }
        Ok(())
    }
}

/// Why an export, a verification or a reconciliation did not finish.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The bundle failed a check (verification's answer, not an error of
    /// the tool).
    #[error("{0}")]
    Failed(Box<Failure>),
    /// One of several bundles failed a check.
    #[error("{}: {failure}", path.display())]
    BundleFailed {
        path: std::path::PathBuf,
        failure: Box<Failure>,
    },
    /// The bundles cannot be reconciled (fewer than two, or not one group).
    #[error("{0}")]
    Reconcile(String),
    /// The state dir cannot be exported as it stands.
    #[error("{0}")]
    Export(String),
    /// The output exists and --force was not given.
    #[error("{0} exists (use --force to replace it)")]
    Exists(std::path::PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl From<Failure> for BundleError {
    fn from(f: Failure) -> BundleError {
        BundleError::Failed(Box::new(f))
    }
}

/// One parsed JSONL record with its 1-based line.
pub(crate) type Line = (usize, Map);

/// Splits as Python's `bytes.splitlines` (`\n`, `\r\n`, `\r`), skips blank
/// lines, and parses each as a JSON object.
pub(crate) fn decode_jsonl(file: &str, data: &[u8]) -> Result<Vec<Line>, Failure> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut line = 0usize;
    let mut i = 0usize;
    while start < data.len() {
        while i < data.len() && data[i] != b'\n' && data[i] != b'\r' {
            i += 1;
        }
        let raw = &data[start..i];
        if i < data.len() && data[i] == b'\r' && data.get(i + 1) == Some(&b'\n') {
            i += 1;
        }
        i += 1;
        start = i;
        line += 1;
        if raw.iter().all(|b| b.is_ascii_whitespace() || *b == 0x0b) {
            continue;
        }
        match crate::json::parse_bytes(raw) {
            Ok(Value::Object(m)) => out.push((line, m)),
            Ok(_) => {
                return Err(
                    Failure::new("jsonl", "replay JSONL evidence must contain objects")
                        .file(file)
                        .line(line),
                );
            }
            Err(e) => {
                return Err(Failure::new(
                    "jsonl",
                    format!("replay JSONL evidence is invalid: {e}"),
                )
                .file(file)
                .line(line));
            }
        }
    }
    Ok(out)
}

/// One JSON object per line, canonical (sorted keys, raw UTF-8).
pub(crate) fn jsonl_bytes<'a>(records: impl IntoIterator<Item = &'a Map>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        crate::json::canonical::write_value(&Value::Object(r.clone()), &mut out);
        out.push(b'\n');
    }
    out
}

/// 64 lowercase hex digits (a key or a SHA-256).
pub(crate) fn is_hash(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(crate::identity::is_key_hex)
}

/// 32 lowercase hex digits.
pub(crate) fn is_message_id(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| {
        s.len() == 32
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// An integer (not a bool) that fits 64 bits.
pub(crate) fn int(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::Number(crate::json::Number::Int(i))) => Some(*i),
        _ => None,
    }
}

/// Python's `a.get(k) != b.get(k)` with a missing key as `None`.
pub(crate) fn differs(a: Option<&Value>, b: Option<&Value>) -> bool {
    !a.unwrap_or(&Value::Null).py_eq(b.unwrap_or(&Value::Null))
}

/// `json_hash` of the group protocol, or `None` where the reference raises.
pub(crate) fn json_hash(v: &Value) -> Option<String> {
    crate::engine::group::core::json_hash(v).ok()
}

/// A value from a map, `null` when missing.
pub(crate) fn get_or_null(m: &Map, k: &str) -> Value {
    m.get(k).cloned().unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::archive::check_path;
    use super::decode_jsonl;

    #[test]
    fn jsonl_lines_split_as_python_splitlines_and_are_numbered() {
        let data = b"{\"a\":1}\r\n\n  \r{\"b\":2}\r{\"c\":3}";
        let got: Vec<(usize, String)> = decode_jsonl("f", data)
            .unwrap()
            .into_iter()
            .map(|(l, m)| (l, m.keys().next().unwrap().to_owned()))
            .collect();
        assert_eq!(got, [(1, "a".into()), (4, "b".into()), (5, "c".into())]);
        let f = decode_jsonl("f", b"{}\n[1]\n").unwrap_err();
        assert_eq!(
            (f.line, f.reason.as_str()),
            (Some(2), "replay JSONL evidence must contain objects")
        );
        let f = decode_jsonl("f", b"{}\n{}\n{\"x\":").unwrap_err();
        assert_eq!(
            (f.check, f.file.as_deref(), f.line),
            ("jsonl", Some("f"), Some(3))
        );
    }

    #[test]
    fn only_plain_relative_paths_pass() {
        for ok in ["manifest.json", "evidence/a.jsonl", "participant/state/x"] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "../x", "a/../b", "/abs", "a\\b", "a//b", "./a", "a/.", "a\0b",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }
}
