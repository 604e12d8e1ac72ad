//! The console without a terminal: every pane in its main states as
//! TestBackend snapshots (80×24 and 160×48), and the app driven by keys
//! and actions against real sessions.

use crate::common;

use common::console::{ch, ctrl, key};
use crossterm::event::KeyCode;
use palaver::json::{Map, Value};
use palaver::obj;
use palaver::session::decision::mono_now;
use palaver::tui::command::Command;
use palaver::tui::report::Report;
use palaver::tui::report::rows::{HostStats, Invitation};
use palaver::tui::screens::sessions::{Focus, Modal};
use palaver::tui::{Headless, load_settings};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

fn pid(alias: &str) -> String {
    palaver::library::bundled_spec(alias)
        .unwrap()
        .protocol_id()
        .to_owned()
}

fn write(path: &Path, v: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, palaver::json::canonical::to_string_ordered(&v)).unwrap();
}

/// One event line at a fixed time (`sec` seconds after noon).
fn event(sec: u32, kind: &str, data: Map, summary: Option<&str>) -> String {
    let mut m = obj! { "ts" => format!("2026-11-30T12:{:02}:{:02}.000000+00:00", sec / 60, sec % 60), "type" => kind, "data" => data };
    if let Some(s) = summary {
        m.insert("summary", Value::from(s));
    }
    palaver::json::canonical::to_string_ordered(&Value::Object(m))
}

fn msg(sec: u32, dir: &str, m: Map, summary: Option<&str>) -> String {
    event(
        sec,
        "protocol_message",
        obj! { "direction" => dir, "msg" => m },
        summary,
    )
}

/// A session state dir written the way the runtime writes it.
struct Fixture {
    name: String,
    alias: &'static str,
    mode: &'static str,
    status: &'static str,
    snapshot: Map,
    events: Vec<String>,
    window: Option<(&'static str, i64)>,
    options: Map,
    winner: Option<&'static str>,
    /// More session.json fields.
    extra: Map,
}

impl Fixture {
    fn new(name: &str, alias: &'static str, mode: &'static str) -> Fixture {
        Fixture {
            name: name.into(),
            alias,
            mode,
            status: "running",
            snapshot: Map::new(),
            events: Vec::new(),
            window: None,
            options: Map::new(),
            winner: None,
            extra: Map::new(),
        }
    }

