//! Export: a finished session's state dir as a signed bundle.
//!
//! What goes in, as the reference puts it: the authority frames and their
//! protocol events (from details.jsonl), the public lifecycle events with
//! only their public fields (events.jsonl of the session and its engine
//! dir), the peer index, and for the participant scope the state dir's own
//! files. The manifest's body is hashed into `bundle_id`, and body plus id
//! are signed.
//!
//! palaver adds its extension evidence ([`super::extension`]) when the
//! state dir has it: the commit-reveal record of a `simultaneous_round`
//! session in both scopes (every entry is a commit both sides saw and the
//! value and nonce that opened it, public once revealed), a mental-poker
//! match's transcript and receipt file in the participant scope only (the
//! transcript's openings decrypt every card, both hands and the stock).

use super::evidence::{self, EVENTS, FRAMES, PEERS, PUBLIC};
use super::{
    BUNDLE_KIND, BundleError, Failure, MAX_BUNDLE_ENTRY_BYTES, MAX_BUNDLE_TOTAL_BYTES,
    REPLAY_BUNDLE_VERSION, decode_jsonl, get_or_null, int, is_hash, jsonl_bytes,
};
use crate::engine::evidence_log::{COMMIT_REVEAL_FILE, MP_RECEIPT_FILE, MP_TRANSCRIPT_FILE};
use crate::identity::KeyPair;
use crate::json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Who a bundle is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Frames, protocol events, public lifecycle events and the peer index:
    /// what any third party may see.
    Public,
    /// Also the exporting participant's own state files (its view, peer
    /// payloads).
    Participant,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Public => "public",
            Scope::Participant => "participant",
        }
    }
}

/// The state files a participant bundle carries, when present.
const PARTICIPANT_FILES: [&str; 13] = [
    "session.json",
    "events.jsonl",
    "details.jsonl",
    "snapshot.json",
    "group-checkpoint.json",
    "group-actions.jsonl",
    "group-action-outbox.json",
    "group-client-seq",
    "group-peer-evidence.jsonl",
    "group-peer-actions.jsonl",
    "group-peer-outbox.json",
    "group-peer-listener.json",
    "group-peer-directory.json",
];

const PUBLIC_EVENT_TYPES: [&str; 22] = [
    "invite_created",
    "peer_joined",
    "session_ended",
    "group_started",
    "group_frame",
    "group_frame_received",
    "group_action_receipt",
    "group_action_rejected",
    "group_member_connected",
    "group_member_reconnected",
    "group_member_disconnected",
    "group_leader_disconnected",
    "group_leadership_claimed",
    "group_leader_changed",
    "group_leader_fenced",
    "group_peer_listener_started",
    "group_peer_directory_updated",
    "group_peer_message_sent",
    "group_peer_message_received",
    "group_peer_message_rejected",
    "group_peer_message_send_failed",
    "group_peer_message_expired",
];

const PUBLIC_EVENT_FIELDS: [&str; 29] = [
    "action_id",
    "authority_seq",
    "channel",
    "checkpoint_hash",
    "completed",
    "envelope_hash",
    "frame_hash",
    "frame_kind",
    "group_id",
    "leader_epoch",
    "member_id",
    "membership_version",
    "message_id",
    "outcome",
    "participant_count",
    "post_id",
    "protocol_id",
    "public_key",
    "reason",
    "receipt_status",
    "recipient_count",
    "recipient_public_key",
    "sender_public_key",
    "seq",
    "session_id",
    "status",
    "terminal",
    "ticket_hash",
    "seat",
];

/// The fields an authority frame record keeps, after its key.
const FRAME_FIELDS: [&str; 14] = [
    "leader_public_key",
    "membership_version",
    "recovery_state_hash",
    "checkpoint_hash",
    "checkpoint_signature",
    "checkpoint_mode",
    "frame_kind",
    "wire_version",
    "previous_hash",
    "authority_state_hash",
    "events_hash",
    "completed",
    "outcome",
    "ts",
];

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BundleError + '_ {
    move |source| BundleError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The session dir and the dir its engine wrote to, as the reference finds
