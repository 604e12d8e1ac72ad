//! The werewolf screen (F3) without a terminal: the watch view and the
//! play prompt as TestBackend snapshots (80×24 and 160×48) from a seeded
//! game's events handed in directly, and the screen driven by keys through
//! whole games — watching a 5-seat bot game to its winner, playing a seat
//! in human mode, and spectating a game on a `palaver wolf serve` server.

use crate::common;

use common::console::{ch, ctrl, key};
use crossterm::event::KeyCode;
use palaver::engine::ControlMode;
use palaver::tui::app::ScreenId;
use palaver::tui::msg::Msg;
use palaver::tui::report::Report;
use palaver::tui::report::wolf::WolfReport;
use palaver::tui::screen::Screen;
use palaver::tui::screens::wolf::Source;
use palaver::tui::screens::wolf::prompt::Input;
use palaver::tui::{Headless, load_settings};
use palaver::werewolf::View;
use palaver::werewolf::agent::DecisionRequest;
use palaver::werewolf::config::Config;
use palaver::werewolf::game::GameEvent;
use palaver::werewolf::{Request, Role, Status};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];
/// A 5-seat game that lasts three days (the wolves win).
const SEED: u64 = 1;
const LONG: Duration = Duration::from_secs(60);

fn console(data: &std::path::Path, w: u16, h: u16) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    let mut h = Headless::new(settings, w, h);
    h.key(key(KeyCode::F(3)));
    assert_eq!(h.app.screen, ScreenId::Werewolf);
    h
}

/// Every god-view event of the seeded 5-seat bot game.
async fn seeded_game() -> Vec<GameEvent> {
    let mut ev: Vec<GameEvent> = Vec::new();
    palaver::werewolf::local::play_bot_game(
        Arc::new(Config::default_for(5).unwrap()),
        SEED,
        &mut ev,
    )
    .await
    .unwrap();
    ev
}

/// The events up to a few talks into day 2 (after a day of votes, an
/// execution and a night).
fn mid_game(ev: &[GameEvent]) -> &[GameEvent] {
    let day2 = ev
        .iter()
        .position(|e| matches!(e, GameEvent::DayStarted { day: 2, .. }))
        .expect("the seeded game reaches day 2");
    &ev[..day2 + 6]
}

fn feed(h: &mut Headless, ev: &[GameEvent]) {
    let g = h.app.wolf.generation();
    for e in ev {
        h.update(Report::Wolf(Box::new(WolfReport::Event(g, e.clone()))));
    }
}

#[tokio::test]
async fn watch_view_mid_game_and_at_the_end() {
    let ev = seeded_game().await;
    for (w, hh) in SIZES {
        let d = tempfile::tempdir().unwrap();
        let mut h = console(d.path(), w, hh);
        insta::assert_snapshot!(format!("wolf_intro_{w}x{hh}"), h.screen());
        feed(&mut h, mid_game(&ev));
        let s = h.screen();
        assert!(s.contains("Day 2"), "{s}");
        assert!(!s.contains("team wins"), "{s}");
        insta::assert_snapshot!(format!("wolf_watch_mid_{w}x{hh}"), s);
        feed(&mut h, &ev[mid_game(&ev).len()..]);
        let s = h.screen();
        assert!(s.contains("THE WEREWOLF TEAM WINS"), "{s}");
        insta::assert_snapshot!(format!("wolf_watch_end_{w}x{hh}"), s);
    }
}

#[tokio::test]
async fn watch_view_of_thirteen_seats_with_whispers() {
    let mut ev: Vec<GameEvent> = Vec::new();
    palaver::werewolf::local::play_bot_game(
        Arc::new(Config::default_for(13).unwrap()),
        SEED,
        &mut ev,
    )
    .await
    .unwrap();
    // Into the night of day 1: the wolves' whispers and attack votes.
    let night = ev
        .iter()
        .position(|e| matches!(e, GameEvent::Attack { day: 1, .. }))
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut h = console(d.path(), 160, 48);
    feed(&mut h, &ev[..=night]);
    let s = h.screen();
    assert!(s.contains("[whisper]") && s.contains("wants"), "{s}");
    insta::assert_snapshot!("wolf_watch_13_night_160x48", s);
}

