//! The web of trust, the client's side: the community's daily snapshot of
//! trust edges (who rated whom well or badly, weighted by the rater's
//! karma), fetched the way the reference client fetches it, and the
//! indirect trust score computed from it with exactly the reference's
//! arithmetic (`aigenora.agent.trust.trust_score`).
//!
//! Trust is advisory: nothing in palaver gates an action on it, and a
//! snapshot that cannot be had is a warning, never an error. Fetching
//! falls back like the reference: the remote snapshot (`fresh`, cached in
//! `<data_dir>/trust-cache/trust-{date}.json`), else the newest cached one
//! (`stale`), else none (`unavailable`).

use crate::json::{self, Value, canonical};
use crate::web::http::{Http, HttpLimits};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The reference's default number of hops.
pub const DEFAULT_DEPTH: u32 = 2;
/// The most hops `trust show --depth` accepts.
pub const MAX_DEPTH: u32 = 6;
/// Each hop halves a truster's weight.
pub const DECAY: f64 = 0.5;
/// The largest snapshot read, from the network or the cache.
pub const MAX_SNAPSHOT_BYTES: usize = 64 << 20;
/// How long one snapshot request may take (the reference's timeout).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Where the snapshots are cached, under the data dir.
pub const CACHE_DIR: &str = "trust-cache";
/// How many paths a score lists (the strongest first).
const TOP_PATHS: usize = 10;

/// One edge: `truster` trusts `trustee` (a negative weight: distrusts).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Edge {
    pub truster: String,
    pub trustee: String,
    pub weight: i64,
}

/// A snapshot: its `meta` as sent, and its edges.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub meta: Value,
    pub edges: Vec<Edge>,
}

/// Why a snapshot was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not an object with a `trust_edges` array")]
    NoEdges,
    #[error("trust edge {index}: {why}")]
    BadEdge { index: usize, why: &'static str },
    #[error("meta.edges_sha256 is {declared}, but the edges hash to {actual}")]
    Digest { declared: String, actual: String },
}

/// An edge's weight as the reference's `int(e["weight"])` reads it: an
/// integer, or a float cut toward zero.
fn weight_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(json::Number::Int(i)) => Some(*i),
        Value::Number(json::Number::Float(f)) if f.is_finite() && f.abs() < 9.0e18 => {
            Some(f.trunc() as i64)
        }
        _ => None,
    }
}

impl Snapshot {
    /// Reads a snapshot's text: an object with a `trust_edges` array whose
    /// every edge names its truster and trustee and has a numeric weight;
    /// when `meta.edges_sha256` is there, the SHA-256 of the canonical JSON
    /// of `trust_edges` must be it. (`meta.sha256_self` is not checked: the
    /// reference hashes the body that holds the field, which no body can
    /// satisfy; docs/compatibility.md.)
    pub fn parse(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        let doc = json::parse_bytes(bytes).map_err(|e| SnapshotError::NotJson(e.to_string()))?;
        let Some(list) = doc.get("trust_edges").and_then(Value::as_array) else {
            return Err(SnapshotError::NoEdges);
        };
        let mut edges = Vec::with_capacity(list.len());
        for (index, e) in list.iter().enumerate() {
            let bad = |why| SnapshotError::BadEdge { index, why };
            let truster = e.get_str("truster").ok_or(bad("no `truster` text"))?;
            let trustee = e.get_str("trustee").ok_or(bad("no `trustee` text"))?;
            let weight = e
                .get("weight")
                .and_then(weight_of)
                .ok_or(bad("no numeric `weight`"))?;
            edges.push(Edge {
                truster: truster.to_owned(),
                trustee: trustee.to_owned(),
                weight,
            });
        }
        let meta = match doc.get("meta") {
            Some(m @ Value::Object(_)) => m.clone(),
            _ => Value::Object(json::Map::new()),
        };
        if let Some(declared) = meta.get_str("edges_sha256") {
            let actual = canonical::sha256_hex(canonical::to_vec(&Value::Array(list.clone())));
            if !declared.eq_ignore_ascii_case(&actual) {
                return Err(SnapshotError::Digest {
                    declared: declared.to_owned(),
                    actual,
                });
            }
        }
        Ok(Snapshot { meta, edges })
    }

