//! A room (`authoritative_group`: community-room-v1, meeting-room-v1) as
//! its state dir tells it, typed for the console: the members with their
//! seats, who leads and who is here, the view's messages, a meeting's
//! agenda, speaking queue, vote and action items, and the notices that
//! events.jsonl adds to the stream. [`RoomModel::parse`] reads snapshot.json
//! and session.json without trusting them: whatever shape they have, it
//! never panics, and a snapshot it cannot make sense of is "unreadable".

use crate::json::{Map, Value};
use std::collections::BTreeMap;
/// Events of a room's events.jsonl that show in its stream as notices.
pub const NOTICE_EVENTS: &[&str] = &[
    "group_leader_changed",
    "group_leadership_claimed",
    "group_leader_disconnected",
    "group_leader_rejected",
    "group_leader_fenced",
    "group_member_connected",
    "group_member_reconnected",
    "group_member_disconnected",
    "group_action_rejected",
    "group_action_receipt",
    "group_join_rejected",
];

/// Notices kept per room (the oldest go first).
pub const MAX_NOTICES: usize = 500;

/// Which rules the room runs (what its view looks like).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoomKind {
    Community,
    Meeting,
    /// Another group protocol: its view is shown as JSON.
    Other,
}

/// One member of the room.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub public_key: String,
    pub seat: Option<i64>,
    /// The membership: `active` or `left`.
    pub status: String,
    /// What the view says of them (`online`, `left`, `active`), if anything.
    pub presence: Option<String>,
}

/// One line of the view's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The view's `id` (rising; the oldest lines drop out of the view).
    pub id: Option<i64>,
    pub system: bool,
    pub from: String,
    pub seat: Option<i64>,
    pub text: String,
}

/// A meeting's open vote as the view shows it (running counts).
#[derive(Debug, Clone, PartialEq)]
pub struct Vote {
    pub question: String,
    pub choices: Vec<String>,
    pub counts: Vec<i64>,
    pub ballots: i64,
    pub my_choice: Option<i64>,
}

/// An action item of a meeting.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionItem {
    pub id: String,
    pub text: String,
    pub assignee: String,
    pub done: bool,
}

/// What meeting-room-v1's view adds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Meeting {
    pub facilitator: String,
    /// (text, status: pending | active | done)
    pub agenda: Vec<(String, String)>,
    pub queue: Vec<String>,
    pub speaker: String,
    pub vote: Option<Vote>,
    pub votes_closed: usize,
    pub action_items: Vec<ActionItem>,
}

/// A room as its files tell it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomModel {
    pub kind: RoomKind,
    pub protocol_name: String,
    /// The topic (community) or title (meeting).
    pub topic: String,
    pub group_id: String,
    /// The leader's public key.
    pub leader: String,
    pub epoch: Option<i64>,
    pub seq: Option<i64>,
    pub members: Vec<Member>,
    pub messages: Vec<Message>,
    /// Closed (community), ended (meeting) or completed.
    pub closed: bool,
    pub outcome: Option<String>,
    /// This side's public key and seat, as the view (or session.json) says.
    pub you: String,
    pub you_seat: Option<i64>,
    /// session.json's `status` (waiting, joining, running, closed, …).
    pub status: String,
    /// session.json's `group_role` (leader or member).
    pub role: String,
    /// Has the room started (is there a snapshot)?
    pub started: bool,
    pub meeting: Option<Meeting>,
    /// Another protocol's view, as compact JSON lines.
    pub raw_view: Vec<String>,
}

fn s(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(x)) => x.to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.py_str(),
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    v.filter(|x| x.is_integer()).and_then(Value::as_i64)
}

/// Which rules a protocol id names (the bundled rooms), if any.
fn kind_of_protocol(pid: &str) -> Option<RoomKind> {
    let is =
        |alias: &str| crate::library::bundled_spec(alias).is_some_and(|s| s.protocol_id() == pid);
    if is("community-room-v1") {
        Some(RoomKind::Community)
    } else if is("meeting-room-v1") {
        Some(RoomKind::Meeting)
    } else {
        None
    }
}

