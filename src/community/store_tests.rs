//! The store's own tests (the routes' are in tests/community.rs), on SQLite
//! and, when `PALAVER_TEST_PG` names a cluster, on PostgreSQL too: the
//! queries are the same, so every answer must be.

use super::SqliteStore;
use super::sqlite::MIGRATIONS;
use super::store::{Agent, NewProtocol, NewSession, Reputation, Res, SessionRow, Store};
use crate::community::groups::{Group, NewGroup};
use crate::community::pg::PgStore;
use crate::community::recent::{Admission, Admit, Refusal};
use crate::obj;

/// A fresh database on the cluster `PALAVER_TEST_PG` names, if it names one
/// (required when `CI` or `PALAVER_REQUIRE_PG` is set).
fn fresh_pg(tag: &str) -> Option<String> {
    let base = match std::env::var("PALAVER_TEST_PG") {
        Ok(u) if !u.trim().is_empty() => u.trim().to_owned(),
        _ => {
            let required = ["CI", "PALAVER_REQUIRE_PG"]
                .iter()
                .any(|v| std::env::var(v).is_ok_and(|x| !x.is_empty()));
            assert!(!required, "PALAVER_TEST_PG is not set but CI is");
            return None;
        }
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!("t_store_{tag}_{}_{nanos}", std::process::id());
    let mut c = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    let (head, _) = base.split_once('?').unwrap_or((&base, ""));
    let cut = head.rfind('/').unwrap();
    Some(format!("{}/{name}", &head[..cut]))
}

/// The stores the test runs on.
/// The two steps of an admission on their own, through [`Store::admit`]
/// (the only way the server admits): a note is an admission without a rate;
/// a token is one at `rate` under a request id never used before.
trait Steps {
    fn note_request(&self, key: &str, request_id: &str, t: i64, now: i64) -> Res<Admission>;
    fn take_token(&self, key: &str, rate: f64, at: f64) -> Res<Admission>;
}

impl<S: Store + ?Sized> Steps for S {
    fn note_request(&self, key: &str, request_id: &str, t: i64, now: i64) -> Res<Admission> {
        let a = Admit {
            key,
            request_id,
            t,
            now,
            rate: None,
            at: 0.0,
        };
        self.admit(&a)
    }
    fn take_token(&self, key: &str, rate: f64, at: f64) -> Res<Admission> {
        static FRESH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = FRESH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let a = Admit {
            key,
            request_id: &format!("fresh-for-a-token-{n}"),
            // Stamped at second 0, so noting it sweeps none of the ids a
            // test noted on its own clock.
            t: 0,
            now: 0,
            rate: Some(rate),
            at,
        };
        self.admit(&a)
    }
}

pub(super) fn stores(tag: &str) -> Vec<Box<dyn Store>> {
    let mut v: Vec<Box<dyn Store>> = vec![Box::new(SqliteStore::memory().unwrap())];
    if let Some(url) = fresh_pg(tag) {
        v.push(Box::new(PgStore::connect(&url, 2).unwrap().0));
    }
    v
}

#[test]
fn migrating_twice_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sqlite");
    let (_, first) = SqliteStore::open_migrated(&path).unwrap();
    assert_eq!((first.from, first.to), (0, MIGRATIONS.len() as i64));
    let (store, again) = SqliteStore::open_migrated(&path).unwrap();
    assert_eq!((again.from, again.to), (first.to, first.to));
    assert_eq!(store.kind(), "sqlite");
    store.ping().unwrap();
}

#[test]
fn reputation_shrinks_few_ratings_towards_the_middle() {
    let none = Reputation::of(0, 0, 0, 0);
    assert_eq!(none.success_rate, None);
    assert_eq!(none.weighted_score, 3.0);
    assert_eq!(none.confidence, "none");
    let one_five = Reputation::of(4, 3, 1, 5);
    assert_eq!(one_five.success_rate, Some(0.75));
    assert!((one_five.weighted_score - 11.0 / 3.0).abs() < 1e-9);
    assert_eq!(one_five.confidence, "low");
    let many_fours = Reputation::of(30, 30, 20, 80);
    assert!(many_fours.weighted_score > one_five.weighted_score);
    assert_eq!(many_fours.confidence, "high");
    assert_eq!(Reputation::of(9, 9, 5, 25).confidence, "medium");
}

