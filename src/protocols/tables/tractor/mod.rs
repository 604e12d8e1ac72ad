//! upgrade-tractor-v1 (Upgrade, or Tractor): four fixed seats in two
//! partnerships by seat parity (team0: even seats), two decks with jokers
//! (108 cards), 25 to each seat and 8 left as the kitty. A hand runs:
//!
//! 1. **declaration**: every seat, in any order, passes or declares once
//!    with one level card (strength 1), a pair of one level card (2), a
//!    small-joker pair (3, no-trump) or a big-joker pair (4, no-trump); a
//!    declaration must be stronger than the one standing. The winner (the
//!    hand's starter when all pass, in no-trump) is the declarer.
//! 2. **bury**: the declarer takes the kitty and buries eight cards, never
//!    the cards it declared with.
//! 3. **playing**: the declarer leads; a lead is a single, a pair, a
//!    tractor or a throw of one class ([`combos`]); followers play as many
//!    cards, under the follow rules; the trick's winner leads the next.
//!    Fives, tens and kings are worth points to the side that takes them.
//!    If the defenders take the last trick, they also score the kitty's
//!    points times twice the last lead's card count.
//!
//! Then levels move: defenders with 80 points or more take control and go
//! up one level, plus one per 40 above 80; below 80 the declarers keep
//! control and go up three (0 points), two (under 40) or one. The match
//! ends when a side reaches `target_level` or after `max_hands` hands.
//!
//! The rules, events, refusal texts and state shape are those of the
//! reference's hooks.py of this protocol (acdf9872…), checked line by line
//! by tests/tables_hooks.rs.

mod bot;
pub mod cards;
pub mod combos;

use super::{deck, hook_result, member_pk, member_seat, new_seed, py_int};
use super::{int, obj, text};
use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Value};
use crate::obj;
use cards::{Ctx, Face};
use combos::Played;

type Hooked<T> = Result<T, HookFailure>;

/// `proto_host_metadata` of upgrade-tractor-v1.
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        display_name: "Upgrade (Tractor)".into(),
        tags: "game,cards,multiplayer,upgrade,tractor,partnership".into(),
        invite_type: "supply".into(),
        default_options: Map::new(),
    }
}

/// The rules of upgrade-tractor-v1.
#[derive(Debug, Clone, Default)]
pub struct Tractor {
    options: Map,
}

/// The two partnerships.
const TEAMS: [&str; 2] = ["team0", "team1"];

/// The partnership of a seat: team0 for even seats.
fn team(seat: i64) -> &'static str {
    TEAMS[seat.rem_euclid(2) as usize]
}

/// The other partnership.
fn other_team(t: &str) -> &'static str {
    if t == "team0" { "team1" } else { "team0" }
}

/// `action.get(key)` as the reference calls it: refused for an action
/// that is no object.
fn field<'a>(action: &'a Value, key: &str) -> Hooked<Option<&'a Value>> {
    match action {
        Value::Object(m) => Ok(m.get(key)),
        other => Err(format!(
            "'{}' object has no attribute 'get'",
            other.py_type_name()
        )),
    }
}

/// A member's seat as Python's `int()` of it.
fn seat_of(member: &Value) -> Hooked<i64> {
    py_int(member.get("seat").ok_or("'seat'")?)
}

fn obj_mut<'a>(state: &'a mut Map, key: &str) -> Hooked<&'a mut Map> {
    state
        .get_mut(key)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| format!("'{key}'"))
}

fn array_mut<'a>(state: &'a mut Map, key: &str) -> Hooked<&'a mut Vec<Value>> {
    match state.get_mut(key) {
        Some(Value::Array(a)) => Ok(a),
        _ => Err(format!("'{key}'")),
    }
}

/// The state's deck.
fn deck_of(state: &Map) -> Hooked<&Map> {
    state
        .get("deck")
        .and_then(Value::as_object)
        .ok_or_else(|| "'deck'".into())
}

/// The public keys of `turn_order`.
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

/// The partnership of a seated public key.
fn team_of(state: &Map, pk: &str) -> Hooked<String> {
    state
        .get("players")
        .and_then(|p| p.get(pk))
        .and_then(|p| p.get("team"))
        .map(Value::py_str)
        .ok_or_else(|| format!("'{pk}'"))
}

