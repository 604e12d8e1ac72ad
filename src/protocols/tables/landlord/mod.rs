//! four-player-landlord-v1: two decks with jokers (108 cards), 25 to each of
//! four seats and 8 in the bottom; one bidding round (0–3, a 3 ends it; all
//! passing redeals), the highest bidder becomes the landlord, takes the
//! bottom and leads; then climbing play of the combinations below, a bomb
//! (four or more of one value) beating any plain play and a joker bomb (two
//! or more jokers) beating any bomb. The first to empty its hand ends the
//! round: the landlord wins 3 × base from the farmers' 1 × base each, or
//! pays it; base is the bid (at least 1) doubled for every bomb played.
//!
//! The rules, events, refusal texts and state shape are those of the
//! reference's hooks.py of this protocol (bbc0d989…), checked line by line
//! by tests/tables_hooks.rs.

mod combo;

use super::{Table, deck, hook_result, member_pk, member_seat, new_seed, py_int};
use super::{int, obj, text};
use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Value};
use crate::obj;
use combo::value_of;
pub use combo::{Combination, beats, candidates, classify};

type Hooked<T> = Result<T, HookFailure>;

/// `proto_host_metadata` of four-player-landlord-v1.
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        display_name: "Four-player Landlord".into(),
        tags: "game,cards,multiplayer,landlord".into(),
        invite_type: "supply".into(),
        default_options: Map::new(),
    }
}

/// The rules of four-player-landlord-v1.
#[derive(Debug, Clone, Default)]
pub struct Landlord {
    options: Map,
}

