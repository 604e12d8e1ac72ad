//! contract-bridge-v1: one board of duplicate bridge for four seats. Seats
//! 0–3 are north, east, south and west (north–south against east–west);
//! the board number (option `board_number`, 1–32) sets the dealer and the
//! vulnerability as on printed boards. 13 cards each from one 52-card deck.
//!
//! The auction starts with the dealer: a call is `pass`, `bid` (level 1–7
//! and a denomination clubs < diamonds < hearts < spades < nt, outranking the
//! last bid), `double` (of the opponents' undoubled last bid) or `redouble`
//! (of a double of one's own side's bid). Four passes pass the board out;
//! three passes after a bid end the auction. The declarer is the member of
//! the last bidder's side who first named the contract's denomination; the
//! player on its left leads, and after the opening lead the dummy (the
//! declarer's partner) is shown to everyone and played by the declarer.
//! Players must follow the led suit when they can; the highest trump, else
//! the highest card of the led suit, wins the trick and leads the next.
//! After 13 tricks the board is scored by duplicate scoring and the points
//! go to the side that earned them.
//!
//! The rules, events, refusal texts and state shape are those of the
//! reference's hooks.py of this protocol (5d69cf0e…), checked line by line
//! by tests/tables_hooks.rs. One oddity kept for that: a call's event takes
//! the call's own kind (`pass`, `bid`, `double`, `redouble`), because the
//! reference spreads the call over its `bridge_call` kind.

use super::{Table, deck, hook_result, py_int};
use super::{int, obj, text};
use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Value};
use crate::obj;

type Hooked<T> = Result<T, HookFailure>;

/// The denominations in bidding order.
pub const DENOMINATIONS: [&str; 5] = ["clubs", "diamonds", "hearts", "spades", "nt"];
const SUITS: [&str; 4] = ["clubs", "diamonds", "hearts", "spades"];
const COMPASS: [&str; 4] = ["north", "east", "south", "west"];
const VULNERABILITY: [&str; 16] = [
    "none", "ns", "ew", "both", "ns", "ew", "both", "none", "ew", "both", "none", "ns", "both",
    "none", "ns", "ew",
];

/// `proto_host_metadata` of contract-bridge-v1.
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        display_name: "Contract Bridge".into(),
        tags: "game,cards,multiplayer,bridge,partnership".into(),
        invite_type: "supply".into(),
        default_options: Map::new(),
    }
}

/// The rules of contract-bridge-v1.
#[derive(Debug, Clone, Default)]
pub struct Bridge {
    options: Map,
}

