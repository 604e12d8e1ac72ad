//! The console's inbox (F5) and leaderboard (F6) screens, "message this
//! agent" from the three places it starts, the invitations' ELO and karma,
//! and the host form's protocol picker: driven by keys and synthetic
//! reports (no network), with TestBackend snapshots at 80×24 and 160×48.
//! The end-to-end round against the embedded community is at the end.

use crate::common;

use common::console::{ch, ctrl, key};
use crossterm::event::KeyCode;
use palaver::community::social::{Board, InboxEntry, InboxPage, LeaderRow, Listed, Opened, Page};
use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::obj;
use palaver::tui::app::ScreenId;
use palaver::tui::command::Command;
use palaver::tui::report::Report;
use palaver::tui::report::rows::{HostStats, Invitation};
use palaver::tui::report::social::{
    Found, InboxList, InboxReport, LeaderReport, Pick, PickerReport, Ready, Reputation,
};
use palaver::tui::screens::sessions::{Focus, Modal};
use palaver::tui::{Headless, load_settings};
use std::path::Path;
use std::time::{Duration, SystemTime};

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

fn k(c: &str) -> String {
    c.repeat(32)
}

fn ago(s: u64) -> String {
    palaver::utc::iso_at(SystemTime::now() - Duration::from_secs(s))
}

/// A console on `data` with an identity, `w`×`h`; `online`: told its
/// community is at a dead address (tasks start and fail quietly: their
/// reports are never drained here).
fn console(data: &Path, w: u16, h: u16, online: bool) -> Headless {
    KeyPair::init(data, false).unwrap();
    let settings = load_settings(data, None, None).unwrap();
    let mut h = Headless::new(settings, w, h);
    if online {
        h.update(Report::CommunityReady {
            url: "http://127.0.0.1:9".into(),
            embedded: false,
            nickname: "me".into(),
        });
    }
    h
}

fn entry(id: i64, sender: &str, size: i64, secs_ago: u64, read: bool) -> InboxEntry {
    InboxEntry {
        id,
        sender_public_key: sender.into(),
        size,
        created_at: ago(secs_ago),
        expires_at: ago(0),
        read,
    }
}

fn listed() -> Report {
    let entries = vec![
        entry(7, &k("ab"), 212, 40, false),
        entry(6, &k("cd"), 160, 3_700, false),
        entry(5, &k("ef"), 98, 90_000, true),
    ];
    Report::Inbox(Box::new(InboxReport::Listed(Ok(Box::new(InboxList {
        page: InboxPage {
            entries,
            next_cursor: None,
            unread: 2,
            total: 3,
        },
        nicknames: vec![(k("ab"), "ada".into()), (k("ef"), "house".into())],
    })))))
}

fn opened(id: i64, sender: &str, text: &str) -> Report {
    let mut e = entry(id, sender, 212, 40, true);
    e.id = id;
    Report::Inbox(Box::new(InboxReport::Opened(Ok(Box::new(Opened {
        entry: e,
        text: text.into(),
    })))))
}

fn row(rank: i64, nick: &str, key: &str, score: i64, count: i64, level: Option<&str>) -> LeaderRow {
    LeaderRow {
        rank,
        id: rank + 100,
        public_key: key.into(),
        nickname: nick.into(),
        score,
        count,
        level: level.map(str::to_owned),
    }
}

fn board_page(board: Board, cursor: Option<&str>, me: &str, next: Option<&str>) -> Report {
    let base = if cursor.is_some() { 20 } else { 0 };
    let entries = (1..=4)
        .map(|i| {
            let key = if i == 2 && cursor.is_none() {
                me.to_owned()
            } else {
                k(&format!("{:02x}", base + i))
            };
            match board {
                Board::Elo => row(
                    base + i,
                    &format!("agent{}", base + i),
                    &key,
                    1700 - 40 * i,
                    30 - i,
                    None,
                ),
                Board::Karma => row(
                    base + i,
                    &format!("agent{}", base + i),
                    &key,
                    480 - 20 * i,
                    12 - i,
                    Some("high"),
                ),
            }
        })
        .collect();
    Report::Leaders(Box::new(LeaderReport::Page {
        board,
        cursor: cursor.map(str::to_owned),
        page: Ok(Page {
            entries,
            next_cursor: next.map(str::to_owned),
        }),
    }))
}