impl Landlord {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }

    fn new_round(
        &self,
        members: &[Value],
        scores: Map,
        round_number: i64,
        restart_count: i64,
        notice: &str,
    ) -> Hooked<Map> {
        let mut active: Vec<&Value> = members
            .iter()
            .filter(|m| m.get_str("status") == Some("active"))
            .collect();
        active.sort_by_key(|m| m.get("seat").and_then(Value::as_i64).unwrap_or(0));
        if active.len() != 4 {
            return Err("Four-player Landlord requires exactly four active Members".into());
        }
        let seed = new_seed(&self.options, round_number, restart_count);
        let active_owned: Vec<Value> = active.iter().map(|m| (*m).clone()).collect();
        let deck = deck::create(&faces(), &active_owned, 25, &seed, 2)?;
        let order: Vec<Value> = active
            .iter()
            .map(|m| Value::from(m.get_str("public_key").unwrap_or_default()))
            .collect();
        let mut players = Map::with_capacity(4);
        for m in &active {
            players.insert(
                m.get_str("public_key").unwrap_or_default(),
                Value::Object(obj! {
                    "seat" => m.get("seat").cloned().unwrap_or(Value::Null), "role" => "unassigned",
                }),
            );
        }
        Ok(obj! {
            "phase" => "bidding",
            "round_number" => round_number,
            "restart_count" => restart_count,
            "recovery_notice" => notice,
            "players" => Value::Object(players),
            "turn_order" => Value::Array(order.clone()),
            "current_player" => order[0].clone(),
            "bids" => Value::Object(Map::new()),
            "highest_bid" => 0,
            "highest_bidder" => "",
            "landlord" => "",
            "bottom_revealed" => Value::Array(Vec::new()),
            "last_play" => Value::Null,
            "passes" => 0,
            "bombs" => 0,
            "scores" => Value::Object(scores),
            "deck" => Value::Object(deck),
        })
    }

    fn bid(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        if action.get_str("kind") != Some("bid") {
            return Err("bidding accepts only a bid action".into());
        }
        let value = match action.get("value") {
            Some(v @ Value::Number(_)) if v.is_integer() => {
                v.as_i64().filter(|n| (0..=3).contains(n))
            }
            _ => None,
        }
        .ok_or("bid value must be 0, 1, 2, or 3")?;
        let pk = member_pk(actor)?;
        let bids = obj_mut(&mut state, "bids")?;
        if bids.contains_key(&pk) {
            return Err("this Member has already bid".into());
        }
        bids.insert(pk.as_str(), Value::from(value));
        let bid_count = bids.len();
        if value > int(&state, "highest_bid") {
            state.insert("highest_bid", Value::from(value));
            state.insert("highest_bidder", Value::from(pk.as_str()));
        }
        let mut events = vec![Value::Object(obj! {
            "kind" => "bid", "public_key" => pk.as_str(), "seat" => member_seat(actor), "value" => value,
        })];
        let done = value == 3 || bid_count == order(&state).len();
        if done && text(&state, "highest_bidder").is_empty() {
            let members: Vec<Value> = obj(&state, "players")
                .iter()
                .map(|(k, p)| {
                    Value::Object(obj! {
                        "public_key" => k, "seat" => p.get("seat").cloned().unwrap_or(Value::Null), "status" => "active",
                    })
                })
                .collect();
            let scores = obj(&state, "scores");
            let replacement = self.new_round(
                &members,
                scores,
                int(&state, "round_number") + 1,
                int(&state, "restart_count"),
                "All Members passed; the authority redealt.",
            )?;
            events.push(Value::Object(obj! {
                "kind" => "all_passed_redeal", "round_number" => int(&replacement, "round_number"),
            }));
            return Ok(hook_result(replacement, events));
        }
        if done {
            let landlord = text(&state, "highest_bidder");
            let deck = obj_mut(&mut state, "deck")?;
            let bottom_count = deck
                .get("draw_pile")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let bottom = deck::draw(deck, &landlord, bottom_count)?;
            state.insert("bottom_revealed", Value::Array(bottom.clone()));
            state.insert("landlord", Value::from(landlord.as_str()));
            let players = obj_mut(&mut state, "players")?;
            let keys: Vec<String> = players.keys().map(str::to_owned).collect();
            for k in keys {
                if let Some(Value::Object(p)) = players.get_mut(&k) {
                    p.insert(
                        "role",
                        Value::from(if k == landlord { "landlord" } else { "farmer" }),
                    );
                }
            }
            state.insert("phase", Value::from("playing"));
            state.insert("current_player", Value::from(landlord.as_str()));
            events.push(Value::Object(obj! {
                "kind" => "landlord_selected", "public_key" => landlord.as_str(),
                "bid" => state.get("highest_bid").cloned().unwrap_or(Value::Null), "bottom" => Value::Array(bottom),
            }));
        } else {
            let next = next_unbid(&state, &pk);
            state.insert("current_player", Value::from(next));
        }
        Ok(hook_result(state, events))
    }

    fn play(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        let pk = member_pk(actor)?;
        match action.get_str("kind") {
            Some("pass") => {
                let last = state.get("last_play").cloned().unwrap_or(Value::Null);
                if last.is_null() {
                    return Err("the trick leader cannot pass".into());
                }
                if last.get_str("public_key") == Some(pk.as_str()) {
                    return Err("the last player cannot pass to itself".into());
                }
                let passes = int(&state, "passes") + 1;
                state.insert("passes", Value::from(passes));
                let mut events = vec![Value::Object(
                    obj! { "kind" => "pass", "public_key" => pk.as_str() },
                )];
                if passes >= order(&state).len() as i64 - 1 {
                    let winner = last.get_str("public_key").unwrap_or_default().to_owned();
                    state.insert("last_play", Value::Null);
                    state.insert("passes", Value::from(0));
                    state.insert("current_player", Value::from(winner.as_str()));
                    events.push(Value::Object(
                        obj! { "kind" => "trick_reset", "public_key" => winner },
                    ));
                } else {
                    let next = next_player(&state, &pk);
                    state.insert("current_player", Value::from(next));
                }
                return Ok(hook_result(state, events));
            }
            Some("play") => {}
            _ => return Err("playing accepts play or pass".into()),
        }
        let ids = card_ids(action.get("card_ids"))?;
        let empty = Map::new();
        let deck_map = state
            .get("deck")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let hand = deck::hand(deck_map, &pk);
        if ids.iter().any(|id| !hand.contains(id)) {
            return Err("a selected card is not in this Member's hand".into());
        }
        let faces: Vec<Map> = ids
            .iter()
            .map(|id| deck::card(deck_map, id).unwrap_or_default())
            .collect();
        let combination = classify(&faces)?;
        let previous = state.get("last_play").cloned().unwrap_or(Value::Null);
        if let Some(prev) = previous.get("combination").and_then(Value::as_object)
            && !beats(&combination, &Combination::from_map(prev))
        {
            return Err("the selected cards do not beat the previous play".into());
        }
        {
            let deck = obj_mut(&mut state, "deck")?;
            deck::take_from_hand(deck, &pk, &ids)?;
            deck::discard(deck, &ids)?;
        }
        if combination.tier > 0 {
            let bombs = int(&state, "bombs") + 1;
            state.insert("bombs", Value::from(bombs));
        }
        let public_play = obj! {
            "public_key" => pk.as_str(), "seat" => member_seat(actor),
            "cards" => Value::Array(faces.into_iter().map(Value::Object).collect()),
            "combination" => Value::Object(combination.to_map()),
        };
        state.insert("last_play", Value::Object(public_play.clone()));
        state.insert("passes", Value::from(0));
        let mut event = obj! { "kind" => "play" };
        for (k, v) in public_play.iter() {
            event.insert(k, v.clone());
        }
        let mut events = vec![Value::Object(event)];
        let emptied = state
            .get("deck")
            .and_then(Value::as_object)
            .is_none_or(|d| deck::hand(d, &pk).is_empty());
        if emptied {
            let (outcome, delta) = score_round(&state, &pk);
            state.insert("phase", Value::from("completed"));
            let scores = obj_mut(&mut state, "scores")?;
            for (k, amount) in delta.iter() {
                let now = scores.get(k).and_then(Value::as_i64).unwrap_or(0);
                scores.insert(k, Value::from(now + amount.as_i64().unwrap_or(0)));
            }
            events.push(Value::Object(obj! {
                "kind" => "game_over", "outcome" => outcome, "winner" => pk.as_str(), "score_delta" => Value::Object(delta),
            }));
            let mut out =
                obj! { "state" => Value::Object(state), "events" => Value::Array(events) };
            out.insert("completed", Value::Bool(true));
            out.insert("outcome", Value::from(outcome));
            return Ok(Value::Object(out));
        }
        let next = next_player(&state, &pk);
        state.insert("current_player", Value::from(next));
        Ok(hook_result(state, events))
    }
}

