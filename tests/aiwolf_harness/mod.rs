//! Hostile input through palaver's AIWolf code, shared by the cargo-fuzz
//! target `fuzz/fuzz_targets/aiwolf_packet.rs` and the property tests in
//! `tests/werewolf_packets_prop.rs` (which run in CI). Uses only palaver and
//! std, and runs games without a runtime: the scripted transport never
//! waits, so a game is one poll.
//!
//! - [`client_side`]: bytes as server packets (one per line) through
//!   `wolf join`'s decoding ([`decode_packet`]) and its per-packet handling
//!   ([`ClientSeat`], the bot, the fallback), alone and after a real
//!   INITIALIZE. Decoded packets re-encode to themselves; every target the
//!   client would answer is an agent it was told about.
//! - [`server_side`]: bytes as agent answers (one per line) through a whole
//!   game master run (`wolf serve`'s rules, length rules, logs), plus the
//!   connection-name checks. Every packet the master sends decodes with
//!   palaver's own client checks; the outcome agrees with the rules.
#![allow(dead_code)]

use palaver::werewolf::agent::{BotDecider, ClientSeat, Step, decode_packet};
use palaver::werewolf::bot::Bot;
use palaver::werewolf::config::{Config, GoDuration};
use palaver::werewolf::game::{
    Deadline, Entrant, FinishReason, Game, GameEvent, Observer, Reply, SeatView, Transport,
    team_name,
};
use palaver::werewolf::logs::{GameLog, RealtimeFeed, log_filename};
use palaver::werewolf::packet::{Info, Packet, Request, Role, Species, Status, Team};
use palaver::werewolf::server::check_connection_name;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Drives a future that never waits (panics if it does).
fn run_now<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a scripted game waited"),
    }
}

/// A real INITIALIZE for seat 1 of a 5-player game (shipped settings).
pub fn initialize() -> Packet {
    let cfg = Config::default_for(5).expect("shipped config");
    let mut info = Info {
        game_id: "01JZZZZZZZZZZZZZZZZZZZZZZZ".into(),
        agent: "Agent[01]".into(),
        ..Info::default()
    };
    for (i, r) in [
        Role::Seer,
        Role::Werewolf,
        Role::Villager,
        Role::Possessed,
        Role::Villager,
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("Agent[{:02}]", i + 1);
        info.status_map.insert(name.clone(), Status::Alive);
        if i == 0 {
            info.role_map.insert(name, r);
        }
    }
    Packet {
        setting: Some(cfg.setting()),
        ..Packet::with_info(Request::Initialize, info)
    }
}

/// Bytes as server packets, one per line, into one client seat.
pub fn client_side(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for primed in [false, true] {
        let mut seat = ClientSeat::new(1);
        let mut bot = BotDecider(Bot::new(1));
        if primed {
            seat.handle(&initialize(), &mut bot)
                .expect("a real INITIALIZE is accepted");
        }
        for line in text.split('\n') {
            let Ok(p) = decode_packet(line) else { continue };
            let again = decode_packet(&p.to_json()).expect("a decoded packet re-encodes");
            assert_eq!(again, p, "re-encoding changed the packet");
            let step = match seat.handle(&p, &mut bot) {
                Ok(s) => s,
                // A protocol error ends the game; nothing more is read.
                Err(_) => break,
            };
            let Step::Decide { deadline } = step else {
                continue;
            };
            assert!(deadline <= Duration::from_secs(86_400), "{deadline:?}");
            let view = seat.view.clone();
            let answer = bot.0.decide(&view, p.request);
            let safe = seat.fallback(p.request);
            match p.request {
                Request::Talk | Request::Whisper => {
                    assert!(safe == "Skip" || safe == "Over", "{safe:?}");
                    assert!(!answer.is_empty());
                }
                _ => {
                    for a in [&answer, &safe] {
                        assert!(
                            *a == view.me || view.status.contains_key(a),
                            "{} answer {a:?} names nobody the client was told about",
                            p.request.as_str()
                        );
                    }
                }
            }
        }
    }
}

