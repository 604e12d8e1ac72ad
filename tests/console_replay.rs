//! The replay view (R on the sessions screen): finished sessions played
//! here through the library (connect4; a hybrid rps with a person's and a
//! whisper's decisions) and the reference's stored state dir, drawn headless
//! as insta snapshots at the step the keys move to; R on an attached
//! finished session opens it through its task, Esc closes it, a running
//! session is refused. A werewolf game's .log (the AIWolf format) is drawn
//! as its day, and `o` with the .log's path opens it. The real binary in
//! tmux is in tests/console_replay_tmux.rs.

use crate::common;

use common::console::{ch, key};
use crossterm::event::KeyCode;
use palaver::engine::{ControlMode, Role};
use palaver::json::Value;
use palaver::obj;
use palaver::session::replay::{self, Timeline};
use palaver::session::{SubmitOptions, files, submit};
use palaver::tui::report::Report;
use palaver::tui::screens::sessions::Modal;
use palaver::tui::{Headless, load_settings};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

/// The timeline with its times made fixed (a step every half second), so
/// snapshots do not depend on how fast the session ran.
fn fixed(mut t: Timeline) -> Box<Timeline> {
    t.dir = "/state".into();
    for (i, s) in t.steps.iter_mut().enumerate() {
        s.t = i as f64 * 0.5;
        s.ts = format!("2026-11-30T12:00:{:02}.000000+00:00", i / 2);
        for k in ["started_at", "updated_at"] {
            s.state.remove(k);
        }
    }
    Box::new(t)
}

fn console(data: &Path, w: u16, h: u16) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    Headless::new(settings, w, h)
}

fn replay_open(h: &Headless) -> Option<usize> {
    match &h.app.sessions.modal {
        Some(Modal::Replay(r)) => Some(r.pos),
        _ => None,
    }
}