impl GroupHooks for Landlord {
    fn initial_state(&mut self, members: &[Value]) -> Hooked<Value> {
        let mut scores = Map::with_capacity(members.len());
        for m in members {
            scores.insert(member_pk(m)?.as_str(), Value::from(0));
        }
        self.new_round(members, scores, 1, 0, "").map(Value::Object)
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
        if text(&state, "phase") == "completed" {
            return Err("the round is complete".into());
        }
        if member_pk(actor)? != text(&state, "current_player") {
            return Err("it is not this Member's turn".into());
        }
        match text(&state, "phase").as_str() {
            "bidding" => self.bid(state, actor, action),
            "playing" => self.play(state, actor, action),
            _ => Err("the table is not accepting actions".into()),
        }
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> Hooked<Value> {
        let state = state
            .as_object()
            .ok_or("the table state is not an object")?;
        let pk = member_pk(viewer)?;
        let empty = Map::new();
        let deck_map = state
            .get("deck")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let dv = deck::private_view(deck_map, &pk, &[])?;
        let mut v = Map::with_capacity(24);
        for k in [
            "phase",
            "round_number",
            "restart_count",
            "recovery_notice",
            "players",
            "turn_order",
            "current_player",
            "bids",
            "highest_bid",
            "highest_bidder",
            "landlord",
            "bottom_revealed",
            "last_play",
            "passes",
            "bombs",
            "scores",
        ] {
            v.insert(k, state.get(k).cloned().unwrap_or(Value::Null));
        }
        for k in ["hand_counts", "my_hand", "discard"] {
            v.insert(k, dv.get(k).cloned().unwrap_or(Value::Null));
        }
        v.insert(
            "you",
            Value::Object(obj! {
                "public_key" => pk.as_str(), "seat" => member_seat(viewer),
                "is_landlord" => pk == text(state, "landlord"),
            }),
        );
        Ok(Value::Object(v))
    }

    fn recovery_snapshot(&mut self, state: &Value) -> Hooked<Value> {
        Ok(Value::Object(obj! {
            "round_number" => state.get("round_number").cloned().unwrap_or(Value::Null),
            "restart_count" => state.get("restart_count").cloned().unwrap_or(Value::Null),
            "scores" => state.get("scores").cloned().unwrap_or(Value::Null),
        }))
    }

    fn restore(&mut self, checkpoint: Value, members: &[Value], _epoch: u64) -> Hooked<Value> {
        let old = checkpoint
            .get("scores")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut scores = Map::with_capacity(members.len());
        for m in members {
            let pk = member_pk(m)?;
            let s = old.get(&pk).map(py_int).transpose()?.unwrap_or(0);
            scores.insert(pk.as_str(), Value::from(s));
        }
        let round = checkpoint
            .get("round_number")
            .map(py_int)
            .transpose()?
            .unwrap_or(1);
        let restarts = checkpoint
            .get("restart_count")
            .map(py_int)
            .transpose()?
            .unwrap_or(0);
        self.new_round(
            members,
            scores,
            round + 1,
            restarts + 1,
            "The previous private deal was discarded after a Leader change.",
        )
        .map(Value::Object)
    }

    fn on_leader_changed(&mut self, state: Value, old: &str, new: &str) -> Hooked<Value> {
        super::leader_changed(
            state,
            (old, new),
            "the private deal was restarted",
            "round_restarted_after_leader_change",
            "round_number",
        )
    }
}

impl Table for Landlord {
    fn legal_actions(&self, view: &Value) -> Vec<Value> {
        let Some(me) = view.get("you").and_then(|y| y.get_str("public_key")) else {
            return Vec::new();
        };
        if view.get_str("current_player") != Some(me) {
            return Vec::new();
        }
        match view.get_str("phase") {
            Some("bidding") => {
                let high = view.get("highest_bid").and_then(Value::as_i64).unwrap_or(0);
                // Any value 0–3 is accepted; only 0 and the ones above the
                // highest bid change anything.
                std::iter::once(0)
                    .chain((high + 1)..=3)
                    .map(|v| Value::Object(obj! { "kind" => "bid", "value" => v }))
                    .collect()
            }
            Some("playing") => {
                let hand = hand_cards(view);
                let last = view
                    .get("last_play")
                    .and_then(|l| l.get("combination"))
                    .and_then(Value::as_object);
                let prev = last.map(Combination::from_map);
                let mut out: Vec<Value> = candidates(&hand)
                    .into_iter()
                    .filter(|(c, _)| prev.as_ref().is_none_or(|p| beats(c, p)))
                    .map(|(_, ids)| play_action(ids))
                    .collect();
                let last_pk = view.get("last_play").and_then(|l| l.get_str("public_key"));
                if last.is_some() && last_pk != Some(me) {
                    out.push(Value::Object(obj! { "kind" => "pass" }));
                }
                out
            }
            _ => Vec::new(),
        }
    }

