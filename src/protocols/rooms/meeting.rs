//! meeting-room-v1: agenda, speaking queue, votes and action items, run by
//! a facilitator who is a business role, not the network leader.
//!
//! State, in this key order: `title`, `facilitator` (public key; the
//! lowest seat at creation), `members` (public key → `{seat, status}`),
//! `agenda` (`{id, text, created_by, status}` with status `pending`,
//! `active` or `done`), `active_agenda` (index, -1 for none),
//! `speaking_queue` (public keys, FIFO), `active_speaker` (`""` for none),
//! `vote` (the open vote `{id, question, choices, ballots, status}` or
//! null), `vote_history` (closed votes with `counts`), `action_items`
//! (`{id, text, assignee, created_by, done}`), `next_id` (one counter for
//! agenda items, votes and action items), `ended`.
//!
//! Who may do what: anyone adds agenda items (up to `max_agenda_items`),
//! queues to speak, casts a ballot (replaceable) and adds action items
//! (for any active member); only the active speaker yields; the
//! facilitator or the assignee completes an action item; only the
//! facilitator advances the agenda, opens (one at a time, 2-6 choices) and
//! closes votes, hands the role to another active member, and ends the
//! meeting (completing the room with outcome `ended`).
//!
//! The view shows everything except the individual ballots of the open
//! vote, which it replaces by running counts, the ballot count and the
//! viewer's own choice (`my_choice`, null before voting). A closed vote
//! in `vote_history` keeps its ballots, as in the reference.
//!
//! Kept as the reference has them: actions still succeed after
//! `end_meeting`; a facilitator who leaves keeps the role and a member who
//! leaves keeps their ballot; advancing past the last agenda item gives -1
//! and advancing again restarts at item 0; an item added while
//! `active_agenda` is -1 is itself marked `active` while `active_agenda`
//! becomes 0, the first item.

use super::{
    Hooked, bounded_text, completed_result, dict_mut, field, field_mut, int_option, item, item_mut,
    list_index, list_len, list_mut, member_key, plus_one, py_cmp_num, py_len, saturate, set_item,
    state_map, take_counter, title_option,
};
use crate::engine::HostMetadata;
use crate::engine::group::GroupHooks;
use crate::engine::group::hooks::result;
use crate::json::{Map, Number, Value};
use crate::obj;
use std::cmp::Ordering;

const DEFAULT_TITLE: &str = "Working session";
const DEFAULT_MAX_AGENDA: i64 = 20;
/// UTF-8 byte limits of an agenda item or action item, a vote's question
/// and one of its choices.
const ITEM_LIMIT: usize = 500;
const CHOICE_LIMIT: usize = 100;
/// How many choices a vote offers.
const MIN_CHOICES: usize = 2;
const MAX_CHOICES: usize = 6;

/// `proto_host_metadata` of meeting-room-v1.
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        display_name: "Meeting Room".into(),
        tags: "meeting,multiplayer,agenda,vote".into(),
        invite_type: "chat".into(),
        default_options: obj! {
            "meeting_title" => DEFAULT_TITLE, "max_agenda_items" => DEFAULT_MAX_AGENDA,
        },
    }
}

/// The rules of meeting-room-v1.
#[derive(Debug, Clone, Default)]
pub struct MeetingRoom {
    options: Map,
}

impl MeetingRoom {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }
}

fn require_facilitator(state: &Map, actor: &Value) -> Hooked<()> {
    if item(actor, "public_key")?.py_eq(field(state, "facilitator")?) {
        Ok(())
    } else {
        Err("this action requires the meeting facilitator".into())
    }
}

/// A string naming a member whose entry says `active`.
fn is_active_member(state: &Map, key: Option<&Value>) -> Hooked<bool> {
    let Some(Value::String(key)) = key else {
        return Ok(false);
    };
    let entry = match field(state, "members")? {
        Value::Object(members) => members.get(key),
        other => {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                super::py_type(other)
            ));
        }
    };
    let active = Value::from("active");
    Ok(match entry {
        Some(Value::Object(m)) => m.get("status").is_some_and(|s| s.py_eq(&active)),
        _ => false,
    })
}

