//! One field of a message schema, compiled to a rule: the kind of value it
//! takes and its limits. [`Kind::passes`] states each kind's rule once;
//! [`Kind::check`] writes the reference's error texts for a value that does
//! not pass.
//!
//! Where the reference would crash on a malformed schema (a non-numeric
//! `min`, `values` that is not a list), the rule compiles to a clear error
//! text instead.

use super::formats::{char_len_at_most, even_lower_hex, lower_hex_len, safe_id};
use super::names::Names;
use super::text::{Errs, Key};
use crate::json::{Map, Number, Value};
use std::cmp::Ordering;

/// What a Python `x in values` would answer.
#[derive(Debug, Clone)]
pub(super) enum Membership {
    /// A list: its strings indexed, anything else kept for Python equality
    /// with non-string probes.
    List {
        strings: Names,
        others: Vec<Value>,
    },
    Substring(String),
    Keys(Names),
    /// `in` on this would raise in the reference.
    Invalid(String),
}

impl Membership {
    pub(super) fn from(values: Option<&Value>) -> Self {
        match values {
            None => Membership::List {
                strings: Names::default(),
                others: Vec::new(),
            },
            Some(Value::Array(a)) => {
                let mut strings = Names::default();
                let mut others = Vec::new();
                for v in a {
                    match v {
                        Value::String(s) => strings.push(s),
                        other => others.push(other.clone()),
                    }
                }
                Membership::List { strings, others }
            }
            Some(Value::String(s)) => Membership::Substring(s.to_string()),
            Some(Value::Object(m)) => {
                let mut keys = Names::default();
                for k in m.keys() {
                    keys.push(k);
                }
                Membership::Keys(keys)
            }
            Some(other) => Membership::Invalid(other.type_name().into()),
        }
    }

    pub(super) fn contains(&self, v: &Value) -> bool {
        match self {
            Membership::List { strings, others } => match v {
                // A string only ever equals a string.
                Value::String(s) => strings.contains(s),
                other => others.iter().any(|i| i.py_eq(other)),
            },
            Membership::Substring(hay) => v.as_str().is_some_and(|s| hay.contains(s)),
            Membership::Keys(keys) => v.as_str().is_some_and(|s| keys.contains(s)),
            Membership::Invalid(_) => false,
        }
    }

    pub(super) fn contains_str(&self, s: &str) -> bool {
        match self {
            Membership::List { strings, .. } => strings.contains(s),
            Membership::Substring(hay) => hay.contains(s),
            Membership::Keys(keys) => keys.contains(s),
            Membership::Invalid(_) => false,
        }
    }
}

/// A numeric limit from the schema. `raw` keeps the value as written for the
/// error text (Python formats it with `str()`, so `True` stays `True`);
/// `num` is None when it is not a number (the reference would raise a
/// TypeError comparing against it).
#[derive(Debug, Clone)]
pub(super) struct Limit {
    raw: Box<Value>,
    num: Option<Number>,
    /// `str(raw)`, computed once for error texts.
    shown: Box<str>,
    /// The limit when it is a 64-bit integer, the common case, so that a
    /// comparison with it needs no numeric model.
    int: Option<i64>,
}

impl Limit {
    fn from(v: &Value) -> Self {
        let num = v.py_number();
        let int = match (v, &num) {
            (Value::Number(_), Some(Number::Int(i))) => Some(*i),
            _ => None,
        };
        Limit {
            raw: Box::new(v.clone()),
            num,
            shown: v.py_str().into(),
            int,
        }
    }

    fn text(&self) -> &str {
        &self.shown
    }

    /// `len > limit`, or None when the limit is not a number.
    fn exceeded_by(&self, len: usize) -> Option<bool> {
        if let Some(max) = self.int {
            return Some(i64::try_from(len).map_or(true, |len| len > max));
        }
        let n = self.num.as_ref()?;
        Some(Number::Int(len as i64).py_cmp(n) == Some(Ordering::Greater))
    }
}

#[derive(Debug, Clone)]
pub(super) enum Kind {
    Integer {
        min: Option<Limit>,
        max: Option<Limit>,
    },
    Enum(Membership),
    Boolean,
    Hash,
    Nonce,
    Id,
    Signature,
    Ticket,
    Text(Limit),
    Ciphertext(Limit),
    Key,
    OtBlob(Limit),
    Array {
        items: Items,
        min_items: Option<Number>,
        max_items: Option<Number>,
        max_total: Limit,
    },
    Json {
        container: Container,
        max_total: Option<Number>,
    },
    Unsupported(String),
}

