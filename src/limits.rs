//! Ranges for every duration, size and count palaver takes from outside:
//! invitation options, peer frames, command-line flags, environment
//! variables, config files and server replies.
//!
//! A value from outside is turned into a `Duration` (or a size or a count)
//! only through [`Seconds::check`] or [`Count::check`], never with
//! `Duration::from_secs_f64` directly: that call panics on NaN, infinities,
//! negatives and values past `u64::MAX` seconds. Out of range is a
//! [`LimitError`] naming the field, the value and the allowed range.
//! docs/reliability.md lists the limits.

use crate::json::{Map, Number, Value};
use std::time::Duration;

/// One day, in seconds: the longest think time, peer timeout or decision
/// window palaver honours.
pub const DAY: f64 = 86_400.0;

/// Why a value from outside was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LimitError {
    #[error("{field} must be a number, got {value}")]
    NotANumber { field: String, value: String },
    #[error("{field} must be a finite number, got {value}")]
    NotFinite { field: String, value: String },
    #[error("{field} = {value} is out of range (allowed {min}..={max}{unit})")]
    OutOfRange {
        field: String,
        value: String,
        min: String,
        max: String,
        unit: &'static str,
    },
}

/// A range of time accepted for one setting, in seconds (or minutes, for
/// the settings the user gives in minutes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds {
    /// How the setting is named where the user meets it (a flag, an option
    /// key, a variable).
    pub field: &'static str,
    pub min: f64,
    pub max: f64,
    /// Zero is accepted beside the range, meaning "off" or "default".
    pub zero_means_off: bool,
    /// The setting is given in minutes, not seconds.
    pub minutes: bool,
}

impl Seconds {
    /// The value as a `Duration`, or why it cannot be one.
    pub fn check(&self, value: f64) -> Result<Duration, LimitError> {
        self.check_as(self.field, value)
    }

    /// As [`Seconds::check`], naming the value `field` in the error (an
    /// option key inside an invitation, say).
    pub fn check_as(&self, field: &str, value: f64) -> Result<Duration, LimitError> {
        if !value.is_finite() {
            return Err(LimitError::NotFinite {
                field: field.to_owned(),
                value: value.to_string(),
            });
        }
        if self.zero_means_off && value == 0.0 {
            return Ok(Duration::ZERO);
        }
        if value < self.min || value > self.max {
            return Err(LimitError::OutOfRange {
                field: field.to_owned(),
                value: value.to_string(),
                min: self.min.to_string(),
                max: self.max.to_string(),
                unit: if self.minutes { " min" } else { " s" },
            });
        }
        let secs = if self.minutes { value * 60.0 } else { value };
        // In range, so finite and non-negative; the fallback only guards a
        // range constant set past what a Duration holds.
        Ok(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
    }

    /// The value clamped into the range (NaN reads as the minimum): for a
    /// value that was checked once already where it came in, at a place
    /// that must not fail. Never panics.
    pub fn saturate(&self, value: f64) -> Duration {
        let v = self.clamp(value);
        Duration::try_from_secs_f64(if self.minutes { v * 60.0 } else { v })
            .unwrap_or(Duration::MAX)
    }

    /// The number clamped into the range (NaN reads as the minimum).
    pub fn clamp(&self, value: f64) -> f64 {
        if value.is_nan() {
            self.min
        } else {
            value.clamp(self.min, self.max)
        }
    }

    /// Parses a number of seconds (or minutes) from text: an environment
    /// variable or a config value.
    pub fn parse(&self, s: &str) -> Result<Duration, LimitError> {
        self.check(self.number(s)?)
    }

    /// As [`Seconds::parse`], keeping the number (for clap's `value_parser`).
    pub fn parse_arg(&self, s: &str) -> Result<f64, String> {
        let v = self.number(s).map_err(|e| e.to_string())?;
        self.check(v).map(|_| v).map_err(|e| e.to_string())
    }

    fn number(&self, s: &str) -> Result<f64, LimitError> {
        s.trim().parse().map_err(|_| LimitError::NotANumber {
            field: self.field.to_owned(),
            value: s.to_owned(),
        })
    }
}

/// A range of whole numbers accepted for one setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub field: &'static str,
    pub min: i64,
    pub max: i64,
}