/// them: a dir with session.json and `host-*`/`guest-*` children uses its
/// last child; a child of such a dir uses its parent as the session.
fn roots(dir: &Path) -> Result<(PathBuf, PathBuf), BundleError> {
    let root = dir.canonicalize().map_err(io(dir))?;
    if !root.is_dir() {
        return Err(BundleError::Export(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    if root.join("session.json").is_file() {
        let mut children: Vec<PathBuf> = std::fs::read_dir(&root)
            .map_err(io(&root))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                p.is_dir()
                    && (name.starts_with("host-") || name.starts_with("guest-"))
                    && (p.join("snapshot.json").is_file() || p.join("details.jsonl").is_file())
            })
            .collect();
        children.sort();
        let child = children.pop().unwrap_or_else(|| root.clone());
        return Ok((root, child));
    }
    match root.parent() {
        Some(p) if p.join("session.json").is_file() => Ok((p.to_owned(), root)),
        _ => Ok((root.clone(), root)),
    }
}

/// The first of these files that holds a JSON object (else empty).
fn first_json(paths: &[PathBuf]) -> Map {
    paths
        .iter()
        .find_map(
            |p| match std::fs::read(p).ok().map(|b| crate::json::parse_bytes(&b)) {
                Some(Ok(Value::Object(m))) => Some(m),
                _ => None,
            },
        )
        .unwrap_or_default()
}

fn first_string<'a>(values: &[Option<&'a Value>]) -> Option<&'a str> {
    values
        .iter()
        .find_map(|v| v.and_then(Value::as_str).filter(|s| !s.is_empty()))
}

fn opt(s: Option<&str>) -> Value {
    s.map_or(Value::Null, Value::from)
}

/// session_id, group_id, protocol_id, group_role, seat.
fn identity(meta: &Map, snapshot: &Map, checkpoint: &Map) -> Result<Map, BundleError> {
    let group = snapshot.get("group").and_then(Value::as_object);
    let gid = group.and_then(|g| g.get("group_id"));
    let mut out = Map::new();
    out.insert(
        "session_id",
        opt(first_string(&[
            meta.get("session_id"),
            gid,
            checkpoint.get("group_id"),
        ])),
    );
    out.insert(
        "group_id",
        opt(first_string(&[
            meta.get("group_id"),
            gid,
            checkpoint.get("group_id"),
        ])),
    );
    out.insert("protocol_id", Value::from(protocol_id(meta)?));
    out.insert(
        "group_role",
        opt(first_string(&[
            meta.get("group_role"),
            snapshot.get("role"),
        ])),
    );
    out.insert("seat", get_or_null(meta, "seat"));
    Ok(out)
}

/// session.json's protocol_id, checked against (or recovered from) the
/// spec.json of the protocol dirs it names.
fn protocol_id(meta: &Map) -> Result<String, BundleError> {
    let declared = first_string(&[meta.get("protocol_id")]).unwrap_or_default();
    let mut derived = std::collections::BTreeSet::new();
    for key in ["protocol_dir", "local_protocol_dir"] {
        let Some(dir) = meta.get_str(key).filter(|s| !s.is_empty()) else {
            continue;
        };
        let spec = Path::new(dir).join("spec.json");
        if !spec.is_file() {
            continue;
        }
        let bytes = std::fs::read(&spec).map_err(io(&spec))?;
        match crate::json::parse_bytes(&bytes) {
            Ok(Value::Object(m)) => {
                derived.insert(crate::spec::protocol_id_of(&m));
            }
            _ => {
                return Err(BundleError::Export(format!(
                    "{} is not a JSON object",
                    spec.display()
                )));
            }
        }
    }
    if derived.len() > 1 {
        return Err(BundleError::Export(
            "session protocol directories resolve to different protocol_ids".into(),
        ));
    }
    let computed = derived.into_iter().next().unwrap_or_default();
    if !declared.is_empty() && !computed.is_empty() && declared != computed {
        return Err(BundleError::Export(
            "session protocol_id does not match the trusted local bundle".into(),
        ));
    }
    Ok(if declared.is_empty() {
        computed
    } else {
        declared.to_owned()
    })
}

fn read_jsonl(path: &Path) -> Result<Vec<Map>, BundleError> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let data = std::fs::read(path).map_err(io(path))?;
    Ok(decode_jsonl(&path.display().to_string(), &data)?
        .into_iter()
        .map(|(_, m)| m)
        .collect())
}

/// An append-only log's whole lines (a line a killed writer left
/// unfinished is left out); `None` when there is no such file.
fn whole_lines(path: &Path) -> Result<Option<Vec<u8>>, BundleError> {
    if !path.is_file() {
        return Ok(None);
    }
    let mut data = std::fs::read(path).map_err(io(path))?;
    let end = data.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    data.truncate(end);
    Ok(Some(data))
}

