//! The console's card table and card prompt for the `mental_poker` games
//! (crazy-eights-v1, briscola-v1), without a terminal: the pane as
//! TestBackend snapshots (80×24 and 160×48), and the prompt driven by keys
//! through the keymap, checked by the decision record it writes to
//! decision/decisions.jsonl, as `palaver session decide` would.

use crate::common;

use common::console::{ch, key};
use crossterm::event::KeyCode;
use palaver::json::{Map, Value};
use palaver::obj;
use palaver::session::decision::mono_now;
use palaver::tui::keymap::Context;
use palaver::tui::screens::sessions::Focus;
use palaver::tui::{Headless, load_settings};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];
const LONG: Duration = Duration::from_secs(10);

const CE_RANKS: [&str; 13] = [
    "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A",
];
const BR_RANKS: [&str; 10] = ["A", "2", "3", "4", "5", "6", "7", "J", "Q", "K"];
const SUITS: [&str; 4] = ["C", "D", "H", "S"];

fn write(path: &Path, v: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, palaver::json::canonical::to_string_ordered(&v)).unwrap();
}

fn list(names: &[&str]) -> Value {
    Value::Array(names.iter().map(|s| Value::from(*s)).collect())
}

/// One event line at a fixed time (`sec` seconds after noon).
fn event(sec: u32, kind: &str, data: Map, summary: Option<&str>) -> String {
    let mut m = obj! { "ts" => format!("2026-11-30T12:{:02}:{:02}.000000+00:00", sec / 60, sec % 60), "type" => kind, "data" => data };
    if let Some(s) = summary {
        m.insert("summary", Value::from(s));
    }
    palaver::json::canonical::to_string_ordered(&Value::Object(m))
}

fn frame(sec: u32, dir: &str, m: Map, summary: &str) -> String {
    event(
        sec,
        "protocol_message",
        obj! { "direction" => dir, "msg" => m },
        Some(summary),
    )
}

/// `(id_b, rank index, suit index)` as the snapshot's cards.
fn cards(list: &[(&str, i64, i64)]) -> Value {
    Value::Array(
        list.iter()
            .map(|(id, r, s)| Value::from(obj! { "id_b" => *id, "rank" => *r, "suit" => *s }))
            .collect(),
    )
}

fn play(id: &str, call_suit: Option<bool>) -> Value {
    let mut m = obj! { "kind" => "play", "id_b" => id };
    if let Some(c) = call_suit {
        m.insert("call_suit_required", Value::from(c));
    }
    Value::Object(m)
}

fn kind(k: &str) -> Value {
    Value::Object(obj! { "kind" => k })
}

/// A card session's state dir written the way the runtime writes it.
struct Table {
    name: &'static str,
    alias: &'static str,
    mode: &'static str,
    status: &'static str,
    winner: Option<&'static str>,
    snapshot: Map,
    events: Vec<String>,
    /// The open window's `action_seq`.
    window: Option<i64>,
}

impl Table {
    fn write(&self, data: &Path) -> PathBuf {
        let parent = data.join("sessions").join(self.name);
        let child = parent.join(self.name);
        let spec = palaver::library::bundled_spec(self.alias).unwrap();
        let mut sess = obj! {
            "role" => if self.name.starts_with("host") { "host" } else { "guest" },
            "status" => self.status, "protocol_id" => spec.protocol_id(), "protocol_name" => spec.name().unwrap_or(""),
            "local_control_mode" => self.mode, "peer_control_mode" => "autonomous", "options" => Map::new(),
            "started_at" => palaver::session::files::epoch_now() - 7200.0, "pid" => std::process::id(),
            "state_dir" => parent.display().to_string(), "engine_state_dir" => child.display().to_string(),
        };
        if let Some(w) = self.winner {
            sess.insert("winner", Value::from(w));
            sess.insert("end_reason", Value::from("completed"));
        }
        write(&parent.join("session.json"), Value::Object(sess));
        let mut snap = self.snapshot.clone();
        snap.insert("protocol_id", Value::from(spec.protocol_id()));
        snap.insert("protocol_name", Value::from(spec.name().unwrap_or("")));
        snap.insert("control_mode", Value::from(self.mode));
        write(&child.join("snapshot.json"), Value::Object(snap));
        std::fs::write(
            parent.join("events.jsonl"),
            self.events
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
        )
        .unwrap();
        std::fs::create_dir_all(child.join("decision")).unwrap();
        if let Some(seq) = self.window {
            // Far enough away that the countdown reads the same in every run.
            let t = mono_now() + 500.5;
            write(
                &child.join("decision").join("state.json"),
                Value::Object(obj! {
                    "match_key" => "action_seq", "match_value" => seq, "mode" => self.mode,
                    "release_at" => if self.mode == "hybrid" { t } else { mono_now() + 1.0 }, "deadline_at" => t,
                    "waiting_for" => "decision",
                }),
            );
        }
        parent
    }
}