    fn write(&self, data: &Path) -> PathBuf {
        let parent = data.join("sessions").join(&self.name);
        let child = parent.join(&self.name);
        let spec = palaver::library::bundled_spec(self.alias).unwrap();
        let mut sess = obj! {
            "role" => if self.name.starts_with("host") { "host" } else { "guest" },
            "status" => self.status, "protocol_id" => spec.protocol_id(), "protocol_name" => spec.name().unwrap_or(""),
            "local_control_mode" => self.mode, "peer_control_mode" => "autonomous", "options" => self.options.clone(),
            "started_at" => palaver::session::files::epoch_now() - 7200.0, "pid" => std::process::id(),
            "state_dir" => parent.display().to_string(), "engine_state_dir" => child.display().to_string(),
        };
        if let Some(w) = self.winner {
            sess.insert("winner", Value::from(w));
            sess.insert("end_reason", Value::from("completed"));
        }
        for (k, v) in self.extra.iter() {
            sess.insert(k, v.clone());
        }
        write(&parent.join("session.json"), Value::Object(sess));
        let mut snap = self.snapshot.clone();
        snap.insert("protocol_id", Value::from(spec.protocol_id()));
        snap.insert("protocol_name", Value::from(spec.name().unwrap_or("")));
        snap.insert("control_mode", Value::from(self.mode));
        write(&child.join("snapshot.json"), Value::Object(snap));
        std::fs::write(
            parent.join("events.jsonl"),
            self.events
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
        )
        .unwrap();
        std::fs::create_dir_all(child.join("decision")).unwrap();
        if let Some((k, v)) = self.window {
            // Far enough away that the countdown reads the same in every run.
            let t = mono_now() + 500.5;
            write(
                &child.join("decision").join("state.json"),
                Value::Object(obj! {
                    "match_key" => k, "match_value" => v, "mode" => self.mode,
                    "release_at" => if self.mode == "hybrid" { t } else { mono_now() + 1.0 }, "deadline_at" => t,
                    "waiting_for" => "decision",
                }),
            );
        }
        parent
    }
}

fn rps_events() -> Vec<String> {
    vec![
        msg(1, "sent", obj! { "action" => "join", "best_of" => 3 }, None),
        msg(
            1,
            "received",
            obj! { "action" => "ready", "best_of" => 3, "rounds_to_win" => 2 },
            Some("Ready: best of 3, first to 2"),
        ),
        msg(2, "received", obj! { "_sys" => "ping", "seq" => 1 }, None),
        msg(3, "received", obj! { "_sys" => "ping", "seq" => 2 }, None),
        msg(
            4,
            "received",
            obj! { "action" => "commit", "round" => 0, "hash" => "ab".repeat(32) },
            Some("Round 1: commitment"),
        ),
        msg(
            5,
            "sent",
            obj! { "action" => "commit", "round" => 0, "hash" => "cd".repeat(32) },
            Some("Round 1: commitment"),
        ),
        msg(
            5,
            "received",
            obj! { "action" => "reveal", "round" => 0, "choice" => "rock", "nonce" => "00ff" },
            Some("Round 1: reveals rock"),
        ),
        msg(
            5,
            "sent",
            obj! { "action" => "reveal", "round" => 0, "choice" => "paper", "nonce" => "11ee" },
            Some("Round 1: reveals paper"),
        ),
        msg(
            6,
            "received",
            obj! { "action" => "round_result", "round" => 0, "round_winner" => "guest" },
            Some("Round 1: host rock vs guest paper -> guest (0-1)"),
        ),
        event(
            7,
            "peer_unresponsive",
            obj! { "silent_seconds" => 31 },
            Some("The peer has gone silent"),
        ),
    ]
}

fn rps_fixture(mode: &'static str) -> Fixture {
    let mut f = Fixture::new("guest-1000", "rps-v1", mode);
    f.snapshot = obj! {
        "phase" => "playing", "role" => "guest", "round" => 2, "best_of" => 3,
        "score" => obj! { "host" => 0, "guest" => 1 },
        "last_event" => obj! { "summary" => "R1 done: guest wins, score 0-1" },
    };
    f.events = rps_events();
    f.window = Some(("round", 1));
    f.options = obj! { "best_of" => 3, "max_think_seconds" => 30 };
    f
}

fn invitations() -> Vec<Invitation> {
    let now = palaver::session::files::epoch_now();
    [
        ("p1", "rps-v1", "house", "autonomous", obj! { "best_of" => 3 }),
        (
            "p2",
            "connect4-v1",
            "ada",
            "human",
            obj! { "rows" => 6, "cols" => 7 },
        ),
        (
            "p3",
            "guess-number-v1",
            "bot7",
            "hybrid",
            obj! { "range_max" => 100 },
        ),
    ]
    .into_iter()
    .map(|(post, alias, nick, mode, options)| {
        let m = obj! {
            "post_id" => post, "protocol_id" => pid(alias), "nickname" => nick, "host_control_mode" => mode,
            "options" => options, "created_at" => now - 7300.0, "public_key" => "aa".repeat(32), "message" => "",
        };
        Invitation::from_json(&m).unwrap()
    })
    .chain(std::iter::once({
        // A protocol this console does not have (joining fetches it).
        let m = obj! {
            "post_id" => "p4", "protocol_id" => "fe".repeat(32), "nickname" => "maker", "host_control_mode" => "autonomous",
            "options" => obj! {}, "created_at" => now - 9000.0, "public_key" => "bb".repeat(32), "message" => "",
            "tags" => vec![Value::from("game"), Value::from("custom")],
        };
        Invitation::from_json(&m).unwrap()
    }))
    .map(|mut i| {
        if i.post_id == "p1" {
            i.host = Some(HostStats {
                rating_average: Some(4.3),
                ratings: 4,
                sessions: 12,
                reputation: None,
            });
        }
        i
    })
    .collect()
}

#[test]
fn the_invitation_filter_takes_tags_and_rows_say_what_is_missing() {
    use palaver::tui::panes::lists::filter_invitations;
    let all = invitations();
    let post_ids = |q: &str| -> Vec<String> {
        filter_invitations(&all, q)
            .into_iter()
            .map(|i| i.post_id.clone())
            .collect()
    };
    assert_eq!(post_ids("#custom"), ["p4"]);
    assert_eq!(post_ids("#game #custom"), ["p4"]);
    assert!(post_ids("#nope").is_empty());
    assert_eq!(post_ids("custom"), ["p4"], "plain words match tags too");
    assert_eq!(post_ids("#custom maker"), ["p4"]);
    assert!(post_ids("#custom house").is_empty());
    let p4 = all.iter().find(|i| i.post_id == "p4").unwrap();
    assert!(!p4.installed);
    assert!(
        all.iter()
            .filter(|i| i.post_id != "p4")
            .all(|i| i.installed)
    );
    assert_eq!(
        all[0].host.as_ref().map(HostStats::line).as_deref(),
        Some("★4.3 (4) · 12 games")
    );
    let fresh = HostStats {
        rating_average: None,
        ratings: 0,
        sessions: 1,
        reputation: None,
    };
    assert_eq!(fresh.line(), "unrated · 1 game");
}

/// A console on a data dir, `w`×`h`.
fn console(data: &Path, w: u16, h: u16) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    Headless::new(settings, w, h)
}

