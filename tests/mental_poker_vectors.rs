//! The mental_poker crypto core against fixed vectors produced by the
//! reference client (tests/data/aigenora/mental_poker/vectors.json): deck
//! blobs, OT contexts, FDH, tokens, token keys, sealed entries, blinding,
//! the RSA public form, the transcript root and the receipt signature.

use num_bigint::BigUint;
use palaver::engine::mental_poker::keys::{RsaKey, RsaPub};
use palaver::engine::mental_poker::num::{from_hex, from_hex_array, hex512, int_from_hex};
use palaver::engine::mental_poker::ot::{self, Table};
use palaver::engine::mental_poker::transcript::Transcript;
use palaver::engine::mental_poker::{CryptoError, deck, receipt};
use palaver::identity::KeyPair;
use palaver::json::{self, Map, Number, Value};
use std::path::Path;

fn vectors() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aigenora/mental_poker/vectors.json");
    json::parse_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get_str(key)
        .unwrap_or_else(|| panic!("vector field {key} missing"))
}

fn int(v: &Value, key: &str) -> BigUint {
    int_from_hex(s(v, key)).unwrap()
}

fn key(v: &Value) -> RsaKey {
    let rsa = v.get("rsa").unwrap();
    let e = BigUint::from(rsa.get("e").unwrap().as_i64().unwrap() as u64);
    RsaKey::from_parts(
        int(rsa, "n"),
        e,
        &int(rsa, "d"),
        vec![int(rsa, "p"), int(rsa, "q")],
    )
    .unwrap()
}

#[test]
fn deck_blobs_match_the_reference() {
    let v = vectors();
    let d = v.get("deck").unwrap();
    let card = d.get("card").unwrap().as_array().unwrap();
    let card = [0, 1].map(|i| card[i].as_i64().unwrap() as u8);
    let k_inner = from_hex_array(s(d, "k_inner")).unwrap();
    let k_outer = from_hex_array(s(d, "k_outer")).unwrap();
    let blob_a = deck::seal_inner(
        &k_inner,
        card,
        &from_hex_array(s(d, "pad_hex")).unwrap(),
        &from_hex_array(s(d, "inner_nonce")).unwrap(),
    );
    assert_eq!(hex::encode(blob_a), s(d, "blob_a"));
    let blob_b = deck::seal_outer(
        &k_outer,
        &blob_a,
        &from_hex_array(s(d, "outer_nonce")).unwrap(),
    );
    assert_eq!(hex::encode(blob_b), s(d, "blob_b"));
    let back = deck::open_outer(&k_outer, &from_hex(s(d, "blob_b")).unwrap()).unwrap();
    assert_eq!(deck::open_inner(&k_inner, &back).unwrap(), card);
    assert_eq!(deck::open_inner(&k_outer, &back), Err(CryptoError::Open));
}

#[test]
fn ot_items_match_the_reference() {
    let v = vectors();
    let key = key(&v);
    let public = key.public();
    let (pid, sid) = (s(&v, "protocol_id"), s(&v, "session_id"));
    let labels = v.get("labels").unwrap().as_array().unwrap();
    let mut counters = Vec::new();
    for l in labels {
        let label = s(l, "label");
        let table = match l.get("sender_role").unwrap().as_i64() {
            Some(1) => Table::Host,
            _ => Table::Guest,
        };
        let ctx = ot::context(pid, sid, table, label);
        assert_eq!(hex::encode(&ctx), s(l, "ctx_hex"), "{label}");
        let (counter, h) = ot::fdh(&ctx, public);
        counters.push(counter);
        assert_eq!(
            i64::from(counter),
            l.get("fdh_counter").unwrap().as_i64().unwrap()
        );
        assert_eq!(hex512(&h), s(l, "fdh_h"), "{label}");
        let token = key.private_op(&h);
        assert_eq!(hex512(&token), s(l, "token"), "{label}");
        assert!(ot::verify_token(&ctx, &token, public));
        assert!(!ot::verify_token(&ctx, &(&token + 1u8), public));
        assert!(!ot::verify_token(&ctx, &(public.n() + &token), public));
        let tk = ot::token_key(&token, &ctx).unwrap();
        assert_eq!(hex::encode(tk), s(l, "token_key_hex"), "{label}");
        let payload = from_hex_array(s(l, "payload_hex")).unwrap();
        let sealed = ot::seal_entry(&tk, &[0; 12], &payload, &ctx);
        assert_eq!(
            hex::encode(sealed),
            s(l, "sealed_with_zero_nonce_hex"),
            "{label}"
        );
        assert_eq!(ot::open_entry(&tk, &sealed, &ctx).unwrap(), payload);
        let r = int(l, "r");
        let z = ot::blind(&h, &r, public);
        assert_eq!(hex512(&z), s(l, "z"), "{label}");
        let y = key.private_op(&z);
        assert_eq!(hex512(&y), s(l, "y"), "{label}");
        assert_eq!(ot::unblind(&y, &r, public).unwrap(), token);
        assert!(ot::verify_witness(&z, &ctx, &r, public));
        assert!(!ot::verify_witness(&z, &ctx, &(&r + 1u8), public));
        assert!(!ot::verify_witness(&z, &ctx, &BigUint::ZERO, public));
        let other = ot::context(pid, sid, table, "h-99");
        assert!(!ot::verify_witness(&z, &other, &r, public));
    }
    assert_eq!(counters, [1, 0, 2, 0]);
}

