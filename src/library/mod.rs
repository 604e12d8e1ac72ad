//! The protocol library: the 21 bundled contracts compiled into the binary,
//! plus whatever a data dir's `protocols/index.json` adds.
//!
//! The bundled spec.json files and their index are the reference client's
//! (aigenora, MIT licence), carried as data. On disk the library uses the
//! reference's layout (`protocols/<first 8 hex>/<remaining 56>/spec.json`,
//! index version 2) so the reference and palaver can share a data dir.

use crate::json::{self, Value};
use crate::spec::{Spec, SpecError};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The bundled index, as shipped by the reference client.
pub const BUNDLED_INDEX: &str = include_str!("../../assets/protocols/index.json");

/// Every bundled spec.json by alias.
pub const BUNDLED_SPECS: &[(&str, &str)] = &[
    (
        "aether-sigil-v1",
        include_str!("../../assets/protocols/aether-sigil-v1/spec.json"),
    ),
    (
        "briscola-v1",
        include_str!("../../assets/protocols/briscola-v1/spec.json"),
    ),
    (
        "classical-mahjong-v1",
        include_str!("../../assets/protocols/classical-mahjong-v1/spec.json"),
    ),
    (
        "coin-flip-v1",
        include_str!("../../assets/protocols/coin-flip-v1/spec.json"),
    ),
    (
        "community-room-v1",
        include_str!("../../assets/protocols/community-room-v1/spec.json"),
    ),
    (
        "connect4-v1",
        include_str!("../../assets/protocols/connect4-v1/spec.json"),
    ),
    (
        "contract-bridge-v1",
        include_str!("../../assets/protocols/contract-bridge-v1/spec.json"),
    ),
    (
        "crazy-eights-v1",
        include_str!("../../assets/protocols/crazy-eights-v1/spec.json"),
    ),
    (
        "four-player-landlord-v1",
        include_str!("../../assets/protocols/four-player-landlord-v1/spec.json"),
    ),
    (
        "gomoku-v1",
        include_str!("../../assets/protocols/gomoku-v1/spec.json"),
    ),
    (
        "guess-number-v1",
        include_str!("../../assets/protocols/guess-number-v1/spec.json"),
    ),
    (
        "hero-duel-v1",
        include_str!("../../assets/protocols/hero-duel-v1/spec.json"),
    ),
    (
        "human-chat-v1",
        include_str!("../../assets/protocols/human-chat-v1/spec.json"),
    ),
    (
        "meeting-room-v1",
        include_str!("../../assets/protocols/meeting-room-v1/spec.json"),
    ),
    (
        "reversi-v1",
        include_str!("../../assets/protocols/reversi-v1/spec.json"),
    ),
    (
        "rps-v1",
        include_str!("../../assets/protocols/rps-v1/spec.json"),
    ),
    (
        "tank-battle-v1",
        include_str!("../../assets/protocols/tank-battle-v1/spec.json"),
    ),
    (
        "texas-holdem-v1",
        include_str!("../../assets/protocols/texas-holdem-v1/spec.json"),
    ),
    (
        "trusted-agent-task-v1",
        include_str!("../../assets/protocols/trusted-agent-task-v1/spec.json"),
    ),
    (
        "upgrade-tractor-v1",
        include_str!("../../assets/protocols/upgrade-tractor-v1/spec.json"),
    ),
    (
        "weak-wins-all",
        include_str!("../../assets/protocols/weak-wins-all/spec.json"),
    ),
];

/// Where an entry's spec comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum Source {
    /// Compiled into this binary.
    Bundled,
    /// A spec.json in a data dir's library.
    Installed(PathBuf),
}

/// One protocol in the library.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub alias: String,
    pub name: String,
    pub description: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub family: String,
    pub protocol_id: String,
    pub flow_mode: String,
    /// Relative path in the `sha256-8-56` layout.
    pub path: String,
    pub default_profile: Option<String>,
    /// Profile name → `{description, options}`, in index order.
    pub profiles: Value,
    pub source: Source,
}