/// Moves the head of the queue to the floor when nobody has it.
fn advance_speaker(state: &mut Map) -> Hooked<()> {
    if field(state, "active_speaker")?.truthy() {
        return Ok(());
    }
    let queue = list_mut(state, "speaking_queue")?;
    if queue.is_empty() {
        return Ok(());
    }
    let next = queue.remove(0);
    state.insert("active_speaker", next);
    Ok(())
}

/// Tallies ballots (choice indices) over `choices` options.
fn tally(vote: &Value) -> Hooked<Vec<Value>> {
    let mut counts = vec![0i64; py_len(item(vote, "choices")?)?];
    let ballots = match item(vote, "ballots")? {
        Value::Object(b) => b,
        other => {
            return Err(format!(
                "'{}' object has no attribute 'values'",
                super::py_type(other)
            ));
        }
    };
    for choice in ballots.values() {
        let at = list_index(choice, counts.len())?;
        counts[at] += 1;
    }
    Ok(counts.into_iter().map(Value::from).collect())
}

/// The position of the action item whose `id` equals `item_id`.
fn find_item(items: &[Value], item_id: Option<&Value>) -> Hooked<usize> {
    let item_id = match item_id {
        Some(v @ Value::Number(Number::Int(_) | Number::BigInt(_))) => v,
        _ => return Err("item_id must be an integer".into()),
    };
    for (at, entry) in items.iter().enumerate() {
        if item(entry, "id")?.py_eq(item_id) {
            return Ok(at);
        }
    }
    Err("item does not exist".into())
}

/// Sets `agenda[index]["status"]`.
fn set_agenda_status(state: &mut Map, index: &Value, status: &str) -> Hooked<()> {
    let agenda = list_mut(state, "agenda")?;
    let at = list_index(index, agenda.len())?;
    set_item(&mut agenda[at], "status", Value::from(status))
}

impl MeetingRoom {
    fn add_agenda(&self, state: &mut Map, actor: &Value, action: &Map) -> Hooked<Vec<Value>> {
        let len = list_len(state, "agenda")?;
        let max = int_option(&self.options, "max_agenda_items", DEFAULT_MAX_AGENDA)?;
        if i64::try_from(len).unwrap_or(i64::MAX) >= saturate(&max) {
            return Err("agenda is full".into());
        }
        let text = bounded_text(action.get("text"), ITEM_LIMIT, "text")?;
        let id = take_counter(state, "next_id")?;
        let activate =
            py_cmp_num(field(state, "active_agenda")?, &Value::from(0), "<")? == Ordering::Less;
        let status = if activate { "active" } else { "pending" };
        let entry = Value::Object(obj! {
            "id" => id,
            "text" => text,
            "created_by" => item(actor, "public_key")?,
            "status" => status,
        });
        list_mut(state, "agenda")?.push(entry.clone());
        if activate {
            state.insert("active_agenda", Value::from(0));
        }
        Ok(vec![Value::Object(
            obj! { "kind" => "agenda_added", "item" => entry },
        )])
    }

    fn advance_agenda(state: &mut Map, actor: &Value) -> Hooked<Vec<Value>> {
        require_facilitator(state, actor)?;
        let current = field(state, "active_agenda")?.clone();
        let len = Value::from(list_len(state, "agenda")?);
        if py_cmp_num(&Value::from(0), &current, "<=")? != Ordering::Greater
            && py_cmp_num(&current, &len, "<")? == Ordering::Less
        {
            set_agenda_status(state, &current, "done")?;
        }
        let next = plus_one(&current)?;
        let active = if py_cmp_num(&next, &len, "<")? == Ordering::Less {
            next
        } else {
            Value::from(-1)
        };
        state.insert("active_agenda", active.clone());
        if py_cmp_num(&active, &Value::from(0), ">=")? != Ordering::Less {
            set_agenda_status(state, &active, "active")?;
        }
        Ok(vec![Value::Object(
            obj! { "kind" => "agenda_advanced", "active_agenda" => active },
        )])
    }

