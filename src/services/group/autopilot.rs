//! A table seat that plays by its control mode. Each of the seat's turns
//! (a frame whose view gives it legal actions) is a decision window on the
//! session's decision bus (`decision/` in the seat's state dir, the same
//! bus and files as a two-party game's: `state.json` names the open window
//! by `action_seq` = the frame's seq; `palaver session decide DIR
//! '{"kind":"bid","value":2}'` answers it, and a decision without a match
//! key binds to the window open when it arrives):
//!
//! - **autonomous**: the table's bot (`Table::bot_action`) moves as soon as
//!   the seat's verified view says it is its turn (no window);
//! - **hybrid**: a decision within `min_think_seconds` (default
//!   [`HYBRID_WINDOW`]) is taken, else the bot moves;
//! - **human**: the person's decision is taken once released; one who has
//!   not decided by `max_think_seconds` (default [`HUMAN_TIMEOUT`]) gets the
//!   table's own way out (a pass — of a trick, a declaration or a claim —,
//!   a fold, a check, a zero bid or ending the turn where the rules have
//!   one; the bot's move where they do not), so a seat never stalls the
//!   table.
//!
//! A person may also act at any time with `palaver session action` (the
//! seat's group-actions.jsonl): an open window whose frame has moved on is
//! dropped.
//!
//! The bot's action goes into the seat's own `group-actions.jsonl`, the file
//! `session action` appends to, and so through the same durable outbox,
//! receipts and retries as a person's. It is asked once per frame — a frame
//! named by its leader's epoch and its seq ([`At`]): a new leader restarting
//! the round may frame the seat's turn again at a seq the seat already acted
//! on under the old one, and that is a new turn; when the
//! rules refuse its action (a person's choice the rules do not allow, such as
//! a listed Mahjong `win` right after the seat claimed a pung), the seat gets
//! the frame again with the refused actions set aside: a new window for a
//! person, the first other legal action for a bot or a way out — at most
//! [`MAX_REFUSALS`] times a frame, so a seat never stalls the table and never
//! floods it.
//!
//! Bots for a host's empty seats (`group::seat_bots`) are members like any
//! other: their own keys, registered on the community, admitted by the
//! leader, each with its state dir under the host's (`bots/bot-N`).

use super::Room;
use crate::engine::{ControlMode, Decided, Decider, Role, Window};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::{self, Table};
use crate::session::{DecisionBus, StateSink};
use crate::spec::Spec;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a hybrid seat's person has to act before the bot does.
pub const HYBRID_WINDOW: Duration = Duration::from_secs(15);

/// How long a human seat's person has before the table's way out is taken.
pub const HUMAN_TIMEOUT: Duration = Duration::from_secs(120);

/// How often one frame's action may be refused before the seat waits for
/// the next frame.
pub const MAX_REFUSALS: usize = 3;

/// The most bots one host seats.
pub const MAX_BOTS: usize = 31;

/// A frame: its leader's epoch and its seq (a seq alone repeats when a new
/// leader takes over from a checkpoint older than the seat's last frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub epoch: u64,
    pub seq: u64,
}

/// What a seat sends for a view (None: not its turn), given the actions
/// the rules already refused on this frame.
pub type Autoplay = Arc<dyn Fn(&Value, &[Value]) -> Option<Value> + Send + Sync>;

/// A seat's bot, its decision windows, and what it has tried.
pub struct Autopilot {
    /// The seat's own move when nobody decides: the bot's (autonomous,
    /// hybrid) or the rules' way out (human).
    play: Autoplay,
    /// How long a frame must stand before the autopilot acts with no bus.
    wait: Duration,
    /// The decision bus of a hybrid or human seat.
    bus: Option<(Arc<DecisionBus>, ControlMode)>,
    /// The frame the seat has been looking at, and since when.
    seen: Option<(At, Instant)>,
    /// The frame the autopilot last acted on, and what it sent.
    last: Option<(At, Value)>,
    /// The actions the rules refused on frame `.0`.
    refused: (At, Vec<Value>),
    /// The open window: its frame and the task deciding it.
    window: Option<(At, tokio::task::JoinHandle<Value>)>,
    /// A frame that was not the seat's turn: asked every few milliseconds,
    /// the rules are not asked again until the frame changes.
    idle: Option<At>,
}