impl RoomModel {
    /// Reads a room from its snapshot.json and session.json (either may be
    /// empty: not written yet). `Err` says why the snapshot is unreadable.
    pub fn parse(snapshot: &Map, session: &Map) -> Result<RoomModel, String> {
        let pid = session
            .get_str("protocol_id")
            .or_else(|| snapshot.get_str("protocol_id"))
            .unwrap_or("");
        let mut m = RoomModel {
            kind: kind_of_protocol(pid).unwrap_or(RoomKind::Other),
            protocol_name: s(snapshot.get("protocol_name")),
            topic: String::new(),
            group_id: s(session.get("group_id")),
            leader: String::new(),
            epoch: int(session.get("leader_epoch")),
            seq: None,
            members: Vec::new(),
            messages: Vec::new(),
            closed: false,
            outcome: None,
            you: String::new(),
            you_seat: int(session.get("seat")),
            status: s(session.get("status")),
            role: s(session.get("group_role")),
            started: !snapshot.is_empty(),
            meeting: None,
            raw_view: Vec::new(),
        };
        if m.protocol_name.is_empty() {
            m.protocol_name = crate::library::bundled_spec_by_id(pid)
                .and_then(|s| s.name())
                .unwrap_or("Room")
                .to_owned();
        }
        if snapshot.is_empty() {
            return Ok(m);
        }
        let group = match snapshot.get("group") {
            Some(Value::Object(g)) => g,
            Some(other) => return Err(format!("its group is {}", other.type_name())),
            None => return Err("it has no group".into()),
        };
        if let Some(id) = group.get_str("group_id") {
            m.group_id = id.to_owned();
        }
        m.leader = s(group.get("leader_public_key"));
        m.epoch = int(group.get("leader_epoch")).or(m.epoch);
        m.seq = int(group.get("seq"));
        match group.get("members") {
            Some(Value::Array(list)) => {
                for x in list {
                    let Some(o) = x.as_object() else {
                        continue;
                    };
                    let pk = s(o.get("public_key"));
                    if pk.is_empty() {
                        continue;
                    }
                    m.members.push(Member {
                        public_key: pk,
                        seat: int(o.get("seat")),
                        status: s(o.get("status")),
                        presence: None,
                    });
                }
            }
            None | Some(Value::Null) => {}
            Some(other) => return Err(format!("its members are {}", other.type_name())),
        }
        m.closed = snapshot.get("completed").and_then(Value::as_bool) == Some(true);
        m.outcome = snapshot
            .get_str("outcome")
            .filter(|o| !o.is_empty())
            .map(str::to_owned);
        let no_view = Map::new();
        let view = match snapshot.get("group_view") {
            Some(Value::Object(v)) => v,
            None | Some(Value::Null) => &no_view,
            Some(other) => return Err(format!("its group_view is {}", other.type_name())),
        };
        if let Some(you) = view.get("you").and_then(Value::as_object) {
            m.you = s(you.get("public_key"));
            m.you_seat = int(you.get("seat")).or(m.you_seat);
        }
        if m.kind == RoomKind::Other {
            // A protocol palaver has no rules for: guess from the view.
            if view.contains_key("messages") {
                m.kind = RoomKind::Community;
            } else if view.contains_key("agenda") {
                m.kind = RoomKind::Meeting;
            }
        }
        match m.kind {
            RoomKind::Community => m.community(view)?,
            RoomKind::Meeting => m.meeting(view)?,
            RoomKind::Other => {
                m.raw_view = view
                    .iter()
                    .map(|(k, v)| {
                        let mut line =
                            format!("{k}: {}", crate::json::canonical::to_string_ordered(v));
                        cut(&mut line, 400);
                        line
                    })
                    .collect();
            }
        }
        Ok(m)
    }

    fn community(&mut self, view: &Map) -> Result<(), String> {
        self.topic = s(view.get("topic"));
        if view.get("closed").and_then(Value::as_bool) == Some(true) {
            self.closed = true;
        }
        match view.get("messages") {
            Some(Value::Array(list)) => {
                for x in list {
                    let Some(o) = x.as_object() else {
                        continue;
                    };
                    self.messages.push(Message {
                        id: int(o.get("id")),
                        system: o.get_str("kind") == Some("system"),
                        from: s(o.get("from")),
                        seat: int(o.get("seat")),
                        text: s(o.get("text")),
                    });
                }
            }
            None | Some(Value::Null) => {}
            Some(other) => return Err(format!("its messages are {}", other.type_name())),
        }
        self.presence(view.get("presence"));
        Ok(())
    }

