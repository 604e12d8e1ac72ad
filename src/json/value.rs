//! The value model: what a parsed document holds, as the reference's Python
//! model holds it.
//!
//! Integers of any size (`Number::BigInt`), `1` distinct from `1.0`, and
//! object keys in insertion order. A parsed [`Map`] also carries what
//! canonical serialisation would otherwise find out on every call.

use super::short;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

pub use super::key::Key;

/// A JSON number, kept exactly as the reference's Python model sees it.
#[derive(Debug, Clone)]
pub enum Number {
    /// An integer that fits in 64 bits.
    Int(i64),
    /// An integer outside the 64-bit range, as normalised decimal digits
    /// (optional `-`, no leading zeros).
    BigInt(Box<str>),
    /// A finite binary64 float (the literal had a fraction or exponent).
    Float(f64),
}

/// A parsed JSON value. Objects keep insertion order (a key written twice is
/// the parser's [`DuplicateKeys`](super::DuplicateKeys) choice).
#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    /// A string, shared between copies: cloning a value (a table's state
    /// for every action, an envelope's members) counts a reference instead
    /// of copying every string in it.
    String(Arc<str>),
    Array(Vec<Value>),
    Object(Map),
}

/// An insertion-ordered JSON object.
///
/// Its members are shared between copies (copy on write): cloning a map,
/// or a value holding one, is one reference count, and a change copies only
/// the objects on its path. The leader of a table clones its whole state
/// (a 108-card catalog among it) for every action so that a refused action
/// changes nothing; the catalog is never copied again.
///
/// A parsed map also remembers what canonical serialisation (which hashes
/// depend on) would otherwise find out on every call: its key order by code
/// point, and whether any string in it or below it needs an escape.
#[derive(Debug, Clone, Default)]
pub struct Map {
    inner: Arc<Members>,
}

#[derive(Debug, Default)]
struct Members {
    entries: Vec<(Key, Value)>,
    /// What the parser learned: `[flags]` when insertion order is key
    /// order, else `[flags, index of the entries in key order...]`. `None`
    /// (built or changed maps) knows nothing: the writer checks the order
    /// and scans every string.
    meta: Option<Box<[u32]>>,
    /// The canonical bytes of this object, once written twice unchanged
    /// (see [`Map::cached_canonical`]). Every change goes through
    /// [`Map::members_mut`], which clears it; a copy starts without it.
    canonical: OnceLock<Box<[u8]>>,
    /// Written in canonical form once since the last change.
    written: AtomicBool,
    /// A caller's number about this object's contents, kept until the next
    /// change (0: none): the group engine's limit check keeps the nesting
    /// it found below an object that passed (see [`Map::nest_memo`]).
    nest: AtomicU32,
}

impl Clone for Members {
    fn clone(&self) -> Self {
        Members {
            entries: self.entries.clone(),
            meta: self.meta.clone(),
            canonical: OnceLock::new(),
            written: AtomicBool::new(false),
            nest: AtomicU32::new(0),
        }
    }
}

/// `meta[0]`: no key or string anywhere in this object (nested objects and
/// arrays included) contains `"`, `\` or a control character. Cleared by
/// every method that hands out or changes a member, so it can only be
/// stale in the safe direction.
const PLAIN: u32 = 1;

