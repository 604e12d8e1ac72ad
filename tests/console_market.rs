//! The console's market screen (F4): TestBackend snapshots of its main
//! states (80×24 and 160×48) from fixed market answers, and the whole
//! round driven by keys against the embedded community, whose house bot
//! offers, solves and gets paid.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::json::Value;
use palaver::json::canonical::sha256_hex;
use palaver::market::State;
use palaver::market::view::decode;
use palaver::obj;
use palaver::tui::app::ScreenId;
use palaver::tui::command::Command;
use palaver::tui::report::Report;
use palaver::tui::report::market::{MarketReport, Refresh};
use palaver::tui::tasks::Startup;
use palaver::tui::{Headless, load_settings};
use std::path::Path;
use std::time::Duration;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];
const ME: &str = "b0b0b0b0b0b0b0b0";
const HOUSE: &str = "40a5e40a5e40a5e4";
const OTHER: &str = "c4c4c4c4c4c4c4c4";
/// 2030-01-01T00:00:00Z: when the fixtures were "read".
const NOW: i64 = 1_893_456_000_000;

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}
fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

fn console(data: &Path, w: u16, h: u16) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    let mut h = Headless::new(settings, w, h);
    h.update(Command::ViewMarket);
    h
}

fn hash(s: &str) -> String {
    sha256_hex(s)
}

fn time(ms: i64) -> String {
    palaver::utc::format_rfc3339_utc(ms)
}

/// A listing row as `GET /api/market?all=1` answers it.
fn job(id: &str, state: &str, budget: i64, target: &str, deadline_in_s: i64, buyer: &str) -> Value {
    Value::Object(obj! {
        "transaction_id" => id, "state" => state,
        "job" => Value::Object(obj! { "task_type" => "sha256_nonce.v1",
            "input" => Value::Object(obj! { "prefix" => format!("palaver|{id}"), "target" => target }) }),
        "job_hash" => hash(&format!("job {id}")), "verification_policy_hash" => hash("policy"),
        "deadline" => time(NOW + deadline_in_s * 1000),
        "budget" => Value::Object(obj! { "amount" => budget, "asset" => "GTU" }),
        "buyer_principal" => buyer, "deal_hash" => Value::Null, "live_offers" => 0,
    })
}

/// The view of a settled transaction: two offers, the house's accepted.
fn settled_view(id: &str) -> Value {
    let Value::Object(mut v) = job(id, "SETTLED", 10, "00", 540, ME) else {
        unreachable!()
    };
    v.insert("terminal", Value::from(true));
    v.insert("authority_hash", Value::from(hash("authority")));
    let offer = |who: &str, price: i64, status: &str| {
        Value::Object(obj! {
            "offer_hash" => hash(&format!("offer {who}")), "offer" => Value::Object(obj! {}),
            "status" => status, "provider_principal" => who, "price" => price,
        })
    };
    v.insert(
        "offers",
        Value::Array(vec![
            offer(HOUSE, 10, "accepted"),
            offer(OTHER, 9, "superseded"),
        ]),
    );
    v.insert(
        "deal",
        Value::Object(obj! {
            "deal_hash" => hash("deal"), "deal" => Value::Object(obj! {}), "confirmed" => true,
            "buyer_principal" => ME, "provider_principal" => HOUSE, "amount" => 10,
            "offer_hash" => hash(&format!("offer {HOUSE}")),
        }),
    );
    v.insert("deal_hash", Value::from(hash("deal")));
    v.insert(
        "delivery",
        Value::Object(obj! { "hash" => hash("delivery"), "object" => Value::Object(obj! {}) }),
    );
    v.insert(
        "verification",
        Value::Object(obj! { "hash" => hash("verification"), "object" => Value::Object(obj! {}) }),
    );
    let chain = [
        ("JOB_OPEN", "JOB_OPEN"),
        ("OFFER", "OFFERED"),
        ("OFFER", "OFFERED"),
        ("DEAL_LOCK", "OFFERED"),
        ("DEAL_CONFIRM", "DEAL_LOCKED"),
        ("FUND", "FUNDED"),
        ("DELIVER", "DELIVERED"),
        ("VERIFICATION", "VERIFIED"),
        ("SETTLEMENT", "SETTLED"),
    ];
    let events = chain
        .iter()
        .enumerate()
        .map(|(i, (kind, after))| {
            Value::Object(obj! {
                "seq" => i as i64 + 1, "kind" => *kind, "state_after" => *after,
                "body" => Value::Object(obj! {}), "at" => NOW - 60_000 + i as i64 * 1500,
                "prev_event_hash" => hash(&format!("event {}", i as i64 - 1)),
                "event_hash" => hash(&format!("event {i}")),
            })
        })
        .collect();
    v.insert("events", Value::Array(events));
    Value::Object(v)
}

