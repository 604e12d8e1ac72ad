//! Signed replay bundles (`session::bundle`, `palaver session replay
//! export|verify|reconcile`): a two-party game and a room exported and
//! verified; every tamper case refused with its exact reason; hostile zips
//! (a bomb, `../x`, `/abs`, a symlink, 100,000 entries) refused quickly
//! without writing anything; a whole four-seat table over iroh; and, with
//! the reference client (aigenora 0.1.4), bundles crossing both ways (a
//! game, a room, a table, a peer evidence log the reference wrote) and
//! reconcile agreeing.

use crate::common;

use palaver::engine::{ControlMode, Role};
use palaver::identity::KeyPair;
use palaver::json::{Map, Value};
use palaver::session::bundle::{self, BundleError, Scope, archive};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");
const ROOM: &str = "community-room-v1";

fn export(dir: &Path, out: &Path, scope: Scope, key: &KeyPair) -> Map {
    bundle::export(dir, out, scope, key, false).unwrap()
}

/// The failed check of a bundle that must not verify.
use common::forge::{entries, refused, write};

fn manifest(files: &[(String, Vec<u8>)]) -> Map {
    let raw = &files.iter().find(|(n, _)| n == "manifest.json").unwrap().1;
    match palaver::json::parse_bytes(raw).unwrap() {
        Value::Object(m) => m,
        _ => panic!("manifest"),
    }
}

use common::forge::resign;

fn file_mut<'a>(files: &'a mut [(String, Vec<u8>)], name: &str) -> &'a mut Vec<u8> {
    &mut files.iter_mut().find(|(n, _)| n == name).unwrap().1
}

async fn rps_session(data: &Path) -> PathBuf {
    common::played::session(data, "rps-v1", Role::Host, ControlMode::Autonomous, |_| {}).await
}

#[tokio::test]
async fn a_two_party_game_exports_and_verifies_in_both_scopes() {
    let tmp = tempfile::tempdir().unwrap();
    let parent = rps_session(&tmp.path().join("data")).await;
    let key = KeyPair::generate();
    for scope in [Scope::Public, Scope::Participant] {
        let out = tmp.path().join(format!("{}.zip", scope.as_str()));
        let m = export(&parent, &out, scope, &key);
        assert_eq!(m.get_str("scope"), Some(scope.as_str()));
        assert_eq!(m.get_str("protocol_id").map(str::len), Some(64), "{m:?}");
        let v = bundle::verify(&out).unwrap();
        assert_eq!(v.manifest.get_str("bundle_id"), m.get_str("bundle_id"));
        assert_eq!(
            v.manifest.get_str("participant_public_key"),
            Some(key.public_key.as_str())
        );
        let names: Vec<String> = entries(&out).into_iter().map(|(n, _)| n).collect();
        assert!(names.contains(&"evidence/public-events.jsonl".to_owned()));
        assert_eq!(
            names.iter().any(|n| n.starts_with("participant/")),
            scope == Scope::Participant,
            "{names:?}"
        );
        // The session's end is public evidence.
        let public = entries(&out)
            .into_iter()
            .find(|(n, _)| n == "evidence/public-events.jsonl")
            .unwrap()
            .1;
        assert!(String::from_utf8_lossy(&public).contains("session_ended"));
    }
    // An existing output is refused without --force, replaced with it.
    let out = tmp.path().join("public.zip");
    assert!(matches!(
        bundle::export(&parent, &out, Scope::Public, &key, false),
        Err(BundleError::Exists(_))
    ));
    bundle::export(&parent, &out, Scope::Public, &key, true).unwrap();
    // Two-party bundles describe no group: nothing to reconcile.
    let other = tmp.path().join("participant.zip");
    let e = bundle::reconcile(&[&out, &other]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "replay bundles do not describe one group and protocol"
    );
}

