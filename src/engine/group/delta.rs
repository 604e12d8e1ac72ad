//! JSON deltas between two versions of a view or a checkpoint, in the
//! reference's wire form (`proto/json_delta.py`).
//!
//! A delta is an array of operations applied in order to a copy of the
//! base value:
//!
//! * `{"op":"set","path":[…],"value":v}` replaces (or adds) the member at
//!   `path`; an empty path replaces the whole value;
//! * `{"op":"remove","path":[…]}` deletes an object member or array element;
//! * `{"op":"splice","path":[…],"index":i,"delete":n,"items":[…]}` replaces
//!   `n` elements of the array at `path`, starting at `i`, with `items`.
//!
//! Paths hold object keys (strings) and array indices (non-negative
//! integers), at most [`MAX_DELTA_PATH_DEPTH`] of them; a delta has at most
//! [`MAX_DELTA_OPS`] operations. [`make_delta`] writes exactly the
//! operations the reference writes, [`apply_delta`] accepts and refuses
//! exactly what the reference does, with the same error texts.

use crate::json::{Map, Number, Value};

/// Longest path an operation may carry.
pub const MAX_DELTA_PATH_DEPTH: usize = 32;
/// Most operations in one delta; a longer diff becomes one whole-value set.
pub const MAX_DELTA_OPS: usize = 1024;

/// Why a delta cannot be applied (the texts are the reference's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    #[error("JSON delta must be an array")]
    NotArray,
    #[error("JSON delta has too many operations")]
    TooManyOps,
    #[error("JSON delta operation must be an object")]
    OpNotObject,
    #[error("set operation has unknown fields")]
    SetFields,
    #[error("remove operation is invalid")]
    RemoveInvalid,
    #[error("splice operation has unknown fields")]
    SpliceFields,
    #[error("splice target must be an array")]
    SpliceTarget,
    #[error("splice bounds are invalid")]
    SpliceBounds,
    #[error("unsupported JSON delta operation")]
    Unsupported,
    #[error("JSON delta path is invalid")]
    PathInvalid,
    #[error("JSON delta path token is invalid")]
    TokenInvalid,
    #[error("JSON delta path does not exist")]
    PathMissing,
    #[error("JSON delta array path is out of bounds")]
    OutOfBounds,
    #[error("JSON delta path type mismatch")]
    TypeMismatch,
    #[error("JSON delta set target is invalid")]
    SetTarget,
    #[error("JSON delta remove target is invalid")]
    RemoveTarget,
}

/// Which equality decides that two values need no operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Equality {
    /// Python's `==`, as the reference compares (`1 == 1.0 == True`).
    Python,
    /// Same JSON document: what the hashes see.
    Exact,
}

impl Equality {
    fn same(self, a: &Value, b: &Value) -> bool {
        match self {
            Equality::Python => a.py_eq(b),
            Equality::Exact => a == b,
        }
    }
}

/// The reference's delta from `prev` to `cur`: the operations
/// `make_json_delta` writes, in its order, with its key order inside each
/// operation. Values the reference holds equal under Python's `==` (`true`
/// and `1`, `1` and `1.0`) produce no operation, exactly as there.
pub fn make_delta(prev: &Value, cur: &Value) -> Vec<Value> {
    make_with(prev, cur, Equality::Python)
}

/// [`make_delta`] with exact JSON equality: the same operations whenever no
/// value changes between `true`/`1`/`1.0` and the like, and otherwise a
/// delta that still rebuilds `cur` exactly (the reference's would not).
/// The authority uses this one, so its deltas always reproduce the hashes.
pub fn make_delta_exact(prev: &Value, cur: &Value) -> Vec<Value> {
    make_with(prev, cur, Equality::Exact)
}

/// The delta between the objects made of `keys` of `prev` and of `cur`
/// (both must hold every key; `keys` sorted by code point), as
/// [`make_delta_exact`] would write it for those two objects, without
/// building them. `whole` builds the object of `cur` for the rare delta
/// that falls back to one whole-value set.
pub(crate) fn make_fields_delta_exact(
    prev: &Map,
    cur: &Map,
    keys: &[&str],
    whole: impl FnOnce() -> Value,
) -> Vec<Value> {
    let mut d = Differ::new(Equality::Exact);
    let mut path = Vec::with_capacity(8);
    for key in keys {
        if let (Some(p), Some(c)) = (prev.get(key), cur.get(key)) {
            path.push(*key);
            d.diff(p, c, &mut path);
            path.pop();
        }
    }
    d.finish(whole)
}

