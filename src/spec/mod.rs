//! The protocol contract: a loaded `spec.json`, its protocol_id, and the
//! validators that decide what may be sent under it.
//!
//! Decisions and error texts follow the reference client so that a protocol
//! validated by palaver is validated the same way everywhere; see
//! `docs/compatibility.md` for the few places where palaver reports an error
//! where the reference would crash.

mod contract;
mod field;
mod formats;
pub mod lint;
mod message;
mod names;
mod options;
mod structure;
mod text;

pub use contract::{contract_bytes, protocol_id_of, write_contract};
pub use options::validate_options;
pub use structure::{FLOW_MODES, resolve_flow_mode, validate_structure};

use crate::json::{self, Map, Value};
use message::CompiledMessage;
use std::path::{Path, PathBuf};
use text::Text;

/// Spec versions this build understands.
pub const SUPPORTED_SPEC_VERSIONS: [&str; 1] = ["1.0"];

/// Why a spec could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot read {}: {err}", path.display())]
    Read { path: PathBuf, err: std::io::Error },
    #[error("{}: invalid JSON: {err}", path.display())]
    Parse {
        path: PathBuf,
        err: json::ParseError,
    },
    #[error("spec must be a JSON object, found {found}")]
    NotObject { found: &'static str },
    /// A structural problem, with the reference's text.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    UnsupportedVersion(String),
}

/// A message or options object the spec does not allow; the text is the
/// reference's (`"; "`-joined when there are several problems).
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.as_str())]
pub struct ValidationError(Text);

impl ValidationError {
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn into_string(self) -> String {
        self.0.into_string()
    }
}

impl From<String> for ValidationError {
    fn from(text: String) -> Self {
        ValidationError(Text::from(text))
    }
}

impl From<&str> for ValidationError {
    fn from(text: &str) -> Self {
        ValidationError(Text::from(text))
    }
}

impl std::fmt::Debug for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ValidationError")
            .field(&self.as_str())
            .finish()
    }
}

/// A loaded, structurally valid spec with its compiled message schemas.
#[derive(Debug, Clone)]
pub struct Spec {
    doc: Map,
    messages: Result<Vec<CompiledMessage>, String>,
    /// Candidate schemas by string action, in message order; None when some
    /// schema's membership cannot be indexed.
    by_action: Option<ActionIndex>,
    /// Candidate schemas by message name, for lookups with `message_name`.
    by_name: ActionIndex,
    protocol_id: String,
    flow_mode: &'static str,
}

/// Reads and parses a JSON file, naming the file in every error.
pub fn read_json_file(path: &Path) -> Result<Value, SpecError> {
    let bytes = std::fs::read(path).map_err(|err| SpecError::Read {
        path: path.to_owned(),
        err,
    })?;
    json::parse_bytes(&bytes).map_err(|err| SpecError::Parse {
        path: path.to_owned(),
        err,
    })
}

/// The reference's spec_version check: `spec.get("spec_version") or "1.0"`
/// must be a supported version. Returns the warning/error text otherwise.
pub fn spec_version_problem(spec: &Map) -> Option<String> {
    let v = spec.get("spec_version").filter(|v| v.truthy())?;
    if v.as_str()
        .is_some_and(|s| SUPPORTED_SPEC_VERSIONS.contains(&s))
    {
        return None;
    }
    Some(format!(
        "unsupported spec_version: {} (supported: {})",
        v.py_repr(),
        SUPPORTED_SPEC_VERSIONS.join(", ")
    ))
}

impl Spec {
    /// Loads a spec file: parse, structural checks, then the version check,
    /// in the reference's order.
    pub fn load(path: &Path) -> Result<Spec, SpecError> {
        Spec::from_value(read_json_file(path)?)
    }

    /// Loads from JSON text.
    pub fn from_json_str(text: &str) -> Result<Spec, SpecError> {
        let v = json::parse_str(text).map_err(|err| SpecError::Parse {
            path: PathBuf::from("<spec>"),
            err,
        })?;
        Spec::from_value(v)
    }

