//! Finding a protocol and its hooks for a session, and fetching a protocol
//! the library does not have from the community server (as `join` and
//! `palaver protocol fetch` do): the spec must hash to the id asked for, is
//! installed in the data dir's library, and gets a hooks scaffold when
//! neither native hooks nor a hooks program can run it.

use crate::engine::Hooks;
use crate::engine::external::{HooksProgram, SIDECAR};
use crate::json::Value;
use crate::library::{Installed, Library, Source};
use crate::spec::Spec;
use crate::web::client::{Client, ClientError};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Why a protocol could not be fetched or run.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(
        "the server has no protocol {0} (GET /api/v1/protocols/{0}/bundle and /api/v1/protocols/{0} both 404)"
    )]
    NotOnServer(String),
    #[error("the server's answer for protocol {id} holds no spec: {why}")]
    NoSpec { id: String, why: String },
    #[error(
        "the server sent a spec for {asked} that hashes to {got}: refusing it (a protocol is its hash; the server or a proxy changed it)"
    )]
    HashMismatch { asked: String, got: String },
    #[error("the spec the server sent for {id} is not a valid spec: {err}")]
    BadSpec {
        id: String,
        err: crate::spec::SpecError,
    },
    #[error(transparent)]
    Library(#[from] crate::library::LibraryError),
    #[error(transparent)]
    Scaffold(#[from] crate::engine::scaffold::ScaffoldError),
    #[error("{0}")]
    NoHooks(String),
}

/// What runs a protocol once it is in the library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum NextStep {
    /// palaver's own hooks for this protocol_id: it plays at once.
    Native,
    /// A hooks program in the protocol dir (palaver's contract, or a
    /// reference-SDK `hooks.py` run through the bridge).
    Program(PathBuf),
    /// No hooks yet: a scaffold was written here to implement.
    Scaffold(PathBuf),
}

impl NextStep {
    /// One line telling the user what happens next.
    pub fn explain(&self, alias: &str) -> String {
        match self {
            NextStep::Native => format!("{alias} runs on palaver's native hooks"),
            NextStep::Program(p) => format!("{alias} runs its hooks program {}", p.display()),
            NextStep::Scaffold(p) => format!(
                "{alias} has no hooks yet: a scaffold is at {}; implement its hooks (docs/hooks.md), \
                 or put a hooks.py written for the reference client there, then join again",
                p.display()
            ),
        }
    }
}

/// A protocol fetched into the library.
#[derive(Debug, Clone, Serialize)]
pub struct Fetched {
    #[serde(flatten)]
    pub installed: Installed,
    pub next: NextStep,
}

/// The Python for reference-SDK hooks.py files: `PALAVER_HOOKS_PYTHON`,
/// else config.toml's `hooks_python`, else `PALAVER_PYTHON`, else python3.
/// (A config.toml that does not load counts as empty here: the command
/// that needs the Python reports its own errors.)
pub fn hooks_python() -> String {
    let config = crate::config::Config::load().ok();
    crate::config::settings::hooks_python(|k| std::env::var(k).ok(), config.as_ref())
}

/// The hooks program file of a protocol dir, when it has one.
pub fn program_file(dir: &Path) -> Option<PathBuf> {
    ["hooks", "hooks.py", SIDECAR]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
}

/// The spec's text from a bundle or protocol answer: `spec_json` as an
/// object or a JSON string, or the bare spec.
fn spec_text_of(v: &Value) -> Result<String, String> {
    let spec = match v.get("spec_json") {
        Some(Value::String(s)) => return Ok(s.to_string()),
        Some(obj @ Value::Object(_)) => obj,
        Some(other) => {
            return Err(format!(
                "spec_json is {}, not an object or a string",
                other.type_name()
            ));
        }
        None if v.get("messages").is_some() => v,
        None => return Err("no spec_json field".into()),
    };
    let mut text = serde_json::to_string_pretty(spec).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok(text)
}

