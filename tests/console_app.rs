//! The console driven headless by keys against real sessions: an embedded
//! community, a bot over iroh on loopback, the state dirs on disk.

use common::console::{ch, ctrl, key};
use crossterm::event::KeyCode;
use palaver::engine::ControlMode;
use palaver::identity::KeyPair;
use palaver::json::{Map, Value};
use palaver::services::remote::{self, JoinPlan, PeerOpts};
use palaver::services::server::ensure_registered;
use palaver::tui::app::App;
use palaver::tui::screens::sessions::{Focus, Modal};
use palaver::tui::tasks::Startup;
use palaver::tui::{Headless, load_settings};
use palaver::web::Client;
use std::path::Path;
use std::time::Duration;

use crate::common;

const LONG: Duration = Duration::from_secs(60);

/// Types into the focused host-form field, replacing what is there.
fn set_field(h: &mut Headless, name: &str, value: &str) {
    let Some(Modal::Host(form)) = &h.app.sessions.modal else {
        panic!("the host form is not open");
    };
    let target = 3 + form.fields.iter().position(|f| f.name == name).unwrap();
    let row = form.row;
    let len = form.fields[target - 3].value.chars().count();
    for _ in row..target {
        h.key(key(KeyCode::Down));
    }
    for _ in target..row {
        h.key(key(KeyCode::Up));
    }
    for _ in 0..len {
        h.key(key(KeyCode::Backspace));
    }
    for c in value.chars() {
        h.key(ch(c));
    }
}

/// A bot that joins our open invitation over iroh (autonomous, no files).
fn bot_joins(url: String, post_id: String) -> tokio::task::JoinHandle<remote::Finished> {
    tokio::spawn(async move {
        let c = Client::new(&url, KeyPair::generate()).unwrap();
        ensure_registered(&c, "bot").await.unwrap();
        let plan = JoinPlan::new(post_id, ControlMode::Autonomous, PeerOpts::direct(), None);
        let resolve = |pid: &str| {
            let e = palaver::library::Library::bundled();
            let entry = e.resolve(pid).map_err(|e| e.to_string())?;
            let spec = e.load(entry).map_err(|e| e.to_string())?;
            let hooks = palaver::protocols::native_hooks(&spec).ok_or("no hooks")?;
            Ok((spec, hooks))
        };
        remote::join(&c, plan, resolve, &|_| {}, std::future::pending())
            .await
            .expect("the bot's session")
    })
}

/// Hosts from the form (already filled) and has a bot join.
async fn host_and_get_a_bot(h: &mut Headless) -> tokio::task::JoinHandle<remote::Finished> {
    h.key(key(KeyCode::Enter));
    assert!(
        h.app.sessions.modal.is_none(),
        "the form was refused: {}",
        h.screen()
    );
    let me = h.app.settings.me.clone();
    assert!(
        h.until(LONG, |a| a
            .sessions
            .invitations
            .iter()
            .any(|i| i.public_key == me))
            .await,
        "our invitation did not show up:\n{}",
        h.screen()
    );
    let post = h
        .app
        .sessions
        .invitations
        .iter()
        .find(|i| i.public_key == me)
        .unwrap()
        .post_id
        .clone();
    let url = h.app.community.as_ref().unwrap().url.clone();
    bot_joins(url, post)
}

fn window_value(a: &App) -> Option<i64> {
    a.sessions
        .attached
        .as_ref()?
        .prompt
        .as_ref()?
        .window
        .as_ref()?
        .match_value
        .as_i64()
}

