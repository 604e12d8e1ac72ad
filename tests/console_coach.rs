//! The coach pane (c on the sessions screen) in the headless console with
//! the stand-in agent CLI (tests/coach/fake_agent.py), and snapshots of the
//! pane.

mod common;

use common::console::{ch, ctrl, key};
use crossterm::event::KeyCode;
use palaver::tui::panes::coach::CoachPane;
use palaver::tui::screens::sessions::Modal;
use palaver::tui::{Headless, load_settings};
use std::path::Path;
use std::time::Duration;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

fn pane(h: &Headless) -> Option<&CoachPane> {
    match &h.app.sessions.modal {
        Some(Modal::Coach(p)) => Some(p),
        _ => None,
    }
}

fn typed(h: &mut Headless, s: &str) {
    for c in s.chars() {
        h.key(ch(c));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coach_pane_asks_streams_adopts_and_resets() {
    let data = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let log = data.path().join("agent.log");
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/coach/fake_agent.py");
    let write_config = |command: &str| {
        std::fs::write(
            config.path().join("config.toml"),
            format!("[coach]\nagent = \"custom\"\ncommand = '{command}'\ntimeout_seconds = 30\n"),
        )
        .unwrap();
    };
    write_config(&format!(
        "{} --log {} --delay 0.05 --ask {{prompt}}",
        fake.display(),
        log.display()
    ));
    // A binary of its own (Cargo.toml's [[test]] list), so the process's
    // config dir is ours; this binary's other tests only draw panes, which
    // the config's [coach] section does not change.
    unsafe { std::env::set_var("PALAVER_CONFIG_DIR", config.path()) };
    let state = data.path().join("state");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-state/rps-protocol-test"),
        &state,
    );
    let settings = load_settings(data.path(), None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    // Nothing attached: no pane, a status line instead.
    h.key(ch('c'));
    assert!(pane(&h).is_none());
    let guest = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("guest-")
        })
        .unwrap();
    h.app.attach(&guest);
    assert!(h.app.sessions.attached.is_some());
    h.key(ch('c'));
    assert!(pane(&h).is_some(), "c opens the coach pane");
    typed(&mut h, "what now? it's \"rock\"; $(x)");
    h.key(key(KeyCode::Enter));
    assert!(pane(&h).unwrap().busy());
    let ok = h
        .until(Duration::from_secs(20), |a| match &a.sessions.modal {
            Some(Modal::Coach(p)) => !p.busy(),
            _ => false,
        })
        .await;
    assert!(ok, "no reply:\n{}", h.screen());
    let p = pane(&h).unwrap();
    let child = p.child.clone();
    assert_eq!(p.entries.len(), 2, "{:?}", p.entries);
    assert_eq!(p.entries[1].0, "coach", "{:?}", p.entries);
    assert!(p.entries[1].1.starts_with("Coach here."));
    let screen = h.screen();
    assert!(screen.contains("Coach here."), "{screen}");
    let rec: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let prompt = rec["argv"][1].as_str().unwrap();
    assert!(prompt.contains("## Current situation"), "{prompt}");
    assert!(
        prompt.ends_with("what now? it's \"rock\"; $(x)"),
        "{prompt}"
    );
    assert_eq!(rec["files"], serde_json::json!(["COACH.md"]));

    // Adopt: the reply lands in the session's whispers.jsonl.
    h.key(ctrl('a'));
    let ok = h
        .until(Duration::from_secs(10), |a| match &a.sessions.modal {
            Some(Modal::Coach(p)) => p.note.as_ref().is_some_and(|n| n.text.contains("adopted")),
            _ => false,
        })
        .await;
    assert!(ok, "not adopted:\n{}", h.screen());
    let whispers = std::fs::read_to_string(child.join("whispers.jsonl")).unwrap();
    assert!(whispers.contains("Coach here."), "{whispers}");
    assert!(
        whispers.contains("\"origin\":\"coach\"") || whispers.contains("\"origin\": \"coach\"")
    );

    // Esc closes, c again shows the kept conversation.
    h.key(key(KeyCode::Esc));
    assert!(pane(&h).is_none());
    h.key(ch('c'));
    let ok = h
        .until(Duration::from_secs(10), |a| match &a.sessions.modal {
            Some(Modal::Coach(p)) => p.entries.len() == 2,
            _ => false,
        })
        .await;
    assert!(ok, "the conversation was not kept");

    // Reset: gone from the pane and the data dir.
    h.key(ctrl('r'));
    let ok = h
        .until(Duration::from_secs(10), |a| match &a.sessions.modal {
            Some(Modal::Coach(p)) => p.note.as_ref().is_some_and(|n| n.text.contains("reset")),
            _ => false,
        })
        .await;
    assert!(ok);
    assert!(pane(&h).unwrap().entries.is_empty());
    assert!(!data.path().join("coach/conversation.jsonl").exists());

    // A missing CLI: the message in the pane, no dialog.
    write_config("palaver-no-such-agent-cli {prompt}");
    typed(&mut h, "hello");
    h.key(key(KeyCode::Enter));
    let ok = h
        .until(Duration::from_secs(10), |a| match &a.sessions.modal {
            Some(Modal::Coach(p)) => !p.busy(),
            _ => false,
        })
        .await;
    assert!(ok);
    let screen = h.screen();
    assert!(screen.contains("was not found on PATH"), "{screen}");
    assert!(pane(&h).is_some());

    // Cancel: a slow agent stopped with ctrl-x.
    write_config(&format!(
        "{} --log {} --sleep 30 {{prompt}}",
        fake.display(),
        log.display()
    ));
    typed(&mut h, "slow");
    h.key(key(KeyCode::Enter));
    let started = h
        .until(Duration::from_secs(10), |_| {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .count()
                == 2
        })
        .await;
    assert!(started);
    h.key(ctrl('x'));
    assert!(!pane(&h).unwrap().busy());
    assert!(h.screen().contains("cancelled"));
}

fn snap_pane(name: &str, p: CoachPane) {
    for (w, hgt) in [(80u16, 24u16), (120, 40)] {
        let tmp = tempfile::tempdir().unwrap();
        let settings = load_settings(tmp.path(), None, None).unwrap();
        let mut h = Headless::new(settings, w, hgt);
        h.app.sessions.modal = Some(Modal::Coach(Box::new(CoachPane {
            entries: p.entries.clone(),
            streaming: p.streaming.clone(),
            input: p.input.clone(),
            scroll: p.scroll,
            note: p.note.clone(),
            ..CoachPane::default()
        })));
        insta::assert_snapshot!(format!("{name}_{w}x{hgt}"), h.screen());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_coach_conversation() {
    snap_pane(
        "coach_conversation",
        CoachPane {
            entries: vec![
                ("user".into(), "They played rock twice. What now?".into()),
                (
                    "coach".into(),
                    "Two rocks in a row.\nPaper beats rock; whisper \"paper this round\".".into(),
                ),
                ("user".into(), "And after that?".into()),
            ],
            streaming: Some(vec!["Watch for a switch to scissors.".into()]),
            input: "should I".into(),
            ..CoachPane::default()
        },
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_coach_error() {
    snap_pane(
        "coach_error",
        CoachPane {
            entries: vec![
                ("user".into(), "hi".into()),
                (
                    "error".into(),
                    "coach: `claude` was not found on PATH. Install the claude-code CLI, or set [coach] agent / command in config.toml.".into(),
                ),
            ],
            note: Some(palaver::tui::note::Note::err("coach: `claude` was not found on PATH.")),
            ..CoachPane::default()
        },
    );
}