#[derive(Debug, Clone)]
pub(super) enum Items {
    Missing,
    Nested,
    Scalar(Box<Kind>),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Container {
    Any,
    Object,
    Array,
    Invalid,
}

fn int_field(schema: &Map, key: &str) -> Option<Number> {
    match schema.get(key) {
        Some(Value::Number(n @ (Number::Int(_) | Number::BigInt(_)))) => Some(n.clone()),
        _ => None,
    }
}

impl Kind {
    pub(super) fn compile(schema: &Map) -> Kind {
        let limit =
            |key: &str, default: i64| Limit::from(schema.get(key).unwrap_or(&Value::from(default)));
        match schema.get("type").and_then(Value::as_str) {
            Some("integer") => Kind::Integer {
                min: schema.get("min").map(Limit::from),
                max: schema.get("max").map(Limit::from),
            },
            Some("enum") => Kind::Enum(Membership::from(schema.get("values"))),
            Some("boolean") => Kind::Boolean,
            Some("hash") => Kind::Hash,
            Some("nonce") => Kind::Nonce,
            Some("id") => Kind::Id,
            Some("signature") => Kind::Signature,
            Some("ticket") => Kind::Ticket,
            Some("text") => Kind::Text(limit("max_length", 2000)),
            Some("ciphertext") => Kind::Ciphertext(limit("max_length", 512)),
            Some("key") => Kind::Key,
            Some("ot_blob") => Kind::OtBlob(limit("max_length", 16384)),
            Some("array") => Kind::Array {
                items: match schema.get("items") {
                    Some(Value::Object(items)) => {
                        if items.get("type").and_then(Value::as_str) == Some("array") {
                            Items::Nested
                        } else {
                            Items::Scalar(Box::new(Kind::compile(items)))
                        }
                    }
                    _ => Items::Missing,
                },
                min_items: int_field(schema, "min_items"),
                max_items: int_field(schema, "max_items"),
                max_total: limit("max_total_bytes", 262_144),
            },
            Some("json") => Kind::Json {
                container: match schema.get("container") {
                    None => Container::Any,
                    Some(v) => match v.as_str() {
                        Some("any") => Container::Any,
                        Some("object") => Container::Object,
                        Some("array") => Container::Array,
                        _ => Container::Invalid,
                    },
                },
                max_total: match schema.get("max_total_bytes") {
                    None => Some(Number::Int(1_048_576)),
                    Some(v) => int_field(schema, "max_total_bytes")
                        .filter(|n| Number::Int(1).py_cmp(n) != Some(Ordering::Greater))
                        .filter(|_| v.is_integer()),
                },
            },
            _ => Kind::Unsupported(schema.get("type").unwrap_or(&Value::Null).py_repr()),
        }
    }

    /// Does `v` pass? The one statement of each kind's rule. Arrays and
    /// JSON payloads, which can fail in several ways at once, never pass
    /// here: [`Kind::check`] always looks at them.
    #[inline(always)]
    pub(super) fn passes(&self, v: &Value) -> bool {
        let s = match v {
            Value::String(s) => Some(&**s),
            _ => None,
        };
        match self {
            Kind::Hash | Kind::Key => s.is_some_and(|s| lower_hex_len(s, 64, 64)),
            Kind::Nonce => s.is_some_and(|s| lower_hex_len(s, 16, 64)),
            Kind::Signature => s.is_some_and(|s| lower_hex_len(s, 128, 128)),
            Kind::Id => s.is_some_and(safe_id),
            Kind::Ticket => s.is_some_and(|s| !s.is_empty() && char_len_at_most(s, 2048)),
            Kind::Text(max) | Kind::OtBlob(max) => s.is_some_and(|s| fits(s.len(), max)),
            Kind::Ciphertext(max) => s.is_some_and(|s| even_lower_hex(s) && fits(s.len(), max)),
            Kind::Boolean => matches!(v, Value::Bool(_)),
            Kind::Enum(values) => s.is_some_and(|s| values.contains_str(s)),
            Kind::Integer { min, max } => match v {
                Value::Number(n @ (Number::Int(_) | Number::BigInt(_))) => {
                    let inside = |bound: &Option<Limit>, side| {
                        bound
                            .as_ref()
                            .is_none_or(|b| past(n, b, side) == Some(false))
                    };
                    inside(min, Ordering::Less) && inside(max, Ordering::Greater)
                }
                _ => false,
            },
            Kind::Array { .. } | Kind::Json { .. } | Kind::Unsupported(_) => false,
        }
    }

    /// Validates one value, appending errors for `key`.
    #[inline(always)]
    pub(super) fn check(&self, v: &Value, key: Key<'_>, errors: &mut Errs) {
        if !self.passes(v) {
            self.explain(v, key, errors);
        }
    }