/// Fetches protocol `id` from the server (its bundle, else the protocol
/// record), checks it hashes to `id`, installs it into `data_dir`'s
/// library, and writes a hooks scaffold when nothing can run it yet.
pub async fn fetch(client: &Client, data_dir: &Path, id: &str) -> Result<Fetched, ProtocolError> {
    let mut answer = None;
    for path in [
        format!("/api/v1/protocols/{id}/bundle"),
        format!("/api/v1/protocols/{id}"),
    ] {
        let (status, body) = client.raw("GET", &path, None).await?;
        match status {
            200 => {
                answer = Some(body);
                break;
            }
            404 => continue,
            _ => {
                return Err(ClientError::Status {
                    method: "GET".into(),
                    path,
                    status,
                    message: body
                        .get("message")
                        .map(Value::py_str)
                        .unwrap_or_else(|| crate::json::canonical::to_string_ordered(&body)),
                }
                .into());
            }
        }
    }
    let answer = answer.ok_or_else(|| ProtocolError::NotOnServer(id.to_owned()))?;
    let text = spec_text_of(&answer).map_err(|why| ProtocolError::NoSpec {
        id: id.to_owned(),
        why,
    })?;
    let spec = Spec::from_json_str(&text).map_err(|err| ProtocolError::BadSpec {
        id: id.to_owned(),
        err,
    })?;
    if spec.protocol_id() != id {
        return Err(ProtocolError::HashMismatch {
            asked: id.to_owned(),
            got: spec.protocol_id().to_owned(),
        });
    }
    let installed = crate::library::install_spec(data_dir, &text)?;
    let next = next_step(&installed.dir, &text, &spec)?;
    Ok(Fetched { installed, next })
}

/// What runs a protocol installed at `dir`; writes the scaffold when
/// nothing does (never over an existing hooks program).
fn next_step(dir: &Path, text: &str, spec: &Spec) -> Result<NextStep, ProtocolError> {
    if let Some(p) = program_file(dir) {
        return Ok(NextStep::Program(p));
    }
    if crate::protocols::native_hooks_by_id(spec.protocol_id()).is_some() {
        return Ok(NextStep::Native);
    }
    crate::engine::scaffold::scaffold(dir, text, spec, true)?;
    Ok(NextStep::Scaffold(dir.join("hooks.py")))
}

/// The spec and a fresh hooks instance for `key` (alias or protocol_id) in
/// the library of `data_dir`: the protocol dir's hooks program when it has
/// one (a pristine skeleton is refused unless `allow_skeleton`), else
/// palaver's native hooks.
pub fn hooks_for(
    data_dir: Option<&Path>,
    key: &str,
    allow_skeleton: bool,
) -> Result<(Spec, Box<dyn Hooks>), ProtocolError> {
    let lib = Library::open(data_dir)?;
    let entry = lib.resolve(key)?;
    let spec = lib.load(entry)?;
    if let Source::Installed(spec_path) = &entry.source
        && let Some(dir) = spec_path.parent()
        && program_file(dir).is_some()
    {
        let program = HooksProgram::find(dir, allow_skeleton, &hooks_python())
            .map_err(|e| ProtocolError::NoHooks(format!("{e:#}")))?;
        let hooks = program
            .spawn()
            .map_err(|e| ProtocolError::NoHooks(format!("{e:#}")))?;
        return Ok((spec, Box::new(hooks)));
    }
    let hooks = crate::protocols::native_hooks(&spec).ok_or_else(|| {
        ProtocolError::NoHooks(format!(
            "no hooks for {}: palaver has native hooks for {}; for another protocol, put a hooks program \
             next to its spec.json (docs/hooks.md; `palaver protocol fetch {}` writes a scaffold)",
            entry.alias,
            crate::protocols::NATIVE.join(", "),
            spec.protocol_id()
        ))
    })?;
    Ok((spec, hooks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_text_accepts_the_three_answer_shapes() {
        let spec = crate::obj! { "name" => "x", "messages" => crate::obj! {} };
        let as_obj = Value::Object(crate::obj! { "spec_json" => spec.clone() });
        let as_str = Value::Object(crate::obj! { "spec_json" => "{\"name\":\"x\"}" });
        let bare = Value::Object(spec);
        assert!(spec_text_of(&as_obj).unwrap().contains("\"name\": \"x\""));
        assert_eq!(spec_text_of(&as_str).unwrap(), "{\"name\":\"x\"}");
        assert!(spec_text_of(&bare).unwrap().contains("messages"));
        let wrong = Value::Object(crate::obj! { "spec_json" => 5 });
        assert_eq!(
            spec_text_of(&wrong).unwrap_err(),
            "spec_json is integer, not an object or a string"
        );
        let none = Value::Object(crate::obj! { "ok" => true });
        assert_eq!(spec_text_of(&none).unwrap_err(), "no spec_json field");
    }
}
