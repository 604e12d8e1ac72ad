//! `palaver protocol check`: a stricter lint than the reference performs.
//!
//! The reference only validates `timing`, `flow` and `shadow_judge` before a
//! spec is used; problems in `messages` surface mid-session as a frame that
//! cannot be validated. The lint finds them up front, each with a JSON path:
//! unique message names, direction values, non-empty fields, known field
//! types with sane parameters, an `action` enum naming its message, lookups
//! that would be ambiguous, flow exchanges naming declared messages, and
//! parameter defaults that their own schema accepts.

use super::{ValidationError, spec_version_problem, validate_options, validate_structure};
use crate::json::{Map, Value};
use serde::Serialize;

/// How bad a finding is. Errors make `protocol check` fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem found in a spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// JSONPath-style location, e.g. `$.messages[2].fields.action`.
    pub path: String,
    pub message: String,
}

/// The 15 message field types the validator knows.
pub const FIELD_TYPES: [&str; 14] = [
    "integer",
    "enum",
    "boolean",
    "hash",
    "nonce",
    "id",
    "signature",
    "ticket",
    "text",
    "ciphertext",
    "key",
    "ot_blob",
    "array",
    "json",
];

const DIRECTIONS: [&str; 3] = ["host_to_guest", "guest_to_host", "both"];

struct Lint {
    findings: Vec<Finding>,
}

impl Lint {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.findings.push(Finding {
            severity: Severity::Error,
            path: path.into(),
            message: message.into(),
        });
    }

    fn warn(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.findings.push(Finding {
            severity: Severity::Warning,
            path: path.into(),
            message: message.into(),
        });
    }
}

/// Lints a parsed spec document.
pub fn check(doc: &Value) -> Vec<Finding> {
    let mut l = Lint {
        findings: Vec::new(),
    };
    let Some(spec) = doc.as_object() else {
        l.error(
            "$",
            format!("spec must be a JSON object, found {}", doc.type_name()),
        );
        return l.findings;
    };
    if let Err(e) = validate_structure(spec) {
        let path = if e.starts_with("timing") {
            "$.timing"
        } else if e.starts_with("shadow_judge") {
            "$.shadow_judge"
        } else if e.contains("flow.mode") {
            "$.flow.mode"
        } else {
            "$.flow"
        };
        l.error(path, e);
    }
    if let Some(p) = spec_version_problem(spec) {
        l.error("$.spec_version", p);
    }
    match spec.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        Some(_) => l.error("$.name", "name must be a non-empty string"),
        None => l.error(
            "$.name",
            "name is missing (required to register the protocol)",
        ),
    }
    let declared = lint_messages(spec, &mut l);
    lint_flow(spec, &declared, &mut l);
    lint_parameters(spec, &mut l);
    l.findings
}

/// Declared message name → direction, for the flow check.
type Declared = Vec<(String, Option<String>)>;

fn lint_messages(spec: &Map, l: &mut Lint) -> Declared {
    let mut declared: Declared = Vec::new();
    let Some(messages) = spec
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
    else {
        l.error("$.messages", "messages must be a non-empty array");
        return declared;
    };
    // (action value, direction, message index) for the ambiguity check.
    let mut actions: Vec<(String, String, usize)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let at = format!("$.messages[{i}]");
        let Some(m) = m.as_object() else {
            l.error(at, "message entry must be an object");
            continue;
        };
        let name = match m.get("name") {
            Some(Value::String(n)) if !n.is_empty() => {
                if let Some(j) = declared.iter().position(|(d, _)| **d == **n) {
                    l.error(
                        format!("{at}.name"),
                        format!("duplicate message name '{n}' (first declared at $.messages[{j}])"),
                    );
                }
                Some(n.to_string())
            }
            _ => {
                l.error(
                    format!("{at}.name"),
                    "message name must be a non-empty string",
                );
                None
            }
        };
        let direction = match m.get("direction").and_then(Value::as_str) {
            Some(d) if DIRECTIONS.contains(&d) => Some(d.to_owned()),
            _ => {
                l.error(
                    format!("{at}.direction"),
                    "direction must be host_to_guest, guest_to_host, or both",
                );
                None
            }
        };
        if let Some(n) = &name {
            declared.push((n.clone(), direction.clone()));
        }
        let Some(fields) = m
            .get("fields")
            .and_then(Value::as_object)
            .filter(|f| !f.is_empty())
        else {
            l.error(format!("{at}.fields"), "fields must be a non-empty object");
            continue;
        };
        for (k, f) in fields.iter() {
            lint_field(f, &format!("{at}.fields.{k}"), l);
        }
        match fields.get("action").and_then(Value::as_object) {
            None => l.error(
                format!("{at}.fields.action"),
                "every message needs an `action` enum field",
            ),
            Some(a) => {
                let values: Vec<&str> = a
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if a.get("type").and_then(Value::as_str) != Some("enum") {
                    l.error(
                        format!("{at}.fields.action"),
                        "the `action` field must be of type enum",
                    );
                } else if let Some(n) = &name
                    && !values.contains(&&**n)
                {
                    l.error(
                        format!("{at}.fields.action.values"),
                        format!("action values should include the message name '{n}'"),
                    );
                }
                if !matches!(a.get("required"), Some(Value::Bool(true))) {
                    l.warn(
                        format!("{at}.fields.action.required"),
                        "the `action` field should be required",
                    );
                }
                for v in values {
                    actions.push((v.to_owned(), direction.clone().unwrap_or_default(), i));
                }
            }
        }
    }
    for (x, (a, da, i)) in actions.iter().enumerate() {
        for (b, db, j) in &actions[x + 1..] {
            let overlap = da == db || da == "both" || db == "both";
            if a == b && i != j && overlap {
                l.error(
                    format!("$.messages[{j}].fields.action.values"),
                    format!("action '{a}' is also accepted by $.messages[{i}] in an overlapping direction; lookup by action would be ambiguous"),
                );
            }
        }
    }
    declared
}

