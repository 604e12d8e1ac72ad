//! The AIWolf rules, one test per item of aiwolf-nlp.md §9.1, on the pure
//! game master with a scripted transport (no sockets).

use palaver::werewolf::config::{Config, LengthConfig};
use palaver::werewolf::game::{
    Entrant, FinishReason, Game, GameEvent, Reply, Transport, team_name, top_candidates, winner,
};
use palaver::werewolf::length;
use palaver::werewolf::packet::{Packet, Request, Role, Species, Status, Team};
use std::sync::Arc;

type Script = Box<dyn FnMut(usize, &Packet) -> Reply + Send>;

struct Scripted {
    script: Script,
    sent: Vec<(usize, Packet)>,
}

impl Transport for Scripted {
    async fn send(&mut self, seat: usize, p: &Packet) -> Result<(), String> {
        self.sent.push((seat, p.clone()));
        Ok(())
    }
    async fn ask(&mut self, seat: usize, p: &Packet) -> Reply {
        self.sent.push((seat, p.clone()));
        (self.script)(seat, p)
    }
    async fn next_chat(
        &mut self,
        _s: &[usize],
        _d: tokio::time::Instant,
    ) -> Option<(usize, String)> {
        None
    }
    async fn drain(&mut self, _s: &[usize]) {}
}

fn cfg(n: usize, edit: impl FnOnce(&mut Config)) -> Arc<Config> {
    let mut c = Config::default_for(n).unwrap();
    c.custom_profile.enable = false;
    edit(&mut c);
    Arc::new(c)
}

fn play(
    cfg: Arc<Config>,
    roles: Vec<Role>,
    seed: u64,
    script: Script,
) -> (
    palaver::werewolf::Outcome,
    Vec<GameEvent>,
    Vec<(usize, Packet)>,
) {
    let n = cfg.game.agent_count;
    let entrants: Vec<Entrant> = (1..=n).map(|i| Entrant::new(&format!("t{i}"))).collect();
    let game = Game::new(cfg, &entrants, seed, Some(roles)).unwrap();
    let mut io = Scripted {
        script,
        sent: Vec::new(),
    };
    let mut ev: Vec<GameEvent> = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt.block_on(game.run(&mut io, &mut ev));
    (out, ev, io.sent)
}

fn name(i: usize) -> String {
    format!("Agent[{i:02}]")
}

/// Everyone says Over; votes/targets from `target(seat, request, day)` (1-based idx).
fn simple(mut target: impl FnMut(usize, Request, i64) -> Option<usize> + Send + 'static) -> Script {
    Box::new(move |seat, p| match p.request {
        Request::Talk | Request::Whisper => Reply::Text("Over".into()),
        r => {
            let day = p.info.as_ref().map(|i| i.day).unwrap_or(0);
            Reply::Text(
                target(seat, r, day)
                    .map(name)
                    .unwrap_or_else(|| "Nobody".into()),
            )
        }
    })
}

const V5: [Role; 5] = [
    Role::Villager,
    Role::Villager,
    Role::Seer,
    Role::Possessed,
    Role::Werewolf,
];

#[test]
fn t01_team_name_derivation() {
    assert_eq!(team_name("kanolab1"), "kanolab");
    assert_eq!(team_name("kanolab12"), "kanolab");
    assert_eq!(team_name("a1b2"), "a1b");
    assert_eq!(team_name("team-"), "team-");
    assert_eq!(team_name("123"), "");
    assert_eq!(team_name("kanolab3\n"), "kanolab");
}

#[test]
fn t02_role_assignment_totals_and_bad_tables() {
    for n in [5, 9, 13] {
        let c = cfg(n, |_| {});
        let counts = c.role_counts().unwrap();
        let entrants: Vec<Entrant> = (1..=n).map(|i| Entrant::new(&format!("t{i}"))).collect();
        for seed in 0..20 {
            let g = Game::new(c.clone(), &entrants, seed, None).unwrap();
            for (role, k) in &counts {
                assert_eq!(
                    g.seats().iter().filter(|s| s.role == *role).count() as i64,
                    *k,
                    "{n}p {role:?}"
                );
            }
        }
    }
    let text = palaver::werewolf::config::DEFAULT_5.replace("[game.roles.5]", "[game.roles.6]");
    assert!(
        Config::from_toml(&text)
            .unwrap_err()
            .to_string()
            .contains("no table for agent_count 5")
    );
    let text = palaver::werewolf::config::DEFAULT_5.replace("VILLAGER = 2", "VILLAGER = 3");
    assert!(Config::from_toml(&text).is_err());
    let text = palaver::werewolf::config::DEFAULT_5.replace("SEER = 1", "SEER = 1\nWIZARD = 0");
    assert!(Config::from_toml(&text).is_err());
}

