//! The SQLite store's own tests (the routes' are in tests/community.rs).

use super::{Reputation, SqliteStore, Store};

#[test]
fn migrating_twice_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sqlite");
    let (_, first) = SqliteStore::open_migrated(&path).unwrap();
    assert_eq!((first.from, first.to), (0, super::MIGRATIONS.len() as i64));
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

#[test]
fn the_gauges_count_open_invitations_and_live_groups() {
    use crate::community::groups::{Group, NewGroup};
    use crate::obj;
    let store = SqliteStore::memory().unwrap();
    let now = 1_000_000.0;
    let inv = obj! { "post_id" => "p1", "protocol_id" => "x", "type" => "supply" };
    assert!(
        store
            .add_invitation(&inv, "k", now, now + 300.0, 3)
            .unwrap()
    );
    let body = obj! {
        "min_participants" => 2, "max_participants" => 4, "allow_late_join" => true,
        "recovery_mode" => "exact",
    };
    let g = Group::create(
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
    .unwrap();
    assert!(store.add_group(&g).unwrap());
    let live = |at: f64| {
        let c = store.gauges(at).unwrap();
        (c.open_invitations, c.live_groups)
    };
    assert_eq!(live(now + 1.0), (1, 1));
    // The leader's lease lapses after 15 s, the invitation after 300 s.
    assert_eq!(live(now + 20.0), (1, 0));
    assert_eq!(live(now + 400.0), (0, 0));
    store.cancel_invitation("p1").unwrap();
    assert_eq!(live(now + 1.0), (0, 1));
}