/// A room of two palaver members on an in-process server; returns their
/// keys and parent state dirs, after both saw each other's message.
async fn room(tmp: &Path) -> Vec<(KeyPair, PathBuf)> {
    use common::rooms;
    let (url, _server) = rooms::server(&tmp.join("community.sqlite"), 30).await;
    let ada = rooms::who(&url, tmp, "ada").await;
    let bob = rooms::who(&url, tmp, "bob").await;
    let mut host = rooms::host(&ada, ROOM, Map::new()).await;
    let post = host.post.clone().unwrap();
    let mut member = rooms::join(&bob, ROOM, &post);
    let (hdir, mdir) = (host.state_dir().await, member.state_dir().await);
    rooms::say(&mdir, "bob is here");
    rooms::wait_message(&hdir, "bob is here", Duration::from_secs(30)).await;
    rooms::say(&hdir, "ada answers");
    rooms::wait_message(&mdir, "ada answers", Duration::from_secs(30)).await;
    host.stop();
    member.stop();
    let _ = tokio::time::timeout(Duration::from_secs(10), &mut host.task).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), &mut member.task).await;
    vec![
        (ada.client.keys().clone(), hdir),
        (bob.client.keys().clone(), mdir),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_room_verifies_reconciles_and_every_tamper_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let members = room(tmp.path()).await;
    let mut bundles = Vec::new();
    for (i, (key, dir)) in members.iter().enumerate() {
        let out = tmp.path().join(format!("m{i}.zip"));
        let m = export(dir, &out, Scope::Public, key);
        assert!(m.get_str("group_id").is_some(), "{m:?}");
        assert!(m.get("terminal_evidence").is_some_and(Value::truthy));
        let v = bundle::verify(&out).unwrap();
        assert!(v.authority_frames.len() >= 2, "{:?}", v.authority_frames);
        bundles.push(out);
    }
    let report = bundle::reconcile(&bundles).unwrap();
    assert_eq!(
        report
            .get("participants")
            .and_then(Value::as_array)
            .map(Vec::len),
        Some(2)
    );
    assert!(
        report
            .get("authority_conflicts")
            .and_then(Value::as_array)
            .unwrap()
            .is_empty()
    );
    assert_ne!(report.get_str("status"), Some("conflict"), "{report:?}");

    let good = &bundles[0];
    let (ada_key, _) = &members[0];
    let t = |name: &str| tmp.path().join(name);
    let frames = "evidence/authority-frames.jsonl";

    // A byte changed in any file: its hash no longer matches.
    for (name, _) in entries(good) {
        if name == "manifest.json" {
            continue;
        }
        let mut files = entries(good);
        let data = file_mut(&mut files, &name);
        if data.is_empty() {
            data.push(b'\n');
        } else {
            data[0] ^= 0x20;
        }
        write(&t("byte.zip"), &files);
        let f = refused(&t("byte.zip"));
        assert_eq!(f.check, "hash_mismatch", "{name}: {f}");
        assert_eq!(f.reason, format!("replay evidence hash mismatch: {name}"));
        assert_eq!(f.file.as_deref(), Some(name.as_str()));
    }
    // A byte changed in the manifest: its signature (or id) fails.
    let mut files = entries(good);
    let m = file_mut(&mut files, "manifest.json");
    let at = String::from_utf8_lossy(m)
        .find("\"exported_at\":\"")
        .unwrap()
        + 16;
    m[at] = if m[at] == b'1' { b'2' } else { b'1' };
    write(&t("manifest.zip"), &files);
    let f = refused(&t("manifest.zip"));
    assert_eq!(
        (f.check, f.field.as_deref()),
        ("manifest_identity", Some("bundle_id")),
        "{f}"
    );

    // A file removed.
    let mut files = entries(good);
    files.retain(|(n, _)| n != frames);
    write(&t("removed.zip"), &files);
    let f = refused(&t("removed.zip"));
    assert_eq!(f.check, "inventory", "{f}");
    assert!(
        f.reason
            .starts_with("replay manifest file inventory is invalid"),
        "{f}"
    );

    // A file added.
    let mut files = entries(good);
    files.push(("evidence/extra.jsonl".into(), b"{}\n".to_vec()));
    write(&t("added.zip"), &files);
    assert_eq!(refused(&t("added.zip")).check, "inventory");
    // ... and added in place of a listed one: unlisted.
    let mut files = entries(good);
    let data = files.iter().find(|(n, _)| n == frames).unwrap().1.clone();
    files.retain(|(n, _)| n != frames);
    files.push(("evidence/other.jsonl".into(), data));
    write(&t("swapped.zip"), &files);
    let f = refused(&t("swapped.zip"));
    assert_eq!(f.check, "inventory", "{f}");
    assert!(f.reason.contains(frames), "{f}");

    // The manifest re-signed with another key: not a member.
    let stranger = KeyPair::generate();
    let mut files = entries(good);
    resign(&mut files, &stranger);
    write(&t("stranger.zip"), &files);
    let f = refused(&t("stranger.zip"));
    assert_eq!(
        f.reason, "replay signer is not in the recorded membership",
        "{f}"
    );
    // Another member's signature on this member's manifest: invalid.
    let mut files = entries(good);
    let mut m = manifest(&files);
    let (bob_key, _) = &members[1];
    m.insert("signature", Value::from(bob_key.sign(b"something else")));
    *file_mut(&mut files, "manifest.json") = palaver::json::canonical::to_vec(&Value::Object(m));
    write(&t("signature.zip"), &files);
    let f = refused(&t("signature.zip"));
    assert_eq!(
        (f.check, f.reason.as_str()),
        ("signature", "replay manifest signature is invalid")
    );

    // Frame lines reordered: the file's hash fails.
    let mut files = entries(good);
    let data = file_mut(&mut files, frames);
    let mut lines: Vec<&[u8]> = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert!(lines.len() >= 2);
    lines.swap(0, 1);
    *data = lines.join(&b'\n');
    data.push(b'\n');
    write(&t("reordered.zip"), &files);
    let f = refused(&t("reordered.zip"));
    assert_eq!(
        (f.check, f.file.as_deref()),
        ("hash_mismatch", Some(frames)),
        "{f}"
    );

    // A frame's content changed and the manifest re-signed by the member
    // itself: the frame's core hash fails, at its line.
    let mut files = entries(good);
    let data = file_mut(&mut files, frames);
    let text = String::from_utf8(data.clone()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[1] = lines[1].replacen("\"membership_version\":", "\"membership_version\":9", 1);
    *data = format!("{}\n", lines.join("\n")).into_bytes();
    resign(&mut files, ada_key);
    write(&t("edited.zip"), &files);
    let f = refused(&t("edited.zip"));
    assert_eq!(
        (f.check, f.file.as_deref(), f.line, f.field.as_deref()),
        ("frame_hash", Some(frames), Some(2), Some("frame_hash")),
        "{f}"
    );
    // A frame dropped from the chain's middle and the frames after it
    // re-chained would need the leader's key: dropping the first frame's
    // protocol events instead is caught as missing events.
    let mut files = entries(good);
    *file_mut(&mut files, "evidence/protocol-events.jsonl") = Vec::new();
    resign(&mut files, ada_key);
    write(&t("events.zip"), &files);
    let f = refused(&t("events.zip"));
    assert_eq!(
        f.reason, "authority frame protocol events are missing",
        "{f}"
    );
}

/// The temp dir's listing, recursively (to show nothing was written).
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

fn raw_zip(path: &Path, build: impl FnOnce(&mut zip::ZipWriter<std::fs::File>)) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    build(&mut w);
    w.finish().unwrap();
}

