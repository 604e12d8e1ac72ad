use super::*;
use crate::session::replay::StepKind;

const LOG_5P: &str = include_str!("../../../tests/data/aiwolf/v0.4.12_5p_game.log");
const LOG_13P: &str = include_str!("../../../tests/data/aiwolf/v0.4.12_13p_game.log");
const LOG_ABORT: &str =
    include_str!("../../../tests/data/aiwolf/v0.4.12_5p_abort_after_timeout_game.log");

static NULL: Value = Value::Null;

trait At {
    fn at(&self, k: &str) -> &Value;
}

impl At for Map {
    fn at(&self, k: &str) -> &Value {
        self.get(k).unwrap_or(&NULL)
    }
}

impl At for Value {
    fn at(&self, k: &str) -> &Value {
        self.get(k).unwrap_or(&NULL)
    }
}

fn get<'a>(m: &'a Map, path: &[&str]) -> &'a Value {
    let mut v = m.get(path[0]).unwrap_or(&Value::Null);
    for k in &path[1..] {
        v = v.get(k).unwrap_or(&Value::Null);
    }
    v
}

fn agent(state: &Map, idx: i64) -> Map {
    state
        .at("agents")
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a.get("idx").and_then(Value::as_i64) == Some(idx))
        .and_then(Value::as_object)
        .cloned()
        .unwrap()
}

fn status(state: &Map, idx: i64) -> String {
    agent(state, idx).at("status").as_str().unwrap().to_owned()
}