/// Group frames and recovery records merged by (epoch, seq, frame_hash).
fn authority_frames(details: &[Map]) -> Vec<Map> {
    let mut merged: BTreeMap<(i64, i64, String), Map> = BTreeMap::new();
    for r in details {
        if !matches!(
            r.get_str("type"),
            Some("group_frame" | "group_recovery_record")
        ) {
            continue;
        }
        let (Some(epoch), Some(seq), true) = (
            int(r.get("leader_epoch")),
            int(r.get("seq")),
            is_hash(r.get("frame_hash")),
        ) else {
            continue;
        };
        let hash = r.get_str("frame_hash").unwrap_or_default().to_owned();
        let entry = merged.entry((epoch, seq, hash.clone())).or_insert_with(|| {
            let mut m = Map::new();
            m.insert("group_id", get_or_null(r, "group_id"));
            m.insert("leader_epoch", Value::from(epoch));
            m.insert("seq", Value::from(seq));
            m.insert("frame_hash", Value::from(hash));
            m
        });
        for f in FRAME_FIELDS {
            if let Some(v) = r.get(f).filter(|v| !v.is_null()) {
                entry.insert(f, v.clone());
            }
        }
    }
    merged.into_values().collect()
}

/// One record per event of each group frame.
fn protocol_events(details: &[Map]) -> Vec<Map> {
    let mut out = Vec::new();
    for r in details {
        if r.get_str("type") != Some("group_frame") {
            continue;
        }
        let Some(events) = r.get("events").and_then(Value::as_array) else {
            continue;
        };
        for (i, e) in events.iter().enumerate() {
            if e.as_object().is_none() {
                continue;
            }
            let mut m = Map::new();
            for k in [
                "group_id",
                "leader_epoch",
                "seq",
                "frame_hash",
                "events_hash",
            ] {
                m.insert(k, get_or_null(r, k));
            }
            m.insert("event_index", Value::from(i));
            m.insert("event", e.clone());
            m.insert("ts", get_or_null(r, "ts"));
            out.push(m);
        }
    }
    out
}

/// The lifecycle events anyone may see, with their public fields only,
/// ordered by time as text (stable).
fn public_events(source: &Path, effective: &Path) -> Result<Vec<Map>, BundleError> {
    let mut paths = vec![source.join("events.jsonl")];
    if effective != source {
        paths.push(effective.join("events.jsonl"));
    }
    let mut out = Vec::new();
    for p in paths {
        for r in read_jsonl(&p)? {
            let Some(kind) = r.get_str("type").filter(|t| PUBLIC_EVENT_TYPES.contains(t)) else {
                continue;
            };
            let mut data = Map::new();
            if let Some(d) = r.get("data").and_then(Value::as_object) {
                for (k, v) in d.iter() {
                    if PUBLIC_EVENT_FIELDS.contains(&k) {
                        data.insert(k, v.clone());
                    }
                }
            }
            let mut m = Map::new();
            m.insert("ts", get_or_null(&r, "ts"));
            m.insert("type", Value::from(kind));
            m.insert("data", Value::Object(data));
            out.push(m);
        }
    }
    let sort_key = |m: &Map| match m.get("ts") {
        Some(v) if v.truthy() => v.py_str(),
        _ => String::new(),
    };
    out.sort_by_cached_key(sort_key);
    Ok(out)
}

/// The public index of the peer evidence log, its chain checked first.
fn peer_index(path: &Path) -> Result<Vec<Map>, BundleError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let data = std::fs::read(path).map_err(io(path))?;
    let records = decode_jsonl(&path.display().to_string(), &data)?;
    if let Err((line, field)) = super::peer::check_chain(&records) {
        return Err(BundleError::Export(format!(
            "peer evidence hash chain is invalid: {} line {line}, field {field}",
            path.display()
        )));
    }
    Ok(super::peer::index(&records))
}

/// The checkpoint's members, public fields only.
fn membership(checkpoint: &Map) -> Vec<Value> {
    let Some(members) = checkpoint.get("members").and_then(Value::as_array) else {
        return Vec::new();
    };
    members
        .iter()
        .filter_map(Value::as_object)
        .filter(|m| is_hash(m.get("public_key")))
        .map(|m| {
            let mut out = Map::new();
            for k in ["member_id", "public_key", "seat", "status"] {
                out.insert(k, get_or_null(m, k));
            }
            Value::Object(out)
        })
        .collect()
}

