//! Protocols whose hooks are a `hooks.py` written on the reference client's
//! SDK, run by palaver through its bridge (assets/hooks/aigenora_bridge.py)
//! against the real reference client over iroh, introduced by
//! `palaver serve`. The reference's own rps-v1, guess-number-v1 and
//! gomoku-v1 directories, each with one timing value changed
//! (tests/hooks_bridge/make_dirs.py) so that no native hooks match their new
//! ids, play to the end both ways: palaver hosts the directory and the
//! reference joins; the reference hosts and palaver joins after fetching
//! the protocol from the server (a scaffold first, then the reference's
//! hooks.py dropped over it, as a user would). Then hooks.py files that
//! raise, hang, print garbage or exit mid-session end the session with a
//! reason. The Python of the bridge is the reference venv
//! (`PALAVER_HOOKS_PYTHON`).

use crate::common;

use common::{Kill, ok, read_until};
use palaver::json::{self, Value};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

struct World {
    py: String,
    url: String,
    db: PathBuf,
    pal: PathBuf,
    refd: PathBuf,
    /// The three changed protocol dirs, by short name.
    dirs: PathBuf,
    ids: Value,
    _tmp: tempfile::TempDir,
    _serve: common::Serve,
}

impl World {
    fn new() -> World {
        let py = common::reference_python();
        let tmp = tempfile::tempdir().unwrap();
        let dirs = tmp.path().join("protocols");
        let ids = ok(
            Command::new(&py)
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hooks_bridge/make_dirs.py"))
                .arg(&py)
                .arg(&dirs)
                .output()
                .unwrap(),
            "make_dirs.py",
        );
        let ids = json::parse_str(ids.trim()).expect("make_dirs.py prints the ids as JSON");
        let db = tmp.path().join("community.sqlite");
        let (serve, url) = common::palaver_serve(&db, &["--rate-limit", "0"]);
        let w = World {
            py,
            url,
            db,
            pal: tmp.path().join("palaver"),
            refd: tmp.path().join("reference"),
            dirs,
            ids,
            _tmp: tmp,
            _serve: serve,
        };
        ok(w.palaver(&["init"]).output().unwrap(), "palaver init");
        ok(
            w.palaver(&["register", "--nickname", "pal"])
                .output()
                .unwrap(),
            "palaver register",
        );
        common::reference_identity(&w.py, &w.url, &w.refd, "ref");
        w
    }

    fn palaver(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(&self.pal)
            .arg("--server")
            .arg(&self.url)
            .args(args)
            .env("PALAVER_HOOKS_PYTHON", &self.py);
        c
    }

    fn aigenora(&self, args: &[&str]) -> Command {
        common::aigenora(&self.py, &self.url, &self.refd, args)
    }

    fn dir(&self, game: &str) -> PathBuf {
        self.dirs.join(game)
    }

    fn id(&self, game: &str) -> String {
        self.ids.get_str(game).unwrap().to_owned()
    }

    /// Publishes the changed protocol on the server (as its author would).
    fn register(&self, game: &str) {
        let dir = self.dir(game);
        ok(
            self.palaver(&["protocol", "register", dir.to_str().unwrap()])
                .output()
                .unwrap(),
            "palaver protocol register",
        );
    }

    /// (status, winner, winner reports) of the session of `post`, once it
    /// is closed with `reports` reports.
    fn settled(&self, post: &str, reports: i64) -> (String, Option<String>, i64) {
        common::settled(&self.db, post, reports)
    }

    /// Both sides reported one winner, the one palaver printed.
    fn check(&self, post: &str, palaver_out: &str) {
        let winner = common::winner_line(palaver_out);
        let (status, server_winner, reports) = self.settled(post, 2);
        assert_eq!((status.as_str(), reports), ("closed", 2));
        assert_eq!(
            server_winner.as_deref(),
            Some(winner.as_str()),
            "the two sides disagree about the winner"
        );
    }
}

