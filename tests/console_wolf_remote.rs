//! A remote seat in the console: the werewolf screen's join flow (`J`: ws
//! URL, name, token, control mode) seats the console at an in-process
//! `palaver wolf serve` with four bot clients; every request is answered
//! by keys until the game ends, and the server's finished game is checked
//! against what the console showed.

use crate::common;

use common::console::{ch, ctrl, key};
use crossterm::event::KeyCode;
use palaver::engine::ControlMode;
use palaver::tui::app::ScreenId;
use palaver::tui::screen::Screen;
use palaver::tui::screens::wolf::board::Item;
use palaver::tui::screens::wolf::prompt::Input;
use palaver::tui::screens::wolf::{Dialog, Source};
use palaver::tui::{Headless, load_settings};
use palaver::werewolf::agent::{BotDecider, JoinOptions, join};
use palaver::werewolf::bot::Bot;
use palaver::werewolf::config::Config;
use palaver::werewolf::game::GameEvent;
use palaver::werewolf::server::{Server, serve};
use palaver::werewolf::{Role, Team};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

fn typed(h: &mut Headless, s: &str) {
    for c in s.chars() {
        h.key(ch(c));
    }
}

/// A wolf server on loopback with four bot clients (as `palaver wolf serve
/// --bots 4` with matching.self_match = false: five teams, one seat each),
/// and the fifth seat the console's team7.
async fn server_with_four_bots() -> (std::sync::Arc<Server>, std::net::SocketAddr) {
    let mut cfg = Config::default_for(5).unwrap();
    cfg.matching.self_match = false;
    let srv = Server::new(cfg, 11).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, srv.clone()));
    for i in 1..=4u64 {
        let opts = JoinOptions {
            url: format!("ws://{addr}/ws"),
            name: format!("pbot{}1", (b'A' + i as u8 - 1) as char),
            token: None,
            seed: i,
        };
        tokio::spawn(async move {
            let mut d = BotDecider(Bot::new(i));
            let _ = join(&opts, &mut d).await;
        });
    }
    (srv, addr)
}