    /// `meta.snapshot_date`, if it is a date (`YYYY-MM-DD` that exists).
    pub fn date(&self) -> Option<&str> {
        self.meta.get_str("snapshot_date").filter(|d| is_date(d))
    }

    /// How many edges distrust.
    pub fn distrust(&self) -> usize {
        self.edges.iter().filter(|e| e.weight < 0).count()
    }

    /// How many agents the edges name.
    pub fn nodes(&self) -> usize {
        let mut n: Vec<&str> = self
            .edges
            .iter()
            .flat_map(|e| [e.truster.as_str(), e.trustee.as_str()])
            .collect();
        n.sort_unstable();
        n.dedup();
        n.len()
    }
}

/// Whether `s` is a date `YYYY-MM-DD` that exists (safe in a file name).
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && crate::utc::parse_rfc3339_utc(&format!("{s}T00:00:00Z")).is_some()
}

/// A direct (one-hop) edge into the agent scored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Direct {
    pub truster: String,
    pub weight: i64,
}

/// One truster's contribution to a score.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TrustPath {
    pub truster: String,
    pub hop: u32,
    pub contribution: i64,
}

/// An agent's indirect trust.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Score {
    pub score: i64,
    pub direct: Vec<Direct>,
    pub paths: Vec<TrustPath>,
}

/// Python's `int(round(x))`: to the nearest integer, a half to the even one.
fn py_round(x: f64) -> i64 {
    x.round_ties_even() as i64
}

/// The reference's `trust_score`: walks the edges into `target` backwards,
/// breadth first, up to `depth` hops; each truster first reached at hop `h`
/// adds `weight × decay^h` (a node is never taken again at an equal or
/// longer hop, so cycles end). The score and each contribution are rounded
/// like Python's `round`; `paths` holds the ten largest contributions by
/// magnitude (ties in the order they were found), `direct` every edge into
/// `target`.
pub fn trust_score(target: &str, edges: &[Edge], depth: u32, decay: f64) -> Score {
    let mut inbound: HashMap<&str, Vec<(&str, i64)>> = HashMap::new();
    for e in edges {
        inbound
            .entry(e.trustee.as_str())
            .or_default()
            .push((e.truster.as_str(), e.weight));
    }
    let direct = inbound
        .get(target)
        .map(|v| {
            v.iter()
                .map(|(t, w)| Direct {
                    truster: (*t).to_owned(),
                    weight: *w,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut score = 0.0f64;
    let mut paths = Vec::new();
    let mut visited: HashMap<&str, u32> = HashMap::from([(target, 0)]);
    let mut queue: VecDeque<(&str, u32)> = VecDeque::from([(target, 0)]);
    while let Some((node, hop)) = queue.pop_front() {
        if hop >= depth {
            continue;
        }
        for &(truster, weight) in inbound.get(node).map(Vec::as_slice).unwrap_or(&[]) {
            let nhop = hop + 1;
            if visited.get(truster).is_some_and(|&h| h <= nhop) {
                continue;
            }
            visited.insert(truster, nhop);
            // Python: int × float is float(int) × float, and float ** int
            // is C's pow.
            let contribution = weight as f64 * decay.powf(f64::from(nhop));
            score += contribution;
            paths.push(TrustPath {
                truster: truster.to_owned(),
                hop: nhop,
                contribution: py_round(contribution),
            });
            queue.push_back((truster, nhop));
        }
    }
    // A stable sort, as Python's `sorted(..., reverse=True)` is.
    paths.sort_by(|a: &TrustPath, b: &TrustPath| {
        b.contribution
            .unsigned_abs()
            .cmp(&a.contribution.unsigned_abs())
    });
    paths.truncate(TOP_PATHS);
    Score {
        score: py_round(score),
        direct,
        paths,
    }
}

/// Where a snapshot came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Freshness {
    /// Fetched just now.
    Fresh,
    /// The newest cached one (the fetch failed).
    Stale,
    /// None at all.
    Unavailable,
}

/// What a fetch found.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: Freshness,
    /// The URL or cached file it came from.
    pub source: Option<String>,
    pub snapshot: Option<Snapshot>,
    /// Why the remote snapshot was not used (empty when it was), and
    /// anything else worth a warning (a cache not written).
    pub notes: Vec<String>,
}

/// The snapshot's URL under `base`: `latest.json`, or `trust-{date}.json`.
pub fn snapshot_url(base: &str, date: Option<&str>) -> String {
    let base = base.trim_end_matches('/');
    match date {
        Some(d) => format!("{base}/trust-{d}.json"),
        None => format!("{base}/latest.json"),
    }
}

/// GETs `url` (unsigned) within the fetch's bounds.
async fn get(url: &str) -> Result<Vec<u8>, String> {
    let http = Http::new(HttpLimits {
        connect: FETCH_TIMEOUT,
        head: FETCH_TIMEOUT,
        request: FETCH_TIMEOUT,
        max_body: MAX_SNAPSHOT_BYTES,
        ..HttpLimits::default()
    });
    let req = hyper::Request::get(url)
        .body(http_body_util::Full::new(hyper::body::Bytes::new()))
        .map_err(|e| format!("{url}: {e}"))?;
    let answer = http.fetch(req).await.map_err(|e| e.to_string())?;
    if answer.status != 200 {
        return Err(format!("{url}: HTTP {}", answer.status));
    }
    if answer.body.is_empty() {
        return Err(format!("{url}: an empty body"));
    }
    Ok(answer.body.to_vec())
}

/// The cached snapshots, newest date first.
fn cached(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let date = name.strip_prefix("trust-")?.strip_suffix(".json")?;
            is_date(date).then(|| (date.to_owned(), e.path()))
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0));
    files.into_iter().map(|(_, p)| p).collect()
}