    fn request_to_speak(state: &mut Map, actor: &Value) -> Hooked<Vec<Value>> {
        let me = item(actor, "public_key")?.clone();
        let speaking = field(state, "active_speaker")?.py_eq(&me);
        let queue = list_mut(state, "speaking_queue")?;
        if !speaking && !queue.iter().any(|k| k.py_eq(&me)) {
            queue.push(me);
        }
        advance_speaker(state)?;
        Ok(vec![Value::Object(obj! {
            "kind" => "speaking_queue_changed",
            "active_speaker" => field(state, "active_speaker")?,
            "queue" => field(state, "speaking_queue")?,
        })])
    }

    fn yield_speaker(state: &mut Map, actor: &Value) -> Hooked<Vec<Value>> {
        if !field(state, "active_speaker")?.py_eq(item(actor, "public_key")?) {
            return Err("only the active speaker can yield".into());
        }
        state.insert("active_speaker", Value::from(""));
        advance_speaker(state)?;
        Ok(vec![Value::Object(obj! {
            "kind" => "speaker_yielded",
            "active_speaker" => field(state, "active_speaker")?,
        })])
    }

    fn open_vote(state: &mut Map, actor: &Value, action: &Map) -> Hooked<Vec<Value>> {
        require_facilitator(state, actor)?;
        if !field(state, "vote")?.is_null() {
            return Err("a vote is already open".into());
        }
        let question = bounded_text(action.get("question"), ITEM_LIMIT, "question")?;
        let choices = match action.get("choices") {
            Some(Value::Array(c)) if (MIN_CHOICES..=MAX_CHOICES).contains(&c.len()) => c,
            _ => return Err("choices must contain 2-6 items".into()),
        };
        let clean = choices
            .iter()
            .map(|c| bounded_text(Some(c), CHOICE_LIMIT, "choice").map(Value::from))
            .collect::<Hooked<Vec<Value>>>()?;
        let vote = Value::Object(obj! {
            "id" => take_counter(state, "next_id")?,
            "question" => question,
            "choices" => clean,
            "ballots" => Map::new(),
            "status" => "open",
        });
        state.insert("vote", vote.clone());
        Ok(vec![Value::Object(
            obj! { "kind" => "vote_opened", "vote" => vote },
        )])
    }

    fn cast_vote(state: &mut Map, actor: &Value, action: &Map) -> Hooked<Vec<Value>> {
        let vote = field_mut(state, "vote")?;
        let open = matches!(&*vote, Value::Object(v)
            if v.get("status").is_some_and(|s| s.py_eq(&Value::from("open"))));
        if !open {
            return Err("no vote is open".into());
        }
        let choice = match action.get("choice") {
            Some(Value::Number(Number::Int(c))) if *c >= 0 => {
                let count = py_len(item(vote, "choices")?)?;
                match usize::try_from(*c) {
                    Ok(at) if at < count => *c,
                    _ => return Err("choice is out of range".into()),
                }
            }
            _ => return Err("choice is out of range".into()),
        };
        let me = member_key(actor)?;
        match item_mut(vote, "ballots")? {
            Value::Object(ballots) => {
                ballots.insert(me.clone(), Value::from(choice));
            }
            other => {
                return Err(format!(
                    "'{}' object does not support item assignment",
                    super::py_type(other)
                ));
            }
        }
        Ok(vec![Value::Object(obj! {
            "kind" => "vote_cast", "public_key" => me, "choice" => choice,
        })])
    }

    fn close_vote(state: &mut Map, actor: &Value) -> Hooked<Vec<Value>> {
        require_facilitator(state, actor)?;
        let vote = field(state, "vote")?;
        let Value::Object(open) = vote else {
            return Err("no vote is open".into());
        };
        let counts = tally(vote)?;
        let mut closed = open.clone();
        closed.insert("status", Value::from("closed"));
        closed.insert("counts", Value::Array(counts));
        let closed = Value::Object(closed);
        list_mut(state, "vote_history")?.push(closed.clone());
        state.insert("vote", Value::Null);
        Ok(vec![Value::Object(
            obj! { "kind" => "vote_closed", "vote" => closed },
        )])
    }