impl Autopilot {
    pub fn new(play: Autoplay, wait: Duration) -> Autopilot {
        Autopilot {
            play,
            wait,
            bus: None,
            seen: None,
            last: None,
            refused: (At { epoch: 0, seq: 0 }, Vec::new()),
            window: None,
            idle: None,
        }
    }

    /// An autopilot whose turns are windows on `bus` under `mode`.
    pub fn with_bus(play: Autoplay, bus: Arc<DecisionBus>, mode: ControlMode) -> Autopilot {
        let mut pilot = Autopilot::new(play, Duration::ZERO);
        pilot.bus = Some((bus, mode));
        pilot
    }

    /// The action to send now for `view` at frame `at`, if the seat's
    /// turn has been decided and it has not acted on this frame yet.
    pub fn next(&mut self, at: At, view: &Value) -> Option<Value> {
        if let Some((s, _)) = &self.window
            && *s != at
        {
            // The frame moved on (the person acted some other way).
            if let Some((_, h)) = self.window.take() {
                h.abort();
            }
        }
        if self.idle == Some(at) || self.last.as_ref().is_some_and(|(s, _)| *s == at) {
            return None;
        }
        if self.refused.0 != at {
            self.refused = (at, Vec::new());
        }
        if let Some((bus, mode)) = &self.bus {
            if let Some((_, h)) = &self.window {
                if !h.is_finished() {
                    return None;
                }
                let (_, h) = self.window.take()?;
                let action = futures_util::FutureExt::now_or_never(h)?.ok()?;
                self.last = Some((at, action.clone()));
                return Some(action);
            }
            let Some(auto) = (self.play)(view, &self.refused.1) else {
                self.idle = Some(at);
                return None;
            };
            let (bus, mode) = (bus.clone(), *mode);
            let n = at.seq;
            let h = tokio::spawn(async move { decide_turn(&bus, mode, n, auto).await });
            self.window = Some((at, h));
            return None;
        }
        let now = Instant::now();
        let since = match self.seen {
            Some((s, t)) if s == at => t,
            _ => {
                self.seen = Some((at, now));
                now
            }
        };
        if now.duration_since(since) < self.wait {
            return None;
        }
        let Some(action) = (self.play)(view, &self.refused.1) else {
            self.idle = Some(at);
            return None;
        };
        self.last = Some((at, action.clone()));
        Some(action)
    }

    /// The rules refused `action`, this seat's last: the seat may act on
    /// that frame again, without it (up to [`MAX_REFUSALS`] times). An
    /// action the autopilot did not send (a person's `session action`)
    /// changes nothing.
    pub fn refused(&mut self, action: &Value) {
        let Some((at, sent)) = &self.last else {
            return;
        };
        if sent != action {
            return;
        }
        let at = *at;
        if self.refused.0 != at {
            self.refused = (at, Vec::new());
        }
        if self.refused.1.len() >= MAX_REFUSALS {
            return;
        }
        self.refused.1.push(action.clone());
        self.idle = None;
        // `seen` still holds the frame's arrival: a seat without a bus does
        // not wait its window again.
        self.last = None;
    }
}

impl Drop for Autopilot {
    fn drop(&mut self) {
        if let Some((_, h)) = self.window.take() {
            h.abort();
        }
    }
}