/// Opens `t` in a fresh console of each size, presses `keys`, snapshots.
fn snap(name: &str, t: &Timeline, keys: &[crossterm::event::KeyEvent]) {
    for (w, hgt) in SIZES {
        let tmp = tempfile::tempdir().unwrap();
        let mut h = console(tmp.path(), w, hgt);
        h.update(Report::Replay(Ok(fixed(t.clone()))));
        assert!(replay_open(&h).is_some());
        for k in keys {
            h.key(*k);
        }
        insta::assert_snapshot!(format!("{name}_{w}x{hgt}"), h.screen());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_replay_connect4() {
    let data = tempfile::tempdir().unwrap();
    let parent = common::played::session(
        data.path(),
        "connect4-v1",
        Role::Guest,
        ControlMode::Autonomous,
        |_| {},
    )
    .await;
    let t = replay::load(&parent).unwrap();
    // Eleven steps on (arrows and l), then one back.
    let mut keys = vec![key(KeyCode::Right); 6];
    keys.extend([ch('l'); 5]);
    keys.push(key(KeyCode::Left));
    snap("replay_connect4", &t, &keys);
    snap("replay_connect4_end", &t, &[key(KeyCode::End)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_replay_interventions() {
    let data = tempfile::tempdir().unwrap();
    let parent = common::played::session(
        data.path(),
        "rps-v1",
        Role::Host,
        ControlMode::Hybrid,
        |dir| {
            let r = submit(
                &dir.child,
                obj! { "round" => 0, "choice" => "rock" },
                &SubmitOptions {
                    origin: "console".into(),
                    ..Default::default()
                },
            )
            .unwrap();
            assert!(r.ok);
            let rec = obj! { "round" => 1, "choice" => "paper", "_meta" => obj! {
                "decision_id" => "dec_w1", "origin" => "whisper_bridge", "caused_by_whisper_id" => "abc123def456",
            }};
            files::append_line(
                &dir.child.join("decision").join("decisions.jsonl"),
                &Value::Object(rec),
            )
            .unwrap();
        },
    )
    .await;
    let t = replay::load(&parent).unwrap();
    let first = t.interventions()[0];
    let keys = vec![key(KeyCode::Right); first];
    snap("replay_interventions", &t, &keys);
}

fn reference_child() -> PathBuf {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-state/rps-protocol-test");
    std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("guest-")
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_replay_reference() {
    let t = replay::load(&reference_child()).unwrap();
    snap("replay_reference", &t, &[ch('G')]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r_opens_the_attached_finished_session_and_plays_it() {
    let data = tempfile::tempdir().unwrap();
    let parent = common::played::session(
        data.path(),
        "rps-v1",
        Role::Guest,
        ControlMode::Autonomous,
        |_| {},
    )
    .await;
    let mut h = console(data.path(), 120, 40);
    h.app.attach(&parent);
    h.key(ch('R'));
    let ok = h
        .until(Duration::from_secs(10), |app| {
            matches!(app.sessions.modal, Some(Modal::Replay(_)))
        })
        .await;
    assert!(ok, "the replay did not open:\n{}", h.screen());
    assert_eq!(replay_open(&h), Some(0));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Right));
    assert_eq!(replay_open(&h), Some(2));
    // Play at ×64: the recorded milliseconds pass at once, it stops at the end.
    for _ in 0..6 {
        h.key(ch('+'));
    }
    h.key(ch(' '));
    let n = replay::load(&parent).unwrap().steps.len();
    let ok = h
        .until(Duration::from_secs(10), |app| match &app.sessions.modal {
            Some(Modal::Replay(r)) => r.pos + 1 == n && !r.playing,
            _ => false,
        })
        .await;
    assert!(ok, "{}", h.screen());
    assert!(h.screen().contains("session ended: completed"));
    h.key(key(KeyCode::Esc));
    assert_eq!(replay_open(&h), None);

    // A running session is not replayed.
    let running = data.path().join("sessions").join("guest-1");
    std::fs::create_dir_all(running.join("guest-1")).unwrap();
    std::fs::write(
        running.join("session.json"),
        "{\"status\":\"running\",\"role\":\"guest\"}",
    )
    .unwrap();
    std::fs::write(
        running.join("guest-1").join("snapshot.json"),
        "{\"phase\":\"playing\"}",
    )
    .unwrap();
    h.update(Report::Replay(Ok(Box::new(
        replay::load(&running).unwrap(),
    ))));
    assert_eq!(replay_open(&h), None);
}

fn wolf_log(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/aiwolf")
        .join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_replay_werewolf() {
    let t = palaver::werewolf::replay::load(&wolf_log("v0.4.12_5p_game.log")).unwrap();
    // Step 28: day 1's fifth vote (two for 5 ミヅキ), the day's talk above.
    assert_eq!(t.steps[27].summary, "5 ミヅキ votes for 4 ミサキ");
    snap("replay_werewolf_votes", &t, &[key(KeyCode::Right); 27]);
    // The night's attack: two dead, the last execution and attack.
    assert_eq!(t.steps[30].action, "attack");
    snap("replay_werewolf_night", &t, &[key(KeyCode::Right); 30]);
    snap("replay_werewolf_end", &t, &[key(KeyCode::End)]);
    // 13 agents and the wolves' whispers.
    let t = palaver::werewolf::replay::load(&wolf_log("v0.4.12_13p_game.log")).unwrap();
    let exec = t.steps.iter().position(|s| s.action == "execute").unwrap();
    assert_eq!(t.steps[exec].summary, "6 Agent[06] (VILLAGER) is executed");
    snap("replay_werewolf_13p", &t, &vec![key(KeyCode::Right); exec]);
}

/// `o` on the sessions list, the path pasted, Enter.
fn open(h: &mut Headless, p: &Path) {
    h.key(ch('o'));
    h.update(palaver::tui::msg::Msg::Paste(p.display().to_string()));
    h.key(key(KeyCode::Enter));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o_opens_a_werewolf_game_log_by_its_content() {
    let data = tempfile::tempdir().unwrap();
    // Any name: the content tells a game log.
    let log = data.path().join("game-42.txt");
    std::fs::copy(wolf_log("v0.4.12_5p_abort_after_timeout_game.log"), &log).unwrap();
    let notes = data.path().join("notes.log");
    std::fs::write(&notes, "not a game\n").unwrap();
    let mut h = console(data.path(), 120, 40);
    h.key(key(KeyCode::Tab));
    // A file that is not a game log: the replay does not open, the status
    // says why.
    open(&mut h, &notes);
    let ok = h
        .until(Duration::from_secs(10), |app| {
            app.status.text.contains("not a werewolf game log")
        })
        .await;
    assert!(ok, "{}", h.screen());
    assert_eq!(replay_open(&h), None);
    open(&mut h, &log);
    let ok = h
        .until(Duration::from_secs(10), |app| {
            matches!(app.sessions.modal, Some(Modal::Replay(_)))
        })
        .await;
    assert!(ok, "the replay did not open:\n{}", h.screen());
    let screen = h.screen();
    assert!(
        screen.contains("Replay · werewolf game, 5 agents"),
        "{screen}"
    );
    assert!(screen.contains("finished — no winner"), "{screen}");
    h.key(key(KeyCode::End));
    let screen = h.screen();
    assert!(
        screen.contains("2 Agent[02] WEREWOLF (errored)"),
        "{screen}"
    );
    assert!(
        screen.contains("no winner (4 humans and 1 werewolf alive)"),
        "{screen}"
    );
    h.key(key(KeyCode::Esc));
    assert_eq!(replay_open(&h), None);
}

/// A finished rps-v1 session of palaver's (`protocol test --role host`) in
/// `data`, exported as a participant bundle to `out`.
fn rps_bundle(data: &Path, out: &Path) {
    rps_bundle_scoped(data, out, "participant");
}

fn rps_bundle_scoped(data: &Path, out: &Path, scope: &str) {
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
            .arg("--data-dir")
            .arg(data)
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // The state dir's line is on stderr.
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    run(&["init"]);
    let printed = run(&[
        "protocol",
        "test",
        "rps-v1",
        "--role",
        "host",
        "--control-mode",
        "autonomous",
    ]);
    let dir = common::played::printed_state_dir(&printed);
    run(&[
        "session",
        "replay",
        "export",
        dir.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--scope",
        scope,
    ]);
}

/// `o` with a signed replay bundle: verified first (the status line says
/// so), then the session's replay opens from the bundle's own files; a
/// damaged bundle is refused with the failed check, nothing opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o_opens_a_replay_bundle_after_verifying_it() {
    let data = tempfile::tempdir().unwrap();
    let bundle = data.path().join("evidence.zip");
    rps_bundle(data.path(), &bundle);
    let broken = data.path().join("broken.zip");
    let bytes = std::fs::read(&bundle).unwrap();
    std::fs::write(&broken, &bytes[..bytes.len() / 2]).unwrap();

    let mut h = console(data.path(), 120, 40);
    h.key(key(KeyCode::Tab));
    open(&mut h, &broken);
    let ok = h
        .until(Duration::from_secs(10), |app| {
            app.status.text.contains("the bundle failed verification")
        })
        .await;
    assert!(ok, "{}", h.screen());
    assert_eq!(replay_open(&h), None);
    open(&mut h, &bundle);
    let ok = h
        .until(Duration::from_secs(10), |app| {
            matches!(app.sessions.modal, Some(Modal::Replay(_)))
        })
        .await;
    assert!(ok, "the replay did not open:\n{}", h.screen());
    assert!(
        h.app
            .status
            .text
            .starts_with("bundle verified (participant scope"),
        "{}",
        h.app.status.text
    );
    assert!(h.screen().contains("Replay"), "{}", h.screen());
}

/// A bundle dropped into `<data dir>/bundles` is listed with the sessions
/// (role `bundle`); Enter on it verifies it and opens its replay. A file
/// there that is not a zip is not listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_dropped_in_the_data_dir_is_listed_and_opens() {
    let data = tempfile::tempdir().unwrap();
    let bundles = data.path().join("bundles");
    std::fs::create_dir_all(&bundles).unwrap();
    rps_bundle(data.path(), &bundles.join("dispute-7.zip"));
    std::fs::write(bundles.join("notes.zip"), "not a zip").unwrap();

    let mut h = console(data.path(), 120, 40);
    h.key(key(KeyCode::Tab));
    let ok = h
        .until(Duration::from_secs(10), |app| {
            app.sessions.rows.iter().any(|r| r.is_bundle())
        })
        .await;
    assert!(ok, "no bundle row:\n{}", h.screen());
    let rows = h.app.sessions.rows.clone();
    assert_eq!(rows.iter().filter(|r| r.is_bundle()).count(), 1, "{rows:?}");
    let screen = h.screen();
    assert!(screen.contains("dispute-7.zip"), "{screen}");
    let at = rows.iter().position(|r| r.is_bundle()).unwrap();
    for _ in 0..at {
        h.key(key(KeyCode::Down));
    }
    h.key(key(KeyCode::Enter));
    let ok = h
        .until(Duration::from_secs(10), |app| {
            matches!(app.sessions.modal, Some(Modal::Replay(_)))
        })
        .await;
    assert!(ok, "the replay did not open:\n{}", h.screen());
    assert!(
        h.app
            .status
            .text
            .starts_with("bundle verified (participant scope"),
        "{}",
        h.app.status.text
    );
}

/// A public bundle verifies but carries no session files: the status line
/// says it verified (not as a failure) and why nothing plays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_bundle_verifies_green_and_says_why_nothing_plays() {
    let data = tempfile::tempdir().unwrap();
    let bundles = data.path().join("bundles");
    std::fs::create_dir_all(&bundles).unwrap();
    rps_bundle_scoped(data.path(), &bundles.join("public.zip"), "public");
    let mut h = console(data.path(), 120, 40);
    h.key(key(KeyCode::Tab));
    let ok = h
        .until(Duration::from_secs(10), |app| {
            app.sessions.rows.iter().any(|r| r.is_bundle())
        })
        .await;
    assert!(ok, "no bundle row:\n{}", h.screen());
    let at = h
        .app
        .sessions
        .rows
        .iter()
        .position(|r| r.is_bundle())
        .unwrap();
    for _ in 0..at {
        h.key(key(KeyCode::Down));
    }
    h.key(key(KeyCode::Enter));
    let ok = h
        .until(Duration::from_secs(10), |app| {
            app.status.text.contains("carries no session files")
        })
        .await;
    assert!(ok, "{}", h.app.status.text);
    assert!(h.app.status.ok, "a verified bundle is not a failure");
    assert!(
        h.app
            .status
            .text
            .starts_with("bundle verified (public scope"),
        "{}",
        h.app.status.text
    );
    assert_eq!(replay_open(&h), None);
}
