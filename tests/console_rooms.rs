//! Rooms in the console (community-room-v1, meeting-room-v1): the room view
//! drawn from a room's one-level state dir written here the way
//! `services::group` writes it (members, messages and system lines, a
//! leader change, refused actions), as TestBackend snapshots; the compose
//! line, the topic box and the close confirmation writing the lines
//! `palaver session action` writes to group-actions.jsonl; odd files shown
//! as unreadable. The real binary joining a room in tmux is in
//! tests/console_rooms_tmux.rs.

use crate::common;

use common::console::{ch, key};
use crossterm::event::KeyCode;
use palaver::json::{Map, Value};
use palaver::obj;
use palaver::tui::command::Command;
use palaver::tui::report::Report;
use palaver::tui::report::rows::Invitation;
use palaver::tui::screens::sessions::{Focus, Modal};
use palaver::tui::{Headless, load_settings};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

/// Keys of the room's members: seat 0 (its owner, who led first), seat 1
/// (this console), seat 2 (who leads after the change), seat 3 (left).
fn pk(n: u8) -> String {
    format!("{n:x}{n:x}").repeat(32)
}
const OWNER: u8 = 0xa;
const ME: u8 = 0xb;
const NEXT: u8 = 0xc;
const GONE: u8 = 0xd;

fn pid(alias: &str) -> String {
    palaver::library::bundled_spec(alias)
        .unwrap()
        .protocol_id()
        .to_owned()
}

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, palaver::json::canonical::to_string_ordered(v)).unwrap();
}

fn event(sec: u32, kind: &str, data: Map) -> String {
    let m = obj! { "ts" => format!("2026-11-30T12:{:02}:{:02}.000000+00:00", sec / 60, sec % 60), "type" => kind, "data" => data };
    palaver::json::canonical::to_string_ordered(&Value::Object(m))
}

fn member(n: u8, seat: i64, status: &str) -> Value {
    Value::Object(obj! {
        "member_id" => format!("m{seat}"), "public_key" => pk(n), "seat" => seat, "status" => status,
    })
}

fn line(id: i64, from: Option<(u8, i64)>, text: &str) -> Value {
    Value::Object(match from {
        Some((n, seat)) => {
            obj! { "id" => id, "kind" => "message", "from" => pk(n), "seat" => seat, "text" => text }
        }
        None => obj! { "id" => id, "kind" => "system", "from" => "", "seat" => -1, "text" => text },
    })
}

/// A room's state dir as `services::group` leaves it for a member.
struct Room {
    name: String,
    alias: &'static str,
    status: &'static str,
    seat: i64,
    view: Map,
    members: Vec<Value>,
    events: Vec<String>,
}

impl Room {
    fn write(&self, data: &Path) -> PathBuf {
        let dir = data.join("sessions").join(&self.name);
        std::fs::create_dir_all(&dir).unwrap();
        write(
            &dir.join("session.json"),
            &Value::Object(obj! {
                "role" => "guest", "post_id" => "p-room", "protocol_id" => pid(self.alias),
                "group_id" => "0123456789abcdef0123456789abcdef", "session_id" => "0123456789abcdef0123456789abcdef",
                "group_role" => "member", "local_control_mode" => "human", "status" => self.status,
                "member_id" => format!("m{}", self.seat), "seat" => self.seat, "leader_epoch" => 1,
                // Two days before now, whatever the date: the sessions list shows the age.
                "started_at" => palaver::session::files::epoch_now() - 2.0 * 86_400.0 - 3_600.0,
            }),
        );
        let spec = palaver::library::bundled_spec(self.alias).unwrap();
        write(
            &dir.join("snapshot.json"),
            &Value::Object(obj! {
                "phase" => "group_active", "role" => "guest", "protocol_name" => spec.name().unwrap_or(""),
                "group" => obj! {
                    "group_id" => "0123456789abcdef0123456789abcdef", "leader_public_key" => pk(NEXT),
                    "leader_epoch" => 1, "seq" => 12, "membership_version" => 5,
                    "members" => Value::Array(self.members.clone()),
                    "checkpoint_hash" => "ee".repeat(32), "recovery_mode" => "exact",
                },
                "group_view" => Value::Object(self.view.clone()),
                "group_events" => Vec::<Value>::new(), "direct" => Vec::<Value>::new(),
                "completed" => false, "outcome" => Value::Null,
            }),
        );
        std::fs::write(
            dir.join("events.jsonl"),
            self.events
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
        )
        .unwrap();
        dir
    }
}

