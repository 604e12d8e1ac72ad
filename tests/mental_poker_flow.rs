//! The `mental_poker` flow between two palaver sides in one process: the
//! decision windows in human and hybrid mode (what is offered, what an
//! illegal or missing decision does), the bindings that must agree (session
//! id, options), and the transcript both sides sign.

use async_trait::async_trait;
use palaver::engine::{
    self, Channel, ControlMode, Ctx, Decided, Decider, DecisionError, EngineConfig, MatchBinding,
    MemorySink, Role, ScriptedDecider, SessionOutcome, Window,
};
use palaver::json::{Map, Value};
use palaver::library;
use palaver::obj;
use palaver::protocols::native_hooks_for_alias;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Decides like a person reading the snapshot: the first legal action
/// offered (an 8 calls clubs), and remembers what it was offered.
struct FirstLegal {
    sink: Arc<MemorySink>,
    offered: Mutex<Vec<(i64, usize)>>,
}

#[async_trait]
impl Decider for FirstLegal {
    async fn decide(&self, _mode: ControlMode, w: &Window) -> Result<Decided, DecisionError> {
        assert_eq!(w.match_key, "action_seq");
        let seq = w.match_value.as_i64().expect("action_seq is an integer");
        assert_eq!(
            self.sink
                .snapshot_value("action_seq")
                .and_then(|v| v.as_i64()),
            Some(seq),
            "the snapshot shows the window's action_seq"
        );
        let legal = self
            .sink
            .snapshot_value("legal_actions")
            .and_then(|v| v.as_array().cloned())
            .expect("legal_actions in the snapshot");
        self.offered.lock().unwrap().push((seq, legal.len()));
        let first = legal[0].as_object().expect("an action object");
        let mut d = obj! { "action_seq" => seq, "kind" => first.get("kind").cloned().unwrap() };
        if let Some(id) = first.get("id_b") {
            d.insert("id_b", id.clone());
        }
        if first.get("call_suit_required") == Some(&Value::Bool(true)) {
            d.insert("call_suit", 0.into());
        }
        Ok(Decided::Explicit(d))
    }
}

struct Side {
    mode: ControlMode,
    decider: Arc<dyn Decider>,
    binding: MatchBinding,
    options: Map,
}

impl Side {
    fn auto() -> Side {
        Side {
            mode: ControlMode::Autonomous,
            decider: Arc::new(engine::AutoDecider),
            binding: MatchBinding::default(),
            options: Map::new(),
        }
    }
}

async fn play(
    alias: &str,
    host: Side,
    guest: Side,
) -> (
    SessionOutcome,
    SessionOutcome,
    Arc<MemorySink>,
    Arc<MemorySink>,
) {
    let spec = library::bundled_spec(alias).expect("bundled");
    let (hc, gc) = Channel::memory_pair();
    let (hs, gs) = (
        Arc::new(MemorySink::default()),
        Arc::new(MemorySink::default()),
    );
    let ctx = |role, side: Side, sink: Arc<MemorySink>| {
        Ctx::new(role, side.mode, side.options)
            .with_decider(side.decider)
            .with_sink(sink)
            .with_binding(side.binding)
    };
    let (hctx, gctx) = (
        ctx(Role::Host, host, hs.clone()),
        ctx(Role::Guest, guest, gs.clone()),
    );
    let mut hh = native_hooks_for_alias(alias).unwrap();
    let mut gh = native_hooks_for_alias(alias).unwrap();
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    };
    let (h, g) = tokio::time::timeout(Duration::from_secs(120), async {
        tokio::join!(
            engine::run(spec, hh.as_mut(), hc, &hctx, &cfg),
            engine::run(spec, gh.as_mut(), gc, &gctx, &cfg),
        )
    })
    .await
    .expect("the match ends");
    (h, g, hs, gs)
}