impl Map {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        Self {
            inner: Arc::new(Members {
                entries: Vec::with_capacity(n),
                meta: None,
                canonical: OnceLock::new(),
                written: AtomicBool::new(false),
                nest: AtomicU32::new(0),
            }),
        }
    }

    /// The members, to change: copied first when another map shares them.
    /// A change anywhere below this object passes through here too (a
    /// nested value is reached by `get_mut`), so the canonical bytes
    /// remembered are dropped.
    fn members_mut(&mut self) -> &mut Members {
        let members = Arc::make_mut(&mut self.inner);
        members.canonical.take();
        *members.written.get_mut() = false;
        *members.nest.get_mut() = 0;
        members
    }

    /// What [`Map::set_nest_memo`] kept since the last change.
    pub(crate) fn nest_memo(&self) -> Option<u32> {
        match self.inner.nest.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n - 1),
        }
    }

    /// Keeps `nest` (below `u32::MAX`) with this object until it changes.
    pub(crate) fn set_nest_memo(&self, nest: u32) {
        if let Some(n) = nest.checked_add(1) {
            self.inner.nest.store(n, Ordering::Relaxed);
        }
    }

    /// The canonical bytes of this object, when a writer remembered them.
    pub(crate) fn cached_canonical(&self) -> Option<&[u8]> {
        self.inner.canonical.get().map(|b| &b[..])
    }

    /// Notes that this object was written in canonical form; true when it
    /// had been before, unchanged (then it is likely to be written again:
    /// what every frame's state and views carry over from the last one).
    pub(crate) fn written_again(&self) -> bool {
        self.inner.written.swap(true, Ordering::Relaxed)
    }

    /// Remembers `bytes` as this object's canonical form (the caller just
    /// wrote them from it).
    pub(crate) fn remember_canonical(&self, bytes: &[u8]) {
        let _ = self.inner.canonical.set(bytes.into());
    }

    /// Do the two maps share their members (so are equal without looking)?
    pub(crate) fn same_members(&self, other: &Map) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A map from a parser's members (no key twice), with what the parser
    /// learned: `plain` when no string in it or below it needs an escape.
    pub(super) fn from_parsed(entries: Vec<(Key, Value)>, plain: bool) -> Self {
        let flags = if plain { PLAIN } else { 0 };
        let in_order = entries.windows(2).all(|w| w[0].0 < w[1].0);
        let meta = if in_order {
            Some(vec![flags].into_boxed_slice())
        } else if entries.len() >= u32::MAX as usize {
            None
        } else {
            let mut idx: Vec<u32> = Vec::with_capacity(entries.len() + 1);
            idx.push(flags);
            idx.extend(0..entries.len() as u32);
            idx[1..].sort_unstable_by(|a, b| entries[*a as usize].0.cmp(&entries[*b as usize].0));
            Some(idx.into_boxed_slice())
        };
        Self {
            inner: Arc::new(Members {
                entries,
                meta,
                canonical: OnceLock::new(),
                written: AtomicBool::new(false),
                nest: AtomicU32::new(0),
            }),
        }
    }

    /// Entries in key (code point) order, when the map knows it without
    /// sorting: `Some(None)` means insertion order is key order.
    pub(crate) fn known_key_order(&self) -> Option<Option<&[u32]>> {
        match self.inner.meta.as_deref() {
            Some([_]) => Some(None),
            Some([_, idx @ ..]) if idx.len() == self.inner.entries.len() => Some(Some(idx)),
            _ if self.inner.entries.windows(2).all(|w| w[0].0 < w[1].0) => Some(None),
            _ => None,
        }
    }

    /// No string in this object or below it needs an escape (known for
    /// parsed objects that were not changed since).
    pub(crate) fn is_plain(&self) -> bool {
        self.inner
            .meta
            .as_deref()
            .is_some_and(|m| m[0] & PLAIN != 0)
    }

    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.entries.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.inner
            .entries
            .iter()
            .find(|(k, _)| short::str_eq(k, key))
            .map(|(_, v)| v)
    }

    /// The string at `key`; `None` when absent or not a string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        // Look before copying: a shared map with no such key stays shared.
        if !self.contains_key(key) {
            return None;
        }
        let members = self.members_mut();
        if let Some(m) = members.meta.as_deref_mut() {
            m[0] &= !PLAIN;
        }
        members
            .entries
            .iter_mut()
            .find(|(k, _)| short::str_eq(k, key))
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.inner
            .entries
            .iter()
            .any(|(k, _)| short::str_eq(k, key))
    }

    /// Inserts or replaces; a replaced key keeps its original position.
    pub fn insert(&mut self, key: impl Into<Key>, value: Value) -> Option<Value> {
        let key = key.into();
        if let Some(slot) = self.get_mut(&key) {
            return Some(std::mem::replace(slot, value));
        }
        let members = self.members_mut();
        members.meta = None;
        members.entries.push((key, value));
        None
    }

    /// A map of `entries`, whose keys are distinct (what `obj!` and the
    /// rules' whole-object rebuilds make: the members are moved in at once,
    /// not pushed one by one, each push checking the map is unshared; a
    /// repeated key is a bug, caught by the debug assertion in tests).
    pub fn from_distinct(entries: Vec<(Key, Value)>) -> Self {
        debug_assert!(
            entries
                .iter()
                .enumerate()
                .all(|(i, (k, _))| entries[..i].iter().all(|(j, _)| j != k)),
            "a key twice among distinct entries"
        );
        Self {
            inner: Arc::new(Members {
                entries,
                meta: None,
                canonical: OnceLock::new(),
                written: AtomicBool::new(false),
                nest: AtomicU32::new(0),
            }),
        }
    }

    /// Appends a member whose key the map does not hold yet (what `obj!`
    /// builds with: its keys are distinct by construction; a repeated key
    /// is a bug, caught by the debug assertion in tests).
    pub fn push_new(&mut self, key: impl Into<Key>, value: Value) {
        let key = key.into();
        debug_assert!(!self.contains_key(&key), "obj!: the key {key:?} twice");
        let members = self.members_mut();
        members.meta = None;
        members.entries.push((key, value));
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let idx = self.inner.entries.iter().position(|(k, _)| k == key)?;
        let members = self.members_mut();
        members.meta = None;
        Some(members.entries.remove(idx).1)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.inner.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> {
        self.inner.entries.iter().map(|(k, _)| k.as_str())
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> {
        self.inner.entries.iter().map(|(_, v)| v)
    }

    /// The members, by value, in insertion order.
    pub fn into_entries(self) -> Vec<(Key, Value)> {
        match Arc::try_unwrap(self.inner) {
            Ok(members) => members.entries,
            Err(shared) => shared.entries.clone(),
        }
    }

    pub(crate) fn entries(&self) -> &[(Key, Value)] {
        &self.inner.entries
    }
}

impl<K: Into<Key>> FromIterator<(K, Value)> for Map {
    fn from_iter<T: IntoIterator<Item = (K, Value)>>(iter: T) -> Self {
        let mut m = Map::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

/// Same JSON document: objects compare as sets of members (key order does
/// not matter), `1` and `1.0` differ. (Python's looser `==` is
/// [`Value::py_eq`].)
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(Number::Int(a)), Value::Number(Number::Int(b))) => a == b,
            (Value::Number(Number::BigInt(a)), Value::Number(Number::BigInt(b))) => a == b,
            (Value::Number(Number::Float(a)), Value::Number(Number::Float(b))) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => a == b,
            _ => false,
        }
    }
}

impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.same_members(other)
            || (self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v)))
    }
}

impl Value {
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value as an `i64` if it is a JSON integer (never a bool, never a
    /// float) that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i),
            _ => None,
        }
    }

    /// The value as an `f64` if it is a JSON number (integers converted;
    /// big integers approximately).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i as f64),
            Value::Number(Number::Float(f)) => Some(*f),
            Value::Number(Number::BigInt(s)) => s.parse().ok(),
            _ => None,
        }
    }

    /// Python's `isinstance(v, int) and not isinstance(v, bool)`.
    pub fn is_integer(&self) -> bool {
        matches!(self, Value::Number(Number::Int(_) | Number::BigInt(_)))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// `obj.get(key)` on an object; `None` for every other type.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|m| m.get(key))
    }

    /// The string at `key` of an object; `None` when absent, not a string,
    /// or `self` is no object.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// Whether any string or object key in the value (at any depth) holds
    /// U+0000, which PostgreSQL text cannot store.
    pub fn holds_nul(&self) -> bool {
        match self {
            Value::String(s) => s.contains('\0'),
            Value::Array(a) => a.iter().any(Value::holds_nul),
            Value::Object(m) => m.iter().any(|(k, v)| k.contains('\0') || v.holds_nul()),
            _ => false,
        }
    }

    /// The JSON type name, for error messages.
    /// The type Python's `json` gives this value, as its error texts name
    /// it (`NoneType`, `bool`, `int`, `float`, `str`, `list`, `dict`).
    pub fn py_type_name(&self) -> &'static str {
        match self {
            Value::Null => "NoneType",
            Value::Bool(_) => "bool",
            Value::Number(Number::Float(_)) => "float",
            Value::Number(_) => "int",
            Value::String(_) => "str",
            Value::Array(_) => "list",
            Value::Object(_) => "dict",
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(Number::Float(_)) => "number",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(Arc::from(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(Arc::from(s))
    }
}

impl From<&String> for Value {
    fn from(s: &String) -> Self {
        Value::String(Arc::from(s.as_str()))
    }
}

impl From<Arc<str>> for Value {
    fn from(s: Arc<str>) -> Self {
        Value::String(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Number(Number::Int(i))
    }
}

impl From<i32> for Value {
    fn from(i: i32) -> Self {
        Value::Number(Number::Int(i64::from(i)))
    }
}

impl From<u32> for Value {
    fn from(u: u32) -> Self {
        Value::Number(Number::Int(i64::from(u)))
    }
}

impl From<u64> for Value {
    fn from(u: u64) -> Self {
        match i64::try_from(u) {
            Ok(i) => Value::Number(Number::Int(i)),
            Err(_) => Value::Number(Number::BigInt(u.to_string().into())),
        }
    }
}

impl From<usize> for Value {
    fn from(u: usize) -> Self {
        Value::from(u as u64)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Number(Number::Float(f))
    }
}

impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Object(m)
    }
}

impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Self {
        Value::Array(a)
    }
}

impl From<&Value> for Value {
    fn from(v: &Value) -> Self {
        v.clone()
    }
}

/// Builds a [`Map`] in insertion order: `obj! { "action" => "join", "best_of" => 3 }`.
#[macro_export]
macro_rules! obj {
    ($($k:expr => $v:expr),* $(,)?) => {{
        $crate::json::Map::from_distinct(::std::vec![
            $( (::core::convert::Into::<$crate::json::Key>::into($k), $crate::json::Value::from($v)), )*
        ])
    }};
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self {
            Value::Null => ser.serialize_unit(),
            Value::Bool(b) => ser.serialize_bool(*b),
            Value::Number(Number::Int(i)) => ser.serialize_i64(*i),
            Value::Number(Number::BigInt(s)) => match s.parse::<u64>() {
                Ok(u) => ser.serialize_u64(u),
                Err(_) => match s.parse::<i128>() {
                    Ok(i) => ser.serialize_i128(i),
                    Err(_) => ser.serialize_f64(s.parse().unwrap_or(0.0)),
                },
            },
            Value::Number(Number::Float(x)) => ser.serialize_f64(*x),
            Value::String(s) => ser.serialize_str(s),
            Value::Array(a) => {
                let mut seq = ser.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Object(m) => m.serialize(ser),
        }
    }
}

impl serde::Serialize for Map {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = ser.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
