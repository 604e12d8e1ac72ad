//! Property tests for the JSON model and canonical JSON.

use crate::common;

use common::value;
use palaver::json::canonical;
use palaver::json::{self, Number, Value, python_float_repr};
use proptest::prelude::*;

/// Structural equality that keeps Python's distinctions we care about in
/// canonical form (1 vs 1.0 vs true; -0.0 vs 0.0); object order ignored.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(Number::Int(x)), Value::Number(Number::Int(y))) => x == y,
        (Value::Number(Number::BigInt(x)), Value::Number(Number::BigInt(y))) => x == y,
        (Value::Number(Number::Float(x)), Value::Number(Number::Float(y))) => {
            x.to_bits() == y.to_bits()
        }
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// canonical → parse gives the same value, and canonical is a fixed point.
    #[test]
    fn canonical_round_trips(v in value()) {
        let bytes = canonical::to_vec(&v);
        prop_assert_eq!(canonical::canonical_len(&v), bytes.len());
        let back = json::parse_bytes(&bytes).expect("canonical output parses");
        prop_assert!(same(&v, &back), "{} vs {}", v, back);
        // Parsed, its objects know whether any string needs an escape.
        prop_assert_eq!(canonical::canonical_len(&back), bytes.len());
        prop_assert_eq!(canonical::to_vec(&back), bytes);
    }

    /// parse → canonical → parse is the identity on any JSON text, whatever
    /// its layout or key order.
    #[test]
    fn parse_canonical_parse_is_identity(v in value()) {
        // A differently laid-out rendering of the same value.
        let pretty = serde_json::to_string_pretty(&v).expect("serialises");
        let parsed = json::parse_str(&pretty);
        // serde_json renders big integers through i128/f64, so only compare
        // when its rendering was exact.
        if let Ok(p) = parsed {
            let again = json::parse_bytes(&canonical::to_vec(&p)).expect("parses");
            prop_assert!(same(&p, &again));
        }
        let c = canonical::to_string(&v);
        let p = json::parse_str(&c).expect("parses");
        prop_assert!(same(&p, &v));
    }

    /// protocol_id hashes the contract while writing it, block by block; it
    /// must equal SHA-256 of the finished contract bytes for any spec, parsed
    /// (key order and escapes known) or built (nothing known).
    #[test]
    fn protocol_id_is_the_hash_of_the_contract_bytes(
        parts in prop::collection::vec(value(), 7),
        mode in prop::sample::select(vec!["free", "simultaneous_round", "authoritative_group", "authoritative_realtime", ""]),
    ) {
        let keys = ["messages", "rules", "choices", "commit_reveal", "parameters", "timing", "round"];
        let mut spec = json::Map::new();
        let mut flow = json::Map::new();
        flow.insert("mode", Value::from(mode));
        for (k, v) in keys.iter().zip(parts) {
            if *k == "round" {
                flow.insert("phases", v.clone());
                for sub in ["round", "group", "realtime"] {
                    flow.insert(sub, v.clone());
                }
            } else {
                spec.insert(*k, v);
            }
        }
        spec.insert("flow", Value::Object(flow));
        let built = Value::Object(spec);
        let parsed = json::parse_str(&canonical::to_string(&built)).expect("parses");
        for v in [&built, &parsed] {
            let m = v.as_object().expect("object");
            let bytes = palaver::spec::contract_bytes(m);
            prop_assert_eq!(palaver::spec::protocol_id_of(m), canonical::sha256_hex(&bytes));
        }
    }

    /// Python-style float repr always reads back as the same float.
    #[test]
    fn float_repr_round_trips(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let s = python_float_repr(f);
        let back: f64 = s.parse().expect("parses as f64");
        prop_assert_eq!(back.to_bits(), f.to_bits(), "{}", s);
        prop_assert!(s.contains('.') || s.contains('e'), "{} must read back as a float", s);
    }

    /// The parser never panics on arbitrary bytes.
    #[test]
    fn parser_total_on_bytes(data in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = json::parse_bytes(&data);
    }
}