    fn add_action_item(state: &mut Map, actor: &Value, action: &Map) -> Hooked<Vec<Value>> {
        let text = bounded_text(action.get("text"), ITEM_LIMIT, "text")?;
        let me = item(actor, "public_key")?;
        let assignee = match action.get("assignee") {
            Some(a) if a.truthy() => a,
            _ => me,
        };
        if !is_active_member(state, Some(assignee))? {
            return Err("assignee must be a member public key".into());
        }
        let entry = Value::Object(obj! {
            "id" => take_counter(state, "next_id")?,
            "text" => text,
            "assignee" => assignee,
            "created_by" => me,
            "done" => false,
        });
        list_mut(state, "action_items")?.push(entry.clone());
        Ok(vec![Value::Object(
            obj! { "kind" => "action_item_added", "item" => entry },
        )])
    }

    fn complete_action_item(state: &mut Map, actor: &Value, action: &Map) -> Hooked<Vec<Value>> {
        let facilitator = field(state, "facilitator")?.clone();
        let items = list_mut(state, "action_items")?;
        let at = find_item(items, action.get("item_id"))?;
        let me = item(actor, "public_key")?;
        if !me.py_eq(&facilitator) && !me.py_eq(item(&items[at], "assignee")?) {
            return Err("only the facilitator or assignee can complete it".into());
        }
        set_item(&mut items[at], "done", Value::Bool(true))?;
        let id = item(&items[at], "id")?.clone();
        Ok(vec![Value::Object(
            obj! { "kind" => "action_item_completed", "item_id" => id },
        )])
    }

    fn transfer_facilitator(state: &mut Map, actor: &Value, action: &Map) -> Hooked<Vec<Value>> {
        require_facilitator(state, actor)?;
        let target = action.get("public_key");
        if !is_active_member(state, target)? {
            return Err("public_key must identify an active member".into());
        }
        let target = target.cloned().unwrap_or_default();
        state.insert("facilitator", target.clone());
        Ok(vec![Value::Object(
            obj! { "kind" => "facilitator_transferred", "public_key" => target },
        )])
    }
}

impl GroupHooks for MeetingRoom {
    fn initial_state(&mut self, members: &[Value]) -> Hooked<Value> {
        // The first member with the lowest seat, as Python's min() picks it.
        let mut facilitator: Option<&Value> = None;
        for member in members {
            let lower = match facilitator {
                None => true,
                Some(best) => {
                    py_cmp_num(item(member, "seat")?, item(best, "seat")?, "<")? == Ordering::Less
                }
            };
            if lower {
                facilitator = Some(member);
            }
        }
        let Some(facilitator) = facilitator else {
            return Err("min() arg is an empty sequence".into());
        };
        let title = title_option(&self.options, "meeting_title", DEFAULT_TITLE);
        let mut roster = Map::new();
        for member in members {
            let key = member_key(member)?;
            let seat = item(member, "seat")?.clone();
            let status = match member.get("status") {
                Some(s) => s.clone(),
                None => Value::from("active"),
            };
            roster.insert(
                key,
                Value::Object(obj! { "seat" => seat, "status" => status }),
            );
        }
        Ok(Value::Object(obj! {
            "title" => title,
            "facilitator" => item(facilitator, "public_key")?,
            "members" => roster,
            "agenda" => Vec::new(),
            "active_agenda" => -1,
            "speaking_queue" => Vec::new(),
            "active_speaker" => "",
            "vote" => Value::Null,
            "vote_history" => Vec::new(),
            "action_items" => Vec::new(),
            "next_id" => 1,
            "ended" => false,
        }))
    }

    fn member_joined(&mut self, state: Value, member: &Value) -> Hooked<Value> {
        let mut state = state_map(state)?;
        let key = member_key(member)?;
        let seat = item(member, "seat")?.clone();
        dict_mut(&mut state, "members")?.insert(
            key.clone(),
            Value::Object(obj! { "seat" => seat.clone(), "status" => "active" }),
        );
        let event = obj! { "kind" => "member_joined", "public_key" => key, "seat" => seat };
        Ok(result(Value::Object(state), vec![Value::Object(event)]))
    }

