//! The proptest twin of the cargo-fuzz target `aiwolf_packet` (run in CI):
//! arbitrary and mutated server packets through `wolf join`'s decoding and
//! per-packet handling, and arbitrary agent answers through whole games of
//! the master behind `wolf serve`. The checks live in tests/aiwolf_harness.

mod aiwolf_harness;

use aiwolf_harness::{client_side, initialize, server_side};
use proptest::prelude::*;
use serde_json::Value;

/// Every packet of the recorded 5-player v0.4.12 game (agent 1's view),
/// plus a real INITIALIZE as palaver sends it.
fn recorded() -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/aiwolf/v0.4.12_5p_profiles_packets.jsonl");
    let mut out: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["dir"] == "recv" && v["agent_no"] == 1).then(|| v["data"].clone())
        })
        .collect();
    out.push(serde_json::from_str(&initialize().to_json()).unwrap());
    out
}

/// Replacement values: edges of every JSON kind.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just(-1i64),
            Just(0),
            Just(86_400_001)
        ]
        .prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("NAME"),
            Just("TALK"),
            Just("VOTE"),
            Just("FINISH"),
            Just("TALK_BROADCAST"),
            Just("ALIVE"),
            Just("DEAD"),
            Just("WEREWOLF"),
            Just("Agent[01]"),
            Just("Minato")
        ]
        .prop_map(Value::from),
        Just(Value::Array(vec![])),
        Just(Value::Object(Default::default())),
    ]
}

/// Replaces (or removes, or adds) the `pick`-th member or element found
/// in a depth-first walk of `v`.
fn mutate(v: &mut Value, pick: &mut usize, with: &Value, remove: bool) -> bool {
    match v {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if *pick == 0 {
                    if remove {
                        m.remove(&k);
                    } else {
                        m.insert(k, with.clone());
                    }
                    return true;
                }
                *pick -= 1;
                if let Some(child) = m.get_mut(&k)
                    && mutate(child, pick, with, remove)
                {
                    return true;
                }
            }
            false
        }
        Value::Array(a) => {
            for i in 0..a.len() {
                if *pick == 0 {
                    if remove {
                        a.remove(i);
                    } else {
                        a[i] = with.clone();
                    }
                    return true;
                }
                *pick -= 1;
                if mutate(&mut a[i], pick, with, remove) {
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

/// Agent answers: real names and keywords among arbitrary text.
fn answer() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Skip".to_owned()),
        Just("Over".to_owned()),
        Just("ForceSkip".to_owned()),
        Just(String::new()),
        Just("\u{2}".to_owned()),
        Just("\u{3}".to_owned()),
        (1..=9u8).prop_map(|i| format!("Agent[{i:02}]")),
        (1..=9u8, ".{0,40}").prop_map(|(i, t)| format!("{t} @Agent[{i:02}] {t}{t}")),
        prop_oneof![Just("Minato"), Just("Asuka"), Just("Shion"), Just("Misaki")]
            .prop_map(str::to_owned),
        ".{0,80}",
        "[ \u{3000}\t\ra-z@]{0,30}",
        (0..3000usize).prop_map(|n| "長".repeat(n)),
    ]
}

proptest! {
    // A game takes tens of milliseconds in a debug build.
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// Arbitrary bytes as server packets and as agent answers.
    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..600)) {
        client_side(&data);
        let _ = server_side(&data);
    }

    /// Whole games whose agents answer anything.
    #[test]
    fn games_with_arbitrary_answers_end_by_the_rules(
        head in prop::array::uniform3(any::<u8>()),
        answers in prop::collection::vec(answer(), 1..40),
    ) {
        let mut data = head.to_vec();
        data.extend(answers.join("\n").into_bytes());
        let _ = server_side(&data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A recorded packet with one member replaced, removed or emptied,
    /// followed by the rest of the recorded game: decoding refuses or
    /// accepts it, and the client's answers stay sound either way.
    #[test]
    fn mutated_recorded_packets(
        which in 0usize..200,
        pick in 0usize..400,
        with in odd_value(),
        remove in any::<bool>(),
        rest in any::<bool>(),
    ) {
        let packets = recorded();
        let i = which % packets.len();
        let mut p = packets[i].clone();
        let mut at = pick;
        mutate(&mut p, &mut at, &with, remove);
        let mut stream = String::new();
        for (j, q) in packets.iter().enumerate() {
            if j == i {
                stream.push_str(&p.to_string());
            } else if rest || j < i {
                stream.push_str(&q.to_string());
            } else {
                continue;
            }
            stream.push('\n');
        }
        client_side(stream.as_bytes());
    }
}

/// The recorded stream as it is decodes in full (the mutations start from
/// packets the client accepts).
#[test]
fn the_unmutated_recording_is_accepted() {
    for p in recorded() {
        palaver::werewolf::agent::decode_packet(&p.to_string())
            .unwrap_or_else(|e| panic!("{e}: {p}"));
    }
    // The same bytes through the whole client pass.
    let stream: Vec<String> = recorded().iter().map(Value::to_string).collect();
    client_side(stream.join("\n").as_bytes());
}

/// Agents that never name anyone valid: nobody dies, and a game without a
/// `max_day` still ends, at the day limit, as a draw.
#[test]
fn a_game_nobody_plays_validly_stops_at_the_day_limit() {
    let o = server_side(b"\x80\xff\x00nobody\nAgent[99]\n\nOver").expect("a game");
    assert_eq!(o.reason, palaver::werewolf::game::FinishReason::MaxDay);
    assert_eq!(o.winner, palaver::werewolf::packet::Team::None);
    assert_eq!(o.day, palaver::limits::WOLF_DAYS.max + 1);
    assert!(o.errors.is_empty());
}
