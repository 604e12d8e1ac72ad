//! GTL's `canonical_json`, restricted so it is byte-identical with RFC 8785
//! (JCS): object keys are ASCII (so code-point order and JCS's UTF-16 order
//! agree), numbers are integers within ±(2^53−1) (so every JCS number
//! serialiser writes the same digits), and a document with a duplicate key
//! or a lone surrogate is refused at parse time instead of being folded.
//!
//! The palaver [`crate::json`] parser folds duplicate keys the way Python
//! does (the reference client needs that), so GTL messages go through
//! [`parse_strict`] here instead: serde_json's tokenizer (which refuses lone
//! surrogates and invalid UTF-8) driving a visitor that refuses duplicates,
//! non-ASCII keys and non-integers, and builds a palaver [`Value`].

use crate::json::{Map, Number, Value};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use sha2::{Digest, Sha256};
use std::fmt;

/// Largest integer I-JSON (and so every JCS implementation) carries exactly.
pub const MAX_SAFE_INT: i64 = (1 << 53) - 1;

/// Why a document cannot be canonical GTL JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonError {
    /// Not JSON, or JSON GTL refuses (duplicate key, lone surrogate, float…).
    #[error("{0}")]
    Parse(String),
    /// A value built in code that canonical GTL JSON cannot carry.
    #[error("{path}: {reason}")]
    Value { path: String, reason: String },
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

struct Strict {
    path: String,
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl Strict {
    fn at(&self) -> &str {
        if self.path.is_empty() {
            "the document"
        } else {
            &self.path
        }
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        if !(-MAX_SAFE_INT..=MAX_SAFE_INT).contains(&v) {
            return Err(E::custom(format!(
                "{}: integer {v} is outside ±(2^53−1)",
                self.at()
            )));
        }
        Ok(Value::Number(Number::Int(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        match i64::try_from(v) {
            Ok(i) => self.visit_i64(i),
            Err(_) => Err(E::custom(format!(
                "{}: integer {v} is outside ±(2^53−1)",
                self.at()
            ))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Err(E::custom(format!(
            "{}: {v} is not an integer (GTL numbers are integers within ±(2^53−1); write amounts in whole GTU)",
            self.at()
        )))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict {
            path: format!("{}[{}]", self.path, out.len()),
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let path = child(&self.path, &k);
            if !k.is_ascii() {
                return Err(de::Error::custom(format!(
                    "{path}: property names must be ASCII (RFC 8785 order then equals code-point order)"
                )));
            }
            if out.contains_key(&k) {
                return Err(de::Error::custom(format!(
                    "{path}: duplicate key (GTL refuses duplicates: signer and verifier could hash different values)"
                )));
            }
            let v = map.next_value_seed(Strict { path })?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// Parses a GTL document strictly (see the module docs). Errors name the
/// path of the offending member and serde_json's line and column.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, CanonError> {
    let mut d = serde_json::Deserializer::from_slice(bytes);
    let v = Strict {
        path: String::new(),
    }
    .deserialize(&mut d)
    .map_err(|e| CanonError::Parse(e.to_string()))?;
    d.end().map_err(|e| CanonError::Parse(e.to_string()))?;
    Ok(v)
}

/// Checks that a value (perhaps built in code) is canonical GTL JSON.
pub fn check(v: &Value, path: &str) -> Result<(), CanonError> {
    let bad = |reason: &str| {
        Err(CanonError::Value {
            path: if path.is_empty() {
                "the document".into()
            } else {
                path.to_owned()
            },
            reason: reason.to_owned(),
        })
    };
    match v {
        Value::Number(Number::Int(i)) if (-MAX_SAFE_INT..=MAX_SAFE_INT).contains(i) => Ok(()),
        Value::Number(_) => bad("numbers must be integers within ±(2^53−1)"),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check(x, &format!("{path}[{i}]"))),
        Value::Object(m) => m.iter().try_for_each(|(k, x)| {
            if k.is_ascii() {
                check(x, &child(path, k))
            } else {
                Err(CanonError::Value {
                    path: child(path, k),
                    reason: "property names must be ASCII".into(),
                })
            }
        }),
        _ => Ok(()),
    }
}

/// `canonical_json(v)`: keys sorted, arrays in order, no whitespace, UTF-8,
/// strings escaped as RFC 8785 §3.2.2.2 says.
pub fn canonical_json(v: &Value) -> Result<Vec<u8>, CanonError> {
    check(v, "")?;
    Ok(crate::canonical::to_vec(v))
}

/// Lowercase hex SHA-256 of `canonical_json(v)`: every GTL object hash.
pub fn hash(v: &Value) -> Result<String, CanonError> {
    Ok(crate::canonical::sha256_hex(canonical_json(v)?))
}

/// The message signature: lowercase hex
/// `SHA-256(token | "|" | canonical_json(message without "signature"))`.
/// Only the top-level `signature` member is left out.
pub fn signature(token: &str, message: &Map) -> Result<String, CanonError> {
    let mut m = message.clone();
    m.remove("signature");
    let body = canonical_json(&Value::Object(m))?;
    let mut h = Sha256::new();
    h.update(token.as_bytes());
    h.update(b"|");
    h.update(&body);
    Ok(crate::canonical::hex(&h.finalize()))
}

/// Compares two hex strings in time independent of where they differ.
pub fn hex_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Value, CanonError> {
        parse_strict(s.as_bytes())
    }

    #[test]
    fn refuses_what_jcs_cannot_agree_on() {
        let dup = p(r#"{"a":1,"b":{"c":2,"c":3}}"#).unwrap_err().to_string();
        assert!(dup.contains("b.c: duplicate key"), "{dup}");
        assert!(p(r#"{"x":"\ud800"}"#).is_err());
        let fl = p(r#"{"amount":1.0}"#).unwrap_err().to_string();
        assert!(fl.contains("amount: 1 is not an integer"), "{fl}");
        assert!(p(r#"{"n":9007199254740992}"#).is_err());
        assert!(p(r#"{"n":9007199254740991}"#).is_ok());
        let key = p(r#"{"é":1}"#).unwrap_err().to_string();
        assert!(key.contains("must be ASCII"), "{key}");
        assert!(p(r#"{"a":1} x"#).is_err());
        assert!(p(r#"[1,{"a":[true,null,"…"]}]"#).is_ok());
    }

    #[test]
    fn canonical_bytes_and_the_hello_signature_vector() {
        let v = p(r#"{ "type" : "HELLO", "supported_versions" : ["0.2"] }"#).unwrap();
        assert_eq!(
            canonical_json(&v).unwrap(),
            br#"{"supported_versions":["0.2"],"type":"HELLO"}"#.to_vec()
        );
        let m = v.as_object().unwrap();
        assert_eq!(
            signature("demo-token", m).unwrap(),
            "d82ea0878b5fbebb0403d000b8c24f869bfb2eb55ed72757a8d8ac016c1dd20a"
        );
        // Non-ASCII text stays literal; control characters are escaped.
        let t = p(r#"{"m":"…\u0001/"}"#).unwrap();
        assert_eq!(
            String::from_utf8(canonical_json(&t).unwrap()).unwrap(),
            "{\"m\":\"…\\u0001/\"}"
        );
        assert!(hex_eq("ab", "ab") && !hex_eq("ab", "ac") && !hex_eq("ab", "abc"));
    }
}