fn ce_events() -> Vec<String> {
    vec![
        event(1, "mp_setup_started", obj! { "role" => "guest" }, None),
        frame(
            2,
            "received",
            obj! { "action" => "mp_play", "id_b" => "40", "rank" => 8, "suit" => 2 },
            "play 10H",
        ),
        event(
            2,
            "play_verified",
            obj! { "who" => "host", "id_b" => "40" },
            None,
        ),
        frame(
            3,
            "sent",
            obj! { "action" => "mp_play", "id_b" => "2", "rank" => 6, "suit" => 0, "call_suit" => 2 },
            "play 8C (call H)",
        ),
        event(
            3,
            "play_verified",
            obj! { "who" => "guest", "id_b" => "2" },
            None,
        ),
        event(
            4,
            "draw_started",
            obj! { "who" => "host", "id_b" => "41" },
            None,
        ),
        event(
            4,
            "draw_completed",
            obj! { "who" => "host", "id_b" => "41" },
            None,
        ),
    ]
}

/// Crazy Eights, the guest's action 3 after an 8 called hearts: 3♥, 8♠
/// (plays, calls a suit) and K♥ play; 5♣ and Q♦ do not.
fn crazy_eights(mode: &'static str) -> Table {
    Table {
        name: "guest-1000",
        alias: "crazy-eights-v1",
        mode,
        status: "running",
        winner: None,
        snapshot: obj! {
            "phase" => if mode == "human" { "action_required" } else { "playing" },
            "role" => "guest", "game" => "crazy_eights", "action_seq" => 3,
            "top_rank" => 6, "current_suit" => 2,
            "ranks" => list(&CE_RANKS), "suits" => list(&SUITS),
            "hand" => cards(&[("11", 1, 2), ("17", 6, 3), ("23", 11, 2), ("30", 3, 0), ("4", 10, 1)]),
            "legal_actions" => vec![play("11", Some(false)), play("17", Some(true)), play("23", Some(false))],
            "stock_count" => 33, "opponent_hand_count" => 4,
            "last_event" => obj! { "summary" => "Choose a card action" },
        },
        events: ce_events(),
        window: Some(3),
    }
}

/// Briscola, the guest following the host's A♥ (trump clubs).
fn briscola() -> Table {
    Table {
        name: "guest-2000",
        alias: "briscola-v1",
        mode: "human",
        status: "running",
        winner: None,
        snapshot: obj! {
            "phase" => "action_required", "role" => "guest", "game" => "briscola", "action_seq" => 4,
            "briscola" => 0, "points" => obj! { "host" => 11, "guest" => 4 }, "completed_tricks" => 2,
            "current_trick" => vec![Value::from(obj! { "who" => "host", "rank" => 0, "suit" => 2 })],
            "ranks" => list(&BR_RANKS), "suits" => list(&SUITS),
            "hand" => cards(&[("14", 2, 2), ("22", 9, 0), ("9", 4, 3)]),
            "legal_actions" => vec![play("14", None), play("22", None), play("9", None)],
            "stock_count" => 28, "opponent_hand_count" => 2,
            "last_event" => obj! { "summary" => "Choose a card action" },
        },
        events: vec![
            frame(
                2,
                "received",
                obj! { "action" => "mp_play", "id_b" => "30", "rank" => 0, "suit" => 2 },
                "play AH",
            ),
            event(
                2,
                "play_verified",
                obj! { "who" => "host", "id_b" => "30" },
                None,
            ),
        ],
        window: Some(4),
    }
}

const HASH: &str = "8dd157f79393b06a98cdf1492e21f64de1db3d2d29d55947b6b385bc5d6efdd6";