fn events(sink: &MemorySink, kind: &str) -> Vec<Map> {
    sink.events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.data.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_plays_whole_matches_of_both_games_from_the_offered_actions() {
    for alias in ["crazy-eights-v1", "briscola-v1"] {
        let sink = Arc::new(MemorySink::default());
        let human = Arc::new(FirstLegal {
            sink: sink.clone(),
            offered: Mutex::new(Vec::new()),
        });
        // The guest's sink is the one the human reads.
        let spec = library::bundled_spec(alias).unwrap();
        let (hc, gc) = Channel::memory_pair();
        let hs = Arc::new(MemorySink::default());
        let hctx = Ctx::new(Role::Host, ControlMode::Autonomous, Map::new()).with_sink(hs.clone());
        let gctx = Ctx::new(Role::Guest, ControlMode::Human, Map::new())
            .with_sink(sink.clone())
            .with_decider(human.clone());
        let mut hh = native_hooks_for_alias(alias).unwrap();
        let mut gh = native_hooks_for_alias(alias).unwrap();
        let cfg = EngineConfig::default();
        let (h, g) = tokio::join!(
            engine::run(spec, hh.as_mut(), hc, &hctx, &cfg),
            engine::run(spec, gh.as_mut(), gc, &gctx, &cfg),
        );
        assert!(h.completed && g.completed, "{alias}: {h:?} {g:?}");
        assert_eq!(h.transcript_hash, g.transcript_hash, "{alias}");
        assert_eq!(h.winner, g.winner, "{alias}");
        let offered = human.offered.lock().unwrap().clone();
        assert!(!offered.is_empty(), "{alias}: the human was asked");
        // One window per own action, numbered from 0 without gaps.
        for (i, (seq, n)) in offered.iter().enumerate() {
            assert_eq!(*seq, i as i64, "{alias}");
            assert!(*n >= 1, "{alias}: something legal is always offered");
        }
        // The snapshot shows the hand and the counts a table needs.
        for key in [
            "hand",
            "stock_count",
            "opponent_hand_count",
            "game",
            "suits",
        ] {
            assert!(sink.snapshot_value(key).is_some(), "{alias}: {key}");
        }
        assert_eq!(
            sink.snapshot_value("phase")
                .and_then(|p| p.as_str().map(str::to_owned)),
            Some("game_over".into()),
            "{alias}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_illegal_human_choice_ends_the_session_and_says_why() {
    let bad = obj! { "action_seq" => 0, "kind" => "play", "id_b" => "999" };
    let host = Side {
        mode: ControlMode::Human,
        decider: Arc::new(ScriptedDecider::new([bad])),
        ..Side::auto()
    };
    let (h, g, hs, _) = play("crazy-eights-v1", host, Side::auto()).await;
    assert_eq!(h.reason, "human_decision_failed", "{h:?}");
    assert_eq!(
        h.error.as_deref(),
        Some("id_b is not a card in the local hand")
    );
    let failed = events(&hs, "human_decision_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].get_str("match_key"), Some("action_seq"));
    assert!(!g.completed, "the peer ends too: {g:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_human_choice_times_out_cleanly() {
    let host = Side {
        mode: ControlMode::Human,
        decider: Arc::new(ScriptedDecider::new([])),
        ..Side::auto()
    };
    let (h, _, hs, _) = play("briscola-v1", host, Side::auto()).await;
    assert_eq!(h.reason, "human_decision_failed", "{h:?}");
    assert_eq!(events(&hs, "human_decision_failed").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_plays_on_its_own_after_an_illegal_choice() {
    // A draw is never legal on the first turn of Crazy Eights (any card plays).
    let bad = obj! { "action_seq" => 0, "kind" => "draw" };
    let host = Side {
        mode: ControlMode::Hybrid,
        decider: Arc::new(ScriptedDecider::new([bad])),
        ..Side::auto()
    };
    let (h, g, hs, _) = play("crazy-eights-v1", host, Side::auto()).await;
    assert!(h.completed && g.completed, "{h:?} {g:?}");
    let rejected = events(&hs, "local_decision_rejected");
    assert_eq!(rejected.len(), 1, "one rejection recorded");
    assert_eq!(
        rejected[0].get_str("reason"),
        Some("draw is not legal in the current state")
    );
    assert_eq!(rejected[0].get("match_value"), Some(&Value::from(0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_while_a_card_plays_is_refused() {
    // On the first turn every card plays, so a pass is refused.
    let host = Side {
        mode: ControlMode::Human,
        decider: Arc::new(ScriptedDecider::new([obj! {
            "action_seq" => 0, "kind" => "pass"
        }])),
        ..Side::auto()
    };
    let (h, _, _, _) = play("crazy-eights-v1", host, Side::auto()).await;
    assert_eq!(h.reason, "human_decision_failed");
    assert_eq!(
        h.error.as_deref(),
        Some("pass is not legal in the current state")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sides_must_bind_the_same_session_id() {
    let bind = |sid: &str| Side {
        binding: MatchBinding {
            session_id: Some(sid.into()),
            ..MatchBinding::default()
        },
        ..Side::auto()
    };
    // The same id: a normal match, signed by both.
    let (h, g, _, _) = play("crazy-eights-v1", bind("S-1"), bind("S-1")).await;
    assert!(h.completed && g.completed, "{h:?} {g:?}");
    // Another id changes every OT context: the first transferred key does
    // not open its sealed entry.
    let (h, g, _, _) = play("crazy-eights-v1", bind("S-1"), bind("S-2")).await;
    assert!(!h.completed && !g.completed);
    assert!(
        [h.reason.as_str(), g.reason.as_str()].contains(&"sealed_payload_poisoned"),
        "{h:?} {g:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_hand_sizes_end_both_sides_in_bounded_time() {
    let sized = |n: i64| Side {
        options: obj! { "hand_size" => n },
        ..Side::auto()
    };
    let (h, g, _, _) = play("crazy-eights-v1", sized(3), sized(5)).await;
    assert!(!h.completed && !g.completed, "{h:?} {g:?}");
    for o in [&h, &g] {
        assert!(
            ["unexpected_frame", "peer_disconnected"].contains(&o.reason.as_str()),
            "{o:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_size_outside_the_rules_is_refused_before_play() {
    let side = || Side {
        options: obj! { "hand_size" => 40 },
        ..Side::auto()
    };
    let (h, g, _, _) = play("crazy-eights-v1", side(), side()).await;
    assert_eq!(h.reason, "hook_error", "{h:?}");
    assert!(
        h.error.as_deref().unwrap_or("").contains("hand_size"),
        "{h:?}"
    );
    assert!(!g.completed);
}