impl Entry {
    /// Each profile's name and options, in index order.
    pub fn profile_options(&self) -> Vec<(String, json::Map)> {
        self.profiles
            .as_object()
            .map(|p| {
                p.iter()
                    .map(|(k, v)| {
                        let options = v
                            .get("options")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default();
                        (k.to_owned(), options)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The options of profile `name`; the error names the profiles there
    /// are.
    pub fn profile(&self, name: &str) -> Result<json::Map, LibraryError> {
        let all = self.profile_options();
        all.iter()
            .find(|(k, _)| k == name)
            .map(|(_, o)| o.clone())
            .ok_or_else(|| LibraryError::NoProfile {
                alias: self.alias.clone(),
                name: name.to_owned(),
                known: all.into_iter().map(|(k, _)| k).collect(),
            })
    }
}

/// Why a library lookup failed.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("no protocol '{0}' in the library (try `palaver protocol list`)")]
    NotFound(String),
    #[error(
        "{alias} has no profile '{name}' ({})",
        if known.is_empty() { "it has none".to_owned() } else { format!("its profiles: {}", known.join(", ")) }
    )]
    NoProfile {
        alias: String,
        name: String,
        known: Vec<String>,
    },
    #[error("'{key}' matches several protocols: {}", .matches.join(", "))]
    Ambiguous { key: String, matches: Vec<String> },
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("cannot write {}: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
    #[error("{0}")]
    Index(String),
}

/// A library view: bundled entries, overlaid by a data dir's index.
#[derive(Debug, Clone)]
pub struct Library {
    entries: Vec<Entry>,
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The relative library path of a protocol id (`sha256-8-56`).
pub fn layout_path(protocol_id: &str) -> String {
    let split = protocol_id.len().min(8);
    format!("{}/{}", &protocol_id[..split], &protocol_id[split..])
}

fn entries_from_index(
    index: &Value,
    source_for: impl Fn(&Value) -> Option<(Source, String)>,
) -> Vec<Entry> {
    let Some(list) = index.get("protocols").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|p| {
            let (source, flow_mode) = source_for(p)?;
            let protocol_id = str_of(p, "protocol_id");
            Some(Entry {
                alias: str_of(p, "alias"),
                name: str_of(p, "name"),
                description: str_of(p, "description"),
                kind: str_of(p, "type"),
                family: str_of(p, "family"),
                path: p
                    .get("path")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| layout_path(&protocol_id)),
                protocol_id,
                flow_mode,
                default_profile: p
                    .get("default_profile")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                profiles: p
                    .get("profiles")
                    .cloned()
                    .unwrap_or(Value::Object(json::Map::new())),
                source,
            })
        })
        .collect()
}

/// The bundled specs, parsed once.
pub fn bundled_spec(alias: &str) -> Option<&'static Spec> {
    static SPECS: OnceLock<Vec<(&'static str, Spec)>> = OnceLock::new();
    let specs = SPECS.get_or_init(|| {
        BUNDLED_SPECS
            .iter()
            .filter_map(|(a, text)| Spec::from_json_str(text).ok().map(|s| (*a, s)))
            .collect()
    });
    specs.iter().find(|(a, _)| *a == alias).map(|(_, s)| s)
}

/// The bundled spec with this protocol_id, if there is one.
pub fn bundled_spec_by_id(protocol_id: &str) -> Option<&'static Spec> {
    BUNDLED_SPECS
        .iter()
        .filter_map(|(a, _)| bundled_spec(a))
        .find(|s| s.protocol_id() == protocol_id)
}

impl Library {
    /// The library compiled into this binary.
    pub fn bundled() -> Library {
        let index = json::parse_str(BUNDLED_INDEX).unwrap_or_default();
        let entries = entries_from_index(&index, |p| {
            let alias = p.get("alias").and_then(Value::as_str)?;
            let spec = bundled_spec(alias)?;
            Some((Source::Bundled, spec.flow_mode().to_owned()))
        });
        Library { entries }
    }

