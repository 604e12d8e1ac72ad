//! Card tables in the console (four-player-landlord-v1; texas-holdem-v1,
//! contract-bridge-v1 and aether-sigil-v1 at the end: a flop to bet on, a
//! declarer playing from the dummy, an opening call picked by page and
//! number, a mid-game board of units and relics whose attack is a numbered
//! choice), without a terminal: a host's table state dir written the way
//! `services::group` leaves it (snapshot.json with this seat's verified
//! view, details.jsonl with the frames' events, events.jsonl, the host's
//! `bots/`), the view itself dealt and played by the real rules (`protocols::tables`) from a
//! fixed seed. The pane as TestBackend snapshots at 80×24 and 160×48 in
//! the bidding and the playing phase; cards picked and played with keys
//! through the keymap, checked by the line `palaver session action` would
//! write to group-actions.jsonl; an illegal pick refused with the reason.
//! The real binary at a table in tmux is in tests/console_tables_tmux.rs.

use crate::common;

use common::console::{ch, key};
use common::table_seat::{LANDLORD, Play, pk};
use crossterm::event::KeyCode;
use palaver::json::Value;
use palaver::obj;
use palaver::session::table::TableView;
use palaver::tui::keymap::Context;
use palaver::tui::panes::table::LogEntry;
use palaver::tui::report::Report;
use palaver::tui::screens::sessions::Focus;
use palaver::tui::{Headless, load_settings};
use std::path::Path;
use std::time::Duration;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];
const LONG: Duration = Duration::from_secs(10);
const HOLDEM: &str = "texas-holdem-v1";
const BRIDGE: &str = "contract-bridge-v1";
const SIGIL: &str = "aether-sigil-v1";

/// Bidding: seat 0 (this console) is first to bid.
fn bidding() -> Play {
    Play::deal()
}

/// Playing: seat 0 bid 1, seat 1 took it with 2 and the bottom, and the
/// bots played until seat 0 has a play to beat.
fn playing() -> Play {
    let mut p = Play::deal();
    p.act(Value::Object(obj! { "kind" => "bid", "value" => 1 }));
    p.act(Value::Object(obj! { "kind" => "bid", "value" => 2 }));
    p.act(Value::Object(obj! { "kind" => "bid", "value" => 0 }));
    p.act(Value::Object(obj! { "kind" => "bid", "value" => 0 }));
    p.bots_until_mine();
    assert!(
        !p.view(0).get("last_play").unwrap().is_null(),
        "seat 0 has a play to beat"
    );
    p
}

fn console(data: &Path, w: u16, h: u16) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    let mut h = Headless::new(settings, w, h);
    h.update(Report::Nicknames(vec![
        (pk(1), "bot-1".into()),
        (pk(2), "bot-2".into()),
        (pk(3), "ada".into()),
    ]));
    h
}