impl Bridge {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }

    /// The `board_number` option: an integer 1–32, default 1.
    fn board_option(&self) -> Hooked<i64> {
        match self.options.get("board_number") {
            None => Ok(1),
            Some(v) => v
                .as_i64()
                .filter(|n| (1..=32).contains(n))
                .ok_or_else(|| "board_number must be between 1 and 32".into()),
        }
    }

    fn new_board(
        &self,
        members: &[Value],
        board_number: i64,
        scores: Map,
        restart_count: i64,
        notice: &str,
    ) -> Hooked<Map> {
        let mut active: Vec<(i64, &Value)> = Vec::with_capacity(4);
        for m in members {
            if m.get_str("status") == Some("active") {
                active.push((py_int(m.get("seat").ok_or("'seat'")?)?, m));
            }
        }
        active.sort_by_key(|(seat, _)| *seat);
        if active.len() != 4 {
            return Err("Contract Bridge requires exactly four active Members".into());
        }
        let seed = super::new_seed(&self.options, board_number, restart_count);
        let seated: Vec<Value> = active.iter().map(|(_, m)| (*m).clone()).collect();
        let deck = deck::create(&faces(), &seated, 13, &seed, 1)?;
        let mut order = Vec::with_capacity(4);
        let mut players = Map::with_capacity(4);
        for (seat, m) in &active {
            let pk = m.get_str("public_key").ok_or("'public_key'")?;
            order.push(Value::from(pk));
            players.insert(
                pk,
                Value::Object(obj! {
                    "seat" => *seat, "compass" => compass(*seat)?, "partnership" => partnership(*seat),
                }),
            );
        }
        let dealer = order[py_mod(i128::from(board_number) - 1, 4)].clone();
        let vulnerability = VULNERABILITY[py_mod(i128::from(board_number) - 1, 16)];
        Ok(obj! {
            "phase" => "auction",
            "board_number" => board_number,
            "restart_count" => restart_count,
            "recovery_notice" => notice,
            "players" => players,
            "turn_order" => order,
            "dealer" => dealer.clone(),
            "vulnerability" => vulnerability,
            "current_player" => dealer,
            "current_hand_owner" => "",
            "auction" => Vec::new(),
            "last_bid" => Value::Null,
            "last_non_pass" => "",
            "doubled" => 0,
            "consecutive_passes" => 0,
            "contract" => Value::Null,
            "declarer" => "",
            "dummy" => "",
            "dummy_revealed" => false,
            "current_trick" => Vec::new(),
            "trick_history" => Vec::new(),
            "tricks" => obj! { "ns" => 0, "ew" => 0 },
            "scores" => scores,
            "deck" => deck,
        })
    }

    fn call(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        let kind = action_kind(action)?;
        let pk = actor_pk(actor)?.unwrap_or_default().to_owned();
        let seat = py_int(actor.get("seat").ok_or("'seat'")?)?;
        let mut call = obj! {
            "public_key" => pk.as_str(), "seat" => seat, "kind" => kind.cloned().unwrap_or(Value::Null),
        };
        match kind.and_then(Value::as_str) {
            Some("pass") => {
                let passes = int(&state, "consecutive_passes").saturating_add(1);
                state.insert("consecutive_passes", Value::from(passes));
            }
            Some("bid") => {
                let level = action
                    .get("level")
                    .and_then(Value::as_i64)
                    .filter(|l| (1..=7).contains(l));
                let denomination = action
                    .get("denomination")
                    .and_then(Value::as_str)
                    .filter(|d| DENOMINATIONS.contains(d));
                let (Some(level), Some(denomination)) = (level, denomination) else {
                    return Err("a bid requires level 1-7 and a valid denomination".into());
                };
                let candidate = bid_value(level, denomination);
                if let Some(last) = state.get("last_bid").and_then(Value::as_object)
                    && candidate <= int(last, "value")
                {
                    return Err("a new bid must outrank the current contract".into());
                }
                call.insert("level", Value::from(level));
                call.insert("denomination", Value::from(denomination));
                call.insert("value", Value::from(candidate));
                state.insert("last_bid", Value::Object(call.clone()));
                state.insert("doubled", Value::from(0));
                state.insert("last_non_pass", Value::from("bid"));
                state.insert("consecutive_passes", Value::from(0));
            }
            Some("double") => {
                if !can_double(&state, &pk) {
                    return Err("double is not legal in the current auction".into());
                }
                state.insert("doubled", Value::from(1));
                state.insert("last_non_pass", Value::from("double"));
                state.insert("consecutive_passes", Value::from(0));
            }
            Some("redouble") => {
                if !can_redouble(&state, &pk) {
                    return Err("redouble is not legal in the current auction".into());
                }
                state.insert("doubled", Value::from(2));
                state.insert("last_non_pass", Value::from("redouble"));
                state.insert("consecutive_passes", Value::from(0));
            }
            _ => return Err("auction accepts pass, bid, double, or redouble".into()),
        }
        arr_mut(&mut state, "auction")?.push(Value::Object(call.clone()));
        // The reference's `{"kind": "bridge_call", **call}`: the call's own
        // kind wins.
        let mut event = obj! { "kind" => "bridge_call" };
        for (k, v) in call.iter() {
            event.insert(k, v.clone());
        }
        let mut events = vec![Value::Object(event)];
        let has_bid = state.get("last_bid").is_some_and(|b| !b.is_null());
        let calls = state
            .get("auction")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if !has_bid && calls == 4 {
            state.insert("phase", Value::from("completed"));
            events.push(Value::Object(obj! { "kind" => "board_passed_out" }));
            return Ok(completed(state, events, "passed_out"));
        }
        if has_bid && int(&state, "consecutive_passes") >= 3 {
            start_play(&mut state)?;
            events.push(Value::Object(obj! {
                "kind" => "contract_set",
                "contract" => state.get("contract").cloned().unwrap_or(Value::Null),
                "declarer" => text(&state, "declarer"),
                "dummy" => text(&state, "dummy"),
            }));
            return Ok(hook_result(state, events));
        }
        let next = next_key(&state, &pk);
        state.insert("current_player", Value::from(next));
        Ok(hook_result(state, events))
    }

    fn play(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        if action_kind(action)?.and_then(Value::as_str) != Some("play") {
            return Err("card play accepts only play".into());
        }
        let owner = text(&state, "current_hand_owner");
        let declarer = text(&state, "declarer");
        let expected = if owner == text(&state, "dummy") {
            declarer.clone()
        } else {
            owner.clone()
        };
        let pk = actor_pk(actor)?;
        if pk != Some(expected.as_str()) {
            return Err("it is not this Member's turn to play".into());
        }
        let pk = expected;
        let deck_map = obj(&state, "deck");
        let hand = deck::hand(&deck_map, &owner);
        let card_id = match action.get("card_id").and_then(Value::as_str) {
            Some(id) if hand.iter().any(|h| h == id) => id.to_owned(),
            _ => return Err("card_id is not in the active hand".into()),
        };
        let card = deck::card(&deck_map, &card_id).ok_or("unknown card_id")?;
        let trick = arr(&state, "current_trick");
        if let Some(first) = trick.first() {
            let led = first
                .get("card")
                .and_then(|c| c.get_str("suit"))
                .unwrap_or_default();
            let hand_cards: Vec<Map> = hand
                .iter()
                .filter_map(|id| deck::card(&deck_map, id))
                .collect();
            follows_suit(&hand_cards, &card, led)?;
        }
        {
            let deck = obj_mut(&mut state, "deck")?;
            deck::take_from_hand(deck, &owner, std::slice::from_ref(&card_id))?;
            deck::discard(deck, std::slice::from_ref(&card_id))?;
        }
        let owner_seat = state
            .get("players")
            .and_then(|p| p.get(&owner))
            .and_then(|p| p.get("seat"))
            .cloned()
            .unwrap_or(Value::Null);
        let play = obj! {
            "public_key" => pk.as_str(), "hand_owner" => owner.as_str(), "seat" => owner_seat,
            "card" => card,
        };
        arr_mut(&mut state, "current_trick")?.push(Value::Object(play.clone()));
        let mut event = obj! { "kind" => "bridge_card_played" };
        for (k, v) in play.iter() {
            event.insert(k, v.clone());
        }
        let mut events = vec![Value::Object(event)];
        if state.get("dummy_revealed") != Some(&Value::Bool(true)) {
            state.insert("dummy_revealed", Value::Bool(true));
            events.push(Value::Object(
                obj! { "kind" => "dummy_revealed", "dummy" => text(&state, "dummy") },
            ));
        }
        let trick = arr(&state, "current_trick");
        if trick.len() < 4 {
            let next = next_key(&state, &owner);
            let player = if next == text(&state, "dummy") {
                declarer
            } else {
                next.clone()
            };
            state.insert("current_hand_owner", Value::from(next));
            state.insert("current_player", Value::from(player));
            return Ok(hook_result(state, events));
        }
        let cards: Vec<Map> = trick
            .iter()
            .map(|p| p.get("card").and_then(Value::as_object).cloned())
            .collect::<Option<_>>()
            .ok_or("a trick entry has no card")?;
        let trump = trump_of(&state);
        let led = cards[0].get_str("suit").unwrap_or_default().to_owned();
        let index = winning_index(&cards, &led, trump.as_deref());
        let winner = trick[index]
            .get_str("hand_owner")
            .unwrap_or_default()
            .to_owned();
        let team = team_of(&state, &winner);
        {
            let tricks = obj_mut(&mut state, "tricks")?;
            let won = int(tricks, &team).saturating_add(1);
            tricks.insert(team.as_str(), Value::from(won));
        }
        let number = arr(&state, "trick_history").len() + 1;
        arr_mut(&mut state, "trick_history")?.push(Value::Object(obj! {
            "number" => number, "winner" => winner.as_str(), "cards" => trick,
        }));
        state.insert("current_trick", Value::Array(Vec::new()));
        events.push(Value::Object(obj! {
            "kind" => "bridge_trick_won", "winner" => winner.as_str(), "partnership" => team.as_str(),
            "trick_number" => number,
        }));
        if number == 13 {
            return complete_board(state, events);
        }
        let player = if winner == text(&state, "dummy") {
            declarer
        } else {
            winner.clone()
        };
        state.insert("current_hand_owner", Value::from(winner));
        state.insert("current_player", Value::from(player));
        Ok(hook_result(state, events))
    }
}