fn group(now: f64) -> Group {
    let body = obj! {
        "min_participants" => 2, "max_participants" => 4, "allow_late_join" => true,
        "recovery_mode" => "exact",
    };
    Group::create(
        NewGroup {
            group_id: "g1".into(),
            member_id: "m1".into(),
            post_id: "p1",
            protocol_id: "x",
            host: "k",
            iroh_ticket: "t",
            transport_binding_signature: "s",
            body: &body,
            lease_seconds: 15,
        },
        now,
    )
    .unwrap()
}

#[test]
fn the_gauges_count_open_invitations_and_live_groups() {
    for store in stores("gauges") {
        let now = 1_000_000.0;
        let inv = obj! { "post_id" => "p1", "protocol_id" => "x", "type" => "supply" };
        assert!(
            store
                .add_invitation(&inv, "k", now, now + 300.0, 3)
                .unwrap()
        );
        assert!(store.add_group(&group(now)).unwrap());
        let live = |at: f64| {
            let c = store.gauges(at).unwrap();
            (c.open_invitations, c.live_groups)
        };
        assert_eq!(live(now + 1.0), (1, 1), "{}", store.kind());
        // The leader's lease lapses after 15 s, the invitation after 300 s.
        assert_eq!(live(now + 20.0), (1, 0));
        assert_eq!(live(now + 400.0), (0, 0));
        store.cancel_invitation("p1").unwrap();
        assert_eq!(live(now + 1.0), (0, 1));
    }
}

/// Session `id` on invitation `post` of protocol `a`, host `kh` and guest
/// `kg`, matched at `now`.
fn session_row(id: &str, post: &str, now: f64) -> SessionRow {
    SessionRow {
        session_id: id.into(),
        post_id: post.into(),
        protocol_id: "a".into(),
        host_public_key: "kh".into(),
        guest_public_key: "kg".into(),
        status: "matched".into(),
        winner: None,
        disputed: false,
        iroh_ticket: None,
        created_at: now,
    }
}

