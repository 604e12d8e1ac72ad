//! tank-battle-v1's simulation: the reference's rules in integer
//! fixed-point arithmetic, deterministic, with a per-tick state hash equal
//! to the reference's (`sha256(canonical_json(world))`).
//!
//! - [`MatchSetup::from_options`] checks the invitation options and builds
//!   the rules and map; [`World::new`] places the tanks and power-ups at
//!   tick 0.
//! - [`validate_commands`] checks a side's JSON batch for a future tick and
//!   returns typed [`Command`]s; [`World::step`] advances one tick with both
//!   sides' commands and returns its [`Event`]s.
//! - [`World::outcome`], [`World::state_hash`], [`World::to_value`] (the
//!   frame's `state`), and [`World::from_value`] to read a frame's state
//!   back (checked, and refused unless it writes back byte for byte).
//!
//! - [`commander`]: the reference's auto commander (a side's commands
//!   for a tick from its strategy.json) and its tactical whisper parser.
//!
//! - [`hooks::TankBattle`]: the native hooks the realtime runtime
//!   (`engine::realtime`, `engine/flows/realtime.rs`) drives.
//!
//! tests/tank_sim.rs steps the reference's hooks.py and this module side by side and compares every tick's hash.

mod command;
pub mod commander;
mod decode;
mod encode;
pub mod hooks;
mod map;
mod rules;
mod types;
mod validate;
mod world;

pub use command::{Command, commands_to_value};
pub use encode::events_value;
pub use map::{
    BRICK, BUSH, Cell, DEFAULT_SIDE, FLOOR, Grid, PICKUP, SCALE, STEEL, WATER, blocks_move,
    cell_center, default_grid, parse_map, spawn_cells,
};
pub use rules::{Balance, MatchSetup, PickupMode, Rules};
pub use types::{Dir, Team, UnitId};
pub use validate::validate_commands;
pub use world::{
    Bullet, EndReason, Event, MUZZLE, Outcome, Pickup, PickupKind, SCHEMA_VERSION, TANK_HALF, Tank,
    World, rect_blocked,
};

/// Why options, a map or a command were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TankError {
    pub reason: String,
}

impl TankError {
    pub fn new(reason: impl Into<String>) -> TankError {
        TankError {
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for TankError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for TankError {}

#[cfg(test)]
mod tests;
