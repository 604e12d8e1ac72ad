//! classical-mahjong-v1: four fixed seats, 136 tiles (34 faces, four
//! copies each, no flowers), 13 to each seat and one more to the dealer.
//! The player to move (phase `discard`) discards a tile, declares a
//! concealed kong (then draws a replacement), or wins on its own draw.
//! Each discard opens a claim window (phase `claim`, [`claims`]): the three
//! other seats each answer once, and the window closes when the last one
//! has: a win comes first, then the nearest pung or kong, then the next
//! seat's chow; with no claim the next seat draws. A hand ends with a win
//! (scored by [`tiles::patterns`]: the discarder pays three times the
//! points, or each other seat pays them on a self-draw) or an exhausted
//! wall; after `max_hands` hands the highest score wins the match (a tie
//! is a draw), else the next seat deals the next hand.
//!
//! The rules, events, refusal texts and state shape are those of the
//! reference's hooks.py of this protocol (b4b52ae5…), checked line by line
//! by tests/tables_hooks.rs.

mod bot;
mod claims;
pub mod tiles;

pub use claims::awaiting;

use super::{Table, deck, hook_result, member_pk, member_seat, new_seed, py_int};
use super::{int, obj, text};
use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Number, Value};
use crate::obj;

type Hooked<T> = Result<T, HookFailure>;

/// The seats' winds, by seat.
const WINDS: [&str; 4] = ["east", "south", "west", "north"];

/// `proto_host_metadata` of classical-mahjong-v1.
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        display_name: "Classical Mahjong Core".into(),
        tags: "game,tiles,multiplayer,mahjong,shared-deck".into(),
        invite_type: "supply".into(),
        default_options: Map::new(),
    }
}

/// The rules of classical-mahjong-v1.
#[derive(Debug, Clone, Default)]
pub struct Mahjong {
    options: Map,
}

