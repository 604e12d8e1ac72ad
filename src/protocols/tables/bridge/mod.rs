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
//!
//! By job: `auction` takes the calls and sets the contract; `play`
//! takes the cards and the tricks; `score` scores the finished board;
//! `bot` is what a seat may send and a bot's choice. The board's deal
//! and the rules as [`GroupHooks`] are here.

mod auction;
mod bot;
mod play;
mod score;

pub use auction::{DENOMINATIONS, bid_value};
pub use play::winning_index;
pub use score::duplicate_score;

use super::{deck, py_int};
use super::{obj, text};
use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Value};
use crate::obj;

type Hooked<T> = Result<T, HookFailure>;

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
                checkpoint.py_type_name()
            ));
        };
        let board = cp.get("board_number").map(py_int).transpose()?.unwrap_or(1);
        let old_scores = match cp.get("scores") {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(other) => {
                return Err(format!(
                    "'{}' object has no attribute 'get'",
                    other.py_type_name()
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

// ---- the rules' helpers -------------------------------------------------

/// `action.get("kind")`, refusing a non-object as Python's `.get` would.
fn action_kind(action: &Value) -> Hooked<Option<&Value>> {
    match action {
        Value::Object(m) => Ok(m.get("kind")),
        other => Err(format!(
            "'{}' object has no attribute 'get'",
            other.py_type_name()
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

fn team_of(state: &Map, pk: &str) -> String {
    state
        .get("players")
        .and_then(|p| p.get(pk))
        .and_then(|p| p.get_str("partnership"))
        .unwrap_or_default()
        .to_owned()
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

#[cfg(test)]
mod tests {
    //! What every file's tests share.
    use super::*;

    /// The four seats' members: `pk0`…`pk3`, active.
    pub(super) fn members() -> Vec<Value> {
        (0..4)
            .map(|n| {
                Value::Object(obj! {
                    "public_key" => format!("pk{n}"), "seat" => n, "status" => "active",
                })
            })
            .collect()
    }

    /// Seat `seat` sends `action`: the state after it.
    pub(super) fn act(
        b: &mut Bridge,
        state: Value,
        seat: usize,
        action: Value,
    ) -> Result<Value, String> {
        b.handle(state, &members()[seat], &action)
            .map(|o| o.get("state").cloned().unwrap())
    }
}
