//! The community beyond sessions against the reference client (aigenora
//! 0.1.4, a Python process): its `inbox`, `karma`, `elo`, `registry`,
//! `trust` and `protocol discover` commands against `palaver serve`,
//! sealed messages both ways between palaver's CLI and the reference's,
//! and palaver's `trust_score` against the reference's on generated edge
//! sets.
//!
//! Needs `PALAVER_REFERENCE_PYTHON` (scripts/test sets it). The tests are
//! `#[ignore]`d: run them with `-- --include-ignored`; there a missing
//! reference is a failure, never a skip.

use crate::common;

use common::rng::Rng;

use common::{aigenora, ok};
use palaver::community::trust::{self, Snapshot};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

/// A weight: karma-like, small odd (halves at hop 1), multiples of 2 and 4
/// (halves at hops 2 and 3), negative (distrust), now and then a float.
fn weight(r: &mut Rng) -> String {
    let sign = if r.below(3) == 0 { -1 } else { 1 };
    match r.below(7) {
        0 => (sign * r.range(100, 500)).to_string(),
        1 => (sign * (2 * r.range(0, 20) + 1)).to_string(),
        2 => (sign * (4 * r.range(0, 20) + 2)).to_string(),
        3 => (sign * (8 * r.range(0, 20) + 4)).to_string(),
        4 => (sign * r.range(0, 3)).to_string(),
        5 => format!("{}.{}", sign * r.range(0, 9), r.range(0, 99)),
        _ => (sign * r.range(0, 1_000_000)).to_string(),
    }
}

/// A snapshot's text: `n` agents, `m` edges among them (self-loops,
/// duplicates and cycles included).
fn snapshot(r: &mut Rng, n: u64, m: u64) -> String {
    let edges: Vec<String> = (0..m)
        .map(|_| {
            format!(
                r#"{{"truster":"n{}","trustee":"n{}","weight":{}}}"#,
                r.below(n),
                r.below(n),
                weight(r)
            )
        })
        .collect();
    format!(
        r#"{{"meta":{{"snapshot_date":"2026-12-05"}},"trust_edges":[{}]}}"#,
        edges.join(",")
    )
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn trust_score_matches_the_reference_on_generated_edge_sets() {
    let py = common::reference_python();
    let mut r = Rng(0x5eed_7a1e_u64 | 1);
    let mut cases = Vec::new();
    for i in 0..400u64 {
        let (n, m) = match i % 4 {
            0 => (2 + r.below(3), r.below(8)),
            1 => (3 + r.below(6), r.below(25)),
            2 => (10 + r.below(30), 20 + r.below(200)),
            _ => (5 + r.below(10), r.below(60)),
        };
        let text = snapshot(&mut r, n, m);
        // Now and then an agent no edge names.
        let target = if r.below(10) == 0 {
            "nobody".to_owned()
        } else {
            format!("n{}", r.below(n))
        };
        let depth = r.below(8) as u32;
        cases.push((text, target, depth));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/reference/trust_oracle.py"
    );
    let mut child = Command::new(&py)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the trust oracle");
    let mut stdin = child.stdin.take().unwrap();
    let lines: Vec<String> = cases
        .iter()
        .map(|(text, target, depth)| {
            serde_json::json!({ "snapshot": text, "target": target, "depth": depth }).to_string()
        })
        .collect();
    let writer = std::thread::spawn(move || {
        for l in lines {
            writeln!(stdin, "{l}").unwrap();
        }
    });
    let answers: Vec<serde_json::Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success(), "the oracle failed");
    assert_eq!(answers.len(), cases.len());
    let mut ties = 0;
    for ((text, target, depth), want) in cases.iter().zip(&answers) {
        let s = Snapshot::parse(text.as_bytes()).unwrap();
        let got = trust::trust_score(target, &s.edges, *depth, trust::DECAY);
        let got = serde_json::to_value(&got).unwrap();
        assert_eq!(
            &got, want,
            "trust_score({target}, depth {depth}) differs on {text}"
        );
        // A case with a half to round: an odd weight one hop from the target.
        ties += usize::from(s.edges.iter().any(|e| {
            e.trustee == *target && e.weight % 2 != 0 && e.truster != *target && *depth > 0
        }));
    }
    assert!(ties > 50, "few cases with halves: {ties}");
}

fn palaver(dir: &Path, url: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .arg("--server")
        .arg(url)
        .args(args)
        .output()
        .unwrap()
}

fn reference(py: &str, dir: &Path, url: &str, args: &[&str]) -> Output {
    aigenora(py, url, dir, args).output().unwrap()
}