/// Reads a cached snapshot (bounded like a fetched one).
fn read_cached(path: &Path) -> Result<Snapshot, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(MAX_SNAPSHOT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() > MAX_SNAPSHOT_BYTES {
        return Err(format!("over {MAX_SNAPSHOT_BYTES} bytes"));
    }
    Snapshot::parse(&bytes).map_err(|e| e.to_string())
}

/// Fetches the snapshot of `date` (default: the latest) from `base`, with
/// the reference's fallback to the cache in `data_dir` (also when there is
/// no `base` at all). Never fails: a snapshot that cannot be had is
/// [`Freshness::Unavailable`].
pub async fn fetch(data_dir: &Path, base: Option<&str>, date: Option<&str>) -> Fetched {
    let cache = data_dir.join(CACHE_DIR);
    let url = snapshot_url(base.unwrap_or(""), date);
    let mut notes = Vec::new();
    let remote = match date {
        Some(d) if !is_date(d) => Err(format!("{d:?} is not a date YYYY-MM-DD")),
        _ if base.is_none() => Err("no trust URL (--trust-url, PALAVER_TRUST_URL, `trust_url` in config.toml, or a community server)".to_owned()),
        _ => get(&url).await.and_then(|bytes| {
            Snapshot::parse(&bytes)
                .map(|s| (s, bytes))
                .map_err(|e| format!("{url}: {e}"))
        }),
    };
    match remote {
        Ok((snapshot, bytes)) => {
            match snapshot.date() {
                Some(d) => {
                    let path = cache.join(format!("trust-{d}.json"));
                    if let Err(e) = crate::fsutil::write_atomic(&path, &bytes) {
                        notes.push(format!("could not cache it in {}: {e}", path.display()));
                    }
                }
                None => notes
                    .push("not cached: its meta.snapshot_date is not a date YYYY-MM-DD".to_owned()),
            }
            return Fetched {
                status: Freshness::Fresh,
                source: Some(url),
                snapshot: Some(snapshot),
                notes,
            };
        }
        Err(why) => notes.push(why),
    }
    for path in cached(&cache) {
        match read_cached(&path) {
            Ok(snapshot) => {
                return Fetched {
                    status: Freshness::Stale,
                    source: Some(path.display().to_string()),
                    snapshot: Some(snapshot),
                    notes,
                };
            }
            Err(e) => notes.push(format!("{}: {e}", path.display())),
        }
    }
    Fetched {
        status: Freshness::Unavailable,
        source: None,
        snapshot: None,
        notes,
    }
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