fn stored() -> zip::write::SimpleFileOptions {
    zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored)
}

#[test]
fn hostile_zips_are_refused_quickly_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let box_dir = tmp.path().join("box");
    std::fs::create_dir(&box_dir).unwrap();
    let p = |n: &str| box_dir.join(n);

    // A bomb: 40 MiB of zeros declared (over the 32 MiB entry limit).
    raw_zip(&p("bomb.zip"), |w| {
        let o = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .large_file(true);
        w.start_file("evidence/authority-frames.jsonl", o).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..40 {
            w.write_all(&zeros).unwrap();
        }
    });
    // A bomb that lies: 4 MiB of zeros declared as 10 bytes.
    raw_zip(&p("liar.zip"), |w| {
        let o = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        w.start_file("manifest.json", o).unwrap();
        w.write_all(&vec![0u8; 4 << 20]).unwrap();
    });
    patch_sizes(&p("liar.zip"), 10);
    raw_zip(&p("dotdot.zip"), |w| {
        w.start_file("../x", stored()).unwrap();
        w.write_all(b"x").unwrap();
    });
    raw_zip(&p("abs.zip"), |w| {
        w.start_file("/abs", stored()).unwrap();
        w.write_all(b"x").unwrap();
    });
    raw_zip(&p("backslash.zip"), |w| {
        w.start_file("evidence\\x", stored()).unwrap();
        w.write_all(b"x").unwrap();
    });
    raw_zip(&p("symlink.zip"), |w| {
        w.add_symlink("manifest.json", "/etc/passwd", stored())
            .unwrap();
    });
    raw_zip(&p("dir.zip"), |w| {
        w.add_directory("evidence/", stored()).unwrap();
    });
    raw_zip(&p("many.zip"), |w| {
        for i in 0..100_000 {
            w.start_file(format!("f{i}"), stored()).unwrap();
        }
    });
    std::fs::write(p("empty.zip"), b"").unwrap();
    std::fs::write(p("garbage.zip"), vec![0x50u8; 4096]).unwrap();

    let before = listing(tmp.path());
    let cases = [
        ("bomb.zip", "entry_size"),
        ("liar.zip", "actual_size"),
        ("dotdot.zip", "path"),
        ("abs.zip", "path"),
        ("backslash.zip", "path"),
        ("symlink.zip", "symlink"),
        ("dir.zip", "duplicate_or_directory"),
        ("many.zip", "file_count"),
        ("empty.zip", "zip"),
        ("garbage.zip", "zip"),
    ];
    for (name, check) in cases {
        let start = Instant::now();
        let f = refused(&p(name));
        assert_eq!(f.check, check, "{name}: {f}");
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{name} took {:?}",
            start.elapsed()
        );
    }
    assert_eq!(
        refused(&p("many.zip")).reason,
        "replay bundle file count is invalid (100000 entries; 1 to 64 allowed)"
    );
    // A duplicate name (two central directory entries with one name).
    let files = vec![
        ("manifest.json".to_owned(), b"{}".to_vec()),
        ("manifesu.json".to_owned(), b"{}".to_vec()),
    ];
    let mut bytes = archive::zip_bytes(&files).unwrap();
    let at = find_all(&bytes, b"manifesu.json");
    for i in at {
        bytes[i + 7] = b't';
    }
    std::fs::write(p("dup.zip"), bytes).unwrap();
    assert_eq!(refused(&p("dup.zip")).check, "duplicate_or_directory");
    // Nothing was written beside the test's own files (no ../x, no /abs).
    let mut after = listing(tmp.path());
    after.retain(|x| x != &p("dup.zip"));
    assert_eq!(before, after);
    assert!(!tmp.path().join("x").exists());
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    (0..=hay.len() - needle.len())
        .filter(|&i| &hay[i..i + needle.len()] == needle)
        .collect()
}

/// Sets the uncompressed size in every local and central header.
fn patch_sizes(path: &Path, size: u32) {
    let mut b = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut b)
        .unwrap();
    for i in 0..b.len().saturating_sub(4) {
        match &b[i..i + 4] {
            [0x50, 0x4b, 0x03, 0x04] => b[i + 22..i + 26].copy_from_slice(&size.to_le_bytes()),
            [0x50, 0x4b, 0x01, 0x02] => b[i + 24..i + 28].copy_from_slice(&size.to_le_bytes()),
            _ => {}
        }
    }
    std::fs::write(path, b).unwrap();
}

