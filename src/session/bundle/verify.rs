//! Verification of one bundle, check by check in the reference's order:
//! the archive ([`super::archive`]), the manifest's identity and bundle_id,
//! its signer and membership, its signature, the file inventory (every
//! file listed once, with its size and SHA-256, nothing unlisted), the
//! derived evidence, the terminal evidence, and for a participant bundle
//! its peer evidence; then palaver's own extension checks
//! ([`super::extension`]), which the report lists (`extension_checks`).

use super::evidence::{self, FRAMES, PEERS};
use super::{BUNDLE_KIND, BundleError, Failure, REPLAY_BUNDLE_VERSION, archive, differs, is_hash};
use crate::json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A verified bundle: what the reference's `verify --json` prints.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The bundle's absolute path.
    pub path: String,
    pub manifest: Map,
    pub authority_frames: Vec<Map>,
    pub peer_index: Vec<Map>,
    /// palaver's extension checks: passed or not applicable.
    pub extensions: Vec<super::ExtensionCheck>,
}

impl Verified {
    /// `{"status": "verified", "path", "manifest", "authority_frames",
    /// "peer_index"}`, in the reference's order, then palaver's
    /// `extension_checks` (each `{"check", "status", "count", "detail"}`).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("status", Value::from("verified"));
        m.insert("path", Value::from(self.path.as_str()));
        m.insert("manifest", Value::Object(self.manifest.clone()));
        let list = |v: &[Map]| Value::Array(v.iter().cloned().map(Value::Object).collect());
        m.insert("authority_frames", list(&self.authority_frames));
        m.insert("peer_index", list(&self.peer_index));
        m.insert(
            "extension_checks",
            Value::Array(self.extensions.iter().map(|c| c.to_value()).collect()),
        );
        Value::Object(m)
    }
}

fn manifest_failure(check: &'static str, reason: &str, field: &str) -> Failure {
    Failure::new(check, reason)
        .file("manifest.json")
        .field(field)
}

/// Checks the manifest's identity (of bundle kind `kind`), signer,
/// membership and signature.
fn check_manifest(manifest: &Map, kind: &str) -> Result<(), Failure> {
    let mut signed = manifest.clone();
    signed.remove("signature");
    let mut body = signed.clone();
    body.remove("bundle_id");
    let identity_field = if differs(
        manifest.get("bundle_version"),
        Some(&Value::from(REPLAY_BUNDLE_VERSION)),
    ) {
        Some("bundle_version")
    } else if manifest.get_str("bundle_kind") != Some(kind) {
        Some("bundle_kind")
    } else if !matches!(manifest.get_str("scope"), Some("public" | "participant")) {
        Some("scope")
    } else if manifest.get_str("bundle_id").is_none()
        || manifest.get_str("bundle_id") != super::json_hash(&Value::Object(body)).as_deref()
    {
        Some("bundle_id")
    } else {
        None
    };
    if let Some(field) = identity_field {
        return Err(manifest_failure(
            "manifest_identity",
            "replay manifest identity is invalid",
            field,
        ));
    }
    let key = manifest.get_str("participant_public_key");
    let signature = manifest.get_str("signature");
    if !is_hash(manifest.get("participant_public_key")) || signature.is_none() {
        let field = if signature.is_none() {
            "signature"
        } else {
            "participant_public_key"
        };
        return Err(manifest_failure(
            "signer",
            "replay manifest signer is invalid",
            field,
        ));
    }
    let key = key.unwrap_or_default();
    let Some(members) = manifest.get("membership").and_then(Value::as_array) else {
        return Err(manifest_failure(
            "membership",
            "replay membership is invalid",
            "membership",
        ));
    };
    let group = manifest.get("group_id").is_some_and(Value::truthy);
    if group
        && !members
            .iter()
            .any(|m| m.as_object().and_then(|m| m.get_str("public_key")) == Some(key))
    {
        return Err(manifest_failure(
            "membership",
            "replay signer is not in the recorded membership",
            "participant_public_key",
        ));
    }
    if group && !is_hash(manifest.get("protocol_id")) {
        return Err(manifest_failure(
            "protocol_id",
            "group replay protocol_id is invalid",
            "protocol_id",
        ));
    }
    let canonical = super::json_hash(&Value::Object(signed.clone()))
        .map(|_| crate::json::canonical::to_vec(&Value::Object(signed)));
    if !canonical
        .is_some_and(|bytes| crate::identity::verify(key, &bytes, signature.unwrap_or_default()))
    {
        return Err(manifest_failure(
            "signature",
            "replay manifest signature is invalid",
            "signature",
        ));
    }
    Ok(())
}

