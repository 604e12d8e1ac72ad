//! GTL's `canonical_json`, restricted so it is byte-identical with RFC 8785
//! (JCS): object keys are ASCII (so code-point order and JCS's UTF-16 order
//! agree), numbers are integers within ±(2^53−1) (so every JCS number
//! serialiser writes the same digits), and a document with a duplicate key
//! or a lone surrogate is refused at parse time instead of being folded.
//!
//! GTL messages are read by palaver's one JSON parser in GTL's own
//! [`Dialect`] ([`parse_strict`]): a duplicate key refuses the document (the
//! reference client's dialect folds duplicates, as Python does), and so do a
//! non-ASCII key and a number that is not an integer within ±(2^53−1), each
//! named by the path of its member.

use crate::json::{self, Dialect, DuplicateKeys, Map, Number, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

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

/// Where a problem is, for error texts.
fn at(path: &str) -> &str {
    if path.is_empty() {
        "the document"
    } else {
        path
    }
}

/// GTL's dialect of JSON.
struct Gtl;

impl Dialect for Gtl {
    const DUPLICATE_KEYS: DuplicateKeys = DuplicateKeys::Reject(
        "duplicate key (GTL refuses duplicates: signer and verifier could hash different values)",
    );
    /// GTL documents have always been held to this depth.
    const MAX_DEPTH: usize = 127;

    fn key(key: &str) -> Result<(), String> {
        if key.is_ascii() {
            Ok(())
        } else {
            Err("property names must be ASCII (RFC 8785 order then equals code-point order)".into())
        }
    }

    fn number(literal: &str, n: &Number) -> Result<(), String> {
        match n {
            // `-0` has always been refused as a float.
            Number::Int(0) if literal.starts_with('-') => Err(not_an_integer(-0.0)),
            Number::Int(i) if (-MAX_SAFE_INT..=MAX_SAFE_INT).contains(i) => Ok(()),
            Number::Int(_) | Number::BigInt(_) => Err(format!("integer {n} is outside ±(2^53−1)")),
            Number::Float(f) => Err(not_an_integer(*f)),
        }
    }
}

fn not_an_integer(f: f64) -> String {
    format!(
        "{f} is not an integer (GTL numbers are integers within ±(2^53−1); write amounts in whole GTU)"
    )
}

/// Parses a GTL document strictly (see the module docs). Errors name the
/// path of the offending member, and the line and column.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, CanonError> {
    json::parse_with::<Gtl>(bytes).map_err(|e| CanonError::Parse(format!("{}: {e}", at(&e.path))))
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
    Ok(crate::json::canonical::to_vec(v))
}

/// Lowercase hex SHA-256 of `canonical_json(v)`: every GTL object hash.
pub fn hash(v: &Value) -> Result<String, CanonError> {
    Ok(crate::json::canonical::sha256_hex(canonical_json(v)?))
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
    Ok(hex::encode(h.finalize()))
}

/// Compares two hex strings in time independent of where they differ
/// (their lengths are not secret).
pub fn hex_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
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
        assert!(hex_eq("", "") && !hex_eq("", "a") && !hex_eq("abc", "ab"));
        assert!(!hex_eq("0b", "ab") && !hex_eq("AB", "ab"));
    }

    #[test]
    fn keeps_every_limit_and_names_the_first_problem() {
        let zero = p(r#"{"a":[-0]}"#).unwrap_err().to_string();
        assert!(zero.contains("a[0]: -0 is not an integer"), "{zero}");
        assert!(p("[0,-9007199254740991]").is_ok());
        let big = p(r#"{"n":-99999999999999999999}"#).unwrap_err().to_string();
        assert!(
            big.contains("n: integer -99999999999999999999 is outside"),
            "{big}"
        );
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(p(&nest(127)).is_ok());
        assert!(p(&nest(128)).is_err());
        // In document order: the float comes before the repeated key.
        let first = p(r#"{"a":1.5,"a":1}"#).unwrap_err().to_string();
        assert!(first.starts_with("a: 1.5 is not an integer"), "{first}");
        let top = p("2.5").unwrap_err().to_string();
        assert!(top.starts_with("the document: 2.5 is not"), "{top}");
        let syntax = p(r#"{"a":{"b":tru}}"#).unwrap_err().to_string();
        assert!(
            syntax.starts_with("a.b: expected a value at line 1"),
            "{syntax}"
        );
    }
}