#[tokio::test]
async fn roles_hide_and_days_scroll_back() {
    let ev = seeded_game().await;
    let d = tempfile::tempdir().unwrap();
    let mut h = console(d.path(), 80, 24);
    feed(&mut h, mid_game(&ev));
    let s = h.screen();
    assert!(s.contains("WEREWOLF") && s.contains("SEER"), "{s}");
    h.key(ch('r'));
    let s = h.screen();
    assert!(!s.contains("WEREWOLF") && !s.contains("SEER"), "{s}");
    h.key(ch('r'));
    // Back a day: day 1's log with its vote.
    h.key(key(KeyCode::Left));
    let s = h.screen();
    assert!(s.contains("Day 1") && s.contains("votes (round 1)"), "{s}");
    h.key(key(KeyCode::PageUp));
    assert!(h.screen().contains("Day 0"));
    // Far past the first day stays there; forward again follows today.
    h.key(key(KeyCode::PageUp));
    assert!(h.screen().contains("Day 0"));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::PageDown));
    assert!(h.screen().contains("Day 2 ") && h.screen().contains("(now)"));
    // Scrolling back and forth within a day never runs off its ends.
    h.key(key(KeyCode::Left));
    assert!(h.screen().contains("↑ "), "day 1 is longer than the screen");
    for _ in 0..50 {
        h.key(key(KeyCode::Up));
    }
    let top = h.screen();
    assert!(
        top.contains("↓") && !top.contains("↑ "),
        "at the start:\n{top}"
    );
    for _ in 0..50 {
        h.key(key(KeyCode::Down));
    }
    assert!(!h.screen().contains("↓"), "back at the end");
}

/// A view of seat 1 at the start of day 1's talk, as the library gives it.
fn seat_view(ev: &[GameEvent], me: usize) -> View {
    let GameEvent::Started { seats, .. } = &ev[0] else {
        panic!("the game starts with Started");
    };
    let mut v = View::default();
    v.me = seats[me - 1].name.clone();
    v.role = Some(seats[me - 1].role);
    v.roles.insert(v.me.clone(), seats[me - 1].role);
    v.day = 1;
    v.setting = Some(Config::default_for(5).unwrap().setting());
    v.remain_count = Some(4);
    for s in seats {
        v.status.insert(s.name.clone(), Status::Alive);
    }
    v
}