impl GroupHooks for Bridge {
    fn initial_state(&mut self, members: &[Value]) -> Hooked<Value> {
        let board = self.board_option()?;
        self.new_board(members, board, obj! { "ns" => 0, "ew" => 0 }, 0, "")
            .map(Value::Object)
    }

    fn member_joined(&mut self, state: Value, member: &Value) -> Hooked<Value> {
        let event = obj! {
            "kind" => "member_rejoined",
            "public_key" => member.get("public_key").cloned().ok_or("'public_key'")?,
            "seat" => member.get("seat").cloned().ok_or("'seat'")?,
        };
        Ok(super::result_value(state, vec![Value::Object(event)]))
    }

    fn member_left(&mut self, state: Value, member: &Value, reason: &str) -> Hooked<Value> {
        let event = obj! {
            "kind" => "member_disconnected",
            "public_key" => member.get("public_key").cloned().ok_or("'public_key'")?,
            "reason" => reason,
        };
        Ok(super::result_value(state, vec![Value::Object(event)]))
    }

    fn handle(&mut self, state: Value, actor: &Value, action: &Value) -> Hooked<Value> {
        let Value::Object(state) = state else {
            return Err("the table state is not an object".into());
        };
        match text(&state, "phase").as_str() {
            "completed" => Err("the board is complete".into()),
            "auction" => {
                let current = text(&state, "current_player");
                if actor_pk(actor)? != Some(current.as_str()) {
                    return Err("it is not this Member's turn to call".into());
                }
                self.call(state, actor, action)
            }
            "playing" => self.play(state, actor, action),
            _ => Err("the bridge table is not accepting actions".into()),
        }
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> Hooked<Value> {
        let state = state
            .as_object()
            .ok_or("the table state is not an object")?;
        let pk = viewer.get_str("public_key").ok_or("'public_key'")?;
        let deck_map = obj(state, "deck");
        let dv = deck::private_view(&deck_map, pk, &[])?;
        let dummy = text(state, "dummy");
        let mut dummy_cards = Vec::new();
        if state.get("dummy_revealed") == Some(&Value::Bool(true)) && !dummy.is_empty() {
            dummy_cards = deck::hand(&deck_map, &dummy)
                .iter()
                .map(|id| Value::Object(deck::card(&deck_map, id).unwrap_or_default()))
                .collect();
        }
        let my_hand = dv.get("my_hand").cloned().unwrap_or(Value::Null);
        let playable = if text(state, "phase") == "playing"
            && text(state, "current_hand_owner") == dummy
            && pk == text(state, "declarer")
        {
            Value::Array(dummy_cards.clone())
        } else {
            my_hand.clone()
        };
        let seat_value = viewer.get("seat").cloned().ok_or("'seat'")?;
        let seat = py_int(&seat_value)?;
        let mut v = Map::with_capacity(32);
        for k in [
            "phase",
            "board_number",
            "restart_count",
            "recovery_notice",
            "players",
            "turn_order",
            "dealer",
            "vulnerability",
            "current_player",
            "current_hand_owner",
            "auction",
            "last_bid",
            "doubled",
            "contract",
            "declarer",
            "dummy",
            "dummy_revealed",
        ] {
            v.insert(k, state.get(k).cloned().unwrap_or(Value::Null));
        }
        v.insert("dummy_hand", Value::Array(dummy_cards));
        for k in ["current_trick", "trick_history", "tricks", "scores"] {
            v.insert(k, state.get(k).cloned().unwrap_or(Value::Null));
        }
        v.insert("my_hand", my_hand);
        v.insert("playable_hand", playable);
        v.insert(
            "hand_counts",
            dv.get("hand_counts").cloned().unwrap_or(Value::Null),
        );
        v.insert(
            "you",
            Value::Object(obj! {
                "public_key" => pk, "seat" => seat_value, "compass" => compass(seat)?,
                "partnership" => partnership(seat),
            }),
        );
        Ok(Value::Object(v))
    }

    fn recovery_snapshot(&mut self, state: &Value) -> Hooked<Value> {
        let field = |k: &str| state.get(k).cloned().ok_or_else(|| format!("'{k}'"));
        Ok(Value::Object(obj! {
            "board_number" => field("board_number")?,
            "restart_count" => field("restart_count")?,
            "scores" => field("scores")?,
        }))
    }

    fn restore(&mut self, checkpoint: Value, members: &[Value], _epoch: u64) -> Hooked<Value> {
        let Value::Object(cp) = checkpoint else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                py_type(&checkpoint)
            ));
        };
        let board = cp.get("board_number").map(py_int).transpose()?.unwrap_or(1);
        let old_scores = match cp.get("scores") {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(other) => {
                return Err(format!(
                    "'{}' object has no attribute 'get'",
                    py_type(other)
                ));
            }
        };
        let ns = old_scores.get("ns").map(py_int).transpose()?.unwrap_or(0);
        let ew = old_scores.get("ew").map(py_int).transpose()?.unwrap_or(0);
        let restarts = cp
            .get("restart_count")
            .map(py_int)
            .transpose()?
            .unwrap_or(0);
        self.new_board(
            members,
            board,
            obj! { "ns" => ns, "ew" => ew },
            restarts.saturating_add(1),
            "The previous private board was discarded after a Leader change.",
        )
        .map(Value::Object)
    }

    fn on_leader_changed(&mut self, state: Value, old: &str, new: &str) -> Hooked<Value> {
        super::leader_changed(
            state,
            (old, new),
            "the private board was redealt",
            "board_restarted_after_leader_change",
            "board_number",
        )
    }
}

