use super::*;
use crate::json::{self, Map, Value};
use crate::obj;

fn tank_config() -> Config {
    Config::from_spec(crate::library::bundled_spec("tank-battle-v1").expect("bundled"))
        .expect("config")
}

#[test]
fn the_bundled_config_reads_as_the_reference_sees_it() {
    let c = tank_config();
    assert_eq!(
        crate::json::canonical::to_string_ordered(&c.to_value()),
        r#"{"tick_rate_hz":10,"input_delay_ticks":3,"snapshot_every_ticks":1,"max_command_lead_ticks":30,"max_commands_per_frame":64,"disconnect_policy":"abort"}"#
    );
    assert_eq!(c.tick_ms(), 100.0);
}

#[test]
fn the_match_config_hash_is_the_reference_vector() {
    // ../shared/reference/flows-mental-poker-group-realtime.md Part C: the
    // bundled tank-battle dir hashes to b67f…, and with options {} the
    // match config to c8c6….
    let ruleset = "b67f90ae20f6f26856727cf9426eced5eee6ed061601c851a3d1988b3aa8a3d0";
    assert_eq!(
        match_config_hash(ruleset, &Map::new(), &tank_config()),
        "c8c6f04814e5ae9f479e29ec70e9b469766fafabcc3a3bd89d78ec684fd423a7"
    );
}

#[test]
fn the_ruleset_hash_skips_ui_caches_and_dot_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.json"), b"{}").unwrap();
    std::fs::write(d.join("hooks.py"), b"x = 1\n").unwrap();
    let base = ruleset_hash(d).unwrap();
    for (path, body) in [
        ("ui/index.html", "<p>"),
        ("__pycache__/hooks.cpython-311.pyc", "x"),
        (".hidden", "x"),
        ("hooks.pyc", "x"),
        ("sub/.git/config", "x"),
    ] {
        let p = d.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
    }
    assert_eq!(
        ruleset_hash(d).unwrap(),
        base,
        "ignored files change nothing"
    );
    std::fs::create_dir_all(d.join("data")).unwrap();
    std::fs::write(d.join("data/map.txt"), b"#").unwrap();
    assert_ne!(ruleset_hash(d).unwrap(), base, "a rule file counts");
    // The hash is over sorted POSIX paths with each file's SHA-256.
    let expect = json_hash(&Value::Object(obj! {
        "version" => 1i64,
        "files" => Value::Array(vec![
            Value::Object(obj!{"path" => "data/map.txt", "sha256" => crate::json::canonical::sha256_hex(b"#")}),
            Value::Object(obj!{"path" => "hooks.py", "sha256" => crate::json::canonical::sha256_hex(b"x = 1\n")}),
            Value::Object(obj!{"path" => "spec.json", "sha256" => crate::json::canonical::sha256_hex(b"{}")}),
        ]),
    }));
    assert_eq!(ruleset_hash(d).unwrap(), expect);
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        ruleset_hash(empty.path()),
        Err(RulesetError::Empty(_))
    ));
}

fn state(n: i64) -> Value {
    Value::Object(obj! { "tick" => n, "x" => "y" })
}

fn applied0(tick: u64) -> Map {
    obj! { "host" => empty_applied("host", tick), "guest" => empty_applied("guest", tick) }
}