impl Mahjong {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }

    fn option_int(&self, name: &str, default: i64, min: i64, max: i64) -> Hooked<i64> {
        super::option_int(&self.options, name, default, min, max)
    }

    fn max_hands(&self) -> Hooked<i64> {
        self.option_int("max_hands", 4, 1, 32)
    }

    /// A fresh hand: a new wall from the seed, 13 tiles each and one more
    /// to the dealer, who moves first.
    fn new_hand(
        &self,
        members: &[Value],
        scores: Map,
        numbers: HandNumbers,
        notice: &str,
    ) -> Hooked<Map> {
        if members.len() != 4 {
            return Err(FOUR_SEATS.into());
        }
        let order: Vec<String> = members.iter().map(member_pk).collect::<Hooked<_>>()?;
        let dealer_index = numbers.dealer_index.rem_euclid(4);
        let seed = new_seed(&self.options, numbers.hand_number, numbers.restart_count);
        let mut deck = deck::create(&tiles::faces(), members, 13, &seed, 4)?;
        let dealer = order[dealer_index as usize].clone();
        deck::draw(&mut deck, &dealer, 1)?;
        let mut players = Map::with_capacity(4);
        let mut rivers = Map::with_capacity(4);
        let mut melds = Map::with_capacity(4);
        for (m, pk) in members.iter().zip(&order) {
            let seat = py_int_of(&member_seat(m))?;
            players.insert(
                pk.as_str(),
                Value::Object(obj! { "seat" => seat, "wind" => wind(seat)? }),
            );
            rivers.insert(pk.as_str(), Value::Array(Vec::new()));
            melds.insert(pk.as_str(), Value::Array(Vec::new()));
        }
        Ok(obj! {
            "phase" => "discard",
            "hand_number" => numbers.hand_number,
            "dealer_index" => dealer_index,
            "restart_count" => numbers.restart_count,
            "recovery_notice" => notice,
            "turn_order" => strings(&order),
            "players" => Value::Object(players),
            "dealer" => dealer.as_str(),
            "current_player" => dealer.as_str(),
            "must_discard_after_claim" => false,
            "rivers" => Value::Object(rivers),
            "meld_groups" => Value::Object(melds),
            "last_discard" => Value::Null,
            "claim_eligible" => Value::Array(Vec::new()),
            "claim_responses" => Value::Object(Map::new()),
            "scores" => Value::Object(scores),
            "last_result" => Value::Null,
            "deck" => Value::Object(deck),
        })
    }

    /// An action of the player to move: discard, win or concealed_kong.
    fn handle_turn(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        let action = as_action(action)?;
        let pk = member_pk(actor)?;
        match action.get("kind").and_then(Value::as_str) {
            Some("discard") => self.discard(state, actor, action),
            Some("win") => {
                if state.get("must_discard_after_claim") == Some(&Value::Bool(true)) {
                    return Err("cannot declare a self-draw win before drawing a tile".into());
                }
                self.win(state, &pk, None, Vec::new())
            }
            Some("concealed_kong") => {
                let (ids, cards) = hand_cards(&state, &pk, action.get("card_ids"), 4)?;
                let first = cards[0].get_str("code");
                if cards.iter().any(|c| c.get_str("code") != first) {
                    return Err("a concealed kong needs four identical tile faces".into());
                }
                deck::hand_to_zone(deck_mut(&mut state)?, &pk, "melds", &pk, &ids)?;
                let group = obj! {
                    "kind" => "concealed_kong", "owner" => pk.as_str(), "cards" => tiles::values(cards),
                };
                push(&mut state, "meld_groups", &pk, Value::Object(group.clone()))?;
                let mut events = vec![meld_event(group)];
                if wall_count(&state) == 0 {
                    return self.finish_draw(state, events);
                }
                deck::draw(deck_mut(&mut state)?, &pk, 1)?;
                state.insert("must_discard_after_claim", Value::Bool(false));
                events.push(Value::Object(
                    obj! { "kind" => "replacement_draw", "public_key" => pk },
                ));
                Ok(hook_result(state, events))
            }
            _ => Err("turn accepts discard, win, or concealed_kong".into()),
        }
    }

    /// Discards a tile and opens the claim window to the other three seats.
    fn discard(&self, mut state: Map, actor: &Value, action: &Map) -> Hooked<Value> {
        let pk = member_pk(actor)?;
        let id = match action.get("card_id") {
            Some(Value::String(id)) if hand_ids(&state, &pk).iter().any(|h| **h == **id) => {
                id.to_string()
            }
            _ => return Err("card_id is not in this Member's hand".into()),
        };
        let seat = py_int_of(actor.get("seat").ok_or("'seat'")?)?;
        let card = card(&state, &id);
        {
            let deck = deck_mut(&mut state)?;
            deck::take_from_hand(deck, &pk, std::slice::from_ref(&id))?;
            deck::discard(deck, std::slice::from_ref(&id))?;
        }
        state.insert("must_discard_after_claim", Value::Bool(false));
        push(&mut state, "rivers", &pk, Value::from(id.as_str()))?;
        let last = obj! {
            "card_id" => id.as_str(), "card" => Value::Object(card), "public_key" => pk.as_str(), "seat" => seat,
        };
        state.insert("last_discard", Value::Object(last.clone()));
        state.insert("phase", Value::from("claim"));
        state.insert("current_player", Value::from(""));
        let others: Vec<String> = order(&state).into_iter().filter(|k| *k != pk).collect();
        state.insert("claim_eligible", strings(&others));
        state.insert("claim_responses", Value::Object(Map::new()));
        let mut event = obj! { "kind" => "mahjong_discard" };
        for (k, v) in last.iter() {
            event.insert(k, v.clone());
        }
        Ok(hook_result(state, vec![Value::Object(event)]))
    }

    /// `winner` wins: on its own draw (`discard` None) or on the discard of
    /// the seat `discard` names. Scores the hand and ends it.
    fn win(
        &self,
        mut state: Map,
        winner: &str,
        discard: Option<(Map, String)>,
        mut events: Vec<Value>,
    ) -> Hooked<Value> {
        let mut concealed = hand_faces(&state, winner);
        let self_draw = discard.is_none();
        let discarder = discard.as_ref().map(|(_, by)| by.clone());
        if let Some((tile, _)) = discard {
            concealed.push(tile);
        }
        let groups = meld_groups(&state, winner);
        let win_kind = win_shape(&concealed, groups.len())?
            .ok_or("the hand does not match a supported winning shape")?;
        let mut all = concealed;
        let mut kinds = Vec::with_capacity(groups.len());
        let mut closed = true;
        for g in &groups {
            all.extend(
                g.get("cards")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.as_object().cloned()),
            );
            let kind = g.get_str("kind").unwrap_or_default().to_owned();
            closed &= kind == "concealed_kong";
            kinds.push(kind);
        }
        let all = tiles::counts_of(&all).ok_or("tile code is invalid")?;
        let patterns = tiles::patterns(&all, win_kind, &kinds, self_draw, closed);
        let points: i64 = patterns.iter().map(|(_, p)| p).sum();
        let order = order(&state);
        let mut delta: Vec<(String, i64)> = order.iter().map(|k| (k.clone(), 0)).collect();
        let others = order.len().saturating_sub(1) as i64;
        for (k, d) in delta.iter_mut() {
            if self_draw && k != winner {
                *d -= points;
            } else if self_draw {
                *d += points * others;
            } else if Some(&*k) == discarder.as_ref() {
                *d -= points * 3;
            } else if k == winner {
                *d += points * 3;
            }
        }
        let scores = obj_mut(&mut state, "scores")?;
        for (k, d) in &delta {
            let now = scores
                .get(k)
                .and_then(Value::as_i64)
                .ok_or_else(|| format!("'{k}'"))?;
            let new = now.checked_add(*d).ok_or("integer out of range")?;
            scores.insert(k.as_str(), Value::from(new));
        }
        let mut delta_map = Map::with_capacity(4);
        for (k, d) in &delta {
            delta_map.insert(k.as_str(), Value::from(*d));
        }
        let result = obj! {
            "kind" => if self_draw { "self_draw" } else { "discard_win" },
            "winner" => winner,
            "discarder" => discarder.map_or(Value::Null, Value::from),
            "win_kind" => win_kind,
            "patterns" => Value::Array(patterns.iter().map(|(c, p)| Value::Object(obj! { "code" => *c, "points" => *p })).collect()),
            "points" => points,
            "score_delta" => Value::Object(delta_map),
        };
        state.insert("last_result", Value::Object(result.clone()));
        let mut event = obj! { "kind" => "mahjong_win" };
        for (k, v) in result.iter() {
            event.insert(k, v.clone());
        }
        events.push(Value::Object(event));
        self.finish_hand(state, events)
    }

    /// The wall ran out: the hand ends with nobody winning.
    fn finish_draw(&self, mut state: Map, mut events: Vec<Value>) -> Hooked<Value> {
        state.insert(
            "last_result",
            Value::Object(obj! { "kind" => "wall_exhausted", "winner" => "", "points" => 0 }),
        );
        events.push(Value::Object(obj! { "kind" => "mahjong_wall_exhausted" }));
        self.finish_hand(state, events)
    }

    /// Ends the match after the last hand, else deals the next one (the next
    /// seat deals; scores, restarts and the notice carry over).
    fn finish_hand(&self, mut state: Map, mut events: Vec<Value>) -> Hooked<Value> {
        let max_hands = self.max_hands()?;
        let scores = obj(&state, "scores");
        if int(&state, "hand_number") >= max_hands {
            state.insert("phase", Value::from("completed"));
            let order = order(&state);
            let score = |k: &str| scores.get(k).and_then(Value::as_i64).unwrap_or(0);
            let high = scores.values().filter_map(Value::as_i64).max().unwrap_or(0);
            let winners: Vec<String> = order.into_iter().filter(|k| score(k) == high).collect();
            let outcome = match winners.as_slice() {
                [one] => one.clone(),
                _ => "draw".to_owned(),
            };
            events.push(Value::Object(obj! {
                "kind" => "mahjong_match_complete", "winner" => outcome.as_str(),
                "winners" => strings(&winners), "scores" => Value::Object(scores),
            }));
            let mut out =
                obj! { "state" => Value::Object(state), "events" => Value::Array(events) };
            out.insert("completed", Value::Bool(true));
            out.insert("outcome", Value::from(outcome));
            return Ok(Value::Object(out));
        }
        let players = obj(&state, "players");
        let members: Vec<Value> = order(&state)
            .iter()
            .map(|k| {
                let seat = players.get(k).and_then(|p| p.get("seat")).cloned();
                Value::Object(obj! {
                    "public_key" => k.as_str(), "seat" => seat.unwrap_or(Value::Null), "status" => "active",
                })
            })
            .collect();
        let numbers = HandNumbers {
            hand_number: int(&state, "hand_number") + 1,
            dealer_index: (int(&state, "dealer_index") + 1).rem_euclid(4),
            restart_count: int(&state, "restart_count"),
        };
        let mut next =
            self.new_hand(&members, scores, numbers, &text(&state, "recovery_notice"))?;
        next.insert(
            "last_result",
            state.get("last_result").cloned().unwrap_or(Value::Null),
        );
        events.push(Value::Object(obj! {
            "kind" => "mahjong_hand_started",
            "hand_number" => int(&next, "hand_number"),
            "dealer" => text(&next, "dealer"),
        }));
        Ok(hook_result(next, events))
    }
}

