//! What a forger who holds some key can do to a bundle: change its files
//! and sign the manifest again over them.

use palaver::identity::KeyPair;
use palaver::json::{Map, Value};

/// Rebuilds the manifest's inventory, bundle_id and signature for `files`
/// as `key`.
pub fn resign(files: &mut Vec<(String, Vec<u8>)>, key: &KeyPair) {
    let raw = &files.iter().find(|(n, _)| n == "manifest.json").unwrap().1;
    let mut m: Map = match palaver::json::parse_bytes(raw).unwrap() {
        Value::Object(m) => m,
        _ => panic!("manifest.json is not an object"),
    };
    files.retain(|(n, _)| n != "manifest.json");
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let inventory = files
        .iter()
        .map(|(n, d)| {
            let mut e = Map::new();
            e.insert("path", Value::from(n.as_str()));
            e.insert(
                "sha256",
                Value::from(palaver::json::canonical::sha256_hex(d)),
            );
            e.insert("size_bytes", Value::from(d.len()));
            Value::Object(e)
        })
        .collect();
    m.insert("files", Value::Array(inventory));
    m.insert(
        "participant_public_key",
        Value::from(key.public_key.as_str()),
    );
    m.remove("signature");
    m.remove("bundle_id");
    let id = palaver::engine::group::core::json_hash(&Value::Object(m.clone())).unwrap();
    m.insert("bundle_id", Value::from(id));
    let signed = palaver::json::canonical::to_vec(&Value::Object(m.clone()));
    m.insert("signature", Value::from(key.sign(&signed)));
    files.push((
        "manifest.json".into(),
        palaver::json::canonical::to_vec(&Value::Object(m)),
    ));
}

/// The failure `bundle::verify` names for the bundle at `path` (a panic
/// when it verifies or fails otherwise).
#[allow(dead_code, reason = "only the replay tests read bundles back")]
pub fn refused(path: &std::path::Path) -> palaver::session::bundle::Failure {
    match palaver::session::bundle::verify(path) {
        Err(palaver::session::bundle::BundleError::Failed(f)) => *f,
        other => panic!("{} was not refused by a check: {other:?}", path.display()),
    }
}

/// A bundle's entries, in archive order.
#[allow(dead_code, reason = "only the replay tests read bundles back")]
pub fn entries(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    palaver::session::bundle::archive::read_entries(path).unwrap()
}

/// Writes `files` as a bundle at `path`.
#[allow(dead_code, reason = "only the replay tests read bundles back")]
pub fn write(path: &std::path::Path, files: &[(String, Vec<u8>)]) {
    std::fs::write(
        path,
        palaver::session::bundle::archive::zip_bytes(files).unwrap(),
    )
    .unwrap();
}
