//! palaver's extension evidence in signed replay bundles
//! (`session::bundle::extension`): a real rock-paper-scissors session
//! (simultaneous rounds) records every round's openings, its bundles
//! re-derive each commit from its reveal, and a forger who changes a nonce,
//! a value or a round and signs the manifest again is refused by the named
//! check and round; a mental-poker match records its transcript, its
//! participant bundle recomputes the root its receipts sign, and a changed
//! entry is refused by `transcript_root`; a bundle without these files
//! verifies as before, the checks "not applicable".

use crate::common;

use common::forge::resign;
use palaver::engine::{ControlMode, Role};
use palaver::identity::KeyPair;
use palaver::json::{Map, Value};
use palaver::session::bundle::{
    self, COMMIT_REVEAL, ExtensionCheck, MP_RECEIPT, MP_TRANSCRIPT, Scope,
};
use std::path::{Path, PathBuf};

use common::forge::{entries, refused, write};

fn lines(data: &[u8]) -> Vec<Map> {
    String::from_utf8_lossy(data)
        .lines()
        .map(|l| match palaver::json::parse_str(l).unwrap() {
            Value::Object(m) => m,
            _ => panic!("not an object: {l}"),
        })
        .collect()
}

fn jsonl(records: &[Map]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        out.extend(palaver::json::canonical::to_vec(&Value::Object(r.clone())));
        out.push(b'\n');
    }
    out
}

/// `files` with `name`'s records edited by `edit`, re-signed by a forger.
fn forged(
    files: &[(String, Vec<u8>)],
    name: &str,
    edit: impl FnOnce(&mut Vec<Map>),
) -> Vec<(String, Vec<u8>)> {
    let mut files = files.to_vec();
    let entry = files.iter_mut().find(|(n, _)| n == name).unwrap();
    let mut records = lines(&entry.1);
    edit(&mut records);
    entry.1 = jsonl(&records);
    resign(&mut files, &KeyPair::generate());
    files
}

fn check<'a>(v: &'a bundle::Verified, name: &str) -> &'a ExtensionCheck {
    v.extensions.iter().find(|c| c.check == name).unwrap()
}

/// The engine dir (`host-*`/`guest-*`) of a session's parent dir.
fn engine_dir(parent: &Path) -> PathBuf {
    std::fs::read_dir(parent)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && p.join("events.jsonl").is_file())
        .unwrap_or_else(|| parent.to_owned())
}

fn side_mut<'a>(record: &'a mut Map, side: &str) -> &'a mut Map {
    record.get_mut(side).and_then(Value::as_object_mut).unwrap()
}