    /// Marks members with what a `{public_key: {seat, status}}` map says,
    /// adding those the group list lacks.
    fn presence(&mut self, v: Option<&Value>) {
        let Some(p) = v.and_then(Value::as_object) else {
            return;
        };
        for (pk, entry) in p.iter() {
            let status = entry.get("status").map(|x| s(Some(x)));
            match self.members.iter_mut().find(|m| m.public_key == pk) {
                Some(m) => m.presence = status,
                None => self.members.push(Member {
                    public_key: pk.to_owned(),
                    seat: int(entry.get("seat")),
                    status: String::new(),
                    presence: status,
                }),
            }
        }
    }

    fn meeting(&mut self, view: &Map) -> Result<(), String> {
        self.topic = s(view.get("title"));
        if view.get("ended").and_then(Value::as_bool) == Some(true) {
            self.closed = true;
        }
        let mut mt = Meeting {
            facilitator: s(view.get("facilitator")),
            speaker: s(view.get("active_speaker")),
            ..Meeting::default()
        };
        let list = |k: &str| -> Result<&[Value], String> {
            match view.get(k) {
                Some(Value::Array(a)) => Ok(a.as_slice()),
                None | Some(Value::Null) => Ok(&[]),
                Some(other) => Err(format!("its {k} is {}", other.type_name())),
            }
        };
        for x in list("agenda")? {
            mt.agenda.push((s(x.get("text")), s(x.get("status"))));
        }
        mt.queue = list("speaking_queue")?.iter().map(|x| s(Some(x))).collect();
        mt.votes_closed = list("vote_history")?.len();
        for x in list("action_items")? {
            mt.action_items.push(ActionItem {
                id: s(x.get("id")),
                text: s(x.get("text")),
                assignee: s(x.get("assignee")),
                done: x.get("done").and_then(Value::as_bool) == Some(true),
            });
        }
        if let Some(v) = view.get("vote").and_then(Value::as_object) {
            let strings = |k: &str| -> Vec<String> {
                v.get(k)
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|x| s(Some(x))).collect())
                    .unwrap_or_default()
            };
            mt.vote = Some(Vote {
                question: s(v.get("question")),
                choices: strings("choices"),
                counts: v
                    .get("counts")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|x| x.as_i64().unwrap_or(0)).collect())
                    .unwrap_or_default(),
                ballots: int(v.get("ballot_count")).unwrap_or(0),
                my_choice: int(v.get("my_choice")),
            });
        }
        self.presence(view.get("members"));
        self.meeting = Some(mt);
        Ok(())
    }

    /// The member with this key.
    pub fn member(&self, pk: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.public_key == pk)
    }

    /// Is this side seat 0 (the room's owner)?
    pub fn owner(&self) -> bool {
        self.you_seat == Some(0)
    }

    /// Is this side the meeting's facilitator?
    pub fn facilitator(&self) -> bool {
        self.meeting
            .as_ref()
            .is_some_and(|mt| !self.you.is_empty() && mt.facilitator == self.you)
    }
}

/// `3ebe…f388`: a public key short enough for a list.
pub fn short_key(pk: &str) -> String {
    let n = pk.chars().count();
    if n <= 10 {
        return pk.to_owned();
    }
    let head: String = pk.chars().take(4).collect();
    let tail: String = pk.chars().skip(n - 4).collect();
    format!("{head}…{tail}")
}

/// Shortens `s` to `max` characters, the last one an ellipsis.
pub fn cut(s: &mut String, max: usize) {
    if s.chars().count() > max {
        let c: String = s.chars().take(max.saturating_sub(1)).collect();
        *s = c + "…";
    }
}

/// A line of the stream from events.jsonl (not from the view).
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// `HH:MM:SS` of the event.
    pub time: String,
    pub text: String,
    /// A refusal or a failure (drawn as an error).
    pub bad: bool,
    /// The id of the view's newest message when it came (`None`: before
    /// any), so it stays in place when old lines leave the view.
    pub after: Option<i64>,
}