impl Table for Bridge {
    fn legal_actions(&self, view: &Value) -> Vec<Value> {
        let Some(me) = my_turn(view) else {
            return Vec::new();
        };
        match view.get_str("phase") {
            Some("auction") => {
                let mut out = vec![call_action("pass")];
                let a = Auction::of(view, me);
                if a.can_double() {
                    out.push(call_action("double"));
                }
                if a.can_redouble() {
                    out.push(call_action("redouble"));
                }
                for value in a.last_value.saturating_add(1).max(0)..35 {
                    let (level, denomination) = bid_of_value(value);
                    out.push(bid_action(level, denomination));
                }
                out
            }
            Some("playing") => legal_cards(view)
                .into_iter()
                .map(|c| play_action(&c.id))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn bot_action(&self, view: &Value) -> Option<Value> {
        let me = my_turn(view)?;
        match view.get_str("phase")? {
            "auction" => Some(bot_call(view, me)),
            "playing" => bot_card(view).map(|id| play_action(&id)),
            _ => None,
        }
    }

    fn is_legal_selection(&self, view: &Value, ids: &[String]) -> bool {
        my_turn(view).is_some()
            && view.get_str("phase") == Some("playing")
            && ids.len() == 1
            && legal_cards(view).iter().any(|c| c.id == ids[0])
    }
}

// ---- the rules' helpers -------------------------------------------------

/// `action.get("kind")`, refusing a non-object as Python's `.get` would.
fn action_kind(action: &Value) -> Hooked<Option<&Value>> {
    match action {
        Value::Object(m) => Ok(m.get("kind")),
        other => Err(format!(
            "'{}' object has no attribute 'get'",
            py_type(other)
        )),
    }
}

/// `actor["public_key"]`: `None` when it is not a string (so it matches no
/// member's key).
fn actor_pk(actor: &Value) -> Hooked<Option<&str>> {
    actor
        .get("public_key")
        .map(Value::as_str)
        .ok_or_else(|| "'public_key'".into())
}

/// Python's type name of a JSON value, for its error texts.
fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(_) if v.is_integer() => "int",
        Value::Number(_) => "float",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Python's `a % m` for a positive `m`, as an index.
fn py_mod(a: i128, m: i128) -> usize {
    a.rem_euclid(m) as usize
}

/// `COMPASS[seat]` with Python's indexing (negative seats count from the end).
fn compass(seat: i64) -> Hooked<&'static str> {
    let i = if seat < 0 { seat + 4 } else { seat };
    usize::try_from(i)
        .ok()
        .and_then(|i| COMPASS.get(i).copied())
        .ok_or_else(|| "tuple index out of range".into())
}

fn partnership(seat: i64) -> &'static str {
    if seat.rem_euclid(2) == 0 { "ns" } else { "ew" }
}

/// A bid's rank: `(level - 1) * 5 + denomination index`.
pub fn bid_value(level: i64, denomination: &str) -> i64 {
    let d = DENOMINATIONS
        .iter()
        .position(|x| *x == denomination)
        .unwrap_or(0);
    (level - 1) * 5 + d as i64
}

/// The (level, denomination) of a bid's rank 0–34.
fn bid_of_value(value: i64) -> (i64, &'static str) {
    (value / 5 + 1, DENOMINATIONS[value.rem_euclid(5) as usize])
}

fn team_of(state: &Map, pk: &str) -> String {
    state
        .get("players")
        .and_then(|p| p.get(pk))
        .and_then(|p| p.get_str("partnership"))
        .unwrap_or_default()
        .to_owned()
}

fn last_bidder(state: &Map) -> Option<String> {
    state
        .get("last_bid")
        .and_then(|b| b.get_str("public_key"))
        .map(str::to_owned)
}

fn can_double(state: &Map, pk: &str) -> bool {
    match last_bidder(state) {
        Some(bidder) => {
            int(state, "doubled") == 0
                && text(state, "last_non_pass") == "bid"
                && team_of(state, pk) != team_of(state, &bidder)
        }
        None => false,
    }
}

fn can_redouble(state: &Map, pk: &str) -> bool {
    match last_bidder(state) {
        Some(bidder) => {
            int(state, "doubled") == 1
                && text(state, "last_non_pass") == "double"
                && team_of(state, pk) == team_of(state, &bidder)
        }
        None => false,
    }
}

