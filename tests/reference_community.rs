//! The reference client (aigenora 0.1.4, a Python process) against
//! `palaver serve`: registration with its proof of work, protocol
//! registration and fetch, invitations with transport bindings, session
//! proofs and their session_id, closing, ratings — and palaver's CLI
//! reading what the reference wrote.

use crate::common;

use palaver::json::{self, Value};
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

fn ok(o: Output, what: &str) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{what} failed: {out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
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

fn aigenora(py: &str, dir: &Path, url: &str, args: &[&str]) -> Output {
    let mut c = Command::new(py);
    c.args(["-m", "aigenora"]).args(args);
    if args[0] != "init" {
        c.arg("--server").arg(url);
    }
    c.arg("--data-dir").arg(dir).output().unwrap()
}

fn peer(py: &str, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/community_peer.py");
    ok(
        Command::new(py).arg(script).args(args).output().unwrap(),
        &format!("community_peer.py {args:?}"),
    )
    .trim()
    .to_owned()
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn reference_client_against_palaver_serve() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let (r, p) = (tmp.path().join("reference"), tmp.path().join("palaver"));

    let (_serve, url) =
        common::palaver_serve(&tmp.path().join("community.sqlite"), &["--difficulty", "1"]);

    // Identities: the reference's own init/register, palaver's likewise.
    ok(aigenora(&py, &r, &url, &["init"]), "aigenora init");
    let out = ok(
        aigenora(&py, &r, &url, &["register", "--nickname", "refhost"]),
        "aigenora register",
    );
    assert!(out.contains("registered"), "{out}");
    ok(palaver(&p, &url, &["init"]), "palaver init");
    ok(
        palaver(&p, &url, &["register", "--nickname", "palguest"]),
        "palaver register",
    );

    // The reference registers rps; palaver sees the same protocol_id taken.
    let spec = ok(
        palaver(&p, &url, &["protocol", "path", "rps-v1"]),
        "protocol path",
    )
    .trim()
    .to_owned();
    let out = ok(
        aigenora(
            &py,
            &r,
            &url,
            &["protocol", "register", &format!("{spec}/spec.json")],
        ),
        "aigenora protocol register",
    );
    let pid = ok(
        palaver(&p, &url, &["protocol", "hash", "rps-v1"]),
        "protocol hash",
    )
    .trim()
    .to_owned();
    assert!(out.contains(&pid) && out.contains("registered"), "{out}");
    let out = ok(
        palaver(&p, &url, &["protocol", "register", "rps-v1"]),
        "palaver protocol register",
    );
    assert!(out.starts_with("Already registered"), "{out}");
    let out = ok(
        aigenora(&py, &r, &url, &["protocol", "fetch", &pid]),
        "aigenora protocol fetch",
    );
    assert!(out.contains(&pid), "{out}");

    // An invitation made by the reference's code, listed by both clients.
    let post = peer(&py, &["invite", &url, r.to_str().unwrap(), &pid]);
    let out = ok(
        palaver(&p, &url, &["--json", "browse", "--protocol-id", &pid]),
        "palaver browse",
    );
    let list = json::parse_str(&out).unwrap();
    let inv = list
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i.get("post_id").and_then(Value::as_str) == Some(&post))
        .expect("invitation listed");
    assert_eq!(inv.get("nickname").and_then(Value::as_str), Some("refhost"));
    let out = ok(aigenora(&py, &r, &url, &["browse"]), "aigenora browse");
    assert!(out.contains(&post), "{out}");

    // A session proof signed by the reference code with palaver's key file.
    let sid = peer(
        &py,
        &[
            "session",
            &url,
            r.to_str().unwrap(),
            p.to_str().unwrap(),
            &post,
            &pid,
        ],
    );
    let rec = json::parse_str(&ok(
        palaver(&p, &url, &["--json", "session", "get", &sid]),
        "session get",
    ))
    .unwrap();
    assert_eq!(
        rec.get("status").and_then(Value::as_str),
        Some("matched"),
        "{rec:?}"
    );

    // The reference closes it; palaver's second close is refused with 409.
    assert_eq!(
        peer(&py, &["close", &url, r.to_str().unwrap(), &sid, "closed"]),
        "200"
    );
    let o = palaver(&p, &url, &["session", "status", &sid, "failed"]);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("409"),
        "{o:?}"
    );

    // Ratings from both sides, each once.
    ok(
        palaver(&p, &url, &["rating", "--session-id", &sid, "--score", "5"]),
        "palaver rating",
    );
    let out = ok(
        aigenora(
            &py,
            &r,
            &url,
            &[
                "rating",
                "--session-id",
                &sid,
                "--score",
                "4",
                "--comment",
                "good game",
            ],
        ),
        "aigenora rating",
    );
    assert!(out.contains("recorded"), "{out}");
    let o = palaver(&p, &url, &["rating", "--session-id", &sid, "--score", "1"]);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("409"),
        "{o:?}"
    );
}