/// Crazy Eights over: the guest shed its last card, the audit passed and
/// both receipts verified.
fn crazy_eights_over() -> Table {
    let mut t = crazy_eights("human");
    t.status = "closed";
    t.winner = Some("guest");
    t.window = None;
    t.snapshot.insert("phase", Value::from("game_over"));
    t.snapshot.insert("hand", Value::Array(Vec::new()));
    t.snapshot.insert("top_rank", Value::from(11));
    t.snapshot.insert(
        "last_event",
        Value::Object(obj! { "summary" => "Session ended: completed" }),
    );
    t.events.extend([
        event(9, "audit_started", Map::new(), None),
        event(9, "audit_passed", Map::new(), None),
        event(
            9,
            "mp_terminal_receipt_signed",
            obj! { "transcript_hash" => HASH },
            None,
        ),
        event(
            10,
            "mp_terminal_receipt_verified",
            obj! { "transcript_hash" => HASH, "peer_signature_ok" => true },
            None,
        ),
        event(
            10,
            "game_over",
            obj! { "outcome" => "guest", "audit_status" => "passed" },
            Some("Game over: guest (audit passed, transcript 8dd157f79393b06a)"),
        ),
        event(
            10,
            "session_ended",
            obj! { "completed" => true, "reason" => "completed", "winner" => "guest" },
            Some("Session ended: completed"),
        ),
    ]);
    t
}

fn console(data: &Path, w: u16, h: u16) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    Headless::new(settings, w, h)
}

/// Attaches `parent` and waits until its files (and, with `prompt`, the
/// decision prompt with its card table) are loaded.
async fn attach(h: &mut Headless, parent: &Path, prompt: bool) {
    h.app.attach(parent);
    let ok = h
        .until(LONG, |app| {
            app.sessions.attached.as_ref().is_some_and(|a| {
                a.feed.total > 0
                    && !a.snapshot.is_empty()
                    && !a.session.is_empty()
                    && (!prompt
                        || a.prompt
                            .as_ref()
                            .and_then(|p| p.cards())
                            .is_some_and(|c| c.table.is_some()))
            }) && !app.sessions.rows.is_empty()
        })
        .await;
    assert!(ok, "the session did not load:\n{}", h.screen());
}