/// Ends the auction: the contract, the declarer (the first of the last
/// bidder's side to name its denomination), the dummy and the opening lead.
fn start_play(state: &mut Map) -> Hooked<()> {
    let last = obj(state, "last_bid");
    let team = team_of(state, last.get_str("public_key").unwrap_or_default());
    let denomination = last.get_str("denomination").unwrap_or_default().to_owned();
    let declarer = arr(state, "auction")
        .iter()
        .find(|c| {
            c.get_str("kind") == Some("bid")
                && c.get_str("denomination") == Some(denomination.as_str())
                && team_of(state, c.get_str("public_key").unwrap_or_default()) == team
        })
        .and_then(|c| c.get_str("public_key"))
        .ok_or("StopIteration")?
        .to_owned();
    let seat = state
        .get("players")
        .and_then(|p| p.get(&declarer))
        .and_then(|p| p.get("seat"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let order = arr(state, "turn_order");
    let at = |k: i64| {
        order
            .get(py_mod(i128::from(seat) + i128::from(k), 4))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (dummy, leader) = (at(2), at(1));
    let doubled = state.get("doubled").cloned().unwrap_or(Value::Null);
    state.insert(
        "contract",
        Value::Object(obj! {
            "level" => int(&last, "level"), "denomination" => denomination, "doubled" => doubled,
            "partnership" => team,
        }),
    );
    state.insert("declarer", Value::from(declarer));
    state.insert("dummy", dummy);
    state.insert("phase", Value::from("playing"));
    state.insert("current_hand_owner", leader.clone());
    state.insert("current_player", leader);
    Ok(())
}

/// The reference's `validate_follow_suit`.
fn follows_suit(hand: &[Map], card: &Map, led: &str) -> Hooked<()> {
    if !SUITS.contains(&led) {
        return Err("led_suit must be a standard suit".into());
    }
    if card.get_str("suit") == Some(led) {
        return Ok(());
    }
    if hand.iter().any(|c| c.get_str("suit") == Some(led)) {
        return Err("the player must follow the led suit".into());
    }
    Ok(())
}

/// The index of the card that wins a trick: the highest trump, else the
/// highest card of the led suit (the first of equals).
pub fn winning_index(cards: &[Map], led: &str, trump: Option<&str>) -> usize {
    let strength = |c: &Map| {
        let suit = c.get_str("suit").unwrap_or_default();
        let rank = c.get("rank").and_then(Value::as_i64).unwrap_or(0);
        if trump == Some(suit) {
            (2, rank)
        } else if suit == led {
            (1, rank)
        } else {
            (0, rank)
        }
    };
    let mut best = 0;
    for (i, c) in cards.iter().enumerate() {
        if strength(c) > strength(&cards[best]) {
            best = i;
        }
    }
    best
}

/// The contract's trump suit (`None` at no trump or without a contract).
fn trump_of(state: &Map) -> Option<String> {
    state
        .get("contract")
        .and_then(|c| c.get_str("denomination"))
        .filter(|d| SUITS.contains(d))
        .map(str::to_owned)
}

fn complete_board(mut state: Map, events: Vec<Value>) -> Hooked<Value> {
    let contract = obj(&state, "contract");
    let team = contract
        .get_str("partnership")
        .unwrap_or_default()
        .to_owned();
    let tricks = int(&obj(&state, "tricks"), &team);
    let vul = text(&state, "vulnerability");
    let vulnerable = vul == team || vul == "both";
    let score = duplicate_score(
        int(&contract, "level"),
        contract.get_str("denomination").unwrap_or_default(),
        int(&contract, "doubled"),
        tricks,
        vulnerable,
    );
    let other = if team == "ns" { "ew" } else { "ns" };
    let scoring = if score >= 0 { team.as_str() } else { other };
    {
        let scores = obj_mut(&mut state, "scores")?;
        let now = int(scores, scoring).saturating_add(score.saturating_abs());
        scores.insert(scoring, Value::from(now));
    }
    state.insert("phase", Value::from("completed"));
    let outcome = format!("{team}_{}", if score >= 0 { "made" } else { "down" });
    let mut events = events;
    events.push(Value::Object(obj! {
        "kind" => "bridge_board_complete", "outcome" => outcome.as_str(), "contract_score" => score,
        "tricks" => tricks, "scores" => state.get("scores").cloned().unwrap_or(Value::Null),
    }));
    Ok(completed(state, events, &outcome))
}

/// Duplicate bridge's score of a contract for the declaring side (negative:
/// the undertrick penalty the defenders earn).
pub fn duplicate_score(
    level: i64,
    denomination: &str,
    doubled: i64,
    tricks: i64,
    vulnerable: bool,
) -> i64 {
    // Wide enough for any i64 level or trick count of a broken state.
    let score = wide_score(
        i128::from(level),
        denomination,
        doubled,
        i128::from(tricks),
        vulnerable,
    );
    i64::try_from(score).unwrap_or(if score < 0 { i64::MIN } else { i64::MAX })
}

fn wide_score(
    level: i128,
    denomination: &str,
    doubled: i64,
    tricks: i128,
    vulnerable: bool,
) -> i128 {
    let delta = tricks - (level + 6);
    let multiplier = match doubled {
        1 => 2,
        2 => 4,
        _ => 1,
    };
    let redoubled = if doubled == 2 { 2 } else { 1 };
    if delta < 0 {
        let under = -delta;
        if doubled == 0 {
            return -under * if vulnerable { 100 } else { 50 };
        }
        let penalty = if vulnerable {
            200 + (under - 1).max(0) * 300
        } else {
            let mut p = 100;
            if under >= 2 {
                p += (under - 1).min(2) * 200;
            }
            if under >= 4 {
                p += (under - 3) * 300;
            }
            p
        };
        return -penalty * redoubled;
    }
    let (base, overtrick) = match denomination {
        "clubs" | "diamonds" => (level * 20, 20),
        "hearts" | "spades" => (level * 30, 30),
        _ => (40 + (level - 1).max(0) * 30, 30),
    };
    let points = base * multiplier;
    let mut total = points;
    if points >= 100 {
        total += if vulnerable { 500 } else { 300 };
    } else {
        total += 50;
    }
    if level == 6 {
        total += if vulnerable { 750 } else { 500 };
    } else if level == 7 {
        total += if vulnerable { 1500 } else { 1000 };
    }
    total += match doubled {
        1 => 50,
        2 => 100,
        _ => 0,
    };
    if delta > 0 {
        total += if doubled == 0 {
            delta * overtrick
        } else {
            delta * if vulnerable { 200 } else { 100 } * redoubled
        };
    }
    total
}

fn completed(state: Map, events: Vec<Value>, outcome: &str) -> Value {
    Value::Object(obj! {
        "state" => state, "events" => events, "completed" => true, "outcome" => outcome,
    })
}

fn next_key(state: &Map, pk: &str) -> String {
    let order = arr(state, "turn_order");
    let i = order
        .iter()
        .position(|p| p.as_str() == Some(pk))
        .unwrap_or(0);
    order
        .get((i + 1) % order.len().max(1))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn arr(state: &Map, key: &str) -> Vec<Value> {
    state
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn obj_mut<'a>(state: &'a mut Map, key: &str) -> Hooked<&'a mut Map> {
    state
        .get_mut(key)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| format!("the table state has no {key}"))
}

fn arr_mut<'a>(state: &'a mut Map, key: &str) -> Hooked<&'a mut Vec<Value>> {
    match state.get_mut(key) {
        Some(Value::Array(a)) => Ok(a),
        _ => Err(format!("the table state has no {key}")),
    }
}

/// The 52 faces in the reference's order (`standard_card_faces()`).
fn faces() -> Vec<Map> {
    let symbol = |s: &str| match s {
        "clubs" => "C",
        "diamonds" => "D",
        "hearts" => "H",
        _ => "S",
    };
    let label = |r: i64| match r {
        11 => "J".to_owned(),
        12 => "Q".to_owned(),
        13 => "K".to_owned(),
        14 => "A".to_owned(),
        n => n.to_string(),
    };
    let mut out = Vec::with_capacity(52);
    for suit in SUITS {
        for rank in 2..=14i64 {
            let code = format!("{}{}", label(rank), symbol(suit));
            let color = if suit == "diamonds" || suit == "hearts" {
                "red"
            } else {
                "black"
            };
            out.push(obj! {
                "code" => code.as_str(), "suit" => suit, "rank" => rank, "label" => code.as_str(),
                "color" => color,
            });
        }
    }
    out
}

// ---- what a seat sees and a bot does ------------------------------------

fn call_action(kind: &str) -> Value {
    Value::Object(obj! { "kind" => kind })
}

fn bid_action(level: i64, denomination: &str) -> Value {
    Value::Object(obj! { "kind" => "bid", "level" => level, "denomination" => denomination })
}

fn play_action(card_id: &str) -> Value {
    Value::Object(obj! { "kind" => "play", "card_id" => card_id })
}

