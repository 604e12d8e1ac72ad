//! Message validation against a spec's `messages`, with the reference's
//! schema lookup, decisions and error texts, compiled once per spec so that
//! validating a frame is a walk over pre-digested rules.
//!
//! Where the reference would crash on a malformed schema (a non-numeric
//! `min`, `values` that is not a list), the rule compiles to a clear error
//! text instead.

use super::text::Text;
use crate::json::{Key as Name, Map, Number, Value, bytes_eq as eq_bytes, key_eq as eq};
use std::cmp::Ordering;

/// One compiled entry of `spec.messages` (non-object entries are skipped,
/// as the reference skips them).
#[derive(Debug, Clone)]
pub(crate) struct CompiledMessage {
    /// `item.get("name")`.
    pub name: Value,
    direction: Direction,
    /// `fields.action.values`, as far as lookup by action needs it.
    actions: Membership,
    /// The compiled `fields`, or the reference's error when they are not a
    /// non-empty object.
    fields: Result<(Names, Vec<Rule>), String>,
}

#[derive(Debug, Clone)]
enum Direction {
    Both,
    Named(String),
    /// Missing or not a string: matches only when no direction is expected.
    Other,
}

/// What a Python `x in values` would answer.
#[derive(Debug, Clone)]
enum Membership {
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
    fn from(values: Option<&Value>) -> Self {
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
            Some(Value::String(s)) => Membership::Substring(s.clone()),
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

    fn contains(&self, v: &Value) -> bool {
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

    fn contains_str(&self, s: &str) -> bool {
        match self {
            Membership::List { strings, .. } => strings.contains(s),
            Membership::Substring(hay) => hay.contains(s),
            Membership::Keys(keys) => keys.contains(s),
            Membership::Invalid(_) => false,
        }
    }
}

#[derive(Debug, Clone)]
enum Rule {
    NotObject,
    Field { required: bool, kind: Kind },
}

/// A numeric limit from the schema. `raw` keeps the value as written for the
/// error text (Python formats it with `str()`, so `True` stays `True`);
/// `num` is None when it is not a number (the reference would raise a
/// TypeError comparing against it).
#[derive(Debug, Clone)]
struct Limit {
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
enum Kind {
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
enum Items {
    Missing,
    Nested,
    Scalar(Box<Kind>),
}

#[derive(Debug, Clone, Copy)]
enum Container {
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
    fn compile(schema: &Map) -> Kind {
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

    /// A quick verdict, taken inline for the common kinds: `true` when `v`
    /// passes and [`Kind::check`] would have nothing to say, `false` when it
    /// must look (a failing value, or a kind or limit this does not cover).
    #[inline(always)]
    fn passes(&self, v: &Value) -> bool {
        match (self, v) {
            (Kind::Hash | Kind::Key, Value::String(s)) => lower_hex_len(s, 64, 64),
            (Kind::Nonce, Value::String(s)) => lower_hex_len(s, 16, 64),
            (Kind::Id, Value::String(s)) => safe_id(s),
            (Kind::Text(max) | Kind::OtBlob(max), Value::String(s)) => fits(Some(s.len()), max),
            (Kind::Ciphertext(max), Value::String(s)) => ciphertext(s, max),
            (Kind::Boolean, Value::Bool(_)) => true,
            (Kind::Integer { min, max }, Value::Number(Number::Int(x))) => {
                let at_least = |m: &Option<Limit>| match m {
                    None => true,
                    Some(m) => m.int.is_some_and(|m| *x >= m),
                };
                let at_most = |m: &Option<Limit>| match m {
                    None => true,
                    Some(m) => m.int.is_some_and(|m| *x <= m),
                };
                at_least(min) && at_most(max)
            }
            (Kind::Enum(Membership::List { strings, .. }), Value::String(s)) => strings.contains(s),
            _ => false,
        }
    }

    /// Validates one value, appending errors for `key`.
    fn check(&self, v: &Value, key: Key<'_>, errors: &mut Errs) {
        match self {
            Kind::Integer { min, max, .. } => {
                let Value::Number(n @ (Number::Int(_) | Number::BigInt(_))) = v else {
                    errors.field(key, "expected integer");
                    return;
                };
                for (bound, below) in [(min, true), (max, false)] {
                    let Some(bound) = bound else { continue };
                    let (word, beyond) = if below {
                        ("below min", Ordering::Less)
                    } else {
                        ("above max", Ordering::Greater)
                    };
                    let past = match (n, bound.int) {
                        (Number::Int(x), Some(m)) => Some(x.cmp(&m)),
                        _ => bound.num.as_ref().and_then(|m| n.py_cmp(m)),
                    };
                    match &bound.num {
                        Some(_) if past == Some(beyond) => {
                            errors.field(key, word);
                            errors.0.push_str(" ");
                            errors.0.push_str(bound.text());
                        }
                        Some(_) => {}
                        None => errors.push(format_args!(
                            "{key}: schema {} {} is not a number",
                            if below { "min" } else { "max" },
                            bound.raw.py_repr()
                        )),
                    }
                }
            }
            Kind::Enum(values) => match v {
                Value::String(s) => {
                    if let Membership::Invalid(t) = values {
                        errors.push(format_args!("{key}: schema values is a {t}, not a list"));
                    } else if !values.contains_str(s) {
                        errors.field(key, "value ");
                        v.write_py_repr(&mut errors.0);
                        errors.0.push_str(" not in enum");
                    }
                }
                _ => errors.field(key, "expected enum string"),
            },
            Kind::Boolean => {
                if v.as_bool().is_none() {
                    errors.field(key, "expected boolean");
                }
            }
            Kind::Hash => {
                if !v.as_str().is_some_and(|s| lower_hex_len(s, 64, 64)) {
                    errors.field(key, "expected lowercase SHA256 hex");
                }
            }
            Kind::Nonce => {
                if !v.as_str().is_some_and(|s| lower_hex_len(s, 16, 64)) {
                    errors.field(key, "expected 16-64 lowercase hex chars");
                }
            }
            Kind::Id => {
                if !v.as_str().is_some_and(safe_id) {
                    errors.field(key, "expected safe identifier");
                }
            }
            Kind::Signature => {
                if !v.as_str().is_some_and(|s| lower_hex_len(s, 128, 128)) {
                    errors.field(key, "expected lowercase Ed25519 signature hex");
                }
            }
            Kind::Ticket => {
                if !v
                    .as_str()
                    .is_some_and(|s| !s.is_empty() && char_len_at_most(s, 2048))
                {
                    errors.field(key, "expected non-empty ticket <= 2048 chars");
                }
            }
            Kind::Text(max) => {
                if !fits(v.as_str().map(str::len), max) {
                    errors.field_parts(key, &["expected text <= ", max.text(), " UTF-8 bytes"]);
                }
            }
            Kind::Ciphertext(max) => {
                if !v.as_str().is_some_and(|s| ciphertext(s, max)) {
                    errors.field_parts(
                        key,
                        &[
                            "expected hex ciphertext <= ",
                            max.text(),
                            " chars (even length)",
                        ],
                    );
                }
            }
            Kind::Key => {
                if !v.as_str().is_some_and(|s| lower_hex_len(s, 64, 64)) {
                    errors.field(key, "expected 32-byte key (64 hex chars)");
                }
            }
            Kind::OtBlob(max) => {
                if !fits(v.as_str().map(str::len), max) {
                    errors.field_parts(key, &["expected ot_blob <= ", max.text(), " UTF-8 bytes"]);
                }
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
                    if !item_kind.passes(item) {
                        item_kind.check(item, key.item(i), errors);
                    }
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
                        let len = crate::canonical::canonical_len(v);
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

/// Error texts joined with `"; "` as they are found, in one buffer.
#[derive(Default)]
pub(crate) struct Errs(Text);

impl Errs {
    fn push(&mut self, args: std::fmt::Arguments<'_>) {
        use std::fmt::Write;
        self.sep();
        let _ = self.0.write_fmt(args);
    }

    fn sep(&mut self) {
        if !self.0.is_empty() {
            self.0.push_str("; ");
        }
    }

    /// `"{key}: {text}"` without the formatting machinery.
    fn field(&mut self, key: Key<'_>, text: &str) {
        self.field_parts(key, &[text]);
    }

    /// `"{key}: "` and then `parts`, without the formatting machinery.
    fn field_parts(&mut self, key: Key<'_>, parts: &[&str]) {
        self.sep();
        match key {
            Key::Field(k) => self.0.push_str(k),
            Key::Item(k, i) => {
                self.0.push_str(k);
                self.0.push_str("[");
                push_decimal(&mut self.0, i);
                self.0.push_str("]");
            }
        }
        self.0.push_str(": ");
        for p in parts {
            self.0.push_str(p);
        }
    }

    /// `"{prefix}{name}"`, e.g. `missing required field: x`.
    fn named(&mut self, prefix: &str, name: &str) {
        self.sep();
        self.0.push_str(prefix);
        self.0.push_str(name);
    }

    fn finish(self) -> Result<(), Text> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self.0)
        }
    }
}

/// `i` in decimal, appended.
fn push_decimal(out: &mut Text, i: usize) {
    let mut tmp = [0u8; 21];
    let at = crate::canonical::decimal_digits(i as u64, &mut tmp);
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&tmp[at..]).unwrap_or_default());
}

/// The name an error is reported under: a field, or an element of an
/// array field (arrays never nest, so one level is enough).
#[derive(Clone, Copy)]
enum Key<'a> {
    Field(&'a str),
    Item(&'a str, usize),
}

impl<'a> Key<'a> {
    fn item(self, i: usize) -> Key<'a> {
        match self {
            Key::Field(k) | Key::Item(k, _) => Key::Item(k, i),
        }
    }
}

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Field(k) => f.write_str(k),
            Key::Item(k, i) => write!(f, "{k}[{i}]"),
        }
    }
}

fn fits(len: Option<usize>, max: &Limit) -> bool {
    match len {
        Some(n) => max.exceeded_by(n) == Some(false),
        None => false,
    }
}

/// 1 to 128 of `A-Za-z0-9_.:-`.
fn safe_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes().fold(true, |acc, b| {
            acc & (b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
        })
}

/// Non-empty lowercase hex of even length within `max`.
fn ciphertext(s: &str, max: &Limit) -> bool {
    !s.is_empty()
        && s.len().is_multiple_of(2)
        && all_lower_hex(s.as_bytes())
        && fits(Some(s.len()), max)
}

fn is_lower_hex(b: u8) -> bool {
    (b.wrapping_sub(b'0') < 10) | (b.wrapping_sub(b'a') < 6)
}

fn lower_hex_len(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && all_lower_hex(s.as_bytes())
}

/// Every byte is `0-9` or `a-f`. Sixteen bytes at a time with no early
/// exit, which compiles to a few vector instructions per block; a ragged
/// end is covered by a last block that overlaps the one before it.
fn all_lower_hex(b: &[u8]) -> bool {
    fn block(c: &[u8; 16]) -> bool {
        c.iter().fold(true, |acc, &x| acc & is_lower_hex(x))
    }
    let n = b.len();
    if n < 8 {
        return b.iter().fold(true, |acc, &x| acc & is_lower_hex(x));
    }
    let mut w = [0u8; 16];
    if n < 16 {
        w[..8].copy_from_slice(&b[..8]);
        w[8..].copy_from_slice(&b[n - 8..]);
        return block(&w);
    }
    let mut ok = true;
    let mut blocks = b.chunks_exact(16);
    for c in &mut blocks {
        w.copy_from_slice(c);
        ok &= block(&w);
    }
    if !blocks.remainder().is_empty() {
        w.copy_from_slice(&b[n - 16..]);
        ok &= block(&w);
    }
    ok
}

fn char_len_at_most(s: &str, max: usize) -> bool {
    s.len() <= max || s.chars().count() <= max
}

impl CompiledMessage {
    pub(crate) fn compile(item: &Map) -> Self {
        let name = item.get("name").cloned().unwrap_or(Value::Null);
        let direction = match item.get("direction") {
            Some(Value::String(d)) if d == "both" => Direction::Both,
            Some(Value::String(d)) => Direction::Named(d.clone()),
            _ => Direction::Other,
        };
        // Lookup uses `item.get("fields") or {}`; validation requires a
        // non-empty object.
        let fields_obj = item.get("fields").and_then(Value::as_object);
        let actions = Membership::from(
            fields_obj
                .and_then(|f| f.get("action"))
                .and_then(Value::as_object)
                .and_then(|a| a.get("values")),
        );
        let fields = match fields_obj {
            Some(f) if !f.is_empty() => {
                let mut names = Names::default();
                let mut rules = Vec::with_capacity(f.len());
                for (k, v) in f.iter() {
                    names.push(k);
                    rules.push(match v {
                        Value::Object(schema) => Rule::Field {
                            required: matches!(schema.get("required"), Some(Value::Bool(true))),
                            kind: Kind::compile(schema),
                        },
                        _ => Rule::NotObject,
                    });
                }
                Ok((names, rules))
            }
            _ => Err(format!("message {} has no fields schema", name.py_str())),
        };
        Self {
            name,
            direction,
            actions,
            fields,
        }
    }