    /// The bundled library overlaid with `<data_dir>/protocols/index.json`
    /// when it exists. A damaged index is reported, not ignored.
    pub fn open(data_dir: Option<&Path>) -> Result<Library, LibraryError> {
        let mut lib = Library::bundled();
        let Some(dir) = data_dir else { return Ok(lib) };
        let index_path = dir.join("protocols").join("index.json");
        if !index_path.exists() {
            return Ok(lib);
        }
        let index = crate::spec::read_json_file(&index_path)?;
        if index.get("protocols").and_then(Value::as_array).is_none() {
            return Err(LibraryError::Index(format!(
                "{}: expected an object with a `protocols` array",
                index_path.display()
            )));
        }
        let root = dir.join("protocols");
        let installed = entries_from_index(&index, |p| {
            let id = p.get("protocol_id").and_then(Value::as_str)?;
            let rel = p
                .get("path")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| layout_path(id));
            let spec_path = root.join(rel).join("spec.json");
            // The flow mode is read from the spec itself when it loads.
            let mode = crate::spec::read_json_file(&spec_path)
                .ok()
                .and_then(|v| {
                    v.as_object()
                        .and_then(|m| crate::spec::resolve_flow_mode(m).ok().map(str::to_owned))
                })
                .unwrap_or_else(|| "unknown".into());
            Some((Source::Installed(spec_path), mode))
        });
        for e in installed {
            // An installed copy of a bundled protocol stays one entry.
            if let Some(b) = lib
                .entries
                .iter_mut()
                .find(|b| b.protocol_id == e.protocol_id)
            {
                if b.source == Source::Bundled {
                    continue;
                }
                *b = e;
            } else {
                lib.entries.push(e);
            }
        }
        Ok(lib)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Finds an entry by alias, full protocol_id, or a unique id prefix of at
    /// least 8 hex characters.
    pub fn resolve(&self, key: &str) -> Result<&Entry, LibraryError> {
        if let Some(e) = self
            .entries
            .iter()
            .find(|e| e.alias == key || e.protocol_id == key)
        {
            return Ok(e);
        }
        if key.len() >= 8 && key.bytes().all(|b| b.is_ascii_hexdigit()) {
            let key_l = key.to_ascii_lowercase();
            let hits: Vec<&Entry> = self
                .entries
                .iter()
                .filter(|e| e.protocol_id.starts_with(&key_l))
                .collect();
            match hits.as_slice() {
                [one] => return Ok(one),
                [] => {}
                many => {
                    return Err(LibraryError::Ambiguous {
                        key: key.to_owned(),
                        matches: many.iter().map(|e| e.alias.clone()).collect(),
                    });
                }
            }
        }
        Err(LibraryError::NotFound(key.to_owned()))
    }

    /// The spec text of an entry.
    pub fn spec_text(&self, e: &Entry) -> Result<String, LibraryError> {
        match &e.source {
            Source::Bundled => BUNDLED_SPECS
                .iter()
                .find(|(a, _)| *a == e.alias)
                .map(|(_, t)| (*t).to_owned())
                .ok_or_else(|| LibraryError::NotFound(e.alias.clone())),
            Source::Installed(p) => std::fs::read_to_string(p).map_err(|err| {
                LibraryError::Spec(SpecError::Read {
                    path: p.clone(),
                    err,
                })
            }),
        }
    }

    /// Loads an entry's spec.
    pub fn load(&self, e: &Entry) -> Result<Spec, LibraryError> {
        match &e.source {
            Source::Bundled => bundled_spec(&e.alias)
                .cloned()
                .ok_or_else(|| LibraryError::NotFound(e.alias.clone())),
            Source::Installed(p) => Ok(Spec::load(p)?),
        }
    }
}

/// A spec installed into a data dir's library by [`install_spec`].
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub protocol_id: String,
    pub alias: String,
    /// The protocol directory (spec.json inside).
    pub dir: PathBuf,
    /// False when the library held this protocol already (nothing written).
    pub new: bool,
}