/// Adds `amount` to the integer at `team` of the object at `key`.
fn add_points(state: &mut Map, key: &str, team: &str, amount: i64) -> Hooked<()> {
    let m = obj_mut(state, key)?;
    let now = m.get(team).and_then(Value::as_i64).unwrap_or(0);
    m.insert(team, Value::from(now.saturating_add(amount)));
    Ok(())
}

/// A hand's seat: public key and seat number.
type Seat = (String, i64);

/// Where a new hand starts from.
struct HandStart<'a> {
    levels: [i64; 2],
    declarer_team: &'a str,
    starter: &'a str,
    hand_number: i64,
    restart_count: i64,
    match_points: [i64; 2],
    notice: &'a str,
}

/// The selected card ids of an action and their catalog cards, checked as
/// the reference does: a list of `min`–`max` unique strings, all in the
/// actor's hand.
fn hand_cards(
    state: &Map,
    pk: &str,
    ids: Option<&Value>,
    min: usize,
    max: usize,
) -> Hooked<(Vec<String>, Vec<Value>)> {
    let bad = || format!("card_ids must contain {min}-{max} unique ids");
    let list = match ids {
        Some(Value::Array(a)) if (min..=max).contains(&a.len()) => a,
        _ => return Err(bad()),
    };
    // Python builds a set of them first: a list or a dict inside fails.
    if let Some(v) = list
        .iter()
        .find(|v| matches!(v, Value::Array(_) | Value::Object(_)))
    {
        return Err(format!(
            "unhashable type: '{}'",
            if v.as_array().is_some() {
                "list"
            } else {
                "dict"
            }
        ));
    }
    let strings: Vec<String> = list
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let unique: std::collections::HashSet<&String> = strings.iter().collect();
    if unique.len() != strings.len() {
        return Err(bad());
    }
    let deck = deck_of(state)?;
    if deck.get("hands").is_none_or(|h| h.get(pk).is_none()) {
        return Err(format!("'{pk}'"));
    }
    let hand = deck::hand(deck, pk);
    if strings.iter().any(|id| !hand.contains(id)) {
        return Err("a selected card is not in this Member's hand".into());
    }
    let cards = strings
        .iter()
        .map(|id| {
            deck::card(deck, id)
                .map(Value::Object)
                .ok_or_else(|| format!("'{id}'"))
        })
        .collect::<Hooked<Vec<Value>>>()?;
    Ok((strings, cards))
}

/// The faces of every card in `pk`'s hand.
fn hand_faces(state: &Map, pk: &str) -> Hooked<Vec<Face>> {
    let deck = deck_of(state)?;
    deck::hand(deck, pk)
        .iter()
        .map(|id| {
            let card = deck::card(deck, id).ok_or_else(|| format!("'{id}'"))?;
            Face::of(&Value::Object(card))
        })
        .collect()
}

