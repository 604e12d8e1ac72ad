//! The shared deck's tests (deck.rs keeps the rules).

use super::*;

fn faces(n: usize) -> Vec<Map> {
    (0..n)
        .map(|i| obj! { "rank" => format!("{i}"), "value" => i, "suit" => "s" })
        .collect()
}

fn member(seat: i64, pk: &str) -> Value {
    Value::Object(obj! { "public_key" => pk, "seat" => seat, "status" => "active" })
}

#[test]
fn a_deal_conserves_every_card_and_refuses_what_does_not_fit() {
    let members = [member(1, "b"), member(0, "a")];
    let mut deck = create(&faces(10), &members, 3, "seed", 2).unwrap();
    assert_eq!(hand(&deck, "a").len(), 3);
    assert_eq!(deck.get("draw_pile").unwrap().as_array().unwrap().len(), 14);
    assert_eq!(
        deck.get("hands")
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    let a = hand(&deck, "a");
    take_from_hand(&mut deck, "a", &a[..1]).unwrap();
    assert!(
        validate(&deck)
            .unwrap_err()
            .starts_with("deck conservation failed (missing=['")
    );
    discard(&mut deck, &a[..1]).unwrap();
    assert_eq!(
        take_from_hand(&mut deck, "a", &a[..1]).unwrap_err(),
        "card is not in the player's hand"
    );
    assert_eq!(
        create(&faces(2), &members, 3, "s", 1).unwrap_err(),
        "initial deal exceeds the shared deck"
    );
    assert_eq!(
        create(&faces(2), &members, 1, "", 1).unwrap_err(),
        "seed must be 1-256 UTF-8 bytes"
    );
}

/// A card's id as the reference writes it: the canonical JSON of its
/// identity, hashed.
fn reference_id(seed: &str, copy: usize, index: usize, face: &Map) -> String {
    let identity = obj! {
        "seed" => seed, "copy" => copy, "face_index" => index, "face" => Value::Object(face.clone()),
    };
    crate::json::canonical::sha256_hex(to_string(&Value::Object(identity)))[..24].to_owned()
}

/// The shuffle as the reference writes it: a digest per swap, reduced
/// byte by byte.
fn reference_shuffle(mut values: Vec<String>, seed: &str) -> Vec<String> {
    for (counter, index) in (1..values.len()).rev().enumerate() {
        let digest = Sha256::digest(format!("aigenora-shared-deck-v1:{seed}:{counter}"));
        let m = index as u128 + 1;
        let target = digest
            .iter()
            .fold(0u128, |r, &b| (r * 256 + u128::from(b)) % m);
        values.swap(index, target as usize);
    }
    values
}

#[test]
fn ids_and_shuffle_are_the_references() {
    let mut odd = faces(12);
    odd.push(obj! { "z" => "quote \" back \\ tab \t é", "a" => Value::Null, "m" => 1.5 });
    odd.push(obj! { "copy" => 9, "x" => 1 });
    odd.push(obj! { "card_id" => "mine", "copy" => Value::Null });
    odd.push(obj! { "nested" => Value::Object(obj! { "b" => 1, "a" => Value::Array(vec![Value::from("x")]) }) });
    let members = [member(0, "a"), member(1, "b")];
    for seed in [
        "seed",
        "with \"quote\" and \\ and \u{1}",
        "ünï 🃏",
        "bench-3:2:0",
    ] {
        let deck = create(&odd, &members, 2, seed, 3).unwrap();
        let catalog = deck.get("catalog").unwrap().as_object().unwrap();
        let mut want = Vec::new();
        for copy in 0..3 {
            for (index, face) in odd.iter().enumerate() {
                let id = reference_id(seed, copy, index, face);
                let card = catalog.get(&id).unwrap().as_object().unwrap();
                let mut expected = face.clone();
                expected.insert("card_id", Value::from(id.as_str()));
                expected.insert("copy", Value::from(copy));
                assert_eq!(
                    crate::json::canonical::to_string_ordered(&Value::Object(card.clone())),
                    crate::json::canonical::to_string_ordered(&Value::Object(expected))
                );
                want.push(id);
            }
        }
        assert_eq!(catalog.keys().collect::<Vec<_>>(), want);
        let mut pile = reference_shuffle(want, seed);
        let mut dealt = [Vec::new(), Vec::new()];
        for _ in 0..2 {
            for hand in dealt.iter_mut() {
                hand.push(pile.pop().unwrap());
            }
        }
        assert_eq!(ids_of(deck.get("draw_pile")), pile);
        assert_eq!(hand(&deck, "a"), dealt[0]);
        assert_eq!(hand(&deck, "b"), dealt[1]);
    }
    for n in [0, 1, 2, 52, 108, 300, 1000] {
        let v: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        assert_eq!(shuffle(v.clone(), "s:1:0"), reference_shuffle(v, "s:1:0"));
    }
    let digest = Sha256::digest(b"mod");
    for m in [
        1,
        2,
        3,
        52,
        255,
        256,
        65_537,
        u64::from(u32::MAX),
        1 << 32,
        u64::MAX,
    ] {
        let want = digest
            .iter()
            .fold(0u128, |r, &b| (r * 256 + u128::from(b)) % u128::from(m));
        assert_eq!(u128::from(mod_be(&digest, m)), want, "m = {m}");
    }
    // The small moduli's reciprocal path, against the bytewise fold.
    for k in 0..64u32 {
        let digest = Sha256::digest(k.to_be_bytes());
        for m in (2..=600).chain([4_095, 4_096, 65_521, 65_534, 65_535, 65_536]) {
            let want = digest
                .iter()
                .fold(0u128, |r, &b| (r * 256 + u128::from(b)) % u128::from(m));
            assert_eq!(u128::from(mod_be(&digest, m)), want, "m = {m}");
        }
    }
}

#[test]
fn a_round_of_the_deal_draws_as_one_card_each() {
    let members = [member(0, "a"), member(1, "b"), member(2, "c")];
    let mut one = create(&faces(20), &members, 0, "deal", 1).unwrap();
    let mut each = one.clone();
    for pk in ["a", "c", "a"] {
        draw(&mut one, pk, 1).unwrap();
    }
    draw_each(&mut each, &["a", "c", "a"]).unwrap();
    assert_eq!(one, each);
    assert_eq!(
        draw_each(&mut each, &["a", "x"]).unwrap_err(),
        "unknown hand owner"
    );
    let mut small = create(&faces(2), &members, 0, "deal", 1).unwrap();
    assert_eq!(
        draw_each(&mut small, &["a", "b", "c"]).unwrap_err(),
        "shared draw pile does not have enough cards"
    );
}

#[test]
fn moves_to_zones_are_draws_to_zone_in_turn() {
    let members = [member(0, "a")];
    let mut one = create(&faces(20), &members, 2, "zones", 1).unwrap();
    let mut all = one.clone();
    let burnt = draw_to_zone(&mut one, "burn", "table", 1).unwrap();
    let shown = draw_to_zone(&mut one, "board", "table", 3).unwrap();
    let moved = draw_to_zones(&mut all, "table", &[("burn", 1), ("board", 3)]).unwrap();
    assert_eq!(moved, [burnt, shown]);
    assert_eq!(one, all);
    assert_eq!(
        draw_to_zones(&mut all, "table", &[("burn", 1), ("board", 99)]).unwrap_err(),
        "zone draw count must be between 1 and 64"
    );
}

#[test]
fn conservation_is_checked_on_small_and_large_decks() {
    let members = [member(0, "a"), member(1, "b")];
    for (faces_n, copies) in [(10, 1), (64, 2), (70, 2)] {
        let deck = create(&faces(faces_n), &members, 3, "check", copies).unwrap();
        assert_eq!(validate(&deck), Ok(()));
        let ids = ids_of(deck.get("draw_pile"));
        let with_pile = |pile: Vec<Value>| {
            let mut d = deck.clone();
            *d.get_mut("draw_pile").unwrap() = Value::Array(pile);
            validate(&d).unwrap_err()
        };
        let mut twice: Vec<Value> = ids.iter().map(|i| Value::from(i.as_str())).collect();
        twice[1] = twice[0].clone();
        assert_eq!(
            with_pile(twice),
            "a card appears in more than one deck zone"
        );
        let mut stranger: Vec<Value> = ids.iter().map(|i| Value::from(i.as_str())).collect();
        stranger[0] = Value::from("zz");
        assert_eq!(
            with_pile(stranger),
            format!(
                "deck conservation failed (missing=['{}'], unknown=['zz'])",
                ids[0]
            )
        );
        let mut number: Vec<Value> = ids.iter().map(|i| Value::from(i.as_str())).collect();
        number[0] = Value::from(7);
        assert_eq!(
            with_pile(number),
            "a card appears in more than one deck zone"
        );
        let short: Vec<Value> = ids[1..].iter().map(|i| Value::from(i.as_str())).collect();
        assert!(with_pile(short).starts_with("deck conservation failed (missing=['"));
        let mut wrong_total = deck.clone();
        wrong_total.insert("total_cards", Value::from(1));
        assert_eq!(
            validate(&wrong_total).unwrap_err(),
            "total_cards does not match catalog size"
        );
    }
}

#[test]
fn the_shuffle_is_a_permutation_fixed_by_the_seed() {
    let v: Vec<String> = (0..50).map(|i| i.to_string()).collect();
    let a = shuffle(v.clone(), "x");
    assert_eq!(a, shuffle(v.clone(), "x"));
    assert_ne!(a, shuffle(v.clone(), "y"));
    let mut sorted = a.clone();
    sorted.sort();
    let mut want = v;
    want.sort();
    assert_eq!(sorted, want);
}