#[test]
fn both_databases_answer_every_call_alike() {
    let mut answers = Vec::new();
    for s in stores("alike") {
        let now = 2_000_000.0;
        let mut seen: Vec<String> = Vec::new();
        let mut note = |what: String| seen.push(what);
        // Challenges: kept until taken, single use, too old is none.
        s.add_challenge("n1", 7, now).unwrap();
        note(format!("{:?}", s.challenge("n1", now + 1.0, 60.0).unwrap()));
        note(format!(
            "{:?}",
            s.challenge("n1", now + 100.0, 60.0).unwrap()
        ));
        note(format!("{:?}", s.take_challenge("n1", now, 60.0).unwrap()));
        note(format!("{:?}", s.take_challenge("n1", now, 60.0).unwrap()));
        // Agents, found by key or id; a second registration is refused.
        let a = Agent {
            id: 0,
            public_key: "kh".into(),
            nickname: "host".into(),
            bio: "".into(),
            agent_id: "ah".into(),
            registered_at: now,
        };
        note(format!("{:?}", s.add_agent(&a).unwrap()));
        note(format!("{:?}", s.add_agent(&a).unwrap()));
        note(format!(
            "{:?}",
            s.agent("ah").unwrap().map(|a| a.public_key)
        ));
        // Protocols page in byte order.
        for id in ["b", "B", "a"] {
            let p = NewProtocol {
                protocol_id: id,
                name: "n",
                description: "d",
                kind: "game",
                spec_json: "{}",
                registered_by: "kh",
            };
            note(format!("{:?}", s.add_protocol(&p, now).unwrap()));
        }
        note(format!("{:?}", s.protocols(None, 2).unwrap()));
        let first = s.protocols(None, 2).unwrap();
        note(format!(
            "{:?}",
            s.protocols(first.next.as_ref(), 5).unwrap()
        ));
        note(format!("{:?}", s.protocol("a").unwrap()));
        // Invitations: the limit, the filters, renewal.
        for (i, tag) in ["x", "y", "x"].iter().enumerate() {
            let inv = obj! { "post_id" => format!("p{i}"), "protocol_id" => "a", "tags" => vec![crate::json::Value::from(*tag)] };
            note(format!(
                "{:?}",
                s.add_invitation(&inv, "kh", now + i as f64, now + 10.0, 2)
                    .unwrap()
            ));
        }
        note(format!("{:?}", s.active_invitations("kh", now).unwrap()));
        let listed = |p: Option<&str>, t: Option<&str>| {
            s.invitations(p, None, t, 10, now)
                .unwrap()
                .iter()
                .map(|m| m.get("post_id").and_then(|v| v.as_str()).map(str::to_owned))
                .collect::<Vec<_>>()
        };
        note(format!("{:?}", listed(None, None)));
        note(format!("{:?}", listed(Some("a"), Some("y"))));
        note(format!("{:?}", listed(Some("zz"), None)));
        note(format!(
            "{:?}",
            s.renew_invitation("p0", now + 20.0, now + 30.0, 1)
        ));
        note(format!(
            "{:?}",
            s.renew_invitation("p0", now + 5.0, now + 30.0, 2)
        ));
        note(format!("{:?}", s.renew_invitation("nope", now, now, 2)));
        note(format!("{:?}", s.cancel_invitation("p1").unwrap()));
        note(format!(
            "{:?}",
            s.renew_invitation("p1", now, now + 30.0, 2)
        ));
        // Sessions: one per invitation, results agreed or disputed.
        let row = |id: &str, post: &str| session_row(id, post, now);
        let add = |id: &str, post: &str| -> NewSession {
            s.add_session(&row(id, post), "nonce", "hs", "gs").unwrap()
        };
        note(format!("{:?}", add("s1", "p0")));
        note(format!("{:?}", add("s1", "p0")));
        note(format!("{:?}", add("s2", "p0")));
        note(format!("{:?}", add("s3", "nope")));
        let at_once = |id: &str, post: &str| {
            s.add_session_at_once(&row(id, post), "nonce", "hs", "gs")
                .unwrap()
        };
        note(format!(
            "{:?}",
            (at_once("s4", "p0"), at_once("s4", "nope"))
        ));
        let read = |post: &str, keys| {
            s.invitation_and_agents(post, keys)
                .unwrap()
                .map(|(i, r)| (i.get_str("status").map(str::to_owned), r))
        };
        note(format!("{:?}", read("p0", ["kh", "nobody"])));
        note(format!("{:?}", read("p0", ["k\0", "kg"])));
        note(format!("{:?}", read("nope", ["kh", "kg"])));
        note(format!(
            "{:?}",
            s.report_result("s1", "kh", "host", now).unwrap()
        ));
        note(format!(
            "{:?}",
            s.report_result("s1", "kg", "host", now).unwrap()
        ));
        note(format!(
            "{:?}",
            s.report_result("s1", "kg", "guest", now).unwrap()
        ));
        s.set_transport("s1", "ticket", "sig").unwrap();
        note(format!(
            "{:?}",
            s.close_session("s1", "closed", now).unwrap()
        ));
        note(format!(
            "{:?}",
            s.close_session("s1", "closed", now).unwrap()
        ));
        let got = s.session("s1").unwrap().unwrap();
        note(format!(
            "{} {:?} {} {:?}",
            got.status, got.winner, got.disputed, got.iroh_ticket
        ));
        s.add_feedback("s1", "kg", &obj! { "ok" => true }, now)
            .unwrap();
        note(format!(
            "{:?}",
            s.add_rating("s1", "kg", "kh", 4, "good", now).unwrap()
        ));
        note(format!(
            "{:?}",
            s.add_rating("s1", "kg", "kh", 5, "again", now).unwrap()
        ));
        note(crate::json::canonical::to_string_ordered(
            &crate::json::Value::Object(s.agent_stats("kh").unwrap()),
        ));
        note(format!("{:?}", s.agent_ratings("kh", 5).unwrap().len()));
        // Groups: compare-and-set on the version.
        let g = group(now);
        note(format!("{:?}", s.add_group(&g).unwrap()));
        note(format!("{:?}", s.add_group(&g).unwrap()));
        let (_, v) = s.group("p1", true).unwrap().unwrap();
        note(format!("{:?}", s.save_group(&g, v).unwrap()));
        note(format!("{:?}", s.save_group(&g, v).unwrap()));
        note(format!(
            "{:?}",
            s.group("g1", false).unwrap().map(|(_, v)| v)
        ));
        // The replay window and the rate limit.
        note(format!(
            "{:?}",
            s.note_request("kh", "r1", 100, 100).unwrap()
        ));
        note(format!(
            "{:?}",
            s.note_request("kh", "r1", 100, 101).unwrap()
        ));
        let taken: Vec<_> = (0..3)
            .map(|_| s.take_token("kh", 1.0, 100.0).unwrap())
            .collect();
        note(format!("{taken:?}"));
        // A whole admission (one statement on PostgreSQL): a replayed id
        // takes no token, a rate-limited one stays spent.
        let admit = |id: &str, at: f64| {
            let a = Admit {
                key: "ka",
                request_id: id,
                t: 100,
                now: 100,
                rate: Some(1.0),
                at,
            };
            s.admit(&a).unwrap()
        };
        let admitted = [
            admit("a1", 100.0),
            admit("a1", 100.0),
            admit("a2", 100.0),
            admit("a3", 100.0),
            admit("a3", 101.0),
            admit("a4", 101.0),
        ];
        note(format!("{admitted:?}"));
        answers.push((s.kind(), seen));
    }
    let (_, sqlite) = &answers[0];
    assert_eq!(
        sqlite[sqlite.len() - 3..],
        [
            format!("{:?}", Err::<(), _>(Refusal::Replayed)),
            format!(
                "{:?}",
                vec![Ok(()), Ok(()), Err::<(), _>(Refusal::RateLimited)]
            ),
            format!(
                "{:?}",
                [
                    Ok(()),
                    Err(Refusal::Replayed),
                    Ok(()),
                    Err(Refusal::RateLimited),
                    Err(Refusal::Replayed),
                    Ok(()),
                ]
            ),
        ]
    );
    for (kind, other) in &answers[1..] {
        for (i, (a, b)) in sqlite.iter().zip(other).enumerate() {
            assert_eq!(a, b, "answer {i} differs on {kind}");
        }
        assert_eq!(sqlite.len(), other.len());
    }
}