/// Attaches a table and waits until its view, its bots and its log are in.
async fn attach(h: &mut Headless, dir: &Path) {
    h.app.attach(dir);
    let ok = h
        .until(LONG, |app| {
            app.sessions.table().is_some_and(|t| {
                t.view.is_ok()
                    && t.kinds
                        .values()
                        .any(|k| *k == palaver::tui::panes::table::SeatKind::Bot)
                    && !t.log.is_empty()
            }) && !app.sessions.rows.is_empty()
        })
        .await;
    assert!(ok, "the table did not load:\n{}", h.screen());
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

fn actions(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("group-actions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| palaver::json::parse_str(l).unwrap())
        .collect()
}

/// Waits until group-actions.jsonl has `n` lines and returns their actions.
async fn queued(h: &mut Headless, dir: &Path, n: usize) -> Vec<Value> {
    let ok = h.until(LONG, |_| actions(dir).len() >= n).await;
    assert!(ok, "{n} actions were not queued:\n{}", h.screen());
    actions(dir)
        .into_iter()
        .map(|l| l.get("action").cloned().unwrap())
        .collect()
}

fn text(v: &Value) -> String {
    palaver::json::canonical::to_string_ordered(v)
}

/// Moves the cursor to the card `id` and picks it.
fn pick(h: &mut Headless, id: &str) {
    let hand: Vec<String> = h
        .app
        .sessions
        .table()
        .unwrap()
        .view
        .as_ref()
        .unwrap()
        .pick_hand()
        .iter()
        .map(|c| c.card_id.clone())
        .collect();
    let at = hand.iter().position(|c| c == id).unwrap();
    h.key(key(KeyCode::Home));
    for _ in 0..at {
        h.key(key(KeyCode::Right));
    }
    assert_eq!(h.app.sessions.table().unwrap().cursor, at);
    h.key(ch(' '));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_landlord_bidding() {
    snap("table_bidding", async |h: &mut Headless, d: &Path| {
        let dir = bidding().write(d, "running");
        attach(h, &dir).await;
        assert_eq!(h.app.sessions.focus, Focus::Feed);
        assert_eq!(h.app.context(), Context::Table);
        let t = h.app.sessions.table().unwrap();
        // Every bid is still open to the first bidder.
        assert_eq!(t.bids, [0, 1, 2, 3]);
        // The cursor moves along the offered bids.
        h.key(key(KeyCode::Right));
        h.key(key(KeyCode::Right));
        assert_eq!(h.app.sessions.table().unwrap().bid_cursor, 2);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_landlord_playing() {
    snap("table_playing", async |h: &mut Headless, d: &Path| {
        let mut p = playing();
        let dir = p.write(d, "running");
        attach(h, &dir).await;
        // Pick the cards of a legal play (they show raised).
        let v = p.view(0);
        let play = p
            .rules
            .legal_actions(&v)
            .into_iter()
            .find(|a| a.get_str("kind") == Some("play"))
            .expect("seat 0 can beat the last play");
        for id in play.get("card_ids").and_then(Value::as_array).unwrap() {
            pick(h, id.as_str().unwrap());
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picked_legal_play_is_queued_and_an_illegal_pick_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut p = playing();
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    let view0 = p.view(0);
    let t = TableView::parse(LANDLORD, &view0).unwrap();
    // The hand is sorted: by value, then suit, jokers last.
    let values: Vec<i64> = t.hand.iter().map(|c| c.value).collect();
    let mut sorted = values.clone();
    sorted.sort();
    assert_eq!(values, sorted);

    // Two cards of different values that are no combination: refused,
    // with the reason, and nothing is queued.
    let a = &t.hand[0];
    let b = t.hand.iter().find(|c| c.value > a.value + 1).unwrap();
    pick(&mut h, &a.card_id);
    pick(&mut h, &b.card_id);
    h.key(key(KeyCode::Enter));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(
        !note.ok && note.text.contains("is not a combination"),
        "{note:?}"
    );
    assert!(
        !h.app.status.ok && h.app.status.text.contains("is not a combination"),
        "{:?}",
        h.app.status
    );
    assert!(actions(&dir).is_empty());

    // A single that does not beat the last play: refused, saying what to beat.
    h.key(key(KeyCode::Esc));
    assert!(h.app.sessions.table().unwrap().selected.is_empty());
    let last = view0.get("last_play").unwrap();
    let ids = |v: &Value| -> Vec<String> {
        v.get("card_ids")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_owned())
            .collect()
    };
    let losing = t.hand.iter().find(|c| {
        !p.rules
            .is_legal_selection(&view0, std::slice::from_ref(&c.card_id))
    });
    if let Some(c) = losing {
        pick(&mut h, &c.card_id);
        h.key(key(KeyCode::Enter));
        let note = h.app.sessions.table().unwrap().note.clone().unwrap();
        assert!(!note.ok, "{note:?}");
        assert!(
            note.text.contains("does not beat") || note.text.contains("is not a combination"),
            "{note:?} against {last:?}"
        );
        h.key(key(KeyCode::Esc));
    }
    assert!(actions(&dir).is_empty());

    // A legal play: picked with the keys, sent as `session action` sends it.
    let play = p
        .rules
        .legal_actions(&view0)
        .into_iter()
        .find(|a| a.get_str("kind") == Some("play"))
        .unwrap();
    for id in ids(&play) {
        pick(&mut h, &id);
    }
    h.key(key(KeyCode::Enter));
    let sent = queued(&mut h, &dir, 1).await;
    let mut got = ids(&sent[0]);
    let mut want = ids(&play);
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(sent[0].get_str("kind"), Some("play"));
    // The result comes back through the report; a second Enter while the
    // table has not moved is held back.
    assert!(
        h.until(LONG, |app| app.sessions.table().is_some_and(|t| t
            .note
            .as_ref()
            .is_some_and(|n| n.ok && n.text.starts_with("queued"))))
            .await
    );
    pick(&mut h, &t.hand[0].card_id);
    h.key(key(KeyCode::Enter));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(!note.ok && note.text.contains("on its way"), "{note:?}");
    assert_eq!(actions(&dir).len(), 1);

    // The table moves on (the play taken): the next snapshot makes it the
    // bots' turn, and a pass is refused as out of turn.
    p.act(play.clone());
    p.write(tmp.path(), "running");
    assert!(
        h.until(LONG, |app| app.sessions.table().is_some_and(|t| !t
            .waiting()
            && t.view.as_ref().is_ok_and(|v| !v.your_turn())))
            .await,
        "{}",
        h.screen()
    );
    h.key(ch('p'));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(
        !note.ok && note.text.contains("turn, not yours"),
        "{note:?}"
    );
    assert_eq!(actions(&dir).len(), 1);
    // The log says what was played, in words.
    assert!(h.screen().contains("you play "), "{}", h.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bid_is_one_of_the_legal_choices_and_an_ended_table_sends_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut p = bidding();
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    // 3 picks the third choice: a bid of 2.
    h.key(ch('3'));
    let sent = queued(&mut h, &dir, 1).await;
    assert_eq!(text(&sent[0]), r#"{"kind":"bid","value":2}"#);

    // Seat 0's bid taken, seat 1 bids 3 and the bidding is over: nothing
    // more for seat 0 to bid.
    p.act(Value::Object(obj! { "kind" => "bid", "value" => 2 }));
    p.act(Value::Object(obj! { "kind" => "bid", "value" => 3 }));
    p.write(tmp.path(), "closed");
    assert!(
        h.until(LONG, |app| app.sessions.table().is_some_and(|t| t
            .view
            .as_ref()
            .is_ok_and(|v| v.phase == "playing")))
            .await
    );
    h.key(ch('p'));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(!note.ok && note.text.contains("ended"), "{note:?}");
    assert_eq!(actions(&dir).len(), 1);
    // The keys of the table are in the help (generated from the keymap).
    h.key(ch('?'));
    let mut all = String::new();
    for _ in 0..300 {
        all.push_str(&h.screen());
        h.key(key(KeyCode::Down));
    }
    for want in ["[table]", "select_card", "select_group", "pass_turn"] {
        assert!(all.contains(want), "the help lacks {want}");
    }
}

#[test]
fn the_tables_the_console_shows() {
    let pid = |a: &str| {
        palaver::library::bundled_spec(a)
            .map(|s| s.protocol_id().to_owned())
            .unwrap_or_default()
    };
    for alias in [LANDLORD, HOLDEM, BRIDGE, SIGIL] {
        assert_eq!(
            palaver::tui::screens::sessions::table_alias(&pid(alias)).as_deref(),
            Some(alias)
        );
    }
    assert_eq!(
        palaver::tui::screens::sessions::table_alias(&pid("community-room-v1")),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_table_views_render_and_an_oversized_hand_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 100, 30);
    let mut p = playing();
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    let snap =
        palaver::json::parse_str(&std::fs::read_to_string(dir.join("snapshot.json")).unwrap())
            .unwrap();
    let with_view = |view: Value| {
        let mut s = snap.as_object().unwrap().clone();
        s.insert("group_view", view);
        palaver::json::canonical::to_string_ordered(&Value::Object(s))
    };
    // A hand no table deals: the rules are not asked about it.
    let mut big = view_of(&snap);
    let card = big.get("my_hand").unwrap().as_array().unwrap()[0].clone();
    big.as_object_mut()
        .unwrap()
        .insert("my_hand", Value::Array(vec![card; 5000]));
    for (i, odd) in [
        with_view(big),
        with_view(Value::from(7)),
        with_view(palaver::json::parse_str(r#"{"players":[1],"my_hand":"x"}"#).unwrap()),
        with_view(
            palaver::json::parse_str(
                r#"{"phase":"playing","players":{"a":{"seat":"x"}},"my_hand":[{"value":"7"},3],"last_play":{"cards":7},"you":{"public_key":"a"},"current_player":"a"}"#,
            )
            .unwrap(),
        ),
        r#"{"group_view":"#.to_owned(),
    ]
    .into_iter()
    .enumerate()
    {
        std::fs::write(dir.join("snapshot.json"), &odd).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let before = h.app.sessions.table().unwrap().view.clone();
        h.until(Duration::from_millis(400), |app| {
            app.sessions.table().unwrap().view != before
        })
        .await;
        let screen = h.screen();
        if i == 0 {
            let t = h.app.sessions.table().unwrap();
            assert!(
                t.view
                    .as_ref()
                    .is_err_and(|e| e.contains("more than a table deals")),
                "{:?}\n{screen}",
                t.view
            );
            assert!(t.bids.is_empty() && !t.can_pass);
        }
        // Keys on an odd table do nothing worse than a refusal.
        for k in [KeyCode::Right, KeyCode::Enter] {
            h.key(key(k));
        }
        h.key(ch(' '));
        h.key(ch('p'));
        h.screen();
    }
    assert!(actions(&dir).is_empty(), "{:?}", actions(&dir));
    // The next good write shows the table again.
    p.write(tmp.path(), "running");
    assert!(
        h.until(LONG, |app| app.sessions.table().is_some_and(|t| t
            .view
            .as_ref()
            .is_ok_and(|v| v.hand.len() == 25)))
            .await,
        "{}",
        h.screen()
    );
}

fn view_of(snapshot: &Value) -> Value {
    snapshot.get("group_view").unwrap().clone()
}

/// The bots play every seat (seat 0 too) until `done` holds; `None` when
/// the table completes first.
fn bots_until(p: &mut Play, done: impl Fn(&Value) -> bool) -> bool {
    for _ in 0..400 {
        if done(&p.state) {
            return true;
        }
        if p.state.get_str("phase") == Some("completed") {
            return false;
        }
        let n = p.current();
        let v = p.view(n);
        let Some(a) = p.rules.bot_action(&v) else {
            return false;
        };
        p.act(a);
    }
    false
}

/// Seat 0 declares and plays from the dummy (seat 2) to a trick already led.
fn declarer_at_dummy(s: &Value) -> bool {
    s.get_str("phase") == Some("playing")
        && s.get_str("declarer") == Some(pk(0).as_str())
        && s.get_str("current_hand_owner") == Some(pk(2).as_str())
        && s.get("current_trick")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
}

/// Hold'em: the bots act until seat 0's turn, seat 0 calls the big blind,
/// and the bots act until it is seat 0's turn again, on the flop.
fn holdem_flop() -> Play {
    let mut p = Play::deal_of(HOLDEM, "console-fixture");
    p.bots_until_mine();
    p.act(Value::Object(obj! { "kind" => "call" }));
    p.bots_until_mine();
    assert_eq!(p.state.get_str("street"), Some("flop"), "{:?}", p.state);
    p
}

/// Bridge: the bots call and play every seat until seat 0, the
/// declarer, plays from the dummy (seat 2) to the opening lead.
fn bridge_at_dummy() -> Play {
    let mut p = Play::deal_of(BRIDGE, "console-bridge-6");
    assert!(bots_until(&mut p, declarer_at_dummy), "{:?}", p.state);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_holdem_flop() {
    snap("table_holdem_flop", async |h: &mut Headless, d: &Path| {
        let mut p = holdem_flop();
        let dir = p.write(d, "running");
        attach(h, &dir).await;
        let v0 = p.view(0);
        let legal = p.rules.legal_actions(&v0);
        let t = h.app.sessions.table().unwrap();
        // Every legal action is offered, in the rules' order.
        assert_eq!(t.choices, legal);
        let v = t.view.as_ref().unwrap();
        assert_eq!(v.holdem().unwrap().board.len(), 3);
        assert_eq!(v.hand.len(), 2);
        // The cursor moves along the choices.
        h.key(key(KeyCode::Right));
        assert_eq!(h.app.sessions.table().unwrap().choice_cursor, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_bridge_declarer_plays_the_dummy() {
    snap("table_bridge_dummy", async |h: &mut Headless, d: &Path| {
        let mut p = bridge_at_dummy();
        let dir = p.write(d, "running");
        attach(h, &dir).await;
        let v0 = p.view(0);
        let legal = p.rules.legal_actions(&v0);
        let t = h.app.sessions.table().unwrap();
        let v = t.view.as_ref().unwrap();
        // The picker holds the dummy's cards, not seat 0's own.
        let dummy: Vec<String> = v
            .bridge()
            .unwrap()
            .dummy_hand
            .iter()
            .map(|c| c.card_id.clone())
            .collect();
        let picked: Vec<String> = v.pick_hand().iter().map(|c| c.card_id.clone()).collect();
        assert_eq!(picked.len(), 13);
        assert!(picked.iter().all(|id| dummy.contains(id)));
        assert!(t.choices.is_empty());
        assert_eq!(t.playable_ids().len(), legal.len());
        // Pick a card the rules allow (it shows raised).
        let id = legal[0].get_str("card_id").unwrap().to_owned();
        pick(h, &id);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holdem_action_is_a_numbered_choice() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut p = holdem_flop();
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    // Hold'em plays no cards: picking one is refused.
    h.key(ch(' '));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(!note.ok && note.text.contains("plays no cards"), "{note:?}");
    let v0 = p.view(0);
    let legal = p.rules.legal_actions(&v0);
    // The number of the choice sends it at once.
    let n = legal.len();
    assert!(n >= 3, "{legal:?}");
    h.key(ch(char::from(b'0' + n as u8)));
    let sent = queued(&mut h, &dir, 1).await;
    assert_eq!(text(&sent[0]), text(&legal[n - 1]));
    // The log says who did what on the way to the flop.
    let screen = h.screen();
    assert!(screen.contains("the flop: "), "{screen}");
    assert!(screen.contains("you call (10 in this street)"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_card_from_the_dummy_is_played_only_when_legal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut p = bridge_at_dummy();
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    let v0 = p.view(0);
    let legal: Vec<String> = p
        .rules
        .legal_actions(&v0)
        .iter()
        .map(|a| a.get_str("card_id").unwrap().to_owned())
        .collect();
    let dummy: Vec<String> = TableView::parse(BRIDGE, &v0)
        .unwrap()
        .pick_hand()
        .iter()
        .map(|c| c.card_id.clone())
        .collect();
    // A card of another suit while the dummy holds the led one: refused.
    let wrong = dummy.iter().find(|id| !legal.contains(id)).unwrap();
    pick(&mut h, wrong);
    h.key(key(KeyCode::Enter));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(
        !note.ok && note.text.contains("does not follow"),
        "{note:?}"
    );
    assert!(actions(&dir).is_empty());
    // A legal card of the dummy's: sent as one card.
    pick(&mut h, &legal[0]);
    assert_eq!(h.app.sessions.table().unwrap().selected.len(), 1);
    h.key(key(KeyCode::Enter));
    let sent = queued(&mut h, &dir, 1).await;
    assert_eq!(
        text(&sent[0]),
        format!(r#"{{"kind":"play","card_id":"{}"}}"#, legal[0])
    );
    assert!(dummy.contains(&legal[0]));
    let screen = h.screen();
    assert!(screen.contains("the contract is "), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_call_is_picked_by_page_and_number() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    // Board 1: north (seat 0, this console) deals and calls first.
    let mut p = Play::deal_of(BRIDGE, "console-bridge-6");
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    let v0 = p.view(0);
    let legal = p.rules.legal_actions(&v0);
    // Pass and the 35 bids.
    assert_eq!(legal.len(), 36);
    assert_eq!(h.app.sessions.table().unwrap().choices, legal);
    // Down turns to the next page of nine: 2 picks its second call.
    h.key(key(KeyCode::Down));
    assert_eq!(h.app.sessions.table().unwrap().choice_page(), (9, 9));
    h.key(ch('2'));
    let sent = queued(&mut h, &dir, 1).await;
    assert_eq!(text(&sent[0]), text(&legal[10]));
    assert_eq!(
        text(&sent[0]),
        r#"{"kind":"bid","level":2,"denomination":"nt"}"#
    );
}

/// A bridge auction at seat 0's call: the calls so far by compass point,
/// and only the legal calls offered, by page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_bridge_auction() {
    snap(
        "table_bridge_auction",
        async |h: &mut Headless, d: &Path| {
            let mut p = Play::deal_of(BRIDGE, "console-bridge-auction");
            p.bots_until_mine();
            let dir = p.write(d, "running");
            attach(h, &dir).await;
            let v0 = p.view(0);
            let legal = p.rules.legal_actions(&v0);
            let t = h.app.sessions.table().unwrap();
            assert_eq!(t.choices, legal);
            assert_eq!(t.view.as_ref().unwrap().phase, "auction");
        },
    )
    .await;
}

/// Aether sigil: the bots play every seat (seat 0 too) for three rounds;
/// turn 13 is seat 0's, with units on every row, relics set, and a ready
/// unit of its own to attack with.
fn sigil_midgame() -> Play {
    let mut p = Play::deal_of(SIGIL, "console-sigil-3");
    let at = |s: &Value| {
        s.get("turn_number").and_then(Value::as_i64) == Some(13)
            && s.get_str("current_player") == Some(pk(0).as_str())
    };
    assert!(bots_until(&mut p, at), "{:?}", p.state);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_sigil_midgame() {
    snap("table_sigil_midgame", async |h: &mut Headless, d: &Path| {
        let mut p = sigil_midgame();
        let dir = p.write(d, "running");
        attach(h, &dir).await;
        let v0 = p.view(0);
        let legal = p.rules.legal_actions(&v0);
        let t = h.app.sessions.table().unwrap();
        // Every legal action is a choice, in the rules' order.
        assert_eq!(t.choices, legal);
        assert!(legal.iter().any(|a| a.get_str("kind") == Some("attack")));
        let v = t.view.as_ref().unwrap();
        assert!(v.your_turn() && v.hand.is_empty());
        let s = v.sigil().unwrap();
        assert_eq!(s.hand.len(), 5);
        assert!(s.channelers.iter().all(|c| !c.units.is_empty()));
        assert!(s.channelers.iter().any(|c| !c.relics.is_empty()));
        // The cursor moves along the choices.
        h.key(key(KeyCode::Right));
        assert_eq!(h.app.sessions.table().unwrap().choice_cursor, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigil_attack_is_a_numbered_choice_and_p_ends_the_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut p = sigil_midgame();
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    // Cards are played by their choices, not picked.
    h.key(ch(' '));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(
        !note.ok && note.text.contains("numbered choice"),
        "{note:?}"
    );
    let v0 = p.view(0);
    let legal = p.rules.legal_actions(&v0);
    // The first direct attack: turn to its page, then its number.
    let at = legal
        .iter()
        .position(|a| a.get_str("kind") == Some("attack") && a.get("target_public_key").is_some())
        .unwrap();
    for _ in 0..at / 9 {
        h.key(key(KeyCode::Down));
    }
    assert_eq!(h.app.sessions.table().unwrap().choice_page().0, at / 9 * 9);
    h.key(ch(char::from(b'1' + (at % 9) as u8)));
    let sent = queued(&mut h, &dir, 1).await;
    assert_eq!(text(&sent[0]), text(&legal[at]));
    // The leader takes it: still seat 0's turn, and `p` ends it.
    p.act(legal[at].clone());
    p.write(tmp.path(), "running");
    assert!(
        h.until(LONG, |app| app
            .sessions
            .table()
            .is_some_and(|t| !t.waiting()))
            .await,
        "{}",
        h.screen()
    );
    h.key(ch('p'));
    let sent = queued(&mut h, &dir, 2).await;
    assert_eq!(text(&sent[1]), r#"{"kind":"end_turn"}"#);
    // The log says the attack in words, the attacker named from the view.
    let hit = p
        .frames
        .last()
        .unwrap()
        .iter()
        .find(|e| e.get_str("kind") == Some("direct_attack"))
        .cloned()
        .unwrap();
    let t = TableView::parse(SIGIL, &v0).unwrap();
    let attacker = t
        .sigil()
        .unwrap()
        .card(legal[at].get_str("unit_id").unwrap())
        .unwrap()
        .name
        .clone();
    let target = match hit.get_str("target").unwrap() {
        k if k == pk(1) => "bot-1",
        k if k == pk(2) => "bot-2",
        _ => "ada",
    };
    let said = format!(
        "your {attacker} hits {target} for {}",
        hit.get("amount").unwrap().as_i64().unwrap()
    );
    let logged = |app: &palaver::tui::app::App| {
        app.sessions.table().is_some_and(|t| {
            t.log.iter().any(|e| {
                matches!(e, LogEntry::Event { event, .. }
                    if event.get_str("kind") == Some("direct_attack"))
            })
        })
    };
    assert!(h.until(LONG, logged).await, "{}", h.screen());
    let screen = h.screen();
    assert!(screen.contains(&said), "{said}\n{screen}");
    assert!(screen.contains("your turn begins"), "{screen}");
}

// upgrade-tractor-v1: four seats in two teams; nobody holds the turn
// during the declarations (every seat declares or passes once), so the
// acting seat is the first whose bot has a move.

const TRACTOR: &str = "upgrade-tractor-v1";

/// Seat `n` acts (the harness's `act` takes the current player, which the
/// declarations have none of).
fn act_as(p: &mut Play, n: u8, action: Value) {
    let r = p
        .rules
        .handle(p.state.clone(), &common::table_seat::member(n), &action)
        .unwrap_or_else(|e| panic!("seat {n} {action:?}: {e:?}"));
    p.state = r.get("state").unwrap().clone();
    p.frames
        .push(r.get("events").and_then(Value::as_array).unwrap().clone());
}

/// The bots play every seat (seat 0 too), the first whose bot has a move
/// acting, until `done` holds; false when nobody has a move first.
fn tractor_bots_until(p: &mut Play, done: impl Fn(&Value) -> bool) -> bool {
    for _ in 0..600 {
        if done(&p.state) {
            return true;
        }
        let Some((n, a)) = (0..4u8).find_map(|n| {
            let v = p.view(n);
            p.rules.bot_action(&v).map(|a| (n, a))
        }) else {
            return false;
        };
        act_as(p, n, a);
    }
    false
}

/// Tractor mid-hand: the bots declare, bury and play every seat until it
/// is seat 0's turn in a trick already led, with a trick taken before.
fn tractor_midhand() -> Play {
    let mut p = Play::deal_of(TRACTOR, "console-tractor");
    let at = |s: &Value| {
        s.get_str("phase") == Some("playing")
            && s.get_str("current_player") == Some(pk(0).as_str())
            && s.get("current_trick")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty())
            && s.get("trick_history")
                .and_then(Value::as_array)
                .is_some_and(|t| t.len() >= 3)
    };
    assert!(tractor_bots_until(&mut p, at), "{:?}", p.state);
    p
}

/// The card ids of an action.
fn card_ids(a: &Value) -> Vec<String> {
    a.get("card_ids")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_tractor_midhand() {
    snap(
        "table_tractor_midhand",
        async |h: &mut Headless, d: &Path| {
            let mut p = tractor_midhand();
            let dir = p.write(d, "running");
            attach(h, &dir).await;
            let v0 = p.view(0);
            let t = h.app.sessions.table().unwrap();
            // Plays are picked cards, not choices.
            assert!(t.choices.is_empty());
            let v = t.view.as_ref().unwrap();
            assert!(v.your_turn() && v.phase == "playing");
            let g = v.tractor().unwrap();
            assert!(!g.trick.is_empty() && g.last_trick.is_some());
            // Trumps first, then each plain suit.
            let groups: Vec<i64> = v.hand.iter().map(|c| g.class_group(c)).collect();
            assert!(groups.windows(2).all(|w| w[0] <= w[1]), "{groups:?}");
            // Pick the cards of a legal play (they show raised).
            let play = p.rules.legal_actions(&v0)[0].clone();
            for id in card_ids(&play) {
                pick(h, &id);
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tractor_play_is_queued_only_when_legal() {
    let pid = palaver::library::bundled_spec(TRACTOR)
        .map(|s| s.protocol_id().to_owned())
        .unwrap();
    assert_eq!(
        palaver::tui::screens::sessions::table_alias(&pid).as_deref(),
        Some(TRACTOR)
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut p = tractor_midhand();
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    let v0 = p.view(0);
    let t = TableView::parse(TRACTOR, &v0).unwrap();
    let lead = &t.tractor().unwrap().trick[0];
    let n = lead.count as usize;
    // One card more than the lead: refused, saying what the lead asks.
    for c in t.hand.iter().take(n + 1) {
        pick(&mut h, &c.card_id);
    }
    h.key(key(KeyCode::Enter));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(
        !note.ok
            && note
                .text
                .contains(&format!("led {}: play {n} cards", lead.words())),
        "{note:?}"
    );
    assert!(actions(&dir).is_empty());
    // A pick the rules refuse for what it holds, if the hand has one.
    h.key(key(KeyCode::Esc));
    let ids: Vec<String> = t.hand.iter().map(|c| c.card_id.clone()).collect();
    let wrong = ids
        .windows(n)
        .find(|w| !p.rules.is_legal_selection(&v0, w))
        .map(<[String]>::to_vec);
    if let Some(wrong) = wrong {
        for id in &wrong {
            pick(&mut h, id);
        }
        h.key(key(KeyCode::Enter));
        let note = h.app.sessions.table().unwrap().note.clone().unwrap();
        assert!(!note.ok && note.text.contains(" led "), "{note:?}");
        assert!(actions(&dir).is_empty());
        h.key(key(KeyCode::Esc));
    }
    // A legal play: queued as the line `palaver session action` writes.
    let play = p.rules.legal_actions(&v0)[0].clone();
    let mut want = card_ids(&play);
    for id in &want {
        pick(&mut h, id);
    }
    h.key(key(KeyCode::Enter));
    let sent = queued(&mut h, &dir, 1).await;
    assert_eq!(sent[0].get_str("kind"), Some("play"));
    let mut got = card_ids(&sent[0]);
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let screen = h.screen();
    assert!(screen.contains("cards in the kitty and "), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tractor_declarations_are_choices_and_the_burial_is_eight_picked_cards() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 100, 30);
    // Seats 1–3 pass: seat 0 is still to declare, with no current player.
    let mut p = Play::deal_of(TRACTOR, "console-tractor");
    for n in 1..4 {
        act_as(&mut p, n, Value::Object(obj! { "kind" => "pass_declare" }));
    }
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    let v0 = p.view(0);
    let legal = p.rules.legal_actions(&v0);
    assert_eq!(h.app.sessions.table().unwrap().choices, legal);
    assert!(h.screen().contains("[1 pass]"), "{}", h.screen());
    // `p` passes: the starter (seat 0) then declares in no-trump.
    h.key(ch('p'));
    let sent = queued(&mut h, &dir, 1).await;
    assert_eq!(text(&sent[0]), r#"{"kind":"pass_declare"}"#);
    act_as(&mut p, 0, sent[0].clone());
    assert_eq!(p.state.get_str("phase"), Some("bury"));
    p.write(tmp.path(), "running");
    assert!(
        h.until(LONG, |app| app.sessions.table().is_some_and(|t| {
            !t.waiting() && t.view.as_ref().is_ok_and(|v| v.phase == "bury")
        }))
        .await,
        "{}",
        h.screen()
    );
    let v0 = p.view(0);
    let t = TableView::parse(TRACTOR, &v0).unwrap();
    assert_eq!(t.hand.len(), 33);
    assert!(h.app.sessions.table().unwrap().choices.is_empty());
    // Seven cards: refused, counted.
    for c in t.hand.iter().take(7) {
        pick(&mut h, &c.card_id);
    }
    let screen = h.screen();
    assert!(screen.contains("picked 7 of 8"), "{screen}");
    // The declarer sees the kitty it took.
    assert!(screen.contains("you took "), "{screen}");
    h.key(key(KeyCode::Enter));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert_eq!(
        note,
        palaver::tui::note::Note::err("bury exactly 8 cards: 7 picked")
    );
    assert_eq!(actions(&dir).len(), 1);
    // The eighth: buried.
    pick(&mut h, &t.hand[7].card_id);
    h.key(key(KeyCode::Enter));
    let sent = queued(&mut h, &dir, 2).await;
    assert_eq!(sent[1].get_str("kind"), Some("bury"));
    let want: Vec<String> = t.hand[..8].iter().map(|c| c.card_id.clone()).collect();
    assert_eq!(card_ids(&sent[1]), want);
    assert!(p.rules.is_legal_selection(&v0, &want));
}

// classical-mahjong-v1: a discard opens a claim window that the three
// other seats answer in any order, with no current player, so the acting
// seat is the first whose bot has a move.

const MAHJONG: &str = "classical-mahjong-v1";

/// The bots play every seat (seat 0 too), the first whose bot has a move
/// acting, until `done` holds of the table; false when nobody has a move.
fn mahjong_bots_until(p: &mut Play, done: impl Fn(&mut Play) -> bool) -> bool {
    for _ in 0..3000 {
        if done(p) {
            return true;
        }
        let Some((n, a)) = (0..4u8).find_map(|n| {
            let v = p.view(n);
            p.rules.bot_action(&v).map(|a| (n, a))
        }) else {
            return false;
        };
        act_as(p, n, a);
    }
    false
}

/// Melds declared at the table so far.
fn mahjong_melds(s: &Value) -> usize {
    s.get("meld_groups")
        .and_then(Value::as_object)
        .map_or(0, |m| {
            m.iter()
                .map(|(_, g)| g.as_array().map_or(0, Vec::len))
                .sum()
        })
}

/// Mahjong mid-hand: seat 0 is to discard, melds on the table (one of
/// them seat 0's) and a river in front of every seat.
fn mahjong_midhand() -> Play {
    let mut p = Play::deal_of(MAHJONG, "console-mahjong");
    let at = |p: &mut Play| {
        let s = &p.state;
        let mine = s
            .get("meld_groups")
            .and_then(|m| m.get(&pk(0)))
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        s.get_str("phase") == Some("discard")
            && s.get_str("current_player") == Some(pk(0).as_str())
            && mine
            && mahjong_melds(s) >= 3
    };
    assert!(mahjong_bots_until(&mut p, at), "{:?}", p.state);
    p
}

/// A claim window where seat 0 may claim: the bots play until seat 0's
/// legal answers include more than a pass.
fn mahjong_claim() -> Play {
    let mut p = Play::deal_of(MAHJONG, "console-mahjong");
    let at = |p: &mut Play| {
        let v = p.view(0);
        mahjong_melds(&p.state) >= 1
            && p.rules.legal_actions(&v).iter().any(|a| {
                a.get_str("kind") != Some("pass_claim") && p.state.get_str("phase") == Some("claim")
            })
    };
    assert!(mahjong_bots_until(&mut p, at), "{:?}", p.state);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_mahjong_midhand() {
    snap(
        "table_mahjong_midhand",
        async |h: &mut Headless, d: &Path| {
            let mut p = mahjong_midhand();
            let dir = p.write(d, "running");
            attach(h, &dir).await;
            let v0 = p.view(0);
            let legal = p.rules.legal_actions(&v0);
            let t = h.app.sessions.table().unwrap();
            // The discards are picked tiles; a win and concealed kongs are
            // choices.
            let want: Vec<Value> = legal
                .iter()
                .filter(|a| a.get_str("kind") != Some("discard"))
                .cloned()
                .collect();
            assert_eq!(t.choices, want);
            let v = t.view.as_ref().unwrap();
            assert!(v.your_turn() && v.phase == "discard");
            let m = v.mahjong().unwrap();
            assert!(!m.seat(&pk(0)).unwrap().melds.is_empty());
            // Sorted by face, the drawn tile (if any) kept last.
            let n = m.hand.len() - usize::from(m.drawn.is_some());
            let faces: Vec<usize> = m.hand[..n].iter().map(|t| t.face.unwrap()).collect();
            assert!(faces.windows(2).all(|w| w[0] <= w[1]), "{faces:?}");
            // The cursor moves along the hand.
            h.key(key(KeyCode::Right));
            assert_eq!(h.app.sessions.table().unwrap().cursor, 1);
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_mahjong_claim() {
    snap("table_mahjong_claim", async |h: &mut Headless, d: &Path| {
        let mut p = mahjong_claim();
        let dir = p.write(d, "running");
        attach(h, &dir).await;
        let v0 = p.view(0);
        let legal = p.rules.legal_actions(&v0);
        let t = h.app.sessions.table().unwrap();
        // Every legal answer is a choice, the pass first.
        assert_eq!(t.choices, legal);
        assert_eq!(legal[0].get_str("kind"), Some("pass_claim"));
        let v = t.view.as_ref().unwrap();
        assert!(v.your_turn() && v.current.is_empty());
        assert!(v.mahjong().unwrap().to_answer());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mahjong_claim_and_a_discard_are_queued_and_an_illegal_pick_is_refused() {
    let pid = palaver::library::bundled_spec(MAHJONG)
        .map(|s| s.protocol_id().to_owned())
        .unwrap();
    assert_eq!(
        palaver::tui::screens::sessions::table_alias(&pid).as_deref(),
        Some(MAHJONG)
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 40);
    let mut p = mahjong_claim();
    let dir = p.write(tmp.path(), "running");
    attach(&mut h, &dir).await;
    let v0 = p.view(0);
    let legal = p.rules.legal_actions(&v0);
    // Tiles are not picked in a claim window.
    h.key(ch(' '));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(
        !note.ok && note.text.contains("sent by its number"),
        "{note:?}"
    );
    assert!(screen_has(&mut h, "win > pung/kong > chow"));
    // The number of a claim sends it at once.
    let k = legal
        .iter()
        .position(|a| a.get_str("kind") != Some("pass_claim"))
        .unwrap();
    h.key(ch(char::from(b'1' + k as u8)));
    let sent = queued(&mut h, &dir, 1).await;
    assert_eq!(text(&sent[0]), text(&legal[k]));

    // The claim taken (the others pass or claim as their bots do): play
    // on until seat 0 is to discard.
    act_as(&mut p, 0, legal[k].clone());
    let mine = |p: &mut Play| {
        p.state.get_str("phase") == Some("discard")
            && p.state.get_str("current_player") == Some(pk(0).as_str())
    };
    assert!(mahjong_bots_until(&mut p, mine), "{:?}", p.state);
    p.write(tmp.path(), "running");
    assert!(
        h.until(LONG, |app| app.sessions.table().is_some_and(|t| {
            !t.waiting()
                && t.view
                    .as_ref()
                    .is_ok_and(|v| v.phase == "discard" && v.your_turn())
        }))
        .await,
        "{}",
        h.screen()
    );
    let v0 = p.view(0);
    let t = TableView::parse(MAHJONG, &v0).unwrap();
    // Two tiles: refused, saying what a turn takes; nothing queued.
    pick(&mut h, &t.hand[0].card_id);
    pick(&mut h, &t.hand[1].card_id);
    h.key(key(KeyCode::Enter));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(
        !note.ok && note.text.contains("discard one tile"),
        "{note:?}"
    );
    assert!(
        !h.app.status.ok && h.app.status.text.contains("discard one tile"),
        "{:?}",
        h.app.status
    );
    assert_eq!(actions(&dir).len(), 1);
    // `p` has no pass to send on a turn.
    h.key(ch('p'));
    let note = h.app.sessions.table().unwrap().note.clone().unwrap();
    assert!(!note.ok && note.text.contains("no passing"), "{note:?}");
    // One picked tile: discarded.
    h.key(key(KeyCode::Esc));
    let id = t.hand[2].card_id.clone();
    pick(&mut h, &id);
    h.key(key(KeyCode::Enter));
    let sent = queued(&mut h, &dir, 2).await;
    assert_eq!(
        text(&sent[1]),
        format!(r#"{{"kind":"discard","card_id":"{id}"}}"#)
    );
    assert!(p.rules.is_legal_selection(&v0, &[id]));
    // The log says the discards in words.
    let screen = h.screen();
    assert!(screen.contains(" discards "), "{screen}");
}

fn screen_has(h: &mut Headless, s: &str) -> bool {
    let screen = h.screen();
    screen.contains(s) || {
        eprintln!("{screen}");
        false
    }
}