const FOUR_SEATS: &str = "Classical Mahjong requires exactly four active Members";

/// The numbers that name a hand (its seed) and its dealer.
#[derive(Debug, Clone, Copy)]
struct HandNumbers {
    hand_number: i64,
    dealer_index: i64,
    restart_count: i64,
}

impl GroupHooks for Mahjong {
    fn initial_state(&mut self, members: &[Value]) -> Hooked<Value> {
        let points = self.option_int("starting_points", 25000, 0, 100_000)?;
        self.max_hands()?;
        let active = active_members(members)?;
        let mut scores = Map::with_capacity(4);
        for m in &active {
            scores.insert(member_pk(m)?.as_str(), Value::from(points));
        }
        let numbers = HandNumbers {
            hand_number: 1,
            dealer_index: 0,
            restart_count: 0,
        };
        self.new_hand(&active, scores, numbers, "")
            .map(Value::Object)
    }

    fn member_joined(&mut self, state: Value, member: &Value) -> Hooked<Value> {
        super::member_rejoined(state, member)
    }

    fn member_left(&mut self, state: Value, member: &Value, reason: &str) -> Hooked<Value> {
        super::member_disconnected(state, member, reason)
    }

    fn handle(&mut self, state: Value, actor: &Value, action: &Value) -> Hooked<Value> {
        let Value::Object(state) = state else {
            return Err("the table state is not an object".into());
        };
        match state.get_str("phase") {
            Some("completed") => Err("the Mahjong match is complete".into()),
            Some("discard") => {
                if member_pk(actor)? != text(&state, "current_player") {
                    return Err("it is not this Member's turn".into());
                }
                self.handle_turn(state, actor, action)
            }
            Some("claim") => self.handle_claim(state, actor, action),
            _ => Err("the Mahjong table is not accepting actions".into()),
        }
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> Hooked<Value> {
        let Value::Object(s) = state else {
            return Err("the table state is not an object".into());
        };
        let pk = member_pk(viewer)?;
        let deck_map = s.get("deck").and_then(Value::as_object).ok_or("'deck'")?;
        let d = deck::private_view(deck_map, &pk, &[])?;
        let mut rivers = Map::with_capacity(4);
        for (k, ids) in obj(s, "rivers").iter() {
            let tiles: Vec<Value> = ids
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|id| Value::Object(card(s, id)))
                .collect();
            rivers.insert(k, Value::Array(tiles));
        }
        let field = |k: &str| s.get(k).cloned().ok_or_else(|| format!("'{k}'"));
        let responses = obj(s, "claim_responses");
        let eligible = strings_of(s.get("claim_eligible"));
        let seat = viewer.get("seat").cloned().ok_or("'seat'")?;
        let you = obj! {
            "public_key" => pk.as_str(),
            "seat" => seat.clone(),
            "wind" => wind(py_int_of(&seat)?)?,
            "may_claim" => eligible.contains(&pk),
        };
        let deck_field = |k: &str| d.get(k).cloned().unwrap_or(Value::Null);
        Ok(Value::Object(obj! {
            "phase" => field("phase")?,
            "hand_number" => field("hand_number")?,
            "restart_count" => field("restart_count")?,
            "recovery_notice" => field("recovery_notice")?,
            "turn_order" => field("turn_order")?,
            "players" => field("players")?,
            "dealer" => field("dealer")?,
            "current_player" => field("current_player")?,
            "wall_count" => deck_field("draw_count"),
            "hand_counts" => deck_field("hand_counts"),
            "my_hand" => deck_field("my_hand"),
            "rivers" => Value::Object(rivers),
            "melds" => field("meld_groups")?,
            "last_discard" => field("last_discard")?,
            "claim_response_count" => responses.len(),
            "claim_required_count" => eligible.len(),
            "my_claim" => responses.get(&pk).cloned().unwrap_or(Value::Null),
            "scores" => field("scores")?,
            "last_result" => field("last_result")?,
            "you" => Value::Object(you),
        }))
    }