/// Checks the inventory against the archive's files.
fn check_inventory(manifest: &Map, content: &HashMap<String, Vec<u8>>) -> Result<(), Failure> {
    let inventory = match manifest.get("files").and_then(Value::as_array) {
        Some(list) if list.len() == content.len() => list,
        other => {
            let reason = match other {
                Some(list) => format!(
                    "replay manifest file inventory is invalid ({} listed, {} in the archive)",
                    list.len(),
                    content.len()
                ),
                None => "replay manifest file inventory is invalid".to_owned(),
            };
            return Err(manifest_failure("inventory", &reason, "files"));
        }
    };
    let mut expected = HashSet::new();
    for (i, entry) in inventory.iter().enumerate() {
        let field = format!("files[{i}]");
        let Some(entry) = entry.as_object() else {
            return Err(manifest_failure(
                "inventory",
                "replay manifest file entry must be an object",
                &field,
            ));
        };
        let Some(path) = entry.get_str("path") else {
            return Err(manifest_failure(
                "inventory",
                "replay bundle path is invalid",
                &field,
            ));
        };
        archive::check_path(path)
            .map_err(|f| f.file("manifest.json").field(format!("{field}.path")))?;
        let Some(data) = content.get(path).filter(|_| !expected.contains(path)) else {
            return Err(manifest_failure(
                "inventory",
                &format!("replay manifest file path is invalid (missing or listed twice: {path})"),
                &format!("{field}.path"),
            ));
        };
        expected.insert(path.to_owned());
        if differs(entry.get("size_bytes"), Some(&Value::from(data.len()))) {
            return Err(Failure::new(
                "hash_mismatch",
                format!("replay evidence hash mismatch: {path}"),
            )
            .file(path)
            .field(format!("manifest files[{i}].size_bytes")));
        }
        if entry.get_str("sha256") != Some(crate::json::canonical::sha256_hex(data).as_str()) {
            return Err(Failure::new(
                "hash_mismatch",
                format!("replay evidence hash mismatch: {path}"),
            )
            .file(path)
            .field(format!("manifest files[{i}].sha256")));
        }
    }
    if let Some(extra) = content.keys().find(|k| !expected.contains(*k)) {
        return Err(
            Failure::new("unlisted", "replay bundle contains unlisted evidence")
                .file(extra.clone()),
        );
    }
    Ok(())
}

/// The bundle at `path` read as hostile input: its files, the manifest
/// apart.
fn read(path: &Path) -> Result<(Map, HashMap<String, Vec<u8>>), BundleError> {
    // A bundle that cannot be opened is an error, not a verdict.
    std::fs::File::open(path).map_err(|source| BundleError::Io {
        path: path.to_owned(),
        source,
    })?;
    let entries = archive::read_entries(path)?;
    let mut content: HashMap<String, Vec<u8>> = entries.into_iter().collect();
    let Some(raw) = content.remove("manifest.json") else {
        return Err(Failure::new("manifest", "replay bundle has no manifest.json").into());
    };
    let manifest = match crate::json::parse_bytes(&raw) {
        Ok(Value::Object(m)) => m,
        Ok(_) => {
            return Err(
                Failure::new("manifest", "replay manifest must be an object")
                    .file("manifest.json")
                    .into(),
            );
        }
        Err(e) => {
            return Err(Failure::new(
                "manifest",
                format!("replay manifest is not valid UTF-8 JSON: {e}"),
            )
            .file("manifest.json")
            .into());
        }
    };
    Ok((manifest, content))
}

/// The `bundle_kind` a bundle's manifest names (read as hostile input, not
/// yet verified), to pick its verifier.
pub fn kind_of(path: &Path) -> Result<String, BundleError> {
    let (manifest, _) = read(path)?;
    Ok(manifest
        .get_str("bundle_kind")
        .unwrap_or_default()
        .to_owned())
}

/// Opens a bundle of kind `kind` and checks what every kind shares: the
/// manifest's identity, signer and signature, and the inventory against
/// the archive's files. Returns the manifest and the evidence files.
pub fn open(path: &Path, kind: &str) -> Result<(Map, HashMap<String, Vec<u8>>), BundleError> {
    let (manifest, content) = read(path)?;
    check_manifest(&manifest, kind)?;
    check_inventory(&manifest, &content)?;
    Ok((manifest, content))
}

/// Holds what a bundle of palaver's own kinds derives from its evidence to
/// the `terminal_evidence` its manifest recorded at export: a mismatch is
/// the `terminal` check, naming the first field that differs.
pub fn check_terminal(manifest: &Map, derived: &Value, reason: &str) -> Result<(), Failure> {
    let recorded = manifest.get("terminal_evidence");
    if recorded == Some(derived) {
        return Ok(());
    }
    let field = match (recorded.and_then(Value::as_object), derived.as_object()) {
        (Some(r), Some(d)) => d
            .iter()
            .find(|(k, v)| r.get(k) != Some(*v))
            .map_or("terminal_evidence".to_owned(), |(k, _)| {
                format!("terminal_evidence.{k}")
            }),
        _ => "terminal_evidence".to_owned(),
    };
    Err(Failure::new("terminal", reason)
        .file("manifest.json")
        .field(field))
}

/// Verifies one bundle; `Err(BundleError::Failed)` names the first check it
/// fails.
pub fn verify(path: &Path) -> Result<Verified, BundleError> {
    let (manifest, content) = open(path, BUNDLE_KIND)?;
    evidence::validate_derived(&content)?;
    let frames = evidence::lines(&content, FRAMES)?;
    let group = manifest.get("group_id").is_some_and(Value::truthy);
    evidence::validate_terminal(manifest.get("terminal_evidence"), &frames, group)?;
    let peer_index = evidence::lines(&content, PEERS)?;
    if manifest.get_str("scope") == Some("participant") {
        let mut logs: Vec<(&str, &[u8])> = content
            .iter()
            .filter(|(p, _)| {
                p.starts_with("participant/") && p.ends_with("/group-peer-evidence.jsonl")
            })
            .map(|(p, d)| (p.as_str(), d.as_slice()))
            .collect();
        logs.sort_by(|a, b| a.0.cmp(b.0));
        let index: Vec<Map> = peer_index.iter().map(|(_, m)| m.clone()).collect();
        super::peer::validate_participant(&logs, &index, PEERS)?;
    }
    let extensions = super::extension::check(&content)?;
    let abs = path.canonicalize().map_err(|source| BundleError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(Verified {
        path: abs.display().to_string(),
        manifest,
        authority_frames: frames.into_iter().map(|(_, m)| m).collect(),
        peer_index: peer_index.into_iter().map(|(_, m)| m).collect(),
        extensions,
    })
}