fn is_int(v: &Value) -> bool {
    v.is_integer()
}

fn lint_field(f: &Value, at: &str, l: &mut Lint) {
    let Some(f) = f.as_object() else {
        l.error(at, "field schema must be an object");
        return;
    };
    if let Some(r) = f.get("required")
        && r.as_bool().is_none()
    {
        l.error(format!("{at}.required"), "required must be true or false");
    }
    let Some(t) = f.get("type").and_then(Value::as_str) else {
        l.error(format!("{at}.type"), "field type is missing");
        return;
    };
    if !FIELD_TYPES.contains(&t) {
        l.error(
            format!("{at}.type"),
            format!(
                "unsupported field type '{t}' (known: {})",
                FIELD_TYPES.join(", ")
            ),
        );
        return;
    }
    let positive = |key: &str, l: &mut Lint| {
        if let Some(v) = f.get(key)
            && !(is_int(v) && v.as_i64().is_none_or(|n| n > 0))
        {
            l.error(
                format!("{at}.{key}"),
                format!("{key} must be a positive integer"),
            );
        }
    };
    match t {
        "integer" => {
            for k in ["min", "max"] {
                if let Some(v) = f.get(k)
                    && !is_int(v)
                {
                    l.error(format!("{at}.{k}"), format!("{k} must be an integer"));
                }
            }
            if let (Some(lo), Some(hi)) = (
                f.get("min").and_then(Value::as_i64),
                f.get("max").and_then(Value::as_i64),
            ) && lo > hi
            {
                l.error(at, format!("min {lo} is greater than max {hi}"));
            }
        }
        "enum" => match f.get("values").and_then(Value::as_array) {
            Some(vs) if !vs.is_empty() && vs.iter().all(|v| v.as_str().is_some()) => {
                let mut seen: Vec<&str> = Vec::new();
                for v in vs.iter().filter_map(Value::as_str) {
                    if seen.contains(&v) {
                        l.warn(
                            format!("{at}.values"),
                            format!("duplicate enum value '{v}'"),
                        );
                    }
                    seen.push(v);
                }
            }
            _ => l.error(
                format!("{at}.values"),
                "enum values must be a non-empty array of strings",
            ),
        },
        "text" | "ciphertext" | "ot_blob" => positive("max_length", l),
        "array" => {
            match f.get("items").and_then(Value::as_object) {
                None => l.error(
                    format!("{at}.items"),
                    "array fields need an `items` schema object",
                ),
                Some(items) if items.get("type").and_then(Value::as_str) == Some("array") => {
                    l.error(format!("{at}.items.type"), "nested arrays are not allowed")
                }
                Some(_) => lint_field(
                    f.get("items").unwrap_or(&Value::Null),
                    &format!("{at}.items"),
                    l,
                ),
            }
            for k in ["min_items", "max_items"] {
                if let Some(v) = f.get(k)
                    && !(is_int(v) && v.as_i64().is_some_and(|n| n >= 0))
                {
                    l.error(
                        format!("{at}.{k}"),
                        format!("{k} must be a non-negative integer"),
                    );
                }
            }
            positive("max_total_bytes", l);
        }
        "json" => {
            if let Some(c) = f.get("container")
                && !matches!(c.as_str(), Some("any" | "object" | "array"))
            {
                l.error(
                    format!("{at}.container"),
                    "container must be any, object, or array",
                );
            }
            positive("max_total_bytes", l);
        }
        _ => {}
    }
}

