//! A card table's seat as its state dir holds it, for the console's tests
//! and benchmarks: a table dealt and played by the real rules
//! (`protocols::tables`) from a fixed seed, and the host's state dir
//! (`sessions/host-group-…`) written the way `services::group` leaves it,
//! seen from seat 0 (snapshot.json with the seat's verified view,
//! details.jsonl with the frames' events, events.jsonl, the host's `bots/`).
#![allow(dead_code)]

use palaver::json::Value;
use palaver::obj;
use palaver::protocols::tables::Table;
use std::path::{Path, PathBuf};

pub const LANDLORD: &str = "four-player-landlord-v1";

/// Seat n's key: the host (seat 0, this console), two bots, a person.
pub fn pk(n: u8) -> String {
    format!("{:x}{:x}", n + 10, n + 10).repeat(32)
}

pub fn member(n: u8) -> Value {
    Value::Object(obj! {
        "member_id" => format!("m{n}"), "public_key" => pk(n), "seat" => i64::from(n), "status" => "active",
    })
}

pub fn members() -> Vec<Value> {
    (0..4).map(member).collect()
}

pub fn ts(sec: u32) -> String {
    format!("2026-11-30T12:{:02}:{:02}.000000+00:00", sec / 60, sec % 60)
}

pub fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, palaver::json::canonical::to_string_ordered(v)).unwrap();
}

pub fn lines(path: &Path, l: &[Value]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = l
        .iter()
        .map(|v| palaver::json::canonical::to_string_ordered(v) + "\n")
        .collect();
    std::fs::write(path, text).unwrap();
}

/// A table played by the rules: the state, the frames' events so far.
pub struct Play {
    pub alias: &'static str,
    pub rules: Box<dyn Table>,
    pub state: Value,
    pub frames: Vec<Vec<Value>>,
}

impl Play {
    pub fn deal() -> Play {
        Play::deal_of(LANDLORD, "console-fixture")
    }

    /// A table of `alias` dealt from `seed` by its rules.
    pub fn deal_of(alias: &'static str, seed: &str) -> Play {
        let mut rules =
            palaver::protocols::tables::table_for_alias(alias, &obj! { "deal_seed" => seed })
                .unwrap();
        let state = rules.initial_state(&members()).unwrap();
        Play {
            alias,
            rules,
            state,
            frames: vec![Vec::new()],
        }
    }

    pub fn view(&mut self, n: u8) -> Value {
        self.rules.view(&self.state, &member(n)).unwrap()
    }

    pub fn current(&self) -> u8 {
        let cur = self.state.get_str("current_player").unwrap();
        (0..4).find(|n| pk(*n) == cur).unwrap()
    }

    pub fn act(&mut self, action: Value) {
        let n = self.current();
        let r = self
            .rules
            .handle(self.state.clone(), &member(n), &action)
            .unwrap_or_else(|e| panic!("seat {n} {action:?}: {e:?}"));
        self.state = r.get("state").unwrap().clone();
        self.frames
            .push(r.get("events").and_then(Value::as_array).unwrap().clone());
    }

    /// The bots play until it is seat 0's turn.
    pub fn bots_until_mine(&mut self) {
        while self.current() != 0 {
            let n = self.current();
            let v = self.view(n);
            let a = self.rules.bot_action(&v).unwrap();
            self.act(a);
        }
    }

    /// The host's state dir (`sessions/host-group-…`) as the runtime
    /// leaves it, seen from seat 0.
    pub fn write(&mut self, data: &Path, status: &str) -> PathBuf {
        let dir = data.join("sessions").join("host-group-1796000000000");
        let spec = palaver::library::bundled_spec(self.alias).unwrap();
        let pid = spec.protocol_id().to_owned();
        let pname = spec.name().unwrap_or("Table").to_owned();
        write(
            &dir.join("session.json"),
            &Value::Object(obj! {
                "role" => "host", "post_id" => "p-table", "protocol_id" => pid,
                "group_id" => "0123456789abcdef0123456789abcdef", "session_id" => "0123456789abcdef0123456789abcdef",
                "group_role" => "leader", "leader_epoch" => 0, "local_control_mode" => "human",
                "status" => status, "participant_count" => 4,
                "started_at" => palaver::session::files::epoch_now() - 600.0,
            }),
        );
        let seq = self.frames.len() as i64 - 1;
        let view = self.view(0);
        write(
            &dir.join("snapshot.json"),
            &Value::Object(obj! {
                "phase" => "group_active", "role" => "host", "protocol_name" => pname,
                "group" => obj! {
                    "group_id" => "0123456789abcdef0123456789abcdef", "leader_public_key" => pk(0),
                    "leader_epoch" => 0, "seq" => seq, "membership_version" => 4,
                    "members" => members(),
                },
                "group_view" => view,
                "group_events" => Value::Array(self.frames.last().unwrap().clone()),
                "completed" => false, "outcome" => Value::Null,
            }),
        );
        let details: Vec<Value> = self
            .frames
            .iter()
            .enumerate()
            .map(|(i, evs)| {
                Value::Object(obj! {
                    "type" => "group_frame", "seq" => i as i64, "frame_kind" => "frame",
                    "events" => Value::Array(evs.clone()), "ts" => ts(i as u32 * 3),
                })
            })
            .collect();
        lines(&dir.join("details.jsonl"), &details);
        lines(
            &dir.join("events.jsonl"),
            &[
                Value::Object(
                    obj! { "ts" => ts(0), "type" => "group_started", "data" => obj! { "group_id" => "0123456789abcdef0123456789abcdef" } },
                ),
                Value::Object(obj! {
                    "ts" => ts(1), "type" => "group_member_disconnected",
                    "data" => obj! { "public_key" => pk(3), "reason" => "timeout" },
                }),
                Value::Object(obj! {
                    "ts" => ts(2), "type" => "group_member_reconnected",
                    "data" => obj! { "public_key" => pk(3) },
                }),
            ],
        );
        // The host seated seats 1 and 2 with its bots.
        for n in [1u8, 2] {
            write(
                &dir.join("bots")
                    .join(format!("bot-{n}"))
                    .join("session.json"),
                &Value::Object(obj! {
                    "role" => "guest", "group_role" => "member", "member_id" => format!("m{n}"),
                    "seat" => i64::from(n), "status" => "running",
                }),
            );
        }
        dir
    }
}