#[test]
fn reads_every_kind_of_line() {
    assert_eq!(
        Line::parse("0,status,1,VILLAGER,ALIVE,cap1,ユミ"),
        Some(Line::Status {
            day: 0,
            agent: 1,
            role: "VILLAGER".into(),
            status: "ALIVE".into(),
            original_name: "cap1".into(),
            name: "ユミ".into()
        })
    );
    assert_eq!(
        Line::parse("1,talk,3,0,2,a, b, c\r"),
        Some(Line::Talk {
            day: 1,
            whisper: false,
            idx: 3,
            turn: 0,
            agent: 2,
            text: "a, b, c".into()
        })
    );
    assert!(matches!(
        Line::parse("1,status,2,WEREWOLF,,cap2,Agent[02]"),
        Some(Line::Status { status, .. }) if status.is_empty()
    ));
    assert_eq!(Line::parse("1,vote,1,5").map(|l| l.kind()), Some("vote"));
    assert_eq!(
        Line::parse("1,attackVote,4,1").map(|l| l.kind()),
        Some("attackVote")
    );
    assert_eq!(
        Line::parse("1,attack,-1,true"),
        Some(Line::Attack {
            day: 1,
            target: None,
            killed: true
        })
    );
    assert_eq!(
        Line::parse("3,result,1,1,WEREWOLF"),
        Some(Line::Result {
            day: 3,
            humans: 1,
            wolves: 1,
            winner: "WEREWOLF".into()
        })
    );
    for bad in [
        "",
        "x",
        "1",
        "1,",
        "1,vote",
        "1,vote,1",
        "1,vote,1,5,6",
        "1,vote,0,5",
        "1,vote,1,99999",
        "-1,vote,1,5",
        "+1,vote,1,5",
        "1,vote, 1,5",
        "1,status,1,villager,ALIVE,a,b",
        "1,status,1,VILLAGER,MAYBE,a,b",
        "1,status,1,VILLAGER,ALIVE,a",
        "1,talk,0,0,1",
        "1,attack,2,yes",
        "1,attack,-2,true",
        "1,result,1,1",
        "1,dance,1,2",
        "99999999999999999999,vote,1,2",
    ] {
        assert_eq!(Line::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn tells_a_game_log_by_its_content() {
    assert!(is_game_log(LOG_5P));
    assert!(is_game_log(LOG_13P));
    assert!(is_game_log(LOG_ABORT));
    assert!(!is_game_log(""));
    assert!(!is_game_log("{\"type\":\"session_ended\"}\n"));
    assert!(!is_game_log("hello\nworld\n0,vote,1,2\n"));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("game.txt");
    std::fs::write(&p, LOG_5P).unwrap();
    assert!(sniff(&p));
    assert!(!sniff(dir.path()));
    assert!(!sniff(&dir.path().join("missing.log")));
    let t = load(&p).unwrap();
    assert_eq!(t.steps.len(), parse(LOG_5P, "x").steps.len());
    let q = dir.path().join("notes.log");
    std::fs::write(&q, "just some notes\n").unwrap();
    assert!(matches!(load(&q), Err(LogError::NotAGameLog(_))));
    assert!(matches!(
        load(&dir.path().join("missing.log")),
        Err(LogError::Io { .. })
    ));
}

#[test]
fn replays_the_5_player_game() {
    let t = parse(LOG_5P, "5p.log");
    assert!(t.werewolf && t.finished && !t.truncated);
    assert_eq!(t.skipped, 0);
    assert_eq!(t.winner.as_deref(), Some("WEREWOLF"));
    assert_eq!(t.end_reason.as_deref(), Some("finished"));
    // 57 lines: 4 status blocks of 5 (one step each), 37 other lines.
    assert_eq!(LOG_5P.lines().count(), 57);
    assert_eq!(t.steps.len(), 4 + 37);
    let kinds = |k: &str| t.steps.iter().filter(|s| s.action == k).count();
    assert_eq!(kinds("status"), 4);
    assert_eq!(kinds("talk"), 23);
    assert_eq!(kinds("vote"), 8);
    assert_eq!(kinds("execute"), 2);
    assert_eq!(
        (kinds("divine"), kinds("attackVote"), kinds("attack")),
        (1, 1, 1)
    );
    assert_eq!(kinds("result"), 1);

    // The first step: day 0's status, everybody alive, roles known.
    let s0 = &t.steps[0];
    assert_eq!(s0.summary, "day 0: 5 of 5 alive");
    assert_eq!(get(&s0.state, &["day"]).as_i64(), Some(0));
    assert_eq!(agent(&s0.state, 5).at("role").as_str(), Some("SEER"));
    assert_eq!(agent(&s0.state, 4).at("name").as_str(), Some("ミサキ"));
    assert_eq!(s0.t, 0.0);

    // Day 1's votes: after the fifth, 5 ミヅキ has two.
    let v = t
        .steps
        .iter()
        .position(|s| s.summary == "5 ミヅキ votes for 4 ミサキ")
        .unwrap();
    let st = &t.steps[v].state;
    assert_eq!(st.at("phase").as_str(), Some("vote"));
    assert_eq!(st.at("day").as_i64(), Some(1));
    assert_eq!(st.at("votes").as_array().unwrap().len(), 5);
    assert_eq!(st.at("vote_round").as_i64(), Some(1));
    // Day 1's talk: only Over (not kept), none of day 0's.
    assert!(st.at("talk").as_array().unwrap().is_empty());
    // Day 0's talk, as it stood at the night's divination: the ten
    // lines that say something.
    let divine = t.steps.iter().find(|s| s.action == "divine").unwrap();
    let talk = divine.state.at("talk").as_array().unwrap();
    assert_eq!(talk.len(), 10);
    assert_eq!(talk[0].at("name").as_str(), Some("3 シオン"));
    assert_eq!(talk[9].at("agent").as_i64(), Some(4));
    assert!(
        talk[5]
            .at("text")
            .as_str()
            .unwrap()
            .starts_with("前置き  @アスカ")
    );

    // The execution and the night's attack.
    let e = &t.steps[v + 1];
    assert_eq!(e.summary, "5 ミヅキ (SEER) is executed");
    assert_eq!(status(&e.state, 5), "dead");
    assert_eq!(
        agent(&e.state, 5).at("death").as_str(),
        Some("executed on day 1")
    );
    let a = &t.steps[v + 3];
    assert_eq!(a.action, "attack");
    assert_eq!(a.summary, "1 ユミ (VILLAGER) is attacked and dies");
    assert_eq!(a.state.at("phase").as_str(), Some("night"));
    assert_eq!(a.state.at("alive").as_i64(), Some(3));
    assert_eq!(get(&a.state, &["attacked", "agent"]).as_i64(), Some(1));
    assert_eq!(get(&a.state, &["executed", "agent"]).as_i64(), Some(5));

    // Day 2 begins: its talk and votes are empty, the last execution
    // stays.
    let d2 = &t.steps[v + 4];
    assert_eq!(d2.summary, "day 2: 3 of 5 alive; dead: 1 ユミ, 5 ミヅキ");
    assert!(d2.state.at("talk").as_array().unwrap().is_empty());
    assert!(d2.state.at("votes").as_array().unwrap().is_empty());
    assert_eq!(get(&d2.state, &["executed", "role"]).as_str(), Some("SEER"));

    // The end.
    let end = t.steps.last().unwrap();
    assert_eq!(end.kind, StepKind::Ended);
    assert_eq!(
        end.summary,
        "game over, WEREWOLF wins: 1 human and 1 werewolf alive"
    );
    assert_eq!(end.state.at("phase").as_str(), Some("game over"));
    assert_eq!(
        get(&end.state, &["result", "winner"]).as_str(),
        Some("WEREWOLF")
    );
    assert_eq!(end.state.at("alive").as_i64(), Some(2));
    assert_eq!(state_line(&end.state), "day 3 · game over · 2 of 5 alive");
    // Times only grow.
    assert!(t.steps.windows(2).all(|w| w[0].t <= w[1].t));
    assert!(t.duration() > 10.0);
}

#[test]
fn replays_the_13_player_game() {
    let t = parse(LOG_13P, "13p.log");
    assert!(t.finished);
    assert_eq!(t.skipped, 0);
    assert_eq!(t.winner.as_deref(), Some("WEREWOLF"));
    // 235 lines, 78 of them in 6 status blocks of 13.
    assert_eq!(t.steps.len(), 235 - 78 + 6);
    let whispers = t.steps.iter().filter(|s| s.action == "whisper").count();
    assert_eq!(whispers, LOG_13P.matches(",whisper,").count());
    // Day 0 opens with the wolves' whispers before any talk: still day.
    let first_whisper = t.steps.iter().find(|s| s.action == "whisper").unwrap();
    assert_eq!(first_whisper.state.at("phase").as_str(), Some("day"));
    // The night's whispers after the day's talk.
    let talk = t.steps.iter().position(|s| s.action == "talk").unwrap();
    let night = t.steps[talk..]
        .iter()
        .find(|s| s.action == "whisper")
        .unwrap();
    assert_eq!(night.state.at("day").as_i64(), Some(0));
    assert_eq!(night.state.at("phase").as_str(), Some("night"));
    let guard = t.steps.iter().find(|s| s.action == "guard").unwrap();
    assert_eq!(guard.summary, "3 Agent[03] guards 9 Agent[09] (POSSESSED)");
    assert_eq!(guard.state.at("phase").as_str(), Some("night"));
    // The talk kept per step is bounded.
    assert!(
        t.steps
            .iter()
            .all(|s| s.state.at("talk").as_array().unwrap().len() <= TALK_LINES)
    );
    let end = t.steps.last().unwrap();
    assert_eq!(end.state.at("alive").as_i64(), Some(6));
    assert_eq!(
        agent(&end.state, 6).at("death").as_str(),
        Some("executed on day 1")
    );
    assert_eq!(
        agent(&end.state, 11).at("death").as_str(),
        Some("attacked on night 1")
    );
}

#[test]
fn replays_the_aborted_game() {
    let t = parse(LOG_ABORT, "abort.log");
    assert!(t.finished);
    assert_eq!(t.winner.as_deref(), Some("NONE"));
    assert_eq!(t.end_reason.as_deref(), Some("no winner"));
    // 2 status blocks, 17 talk lines, the result.
    assert_eq!(t.steps.len(), 2 + 17 + 1);
    let day1 = &t.steps[18];
    assert_eq!(day1.action, "status");
    assert_eq!(status(&day1.state, 2), "error");
    assert!(
        day1.summary.ends_with("errored: 2 Agent[02]"),
        "{}",
        day1.summary
    );
    assert_eq!(
        t.steps[19].summary,
        "game over, no winner (NONE): 4 humans and 1 werewolf alive"
    );
}

#[test]
fn damaged_lines_are_skipped_and_counted() {
    let mut text = String::from("garbage first\n");
    for (i, l) in LOG_5P.lines().enumerate() {
        if i % 7 == 3 {
            text.push_str(&l[..l.len() / 2]);
            text.push_str("\u{0}\n");
        } else {
            text.push_str(l);
            text.push_str("\r\n");
        }
    }
    text.push_str("9,unknown,1,2\n\n\n");
    let t = parse(&text, "damaged");
    let bom = format!("\u{feff}{LOG_5P}");
    assert!(is_game_log(&bom));
    let b = parse(&bom, "bom");
    assert_eq!((b.skipped, b.steps.len()), (0, 41));
    let damaged = LOG_5P
        .lines()
        .enumerate()
        .filter(|(i, _)| i % 7 == 3)
        .count();
    // Some halves still read (a talk line cut in its text).
    assert!(t.skipped >= 2 && t.skipped <= damaged + 2, "{}", t.skipped);
    assert!(t.finished);
    assert_eq!(t.winner.as_deref(), Some("WEREWOLF"));
}

#[test]
fn steps_are_bounded() {
    let mut text = String::from("0,status,1,VILLAGER,ALIVE,a,A\n");
    for i in 0..(MAX_STEPS + 50) {
        text.push_str(&format!("0,talk,{i},0,1,hello {i}\n"));
    }
    text.push_str("0,result,1,0,VILLAGER");
    let t = parse(&text, "long");
    assert_eq!(t.steps.len(), MAX_STEPS);
    assert!(t.truncated);
    assert!(!t.finished);
    let last = t.steps.last().unwrap();
    assert_eq!(last.state.at("talk").as_array().unwrap().len(), TALK_LINES);
}

#[test]
fn many_agents_with_long_names_stop_at_the_byte_bound() {
    let long = "名".repeat(200);
    let mut text = String::new();
    for i in 1..=MAX_AGENTS {
        text.push_str(&format!("0,status,{i},VILLAGER,ALIVE,{long},{long}\n"));
    }
    for i in 0..3000 {
        text.push_str(&format!("0,talk,{i},0,{},{long}\n", i % MAX_AGENTS + 1));
    }
    let t = parse(&text, "big");
    assert!(t.truncated);
    assert!(
        t.steps.len() > 100 && t.steps.len() < 3000,
        "{}",
        t.steps.len()
    );
    let first = &t.steps[0].state;
    assert_eq!(
        first.at("agents").as_array().unwrap().len(),
        MAX_AGENTS as usize
    );
    let name = agent(first, 1).at("name").as_str().unwrap().chars().count();
    assert_eq!(name, NAME_CHARS);
}

#[test]
fn a_revote_starts_a_new_round_of_votes() {
    let text = "1,status,1,VILLAGER,ALIVE,a,A\n1,status,2,WEREWOLF,ALIVE,b,B\n\
                1,vote,1,2\n1,vote,2,1\n1,vote,1,2\n1,vote,2,2\n1,execute,2,WEREWOLF\n\
                2,status,1,VILLAGER,ALIVE,a,A\n2,status,2,WEREWOLF,DEAD,b,B\n2,result,1,0,VILLAGER";
    let t = parse(text, "revote");
    assert_eq!(t.steps.len(), 8);
    let first = &t.steps[2].state;
    assert_eq!(first.at("vote_round").as_i64(), Some(1));
    assert_eq!(first.at("votes").as_array().unwrap().len(), 2);
    let again = &t.steps[3].state;
    assert_eq!(again.at("vote_round").as_i64(), Some(2));
    assert_eq!(again.at("votes").as_array().unwrap().len(), 1);
    assert_eq!(t.steps[4].state.at("votes").as_array().unwrap().len(), 2);
    assert_eq!(t.winner.as_deref(), Some("VILLAGER"));
    assert_eq!(
        agent(&t.steps[7].state, 2).at("death").as_str(),
        Some("executed on day 1")
    );
}

#[test]
fn unknown_agents_and_out_of_order_days_do_not_break_it() {
    let text = "3,vote,7,8\n1,attack,9,true\n0,execute,2,WEREWOLF\n2,result,0,0,VILLAGER";
    let t = parse(text, "odd");
    assert_eq!(t.steps.len(), 4);
    assert_eq!(t.steps[0].summary, "agent 7 votes for agent 8");
    let end = &t.steps[3].state;
    assert_eq!(status(end, 9), "dead");
    assert_eq!(agent(end, 2).at("role").as_str(), Some("WEREWOLF"));
}

mod props {
    use super::super::*;
    use proptest::prelude::*;

    const KINDS: [&str; 12] = [
        "status",
        "talk",
        "whisper",
        "vote",
        "attackVote",
        "execute",
        "divine",
        "guard",
        "attack",
        "result",
        "",
        "x",
    ];

    fn field() -> impl Strategy<Value = String> {
        prop_oneof![
            (-3i64..20).prop_map(|n| n.to_string()),
            Just("ALIVE".to_owned()),
            Just("DEAD".to_owned()),
            Just(String::new()),
            Just("true".to_owned()),
            Just("WEREWOLF".to_owned()),
            Just("-1".to_owned()),
            "\\PC{0,8}",
            any::<u64>().prop_map(|n| n.to_string()),
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            (
                0i64..6,
                prop::sample::select(KINDS.to_vec()),
                prop::collection::vec(field(), 0..7)
            )
                .prop_map(|(d, k, f)| {
                    let mut l = format!("{d},{k}");
                    for x in f {
                        l.push(',');
                        l.push_str(&x);
                    }
                    l
                }),
            "\\PC{0,40}",
            ".{0,40}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn random_lines_never_panic(lines in prop::collection::vec(line(), 0..80)) {
            let text = lines.join("\n");
            let t = parse(&text, "p");
            prop_assert!(t.steps.len() <= lines.len());
            prop_assert!(t.skipped <= lines.len());
            prop_assert!(t.steps.windows(2).all(|w| w[0].t <= w[1].t));
            let _ = is_game_log(&text);
            for s in &t.steps {
                let _ = state_line(&s.state);
            }
        }

        #[test]
        fn mutated_sample_logs_never_panic(
            cuts in prop::collection::vec((0usize..3000, 0usize..40, any::<u8>()), 1..12)
        ) {
            let mut bytes = LOG_5P.as_bytes().to_vec();
            for (at, len, b) in cuts {
                let at = at % (bytes.len() + 1);
                let end = (at + len).min(bytes.len());
                match b % 3 {
                    0 => { bytes.drain(at..end); }
                    1 => bytes.insert(at, b),
                    _ => bytes.insert(at, if b % 2 == 0 { b',' } else { b'\n' }),
                }
            }
            let text = String::from_utf8_lossy(&bytes);
            let t = parse(&text, "m");
            prop_assert!(t.steps.len() <= text.split('\n').count());
        }
    }

    const LOG_5P: &str = include_str!("../../../tests/data/aiwolf/v0.4.12_5p_game.log");
}
