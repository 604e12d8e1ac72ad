//! strategy.json and strategy_events.jsonl: set and deep-merge with an
//! audit line each, read by a running session whenever the file changes.

use super::files::{self, deep_merge};
use crate::engine::Strategy;
use crate::json::{Map, Value};
use crate::obj;
use crate::utc::iso_now;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The strategy files of an engine dir.
#[derive(Debug, Clone)]
pub struct StrategyFile {
    pub path: PathBuf,
    pub events: PathBuf,
}

impl StrategyFile {
    pub fn in_dir(child: &Path) -> StrategyFile {
        StrategyFile {
            path: child.join("strategy.json"),
            events: child.join("strategy_events.jsonl"),
        }
    }

    /// The current strategy (empty when missing or damaged).
    pub fn read(&self) -> Map {
        files::read_json_object(&self.path).unwrap_or_default()
    }

    /// Replaces the strategy (`op: set`).
    pub fn set(&self, strategy: Map, meta: Option<Map>) -> io::Result<Map> {
        let before = self.read();
        files::write_json_atomic(&self.path, &Value::Object(strategy.clone()), true)?;
        self.audit("set", before, strategy.clone(), meta)?;
        Ok(strategy)
    }

    /// Deep-merges `patch` into the strategy (`op: merge`).
    pub fn merge(&self, patch: Map, meta: Option<Map>) -> io::Result<Map> {
        let before = self.read();
        let mut after = before.clone();
        deep_merge(&mut after, patch);
        files::write_json_atomic(&self.path, &Value::Object(after.clone()), true)?;
        self.audit("merge", before, after.clone(), meta)?;
        Ok(after)
    }

    fn audit(&self, op: &str, before: Map, after: Map, meta: Option<Map>) -> io::Result<()> {
        let mut line = obj! { "ts" => iso_now(), "op" => op, "before" => before, "after" => after };
        if let Some(m) = meta.filter(|m| !m.is_empty()) {
            line.insert("_meta", Value::Object(m));
        }
        files::append_line(&self.events, &Value::Object(line))
    }

    /// A strategy for the engine that rereads the file when it changes.
    pub fn watched(&self) -> Strategy {
        let path = self.path.clone();
        let stamp: Mutex<Option<(SystemTime, u64)>> = Mutex::new(None);
        Strategy::with_loader(Box::new(move || {
            let meta = std::fs::metadata(&path).ok();
            let now = meta
                .as_ref()
                .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
            let mut last = stamp.lock().ok()?;
            if *last == now {
                return None;
            }
            *last = now;
            Some(
                now.and_then(|_| files::read_json_object(&path))
                    .unwrap_or_default(),
            )
        }))
    }
}