/// The alias of a protocol installed from elsewhere: its family (else its
/// name, in lower case with dashes) and the first 8 hex digits of its id,
/// e.g. `rps@2d485400` — never one of the bundled aliases, and unique to
/// the contract.
pub fn fetched_alias(spec: &Spec, id: &str) -> String {
    let base = spec
        .get("family")
        .and_then(Value::as_str)
        .filter(|f| !f.trim().is_empty())
        .or(spec.name())
        .unwrap_or("protocol");
    let mut slug = String::new();
    for c in base.trim().chars() {
        if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
            slug.extend(c.to_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(40).collect();
    let slug = if slug.is_empty() {
        "protocol".to_owned()
    } else {
        slug
    };
    format!("{slug}@{}", &id[..id.len().min(8)])
}

/// Installs a spec (its exact text) into `<data_dir>/protocols/` under its
/// protocol_id, in the reference layout, and lists it in the index (the
/// bundled entries are installed first when the library is new) under
/// [`fetched_alias`]. Installing a protocol the library has already changes
/// nothing.
pub fn install_spec(data_dir: &Path, text: &str) -> Result<Installed, LibraryError> {
    let spec = Spec::from_json_str(text)?;
    let id = spec.protocol_id().to_owned();
    let lib = Library::open(Some(data_dir))?;
    let root = install_bundled(data_dir)?;
    if let Some(e) = lib.entries().iter().find(|e| e.protocol_id == id) {
        let dir = match &e.source {
            Source::Installed(p) => p.parent().map(Path::to_owned).unwrap_or_default(),
            Source::Bundled => root.join(&e.path),
        };
        return Ok(Installed {
            protocol_id: id,
            alias: e.alias.clone(),
            dir,
            new: false,
        });
    }
    let rel = layout_path(&id);
    let dir = root.join(&rel);
    let spec_path = dir.join("spec.json");
    crate::fsutil::write_atomic(&spec_path, text.as_bytes()).map_err(|err| {
        LibraryError::Write {
            path: spec_path.clone(),
            err,
        }
    })?;
    let name = spec.name().unwrap_or(&id[..id.len().min(8)]).to_owned();
    let alias = fetched_alias(&spec, &id);
    let field = |k: &str| spec.get(k).cloned().unwrap_or(Value::Null);
    let entry = crate::obj! {
        "alias" => alias.as_str(), "name" => name.as_str(),
        "description" => field("description"), "type" => field("type"),
        "protocol_id" => id.as_str(), "path" => rel.as_str(), "status" => "active",
        "created_reason" => "fetched from a community server",
    };
    let index_path = root.join("index.json");
    let mut index = crate::spec::read_json_file(&index_path)?;
    let Some(Value::Array(list)) = index.as_object_mut().and_then(|m| m.get_mut("protocols"))
    else {
        return Err(LibraryError::Index(format!(
            "{}: expected an object with a `protocols` array",
            index_path.display()
        )));
    };
    list.push(Value::Object(entry));
    let mut out =
        serde_json::to_string_pretty(&index).map_err(|e| LibraryError::Index(e.to_string()))?;
    out.push('\n');
    crate::fsutil::write_atomic(&index_path, out.as_bytes()).map_err(|err| {
        LibraryError::Write {
            path: index_path.clone(),
            err,
        }
    })?;
    Ok(Installed {
        protocol_id: id,
        alias,
        dir,
        new: true,
    })
}

/// Installs the bundled protocols into `<data_dir>/protocols/` in the
/// reference layout, writing only what is missing (each file atomically) and
/// merging the bundled entries into an existing index. Returns the library
/// root.
pub fn install_bundled(data_dir: &Path) -> Result<PathBuf, LibraryError> {
    let root = data_dir.join("protocols");
    let bundled = json::parse_str(BUNDLED_INDEX)
        .map_err(|e| LibraryError::Index(format!("bundled index: {e}")))?;
    let write = |path: &Path, bytes: &[u8]| {
        crate::fsutil::write_atomic(path, bytes).map_err(|err| LibraryError::Write {
            path: path.to_owned(),
            err,
        })
    };
    for p in bundled
        .get("protocols")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(alias), Some(rel)) = (
            p.get("alias").and_then(Value::as_str),
            p.get("path").and_then(Value::as_str),
        ) else {
            continue;
        };
        let Some((_, text)) = BUNDLED_SPECS.iter().find(|(a, _)| *a == alias) else {
            continue;
        };
        let spec_path = root.join(rel).join("spec.json");
        if !spec_path.exists() {
            write(&spec_path, text.as_bytes())?;
        }
    }
    let index_path = root.join("index.json");
    let merged = if index_path.exists() {
        let mut current = crate::spec::read_json_file(&index_path)?;
        let Some(list) = current
            .as_object_mut()
            .and_then(|m| m.get_mut("protocols"))
            .and_then(|l| match l {
                Value::Array(a) => Some(a),
                _ => None,
            })
        else {
            return Err(LibraryError::Index(format!(
                "{}: expected an object with a `protocols` array",
                index_path.display()
            )));
        };
        let mut changed = false;
        for p in bundled
            .get("protocols")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let id = p.get("protocol_id").and_then(Value::as_str);
            if !list
                .iter()
                .any(|q| q.get("protocol_id").and_then(Value::as_str) == id)
            {
                list.push(p.clone());
                changed = true;
            }
        }
        changed.then_some(current)
    } else {
        Some(bundled)
    };
    if let Some(index) = merged {
        let mut text =
            serde_json::to_string_pretty(&index).map_err(|e| LibraryError::Index(e.to_string()))?;
        text.push('\n');
        write(&index_path, text.as_bytes())?;
    }
    Ok(root)
}