    /// Builds a spec from a parsed value.
    pub fn from_value(v: Value) -> Result<Spec, SpecError> {
        let Value::Object(doc) = v else {
            return Err(SpecError::NotObject {
                found: v.type_name(),
            });
        };
        validate_structure(&doc).map_err(SpecError::Invalid)?;
        if let Some(problem) = spec_version_problem(&doc) {
            return Err(SpecError::UnsupportedVersion(problem));
        }
        let flow_mode = resolve_flow_mode(&doc).map_err(SpecError::Invalid)?;
        let messages = match doc.get("messages") {
            Some(Value::Array(items)) if !items.is_empty() => Ok(items
                .iter()
                .filter_map(Value::as_object)
                .map(CompiledMessage::compile)
                .collect()),
            _ => Err("spec.messages must be a non-empty array".to_owned()),
        };
        let by_action = messages
            .as_ref()
            .ok()
            .and_then(|m: &Vec<CompiledMessage>| ActionIndex::build(m, |c| c.indexable_actions()));
        let by_name = messages
            .as_ref()
            .ok()
            .and_then(|m: &Vec<CompiledMessage>| {
                ActionIndex::build(m, |c| Some(c.name.as_str().into_iter().collect()))
            })
            .unwrap_or_default();
        let protocol_id = protocol_id_of(&doc);
        Ok(Spec {
            doc,
            messages,
            by_action,
            by_name,
            protocol_id,
            flow_mode,
        })
    }

    /// The whole document.
    pub fn doc(&self) -> &Map {
        &self.doc
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.doc.get(key)
    }

    /// `name`, when it is a string.
    pub fn name(&self) -> Option<&str> {
        self.doc.get("name").and_then(Value::as_str)
    }

    pub fn protocol_id(&self) -> &str {
        &self.protocol_id
    }

