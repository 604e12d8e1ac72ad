//! A room (`authoritative_group`: community-room-v1, meeting-room-v1) as
//! its state dir tells it: a header with the topic (a meeting's title), the
//! members with their seats, who leads and who is here, the message stream
//! (the view's messages and system lines, with notices from events.jsonl),
//! a meeting's agenda, speaking queue, vote and action items, and the
//! compose line. [`RoomModel::parse`] reads snapshot.json and session.json
//! without trusting them: whatever shape they have, it never panics, and a
//! snapshot it cannot make sense of is "unreadable".

use crate::json::{Map, Value};
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
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
        Some(Value::String(x)) => x.clone(),
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

fn cut(s: &mut String, max: usize) {
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

/// Everything the room pane draws from.
pub struct RoomPaint<'a> {
    pub model: &'a Result<RoomModel, String>,
    pub notices: &'a [Notice],
    pub links: &'a BTreeMap<String, bool>,
    /// Known nicknames by public key.
    pub nicks: &'a BTreeMap<String, String>,
    /// This identity's key (when the view does not say).
    pub me: &'a str,
    pub title: &'a str,
    /// Entries of the stream hidden below the bottom (0: following).
    pub scroll: usize,
    pub input: &'a str,
    pub note: Option<&'a (bool, String)>,
    pub stream_focused: bool,
    pub compose_focused: bool,
}