async fn snap(name: &str, setup: impl AsyncFn(&mut Headless, &Path)) {
    for (w, hgt) in SIZES {
        let tmp = tempfile::tempdir().unwrap();
        let mut h = console(tmp.path(), w, hgt);
        setup(&mut h, tmp.path()).await;
        let screen = h.screen();
        insta::assert_snapshot!(format!("{name}_{w}x{hgt}"), screen);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_crazy_eights_an_eight_calls_a_suit() {
    snap("cards_crazy_eights", async |h: &mut Headless, d: &Path| {
        attach(h, &crazy_eights("human").write(d), true).await;
        assert_eq!(h.app.sessions.focus, Focus::Prompt);
        assert_eq!(h.app.context(), Context::Cards);
        h.key(ch('2'));
        h.key(key(KeyCode::Enter));
        assert_eq!(h.app.context(), Context::Suit, "the 8 asks for a suit");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_briscola_a_trick_on_the_table() {
    snap("cards_briscola", async |h: &mut Headless, d: &Path| {
        attach(h, &briscola().write(d), true).await;
        h.key(key(KeyCode::Right));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_crazy_eights_over_with_the_audit_and_the_hash() {
    snap("cards_over", async |h: &mut Headless, d: &Path| {
        attach(h, &crazy_eights_over().write(d), false).await;
        assert!(
            h.until(LONG, |a| a
                .sessions
                .attached
                .as_ref()
                .is_some_and(|x| x.verdict.transcript_hash.is_some()))
                .await
        );
        assert!(h.app.sessions.attached.as_ref().unwrap().prompt.is_none());
    })
    .await;
}

// ---------------------------------------------------------------- keys

/// The decision lines on file, without their `_meta`, as canonical JSON.
fn decisions(parent: &Path, name: &str) -> Vec<String> {
    let file = parent.join(name).join("decision").join("decisions.jsonl");
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| palaver::json::parse_str(l).ok())
        .map(|v| {
            let mut m = v.as_object().cloned().unwrap_or_default();
            let meta = m.remove("_meta");
            assert_eq!(
                meta.as_ref()
                    .and_then(|m| m.get("origin"))
                    .and_then(Value::as_str),
                Some("console"),
                "{meta:?}"
            );
            palaver::json::canonical::to_string(&Value::Object(m))
        })
        .collect()
}

/// Waits until `n` decisions are on file and returns the last.
async fn nth_decision(h: &mut Headless, parent: &Path, name: &str, n: usize) -> String {
    let ok = h.until(LONG, |_| decisions(parent, name).len() >= n).await;
    assert!(ok, "decision {n} was not written:\n{}", h.screen());
    let all = decisions(parent, name);
    assert_eq!(all.len(), n, "{all:?}");
    all[n - 1].clone()
}

fn note(h: &Headless) -> Option<palaver::tui::note::Note> {
    h.app
        .sessions
        .attached
        .as_ref()?
        .prompt
        .as_ref()?
        .note
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crazy_eights_keys_write_the_decision_records() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let parent = crazy_eights("human").write(tmp.path());
    attach(&mut h, &parent, true).await;
    let name = "guest-1000";

    // A card that does not play: Enter says why and writes nothing.
    h.key(ch('5'));
    h.key(key(KeyCode::Enter));
    let palaver::tui::note::Note { ok, text: why } = note(&h).expect("a note");
    assert!(!ok && why.contains("Q♦ does not play"), "{why}");
    assert!(h.screen().contains("Q♦ does not play"));
    // Draw and pass are not legal with cards that play.
    h.key(ch('d'));
    assert!(
        note(&h).unwrap().text.contains("only when no card"),
        "{:?}",
        note(&h)
    );
    h.key(ch('p'));
    assert!(
        note(&h).unwrap().text.contains("pass only when"),
        "{:?}",
        note(&h)
    );
    // Past the hand.
    h.key(ch('9'));
    assert!(note(&h).unwrap().text.contains("you hold 5 cards"));

    // Number key then Enter plays a plain card.
    h.key(ch('3'));
    h.key(key(KeyCode::Enter));
    assert_eq!(
        nth_decision(&mut h, &parent, name, 1).await,
        r#"{"action_seq":3,"id_b":"23","kind":"play"}"#
    );

    // Arrows: from K♥ two to the left is 3♥.
    h.key(key(KeyCode::Left));
    h.key(key(KeyCode::Left));
    h.key(key(KeyCode::Enter));
    assert_eq!(
        nth_decision(&mut h, &parent, name, 2).await,
        r#"{"action_seq":3,"id_b":"11","kind":"play"}"#
    );

    // The 8: Enter opens the suit choice, a letter calls it.
    h.key(ch('2'));
    h.key(key(KeyCode::Enter));
    assert_eq!(h.app.context(), Context::Suit);
    assert!(h.screen().contains("8♠ calls:"), "{}", h.screen());
    h.key(ch('s'));
    assert_eq!(
        nth_decision(&mut h, &parent, name, 3).await,
        r#"{"action_seq":3,"call_suit":3,"id_b":"17","kind":"play"}"#
    );

    // By number: 1 is the first suit of the snapshot's list (clubs)…
    h.key(ch('2'));
    h.key(key(KeyCode::Enter));
    h.key(ch('1'));
    assert_eq!(
        nth_decision(&mut h, &parent, name, 4).await,
        r#"{"action_seq":3,"call_suit":0,"id_b":"17","kind":"play"}"#
    );

    // …by arrows and Enter (the choice starts on hearts, held most).
    h.key(key(KeyCode::Enter));
    assert_eq!(h.app.context(), Context::Suit);
    h.key(key(KeyCode::Left));
    h.key(key(KeyCode::Enter));
    assert_eq!(
        nth_decision(&mut h, &parent, name, 5).await,
        r#"{"action_seq":3,"call_suit":1,"id_b":"17","kind":"play"}"#
    );

    // Esc closes the suit choice, not the prompt; in the suit choice `d`
    // means diamonds, outside it draw.
    h.key(key(KeyCode::Enter));
    h.key(key(KeyCode::Esc));
    assert_eq!(h.app.context(), Context::Cards);
    assert_eq!(h.app.sessions.focus, Focus::Prompt);
    h.key(key(KeyCode::Enter));
    h.key(ch('d'));
    assert_eq!(
        nth_decision(&mut h, &parent, name, 6).await,
        r#"{"action_seq":3,"call_suit":1,"id_b":"17","kind":"play"}"#
    );
    assert_eq!(
        h.app.context(),
        Context::Cards,
        "a decision closes the suit choice"
    );
    h.key(key(KeyCode::Enter));
    h.key(key(KeyCode::Esc));
    assert_eq!(h.app.sessions.focus, Focus::Prompt);
    h.key(key(KeyCode::Esc));
    assert_eq!(h.app.sessions.focus, Focus::Feed, "a second Esc leaves");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draw_and_pass_keys_when_nothing_plays() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut t = crazy_eights("hybrid");
    t.snapshot
        .insert("legal_actions", Value::Array(vec![kind("draw")]));
    let parent = t.write(tmp.path());
    attach(&mut h, &parent, true).await;
    let screen = h.screen();
    assert!(
        screen.contains("no card of yours plays: draw a card"),
        "{screen}"
    );
    assert!(
        screen.contains("d draw"),
        "the hint shows the key: {screen}"
    );
    h.key(key(KeyCode::Enter));
    assert!(note(&h).unwrap().text.contains("draw a card"));
    h.key(ch('p'));
    assert!(note(&h).unwrap().text.contains("draw a card instead"));
    h.key(ch('d'));
    assert_eq!(
        nth_decision(&mut h, &parent, "guest-1000", 1).await,
        r#"{"action_seq":3,"kind":"draw"}"#
    );

    // The stock runs out: pass is the one legal action.
    let mut t = crazy_eights("human");
    t.name = "guest-1001";
    t.snapshot
        .insert("legal_actions", Value::Array(vec![kind("pass")]));
    t.snapshot.insert("stock_count", Value::from(0));
    let parent = t.write(tmp.path());
    attach(&mut h, &parent, true).await;
    h.key(ch('d'));
    assert!(note(&h).unwrap().text.contains("pass instead"));
    h.key(ch('p'));
    assert_eq!(
        nth_decision(&mut h, &parent, "guest-1001", 1).await,
        r#"{"action_seq":3,"kind":"pass"}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn briscola_keys_play_the_picked_card_and_never_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let parent = briscola().write(tmp.path());
    attach(&mut h, &parent, true).await;
    h.key(ch('p'));
    assert!(note(&h).unwrap().text.contains("no pass"));
    h.key(ch('d'));
    assert!(note(&h).unwrap().text.contains("refill"));
    h.key(ch('3'));
    h.key(key(KeyCode::Enter));
    assert_eq!(
        nth_decision(&mut h, &parent, "guest-2000", 1).await,
        r#"{"action_seq":4,"id_b":"9","kind":"play"}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_table_is_never_decided_on() {
    // The window is for action 4 but the snapshot still shows action 3.
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut t = crazy_eights("human");
    t.window = Some(4);
    let parent = t.write(tmp.path());
    attach(&mut h, &parent, true).await;
    h.key(ch('3'));
    h.key(key(KeyCode::Enter));
    assert!(
        note(&h)
            .unwrap()
            .text
            .contains("not up to date for action 4"),
        "{:?}",
        note(&h)
    );
    h.until(Duration::from_millis(300), |_| false).await;
    assert!(decisions(&parent, "guest-1000").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_hybrid_decision_shows_on_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut t = crazy_eights("hybrid");
    t.events.push(event(
        5,
        "local_decision_rejected",
        obj! {
            "match_key" => "action_seq", "match_value" => 2,
            "reason" => "id_b is not a card in the local hand",
            "decision" => obj! { "action_seq" => 2, "kind" => "play", "id_b" => "99" },
        },
        Some("Decision rejected, playing on its own: id_b is not a card in the local hand"),
    ));
    attach(&mut h, &t.write(tmp.path()), true).await;
    assert!(
        h.until(LONG, |a| a
            .sessions
            .attached
            .as_ref()
            .is_some_and(|x| x.verdict.rejected.is_some()))
            .await
    );
    let screen = h.screen();
    assert!(
        screen.contains("refused action 2: id_b is not a card in the local hand"),
        "{screen}"
    );
    assert!(screen.contains("Decide: action_seq 3 (hybrid)"), "{screen}");
}
