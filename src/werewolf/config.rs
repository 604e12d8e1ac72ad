//! Server and game configuration in TOML, with the reference server's
//! defaults (config/default_5.yml, default_9.yml, default_13.yml). Durations
//! are written like Go's: `60s`, `10m`, `1m30s`, `500ms`. A length or count
//! of `-1` means "unset", as in the reference.

use super::WolfError;
use super::packet::{
    AttackVoteSetting, MaxCount, MaxLength, Role, Setting, TalkSetting, TimeoutSetting, VoteSetting,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::time::Duration;

/// The three shipped configurations, by player count.
pub const DEFAULT_5: &str = include_str!("../../assets/werewolf/default_5.toml");
pub const DEFAULT_9: &str = include_str!("../../assets/werewolf/default_9.toml");
pub const DEFAULT_13: &str = include_str!("../../assets/werewolf/default_13.toml");

/// A Go-style duration (`60s`, `10m`, `1m30s`, `250ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct GoDuration(pub Duration);

impl GoDuration {
    pub fn as_millis_i64(self) -> i64 {
        i64::try_from(self.0.as_millis()).unwrap_or(i64::MAX)
    }
}

/// Parses `60s`, `10m`, `1h`, `1m30s`, `500ms`, `1.5s`.
pub fn parse_duration(s: &str) -> Result<Duration, WolfError> {
    let bad = || {
        WolfError::Config(format!(
            "invalid duration {s:?} (expected e.g. 60s, 10m, 500ms)"
        ))
    };
    let t = s.trim();
    if t.is_empty() {
        return Err(bad());
    }
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += n * scale;
    }
    if total > 1e12 {
        return Err(bad());
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(GoDuration)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}ms", self.0.as_millis()))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerConfig,
    pub game: GameConfig,
    #[serde(default)]
    pub matching: MatchingConfig,
    #[serde(default)]
    pub custom_profile: ProfileConfig,
    #[serde(default)]
    pub log: LogConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub bind: String,
    pub timeout: TimeoutConfig,
    pub max_continue_error_ratio: f64,
    pub authentication: AuthConfig,
    /// Largest accepted text frame from an agent, in bytes.
    pub max_frame_bytes: usize,
    /// Wait after a no-reply packet before the next request to the same
    /// agent, so a stray answer to it is discarded rather than consumed.
    pub settle: GoDuration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: "127.0.0.1:8080".into(),
            timeout: TimeoutConfig::default(),
            max_continue_error_ratio: 0.2,
            authentication: AuthConfig::default(),
            max_frame_bytes: 64 * 1024,
            settle: GoDuration(Duration::from_millis(50)),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutConfig {
    pub action: GoDuration,
    pub response: GoDuration,
    /// Server-side grace added to `action`; not announced to agents.
    pub acceptable: GoDuration,
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        TimeoutConfig {
            action: GoDuration(Duration::from_secs(60)),
            response: GoDuration(Duration::from_secs(120)),
            acceptable: GoDuration(Duration::from_secs(5)),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub enable: bool,
    /// HS256 secret. Empty: taken from the `SECRET_KEY` environment variable.
    pub secret_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MatchingConfig {
    /// Start a game as soon as one team has `agent_count` waiting agents;
    /// otherwise one agent from each of `agent_count` distinct teams.
    pub self_match: bool,
}

impl Default for MatchingConfig {
    fn default() -> Self {
        MatchingConfig { self_match: true }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProfileConfig {
    /// In-game names from `profiles` instead of `Agent[NN]`.
    pub enable: bool,
    pub profiles: Vec<Profile>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Profile {
    pub name: String,
    /// `label: value` lines for `info.profile`, in this order.
    pub fields: Vec<(String, String)>,
    /// Picture URL the realtime feed names for the viewer (`avatar`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// Directory for game .log files (empty: off).
    pub game_dir: String,
    /// Directory for JSON logs (empty: off).
    pub json_dir: String,
    /// Directory for realtime JSONL files and games.json (empty: off).
    pub realtime_dir: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameConfig {
    pub agent_count: usize,
    #[serde(default = "minus_one")]
    pub max_day: i64,
    #[serde(default = "yes")]
    pub vote_visibility: bool,
    pub talk: TalkConfig,
    pub whisper: TalkConfig,
    #[serde(default)]
    pub vote: VoteConfig,
    #[serde(default)]
    pub attack_vote: AttackVoteConfig,
    /// Role counts keyed by player count; the key for `agent_count` is used.
    pub roles: BTreeMap<String, BTreeMap<String, i64>>,
}

fn minus_one() -> i64 {
    -1
}
fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TalkConfig {
    pub max_count: MaxCount,
    #[serde(default)]
    pub max_length: LengthConfig,
    #[serde(default)]
    pub max_skip: i64,
    /// Group-chat mode when set.
    #[serde(default)]
    pub duration: Option<GoDuration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LengthConfig {
    pub count_in_word: bool,
    pub count_spaces: bool,
    pub per_talk: i64,
    pub mention_length: i64,
    pub per_agent: i64,
    pub base_length: i64,
}

impl Default for LengthConfig {
    fn default() -> Self {
        LengthConfig {
            count_in_word: false,
            count_spaces: false,
            per_talk: -1,
            mention_length: 50,
            per_agent: -1,
            base_length: 50,
        }
    }
}

fn set(v: i64) -> Option<i64> {
    (v >= 0).then_some(v)
}

impl LengthConfig {
    pub fn per_talk(&self) -> Option<i64> {
        set(self.per_talk)
    }
    pub fn per_agent(&self) -> Option<i64> {
        set(self.per_agent)
    }
    pub fn base_length(&self) -> Option<i64> {
        set(self.base_length)
    }
    pub fn mention_length(&self) -> Option<i64> {
        set(self.mention_length)
    }

    /// The `max_length` object as sent (§2.3 omission rules).
    pub fn to_setting(&self) -> MaxLength {
        let any =
            self.per_talk().is_some() || self.per_agent().is_some() || self.base_length().is_some();
        let mention = self.per_agent().is_some() || self.base_length().is_some();
        MaxLength {
            count_in_word: any.then_some(self.count_in_word),
            count_spaces: any.then_some(self.count_spaces),
            per_talk: self.per_talk(),
            mention_length: if mention { self.mention_length() } else { None },
            per_agent: self.per_agent(),
            base_length: self.base_length(),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VoteConfig {
    pub max_count: i64,
    pub allow_self_vote: bool,
}

impl Default for VoteConfig {
    fn default() -> Self {
        VoteConfig {
            max_count: 1,
            allow_self_vote: true,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AttackVoteConfig {
    pub max_count: i64,
    pub allow_self_vote: bool,
    pub allow_no_target: bool,
}

impl Default for AttackVoteConfig {
    fn default() -> Self {
        AttackVoteConfig {
            max_count: 1,
            allow_self_vote: true,
            allow_no_target: false,
        }
    }
}

impl Config {
    /// Parses and checks a TOML configuration.
    pub fn from_toml(text: &str) -> Result<Config, WolfError> {
        let cfg: Config = toml::from_str(text).map_err(|e| WolfError::Config(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The shipped configuration for 5, 9 or 13 players.
    pub fn default_for(players: usize) -> Result<Config, WolfError> {
        match players {
            5 => Config::from_toml(DEFAULT_5),
            9 => Config::from_toml(DEFAULT_9),
            13 => Config::from_toml(DEFAULT_13),
            n => Err(WolfError::Config(format!(
                "no shipped configuration for {n} players (5, 9 or 13)"
            ))),
        }
    }

    /// Checks the rules a server needs before it can start.
    pub fn validate(&self) -> Result<(), WolfError> {
        use crate::limits::{
            WOLF_AGENTS, WOLF_DAYS, WOLF_FRAME_BYTES, WOLF_SERVER_GRACE, WOLF_SERVER_TIMEOUT,
            WOLF_TALK_COUNT, WOLF_TALK_LENGTH, WOLF_VOTE_ROUNDS,
        };
        let limit = |e: crate::limits::LimitError| WolfError::Config(e.to_string());
        let g = &self.game;
        WOLF_AGENTS
            .check(i64::try_from(g.agent_count).unwrap_or(i64::MAX))
            .map_err(limit)?;
        WOLF_DAYS
            .check_as("game.max_day", g.max_day)
            .map_err(limit)?;
        self.role_counts()?;
        for (what, t) in [("talk", &g.talk), ("whisper", &g.whisper)] {
            for (k, v) in [
                ("max_count.per_agent", t.max_count.per_agent),
                ("max_count.per_day", t.max_count.per_day),
                ("max_skip", t.max_skip),
            ] {
                WOLF_TALK_COUNT
                    .check_as(&format!("game.{what}.{k}"), v)
                    .map_err(limit)?;
            }
            let m = &t.max_length;
            for (k, v) in [
                ("per_talk", m.per_talk),
                ("mention_length", m.mention_length),
                ("per_agent", m.per_agent),
                ("base_length", m.base_length),
            ] {
                WOLF_TALK_LENGTH
                    .check_as(&format!("game.{what}.max_length.{k}"), v.max(-1))
                    .map_err(limit)?;
            }
            if let Some(d) = t.duration {
                WOLF_SERVER_TIMEOUT
                    .check_as(&format!("game.{what}.duration"), d.0.as_secs_f64())
                    .map_err(limit)?;
            }
        }
        WOLF_VOTE_ROUNDS
            .check_as("game.vote.max_count", g.vote.max_count)
            .map_err(limit)?;
        WOLF_VOTE_ROUNDS
            .check_as("game.attack_vote.max_count", g.attack_vote.max_count)
            .map_err(limit)?;
        let t = &self.server.timeout;
        WOLF_SERVER_TIMEOUT
            .check_as("server.timeout.action", t.action.0.as_secs_f64())
            .map_err(limit)?;
        WOLF_SERVER_TIMEOUT
            .check_as("server.timeout.response", t.response.0.as_secs_f64())
            .map_err(limit)?;
        WOLF_SERVER_GRACE
            .check_as("server.timeout.acceptable", t.acceptable.0.as_secs_f64())
            .map_err(limit)?;
        WOLF_SERVER_GRACE
            .check_as("server.settle", self.server.settle.0.as_secs_f64())
            .map_err(limit)?;
        WOLF_FRAME_BYTES
            .check(i64::try_from(self.server.max_frame_bytes).unwrap_or(i64::MAX))
            .map_err(limit)?;
        for (what, t) in [("talk", &g.talk), ("whisper", &g.whisper)] {
            if t.max_length.count_in_word && t.max_length.count_spaces {
                return Err(WolfError::Config(format!(
                    "game.{what}.max_length: count_in_word and count_spaces cannot both be true"
                )));
            }
            if t.max_count.per_agent < 0 || t.max_count.per_day < 0 || t.max_skip < 0 {
                return Err(WolfError::Config(format!(
                    "game.{what}: counts must not be negative"
                )));
            }
        }
        if g.vote.max_count < 1 || g.attack_vote.max_count < 1 {
            return Err(WolfError::Config(
                "vote.max_count and attack_vote.max_count must be at least 1".into(),
            ));
        }
        let r = self.server.max_continue_error_ratio;
        if !(0.0..=1.0).contains(&r) {
            return Err(WolfError::Config(
                "server.max_continue_error_ratio must be between 0 and 1".into(),
            ));
        }
        if self.custom_profile.enable && self.custom_profile.profiles.len() < g.agent_count {
            return Err(WolfError::Config(format!(
                "custom_profile needs at least {} profiles, has {}",
                g.agent_count,
                self.custom_profile.profiles.len()
            )));
        }
        Ok(())
    }

    /// Role counts for `agent_count`; every role present (zero if absent).
    pub fn role_counts(&self) -> Result<BTreeMap<Role, i64>, WolfError> {
        let n = self.game.agent_count;
        let table = self.game.roles.get(&n.to_string()).ok_or_else(|| {
            WolfError::Config(format!("game.roles has no table for agent_count {n}"))
        })?;
        let mut out: BTreeMap<Role, i64> = Role::ALL.iter().map(|r| (*r, 0)).collect();
        for (k, v) in table {
            let role = Role::parse(k)
                .ok_or_else(|| WolfError::Config(format!("game.roles.{n}: unknown role {k:?}")))?;
            if *v < 0 {
                return Err(WolfError::Config(format!("game.roles.{n}.{k} is negative")));
            }
            if usize::try_from(*v).is_ok_and(|v| v > n) {
                return Err(WolfError::Config(format!(
                    "game.roles.{n}.{k} = {v} is more than the {n} seats"
                )));
            }
            out.insert(role, *v);
        }
        let total: i64 = out.values().sum();
        if usize::try_from(total).ok() != Some(n) {
            return Err(WolfError::Config(format!(
                "game.roles.{n} adds up to {total}, not {n}"
            )));
        }
        if out[&Role::Werewolf] < 1 {
            return Err(WolfError::Config(format!("game.roles.{n} has no WEREWOLF")));
        }
        Ok(out)
    }

    /// Error seats that abort a game: `int(N × ratio)`, but at least 1 so
    /// a game never ends after its first phase because the product is 0.
    pub fn abort_threshold(&self) -> usize {
        let t =
            (self.game.agent_count as f64 * self.server.max_continue_error_ratio).floor() as usize;
        t.max(1)
    }

    /// The `setting` object sent in INITIALIZE and DAILY_INITIALIZE.
    pub fn setting(&self) -> Setting {
        let g = &self.game;
        let talk = |t: &TalkConfig| TalkSetting {
            max_count: t.max_count,
            max_length: t.max_length.to_setting(),
            duration: t.duration.map(GoDuration::as_millis_i64),
            max_skip: t.max_skip,
        };
        Setting {
            agent_count: g.agent_count as i64,
            max_day: set(g.max_day),
            vote_visibility: g.vote_visibility,
            talk: talk(&g.talk),
            whisper: talk(&g.whisper),
            vote: VoteSetting {
                max_count: g.vote.max_count,
                allow_self_vote: g.vote.allow_self_vote,
            },
            attack_vote: AttackVoteSetting {
                max_count: g.attack_vote.max_count,
                allow_self_vote: g.attack_vote.allow_self_vote,
                allow_no_target: g.attack_vote.allow_no_target,
            },
            timeout: TimeoutSetting {
                action: self.server.timeout.action.as_millis_i64(),
                response: self.server.timeout.response.as_millis_i64(),
            },
            role_num_map: self.role_counts().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn shipped_configs_load() {
        for n in [5, 9, 13] {
            let c = Config::default_for(n).unwrap();
            assert_eq!(c.game.agent_count, n);
        }
    }

    #[test]
    fn out_of_range_values_are_named_not_panicked_on() {
        let edit = |from: &str, to: &str| {
            assert!(DEFAULT_5.contains(from), "{from}");
            Config::from_toml(&DEFAULT_5.replace(from, to))
                .unwrap_err()
                .to_string()
        };
        // Role counts whose sum overflows i64.
        let e = edit("WEREWOLF = 1", "WEREWOLF = 9223372036854775807");
        assert!(e.contains("game.roles.5.WEREWOLF"), "{e}");
        let e = edit("agent_count = 5", "agent_count = 100000");
        assert!(e.contains("game.agent_count"), "{e}");
        let e = edit("max_day = -1", "max_day = 9223372036854775807");
        assert!(e.contains("game.max_day"), "{e}");
        let e = edit("per_agent = 4, per_day = 20", "per_agent = 4, per_day = -3");
        assert!(e.contains("game.talk.max_count.per_day"), "{e}");
        // The first base_length is the talk's.
        let e = edit("base_length = 50 }", "base_length = 9223372036854775807 }");
        assert!(e.contains("game.talk.max_length.base_length"), "{e}");
        let e = edit(
            "[game.vote]\nmax_count = 1",
            "[game.vote]\nmax_count = 1000000000",
        );
        assert!(e.contains("game.vote.max_count"), "{e}");
        let e = edit("action = \"60s\"", "action = \"0s\"");
        assert!(e.contains("server.timeout.action"), "{e}");
        let e = edit("response = \"120s\"", "response = \"100000h\"");
        assert!(e.contains("server.timeout.response"), "{e}");
        let e = edit("max_frame_bytes = 65536", "max_frame_bytes = 0");
        assert!(e.contains("server.max_frame_bytes"), "{e}");
    }
}