#[test]
fn t03_names_agent_nn_and_profiles() {
    let c = cfg(13, |_| {});
    let e: Vec<Entrant> = (1..=13).map(|i| Entrant::new(&format!("t{i}"))).collect();
    let g = Game::new(c, &e, 1, None).unwrap();
    let names: Vec<String> = g.seats().into_iter().map(|s| s.name).collect();
    assert_eq!(names.first().unwrap(), "Agent[01]");
    assert_eq!(names.last().unwrap(), "Agent[13]");
    let c = Arc::new(Config::default_for(13).unwrap());
    let g = Game::new(c, &e, 1, None).unwrap();
    let seats = g.seats();
    let mut uniq: Vec<&str> = seats.iter().map(|s| s.name.as_str()).collect();
    uniq.sort_unstable();
    uniq.dedup();
    assert_eq!(uniq.len(), 13);
    let p = seats[0].profile.as_deref().unwrap();
    assert!(p.lines().all(|l| l.contains(": ")), "{p}");
}

fn executed_on(ev: &[GameEvent], day: i64) -> Option<usize> {
    ev.iter().find_map(|e| match e {
        GameEvent::Executed { day: d, idx, .. } if *d == day => Some(*idx),
        _ => None,
    })
}

#[test]
fn t04_vote_tally_ties_rounds_and_invalid_votes() {
    assert_eq!(top_candidates(&[1, 1, 2]), vec![1]);
    assert_eq!(top_candidates(&[1, 2]), vec![1, 2]);
    assert!(top_candidates(&[]).is_empty());
    // 2-2 tie between idx 1 and 2 (villagers), one invalid vote: random among tied.
    let mut seen = [0usize; 6];
    for seed in 0..200 {
        let c = cfg(5, |c| c.game.max_day = 1);
        let (_, ev, _) = play(
            c,
            V5.to_vec(),
            seed,
            simple(|s, r, _| match r {
                Request::Vote => [Some(1), Some(1), Some(2), Some(2), None][s],
                _ => None,
            }),
        );
        seen[executed_on(&ev, 1).unwrap()] += 1;
    }
    assert_eq!(seen[1] + seen[2], 200);
    assert!(seen[1] > 60 && seen[2] > 60, "{seen:?}");
    // max_count 2: a second round is sent to all alive agents.
    let c = cfg(5, |c| {
        c.game.max_day = 1;
        c.game.vote.max_count = 2;
    });
    let (_, ev, sent) = play(
        c,
        V5.to_vec(),
        1,
        simple(|s, r, _| (r == Request::Vote).then(|| [1, 1, 2, 2, 3][s])),
    );
    let votes = sent
        .iter()
        .filter(|(_, p)| p.request == Request::Vote)
        .count();
    assert_eq!(votes, 10);
    assert!(
        ev.iter()
            .any(|e| matches!(e, GameEvent::VoteTally { round: 2, .. }))
    );
    // Self votes ignored when disallowed; unknown names ignored; no valid vote → no exile.
    let c = cfg(5, |c| {
        c.game.max_day = 1;
        c.game.vote.allow_self_vote = false;
    });
    let (_, ev, _) = play(
        c,
        V5.to_vec(),
        1,
        simple(|s, r, _| (r == Request::Vote).then_some(s + 1)),
    );
    assert_eq!(executed_on(&ev, 1), None);
    assert!(ev.iter().any(|e| matches!(
        e,
        GameEvent::VoteTally {
            day: 1,
            executed: None,
            ..
        }
    )));
}

fn attack_on(ev: &[GameEvent], day: i64) -> Option<(Option<usize>, bool)> {
    ev.iter().find_map(|e| match e {
        GameEvent::Attack {
            day: d,
            target,
            killed,
        } if *d == day => Some((*target, *killed)),
        _ => None,
    })
}