fn phase(a: &App) -> String {
    a.sessions
        .attached
        .as_ref()
        .and_then(|x| x.snapshot.get("phase"))
        .map(Value::py_str)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_rps_in_human_mode_and_decide_three_rounds_in_the_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = common::console::with_community(tmp.path(), "tester").await;
    h.key(ch('n'));
    let Some(Modal::Host(form)) = &h.app.sessions.modal else {
        panic!("n opens the host form:\n{}", h.screen());
    };
    assert_eq!(form.alias(), "rps-v1");
    assert_eq!(form.mode, ControlMode::Human);
    set_field(&mut h, "best_of", "3");
    set_field(&mut h, "termination", "fixed_rounds");
    let bot = host_and_get_a_bot(&mut h).await;

    // Three windows, each answered through the prompt with a different key.
    for (round, k) in [(0, '1'), (1, '2'), (2, '3')] {
        assert!(
            h.until(LONG, |a| window_value(a) == Some(round)).await,
            "no window for round {round}:\n{}",
            h.screen()
        );
        assert_eq!(h.app.sessions.focus, Focus::Prompt);
        h.key(ch(k));
        assert!(
            h.until(LONG, |a| a
                .sessions
                .attached
                .as_ref()
                .and_then(|x| x.prompt.as_ref())
                .is_none_or(
                    |p| p.note.as_ref().is_some_and(|n| n.ok) || window_value(a) != Some(round)
                ))
            .await
        );
    }
    assert!(
        h.until(LONG, |a| phase(a) == "game_over").await,
        "{}",
        h.screen()
    );
    assert!(
        h.until(LONG, |a| a.sessions.attached.as_ref().is_some_and(|x| x
            .session
            .get("status")
            .and_then(Value::as_str)
            == Some("closed")))
            .await
    );
    let screen = h.screen();
    assert!(screen.contains("game_over"), "{screen}");
    assert!(screen.contains("score   host"), "{screen}");
    assert!(screen.contains("winner"), "{screen}");
    let finished = bot.await.unwrap();
    assert!(finished.outcome.completed, "{:?}", finished.outcome);

    // Our three decisions are the ones the engine played.
    let att = h.app.sessions.attached.as_ref().unwrap();
    let events = std::fs::read_to_string(att.dir.events_file()).unwrap();
    let mine: Vec<String> = events
        .lines()
        .filter_map(|l| palaver::json::parse_str(l).ok())
        .filter(|e| {
            e.get("type").and_then(Value::as_str) == Some("protocol_message")
                && e.get("data")
                    .and_then(|d| d.get("direction"))
                    .and_then(Value::as_str)
                    == Some("sent")
        })
        .filter_map(|e| {
            let m = e.get("data")?.get("msg")?;
            (m.get("action")?.as_str()? == "reveal").then(|| m.get("choice")?.py_str().into())
        })
        .collect::<Vec<Option<String>>>()
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(mine, ["rock", "paper", "scissors"]);
    let decisions =
        std::fs::read_to_string(att.dir.decision_dir().join("decisions.jsonl")).unwrap();
    assert_eq!(decisions.lines().count(), 3);
    assert!(decisions.contains("\"origin\":\"console\""), "{decisions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strategy_saved_in_the_editor_plays_the_next_hybrid_rounds() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = common::console::with_community(tmp.path(), "tester").await;
    h.key(ch('n'));
    // Row 1 is the control mode: human → hybrid.
    h.key(key(KeyCode::Down));
    h.key(key(KeyCode::Right));
    let Some(Modal::Host(form)) = &h.app.sessions.modal else {
        panic!("no host form");
    };
    assert_eq!(form.mode, ControlMode::Hybrid);
    set_field(&mut h, "best_of", "4");
    set_field(&mut h, "termination", "fixed_rounds");
    set_field(&mut h, "min_think_seconds", "1");
    let bot = host_and_get_a_bot(&mut h).await;
    assert!(
        h.until(LONG, |a| window_value(a) == Some(0)).await,
        "{}",
        h.screen()
    );
    // Coach: open the editor, take the second preset (always paper), save.
    h.key(ch('s'));
    assert!(matches!(h.app.sessions.modal, Some(Modal::Strategy(_))));
    h.key(ctrl('p'));
    h.key(ctrl('p'));
    h.key(ctrl('s'));
    assert!(
        h.until(LONG, |a| matches!(&a.sessions.modal, Some(Modal::Strategy(e)) if e.note.as_ref().is_some_and(|n| n.text == "strategy saved")))
            .await,
        "{}",
        h.screen()
    );
    h.key(key(KeyCode::Esc));
    assert!(h.app.sessions.modal.is_none());
    assert!(
        h.until(LONG, |a| phase(a) == "game_over").await,
        "{}",
        h.screen()
    );
    bot.await.unwrap();

    let att = h.app.sessions.attached.as_ref().unwrap();
    let child = att.dir.child.clone();
    let strategy_events = std::fs::read_to_string(child.join("strategy_events.jsonl")).unwrap();
    let set = palaver::json::parse_str(strategy_events.lines().last().unwrap()).unwrap();
    assert_eq!(set.get("op").and_then(Value::as_str), Some("set"));
    let saved_at = set.get("ts").unwrap().py_str();
    let applied: Vec<Map> = std::fs::read_to_string(child.join("events.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| palaver::json::parse_str(l).ok()?.as_object().cloned())
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("strategy_applied"))
        .collect();
    let after: Vec<&Map> = applied
        .iter()
        .filter(|e| e.get("ts").unwrap().py_str() > saved_at)
        .collect();
    assert!(
        !after.is_empty(),
        "no round started after the save: {applied:?}"
    );
    for e in after {
        let d = e.get("data").unwrap();
        assert_eq!(
            d.get("result").and_then(Value::as_str),
            Some("paper"),
            "{e:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_from_another_process_shows_in_the_prompt() {
    // A real session in human mode in this process; `palaver session decide`
    // from another process; the console shows the decision on file.
    let tmp = tempfile::tempdir().unwrap();
    let mut h = common::console::with_community(tmp.path(), "tester").await;
    h.key(ch('n'));
    set_field(&mut h, "best_of", "1");
    set_field(&mut h, "min_think_seconds", "3");
    let bot = host_and_get_a_bot(&mut h).await;
    assert!(
        h.until(LONG, |a| window_value(a) == Some(0)).await,
        "{}",
        h.screen()
    );
    let parent = h.app.sessions.attached.as_ref().unwrap().key.clone();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args([
            "session",
            "decide",
            "--decision",
            r#"{"choice":"scissors"}"#,
        ])
        .arg(&parent)
        .env("PALAVER_DATA_DIR", tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        h.until(LONG, |a| a
            .sessions
            .attached
            .as_ref()
            .and_then(|x| x.prompt.as_ref())
            .and_then(|p| p.on_file.clone())
            .is_some_and(|f| f.contains("choice=scissors (from cli)")))
            .await,
        "{}",
        h.screen()
    );
    assert!(h.screen().contains("on file: choice=scissors (from cli)"));
    // At release the engine plays it: the feed shows our reveal.
    assert!(
        h.until(LONG, |_| std::fs::read_to_string(
            parent.join("events.jsonl")
        )
        .unwrap_or_default()
        .lines()
        .any(
            |l| l.contains(r#""direction":"sent""#) && l.contains(r#""choice":"scissors""#)
        ))
        .await
    );
    bot.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_follows_a_reference_client_state_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let settings = load_settings(tmp.path(), None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/reference-state/rps-protocol-test/host-1796020806161");
    h.app.attach(&dir);
    assert!(
        h.until(LONG, |a| a.sessions.attached.as_ref().is_some_and(|x| x
            .feed
            .total
            > 0
            && !x.snapshot.is_empty()))
            .await
    );
    let screen = h.screen();
    assert!(screen.contains("Rock-Paper-Scissors"), "{screen}");
    assert!(screen.contains("game_over"), "{screen}");
    assert!(screen.contains("host 1 : guest 2"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_strategy_json_is_never_saved() {
    let tmp = tempfile::tempdir().unwrap();
    let settings = load_settings(tmp.path(), None, None).unwrap();
    let mut h = Headless::new(settings, 100, 30);
    let dir = palaver::session::StateDir::create(tmp.path(), palaver::engine::Role::Guest).unwrap();
    let parent = dir.parent.clone().unwrap();
    std::fs::write(
        parent.join("session.json"),
        r#"{"status":"running","local_control_mode":"hybrid"}"#,
    )
    .unwrap();
    std::fs::write(dir.child.join("snapshot.json"), r#"{"phase":"playing"}"#).unwrap();
    std::fs::write(dir.child.join("strategy.json"), r#"{"mode":"random"}"#).unwrap();
    h.app.attach(&parent);
    assert!(
        h.until(LONG, |a| a
            .sessions
            .attached
            .as_ref()
            .is_some_and(|x| !x.strategy.is_empty()))
            .await
    );
    h.key(ch('s'));
    h.key(ch('x'));
    h.key(ctrl('s'));
    let Some(Modal::Strategy(e)) = &h.app.sessions.modal else {
        panic!("editor closed");
    };
    assert!(
        e.note
            .as_ref()
            .is_some_and(|n| !n.ok && n.text.starts_with("not saved"))
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.drain();
    assert_eq!(
        std::fs::read_to_string(dir.child.join("strategy.json")).unwrap(),
        r#"{"mode":"random"}"#
    );
    assert!(!dir.child.join("strategy_events.jsonl").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_your_hosted_invitation_stops_the_host_and_withdraws_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = common::console::with_community(tmp.path(), "tester").await;
    h.key(ch('n'));
    h.key(key(KeyCode::Enter));
    let me = h.app.settings.me.clone();
    assert!(
        h.until(LONG, |a| a
            .sessions
            .invitations
            .iter()
            .any(|i| i.public_key == me))
            .await
    );
    assert_eq!(h.app.sessions.running_tasks, 1);
    let post = h.app.sessions.selected_invitation().unwrap();
    assert_eq!(
        post.public_key, me,
        "ours is the only one, so it is selected"
    );
    h.key(ch('x'));
    assert!(
        h.until(LONG, |a| a.sessions.running_tasks == 0).await,
        "the host task did not end:\n{}",
        h.screen()
    );
    assert!(
        h.app.status.text.contains("cancelled"),
        "{:?}",
        h.app.status
    );
    let c = &h.app.community.as_ref().unwrap().client;
    let inv = c
        .call(
            "GET",
            &format!("/api/v1/invitations/{}", post.post_id),
            None,
            &[200, 404],
        )
        .await
        .unwrap();
    assert_ne!(
        inv.get("status").and_then(Value::as_str),
        Some("open"),
        "{inv:?}"
    );
    assert!(
        h.until(LONG, |a| !a
            .sessions
            .invitations
            .iter()
            .any(|i| i.public_key == me))
            .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_dir_typed_by_path_is_attached() {
    let tmp = tempfile::tempdir().unwrap();
    let settings = load_settings(tmp.path(), None, None).unwrap();
    let mut h = Headless::new(settings, 100, 30);
    h.key(key(KeyCode::Tab));
    assert_eq!(h.app.sessions.focus, Focus::Sessions);
    h.key(ch('o'));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/reference-state/rps-protocol-test/guest-1796020806160");
    for c in "/no/such/dir".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    assert!(
        matches!(h.app.sessions.modal, Some(Modal::Open(_))),
        "a bad path keeps the box open"
    );
    assert!(!h.app.status.ok);
    h.update(palaver::tui::msg::Msg::Paste(String::new()));
    for _ in 0.."/no/such/dir".len() {
        h.key(key(KeyCode::Backspace));
    }
    h.update(palaver::tui::msg::Msg::Paste(dir.display().to_string()));
    h.key(key(KeyCode::Enter));
    assert!(h.app.sessions.modal.is_none());
    assert!(
        h.until(LONG, |a| a
            .sessions
            .attached
            .as_ref()
            .is_some_and(|x| x.feed.total > 0))
            .await
    );
    assert_eq!(h.app.sessions.focus, Focus::Feed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_the_house_rps_and_play_it_to_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let settings = load_settings(tmp.path(), None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    h.start_community(Startup {
        data_dir: tmp.path().to_owned(),
        server: None,
        nickname: "newcomer".into(),
        house: true,
        house_round_delay: 0,
    });
    assert!(
        h.until(LONG, |a| a
            .sessions
            .invitations
            .iter()
            .any(|i| i.alias == "rps-v1"))
            .await,
        "the house offers RPS:\n{}",
        h.screen()
    );
    // Every bundled game of the first-run promise is on offer.
    assert!(
        h.until(LONG, |a| a.sessions.invitations.len() >= 7).await,
        "{}",
        h.screen()
    );
    h.key(ch('/'));
    for c in "rps".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    h.key(key(KeyCode::Enter));
    let Some(Modal::Join(d)) = &h.app.sessions.modal else {
        panic!("Enter opens the join dialog:\n{}", h.screen());
    };
    assert_eq!(d.mode, ControlMode::Human);
    h.key(key(KeyCode::Enter));
    for round in 0..3 {
        assert!(
            h.until(LONG, |a| window_value(a) == Some(round)).await,
            "no window for round {round}:\n{}",
            h.screen()
        );
        h.key(ch('2'));
    }
    assert!(
        h.until(LONG, |a| phase(a) == "game_over").await,
        "{}",
        h.screen()
    );
    assert!(
        h.until(LONG, |a| a.sessions.running_tasks == 0).await,
        "{}",
        h.screen()
    );
    assert!(
        h.app.status.text.starts_with("session finished"),
        "{:?}",
        h.app.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_community_server_the_console_lists_and_joins_its_invitations() {
    let tmp = tempfile::tempdir().unwrap();
    let (_serve, url) = common::palaver_serve(&tmp.path().join("c.sqlite"), &["--difficulty", "1"]);
    // Another agent hosts guess-number on that server (direct addresses only).
    let host_client = Client::new(&url, KeyPair::generate()).unwrap();
    ensure_registered(&host_client, "remote-host")
        .await
        .unwrap();
    let spec = palaver::library::bundled_spec("guess-number-v1")
        .unwrap()
        .clone();
    let hooks = palaver::protocols::native_hooks(&spec).unwrap();
    let mut options = Map::new();
    options.insert("max_think_seconds", Value::from(30));
    let plan = remote::HostPlan {
        spec,
        hooks,
        message: "join me".into(),
        options,
        mode: ControlMode::Autonomous,
        ttl: Duration::from_secs(120),
        upkeep: remote::Upkeep::default(),
        peer: PeerOpts::direct(),
        data_dir: None,
        state_dir: None,
        chat: None,
        observer: None,
    };
    let host = tokio::spawn(async move {
        remote::host(&host_client, plan, &|_| {}, std::future::pending()).await
    });

    let data = tmp.path().join("me");
    let settings = load_settings(&data, None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    h.start_community(Startup {
        data_dir: data.clone(),
        server: Some(url.clone()),
        nickname: "visitor".into(),
        house: true,
        house_round_delay: 0,
    });
    assert!(
        h.until(LONG, |a| a
            .sessions
            .invitations
            .iter()
            .any(|i| i.alias == "guess-number-v1"))
            .await,
        "{}",
        h.screen()
    );
    let c = h.app.community.as_ref().unwrap();
    assert!(!c.embedded);
    assert!(
        h.app.community_status.starts_with("community http://"),
        "{}",
        h.app.community_status
    );
    // No house on someone else's server.
    assert_eq!(h.app.sessions.invitations.len(), 1);
    // Join it autonomously and watch it play to the end.
    h.key(key(KeyCode::Enter));
    h.key(key(KeyCode::Left)); // human → autonomous
    let Some(Modal::Join(d)) = &h.app.sessions.modal else {
        panic!("no join dialog");
    };
    assert_eq!(d.mode, ControlMode::Autonomous);
    h.key(key(KeyCode::Enter));
    assert!(
        h.until(LONG, |a| phase(a) == "game_over").await,
        "{}",
        h.screen()
    );
    let finished = host.await.unwrap().expect("the host's session");
    assert!(finished.outcome.completed, "{:?}", finished.outcome);
    assert!(
        h.app.sessions.attached.as_ref().unwrap().prompt.is_none(),
        "autonomous: no prompt"
    );
}