impl Count {
    pub fn check(&self, value: i64) -> Result<i64, LimitError> {
        self.check_as(self.field, value)
    }

    pub fn check_as(&self, field: &str, value: i64) -> Result<i64, LimitError> {
        if value < self.min || value > self.max {
            return Err(LimitError::OutOfRange {
                field: field.to_owned(),
                value: value.to_string(),
                min: self.min.to_string(),
                max: self.max.to_string(),
                unit: "",
            });
        }
        Ok(value)
    }
}

/// `min_think_seconds` / `max_think_seconds` in options or a spec's timing,
/// and `decision.timeout_seconds`.
pub const THINK: Seconds = Seconds {
    field: "think time",
    min: 0.0,
    max: DAY,
    zero_means_off: true,
    minutes: false,
};

/// `--peer-timeout`: give up on a silent peer after this long.
pub const PEER_TIMEOUT: Seconds = Seconds {
    field: "--peer-timeout",
    min: 0.01,
    max: DAY,
    zero_means_off: false,
    minutes: false,
};

/// `--heartbeat-interval` (0: no heartbeats).
pub const HEARTBEAT_INTERVAL: Seconds = Seconds {
    field: "--heartbeat-interval",
    min: 0.01,
    max: 3_600.0,
    zero_means_off: true,
    minutes: false,
};

/// `--pace` (0: no pause): a pause before each frame this side sends.
pub const PACE: Seconds = Seconds {
    field: "--pace",
    min: 0.01,
    max: 600.0,
    zero_means_off: true,
    minutes: false,
};

/// `--heartbeat-timeout` (0: three intervals).
pub const HEARTBEAT_TIMEOUT: Seconds = Seconds {
    field: "--heartbeat-timeout",
    min: 0.01,
    max: DAY,
    zero_means_off: true,
    minutes: false,
};

/// `PALAVER_HOOK_TIMEOUT`: how long one call of a hooks program may take.
pub const HOOK_TIMEOUT: Seconds = Seconds {
    field: "PALAVER_HOOK_TIMEOUT",
    min: 0.01,
    max: 3_600.0,
    zero_means_off: false,
    minutes: false,
};

/// `--invitation-ttl` in minutes: how long an invitation stays listed.
pub const INVITATION_TTL_MINUTES: Seconds = Seconds {
    field: "--invitation-ttl",
    min: 1.0 / 60.0,
    max: 7.0 * 24.0 * 60.0,
    zero_means_off: false,
    minutes: true,
};

/// `palaver serve --read-timeout`: how long a client has to send a
/// request's head, and then its body.
pub const SERVE_READ_TIMEOUT: Seconds = Seconds {
    field: "--read-timeout",
    min: 0.1,
    max: 3_600.0,
    zero_means_off: false,
    minutes: false,
};

/// `palaver serve --invitation-ttl`, in seconds: how long an invitation
/// stays listed without a renewal.
pub const SERVE_INVITATION_TTL: Seconds = Seconds {
    field: "--invitation-ttl",
    min: 1.0,
    max: 7.0 * DAY,
    zero_means_off: false,
    minutes: false,
};

/// `palaver serve --shutdown-grace`: how long a stopping server (SIGTERM,
/// SIGINT) lets the requests in flight finish before it exits anyway.
pub const SERVE_SHUTDOWN_GRACE: Seconds = Seconds {
    field: "--shutdown-grace",
    min: 0.0,
    max: 600.0,
    zero_means_off: false,
    minutes: false,
};

/// `palaver serve --db-pool`: connections one instance keeps to a
/// PostgreSQL database at most.
pub const SERVE_DB_POOL: Count = Count {
    field: "--db-pool",
    min: 1,
    max: 256,
};

/// `[coach] timeout_seconds` in config.toml: how long one coach turn (one
/// run of the user's agent CLI) may take.
pub const COACH_TIMEOUT: Seconds = Seconds {
    field: "coach.timeout_seconds",
    min: 5.0,
    max: 3_600.0,
    zero_means_off: false,
    minutes: false,
};