fn community_room() -> Room {
    let presence = obj! {
        pk(OWNER) => obj! { "seat" => 0, "status" => "online" },
        pk(ME) => obj! { "seat" => 1, "status" => "online" },
        pk(NEXT) => obj! { "seat" => 2, "status" => "online" },
        pk(GONE) => obj! { "seat" => 3, "status" => "left" },
    };
    let messages = vec![
        line(1, Some((OWNER, 0)), "Welcome to the planning room."),
        line(
            2,
            Some((ME, 1)),
            "Hi all, I brought the notes from Tuesday.",
        ),
        line(3, None, "Seat 2 joined the room"),
        line(
            4,
            Some((NEXT, 2)),
            "Great. Can we start with the budget? It is the one thing we have to settle before the end of the week, and nobody has read the last draft yet.",
        ),
        line(5, None, "Seat 3 joined the room"),
        line(6, None, "Seat 3 left the room"),
        line(7, None, "Authority moved from aaaaaaaa to cccccccc"),
        line(8, Some((ME, 1)), "Still here after the handover."),
        line(9, None, "Seat 1 changed the topic"),
    ];
    Room {
        name: "guest-group-1796000000000".into(),
        alias: "community-room-v1",
        status: "running",
        seat: 1,
        view: obj! {
            "topic" => "Budget 2027", "messages" => messages, "presence" => presence, "closed" => false,
            "you" => obj! { "public_key" => pk(ME), "seat" => 1 },
        },
        members: vec![
            member(OWNER, 0, "active"),
            member(ME, 1, "active"),
            member(NEXT, 2, "active"),
            member(GONE, 3, "left"),
        ],
        events: vec![
            event(
                1,
                "peer_joined",
                obj! { "host_public_key" => pk(OWNER), "group_id" => "0123456789abcdef0123456789abcdef" },
            ),
            event(
                2,
                "group_frame_received",
                obj! { "leader_epoch" => 0, "seq" => 0, "frame_hash" => "11".repeat(32) },
            ),
            event(
                30,
                "group_leader_disconnected",
                obj! { "group_id" => "0123456789abcdef0123456789abcdef", "leader_epoch" => 0, "seq" => 7 },
            ),
            event(
                34,
                "group_leader_changed",
                obj! { "group_id" => "0123456789abcdef0123456789abcdef", "leader_public_key" => pk(NEXT), "leader_epoch" => 1 },
            ),
            event(
                40,
                "group_action_receipt",
                obj! { "_group" => "receipt", "status" => "accepted", "client_seq" => 2, "action_id" => "ab".repeat(16) },
            ),
            event(
                41,
                "group_action_receipt",
                obj! {
                    "_group" => "receipt", "status" => "rejected", "client_seq" => 3, "action_id" => "cd".repeat(16),
                    "reason" => "only the room owner at seat 0 can close the room",
                },
            ),
        ],
    }
}

fn meeting_room() -> Room {
    let members = obj! {
        pk(OWNER) => obj! { "seat" => 0, "status" => "active" },
        pk(ME) => obj! { "seat" => 1, "status" => "active" },
        pk(NEXT) => obj! { "seat" => 2, "status" => "left" },
    };
    let agenda = vec![
        Value::Object(
            obj! { "id" => 1, "text" => "Review last week's notes", "created_by" => pk(OWNER), "status" => "done" },
        ),
        Value::Object(
            obj! { "id" => 2, "text" => "Pick the venue", "created_by" => pk(ME), "status" => "active" },
        ),
        Value::Object(
            obj! { "id" => 3, "text" => "Dates", "created_by" => pk(ME), "status" => "pending" },
        ),
    ];
    let vote = obj! {
        "id" => 4, "question" => "Which venue?", "choices" => vec![Value::from("Hall A"), Value::from("Garden"), Value::from("Online")],
        "counts" => vec![Value::from(1), Value::from(1), Value::from(0)], "ballot_count" => 2, "my_choice" => 1, "status" => "open",
    };
    let items = vec![
        Value::Object(
            obj! { "id" => 5, "text" => "Book the hall", "assignee" => pk(OWNER), "created_by" => pk(ME), "done" => false },
        ),
        Value::Object(
            obj! { "id" => 6, "text" => "Send the minutes", "assignee" => pk(ME), "created_by" => pk(OWNER), "done" => true },
        ),
    ];
    Room {
        name: "guest-group-1796000000001".into(),
        alias: "meeting-room-v1",
        status: "running",
        seat: 1,
        view: obj! {
            "title" => "Offsite planning", "facilitator" => pk(OWNER), "members" => members, "agenda" => agenda,
            "active_agenda" => 1, "speaking_queue" => vec![Value::from(pk(OWNER))], "active_speaker" => pk(ME),
            "vote" => vote, "vote_history" => Vec::<Value>::new(), "action_items" => items, "ended" => false,
            "you" => obj! { "public_key" => pk(ME), "seat" => 1, "is_facilitator" => false },
        },
        members: vec![
            member(OWNER, 0, "active"),
            member(ME, 1, "active"),
            member(NEXT, 2, "left"),
        ],
        events: vec![
            event(
                34,
                "group_leader_changed",
                obj! { "group_id" => "0123456789abcdef0123456789abcdef", "leader_public_key" => pk(NEXT), "leader_epoch" => 1 },
            ),
            event(
                50,
                "group_action_receipt",
                obj! {
                    "_group" => "receipt", "status" => "rejected", "client_seq" => 1, "action_id" => "cd".repeat(16),
                    "reason" => "this action requires the meeting facilitator",
                },
            ),
        ],
    }
}