fn lint_flow(spec: &Map, declared: &Declared, l: &mut Lint) {
    let Some(phases) = spec
        .get("flow")
        .and_then(|f| f.get("phases"))
        .and_then(Value::as_array)
    else {
        return;
    };
    for (p, phase) in phases.iter().enumerate() {
        let Some(exchange) = phase.get("exchange").and_then(Value::as_array) else {
            continue;
        };
        for (e, step) in exchange.iter().enumerate() {
            let at = format!("$.flow.phases[{p}].exchange[{e}]");
            let Some(name) = step.get("message").and_then(Value::as_str) else {
                l.error(format!("{at}.message"), "exchange step must name a message");
                continue;
            };
            let Some((_, dir)) = declared.iter().find(|(n, _)| n == name) else {
                l.error(
                    format!("{at}.message"),
                    format!("exchange names undeclared message '{name}'"),
                );
                continue;
            };
            if let (Some(want), Some(have)) = (
                step.get("direction").and_then(Value::as_str),
                dir.as_deref(),
            ) && have != "both"
                && want != have
            {
                l.error(
                    format!("{at}.direction"),
                    format!("message '{name}' is declared {have}, not {want}"),
                );
            }
        }
    }
}

fn lint_parameters(spec: &Map, l: &mut Lint) {
    let Some(params) = spec.get("parameters") else {
        return;
    };
    let Some(params) = params.as_object() else {
        l.error("$.parameters", "parameters must be an object");
        return;
    };
    for (k, p) in params.iter() {
        let at = format!("$.parameters.{k}");
        let Some(p) = p.as_object() else {
            l.error(at, "parameter schema must be an object");
            continue;
        };
        match p.get("type").and_then(Value::as_str) {
            Some("integer" | "boolean" | "enum" | "text" | "table") => {}
            Some(t) => l.warn(
                format!("{at}.type"),
                format!("parameter type '{t}' is not checked by options validation"),
            ),
            None => l.error(format!("{at}.type"), "parameter type is missing"),
        }
        if let (Some(lo), Some(hi)) = (
            p.get("min").and_then(Value::as_i64),
            p.get("max").and_then(Value::as_i64),
        ) && lo > hi
        {
            l.error(at.clone(), format!("min {lo} is greater than max {hi}"));
        }
        if let Some(d) = p.get("default") {
            let opts: Map = [(k, d.clone())].into_iter().collect();
            if let Err(e) = validate_options(spec, &opts).map_err(ValidationError::from) {
                l.error(
                    format!("{at}.default"),
                    format!("default is rejected by its own schema: {e}"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

    #[test]
    fn finds_message_problems_with_paths() {
        let doc = parse_str(
            r#"{"name":"t","messages":[
                {"name":"a","direction":"up","fields":{"action":{"type":"enum","values":["b"],"required":true}}},
                {"name":"a","direction":"both","fields":{}},
                {"name":"c","direction":"both","fields":{"action":{"type":"enum","values":["b"],"required":true},"x":{"type":"float"}}}
            ],"flow":{"phases":[{"exchange":[{"message":"zz","direction":"both"}]}]},
            "parameters":{"n":{"type":"integer","min":5,"default":1}}}"#,
        )
        .unwrap();
        let f = check(&doc);
        let has =
            |path: &str, text: &str| f.iter().any(|x| x.path == path && x.message.contains(text));
        assert!(has("$.messages[0].direction", "direction must be"));
        assert!(has(
            "$.messages[0].fields.action.values",
            "include the message name 'a'"
        ));
        assert!(has("$.messages[1].name", "duplicate message name 'a'"));
        assert!(has("$.messages[1].fields", "non-empty object"));
        assert!(has(
            "$.messages[2].fields.x.type",
            "unsupported field type 'float'"
        ));
        assert!(has("$.messages[2].fields.action.values", "ambiguous"));
        assert!(has(
            "$.flow.phases[0].exchange[0].message",
            "undeclared message 'zz'"
        ));
        assert!(has("$.parameters.n.default", "value out of range"));
    }
}