/// Attaches `parent` and waits until its files are loaded.
async fn attach(h: &mut Headless, parent: &Path, want_window: bool) {
    h.app.attach(parent);
    let ok = h
        .until(Duration::from_secs(10), |app| {
            app.sessions.attached.as_ref().is_some_and(|a| {
                a.feed.total > 0
                    && !a.snapshot.is_empty()
                    && !a.session.is_empty()
                    && (!want_window || a.prompt.is_some())
            }) && !app.sessions.rows.is_empty()
        })
        .await;
    assert!(ok, "the session did not load:\n{}", h.screen());
}

async fn snap(name: &str, setup: impl AsyncFn(&mut Headless, &Path)) {
    for (w, hgt) in SIZES {
        let tmp = tempfile::tempdir().unwrap();
        let mut h = console(tmp.path(), w, hgt);
        setup(&mut h, tmp.path()).await;
        let screen = h.screen();
        insta::assert_snapshot!(format!("{name}_{w}x{hgt}"), screen);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_fresh_console() {
    snap("fresh", async |_h: &mut Headless, _d: &Path| {}).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_lists() {
    snap("lists", async |h: &mut Headless, d: &Path| {
        let mut a = rps_fixture("human");
        a.status = "closed";
        a.winner = Some("guest");
        a.write(d);
        let b = Fixture::new("host-2000", "connect4-v1", "hybrid");
        b.write(d);
        h.update(Report::Invitations(Ok(invitations())));
        h.update(Command::Down);
        assert!(
            h.until(Duration::from_secs(10), |app| app.sessions.rows.len() == 2)
                .await
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_rps_prompt_and_feed() {
    snap("rps_prompt", async |h: &mut Headless, d: &Path| {
        let p = rps_fixture("human").write(d);
        attach(h, &p, true).await;
        assert_eq!(
            h.app.sessions.focus,
            Focus::Prompt,
            "an open window takes the focus"
        );
        h.key(key(KeyCode::Right));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_connect4_board_with_cursor() {
    snap("connect4", async |h: &mut Headless, d: &Path| {
        let mut f = Fixture::new("guest-1000", "connect4-v1", "human");
        let mut board: Vec<Vec<&str>> = vec![vec![""; 7]; 6];
        board[5][3] = "R";
        board[5][4] = "Y";
        board[4][3] = "R";
        let board: Vec<Value> = board
            .into_iter()
            .map(|r| Value::Array(r.into_iter().map(Value::from).collect()))
            .collect();
        f.snapshot = obj! {
            "phase" => "playing", "role" => "guest", "turn" => 3, "board" => board,
            "last_move" => obj! { "row" => 5, "col" => 4, "player" => "host" },
            "last_event" => obj! { "summary" => "host played (5,4)" },
        };
        f.events = vec![
            msg(
                1,
                "sent",
                obj! { "action" => "join", "rows" => 6, "cols" => 7 },
                None,
            ),
            msg(
                2,
                "sent",
                obj! { "action" => "move", "turn" => 1, "col" => 3 },
                None,
            ),
        ];
        f.window = Some(("turn", 3));
        attach(h, &f.write(d), true).await;
        h.key(key(KeyCode::Left));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_hero_duel_bars() {
    snap("hero_duel", async |h: &mut Headless, d: &Path| {
        let mut f = Fixture::new("host-1000", "hero-duel-v1", "autonomous");
        let pair = |a: i64, b: i64| obj! { "host" => a, "guest" => b };
        f.snapshot = obj! {
            "phase" => "playing", "role" => "host", "round" => 4,
            "heroes" => obj! { "host" => "mage", "guest" => "knight" },
            "hp" => pair(62, 35), "hp_max" => pair(80, 100),
            "last_event" => obj! { "summary" => "R3: host lands more, H:62 G:35" },
        };
        f.events = vec![msg(1, "received", obj! { "action" => "join" }, None)];
        attach(h, &f.write(d), false).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_guess_number_prompt() {
    snap("guess_number", async |h: &mut Headless, d: &Path| {
        let mut f = Fixture::new("guest-1000", "guess-number-v1", "human");
        f.snapshot = obj! { "phase" => "playing", "role" => "guest", "attempts" => 2,
        "last_event" => obj! { "summary" => "#2 guessed 50: higher, used 2/7" } };
        f.events = vec![msg(
            1,
            "sent",
            obj! { "action" => "guess", "attempt" => 2, "number" => 50 },
            None,
        )];
        f.window = Some(("attempt", 3));
        f.options = obj! { "range_min" => 1, "range_max" => 100 };
        attach(h, &f.write(d), true).await;
        h.key(ch('7'));
        h.key(ch('5'));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_chat_message_line() {
    snap("chat", async |h: &mut Headless, d: &Path| {
        let mut f = Fixture::new("guest-1000", "human-chat-v1", "human");
        f.snapshot = obj! { "phase" => "chatting", "role" => "guest" };
        f.events = vec![
            msg(
                1,
                "received",
                obj! { "action" => "chat", "text" => "Welcome! I am the house." },
                None,
            ),
            msg(
                2,
                "sent",
                obj! { "action" => "chat", "text" => "hello house" },
                None,
            ),
        ];
        attach(h, &f.write(d), true).await;
        for c in "how are you?".chars() {
            h.key(ch(c));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_game_over() {
    snap("game_over", async |h: &mut Headless, d: &Path| {
        let mut f = rps_fixture("human");
        f.status = "closed";
        f.winner = Some("guest");
        f.window = None;
        f.snapshot.insert("phase", Value::from("game_over"));
        f.snapshot
            .insert("score", Value::Object(obj! { "host" => 0, "guest" => 2 }));
        f.events.push(event(
            9,
            "session_ended",
            obj! { "reason" => "completed" },
            Some("Session ended: completed"),
        ));
        attach(h, &f.write(d), false).await;
    })
    .await;
}

/// A trusted-agent-task-v1 guest: the task pane (id, state and revision,
/// execution, question, artifacts, notes and steps) where games show their
/// snapshot, from the `task` the native hooks keep in snapshot.json.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_task_view() {
    snap("task_view", async |h: &mut Headless, d: &Path| {
        let mut f = Fixture::new("guest-4000", "trusted-agent-task-v1", "autonomous");
        let ev = |id: i64, kind: &str, summary: &str| {
            Value::Object(obj! { "event_id" => id, "kind" => kind, "summary" => summary, "at" => 1_700_000_000_000i64 + id })
        };
        let status = obj! {
            "action" => "task_status", "task_id" => "report-42", "state" => "waiting_local_operator",
            "revision" => 5,
            "events" => vec![
                ev(1, "received", "task received and stored"),
                ev(2, "waiting_inputs", "1 input files expected"),
                ev(3, "artifact_offered", "artifact in1 offered with 1 files"),
                ev(4, "artifact_complete", "artifact in1 received and verified"),
                ev(5, "inputs_ready", "every input artifact verified and unpacked"),
                ev(6, "dispatching", "invocation inv-0011"),
                ev(7, "running", "the file adapter took the task"),
                ev(8, "waiting_local_operator", "attended adapter: the local operator drives the task"),
            ],
            "notes" => vec![Value::Object(obj! { "note_id" => "wn-1", "text" => "reading the sources now", "at" => 5 })],
            "execution" => obj! { "invocation_id" => "inv-0011", "adapter" => "file", "status" => "submitted" },
            "input_request" => obj! { "input_id" => "in-1", "question" => "Which quarter should the report cover?" },
        };
        let frames = [
            obj! { "action" => "task_submit", "task_id" => "report-42", "task_goal" => "Write the quarterly report from the attached notes",
            "execution_class" => "assist" },
            obj! { "action" => "artifact_ack", "task_id" => "report-42", "artifact_id" => "in1", "artifact_state" => "complete",
            "files" => vec![Value::Object(obj! { "path" => "notes.md", "received_chunks" => vec![Value::from(0)], "complete" => true })] },
            obj! { "action" => "agent_note", "task_id" => "report-42", "note_id" => "n1", "note_text" => "keep it under two pages" },
            status.clone(),
        ];
        let view = palaver::session::task::TaskView::from_frames("report-42", frames.iter());
        f.snapshot = obj! { "phase" => "running", "role" => "guest", "task" => view.to_value() };
        f.events = vec![msg(1, "received", status, None)];
        attach(h, &f.write(d), false).await;
    })
    .await;
}

/// A host whose invitation is up and no guest yet: the list says it waits
/// and since when, the pane names its post_id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_waiting_host() {
    snap("waiting_host", async |h: &mut Headless, d: &Path| {
        let post = "a4196a1bf2ee20c4";
        let mut f = Fixture::new("host-3000", "rps-v1", "hybrid");
        f.snapshot = obj! {
            "phase" => "waiting_peer", "role" => "host",
            "last_event" => obj! { "summary" => "Waiting for peer", "structured" => obj! { "role" => "host" } },
        };
        f.events = vec![event(
            0,
            "invite_created",
            obj! { "post_id" => post, "protocol_id" => pid("rps-v1") },
            Some("Invitation a4196a1bf2ee20c4 is open"),
        )];
        // Up for ten minutes (the session started two hours ago).
        f.extra = obj! {
            "post_id" => post, "invited_at" => palaver::session::files::epoch_now() - 600.0,
            "peer_control_mode" => Value::Null,
        };
        attach(h, &f.write(d), false).await;
        let row = &h.app.sessions.rows[0];
        assert_eq!(row.post_id, post);
        assert!(row.waiting_since.is_some());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_feed_raw_filtered_and_searched() {
    snap("feed_raw_search", async |h: &mut Headless, d: &Path| {
        let mut f = rps_fixture("autonomous");
        f.window = None;
        attach(h, &f.write(d), false).await;
        h.key(key(KeyCode::Tab));
        h.key(key(KeyCode::Tab));
        assert_eq!(h.app.sessions.focus, Focus::Feed);
        h.key(ch('r'));
        h.key(ch('f'));
        h.key(ch('/'));
        for c in "reveal".chars() {
            h.key(ch(c));
        }
        h.key(key(KeyCode::Enter));
        assert!(
            h.until(Duration::from_secs(10), |app| app
                .sessions
                .attached
                .as_ref()
                .is_some_and(|a| a.feed.matches.len() == 2))
                .await
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_strategy_editor() {
    snap("strategy_editor", async |h: &mut Headless, d: &Path| {
        let mut f = rps_fixture("hybrid");
        f.window = None;
        attach(h, &f.write(d), false).await;
        h.key(ch('s'));
        h.key(ctrl('p'));
        h.key(ctrl('p'));
        assert!(matches!(h.app.sessions.modal, Some(Modal::Strategy(_))));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_host_form() {
    snap("host_form", async |h: &mut Headless, _d: &Path| {
        // The form needs a community; a dead URL is enough to open it.
        h.app.community = Some(
            palaver::tui::community::Community::connect_with(
                "http://127.0.0.1:9",
                false,
                "tester",
                palaver::identity::KeyPair::from_seed([7; 32]),
            )
            .unwrap(),
        );
        h.key(ch('n'));
        h.key(key(KeyCode::Down));
        h.key(key(KeyCode::Down));
        h.key(key(KeyCode::Down));
        assert!(matches!(h.app.sessions.modal, Some(Modal::Host(_))));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_join_dialog() {
    snap("join_dialog", async |h: &mut Headless, _d: &Path| {
        h.update(Report::Invitations(Ok(invitations())));
        h.key(key(KeyCode::Enter));
        assert!(matches!(h.app.sessions.modal, Some(Modal::Join(_))));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_join_dialog_for_a_protocol_not_installed() {
    snap("join_dialog_fetch", async |h: &mut Headless, _d: &Path| {
        h.update(Report::Invitations(Ok(invitations())));
        // Sorted by alias: connect4-v1, then the unknown fefe… one.
        h.update(Command::Down);
        h.key(key(KeyCode::Enter));
        let Some(Modal::Join(d)) = &h.app.sessions.modal else {
            panic!("no join dialog");
        };
        assert_eq!(d.invitation.post_id, "p4");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_help_overlay() {
    snap("help", async |h: &mut Headless, _d: &Path| {
        h.key(ch('?'));
        assert!(h.app.help.is_some());
    })
    .await;
}

/// The keymap table of docs/console.md, generated from the built-in keymap.
fn keymap_table() -> String {
    use palaver::tui::keymap::{Context, Keymap};
    let k = Keymap::builtin();
    let mut out = String::from("| where | keys | action | what it does |\n|---|---|---|---|\n");
    for ctx in Context::ALL {
        for (keys, name, help) in k.bindings(ctx) {
            let keys = keys.replace('|', "\\|");
            out.push_str(&format!(
                "| {} | `{keys}` | {name} | {help} |\n",
                ctx.name()
            ));
        }
    }
    out
}

#[test]
fn the_console_guide_lists_the_builtin_keymap() {
    let guide =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/console.md")).unwrap();
    let table = keymap_table();
    assert!(
        guide.contains(&table),
        "docs/console.md's keymap table is out of date; it should read:\n\n{table}"
    );
}
