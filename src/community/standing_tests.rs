//! The pure rules of `standing`: ELO deltas, karma's decay, cursors,
//! capabilities, ciphertext checks and the trust body.

use super::*;

#[test]
fn elo_deltas_follow_the_reference_formula() {
    // Equal ratings: E = 0.5, the winner 16, the loser round(4.0).
    assert_eq!(elo_deltas(1200, 1200), (16, 4));
    // A strong winner gains little; the loser's comfort grows with it.
    let e = expected(1400, 1200);
    assert!((e - 0.759_746_926_647_958_3).abs() < 1e-12);
    assert_eq!(elo_deltas(1400, 1200), (8, 6));
    // An upset gains much and comforts little.
    assert_eq!(elo_deltas(1200, 1400), (24, 2));
}

#[test]
fn karma_decays_with_a_ninety_day_half_life() {
    assert_eq!(KarmaSums::default().karma(), 0);
    assert_eq!(confidence(0), "none");
    let one = KarmaSums::default().add(5, KARMA_EPOCH);
    // (5 + 3·2) / (1 + 2) = 3.667 → 367.
    assert_eq!(one.karma(), 367);
    assert_eq!(confidence(one.n), "low");
    // A 1 given 90 days before a 5 weighs half as much as it.
    let two = KarmaSums::default()
        .add(1, KARMA_EPOCH)
        .add(5, KARMA_EPOCH + KARMA_HALF_LIFE);
    // (0.5·1 + 5 + 6) / (0.5 + 1 + 2) = 11.5 / 3.5 = 3.2857 → 329.
    assert_eq!(two.karma(), 329);
    // Time-invariant: the same gaps a century later give the same karma.
    let later = 100.0 * 365.0 * 86_400.0;
    let shifted = KarmaSums::default()
        .add(1, KARMA_EPOCH + later)
        .add(5, KARMA_EPOCH + later + KARMA_HALF_LIFE);
    assert_eq!(shifted.karma(), 329);
    // Many 5s approach 500, many 1s approach 100.
    let mut s = KarmaSums::default();
    for i in 0..200 {
        s = s.add(5, KARMA_EPOCH + f64::from(i));
    }
    assert!(s.karma() > 490 && s.karma() <= 500);
    assert_eq!(confidence(s.n), "high");
}