impl Tractor {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }

    fn option_int(&self, name: &str, default: i64, min: i64, max: i64) -> Hooked<i64> {
        super::option_int(&self.options, name, default, min, max)
    }

    fn target_level(&self) -> Hooked<i64> {
        self.option_int("target_level", 14, 3, 14)
    }

    fn max_hands(&self) -> Hooked<i64> {
        self.option_int("max_hands", 16, 1, 64)
    }

    /// The four active members by seat, as (public key, seat).
    fn active(members: &[Value]) -> Hooked<Vec<Seat>> {
        let mut active = Vec::with_capacity(4);
        for m in members
            .iter()
            .filter(|m| m.get_str("status") == Some("active"))
        {
            active.push((member_pk(m)?, seat_of(m)?));
        }
        active.sort_by_key(|(_, seat)| *seat);
        if active.len() != 4 {
            return Err("Upgrade requires exactly four active Members".into());
        }
        Ok(active)
    }

    /// A freshly dealt hand.
    fn new_hand(&self, seats: &[Seat], start: &HandStart) -> Hooked<Map> {
        if seats.len() != 4 {
            return Err("Upgrade requires exactly four active Members".into());
        }
        if !seats.iter().any(|(pk, _)| pk == start.starter) {
            return Err("starter must be an active Member".into());
        }
        let Some(t) = TEAMS.iter().position(|t| *t == start.declarer_team) else {
            return Err("declarer_team is invalid".into());
        };
        let seed = new_seed(&self.options, start.hand_number, start.restart_count);
        let members: Vec<Value> = seats
            .iter()
            .map(|(pk, seat)| {
                Value::Object(
                    obj! { "public_key" => pk.as_str(), "seat" => *seat, "status" => "active" },
                )
            })
            .collect();
        let deck = deck::create(&cards::deck_faces(), &members, 25, &seed, 2)?;
        let mut players = Map::with_capacity(4);
        for (pk, seat) in seats {
            players.insert(
                pk.as_str(),
                Value::Object(obj! { "seat" => *seat, "team" => team(*seat) }),
            );
        }
        let pair = |v: [i64; 2]| Value::Object(obj! { "team0" => v[0], "team1" => v[1] });
        Ok(obj! {
            "phase" => "declaration",
            "hand_number" => start.hand_number,
            "restart_count" => start.restart_count,
            "recovery_notice" => start.notice,
            "players" => Value::Object(players),
            "turn_order" => Value::Array(seats.iter().map(|(pk, _)| Value::from(pk.as_str())).collect()),
            "current_player" => "",
            "starter" => start.starter,
            "declarer" => "",
            "declarer_team" => start.declarer_team,
            "levels" => pair(start.levels),
            "level_rank" => start.levels[t],
            "trump_suit" => Value::Null,
            "declarations" => Value::Object(Map::new()),
            "winning_declaration" => Value::Null,
            "kitty_count" => 8,
            "kitty_revealed" => Value::Array(Vec::new()),
            "current_trick" => Value::Array(Vec::new()),
            "trick_history" => Value::Array(Vec::new()),
            "captured_points" => pair([0, 0]),
            "defender_points" => 0,
            "match_points" => pair(start.match_points),
            "last_result" => Value::Null,
            "deck" => Value::Object(deck),
        })
    }

    fn declare(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        let pk = member_pk(actor)?;
        if obj(&state, "declarations").contains_key(&pk) {
            return Err("this Member has already declared or passed".into());
        }
        let kind = field(action, "kind")?.and_then(Value::as_str);
        let declaration = match kind {
            Some("pass_declare") => obj! {
                "kind" => "pass_declare", "public_key" => pk.as_str(), "seat" => seat_of(actor)?, "strength" => 0,
            },
            Some("declare_trump") => {
                let (ids, cards) = hand_cards(&state, &pk, field(action, "card_ids")?, 1, 2)?;
                let (strength, trump) = declaration_of(&cards, int(&state, "level_rank"))?;
                let mut d = obj! {
                    "kind" => "declare_trump", "public_key" => pk.as_str(), "seat" => seat_of(actor)?,
                    "strength" => strength, "trump_suit" => trump.map_or(Value::Null, Value::from),
                };
                d.insert(
                    "card_ids",
                    Value::Array(ids.into_iter().map(Value::from).collect()),
                );
                d.insert("cards", Value::Array(cards));
                let standing = state
                    .get("winning_declaration")
                    .filter(|w| w.truthy())
                    .map(|w| w.get("strength").map(py_int).unwrap_or(Ok(0)))
                    .transpose()?
                    .unwrap_or(0);
                if strength <= standing {
                    return Err("the declaration must be stronger than the current one".into());
                }
                state.insert("winning_declaration", Value::Object(d.clone()));
                d
            }
            _ => return Err("declaration accepts pass_declare or declare_trump".into()),
        };
        let declarations = obj_mut(&mut state, "declarations")?;
        declarations.insert(pk.as_str(), Value::Object(declaration.clone()));
        let declared = declarations.len();
        // The event is the declaration itself: its own `kind` (pass_declare
        // or declare_trump) stands over upgrade_declaration.
        let mut events = vec![Value::Object(declaration)];
        if declared < 4 {
            return Ok(hook_result(state, events));
        }
        let winning = state
            .get("winning_declaration")
            .filter(|w| w.truthy())
            .cloned();
        let (declarer, trump) = match &winning {
            Some(w) => (
                w.get_str("public_key").unwrap_or_default().to_owned(),
                w.get("trump_suit").cloned().unwrap_or(Value::Null),
            ),
            None => (text(&state, "starter"), Value::Null),
        };
        state.insert("trump_suit", trump.clone());
        state.insert("declarer", Value::from(declarer.as_str()));
        let declarer_team = team_of(&state, &declarer)?;
        state.insert("declarer_team", Value::from(declarer_team.as_str()));
        let deck = obj_mut(&mut state, "deck")?;
        let kitty = deck
            .get("draw_pile")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        deck::draw(deck, &declarer, kitty)?;
        state.insert("phase", Value::from("bury"));
        state.insert("current_player", Value::from(declarer.as_str()));
        events.push(Value::Object(obj! {
            "kind" => "upgrade_declarer_selected", "declarer" => declarer.as_str(),
            "declarer_team" => declarer_team.as_str(), "trump_suit" => trump,
            "level_rank" => state.get("level_rank").cloned().unwrap_or(Value::Null),
        }));
        Ok(hook_result(state, events))
    }

    fn bury(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        if field(action, "kind")?.and_then(Value::as_str) != Some("bury") {
            return Err("the declarer must bury exactly eight cards".into());
        }
        let pk = member_pk(actor)?;
        let (ids, _) = hand_cards(&state, &pk, field(action, "card_ids")?, 8, 8)?;
        if protected_ids(&state).iter().any(|p| ids.contains(p)) {
            return Err("the winning declaration cards cannot be buried".into());
        }
        deck::hand_to_zone(obj_mut(&mut state, "deck")?, &pk, "kitty", "table", &ids)?;
        state.insert("phase", Value::from("playing"));
        state.insert("current_player", Value::from(pk.as_str()));
        let event =
            obj! { "kind" => "upgrade_kitty_buried", "declarer" => pk.as_str(), "count" => 8 };
        Ok(hook_result(state, vec![Value::Object(event)]))
    }

    fn play(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        if field(action, "kind")?.and_then(Value::as_str) != Some("play") {
            return Err("trick play accepts only play".into());
        }
        let pk = member_pk(actor)?;
        let (ids, cards) = hand_cards(&state, &pk, field(action, "card_ids")?, 1, 25)?;
        let faces = cards::faces_of(&cards)?;
        let ctx = Ctx::of_map(&state);
        let lead = state
            .get("current_trick")
            .and_then(Value::as_array)
            .and_then(|t| t.first())
            .map(|p| p.get("shape").cloned().unwrap_or(Value::Null));
        let shape = match &lead {
            Some(lead) => {
                combos::validate_follow(&hand_faces(&state, &pk)?, &faces, lead, &ctx)?;
                combos::safe_shape(&faces, &ctx)
            }
            None => combos::classify(&faces, &ctx)?.to_map(),
        };
        {
            let deck = obj_mut(&mut state, "deck")?;
            deck::take_from_hand(deck, &pk, &ids)?;
            deck::discard(deck, &ids)?;
        }
        let seat = seat_of(actor)?;
        let play = obj! {
            "public_key" => pk.as_str(), "seat" => seat, "team" => team(seat),
            "cards" => Value::Array(cards), "shape" => Value::Object(shape),
        };
        let mut event = obj! { "kind" => "upgrade_play" };
        for (k, v) in play.iter() {
            event.insert(k, v.clone());
        }
        let mut events = vec![Value::Object(event)];
        let trick = array_mut(&mut state, "current_trick")?;
        trick.push(Value::Object(play));
        if trick.len() < 4 {
            let order = order(&state);
            let at = order
                .iter()
                .position(|p| *p == pk)
                .ok_or_else(|| format!("'{pk}' is not in list"))?;
            let next = order[(at + 1) % order.len()].clone();
            state.insert("current_player", Value::from(next));
            return Ok(hook_result(state, events));
        }
        let trick = std::mem::take(trick);
        let played = trick
            .iter()
            .map(Played::of)
            .collect::<Result<Vec<Played>, String>>()?;
        let winner_at = combos::trick_winner(&played, &ctx);
        let winner = trick[winner_at]
            .get_str("public_key")
            .unwrap_or_default()
            .to_owned();
        let winning_team = team_of(&state, &winner)?;
        let points: i64 = played
            .iter()
            .flat_map(|p| p.faces.iter())
            .map(|f| f.points())
            .sum();
        add_points(&mut state, "captured_points", &winning_team, points)?;
        if winning_team != text(&state, "declarer_team") {
            let dp = int(&state, "defender_points");
            state.insert("defender_points", Value::from(dp + points));
        }
        let lead_count = trick[0]
            .get("shape")
            .and_then(|s| s.get("count"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let history = array_mut(&mut state, "trick_history")?;
        let number = history.len() + 1;
        history.push(Value::Object(obj! {
            "number" => number, "winner" => winner.as_str(), "team" => winning_team.as_str(),
            "points" => points, "plays" => Value::Array(trick),
        }));
        events.push(Value::Object(obj! {
            "kind" => "upgrade_trick_won", "winner" => winner.as_str(), "team" => winning_team.as_str(),
            "points" => points, "trick_number" => number,
        }));
        let deck = deck_of(&state)?;
        if order(&state).iter().all(|k| deck::hand(deck, k).is_empty()) {
            return self.finish_hand(state, &winner, lead_count, events);
        }
        state.insert("current_player", Value::from(winner.as_str()));
        Ok(hook_result(state, events))
    }

    /// The kitty goes to the last trick's side (if it defends), levels
    /// move, and the match ends or the next hand is dealt.
    fn finish_hand(
        &self,
        mut state: Map,
        last_winner: &str,
        lead_count: i64,
        mut events: Vec<Value>,
    ) -> Hooked<Value> {
        let deck = deck_of(&state)?;
        let kitty: Vec<Value> = deck
            .get("zones")
            .and_then(|z| z.get("kitty"))
            .and_then(|k| k.get("table"))
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| deck::card(deck, id.as_str()?).map(Value::Object))
                    .collect()
            })
            .unwrap_or_default();
        let kitty_points: i64 = cards::faces_of(&kitty)?.iter().map(|f| f.points()).sum();
        state.insert("kitty_revealed", Value::Array(kitty));
        let last_team = team_of(&state, last_winner)?;
        let declarer_team = text(&state, "declarer_team");
        let multiplier = 2 * lead_count;
        let mut award = 0;
        if last_team != declarer_team {
            award = kitty_points * multiplier;
            add_points(&mut state, "captured_points", &last_team, award)?;
            let dp = int(&state, "defender_points");
            state.insert("defender_points", Value::from(dp + award));
        }
        let defender_points = int(&state, "defender_points");
        let (control, steps) = if defender_points >= 80 {
            (
                other_team(&declarer_team),
                1 + (defender_points - 80).div_euclid(40),
            )
        } else {
            let steps = match defender_points {
                0 => 3,
                p if p < 40 => 2,
                _ => 1,
            };
            (
                if declarer_team == "team1" {
                    "team1"
                } else {
                    "team0"
                },
                steps,
            )
        };
        let target = self.target_level()?;
        let levels = obj_mut(&mut state, "levels")?;
        let level = levels.get(control).map(py_int).transpose()?.unwrap_or(0);
        let reached = target.min(level + steps);
        levels.insert(control, Value::from(reached));
        let levels = Value::Object(levels.clone());
        let captured = obj(&state, "captured_points");
        for t in TEAMS {
            let amount = captured.get(t).map(py_int).transpose()?.unwrap_or(0);
            add_points(&mut state, "match_points", t, amount)?;
        }
        let result = obj! {
            "defender_points" => defender_points, "kitty_points" => kitty_points,
            "kitty_multiplier" => multiplier, "kitty_award" => award,
            "controlling_team" => control, "level_steps" => steps, "levels" => levels.clone(),
        };
        state.insert("last_result", Value::Object(result.clone()));
        let mut event = obj! { "kind" => "upgrade_hand_complete" };
        for (k, v) in result.iter() {
            event.insert(k, v.clone());
        }
        events.push(Value::Object(event));
        let max_hands = self.max_hands()?;
        if reached >= target || int(&state, "hand_number") >= max_hands {
            state.insert("phase", Value::from("completed"));
            events.push(Value::Object(obj! {
                "kind" => "upgrade_match_complete", "winner" => control, "levels" => levels,
            }));
            let mut out =
                obj! { "state" => Value::Object(state), "events" => Value::Array(events) };
            out.insert("completed", Value::Bool(true));
            out.insert("outcome", Value::from(control));
            return Ok(Value::Object(out));
        }
        let players = obj(&state, "players");
        let seats: Vec<Seat> = order(&state)
            .into_iter()
            .map(|k| {
                let seat = players.get(&k).and_then(|p| p.get("seat")).map(py_int);
                seat.unwrap_or(Err(format!("'{k}'"))).map(|s| (k, s))
            })
            .collect::<Hooked<_>>()?;
        let candidates: Vec<&Seat> = seats.iter().filter(|(_, s)| team(*s) == control).collect();
        let starter = if candidates.iter().any(|(k, _)| k == last_winner) {
            last_winner.to_owned()
        } else {
            candidates
                .first()
                .map(|(k, _)| k.clone())
                .ok_or("list index out of range")?
        };
        let lv = |s: &Map, t: &str| s.get(t).map(py_int).transpose().map(|v| v.unwrap_or(0));
        let (levels_map, points_map) = (obj(&state, "levels"), obj(&state, "match_points"));
        let mut next = self.new_hand(
            &seats,
            &HandStart {
                levels: [lv(&levels_map, "team0")?, lv(&levels_map, "team1")?],
                declarer_team: control,
                starter: &starter,
                hand_number: int(&state, "hand_number") + 1,
                restart_count: int(&state, "restart_count"),
                match_points: [lv(&points_map, "team0")?, lv(&points_map, "team1")?],
                notice: &text(&state, "recovery_notice"),
            },
        )?;
        next.insert(
            "last_result",
            state.get("last_result").cloned().unwrap_or(Value::Null),
        );
        events.push(Value::Object(obj! {
            "kind" => "upgrade_hand_started", "hand_number" => int(&next, "hand_number"),
            "starter" => starter.as_str(),
        }));
        Ok(hook_result(next, events))
    }
}