    /// The effective flow mode (`session_loop` when unset).
    pub fn flow_mode(&self) -> &'static str {
        self.flow_mode
    }

    /// Is this protocol a game? A session of one ends in phase `game_over`,
    /// any other (a chat, a service, a request/response exchange) in
    /// `ended`. Free and request_response flows are never games; otherwise
    /// the spec's `type` says so, and a spec without one counts as a game.
    pub fn is_game(&self) -> bool {
        !matches!(self.flow_mode, "free" | "request_response")
            && self
                .doc
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(|t| t == "game")
    }

    /// Validates a message with the reference's lookup: by `message_name`
    /// when given, else by `msg.action` among each schema's `action.values`;
    /// in both cases the schema's direction must match (`both` always does).
    pub fn validate_message(
        &self,
        msg: &Value,
        direction: Option<&str>,
        message_name: Option<&str>,
    ) -> Result<(), ValidationError> {
        let Value::Object(obj) = msg else {
            return Err(ValidationError::from("message must be a JSON object"));
        };
        self.validate_object(obj, direction, message_name)
    }

    /// [`Spec::validate_message`] for a frame already known to be an object.
    pub fn validate_object(
        &self,
        obj: &Map,
        direction: Option<&str>,
        message_name: Option<&str>,
    ) -> Result<(), ValidationError> {
        let messages = self
            .messages
            .as_ref()
            .map_err(|e| ValidationError::from(e.as_str()))?;
        let action = obj.get("action");
        let mut found: Option<&CompiledMessage> = None;
        let mut ambiguous = false;
        match (action, &self.by_action, message_name) {
            (_, _, Some(name)) if !name.is_empty() => {
                for &i in self.by_name.candidates(name) {
                    let m = &messages[i as usize];
                    if m.direction_matches(direction) {
                        consider(&mut found, &mut ambiguous, m);
                    }
                }
            }
            (Some(Value::String(a)), Some(index), _) => {
                for &i in index.candidates(a) {
                    let m = &messages[i as usize];
                    if m.direction_matches(direction) {
                        consider(&mut found, &mut ambiguous, m);
                    }
                }
            }
            _ => {
                for m in messages
                    .iter()
                    .filter(|m| m.matches(action, direction, message_name))
                {
                    consider(&mut found, &mut ambiguous, m);
                }
            }
        }
        if ambiguous {
            return Err(ValidationError::from(
                "ambiguous message schema; pass message_name",
            ));
        }
        let Some(schema) = found else {
            // Written piece by piece: cheaper than the formatting machinery,
            // and a frame with no schema is common on the wire.
            let mut text = Text::default();
            text.push_str("message schema not found for action=");
            action.unwrap_or(&Value::Null).write_py_repr(&mut text);
            if let Some(d) = direction.filter(|d| !d.is_empty()) {
                text.push_str(" direction=");
                text.push_str(d);
            }
            return Err(ValidationError(text));
        };
        schema.validate(obj).map_err(ValidationError)
    }

    /// The raw schema of the message that carries `action` in `direction`
    /// (a `both` schema matches any direction).
    pub fn message_schema(&self, action: &str, direction: &str) -> Option<&Map> {
        self.doc.get("messages")?.as_array()?.iter().filter_map(Value::as_object).find(|m| {
            let dir_ok = matches!(m.get("direction").and_then(Value::as_str), Some(d) if d == direction || d == "both");
            let acts = m.get("fields").and_then(|f| f.get("action")).and_then(|a| a.get("values")).and_then(Value::as_array);
            dir_ok && acts.is_some_and(|a| a.iter().any(|v| v.as_str() == Some(action)))
        })
    }

    /// The schema of `field` in the message carrying `action` in `direction`.
    pub fn field_schema(&self, action: &str, direction: &str, field: &str) -> Option<&Map> {
        self.message_schema(action, direction)?
            .get("fields")?
            .get(field)?
            .as_object()
    }

    /// Validates invitation options against the spec's parameters.
    /// The reference's rule for `extra_args` (positional arguments for the
    /// hooks): only a protocol whose `decision.mode` is `manual` takes any;
    /// the error is the reference's text.
    pub fn check_extra_args(&self, args: &[String]) -> Result<(), String> {
        if args.is_empty() {
            return Ok(());
        }
        let mode = match self.get("decision") {
            Some(Value::Object(d)) => d
                .get("mode")
                .map(Value::py_str)
                .unwrap_or_else(|| "auto".into()),
            _ => "auto".into(),
        };
        if mode == "manual" {
            return Ok(());
        }
        let list = args
            .iter()
            .map(|a| Value::from(a.as_str()).py_repr())
            .collect::<Vec<_>>()
            .join(", ");
        Err(format!(
            "protocol decision mode is '{mode}'; extra_args [{list}] not accepted. \
             Hint: omit positional args after post_id; for interactive decisions use --coach."
        ))
    }

    pub fn validate_options(&self, options: &Value) -> Result<(), ValidationError> {
        let Value::Object(opts) = options else {
            return Err(ValidationError::from("--options must be a JSON object"));
        };
        validate_options(&self.doc, opts).map_err(ValidationError::from)
    }
}

/// Records a lookup candidate; a second one makes the lookup ambiguous.
fn consider<'a>(
    found: &mut Option<&'a CompiledMessage>,
    ambiguous: &mut bool,
    m: &'a CompiledMessage,
) {
    if found.is_some() {
        *ambiguous = true;
    } else {
        *found = Some(m);
    }
}

/// Schemas by an exact string (an action value, or a message name), in
/// message order.
#[derive(Debug, Clone, Default)]
struct ActionIndex {
    keys: names::Names,
    /// The schemas of `keys[i]`.
    lists: Vec<Vec<u32>>,
}

impl ActionIndex {
    /// `keys_of` gives each schema's keys, or None when one cannot be
    /// indexed (then there is no index).
    fn build<'a>(
        messages: &'a [CompiledMessage],
        keys_of: impl Fn(&'a CompiledMessage) -> Option<Vec<&'a str>>,
    ) -> Option<ActionIndex> {
        let mut index = ActionIndex::default();
        for (i, m) in messages.iter().enumerate() {
            for a in keys_of(m)? {
                match index.keys.position(a) {
                    Some(k) => {
                        let list = &mut index.lists[k];
                        if list.last() != Some(&(i as u32)) {
                            list.push(i as u32);
                        }
                    }
                    None => {
                        index.keys.push(a);
                        index.lists.push(vec![i as u32]);
                    }
                }
            }
        }
        Some(index)
    }

    fn candidates(&self, action: &str) -> &[u32] {
        self.keys
            .position(action)
            .map_or(&[], |k| self.lists[k].as_slice())
    }
}