/// Answers from the input, in turn. A line starting with U+0002 is a failed
/// action (no usable answer), with U+0003 a broken connection.
struct Script {
    answers: Vec<String>,
    next: usize,
    chats: usize,
    seats: usize,
}

impl Script {
    fn take(&mut self) -> String {
        let a = self.answers[self.next % self.answers.len()].clone();
        self.next += 1;
        a
    }

    /// Every packet the master sends passes palaver's own client checks.
    fn check(&self, seat: usize, p: &Packet) {
        assert!(seat < self.seats, "seat {seat}");
        let json = p.to_json();
        let back = decode_packet(&json)
            .unwrap_or_else(|e| panic!("the master sent a packet its client refuses: {e}"));
        assert_eq!(&back, p);
    }
}

impl Transport for Script {
    fn send(
        &mut self,
        seat: usize,
        packet: &Packet,
    ) -> impl Future<Output = Result<(), String>> + Send {
        self.check(seat, packet);
        std::future::ready(Ok(()))
    }

    fn ask(&mut self, seat: usize, packet: &Packet) -> impl Future<Output = Reply> + Send {
        self.check(seat, packet);
        assert!(packet.request.needs_reply());
        let a = self.take();
        std::future::ready(if a.starts_with('\u{2}') {
            Reply::Failed("scripted failure".into())
        } else if a.starts_with('\u{3}') {
            Reply::Error("scripted disconnect".into())
        } else {
            Reply::Text(a)
        })
    }

    fn next_chat(
        &mut self,
        seats: &[usize],
        _deadline: Deadline,
    ) -> impl Future<Output = Option<(usize, String)>> + Send {
        self.chats += 1;
        let out = if self.chats > 300 || seats.is_empty() {
            None
        } else {
            let seat = seats[self.next % seats.len()];
            Some((seat, self.take()))
        };
        std::future::ready(out)
    }

    fn drain(&mut self, _seats: &[usize]) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }
}

/// Bytes as agent answers (one per line) through a whole game. The first
/// bytes pick the table (5 or 9 seats), whether real names are mixed into
/// the answers, the last day (0 to 3, or unset for 0xff), the length rules
/// and group-chat mode.
pub fn server_side(data: &[u8]) -> Option<palaver::werewolf::Outcome> {
    let [a, b, c, rest @ ..] = data else {
        return None;
    };
    let text = String::from_utf8_lossy(rest);
    names(&text);
    let n = if a & 1 == 0 { 5 } else { 9 };
    let mut cfg = Config::default_for(n).expect("shipped config");
    cfg.game.max_day = if *b == 0xff { -1 } else { i64::from(b % 4) };
    let lc = &mut cfg.game.talk.max_length;
    match c % 5 {
        0 => {}
        1 => lc.per_talk = 12,
        2 => {
            lc.per_agent = 40;
            lc.count_spaces = true;
        }
        3 => {
            lc.count_in_word = true;
            lc.base_length = 3;
            lc.mention_length = 2;
        }
        _ => {
            lc.base_length = -1;
            lc.mention_length = -1;
        }
    }
    if c & 0x80 != 0 {
        cfg.game.talk.duration = Some(GoDuration(Duration::from_secs(60)));
        cfg.game.whisper.duration = Some(GoDuration(Duration::from_secs(60)));
    }
    cfg.game.whisper.max_count.per_agent = 2;
    cfg.game.whisper.max_count.per_day = 4;
    cfg.validate().expect("the harness config is valid");
    let cfg = Arc::new(cfg);
    let entrants: Vec<Entrant> = (1..=n).map(|i| Entrant::new(&format!("fz{i}"))).collect();
    let game = Game::new(cfg.clone(), &entrants, u64::from(*a), None).expect("a game");
    let mut answers: Vec<String> = text.split('\n').map(str::to_owned).collect();
    // Real names among the garbage, so some answers are legal.
    if a & 0x80 == 0 {
        answers.extend(game.seats().iter().map(|s| s.name.clone()));
    }
    let mut io = Script {
        answers,
        next: 0,
        chats: 0,
        seats: n,
    };
    let mut events: Vec<GameEvent> = Vec::new();
    let mut log = GameLog::new(None);
    let mut realtime = RealtimeFeed::new(None);
    let outcome = {
        let mut obs = Tee(vec![&mut events, &mut log, &mut realtime]);
        run_now(game.run(&mut io, &mut obs))
    };
    check_outcome(&cfg, &outcome, &events);
    let _ = log.text();
    Some(outcome)
}