/// Option keys that are seconds, wherever a protocol reads them.
const SECOND_OPTIONS: &[&str] = &[
    "min_think_seconds",
    "max_think_seconds",
    "round_delay_seconds",
];

/// Option keys that count rounds, attempts or points in the native hooks;
/// a session longer than this is not one palaver agrees to play.
pub const ROUNDS: Count = Count {
    field: "rounds",
    min: i64::MIN,
    max: 100_000,
};
const COUNT_OPTIONS: &[&str] = &[
    "best_of",
    "rounds_to_win",
    "max_rounds",
    "total_rounds",
    "max_attempts",
    "total_points",
];

/// Guess-number's range ends: far enough from the i64 edges that the
/// hooks' arithmetic on them cannot overflow.
pub const RANGE_END: Count = Count {
    field: "range",
    min: -1_000_000_000_000_000,
    max: 1_000_000_000_000_000,
};
const RANGE_OPTIONS: &[&str] = &["range_min", "range_max"];

/// A JSON value as a number of seconds, the way the decision bus reads it:
/// numbers (of any size) and numeric strings; anything else is `None`.
pub fn json_seconds(v: &Value) -> Option<f64> {
    match v {
        Value::Number(Number::Int(i)) => Some(*i as f64),
        Value::Number(Number::Float(f)) => Some(*f),
        Value::Number(Number::BigInt(s)) => Some(s.parse().unwrap_or(f64::INFINITY)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A JSON value as a whole number, if it is one (big integers saturate so
/// the range check refuses them).
fn json_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(Number::Int(i)) => Some(*i),
        Value::Number(Number::BigInt(s)) => Some(if s.starts_with('-') {
            i64::MIN
        } else {
            i64::MAX
        }),
        Value::Number(Number::Float(f)) if f.is_finite() => Some(f.clamp(-9.2e18, 9.2e18) as i64),
        Value::Number(Number::Float(f)) if f.is_nan() => None,
        Value::Number(Number::Float(f)) => Some(if *f < 0.0 { i64::MIN } else { i64::MAX }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Checks the options of an invitation (or a host's own) for values palaver
/// cannot honour: think times and delays that are not finite or beyond a
/// day, round counts past [`ROUNDS`], range ends past [`RANGE_END`]. The
/// spec's own validation runs before this; this catches what a spec leaves
/// open (undeclared keys pass options validation).
pub fn check_options(options: &Map) -> Result<(), LimitError> {
    for (k, v) in options.iter() {
        if SECOND_OPTIONS.contains(&k) {
            if let Value::Number(Number::Float(f)) = v
                && !f.is_finite()
            {
                return Err(LimitError::NotFinite {
                    field: format!("option {k}"),
                    value: f.to_string(),
                });
            }
            if let Some(s) = json_seconds(v) {
                THINK.check_as(&format!("option {k}"), s.max(0.0))?;
            }
        } else if COUNT_OPTIONS.contains(&k) {
            if let Some(n) = json_int(v) {
                ROUNDS.check_as(&format!("option {k}"), n)?;
            }
        } else if RANGE_OPTIONS.contains(&k)
            && let Some(n) = json_int(v)
        {
            RANGE_END.check_as(&format!("option {k}"), n)?;
        }
    }
    Ok(())
}

/// Checks the timing values a spec carries (`timing.min_think_seconds`,
/// `timing.max_think_seconds`, `decision.timeout_seconds`).
pub fn check_spec_timing(spec: &Map) -> Result<(), LimitError> {
    let timing = spec.get("timing").and_then(Value::as_object);
    for key in ["min_think_seconds", "max_think_seconds"] {
        if let Some(s) = timing.and_then(|t| t.get(key)).and_then(json_seconds) {
            THINK.check_as(&format!("spec timing.{key}"), s.max(0.0))?;
        }
    }
    if let Some(s) = spec
        .get("decision")
        .and_then(|d| d.get("timeout_seconds"))
        .and_then(json_seconds)
    {
        THINK.check_as("spec decision.timeout_seconds", s.max(0.0))?;
    }
    Ok(())
}

/// Everything palaver checks before it hosts or dials a session: the
/// spec's timing and the invitation's options.
pub fn check_session(spec: &Map, options: &Map) -> Result<(), LimitError> {
    check_spec_timing(spec)?;
    check_options(options)
}

// --- HTTP clients (community, market, werewolf spectator: `web::http`) ---

/// The largest response head (status line and headers) a client reads.
/// It is also hyper's read buffer, so no piece of a body is larger.
pub const HTTP_MAX_HEAD_BYTES: usize = 64 << 10;

/// The largest body of a plain answer (a community or market reply, a
/// wolf server's game list). A community takes request bodies up to
/// 8 MiB, so a protocol bundle comes back well inside this.
pub const HTTP_MAX_BODY_BYTES: usize = 32 << 20;

/// The longest line of a streamed answer (one line of a wolf server's
/// god-view SSE stream, and one event's data): as large as a packet
/// `palaver wolf join` accepts.
pub const HTTP_MAX_LINE_BYTES: usize = WOLF_MAX_PACKET_BYTES;

/// The TCP connect of an HTTP request.
pub const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// From the start of an HTTP request to its response head.
pub const HTTP_HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// A plain HTTP request, from its start to the end of its body.
pub const HTTP_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest silence inside a streamed answer (a game whose agents all
/// think at once is quiet; `palaver wolf join` waits as long by default).
pub const HTTP_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

// --- werewolf (`palaver wolf serve`, `palaver wolf join`) -----------------

/// `palaver wolf join --connect-timeout`: TCP connect plus the WebSocket
/// upgrade.
pub const WOLF_CONNECT_TIMEOUT: Seconds = Seconds {
    field: "--connect-timeout",
    min: 0.01,
    max: 3_600.0,
    zero_means_off: false,
    minutes: false,
};

/// `palaver wolf join --idle-timeout`: the longest silence from the server
/// (waiting room included) before the client gives up.
pub const WOLF_IDLE_TIMEOUT: Seconds = Seconds {
    field: "--idle-timeout",
    min: 0.01,
    max: DAY,
    zero_means_off: false,
    minutes: false,
};

/// The largest packet (one text frame) `palaver wolf join` accepts from a
/// server. Real packets are a few KiB; a 13-player day's history well under
/// 1 MiB.
pub const WOLF_MAX_PACKET_BYTES: usize = 4 << 20;

/// Talks and whispers one client keeps for one game; past this the server
/// is not playing a game any more.
pub const WOLF_MAX_TALKS: usize = 100_000;

/// `setting.timeout.action` / `setting.timeout.response` in a server's
/// packet, in milliseconds (at most a day).
pub const WOLF_PACKET_TIMEOUT_MS: Count = Count {
    field: "setting.timeout",
    min: 0,
    max: 86_400_000,
};

/// Days of one game: `game.max_day` in a server configuration (-1: unset),
/// the server's own stop when `max_day` is unset (a game of agents that
/// never vote validly would otherwise never end), and `info.day` in packets
/// (up to one more: FINISH after the last day carries the next day).
pub const WOLF_DAYS: Count = Count {
    field: "day",
    min: -1,
    max: 1_000,
};

/// Seats of one game (`game.agent_count`, `setting.agent_count`), and each
/// role's count.
pub const WOLF_AGENTS: Count = Count {
    field: "game.agent_count",
    min: 2,
    max: 100,
};

/// Talk and whisper counts (`max_count.per_agent`, `per_day`, `max_skip`)
/// and `remain_count` / `remain_skip` in packets.
pub const WOLF_TALK_COUNT: Count = Count {
    field: "talk count",
    min: 0,
    max: 10_000,
};

/// Length limits (`max_length.*`, `remain_length`), in characters or words;
/// -1 is "unset".
pub const WOLF_TALK_LENGTH: Count = Count {
    field: "talk length",
    min: -1,
    max: 1_000_000,
};

/// Vote and attack-vote rounds (`vote.max_count`, `attack_vote.max_count`).
pub const WOLF_VOTE_ROUNDS: Count = Count {
    field: "vote rounds",
    min: 1,
    max: 100,
};

/// `server.timeout.action`, `server.timeout.response` and a group-chat
/// `duration` in a server configuration.
pub const WOLF_SERVER_TIMEOUT: Seconds = Seconds {
    field: "server.timeout",
    min: 0.001,
    max: DAY,
    zero_means_off: false,
    minutes: false,
};

/// `server.timeout.acceptable` and `server.settle` (0: none).
pub const WOLF_SERVER_GRACE: Seconds = Seconds {
    field: "server.timeout.acceptable",
    min: 0.0,
    max: 3_600.0,
    zero_means_off: true,
    minutes: false,
};

/// `server.max_frame_bytes`: the largest text frame the server takes from
/// an agent.
pub const WOLF_FRAME_BYTES: Count = Count {
    field: "server.max_frame_bytes",
    min: 256,
    max: 64 << 20,
};

/// `palaver wolf serve --bots`: bot agents started with the server.
pub const WOLF_BOTS: Count = Count {
    field: "--bots",
    min: 0,
    max: 1_000,
};

/// The longest connection name (the NAME reply) the server accepts, in
/// bytes. Longer names would make log file names fail to write.
pub const WOLF_NAME_BYTES: usize = 128;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    #[test]
    fn seconds_refuse_what_would_panic() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, 1e20] {
            let e = PEER_TIMEOUT.check(v).unwrap_err().to_string();
            assert!(e.contains("--peer-timeout"), "{e}");
        }
        assert!(PEER_TIMEOUT.check(-1.0).is_err());
        assert!(PEER_TIMEOUT.check(0.0).is_err());
        assert_eq!(
            PEER_TIMEOUT.check(2.5).unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(
            PEER_TIMEOUT.check(DAY).unwrap(),
            Duration::from_secs(86_400)
        );
        assert!(PEER_TIMEOUT.check(DAY + 1.0).is_err());
        assert_eq!(HEARTBEAT_INTERVAL.check(0.0).unwrap(), Duration::ZERO);
        assert_eq!(THINK.saturate(f64::NAN), Duration::ZERO);
        assert_eq!(THINK.saturate(1e300), Duration::from_secs(86_400));
        assert_eq!(THINK.saturate(f64::NEG_INFINITY), Duration::ZERO);
        assert!(HOOK_TIMEOUT.parse_arg("-1").is_err());
        assert!(HOOK_TIMEOUT.parse_arg("inf").is_err());
        assert!(
            HOOK_TIMEOUT
                .parse_arg("ten")
                .unwrap_err()
                .contains("must be a number")
        );
        assert_eq!(HOOK_TIMEOUT.parse_arg(" 2 ").unwrap(), 2.0);
        assert_eq!(
            INVITATION_TTL_MINUTES.check(1.5).unwrap(),
            Duration::from_secs(90)
        );
        let e = INVITATION_TTL_MINUTES.check(1e6).unwrap_err().to_string();
        assert!(e.ends_with("10080 min)"), "{e}");
    }

    #[test]
    fn options_with_unhonourable_values_are_named() {
        let check = |s: &str| check_options(json::parse_str(s).unwrap().as_object().unwrap());
        let e = check(r#"{"min_think_seconds":1e300}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("option min_think_seconds") && e.contains("86400"),
            "{e}"
        );
        assert!(check(r#"{"max_think_seconds":"inf"}"#).is_err());
        assert!(check(r#"{"round_delay_seconds":100000}"#).is_err());
        assert!(check(r#"{"best_of":1000000000}"#).is_err());
        assert!(check(r#"{"best_of":123456789012345678901234567890}"#).is_err());
        assert!(check(r#"{"range_max":9223372036854775807}"#).is_err());
        // Negative think times are read as zero by the decision bus.
        assert!(check(r#"{"min_think_seconds":-5,"best_of":101,"balance":{"x":1e300}}"#).is_ok());
        assert!(check(r#"{"min_think_seconds":86400,"max_think_seconds":"30"}"#).is_ok());
        let spec = json::parse_str(r#"{"timing":{"max_think_seconds":1e9}}"#).unwrap();
        assert!(check_spec_timing(spec.as_object().unwrap()).is_err());
    }
}