/// One turn as a window on the bus: the person's decision (its body less
/// the match keys and `_meta` is the action), else `auto`.
async fn decide_turn(bus: &DecisionBus, mode: ControlMode, seq: u64, auto: Value) -> Value {
    let w = Window {
        match_key: "action_seq",
        match_value: Value::from(seq),
        auto: auto.as_object().cloned().unwrap_or_default(),
        value_field: "",
        policy: None,
    };
    match bus.decide(mode, &w).await {
        Ok(Decided::Explicit(mut body)) => {
            body.remove("_meta");
            for k in crate::session::decision::MATCH_KEYS {
                body.remove(k);
            }
            Value::Object(body)
        }
        Ok(Decided::Auto) | Err(_) => auto,
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
/// With the seat's `sink` (and its role), a hybrid or human seat's turns
/// are windows on its decision bus; without one, the bot or the way out
/// moves after [`HYBRID_WINDOW`] or [`HUMAN_TIMEOUT`].
pub fn for_seat(
    spec: &Spec,
    options: &Map,
    mode: ControlMode,
    sink: Option<(&Arc<StateSink>, Role)>,
) -> Option<Mutex<Autopilot>> {
    let table = Mutex::new(tables::table_for_alias(&alias_of(spec)?, options)?);
    let (wait, bot) = match mode {
        ControlMode::Autonomous => (Duration::ZERO, true),
        ControlMode::Hybrid => (HYBRID_WINDOW, true),
        ControlMode::Human => (HUMAN_TIMEOUT, false),
    };
    let play: Autoplay = Arc::new(move |view: &Value, refused: &[Value]| {
        let t = table.lock().ok()?;
        let first = if bot {
            t.bot_action(view)
        } else {
            way_out(&**t, view)
        };
        avoiding(&**t, view, first, refused)
    });
    let pilot = match (mode, sink) {
        (ControlMode::Autonomous, _) | (_, None) => Autopilot::new(play, wait),
        (_, Some((sink, role))) => {
            // The windows' lengths: the invitation's own, else a table's.
            let mut think = options.clone();
            let default = |k: &str, secs: Duration, m: &mut Map| {
                if !m.contains_key(k) {
                    m.insert(k, Value::from(secs.as_secs()));
                }
            };
            match mode {
                ControlMode::Hybrid => default("min_think_seconds", HYBRID_WINDOW, &mut think),
                _ => default("max_think_seconds", HUMAN_TIMEOUT, &mut think),
            }
            let bus = Arc::new(DecisionBus::new(sink.clone(), role, think, spec));
            Autopilot::with_bus(play, bus, mode)
        }
    };
    Some(Mutex::new(pilot))
}

/// The table's own way out for a seat whose person did not act: a pass (of
/// a trick or a declaration), a fold, a check, a zero bid or ending the
/// turn (aether-sigil) when the rules offer one, else the bot's move (a
/// trick's leader must play something).
pub fn way_out(t: &dyn Table, view: &Value) -> Option<Value> {
    let legal = t.legal_actions(view);
    if legal.is_empty() {
        return None;
    }
    legal
        .iter()
        .find(|a| match a.get_str("kind") {
            // pass_declare: tractor's declarations, where every seat may
            // act at once (no current player).
            Some("pass" | "pass_claim" | "fold" | "check" | "end_turn" | "pass_declare") => true,
            Some("bid") => a.get("value").and_then(Value::as_i64) == Some(0),
            _ => false,
        })
        .cloned()
        .or_else(|| t.bot_action(view))
}

/// `first`, unless the rules refused it on this frame: then the table's way
/// out, else the first legal action they have not refused.
fn avoiding(t: &dyn Table, view: &Value, first: Option<Value>, refused: &[Value]) -> Option<Value> {
    match first {
        Some(a) if !refused.contains(&a) => Some(a),
        _ if refused.is_empty() => None,
        _ => way_out(t, view)
            .filter(|a| !refused.contains(a))
            .or_else(|| {
                t.legal_actions(view)
                    .into_iter()
                    .find(|a| !refused.contains(a))
            }),
    }
}

/// The rules refused `action`, the room's own: its autopilot (if it sent
/// it) may act on the same frame again without it.
pub fn refused(room: &Room, action: &Map) {
    let Some(pilot) = &room.autopilot else {
        return;
    };
    if let Ok(mut p) = pilot.lock() {
        p.refused(&Value::Object(action.clone()));
    }
}

/// Lets the room's autopilot act on `view` (frame `at`): its action is
/// appended to the seat's group-actions.jsonl and recorded as
/// `group_autoplay`.
pub fn act(room: &Room, at: At, view: Option<&Value>) {
    let (Some(pilot), Some(view)) = (&room.autopilot, view) else {
        return;
    };
    let action = match pilot.lock() {
        Ok(mut p) => p.next(at, view),
        Err(_) => None,
    };
    let Some(action) = action else {
        return;
    };
    match super::outbox::append_action(&room.dir, &action) {
        Ok(_) => room.event(
            "group_autoplay",
            obj! { "leader_epoch" => at.epoch, "seq" => at.seq, "action" => action },
        ),
        Err(e) => room.event("group_autoplay_failed", obj! { "error" => e }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(epoch: u64, seq: u64) -> At {
        At { epoch, seq }
    }

    #[test]
    fn an_autopilot_waits_its_window_and_acts_once_per_frame() {
        let play: Autoplay =
            Arc::new(|v: &Value, _: &[Value]| v.get("turn").map(|_| Value::from("go")));
        let mut p = Autopilot::new(play.clone(), Duration::ZERO);
        let mine = Value::Object(obj! { "turn" => true });
        assert_eq!(p.next(at(0, 1), &mine), Some(Value::from("go")));
        assert_eq!(p.next(at(0, 1), &mine), None, "once per frame");
        assert_eq!(p.next(at(0, 2), &mine), Some(Value::from("go")));
        assert_eq!(
            p.next(at(0, 3), &Value::Object(Map::new())),
            None,
            "not its turn"
        );
        // A new leader restarting the round frames the seat's turn at a seq
        // it already acted on: a new turn all the same.
        assert_eq!(p.next(at(1, 2), &mine), Some(Value::from("go")));
        assert_eq!(p.next(at(1, 2), &mine), None, "once per frame");
        let mut slow = Autopilot::new(play, Duration::from_secs(3600));
        assert_eq!(
            slow.next(at(0, 1), &mine),
            None,
            "the person's window is open"
        );
    }

    #[test]
    fn a_refused_action_frees_the_frame_for_another_choice() {
        // The bot's favourite is "a"; once refused, it picks "b"; after
        // MAX_REFUSALS refusals of one frame, the seat waits for the next.
        let play: Autoplay = Arc::new(|_: &Value, refused: &[Value]| {
            ["a", "b", "c", "d", "e"]
                .into_iter()
                .map(Value::from)
                .find(|a| !refused.contains(a))
        });
        let mut p = Autopilot::new(play, Duration::ZERO);
        let view = Value::Object(obj! { "turn" => true });
        assert_eq!(p.next(at(0, 7), &view), Some(Value::from("a")));
        p.refused(&Value::from("zzz"));
        assert_eq!(p.next(at(0, 7), &view), None, "not the autopilot's action");
        p.refused(&Value::from("a"));
        assert_eq!(p.next(at(0, 7), &view), Some(Value::from("b")));
        p.refused(&Value::from("b"));
        assert_eq!(p.next(at(0, 7), &view), Some(Value::from("c")));
        p.refused(&Value::from("c"));
        assert_eq!(p.next(at(0, 7), &view), Some(Value::from("d")));
        p.refused(&Value::from("d"));
        assert_eq!(
            p.next(at(0, 7), &view),
            None,
            "at most MAX_REFUSALS a frame"
        );
        assert_eq!(
            p.next(at(0, 8), &view),
            Some(Value::from("a")),
            "a new frame"
        );
    }

    #[test]
    fn a_refused_bot_move_falls_back_to_another_legal_action() {
        let options = obj! { "deal_seed" => "w" };
        let mut t = tables::table_for_alias("four-player-landlord-v1", &options).unwrap();
        let members: Vec<Value> = (0..4)
            .map(|n| Value::Object(obj! { "member_id" => format!("m{n}"), "public_key" => format!("{n:064x}"), "seat" => n, "status" => "active" }))
            .collect();
        let state = t.initial_state(&members).unwrap();
        let view = t.view(&state, &members[0]).unwrap();
        let bot = t.bot_action(&view).unwrap();
        assert_eq!(
            avoiding(&*t, &view, Some(bot.clone()), &[]),
            Some(bot.clone())
        );
        let other = avoiding(&*t, &view, Some(bot.clone()), std::slice::from_ref(&bot)).unwrap();
        assert_ne!(other, bot);
        assert!(t.legal_actions(&view).contains(&other));
        let all = t.legal_actions(&view);
        assert_eq!(avoiding(&*t, &view, Some(bot), &all), None, "nothing left");
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
        assert!(for_seat(spec, &options, ControlMode::Human, None).is_some());
        let room = crate::library::bundled_spec("community-room-v1").unwrap();
        assert!(for_seat(room, &Map::new(), ControlMode::Autonomous, None).is_none());
        // An aether-sigil seat's way out ends its turn (no cards played for it).
        let mut t = tables::table_for_alias("aether-sigil-v1", &options).unwrap();
        let state = t.initial_state(&members).unwrap();
        let view = t.view(&state, &members[0]).unwrap();
        assert_eq!(
            way_out(&*t, &view),
            Some(Value::Object(obj! { "kind" => "end_turn" }))
        );
    }
}
