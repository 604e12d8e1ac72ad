//! Message validation against a spec's `messages`, with the reference's
//! schema lookup, decisions and error texts, compiled once per spec so that
//! validating a frame is a walk over pre-digested rules (each field's rule
//! is a [`Kind`]).

use super::field::{Kind, Membership};
use super::names::Names;
use super::text::{Errs, Key, Text};
use crate::json::{Map, Value, short};

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

#[derive(Debug, Clone)]
enum Rule {
    NotObject,
    Field { required: bool, kind: Kind },
}

impl CompiledMessage {
    pub(crate) fn compile(item: &Map) -> Self {
        let name = item.get("name").cloned().unwrap_or(Value::Null);
        let direction = match item.get("direction") {
            Some(Value::String(d)) if &**d == "both" => Direction::Both,
            Some(Value::String(d)) => Direction::Named(d.to_string()),
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
                Direction::Named(d) => short::str_eq(d, e),
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
                    // The message's key is the field's name.
                    Some((k, v)) => kind.check(v, Key::Field(k), &mut errors),
                    None => {}
                },
            }
        }
        errors.finish()
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
    fn a_value_passes_exactly_when_its_check_finds_nothing() {
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
                let mut errors = Errs::default();
                kind.check(v, Key::Field(names.name(j)), &mut errors);
                let found = errors.finish().err().map(Text::into_string);
                // A value that passes gets no text; one that does not, one.
                assert_eq!(
                    kind.passes(v),
                    found.is_none(),
                    "{} {v:?}: {found:?}",
                    names.name(j)
                );
                passed += usize::from(found.is_none());
            }
        }
        // Values pass as well as fail.
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
