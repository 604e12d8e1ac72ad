//! The authoritative_realtime runtime, palaver against palaver in one
//! process (lockstep and at the tick rate), with its journals checked
//! frame by frame, and against scripted peers that misbehave: each
//! misbehaviour ends the session with its reason, never a hang or a panic.

use palaver::engine::realtime::{
    self as rt, Journal, command_message, empty_applied, make_frame, verify_frame,
};
use palaver::engine::{
    self, Channel, ControlMode, Ctx, EngineConfig, MemorySink, Role, SessionOutcome,
};
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::obj;
use palaver::protocols::native_hooks_for_alias;
use palaver::protocols::tank::World;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;

use common::realtime::{DirSink, last_event};

const ALIAS: &str = "tank-battle-v1";

fn options(s: &str) -> Map {
    json::parse_str(s).unwrap().as_object().cloned().unwrap()
}

fn cfg(lockstep: bool, timeout: Duration) -> EngineConfig {
    EngineConfig {
        peer_timeout: Some(timeout),
        realtime_lockstep: lockstep,
        ..Default::default()
    }
}

async fn play(
    opts: &Map,
    cfg: &EngineConfig,
    dirs: Option<(PathBuf, PathBuf)>,
) -> (SessionOutcome, SessionOutcome, Arc<DirSink>, Arc<DirSink>) {
    let spec = library::bundled_spec(ALIAS).unwrap();
    let (hc, gc) = Channel::memory_pair();
    let (hd, gd) = dirs.unwrap_or_default();
    let hs = Arc::new(DirSink {
        mem: MemorySink::default(),
        dir: hd,
    });
    let gs = Arc::new(DirSink {
        mem: MemorySink::default(),
        dir: gd,
    });
    let hctx = Ctx::new(Role::Host, ControlMode::Autonomous, opts.clone()).with_sink(hs.clone());
    let gctx = Ctx::new(Role::Guest, ControlMode::Autonomous, opts.clone()).with_sink(gs.clone());
    let mut hh = native_hooks_for_alias(ALIAS).unwrap();
    let mut gh = native_hooks_for_alias(ALIAS).unwrap();
    let (h, g) = tokio::join!(
        engine::run(spec, hh.as_mut(), hc.pumped(), &hctx, cfg),
        engine::run(spec, gh.as_mut(), gc.pumped(), &gctx, cfg),
    );
    (h, g, hs, gs)
}