/// The strength and trump suit a declaration with `cards` makes at
/// `level`, or why it makes none.
fn declaration_of(cards: &[Value], level: i64) -> Hooked<(i64, Option<&'static str>)> {
    let faces = cards::faces_of(cards)?;
    match faces.as_slice() {
        [one] => {
            if one.rank != level || one.is_joker() {
                return Err("a single declaration must be one level card".into());
            }
            Ok((1, Some(one.suit)))
        }
        [a, b] => {
            if a != b {
                return Err("a pair declaration needs identical card faces".into());
            }
            match (a.rank, a.is_joker()) {
                (r, false) if r == level => Ok((2, Some(a.suit))),
                (cards::SMALL_JOKER, true) => Ok((3, None)),
                (cards::BIG_JOKER, true) => Ok((4, None)),
                _ => Err("a pair declaration needs level cards or identical jokers".into()),
            }
        }
        _ => Err("card_ids must contain 1-2 unique ids".into()),
    }
}

/// The card ids of the standing declaration (never buried).
fn protected_ids(state: &Map) -> Vec<String> {
    state
        .get("winning_declaration")
        .and_then(|w| w.get("card_ids"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

impl GroupHooks for Tractor {
    fn initial_state(&mut self, members: &[Value]) -> Hooked<Value> {
        let start = self.option_int("start_level", 2, 2, 14)?;
        let target = self.target_level()?;
        if target <= start {
            return Err("target_level must be higher than start_level".into());
        }
        self.max_hands()?;
        let seats = Self::active(members)?;
        let starter = seats[0].0.clone();
        self.new_hand(
            &seats,
            &HandStart {
                levels: [start, start],
                declarer_team: "team0",
                starter: &starter,
                hand_number: 1,
                restart_count: 0,
                match_points: [0, 0],
                notice: "",
            },
        )
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
        match text(&state, "phase").as_str() {
            "completed" => return Err("the Upgrade match is complete".into()),
            "declaration" => return self.declare(state, actor, action),
            _ => {}
        }
        if member_pk(actor)? != text(&state, "current_player") {
            return Err("it is not this Member's turn".into());
        }
        match text(&state, "phase").as_str() {
            "bury" => self.bury(state, actor, action),
            "playing" => self.play(state, actor, action),
            _ => Err("the Upgrade table is not accepting actions".into()),
        }
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> Hooked<Value> {
        let state = state
            .as_object()
            .ok_or("the table state is not an object")?;
        let pk = member_pk(viewer)?;
        let (my_hand, hand_counts) = deck::hand_view(deck_of(state)?, &pk)?;
        let mut v = Map::with_capacity(28);
        for k in [
            "phase",
            "hand_number",
            "restart_count",
            "recovery_notice",
            "players",
            "turn_order",
            "current_player",
            "starter",
            "declarer",
            "declarer_team",
            "levels",
            "level_rank",
            "trump_suit",
            "declarations",
            "winning_declaration",
            "kitty_count",
            "kitty_revealed",
            "current_trick",
            "trick_history",
            "captured_points",
            "defender_points",
            "match_points",
        ] {
            v.insert(k, state.get(k).cloned().ok_or_else(|| format!("'{k}'"))?);
        }
        v.insert("my_hand", my_hand);
        v.insert("hand_counts", hand_counts);
        v.insert(
            "last_result",
            state.get("last_result").cloned().unwrap_or(Value::Null),
        );
        v.insert(
            "you",
            Value::Object(obj! {
                "public_key" => pk.as_str(), "seat" => member_seat(viewer),
                "team" => team(seat_of(viewer)?), "is_declarer" => pk == text(state, "declarer"),
            }),
        );
        Ok(Value::Object(v))
    }

    fn recovery_snapshot(&mut self, state: &Value) -> Hooked<Value> {
        let mut out = Map::with_capacity(6);
        for k in [
            "hand_number",
            "restart_count",
            "levels",
            "declarer_team",
            "starter",
            "match_points",
        ] {
            out.insert(k, state.get(k).cloned().ok_or_else(|| format!("'{k}'"))?);
        }
        Ok(Value::Object(out))
    }

    fn restore(&mut self, checkpoint: Value, members: &[Value], _epoch: u64) -> Hooked<Value> {
        let seats = Self::active(members)?;
        let Value::Object(cp) = &checkpoint else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                checkpoint.py_type_name()
            ));
        };
        let starter = match cp.get("starter") {
            Some(Value::String(s)) if seats.iter().any(|(k, _)| **k == **s) => s.to_string(),
            _ => seats[0].0.clone(),
        };
        // `checkpoint.get(key, {}).get(team, default)` with int() of it.
        let pair = |key: &str, default: i64| -> Hooked<[i64; 2]> {
            let empty = Value::Object(Map::new());
            let m = cp.get(key).unwrap_or(&empty);
            let mut out = [default; 2];
            for (i, t) in TEAMS.iter().enumerate() {
                out[i] = match field(m, t)? {
                    Some(v) => py_int(v)?,
                    None => default,
                };
            }
            Ok(out)
        };
        let levels = pair("levels", 2)?;
        let declarer_team = cp
            .get("declarer_team")
            .map_or_else(|| "team0".to_owned(), Value::py_str);
        let hand_number = cp.get("hand_number").map(py_int).transpose()?.unwrap_or(1);
        let restarts = cp
            .get("restart_count")
            .map(py_int)
            .transpose()?
            .unwrap_or(0);
        let match_points = pair("match_points", 0)?;
        self.new_hand(
            &seats,
            &HandStart {
                levels,
                declarer_team: &declarer_team,
                starter: &starter,
                hand_number,
                restart_count: restarts.saturating_add(1),
                match_points,
                notice: "The interrupted private deal and kitty were discarded after a Leader change.",
            },
        )
        .map(Value::Object)
    }

    fn on_leader_changed(&mut self, state: Value, old: &str, new: &str) -> Hooked<Value> {
        super::leader_changed(
            state,
            (old, new),
            "the private hand was redealt",
            "upgrade_hand_restarted_after_leader_change",
            "hand_number",
        )
    }
}

#[cfg(test)]
mod tests;