    fn recovery_snapshot(&mut self, state: &Value) -> Hooked<Value> {
        let mut out = Map::with_capacity(4);
        for k in ["hand_number", "dealer_index", "restart_count", "scores"] {
            let v = state.get(k).ok_or_else(|| format!("'{k}'"))?;
            out.insert(k, v.clone());
        }
        Ok(Value::Object(out))
    }

    fn restore(&mut self, checkpoint: Value, members: &[Value], _epoch: u64) -> Hooked<Value> {
        let active = active_members(members)?;
        let Value::Object(cp) = &checkpoint else {
            return Err(no_get(&checkpoint));
        };
        let empty = Value::Object(Map::new());
        let saved = cp.get("scores").unwrap_or(&empty);
        let Value::Object(saved) = saved else {
            return Err(no_get(saved));
        };
        let mut scores = Map::with_capacity(4);
        for m in &active {
            let pk = member_pk(m)?;
            let n = saved.get(&pk).map(py_int_of).transpose()?.unwrap_or(0);
            scores.insert(pk.as_str(), Value::from(n));
        }
        let number = |k: &str, default: i64| {
            cp.get(k)
                .map(py_int_of)
                .transpose()
                .map(|n| n.unwrap_or(default))
        };
        let numbers = HandNumbers {
            hand_number: number("hand_number", 1)?,
            dealer_index: number("dealer_index", 0)?,
            restart_count: number("restart_count", 0)?
                .checked_add(1)
                .ok_or("integer out of range")?,
        };
        let notice = "The interrupted hidden wall was discarded after a Leader change.";
        self.new_hand(&active, scores, numbers, notice)
            .map(Value::Object)
    }