/// One entry of the stream, in order.
enum Entry<'a> {
    Message(&'a Message),
    Notice(&'a Notice),
}

/// The stream: the view's messages with the notices where they came.
fn entries<'a>(messages: &'a [Message], notices: &'a [Notice]) -> Vec<Entry<'a>> {
    let mut out = Vec::with_capacity(messages.len() + notices.len());
    let mut n = notices.iter().peekable();
    for m in messages {
        if let Some(id) = m.id {
            while let Some(x) = n.next_if(|x| x.after.is_none_or(|a| a < id)) {
                out.push(Entry::Notice(x));
            }
        }
        out.push(Entry::Message(m));
    }
    out.extend(n.map(Entry::Notice));
    out
}

/// How many entries the stream has (scrolling is counted in entries).
pub fn stream_len(model: &Result<RoomModel, String>, notices: &[Notice]) -> usize {
    model.as_ref().map_or(0, |m| m.messages.len()) + notices.len()
}

impl RoomPaint<'_> {
    fn you(&self) -> &str {
        match self.model {
            Ok(m) if !m.you.is_empty() => &m.you,
            _ => self.me,
        }
    }

    /// What the panes call a member: their nickname, else a short key.
    pub fn name(&self, pk: &str) -> String {
        if pk.is_empty() {
            return "?".into();
        }
        if pk == self.you() {
            return "you".into();
        }
        match self.nicks.get(pk) {
            Some(n) if !n.is_empty() => n.clone(),
            _ => short_key(pk),
        }
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let compose_h = 3.min(area.height.saturating_sub(3));
        let parts = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(3.min(area.height)),
                Constraint::Min(3),
                Constraint::Length(compose_h),
            ])
            .split(area);
        self.draw_header(f, parts[0], theme);
        match self.model {
            Err(why) => {
                let block = pane(" Room ", theme, false);
                let inner = block.inner(parts[1]);
                f.render_widget(block, parts[1]);
                f.render_widget(
                    Paragraph::new(vec![
                        Line::from(Span::styled(
                            format!("snapshot.json is unreadable: {why}"),
                            theme.fg(Slot::Error),
                        )),
                        Line::from(Span::styled(
                            "the room is shown again with its next write",
                            theme.muted(),
                        )),
                    ])
                    .wrap(ratatui::widgets::Wrap { trim: true }),
                    inner,
                );
            }
            Ok(m) => self.draw_body(f, parts[1], theme, m),
        }
        self.draw_compose(f, parts[2], theme);
    }

    fn draw_header(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let (name, label, topic, facts) = match self.model {
            Ok(m) => {
                // The most telling first: a narrow pane cuts the rest.
                let mut facts = Vec::new();
                let state = if m.closed {
                    match m.outcome.as_deref() {
                        Some("closed") | None if m.kind != RoomKind::Meeting => "closed".into(),
                        Some("ended") | None => "ended".into(),
                        Some(o) => format!("closed: {o}"),
                    }
                } else if !m.started {
                    match m.status.as_str() {
                        "" => "starting".into(),
                        s => s.to_owned(),
                    }
                } else {
                    match m.status.as_str() {
                        "" | "running" => "active".into(),
                        s => s.to_owned(),
                    }
                };
                facts.push(state);
                match m.you_seat {
                    Some(seat) => facts.push(format!("you: seat {seat}")),
                    None if !m.role.is_empty() => facts.push(format!("you: {}", m.role)),
                    None => {}
                }
                if let Some(e) = m.epoch {
                    facts.push(format!("epoch {e}"));
                }
                if let Some(q) = m.seq {
                    facts.push(format!("seq {q}"));
                }
                if !m.group_id.is_empty() {
                    facts.push(format!("group {}", short_key(&m.group_id)));
                }
                let label = if m.kind == RoomKind::Meeting {
                    "title"
                } else {
                    "topic"
                };
                let topic = if m.topic.is_empty() {
                    if m.started {
                        "—".to_owned()
                    } else {
                        "waiting for the room to start…".to_owned()
                    }
                } else {
                    m.topic.clone()
                };
                (m.protocol_name.clone(), label, topic, facts.join(" · "))
            }
            Err(_) => (
                "Room".to_owned(),
                "topic",
                "—".to_owned(),
                "unreadable".to_owned(),
            ),
        };
        let block = pane(&format!(" {name} {}", self.title), theme, false).title_bottom(
            Line::from(Span::styled(format!(" {facts} "), theme.muted())),
        );
        let inner = block.inner(area);
        f.render_widget(block, area);
        let line = Line::from(vec![
            Span::styled(format!("{label}  "), theme.muted()),
            Span::styled(topic, theme.accent().add_modifier(Modifier::BOLD)),
        ]);
        f.render_widget(Paragraph::new(line), inner);
    }

    fn draw_body(&self, f: &mut Frame, area: Rect, theme: &Theme, m: &RoomModel) {
        // Members beside the stream when there is room, else above it.
        let wide = area.width >= 70;
        // Stacked, the members give way to the meeting and a few lines of
        // the stream.
        let others = match &m.meeting {
            Some(mt) => self.meeting_lines(theme, mt).len() as u16 + 2 + 3,
            None => 6,
        };
        let members_h = (m.members.len() as u16 + 2)
            .min(8)
            .min(area.height.saturating_sub(others))
            .max(3);
        let (members_area, rest) = if wide {
            let w = if area.width >= 110 { 36 } else { 30 };
            let c = Layout::default()
                .direction(Direction::Horizontal)
                .constraints([Constraint::Length(w), Constraint::Min(20)])
                .split(area);
            (c[0], c[1])
        } else {
            let c = Layout::default()
                .direction(Direction::Vertical)
                .constraints([
                    Constraint::Length(members_h.min(area.height.saturating_sub(3))),
                    Constraint::Min(3),
                ])
                .split(area);
            (c[0], c[1])
        };
        self.draw_members(f, members_area, theme, m);
        match (&m.meeting, m.kind) {
            (Some(mt), _) => {
                let lines = self.meeting_lines(theme, mt);
                // The meeting's state first, the notices under it.
                let want = lines.len() as u16 + 2;
                let c = Layout::default()
                    .direction(Direction::Vertical)
                    .constraints([
                        Constraint::Length(want.min(rest.height.saturating_sub(3)).max(3)),
                        Constraint::Min(3),
                    ])
                    .split(rest);
                let block = pane(" Meeting ", theme, false);
                let inner = block.inner(c[0]);
                f.render_widget(block, c[0]);
                f.render_widget(Paragraph::new(lines), inner);
                self.draw_stream(f, c[1], theme, m, " Notices ");
            }
            (None, RoomKind::Other) if !m.raw_view.is_empty() => {
                let c = Layout::default()
                    .direction(Direction::Vertical)
                    .constraints([
                        Constraint::Length(
                            (m.raw_view.len() as u16 + 2)
                                .min(rest.height.saturating_sub(3))
                                .max(3),
                        ),
                        Constraint::Min(3),
                    ])
                    .split(rest);
                let block = pane(" View ", theme, false);
                let inner = block.inner(c[0]);
                f.render_widget(block, c[0]);
                let lines: Vec<Line> = m
                    .raw_view
                    .iter()
                    .map(|l| Line::from(Span::styled(l.clone(), theme.text())))
                    .collect();
                f.render_widget(Paragraph::new(lines), inner);
                self.draw_stream(f, c[1], theme, m, " Notices ");
            }
            (None, RoomKind::Meeting) => self.draw_stream(f, rest, theme, m, " Notices "),
            _ => self.draw_stream(f, rest, theme, m, " Messages "),
        }
    }

    fn draw_members(&self, f: &mut Frame, area: Rect, theme: &Theme, m: &RoomModel) {
        let block = pane(&format!(" Members ({}) ", m.members.len()), theme, false)
            .title_bottom(Line::from(Span::styled(" ★ leads ", theme.muted())).right_aligned());
        let inner = block.inner(area);
        f.render_widget(block, area);
        let mut members: Vec<&Member> = m.members.iter().collect();
        members.sort_by_key(|x| (x.seat.unwrap_or(i64::MAX), x.public_key.clone()));
        let facilitator = m.meeting.as_ref().map(|mt| mt.facilitator.as_str());
        let speaker = m.meeting.as_ref().map(|mt| mt.speaker.as_str());
        let mut lines = Vec::new();
        for x in members {
            let left = x.status == "left" || x.presence.as_deref() == Some("left");
            let status = if left {
                "left"
            } else if self.links.get(&x.public_key) == Some(&false) {
                "offline"
            } else {
                match x.presence.as_deref() {
                    Some("online") => "online",
                    _ => "active",
                }
            };
            let lead = !m.leader.is_empty() && x.public_key == m.leader;
            let seat = x.seat.map(|s| s.to_string()).unwrap_or_else(|| "?".into());
            let mut name = self.name(&x.public_key);
            cut(&mut name, 10);
            let mut tags = Vec::new();
            if facilitator == Some(x.public_key.as_str()) {
                tags.push("chair");
            }
            if speaker == Some(x.public_key.as_str()) {
                tags.push("speaks");
            }
            let status_style = match status {
                "left" | "offline" => theme.muted(),
                _ => theme.fg(Slot::Ok),
            };
            let name_style = if x.public_key == self.you() {
                theme.fg(Slot::Sent).add_modifier(Modifier::BOLD)
            } else if left {
                theme.muted()
            } else {
                theme.text()
            };
            lines.push(Line::from(vec![
                Span::styled(if lead { "★" } else { " " }, theme.accent()),
                Span::styled(format!("{seat:>2} "), theme.muted()),
                Span::styled(format!("{name:<10} "), name_style),
                Span::styled(format!("{status:<7}"), status_style),
                Span::styled(
                    if tags.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", tags.join(","))
                    },
                    theme.accent(),
                ),
            ]));
        }
        if lines.is_empty() {
            lines.push(Line::from(Span::styled(
                if m.started {
                    "no members listed"
                } else {
                    "the lobby is filling"
                },
                theme.muted(),
            )));
        }
        f.render_widget(Paragraph::new(lines), inner);
    }

    fn meeting_lines(&self, theme: &Theme, mt: &Meeting) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let head = |t: &str| Span::styled(format!("{t:<9}"), theme.muted());
        if mt.agenda.is_empty() {
            lines.push(Line::from(vec![
                head("agenda"),
                Span::styled("empty", theme.muted()),
            ]));
        }
        for (i, (text, status)) in mt.agenda.iter().enumerate() {
            let (mark, style) = match status.as_str() {
                "active" => ("▶", theme.accent().add_modifier(Modifier::BOLD)),
                "done" => ("✓", theme.muted()),
                _ => ("·", theme.text()),
            };
            let mut t = text.clone();
            cut(&mut t, 120);
            lines.push(Line::from(vec![
                head(if i == 0 { "agenda" } else { "" }),
                Span::styled(format!("{mark} {}. {t}", i + 1), style),
            ]));
        }
        let speaker = match self.name(&mt.speaker) {
            _ if mt.speaker.is_empty() => "nobody has the floor".to_owned(),
            you if you == "you" => "you have the floor".to_owned(),
            who => format!("{who} has the floor"),
        };
        let queue = if mt.queue.is_empty() {
            String::new()
        } else {
            format!(
                " · queue: {}",
                mt.queue
                    .iter()
                    .map(|k| self.name(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        lines.push(Line::from(vec![
            head("speaking"),
            Span::styled(format!("{speaker}{queue}"), theme.text()),
        ]));
        match &mt.vote {
            Some(v) => {
                let mut q = v.question.clone();
                cut(&mut q, 120);
                lines.push(Line::from(vec![
                    head("vote"),
                    Span::styled(
                        format!(
                            "{q} ({} ballot{})",
                            v.ballots,
                            if v.ballots == 1 { "" } else { "s" }
                        ),
                        theme.accent(),
                    ),
                ]));
                let mut spans = vec![head("")];
                for (i, c) in v.choices.iter().enumerate() {
                    let n = v.counts.get(i).copied().unwrap_or(0);
                    let mine = v.my_choice == Some(i as i64);
                    spans.push(Span::styled(
                        format!("[{i} {c}: {n}{}] ", if mine { " ✓you" } else { "" }),
                        if mine {
                            theme.fg(Slot::Sent)
                        } else {
                            theme.text()
                        },
                    ));
                }
                lines.push(Line::from(spans));
            }
            None => lines.push(Line::from(vec![
                head("vote"),
                Span::styled(
                    format!("none open · {} closed", mt.votes_closed),
                    theme.muted(),
                ),
            ])),
        }
        if mt.action_items.is_empty() {
            lines.push(Line::from(vec![
                head("actions"),
                Span::styled("none", theme.muted()),
            ]));
        }
        for (i, a) in mt.action_items.iter().enumerate() {
            let mut t = a.text.clone();
            cut(&mut t, 100);
            let who = if a.assignee.is_empty() {
                String::new()
            } else {
                format!(" → {}", self.name(&a.assignee))
            };
            lines.push(Line::from(vec![
                head(if i == 0 { "actions" } else { "" }),
                Span::styled(
                    format!("[{}] #{} {t}{who}", if a.done { "x" } else { " " }, a.id),
                    if a.done { theme.muted() } else { theme.text() },
                ),
            ]));
        }
        lines
    }

    fn draw_stream(&self, f: &mut Frame, area: Rect, theme: &Theme, m: &RoomModel, title: &str) {
        let all = entries(&m.messages, self.notices);
        let total = all.len();
        let hidden = self.scroll.min(total.saturating_sub(1));
        let lines = if total == 1 { "line" } else { "lines" };
        let status = if hidden > 0 {
            format!(" {total} {lines} · {hidden} newer below ")
        } else {
            format!(" {total} {lines} · live ")
        };
        let block = pane(title, theme, self.stream_focused)
            .title_bottom(Line::from(Span::styled(status, theme.muted())).right_aligned());
        let inner = block.inner(area);
        f.render_widget(block, area);
        if total == 0 {
            let hint = if m.kind == RoomKind::Meeting {
                "Nothing has happened yet."
            } else {
                "No messages yet. Write one below (Enter sends)."
            };
            f.render_widget(Paragraph::new(Span::styled(hint, theme.muted())), inner);
            return;
        }
        let width = inner.width as usize;
        let height = inner.height as usize;
        // From the newest shown entry up, until the pane is full.
        // Whole entries only, but the newest shown even when it is taller
        // than the pane (its head then).
        let mut lines: Vec<Line> = Vec::new();
        for e in all[..total - hidden].iter().rev() {
            let mut wrapped = self.entry_lines(e, theme, width);
            if !lines.is_empty() && lines.len() + wrapped.len() > height {
                break;
            }
            wrapped.truncate(height);
            wrapped.reverse();
            lines.extend(wrapped);
        }
        lines.reverse();
        let top = height.saturating_sub(lines.len()) as u16;
        let at = Rect {
            y: inner.y + top,
            height: inner.height - top,
            ..inner
        };
        f.render_widget(Paragraph::new(lines), at);
    }

    /// One entry, wrapped to `width` cells.
    fn entry_lines(&self, e: &Entry<'_>, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let (prefix, prefix_style, text, style) = match e {
            Entry::Notice(n) => (
                format!("{} • ", n.time),
                theme.muted(),
                n.text.clone(),
                if n.bad {
                    theme.fg(Slot::Error)
                } else {
                    theme.fg(Slot::Local)
                },
            ),
            Entry::Message(msg) if msg.system => (
                "· ".to_owned(),
                theme.fg(Slot::System),
                msg.text.clone(),
                theme.fg(Slot::System).add_modifier(Modifier::ITALIC),
            ),
            Entry::Message(msg) => {
                let mine = !msg.from.is_empty() && msg.from == self.you();
                let seat = msg
                    .seat
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "?".into());
                let mut who = self.name(&msg.from);
                cut(&mut who, 16);
                if mine {
                    (
                        format!("▸[{seat}] {who}: "),
                        theme.fg(Slot::Sent).add_modifier(Modifier::BOLD),
                        msg.text.clone(),
                        theme.fg(Slot::Sent),
                    )
                } else {
                    (
                        format!(" [{seat}] {who}: "),
                        theme.fg(Slot::Received).add_modifier(Modifier::BOLD),
                        msg.text.clone(),
                        theme.text(),
                    )
                }
            }
        };
        wrap(&prefix, prefix_style, &text, style, width)
    }

    fn draw_compose(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        if area.height == 0 {
            return;
        }
        let meeting = matches!(self.model, Ok(m) if m.kind == RoomKind::Meeting);
        let title = if meeting { " Action (JSON) " } else { " Say " };
        let note = match self.note {
            Some((ok, text)) => Span::styled(
                format!(" {text} "),
                if *ok {
                    theme.fg(Slot::Ok)
                } else {
                    theme.fg(Slot::Error)
                },
            ),
            None => Span::styled(
                if meeting {
                    r#" e.g. {"kind":"add_agenda","text":"…"} · Enter sends "#
                } else {
                    " Enter sends · {…} sends a JSON action "
                },
                theme.muted(),
            ),
        };
        let block = pane(title, theme, self.compose_focused).title_bottom(Line::from(note));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let width = inner.width as usize;
        // The end of a long line stays in sight.
        let shown: String = {
            let n = self.input.chars().count();
            let room = width.saturating_sub(3);
            self.input.chars().skip(n.saturating_sub(room)).collect()
        };
        let mut line = vec![
            Span::styled("> ", theme.accent()),
            Span::styled(shown, theme.text()),
        ];
        if self.compose_focused {
            line.push(Span::styled(" ", theme.cursor()));
        }
        f.render_widget(Paragraph::new(Line::from(line)), inner);
    }
}