// 9p roles: idx1 WW, idx2 WW, idx3 SEER, idx4 BODYGUARD, idx5 MEDIUM, idx6 POSSESSED, 7-9 VILLAGER.
const V9: [Role; 9] = [
    Role::Werewolf,
    Role::Werewolf,
    Role::Seer,
    Role::Bodyguard,
    Role::Medium,
    Role::Possessed,
    Role::Villager,
    Role::Villager,
    Role::Villager,
];

#[test]
fn t05_attack_wolf_targets_ties_and_guard() {
    // Wolves vote for each other (ignored) → no valid target → no attack.
    let c = cfg(9, |c| c.game.max_day = 1);
    let (_, ev, _) = play(
        c,
        V9.to_vec(),
        1,
        simple(|s, r, _| match r {
            Request::Attack => Some(if s == 0 { 2 } else { 1 }),
            Request::Vote => Some(9),
            _ => None,
        }),
    );
    assert_eq!(attack_on(&ev, 1), Some((None, true)));
    // Tie 7 vs 8 with allow_no_target → no attack; without → one of them dies.
    for allow in [true, false] {
        let c = cfg(9, |c| {
            c.game.max_day = 1;
            c.game.attack_vote.allow_no_target = allow;
        });
        let (_, ev, _) = play(
            c,
            V9.to_vec(),
            1,
            simple(|s, r, _| match r {
                Request::Attack => Some(if s == 0 { 7 } else { 8 }),
                Request::Vote => Some(9),
                Request::Guard => Some(3),
                _ => None,
            }),
        );
        let (t, killed) = attack_on(&ev, 1).unwrap();
        if allow {
            assert_eq!(t, None);
        } else {
            assert!(matches!(t, Some(7) | Some(8)) && killed);
        }
    }
    // Guarded target survives; attacked_agent absent next day.
    let c = cfg(9, |c| c.game.max_day = 2);
    let (_, ev, sent) = play(
        c,
        V9.to_vec(),
        1,
        simple(|_, r, _| match r {
            Request::Attack => Some(7),
            Request::Guard => Some(7),
            Request::Vote => Some(9),
            _ => None,
        }),
    );
    assert_eq!(attack_on(&ev, 1), Some((Some(7), false)));
    let di2 = sent
        .iter()
        .find(|(_, p)| p.request == Request::DailyInitialize && p.info.as_ref().unwrap().day == 2)
        .unwrap();
    assert!(di2.1.info.as_ref().unwrap().attacked_agent.is_none());
    // Dead bodyguard: executed on day 1 → no GUARD, the attack kills.
    let c = cfg(9, |c| c.game.max_day = 1);
    let (_, ev, sent) = play(
        c,
        V9.to_vec(),
        1,
        simple(|_, r, _| match r {
            Request::Attack => Some(7),
            Request::Guard => Some(7),
            Request::Vote => Some(4),
            _ => None,
        }),
    );
    assert!(!sent.iter().any(|(_, p)| p.request == Request::Guard));
    assert_eq!(attack_on(&ev, 1), Some((Some(7), true)));
}

#[test]
fn t06_divine_guard_results_next_day_to_the_role_only() {
    let c = cfg(9, |c| c.game.max_day = 2);
    let (_, ev, sent) = play(
        c,
        V9.to_vec(),
        1,
        simple(|s, r, _| match r {
            Request::Divine => Some(1),
            Request::Guard => Some(4), // self: ignored
            Request::Vote => Some(if s == 8 { 7 } else { 9 }),
            Request::Attack => Some(8),
            _ => None,
        }),
    );
    assert!(ev.iter().any(|e| matches!(
        e,
        GameEvent::Divine {
            day: 0,
            seer: 3,
            target: 1,
            result: Species::Werewolf
        }
    )));
    assert!(!ev.iter().any(|e| matches!(e, GameEvent::Guard { .. })));
    for (seat, p) in &sent {
        let info = match &p.info {
            Some(i) => i,
            None => continue,
        };
        if let Some(j) = &info.divine_result {
            assert_eq!(*seat, 2, "divine_result only to the seer");
            assert_eq!(j.day, info.day - 1);
        }
        if let Some(j) = &info.medium_result {
            assert_eq!(*seat, 4, "medium_result only to the medium");
            assert_eq!(j.agent, j.target);
        }
        if p.request == Request::Divine && info.day == 0 {
            assert!(info.divine_result.is_none(), "not before the next day");
        }
    }
    let seer_day1 = sent
        .iter()
        .find(|(s, p)| {
            *s == 2 && p.request == Request::DailyInitialize && p.info.as_ref().unwrap().day == 1
        })
        .unwrap();
    assert_eq!(
        seer_day1
            .1
            .info
            .as_ref()
            .unwrap()
            .divine_result
            .as_ref()
            .unwrap()
            .target,
        name(1)
    );
    let med = sent
        .iter()
        .find(|(s, p)| {
            *s == 4 && p.request == Request::DailyInitialize && p.info.as_ref().unwrap().day == 2
        })
        .unwrap();
    assert_eq!(
        med.1
            .info
            .as_ref()
            .unwrap()
            .medium_result
            .as_ref()
            .unwrap()
            .target,
        name(9)
    );
}

