//! Invitation options against `spec.parameters`, with the reference's
//! decisions and error texts, `table` parameters included.
//!
//! Only declared parameters are checked; undeclared option keys pass through
//! (they are published with the invitation). Errors follow the order of the
//! spec's parameters and are joined with `"; "`.

use crate::json::{Map, Value};
use std::cmp::Ordering;

/// Validates an options object against the spec's parameters.
pub fn validate_options(spec: &Map, options: &Map) -> Result<(), String> {
    let Some(params) = spec.get("parameters").filter(|p| p.truthy()) else {
        return Ok(());
    };
    let Some(params) = params.as_object() else {
        return Ok(());
    };
    let mut errors: Vec<String> = Vec::new();
    for (key, schema) in params.iter() {
        let (Some(value), Some(schema)) = (options.get(key), schema.as_object()) else {
            continue;
        };
        match schema.get("type").and_then(Value::as_str) {
            Some("integer") => {
                if !value.is_integer() {
                    errors.push(format!("{key}: expected integer"));
                } else if out_of(value, schema.get("min"), Ordering::Less)
                    || out_of(value, schema.get("max"), Ordering::Greater)
                {
                    errors.push(format!("{key}: value out of range"));
                }
            }
            Some("boolean") if value.as_bool().is_none() => {
                errors.push(format!("{key}: expected boolean"));
            }
            Some("enum") if !in_values(value, schema.get("values")) => {
                errors.push(format!("{key}: invalid enum"));
            }
            Some("text") => {
                let max = schema
                    .get("max_length")
                    .cloned()
                    .unwrap_or(Value::from(2000));
                let ok = value.as_str().is_some_and(|s| !exceeds(s.len(), &max));
                if !ok {
                    errors.push(format!(
                        "{key}: expected text <= {} UTF-8 bytes",
                        max.py_str()
                    ));
                }
            }
            Some("table") => validate_table(value, schema, key, &mut errors),
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// `value <op> bound` for a present bound; a non-numeric bound counts as
/// violated (the reference would raise).
fn out_of(value: &Value, bound: Option<&Value>, beyond: Ordering) -> bool {
    let Some(bound) = bound else { return false };
    match (value.py_number(), bound.py_number()) {
        (Some(v), Some(b)) => v.py_cmp(&b) == Some(beyond),
        _ => true,
    }
}

fn exceeds(len: usize, max: &Value) -> bool {
    match max.py_number() {
        Some(m) => crate::json::Number::Int(len as i64).py_cmp(&m) == Some(Ordering::Greater),
        None => true,
    }
}

/// `isinstance(value, str) and value in values` (values defaulting to []).
fn in_values(value: &Value, values: Option<&Value>) -> bool {
    let Some(s) = value.as_str() else {
        return false;
    };
    match values {
        None => false,
        Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(s)),
        Some(Value::String(hay)) => hay.contains(s),
        Some(Value::Object(m)) => m.contains_key(s),
        Some(_) => false,
    }
}

fn validate_table(value: &Value, schema: &Map, path: &str, errors: &mut Vec<String>) {
    let Some(columns) = schema
        .get("columns")
        .and_then(Value::as_object)
        .filter(|c| !c.is_empty())
    else {
        errors.push(format!(
            "{path}: table schema requires a non-empty 'columns' field-tree"
        ));
        return;
    };
    let Some(rows) = value.as_object() else {
        errors.push(format!("{path}: expected a keyed table object"));
        return;
    };
    for (row_key, row) in rows.iter() {
        validate_fields(row, columns, &format!("{path}.{row_key}"), errors);
    }
}

fn validate_fields(value: &Value, fields: &Map, path: &str, errors: &mut Vec<String>) {
    let Some(obj) = value.as_object() else {
        errors.push(format!("{path}: expected object"));
        return;
    };
    for k in obj.keys() {
        if !fields.contains_key(k) {
            errors.push(format!(
                "{path}: unknown field {}",
                Value::from(k).py_repr()
            ));
        }
    }
    for (k, node) in fields.iter() {
        // Table fields are required unless `required` is falsy.
        let required = match node {
            Value::Object(n) => n.get("required").is_none_or(Value::truthy),
            _ => true,
        };
        match obj.get(k) {
            None => {
                if required {
                    errors.push(format!(
                        "{path}: missing field {}",
                        Value::from(k).py_repr()
                    ));
                }
            }
            Some(v) => validate_node(v, node, &format!("{path}.{k}"), errors),
        }
    }
}

fn validate_node(value: &Value, node: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(node) = node.as_object() else {
        errors.push(format!("{path}: invalid node schema"));
        return;
    };
    match node.get("type").and_then(Value::as_str) {
        Some("object") => match node.get("fields").and_then(Value::as_object) {
            Some(fields) => validate_fields(value, fields, path, errors),
            None => errors.push(format!(
                "{path}: object node requires a 'fields' field-tree"
            )),
        },
        Some("integer") => {
            if !value.is_integer() {
                errors.push(format!("{path}: expected integer"));
                return;
            }
            if let Some(min) = node.get("min")
                && out_of(value, Some(min), Ordering::Less)
            {
                errors.push(format!("{path}: below min {}", min.py_str()));
            }
            if let Some(max) = node.get("max")
                && out_of(value, Some(max), Ordering::Greater)
            {
                errors.push(format!("{path}: above max {}", max.py_str()));
            }
        }
        Some("boolean") => {
            if value.as_bool().is_none() {
                errors.push(format!("{path}: expected boolean"));
            }
        }
        Some("enum") => {
            if !in_values(value, node.get("values")) {
                errors.push(format!("{path}: invalid enum"));
            }
        }
        _ => errors.push(format!(
            "{path}: unsupported node type {}",
            node.get("type").unwrap_or(&Value::Null).py_repr()
        )),
    }
}
