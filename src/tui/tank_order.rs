//! A tank battle's orders as changes to strategy.json (what the battlefield's
//! keys and command line send, applied by a task), and the world a
//! snapshot carries. Below the screens, the effects, the tasks and the
//! watcher, which all use it.

use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tank::commander::{WhisperContext, apply_whisper};
use crate::protocols::tank::{Team, World};

/// A snapshot's `world`, when it has one with `tanks`: read back, or why not.
pub fn tank_world(snapshot: &Map) -> Option<Result<Box<World>, String>> {
    let w = snapshot.get("world")?;
    w.get("tanks")?;
    Some(
        World::from_value(w)
            .map(Box::new)
            .map_err(|e| format!("the snapshot's world does not read: {e}")),
    )
}

/// A change to strategy.json an order makes.
#[derive(Debug, Clone, PartialEq)]
pub enum TankChange {
    /// Replace `order` (and, for all units, the default `maneuver`).
    Order {
        order: Map,
        maneuver: Option<String>,
    },
    /// A line in words, compiled by the commander's whisper parser.
    Words {
        text: String,
        role: Option<Team>,
        tick: i64,
        world: Option<Box<World>>,
    },
}

/// Applies `change` to a strategy; what to tell the person.
pub fn apply_change(strategy: &mut Map, change: &TankChange) -> Result<String, String> {
    match change {
        TankChange::Order { order, maneuver } => {
            strategy.insert("order", Value::Object(order.clone()));
            if let Some(m) = maneuver {
                strategy.insert("maneuver", Value::from(m.as_str()));
            }
            let kind = order.get_str("kind").unwrap_or("?");
            let units = match order.get("unit_ids").and_then(Value::as_array) {
                Some(l) => l
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
                None => "all units".to_owned(),
            };
            let tick = order
                .get("issued_at_tick")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            Ok(format!("order {kind} → {units} (tick {tick}) written"))
        }
        TankChange::Words {
            text,
            role,
            tick,
            world,
        } => {
            let ctx = WhisperContext {
                role: *role,
                tick: *tick,
                world: world.as_deref(),
            };
            match apply_whisper(strategy, text, &ctx) {
                Some(intent) => {
                    let phases = intent.plan.orders.len();
                    Ok(format!(
                        "plan written: {} ({phases} phase{})",
                        intent.maneuver.as_str(),
                        if phases == 1 { "" } else { "s" }
                    ))
                }
                None => Err("not understood as an order; kept as a hint for the commander".into()),
            }
        }
    }
}

/// Reads strategy.json, applies the change and replaces the file
/// atomically (recorded in strategy_events.jsonl), as the editor saves.
pub fn write_change(child: &std::path::Path, change: &TankChange) -> Result<String, String> {
    let f = crate::session::strategy::StrategyFile::in_dir(child);
    let mut strategy = f.read();
    let said = apply_change(&mut strategy, change);
    // Words not understood still leave their hint, as a whisper does.
    f.set(
        strategy,
        Some(obj! { "origin" => "console", "kind" => "tank_order" }),
    )
    .map_err(|e| format!("writing {}: {e}", f.path.display()))?;
    said
}
