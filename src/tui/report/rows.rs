//! Rows the lists show: invitations from the community and sessions from
//! state dirs, parsed from the JSON the server and the runtime write.

use crate::json::{Map, Value};
use crate::services::run;
use std::path::{Path, PathBuf};

/// An open invitation as `GET /api/v1/invitations` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Invitation {
    pub post_id: String,
    pub protocol_id: String,
    /// Library alias when the protocol is known here, else the id's head.
    pub alias: String,
    pub protocol_name: String,
    pub nickname: String,
    pub public_key: String,
    pub message: String,
    pub options: Map,
    pub host_control_mode: String,
    pub created_at: f64,
    /// Why palaver cannot join it (options it cannot honour), if so.
    pub unjoinable: Option<String>,
    pub tags: Vec<String>,
    /// Is its protocol in the library? (Joining fetches it when not.)
    pub installed: bool,
    /// The host's reputation on the server, when it has one.
    pub host: Option<HostStats>,
    /// The host's ELO and karma, once asked (the console's cache fills it).
    pub reputation: Option<crate::tui::report::social::Reputation>,
}

/// A host's reputation, as `/api/v1/agents/{key}/stats` tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct HostStats {
    pub rating_average: Option<f64>,
    pub ratings: i64,
    pub sessions: i64,
    /// The host's ELO and karma when the stats carry them (palaver's
    /// community does; otherwise the console asks for them apart).
    pub reputation: Option<crate::tui::report::social::Reputation>,
}

impl HostStats {
    pub fn from_json(v: &Value) -> HostStats {
        let int = |k: &str| v.get(k).and_then(Value::as_i64).unwrap_or(0);
        HostStats {
            rating_average: v.get("rating_average").and_then(Value::as_f64),
            ratings: int("ratings"),
            sessions: v
                .get("total_sessions")
                .or_else(|| v.get("sessions"))
                .and_then(Value::as_i64)
                .unwrap_or(0),
            reputation: match (
                v.get("elo").and_then(Value::as_i64),
                v.get("karma").and_then(Value::as_i64),
            ) {
                (Some(elo), Some(karma)) => Some(crate::tui::report::social::Reputation {
                    elo: Some(elo),
                    karma: Some(karma),
                }),
                _ => None,
            },
        }
    }

    /// `★4.2 (7) · 12 games`, or `unrated · 3 games`.
    pub fn line(&self) -> String {
        let games = match self.sessions {
            1 => "1 game".to_owned(),
            n => format!("{n} games"),
        };
        match self.rating_average {
            Some(a) if self.ratings > 0 => format!("★{a:.1} ({}) · {games}", self.ratings),
            _ => format!("unrated · {games}"),
        }
    }
}

fn text(m: &Map, k: &str) -> String {
    m.get(k)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_default()
}