/// Fills the join dialog (already open) for team7 at `addr` in `mode`
/// (the dialog starts at human; each → moves one mode on).
fn seat_team7(h: &mut Headless, addr: std::net::SocketAddr, rights: usize) {
    let default_url = match &h.app.wolf.dialog {
        Some(Dialog::Join { url, .. }) => url.clone(),
        other => panic!("no join dialog: {other:?}"),
    };
    for _ in 0..default_url.len() {
        h.key(key(KeyCode::Backspace));
    }
    typed(h, &format!("ws://{addr}/ws"));
    h.key(key(KeyCode::Tab));
    for _ in 0..10 {
        h.key(key(KeyCode::Backspace));
    }
    typed(h, "team7");
    h.key(key(KeyCode::Tab));
    h.key(key(KeyCode::Tab));
    for _ in 0..rights {
        h.key(key(KeyCode::Right));
    }
    h.key(key(KeyCode::Enter));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_seat_in_hybrid_mode_plays_the_bots_proposals_to_the_end() {
    let (srv, addr) = server_with_four_bots().await;
    let d = tempfile::tempdir().unwrap();
    let settings = load_settings(d.path(), None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    h.key(key(KeyCode::F(3)));
    h.key(ch('J'));
    seat_team7(&mut h, addr, 1);
    assert!(h.app.wolf.dialog.is_none(), "{}", h.screen());
    assert_eq!(h.app.wolf.source, Source::Play(ControlMode::Hybrid));
    let mut answered = 0;
    loop {
        assert!(
            h.until(LONG, |a| a.wolf.decision.is_some() || a.wolf.ended)
                .await,
            "neither a question nor the end: {}",
            h.screen()
        );
        if h.app.wolf.ended && h.app.wolf.decision.is_none() {
            break;
        }
        let d = h.app.wolf.decision.as_ref().unwrap();
        let proposal = d.proposal.clone().expect("hybrid: the bot proposes");
        // The coach agrees: Enter sends what the bot proposed (Skip/Over
        // through their keys).
        match proposal.as_str() {
            "Over" => h.key(ctrl('o')),
            "Skip" => h.key(ctrl('k')),
            _ => {
                assert_eq!(d.current().as_deref(), Some(proposal.as_str()));
                h.key(key(KeyCode::Enter));
            }
        }
        answered += 1;
        let note = h.app.wolf.note.clone().unwrap();
        assert!(note.ok, "the answer was refused or late: {note:?}");
        assert!(answered < 200, "the game does not end");
    }
    let note = h.app.wolf.note.clone().unwrap();
    assert!(note.ok && note.text.contains("0 fallbacks"), "{note:?}");
    let outcomes = tokio::time::timeout(LONG, srv.wait_finished(1))
        .await
        .expect("the server finished the game");
    assert!(outcomes[0].errors.is_empty(), "{:?}", outcomes[0].errors);
    assert_ne!(outcomes[0].winner, Team::None);
    assert!(answered > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_seat_in_human_mode_answered_by_keys_to_the_end() {
    let (srv, addr) = server_with_four_bots().await;
    let d = tempfile::tempdir().unwrap();
    let settings = load_settings(d.path(), None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    h.key(key(KeyCode::F(3)));
    assert_eq!(h.app.screen, ScreenId::Werewolf);
    assert!(h.screen().contains("take a seat at a wolf server"));

    // The join dialog: a wrong URL is refused and the dialog stays.
    h.key(ch('J'));
    assert!(h.screen().contains("Take a seat at a wolf server"));
    let default_url = match &h.app.wolf.dialog {
        Some(Dialog::Join { url, .. }) => url.clone(),
        other => panic!("no join dialog: {other:?}"),
    };
    for _ in 0..default_url.len() {
        h.key(key(KeyCode::Backspace));
    }
    typed(&mut h, &format!("http://{addr}"));
    h.key(key(KeyCode::Enter));
    assert!(matches!(h.app.wolf.dialog, Some(Dialog::Join { .. })));
    assert!(!h.app.wolf.note.clone().unwrap().ok);
    // Name team7, no token, mode human (the first).
    seat_team7(&mut h, addr, 0);
    assert!(h.app.wolf.dialog.is_none(), "{}", h.screen());
    assert_eq!(h.app.wolf.source, Source::Play(ControlMode::Human));
    assert!(
        h.screen()
            .contains(&format!("playing team7 at ws://{addr}/ws"))
    );

    let mut answered = 0;
    let mut said = 0;
    let mut whispers_seen = false;
    loop {
        assert!(
            h.until(LONG, |a| a.wolf.decision.is_some() || a.wolf.ended)
                .await,
            "neither a question nor the end: {}",
            h.screen()
        );
        if h.app.wolf.ended && h.app.wolf.decision.is_none() {
            break;
        }
        let d = h.app.wolf.decision.as_ref().unwrap();
        let me = d.view.me.clone();
        // The board is this seat's: its own seat, its own role, and no
        // other role unless it is a wolf seeing wolves.
        let b = h.app.wolf.board.as_ref().unwrap();
        let mine = b.viewer.expect("a player's board").idx;
        assert_eq!(b.name(mine), me);
        assert_eq!(Some(b.seat(mine).unwrap().role), d.view.role);
        for s in &b.seats {
            if s.idx != mine && b.role_known(s.idx) {
                assert_eq!(d.view.role, Some(Role::Werewolf));
                assert_eq!(s.role, Role::Werewolf);
            }
        }
        whispers_seen |= b
            .days
            .values()
            .flatten()
            .any(|i| matches!(i, Item::Talk { whisper: true, .. }));
        match d.input {
            Input::Text { .. } if d.view.remain_count.unwrap_or(0) >= 3 => {
                typed(&mut h, &format!("remote {me} here, hear me @"));
                h.key(key(KeyCode::Tab));
                h.key(key(KeyCode::Enter));
                said += 1;
            }
            Input::Text { .. } => h.key(ctrl('o')),
            Input::Pick { .. } => {
                h.key(key(KeyCode::Down));
                h.key(key(KeyCode::Enter));
            }
        }
        answered += 1;
        let note = h.app.wolf.note.clone().unwrap();
        assert!(note.ok, "the answer was late: {note:?}");
        assert!(answered < 200, "the game does not end");
    }
    let s = h.screen();
    let note = h.app.wolf.note.clone().unwrap();
    assert!(note.ok, "{note:?} {s}");
    assert!(note.text.contains("0 fallbacks"), "{note:?}");
    assert!(answered > 0 && said > 0);

    // The server's finished game is the one the console showed.
    let outcomes = tokio::time::timeout(LONG, srv.wait_finished(1))
        .await
        .expect("the server finished the game");
    let out = &outcomes[0];
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let seat = out
        .seats
        .iter()
        .find(|s| s.original_name == "team7")
        .expect("team7 sat in the game");
    let b = h.app.wolf.board.as_ref().unwrap();
    let f = b.finish.as_ref().expect("the board shows the end");
    assert_eq!(f.winner, out.winner, "{s}");
    assert_ne!(f.winner, Team::None);
    assert_eq!(b.game_id, out.game_id);
    assert_eq!(b.name(b.viewer.unwrap().idx), seat.name);
    // At the end every role is told, and the board shows the true ones.
    for sv in &out.seats {
        let bs = b.seats.iter().find(|x| x.name == sv.name).unwrap();
        assert_eq!(bs.role, sv.role, "{}", sv.name);
        assert!(b.role_known(bs.idx));
    }
    // What was typed reached the server's game.
    let feed = srv
        .games()
        .into_iter()
        .find(|g| g.id == out.game_id)
        .unwrap();
    let typed_talks = feed
        .events()
        .iter()
        .filter(|e| {
            matches!(e, GameEvent::Talk { idx, talk, .. }
            if *idx == seat.idx && talk.text.contains("hear me"))
        })
        .count();
    assert!(typed_talks > 0 && typed_talks <= said);
    // The board's talk matches the server's for what the seat heard.
    let server_talks = feed
        .events()
        .iter()
        .filter(|e| matches!(e, GameEvent::Talk { whisper: false, .. }))
        .count();
    let board_talks = b
        .days
        .values()
        .flatten()
        .filter(|i| matches!(i, Item::Talk { whisper: false, .. }))
        .count();
    assert_eq!(board_talks, server_talks);
    if seat.role != Role::Werewolf {
        assert!(!whispers_seen, "a villager's board shows whispers");
    }
    assert_eq!(h.app.wolf.running(), 0);
    println!(
        "answered {answered} requests ({said} talks typed) as {}",
        seat.role.as_str()
    );
}
