use super::*;
use crate::json::parse_str;

fn v(s: &str) -> Value {
    parse_str(s).unwrap()
}

fn nested(levels: usize, leaf: Value) -> Value {
    (0..levels).fold(leaf, |acc, _| Value::Array(vec![acc]))
}

#[test]
fn limits_are_the_references() {
    // Sixteen levels below the root hold a scalar; seventeen do not.
    assert!(validate_json(&nested(16, Value::from(1))).is_ok());
    assert_eq!(walk(&nested(16, Value::from(1)), 0), Ok(16));
    assert_eq!(
        validate_json(&nested(17, Value::from(1)))
            .unwrap_err()
            .to_string(),
        "JSON nesting exceeds the group protocol limit"
    );
    // An empty container at level 16 is fine, a key at level 17 is not.
    assert!(validate_json(&nested(16, Value::Array(vec![]))).is_ok());
    assert!(validate_json(&nested(15, v(r#"{"k":1}"#))).is_ok());
    assert!(validate_json(&nested(16, v(r#"{"k":1}"#))).is_err());
    assert_eq!(
        validate_json(&v(r#"{"a":1.5}"#)).unwrap_err().to_string(),
        "floating-point values are not allowed in group state"
    );
    assert_eq!(
        validate_json(&Value::Array(vec![Value::Null; 1025]))
            .unwrap_err()
            .to_string(),
        "array exceeds the group protocol limit"
    );
    let big: Map = (0..1025).map(|i| (format!("{i}"), Value::Null)).collect();
    assert_eq!(
        validate_json(&Value::Object(big)).unwrap_err().to_string(),
        "object exceeds the group protocol limit"
    );
    assert!(validate_json(&Value::from("é".repeat(32768))).is_ok());
    assert_eq!(
        validate_json(&Value::from("é".repeat(32769)))
            .unwrap_err()
            .to_string(),
        "string exceeds the group protocol limit"
    );
    // The first problem in the reference's visiting order is reported.
    assert_eq!(
        validate_json(&Value::Array(vec![
            Value::from(1.5),
            nested(17, Value::from(1))
        ]))
        .unwrap_err()
        .to_string(),
        "floating-point values are not allowed in group state"
    );
}

#[test]
fn an_object_that_passed_is_checked_again_where_it_could_fail() {
    // Two levels below the object: it passes at the root, again from what
    // it remembers, and deeper down it fails as a fresh one would.
    let obj = v(r#"{"a":{"b":[1]}}"#);
    assert_eq!(walk(&obj, 0), Ok(3));
    assert_eq!(walk(&obj, 0), Ok(3));
    assert_eq!(walk(&nested(13, obj.clone()), 0), Ok(16));
    assert_eq!(
        validate_json(&nested(14, obj.clone()))
            .unwrap_err()
            .to_string(),
        "JSON nesting exceeds the group protocol limit"
    );
    // A change below it is walked afresh: the float is found.
    let mut changed = obj.clone();
    let a = changed.as_object_mut().unwrap().get_mut("a").unwrap();
    a.as_object_mut()
        .unwrap()
        .insert("c", Value::Number(crate::json::Number::Float(0.5)));
    assert_eq!(
        validate_json(&changed).unwrap_err().to_string(),
        "floating-point values are not allowed in group state"
    );
    assert_eq!(walk(&obj, 0), Ok(3));
}

#[test]
fn canonical_and_hash() {
    let x = v(r#"{"b":[1,"é\n"],"a":null,"c":{"z":true,"y":-5}}"#);
    assert_eq!(
        String::from_utf8(canonical(&x).unwrap()).unwrap(),
        "{\"a\":null,\"b\":[1,\"é\\n\"],\"c\":{\"y\":-5,\"z\":true}}"
    );
    // hashlib.sha256(b'{}').hexdigest()
    assert_eq!(
        json_hash(&v("{}")).unwrap(),
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
    let m = x.as_object().unwrap();
    assert_eq!(
        canonical_fields(m, &["c", "b", "a", "q"]).unwrap(),
        canonical(&v(
            r#"{"c":{"z":true,"y":-5},"b":[1,"é\n"],"a":null,"q":null}"#
        ))
        .unwrap()
    );
    let members = canonical_members(m, &["b"]).unwrap();
    assert_eq!(
        compose_members(&members),
        canonical(&v(r#"{"a":null,"c":{"z":true,"y":-5}}"#)).unwrap()
    );
}

#[test]
fn members_normalise() {
    let pk = "AB".repeat(32);
    let got = normalize_members(&[
        v(&format!(r#"{{"public_key":"{pk}","seat":3}}"#)),
        v(&format!(
            r#"{{"public_key":"{}","seat":1,"member_id":7,"status":"left"}}"#,
            "c".repeat(64)
        )),
    ])
    .unwrap();
    assert_eq!(
        crate::json::canonical::to_string_ordered(&Value::Array(got)),
        format!(
            r#"[{{"member_id":"7","public_key":"{c}","seat":1,"status":"left"}},{{"member_id":"{pk}","public_key":"{lower}","seat":3,"status":"active"}}]"#,
            c = "c".repeat(64),
            lower = pk.to_lowercase()
        )
    );
    let err = |m: &str| normalize_members(&[v(m)]).unwrap_err().to_string();
    assert_eq!(err("1"), "group member must be an object");
    assert_eq!(
        err(r#"{"public_key":"ab","seat":1}"#),
        "group member public_key must be 64-char hex"
    );
    let ok_pk = "a".repeat(64);
    assert_eq!(
        err(&format!(r#"{{"public_key":"{ok_pk}","seat":32}}"#)),
        "group member seat must be between 0 and 31"
    );
    assert_eq!(
        err(&format!(r#"{{"public_key":"{ok_pk}","seat":true}}"#)),
        "group member seat must be between 0 and 31"
    );
    let dup = normalize_members(&[
        v(&format!(r#"{{"public_key":"{ok_pk}","seat":1}}"#)),
        v(&format!(r#"{{"public_key":"{ok_pk}","seat":2}}"#)),
    ]);
    assert_eq!(
        dup.unwrap_err().to_string(),
        "group members must have unique identity and seat"
    );
}

#[test]
fn config_from_the_bundled_room_spec() {
    let spec = v(
        r#"{"flow":{"mode":"authoritative_group","group":{"min_participants":2,"max_participants":32,
        "allow_late_join":true,"recovery_mode":"exact","start_policy":"min_ready","checkpoint_every_events":20,
        "max_action_bytes":8192,"max_events_per_action":16}}}"#,
    );
    let c = GroupConfig::from_value(&spec).unwrap();
    assert_eq!(c.max_participants, 32);
    assert_eq!(c.max_events_per_action, 16);
    assert_eq!(c.peer_routing, "disabled");
    let with = |k: &str, val: &str| {
        let text = crate::json::canonical::to_string(&spec).replace(
            &format!("\"{k}\":"),
            &format!("\"{k}\":{val},\"_old_{k}\":"),
        );
        GroupConfig::from_value(&v(&text)).map_err(|e| e.to_string())
    };
    assert_eq!(
        with("checkpoint_every_events", "0").unwrap_err(),
        "checkpoint_every_events must be between 1 and 256"
    );
    assert_eq!(
        with("checkpoint_every_events", "true").unwrap_err(),
        "checkpoint_every_events must be between 1 and 256"
    );
    assert!(
        with("max_action_bytes", "100")
            .unwrap_err()
            .contains("out of range")
    );
    assert!(
        with("max_participants", "33")
            .unwrap_err()
            .contains("out of range")
    );
    assert!(
        with("max_participants", "99999999999999999999999")
            .unwrap_err()
            .contains("out of range")
    );
    assert!(
        with("max_events_per_action", "\"x\"")
            .unwrap_err()
            .contains("must be an integer")
    );
    assert_eq!(
        GroupConfig::from_value(&v("{}")).unwrap_err().to_string(),
        "authoritative_group spec has no flow.group"
    );
}

#[test]
fn signed_strings() {
    let cp = v(
        r#"{"group_id":"g","leader_public_key":"ab","leader_epoch":2,"seq":7,"frame_hash":"f","membership_version":3,"checkpoint_hash":"h"}"#,
    );
    assert_eq!(
        checkpoint_certificate(cp.as_object().unwrap()),
        "aigenora-group-checkpoint-v1:g:ab:2:7:f:3:h"
    );
    assert_eq!(
        checkpoint_certificate(&Map::new()),
        "aigenora-group-checkpoint-v1:None:None:None:None:None:None:None"
    );
    assert_eq!(
        admission_canonical("g", "l", "m", "p", 4, "n"),
        "aigenora-group-admission-v1:g:l:m:p:4:n"
    );
    assert_eq!(
        String::from_utf8(channel_ready_canonical("g", "p", 1, "m", "id", 2, "n", "c")).unwrap(),
        r#"aigenora-group-channel-ready-v1:{"channel_challenge":"c","group_id":"g","join_nonce":"n","leader_epoch":1,"member_id":"id","member_public_key":"m","protocol_id":"p","seat":2}"#
    );
    let kp = crate::identity::KeyPair::from_seed([5; 32]);
    let sig = kp.sign(b"msg");
    assert!(verify_signature(&kp.public_key, b"msg", &sig));
    let spaced: String = sig
        .as_bytes()
        .chunks(2)
        .map(|c| format!("{} ", String::from_utf8_lossy(c)))
        .collect();
    assert!(verify_signature(
        &kp.public_key.to_uppercase(),
        b"msg",
        &spaced
    ));
    assert!(!verify_signature(&kp.public_key, b"msg", &sig[1..]));
    assert!(!verify_signature(&kp.public_key, b"other", &sig));
    assert!(is_hash_str(&"aB".repeat(32)) && !is_hash_str(&"g".repeat(64)));
}

#[test]
fn python_int_conversion() {
    assert_eq!(py_int_or_zero(None), Ok(0));
    assert_eq!(py_int_or_zero(Some(&v("\"\""))), Ok(0));
    assert_eq!(py_int_or_zero(Some(&v("\" 1_0 \""))), Ok(10));
    assert_eq!(py_int_or_zero(Some(&v("true"))), Ok(1));
    assert_eq!(
        py_int_or_zero(Some(&v("\"x\""))).unwrap_err().to_string(),
        "invalid literal for int() with base 10: 'x'"
    );
    assert_eq!(
        py_int_or_zero(Some(&v("[1]"))).unwrap_err().to_string(),
        "int() argument must be a string, a bytes-like object or a real number, not 'list'"
    );
}