fn num(m: &Map, k: &str) -> f64 {
    m.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

impl Invitation {
    pub fn from_json(m: &Map) -> Option<Invitation> {
        let post_id = text(m, "post_id");
        if post_id.is_empty() {
            return None;
        }
        let protocol_id = text(m, "protocol_id");
        let lib = crate::library::Library::bundled();
        let entry = lib.entries().iter().find(|e| e.protocol_id == protocol_id);
        Some(Invitation {
            alias: entry
                .map(|e| e.alias.clone())
                .unwrap_or_else(|| protocol_id.chars().take(12).collect()),
            protocol_name: entry.map(|e| e.name.clone()).unwrap_or_default(),
            post_id,
            protocol_id,
            nickname: text(m, "nickname"),
            public_key: text(m, "public_key"),
            message: text(m, "message"),
            options: m
                .get("options")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            host_control_mode: text(m, "host_control_mode"),
            created_at: num(m, "created_at"),
            unjoinable: crate::services::remote::unjoinable(m),
            tags: match m.get("tags") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                Some(Value::String(s)) => s
                    .split(',')
                    .map(|t| t.trim().to_owned())
                    .filter(|t| !t.is_empty())
                    .collect(),
                _ => Vec::new(),
            },
            installed: entry.is_some(),
            host: None,
            reputation: None,
        })
    }

    /// The options as one short line.
    pub fn options_line(&self) -> String {
        self.options
            .iter()
            .map(|(k, v)| format!("{k}={}", v.py_str()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Parses the invitations list reply (`{"results": [...]}` or a bare list).
pub fn parse_invitations(v: &Value) -> Vec<Invitation> {
    v.get("results")
        .and_then(Value::as_array)
        .or_else(|| v.as_array())
        .map(|l| {
            l.iter()
                .filter_map(|x| x.as_object().and_then(Invitation::from_json))
                .collect()
        })
        .unwrap_or_default()
}

/// A session found in the data dir (or attached by path).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub dir: PathBuf,
    pub role: String,
    pub status: String,
    pub protocol: String,
    pub control_mode: String,
    pub started_at: f64,
    pub winner: String,
    /// The invitation's post_id (a host's, once it is up).
    pub post_id: String,
    /// A host still waiting for its guest: since when (epoch seconds).
    pub waiting_since: Option<f64>,
    /// The peer's public key, once the session has one.
    pub peer: String,
}

impl SessionRow {
    pub fn from_meta(dir: &Path, meta: &Map) -> SessionRow {
        // A room's session.json names only its protocol_id, and its dir
        // (`host-group-<ms>`) when it started.
        let mut protocol = text(meta, "protocol_name");
        if protocol.is_empty() {
            protocol = crate::library::bundled_spec_by_id(&text(meta, "protocol_id"))
                .and_then(|s| s.name())
                .unwrap_or_default()
                .to_owned();
        }
        let mut started_at = num(meta, "started_at");
        if started_at <= 0.0 {
            started_at = dir
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.rsplit('-').next())
                .and_then(|ms| ms.parse::<u64>().ok())
                .map_or(0.0, |ms| ms as f64 / 1000.0);
        }
        SessionRow {
            dir: dir.to_owned(),
            role: text(meta, "role"),
            status: text(meta, "status"),
            protocol,
            control_mode: text(meta, "local_control_mode"),
            started_at,
            winner: text(meta, "winner"),
            post_id: text(meta, "post_id"),
            waiting_since: run::waiting(dir, meta).map(|w| w.since),
            peer: text(meta, "peer_public_key"),
        }
    }
}

/// Where the console finds replay bundles dropped into the data dir.
pub const BUNDLES_DIR: &str = "bundles";

/// The `role` of a row that is a replay bundle, not a state dir.
pub const BUNDLE_ROLE: &str = "bundle";

/// Most bundles listed from [`BUNDLES_DIR`] (the newest by modification).
pub const MAX_LISTED_BUNDLES: usize = 200;

impl SessionRow {
    /// A replay bundle file (`dir` is its path): opening it verifies it and
    /// replays it.
    pub fn is_bundle(&self) -> bool {
        self.role == BUNDLE_ROLE
    }

    fn bundle(path: &Path, modified: f64) -> SessionRow {
        SessionRow {
            dir: path.to_owned(),
            role: BUNDLE_ROLE.to_owned(),
            status: "replay".to_owned(),
            protocol: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            control_mode: String::new(),
            started_at: modified,
            winner: String::new(),
            post_id: String::new(),
            waiting_since: None,
            peer: String::new(),
        }
    }
}

/// The `.zip` files in `<data dir>/bundles` that start as a zip does, newest
/// first, at most [`MAX_LISTED_BUNDLES`]. Only the first bytes are read
/// here: a bundle is verified when it is opened.
fn scan_bundles(data_dir: &Path) -> Vec<SessionRow> {
    let Ok(entries) = std::fs::read_dir(data_dir.join(BUNDLES_DIR)) else {
        return Vec::new();
    };
    let mut found: Vec<(f64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("zip")))
        .filter_map(|p| {
            let modified = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?
                .as_secs_f64();
            Some((modified, p))
        })
        .collect();
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    found
        .into_iter()
        .filter(|(_, p)| crate::session::bundle::is_bundle(p))
        .take(MAX_LISTED_BUNDLES)
        .map(|(t, p)| SessionRow::bundle(&p, t))
        .collect()
}

/// Every session under `<data dir>/sessions` and every replay bundle in
/// `<data dir>/bundles`, newest first (dead daemons are marked as `session
/// list` marks them).
pub fn scan_sessions(data_dir: &Path) -> Vec<SessionRow> {
    let root = data_dir.join("sessions");
    let mut rows: Vec<SessionRow> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter_map(|d| run::check_daemon(&d).map(|m| SessionRow::from_meta(&d, &m)))
        .collect();
    rows.extend(scan_bundles(data_dir));
    rows.sort_by(|a, b| {
        b.started_at
            .partial_cmp(&a.started_at)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invitations_parse_from_the_servers_reply() {
        let v = crate::json::parse_str(
            r#"{"results":[{"post_id":"p1","protocol_id":"43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f","nickname":"house","options":{"best_of":3},"host_control_mode":"autonomous","created_at":1.5},{"nope":1}]}"#,
        )
        .unwrap();
        let l = parse_invitations(&v);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].alias, "rps-v1");
        assert_eq!(l[0].options_line(), "best_of=3");
        assert_eq!(l[0].unjoinable, None);
    }

    #[test]
    fn an_invitation_palaver_cannot_honour_is_marked_with_the_reason() {
        let v = crate::json::parse_str(
            r#"[{"post_id":"p1","protocol_id":"43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f","options":{"min_think_seconds":1e300}}]"#,
        )
        .unwrap();
        let why = parse_invitations(&v)[0].unjoinable.clone().unwrap();
        assert!(why.contains("option min_think_seconds"), "{why}");
    }
}
