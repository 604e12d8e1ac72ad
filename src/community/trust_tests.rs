use super::*;

fn e(truster: &str, trustee: &str, weight: i64) -> Edge {
    Edge {
        truster: truster.into(),
        trustee: trustee.into(),
        weight,
    }
}

#[test]
fn a_chain_halves_per_hop_and_stops_at_the_depth() {
    let edges = [e("b", "a", 100), e("c", "b", 100), e("d", "c", 100)];
    let s = trust_score("a", &edges, 2, DECAY);
    assert_eq!(s.score, 75);
    assert_eq!(
        s.direct,
        vec![Direct {
            truster: "b".into(),
            weight: 100
        }]
    );
    assert_eq!(
        s.paths
            .iter()
            .map(|p| (p.truster.as_str(), p.hop, p.contribution))
            .collect::<Vec<_>>(),
        [("b", 1, 50), ("c", 2, 25)]
    );
    assert_eq!(trust_score("a", &edges, 3, DECAY).score, 88); // 87.5 → 88
    assert_eq!(trust_score("a", &edges, 0, DECAY).score, 0);
}

#[test]
fn cycles_end_and_distrust_subtracts() {
    let edges = [
        e("b", "a", 10),
        e("a", "b", 10),
        e("c", "a", -6),
        e("b", "c", 4),
        e("a", "a", 9),
    ];
    let s = trust_score("a", &edges, 6, DECAY);
    // b at hop 1 (+5), c at hop 1 (-3); then b's and c's trusters are
    // all seen already.
    assert_eq!(s.score, 2);
    assert_eq!(s.direct.len(), 3);
    assert_eq!(s.paths.len(), 2);
}

#[test]
fn halves_round_to_even_like_python() {
    assert_eq!(py_round(0.5), 0);
    assert_eq!(py_round(1.5), 2);
    assert_eq!(py_round(2.5), 2);
    assert_eq!(py_round(-2.5), -2);
    assert_eq!(py_round(-3.5), -4);
    let s = trust_score("a", &[e("b", "a", 5), e("c", "a", 1)], 1, DECAY);
    assert_eq!(s.score, 3);
    assert_eq!(s.paths[0].contribution, 2);
    assert_eq!(s.paths[1].contribution, 0);
}

#[test]
fn paths_keep_the_ten_largest_ties_in_order() {
    let edges: Vec<Edge> = (0..12)
        .map(|i| e(&format!("t{i}"), "a", if i == 11 { -40 } else { 2 }))
        .collect();
    let s = trust_score("a", &edges, 1, DECAY);
    assert_eq!(s.paths.len(), 10);
    assert_eq!(s.paths[0].truster, "t11");
    assert_eq!(s.paths[1].truster, "t0");
    assert_eq!(s.paths[9].truster, "t8");
}

#[test]
fn snapshots_are_checked_against_their_edge_digest() {
    let edges = r#"[{"truster":"b","trustee":"a","weight":400}]"#;
    let sha = canonical::sha256_hex(canonical::to_vec(&json::parse_str(edges).unwrap()));
    let good = format!(
        r#"{{"meta":{{"snapshot_date":"2026-12-05","edges_sha256":"{sha}"}},"trust_edges":{edges}}}"#
    );
    let s = Snapshot::parse(good.as_bytes()).unwrap();
    assert_eq!(s.date(), Some("2026-12-05"));
    assert_eq!(s.edges, vec![e("b", "a", 400)]);
    let bad = good.replace("400", "401");
    assert!(matches!(
        Snapshot::parse(bad.as_bytes()),
        Err(SnapshotError::Digest { .. })
    ));
    // No digest: accepted as the reference accepts it.
    assert!(
        Snapshot::parse(br#"{"trust_edges":[{"truster":"b","trustee":"a","weight":2.9}]}"#)
            .unwrap()
            .edges[0]
            .weight
            == 2
    );
    assert_eq!(Snapshot::parse(b"[]"), Err(SnapshotError::NoEdges));
    assert!(matches!(
        Snapshot::parse(br#"{"trust_edges":[{"truster":"b"}]}"#),
        Err(SnapshotError::BadEdge { index: 0, .. })
    ));
}

#[test]
fn only_real_dates_name_files() {
    assert!(is_date("2026-12-05"));
    assert!(!is_date("2026-02-30"));
    assert!(!is_date("../../etc/x"));
    assert!(!is_date("2026-1-051"));
    assert!(!is_date("+026-12-05"));
}

#[test]
fn a_failed_fetch_falls_back_to_the_newest_cache_then_to_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Nothing listens on port 9 of loopback.
    let f = rt.block_on(fetch(dir.path(), Some("http://127.0.0.1:9"), None));
    assert_eq!(f.status, Freshness::Unavailable);
    assert!(f.snapshot.is_none() && !f.notes.is_empty());
    let cache = dir.path().join(CACHE_DIR);
    std::fs::create_dir_all(&cache).unwrap();
    let snap = |w: i64| {
        format!(r#"{{"meta":{{}},"trust_edges":[{{"truster":"b","trustee":"a","weight":{w}}}]}}"#)
    };
    std::fs::write(cache.join("trust-2026-12-01.json"), snap(1)).unwrap();
    std::fs::write(cache.join("trust-2026-12-03.json"), snap(3)).unwrap();
    std::fs::write(cache.join("trust-2026-12-04.json"), "not json").unwrap();
    std::fs::write(cache.join("trust-9999-99-99.json"), snap(9)).unwrap();
    let f = rt.block_on(fetch(
        dir.path(),
        Some("http://127.0.0.1:9"),
        Some("2026-12-05"),
    ));
    assert_eq!(f.status, Freshness::Stale);
    assert_eq!(f.snapshot.unwrap().edges[0].weight, 3);
    assert!(f.source.unwrap().ends_with("trust-2026-12-03.json"));
    // A date that is not one is refused before any request or file name.
    let f = rt.block_on(fetch(dir.path(), Some("http://127.0.0.1:9"), Some("../x")));
    assert!(f.notes[0].contains("not a date"), "{:?}", f.notes);
}
