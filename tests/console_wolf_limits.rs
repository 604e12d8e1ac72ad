//! The console's werewolf seat under a server's talk limits (issue #17),
//! headless: the prompt shows what is left of the talk (per-talk cap,
//! today's budget, turns, skips) and refuses to send a line the server
//! would cut, or a Skip with no skips left; what fits goes out unchanged.

use crate::common;

use common::console::{ch, ctrl, key};
use crossterm::event::KeyCode;
use palaver::tui::app::ScreenId;
use palaver::tui::report::Report;
use palaver::tui::report::wolf::WolfReport;
use palaver::tui::{Headless, load_settings};
use palaver::werewolf::View;
use palaver::werewolf::agent::DecisionRequest;
use palaver::werewolf::config::Config;
use palaver::werewolf::game::GameEvent;
use palaver::werewolf::packet::MaxLength;
use palaver::werewolf::{Request, Status};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

fn typed(h: &mut Headless, s: &str) {
    for c in s.chars() {
        h.key(ch(c));
    }
}

/// A console on the werewolf screen, seated (human) in the seeded 5-seat
/// bot game at day 1's talk; returns the seat's view with `m` as the talk
/// limits.
async fn seated(data: &std::path::Path, m: MaxLength) -> (Headless, View) {
    let mut ev: Vec<GameEvent> = Vec::new();
    palaver::werewolf::local::play_bot_game(Arc::new(Config::default_for(5).unwrap()), 1, &mut ev)
        .await
        .unwrap();
    let settings = load_settings(data, None, None).unwrap();
    let mut h = Headless::new(settings, 120, 30);
    h.key(key(KeyCode::F(3)));
    assert_eq!(h.app.screen, ScreenId::Werewolf);
    common::console::seat_at_day1_talk(&mut h, &ev, 1);
    let GameEvent::Started { seats, .. } = &ev[0] else {
        panic!("the game starts with Started");
    };
    let mut v = View::default();
    v.me = seats[0].name.clone();
    v.role = Some(seats[0].role);
    v.roles.insert(v.me.clone(), seats[0].role);
    v.day = 1;
    let mut s = Config::default_for(5).unwrap().setting();
    s.talk.max_length = m;
    s.talk.max_skip = 1;
    v.setting = Some(s);
    for seat in seats {
        v.status.insert(seat.name.clone(), Status::Alive);
    }
    (h, v)
}

fn ask(h: &mut Headless, view: View) -> oneshot::Receiver<String> {
    let (answer, rx) = oneshot::channel();
    let req = DecisionRequest {
        request: Request::Talk,
        view,
        proposal: None,
        deadline: tokio::time::Instant::now() + Duration::from_secs(55),
        answer,
    };
    let g = h.app.wolf.generation();
    h.update(Report::Wolf(Box::new(WolfReport::Decision(
        g,
        Box::new(req),
    ))));
    rx
}

fn note(h: &Headless) -> String {
    h.app
        .wolf
        .note
        .as_ref()
        .map(|n| n.text.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn per_talk_cap_turns_and_skips_are_shown_and_enforced() {
    let d = tempfile::tempdir().unwrap();
    let m = MaxLength {
        count_in_word: Some(false),
        count_spaces: Some(false),
        per_talk: Some(20),
        mention_length: Some(50),
        per_agent: None,
        base_length: Some(50),
    };
    let (mut h, mut view) = seated(d.path(), m).await;
    view.remain_count = Some(0);
    view.remain_skip = Some(0);
    let mut rx = ask(&mut h, view.clone());
    typed(&mut h, "one two three four");
    let s = h.screen();
    // 15 counted characters of 20, 5 left, the last turn, no skips.
    assert!(s.contains("15/20 a talk"), "{s}");
    assert!(s.contains("5 chars left"), "{s}");
    assert!(s.contains("0 turns left"), "{s}");
    assert!(s.contains("0 skips"), "{s}");
    typed(&mut h, " five six");
    let s = h.screen();
    assert!(s.contains("22/20 a talk"), "{s}");
    assert!(s.contains("0 chars left"), "{s}");
    assert!(s.contains("the server keeps: one two three four fi"), "{s}");
    // Enter refuses, and says why; nothing went out.
    h.key(key(KeyCode::Enter));
    assert!(rx.try_recv().is_err());
    assert!(h.app.wolf.decision.is_some());
    let n = note(&h);
    assert!(
        n.contains("not sent: too long by 2 chars: the server would keep only"),
        "{n}"
    );
    // Skip with no skips left is refused too.
    h.key(ctrl('k'));
    assert!(rx.try_recv().is_err());
    assert!(note(&h).contains("no skips left today"), "{}", note(&h));
    // Shortened to 19 of 20, it goes out as typed.
    for _ in 0..4 {
        h.key(key(KeyCode::Backspace));
    }
    h.key(key(KeyCode::Enter));
    assert_eq!(rx.await.unwrap(), "one two three four five");
    assert!(h.app.wolf.decision.is_none());
    // Over always goes.
    let rx = ask(&mut h, view.clone());
    h.key(ctrl('o'));
    assert_eq!(rx.await.unwrap(), "Over");
}

#[tokio::test]
async fn a_daily_budget_is_shown_and_a_spent_one_refuses_everything_but_over() {
    let d = tempfile::tempdir().unwrap();
    let m = MaxLength {
        count_in_word: Some(false),
        count_spaces: Some(false),
        per_talk: None,
        mention_length: Some(0),
        per_agent: Some(30),
        base_length: Some(0),
    };
    let (mut h, mut view) = seated(d.path(), m).await;
    view.remain_length = Some(8);
    view.remain_count = Some(2);
    let mut rx = ask(&mut h, view.clone());
    typed(&mut h, "abc def");
    let s = h.screen();
    assert!(s.contains("6/8 chars"), "{s}");
    assert!(s.contains("2 chars left"), "{s}");
    assert!(s.contains("8 left today"), "{s}");
    assert!(s.contains("2 turns left"), "{s}");
    typed(&mut h, "ghi");
    h.key(key(KeyCode::Enter));
    assert!(rx.try_recv().is_err());
    assert!(note(&h).contains("too long by 1 chars"), "{}", note(&h));
    h.key(key(KeyCode::Backspace));
    h.key(key(KeyCode::Enter));
    assert_eq!(rx.await.unwrap(), "abc defgh");
    // Budget spent: a word is refused, Over is not.
    view.remain_length = Some(0);
    let rx = ask(&mut h, view.clone());
    typed(&mut h, "hi");
    h.key(key(KeyCode::Enter));
    assert!(
        note(&h).contains("nothing more may be said today"),
        "{}",
        note(&h)
    );
    h.key(ctrl('o'));
    assert_eq!(rx.await.unwrap(), "Over");
}