    fn bot_action(&self, view: &Value) -> Option<Value> {
        let me = view.get("you")?.get_str("public_key")?;
        if view.get_str("current_player") != Some(me) {
            return None;
        }
        match view.get_str("phase")? {
            "bidding" => {
                let hand = hand_cards(view);
                let strength = hand_strength(&hand);
                let high = view.get("highest_bid").and_then(Value::as_i64).unwrap_or(0);
                let want = match strength {
                    s if s >= 24 => 3,
                    s if s >= 18 => 2,
                    s if s >= 13 => 1,
                    _ => 0,
                };
                let value = if want > high { want } else { 0 };
                Some(Value::Object(obj! { "kind" => "bid", "value" => value }))
            }
            "playing" => {
                let hand = hand_cards(view);
                let last = view
                    .get("last_play")
                    .and_then(|l| l.get("combination"))
                    .and_then(Value::as_object);
                let Some(prev) = last.map(Combination::from_map) else {
                    // Leading: shed the longest low run first, else the lowest group.
                    let mut all = candidates(&hand);
                    all.retain(|(c, _)| c.tier == 0);
                    all.sort_by_key(|(c, ids)| (c.primary, std::cmp::Reverse(ids.len())));
                    return all.into_iter().next().map(|(_, ids)| play_action(ids));
                };
                let partner_led = view
                    .get("last_play")
                    .and_then(|l| l.get_str("public_key"))
                    .is_some_and(|p| {
                        let landlord = view.get_str("landlord").unwrap_or_default();
                        p != me && p != landlord && me != landlord
                    });
                let mut beating: Vec<(Combination, Vec<String>)> = candidates(&hand)
                    .into_iter()
                    .filter(|(c, _)| beats(c, &prev))
                    .collect();
                // The smallest that beats it: plain plays before bombs.
                beating.sort_by_key(|(c, ids)| (c.tier, ids.len(), c.primary));
                match beating.into_iter().next() {
                    Some((c, _)) if partner_led && c.tier == 0 && c.primary > 11 => {
                        Some(Value::Object(obj! { "kind" => "pass" }))
                    }
                    Some((c, _)) if partner_led && c.tier > 0 => {
                        Some(Value::Object(obj! { "kind" => "pass" }))
                    }
                    Some((_, ids)) => Some(play_action(ids)),
                    None => Some(Value::Object(obj! { "kind" => "pass" })),
                }
            }
            _ => None,
        }
    }

