//! The AIWolf NLP wire format: server → agent packets (one JSON object per
//! text frame) and the types inside them. Keys are snake_case, absent
//! optional fields are omitted (never `null`), agent names are opaque
//! strings. Serialization follows the Go reference server's field order so
//! packets diff cleanly against its transcripts.
//!
//! Decoding is as lenient as the official agent library (aiwolf-nlp-common
//! 0.7.0): a setting member it defaults when absent (`allow_self_vote`,
//! which servers v0.4.0–v0.4.4 do not send, the counts, the timeouts, whole
//! `talk`/`whisper`/`vote`/`attack_vote`/`timeout` objects) takes the same
//! default here (`false`, `0`, empty), and so does `null` in those members
//! and in `vote_list`/`attack_vote_list`, `skip` and `over`. What the
//! library requires (`request`, `info.game_id`, `day`, `agent`, the status
//! and role maps, `agent_count`, `role_num_map`, a talk's `idx`, `day`,
//! `turn`, `agent`, `text`) is required here too.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// `T::default()` for an absent member (with `#[serde(default)]`) and for
/// `null`, as the official library reads them.
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// What the server asks (or tells) an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Request {
    Name,
    Talk,
    Whisper,
    Vote,
    Divine,
    Guard,
    Attack,
    Initialize,
    DailyInitialize,
    DailyFinish,
    Finish,
    TalkPhaseStart,
    TalkPhaseEnd,
    TalkBroadcast,
    WhisperPhaseStart,
    WhisperPhaseEnd,
    WhisperBroadcast,
}

impl Request {
    /// Whether the agent must answer this request with one text frame.
    pub fn needs_reply(self) -> bool {
        matches!(
            self,
            Request::Name
                | Request::Talk
                | Request::Whisper
                | Request::Vote
                | Request::Divine
                | Request::Guard
                | Request::Attack
        )
    }

    /// The wire spelling, e.g. `DAILY_INITIALIZE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Request::Name => "NAME",
            Request::Talk => "TALK",
            Request::Whisper => "WHISPER",
            Request::Vote => "VOTE",
            Request::Divine => "DIVINE",
            Request::Guard => "GUARD",
            Request::Attack => "ATTACK",
            Request::Initialize => "INITIALIZE",
            Request::DailyInitialize => "DAILY_INITIALIZE",
            Request::DailyFinish => "DAILY_FINISH",
            Request::Finish => "FINISH",
            Request::TalkPhaseStart => "TALK_PHASE_START",
            Request::TalkPhaseEnd => "TALK_PHASE_END",
            Request::TalkBroadcast => "TALK_BROADCAST",
            Request::WhisperPhaseStart => "WHISPER_PHASE_START",
            Request::WhisperPhaseEnd => "WHISPER_PHASE_END",
            Request::WhisperBroadcast => "WHISPER_BROADCAST",
        }
    }
}

/// A role. Ordered as the reference prints `role_num_map` (alphabetically).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Role {
    Bodyguard,
    Medium,
    Possessed,
    Seer,
    Villager,
    Werewolf,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Bodyguard,
        Role::Medium,
        Role::Possessed,
        Role::Seer,
        Role::Villager,
        Role::Werewolf,
    ];

    /// What a divination or a medium reveals.
    pub fn species(self) -> Species {
        if self == Role::Werewolf {
            Species::Werewolf
        } else {
            Species::Human
        }
    }

    /// The side that wins with this role.
    pub fn team(self) -> Team {
        match self {
            Role::Werewolf | Role::Possessed => Team::Werewolf,
            _ => Team::Villager,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Bodyguard => "BODYGUARD",
            Role::Medium => "MEDIUM",
            Role::Possessed => "POSSESSED",
            Role::Seer => "SEER",
            Role::Villager => "VILLAGER",
            Role::Werewolf => "WEREWOLF",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Species {
    Human,
    Werewolf,
}

impl Species {
    pub fn as_str(self) -> &'static str {
        match self {
            Species::Human => "HUMAN",
            Species::Werewolf => "WEREWOLF",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    Alive,
    Dead,
}

/// The winning side (logs only; `None` = draw or abort).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Team {
    Villager,
    Werewolf,
    None,
}

impl Team {
    pub fn as_str(self) -> &'static str {
        match self {
            Team::Villager => "VILLAGER",
            Team::Werewolf => "WEREWOLF",
            Team::None => "NONE",
        }
    }
}

/// One talk or whisper entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Talk {
    /// Index within that day's talk (or whisper) list; unique per day.
    pub idx: i64,
    pub day: i64,
    /// Round in turn mode; the speaker's message counter in group chat.
    pub turn: i64,
    pub agent: String,
    pub text: String,
    #[serde(default, deserialize_with = "null_default")]
    pub skip: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub over: bool,
    /// Unix milliseconds when recorded. Absent from v0.4.12 servers.
    #[serde(default)]
    pub time: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    pub day: i64,
    pub agent: String,
    pub target: String,
}