#[test]
fn t07_win_checks_after_every_phase_and_max_day() {
    assert_eq!(
        winner(&[Role::Werewolf, Role::Possessed]),
        Some(Team::Werewolf)
    );
    assert_eq!(
        winner(&[Role::Werewolf, Role::Possessed, Role::Villager]),
        None
    );
    assert_eq!(
        winner(&[Role::Possessed, Role::Villager]),
        Some(Team::Villager)
    );
    // Exiling the only wolf on day 1 ends the game before divine and attack.
    let c = cfg(5, |_| {});
    let (out, _, sent) = play(
        c,
        V5.to_vec(),
        1,
        simple(|_, r, _| (r == Request::Vote).then_some(5)),
    );
    assert_eq!(out.winner, Team::Villager);
    assert!(
        !sent
            .iter()
            .any(|(_, p)| p.info.as_ref().is_some_and(|i| i.day == 1)
                && matches!(p.request, Request::Divine | Request::Attack))
    );
    // max_day = 0: only day 0, then NONE.
    let c = cfg(5, |c| c.game.max_day = 0);
    let (out, _, sent) = play(c, V5.to_vec(), 1, simple(|_, _, _| Some(1)));
    assert_eq!((out.winner, out.reason), (Team::None, FinishReason::MaxDay));
    assert!(!sent.iter().any(|(_, p)| p.request == Request::Vote));
}

#[test]
fn t08_abort_ratio() {
    assert_eq!(cfg(5, |_| {}).abort_threshold(), 1);
    assert_eq!(cfg(9, |_| {}).abort_threshold(), 1);
    assert_eq!(cfg(13, |_| {}).abort_threshold(), 2);
    // ratio giving int 0 is raised to 1 (a game never ends on its first phase).
    assert_eq!(
        cfg(5, |c| c.server.max_continue_error_ratio = 0.1).abort_threshold(),
        1
    );
    let broken = |bad: Vec<usize>| -> Script {
        Box::new(move |s, p| {
            if bad.contains(&s) {
                Reply::Error("gone".into())
            } else if matches!(p.request, Request::Talk | Request::Whisper) {
                Reply::Text("Over".into())
            } else {
                Reply::Text("nobody".into())
            }
        })
    };
    let (out, _, _) = play(cfg(5, |_| {}), V5.to_vec(), 1, broken(vec![0]));
    assert_eq!(
        (out.winner, out.reason),
        (Team::None, FinishReason::AbortedByError)
    );
    assert_eq!(out.errors.len(), 1);
    let roles13 = [
        Role::Werewolf,
        Role::Werewolf,
        Role::Werewolf,
        Role::Seer,
        Role::Bodyguard,
        Role::Medium,
        Role::Possessed,
        Role::Villager,
        Role::Villager,
        Role::Villager,
        Role::Villager,
        Role::Villager,
        Role::Villager,
    ];
    let (out, _, _) = play(
        cfg(13, |c| c.game.max_day = 1),
        roles13.to_vec(),
        1,
        broken(vec![7]),
    );
    assert_eq!(
        out.reason,
        FinishReason::MaxDay,
        "one error in 13 continues"
    );
    let (out, _, _) = play(cfg(13, |_| {}), roles13.to_vec(), 1, broken(vec![7, 8]));
    assert_eq!(out.reason, FinishReason::AbortedByError);
}