#[test]
fn cursors_round_trip_and_refuse_what_they_did_not_make() {
    let c = Cursor {
        offset: 40,
        value: -7,
        key: "ab12".into(),
    };
    let text = c.encode();
    assert!(
        text.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert_eq!(Cursor::decode(&text), Some(c));
    for bad in ["", "!!!", "djE", "0", &URL_SAFE_NO_PAD.encode("v2.1.1.ab")] {
        assert_eq!(Cursor::decode(bad), None, "{bad}");
    }
    assert_eq!(Cursor::decode(&URL_SAFE_NO_PAD.encode("v1.x.1.ab")), None);
    assert_eq!(Cursor::decode(&URL_SAFE_NO_PAD.encode("v1.1.1.a b")), None);
}

#[test]
fn pages_carry_the_rank_offset() {
    let p = Page::of(vec![1, 2, 3], 2, 10, |v| (*v, String::new()));
    assert_eq!(p.entries, vec![1, 2]);
    assert_eq!(p.next.map(|c| (c.offset, c.value)), Some((12, 2)));
    let last = Page::of(vec![1, 2], 2, 10, |v| (*v, String::new()));
    assert_eq!(last.next, None);
}

#[test]
fn capabilities_are_checked_and_deduplicated() {
    let arr = |v: Vec<&str>| Value::Array(v.into_iter().map(Value::from).collect());
    assert_eq!(
        check_capabilities(Some(&arr(vec!["chess", "go:9x9", "chess", "a-b_c.d"]))),
        Ok(vec!["chess".into(), "go:9x9".into(), "a-b_c.d".into()])
    );
    assert_eq!(check_capabilities(Some(&arr(vec![]))), Ok(vec![]));
    let e = check_capabilities(Some(&arr(vec!["ok", "no spaces"]))).unwrap_err();
    assert!(e.contains("capabilities[1]"), "{e}");
    assert!(check_capabilities(Some(&arr(vec![""]))).is_err());
    assert!(check_capabilities(Some(&arr(vec![&"x".repeat(65)]))).is_err());
    assert!(check_capabilities(Some(&arr(vec!["x"; 65]))).is_err());
    assert!(check_capabilities(Some(&Value::from("chess"))).is_err());
    assert!(check_capabilities(None).is_err());
    let mixed = Value::Array(vec![Value::from("a"), Value::from(1)]);
    assert!(
        check_capabilities(Some(&mixed))
            .unwrap_err()
            .contains("[1]")
    );
}

#[test]
fn ciphertexts_are_checked_for_form_only() {
    let blob = |n: usize| {
        let mut b = INBOX_MAGIC.to_vec();
        b.resize(n, 7);
        STANDARD.encode(b)
    };
    assert_eq!(check_ciphertext(&blob(65)), Ok(65));
    assert_eq!(check_ciphertext(&blob(2048)), Ok(2048));
    assert!(
        check_ciphertext(&blob(64))
            .unwrap_err()
            .contains("64 bytes")
    );
    assert!(check_ciphertext(&blob(2049)).is_err());
    assert!(
        check_ciphertext(&STANDARD.encode([0u8; 80]))
            .unwrap_err()
            .contains("magic")
    );
    assert!(
        check_ciphertext("not base64!")
            .unwrap_err()
            .contains("base64")
    );
    // URL-safe base64 is not standard base64.
    let url = URL_SAFE_NO_PAD.encode([b"AGBX1".as_slice(), &[0xfb; 70]].concat());
    assert!(check_ciphertext(&url).is_err());
}

#[test]
fn trust_edges_follow_the_mean_and_the_body_is_deterministic() {
    assert_eq!(trust_weight(9, 2, 0), Some(100));
    assert_eq!(trust_weight(8, 2, 350), Some(350));
    assert_eq!(trust_weight(4, 2, 50), Some(-100));
    assert_eq!(trust_weight(6, 2, 400), None);
    let edges = vec![
        ("b".to_owned(), "a".to_owned(), -100),
        ("a".to_owned(), "b".to_owned(), 250),
    ];
    let mut reversed = edges.clone();
    reversed.reverse();
    let one = trust_body("2026-12-05", "2026-12-05T00:00:00.000Z", edges);
    assert_eq!(
        one,
        trust_body("2026-12-05", "2026-12-05T00:00:00.000Z", reversed)
    );
    let v = crate::json::parse_str(&one).unwrap();
    let meta = v.get("meta").unwrap();
    assert_eq!(meta.get("edges_count").and_then(Value::as_i64), Some(2));
    assert_eq!(
        meta.get("distrust_edges_count").and_then(Value::as_i64),
        Some(1)
    );
    assert_eq!(meta.get("nodes_count").and_then(Value::as_i64), Some(2));
    assert!(meta.get("sha256_self").is_none());
    let edges_text = canonical::to_string(v.get("trust_edges").unwrap());
    assert_eq!(
        meta.get("edges_sha256").and_then(Value::as_str),
        Some(canonical::sha256_hex(edges_text).as_str())
    );
    let first = &v.get("trust_edges").unwrap().as_array().unwrap()[0];
    assert_eq!(first.get("truster").and_then(Value::as_str), Some("a"));
}

#[test]
fn dates_are_checked() {
    assert!(is_date("2026-02-28"));
    assert!(!is_date("2026-02-30"));
    assert!(!is_date("2026-2-28"));
    assert!(!is_date("20260228"));
    assert_eq!(date_of(KARMA_EPOCH + 86_399.0), "2026-01-01");
}