    fn member_left(&mut self, state: Value, member: &Value, reason: &str) -> Hooked<Value> {
        let mut state = state_map(state)?;
        let key = member_key(member)?;
        let seat = item(member, "seat")?.clone();
        let roster = dict_mut(&mut state, "members")?;
        if !roster.contains_key(&key) {
            roster.insert(key.clone(), Value::Object(obj! { "seat" => seat }));
        }
        if let Some(entry) = roster.get_mut(&key) {
            set_item(entry, "status", Value::from("left"))?;
        }
        let gone = Value::from(key.as_str());
        list_mut(&mut state, "speaking_queue")?.retain(|k| !k.py_eq(&gone));
        if field(&state, "active_speaker")?.py_eq(&gone) {
            state.insert("active_speaker", Value::from(""));
            advance_speaker(&mut state)?;
        }
        let event = obj! { "kind" => "member_left", "public_key" => key, "reason" => reason };
        Ok(result(Value::Object(state), vec![Value::Object(event)]))
    }

    fn handle(&mut self, state: Value, actor: &Value, action: &Value) -> Hooked<Value> {
        let mut state = state_map(state)?;
        let action = super::action_map(action)?;
        let s = &mut state;
        let events = match action.get("kind").and_then(Value::as_str) {
            Some("add_agenda") => self.add_agenda(s, actor, action)?,
            Some("advance_agenda") => Self::advance_agenda(s, actor)?,
            Some("request_to_speak") => Self::request_to_speak(s, actor)?,
            Some("yield_speaker") => Self::yield_speaker(s, actor)?,
            Some("open_vote") => Self::open_vote(s, actor, action)?,
            Some("cast_vote") => Self::cast_vote(s, actor, action)?,
            Some("close_vote") => Self::close_vote(s, actor)?,
            Some("add_action_item") => Self::add_action_item(s, actor, action)?,
            Some("complete_action_item") => Self::complete_action_item(s, actor, action)?,
            Some("transfer_facilitator") => Self::transfer_facilitator(s, actor, action)?,
            Some("end_meeting") => {
                require_facilitator(s, actor)?;
                state.insert("ended", Value::Bool(true));
                let events = vec![Value::Object(obj! { "kind" => "meeting_ended" })];
                return Ok(completed_result(state, events, "ended"));
            }
            _ => return Err("unsupported meeting action".into()),
        };
        Ok(result(Value::Object(state), events))
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> Hooked<Value> {
        let me = item(viewer, "public_key")?;
        let vote = item(state, "vote")?;
        let public_vote = match vote {
            Value::Object(open) => {
                let counts = tally(vote)?;
                let ballots = item(vote, "ballots")?;
                let ballot_count = ballots.as_object().map_or(0, Map::len);
                let mine = match me {
                    Value::String(k) => ballots.get(k).cloned().unwrap_or(Value::Null),
                    _ => Value::Null,
                };
                Value::Object(obj! {
                    "id" => field(open, "id")?,
                    "question" => field(open, "question")?,
                    "choices" => field(open, "choices")?,
                    "counts" => counts,
                    "ballot_count" => ballot_count,
                    "my_choice" => mine,
                    "status" => field(open, "status")?,
                })
            }
            _ => Value::Null,
        };
        let facilitator = item(state, "facilitator")?;
        Ok(Value::Object(obj! {
            "title" => item(state, "title")?,
            "facilitator" => facilitator,
            "members" => item(state, "members")?,
            "agenda" => item(state, "agenda")?,
            "active_agenda" => item(state, "active_agenda")?,
            "speaking_queue" => item(state, "speaking_queue")?,
            "active_speaker" => item(state, "active_speaker")?,
            "vote" => public_vote,
            "vote_history" => item(state, "vote_history")?,
            "action_items" => item(state, "action_items")?,
            "ended" => item(state, "ended")?,
            "you" => obj! {
                "public_key" => me,
                "seat" => item(viewer, "seat")?,
                "is_facilitator" => me.py_eq(facilitator),
            },
        }))
    }

    // recovery_snapshot and restore: the trait's defaults (the whole state
    // is the recovery state), as the reference's room hooks have them.

    fn on_leader_changed(
        &mut self,
        state: Value,
        old_leader: &str,
        new_leader: &str,
    ) -> Hooked<Value> {
        let facilitator = item(&state, "facilitator")?.clone();
        let event = obj! {
            "kind" => "network_leader_changed",
            "old_leader" => old_leader,
            "new_leader" => new_leader,
            "facilitator" => facilitator,
        };
        Ok(result(state, vec![Value::Object(event)]))
    }
}

#[cfg(test)]
#[path = "meeting_tests.rs"]
mod tests;
