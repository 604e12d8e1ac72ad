//! palaver's extension evidence: files a palaver bundle may carry that the
//! reference neither writes nor reads (its verifier accepts them as listed
//! evidence), re-derived when present.
//!
//! - `commit_reveal` ([`COMMIT_REVEAL`], both scopes): every round of a
//!   `simultaneous_round` session — each side's commit re-derived from the
//!   value and nonce it revealed with the flow's own
//!   [`commit_hash`](crate::engine::commit::commit_hash), rounds
//!   consecutive from 0, and, where the bundle holds the session's events
//!   (participant scope), every commit, reveal and round result frame of a
//!   recorded round agreeing with the record;
//! - `transcript_root` ([`MP_TRANSCRIPT`], participant scope): a mental-poker
//!   match's transcript entries, consecutive, hashed again into the root
//!   with the flow's own [`Transcript`], which must be the
//!   `transcript_hash` of [`MP_RECEIPT`]; where the session's events hold
//!   the two `mp_terminal_receipt` frames, each must name that root, carry a
//!   signature of it by its `public_key`, and be the signature the receipt
//!   file keeps (`transcript_receipt`).
//!
//! A bundle without these files (the reference's, palaver's before them)
//! verifies as before; the report says the checks were not applicable.

use super::{Failure, Line, decode_jsonl, int};
use crate::engine::commit::commit_hash;
use crate::engine::mental_poker::receipt;
use crate::engine::mental_poker::transcript::Transcript;
use crate::json::{Map, Value};
use std::collections::HashMap;

/// The commit-reveal record of a `simultaneous_round` session.
pub const COMMIT_REVEAL: &str = "evidence/commit-reveal.jsonl";
/// A mental-poker match's transcript entries (participant scope).
pub const MP_TRANSCRIPT: &str = "participant/state/mental-poker-transcript.jsonl";
/// The terminal receipts of a passed mental-poker audit (participant scope).
pub const MP_RECEIPT: &str = "participant/state/transcript_receipt.json";
/// The session's events in a participant bundle: the launcher's dir holds
/// the frames (`protocol_message`) of a two-level session, the engine's dir
/// those of a one-level one.
const EVENT_FILES: [&str; 2] = [
    "participant/runtime/events.jsonl",
    "participant/state/events.jsonl",
];

/// The files palaver's bundles may add to the reference's.
pub const EXTENSION_FILES: [&str; 3] = [COMMIT_REVEAL, MP_TRANSCRIPT, MP_RECEIPT];

/// One extension check of a verified bundle: passed, or not applicable
/// (the bundle carries nothing it could re-derive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionCheck {
    /// `commit_reveal` or `transcript_root`.
    pub check: &'static str,
    /// It ran (and passed); `false`: not applicable.
    pub ran: bool,
    /// Rounds (commit_reveal) or transcript entries (transcript_root)
    /// re-derived.
    pub count: usize,
    /// What was checked, or why nothing was.
    pub detail: String,
}

impl ExtensionCheck {
    fn not_applicable(check: &'static str, why: impl Into<String>) -> ExtensionCheck {
        ExtensionCheck {
            check,
            ran: false,
            count: 0,
            detail: why.into(),
        }
    }

    pub fn status(&self) -> &'static str {
        if self.ran { "passed" } else { "not_applicable" }
    }

    /// `{"check", "status", "count", "detail"}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("check", Value::from(self.check));
        m.insert("status", Value::from(self.status()));
        m.insert("count", Value::from(self.count));
        m.insert("detail", Value::from(self.detail.as_str()));
        Value::Object(m)
    }
}

/// Runs every extension check over a bundle's files.
pub(super) fn check(content: &HashMap<String, Vec<u8>>) -> Result<Vec<ExtensionCheck>, Failure> {
    let mut files = Vec::new();
    for file in EVENT_FILES {
        if let Some(data) = content.get(file) {
            files.push((file, decode_jsonl(file, data)?));
        }
    }
    let events: Option<Vec<Frame<'_>>> = (!files.is_empty()).then(|| {
        files
            .iter()
            .flat_map(|(file, lines)| frames(file, lines))
            .collect()
    });
    Ok(vec![
        commit_reveal(content, events.as_deref())?,
        transcript_root(content, events.as_deref())?,
    ])
}

/// A protocol frame of the session's events: where, its direction and body.
struct Frame<'a> {
    file: &'static str,
    line: usize,
    sent: bool,
    msg: &'a Map,
}

fn frames<'a>(file: &'static str, events: &'a [Line]) -> Vec<Frame<'a>> {
    events
        .iter()
        .filter(|(_, e)| e.get_str("type") == Some("protocol_message"))
        .filter_map(|(line, e)| {
            let data = e.get("data").and_then(Value::as_object)?;
            let sent = match data.get_str("direction") {
                Some("sent") => true,
                Some("received") => false,
                _ => return None,
            };
            let msg = data.get("msg").and_then(Value::as_object)?;
            Some(Frame {
                file,
                line: *line,
                sent,
                msg,
            })
        })
        .collect()
}