fn palaver(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test]
async fn the_cli_exports_verifies_and_still_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let parent = rps_session(&data).await;
    common::ok(palaver(&data, &["init"]), "palaver init");
    let out = tmp.path().join("b.zip");
    let dir = parent.to_str().unwrap();
    let o = palaver(
        &data,
        &[
            "session",
            "replay",
            "export",
            "--state-dir",
            dir,
            "--output",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    let text = common::ok(o, "export");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["output"], out.canonicalize().unwrap().to_str().unwrap());
    // Again without --force: an error (exit 2).
    let o = palaver(
        &data,
        &[
            "session",
            "replay",
            "export",
            dir,
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let o = palaver(
        &data,
        &[
            "session",
            "replay",
            "verify",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&common::ok(o, "verify")).unwrap();
    assert_eq!(v["status"], "verified");
    // palaver's extension checks: the rounds re-derived, no transcript.
    let checks = &v["extension_checks"];
    assert_eq!(
        (&checks[0]["check"], &checks[0]["status"]),
        (&"commit_reveal".into(), &"passed".into()),
        "{checks}"
    );
    assert!(
        checks[0]["count"].as_u64().is_some_and(|n| n >= 2),
        "{checks}"
    );
    assert_eq!(checks[1]["status"], "not_applicable", "{checks}");
    let o = palaver(
        &data,
        &["session", "replay", "verify", out.to_str().unwrap()],
    );
    let text = common::ok(o, "verify text");
    assert!(text.contains("\ncommit_reveal: passed ("), "{text}");
    assert!(
        text.contains("\ntranscript_root: not applicable ("),
        "{text}"
    );
    // A tampered bundle: exit 1 with the reason.
    let mut files = entries(&out);
    file_mut(&mut files, "evidence/public-events.jsonl")[2] ^= 1;
    let bad = tmp.path().join("bad.zip");
    write(&bad, &files);
    let o = palaver(
        &data,
        &["session", "replay", "verify", bad.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("replay evidence hash mismatch: evidence/public-events.jsonl"),
        "{s}"
    );
    let o = palaver(
        &data,
        &[
            "session",
            "replay",
            "verify",
            bad.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["failure"]["check"], "hash_mismatch");
    // A missing file is an error (exit 2), not a verdict.
    let o = palaver(
        &data,
        &["session", "replay", "verify", "/nonexistent/b.zip"],
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    // Reconcile of two-party bundles: an error, exit 2.
    let o = palaver(
        &data,
        &[
            "session",
            "replay",
            "reconcile",
            out.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    // The timeline replay still answers to `session replay DIR`.
    let o = palaver(&data, &["session", "replay", dir, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&common::ok(o, "replay")).unwrap();
    assert_eq!(v["finished"], true);

    // `session replay BUNDLE`: verified first, then the same timeline from
    // the bundle's own files (a participant bundle carries them).
    let part = tmp.path().join("p.zip");
    let o = palaver(
        &data,
        &[
            "session",
            "replay",
            "export",
            dir,
            "--output",
            part.to_str().unwrap(),
            "--scope",
            "participant",
        ],
    );
    common::ok(o, "export participant");
    let o = palaver(
        &data,
        &["session", "replay", part.to_str().unwrap(), "--json"],
    );
    let from_bundle: serde_json::Value =
        serde_json::from_str(&common::ok(o, "replay bundle")).unwrap();
    assert_eq!(from_bundle["finished"], true);
    assert_eq!(
        from_bundle["steps"].as_array().map(Vec::len),
        v["steps"].as_array().map(Vec::len)
    );
    let o = palaver(&data, &["session", "replay", part.to_str().unwrap()]);
    let text = common::ok(o, "replay bundle text");
    assert!(text.starts_with("[OK] replay bundle verified"), "{text}");
    // A public bundle verifies but has nothing to replay; a tampered one
    // stops at its failed check.
    let o = palaver(&data, &["session", "replay", out.to_str().unwrap()]);
    assert!(common::ok(o, "replay public").contains("carries no session files"));
    let o = palaver(&data, &["session", "replay", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("[FAILED]"));
}

/// `python -m aigenora session replay <args>`; (exit code, stdout, the
/// last stderr line: the reference's refusal as `ValueError: …`).
fn reference(py: &str, data: Option<&Path>, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(py);
    c.args(["-m", "aigenora", "session", "replay"]).args(args);
    if let Some(d) = data {
        c.arg("--data-dir").arg(d);
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.lines().last().unwrap_or_default().to_owned();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        last,
    )
}

/// A reference data dir holding this key (key.json is the same format).
/// Reconciles `paths` with the reference's CLI and with palaver: the same
/// report, and the reference's exit code says ok exactly when palaver's
/// status does. Returns palaver's report.
fn same_reconcile(py: &str, paths: &[PathBuf], what: &str) -> Map {
    let args: Vec<&str> = std::iter::once("reconcile")
        .chain(paths.iter().map(|p| s(p)))
        .chain(["--json"])
        .collect();
    let (code, out, err) = reference(py, None, &args);
    let theirs: serde_json::Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("reference reconcile ({code}): {e}: {err}"));
    let report = bundle::reconcile(paths).unwrap();
    let ours: serde_json::Value =
        serde_json::from_str(&palaver::session::files::pretty(&report)).unwrap();
    assert_eq!(theirs, ours, "reconcile of {what}");
    assert_eq!(code == 0, report.get_str("status") == Some("ok"), "{what}");
    report.as_object().cloned().unwrap_or_default()
}

fn reference_key_dir(root: &Path, name: &str, key: &KeyPair) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("key.json"),
        format!(
            r#"{{"public_key":"{}","private_key":"{}"}}"#,
            key.public_key,
            key.private_hex()
        ),
    )
    .unwrap();
    dir
}

/// The evidence files of a bundle (all but the manifest), without
/// palaver's extension files (the reference writes none).
fn evidence(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut e = entries(path);
    e.retain(|(n, _)| n != "manifest.json" && !bundle::EXTENSION_FILES.contains(&n.as_str()));
    e.sort();
    e
}

/// The manifest's fields that do not depend on who signed or when, its
/// inventory without palaver's extension files.
fn body(path: &Path) -> Map {
    let mut m = manifest(&entries(path));
    for k in [
        "bundle_id",
        "signature",
        "exported_at",
        "participant_public_key",
    ] {
        m.remove(k);
    }
    if let Some(Value::Array(files)) = m.get_mut("files") {
        files.retain(|f| {
            !f.get_str("path")
                .is_some_and(|p| bundle::EXTENSION_FILES.contains(&p))
        });
    }
    m
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Both ways on one state dir: palaver's bundle verifies with the
/// reference (its `--json` report equals palaver's), the reference's with
/// palaver, and both carry the same evidence bytes.
fn cross_check(py: &str, tmp: &Path, tag: &str, state_dir: &Path, key: &KeyPair) {
    let key_dir = reference_key_dir(tmp, &format!("ref-{tag}"), key);
    for scope in ["public", "participant"] {
        let ours = tmp.join(format!("{tag}-{scope}-palaver.zip"));
        let theirs = tmp.join(format!("{tag}-{scope}-reference.zip"));
        let sc = if scope == "public" {
            Scope::Public
        } else {
            Scope::Participant
        };
        export(state_dir, &ours, sc, key);
        let (code, out, err) = reference(py, None, &["verify", s(&ours), "--json"]);
        assert_eq!(
            code, 0,
            "the reference refused palaver's {scope} bundle: {err}"
        );
        let theirs_report: serde_json::Value = serde_json::from_str(&out).unwrap();
        let mut our_report: serde_json::Value = serde_json::from_str(
            &palaver::session::files::pretty(&bundle::verify(&ours).unwrap().to_value()),
        )
        .unwrap();
        // palaver's report is the reference's plus its extension checks.
        let extension = our_report
            .as_object_mut()
            .and_then(|m| m.remove("extension_checks"));
        assert!(extension.is_some_and(|e| e.is_array()), "{tag} {scope}");
        assert_eq!(
            theirs_report, our_report,
            "{tag} {scope}: verify reports differ"
        );

        let (code, _, err) = reference(
            py,
            Some(&key_dir),
            &[
                "export",
                "--state-dir",
                s(state_dir),
                "--output",
                s(&theirs),
                "--scope",
                scope,
            ],
        );
        assert_eq!(code, 0, "reference export: {err}");
        let v = bundle::verify(&theirs)
            .unwrap_or_else(|e| panic!("palaver refused the reference's {scope} bundle: {e}"));
        // The reference writes none of palaver's extension evidence.
        assert!(
            v.extensions.iter().all(|c| !c.ran),
            "{tag} {scope}: {:?}",
            v.extensions
        );
        assert_eq!(
            v.manifest.get_str("participant_public_key"),
            Some(key.public_key.as_str())
        );
        assert_eq!(
            evidence(&ours),
            evidence(&theirs),
            "{tag} {scope}: evidence differs"
        );
        assert_eq!(
            body(&ours),
            body(&theirs),
            "{tag} {scope}: manifests differ"
        );
    }
}

#[tokio::test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON or target/reference-venv)"]
async fn a_two_party_game_crosses_with_the_reference_both_ways() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let parent = rps_session(&tmp.path().join("data")).await;
    let key = KeyPair::generate();
    cross_check(&py, tmp.path(), "rps", &parent, &key);
    // What the reference accepted carries palaver's commit-reveal record.
    for scope in ["public", "participant"] {
        let ours = tmp.path().join(format!("rps-{scope}-palaver.zip"));
        assert!(
            entries(&ours)
                .iter()
                .any(|(n, _)| n == bundle::COMMIT_REVEAL),
            "{scope}"
        );
    }
    // The reference's own state dir (its `protocol test`, stored).
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-state/rps-protocol-test");
    for e in std::fs::read_dir(&fixture).unwrap() {
        let child = e.unwrap().path();
        let tag = child.file_name().unwrap().to_str().unwrap().to_owned();
        cross_check(&py, tmp.path(), &tag, &child, &key);
    }
    // Reconcile: both refuse two-party bundles, for the same reason.
    let a = tmp.path().join("rps-public-palaver.zip");
    let b = tmp.path().join("rps-public-reference.zip");
    let (code, _, err) = reference(&py, None, &["reconcile", s(&a), s(&b)]);
    assert_ne!(code, 0);
    let ours = bundle::reconcile(&[&a, &b]).unwrap_err().to_string();
    assert_eq!(err, format!("ValueError: {ours}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON or target/reference-venv)"]
async fn a_room_crosses_with_the_reference_and_reconcile_agrees() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let members = room(tmp.path()).await;
    for (i, (key, dir)) in members.iter().enumerate() {
        cross_check(&py, tmp.path(), &format!("m{i}"), dir, key);
    }
    // Reconcile agrees: the same report from both, on palaver's bundles
    // and on the reference's.
    for maker in ["palaver", "reference"] {
        let paths: Vec<PathBuf> = (0..members.len())
            .map(|i| tmp.path().join(format!("m{i}-public-{maker}.zip")))
            .collect();
        let report = same_reconcile(&py, &paths, &format!("{maker}'s bundles"));
        eprintln!(
            "reconcile of {maker}'s bundles: {}",
            report.get_str("status").unwrap()
        );
        assert!(report.get("authority_head").is_some_and(Value::truthy));
    }
    // The reference refuses palaver's tamper cases for the same reason.
    let good = tmp.path().join("m0-public-palaver.zip");
    let frames = "evidence/authority-frames.jsonl";
    let mut files = entries(&good);
    file_mut(&mut files, frames)[5] ^= 1;
    let bad = tmp.path().join("tampered.zip");
    write(&bad, &files);
    let (code, _, err) = reference(&py, None, &["verify", s(&bad)]);
    assert_ne!(code, 0);
    assert_eq!(err, format!("ValueError: {}", refused(&bad).reason));
    let mut files = entries(&good);
    resign(&mut files, &KeyPair::generate());
    write(&bad, &files);
    let (_, _, err) = reference(&py, None, &["verify", s(&bad)]);
    assert_eq!(err, format!("ValueError: {}", refused(&bad).reason));
    let mut files = entries(&good);
    let data = file_mut(&mut files, frames);
    let text = String::from_utf8(data.clone()).unwrap();
    *data = text
        .replacen("\"membership_version\":", "\"membership_version\":9", 1)
        .into_bytes();
    resign(&mut files, &members[0].0);
    write(&bad, &files);
    let (_, _, err) = reference(&py, None, &["verify", s(&bad)]);
    assert_eq!(err, format!("ValueError: {}", refused(&bad).reason));
}

/// A state dir whose peer evidence log the reference itself wrote: alice
/// sent bob one signed peer message (grant by the leader, receipt by bob);
/// alice's key.json in `<root>/alice`. Returns (state dir, alice's dir).
fn reference_peer_log(py: &str, root: &Path) -> (PathBuf, PathBuf) {
    let state = root.join("peer-state");
    let alice = root.join("alice");
    let script = r#"
import json, sys, secrets
from pathlib import Path
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization as s
from aigenora.engine.keys import KeyPair, sign_raw
from aigenora.proto.group import canonical_json, json_hash
from aigenora.proto.group_peer import build_peer_message, build_peer_receipt, PeerEvidenceLog

def kp():
    k = Ed25519PrivateKey.generate()
    priv = k.private_bytes(s.Encoding.Raw, s.PrivateFormat.Raw, s.NoEncryption()).hex()
    pub = k.public_key().public_bytes(s.Encoding.Raw, s.PublicFormat.Raw).hex()
    return KeyPair(public_key=pub, private_key=priv)

state, alice_dir = Path(sys.argv[1]), Path(sys.argv[2])
state.mkdir(parents=True); alice_dir.mkdir(parents=True)
leader, alice, bob = kp(), kp(), kp()
(alice_dir / "key.json").write_text(json.dumps({"public_key": alice.public_key, "private_key": alice.private_key}))
(state / "session.json").write_text(json.dumps({"session_id": "peer-test"}))
ctx = dict(group_id="g1", protocol_id="a" * 64, leader_public_key=leader.public_key,
           leader_epoch=1, authority_seq=4, membership_version=2)
grant_body = {"wire_version": 1, **ctx, "sender_public_key": alice.public_key,
              "recipient_public_key": bob.public_key, "recipient_ticket_hash": "b" * 64,
              "channels": ["whisper"]}
grant = {**grant_body, "signature": sign_raw(leader.private_key, canonical_json(grant_body))}
log = PeerEvidenceLog(state)
for text in ["first", "second"]:
    message = build_peer_message(**ctx, message_id=secrets.token_hex(16), sender_keypair=alice,
        recipient_public_key=bob.public_key, channel="whisper", payload={"text": text},
        grant=grant, max_message_bytes=65536)
    envelope = json_hash(message)
    receipt = build_peer_receipt(message=message, envelope_hash=envelope, status="accepted",
                                 recipient_keypair=bob)
    log.append(direction="sent", group_id="g1", protocol_id="a" * 64, leader_epoch=1,
               authority_seq=4, message_id=message["message_id"], envelope_hash=envelope,
               peer_public_key=bob.public_key, channel="whisper", message=message, receipt=receipt)
"#;
    let o = Command::new(py)
        .args(["-c", script])
        .arg(&state)
        .arg(&alice)
        .output()
        .unwrap();
    common::ok(o, "the reference's peer evidence log");
    (state, alice)
}

#[test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON or target/reference-venv)"]
fn peer_evidence_crosses_with_the_reference_and_a_forged_message_is_named() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let (state, alice_dir) = reference_peer_log(&py, tmp.path());
    let alice = KeyPair::load(&alice_dir).unwrap();
    cross_check(&py, tmp.path(), "peer", &state, &alice);
    let ours = tmp.path().join("peer-participant-palaver.zip");
    let v = bundle::verify(&ours).unwrap();
    assert_eq!(v.peer_index.len(), 2);

    // The second message's payload changed, the log re-chained and the
    // manifest re-signed by alice: the sender's signature fails.
    let log = "participant/state/group-peer-evidence.jsonl";
    let mut files = entries(&ours);
    let text = String::from_utf8(file_mut(&mut files, log).clone()).unwrap();
    let mut records: Vec<Map> = text
        .lines()
        .map(|l| match palaver::json::parse_str(l).unwrap() {
            Value::Object(m) => m,
            _ => panic!(),
        })
        .collect();
    let mut message = records[1]
        .get("message")
        .unwrap()
        .as_object()
        .unwrap()
        .clone();
    let mut payload = Map::new();
    payload.insert("text", Value::from("forged"));
    message.insert("payload", Value::Object(payload));
    records[1].insert("message", Value::Object(message));
    records[1].remove("record_hash");
    let h = palaver::engine::group::core::json_hash(&Value::Object(records[1].clone())).unwrap();
    records[1].insert("record_hash", Value::from(h));
    let mut out = Vec::new();
    for r in &records {
        out.extend(
            palaver::json::canonical::to_string_ordered(&Value::Object(r.clone())).into_bytes(),
        );
        out.push(b'\n');
    }
    *file_mut(&mut files, log) = out;
    resign(&mut files, &alice);
    let bad = tmp.path().join("forged.zip");
    write(&bad, &files);
    let f = refused(&bad);
    assert_eq!(
        (
            f.reason.as_str(),
            f.file.as_deref(),
            f.line,
            f.field.as_deref()
        ),
        (
            "participant peer evidence signature is invalid",
            Some(log),
            Some(2),
            Some("message.signature")
        ),
        "{f}"
    );
    let (code, _, err) = reference(&py, None, &["verify", s(&bad)]);
    assert_ne!(code, 0);
    assert_eq!(err, format!("ValueError: {}", f.reason));
}

/// A whole four-seat table (four-player landlord) over iroh through a real
/// `palaver serve`: a palaver host with two bots and a palaver member.
/// Returns each player's key and state dir.
fn table(tmp: &Path) -> (Vec<(KeyPair, PathBuf)>, common::Serve) {
    let (serve, url) = common::palaver_serve(&tmp.join("db.sqlite"), &["--rate-limit", "0"]);
    let cmd = |who: &str, args: &[&str]| {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(tmp.join(who))
            .arg("--server")
            .arg(&url)
            .args(args)
            .stdin(std::process::Stdio::null());
        c
    };
    for who in ["h", "g"] {
        common::ok(cmd(who, &["init"]).output().unwrap(), "init");
        common::ok(
            cmd(who, &["register", "--nickname", who]).output().unwrap(),
            "register",
        );
    }
    let options = r#"{"deal_seed":"bundle"}"#;
    let mut k = common::Kill(
        cmd(
            "h",
            &[
                "host",
                "four-player-landlord-v1",
                "--direct",
                "--control-mode",
                "autonomous",
                "--options",
                options,
                "--bots",
                "2",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap(),
    );
    let mut out = std::io::BufReader::new(k.0.stdout.take().unwrap());
    let mut seen = String::new();
    let post = common::read_until(&mut out, "post_id:", &mut seen);
    let joined = cmd(
        "g",
        &["join", &post, "--direct", "--control-mode", "autonomous"],
    )
    .output()
    .unwrap();
    let gseen = common::ok(joined, "join");
    let hseen = common::finish(k, out, seen, "host", Duration::from_secs(90));
    let players = [("h", hseen), ("g", gseen)]
        .into_iter()
        .map(|(who, printed)| {
            (
                KeyPair::load(&tmp.join(who)).unwrap(),
                common::played::printed_state_dir(&printed),
            )
        })
        .collect();
    (players, serve)
}

#[test]
fn a_four_seat_table_exports_verifies_and_reconciles() {
    let tmp = tempfile::tempdir().unwrap();
    let (players, _serve) = table(tmp.path());
    let mut bundles = Vec::new();
    for (i, (key, dir)) in players.iter().enumerate() {
        let out = tmp.path().join(format!("seat{i}.zip"));
        let m = export(dir, &out, Scope::Participant, key);
        let t = m.get("terminal_evidence").unwrap();
        assert_eq!(t.get("completed"), Some(&Value::Bool(true)), "{t:?}");
        assert!(bundle::verify(&out).unwrap().authority_frames.len() > 10);
        bundles.push(out);
    }
    let report = bundle::reconcile(&bundles).unwrap();
    assert_eq!(report.get("terminal_conflict"), Some(&Value::Bool(false)));
    assert!(
        report
            .get("authority_conflicts")
            .and_then(Value::as_array)
            .unwrap()
            .is_empty()
    );
    assert!(
        report
            .get("incomplete_terminal_participants")
            .and_then(Value::as_array)
            .unwrap()
            .is_empty(),
        "{report:?}"
    );
}

#[test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON or target/reference-venv)"]
fn a_four_seat_table_crosses_with_the_reference_and_reconcile_agrees() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let (players, _serve) = table(tmp.path());
    for (i, (key, dir)) in players.iter().enumerate() {
        cross_check(&py, tmp.path(), &format!("seat{i}"), dir, key);
    }
    for maker in ["palaver", "reference"] {
        let paths: Vec<PathBuf> = (0..players.len())
            .map(|i| tmp.path().join(format!("seat{i}-participant-{maker}.zip")))
            .collect();
        same_reconcile(&py, &paths, &format!("{maker}'s table bundles"));
    }
}

/// A mental-poker match (crazy-eights-v1): palaver's host state dir from
/// `palaver protocol test --role host`, and both of the reference's own
/// state dirs from its `protocol test` (written under its TMPDIR), cross
/// both ways.
#[test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON or target/reference-venv)"]
fn a_mental_poker_match_crosses_with_the_reference_both_ways() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let ours = common::played::crazy_eights(&tmp.path().join("data"));
    assert!(
        ours.join("transcript_receipt.json").is_file()
            || std::fs::read_dir(&ours)
                .unwrap()
                .flatten()
                .any(|e| e.path().join("transcript_receipt.json").is_file()),
        "a mental-poker state dir keeps its transcript receipt"
    );
    let key = KeyPair::generate();
    cross_check(&py, tmp.path(), "mp", &ours, &key);
    // What the reference accepted carries palaver's transcript and receipt.
    let names: Vec<String> = entries(&tmp.path().join("mp-participant-palaver.zip"))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for f in [bundle::MP_TRANSCRIPT, bundle::MP_RECEIPT] {
        assert!(names.iter().any(|n| n == f), "{f}: {names:?}");
    }
    // The reference's own match.
    let lib = Command::new(&py)
        .args([
            "-c",
            "import aigenora, os; print(os.path.dirname(aigenora.__file__))",
        ])
        .output()
        .unwrap();
    let pkg = PathBuf::from(String::from_utf8_lossy(&lib.stdout).trim());
    let spec_dir = std::fs::read_dir(pkg.join("protocols"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|d| d.path())
        .find(|d| {
            std::fs::read_to_string(d.join("spec.json"))
                .is_ok_and(|t| t.contains("\"name\": \"Crazy Eights\""))
        })
        .expect("the reference bundles crazy-eights");
    let ref_tmp = tmp.path().join("ref-tmp");
    std::fs::create_dir_all(&ref_tmp).unwrap();
    let o = Command::new(&py)
        .args(["-m", "aigenora", "protocol", "test"])
        .arg(&spec_dir)
        .env("TMPDIR", &ref_tmp)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the reference's protocol test: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let sides: Vec<PathBuf> = std::fs::read_dir(ref_tmp.join("aigenora-sessions"))
        .expect("the reference writes its sessions under TMPDIR/aigenora-sessions")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(sides.len(), 2, "{sides:?}");
    for side in sides {
        let tag = side.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(side.join("transcript_receipt.json").is_file(), "{tag}");
        cross_check(&py, tmp.path(), &tag, &side, &key);
    }
}

/// A werewolf game's .log as palaver's own bundle kind: exported and
/// verified by the CLI (text and --json), replayed from the bundle, the
/// log changed under its manifest refused by its hash, the log changed and
/// the manifest re-signed by its forger refused because the log no longer
/// says what the terminal evidence records, and the reference's verifier
/// refusing the kind it does not know (it has no werewolf bundles).
#[test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON or target/reference-venv)"]
fn a_werewolf_game_log_bundles_verifies_and_replays() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    assert!(palaver(&data, &["init"]).status.success());
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/aiwolf/v0.4.12_5p_abort_after_timeout_game.log");
    let out = tmp.path().join("wolf.zip");
    let o = palaver(
        &data,
        &[
            "--json",
            "session",
            "replay",
            "export",
            s(&log),
            "--output",
            s(&out),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = palaver::json::parse_bytes(&o.stdout).unwrap();
    assert_eq!(
        m.get_str("bundle_kind"),
        Some(palaver::werewolf::bundle::KIND)
    );
    let o = palaver(
        &data,
        &[
            "session",
            "replay",
            "export",
            s(&log),
            "--output",
            s(&out),
            "--force",
            "--scope",
            "participant",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "participant scope refused");
    assert!(String::from_utf8_lossy(&o.stderr).contains("is public"));

    let o = palaver(&data, &["--json", "session", "replay", "verify", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let v = palaver::json::parse_bytes(&o.stdout).unwrap();
    assert_eq!(v.get_str("status"), Some("verified"));
    let te = v.get("terminal_evidence").unwrap();
    assert!(te.get("steps").and_then(Value::as_i64) > Some(10), "{te:?}");
    let o = palaver(&data, &["session", "replay", s(&out), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tl = palaver::json::parse_bytes(&o.stdout).unwrap();
    assert_eq!(tl.get("werewolf"), Some(&Value::Bool(true)));

    // A byte of the log changed under the signed inventory.
    let mut files = entries(&out);
    let body = file_mut(&mut files, palaver::werewolf::bundle::LOG);
    let cut = body.iter().rposition(|b| *b == b'\n').unwrap();
    body.truncate(cut);
    let cut = body.iter().rposition(|b| *b == b'\n').unwrap();
    body.truncate(cut + 1);
    let tampered = tmp.path().join("tampered.zip");
    write(&tampered, &files);
    let o = palaver(
        &data,
        &["--json", "session", "replay", "verify", s(&tampered)],
    );
    assert_eq!(o.status.code(), Some(1));
    let f = palaver::json::parse_bytes(&o.stdout).unwrap();
    assert_eq!(
        f.get("failure").and_then(|f| f.get_str("check")),
        Some("hash_mismatch"),
        "{f:?}"
    );
    // The forger re-signs: the inventory holds, the story does not.
    resign(&mut files, &KeyPair::generate());
    write(&tampered, &files);
    match palaver::werewolf::bundle::verify(&tampered) {
        Err(BundleError::Failed(f)) => {
            assert_eq!(f.check, "terminal", "{f}");
            assert!(
                f.field
                    .as_deref()
                    .unwrap()
                    .starts_with("terminal_evidence."),
                "{f}"
            );
        }
        other => panic!(
            "a re-signed shorter log verified: {:?}",
            other.map(|v| v.manifest)
        ),
    }
    // The reference has no such kind: it refuses the manifest's identity.
    let (code, _, err) = reference(&py, None, &["verify", s(&out)]);
    assert_ne!(code, 0);
    assert!(err.contains("identity"), "{err}");
}