    fn is_legal_selection(&self, view: &Value, ids: &[String]) -> bool {
        let hand = hand_cards(view);
        let picked: Vec<Map> = ids
            .iter()
            .filter_map(|id| {
                hand.iter()
                    .find(|c| c.get_str("card_id") == Some(id))
                    .cloned()
            })
            .collect();
        if picked.len() != ids.len() || picked.is_empty() {
            return false;
        }
        let Ok(c) = classify(&picked) else {
            return false;
        };
        match view
            .get("last_play")
            .and_then(|l| l.get("combination"))
            .and_then(Value::as_object)
        {
            Some(prev) => beats(&c, &Combination::from_map(prev)),
            None => true,
        }
    }
}

fn play_action(ids: Vec<String>) -> Value {
    Value::Object(obj! {
        "kind" => "play", "card_ids" => Value::Array(ids.into_iter().map(Value::from).collect()),
    })
}

/// The cards of `my_hand` in a view.
fn hand_cards(view: &Value) -> Vec<Map> {
    view.get("my_hand")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|c| c.as_object().cloned()).collect())
        .unwrap_or_default()
}

/// A rough bidding strength: high cards, jokers and bombs.
fn hand_strength(hand: &[Map]) -> i64 {
    let mut counts = std::collections::BTreeMap::<i64, i64>::new();
    for c in hand {
        *counts.entry(value_of(c)).or_default() += 1;
    }
    let mut s = 0;
    for (&v, &n) in &counts {
        s += match v {
            17 => 4 * n,
            16 => 3 * n,
            15 => 2 * n,
            14 => n,
            _ => 0,
        };
        if n >= 4 {
            s += 3 * (n - 3);
        }
    }
    s
}

fn score_round(state: &Map, winner: &str) -> (&'static str, Map) {
    let bid = int(state, "highest_bid").max(1);
    let bombs = int(state, "bombs").clamp(0, 62) as u32;
    let base = bid.saturating_mul(2i64.saturating_pow(bombs));
    let landlord = text(state, "landlord");
    let landlord_won = winner == landlord;
    let mut delta = Map::with_capacity(4);
    for pk in order(state) {
        let d = if pk == landlord {
            if landlord_won { 3 * base } else { -3 * base }
        } else if landlord_won {
            -base
        } else {
            base
        };
        delta.insert(pk.as_str(), Value::from(d));
    }
    (if landlord_won { "landlord" } else { "farmers" }, delta)
}

fn next_player(state: &Map, pk: &str) -> String {
    let order = order(state);
    let i = order.iter().position(|p| p == pk).unwrap_or(0);
    order
        .get((i + 1) % order.len().max(1))
        .cloned()
        .unwrap_or_default()
}

fn next_unbid(state: &Map, pk: &str) -> String {
    let bids = obj(state, "bids");
    let mut candidate = next_player(state, pk);
    for _ in 0..order(state).len() {
        if !bids.contains_key(&candidate) {
            break;
        }
        candidate = next_player(state, &candidate);
    }
    candidate
}

