//! The console's embedded community in one process: the embedded server,
//! the house keeping one invitation per game, and a guest joining each
//! through `services::remote::join` over iroh on loopback.

use crate::common;

use palaver::engine::{ChatSource, ControlMode, EventSink, Hooks};
use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::services::house::{self, ChatTap};
use palaver::services::remote::{self, Finished, HostPlan, JoinPlan, PeerOpts, Progress};
use palaver::services::server::{ensure_registered, start_embedded};
use palaver::spec::Spec;
use palaver::web::Client;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

fn s(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn pid(alias: &str) -> String {
    palaver::library::bundled_spec(alias)
        .unwrap()
        .protocol_id()
        .to_owned()
}

/// The open invitations `host` has for `alias`, as `palaver browse` lists them.
async fn open_invitations(c: &Client, alias: &str, host: &str) -> Vec<Value> {
    let v = c
        .call(
            "GET",
            &format!("/api/v1/invitations?protocol_id={}&limit=50", pid(alias)),
            None,
            &[200],
        )
        .await
        .unwrap();
    v.get("results")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|i| s(i, "public_key") == host && s(i, "status") == "open")
        .collect()
}

/// Waits (up to `limit`) for an open invitation of `host` for `alias` other
/// than `not`; returns its post_id.
async fn wait_open(
    c: &Client,
    alias: &str,
    host: &str,
    not: Option<&str>,
    limit: Duration,
) -> String {
    let start = tokio::time::Instant::now();
    loop {
        let open = open_invitations(c, alias, host).await;
        if let Some(i) = open.iter().find(|i| Some(s(i, "post_id").as_str()) != not) {
            return s(i, "post_id");
        }
        assert!(
            start.elapsed() < limit,
            "no open {alias} invitation from the house after {limit:?} (besides {not:?})"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn resolve(pid: &str) -> Result<(Spec, Box<dyn Hooks>), String> {
    let lib = palaver::library::Library::bundled();
    let e = lib.resolve(pid).map_err(|e| e.to_string())?;
    let spec = lib.load(e).map_err(|e| e.to_string())?;
    let hooks = palaver::protocols::native_hooks(&spec).ok_or("no native hooks")?;
    Ok((spec, hooks))
}

/// A guest that waits for the house to speak before each of its lines.
struct PoliteGuest {
    lines: VecDeque<String>,
    heard: mpsc::UnboundedReceiver<String>,
    waiting: bool,
    log: Arc<Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl ChatSource for PoliteGuest {
    async fn next_line(&mut self) -> Option<String> {
        if self.waiting {
            let said = self.heard.recv().await?;
            self.log.lock().unwrap().push(said);
            self.waiting = false;
        }
        let line = self.lines.pop_front()?;
        self.waiting = true;
        Some(line)
    }
}

async fn join(
    c: &Client,
    post_id: &str,
    chat: Option<(Box<dyn ChatSource>, Arc<dyn EventSink>)>,
) -> Finished {
    let mut plan = JoinPlan::new(post_id, ControlMode::Autonomous, PeerOpts::direct(), None);
    if let Some((source, observer)) = chat {
        plan.chat = Some(source);
        plan.observer = Some(observer);
    }
    let seen = Mutex::new(Vec::new());
    let progress = |p: Progress| seen.lock().unwrap().push(format!("{p:?}"));
    let f = tokio::time::timeout(
        Duration::from_secs(90),
        remote::join(c, plan, resolve, &progress, std::future::pending()),
    )
    .await
    .unwrap_or_else(|_| panic!("join {post_id} took too long: {:?}", seen.lock().unwrap()))
    .unwrap_or_else(|e| panic!("join {post_id}: {e}; {:?}", seen.lock().unwrap()));
    let seen = seen.into_inner().unwrap();
    assert!(seen.iter().any(|p| p.starts_with("Connecting")), "{seen:?}");
    assert!(
        seen.iter().any(|p| p.starts_with("Established")),
        "{seen:?}"
    );
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_house_hosts_each_game_and_reopens_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, server) = start_embedded(&tmp.path().join("community.sqlite"))
        .await
        .unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let house_c = Client::new(&url, KeyPair::generate()).unwrap();
    ensure_registered(&house_c, "house").await.unwrap();
    // Registering twice is fine.
    ensure_registered(&house_c, "house").await.unwrap();
    let house_pk = house_c.keys().public_key.clone();
    let games = [
        "rps-v1",
        "guess-number-v1",
        "connect4-v1",
        "crazy-eights-v1",
        "human-chat-v1",
    ];
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let w = warnings.clone();
    let house = tokio::spawn(async move {
        house::run_house(house_c, &games, PeerOpts::direct(), 0, move |alias, p| {
            if let Progress::Warning(m) = p {
                w.lock().unwrap().push(format!("{alias}: {m}"));
            }
        })
        .await
    });

    let guest = Client::new(&url, KeyPair::generate()).unwrap();
    ensure_registered(&guest, "guest").await.unwrap();
    for alias in games {
        let post = wait_open(&guest, alias, &house_pk, None, Duration::from_secs(30)).await;
        let inv = guest
            .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
            .await
            .unwrap();
        assert!(s(&inv, "message").starts_with("House "), "{inv:?}");
        assert_eq!(s(&inv, "host_control_mode"), "autonomous");
        let think = inv
            .get("options")
            .and_then(|o| o.get("max_think_seconds"))
            .and_then(Value::as_i64);
        let chat = alias == "human-chat-v1";
        assert_eq!(
            think,
            (!chat).then_some(house::HUMAN_THINK_SECONDS),
            "{alias}"
        );

        let heard = Arc::new(Mutex::new(Vec::new()));
        let f = if chat {
            let (tx, rx) = mpsc::unbounded_channel();
            let source = PoliteGuest {
                lines: [
                    "hello",
                    "what games do you have?",
                    "I like turtles",
                    "/quit",
                ]
                .map(String::from)
                .into(),
                heard: rx,
                waiting: true,
                log: heard.clone(),
            };
            let tap: Arc<dyn EventSink> = Arc::new(ChatTap { lines: tx });
            join(&guest, &post, Some((Box::new(source), tap))).await
        } else {
            join(&guest, &post, None).await
        };
        assert!(f.outcome.completed, "{alias}: {:?}", f.outcome);
        assert_eq!(f.outcome.reason, "completed", "{alias}");
        assert_eq!(f.peer_public_key, house_pk);
        assert_eq!(f.post_id, post);
        assert!(f.state_dir.is_none());
        if chat {
            // A greeting, then an answer to each of the three lines.
            let heard = heard.lock().unwrap().clone();
            assert_eq!(heard.len(), 4, "{heard:?}");
            assert!(heard[0].contains("house"), "{heard:?}");
            assert!(
                heard.iter().all(|l| !l.is_empty() && l != "/quit"),
                "{heard:?}"
            );
            assert_ne!(heard[2], heard[3], "{heard:?}");
        } else if alias != "crazy-eights-v1" {
            assert!(f.outcome.winner.is_some(), "{alias}: {:?}", f.outcome);
        }
        // The server has the session closed, and the house offers the game again.
        let start = tokio::time::Instant::now();
        loop {
            let rec = guest
                .call(
                    "GET",
                    &format!("/api/v1/sessions/{}", f.session_id),
                    None,
                    &[200],
                )
                .await
                .unwrap();
            if s(&rec, "status") == "closed" {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{rec:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let next = wait_open(
            &guest,
            alias,
            &house_pk,
            Some(&post),
            Duration::from_secs(10),
        )
        .await;
        assert_ne!(next, post);
        let old = guest
            .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
            .await
            .unwrap();
        assert_eq!(s(&old, "status"), "matched");
    }
    assert!(!house.is_finished(), "the house stopped");
    assert!(
        warnings.lock().unwrap().is_empty(),
        "{:?}",
        warnings.lock().unwrap()
    );
    house.abort();
    server.abort();
}

fn plan(alias: &str) -> HostPlan {
    let spec = palaver::library::bundled_spec(alias).unwrap().clone();
    let hooks = palaver::protocols::native_hooks(&spec).unwrap();
    HostPlan {
        spec,
        hooks,
        message: String::new(),
        options: Default::default(),
        mode: ControlMode::Autonomous,
        ttl: Duration::from_secs(600),
        upkeep: remote::Upkeep::renew_only(),
        peer: PeerOpts::direct(),
        data_dir: None,
        state_dir: None,
        chat: None,
        observer: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_waiting_host_withdraws_its_invitation() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, server) = start_embedded(&tmp.path().join("db.sqlite")).await.unwrap();
    let c = Client::new(&url, KeyPair::generate()).unwrap();
    ensure_registered(&c, "h").await.unwrap();
    let (ptx, mut prx) = mpsc::unbounded_channel();
    let (cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
    let hc = c.clone();
    // Spawned: the host's future is Send, as the console needs.
    let host = tokio::spawn(async move {
        let progress = move |p: Progress| {
            let _ = ptx.send(p);
        };
        remote::host(&hc, plan("rps-v1"), &progress, async {
            let _ = cancelled.await;
        })
        .await
    });
    let post = match tokio::time::timeout(Duration::from_secs(30), prx.recv()).await {
        Ok(Some(Progress::InvitationOpen { post_id })) => post_id,
        other => panic!("expected the invitation first, got {other:?}"),
    };
    let inv = c
        .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
        .await
        .unwrap();
    assert_eq!(s(&inv, "status"), "open");
    assert_eq!(s(&inv, "message"), "Rock-Paper-Scissors");
    cancel.send(()).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(10), host)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(r, Err(remote::RemoteError::Cancelled)), "{r:?}");
    let inv = c
        .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
        .await
        .unwrap();
    assert_eq!(s(&inv, "status"), "cancelled");
    assert!(
        open_invitations(&c, "rps-v1", &c.keys().public_key)
            .await
            .is_empty()
    );
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_during_a_session_ends_it_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, server) = start_embedded(&tmp.path().join("db.sqlite")).await.unwrap();
    let hc = Client::new(&url, KeyPair::generate()).unwrap();
    let gc = Client::new(&url, KeyPair::generate()).unwrap();
    ensure_registered(&hc, "h").await.unwrap();
    ensure_registered(&gc, "g").await.unwrap();
    // A chat never ends by itself: only the cancel ends it.
    let (ptx, mut prx) = mpsc::unbounded_channel();
    let (cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
    let h = hc.clone();
    let host = tokio::spawn(async move {
        let progress = move |p: Progress| {
            let _ = ptx.send(p);
        };
        remote::host(&h, plan("human-chat-v1"), &progress, async {
            let _ = cancelled.await;
        })
        .await
    });
    let post = match tokio::time::timeout(Duration::from_secs(30), prx.recv()).await {
        Ok(Some(Progress::InvitationOpen { post_id })) => post_id,
        other => panic!("expected the invitation first, got {other:?}"),
    };
    let gdir = tempfile::tempdir().unwrap();
    let guest = {
        let gc = gc.clone();
        let post = post.clone();
        let data_dir = gdir.path().to_owned();
        tokio::spawn(async move {
            let plan = JoinPlan::new(
                post,
                ControlMode::Autonomous,
                PeerOpts::direct(),
                Some(data_dir),
            );
            remote::join(&gc, plan, resolve, &|_| {}, std::future::pending()).await
        })
    };
    loop {
        match tokio::time::timeout(Duration::from_secs(30), prx.recv()).await {
            Ok(Some(Progress::Established { .. })) => break,
            Ok(Some(_)) => {}
            other => panic!("no session: {other:?}"),
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.send(()).unwrap();
    let h = tokio::time::timeout(Duration::from_secs(20), host)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(!h.outcome.completed);
    assert_eq!(h.outcome.reason, remote::CANCELLED_REASON);
    // The host sent its ready frame before the cancel, and the count survives it.
    assert!(h.outcome.frames_sent >= 1, "{:?}", h.outcome);
    let g = tokio::time::timeout(Duration::from_secs(20), guest)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(!g.outcome.completed, "{:?}", g.outcome);
    assert_eq!(g.session_id, h.session_id);
    // The guest wrote its side to its state dir and recorded the end.
    let parent = g.state_dir.expect("a state dir");
    let meta = palaver::session::files::read_json_object(&parent.join("session.json")).unwrap();
    assert_eq!(meta.get("status").and_then(Value::as_str), Some("aborted"));
    let rec = gc
        .call(
            "GET",
            &format!("/api/v1/sessions/{}", h.session_id),
            None,
            &[200],
        )
        .await
        .unwrap();
    // The host tells the server it cancelled before it closes the stream,
    // so the guest's `failed` (it saw the stream end) always comes second.
    assert_eq!(s(&rec, "status"), "cancelled", "{rec:?}");
    server.abort();
}

/// The house keeps a community room open with its bot seated: a newcomer
/// joins it, says hello, and the bot answers in the room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_house_room_is_live_and_its_bot_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = common::rooms::server(&tmp.path().join("db.sqlite"), 15).await;
    let house_w = common::rooms::who(&url, tmp.path(), "house").await;
    let bot_w = common::rooms::who(&url, tmp.path(), "house-bot").await;
    let guest = common::rooms::who(&url, tmp.path(), "newcomer").await;
    let room_dir = tmp.path().join("house-room");
    let house = tokio::spawn(house::run_house_room(
        house_w.client.clone(),
        bot_w.client.clone(),
        room_dir,
        PeerOpts::direct(),
        |_p| {},
    ));
    // The room's invitation shows up, from the house.
    let house_pk = house_w.client.keys().public_key.clone();
    let post = wait_open(
        &guest.client,
        house::HOUSE_ROOM,
        &house_pk,
        None,
        Duration::from_secs(30),
    )
    .await;
    let mut side = common::rooms::join(&guest, house::HOUSE_ROOM, &post);
    let dir = side.state_dir().await;
    // The bot is already seated: the room has started with two members.
    let start = std::time::Instant::now();
    while common::rooms::view(&dir).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the room did not start for the newcomer"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seated = common::rooms::view(&dir)
        .unwrap()
        .get("presence")
        .and_then(Value::as_object)
        .map(|p| p.len());
    assert_eq!(seated, Some(3));
    common::rooms::say(&dir, "hello everyone");
    let bot_seat = 1;
    let start = std::time::Instant::now();
    loop {
        let answered = common::rooms::view(&dir)
            .and_then(|v| v.get("messages").and_then(Value::as_array).cloned())
            .unwrap_or_default()
            .iter()
            .any(|m| {
                m.get("seat").and_then(Value::as_i64) == Some(bot_seat)
                    && m.get_str("kind") == Some("message")
            });
        if answered {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the bot never answered: {:?}",
            common::rooms::messages(&dir)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    side.stop();
    house.abort();
}

/// A console that starts again finds its house's invitations from the last
/// run (their host is gone): it withdraws them before hosting anew, and
/// leaves everyone else's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_house_withdraws_its_leftover_invitations() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = common::rooms::server(&tmp.path().join("db.sqlite"), 15).await;
    let house_w = common::rooms::who(&url, tmp.path(), "house").await;
    let other = common::rooms::who(&url, tmp.path(), "other").await;
    let ep = palaver::net::bind_via(palaver::net::Reach::Direct, &[], None)
        .await
        .unwrap();
    let ticket = palaver::net::ticket(&ep).await;
    let rps = pid("rps-v1");
    for w in [&house_w, &house_w, &other] {
        let body = common::invitation_body(w.client.keys(), &ticket, &rps, "left over");
        common::post_invitation(&w.client, body).await;
    }
    assert_eq!(house::withdraw_leftovers(&house_w.client).await.unwrap(), 2);
    let v = other
        .client
        .call("GET", "/api/v1/invitations?limit=100", None, &[200])
        .await
        .unwrap();
    let open: Vec<String> = v
        .get("results")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|i| s(i, "public_key"))
        .collect();
    assert_eq!(open, vec![other.client.keys().public_key.clone()]);
    assert_eq!(house::withdraw_leftovers(&house_w.client).await.unwrap(), 0);
    palaver::net::close(ep).await;
}

/// The house keeps a landlord table with its own seat and two bots: a
/// newcomer who joins fills the fourth seat, the match plays to its end, and
/// the house opens the next table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_sits_down_at_the_house_table_and_plays_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = common::rooms::server(&tmp.path().join("db.sqlite"), 15).await;
    let house_w = common::rooms::who(&url, tmp.path(), "house").await;
    let me = common::rooms::who(&url, tmp.path(), "me").await;
    let table = tokio::spawn(house::run_house_table(
        house_w.client.clone(),
        house::HOUSE_TABLE,
        tmp.path().join("house-table"),
        PeerOpts::direct(),
        |_p| {},
    ));
    let hk = house_w.client.keys().public_key.clone();
    let post = wait_open(
        &me.client,
        house::HOUSE_TABLE,
        &hk,
        None,
        Duration::from_secs(30),
    )
    .await;
    let mut side = common::rooms::join(&me, house::HOUSE_TABLE, &post);
    let done = tokio::time::timeout(Duration::from_secs(60), &mut side.task)
        .await
        .expect("the table finished")
        .unwrap()
        .unwrap();
    assert!(done.completed, "{done:?}");
    assert!(
        matches!(done.outcome.as_deref(), Some("landlord" | "farmers")),
        "{done:?}"
    );
    // The next table opens for the next newcomer.
    wait_open(
        &me.client,
        house::HOUSE_TABLE,
        &hk,
        Some(&post),
        Duration::from_secs(30),
    )
    .await;
    table.abort();
}