/// What the stream says of a room event, if anything: (text, bad?).
/// `name` turns a public key into what the members pane calls it.
pub fn notice_text(
    ev: &Map,
    kind: RoomKind,
    name: &dyn Fn(&str) -> String,
) -> Option<(String, bool)> {
    let t = ev.get_str("type")?;
    let empty = Map::new();
    let d = ev.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let epoch = || {
        int(d.get("leader_epoch"))
            .map(|e| format!(" (epoch {e})"))
            .unwrap_or_default()
    };
    let reason = || {
        let mut r = s(d.get("reason"));
        cut(&mut r, 200);
        if r.is_empty() {
            "no reason given".into()
        } else {
            r
        }
    };
    let who = || name(&s(d.get("public_key")));
    Some(match t {
        "group_leader_changed" => (
            format!(
                "leader changed: {} leads now{}",
                name(&s(d.get("leader_public_key"))),
                epoch()
            ),
            false,
        ),
        "group_leadership_claimed" => (format!("you took over as leader{}", epoch()), false),
        "group_leader_disconnected" => (
            format!("the leader went away{}: finding the next one…", epoch()),
            true,
        ),
        "group_leader_rejected" => (format!("left the room: the leader sent {}", reason()), true),
        "group_leader_fenced" => ("you no longer lead: the server's lease lapsed".into(), true),
        // A community room says who joined in its own system lines.
        "group_member_connected" if kind == RoomKind::Community => return None,
        "group_member_connected" => (format!("{} connected", who()), false),
        "group_member_reconnected" => (format!("{} reconnected", who()), false),
        "group_member_disconnected" => (
            format!("{} disconnected ({})", who(), s(d.get("reason"))),
            false,
        ),
        "group_action_rejected" => (
            format!("the leader refused an action of {}: {}", who(), reason()),
            true,
        ),
        "group_action_receipt" if d.get_str("status") == Some("rejected") => {
            (format!("your action was refused: {}", reason()), true)
        }
        "group_join_rejected" => (format!("turned a member away: {}", reason()), true),
        _ => return None,
    })
}

/// A room's connections as the leader's events tell them (public key →
/// connected?).
pub fn track_link(links: &mut BTreeMap<String, bool>, ev: &Map) {
    let Some(t) = ev.get_str("type") else {
        return;
    };
    let up = match t {
        "group_member_connected" | "group_member_reconnected" => true,
        "group_member_disconnected" => false,
        _ => return,
    };
    if let Some(pk) = ev
        .get("data")
        .and_then(|d| d.get_str("public_key"))
        .filter(|p| !p.is_empty())
    {
        if links.len() >= 1024 && !links.contains_key(pk) {
            return;
        }
        links.insert(pk.to_owned(), up);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

    fn map(s: &str) -> Map {
        parse_str(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn odd_snapshots_are_unreadable_or_ignored_never_a_panic() {
        let session = map(r#"{"protocol_id":"x","status":"running"}"#);
        for bad in [
            r#"{"group":5}"#,
            r#"{"phase":"group_active"}"#,
            r#"{"group":{"members":"no"}}"#,
            r#"{"group":{},"group_view":[1]}"#,
            r#"{"group":{},"group_view":{"messages":7}}"#,
            r#"{"group":{},"group_view":{"agenda":{"a":1}}}"#,
        ] {
            assert!(RoomModel::parse(&map(bad), &session).is_err(), "{bad}");
        }
        let odd = map(
            r#"{"group":{"members":[1,{"public_key":5,"seat":"x"},{"public_key":"ab","seat":2.5}],"leader_epoch":-1},
               "group_view":{"messages":[null,{"kind":7,"text":{"a":1}}],"presence":{"zz":3},"you":"me"}}"#,
        );
        let m = RoomModel::parse(&odd, &session).unwrap();
        assert_eq!(m.members.len(), 3);
        assert_eq!(m.messages.len(), 1);
        assert_eq!(m.epoch, Some(-1));
        // Empty: the lobby, not unreadable.
        let m = RoomModel::parse(&Map::new(), &Map::new()).unwrap();
        assert!(!m.started);
    }

    #[test]
    fn notices_say_what_happened_in_a_few_words() {
        let name = |pk: &str| short_key(pk);
        let ev = map(
            r#"{"type":"group_action_receipt","data":{"status":"rejected","reason":"only seat 0"}}"#,
        );
        assert_eq!(
            notice_text(&ev, RoomKind::Community, &name),
            Some(("your action was refused: only seat 0".into(), true))
        );
        let ok = map(r#"{"type":"group_action_receipt","data":{"status":"accepted"}}"#);
        assert_eq!(notice_text(&ok, RoomKind::Community, &name), None);
        let lc = map(
            r#"{"type":"group_leader_changed","data":{"leader_public_key":"0123456789abcdef","leader_epoch":2}}"#,
        );
        assert_eq!(
            notice_text(&lc, RoomKind::Meeting, &name).unwrap().0,
            "leader changed: 0123…cdef leads now (epoch 2)"
        );
        assert_eq!(
            notice_text(&map(r#"{"type":3}"#), RoomKind::Other, &name),
            None
        );
    }
}