/// The viewer's key when it is the viewer's turn.
fn my_turn(view: &Value) -> Option<&str> {
    let me = view.get("you")?.get_str("public_key")?;
    (view.get_str("current_player") == Some(me)).then_some(me)
}

/// A card as the bot sees it.
#[derive(Debug, Clone)]
struct Card {
    id: String,
    suit: String,
    rank: i64,
}

fn cards_of(v: Option<&Value>) -> Vec<Card> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    Some(Card {
                        id: c.get_str("card_id")?.to_owned(),
                        suit: c.get_str("suit")?.to_owned(),
                        rank: c.get("rank")?.as_i64()?,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The cards of the hand to play that may be played now.
fn legal_cards(view: &Value) -> Vec<Card> {
    let playable = cards_of(view.get("playable_hand"));
    let led = view
        .get("current_trick")
        .and_then(Value::as_array)
        .and_then(|t| t.first())
        .and_then(|p| p.get("card"))
        .and_then(|c| c.get_str("suit"))
        .map(str::to_owned);
    match led {
        Some(led) if playable.iter().any(|c| c.suit == led) => {
            playable.into_iter().filter(|c| c.suit == led).collect()
        }
        _ => playable,
    }
}

/// The auction as a seat sees it in its view.
struct Auction<'a> {
    view: &'a Value,
    me: &'a str,
    /// The last bid's rank, -1 before any bid.
    last_value: i64,
    last_bidder: Option<&'a str>,
    doubled: i64,
    last_non_pass: Option<&'a str>,
}

impl<'a> Auction<'a> {
    fn of(view: &'a Value, me: &'a str) -> Self {
        let last = view.get("last_bid").filter(|b| !b.is_null());
        let last_non_pass = view.get("auction").and_then(Value::as_array).and_then(|a| {
            a.iter()
                .rev()
                .filter_map(|c| c.get_str("kind"))
                .find(|k| *k != "pass")
        });
        Auction {
            view,
            me,
            last_value: last
                .and_then(|b| b.get("value"))
                .and_then(Value::as_i64)
                .unwrap_or(-1),
            last_bidder: last.and_then(|b| b.get_str("public_key")),
            doubled: view.get("doubled").and_then(Value::as_i64).unwrap_or(0),
            last_non_pass,
        }
    }

    fn team(&self, pk: &str) -> Option<&'a str> {
        self.view.get("players")?.get(pk)?.get_str("partnership")
    }

    fn ours(&self, pk: &str) -> bool {
        self.team(pk).is_some() && self.team(pk) == self.team(self.me)
    }

    fn can_double(&self) -> bool {
        self.last_bidder.is_some_and(|b| !self.ours(b))
            && self.doubled == 0
            && self.last_non_pass == Some("bid")
    }

    fn can_redouble(&self) -> bool {
        self.last_bidder.is_some_and(|b| self.ours(b))
            && self.doubled == 1
            && self.last_non_pass == Some("double")
    }

    /// The last denomination `who` bid (`who`: partner or opponents).
    fn bids_by(&self, partner: bool) -> Vec<&'a str> {
        self.view
            .get("auction")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|c| c.get_str("kind") == Some("bid"))
                    .filter(|c| {
                        let pk = c.get_str("public_key").unwrap_or_default();
                        if partner {
                            pk != self.me && self.ours(pk)
                        } else {
                            !self.ours(pk)
                        }
                    })
                    .filter_map(|c| c.get_str("denomination"))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn my_bids(&self) -> usize {
        self.view
            .get("auction")
            .and_then(Value::as_array)
            .map_or(0, |a| {
                a.iter()
                    .filter(|c| {
                        c.get_str("kind") == Some("bid") && c.get_str("public_key") == Some(self.me)
                    })
                    .count()
            })
    }

    /// The lowest level at which `denomination` outranks the last bid.
    fn lowest_level(&self, denomination: &str) -> i64 {
        (1..=8)
            .find(|l| bid_value(*l, denomination) > self.last_value)
            .unwrap_or(8)
    }
}

/// High-card points: ace 4, king 3, queen 2, jack 1.
fn hcp(hand: &[Card]) -> i64 {
    hand.iter()
        .map(|c| c.rank.saturating_sub(10).clamp(0, 4))
        .sum()
}

fn suit_len(hand: &[Card], suit: &str) -> usize {
    hand.iter().filter(|c| c.suit == suit).count()
}

fn balanced(hand: &[Card]) -> bool {
    let lens: Vec<usize> = SUITS.iter().map(|s| suit_len(hand, s)).collect();
    lens.iter().all(|n| *n >= 2) && lens.iter().filter(|n| **n == 2).count() <= 1
}

/// The longest suit (majors first among equals).
fn longest_suit(hand: &[Card]) -> &'static str {
    let mut best = "clubs";
    for s in SUITS {
        if suit_len(hand, s) >= suit_len(hand, best) {
            best = s;
        }
    }
    best
}

/// Natural bidding: open at 12+ points (1NT with a balanced 15–17), raise
/// or bid on with partner to the level the combined points earn (game at
/// 26, slam at 33), overcall a five-card suit at 9+ points, double the
/// opponents' low bid at 13+; otherwise pass.
fn bot_call(view: &Value, me: &str) -> Value {
    let hand = cards_of(view.get("my_hand"));
    let points = hcp(&hand);
    let a = Auction::of(view, me);
    let longest = longest_suit(&hand);
    let bid_at = |d: &str, max_level: i64| {
        let level = a.lowest_level(d);
        (level <= max_level.min(7)).then(|| bid_action(level, d))
    };
    if a.can_redouble() && points >= 14 {
        return call_action("redouble");
    }
    let partner = a.bids_by(true);
    let opponents = a.bids_by(false);
    if let Some(&their) = partner.last() {
        let fit = match their {
            "nt" => balanced(&hand),
            suit => suit_len(&hand, suit) >= 3,
        };
        let denomination = if fit {
            their
        } else if suit_len(&hand, longest) >= 5 {
            longest
        } else {
            "nt"
        };
        let combined = points + 12;
        let game = match denomination {
            "nt" => 3,
            "hearts" | "spades" => 4,
            _ => 5,
        };
        let target = match combined {
            c if c >= 37 => 7,
            c if c >= 33 => 6,
            c if c >= 26 => game,
            c if c >= 23 => 3.min(game),
            c if c >= 19 => 2,
            _ => 0,
        };
        // One raise per call of partner's: never outbid partner's game.
        if a.my_bids() < partner.len() {
            return bid_at(denomination, target).unwrap_or_else(|| call_action("pass"));
        }
        return call_action("pass");
    }
    if a.my_bids() == 0 {
        if opponents.is_empty() {
            if (15..=17).contains(&points) && balanced(&hand) {
                return bid_at("nt", 1).unwrap_or_else(|| call_action("pass"));
            }
            if points >= 12 || (points >= 10 && suit_len(&hand, longest) >= 6) {
                return bid_at(longest, 1).unwrap_or_else(|| call_action("pass"));
            }
        } else {
            let their_level = bid_of_value(a.last_value.max(0)).0;
            if a.can_double() && points >= 13 && their_level <= 2 {
                return call_action("double");
            }
            if points >= 9 && suit_len(&hand, longest) >= 5 {
                return bid_at(longest, 2).unwrap_or_else(|| call_action("pass"));
            }
        }
    } else if points >= 18 && suit_len(&hand, longest) >= 6 && a.my_bids() == 1 {
        return bid_at(longest, 3).unwrap_or_else(|| call_action("pass"));
    }
    call_action("pass")
}