    fn on_leader_changed(&mut self, state: Value, old: &str, new: &str) -> Hooked<Value> {
        super::leader_changed(
            state,
            (old, new),
            "the private hand was restarted",
            "mahjong_hand_restarted_after_leader_change",
            "hand_number",
        )
    }
}

impl Table for Mahjong {
    fn legal_actions(&self, view: &Value) -> Vec<Value> {
        bot::legal_actions(view)
    }

    fn bot_action(&self, view: &Value) -> Option<Value> {
        bot::bot_action(view)
    }

    fn is_legal_selection(&self, view: &Value, card_ids: &[String]) -> bool {
        bot::is_legal_selection(view, card_ids)
    }
}

/// The active members in seat order; exactly four.
fn active_members(members: &[Value]) -> Hooked<Vec<Value>> {
    let mut active = Vec::with_capacity(4);
    for m in members {
        if m.get_str("status") == Some("active") {
            let seat = m.get("seat").ok_or("'seat'")?;
            active.push((py_int_of(seat)?, m.clone()));
        }
    }
    active.sort_by_key(|(seat, _)| *seat);
    if active.len() != 4 {
        return Err(FOUR_SEATS.into());
    }
    Ok(active.into_iter().map(|(_, m)| m).collect())
}

/// The winning shape of concealed tiles with `melds` declared melds, with
/// the reference's refusals of impossible hands.
fn win_shape(concealed: &[Map], melds: usize) -> Hooked<Option<&'static str>> {
    if melds > 4 {
        return Err("meld_count must be between zero and four".into());
    }
    let counts = tiles::counts_of(concealed).ok_or("tile code is invalid")?;
    if concealed.len() == 3 * (4 - melds) + 2 && counts.iter().any(|n| *n > 4) {
        return Err("a Mahjong face cannot appear more than four times".into());
    }
    Ok(tiles::win_kind(&counts, melds))
}

/// Python's `int()` of a JSON value, with Python's refusal texts.
fn py_int_of(v: &Value) -> Hooked<i64> {
    match v {
        Value::Null | Value::Array(_) | Value::Object(_) => Err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            py_type(v)
        )),
        _ => py_int(v),
    }
}