fn card_ids(v: Option<&Value>) -> Hooked<Vec<String>> {
    let bad = || HookFailure::from("card_ids must be a non-empty unique array");
    let a = v.and_then(Value::as_array).ok_or_else(bad)?;
    if a.is_empty() || a.len() > 20 {
        return Err(bad());
    }
    let ids: Vec<String> = a
        .iter()
        .map(|x| x.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    if unique.len() != ids.len() {
        return Err(bad());
    }
    Ok(ids)
}

fn order(state: &Map) -> Vec<String> {
    state
        .get("turn_order")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn obj_mut<'a>(state: &'a mut Map, key: &str) -> Hooked<&'a mut Map> {
    state
        .get_mut(key)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| format!("the table state has no {key}"))
}

/// The 54 faces of one deck, in the reference's order.
fn faces() -> Vec<Map> {
    let ranks = [
        ("3", 3),
        ("4", 4),
        ("5", 5),
        ("6", 6),
        ("7", 7),
        ("8", 8),
        ("9", 9),
        ("10", 10),
        ("J", 11),
        ("Q", 12),
        ("K", 13),
        ("A", 14),
        ("2", 15),
    ];
    let mut out = Vec::with_capacity(54);
    for suit in ["clubs", "diamonds", "hearts", "spades"] {
        for (rank, value) in ranks {
            out.push(obj! { "rank" => rank, "value" => value, "suit" => suit });
        }
    }
    out.push(obj! { "rank" => "Black Joker", "value" => 16, "suit" => "joker" });
    out.push(obj! { "rank" => "Red Joker", "value" => 17, "suit" => "joker" });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cards(values: &[i64]) -> Vec<Map> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let suit = if *v >= 16 { "joker" } else { "clubs" };
                obj! { "value" => *v, "suit" => suit, "card_id" => format!("c{i}") }
            })
            .collect()
    }

    #[test]
    fn combinations_classify_as_the_reference_does() {
        let k = |v: &[i64]| classify(&cards(v)).map(|c| c.kind);
        assert_eq!(k(&[5]).unwrap(), "single");
        assert_eq!(k(&[5, 5]).unwrap(), "pair");
        assert_eq!(k(&[16, 17]).unwrap(), "joker_bomb");
        assert_eq!(k(&[9, 9, 9, 9]).unwrap(), "bomb");
        assert_eq!(k(&[9, 9, 9, 4]).unwrap(), "triple_single");
        assert_eq!(k(&[3, 4, 5, 6, 7]).unwrap(), "straight");
        assert!(k(&[11, 12, 13, 14, 15]).is_err());
        assert_eq!(k(&[3, 3, 4, 4, 5, 5]).unwrap(), "pair_straight");
        assert_eq!(k(&[3, 3, 3, 4, 4, 4]).unwrap(), "airplane");
        assert_eq!(k(&[3, 3, 3, 4, 4, 4, 7, 9]).unwrap(), "airplane_single");
        assert_eq!(k(&[8, 8, 8, 8, 3, 5]).unwrap(), "four_two_single");
        let bomb = classify(&cards(&[9, 9, 9, 9])).unwrap();
        let five = classify(&cards(&[3, 3, 3, 3, 3])).unwrap();
        assert!(beats(&five, &bomb));
        assert!(!beats(
            &classify(&cards(&[6])).unwrap(),
            &classify(&cards(&[6])).unwrap()
        ));
    }

    #[test]
    fn every_candidate_is_a_legal_play() {
        let hand = cards(&[3, 3, 3, 4, 4, 4, 5, 5, 6, 7, 8, 9, 9, 9, 9, 16, 17]);
        let all = candidates(&hand);
        assert!(all.iter().any(|(c, _)| c.kind == "airplane"));
        assert!(all.iter().any(|(c, _)| c.kind == "straight"));
        assert!(all.iter().any(|(c, _)| c.kind == "joker_bomb"));
        for (c, ids) in all {
            let faces: Vec<Map> = ids
                .iter()
                .map(|id| {
                    hand.iter()
                        .find(|h| h.get_str("card_id") == Some(id))
                        .unwrap()
                        .clone()
                })
                .collect();
            assert_eq!(classify(&faces).unwrap(), c);
        }
    }
}