struct Tee<'a>(Vec<&'a mut dyn Observer>);

impl Observer for Tee<'_> {
    fn event(&mut self, e: &GameEvent) {
        for o in &mut self.0 {
            o.event(e);
        }
    }
}

/// The outcome agrees with the rules and the events with the answers'
/// constraints.
fn check_outcome(cfg: &Config, o: &palaver::werewolf::Outcome, events: &[GameEvent]) {
    let n = cfg.game.agent_count;
    let roles: Vec<Role> = o.seats.iter().map(|s| s.role).collect();
    let Some(GameEvent::Finished {
        winner,
        reason,
        alive,
        ..
    }) = events.last()
    else {
        panic!("the last event is not Finished: {:?}", events.last());
    };
    assert_eq!((*winner, *reason), (o.winner, o.reason));
    let wolves = (0..n)
        .filter(|&i| alive[i] && roles[i].species() == Species::Werewolf)
        .count();
    let humans = (0..n).filter(|&i| alive[i]).count() - wolves;
    match reason {
        FinishReason::Victory => {
            let expect = if wolves == 0 {
                Team::Villager
            } else {
                assert!(
                    wolves >= humans,
                    "victory with {wolves} wolves, {humans} humans"
                );
                Team::Werewolf
            };
            assert_eq!(*winner, expect);
        }
        FinishReason::MaxDay => {
            assert_eq!(*winner, Team::None);
            assert!(wolves > 0 && wolves < humans);
        }
        FinishReason::AbortedByError => {
            assert_eq!(*winner, Team::None);
            assert!(o.errors.len() >= cfg.abort_threshold(), "{:?}", o.errors);
        }
    }
    for e in events {
        match e {
            GameEvent::Talk { talk, idx, .. } => {
                assert!((1..=n).contains(idx));
                assert!(!talk.text.contains('\n'), "{talk:?}");
                assert!(!talk.text.trim().is_empty(), "{talk:?}");
                assert_eq!(talk.skip, talk.text == "Skip", "{talk:?}");
                assert_eq!(talk.over, talk.text == "Over", "{talk:?}");
            }
            GameEvent::Vote { voter, target, .. }
            | GameEvent::AttackVote {
                wolf: voter,
                target,
                ..
            } => {
                assert!((1..=n).contains(voter));
                assert!(target.is_none_or(|t| (1..=n).contains(&t)));
            }
            GameEvent::Divine { seer, target, .. } => {
                assert_ne!(seer, target);
                assert_eq!(roles[seer - 1], Role::Seer);
            }
            GameEvent::Attack {
                target: Some(t), ..
            } => assert_ne!(roles[t - 1], Role::Werewolf),
            _ => {}
        }
    }
}

/// The connection-name side of the server: the check never panics, and a
/// log file name built from any team stays one short path component.
fn names(text: &str) {
    let name = text.lines().next().unwrap_or_default();
    let _ = check_connection_name(name);
    let team = team_name(name);
    let seat = SeatView {
        idx: 1,
        name: "Agent[01]".into(),
        original_name: name.to_owned(),
        team,
        role: Role::Villager,
        profile: None,
        avatar: None,
    };
    let f = log_filename(i64::MAX, &[seat.clone(), seat]);
    assert!(f.len() <= 200, "{} bytes", f.len());
    assert!(!f.contains(['/', '\\', '\0']), "{f:?}");
}