/// The wind of a seat (Python's tuple index: -4..=3).
fn wind(seat: i64) -> Hooked<&'static str> {
    let i = if seat < 0 { seat + 4 } else { seat };
    usize::try_from(i)
        .ok()
        .and_then(|i| WINDS.get(i).copied())
        .ok_or_else(|| "tuple index out of range".into())
}

/// The action as an object, or Python's AttributeError text for `.get`.
fn as_action(action: &Value) -> Hooked<&Map> {
    action.as_object().ok_or_else(|| no_get(action))
}

fn no_get(v: &Value) -> HookFailure {
    format!("'{}' object has no attribute 'get'", py_type(v))
}

/// Python's type name of a JSON value.
fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(Number::Float(_)) => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// The `expected` distinct tiles `card_ids` names in `pk`'s hand: their ids
/// and faces, or the reference's refusal.
fn hand_cards(
    state: &Map,
    pk: &str,
    card_ids: Option<&Value>,
    expected: usize,
) -> Hooked<(Vec<String>, Vec<Map>)> {
    let bad = || format!("card_ids must contain {expected} unique tile ids");
    let Some(Value::Array(items)) = card_ids else {
        return Err(bad());
    };
    if items.len() != expected {
        return Err(bad());
    }
    // Python builds a set of them first: a list or an object is unhashable.
    if let Some(v) = items
        .iter()
        .find(|v| matches!(v, Value::Array(_) | Value::Object(_)))
    {
        return Err(format!("unhashable type: '{}'", py_type(v)));
    }
    let ids: Vec<String> = items
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    if (1..ids.len()).any(|i| ids[..i].contains(&ids[i])) {
        return Err(bad());
    }
    let hand = hand_ids(state, pk);
    if ids.iter().any(|id| !hand.contains(id)) {
        return Err("a selected tile is not in this Member's hand".into());
    }
    let cards = ids.iter().map(|id| card(state, id)).collect();
    Ok((ids, cards))
}

fn deck_of(state: &Map) -> Option<&Map> {
    state.get("deck").and_then(Value::as_object)
}

fn deck_mut(state: &mut Map) -> Hooked<&mut Map> {
    obj_mut(state, "deck")
}

fn obj_mut<'a>(state: &'a mut Map, key: &str) -> Hooked<&'a mut Map> {
    state
        .get_mut(key)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| format!("'{key}'"))
}

/// A copy of one tile of the catalog (empty when unknown).
fn card(state: &Map, id: &str) -> Map {
    deck_of(state)
        .and_then(|d| deck::card(d, id))
        .unwrap_or_default()
}

fn hand_ids(state: &Map, pk: &str) -> Vec<String> {
    deck_of(state)
        .map(|d| deck::hand(d, pk))
        .unwrap_or_default()
}

fn hand_faces(state: &Map, pk: &str) -> Vec<Map> {
    hand_ids(state, pk)
        .iter()
        .map(|id| card(state, id))
        .collect()
}

fn wall_count(state: &Map) -> usize {
    deck_of(state)
        .and_then(|d| d.get("draw_pile"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The meld groups of `pk`.
fn meld_groups(state: &Map, pk: &str) -> Vec<Map> {
    state
        .get("meld_groups")
        .and_then(|g| g.get(pk))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|g| g.as_object().cloned()).collect())
        .unwrap_or_default()
}

/// Appends `v` to the list of `pk` in the state's object `key`.
fn push(state: &mut Map, key: &str, pk: &str, v: Value) -> Hooked<()> {
    match obj_mut(state, key)?.get_mut(pk) {
        Some(Value::Array(a)) => {
            a.push(v);
            Ok(())
        }
        _ => Err(format!("'{pk}'")),
    }
}

/// The `mahjong_meld` event of a group (whose own kind it carries, as the
/// reference's event does).
fn meld_event(group: Map) -> Value {
    let mut event = obj! { "kind" => "mahjong_meld" };
    for (k, v) in group.iter() {
        event.insert(k, v.clone());
    }
    Value::Object(event)
}

fn order(state: &Map) -> Vec<String> {
    strings_of(state.get("turn_order"))
}

/// The seat after `pk` in turn order.
fn next_key(order: &[String], pk: &str) -> String {
    let i = order.iter().position(|k| k == pk).unwrap_or(0);
    order
        .get((i + 1) % order.len().max(1))
        .cloned()
        .unwrap_or_default()
}

fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::from(s.as_str())).collect())
}

fn strings_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