    /// The exact action strings this schema accepts, or None when its
    /// `values` is a string (substring membership cannot be indexed).
    pub(crate) fn indexable_actions(&self) -> Option<Vec<&str>> {
        match &self.actions {
            Membership::List { strings, .. } => Some(strings.iter().collect()),
            Membership::Keys(keys) => Some(keys.iter().collect()),
            Membership::Substring(_) => None,
            Membership::Invalid(_) => Some(Vec::new()),
        }
    }

    pub(crate) fn direction_matches(&self, expected: Option<&str>) -> bool {
        match expected {
            None | Some("") => true,
            Some(e) => match &self.direction {
                Direction::Both => true,
                Direction::Named(d) => eq(d, e),
                Direction::Other => false,
            },
        }
    }

    /// Is this a candidate for `msg` under the reference's lookup rules?
    pub(crate) fn matches(
        &self,
        action: Option<&Value>,
        direction: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            return self.name.as_str() == Some(n) && self.direction_matches(direction);
        }
        let hit = match action {
            Some(a) => self.actions.contains(a),
            None => self.actions.contains(&Value::Null),
        };
        hit && self.direction_matches(direction)
    }

    /// Validates a message object against this schema.
    pub(crate) fn validate(&self, msg: &Map) -> Result<(), Text> {
        let (names, rules) = self.fields.as_ref().map_err(|e| Text::from(e.as_str()))?;
        let entries = msg.entries();
        // Where each schema field sits in the message (u32::MAX: absent),
        // found in one pass that also reports unknown fields in message
        // order, as the reference does.
        let mut stack = [u32::MAX; 48];
        let mut heap;
        let at: &mut [u32] = if rules.len() <= stack.len() {
            &mut stack[..rules.len()]
        } else {
            heap = vec![u32::MAX; rules.len()];
            &mut heap
        };
        let mut errors = Errs::default();
        let mut next = 0;
        for (i, (k, _)) in entries.iter().enumerate() {
            match names.position_from(k, next) {
                Some(j) => {
                    at[j] = i as u32;
                    next = j + 1;
                }
                None => errors.named("unknown field: ", k),
            }
        }
        for (j, rule) in rules.iter().enumerate() {
            match rule {
                Rule::NotObject => errors.named("field schema must be object: ", names.name(j)),
                Rule::Field { required, kind } => match entries.get(at[j] as usize) {
                    None if *required => errors.named("missing required field: ", names.name(j)),
                    // Most values pass the quick test; the message's key
                    // is the field's name.
                    Some((k, v)) if !kind.passes(v) => kind.check(v, Key::Field(k), &mut errors),
                    Some(_) | None => {}
                },
            }
        }
        errors.finish()
    }
}