    /// The errors of a value that did not pass.
    fn explain(&self, v: &Value, key: Key<'_>, errors: &mut Errs) {
        match self {
            Kind::Integer { min, max, .. } => {
                let Value::Number(n @ (Number::Int(_) | Number::BigInt(_))) = v else {
                    errors.field(key, "expected integer");
                    return;
                };
                for (bound, side) in [(min, Ordering::Less), (max, Ordering::Greater)] {
                    let Some(bound) = bound else { continue };
                    let (name, word) = match side {
                        Ordering::Less => ("min", "below min "),
                        _ => ("max", "above max "),
                    };
                    match past(n, bound, side) {
                        Some(true) => errors.field_parts(key, &[word, bound.text()]),
                        Some(false) => {}
                        None => errors.push(format_args!(
                            "{key}: schema {name} {} is not a number",
                            bound.raw.py_repr()
                        )),
                    }
                }
            }
            Kind::Enum(values) => match (v, values) {
                (Value::String(_), Membership::Invalid(t)) => {
                    errors.push(format_args!("{key}: schema values is a {t}, not a list"));
                }
                (Value::String(_), _) => {
                    errors.field(key, "value ");
                    v.write_py_repr(errors.tail());
                    errors.tail().push_str(" not in enum");
                }
                _ => errors.field(key, "expected enum string"),
            },
            Kind::Boolean => errors.field(key, "expected boolean"),
            Kind::Hash => errors.field(key, "expected lowercase SHA256 hex"),
            Kind::Nonce => errors.field(key, "expected 16-64 lowercase hex chars"),
            Kind::Id => errors.field(key, "expected safe identifier"),
            Kind::Signature => errors.field(key, "expected lowercase Ed25519 signature hex"),
            Kind::Ticket => errors.field(key, "expected non-empty ticket <= 2048 chars"),
            Kind::Text(max) => {
                errors.field_parts(key, &["expected text <= ", max.text(), " UTF-8 bytes"]);
            }
            Kind::Ciphertext(max) => errors.field_parts(
                key,
                &[
                    "expected hex ciphertext <= ",
                    max.text(),
                    " chars (even length)",
                ],
            ),
            Kind::Key => errors.field(key, "expected 32-byte key (64 hex chars)"),
            Kind::OtBlob(max) => {
                errors.field_parts(key, &["expected ot_blob <= ", max.text(), " UTF-8 bytes"]);
            }
            Kind::Array {
                items,
                min_items,
                max_items,
                max_total,
            } => {
                let Value::Array(list) = v else {
                    errors.field(key, "expected array");
                    return;
                };
                let item_kind = match items {
                    Items::Missing => {
                        errors.field(key, "array requires an 'items' schema");
                        return;
                    }
                    Items::Nested => {
                        errors.field(key, "nested array not allowed (items must be scalar)");
                        return;
                    }
                    Items::Scalar(k) => k,
                };
                let len = Number::Int(list.len() as i64);
                if let Some(m) = min_items
                    && len.py_cmp(m) == Some(Ordering::Less)
                {
                    errors.push(format_args!("{key}: below min_items {m}"));
                }
                if let Some(m) = max_items
                    && len.py_cmp(m) == Some(Ordering::Greater)
                {
                    errors.push(format_args!("{key}: above max_items {m}"));
                }
                let total: usize = list.iter().map(Value::py_str_len).sum();
                match max_total.exceeded_by(total) {
                    Some(true) => errors.push(format_args!(
                        "{key}: array total {total} bytes exceeds max_total_bytes {}",
                        max_total.text()
                    )),
                    Some(false) => {}
                    None => errors.field(key, "schema max_total_bytes is not a number"),
                }
                for (i, item) in list.iter().enumerate() {
                    item_kind.check(item, key.item(i), errors);
                }
            }
            Kind::Json {
                container,
                max_total,
            } => {
                match container {
                    Container::Object if !matches!(v, Value::Object(_)) => {
                        errors.field(key, "expected JSON object");
                        return;
                    }
                    Container::Array if !matches!(v, Value::Array(_)) => {
                        errors.field(key, "expected JSON array");
                        return;
                    }
                    Container::Invalid => {
                        errors.field(key, "json container must be any, object, or array");
                        return;
                    }
                    _ => {}
                }
                match max_total {
                    None => errors.field(key, "json max_total_bytes must be a positive integer"),
                    Some(max) => {
                        let len = crate::json::canonical::canonical_len(v);
                        if Number::Int(len as i64).py_cmp(max) == Some(Ordering::Greater) {
                            errors.push(format_args!(
                                "{key}: JSON payload {len} bytes exceeds max_total_bytes {max}"
                            ));
                        }
                    }
                }
            }
            Kind::Unsupported(t) => errors.push(format_args!("{key}: unsupported field type {t}")),
        }
    }
}

/// Is `n` past `bound` on `side` (`Less`: below a min, `Greater`: above a
/// max)? None when the schema's bound is not a number (the reference would
/// raise comparing with it).
#[inline(always)]
fn past(n: &Number, bound: &Limit, side: Ordering) -> Option<bool> {
    let ord = match (n, bound.int) {
        (Number::Int(x), Some(m)) => Some(x.cmp(&m)),
        _ => n.py_cmp(bound.num.as_ref()?),
    };
    Some(ord == Some(side))
}

/// `len` is within the limit (which must be a number).
fn fits(len: usize, max: &Limit) -> bool {
    max.exceeded_by(len) == Some(false)
}