/// The checkpoint's terminal fields, else the last frame, else null.
fn terminal(checkpoint: &Map, frames: &[Map]) -> Value {
    if !checkpoint.is_empty() {
        let mut out = Map::new();
        for k in [
            "leader_public_key",
            "leader_epoch",
            "seq",
            "frame_hash",
            "checkpoint_hash",
            "checkpoint_signature",
            "completed",
            "outcome",
        ] {
            out.insert(k, get_or_null(checkpoint, k));
        }
        return Value::Object(out);
    }
    frames
        .last()
        .map_or(Value::Null, |f| Value::Object(f.clone()))
}

/// Exports the session in `state_dir` as a bundle at `output`, signed with
/// `signer`; returns the manifest with `output` (the absolute path).
pub fn export(
    state_dir: &Path,
    output: &Path,
    scope: Scope,
    signer: &KeyPair,
    force: bool,
) -> Result<Map, BundleError> {
    let (source, effective) = roots(state_dir)?;
    if output.exists() && !force {
        return Err(BundleError::Exists(output.to_owned()));
    }
    let meta = first_json(&[source.join("session.json"), effective.join("session.json")]);
    let snapshot = first_json(&[effective.join("snapshot.json")]);
    let checkpoint = first_json(&[effective.join("group-checkpoint.json")]);
    let ident = identity(&meta, &snapshot, &checkpoint)?;
    let group_id = ident.get_str("group_id").is_some();
    if group_id && !is_hash(ident.get("protocol_id")) {
        return Err(BundleError::Export(
            "group replay requires a valid protocol_id".into(),
        ));
    }
    let peer_index = peer_index(&effective.join("group-peer-evidence.jsonl"))?;
    let details = read_jsonl(&effective.join("details.jsonl"))?;
    let frames = authority_frames(&details);
    let mut files: Vec<(String, Vec<u8>)> = vec![
        (FRAMES.into(), jsonl_bytes(&frames)),
        (EVENTS.into(), jsonl_bytes(&protocol_events(&details))),
        (
            PUBLIC.into(),
            jsonl_bytes(&public_events(&source, &effective)?),
        ),
        (PEERS.into(), jsonl_bytes(&peer_index)),
    ];
    if let Some(data) = whole_lines(&effective.join(COMMIT_REVEAL_FILE))? {
        files.push((super::COMMIT_REVEAL.into(), data));
    }
    if scope == Scope::Participant {
        if let Some(data) = whole_lines(&effective.join(MP_TRANSCRIPT_FILE))? {
            files.push((super::MP_TRANSCRIPT.into(), data));
        }
        let receipt = effective.join(MP_RECEIPT_FILE);
        if receipt.is_file() {
            let data = std::fs::read(&receipt).map_err(io(&receipt))?;
            files.push((super::MP_RECEIPT.into(), data));
        }
        let roots: Vec<(&str, &Path)> = if source == effective {
            vec![("state", &effective)]
        } else {
            vec![("runtime", &source), ("state", &effective)]
        };
        for (prefix, root) in roots {
            for name in PARTICIPANT_FILES {
                let path = root.join(name);
                if !path.is_file() {
                    continue;
                }
                let data = std::fs::read(&path).map_err(io(&path))?;
                files.push((format!("participant/{prefix}/{name}"), data));
            }
        }
    }
    let members = membership(&checkpoint);
    if group_id
        && !members
            .iter()
            .any(|m| m.get_str("public_key") == Some(signer.public_key.as_str()))
    {
        return Err(BundleError::Export(
            "replay signer is not in the recorded group membership".into(),
        ));
    }
    let content: HashMap<String, Vec<u8>> = files.iter().cloned().collect();
    evidence::validate_derived(&content).map_err(export_failure)?;
    let terminal = terminal(&checkpoint, &frames);
    let frame_lines: Vec<(usize, Map)> = frames
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, f)| (i + 1, f))
        .collect();
    evidence::validate_terminal(Some(&terminal), &frame_lines, group_id).map_err(export_failure)?;
    super::extension::check(&content).map_err(export_failure)?;

    let mut body = Map::new();
    body.insert("bundle_version", Value::from(REPLAY_BUNDLE_VERSION));
    body.insert("bundle_kind", Value::from(BUNDLE_KIND));
    body.insert("scope", Value::from(scope.as_str()));
    body.insert("exported_at", Value::from(crate::utc::iso_now()));
    body.insert(
        "participant_public_key",
        Value::from(signer.public_key.as_str()),
    );
    for (k, v) in ident.iter() {
        body.insert(k, v.clone());
    }
    body.insert("membership", Value::Array(members));
    body.insert("terminal_evidence", terminal);
    let participant = scope == Scope::Participant;
    body.insert("privacy", privacy(participant, participant));
    seal(body, files, signer, output)
}