/// A set of names in insertion order, each kept inline (up to 24 bytes).
/// Up to [`LINEAR`] names are found by comparing them in turn; a larger set
/// adds an open-addressing index whose slots carry each name's packed tag
/// and, for names up to 16 bytes, the bytes themselves: a lookup hashes one
/// word and then reads one slot (one cache line) per probe. The first of
/// duplicate names wins, as a Python `list.index` would.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    names: Vec<Name>,
    /// A power of two at least twice as long as `names` (or empty).
    slots: Vec<Slot>,
    /// 64 minus log2 of `slots.len()`: the hash is the product's top bits.
    shift: u32,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// [`tag`] of the name (its length in the low 32 bits).
    tag: u64,
    /// Index into `names`; `EMPTY` when the slot is free.
    index: u32,
    /// The name's bytes when it is at most 16 long.
    head: [u8; 16],
}

/// Sets up to this size are scanned: their names sit inline side by side,
/// so a scan reads a few neighbouring cache lines where a table probe reads
/// a line of its own (measured: 8 to 16 are equally fast on the
/// conformance cases, 4 and below slower).
const LINEAR: usize = 8;

const EMPTY: u32 = u32::MAX;
const FREE: Slot = Slot {
    tag: 0,
    index: EMPTY,
    head: [0; 16],
};

