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
