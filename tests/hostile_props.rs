//! The fuzz targets `gtl_market` and `community_request` as property tests
//! that run in CI: the same harness (fuzz/fuzz_targets/harness), driven by
//! proptest instead of libFuzzer, with the database compared byte for byte
//! around every refusal.

use crate::common;

#[path = "../fuzz/fuzz_targets/harness/mod.rs"]
mod harness;

use common::dump;
use palaver::json::Value;
use proptest::prelude::*;
use std::cell::Cell;
use std::path::PathBuf;

/// Bytes that look like JSON more often than uniform bytes would.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        common::value().prop_map(|v| palaver::json::canonical::to_string_ordered(&v).into_bytes()),
        "[\\[\\]{}\":,0-9a-z\\\\u. -]{0,120}".prop_map(String::into_bytes),
        Just(br#"{"type":"HELLO","supported_versions":["0.2"]}"#.to_vec()),
        Just(br#"{"type":"JOB_OPEN","a":1,"a":2}"#.to_vec()),
        Just(br#"{"x":"\ud800"}"#.to_vec()),
        Just(br#"{"n":9007199254740993}"#.to_vec()),
    ]
}

struct OnDisk<T> {
    rig: T,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

fn gtl_on_disk() -> OnDisk<harness::Gtl> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("market.sqlite");
    OnDisk {
        rig: harness::Gtl::new(Some(&db)),
        db,
        _dir: dir,
    }
}

fn community_on_disk() -> OnDisk<harness::Community> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("community.sqlite");
    OnDisk {
        rig: harness::Community::new(&db),
        db,
        _dir: dir,
    }
}

thread_local! {
    static N: Cell<u64> = const { Cell::new(0) };
}

fn next() -> u64 {
    N.with(|n| {
        n.set(n.get() + 1);
        n.get()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn gtl_bytes_parse_to_a_canonical_fixed_point_or_are_refused(data in jsonish()) {
        harness::gtl_bytes(&data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn gtl_messages_are_accepted_or_refused_without_writing(
        data in jsonish(),
        pick in any::<usize>(),
        replacement in common::value(),
    ) {
        thread_local! { static G: OnDisk<harness::Gtl> = gtl_on_disk(); }
        G.with(|g| {
            let snapshot = || dump(&g.db);
            harness::gtl_submit(&g.rig, &g.rig.buyer.token, &data, &snapshot);
            harness::gtl_submit(&g.rig, &g.rig.provider.token, &data, &snapshot);
            harness::gtl_mutated(&g.rig, next(), pick, replacement, &snapshot);
        });
    }

    #[test]
    fn community_requests_never_fail_the_server_and_refusals_write_nothing(
        route in 0..harness::ROUTES.len(),
        signing in 0..harness::SIGNINGS,
        body in prop_oneof![
            jsonish(),
            common::value().prop_map(|v| {
                let v = match v { Value::Object(m) => Value::Object(m), other => Value::Object(palaver::obj! { "session_id" => other }) };
                palaver::json::canonical::to_string_ordered(&v).into_bytes()
            }),
        ],
    ) {
        thread_local! { static C: OnDisk<harness::Community> = community_on_disk(); }
        C.with(|c| {
            harness::community_request(&c.rig, route, signing, &body, &|| dump(&c.db));
        });
    }
}

#[test]
fn a_valid_job_is_accepted_and_its_replay_refused_without_writing() {
    // The harness's valid message really is valid, so the mutations above
    // start from an accepted message.
    let g = gtl_on_disk();
    let snapshot = || dump(&g.db);
    let signed = palaver::market::messages::sign(&g.rig.buyer.token, g.rig.job(0)).unwrap();
    let bytes = palaver::json::canonical::to_vec(&Value::Object(signed));
    assert!(harness::gtl_submit(
        &g.rig,
        &g.rig.buyer.token,
        &bytes,
        &snapshot
    ));
    assert!(!harness::gtl_submit(
        &g.rig,
        &g.rig.buyer.token,
        &bytes,
        &snapshot
    ));
    // And every route of the harness exists on the router (a signed,
    // empty request is not a 404 "no route").
    let c = community_on_disk();
    for (i, (method, path)) in harness::ROUTES.iter().enumerate() {
        harness::community_request(&c.rig, i, 0, b"", &|| dump(&c.db));
        let h = palaver::web::auth::headers(&c.rig.keys, method, path, b"", now())
            .map(|(k, v)| (k.to_owned(), v))
            .to_vec();
        let (status, reply) = c.rig.app.request(method, path, &h, Vec::new()).unwrap();
        let text = String::from_utf8_lossy(&reply);
        assert!(
            !text.contains("no route"),
            "{method} {path}: {status} {text}"
        );
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