/// Length plus the first, middle and last bytes: three loads, and enough to
/// tell apart most names schemas use (`host_cd_a` / `host_cd_b` differ in
/// the last byte). Equal tags are confirmed byte by byte.
#[inline]
pub(crate) fn tag(s: &str) -> u64 {
    let b = s.as_bytes();
    match b.len() {
        0 => 0,
        n => {
            (n as u64)
                | (u64::from(b[0]) << 32)
                | (u64::from(b[n / 2]) << 40)
                | (u64::from(b[n - 1]) << 48)
        }
    }
}

impl Names {
    pub(crate) fn push(&mut self, s: &str) {
        self.names.push(s.into());
        if self.names.len() <= LINEAR {
            return;
        }
        if self.slots.len() < 2 * self.names.len() {
            let len = (4 * self.names.len()).next_power_of_two();
            self.slots = vec![FREE; len];
            self.shift = 64 - len.trailing_zeros();
            for i in 0..self.names.len() {
                self.index(i);
            }
        } else {
            self.index(self.names.len() - 1);
        }
    }

    /// Enters name `i` unless an earlier equal name holds its place.
    fn index(&mut self, i: usize) {
        let name = self.names[i].as_str();
        if self.hashed(name).is_some() {
            return;
        }
        let (t, mask) = (tag(name), self.slots.len() - 1);
        let mut h = self.home(t);
        while self.slots[h].index != EMPTY {
            h = (h + 1) & mask;
        }
        let mut head = [0u8; 16];
        if name.len() <= head.len() {
            head[..name.len()].copy_from_slice(name.as_bytes());
        }
        self.slots[h] = Slot {
            tag: t,
            index: i as u32,
            head,
        };
    }