fn refreshed(view: Option<Value>) -> Report {
    let jobs = [
        job("job_5e771ed0000a", "SETTLED", 10, "00", 540, ME),
        job("job_0ffe4ed0000b", "OFFERED", 25, "0000", 7_260, OTHER),
        job("job_1ead00000c0c", "JOB_OPEN", 40, "000000", 90_000, ME),
    ]
    .iter()
    .map(|j| decode(j).unwrap())
    .collect();
    let view = view.map(|v| decode(&v).unwrap());
    Report::Market(Box::new(MarketReport::Refreshed(Ok(Box::new(Refresh {
        principal_id: ME.into(),
        at_ms: NOW,
        jobs,
        balance: 990,
        view,
    })))))
}

async fn snap(name: &str, setup: impl AsyncFn(&mut Headless)) {
    for (w, hgt) in SIZES {
        let tmp = tempfile::tempdir().unwrap();
        let mut h = console(tmp.path(), w, hgt);
        setup(&mut h).await;
        let screen = h.screen();
        insta::assert_snapshot!(format!("{name}_{w}x{hgt}"), screen);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn market_not_connected_yet() {
    snap("market_waiting", async |h: &mut Headless| {
        assert_eq!(h.app.screen, ScreenId::Market);
        assert!(!h.app.market.connected());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn market_jobs_timeline_and_offers() {
    snap("market_settled", async |h: &mut Headless| {
        h.update(refreshed(Some(settled_view("job_5e771ed0000a"))));
        let tx = h
            .app
            .market
            .tx
            .as_ref()
            .expect("the newest job is selected");
        assert_eq!(tx.events.len(), 9);
        assert_eq!(
            tx.hashes.len(),
            5,
            "job, offer, deal, delivery, verification"
        );
        // Tab to the offers, the second one selected.
        h.key(key(KeyCode::Tab));
        h.key(key(KeyCode::Down));
        assert_eq!(h.app.market.offer_sel, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn market_open_job_form_with_a_validation_error() {
    snap("market_form", async |h: &mut Headless| {
        h.update(refreshed(None));
        h.key(ch('o'));
        assert!(h.app.market.form.is_some(), "o opens the form");
        for _ in 0..4 {
            h.key(key(KeyCode::Backspace));
        }
        // Typed keys are text here, not the screen's keys (a, f, q…).
        for c in "00zq".chars() {
            h.key(ch(c));
        }
        h.key(key(KeyCode::Tab));
        h.key(key(KeyCode::Backspace));
        h.key(key(KeyCode::Backspace));
        h.key(ch('0'));
        h.key(key(KeyCode::Enter));
        let form = h
            .app
            .market
            .form
            .as_ref()
            .expect("Enter keeps an invalid form open");
        assert_eq!(form.fields[0], "00zq");
        assert_eq!(form.check().unwrap_err().len(), 2);
        assert!(!h.app.quit);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_missing_connections_are_said_not_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = console(tmp.path(), 120, 30);
    h.update(refreshed(Some(settled_view("job_5e771ed0000a"))));
    h.key(ch('a'));
    let note = h.app.market.note.clone().unwrap();
    assert!(!note.ok && note.text.contains("not connected"), "{note:?}");
    h.update(Report::Market(Box::new(MarketReport::Done(Err(
        "funding job_5e771ed0000a refused: illegal_transition: FUND in SETTLED".into(),
    )))));
    let screen = h.screen();
    assert!(
        screen.contains("refused: illegal_transition: FUND") && screen.contains("in SETTLED"),
        "{screen}"
    );
    // The same line reaches the status bar through Report::Progress.
    h.drain();
    assert!(
        h.app.status.text.contains("illegal_transition"),
        "{:?}",
        h.app.status
    );
    // A market that cannot be read says so until it can again.
    h.update(Report::Market(Box::new(MarketReport::Refreshed(Err(
        "connection refused".into(),
    )))));
    assert!(
        h.screen()
            .contains("cannot read the market: connection refused")
    );
    h.update(refreshed(None));
    assert!(!h.screen().contains("cannot read the market"));
    h.key(ch('o'));
    h.update(Report::Market(Box::new(MarketReport::Opened(Err(
        "missing_fields: [\"job.deadline\"]".into(),
    )))));
    let form = h.app.market.form.as_ref().unwrap();
    assert!(!form.posting && form.refused.is_some());
    assert!(h.screen().contains("missing_fields"));
}

const LONG: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_a_job_accept_the_house_offer_fund_and_watch_it_settle() {
    let tmp = tempfile::tempdir().unwrap();
    let settings = load_settings(tmp.path(), None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    h.start_community(Startup {
        data_dir: tmp.path().to_owned(),
        server: None,
        nickname: "buyer".into(),
        house: true,
        house_round_delay: 0,
    });
    assert!(
        h.until(LONG, |a| a.community.is_some()).await,
        "{}",
        h.app.community_status
    );
    h.key(key(KeyCode::F(4)));
    assert_eq!(h.app.screen, ScreenId::Market);
    assert!(
        h.until(LONG, |a| a.market.balance.is_some()).await,
        "no market balance:\n{}",
        h.screen()
    );
    let before = h.app.market.balance.unwrap();
    let me = h.app.market.principal.clone();

    h.key(ch('o'));
    let form = h.app.market.form.clone().expect("the job form");
    for _ in form.fields[0].chars() {
        h.key(key(KeyCode::Backspace));
    }
    h.key(ch('0'));
    h.key(ch('0'));
    h.key(key(KeyCode::Tab));
    for _ in form.fields[1].chars() {
        h.key(key(KeyCode::Backspace));
    }
    h.key(ch('1'));
    h.key(ch('0'));
    h.key(key(KeyCode::Enter));
    assert!(
        h.until(LONG, |a| a.market.form.is_none()).await,
        "JOB_OPEN was not accepted:\n{}",
        h.screen()
    );
    let offered = |a: &palaver::tui::app::App| {
        a.market
            .tx
            .as_ref()
            .is_some_and(|t| t.job.target == "00" && t.job.budget == 10 && !t.offers.is_empty())
    };
    assert!(
        h.until(LONG, offered).await,
        "the house made no offer:\n{}",
        h.screen()
    );
    let offer = h.app.market.tx.as_ref().unwrap().offers[0].clone();
    assert_ne!(offer.provider, me);
    assert!(offer.price > 0 && offer.price <= 10);

    h.key(ch('a'));
    let state = |want: State| {
        move |a: &palaver::tui::app::App| a.market.tx.as_ref().is_some_and(|t| t.job.state == want)
    };
    assert!(
        h.until(LONG, state(State::DealLocked)).await,
        "the deal was not locked and confirmed:\n{}",
        h.screen()
    );
    h.key(ch('f'));
    assert!(
        h.until(LONG, state(State::Settled)).await,
        "not settled:\n{}",
        h.screen()
    );
    assert!(
        h.until(LONG, |a| a.market.balance == Some(before - offer.price))
            .await,
        "the buyer's balance did not move by the price ({before} − {}): {:?}",
        offer.price,
        h.app.market.balance
    );
    let tx = h.app.market.tx.clone().unwrap();
    let kinds: Vec<&str> = tx.events.iter().map(|e| e.kind.as_str()).collect();
    for k in [
        "JOB_OPEN",
        "OFFER",
        "DEAL_LOCK",
        "DEAL_CONFIRM",
        "FUND",
        "DELIVER",
        "VERIFICATION",
    ] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    assert_eq!(
        tx.events.last().map(|e| e.state_after.as_str()),
        Some("SETTLED")
    );
    assert!(tx.hashes.iter().any(|(l, _)| *l == "verification"));
    let screen = h.screen();
    assert!(
        screen.contains("SETTLED") && screen.contains("buyer"),
        "{screen}"
    );
}