#[tokio::test]
async fn simultaneous_rounds_are_re_derived_and_a_forged_opening_is_named() {
    for role in [Role::Host, Role::Guest] {
        let tmp = tempfile::tempdir().unwrap();
        let parent = common::played::session(
            &tmp.path().join("data"),
            "rps-v1",
            role,
            ControlMode::Autonomous,
            |_| {},
        )
        .await;
        let log = std::fs::read(engine_dir(&parent).join("commit-reveal.jsonl")).unwrap();
        let rounds = lines(&log);
        assert!(rounds.len() >= 2, "{role:?}: {} rounds", rounds.len());
        assert_eq!(rounds[0].get_str("role"), Some(role.as_str()));
        let key = KeyPair::generate();
        for scope in [Scope::Public, Scope::Participant] {
            let tag = format!("{}-{}", role.as_str(), scope.as_str());
            let out = tmp.path().join(format!("{tag}.zip"));
            bundle::export(&parent, &out, scope, &key, false).unwrap();
            let v = bundle::verify(&out).unwrap();
            let cr = check(&v, "commit_reveal");
            assert!(cr.ran, "{tag}: {cr:?}");
            assert_eq!(cr.count, rounds.len(), "{tag}");
            // Participant bundles hold the frames too: 2 commits, 2
            // reveals and a result a round.
            if scope == Scope::Participant {
                assert!(
                    cr.detail
                        .contains(&format!("{} frames of the session", rounds.len() * 5)),
                    "{tag}: {}",
                    cr.detail
                );
            }
            let tr = check(&v, "transcript_root");
            assert!(!tr.ran, "{tag}");
            let report = v.to_value();
            let listed = report.get("extension_checks").unwrap().as_array().unwrap();
            assert_eq!(listed[0].get_str("status"), Some("passed"), "{tag}");
            assert_eq!(listed[1].get_str("status"), Some("not_applicable"));

            let files = entries(&out);
            assert!(files.iter().any(|(n, _)| n == COMMIT_REVEAL), "{tag}");
            let bad = tmp.path().join(format!("{tag}-bad.zip"));
            // A nonce changed: the peer's opening of round 1 no longer
            // opens its commit.
            let peer = if role == Role::Host { "guest" } else { "host" };
            write(
                &bad,
                &forged(&files, COMMIT_REVEAL, |r| {
                    side_mut(&mut r[1], peer).insert("nonce", Value::from("0011223344556677"));
                }),
            );
            let f = refused(&bad);
            assert_eq!(
                (f.check, f.file.as_deref(), f.line, f.field.as_deref()),
                (
                    "commit_reveal",
                    Some(COMMIT_REVEAL),
                    Some(2),
                    Some(&*format!("{peer}.hash"))
                ),
                "{tag}: {f}"
            );
            assert!(f.reason.starts_with("round 1: "), "{f}");
            // A value changed: our own opening of round 0.
            write(
                &bad,
                &forged(&files, COMMIT_REVEAL, |r| {
                    side_mut(&mut r[0], role.as_str()).insert("value", Value::from("lizard"));
                }),
            );
            let f = refused(&bad);
            assert_eq!(
                (f.check, f.line, f.reason.starts_with("round 0: ")),
                ("commit_reveal", Some(1), true),
                "{tag}: {f}"
            );
            // A round left out: the rounds no longer follow each other.
            write(
                &bad,
                &forged(&files, COMMIT_REVEAL, |r| {
                    r.remove(0);
                }),
            );
            let f = refused(&bad);
            assert_eq!(
                (f.check, f.line, f.field.as_deref()),
                ("commit_reveal", Some(1), Some("round")),
                "{tag}: {f}"
            );
            // A whole new opening (value, nonce and the hash that fits
            // them): it re-derives, but the session's frames say otherwise.
            write(
                &bad,
                &forged(&files, COMMIT_REVEAL, |r| {
                    let o = side_mut(&mut r[0], peer);
                    let value = Value::from("paper-forged");
                    let hash = palaver::engine::commit::commit_hash(&value, "ffffffffffffffff");
                    o.insert("value", value);
                    o.insert("nonce", Value::from("ffffffffffffffff"));
                    o.insert("hash", Value::from(hash));
                }),
            );
            if scope == Scope::Participant {
                let f = refused(&bad);
                assert_eq!(
                    (f.check, f.file.as_deref()),
                    ("commit_reveal", Some("participant/runtime/events.jsonl")),
                    "{tag}: {f}"
                );
                assert!(
                    f.reason
                        .starts_with(&format!("round 0: the {peer}'s commit hash differs")),
                    "{f}"
                );
            } else {
                // A public bundle has no frames to hold it to.
                assert!(bundle::verify(&bad).is_ok(), "{tag}");
            }
        }
        // Without the record (a bundle from before it, or the reference's
        // own): verified, the check not applicable.
        let out = tmp.path().join(format!("{}-public.zip", role.as_str()));
        let mut files = entries(&out);
        files.retain(|(n, _)| n != COMMIT_REVEAL);
        resign(&mut files, &key);
        let old = tmp.path().join("old.zip");
        write(&old, &files);
        let v = bundle::verify(&old).unwrap();
        assert!(v.extensions.iter().all(|c| !c.ran), "{:?}", v.extensions);
    }
}

