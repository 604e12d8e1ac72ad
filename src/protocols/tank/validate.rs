//! The check a host runs on a side's batch before it queues it for a
//! future tick.

use super::TankError;
use super::command::Command;
use super::types::Team;
use super::world::World;
use crate::json::Value;

/// Check one side's batch for `target_tick` against the world now, as the
/// host does when the batch arrives (and for its own): the tick must be in
/// the future, and every command well formed, for a different live unit of
/// that side. The batch comes back normalised (every field present) and
/// sorted by unit id text; a refusal says which command and why.
pub fn validate_commands(
    world: &World,
    side: Team,
    commands: &Value,
    target_tick: i64,
) -> Result<Vec<Command>, TankError> {
    if target_tick <= world.tick {
        return Err(TankError::new(format!(
            "target tick {target_tick} is not after the current tick {}",
            world.tick
        )));
    }
    let Some(list) = commands.as_array() else {
        return Err(TankError::new("commands must be a list"));
    };
    let mut out: Vec<Command> = Vec::with_capacity(list.len().min(64));
    for (i, v) in list.iter().enumerate() {
        let c = Command::from_value(v, i)?;
        let Some(t) = world.tank(c.unit) else {
            return Err(TankError::new(format!("command {i} names no known unit")));
        };
        if out.iter().any(|o| o.unit == c.unit) {
            return Err(TankError::new(format!("unit {} has two commands", c.unit)));
        }
        if t.team() != side {
            return Err(TankError::new(format!(
                "unit {} is not the {}'s",
                c.unit,
                side.as_str()
            )));
        }
        if !t.alive() {
            return Err(TankError::new(format!("unit {} is destroyed", c.unit)));
        }
        out.push(c);
    }
    out.sort_by(|a, b| a.unit.text_cmp(&b.unit));
    Ok(out)
}