#[test]
fn frames_chain_and_every_tamper_is_caught() {
    let f0 = make_frame(
        0,
        state(0),
        None,
        None,
        applied0(0),
        Value::Array(vec![]),
        "none",
    );
    verify_frame(&f0, None).unwrap();
    assert_eq!(
        f0.get("prev_state_hash").and_then(Value::as_str),
        Some(ZERO_HASH)
    );
    let f1 = make_frame(
        1,
        state(1),
        None,
        Some(&f0),
        applied0(1),
        Value::Array(vec![]),
        "host",
    );
    verify_frame(&f1, Some(&f0)).unwrap();
    assert_eq!(
        verify_frame(&f1, None),
        Err(FrameError::Discontinuity {
            expected: 0,
            got: 1
        })
    );
    let tamper = |k: &str, v: Value| {
        let mut f = f1.clone();
        f.insert(k, v);
        verify_frame(&f, Some(&f0))
    };
    assert_eq!(tamper("state", state(9)), Err(FrameError::StateHash));
    assert_eq!(
        tamper("prev_state_hash", Value::from(ZERO_HASH)),
        Err(FrameError::PrevStateHash)
    );
    assert_eq!(
        tamper("prev_chain_hash", Value::from(ZERO_HASH)),
        Err(FrameError::PrevChainHash)
    );
    assert_eq!(
        tamper("outcome", Value::from("nobody")),
        Err(FrameError::Outcome)
    );
    assert_eq!(tamper("events", Value::from(1i64)), Err(FrameError::Shape));
    assert_eq!(
        tamper("host_time_ns", Value::from(5i64)),
        Err(FrameError::ChainHash)
    );
    assert_eq!(tamper("tick", Value::from(-1i64)), Err(FrameError::Tick));
    assert_eq!(tamper("tick", Value::Bool(true)), Err(FrameError::Tick));
    assert_eq!(tamper("state", Value::from(1i64)), Err(FrameError::State));
    assert_eq!(tamper("extra", Value::Null), Err(FrameError::Fields));
    let mut missing = f1.clone();
    missing.remove("events");
    assert_eq!(verify_frame(&missing, Some(&f0)), Err(FrameError::Fields));
}

#[test]
fn command_and_applied_hashes_are_over_the_reference_objects() {
    let m = command_message(3, 12, vec![Value::Object(obj! {"unit_id" => "g0"})]);
    let expect = json_hash(
        &json::parse_str(r#"{"seq":3,"target_tick":12,"commands":[{"unit_id":"g0"}]}"#).unwrap(),
    );
    assert_eq!(
        m.get("command_hash").and_then(Value::as_str),
        Some(expect.as_str())
    );
    let e = empty_applied("guest", 7);
    let expect =
        json_hash(&json::parse_str(r#"{"seq":null,"target_tick":7,"commands":[]}"#).unwrap());
    assert_eq!(
        e.get("command_hash").and_then(Value::as_str),
        Some(expect.as_str())
    );
    let a = applied("host", &m);
    assert_eq!(a.get("seq"), Some(&Value::from(3i64)));
    assert_eq!(a.get("side"), Some(&Value::from("host")));
}

#[test]
fn the_lead_follows_the_round_trip_within_its_bounds() {
    let c = tank_config();
    let none = TransportProfile::new(&Latency::default(), &c);
    assert_eq!((none.measured, none.command_lead_ticks), (false, 3));
    let mut fast = Latency::default();
    for ms in [1.0, 1.2, 0.8] {
        fast.add(ms);
    }
    let p = TransportProfile::new(&fast, &c);
    assert_eq!(p.command_lead_ticks, 3, "the input delay is the floor");
    assert!(p.micro_suitable);
    let mut slow = Latency::default();
    slow.add(200.0);
    assert_eq!(TransportProfile::new(&slow, &c).command_lead_ticks, 4); // ceil(2) + 2
    let mut jittery = Latency::default();
    for ms in [250.0, 450.0] {
        jittery.add(ms);
    }
    // smoothed 300, jitter 200: ceil(700/100) + 2 = 9
    assert_eq!(TransportProfile::new(&jittery, &c).command_lead_ticks, 9);
    let mut awful = Latency::default();
    awful.add(60_000.0);
    let p = TransportProfile::new(&awful, &c);
    assert_eq!(p.command_lead_ticks, 30, "capped at the max lead");
    assert!(!p.micro_suitable);
    assert_eq!(
        p.to_value().get("recommended_control"),
        Some(&Value::from("macro"))
    );
}