fn make_with(prev: &Value, cur: &Value, eq: Equality) -> Vec<Value> {
    let mut d = Differ::new(eq);
    let mut path = Vec::with_capacity(8);
    d.diff(prev, cur, &mut path);
    d.finish(|| cur.clone())
}

/// The state of one diff: the operations so far, and whether they already
/// exceed what a delta may hold (then the rest of the walk is skipped, the
/// result being one whole-value set whatever else would follow).
struct Differ {
    eq: Equality,
    ops: Vec<Value>,
    overflow: bool,
}

fn path_value(path: &[&str]) -> Value {
    Value::Array(path.iter().map(|k| Value::from(*k)).collect())
}

fn set_op(path: &[&str], value: Value) -> Value {
    let mut m = Map::with_capacity(3);
    m.insert("op", Value::from("set"));
    m.insert("path", path_value(path));
    m.insert("value", value);
    Value::Object(m)
}

fn splice_op(path: &[&str], index: usize, delete: usize, items: &[Value]) -> Value {
    let mut m = Map::with_capacity(5);
    m.insert("op", Value::from("splice"));
    m.insert("path", path_value(path));
    m.insert("index", Value::from(index));
    m.insert("delete", Value::from(delete));
    m.insert("items", Value::Array(items.to_vec()));
    Value::Object(m)
}

impl Differ {
    fn new(eq: Equality) -> Self {
        Differ {
            eq,
            ops: Vec::new(),
            overflow: false,
        }
    }

    fn push(&mut self, path_len: usize, op: Value) {
        if path_len > MAX_DELTA_PATH_DEPTH || self.ops.len() >= MAX_DELTA_OPS {
            self.overflow = true;
        }
        self.ops.push(op);
    }

    fn finish(self, whole: impl FnOnce() -> Value) -> Vec<Value> {
        if self.overflow {
            vec![set_op(&[], whole())]
        } else {
            self.ops
        }
    }

    fn diff<'a>(&mut self, prev: &'a Value, cur: &'a Value, path: &mut Vec<&'a str>) {
        if self.overflow || self.eq.same(prev, cur) {
            return;
        }
        match (prev, cur) {
            (Value::Object(p), Value::Object(c)) => self.diff_object(p, c, path),
            (Value::Array(p), Value::Array(c)) => self.diff_array(p, c, path),
            _ => {
                let op = set_op(path, cur.clone());
                self.push(path.len(), op);
            }
        }
    }

    fn diff_object<'a>(&mut self, prev: &'a Map, cur: &'a Map, path: &mut Vec<&'a str>) {
        let mut p: Vec<(&str, &Value)> = prev.iter().collect();
        let mut c: Vec<(&str, &Value)> = cur.iter().collect();
        p.sort_unstable_by(|a, b| a.0.cmp(b.0));
        c.sort_unstable_by(|a, b| a.0.cmp(b.0));
        // One merge of the two sorted key lists gives the three sorted
        // groups: keys only in `prev`, keys in both, keys only in `cur`.
        let mut removed = Vec::new();
        let mut common = Vec::new();
        let mut added = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < p.len() || j < c.len() {
            match (p.get(i), c.get(j)) {
                (Some(a), Some(b)) if a.0 == b.0 => {
                    common.push((a.0, a.1, b.1));
                    i += 1;
                    j += 1;
                }
                (Some(a), Some(b)) if a.0 < b.0 => {
                    removed.push(a.0);
                    i += 1;
                }
                (Some(a), None) => {
                    removed.push(a.0);
                    i += 1;
                }
                (_, Some(b)) => {
                    added.push((b.0, b.1));
                    j += 1;
                }
                (None, None) => break,
            }
        }
        for key in removed {
            if self.overflow {
                return;
            }
            path.push(key);
            let mut m = Map::with_capacity(2);
            m.insert("op", Value::from("remove"));
            m.insert("path", path_value(path));
            self.push(path.len(), Value::Object(m));
            path.pop();
        }
        for (key, a, b) in common {
            path.push(key);
            self.diff(a, b, path);
            path.pop();
        }
        for (key, v) in added {
            if self.overflow {
                return;
            }
            path.push(key);
            let op = set_op(path, v.clone());
            self.push(path.len(), op);
            path.pop();
        }
    }

    fn diff_array(&mut self, prev: &[Value], cur: &[Value], path: &[&str]) {
        let eq = self.eq;
        let limit = prev.len().min(cur.len());
        let mut prefix = 0;
        while prefix < limit && eq.same(&prev[prefix], &cur[prefix]) {
            prefix += 1;
        }
        let mut suffix = 0;
        while suffix < prev.len() - prefix
            && suffix < cur.len() - prefix
            && eq.same(&prev[prev.len() - suffix - 1], &cur[cur.len() - suffix - 1])
        {
            suffix += 1;
        }
        if prefix > 0 || suffix > 0 {
            let prev_end = prev.len() - suffix;
            let cur_end = cur.len() - suffix;
            let op = splice_op(path, prefix, prev_end - prefix, &cur[prefix..cur_end]);
            self.push(path.len(), op);
            return;
        }
        // A bounded history that dropped its oldest entries and gained new
        // ones: drop the expired head, then append the new tail.
        for drop in 1..prev.len() {
            let overlap = prev.len() - drop;
            if overlap <= cur.len()
                && prev[drop..]
                    .iter()
                    .zip(&cur[..overlap])
                    .all(|(a, b)| eq.same(a, b))
            {
                self.push(path.len(), splice_op(path, 0, drop, &[]));
                if overlap < cur.len() {
                    let op = splice_op(path, overlap, 0, &cur[overlap..]);
                    self.push(path.len(), op);
                }
                return;
            }
        }
        let op = splice_op(path, 0, prev.len(), cur);
        self.push(path.len(), op);
    }
}

