//! The `authoritative_realtime` flow's pure parts: the match config, the
//! ruleset and config hashes, frames and their hash chain, command
//! messages, the command lead from a measured round trip, and the journals.
//! The loops that run them over a channel are in `flows/realtime.rs`.
//!
//! Every hash is SHA-256 of canonical JSON, as the reference's
//! `proto/realtime.py` computes it, so a palaver side and a reference side
//! check each other's frames and commands.

mod frame;
mod journal;
mod rules;

pub use frame::{
    FrameError, OUTCOMES, ZERO_HASH, applied, command_message, empty_applied, frame_core_hash,
    json_hash, make_frame, now_ns, verify_frame,
};
pub use journal::Journal;
pub use rules::{RealtimeRules, RulesError, Stepped};

use crate::json::{Map, Value};
use crate::obj;
use crate::spec::Spec;
use std::path::Path;

/// The realtime wire version both sides must speak.
pub const WIRE_VERSION: i64 = 1;

/// The spec's `flow.realtime` block (ranges checked by the spec's own
/// validation; read again here so a value outside them is refused, not used).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub tick_rate_hz: u32,
    pub input_delay_ticks: u64,
    pub snapshot_every_ticks: u64,
    pub max_command_lead_ticks: u64,
    pub max_commands_per_frame: usize,
    /// `abort` or `continue`.
    pub disconnect_policy: String,
}

impl Config {
    pub fn from_spec(spec: &Spec) -> Result<Config, String> {
        let rt = spec
            .get("flow")
            .and_then(|f| f.get("realtime"))
            .and_then(Value::as_object)
            .ok_or("the spec has no flow.realtime block")?;
        let int = |key: &str, lo: i64, hi: i64| -> Result<i64, String> {
            match rt.get(key).and_then(Value::as_i64) {
                Some(v) if (lo..=hi).contains(&v) => Ok(v),
                _ => Err(format!(
                    "flow.realtime.{key} must be an integer from {lo} to {hi}"
                )),
            }
        };
        let policy = rt
            .get("disconnect_policy")
            .and_then(Value::as_str)
            .filter(|p| matches!(*p, "abort" | "continue"))
            .ok_or("flow.realtime.disconnect_policy must be abort or continue")?;
        Ok(Config {
            tick_rate_hz: int("tick_rate_hz", 1, 60)? as u32,
            input_delay_ticks: int("input_delay_ticks", 1, 120)? as u64,
            snapshot_every_ticks: int("snapshot_every_ticks", 1, 60)? as u64,
            max_command_lead_ticks: int("max_command_lead_ticks", 1, 600)? as u64,
            max_commands_per_frame: int("max_commands_per_frame", 1, 1024)? as usize,
            disconnect_policy: policy.to_owned(),
        })
    }

    /// The six keys, in the reference's order (the `config` of `rt_ready`
    /// and the `realtime` of the match config hash).
    pub fn to_value(&self) -> Value {
        Value::Object(obj! {
            "tick_rate_hz" => self.tick_rate_hz as i64,
            "input_delay_ticks" => self.input_delay_ticks as i64,
            "snapshot_every_ticks" => self.snapshot_every_ticks as i64,
            "max_command_lead_ticks" => self.max_command_lead_ticks as i64,
            "max_commands_per_frame" => self.max_commands_per_frame as i64,
            "disconnect_policy" => self.disconnect_policy.as_str(),
        })
    }

    /// One tick, in milliseconds.
    pub fn tick_ms(&self) -> f64 {
        1000.0 / f64::from(self.tick_rate_hz.max(1))
    }
}

/// Why a protocol dir could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum RulesetError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("the protocol dir {0} has no rule files to hash")]
    Empty(String),
    #[error("the protocol dir {0} has more than {1} files")]
    TooMany(String, usize),
}

/// Most files hashed in a protocol dir.
const MAX_RULESET_FILES: usize = 4096;

/// The reference's `ruleset_hash` of a protocol dir: every regular file
/// except under `ui/`, `__pycache__`, dot-files and `.pyc`, sorted by
/// POSIX path, each as `{"path","sha256"}` of its raw bytes, hashed as
/// `{"version":1,"files":[…]}`.
pub fn ruleset_hash(dir: &Path) -> Result<String, RulesetError> {
    let io = |p: &Path, source| RulesetError::Io {
        path: p.display().to_string(),
        source,
    };
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| io(&d, e))? {
            let entry = entry.map_err(|e| io(&d, e))?;
            let path = entry.path();
            let Ok(rel) = path.strip_prefix(dir) else {
                continue;
            };
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.first().is_some_and(|p| p == "ui")
                || parts
                    .iter()
                    .any(|p| p == "__pycache__" || p.starts_with('.'))
            {
                continue;
            }
            let kind = entry.file_type().map_err(|e| io(&path, e))?;
            if kind.is_dir() {
                stack.push(path);
            } else if path.is_file() && path.extension().is_none_or(|e| e != "pyc") {
                files.push((parts.join("/"), path));
                if files.len() > MAX_RULESET_FILES {
                    return Err(RulesetError::TooMany(
                        dir.display().to_string(),
                        MAX_RULESET_FILES,
                    ));
                }
            }
        }
    }
    if files.is_empty() {
        return Err(RulesetError::Empty(dir.display().to_string()));
    }
    // Python sorts the paths as strings: code point order, which for
    // UTF-8 is byte order.
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut list = Vec::with_capacity(files.len());
    for (rel, path) in files {
        let bytes = std::fs::read(&path).map_err(|e| io(&path, e))?;
        list.push(Value::Object(obj! {
            "path" => rel,
            "sha256" => crate::json::canonical::sha256_hex(&bytes),
        }));
    }
    Ok(json_hash(&Value::Object(obj! {
        "version" => 1i64,
        "files" => Value::Array(list),
    })))
}