fn talks(ev: &[GameEvent], day: i64) -> Vec<(usize, String)> {
    ev.iter()
        .filter_map(|e| match e {
            GameEvent::Talk {
                whisper: false,
                idx,
                talk,
            } if talk.day == day => Some((*idx, talk.text.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn t09_talk_session_counts_skips_and_over() {
    let c = cfg(5, |c| {
        c.game.max_day = 0;
        c.game.talk.max_skip = 1;
    });
    let mut n = [0usize; 5];
    let (_, ev, sent) = play(
        c,
        V5.to_vec(),
        4,
        Box::new(move |s, p| {
            if p.request != Request::Talk {
                return Reply::Text("x".into());
            }
            n[s] += 1;
            Reply::Text(match (s, n[s]) {
                (0, 1) | (0, 2) => "Skip".into(), // second Skip has no budget → Over
                (1, 1) => "ForceSkip".into(),     // client ForceSkip → Skip
                (1, 2) => "hello".into(),         // resets the skip budget
                (1, 3) => "Skip".into(),
                (2, _) => return Reply::Failed("timeout".into()), // → Skip without budget
                (3, _) => "".into(),                              // empty → Over
                _ => "chat".into(),
            })
        }),
    );
    let t = talks(&ev, 0);
    let of = |i: usize| {
        t.iter()
            .filter(|(x, _)| *x == i)
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(of(1), ["Skip", "Over"]);
    assert_eq!(of(2), ["Skip", "hello", "Skip", "chat"]);
    assert_eq!(of(3), ["Skip", "Skip", "Skip", "Skip"]);
    assert_eq!(of(4), ["Over"]);
    assert_eq!(of(5), ["chat", "chat", "chat", "chat"]);
    // remain_count is decremented before the request.
    let first = sent
        .iter()
        .find(|(_, p)| p.request == Request::Talk)
        .unwrap();
    assert_eq!(first.1.info.as_ref().unwrap().remain_count, Some(3));
    // Everybody Over → the session ends after one round.
    let c = cfg(5, |c| c.game.max_day = 0);
    let (_, ev, _) = play(c, V5.to_vec(), 4, simple(|_, _, _| None));
    assert_eq!(talks(&ev, 0).len(), 5);
}

#[test]
fn t10_length_rules() {
    let d = LengthConfig::default();
    let a70 = "あ".repeat(70);
    assert_eq!(
        length::apply(&a70, &d, &["アスカ"], &mut None),
        "あ".repeat(50)
    );
    let text = format!("前置き @アスカ {}", "い".repeat(60));
    assert_eq!(
        length::apply(&text, &d, &["アスカ"], &mut None),
        format!("前置き  @アスカ  {}", "い".repeat(50))
    );
    let w = LengthConfig {
        count_in_word: true,
        base_length: 3,
        ..d
    };
    assert_eq!(
        length::apply("one two three four", &w, &[], &mut None),
        "one two three"
    );
    let sp = LengthConfig {
        count_spaces: true,
        base_length: 3,
        ..d
    };
    assert_eq!(length::count("a\u{3000}b", &sp), 3);
    assert_eq!(length::count("a\u{3000}b", &d), 2);
    assert_eq!(
        length::apply("a\u{3000}bc", &sp, &[], &mut None),
        "a\u{3000}b"
    );
    // per_talk overflow with a long prefix drops the mention and the rest.
    let pt = LengthConfig {
        per_talk: 5,
        base_length: -1,
        mention_length: 50,
        ..d
    };
    assert_eq!(
        length::apply("abcdefgh @B tail", &pt, &["B"], &mut None),
        "abcde"
    );
    assert_eq!(
        length::apply("abc @B tail", &pt, &["B"], &mut None),
        "abc  @B  ta"
    );
    // per_agent budget: base 2 + budget 3.
    let pa = LengthConfig {
        per_agent: 3,
        base_length: 2,
        ..d
    };
    let mut budget = Some(3);
    assert_eq!(length::apply("abcdefg", &pa, &[], &mut budget), "abcde");
    assert_eq!(budget, Some(0));
    assert_eq!(length::apply("   ", &d, &[], &mut None), "Over");
    // An exhausted budget skips the agent in the session.
    let c = cfg(5, |c| {
        c.game.max_day = 0;
        c.game.talk.max_length.per_agent = 2;
        c.game.talk.max_length.base_length = 0;
    });
    let (_, ev, _) = play(c, V5.to_vec(), 1, simple(|_, _, _| None).pipe_talk("hello"));
    assert!(talks(&ev, 0).iter().all(|(_, t)| t == "he"));
    assert_eq!(talks(&ev, 0).len(), 5);
}

trait PipeTalk {
    fn pipe_talk(self, text: &'static str) -> Script;
}
impl PipeTalk for Script {
    fn pipe_talk(mut self, text: &'static str) -> Script {
        Box::new(move |s, p| {
            if p.request == Request::Talk {
                Reply::Text(text.into())
            } else {
                (self)(s, p)
            }
        })
    }
}

#[test]
fn t11_info_visibility() {
    let c = cfg(9, |c| c.game.max_day = 2);
    let (_, _, sent) = play(
        c.clone(),
        V9.to_vec(),
        2,
        simple(|_, r, _| match r {
            Request::Vote => Some(9),
            Request::Attack => Some(8),
            _ => Some(7),
        }),
    );
    for (seat, p) in &sent {
        let Some(info) = &p.info else { continue };
        let in_session = matches!(p.request, Request::Talk | Request::Whisper);
        assert_eq!(info.remain_count.is_some(), in_session, "{:?}", p.request);
        if p.request == Request::Finish {
            assert_eq!(info.role_map.len(), 9);
            assert!(p.setting.is_none());
        } else if *seat < 2 {
            assert_eq!(info.role_map.len(), 2, "wolves see both wolves");
        } else {
            assert_eq!(info.role_map.len(), 1);
        }
        if *seat >= 2 {
            assert!(
                info.attack_vote_list.is_empty(),
                "attack votes only to wolves"
            );
        }
        assert_eq!(info.status_map.len(), 9);
        assert_eq!(
            p.setting.is_some(),
            matches!(p.request, Request::Initialize | Request::DailyInitialize)
        );
    }
    assert!(
        sent.iter()
            .any(|(s, p)| *s == 0 && !p.info.as_ref().unwrap().attack_vote_list.is_empty())
    );
    assert!(
        sent.iter()
            .any(|(_, p)| p.info.as_ref().is_some_and(|i| !i.vote_list.is_empty()))
    );
    let hidden = cfg(9, |c| {
        c.game.max_day = 2;
        c.game.vote_visibility = false;
    });
    let (_, _, sent) = play(
        hidden,
        V9.to_vec(),
        2,
        simple(|_, r, _| (r == Request::Vote).then_some(9)),
    );
    assert!(sent.iter().all(|(_, p)| {
        p.info
            .as_ref()
            .is_none_or(|i| i.vote_list.is_empty() && i.attack_vote_list.is_empty())
    }));
    let dead = sent.iter().any(|(_, p)| {
        p.info
            .as_ref()
            .is_some_and(|i| i.status_map.values().any(|s| *s == Status::Dead))
    });
    assert!(dead);
}

#[test]
fn t12_history_diffs() {
    let c = cfg(9, |c| c.game.max_day = 1);
    let (_, _, sent) = play(
        c,
        V9.to_vec(),
        3,
        simple(|_, r, _| (r == Request::Vote).then_some(9)).pipe_talk("words"),
    );
    for seat in 0..9 {
        let mine: Vec<&Packet> = sent
            .iter()
            .filter(|(s, _)| *s == seat)
            .map(|(_, p)| p)
            .collect();
        let mut expect_next = 0i64;
        let mut day = -1;
        for p in mine {
            let info = p.info.as_ref().unwrap();
            if p.request == Request::DailyInitialize {
                day = info.day;
                expect_next = 0;
            }
            if let Some(h) = &p.talk_history {
                for t in h {
                    assert_eq!(
                        (t.day, t.idx),
                        (day, expect_next),
                        "seat {seat} {:?}",
                        p.request
                    );
                    expect_next += 1;
                }
            }
            if p.request == Request::DailyFinish {
                assert_eq!(
                    p.whisper_history.is_some(),
                    seat < 2,
                    "whisper_history only for wolves"
                );
            }
        }
    }
    // The first TALK of day 1 carries every earlier talk of that day.
    let firsts: Vec<&Packet> = sent
        .iter()
        .filter(|(_, p)| p.request == Request::Talk && p.info.as_ref().unwrap().day == 1)
        .map(|(_, p)| p)
        .take(3)
        .collect();
    for (i, p) in firsts.iter().enumerate() {
        assert_eq!(p.talk_history.as_ref().unwrap().len(), i);
    }
}