fn pane<'a>(title: &str, theme: &Theme, focused: bool) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(title.to_owned(), theme.title()))
}

/// Cells a character takes.
fn cells(c: char) -> usize {
    let mut b = [0u8; 4];
    Span::raw(&*c.encode_utf8(&mut b)).width()
}

/// `prefix` then `text` wrapped to `width` cells at spaces (a word longer
/// than a line is cut), the continuation lines indented under the text.
/// At most 40 lines (the rest is cut).
fn wrap(prefix: &str, ps: Style, text: &str, ts: Style, width: usize) -> Vec<Line<'static>> {
    let indent = Span::raw(prefix).width().min(width / 2);
    let room = width.saturating_sub(indent).max(1);
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut rows: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut used = 0usize;
    // Where the last space of `cur` is (byte index, cells before it).
    let mut space: Option<(usize, usize)> = None;
    for c in text.chars() {
        let w = cells(c);
        if used + w > room && !cur.is_empty() {
            if c == ' ' {
                rows.push(std::mem::take(&mut cur));
                (used, space) = (0, None);
                continue;
            }
            match space {
                Some((at, before)) if at > 0 => {
                    let rest = cur.split_off(at + 1);
                    cur.pop();
                    rows.push(std::mem::replace(&mut cur, rest));
                    used -= before + 1;
                }
                _ => {
                    rows.push(std::mem::take(&mut cur));
                    used = 0;
                }
            }
            space = None;
            if rows.len() >= 40 {
                break;
            }
        }
        if c == ' ' {
            if cur.is_empty() && !rows.is_empty() {
                continue;
            }
            space = Some((cur.len(), used));
        }
        cur.push(c);
        used += w;
    }
    if rows.len() < 40 {
        rows.push(cur);
    }
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let head = if i == 0 {
                Span::styled(prefix.to_owned(), ps)
            } else {
                Span::raw(" ".repeat(indent))
            };
            Line::from(vec![head, Span::styled(r, ts)])
        })
        .collect()
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
    fn wrapping_keeps_every_character_and_the_width() {
        let l = wrap("ab: ", Style::new(), "one two three", Style::new(), 10);
        let rows: Vec<String> = l
            .iter()
            .map(|x| x.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(rows, ["ab: one", "    two", "    three"]);
        let l = wrap("ab: ", Style::new(), "0123456789漢字", Style::new(), 8);
        let text: String = l
            .iter()
            .map(|x| {
                x.spans
                    .iter()
                    .map(|s| s.content.replace(' ', ""))
                    .collect::<String>()
            })
            .collect();
        assert_eq!(text, "ab:0123456789漢字");
        assert!(l.iter().all(|x| x.width() <= 8), "{l:?}");
        assert_eq!(short_key(&"ab".repeat(32)), "abab…abab");
        assert_eq!(short_key("é"), "é");
    }

    #[test]
    fn notices_stay_after_the_line_they_came_after_when_old_lines_leave() {
        let msg = |id| Message {
            id: Some(id),
            system: false,
            from: String::new(),
            seat: None,
            text: id.to_string(),
        };
        let note = |after| Notice {
            time: String::new(),
            text: format!("n{after:?}"),
            bad: false,
            after,
        };
        // Lines 1-4 left the view; the notice after 5 stays after 5.
        let messages = [msg(5), msg(6), msg(7)];
        let notices = [note(None), note(Some(5)), note(Some(9))];
        let order: Vec<String> = entries(&messages, &notices)
            .iter()
            .map(|e| match e {
                Entry::Message(m) => m.text.clone(),
                Entry::Notice(n) => n.text.clone(),
            })
            .collect();
        assert_eq!(order, ["nNone", "5", "nSome(5)", "6", "7", "nSome(9)"]);
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