fn peer(role: &str) -> &'static str {
    if role == "host" { "guest" } else { "host" }
}

/// One side's opening in a record: (hash, value, nonce).
fn opening<'a>(record: &'a Map, side: &str) -> Option<(&'a str, &'a Value, &'a str)> {
    let o = record.get(side).and_then(Value::as_object)?;
    Some((o.get_str("hash")?, o.get("value")?, o.get_str("nonce")?))
}

fn commit_reveal(
    content: &HashMap<String, Vec<u8>>,
    events: Option<&[Frame<'_>]>,
) -> Result<ExtensionCheck, Failure> {
    const CHECK: &str = "commit_reveal";
    let Some(data) = content.get(COMMIT_REVEAL) else {
        return Ok(ExtensionCheck::not_applicable(
            CHECK,
            "the bundle carries no commit-reveal record",
        ));
    };
    let records = decode_jsonl(COMMIT_REVEAL, data)?;
    let at = |line: usize, field: String, reason: String| {
        Failure::new(CHECK, reason)
            .file(COMMIT_REVEAL)
            .line(line)
            .field(field)
    };
    let mut role: Option<&str> = None;
    for (i, (line, record)) in records.iter().enumerate() {
        if int(record.get("round")) != i64::try_from(i).ok() {
            return Err(at(
                *line,
                "round".into(),
                format!(
                    "commit-reveal rounds are not consecutive: round {} where round {i} is due",
                    record.get("round").map(Value::py_str).unwrap_or_default()
                ),
            ));
        }
        let this_role = record
            .get_str("role")
            .filter(|r| matches!(*r, "host" | "guest"));
        if this_role.is_none() || role.is_some_and(|r| Some(r) != this_role) {
            return Err(at(
                *line,
                "role".into(),
                format!("round {i}: the record's role is missing or changes"),
            ));
        }
        role = this_role;
        if record.get_str("value_field").is_none_or(str::is_empty) {
            return Err(at(
                *line,
                "value_field".into(),
                format!("round {i}: the record names no value field"),
            ));
        }
        for side in ["host", "guest"] {
            let Some((hash, value, nonce)) = opening(record, side) else {
                return Err(at(
                    *line,
                    side.into(),
                    format!("round {i}: the {side}'s opening (hash, value, nonce) is incomplete"),
                ));
            };
            if commit_hash(value, nonce) != hash {
                return Err(at(
                    *line,
                    format!("{side}.hash"),
                    format!(
                        "round {i}: the {side}'s revealed value and nonce do not open its commit"
                    ),
                ));
            }
        }
    }
    let rounds = records.len();
    let Some(frames) = events else {
        return Ok(ExtensionCheck {
            check: CHECK,
            ran: true,
            count: rounds,
            detail: format!(
                "{rounds} rounds: every commit re-derived from its reveal (the bundle holds no session events to hold the frames to)"
            ),
        });
    };
    let agreed = frames_agree(&records, role.unwrap_or("host"), frames)?;
    Ok(ExtensionCheck {
        check: CHECK,
        ran: true,
        count: rounds,
        detail: format!(
            "{rounds} rounds: every commit re-derived from its reveal; {agreed} frames of the session's events agree with the record"
        ),
    })
}

/// Holds every commit, reveal and round result frame of a recorded round
/// to the record; returns how many frames agreed.
fn frames_agree(records: &[Line], role: &str, frames: &[Frame<'_>]) -> Result<usize, Failure> {
    let mut agreed = 0;
    for f in frames {
        let action = f.msg.get_str("action").unwrap_or_default();
        if !matches!(action, "commit" | "reveal" | "round_result") {
            continue;
        }
        let Some(round) = int(f.msg.get("round")).and_then(|r| usize::try_from(r).ok()) else {
            continue;
        };
        let Some((_, record)) = records.get(round) else {
            continue;
        };
        let side = if f.sent { role } else { peer(role) };
        let differs = |what: &str, field: &str| {
            Failure::new(
                "commit_reveal",
                format!(
                    "round {round}: the {side}'s {what} differs from its {action} frame in the session's events"
                ),
            )
            .file(f.file)
            .line(f.line)
            .field(format!("data.msg.{field}"))
        };
        let Some((hash, value, nonce)) = opening(record, side) else {
            continue;
        };
        match action {
            "commit" => {
                if f.msg.get("hash").map(Value::py_str).as_deref() != Some(hash) {
                    return Err(differs("commit hash", "hash"));
                }
            }
            "reveal" => {
                let field = record.get_str("value_field").unwrap_or("value");
                if !f.msg.get(field).is_some_and(|v| v.py_eq(value)) {
                    return Err(differs("revealed value", field));
                }
                if f.msg.get("nonce").map(Value::py_str).as_deref() != Some(nonce) {
                    return Err(differs("nonce", "nonce"));
                }
            }
            _ => {
                // The host sends the result; a record keeps it when it has one.
                let Some(result) = record.get("result") else {
                    continue;
                };
                if !result.py_eq(&Value::Object(f.msg.clone())) {
                    return Err(Failure::new(
                        "commit_reveal",
                        format!(
                            "round {round}: the recorded result differs from the round_result frame in the session's events"
                        ),
                    )
                    .file(f.file)
                    .line(f.line)
                    .field("data.msg"));
                }
            }
        }
        agreed += 1;
    }
    Ok(agreed)
}

fn transcript_root(
    content: &HashMap<String, Vec<u8>>,
    events: Option<&[Frame<'_>]>,
) -> Result<ExtensionCheck, Failure> {
    const CHECK: &str = "transcript_root";
    let Some(data) = content.get(MP_TRANSCRIPT) else {
        return Ok(ExtensionCheck::not_applicable(
            CHECK,
            "the bundle carries no mental-poker transcript",
        ));
    };
    let entries = decode_jsonl(MP_TRANSCRIPT, data)?;
    let mut transcript = Transcript::new();
    for (i, (line, entry)) in entries.iter().enumerate() {
        let at = |field: &str, reason: String| {
            Failure::new(CHECK, reason)
                .file(MP_TRANSCRIPT)
                .line(*line)
                .field(field)
        };
        if int(entry.get("seq")) != i64::try_from(i).ok() {
            return Err(at(
                "seq",
                format!("transcript entries are not consecutive: entry {i} is not seq {i}"),
            ));
        }
        let Some(kind) = entry.get_str("type").filter(|t| !t.is_empty()) else {
            return Err(at("type", format!("transcript entry {i} has no type")));
        };
        let Some(payload) = entry.get("payload").and_then(Value::as_object) else {
            return Err(at(
                "payload",
                format!("transcript entry {i} has no payload object"),
            ));
        };
        transcript
            .append(kind, payload.clone())
            .map_err(|e| at("payload", format!("transcript entry {i}: {e}")))?;
    }
    let count = entries.len();
    let root = transcript.root_hex();
    let Some(raw) = content.get(MP_RECEIPT) else {
        return Ok(ExtensionCheck {
            check: CHECK,
            ran: false,
            count,
            detail: format!(
                "{count} transcript entries, but no transcript_receipt.json states a root (the match ended before its receipts)"
            ),
        });
    };
    let receipt_file = match crate::json::parse_bytes(raw) {
        Ok(Value::Object(m)) => m,
        _ => {
            return Err(
                Failure::new(CHECK, "transcript_receipt.json is not a JSON object")
                    .file(MP_RECEIPT),
            );
        }
    };
    if receipt_file.get_str("transcript_hash") != Some(root.as_str()) {
        return Err(Failure::new(
            CHECK,
            format!(
                "the transcript's entries hash to {root}, not to the receipt's transcript_hash"
            ),
        )
        .file(MP_RECEIPT)
        .field("transcript_hash"));
    }
    let Some(frames) = events else {
        return Ok(ExtensionCheck {
            check: CHECK,
            ran: true,
            count,
            detail: format!(
                "{count} transcript entries hash to the receipt's root (the bundle holds no session events with the signed receipts)"
            ),
        });
    };
    let signed = receipts(&transcript.root(), &root, &receipt_file, frames)?;
    Ok(ExtensionCheck {
        check: CHECK,
        ran: true,
        count,
        detail: format!(
            "{count} transcript entries hash to the receipt's root; {signed} terminal receipts in the session's events sign it"
        ),
    })
}

/// The `mp_terminal_receipt` frames of the session's events: each names
/// the root, is signed over it by its key, and is the signature the
/// receipt file keeps for its side. Returns how many were checked.
fn receipts(
    root: &[u8; 32],
    root_hex: &str,
    receipt_file: &Map,
    frames: &[Frame<'_>],
) -> Result<usize, Failure> {
    let mut checked = 0;
    for f in frames
        .iter()
        .filter(|f| f.msg.get_str("action") == Some("mp_terminal_receipt"))
    {
        let at = |field: &str, reason: &str| {
            Failure::new("transcript_receipt", reason)
                .file(f.file)
                .line(f.line)
                .field(format!("data.msg.{field}"))
        };
        let whose = if f.sent { "our" } else { "the peer's" };
        if f.msg.get_str("transcript_hash") != Some(root_hex) {
            return Err(at(
                "transcript_hash",
                &format!("{whose} terminal receipt names another transcript root"),
            ));
        }
        let signature = f.msg.get_str("signature").unwrap_or_default();
        let key = f.msg.get_str("public_key").unwrap_or_default();
        if !receipt::verify(key, root, signature) {
            return Err(at(
                "signature",
                &format!("{whose} terminal receipt is not a signature of the root by its key"),
            ));
        }
        let kept = if f.sent {
            "signature"
        } else {
            "peer_signature"
        };
        if receipt_file.get_str(kept) != Some(signature) {
            return Err(Failure::new(
                "transcript_receipt",
                format!("transcript_receipt.json's {kept} is not {whose} signed receipt"),
            )
            .file(MP_RECEIPT)
            .field(kept));
        }
        checked += 1;
    }
    Ok(checked)
}