/// Hands the screen a decision; returns where its answer arrives.
fn ask(h: &mut Headless, request: Request, view: View) -> oneshot::Receiver<String> {
    let (answer, rx) = oneshot::channel();
    let req = DecisionRequest {
        request,
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

/// The board as seat 1 sees it at day 1's talk.
fn seated(h: &mut Headless, ev: &[GameEvent]) {
    common::console::seat_at_day1_talk(h, ev, 3);
}

#[tokio::test]
async fn play_prompt_talk_with_the_length_counter_and_a_vote_picker() {
    let ev = seeded_game().await;
    for (w, hh) in SIZES {
        let d = tempfile::tempdir().unwrap();
        let mut h = console(d.path(), w, hh);
        seated(&mut h, &ev);
        let view = seat_view(&ev, 1);
        let other = view.names().into_iter().find(|n| *n != view.me).unwrap();
        let rx = ask(&mut h, Request::Talk, view.clone());
        // Typed keys go to the line: `r`, `w`, `q` are text here.
        for c in "I saw a wolf near the well, really @".chars() {
            h.key(ch(c));
        }
        h.key(ch(other.chars().next().unwrap()));
        h.key(key(KeyCode::Tab));
        for c in "is lying".chars() {
            h.key(ch(c));
        }
        let s = h.screen();
        // 27 counted characters before the mention, 7 after it.
        assert!(s.contains("27/50 chars"), "{s}");
        assert!(s.contains(&format!("@{other} 7/50")), "{s}");
        assert!(!s.contains("the server keeps"), "{s}");
        assert!(s.contains("TALK · day 1 · 55s left"), "{s}");
        assert!(s.contains("60s timeout − 5s margin"), "{s}");
        // Other roles are hidden while playing.
        let mine = view.role.unwrap().as_str();
        assert!(s.contains(mine), "{s}");
        insta::assert_snapshot!(format!("wolf_play_talk_{w}x{hh}"), s);
        h.key(key(KeyCode::Enter));
        assert_eq!(
            rx.await.unwrap(),
            format!("I saw a wolf near the well, really @{other} is lying")
        );
        assert!(h.app.wolf.decision.is_none());

        let rx = ask(&mut h, Request::Vote, view.clone());
        h.key(key(KeyCode::Down));
        let s = h.screen();
        assert!(s.contains("vote to execute"), "{s}");
        insta::assert_snapshot!(format!("wolf_play_vote_{w}x{hh}"), s);
        let Some(Input::Pick { targets, selected }) =
            h.app.wolf.decision.as_ref().map(|d| d.input.clone())
        else {
            panic!("a picker");
        };
        assert!(!targets.contains(&view.me), "{targets:?}");
        h.key(key(KeyCode::Enter));
        assert_eq!(rx.await.unwrap(), targets[selected]);
    }
}

#[tokio::test]
async fn skip_over_and_late_answers() {
    let ev = seeded_game().await;
    let d = tempfile::tempdir().unwrap();
    let mut h = console(d.path(), 100, 30);
    seated(&mut h, &ev);
    let view = seat_view(&ev, 1);
    let rx = ask(&mut h, Request::Talk, view.clone());
    h.key(ctrl('k'));
    assert_eq!(rx.await.unwrap(), "Skip");
    let rx = ask(&mut h, Request::Talk, view.clone());
    // Esc hands the arrows back to the board; C-o still ends the turn.
    h.key(key(KeyCode::Esc));
    h.key(key(KeyCode::Left));
    h.key(ctrl('o'));
    assert_eq!(rx.await.unwrap(), "Over");
    // Enter on an empty line sends nothing.
    let mut rx = ask(&mut h, Request::Talk, view.clone());
    h.key(key(KeyCode::Enter));
    assert!(rx.try_recv().is_err());
    assert!(h.app.wolf.decision.is_some());
    // The library gave up (the margin passed): the prompt closes.
    drop(rx);
    h.update(Msg::Tick);
    assert!(h.app.wolf.decision.is_none());
    assert!(h.screen().contains("time's up"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_a_five_seat_bot_game_to_the_winner() {
    let d = tempfile::tempdir().unwrap();
    let mut h = console(d.path(), 100, 30);
    h.key(ch('w'));
    // The chooser: 5 seats is the first choice.
    assert!(h.screen().contains("How many seats?"));
    h.key(key(KeyCode::Enter));
    assert_eq!(h.app.wolf.source, Source::Watch(5));
    // The game itself is over in milliseconds; the screen replays it.
    let started = std::time::Instant::now();
    assert!(
        h.until(LONG, |a| a.wolf.ended && !a.wolf.queue.is_empty())
            .await,
        "the game ran ahead of the replay"
    );
    // Nothing tells the winner before the replay gets there.
    let s = h.screen();
    assert!(!s.contains("over:") && !s.contains("TEAM WINS"), "{s}");
    assert!(
        h.until(LONG, |a| a
            .wolf
            .board
            .as_ref()
            .is_some_and(|b| b.finish.is_some())
            && a.wolf.queue.is_empty())
            .await,
        "no winner: {}",
        h.screen()
    );
    let replay = started.elapsed();
    let s = h.screen();
    assert!(s.contains("TEAM WINS") && s.contains("over:"), "{s}");
    let b = h.app.wolf.board.as_ref().unwrap();
    assert_eq!(b.seats.len(), 5);
    assert!(b.days.len() >= 2, "at least day 0 and day 1");
    println!("a 5-seat game replayed in {replay:?} of headless ticks");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_and_speed_keys() {
    let d = tempfile::tempdir().unwrap();
    let mut h = console(d.path(), 100, 30);
    h.key(ch('w'));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Enter));
    assert_eq!(h.app.wolf.source, Source::Watch(13));
    assert!(h.until(LONG, |a| a.wolf.ended).await);
    assert!(!h.app.wolf.queue.is_empty());
    h.key(key(KeyCode::Enter));
    let s = h.screen();
    assert!(s.contains("speed 10/s"), "{s}");
    h.key(ctrl('k'));
    assert!(h.app.wolf.queue.is_empty());
    let s = h.screen();
    assert!(s.contains("TEAM WINS") || s.contains("NO WINNER"), "{s}");
    assert_eq!(h.app.wolf.board.as_ref().unwrap().seats.len(), 13);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_a_seat_in_human_mode_by_keys_to_the_end() {
    let d = tempfile::tempdir().unwrap();
    let mut h = console(d.path(), 120, 40);
    h.key(ch('p'));
    assert!(h.screen().contains("Control mode"));
    h.key(key(KeyCode::Enter));
    assert_eq!(h.app.wolf.source, Source::Play(ControlMode::Human));
    let mut answered = 0;
    let mut said = 0;
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
        // Other roles are hidden from a player until the end.
        let b = h.app.wolf.board.as_ref().unwrap();
        let mine = b.seats.iter().position(|s| s.name == me).unwrap() + 1;
        assert!(
            b.seats
                .iter()
                .all(|s| s.idx == mine || !b.role_known(s.idx) || s.role == Role::Werewolf)
        );
        match d.input {
            Input::Text { .. } if d.view.remain_count.unwrap_or(0) >= 3 => {
                for c in format!("I am {me}, hear me @").chars() {
                    h.key(ch(c));
                }
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
    let b = h.app.wolf.board.as_ref().unwrap();
    assert!(b.finish.is_some(), "{s}");
    assert!(
        s.contains("you win") || s.contains("you lose") || s.contains("NO WINNER"),
        "{s}"
    );
    // What was typed reached the game.
    let me = b.viewer.unwrap().idx;
    let mine: Vec<&String> = b
        .days
        .values()
        .flatten()
        .filter_map(|i| match i {
            palaver::tui::screens::wolf::board::Item::Talk { seat, text, .. } if *seat == me => {
                Some(text)
            }
            _ => None,
        })
        .collect();
    assert!(
        said > 0
            && mine
                .iter()
                .any(|t| t.contains("hear me") && t.contains('@')),
        "{mine:?}"
    );
    assert_eq!(h.app.wolf.running(), 0);
    println!("answered {answered} requests ({said} talks typed)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spectate_a_game_on_a_wolf_server() {
    use palaver::werewolf::agent::{BotDecider, JoinOptions, join};
    use palaver::werewolf::bot::Bot;
    use palaver::werewolf::server::{Server, serve};
    let srv = Server::new(Config::default_for(5).unwrap(), 3).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, srv.clone()));
    for i in 1..=5u64 {
        let opts = JoinOptions {
            url: format!("ws://{addr}/ws"),
            name: format!("bot{i}"),
            token: None,
            seed: i,
        };
        tokio::spawn(async move {
            let mut d = BotDecider(Bot::new(i));
            let _ = join(&opts, &mut d).await;
        });
    }
    let d = tempfile::tempdir().unwrap();
    let mut h = console(d.path(), 100, 30);
    // A wrong address first: the error shows and Enter goes back to it.
    h.key(ch('c'));
    for _ in 0.."http://127.0.0.1:8080".len() {
        h.key(key(KeyCode::Backspace));
    }
    for c in "ftp://nowhere".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    assert!(
        h.until(Duration::from_secs(10), |a| {
            matches!(
                &a.wolf.dialog,
                Some(palaver::tui::screens::wolf::Dialog::Games {
                    list: Some(Err(_)),
                    ..
                })
            )
        })
        .await
    );
    assert!(h.screen().contains("only http://"));
    h.key(key(KeyCode::Enter));
    for _ in 0.."ftp://nowhere".len() {
        h.key(key(KeyCode::Backspace));
    }
    for c in format!("http://{addr}").chars() {
        h.key(ch(c));
    }
    // The game starts once five agents are in; list until it shows.
    let mut listed = false;
    for _ in 0..50 {
        h.key(key(KeyCode::Enter));
        h.until(Duration::from_secs(10), |a| {
            matches!(
                &a.wolf.dialog,
                Some(palaver::tui::screens::wolf::Dialog::Games { list: Some(_), .. })
            )
        })
        .await;
        if let Some(palaver::tui::screens::wolf::Dialog::Games {
            list: Some(Ok(l)), ..
        }) = &h.app.wolf.dialog
            && !l.is_empty()
        {
            listed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(listed, "no game listed: {}", h.screen());
    assert!(h.screen().contains("(newest)"));
    h.key(key(KeyCode::Enter));
    assert!(matches!(h.app.wolf.source, Source::Spectate { .. }));
    assert!(
        h.until(LONG, |a| a.wolf.ended).await,
        "the stream did not end: {}",
        h.screen()
    );
    let s = h.screen();
    let b = h.app.wolf.board.as_ref().unwrap();
    assert!(b.finish.is_some(), "{s}");
    assert!(s.contains("TEAM WINS") || s.contains("NO WINNER"), "{s}");
    let note = h.app.wolf.note.clone().unwrap();
    assert!(note.ok, "{note:?}");
    // The same god view as watching: every role shows.
    assert!(b.viewer.is_none() && s.contains("WEREWOLF"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_prefills_the_bots_proposal_and_autonomous_never_asks() {
    let d = tempfile::tempdir().unwrap();
    let mut h = console(d.path(), 120, 40);
    // Hybrid: the proposal is in the prompt; Enter sends it as is.
    h.key(ch('p'));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Enter));
    assert_eq!(h.app.wolf.source, Source::Play(ControlMode::Hybrid));
    assert!(h.until(LONG, |a| a.wolf.decision.is_some()).await);
    let dec = h.app.wolf.decision.as_ref().unwrap();
    let proposal = dec
        .proposal
        .clone()
        .expect("the bot proposes in hybrid mode");
    if !matches!(proposal.as_str(), "Skip" | "Over") {
        assert_eq!(dec.current().as_deref(), Some(proposal.as_str()));
        let text = matches!(dec.input, Input::Text { .. });
        let s = h.screen();
        assert!(
            text || s.contains(&format!("bot proposes {proposal}")),
            "{s}"
        );
        h.key(key(KeyCode::Enter));
        let note = h.app.wolf.note.clone().unwrap();
        assert!(note.ok && note.text.ends_with(&proposal), "{note:?}");
    } else {
        // A proposed Skip/Over: answer it, so the keys below are not typed
        // into an open talk line.
        h.key(ctrl('o'));
    }
    assert!(h.app.wolf.decision.is_none(), "the request is answered");
    // Autonomous: a new game (abandoning the seat takes a second press),
    // played to its end without a single prompt.
    h.key(ch('p'));
    assert!(h.app.wolf.dialog.is_none(), "the first press only warns");
    h.key(ch('p'));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Enter));
    assert_eq!(h.app.wolf.source, Source::Play(ControlMode::Autonomous));
    let mut prompted = false;
    let done = h
        .until(LONG, |a| {
            prompted |= a.wolf.decision.is_some();
            a.wolf.ended
        })
        .await;
    assert!(done && !prompted, "{}", h.screen());
    assert!(h.app.wolf.board.as_ref().unwrap().finish.is_some());
}