fn json_of(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn key_of(dir: &Path) -> String {
    let v = json_of(&std::fs::read_to_string(dir.join("key.json")).unwrap());
    v["public_key"].as_str().unwrap().to_owned()
}

/// Message `id`'s ciphertext, fetched as `owner`, opened with `other`'s key
/// by the reference's code: `opened` or `refused …`.
fn peek(py: &str, url: &str, owner: &Path, other: &Path, id: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/inbox_peek.py");
    let o = Command::new(py)
        .arg(script)
        .args([url, owner.to_str().unwrap(), other.to_str().unwrap(), id])
        .output()
        .unwrap();
    ok(o, "inbox_peek.py").trim().to_owned()
}

fn failed(o: &Output) -> String {
    assert!(
        !o.status.success(),
        "expected a failure, got: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn the_reference_social_commands_work_against_palaver_serve() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let (p, r, third) = (
        tmp.path().join("palaver"),
        tmp.path().join("reference"),
        tmp.path().join("third"),
    );
    let (_serve, url) =
        common::palaver_serve(&tmp.path().join("community.sqlite"), &["--difficulty", "1"]);
    ok(palaver(&p, &url, &["init"]), "palaver init");
    ok(
        palaver(&p, &url, &["register", "--nickname", "pal"]),
        "palaver register",
    );
    common::reference_identity(&py, &url, &r, "refb");
    common::reference_identity(&py, &url, &third, "refc");
    let (pk, rk) = (key_of(&p), key_of(&r));

    // palaver → reference: palaver seals, the reference opens.
    let text = "palaver to the reference: ☃ \"quoted\" and a\nnewline";
    let sent = json_of(&ok(
        palaver(
            &p,
            &url,
            &["--json", "inbox", "send", "--to", &rk, "--message", text],
        ),
        "palaver inbox send",
    ));
    let id_num = sent["id"].as_i64().unwrap();
    let id = id_num.to_string();
    let outbox = std::fs::read_to_string(p.join("outbox.jsonl")).unwrap();
    let line = json_of(outbox.lines().last().unwrap());
    assert_eq!(line["to"], rk.as_str());
    assert_eq!(line["message"], text);
    assert_eq!(line["id"].as_i64(), Some(id_num));
    assert!(line["ts"].as_str().unwrap().ends_with("+00:00"), "{line}");
    let list = json_of(&ok(
        reference(&py, &r, &url, &["inbox", "list", "--json"]),
        "aigenora inbox list",
    ));
    assert!(
        list["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"].as_i64() == Some(id_num)),
        "{list}"
    );
    let out = ok(
        reference(&py, &r, &url, &["inbox", "read", &id]),
        "aigenora inbox read",
    );
    assert_eq!(out.trim_end_matches('\n'), text);
    // A third identity can neither list nor read it.
    let err = failed(&reference(&py, &third, &url, &["inbox", "read", &id]));
    assert!(!err.contains("quoted"), "{err}");
    let third_list = json_of(&ok(
        reference(&py, &third, &url, &["inbox", "list", "--json"]),
        "third inbox list",
    ));
    assert_eq!(third_list["entries"].as_array().unwrap().len(), 0);
    // Even holding the ciphertext, another key cannot open it; the owner's can.
    assert!(peek(&py, &url, &r, &third, &id).starts_with("refused"));
    assert_eq!(peek(&py, &url, &r, &r, &id), "opened");

    // reference → palaver.
    let back = "the reference to palaver: 你好";
    ok(
        reference(
            &py,
            &r,
            &url,
            &["inbox", "send", "--to", &pk, "--message", back],
        ),
        "aigenora inbox send",
    );
    let page = json_of(&ok(
        palaver(&p, &url, &["--json", "inbox", "list"]),
        "palaver inbox list",
    ));
    let e = &page["entries"][0];
    assert_eq!(e["sender_public_key"], rk.as_str());
    assert_eq!(e["read"], false);
    let back_id = e["id"].as_i64().unwrap().to_string();
    let shown = ok(palaver(&p, &url, &["inbox", "list"]), "palaver inbox list");
    assert!(shown.contains('*') && shown.contains(&rk[..16]), "{shown}");
    let opened = ok(
        palaver(&p, &url, &["inbox", "read", &back_id]),
        "palaver inbox read",
    );
    assert!(opened.contains(back) && opened.contains(&rk), "{opened}");
    let opened = json_of(&ok(
        palaver(&p, &url, &["--json", "inbox", "read", &back_id]),
        "palaver inbox read --json",
    ));
    assert_eq!(opened["plaintext"], back);
    let err = failed(&palaver(&third, &url, &["inbox", "read", &back_id]));
    assert!(!err.contains(back), "{err}");
    assert!(peek(&py, &url, &p, &third, &back_id).starts_with("refused"));
    assert!(peek(&py, &url, &p, &r, &back_id).starts_with("refused"));
    let export = tmp.path().join("export.json");
    ok(
        palaver(
            &p,
            &url,
            &["inbox", "export", "--out", export.to_str().unwrap()],
        ),
        "palaver inbox export",
    );
    let exported = json_of(&std::fs::read_to_string(&export).unwrap());
    assert_eq!(exported[0]["plaintext"], back);

    // The reference's delete and clear.
    ok(
        reference(&py, &r, &url, &["inbox", "delete", &id]),
        "aigenora inbox delete",
    );
    for m in ["one", "two"] {
        ok(
            palaver(&p, &url, &["inbox", "send", "--to", &rk, "--message", m]),
            "palaver inbox send",
        );
    }
    let out = ok(
        reference(&py, &r, &url, &["inbox", "clear"]),
        "aigenora inbox clear",
    );
    assert!(out.contains("cleared 2"), "{out}");
    let out = ok(
        reference(&py, &r, &url, &["inbox", "export", "--json"]),
        "aigenora inbox export",
    );
    assert_eq!(json_of(&out)["exported"], 0);

    // Karma and ELO, by the reference and by palaver.
    for args in [
        &["karma", "show"][..],
        &["karma", "show", "--public-key", &pk],
        &["karma", "leaderboard", "--limit", "5"],
        &["elo", "show"],
        &["elo", "show", "--public-key", &pk],
    ] {
        let out = ok(
            reference(&py, &r, &url, args),
            &format!("aigenora {args:?}"),
        );
        assert!(
            out.contains("agent:") || out.contains("leaderboard"),
            "{out}"
        );
    }
    let karma = json_of(&ok(
        reference(
            &py,
            &r,
            &url,
            &["karma", "show", "--json", "--public-key", &pk],
        ),
        "aigenora karma show --json",
    ));
    let mine = json_of(&ok(
        palaver(&p, &url, &["--json", "karma", "show"]),
        "palaver karma show",
    ));
    assert_eq!(karma["karma"], mine["karma"]);
    assert_eq!(mine["public_key"], pk.as_str());
    let elo = json_of(&ok(
        palaver(&p, &url, &["--json", "elo", "show", "--public-key", &rk]),
        "palaver elo show",
    ));
    assert_eq!(elo["rating"], 1200);

    // Capabilities both ways.
    ok(
        reference(
            &py,
            &r,
            &url,
            &[
                "registry",
                "set",
                "--capabilities",
                r#"["translation","review"]"#,
            ],
        ),
        "aigenora registry set",
    );
    let caps = json_of(&ok(
        palaver(
            &p,
            &url,
            &["--json", "registry", "get", "--public-key", &rk],
        ),
        "palaver registry get",
    ));
    assert_eq!(
        caps["capabilities"],
        serde_json::json!(["translation", "review"])
    );
    ok(
        palaver(
            &p,
            &url,
            &[
                "registry",
                "set",
                "--capabilities",
                r#"["poker.v1:dealer"]"#,
            ],
        ),
        "palaver registry set",
    );
    let out = ok(
        reference(&py, &r, &url, &["registry", "get", "--public-key", &pk]),
        "aigenora registry get",
    );
    assert!(out.contains("poker.v1:dealer"), "{out}");

    // The web of trust: the reference fetches palaver's snapshot, and so
    // does palaver, which caches it.
    let f = json_of(&ok(
        reference(&py, &r, &url, &["trust", "fetch", "--json"]),
        "aigenora trust fetch",
    ));
    assert_eq!(f["status"], "fresh", "{f}");
    let date = f["meta"]["snapshot_date"].as_str().unwrap().to_owned();
    let s = json_of(&ok(
        reference(&py, &r, &url, &["trust", "show", &pk, "--json"]),
        "aigenora trust show",
    ));
    assert_eq!(s["score"], 0);
    let out = ok(
        reference(&py, &r, &url, &["trust", "edges"]),
        "aigenora trust edges",
    );
    assert!(out.contains("total edges"), "{out}");
    let mine = json_of(&ok(
        palaver(&p, &url, &["--json", "trust", "fetch"]),
        "palaver trust fetch",
    ));
    assert_eq!(mine["status"], "fresh", "{mine}");
    assert_eq!(mine["edges_count"], f["edges_count"]);
    assert!(p.join(format!("trust-cache/trust-{date}.json")).exists());
    let shown = json_of(&ok(
        palaver(&p, &url, &["--json", "trust", "show", &rk, "--depth", "3"]),
        "palaver trust show",
    ));
    assert_eq!(shown["score"], 0);
    ok(
        palaver(&p, &url, &["trust", "edges"]),
        "palaver trust edges",
    );

    // The protocol directory: palaver registers, both discover it.
    ok(
        palaver(&p, &url, &["protocol", "register", "rps-v1"]),
        "palaver protocol register",
    );
    let rps = ok(palaver(&p, &url, &["protocol", "hash", "rps-v1"]), "hash")
        .trim()
        .to_owned();
    let found = json_of(&ok(
        reference(&py, &r, &url, &["protocol", "discover", "--json"]),
        "aigenora protocol discover",
    ));
    assert!(found.to_string().contains(&rps), "{found}");
    let out = ok(
        reference(
            &py,
            &r,
            &url,
            &["protocol", "discover", "-q", "rock", "--fetch"],
        ),
        "aigenora protocol discover --fetch",
    );
    assert!(out.contains("1 match"), "{out}");
    let mine = json_of(&ok(
        palaver(
            &p,
            &url,
            &["--json", "protocol", "discover", "-q", "rock", "--fetch"],
        ),
        "palaver protocol discover",
    ));
    assert_eq!(mine["results"][0]["protocol_id"], rps.as_str());
    assert_eq!(mine["fetched"]["protocol_id"], rps.as_str());
}