#[test]
fn a_mental_poker_transcript_is_re_derived_and_a_changed_entry_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::played::crazy_eights(&tmp.path().join("data"));
    let key = KeyPair::generate();
    let public = tmp.path().join("public.zip");
    bundle::export(&dir, &public, Scope::Public, &key, false).unwrap();
    let v = bundle::verify(&public).unwrap();
    assert!(!check(&v, "transcript_root").ran);
    assert!(
        !entries(&public)
            .iter()
            .any(|(n, _)| n == MP_TRANSCRIPT || n == MP_RECEIPT),
        "the public scope never carries the transcript"
    );

    let out = tmp.path().join("participant.zip");
    bundle::export(&dir, &out, Scope::Participant, &key, false).unwrap();
    let v = bundle::verify(&out).unwrap();
    let tr = check(&v, "transcript_root");
    assert!(tr.ran, "{tr:?}");
    assert!(tr.count > 10, "{tr:?}");
    assert!(
        tr.detail
            .contains("2 terminal receipts in the session's events sign it"),
        "{}",
        tr.detail
    );
    let files = entries(&out);
    let bad = tmp.path().join("bad.zip");
    // One entry's payload changed (the first OT's y): the root differs.
    write(
        &bad,
        &forged(&files, MP_TRANSCRIPT, |entries| {
            let ot = entries
                .iter_mut()
                .find(|e| e.get_str("type") == Some("mp_ot"))
                .unwrap();
            let payload = ot
                .get_mut("payload")
                .and_then(Value::as_object_mut)
                .unwrap();
            payload.insert("y", Value::from(12345));
        }),
    );
    let f = refused(&bad);
    assert_eq!(
        (f.check, f.file.as_deref(), f.field.as_deref()),
        ("transcript_root", Some(MP_RECEIPT), Some("transcript_hash")),
        "{f}"
    );
    // An entry left out: the sequence breaks where it was.
    write(
        &bad,
        &forged(&files, MP_TRANSCRIPT, |entries| {
            entries.remove(3);
        }),
    );
    let f = refused(&bad);
    assert_eq!(
        (f.check, f.file.as_deref(), f.line, f.field.as_deref()),
        ("transcript_root", Some(MP_TRANSCRIPT), Some(4), Some("seq")),
        "{f}"
    );
    // The changed entry and a receipt file that names the new root: the
    // signed receipts in the session's events still sign the old one.
    let mut changed = forged(&files, MP_TRANSCRIPT, |entries| {
        let last = entries.last_mut().unwrap();
        last.insert("type", Value::from("mp_witness_forged"));
    });
    let records = lines(&changed.iter().find(|(n, _)| n == MP_TRANSCRIPT).unwrap().1);
    let mut t = palaver::engine::mental_poker::transcript::Transcript::new();
    for r in &records {
        t.append(
            r.get_str("type").unwrap(),
            r.get("payload").unwrap().as_object().unwrap().clone(),
        )
        .unwrap();
    }
    let receipt = &mut changed.iter_mut().find(|(n, _)| n == MP_RECEIPT).unwrap().1;
    let mut m = match palaver::json::parse_bytes(receipt).unwrap() {
        Value::Object(m) => m,
        _ => panic!("receipt"),
    };
    m.insert("transcript_hash", Value::from(t.root_hex()));
    *receipt = palaver::json::canonical::to_vec(&Value::Object(m));
    resign(&mut changed, &KeyPair::generate());
    write(&bad, &changed);
    let f = refused(&bad);
    assert_eq!(
        (f.check, f.file.as_deref(), f.field.as_deref()),
        (
            "transcript_receipt",
            Some("participant/runtime/events.jsonl"),
            Some("data.msg.transcript_hash")
        ),
        "{f}"
    );
}
