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