/// A divination or medium result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judge {
    pub day: i64,
    pub agent: String,
    pub target: String,
    pub result: Species,
}

/// The game state as one agent may see it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Info {
    pub game_id: String,
    pub day: i64,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium_result: Option<Judge>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divine_result: Option<Judge>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed_agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacked_agent: Option<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub vote_list: Vec<Vote>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub attack_vote_list: Vec<Vote>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remain_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remain_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remain_skip: Option<i64>,
    pub status_map: BTreeMap<String, Status>,
    pub role_map: BTreeMap<String, Role>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MaxCount {
    #[serde(default, deserialize_with = "null_default")]
    pub per_agent: i64,
    #[serde(default, deserialize_with = "null_default")]
    pub per_day: i64,
}

/// Length limits as sent; unset limits are omitted per the reference rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MaxLength {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_in_word: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_spaces: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_talk: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mention_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_agent: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_length: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TalkSetting {
    #[serde(default, deserialize_with = "null_default")]
    pub max_count: MaxCount,
    #[serde(default, deserialize_with = "null_default")]
    pub max_length: MaxLength,
    /// Group-chat phase length in ms; present only in group-chat mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<i64>,
    #[serde(default, deserialize_with = "null_default")]
    pub max_skip: i64,
}

/// `max_count` 0 is what the official library makes of an absent one:
/// "not told" (servers always send at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VoteSetting {
    #[serde(default, deserialize_with = "null_default")]
    pub max_count: i64,
    /// Absent before server v0.4.5: `false`, as the official library reads it.
    #[serde(default, deserialize_with = "null_default")]
    pub allow_self_vote: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AttackVoteSetting {
    #[serde(default, deserialize_with = "null_default")]
    pub max_count: i64,
    #[serde(default, deserialize_with = "null_default")]
    pub allow_self_vote: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub allow_no_target: bool,
}

/// 0 (absent) is "not told"; see [`crate::werewolf::View::action_timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TimeoutSetting {
    /// Milliseconds an agent has to answer an action.
    #[serde(default, deserialize_with = "null_default")]
    pub action: i64,
    /// Milliseconds an agent has to answer the NAME liveness probe.
    #[serde(default, deserialize_with = "null_default")]
    pub response: i64,
}

/// The game settings an agent is told (INITIALIZE and DAILY_INITIALIZE).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub agent_count: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_day: Option<i64>,
    #[serde(default, deserialize_with = "null_default")]
    pub vote_visibility: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub talk: TalkSetting,
    #[serde(default, deserialize_with = "null_default")]
    pub whisper: TalkSetting,
    #[serde(default, deserialize_with = "null_default")]
    pub vote: VoteSetting,
    #[serde(default, deserialize_with = "null_default")]
    pub attack_vote: AttackVoteSetting,
    #[serde(default, deserialize_with = "null_default")]
    pub timeout: TimeoutSetting,
    pub role_num_map: BTreeMap<Role, i64>,
}

/// One server → agent packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packet {
    pub request: Request,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Info>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<Setting>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub talk_history: Option<Vec<Talk>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whisper_history: Option<Vec<Talk>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_talk: Option<Talk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_whisper: Option<Talk>,
}

impl Packet {
    /// A packet with only `request` set (NAME).
    pub fn bare(request: Request) -> Packet {
        Packet {
            request,
            info: None,
            setting: None,
            talk_history: None,
            whisper_history: None,
            new_talk: None,
            new_whisper: None,
        }
    }

    pub fn with_info(request: Request, info: Info) -> Packet {
        Packet {
            info: Some(info),
            ..Packet::bare(request)
        }
    }

    /// The JSON text of the packet (one text frame).
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail: every map key is a string.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// Parses a packet as an agent receives it; unknown keys are ignored
    /// (older and newer servers add fields).
    pub fn from_json(text: &str) -> Result<Packet, serde_json::Error> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_packet_is_bare() {
        assert_eq!(
            Packet::bare(Request::Name).to_json(),
            r#"{"request":"NAME"}"#
        );
    }

    #[test]
    fn optional_info_fields_are_omitted() {
        let mut info = Info {
            game_id: "g".into(),
            agent: "A".into(),
            ..Info::default()
        };
        info.status_map.insert("A".into(), Status::Alive);
        info.role_map.insert("A".into(), Role::Seer);
        let j = Packet::with_info(Request::Vote, info).to_json();
        assert_eq!(
            j,
            r#"{"request":"VOTE","info":{"game_id":"g","day":0,"agent":"A","status_map":{"A":"ALIVE"},"role_map":{"A":"SEER"}}}"#
        );
        assert!(!j.contains("null"));
    }
}