    #[inline]
    fn home(&self, t: u64) -> usize {
        (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    pub(crate) fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(Name::as_str)
    }

    /// [`Names::position`] for a set without duplicates, trying `hint`
    /// first: the fields of a message mostly come in the schema's order, so
    /// the next field is mostly the one after the last found, and one
    /// comparison finds it.
    #[inline(always)]
    pub(crate) fn position_from(&self, s: &str, hint: usize) -> Option<usize> {
        if self.names.get(hint).is_some_and(|n| eq(n, s)) {
            return Some(hint);
        }
        self.position(s)
    }

    /// Index of the first name equal to `s`.
    #[inline(always)]
    pub(crate) fn position(&self, s: &str) -> Option<usize> {
        if self.names.len() <= LINEAR {
            for (j, n) in self.names.iter().enumerate() {
                if eq(n, s) {
                    return Some(j);
                }
            }
            None
        } else {
            self.hashed(s)
        }
    }

    /// [`Names::position`] through the table.
    #[inline(always)]
    fn hashed(&self, s: &str) -> Option<usize> {
        let mask = self.slots.len().checked_sub(1)?;
        let t = tag(s);
        let mut h = self.home(t);
        loop {
            let slot = self.slots.get(h)?;
            if slot.index == EMPTY {
                return None;
            }
            if slot.tag == t {
                let j = slot.index as usize;
                let hit = match slot.head.get(..s.len()) {
                    Some(head) => eq_bytes(head, s.as_bytes()),
                    None => self.names.get(j).is_some_and(|n| eq(n, s)),
                };
                if hit {
                    return Some(j);
                }
            }
            h = (h + 1) & mask;
        }
    }

    pub(crate) fn contains(&self, s: &str) -> bool {
        self.position(s).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

    fn compile(src: &str) -> CompiledMessage {
        CompiledMessage::compile(parse_str(src).unwrap().as_object().unwrap())
    }

    fn check(m: &CompiledMessage, msg: &str) -> Result<(), String> {
        m.validate(parse_str(msg).unwrap().as_object().unwrap())
            .map_err(Text::into_string)
    }

    #[test]
    fn texts_for_types_the_cases_do_not_cover() {
        let m = compile(
            r#"{"name":"x","direction":"both","fields":{
                "t":{"type":"ticket"},
                "a":{"type":"array","items":{"type":"integer","max":3},"max_items":1,"max_total_bytes":3},
                "n":{"type":"array","items":{"type":"array"}},
                "j":{"type":"json","container":"object","max_total_bytes":5},
                "w":{"type":"widget"},
                "b":"nope"}}"#,
        );
        assert_eq!(
            check(&m, r#"{"t":"","a":[1,22,4],"n":[],"j":{"k":1}}"#).unwrap_err(),
            "t: expected non-empty ticket <= 2048 chars; a: above max_items 1; \
             a: array total 4 bytes exceeds max_total_bytes 3; a[1]: above max 3; a[2]: above max 3; \
             n: nested array not allowed (items must be scalar); \
             j: JSON payload 7 bytes exceeds max_total_bytes 5; field schema must be object: b"
        );
        assert_eq!(
            check(&m, r#"{"w":1}"#).unwrap_err(),
            "w: unsupported field type 'widget'; field schema must be object: b"
        );
        let empty = compile(r#"{"name":"e","fields":{}}"#);
        assert_eq!(
            check(&empty, "{}").unwrap_err(),
            "message e has no fields schema"
        );
    }

    #[test]
    fn names_find_every_name_and_only_those() {
        let mut names = Names::default();
        let list: Vec<String> = (0..200)
            .map(|i| match i % 4 {
                0 => format!("f{i}"),
                1 => format!("a_field_name_longer_than_sixteen_bytes_{i}"),
                2 => "x".repeat(i % 40),
                _ => format!("host_cd_{}", char::from(b'a' + (i % 26) as u8)),
            })
            .collect();
        for (i, n) in list.iter().enumerate() {
            names.push(n);
            // Every name pushed so far is found at its first index, with the
            // table growing underneath.
            for m in &list[..=i] {
                let first = list.iter().position(|x| x == m);
                assert_eq!(names.position(m), first, "{m:?} after {i} pushes");
            }
        }
        for probe in [
            "",
            "f1",
            "host_cd_",
            "x".repeat(41).as_str(),
            "a_field_name_longer_than_sixteen_bytes_0",
        ] {
            assert_eq!(
                names.position(probe),
                list.iter().position(|x| x == probe),
                "{probe:?}"
            );
        }
        assert_eq!(Names::default().position("a"), None);
    }

    #[test]
    fn the_quick_verdict_never_passes_what_the_full_check_rejects() {
        let m = compile(
            r#"{"fields":{
                "i":{"type":"integer","min":-2,"max":5},
                "f":{"type":"integer","min":0.5},
                "b":{"type":"integer","max":true},
                "e":{"type":"enum","values":["x","yy",3]},
                "o":{"type":"boolean"},
                "h":{"type":"hash"},"n":{"type":"nonce"},"d":{"type":"id"},
                "k":{"type":"key"},"t":{"type":"text","max_length":3},
                "c":{"type":"ciphertext","max_length":4},"ob":{"type":"ot_blob","max_length":2}}}"#,
        );
        let values = parse_str(
            r#"[-3,-2,0,1,2,5,6,1.0,true,false,null,"x","yy","y","3","",
                "ab","abcd","ABCD","abcde","a b","0123456789abcdef","é",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeF",
                [],{}]"#,
        )
        .unwrap();
        let Ok((names, rules)) = &m.fields else {
            panic!("fields compile")
        };
        let mut passed = 0;
        for (j, rule) in rules.iter().enumerate() {
            let Rule::Field { kind, .. } = rule else {
                continue;
            };
            for v in values.as_array().unwrap() {
                if kind.passes(v) {
                    passed += 1;
                    let mut errors = Errs::default();
                    kind.check(v, Key::Field(names.name(j)), &mut errors);
                    assert_eq!(errors.0.as_str(), "", "{} {v:?}", names.name(j));
                }
            }
        }
        // The quick path is taken, not only skipped.
        assert!(passed >= 20, "{passed}");
    }

    #[test]
    fn array_total_counts_python_str_of_items() {
        let m = compile(
            r#"{"fields":{"a":{"type":"array","items":{"type":"json"},"max_total_bytes":10}}}"#,
        );
        // str({'z': None}) is "{'z': None}": 11 bytes.
        assert_eq!(
            check(&m, r#"{"a":[{"z":null}]}"#).unwrap_err(),
            "a: array total 11 bytes exceeds max_total_bytes 10"
        );
    }
}