#[test]
fn request_ids_noted_at_once_are_each_admitted_once() {
    // Notes of one id racing from many threads (on PostgreSQL, each its own
    // statement on its own connection): each id is admitted once.
    for s in stores("notes") {
        let s: std::sync::Arc<dyn Store> = s.into();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut admitted = 0;
                    for i in 0..40 {
                        let shared = format!("r{i}");
                        let own = format!("t{t}-{i}");
                        for id in [&shared, &own, &shared] {
                            if s.note_request("kc", id, 100, 100).unwrap().is_ok() {
                                admitted += 1;
                            }
                        }
                    }
                    admitted
                })
            })
            .collect();
        let admitted: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(admitted, 40 + 8 * 40, "{}", s.kind());
        assert_eq!(
            s.note_request("kc", "r0", 100, 101).unwrap(),
            Err(Refusal::Replayed)
        );
    }
}

#[test]
fn the_async_calls_answer_as_the_blocking_ones() {
    // PostgreSQL's lane runs the same SQL as the blocking calls: both faces
    // see one database, and answer alike. SQLite has no async face.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for s in stores("async") {
        let Some(calls) = s.async_calls() else {
            assert_eq!(s.kind(), "sqlite");
            continue;
        };
        let now = 3_000_000.0;
        for key in ["kh", "kg"] {
            let a = Agent {
                id: 0,
                public_key: key.into(),
                nickname: key.into(),
                bio: "".into(),
                agent_id: format!("a{key}"),
                registered_at: now,
            };
            assert!(s.add_agent(&a).unwrap());
        }
        for (i, tag) in ["x", "y", "x"].iter().enumerate() {
            let inv = obj! { "post_id" => format!("p{i}"), "protocol_id" => "a", "tags" => vec![crate::json::Value::from(*tag)] };
            assert!(
                s.add_invitation(&inv, "kh", now + i as f64, now + 10.0, 3)
                    .unwrap()
            );
        }
        // The browse, every filter, NUL included.
        for (p, k, t, n) in [
            (None, None, None, 10),
            (Some("a"), None, Some("y"), 10),
            (None, None, Some("x"), 1),
            (Some("zz"), None, None, 10),
            (Some("a\0"), None, None, 10),
            (None, Some("play"), None, 10),
        ] {
            let blocking = s.invitations(p, k, t, n, now).unwrap();
            let lane = rt.block_on(calls.invitations(p, k, t, n, now)).unwrap();
            assert_eq!(lane, blocking, "{p:?} {k:?} {t:?} {n}");
        }
        // A session's usual case: once per invitation, on either face.
        let row = |id: &str, post: &str| session_row(id, post, now);
        let at_once = |id: &str, post: &str| {
            let r = row(id, post);
            rt.block_on(calls.add_session_at_once(&r, "nonce", "hs", "gs"))
                .unwrap()
        };
        assert!(at_once("s1", "p0"));
        assert!(!at_once("s1", "p0"), "the same session twice");
        assert!(!at_once("s2", "p0"), "a second session on one invitation");
        assert!(!at_once("s3", "nope"));
        assert!(!at_once("s3", "p\0"));
        assert!(
            !s.add_session_at_once(&row("s4", "p0"), "nonce", "hs", "gs")
                .unwrap()
        );
        assert!(at_once("s5", "p1"));
        let taken = s.invitations(None, None, None, 10, now).unwrap();
        assert_eq!(taken.len(), 1, "{taken:?}");
        // The replay window: one table for both faces; of many notes of one
        // id at once, one is admitted.
        let admission = |id: &'static str, rate: Option<f64>, at: f64| Admit {
            key: "kc",
            request_id: id,
            t: 100,
            now: 100,
            rate,
            at,
        };
        let note = |id: &'static str| rt.block_on(calls.admit(admission(id, None, 0.0))).unwrap();
        assert_eq!(note("r1"), Ok(()));
        assert_eq!(note("r1"), Err(Refusal::Replayed));
        assert_eq!(
            s.note_request("kc", "r1", 100, 100).unwrap(),
            Err(Refusal::Replayed)
        );
        assert_eq!(s.note_request("kc", "r2", 100, 100).unwrap(), Ok(()));
        assert_eq!(note("r2"), Err(Refusal::Replayed));
        let admitted = rt.block_on(async {
            let all = (0..16).map(|_| calls.admit(admission("r3", None, 0.0)));
            futures_util::future::join_all(all).await
        });
        let once = admitted.iter().filter(|a| matches!(a, Ok(Ok(())))).count();
        assert_eq!(once, 1, "{admitted:?}");
        let nul = Admit {
            key: "k\0",
            ..admission("r", Some(1.0), now)
        };
        assert!(rt.block_on(calls.admit(nul)).is_err());
        // The rate bucket: two tokens at one a second, then refused, on
        // either face; a replay takes none, a refused request's id is spent.
        let take = |id: &'static str, at: f64| {
            rt.block_on(calls.admit(admission(id, Some(1.0), at)))
                .unwrap()
        };
        assert_eq!(
            (take("t1", now), take("t1", now)),
            (Ok(()), Err(Refusal::Replayed))
        );
        assert_eq!(take("t2", now), Ok(()));
        assert_eq!(take("t3", now), Err(Refusal::RateLimited));
        assert_eq!(
            s.take_token("kc", 1.0, now).unwrap(),
            Err(Refusal::RateLimited)
        );
        assert_eq!(take("t3", now + 1.0), Err(Refusal::Replayed));
        assert_eq!(take("t4", now + 1.0), Ok(()));
        assert_eq!(
            s.admit(&admission("t4", Some(1.0), now + 1.0)).unwrap(),
            Err(Refusal::Replayed)
        );
    }
}