/// The start of the manifest of one of palaver's own public kinds (werewolf
/// games, GTL transactions): version, kind, scope, time, signer, no
/// membership, the privacy block; the caller adds its terminal evidence.
pub fn own_kind_body(kind: &str, signer: &KeyPair) -> Map {
    let mut body = Map::new();
    body.insert("bundle_version", Value::from(REPLAY_BUNDLE_VERSION));
    body.insert("bundle_kind", Value::from(kind));
    body.insert("scope", Value::from("public"));
    body.insert("exported_at", Value::from(crate::utc::iso_now()));
    body.insert(
        "participant_public_key",
        Value::from(signer.public_key.as_str()),
    );
    body.insert("membership", Value::Array(Vec::new()));
    body.insert("privacy", privacy(false, false));
    body
}

/// What `verify --json` prints for one of palaver's own kinds.
pub fn own_kind_report(path: &Path, kind: &str, manifest: &Map, terminal: Value) -> Value {
    let mut m = Map::new();
    m.insert("status", Value::from("verified"));
    m.insert("path", Value::from(path.display().to_string()));
    m.insert("bundle_kind", Value::from(kind));
    m.insert("manifest", Value::Object(manifest.clone()));
    m.insert("terminal_evidence", terminal);
    Value::Object(m)
}

/// The manifest's `privacy` block: what the bundle carries beyond public
/// evidence, and what it never does.
pub fn privacy(participant_view: bool, peer_payloads: bool) -> Value {
    let mut privacy = Map::new();
    privacy.insert("contains_participant_view", Value::Bool(participant_view));
    privacy.insert("contains_peer_payloads", Value::Bool(peer_payloads));
    privacy.insert("excludes_private_keys", Value::Bool(true));
    privacy.insert("excludes_provider_secrets", Value::Bool(true));
    privacy.insert("excludes_hidden_reasoning", Value::Bool(true));
    Value::Object(privacy)
}

/// Finishes a bundle of any kind: `files` sorted and bounded, listed in the
/// manifest `body` with their sizes and hashes, `bundle_id` the hash of the
/// body, the signer's signature over body and id, the zip written
/// atomically to `output`. Returns the manifest with its `output` path.
pub fn seal(
    mut body: Map,
    mut files: Vec<(String, Vec<u8>)>,
    signer: &KeyPair,
    output: &Path,
) -> Result<Map, BundleError> {
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut total = 0u64;
    for (name, data) in &files {
        let len = data.len() as u64;
        total += len;
        if len > MAX_BUNDLE_ENTRY_BYTES || total > MAX_BUNDLE_TOTAL_BYTES {
            return Err(BundleError::Export(format!(
                "replay evidence file is too large for a bundle: {name} ({len} bytes)"
            )));
        }
    }
    let inventory: Vec<Value> = files
        .iter()
        .map(|(name, data)| {
            let mut m = Map::new();
            m.insert("path", Value::from(name.as_str()));
            m.insert(
                "sha256",
                Value::from(crate::json::canonical::sha256_hex(data)),
            );
            m.insert("size_bytes", Value::from(data.len()));
            Value::Object(m)
        })
        .collect();
    body.insert("files", Value::Array(inventory));
    let bundle_id = super::json_hash(&Value::Object(body.clone())).ok_or_else(|| {
        BundleError::Export("the manifest holds a value the group canonical form refuses".into())
    })?;
    let mut manifest = body;
    manifest.insert("bundle_id", Value::from(bundle_id));
    let signed = crate::json::canonical::to_vec(&Value::Object(manifest.clone()));
    manifest.insert("signature", Value::from(signer.sign(&signed)));
    files.push((
        "manifest.json".into(),
        crate::json::canonical::to_vec(&Value::Object(manifest.clone())),
    ));
    let bytes = super::archive::zip_bytes(&files)
        .map_err(|e| BundleError::Export(format!("writing the zip: {e}")))?;
    crate::fsutil::write_atomic(output, &bytes).map_err(io(output))?;
    let abs = output.canonicalize().map_err(io(output))?;
    manifest.insert("output", Value::from(abs.display().to_string()));
    Ok(manifest)
}

fn export_failure(f: Failure) -> BundleError {
    BundleError::Export(format!("the state dir's evidence does not verify: {f}"))
}
