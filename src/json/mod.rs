//! The JSON model used wherever bytes must match the reference client.
//!
//! `serde_json::Value` cannot carry what the protocol contract needs: integers
//! beyond 64 bits, the distinction between `1` and `1.0`, and object key order
//! as written (the reference reports unknown message fields in the order the
//! sender wrote them). This module owns a small value type with those
//! properties (`value.rs`), one parser whose [`Dialect`] decides what a
//! repeated key means (`parse.rs`), the Python semantics (equality,
//! truthiness, `repr`) that the reference's error texts and decisions
//! depend on (`python.rs`), and canonical serialisation with the hashes
//! built on it ([`canonical`]).

pub mod canonical;
mod key;
mod parse;
mod printable;
mod python;
pub(crate) mod short;
mod value;

pub use parse::{
    Dialect, DuplicateKeys, MAX_DEPTH, ParseError, Python, parse_bytes, parse_str, parse_with,
};
pub use python::python_float_repr;
pub use value::{Key, Map, Number, Value};
