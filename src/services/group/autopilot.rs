//! A table seat that plays without its person, by its control mode:
//!
//! - **autonomous**: the table's bot (`Table::bot_action`) moves as soon as
//!   the seat's verified view says it is its turn;
//! - **hybrid**: the person has [`HYBRID_WINDOW`] from the frame that gave
//!   the seat its turn to send an action (`palaver session action`, the
//!   console); then the bot moves;
//! - **human**: the person decides every action; one who has not within
//!   [`HUMAN_TIMEOUT`] gets the table's own way out (a pass, a fold, a check
//!   or a zero bid where the rules have one; the bot's move where they do
//!   not), so a seat never stalls the table.
//!
//! The bot's action goes into the seat's own `group-actions.jsonl`, the file
//! `session action` appends to, and so through the same durable outbox,
//! receipts and retries as a person's. It is asked at most once per frame:
//! an action the rules refuse is not sent again for the same view.
//!
//! Bots for a host's empty seats (`group::seat_bots`) are members like any
//! other: their own keys, registered on the community, admitted by the
//! leader, each with its state dir under the host's (`bots/bot-N`).

use super::Room;
use crate::engine::ControlMode;
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::{self, Table};
use crate::spec::Spec;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a hybrid seat's person has to act before the bot does.
pub const HYBRID_WINDOW: Duration = Duration::from_secs(15);

/// How long a human seat's person has before the table's way out is taken.
pub const HUMAN_TIMEOUT: Duration = Duration::from_secs(120);

/// The most bots one host seats.
pub const MAX_BOTS: usize = 31;

/// What a seat sends for a view (None: not its turn).
pub type Autoplay = Arc<dyn Fn(&Value) -> Option<Value> + Send + Sync>;

/// A seat's bot or timeout rule, and what it has tried.
pub struct Autopilot {
    play: Autoplay,
    /// How long a frame must stand before the autopilot acts.
    wait: Duration,
    /// The frame the seat has been looking at, and since when.
    seen: Option<(u64, Instant)>,
    /// The frame the autopilot last acted on.
    last: Option<u64>,
}

impl Autopilot {
    pub fn new(play: Autoplay, wait: Duration) -> Autopilot {
        Autopilot {
            play,
            wait,
            seen: None,
            last: None,
        }
    }

    /// The action to send now for `view` at frame `seq`, if the seat's wait
    /// is over and it has not acted on this frame yet.
    pub fn next(&mut self, seq: u64, view: &Value) -> Option<Value> {
        let now = Instant::now();
        let since = match self.seen {
            Some((s, t)) if s == seq => t,
            _ => {
                self.seen = Some((seq, now));
                now
            }
        };
        if now.duration_since(since) < self.wait || self.last == Some(seq) {
            return None;
        }
        let action = (self.play)(view)?;
        self.last = Some(seq);
        Some(action)
    }
}

/// The bundled alias of a spec, if it is one.
pub fn alias_of(spec: &Spec) -> Option<String> {
    crate::library::Library::bundled()
        .entries()
        .iter()
        .find(|e| e.protocol_id == spec.protocol_id())
        .map(|e| e.alias.clone())
}

/// The autopilot of a seat at a table in `mode` (None: not a table).
pub fn for_seat(spec: &Spec, options: &Map, mode: ControlMode) -> Option<Mutex<Autopilot>> {
    let table = Mutex::new(tables::table_for_alias(&alias_of(spec)?, options)?);
    let (wait, bot) = match mode {
        ControlMode::Autonomous => (Duration::ZERO, true),
        ControlMode::Hybrid => (HYBRID_WINDOW, true),
        ControlMode::Human => (HUMAN_TIMEOUT, false),
    };
    let play: Autoplay = Arc::new(move |view: &Value| {
        let t = table.lock().ok()?;
        if bot {
            t.bot_action(view)
        } else {
            way_out(&**t, view)
        }
    });
    Some(Mutex::new(Autopilot::new(play, wait)))
}

/// The table's own way out for a seat whose person did not act: a pass, a
/// fold, a check or a zero bid when the rules offer one, else the bot's
/// move (a trick's leader must play something).
pub fn way_out(t: &dyn Table, view: &Value) -> Option<Value> {
    let legal = t.legal_actions(view);
    if legal.is_empty() {
        return None;
    }
    legal
        .iter()
        .find(|a| match a.get_str("kind") {
            Some("pass" | "fold" | "check") => true,
            Some("bid") => a.get("value").and_then(Value::as_i64) == Some(0),
            _ => false,
        })
        .cloned()
        .or_else(|| t.bot_action(view))
}

/// Lets the room's autopilot act on `view` (frame `seq`): its action is
/// appended to the seat's group-actions.jsonl and recorded as
/// `group_autoplay`.
pub fn act(room: &Room, seq: u64, view: Option<&Value>) {
    let (Some(pilot), Some(view)) = (&room.autopilot, view) else {
        return;
    };
    let action = match pilot.lock() {
        Ok(mut p) => p.next(seq, view),
        Err(_) => None,
    };
    let Some(action) = action else {
        return;
    };
    match super::outbox::append_action(&room.dir, &action) {
        Ok(_) => room.event("group_autoplay", obj! { "seq" => seq, "action" => action }),
        Err(e) => room.event("group_autoplay_failed", obj! { "error" => e }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_autopilot_waits_its_window_and_acts_once_per_frame() {
        let play: Autoplay = Arc::new(|v: &Value| v.get("turn").map(|_| Value::from("go")));
        let mut p = Autopilot::new(play.clone(), Duration::ZERO);
        let mine = Value::Object(obj! { "turn" => true });
        assert_eq!(p.next(1, &mine), Some(Value::from("go")));
        assert_eq!(p.next(1, &mine), None, "once per frame");
        assert_eq!(p.next(2, &mine), Some(Value::from("go")));
        assert_eq!(p.next(3, &Value::Object(Map::new())), None, "not its turn");
        let mut slow = Autopilot::new(play, Duration::from_secs(3600));
        assert_eq!(slow.next(1, &mine), None, "the person's window is open");
    }

    #[test]
    fn a_human_seat_times_out_into_the_rules_way_out() {
        let spec = crate::library::bundled_spec("four-player-landlord-v1").unwrap();
        let options = obj! { "deal_seed" => "w" };
        let mut t = tables::table_for_alias("four-player-landlord-v1", &options).unwrap();
        let members: Vec<Value> = (0..4)
            .map(|n| Value::Object(obj! { "member_id" => format!("m{n}"), "public_key" => format!("{n:064x}"), "seat" => n, "status" => "active" }))
            .collect();
        let state = t.initial_state(&members).unwrap();
        let view = t.view(&state, &members[0]).unwrap();
        let out = way_out(&*t, &view).unwrap();
        assert_eq!(out, Value::Object(obj! { "kind" => "bid", "value" => 0 }));
        let other = t.view(&state, &members[1]).unwrap();
        assert_eq!(way_out(&*t, &other), None, "not seat 1's turn");
        assert!(for_seat(spec, &options, ControlMode::Human).is_some());
        let room = crate::library::bundled_spec("community-room-v1").unwrap();
        assert!(for_seat(room, &Map::new(), ControlMode::Autonomous).is_none());
    }
}