/// Card play: lead an ace from ace–king, else low from the longest side
/// suit; second hand low; third hand high (unless partner is winning);
/// fourth hand wins as cheaply as it can; ruff only to win; discard the
/// lowest side card.
fn bot_card(view: &Value) -> Option<String> {
    let legal = legal_cards(view);
    let trump = view
        .get("contract")
        .and_then(|c| c.get_str("denomination"))
        .filter(|d| SUITS.contains(d))
        .map(str::to_owned);
    let is_trump = |c: &Card| trump.as_deref() == Some(c.suit.as_str());
    let lowest = |cards: &[Card]| {
        cards
            .iter()
            .min_by_key(|c| (is_trump(c), c.rank))
            .map(|c| c.id.clone())
    };
    let trick: Vec<Map> = view
        .get("current_trick")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|p| p.get("card").and_then(Value::as_object).cloned())
                .collect()
        })
        .unwrap_or_default();
    if trick.is_empty() {
        return lead(&legal, trump.as_deref());
    }
    let led = trick[0].get_str("suit").unwrap_or_default().to_owned();
    let owner = view.get_str("current_hand_owner").unwrap_or_default();
    let team = |pk: &str| {
        view.get("players")
            .and_then(|p| p.get(pk))
            .and_then(|p| p.get_str("partnership"))
            .map(str::to_owned)
    };
    let owners: Vec<String> = view
        .get("current_trick")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|p| p.get_str("hand_owner").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let winning = winning_index(&trick, &led, trump.as_deref());
    let partner_winning = owners
        .get(winning)
        .is_some_and(|w| team(w).is_some() && team(w) == team(owner));
    let wins = |c: &Card| {
        let mut cards = trick.clone();
        cards.push(obj! { "suit" => c.suit.as_str(), "rank" => c.rank });
        winning_index(&cards, &led, trump.as_deref()) == trick.len()
    };
    let winners: Vec<Card> = legal.iter().filter(|c| wins(c)).cloned().collect();
    match trick.len() {
        1 => lowest(&legal),
        2 if !partner_winning => {
            // Third hand high: the top card of the suit if it wins, else
            // the cheapest winner (a ruff), else low.
            let top = legal
                .iter()
                .filter(|c| c.suit == led && wins(c))
                .max_by_key(|c| c.rank);
            top.map(|c| c.id.clone())
                .or_else(|| lowest(&winners))
                .or_else(|| lowest(&legal))
        }
        _ if partner_winning => lowest(&legal),
        _ => lowest(&winners).or_else(|| lowest(&legal)),
    }
}

