use super::*;

#[test]
fn every_tool_has_a_unique_name_and_an_object_input_schema() {
    let mut names = std::collections::BTreeSet::new();
    for t in market_tools::catalogue()
        .into_iter()
        .chain(session_tools::catalogue())
    {
        assert!(names.insert(t.name.to_string()), "{} twice", t.name);
        assert_eq!(
            t.input_schema.get("type").and_then(|v| v.as_str()),
            Some("object"),
            "{}",
            t.name
        );
        let out = t
            .output_schema
            .as_ref()
            .expect("every tool declares its output");
        assert_eq!(
            out.get("type").and_then(|v| v.as_str()),
            Some("object"),
            "{}",
            t.name
        );
    }
    assert_eq!(names.len(), 25);
}

#[test]
fn arguments_that_break_the_schema_are_refused_naming_the_field() {
    let a = |v: serde_json::Value| v.as_object().cloned();
    let e = args::<serde_json::Map<String, Json>>("x", None).map(|_| ());
    assert!(e.is_ok());
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct T {
        transaction_id: String,
    }
    let Refusal(r) = args::<T>("market_fund", a(serde_json::json!({"transaction_id": 7})))
        .err()
        .unwrap();
    assert_eq!(r["error"], "invalid_arguments");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .starts_with("market_fund: the arguments do not fit"),
        "{r}"
    );
    let Refusal(r) = args::<T>(
        "market_fund",
        a(serde_json::json!({"transaction_id": "j", "extra": 1})),
    )
    .err()
    .unwrap();
    assert!(r["message"].as_str().unwrap().contains("extra"), "{r}");
    let Refusal(r) = args::<T>("market_fund", None).err().unwrap();
    assert!(
        r["message"].as_str().unwrap().contains("transaction_id"),
        "{r}"
    );
}

#[test]
fn a_market_refusal_keeps_the_rest_envelope_and_status() {
    let body = crate::market::MarketError::NotFound("no transaction job_x".into()).to_json();
    let r = Refusal::from(MarketClientError::Rejected {
        path: "/api/gtl".into(),
        status: 404,
        code: "not_found".into(),
        message: "no transaction job_x".into(),
        body,
    });
    assert_eq!(r.0["error"], "not_found");
    assert_eq!(r.0["status"], 404);
    assert_eq!(r.0["ok"], false);
}

#[test]
fn json_crosses_between_the_two_value_types_unchanged() {
    let v =
        serde_json::json!({"a": [1, -2, 3.5, "x", null, true], "b": {"c": 9007199254740993u64}});
    let ours = from_json(&v).unwrap();
    assert_eq!(to_json(&ours), v);
}