fn pid(alias: &str) -> String {
    palaver::library::bundled_spec(alias)
        .unwrap()
        .protocol_id()
        .to_owned()
}

/// Three invitations by three hosts: one rated with ELO and karma, one
/// with figures only, one the community does not know.
fn invitations() -> Vec<Invitation> {
    let now = palaver::session::files::epoch_now();
    [
        ("p1", "rps-v1", "house", &k("aa"), "autonomous"),
        ("p2", "connect4-v1", "ada", &k("ab"), "human"),
        ("p3", "guess-number-v1", "bot7", &k("ac"), "hybrid"),
    ]
    .into_iter()
    .map(|(post, alias, nick, key, mode)| {
        let m = obj! {
            "post_id" => post, "protocol_id" => pid(alias), "nickname" => nick, "host_control_mode" => mode,
            "options" => obj! {}, "created_at" => now - 7300.0, "public_key" => key.as_str(), "message" => "",
        };
        let mut i = Invitation::from_json(&m).unwrap();
        if post == "p1" {
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

fn reputations() -> Report {
    Report::Reputation(vec![
        (
            k("aa"),
            Reputation {
                elo: Some(1512),
                karma: Some(320),
            },
        ),
        (
            k("ab"),
            Reputation {
                elo: Some(1440),
                karma: None,
            },
        ),
        (k("ac"), Reputation::default()),
    ])
}

async fn snap(name: &str, online: bool, setup: impl AsyncFn(&mut Headless)) {
    for (w, hgt) in SIZES {
        let tmp = tempfile::tempdir().unwrap();
        let mut h = console(tmp.path(), w, hgt, online);
        setup(&mut h).await;
        let mut screen = h.screen();
        // The identity is new in every run: its key's head is not shown
        // the same twice.
        let me = h.app.settings.me.clone();
        if !me.is_empty() {
            screen = screen.replace(&me[..8], "m3m3m3m3");
        }
        insta::assert_snapshot!(format!("{name}_{w}x{hgt}"), screen);
    }
}

// ------------------------------------------------------------------ inbox

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_list_with_the_unread_count_in_the_header() {
    snap("inbox_list", false, async |h: &mut Headless| {
        h.update(Command::ViewInbox);
        h.update(listed());
        assert_eq!(h.app.inbox.unread, Some(2));
        let screen = h.screen();
        assert!(screen.lines().next().unwrap().contains("✉ 2"), "{screen}");
        assert!(
            screen.contains("ada") && screen.contains("cdcdcdcd…"),
            "{screen}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unread_count_shows_on_every_screen() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 30, false);
    h.update(listed());
    for s in [
        Command::ViewSessions,
        Command::ViewMarket,
        Command::ViewLeaders,
    ] {
        h.update(s);
        let screen = h.screen();
        assert!(screen.lines().next().unwrap().contains("✉ 2"), "{screen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_marks_read_and_lowers_the_unread_count() {
    snap("inbox_read", true, async |h: &mut Headless| {
        h.key(key(KeyCode::F(5)));
        assert_eq!(h.app.screen, ScreenId::Inbox);
        h.update(listed());
        h.key(key(KeyCode::Enter));
        assert_eq!(h.app.inbox.reading, Some(7), "Enter opens the selected one");
        h.update(opened(7, &k("ab"), "good game! again tomorrow at 9?"));
        assert_eq!(h.app.inbox.unread, Some(1));
        assert!(h.app.inbox.entries[0].read);
        assert!(h.app.inbox.open.is_some());
        // Opening it again does not count it twice.
        h.update(opened(7, &k("ab"), "good game! again tomorrow at 9?"));
        assert_eq!(h.app.inbox.unread, Some(1));
        let screen = h.screen();
        assert!(screen.lines().next().unwrap().contains("✉ 1"), "{screen}");
        assert!(screen.contains("good game!"), "{screen}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_poll_is_said_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 80, 24, false);
    let fail = || {
        Report::Inbox(Box::new(InboxReport::Listed(Err(
            "connection refused".into()
        ))))
    };
    h.update(fail());
    assert!(h.app.status.text.contains("connection refused"));
    h.app.status = palaver::tui::note::Note::ok("something else");
    h.update(fail());
    assert_eq!(h.app.status.text, "something else", "not said again");
    h.update(listed());
    assert_eq!(h.app.inbox.poll_error, None);
    h.update(fail());
    assert!(
        h.app.status.text.contains("connection refused"),
        "said again after a success"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_checks_the_key_and_the_length() {
    snap("inbox_compose", true, async |h: &mut Headless| {
        h.update(Command::ViewInbox);
        h.update(listed());
        h.key(ch('n'));
        assert!(h.app.inbox.compose.is_some(), "n composes");
        // Keys are text here: q does not quit.
        for c in "abcq".chars() {
            h.key(ch(c));
        }
        assert!(!h.app.quit);
        h.key(key(KeyCode::Tab));
        for c in "hello".chars() {
            h.key(ch(c));
        }
        h.key(key(KeyCode::Enter));
        let c = h.app.inbox.compose.as_ref().unwrap();
        assert!(
            c.error.as_deref().unwrap().contains("64-hex"),
            "{:?}",
            c.error
        );
        assert!(!c.sending);
        // A good key, 257 characters.
        h.key(key(KeyCode::Tab));
        for _ in 0..4 {
            h.key(key(KeyCode::Backspace));
        }
        h.update(palaver::tui::msg::Msg::Paste(k("9f")));
        h.key(key(KeyCode::Tab));
        h.update(palaver::tui::msg::Msg::Paste("x".repeat(252)));
        assert_eq!(h.app.inbox.compose.as_ref().unwrap().count(), (257, 256));
        h.key(key(KeyCode::Enter));
        let c = h.app.inbox.compose.as_ref().unwrap();
        assert!(c.error.as_deref().unwrap().contains("257"), "{:?}", c.error);
        assert!(!c.sending);
        // 256 goes.
        h.key(key(KeyCode::Backspace));
        h.key(key(KeyCode::Enter));
        assert!(h.app.inbox.compose.as_ref().unwrap().sending);
        // The community's answer closes the form and polls again.
        h.update(Report::Inbox(Box::new(InboxReport::Sent(Err(
            "inbox_full: too many".into(),
        )))));
        let c = h.app.inbox.compose.as_ref().unwrap();
        assert!(!c.sending && c.error.as_deref().unwrap().contains("inbox_full"));
        // Back to a short draft for the picture.
        h.key(key(KeyCode::Tab));
        h.key(key(KeyCode::Tab));
        for _ in 0..256 {
            h.key(key(KeyCode::Backspace));
        }
        for c in "rematch? best of 5".chars() {
            h.key(ch(c));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_and_delete_with_a_confirm() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 80, 24, true);
    h.update(Command::ViewInbox);
    h.update(listed());
    h.key(ch('j'));
    h.key(ch('r'));
    let c = h.app.inbox.compose.as_ref().expect("r replies");
    assert_eq!(c.to, k("cd"));
    h.key(key(KeyCode::Esc));
    assert!(h.app.inbox.compose.is_none());
    h.key(ch('d'));
    assert_eq!(h.app.inbox.confirm_delete, Some(6));
    h.key(key(KeyCode::Esc));
    assert_eq!(h.app.inbox.confirm_delete, None, "Esc keeps it");
    h.key(ch('d'));
    h.key(key(KeyCode::Enter));
    assert_eq!(h.app.inbox.confirm_delete, None);
    h.update(Report::Inbox(Box::new(InboxReport::Deleted(Ok(6)))));
    assert_eq!(h.app.inbox.entries.len(), 2);
    assert_eq!(h.app.inbox.unread, Some(1), "it was unread");
}

// ------------------------------------------------------------ leaderboard

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leaderboard_pages_and_toggles() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 80, 24, true);
    let me = h.app.settings.me.clone();
    h.key(key(KeyCode::F(6)));
    assert_eq!(h.app.screen, ScreenId::Leaders);
    assert!(h.app.leaders.loading(), "showing it reads the first page");
    h.update(board_page(Board::Elo, None, &me, Some("c2")));
    assert_eq!(h.app.leaders.rows.len(), 4);
    assert_eq!(h.app.leaders.page_no, 1);
    h.key(ch('n'));
    // A late answer for another page is not shown.
    h.update(board_page(Board::Karma, None, &me, None));
    assert_eq!(h.app.leaders.board, Board::Elo);
    h.update(board_page(Board::Elo, Some("c2"), &me, None));
    assert_eq!(h.app.leaders.page_no, 2);
    assert_eq!(h.app.leaders.rows[0].rank, 21);
    assert_eq!(h.app.leaders.next_cursor, None);
    h.key(ch('n'));
    assert!(!h.app.leaders.loading(), "the last page has no next");
    h.key(ch('p'));
    h.update(board_page(Board::Elo, None, &me, Some("c2")));
    assert_eq!(h.app.leaders.page_no, 1);
    h.key(ch('t'));
    assert_eq!(h.app.leaders.board, Board::Karma);
    h.update(board_page(Board::Karma, None, &me, Some("k2")));
    assert_eq!(h.app.leaders.rows[0].level.as_deref(), Some("high"));
    h.key(ch('t'));
    assert_eq!(h.app.leaders.board, Board::Elo);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaderboard_snapshots() {
    for (name, board) in [("leaders_elo", Board::Elo), ("leaders_karma", Board::Karma)] {
        snap(name, true, async |h: &mut Headless| {
            let me = h.app.settings.me.clone();
            h.update(Command::ViewLeaders);
            if board == Board::Karma {
                h.update(Command::ToggleBoard);
            }
            h.update(board_page(board, None, &me, Some("c2")));
            h.key(ch('j'));
        })
        .await;
    }
}

// ------------------------------------------------------ message this agent

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_this_agent_from_a_leaderboard_row() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 80, 24, true);
    let me = h.app.settings.me.clone();
    h.update(Command::ViewLeaders);
    h.update(board_page(Board::Elo, None, &me, None));
    h.key(ch('j'));
    h.key(ch('m'));
    assert_eq!(h.app.screen, ScreenId::Leaders, "row 2 is this identity");
    assert!(h.app.status.text.contains("you"));
    h.key(ch('j'));
    h.key(ch('m'));
    assert_eq!(h.app.screen, ScreenId::Inbox);
    let c = h.app.inbox.compose.as_ref().expect("compose is open");
    assert_eq!(c.to, k("03"));
    assert_eq!(c.label, "agent3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_this_agent_from_an_invitation() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 80, 24, true);
    h.update(Report::Invitations(Ok(invitations())));
    assert_eq!(h.app.sessions.focus, Focus::Invitations);
    h.key(ch('j'));
    let host = h.app.sessions.selected_invitation().unwrap();
    h.key(ch('m'));
    assert_eq!(h.app.screen, ScreenId::Inbox);
    let c = h.app.inbox.compose.as_ref().expect("compose is open");
    assert_eq!(c.to, host.public_key);
    assert_eq!(c.label, host.nickname);
    // Typing goes to the message at once.
    h.key(ch('h'));
    assert_eq!(h.app.inbox.compose.as_ref().unwrap().text, "h");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_this_agent_from_a_session() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // A guest's session with its peer on file.
    let parent = d.join("sessions").join("guest-1000");
    let child = parent.join("guest-1000");
    std::fs::create_dir_all(child.join("decision")).unwrap();
    let spec = palaver::library::bundled_spec("rps-v1").unwrap();
    let sess = obj! {
        "role" => "guest", "status" => "closed", "protocol_id" => spec.protocol_id(),
        "protocol_name" => spec.name().unwrap_or(""), "local_control_mode" => "human",
        "started_at" => palaver::session::files::epoch_now() - 60.0,
        "peer_public_key" => k("5e"),
        "state_dir" => parent.display().to_string(), "engine_state_dir" => child.display().to_string(),
    };
    std::fs::write(
        parent.join("session.json"),
        palaver::json::canonical::to_string_ordered(&Value::Object(sess)),
    )
    .unwrap();
    std::fs::write(
        child.join("snapshot.json"),
        palaver::json::canonical::to_string_ordered(&Value::Object(
            obj! { "protocol_id" => spec.protocol_id(), "phase" => "done" },
        )),
    )
    .unwrap();
    std::fs::write(parent.join("events.jsonl"), "").unwrap();
    let mut h = console(d, 80, 24, true);
    assert!(
        h.until(Duration::from_secs(10), |a| !a.sessions.rows.is_empty())
            .await
    );
    // The selected session's peer.
    h.key(key(KeyCode::Tab));
    assert_eq!(h.app.sessions.focus, Focus::Sessions);
    h.key(ch('m'));
    assert_eq!(h.app.screen, ScreenId::Inbox);
    assert_eq!(h.app.inbox.compose.as_ref().unwrap().to, k("5e"));
    // The attached session's peer, from its feed.
    h.key(key(KeyCode::Esc));
    h.update(Command::ViewSessions);
    h.app.attach(&parent);
    assert!(
        h.until(Duration::from_secs(10), |a| a
            .sessions
            .attached
            .as_ref()
            .is_some_and(|x| !x.session.is_empty()))
            .await
    );
    h.app.sessions.focus = Focus::Feed;
    h.app.inbox.compose = None;
    h.key(ch('m'));
    assert_eq!(h.app.screen, ScreenId::Inbox);
    assert_eq!(h.app.inbox.compose.as_ref().unwrap().to, k("5e"));
}

// ----------------------------------------------------- invitations' figures

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invitations_show_elo_and_karma_beside_the_rating() {
    snap("lists_reputation", false, async |h: &mut Headless| {
        h.update(Report::Invitations(Ok(invitations())));
        h.update(reputations());
        let i = &h.app.sessions.invitations;
        assert!(i.iter().all(|i| i.reputation.is_some()));
        let screen = h.screen();
        assert!(screen.contains("ELO 1512"), "{screen}");
        assert!(screen.contains("ELO -"), "an unknown host: {screen}");
        // A refresh keeps the figures known (no new ask within the TTL).
        h.update(Report::Invitations(Ok(invitations())));
        assert!(
            h.app
                .sessions
                .invitations
                .iter()
                .all(|i| i.reputation.is_some())
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reputations_are_asked_once_per_host() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 80, 24, true);
    h.update(Report::Invitations(Ok(invitations())));
    // Two per refresh, in the list's order (connect4's host, then
    // guess-number's); the third waits for the next refresh.
    assert!(h.app.sessions.reputation.asking(&k("ab")));
    assert!(h.app.sessions.reputation.asking(&k("ac")));
    assert!(!h.app.sessions.reputation.asking(&k("aa")));
    h.update(Report::Reputation(vec![
        (k("ab"), Reputation::default()),
        (k("ac"), Reputation::default()),
    ]));
    assert!(!h.app.sessions.reputation.asking(&k("ab")));
    h.update(Report::Invitations(Ok(invitations())));
    assert!(!h.app.sessions.reputation.asking(&k("ab")), "cached");
    assert!(h.app.sessions.reputation.asking(&k("aa")), "its turn now");
}

/// Stats that carry the host's ELO and karma (palaver's community sends
/// them with the rating) fill the row with no request of their own; a
/// host whose stats lack them is still asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_with_the_figures_need_no_request_of_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 80, 24, true);
    let stats = |elo: Option<i64>| {
        let mut v = obj! { "rating_average" => 4.0, "ratings" => 3, "total_sessions" => 9 };
        if let Some(e) = elo {
            v.insert("elo", Value::from(e));
            v.insert("karma", Value::from(350));
        }
        Some(HostStats::from_json(&Value::Object(v)))
    };
    let mut list = invitations();
    list[1].host = stats(Some(1290));
    list[2].host = stats(None);
    h.update(Report::Invitations(Ok(list)));
    assert!(
        !h.app.sessions.reputation.asking(&k("ab")),
        "told by its stats"
    );
    assert!(
        h.app.sessions.reputation.asking(&k("ac")),
        "its stats lack them"
    );
    let shown = h
        .app
        .sessions
        .invitations
        .iter()
        .find(|i| i.public_key == k("ab"))
        .and_then(|i| i.reputation);
    assert_eq!(
        shown,
        Some(Reputation {
            elo: Some(1290),
            karma: Some(350)
        })
    );
}

// ------------------------------------------------------ protocol discovery

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_form_finds_and_installs_a_protocol() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40, true);
    h.key(ch('n'));
    assert!(matches!(h.app.sessions.modal, Some(Modal::Host(_))));
    h.key(ctrl('f'));
    assert!(matches!(h.app.sessions.modal, Some(Modal::Pick(..))));
    let listed = |alias: &str, name: &str| Listed {
        protocol_id: if alias.is_empty() {
            k("fe")
        } else {
            pid(alias)
        },
        name: name.into(),
        description: format!("{name}, a game"),
    };
    let found = Found {
        picks: vec![
            Pick {
                listed: listed("connect4-v1", "Connect Four"),
                local: Some("connect4-v1".into()),
            },
            Pick {
                listed: listed("", "Tic Tac Toe"),
                local: None,
            },
        ],
        next_cursor: Some("more".into()),
    };
    h.update(Report::Picker(Box::new(PickerReport::Found {
        query: String::new(),
        more: false,
        found: Ok(found),
    })));
    // Typing is the query (q and n are text here).
    h.key(ch('q'));
    assert!(!h.app.quit);
    h.key(key(KeyCode::Backspace));
    // Enter takes an installed protocol at once.
    h.key(key(KeyCode::Enter));
    let Some(Modal::Host(f)) = &h.app.sessions.modal else {
        panic!("back to the form");
    };
    assert_eq!(f.alias(), "connect4-v1");
    // One that is not here is fetched; a refusal stays in the picker.
    h.key(ctrl('f'));
    h.update(Report::Picker(Box::new(PickerReport::Found {
        query: String::new(),
        more: false,
        found: Ok(Found {
            picks: vec![Pick {
                listed: listed("", "Tic Tac Toe"),
                local: None,
            }],
            next_cursor: None,
        }),
    })));
    h.key(key(KeyCode::Enter));
    let Some(Modal::Pick(_, p)) = &h.app.sessions.modal else {
        panic!("still picking");
    };
    assert_eq!(p.installing.as_deref(), Some(k("fe").as_str()));
    h.update(Report::Picker(Box::new(PickerReport::Installed(Err((
        k("fe"),
        "the server sent a spec that hashes to 00: refusing it".into(),
    ))))));
    let Some(Modal::Pick(_, p)) = &h.app.sessions.modal else {
        panic!("still picking");
    };
    assert!(p.error.as_deref().unwrap().contains("refusing"));
    assert!(p.installing.is_none());
    // A second try succeeds: the form selects it.
    h.key(key(KeyCode::Enter));
    let spec = palaver::library::bundled_spec("tictactoe-v1")
        .or_else(|| palaver::library::bundled_spec("guess-number-v1"))
        .unwrap()
        .clone();
    h.update(Report::Picker(Box::new(PickerReport::Installed(Ok(
        Ready {
            protocol_id: k("fe"),
            alias: "tictactoe@fefefefe".into(),
            spec: Box::new(spec),
            how: "installed from the community: it runs its hooks program".into(),
        },
    )))));
    let Some(Modal::Host(f)) = &h.app.sessions.modal else {
        panic!("back to the form");
    };
    assert_eq!(f.alias(), "tictactoe@fefefefe");
    assert!(f.spec().is_some());
    assert!(h.app.status.text.contains("installed from the community"));
}

// ------------------------------------------------------------- end to end

/// Another identity writes to the console on its embedded community: the
/// unread count shows in the header, the console opens the message and
/// replies, and the other identity opens the reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_agent_writes_the_console_reads_and_replies() {
    use palaver::community::social;
    let tmp = tempfile::tempdir().unwrap();
    let mut h = common::console::with_community(tmp.path(), "tester").await;
    let url = h.app.community.as_ref().unwrap().url.clone();
    let me = h.app.settings.me.clone();
    let pal = palaver::web::Client::new(&url, KeyPair::generate()).unwrap();
    palaver::services::server::ensure_registered(&pal, "penpal")
        .await
        .unwrap();
    social::inbox_send(&pal, &me, "hello from penpal: rematch?")
        .await
        .unwrap();
    // A refresh asks at once (the poll would within 30 s).
    h.update(Command::Refresh);
    h.update(Command::ViewInbox);
    h.update(Command::Refresh);
    assert!(
        h.until(Duration::from_secs(20), |a| a.inbox.unread == Some(1))
            .await,
        "the unread count did not arrive:\n{}",
        h.screen()
    );
    let screen = h.screen();
    assert!(screen.lines().next().unwrap().contains("✉ 1"), "{screen}");
    assert!(
        h.until(Duration::from_secs(20), |a| a
            .inbox
            .nicks
            .values()
            .any(|n| n == "penpal"))
            .await,
        "the sender is named:\n{}",
        h.screen()
    );
    // Enter opens it; it becomes read.
    h.key(key(KeyCode::Enter));
    assert!(
        h.until(Duration::from_secs(20), |a| a.inbox.open.is_some())
            .await,
        "the message did not open:\n{}",
        h.screen()
    );
    assert_eq!(
        h.app.inbox.open.as_ref().unwrap().text,
        "hello from penpal: rematch?"
    );
    assert!(
        h.until(Duration::from_secs(20), |a| a.inbox.unread == Some(0))
            .await
    );
    let screen = h.screen();
    assert!(!screen.lines().next().unwrap().contains('✉'), "{screen}");
    // r replies to the sender.
    h.key(ch('r'));
    for c in "yes, best of 5".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    assert!(
        h.until(Duration::from_secs(20), |a| a.inbox.compose.is_none())
            .await,
        "the reply was not sent:\n{}",
        h.screen()
    );
    let page = social::inbox_list(&pal, None, None).await.unwrap();
    assert_eq!(page.unread, 1);
    let reply = social::inbox_read(&pal, page.entries[0].id).await.unwrap();
    assert_eq!(reply.text, "yes, best of 5");
    assert_eq!(reply.entry.sender_public_key, me);
    // The invitations' figures come from the same community: a host it
    // knows has them, one it does not shows `-`.
    let pal_key = pal.keys().public_key.clone();
    // Two hosts are asked per refresh, in the list's order (by protocol):
    // connect4's and guess-number's.
    let mut invs = invitations();
    invs[1].public_key = pal_key.clone();
    h.update(Command::ViewSessions);
    h.update(Report::Invitations(Ok(invs)));
    assert!(
        h.until(Duration::from_secs(20), |a| {
            a.sessions.reputation.get(&pal_key).is_some()
                && a.sessions.reputation.get(&k("ac")).is_some()
        })
        .await,
        "no figures:\n{}",
        h.screen()
    );
    let pal_rep = h.app.sessions.reputation.get(&pal_key).unwrap();
    assert!(
        pal_rep.elo.is_some() && pal_rep.karma.is_some(),
        "{pal_rep:?}"
    );
    assert_eq!(
        h.app.sessions.reputation.get(&k("ac")),
        Some(Reputation::default())
    );
    // The leaderboard reads (whoever is on it).
    h.update(Command::ViewLeaders);
    assert!(
        h.until(Duration::from_secs(20), |a| !a.leaders.loading())
            .await
    );
    let error = h.app.leaders.error.clone();
    assert_eq!(error, None, "{}", h.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn picker_snapshot() {
    snap("host_form_picker", true, async |h: &mut Headless| {
        h.key(ch('n'));
        h.key(ctrl('f'));
        for c in "tic".chars() {
            h.key(ch(c));
        }
        let picks = vec![
            Pick {
                listed: Listed {
                    protocol_id: k("fe"),
                    name: "Tic Tac Toe".into(),
                    description: "three in a row on a 3x3 board".into(),
                },
                local: None,
            },
            Pick {
                listed: Listed {
                    protocol_id: pid("connect4-v1"),
                    name: "Connect Four".into(),
                    description: "four in a row, tic-tac-toe with gravity".into(),
                },
                local: Some("connect4-v1".into()),
            },
        ];
        h.update(Report::Picker(Box::new(PickerReport::Found {
            query: "tic".into(),
            more: false,
            found: Ok(Found {
                picks,
                next_cursor: Some("more".into()),
            }),
        })));
        h.key(key(KeyCode::Enter));
        h.update(Report::Picker(Box::new(PickerReport::Installed(Err((
            k("fe"),
            format!(
                "the server sent a spec for {} that hashes to 0000: refusing it",
                k("fe")
            ),
        ))))));
    })
    .await;
}
