//! Group-chat mode over the real WebSocket server (aiwolf-nlp.md §9.3 item
//! 19): with `talk.duration` and `whisper.duration` set, talk runs as
//! PHASE_START / BROADCAST… / PHASE_END instead of TALK/WHISPER turns; every
//! broadcast reaches every member (the sender included), in the same order,
//! and matches the talk the server recorded.

use palaver::werewolf::agent::{BotDecider, ClientReport, JoinOptions, join};
use palaver::werewolf::bot::Bot;
use palaver::werewolf::config::{Config, GoDuration};
use palaver::werewolf::game::GameEvent;
use palaver::werewolf::server::{Server, serve};
use palaver::werewolf::{Packet, Request};
use std::collections::BTreeMap;
use std::time::Duration;

/// (whisper, day) → the broadcasts one client received, in order, as
/// (idx, speaker, text).
type Heard = BTreeMap<(bool, i64), Vec<(i64, String, String)>>;

fn packets(r: &ClientReport) -> Vec<Packet> {
    r.frames
        .iter()
        .map(|f| Packet::from_json(f).expect("a packet"))
        .collect()
}

/// Checks one client's packet order and returns what it heard, and the
/// (whisper, day) phases it was a member of.
fn sequence(me: &str, ps: &[Packet]) -> (Heard, Vec<(bool, i64)>) {
    let mut heard = Heard::new();
    let mut phases = Vec::new();
    let mut open: Option<(bool, i64)> = None;
    for p in ps {
        let day = p.info.as_ref().map(|i| i.day).unwrap_or(-1);
        match p.request {
            Request::Talk | Request::Whisper => {
                panic!("{me}: a turn request in group-chat mode: {p:?}")
            }
            Request::TalkPhaseStart | Request::WhisperPhaseStart => {
                assert_eq!(open, None, "{me}: a phase starts inside another");
                let w = p.request == Request::WhisperPhaseStart;
                open = Some((w, day));
                phases.push((w, day));
                heard.entry((w, day)).or_default();
            }
            Request::TalkBroadcast | Request::WhisperBroadcast => {
                let w = p.request == Request::WhisperBroadcast;
                assert_eq!(open, Some((w, day)), "{me}: a broadcast outside its phase");
                let t = if w { &p.new_whisper } else { &p.new_talk };
                let t = t.as_ref().expect("a broadcast carries the talk");
                assert_eq!(t.day, day);
                heard
                    .entry((w, day))
                    .or_default()
                    .push((t.idx, t.agent.clone(), t.text.clone()));
            }
            Request::TalkPhaseEnd | Request::WhisperPhaseEnd => {
                let w = p.request == Request::WhisperPhaseEnd;
                assert_eq!(open, Some((w, day)), "{me}: an end without its start");
                open = None;
            }
            _ => assert_eq!(open, None, "{me}: {:?} inside a chat phase", p.request),
        }
    }
    (heard, phases)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_chat_phases_and_broadcasts_reach_everyone() {
    let mut cfg = Config::default_for(9).unwrap();
    cfg.game.talk.duration = Some(GoDuration(Duration::from_secs(3)));
    cfg.game.whisper.duration = Some(GoDuration(Duration::from_secs(3)));
    let srv = Server::new(cfg, 5).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, srv.clone()));
    let began = std::time::Instant::now();
    let mut clients = Vec::new();
    // Nine seats: two wolves, so the whisper phases run too.
    for i in 1..=9u64 {
        let opts = JoinOptions {
            url: format!("ws://{addr}/ws"),
            name: format!("chat{i}"),
            token: None,
            seed: i,
        };
        clients.push(tokio::spawn(async move {
            let mut d = BotDecider(Bot::new(i));
            join(&opts, &mut d).await
        }));
    }
    let mut reports = Vec::new();
    for c in clients {
        let r = tokio::time::timeout(Duration::from_secs(120), c)
            .await
            .expect("the game ends")
            .unwrap()
            .expect("the client played");
        assert!(r.finished);
        reports.push(r);
    }
    let out = srv.wait_finished(1).await;
    assert!(out[0].errors.is_empty(), "{:?}", out[0].errors);
    let feed = srv.games().into_iter().next().unwrap();

    // What the server recorded, per (whisper, day).
    let mut said = Heard::new();
    for e in feed.events() {
        if let GameEvent::Talk { whisper, talk, .. } = e {
            said.entry((whisper, talk.day)).or_default().push((
                talk.idx,
                talk.agent.clone(),
                talk.text.clone(),
            ));
        }
    }
    let mut members: BTreeMap<(bool, i64), Vec<String>> = BTreeMap::new();
    let mut own = 0;
    let mut broadcasts = 0;
    for r in &reports {
        let me = r.view.me.clone();
        let (heard, phases) = sequence(&me, &packets(r));
        for ph in phases {
            members.entry(ph).or_default().push(me.clone());
            // Everything said in the phase reached this member, in order.
            let got = &heard[&ph];
            assert_eq!(got, said.get(&ph).unwrap_or(&Vec::new()), "{me} in {ph:?}");
            own += got.iter().filter(|(_, a, _)| *a == me).count();
            broadcasts += got.len();
        }
        // Only wolves are in whisper phases.
        let wolf = r.view.wolves().contains(&me);
        assert!(wolf || heard.keys().all(|(w, _)| !w), "{me} heard whispers");
    }
    // Every recorded talk was broadcast in a phase that had members.
    for k in said.keys() {
        assert!(members.contains_key(k), "talk of {k:?} outside any phase");
    }
    let talk_days = members.keys().filter(|(w, _)| !w).count();
    assert!(talk_days >= 1, "no talk phase at all");
    assert!(members.keys().any(|(w, _)| *w), "no whisper phase at all");
    assert!(
        broadcasts > 0 && own > 0,
        "{broadcasts} broadcasts, {own} own"
    );
    // A phase ends early once every member is done (count spent or Over):
    // the whole game takes less than its phases' durations would.
    let phases = members.len() as u32;
    assert!(
        began.elapsed() < Duration::from_secs(3) * phases,
        "{phases} phases took {:?}",
        began.elapsed()
    );
    // Talk-phase members are the living agents of that day.
    for ((w, day), names) in &members {
        if !w {
            assert!(names.len() >= 2, "day {day}: {names:?}");
        }
    }
}