/// palaver hosts the changed directory (its hooks.py through the bridge);
/// the reference joins, with the same hooks.py in its library.
fn palaver_hosts(game: &str) {
    let w = World::new();
    w.register(game);
    let id = w.id(game);
    ok(
        w.aigenora(&["protocol", "fetch", &id]).output().unwrap(),
        "aigenora protocol fetch",
    );
    // The reference wrote its own skeleton there; its user implements it.
    let ref_dir = w.refd.join("protocols").join(&id[..8]).join(&id[8..]);
    std::fs::copy(w.dir(game).join("hooks.py"), ref_dir.join("hooks.py")).unwrap();
    let dir = w.dir(game);
    let mut host = w
        .palaver(&[
            "host",
            dir.to_str().unwrap(),
            "--direct",
            "--control-mode",
            "autonomous",
            "--invitation-ttl-minutes",
            "30",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(host.stdout.take().unwrap());
    let mut seen = String::new();
    let post = read_until(&mut out, "post_id:", &mut seen);
    let join = w
        .aigenora(&["join", &post, "--control-mode", "autonomous", "--no-web"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let ref_out = ok(join, &format!("aigenora join {game}"));
    assert!(ref_out.contains("done"), "{ref_out}");
    let seen = common::finish(
        Kill(host),
        out,
        seen,
        &format!("palaver host {game}"),
        Duration::from_secs(90),
    );
    w.check(&post, &seen);
}

/// The reference hosts its directory; palaver fetches the protocol from the
/// server (and gets a scaffold), the reference's hooks.py is dropped over
/// the scaffold, and palaver joins through the bridge.
fn reference_hosts(game: &str) {
    let w = World::new();
    w.register(game);
    let id = w.id(game);
    let fetched = ok(
        w.palaver(&["--json", "protocol", "fetch", &id])
            .output()
            .unwrap(),
        "palaver protocol fetch",
    );
    let f = json::parse_str(&fetched).unwrap();
    assert_eq!(f.get_str("protocol_id"), Some(id.as_str()), "{fetched}");
    assert_eq!(f.get("new"), Some(&Value::Bool(true)), "{fetched}");
    let next = f.get("next").unwrap();
    assert_eq!(next.get_str("kind"), Some("scaffold"), "{fetched}");
    let lib_dir = PathBuf::from(f.get_str("dir").unwrap());
    std::fs::copy(w.dir(game).join("hooks.py"), lib_dir.join("hooks.py")).unwrap();
    let dir = w.dir(game);
    let mut host = w
        .aigenora(&[
            "host",
            "--protocol-dir",
            dir.to_str().unwrap(),
            "--control-mode",
            "autonomous",
            "--no-web",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut hout = BufReader::new(host.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let join = w
        .palaver(&["join", &post, "--direct", "--control-mode", "autonomous"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let jout = ok(join, &format!("palaver join {game}"));
    let what = format!("aigenora host {game}");
    let (status, hseen) =
        common::finish_status(Kill(host), hout, hseen, &what, Duration::from_secs(90));
    common::reference_host_ended(status, &what, &hseen, || w.settled(&post, 0).0 == "closed");
    w.check(&post, &jout);
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn bridged_rps_palaver_hosts_reference_joins() {
    palaver_hosts("rps");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn bridged_rps_reference_hosts_palaver_joins() {
    reference_hosts("rps");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn bridged_guess_number_palaver_hosts_reference_joins() {
    palaver_hosts("guess-number");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn bridged_guess_number_reference_hosts_palaver_joins() {
    reference_hosts("guess-number");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn bridged_gomoku_palaver_hosts_reference_joins() {
    palaver_hosts("gomoku");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn bridged_gomoku_reference_hosts_palaver_joins() {
    reference_hosts("gomoku");
}

/// A changed rps dir whose hooks.py has `fault` spliced in at the start of
/// `proto_round_judge` (indented to the method body).
fn faulty_rps(py: &str, root: &Path, fault: &str) -> PathBuf {
    ok(
        Command::new(py)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hooks_bridge/make_dirs.py"))
            .arg(py)
            .arg(root)
            .output()
            .unwrap(),
        "make_dirs.py",
    );
    let dir = root.join("rps");
    let hooks = std::fs::read_to_string(dir.join("hooks.py")).unwrap();
    let at = hooks
        .find("def proto_round_judge(")
        .expect("rps hooks.py has proto_round_judge");
    let body = at + hooks[at..].find(":\n").unwrap() + 2;
    let indent: String = hooks[body..].chars().take_while(|c| *c == ' ').collect();
    let spliced: String = fault.lines().map(|l| format!("{indent}{l}\n")).collect();
    let changed = format!("{}{spliced}{}", &hooks[..body], &hooks[body..]);
    std::fs::write(dir.join("hooks.py"), changed).unwrap();
    dir
}

/// `palaver protocol test --json` of a faulty dir: the session must end
/// unfinished, within `within`, with a `hook_error` whose text has `want`.
fn fails_with(fault: &str, want: &str, within: Duration) {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let dir = faulty_rps(&py, &tmp.path().join("p"), fault);
    let start = Instant::now();
    let o = Command::new(BIN)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .args(["--json", "protocol", "test"])
        .arg(&dir)
        .env("PALAVER_HOOKS_PYTHON", &py)
        .env("PALAVER_HOOK_TIMEOUT", "3")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = start.elapsed();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "a faulty hooks.py passed: {out}");
    assert!(took < within, "took {took:?}: {out}");
    let v = json::parse_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let text = v.to_string();
    assert!(text.contains("hook_error"), "{text}");
    assert!(text.contains(want), "wanted {want:?} in {text}");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn a_bridged_hook_that_raises_ends_the_session_with_its_error() {
    fails_with(
        "raise RuntimeError('judge exploded')",
        "RuntimeError: judge exploded",
        Duration::from_secs(30),
    );
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn a_bridged_hook_that_hangs_times_out() {
    fails_with(
        "import time\ntime.sleep(3600)",
        "no reply to `round_judge`",
        Duration::from_secs(30),
    );
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn a_bridged_hook_that_exits_mid_session_is_named() {
    fails_with(
        "import os, sys\nprint('about to leave', file=sys.stderr, flush=True)\nos._exit(7)",
        "about to leave",
        Duration::from_secs(30),
    );
}

/// hero-duel-v1's reference hooks.py through the bridge: the guest's
/// shadow judge (`proto_round_judge_pure`) runs every round; made to
/// disagree with the host, the guest ends the session.
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn a_bridged_shadow_judge_checks_the_hosts_results() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    ok(
        Command::new(&py)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hooks_bridge/make_dirs.py"))
            .arg(&py)
            .arg(tmp.path().join("p"))
            .output()
            .unwrap(),
        "make_dirs.py",
    );
    let dir = tmp.path().join("p/hero-duel");
    let run = || {
        Command::new(BIN)
            .arg("--data-dir")
            .arg(tmp.path().join("data"))
            .args(["--json", "protocol", "test"])
            .arg(&dir)
            .env("PALAVER_HOOKS_PYTHON", &py)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let honest = ok(run(), "protocol test hero-duel through the bridge");
    let v = json::parse_str(&honest).unwrap();
    assert_eq!(v.get("ok"), Some(&Value::Bool(true)), "{honest}");
    // The guest's pure judge now credits the host with 999 hp.
    let hooks = std::fs::read_to_string(dir.join("hooks.py")).unwrap();
    let at = hooks.find("def proto_round_judge_pure(").unwrap();
    let body = at + hooks[at..].find(":\n").unwrap() + 2;
    let indent: String = hooks[body..].chars().take_while(|c| *c == ' ').collect();
    let lying = format!(
        "{}{indent}return {{\"host_hp\": 999}}\n{}",
        &hooks[..body],
        &hooks[body..]
    );
    std::fs::write(dir.join("hooks.py"), lying).unwrap();
    let o = run();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !o.status.success(),
        "a disagreeing shadow judge passed: {out}"
    );
    assert!(out.contains("balance_mismatch"), "{out}");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn garbage_a_bridged_hook_prints_does_not_reach_the_wire() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let dir = faulty_rps(
        &py,
        &tmp.path().join("p"),
        "import os\nprint('{not json')\nos.write(1, b'garbage on fd 1\\n')",
    );
    let o = Command::new(BIN)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .args(["--json", "protocol", "test"])
        .arg(&dir)
        .env("PALAVER_HOOKS_PYTHON", &py)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = ok(o, "protocol test with a chatty hooks.py");
    let v = json::parse_str(&out).unwrap();
    assert_eq!(v.get("ok"), Some(&Value::Bool(true)), "{out}");
}

/// `join POST -- ARGS` hands the arguments to the reference-SDK hooks.py's
/// `proto_init` through the bridge, and a `join` that names no control mode
/// takes the protocol's `decision.mode` (manual: human). The spec's
/// `decision` is outside the contract, so the protocol id stays the one
/// make_dirs.py printed. The reference hosts; once both facts are on disk
/// the test ends both sides (the guest would wait for a person).
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn extra_args_reach_the_sdk_hooks_and_join_takes_the_authors_mode() {
    let w = World::new();
    let dir = w.dir("rps");
    let spec_path = dir.join("spec.json");
    let mut spec = json::parse_str(&std::fs::read_to_string(&spec_path).unwrap()).unwrap();
    let Value::Object(doc) = &mut spec else {
        panic!("spec.json is an object")
    };
    doc.insert(
        "decision",
        Value::Object(palaver::obj! { "mode" => "manual", "timeout_seconds" => 120 }),
    );
    std::fs::write(&spec_path, json::canonical::to_string(&spec)).unwrap();
    // The hooks record the args proto_init got, per role, next to hooks.py.
    let mut hooks = std::fs::read_to_string(dir.join("hooks.py")).unwrap();
    hooks.push_str(
        "\n\nimport json as _json, os as _os\n_init = Hooks.proto_init\n\n\
         def _recording_init(self, options, role, args, *rest, **kw):\n    \
         with open(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), role + '-args.json'), 'w') as f:\n        \
         _json.dump(list(args), f)\n    \
         return _init(self, options, role, args, *rest, **kw)\n\n\
         Hooks.proto_init = _recording_init\n",
    );
    std::fs::write(dir.join("hooks.py"), hooks).unwrap();
    w.register("rps");
    let id = w.id("rps");
    let fetched = ok(
        w.palaver(&["--json", "protocol", "fetch", &id])
            .output()
            .unwrap(),
        "palaver protocol fetch",
    );
    let lib_dir = PathBuf::from(
        json::parse_str(&fetched)
            .unwrap()
            .get_str("dir")
            .unwrap()
            .to_owned(),
    );
    std::fs::copy(dir.join("hooks.py"), lib_dir.join("hooks.py")).unwrap();
    let mut host = Kill(
        w.aigenora(&[
            "host",
            "--protocol-dir",
            dir.to_str().unwrap(),
            "--control-mode",
            "autonomous",
            "--no-web",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let mut hout = BufReader::new(host.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let mut guest = Kill(
        w.palaver(&["join", &post, "--direct", "--", "--level", "3"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut gout = BufReader::new(guest.0.stdout.take().unwrap());
    let mut gseen = String::new();
    let state = read_until(&mut gout, "session state:", &mut gseen);
    let state = PathBuf::from(state.split_whitespace().next().unwrap());
    let start = Instant::now();
    let (args, mode) = loop {
        let args = std::fs::read_to_string(lib_dir.join("guest-args.json")).ok();
        let mode = std::fs::read_to_string(state.join("session.json"))
            .ok()
            .and_then(|t| json::parse_str(&t).ok())
            .and_then(|s| s.get_str("local_control_mode").map(str::to_owned));
        if let (Some(a), Some(m)) = (&args, &mode) {
            break (a.clone(), m.clone());
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no guest-args.json ({args:?}) or no control mode in the guest's session.json ({mode:?})"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        json::parse_str(&args).unwrap(),
        json::parse_str(r#"["--level","3"]"#).unwrap()
    );
    assert_eq!(
        mode, "human",
        "the guest's mode: the spec's decision.mode manual"
    );
    drop(guest);
    drop(host);
}