fn journal_frames(dir: &std::path::Path) -> Vec<Map> {
    let text = std::fs::read_to_string(dir.join(Journal::FRAMES)).unwrap();
    text.lines()
        .map(|l| {
            let v = json::parse_str(l).unwrap();
            v.get("frame").and_then(Value::as_object).cloned().unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_match_in_lockstep_ends_the_same_on_both_sides_and_its_journals_verify() {
    let (hd, gd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (h, g, hs, gs) = play(
        &options(r#"{"team_size":3,"pickup_mode":"powerups"}"#),
        &cfg(true, Duration::from_secs(10)),
        Some((hd.path().into(), gd.path().into())),
    )
    .await;
    assert!(h.completed && g.completed, "host {h:?}\nguest {g:?}");
    assert_eq!(h.winner, g.winner);
    assert!(h.winner.is_some());
    let ended = last_event(&gs.mem, "realtime_ended").unwrap();
    let audit = ended.get("audit").and_then(Value::as_object).unwrap();
    assert_eq!(
        audit.get("status"),
        Some(&Value::from("passed")),
        "{audit:?}"
    );
    assert_eq!(audit.get("integrity"), Some(&Value::from("verified")));
    // Both journals hold the same chain, tick 0 to the end, and it verifies.
    let (hf, gf) = (journal_frames(hd.path()), journal_frames(gd.path()));
    assert_eq!(hf, gf);
    let ticks = last_event(&hs.mem, "realtime_ended")
        .unwrap()
        .get("tick")
        .and_then(Value::as_i64)
        .unwrap();
    assert_eq!(hf.len() as i64, ticks + 1);
    let mut prev: Option<&Map> = None;
    for f in &hf {
        verify_frame(f, prev).unwrap();
        prev = Some(f);
    }
    // The host's state is the native world's, tick by tick: re-simulating
    // from the applied commands gives every state hash again.
    let mut world =
        World::from_options(&options(r#"{"team_size":3,"pickup_mode":"powerups"}"#)).unwrap();
    assert_eq!(
        Some(world.state_hash().as_str()),
        hf[0].get("state_hash").and_then(Value::as_str)
    );
    let mut guest_commands = 0;
    for f in &hf[1..] {
        let side = |s: &str| -> Vec<palaver::protocols::tank::Command> {
            f.get("applied_commands")
                .and_then(|a| a.get(s))
                .and_then(|a| a.get("commands"))
                .and_then(Value::as_array)
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, c)| palaver::protocols::tank::Command::from_value(c, i).unwrap())
                .collect()
        };
        let (hc, gc) = (side("host"), side("guest"));
        guest_commands += gc.len();
        world.step(&hc, &gc);
        assert_eq!(
            Some(world.state_hash().as_str()),
            f.get("state_hash").and_then(Value::as_str)
        );
    }
    assert!(guest_commands > 0, "the guest's commands were applied");
    let audit_file = std::fs::read_to_string(gd.path().join(Journal::AUDIT)).unwrap();
    assert!(audit_file.contains("\"status\":\"passed\""), "{audit_file}");
    let commands = std::fs::read_to_string(hd.path().join(Journal::COMMANDS)).unwrap();
    assert!(
        commands
            .lines()
            .any(|l| l.contains("\"kind\":\"received\""))
    );
    assert!(
        commands
            .lines()
            .any(|l| l.contains("\"kind\":\"generated\""))
    );
    let acks = std::fs::read_to_string(gd.path().join(Journal::COMMANDS)).unwrap();
    assert!(acks.lines().any(|l| l.contains("\"status\":\"accepted\"")));
    assert!(
        !acks.contains("\"status\":\"rejected\""),
        "no command refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_lockstep_matches_always_agree_on_the_ending() {
    for (i, opts) in [
        r#"{"team_size":1,"max_ticks":40}"#,
        r#"{"team_size":2}"#,
        r#"{"team_size":5,"friendly_fire":true,"max_ticks":300}"#,
        r#"{"team_size":4,"pickup_mode":"powerups","max_ticks":200}"#,
        r#"{"team_size":8,"max_ticks":120}"#,
    ]
    .iter()
    .enumerate()
    {
        let (h, g, _, gs) = play(&options(opts), &cfg(true, Duration::from_secs(10)), None).await;
        assert!(h.completed && g.completed, "{i} {opts}: {h:?} / {g:?}");
        assert_eq!(h.winner, g.winner, "{opts}");
        let audit = last_event(&gs.mem, "realtime_ended").unwrap();
        assert_eq!(
            audit.get("audit").and_then(|a| a.get("status")),
            Some(&Value::from("passed")),
            "{opts}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_tick_rate_the_host_keeps_its_deadlines_and_never_waits_for_the_guest() {
    let started = Instant::now();
    let (h, g, hs, _) = play(
        &options(r#"{"max_ticks":20}"#),
        &cfg(false, Duration::from_secs(10)),
        None,
    )
    .await;
    assert!(h.completed && g.completed, "{h:?} / {g:?}");
    assert_eq!(h.winner.as_deref(), Some("draw"));
    let took = started.elapsed();
    // 20 ticks at 10 Hz, after the probes: about two seconds, never much less.
    assert!(took >= Duration::from_millis(1900), "{took:?}");
    let ended = last_event(&hs.mem, "realtime_ended").unwrap();
    let lateness = ended.get("tick_lateness").unwrap();
    assert_eq!(lateness.get("ticks"), Some(&Value::from(20i64)));
    assert!(lateness.get("p99_ms").and_then(Value::as_f64).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_rules_or_options_are_refused_at_the_handshake_on_both_sides() {
    let spec = library::bundled_spec(ALIAS).unwrap();
    for (what, reason) in [
        ("ruleset", "ruleset_hash_mismatch"),
        ("options", "match_config_mismatch"),
    ] {
        let (hc, gc) = Channel::memory_pair();
        let (hs, gs) = (
            Arc::new(MemorySink::default()),
            Arc::new(MemorySink::default()),
        );
        let guest_opts = if what == "options" {
            options(r#"{"team_size":4}"#)
        } else {
            Map::new()
        };
        let hctx = Ctx::new(Role::Host, ControlMode::Autonomous, Map::new()).with_sink(hs.clone());
        let gctx = Ctx::new(Role::Guest, ControlMode::Autonomous, guest_opts).with_sink(gs.clone());
        let mut hh = native_hooks_for_alias(ALIAS).unwrap();
        let mut gh = native_hooks_for_alias(ALIAS).unwrap();
        if what == "ruleset" {
            gh.realtime().unwrap().present_ruleset("ab".repeat(32));
        }
        let c = cfg(true, Duration::from_secs(5));
        let (h, g) = tokio::join!(
            engine::run(spec, hh.as_mut(), hc.pumped(), &hctx, &c),
            engine::run(spec, gh.as_mut(), gc.pumped(), &gctx, &c),
        );
        assert_eq!((h.completed, h.reason.as_str()), (false, reason), "{h:?}");
        assert_eq!((g.completed, g.reason.as_str()), (false, reason), "{g:?}");
        assert!(h.error.as_deref().unwrap_or("").contains("rule") || what == "options");
    }
}

/// The palaver side against a scripted peer on the other end.
async fn against_script<F, Fut>(our_role: Role, timeout: Duration, script: F) -> SessionOutcome
where
    F: FnOnce(Channel) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let spec = library::bundled_spec(ALIAS).unwrap();
    let (ours, theirs) = Channel::memory_pair();
    let ctx = Ctx::new(our_role, ControlMode::Autonomous, Map::new());
    let mut hooks = native_hooks_for_alias(ALIAS).unwrap();
    let peer = tokio::spawn(script(theirs));
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        engine::run(
            spec,
            hooks.as_mut(),
            ours.pumped(),
            &ctx,
            &cfg(false, timeout),
        ),
    )
    .await
    .expect("the session ends by itself");
    peer.abort();
    out
}

fn native_join() -> Map {
    let spec = library::bundled_spec(ALIAS).unwrap();
    let config = rt::Config::from_spec(spec).unwrap();
    let ruleset = palaver::protocols::tank::hooks::native_ruleset();
    obj! {
        "action" => "rt_join",
        "wire_version" => 1i64,
        "match_config_hash" => rt::match_config_hash(&ruleset, &Map::new(), &config),
        "ruleset_hash" => ruleset,
    }
}

/// A scripted guest: joins, reads rt_ready, then runs `then`.
async fn scripted_guest<F, Fut>(timeout: Duration, then: F) -> SessionOutcome
where
    F: FnOnce(Channel) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    against_script(Role::Host, timeout, |mut ch: Channel| async move {
        ch.tx.send(&Value::Object(native_join())).await.unwrap();
        let ready = ch.rx.recv().await.unwrap();
        assert_eq!(ready.get("action"), Some(&Value::from("rt_ready")));
        then(ch).await
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_guest_is_stopped() {
    let out = scripted_guest(Duration::from_secs(5), |ch| async move {
        // Holds the whole channel: the host's acks must find a reader.
        let ch = ch;
        for seq in 1..=500i64 {
            let m = command_message(seq as u64, 2 + (seq as u64 % 20), vec![]);
            if ch.tx.send(&Value::Object(m)).await.is_err() {
                break;
            }
        }
        std::future::pending::<()>().await
    })
    .await;
    assert_eq!(out.reason, "peer_flooding", "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_far_and_forged_commands_are_refused_with_their_reasons_and_persistence_ends_it() {
    let (tx, mut reasons) = tokio::sync::mpsc::unbounded_channel::<String>();
    let out = scripted_guest(Duration::from_secs(5), move |mut ch| async move {
        let mut seq = 0u64;
        loop {
            let Ok(m) = ch.rx.recv().await else { return };
            if m.get("action").and_then(Value::as_str) == Some("rt_command_ack") {
                let _ = tx.send(m.get("reason").map(Value::py_str).unwrap_or_default());
                continue;
            }
            let tick = m
                .get("frame")
                .and_then(|f| f.get("tick"))
                .and_then(Value::as_i64)
                .unwrap_or(0) as u64;
            seq += 1;
            let bad = match seq % 3 {
                0 => command_message(seq, tick.saturating_sub(1), vec![]),
                1 => command_message(seq, tick + 500, vec![]),
                _ => {
                    let mut m = command_message(seq, tick + 3, vec![]);
                    m.insert("command_hash", Value::from("0".repeat(64)));
                    m
                }
            };
            if ch.tx.send(&Value::Object(bad)).await.is_err() {
                return;
            }
        }
    })
    .await;
    assert_eq!(out.reason, "peer_misbehaving", "{out:?}");
    let mut seen = std::collections::BTreeSet::new();
    while let Ok(r) = reasons.try_recv() {
        seen.insert(r);
    }
    for r in [
        "late_target_tick",
        "target_tick_too_far",
        "command_hash_mismatch",
    ] {
        assert!(seen.contains(r), "{r} in {seen:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_guest_times_out_and_a_vanished_one_aborts() {
    let out = scripted_guest(Duration::from_millis(800), |ch| async move {
        // Keeps the channel open and never answers (not even pings).
        let _keep = ch;
        std::future::pending::<()>().await
    })
    .await;
    assert_eq!(out.reason, "peer_timeout", "{out:?}");
    let out = scripted_guest(Duration::from_secs(5), |ch| async move {
        ch.tx.close().await;
        drop(ch);
    })
    .await;
    assert_eq!(out.reason, "peer_disconnected", "{out:?}");
}

/// A scripted host: reads the join, sends rt_ready with a real tick-0
/// frame, then the frames `next` makes from the previous one.
async fn scripted_host(
    timeout: Duration,
    next: impl Fn(u64, &Map) -> Option<Map> + Send + 'static,
) -> SessionOutcome {
    against_script(Role::Guest, timeout, move |mut ch: Channel| async move {
        let join = ch.rx.recv().await.unwrap();
        let world = World::from_options(&Map::new()).unwrap();
        let f0 = make_frame(
            0,
            world.to_value(),
            None,
            None,
            obj! {"host" => empty_applied("host", 0), "guest" => empty_applied("guest", 0)},
            Value::Array(vec![]),
            "none",
        );
        let spec = library::bundled_spec(ALIAS).unwrap();
        let ready = obj! {
            "action" => "rt_ready",
            "wire_version" => 1i64,
            "ruleset_hash" => join.get("ruleset_hash").cloned().unwrap(),
            "match_config_hash" => join.get("match_config_hash").cloned().unwrap(),
            "config" => rt::Config::from_spec(spec).unwrap().to_value(),
            "frame" => Value::Object(f0.clone()),
        };
        ch.tx.send(&Value::Object(ready)).await.unwrap();
        let mut prev = f0;
        for tick in 1.. {
            let Some(f) = next(tick, &prev) else {
                std::future::pending::<()>().await;
                return;
            };
            if ch
                .tx
                .send(&Value::Object(
                    obj! {"action" => "rt_frame", "frame" => Value::Object(f.clone())},
                ))
                .await
                .is_err()
            {
                return;
            }
            prev = f;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
}

fn honest(tick: u64, prev: &Map) -> Map {
    let mut world = World::from_value(prev.get("state").unwrap()).unwrap();
    world.step(&[], &[]);
    make_frame(
        tick,
        world.to_value(),
        None,
        Some(prev),
        obj! {"host" => empty_applied("host", tick), "guest" => empty_applied("guest", tick)},
        Value::Array(vec![]),
        "none",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_forges_breaks_or_skips_the_chain_fails_the_guests_integrity_check() {
    let forged = scripted_host(Duration::from_secs(5), |tick, prev| {
        let mut f = honest(tick, prev);
        if tick == 4 {
            f.insert("state_hash", Value::from("1".repeat(64)));
        }
        Some(f)
    })
    .await;
    assert_eq!(forged.reason, "integrity_failed", "{forged:?}");
    assert!(forged.error.as_deref().unwrap().contains("state_hash"));
    let skipped = scripted_host(Duration::from_secs(5), |tick, prev| {
        let mut f = honest(tick, prev);
        if tick == 3 {
            f.insert("tick", Value::from(9i64));
        }
        Some(f)
    })
    .await;
    assert_eq!(skipped.reason, "integrity_failed", "{skipped:?}");
    let chain = scripted_host(Duration::from_secs(5), |tick, prev| {
        let mut f = honest(tick, prev);
        if tick == 2 {
            f.insert("host_time_ns", Value::from(1i64));
        }
        Some(f)
    })
    .await;
    assert_eq!(chain.reason, "integrity_failed", "{chain:?}");
    assert!(chain.error.as_deref().unwrap().contains("chain_hash"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_goes_silent_mid_match_times_out() {
    let out = scripted_host(Duration::from_millis(800), |tick, prev| {
        (tick < 5).then(|| honest(tick, prev))
    })
    .await;
    assert_eq!(out.reason, "peer_timeout", "{out:?}");
}