fn lead(legal: &[Card], trump: Option<&str>) -> Option<String> {
    for s in SUITS {
        let has = |r: i64| legal.iter().find(|c| c.suit == s && c.rank == r);
        if let (Some(ace), Some(_)) = (has(14), has(13)) {
            return Some(ace.id.clone());
        }
    }
    let side: Vec<&Card> = legal
        .iter()
        .filter(|c| Some(c.suit.as_str()) != trump)
        .collect();
    let pool: Vec<&Card> = if side.is_empty() {
        legal.iter().collect()
    } else {
        side
    };
    let len = |s: &str| pool.iter().filter(|c| c.suit == s).count();
    let suit = pool
        .iter()
        .max_by_key(|c| (len(&c.suit), c.suit.clone()))?
        .suit
        .clone();
    pool.iter()
        .filter(|c| c.suit == suit)
        .min_by_key(|c| c.rank)
        .map(|c| c.id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members() -> Vec<Value> {
        (0..4)
            .map(|n| {
                Value::Object(obj! {
                    "public_key" => format!("pk{n}"), "seat" => n, "status" => "active",
                })
            })
            .collect()
    }

    fn card(suit: &str, rank: i64) -> Map {
        obj! { "suit" => suit, "rank" => rank }
    }

    fn act(b: &mut Bridge, state: Value, seat: usize, action: Value) -> Result<Value, String> {
        b.handle(state, &members()[seat], &action)
            .map(|o| o.get("state").cloned().unwrap())
    }

    #[test]
    fn the_auction_follows_the_rules() {
        let mut b = Bridge::new(&obj! { "deal_seed" => "unit", "board_number" => 2 });
        let s = b.initial_state(&members()).unwrap();
        // Board 2: east deals, north–south vulnerable.
        assert_eq!(s.get_str("dealer"), Some("pk1"));
        assert_eq!(s.get_str("vulnerability"), Some("ns"));
        assert_eq!(
            act(&mut b, s.clone(), 0, call_action("pass")).unwrap_err(),
            "it is not this Member's turn to call"
        );
        assert_eq!(
            act(&mut b, s.clone(), 1, call_action("double")).unwrap_err(),
            "double is not legal in the current auction"
        );
        let s = act(&mut b, s, 1, bid_action(1, "hearts")).unwrap();
        assert_eq!(
            act(&mut b, s.clone(), 2, bid_action(1, "diamonds")).unwrap_err(),
            "a new bid must outrank the current contract"
        );
        assert_eq!(
            act(&mut b, s.clone(), 2, call_action("redouble")).unwrap_err(),
            "redouble is not legal in the current auction"
        );
        assert_eq!(
            act(&mut b, s.clone(), 2, bid_action(8, "nt")).unwrap_err(),
            "a bid requires level 1-7 and a valid denomination"
        );
        let s = act(&mut b, s, 2, call_action("double")).unwrap();
        let s = act(&mut b, s, 3, call_action("redouble")).unwrap();
        let s = act(&mut b, s, 0, bid_action(2, "spades")).unwrap();
        assert_eq!(s.get("doubled").and_then(Value::as_i64), Some(0));
        let s = act(&mut b, s, 1, call_action("pass")).unwrap();
        let s = act(&mut b, s, 2, bid_action(4, "spades")).unwrap();
        let s = act(&mut b, s, 3, call_action("pass")).unwrap();
        let s = act(&mut b, s, 0, call_action("pass")).unwrap();
        let out = b
            .handle(s, &members()[1], &call_action("pass"))
            .expect("the third pass");
        let s = out.get("state").unwrap();
        // North named spades first for north–south: north declares, south
        // is dummy, east leads.
        assert_eq!(s.get_str("phase"), Some("playing"));
        assert_eq!(s.get_str("declarer"), Some("pk0"));
        assert_eq!(s.get_str("dummy"), Some("pk2"));
        assert_eq!(s.get_str("current_player"), Some("pk1"));
        let events = out.get("events").and_then(Value::as_array).unwrap();
        assert_eq!(events[0].get_str("kind"), Some("pass"));
        assert_eq!(events[1].get_str("kind"), Some("contract_set"));
    }

    #[test]
    fn four_passes_pass_the_board_out() {
        let mut b = Bridge::new(&obj! { "deal_seed" => "unit" });
        let mut s = b.initial_state(&members()).unwrap();
        for seat in 0..3 {
            s = act(&mut b, s, seat, call_action("pass")).unwrap();
        }
        let out = b.handle(s, &members()[3], &call_action("pass")).unwrap();
        assert_eq!(out.get("completed"), Some(&Value::Bool(true)));
        assert_eq!(out.get_str("outcome"), Some("passed_out"));
        let s = out.get("state").cloned().unwrap();
        assert_eq!(
            act(&mut b, s, 0, call_action("pass")).unwrap_err(),
            "the board is complete"
        );
    }

    #[test]
    fn the_trick_goes_to_the_highest_trump_else_the_led_suit() {
        let trick = [
            card("hearts", 10),
            card("hearts", 14),
            card("spades", 2),
            card("clubs", 14),
        ];
        assert_eq!(winning_index(&trick, "hearts", None), 1);
        assert_eq!(winning_index(&trick, "hearts", Some("spades")), 2);
        assert_eq!(winning_index(&trick, "hearts", Some("diamonds")), 1);
        assert_eq!(winning_index(&trick[..1], "hearts", Some("clubs")), 0);
    }

    #[test]
    fn duplicate_scores() {
        assert_eq!(duplicate_score(4, "spades", 0, 10, true), 620);
        assert_eq!(duplicate_score(3, "nt", 0, 9, false), 400);
        assert_eq!(duplicate_score(1, "nt", 0, 8, false), 120);
        assert_eq!(duplicate_score(2, "clubs", 1, 8, false), 180);
        assert_eq!(duplicate_score(4, "hearts", 1, 7, false), -500);
        assert_eq!(duplicate_score(4, "hearts", 2, 8, true), -1000);
        assert_eq!(duplicate_score(7, "nt", 2, 13, true), 2980);
        assert_eq!(duplicate_score(3, "diamonds", 0, 7, true), -200);
        // Every contract, doubling, trick count and vulnerability, weighted
        // by position: the same sum as the reference's `_duplicate_score`.
        let (mut i, mut sum) = (0i64, 0i64);
        for level in 1..=7 {
            for d in DENOMINATIONS {
                for doubled in 0..3 {
                    for tricks in 0..14 {
                        for vulnerable in [false, true] {
                            i += 1;
                            sum += i * duplicate_score(level, d, doubled, tricks, vulnerable);
                        }
                    }
                }
            }
        }
        assert_eq!((i, sum), (2940, -5_155_784_570));
    }

    #[test]
    fn declarer_plays_the_dummy_and_must_follow_suit() {
        let mut b = Bridge::new(&obj! { "deal_seed" => "unit" });
        let mut s = b.initial_state(&members()).unwrap();
        // North opens 1NT, all pass: east leads, south is dummy.
        s = act(&mut b, s, 0, bid_action(1, "nt")).unwrap();
        for seat in 1..4 {
            s = act(&mut b, s, seat, call_action("pass")).unwrap();
        }
        let view = |b: &mut Bridge, s: &Value, seat: usize| b.view(s, &members()[seat]).unwrap();
        let east = view(&mut b, &s, 1);
        let lead = b.bot_action(&east).unwrap();
        s = act(&mut b, s, 1, lead).unwrap();
        assert_eq!(s.get_str("current_player"), Some("pk0"));
        assert_eq!(s.get_str("current_hand_owner"), Some("pk2"));
        let north = view(&mut b, &s, 0);
        assert_eq!(north.get("dummy_hand"), north.get("playable_hand"));
        let legal = b.legal_actions(&north);
        assert!(!legal.is_empty());
        // The dummy may not play for itself; a card of north's own hand is
        // not in the active hand; an off-suit card is a revoke when the
        // dummy holds the led suit.
        assert_eq!(
            act(&mut b, s.clone(), 2, legal[0].clone()).unwrap_err(),
            "it is not this Member's turn to play"
        );
        let own = cards_of(north.get("my_hand"))[0].id.clone();
        assert_eq!(
            act(&mut b, s.clone(), 0, play_action(&own)).unwrap_err(),
            "card_id is not in the active hand"
        );
        let led = s.get("current_trick").unwrap().as_array().unwrap()[0]
            .get("card")
            .unwrap()
            .get_str("suit")
            .unwrap()
            .to_owned();
        let dummy = cards_of(north.get("playable_hand"));
        if dummy.iter().any(|c| c.suit == led) {
            let off = dummy.iter().find(|c| c.suit != led).unwrap();
            assert_eq!(
                act(&mut b, s.clone(), 0, play_action(&off.id)).unwrap_err(),
                "the player must follow the led suit"
            );
        }
        for a in legal {
            act(&mut b, s.clone(), 0, a).unwrap();
        }
    }
}