#[test]
fn rsa_public_form_and_strict_parse() {
    let v = vectors();
    let key = key(&v);
    let text = key.public().to_json_string();
    assert_eq!(text.len(), 530);
    assert_eq!(
        text,
        format!(
            "{{\"e\":65537,\"n\":\"{}\"}}",
            s(v.get("rsa").unwrap(), "n")
        )
    );
    let parsed = RsaPub::parse(&json::parse_str(&text).unwrap()).unwrap();
    assert_eq!(&parsed, key.public());
    let n = key.public().n().clone();
    let refuse = |e: u64, n: &BigUint| {
        let text = format!("{{\"e\":{e},\"n\":\"{}\"}}", n.to_str_radix(16));
        match RsaPub::parse(&json::parse_str(&text).unwrap()) {
            Err(CryptoError::Rsa(msg)) => msg,
            other => panic!("accepted {other:?}"),
        }
    };
    assert_eq!(refuse(3, &n), "RSA public exponent must be 65537, got 3");
    let negative = json::parse_str(r#"{"e":-3,"n":"ab"}"#).unwrap();
    assert_eq!(
        RsaPub::parse(&negative),
        Err(CryptoError::Rsa(
            "RSA public exponent must be 65537, got -3".into()
        ))
    );
    assert_eq!(
        refuse(65537, &(&n >> 1usize)),
        "RSA modulus must be 2048-bit, got 2047"
    );
    assert_eq!(
        refuse(65537, &(&n << 1usize)),
        "RSA modulus must be 2048-bit, got 2049"
    );
    assert_eq!(
        refuse(65537, &(&n + 1u8)),
        "RSA modulus must be an odd integer > 1"
    );
    for bad in [
        r#"{"e":65537,"n":"xyz"}"#,
        r#"{"e":65537,"n":""}"#,
        r#"{"e":65537}"#,
        r#"{"e":"65537","n":"ab"}"#,
        r#"{"e":65537.0,"n":"ab"}"#,
        r#"[1]"#,
    ] {
        assert!(
            matches!(
                RsaPub::parse(&json::parse_str(bad).unwrap()),
                Err(CryptoError::Rsa(_))
            ),
            "{bad}"
        );
    }
    // Wrong primes are refused, not trusted.
    let rsa = v.get("rsa").unwrap();
    let e = BigUint::from(65537u32);
    let wrong = RsaKey::from_parts(n, e, &int(rsa, "d"), vec![int(rsa, "p"), int(rsa, "p")]);
    assert!(matches!(wrong, Err(CryptoError::Rsa(_))));
}

#[test]
fn transcript_root_and_receipt_match_the_reference() {
    let v = vectors();
    let t = v.get("transcript").unwrap();
    let mut transcript = Transcript::new();
    for event in t.get("events").unwrap().as_array().unwrap() {
        let pair = event.as_array().unwrap();
        let payload = pair[1].as_object().unwrap().clone();
        transcript
            .append(pair[0].as_str().unwrap(), payload)
            .unwrap();
    }
    // The vector really carries integers too big for 64 bits.
    let z = t.get("events").unwrap().as_array().unwrap()[1]
        .as_array()
        .unwrap()[1]
        .get("z");
    assert!(matches!(z, Some(Value::Number(Number::BigInt(_)))));
    assert_eq!(transcript.root_hex(), s(t, "root_hex"));

    // A rebuilt (unparsed) map gives the same bytes as the parsed one.
    let mut rebuilt = Transcript::new();
    for event in t.get("events").unwrap().as_array().unwrap() {
        let pair = event.as_array().unwrap();
        let mut m = Map::new();
        for (k, val) in pair[1].as_object().unwrap().iter() {
            m.insert(k, val.clone());
        }
        rebuilt.append(pair[0].as_str().unwrap(), m).unwrap();
    }
    assert_eq!(rebuilt.root(), transcript.root());

    let kp = KeyPair::from_seed(from_hex_array(s(t, "ed25519_seed_hex")).unwrap());
    assert_eq!(kp.public_key, s(t, "ed25519_public_hex"));
    let root = transcript.root();
    let sig = receipt::sign(&kp, &root);
    assert_eq!(sig, s(t, "signature_over_root_digest_hex"));
    assert!(receipt::verify(&kp.public_key, &root, &sig));
    let mut other = root;
    other[0] ^= 1;
    assert!(!receipt::verify(&kp.public_key, &other, &sig));
}