fn console(data: &Path, w: u16, h: u16) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    Headless::new(settings, w, h)
}

/// The owner's nickname, as the invitation list tells it.
fn owner_invitation() -> Invitation {
    let m = obj! {
        "post_id" => "p-room", "protocol_id" => pid("community-room-v1"), "nickname" => "ada",
        "host_control_mode" => "human", "options" => obj! {}, "created_at" => palaver::session::files::epoch_now() - 60.0,
        "public_key" => pk(OWNER), "message" => "",
    };
    Invitation::from_json(&m).unwrap()
}

/// Attaches a room and waits until its snapshot and `notices` notices are in.
async fn attach_room(h: &mut Headless, dir: &Path, notices: usize) {
    h.app.attach(dir);
    let ok = h
        .until(Duration::from_secs(10), |app| {
            app.sessions.room().is_some_and(|r| {
                r.model.as_ref().is_ok_and(|m| m.started) && r.notices.len() >= notices
            }) && !app.sessions.rows.is_empty()
        })
        .await;
    assert!(ok, "the room did not load:\n{}", h.screen());
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

fn actions(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("group-actions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| palaver::json::parse_str(l).unwrap())
        .collect()
}

/// Waits until group-actions.jsonl has `n` lines and returns their actions.
async fn queued(h: &mut Headless, dir: &Path, n: usize) -> Vec<Value> {
    let ok = h
        .until(Duration::from_secs(10), |_| actions(dir).len() >= n)
        .await;
    assert!(ok, "{n} actions were not queued:\n{}", h.screen());
    actions(dir)
        .into_iter()
        .map(|l| l.get("action").cloned().unwrap())
        .collect()
}

fn text(v: &Value) -> String {
    palaver::json::canonical::to_string_ordered(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_community_room() {
    snap("room_community", async |h: &mut Headless, d: &Path| {
        h.update(Report::Invitations(Ok(vec![owner_invitation()])));
        let dir = community_room().write(d);
        attach_room(h, &dir, 3).await;
        assert_eq!(
            h.app.sessions.focus,
            Focus::Prompt,
            "a live room focuses its compose line"
        );
        for c in "Agreed".chars() {
            h.key(ch(c));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_community_room_scrolled_back() {
    snap("room_scrolled", async |h: &mut Headless, d: &Path| {
        let dir = community_room().write(d);
        attach_room(h, &dir, 3).await;
        h.key(key(KeyCode::Esc));
        assert_eq!(h.app.sessions.focus, Focus::Feed);
        h.key(ch('k'));
        h.key(ch('k'));
        h.key(ch('k'));
        assert_eq!(h.app.sessions.room().unwrap().scroll, 3);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_meeting_room() {
    snap("room_meeting", async |h: &mut Headless, d: &Path| {
        let dir = meeting_room().write(d);
        attach_room(h, &dir, 2).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_room_with_an_unreadable_snapshot() {
    snap("room_unreadable", async |h: &mut Headless, d: &Path| {
        let dir = community_room().write(d);
        // Torn mid-write (as a crash may leave a file no runtime wrote).
        std::fs::write(dir.join("snapshot.json"), r#"{"phase":"group_active","gro"#).unwrap();
        h.app.attach(&dir);
        let ok = h
            .until(Duration::from_secs(10), |app| {
                app.sessions.room().is_some_and(|r| r.model.is_err())
            })
            .await;
        assert!(ok, "{}", h.screen());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_room_files_render_and_the_next_good_write_shows_again() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 100, 30);
    let dir = community_room().write(tmp.path());
    attach_room(&mut h, &dir, 3).await;
    // Each odd snapshot is drawn (unreadable or partial), never a panic.
    for odd in [
        "[1,2,3]",
        r#"{"group":"x"}"#,
        r#"{"group":{"members":{"a":1}}}"#,
        r#"{"group":{},"group_view":{"messages":[{"text":5,"seat":"x"},7],"presence":[]}}"#,
        r#"{"group":{"members":[{"public_key":"é","seat":-9e99}]},"group_view":{"topic":"\u0000\t\u001b[31mred","you":{"seat":"0"}}}"#,
        "",
    ] {
        std::fs::write(dir.join("snapshot.json"), odd).unwrap();
        // A new mtime or size for the watcher.
        std::thread::sleep(Duration::from_millis(20));
        let before = h.app.sessions.room().unwrap().model.clone();
        h.until(Duration::from_millis(400), |app| {
            app.sessions.room().unwrap().model != before
        })
        .await;
        h.screen();
    }
    let good = community_room().write(tmp.path());
    assert_eq!(good, dir);
    assert!(
        h.until(Duration::from_secs(10), |app| app
            .sessions
            .room()
            .unwrap()
            .model
            .as_ref()
            .is_ok_and(|m| m.topic == "Budget 2027"))
            .await
    );
    assert!(h.screen().contains("Budget 2027"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compose_line_queues_the_action_palaver_session_action_would() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let dir = community_room().write(tmp.path());
    attach_room(&mut h, &dir, 3).await;
    assert_eq!(h.app.sessions.focus, Focus::Prompt);
    // q is text here, not quit.
    for c in "quick question: ok?".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    let a = queued(&mut h, &dir, 1).await;
    assert_eq!(
        text(&a[0]),
        r#"{"kind":"send","text":"quick question: ok?"}"#
    );
    assert!(!h.app.quit);
    let line = &actions(&dir)[0];
    let ts = line.get("ts").and_then(Value::as_str).unwrap();
    assert!(ts.ends_with('Z') && ts.len() == 20, "{ts}");
    assert!(
        h.until(Duration::from_secs(5), |app| app
            .sessions
            .room()
            .is_some_and(
                |r| r.input.is_empty() && r.note.as_ref().is_some_and(|n| n.ok)
            ))
        .await
    );

    // Text starting with { is the action itself.
    for c in r#"{"kind":"send","text":"raw"}"#.chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    let a = queued(&mut h, &dir, 2).await;
    assert_eq!(text(&a[1]), r#"{"kind":"send","text":"raw"}"#);
    // Bad JSON stays in the line with the reason; nothing is queued.
    for c in "{nope".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    let r = h.app.sessions.room().unwrap();
    assert_eq!(r.input, "{nope");
    assert!(
        r.note
            .as_ref()
            .is_some_and(|n| !n.ok && n.text.starts_with("not JSON"))
    );
    assert_eq!(actions(&dir).len(), 2);
    for _ in 0..5 {
        h.key(key(KeyCode::Backspace));
    }

    // t sets the topic (from the stream), after Esc left the line.
    h.key(key(KeyCode::Esc));
    assert_eq!(h.app.sessions.focus, Focus::Feed);
    h.key(ch('t'));
    assert!(matches!(h.app.sessions.modal, Some(Modal::Topic(ref t)) if t == "Budget 2027"));
    for _ in 0.."2027".len() {
        h.key(key(KeyCode::Backspace));
    }
    for c in "2028".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    let a = queued(&mut h, &dir, 3).await;
    assert_eq!(text(&a[2]), r#"{"kind":"set_topic","topic":"Budget 2028"}"#);

    // Seat 1 cannot close the room: X says why and asks nothing.
    h.key(ch('X'));
    assert!(h.app.sessions.modal.is_none());
    assert!(
        !h.app.status.ok && h.app.status.text.contains("only seat 0"),
        "{:?}",
        h.app.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_closes_the_room_after_a_confirmation() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut room = community_room();
    room.seat = 0;
    room.view.insert(
        "you",
        Value::Object(obj! { "public_key" => pk(OWNER), "seat" => 0 }),
    );
    let dir = room.write(tmp.path());
    attach_room(&mut h, &dir, 3).await;
    h.key(key(KeyCode::Esc));
    h.key(ch('X'));
    assert!(matches!(h.app.sessions.modal, Some(Modal::CloseRoom(_))));
    assert!(h.screen().contains("Close the room?"));
    // Esc keeps it open.
    h.key(key(KeyCode::Esc));
    assert!(h.app.sessions.modal.is_none());
    h.key(ch('X'));
    h.key(key(KeyCode::Enter));
    let a = queued(&mut h, &dir, 1).await;
    assert_eq!(text(&a[0]), r#"{"kind":"close_room"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_meeting_takes_json_actions_and_says_so_for_plain_text() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let dir = meeting_room().write(tmp.path());
    attach_room(&mut h, &dir, 2).await;
    for c in "hello".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    let r = h.app.sessions.room().unwrap();
    assert!(
        r.note
            .as_ref()
            .is_some_and(|n| !n.ok && n.text.contains("add_agenda"))
    );
    assert_eq!(r.input, "hello");
    for _ in 0..5 {
        h.key(key(KeyCode::Backspace));
    }
    for c in r#"{"kind":"cast_vote","choice":2}"#.chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    let a = queued(&mut h, &dir, 1).await;
    assert_eq!(text(&a[0]), r#"{"kind":"cast_vote","choice":2}"#);
    // A meeting has no topic; only its facilitator ends it.
    h.key(key(KeyCode::Esc));
    h.key(ch('t'));
    assert!(h.app.sessions.modal.is_none());
    h.key(ch('X'));
    assert!(h.app.sessions.modal.is_none());
    assert!(
        h.app.status.text.contains("facilitator"),
        "{:?}",
        h.app.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_room_sends_nothing_and_the_help_lists_the_room_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut room = community_room();
    room.status = "closed";
    let dir = room.write(tmp.path());
    attach_room(&mut h, &dir, 3).await;
    // An ended room does not take the focus; its line can still be reached.
    assert_ne!(h.app.sessions.focus, Focus::Prompt);
    h.update(Command::FocusNext);
    h.update(Command::FocusNext);
    h.update(Command::FocusNext);
    assert_eq!(h.app.sessions.focus, Focus::Prompt);
    for c in "late".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    let r = h.app.sessions.room().unwrap();
    assert!(
        r.note
            .as_ref()
            .is_some_and(|n| !n.ok && n.text.contains("ended"))
    );
    assert!(actions(&dir).is_empty());
    // The keys of the room are in the help (generated from the keymap).
    h.key(key(KeyCode::Esc));
    h.key(ch('?'));
    let mut all = String::new();
    for _ in 0..200 {
        all.push_str(&h.screen());
        h.key(key(KeyCode::Down));
    }
    for want in ["[room]", "compose", "set_topic", "close_room"] {
        assert!(all.contains(want), "the help lacks {want}");
    }
}

#[test]
fn the_host_form_offers_the_rooms() {
    let f = palaver::tui::panes::dialogs::HostForm::new(palaver::engine::ControlMode::Human);
    for alias in ["community-room-v1", "meeting-room-v1"] {
        assert!(f.aliases.iter().any(|a| a == alias), "{:?}", f.aliases);
    }
}

/// A console on a remote community (in this process), reaching peers on
/// loopback like the rooms it meets here.
async fn console_on(url: &str, data: &Path, nickname: &str) -> Headless {
    palaver::identity::KeyPair::init(data, false).unwrap();
    let mut h = console(data, 120, 40);
    h.start_community(palaver::tui::tasks::Startup {
        data_dir: data.to_owned(),
        server: Some(url.to_owned()),
        nickname: nickname.into(),
        house: false,
        house_round_delay: 0,
    });
    assert!(
        h.until(Duration::from_secs(30), |a| a.community.is_some())
            .await,
        "the community: {}",
        h.app.community_status
    );
    h.app.community.as_mut().unwrap().peer = palaver::services::remote::PeerOpts::direct();
    h
}

fn room_dir_in(data: &Path) -> Option<PathBuf> {
    std::fs::read_dir(data.join("sessions"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().contains("-group-"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_console_joins_a_room_from_the_invitations_and_speaks_in_it() {
    use common::rooms;
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = rooms::server(&tmp.path().join("community.sqlite"), 30).await;
    let ada = rooms::who(&url, tmp.path(), "ada").await;
    let mut host = rooms::host(&ada, "community-room-v1", Map::new()).await;
    let hdir = host.state_dir().await;

    let data = tmp.path().join("console");
    let mut h = console_on(&url, &data, "cleo").await;
    assert!(
        h.until(Duration::from_secs(20), |a| a
            .sessions
            .invitations
            .iter()
            .any(|i| i.alias == "community-room-v1"))
            .await,
        "{}",
        h.screen()
    );
    h.key(key(KeyCode::Enter));
    assert!(matches!(h.app.sessions.modal, Some(Modal::Join(_))));
    h.key(key(KeyCode::Enter));
    let joined = h
        .until(Duration::from_secs(60), |a| {
            a.sessions.room().is_some_and(|r| {
                r.model
                    .as_ref()
                    .is_ok_and(|m| m.started && m.members.len() == 2 && m.you_seat == Some(1))
            })
        })
        .await;
    assert!(joined, "{}", h.screen());
    assert_eq!(h.app.sessions.focus, Focus::Prompt);
    for c in "hello from the console".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    rooms::wait_message(&hdir, "hello from the console", Duration::from_secs(30)).await;
    // The leader's line comes back to the console's stream.
    rooms::say(&hdir, "welcome, cleo");
    assert!(
        h.until(Duration::from_secs(30), |a| a.sessions.room().is_some_and(
            |r| r
                .model
                .as_ref()
                .is_ok_and(|m| m.messages.iter().any(|x| x.text == "welcome, cleo"))
        ))
        .await,
        "{}",
        h.screen()
    );
    let screen = h.screen();
    assert!(
        screen.contains("▸[1] you: hello from the console"),
        "{screen}"
    );
    assert!(screen.contains("[0] ada: welcome, cleo"), "{screen}");
    assert!(room_dir_in(&data).is_some());
    host.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_console_hosts_a_room_from_the_host_form() {
    use common::rooms;
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = rooms::server(&tmp.path().join("community.sqlite"), 30).await;
    let data = tmp.path().join("console");
    let mut h = console_on(&url, &data, "cleo").await;
    h.key(ch('n'));
    let Some(Modal::Host(form)) = &h.app.sessions.modal else {
        panic!("no host form");
    };
    let n = form.aliases.len();
    let want = form
        .aliases
        .iter()
        .position(|a| a == "community-room-v1")
        .unwrap();
    for _ in 0..(want + n - form.alias_ix) % n {
        h.key(key(KeyCode::Right));
    }
    let Some(Modal::Host(form)) = &h.app.sessions.modal else {
        panic!("no host form");
    };
    assert_eq!(form.alias(), "community-room-v1");
    h.key(key(KeyCode::Enter));
    // The room's dir is attached at once; the lobby waits for a member.
    assert!(
        h.until(Duration::from_secs(30), |a| a.sessions.room().is_some()
            && a.sessions.hosting_posts().next().is_some())
            .await,
        "{}",
        h.screen()
    );
    let post = h.app.sessions.hosting_posts().next().unwrap().to_owned();
    let bo = rooms::who(&url, tmp.path(), "bo").await;
    let mut member = rooms::join(&bo, "community-room-v1", &post);
    let mdir = member.state_dir().await;
    assert!(
        h.until(Duration::from_secs(60), |a| a.sessions.room().is_some_and(
            |r| r
                .model
                .as_ref()
                .is_ok_and(|m| m.started && m.owner() && m.members.len() == 2)
        ))
        .await,
        "{}",
        h.screen()
    );
    for c in "hi bo".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    rooms::wait_message(&mdir, "hi bo", Duration::from_secs(30)).await;
    // The owner closes it, after the question.
    h.key(key(KeyCode::Esc));
    h.key(ch('X'));
    h.key(key(KeyCode::Enter));
    assert!(
        h.until(Duration::from_secs(30), |a| a
            .sessions
            .room()
            .is_some_and(|r| r.model.as_ref().is_ok_and(|m| m.closed)))
            .await,
        "{}",
        h.screen()
    );
    member.stop();
}