/// One path token: an object key or an array index. Indices too large for
/// 64 bits are kept as `u64::MAX`, past the end of any array.
#[derive(Debug, Clone, Copy)]
enum Token<'a> {
    Key(&'a str),
    Index(u64),
}

fn parse_path(value: Option<&Value>) -> Result<Vec<Token<'_>>, DeltaError> {
    let Some(Value::Array(items)) = value else {
        return Err(DeltaError::PathInvalid);
    };
    if items.len() > MAX_DELTA_PATH_DEPTH {
        return Err(DeltaError::PathInvalid);
    }
    items
        .iter()
        .map(|t| match t {
            Value::String(s) => Ok(Token::Key(s)),
            Value::Number(Number::Int(i)) if *i >= 0 => Ok(Token::Index(i.unsigned_abs())),
            Value::Number(Number::BigInt(s)) if !s.starts_with('-') => Ok(Token::Index(u64::MAX)),
            _ => Err(DeltaError::TokenInvalid),
        })
        .collect()
}

/// `i` as an index into an array of length `len`, when it is one.
fn index_in(i: u64, len: usize) -> Option<usize> {
    usize::try_from(i).ok().filter(|i| *i < len)
}

fn resolve<'v>(root: &'v mut Value, path: &[Token<'_>]) -> Result<&'v mut Value, DeltaError> {
    let mut cur = root;
    for token in path {
        cur = match (cur, *token) {
            (Value::Object(m), Token::Key(k)) => m.get_mut(k).ok_or(DeltaError::PathMissing)?,
            (Value::Array(a), Token::Index(i)) => {
                let len = a.len();
                let i = index_in(i, len).ok_or(DeltaError::OutOfBounds)?;
                a.get_mut(i).ok_or(DeltaError::OutOfBounds)?
            }
            _ => return Err(DeltaError::TypeMismatch),
        };
    }
    Ok(cur)
}

/// Exactly these keys (an object's keys are distinct, so length and
/// membership decide).
fn has_exactly(m: &Map, keys: &[&str]) -> bool {
    m.len() == keys.len() && keys.iter().all(|k| m.contains_key(k))
}

/// A splice bound: an integer that is no bool, as a `usize` when it fits
/// (larger or negative ones are out of bounds anyway).
fn bound(v: Option<&Value>) -> Option<usize> {
    match v {
        Some(Value::Number(Number::Int(i))) if *i >= 0 => usize::try_from(*i).ok(),
        _ => None,
    }
}

fn apply_op(result: &mut Value, op: &Value) -> Result<(), DeltaError> {
    let Value::Object(op) = op else {
        return Err(DeltaError::OpNotObject);
    };
    let kind = op.get("op").and_then(Value::as_str);
    let path = parse_path(op.get("path"))?;
    match kind {
        Some("set") => {
            if !has_exactly(op, &["op", "path", "value"]) {
                return Err(DeltaError::SetFields);
            }
            let value = op.get("value").cloned().unwrap_or(Value::Null);
            let Some((last, parent_path)) = path.split_last() else {
                *result = value;
                return Ok(());
            };
            match (resolve(result, parent_path)?, *last) {
                (Value::Object(m), Token::Key(k)) => {
                    m.insert(k, value);
                }
                (Value::Array(a), Token::Index(i)) => {
                    let len = a.len();
                    let slot = index_in(i, len).and_then(|i| a.get_mut(i));
                    *slot.ok_or(DeltaError::SetTarget)? = value;
                }
                _ => return Err(DeltaError::SetTarget),
            }
            Ok(())
        }
        Some("remove") => {
            if !has_exactly(op, &["op", "path"]) {
                return Err(DeltaError::RemoveInvalid);
            }
            let Some((last, parent_path)) = path.split_last() else {
                return Err(DeltaError::RemoveInvalid);
            };
            match (resolve(result, parent_path)?, *last) {
                (Value::Object(m), Token::Key(k)) if m.contains_key(k) => {
                    m.remove(k);
                }
                (Value::Array(a), Token::Index(i)) => {
                    let i = index_in(i, a.len()).ok_or(DeltaError::RemoveTarget)?;
                    a.remove(i);
                }
                _ => return Err(DeltaError::RemoveTarget),
            }
            Ok(())
        }
        Some("splice") => {
            if !has_exactly(op, &["op", "path", "index", "delete", "items"]) {
                return Err(DeltaError::SpliceFields);
            }
            let Value::Array(target) = resolve(result, &path)? else {
                return Err(DeltaError::SpliceTarget);
            };
            let (Some(index), Some(delete), Some(Value::Array(items))) = (
                bound(op.get("index")),
                bound(op.get("delete")),
                op.get("items"),
            ) else {
                return Err(DeltaError::SpliceBounds);
            };
            if index > target.len() || delete > target.len() - index {
                return Err(DeltaError::SpliceBounds);
            }
            target.splice(index..index + delete, items.iter().cloned());
            Ok(())
        }
        _ => Err(DeltaError::Unsupported),
    }
}

/// Applies `ops` to a copy of `prev`, as the reference's `apply_json_delta`
/// does: the same checks in the same order, the same refusals.
pub fn apply_delta(prev: &Value, ops: &Value) -> Result<Value, DeltaError> {
    let Value::Array(list) = ops else {
        return Err(DeltaError::NotArray);
    };
    if list.len() > MAX_DELTA_OPS {
        return Err(DeltaError::TooManyOps);
    }
    let mut result = prev.clone();
    for op in list {
        apply_op(&mut result, op)?;
    }
    Ok(result)
}

/// [`apply_delta`] on a base the caller gives up (no copy is made).
pub fn apply_delta_owned(prev: Value, ops: &Value) -> Result<Value, DeltaError> {
    let Value::Array(list) = ops else {
        return Err(DeltaError::NotArray);
    };
    if list.len() > MAX_DELTA_OPS {
        return Err(DeltaError::TooManyOps);
    }
    let mut result = prev;
    for op in list {
        apply_op(&mut result, op)?;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::canonical::to_string_ordered;
    use crate::json::parse_str;

    fn v(s: &str) -> Value {
        parse_str(s).unwrap()
    }

    fn ops(prev: &str, cur: &str) -> String {
        to_string_ordered(&Value::Array(make_delta(&v(prev), &v(cur))))
    }

    #[test]
    fn object_members_removed_diffed_added_in_key_order() {
        assert_eq!(
            ops(
                r#"{"b":1,"a":2,"z":{"q":1}}"#,
                r#"{"z":{"q":2},"c":3,"a":2,"0":4}"#
            ),
            r#"[{"op":"remove","path":["b"]},{"op":"set","path":["z","q"],"value":2},{"op":"set","path":["0"],"value":4},{"op":"set","path":["c"],"value":3}]"#
        );
        assert_eq!(ops(r#"{"a":1}"#, r#"{"a":1}"#), "[]");
        assert_eq!(
            ops("1", r#""x""#),
            r#"[{"op":"set","path":[],"value":"x"}]"#
        );
    }

    #[test]
    fn arrays_prefix_suffix_fifo_and_replace() {
        // Common prefix/suffix: one splice of the middle.
        assert_eq!(
            ops("[1,2,3,4]", "[1,9,4]"),
            r#"[{"op":"splice","path":[],"index":1,"delete":2,"items":[9]}]"#
        );
        // A FIFO history: drop the head, append the tail.
        assert_eq!(
            ops(r#"{"m":[1,2,3]}"#, r#"{"m":[2,3,4,5]}"#),
            r#"[{"op":"splice","path":["m"],"index":0,"delete":1,"items":[]},{"op":"splice","path":["m"],"index":2,"delete":0,"items":[4,5]}]"#
        );
        // Nothing in common.
        assert_eq!(
            ops("[1,2]", "[3]"),
            r#"[{"op":"splice","path":[],"index":0,"delete":2,"items":[3]}]"#
        );
        assert_eq!(
            ops("[]", "[3]"),
            r#"[{"op":"splice","path":[],"index":0,"delete":0,"items":[3]}]"#
        );
    }

    #[test]
    fn python_equality_versus_exact() {
        // The reference sees true == 1 and 1 == 1.0: no operation at all.
        assert_eq!(ops(r#"{"a":true,"b":1}"#, r#"{"a":1,"b":1.0}"#), "[]");
        let exact = make_delta_exact(&v(r#"{"a":true,"b":1}"#), &v(r#"{"a":1,"b":1.0}"#));
        assert_eq!(
            to_string_ordered(&Value::Array(exact.clone())),
            r#"[{"op":"set","path":["a"],"value":1},{"op":"set","path":["b"],"value":1.0}]"#
        );
        let rebuilt = apply_delta(&v(r#"{"a":true,"b":1}"#), &Value::Array(exact)).unwrap();
        assert_eq!(rebuilt, v(r#"{"a":1,"b":1.0}"#));
    }

    #[test]
    fn too_many_operations_become_one_set() {
        let prev = Value::Object(
            (0..1100)
                .map(|i| (format!("k{i}"), Value::from(i)))
                .collect(),
        );
        let cur = Value::Object(
            (0..1100)
                .map(|i| (format!("k{i}"), Value::from(i + 1)))
                .collect(),
        );
        let d = make_delta(&prev, &cur);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].get("path"), Some(&Value::Array(vec![])));
        assert_eq!(d[0].get("value"), Some(&cur));
        // Exactly the limit is still a delta.
        let prev = Value::Object(
            (0..1024)
                .map(|i| (format!("k{i}"), Value::from(i)))
                .collect(),
        );
        let cur = Value::Object(
            (0..1024)
                .map(|i| (format!("k{i}"), Value::from(i + 1)))
                .collect(),
        );
        assert_eq!(make_delta(&prev, &cur).len(), 1024);
    }

    #[test]
    fn fields_delta_matches_the_whole_object_delta() {
        let prev = v(r#"{"a":[1,2],"b":{"x":1},"c":"s","meta":1}"#);
        let cur = v(r#"{"a":[2,3],"b":{"y":1},"c":"s","meta":2}"#);
        let keys = ["a", "b", "c"];
        let sub = |m: &Value| {
            Value::Object(
                keys.iter()
                    .map(|k| (*k, m.get(k).cloned().unwrap()))
                    .collect(),
            )
        };
        let want = make_delta_exact(&sub(&prev), &sub(&cur));
        let got = make_fields_delta_exact(
            prev.as_object().unwrap(),
            cur.as_object().unwrap(),
            &keys,
            || sub(&cur),
        );
        assert_eq!(got, want);
    }

    #[test]
    fn apply_refusals_in_the_reference_order() {
        let base = v(r#"{"a":[1,2,3],"o":{"k":1}}"#);
        let err = |d: &str| apply_delta(&base, &v(d)).unwrap_err().to_string();
        assert_eq!(err("{}"), "JSON delta must be an array");
        assert_eq!(err("[1]"), "JSON delta operation must be an object");
        // The path is checked before the operation kind.
        assert_eq!(err(r#"[{"op":"nope"}]"#), "JSON delta path is invalid");
        assert_eq!(
            err(r#"[{"op":"nope","path":[true]}]"#),
            "JSON delta path token is invalid"
        );
        assert_eq!(
            err(r#"[{"op":"nope","path":[-1]}]"#),
            "JSON delta path token is invalid"
        );
        assert_eq!(
            err(r#"[{"op":"nope","path":[]}]"#),
            "unsupported JSON delta operation"
        );
        assert_eq!(
            err(r#"[{"op":"set","path":[]}]"#),
            "set operation has unknown fields"
        );
        assert_eq!(
            err(r#"[{"op":"remove","path":[]}]"#),
            "remove operation is invalid"
        );
        assert_eq!(
            err(r#"[{"op":"remove","path":["x"]}]"#),
            "JSON delta remove target is invalid"
        );
        assert_eq!(
            err(r#"[{"op":"set","path":["x","y"],"value":1}]"#),
            "JSON delta path does not exist"
        );
        assert_eq!(
            err(r#"[{"op":"set","path":["a",3],"value":1}]"#),
            "JSON delta set target is invalid"
        );
        assert_eq!(
            err(r#"[{"op":"set","path":["a",9,1],"value":1}]"#),
            "JSON delta array path is out of bounds"
        );
        assert_eq!(
            err(r#"[{"op":"set","path":["a","x"],"value":1}]"#),
            "JSON delta set target is invalid"
        );
        assert_eq!(
            err(r#"[{"op":"set","path":["o",0,"x"],"value":1}]"#),
            "JSON delta path type mismatch"
        );
        assert_eq!(
            err(r#"[{"op":"splice","path":["o"],"index":0,"delete":0,"items":[]}]"#),
            "splice target must be an array"
        );
        assert_eq!(
            err(r#"[{"op":"splice","path":["a"],"index":2,"delete":2,"items":[]}]"#),
            "splice bounds are invalid"
        );
        assert_eq!(
            err(r#"[{"op":"splice","path":["a"],"index":true,"delete":0,"items":[]}]"#),
            "splice bounds are invalid"
        );
        assert_eq!(
            err(
                r#"[{"op":"splice","path":["a"],"index":99999999999999999999999,"delete":0,"items":[]}]"#
            ),
            "splice bounds are invalid"
        );
        assert_eq!(
            err(r#"[{"op":"set","path":["a",99999999999999999999999],"value":1}]"#),
            "JSON delta set target is invalid"
        );
        let many = format!(
            "[{}]",
            vec![r#"{"op":"set","path":[],"value":1}"#; 1025].join(",")
        );
        assert_eq!(err(&many), "JSON delta has too many operations");
    }

    #[test]
    fn apply_edits() {
        let base = v(r#"{"a":[1,2,3],"o":{"k":1,"j":2}}"#);
        let got = apply_delta(
            &base,
            &v(
                r#"[{"op":"remove","path":["o","k"]},{"op":"set","path":["o","z"],"value":[0]},
                  {"op":"splice","path":["a"],"index":1,"delete":1,"items":[7,8]},
                  {"op":"set","path":["a",0],"value":null},{"op":"remove","path":["a",3]}]"#,
            ),
        )
        .unwrap();
        assert_eq!(
            to_string_ordered(&got),
            r#"{"a":[null,7,8],"o":{"j":2,"z":[0]}}"#
        );
        // The base is untouched, and an empty path replaces everything.
        assert_eq!(base, v(r#"{"a":[1,2,3],"o":{"k":1,"j":2}}"#));
        assert_eq!(
            apply_delta(&base, &v(r#"[{"op":"set","path":[],"value":5}]"#)).unwrap(),
            Value::from(5)
        );
    }

    #[test]
    fn exact_deltas_rebuild_generated_pairs() {
        use rand::{Rng, SeedableRng, rngs::StdRng};
        fn gen_value(rng: &mut StdRng, depth: u32) -> Value {
            match rng.random_range(0..if depth > 3 { 4 } else { 6 }) {
                0 => Value::Null,
                1 => Value::Bool(rng.random()),
                2 => Value::from(rng.random_range(-3..4i64)),
                3 => Value::from(["a", "b", "é", ""][rng.random_range(0..4)]),
                4 => Value::Array(
                    (0..rng.random_range(0..5))
                        .map(|_| gen_value(rng, depth + 1))
                        .collect(),
                ),
                _ => Value::Object(
                    (0..rng.random_range(0..5))
                        .map(|_| {
                            (
                                ["x", "y", "z", "w"][rng.random_range(0..4)],
                                gen_value(rng, depth + 1),
                            )
                        })
                        .collect(),
                ),
            }
        }
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..2000 {
            let a = gen_value(&mut rng, 0);
            let b = gen_value(&mut rng, 0);
            let d = Value::Array(make_delta_exact(&a, &b));
            assert_eq!(apply_delta(&a, &d).unwrap(), b, "{a} -> {b} by {d}");
            let d = Value::Array(make_delta(&a, &b));
            assert!(apply_delta(&a, &d).unwrap().py_eq(&b));
        }
    }
}