/// The ruleset palaver's own rules for a protocol present: a hash in the
/// reference's shape over two named entries, the protocol_id and the
/// native rules' version, so two palaver sides agree and a side running
/// other rules (another version, the reference's hooks.py) is told apart.
pub fn native_ruleset_hash(protocol_id: &str, rules: &str) -> String {
    json_hash(&Value::Object(obj! {
        "version" => 1i64,
        "files" => Value::Array(vec![
            Value::Object(obj! {
                "path" => "palaver-native-rules",
                "sha256" => crate::json::canonical::sha256_hex(rules.as_bytes()),
            }),
            Value::Object(obj! { "path" => "spec.json", "sha256" => protocol_id }),
        ]),
    }))
}

/// `H({"wire_version":1,"ruleset_hash","options","realtime"})`, with the
/// invitation options as given.
pub fn match_config_hash(ruleset: &str, options: &Map, config: &Config) -> String {
    json_hash(&Value::Object(obj! {
        "wire_version" => WIRE_VERSION,
        "ruleset_hash" => ruleset,
        "options" => Value::Object(options.clone()),
        "realtime" => config.to_value(),
    }))
}

/// Round-trip samples from `_sys` probes, as the reference keeps them.
#[derive(Debug, Clone, Default)]
pub struct Latency {
    pub samples_ms: Vec<f64>,
    pub smoothed_ms: Option<f64>,
}

impl Latency {
    pub fn add(&mut self, rtt_ms: f64) {
        let rtt = rtt_ms.max(0.0);
        self.samples_ms.push(rtt);
        if self.samples_ms.len() > 32 {
            self.samples_ms.remove(0);
        }
        self.smoothed_ms = Some(match self.smoothed_ms {
            None => rtt,
            Some(s) => s * 0.75 + rtt * 0.25,
        });
    }

    /// Mean absolute difference of consecutive samples.
    pub fn jitter_ms(&self) -> f64 {
        let s = &self.samples_ms;
        if s.len() < 2 {
            return 0.0;
        }
        s.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / (s.len() - 1) as f64
    }
}

/// What the measured round trip means for commands: the lead (ticks
/// ahead of the frame a command answers) and the advice the reference
/// publishes with it.
#[derive(Debug, Clone, PartialEq)]
pub struct TransportProfile {
    pub measured: bool,
    pub samples: usize,
    pub rtt_ms: Option<f64>,
    pub smoothed_rtt_ms: Option<f64>,
    pub jitter_ms: f64,
    pub command_lead_ticks: u64,
    pub micro_suitable: bool,
}

impl TransportProfile {
    /// lead = max(input delay, ceil((rtt + 2·jitter) / tick) + 2), at most
    /// the max lead; the input delay when nothing was measured.
    pub fn new(latency: &Latency, config: &Config) -> TransportProfile {
        let tick_ms = config.tick_ms();
        let jitter = latency.jitter_ms();
        match latency.smoothed_ms {
            None => TransportProfile {
                measured: false,
                samples: 0,
                rtt_ms: None,
                smoothed_rtt_ms: None,
                jitter_ms: 0.0,
                command_lead_ticks: config.input_delay_ticks,
                micro_suitable: false,
            },
            Some(rtt) => {
                let needed = ((rtt.max(0.0) + jitter * 2.0) / tick_ms).ceil();
                let needed = if needed.is_finite() {
                    needed.clamp(0.0, 1e6) as u64 + 2
                } else {
                    config.max_command_lead_ticks
                };
                let lead = needed
                    .max(config.input_delay_ticks)
                    .min(config.max_command_lead_ticks);
                let threshold = (tick_ms * 1.5).clamp(75.0, 200.0);
                TransportProfile {
                    measured: true,
                    samples: latency.samples_ms.len(),
                    rtt_ms: latency.samples_ms.last().copied(),
                    smoothed_rtt_ms: Some(rtt),
                    jitter_ms: jitter,
                    command_lead_ticks: lead,
                    micro_suitable: rtt + jitter <= threshold,
                }
            }
        }
    }

    pub fn to_value(&self) -> Value {
        let round2 = |v: f64| Value::from((v * 100.0).round() / 100.0);
        Value::Object(obj! {
            "status" => if self.measured { "measured" } else { "unavailable" },
            "samples" => self.samples as i64,
            "rtt_ms" => self.rtt_ms.map(round2).unwrap_or(Value::Null),
            "smoothed_rtt_ms" => self.smoothed_rtt_ms.map(round2).unwrap_or(Value::Null),
            "jitter_ms" => if self.samples > 0 { round2(self.jitter_ms) } else { Value::Null },
            "command_lead_ticks" => self.command_lead_ticks as i64,
            "micro_suitable" => self.micro_suitable,
            "recommended_control" => if self.micro_suitable { "micro" } else { "macro" },
        })
    }
}

#[cfg(test)]
mod tests;
