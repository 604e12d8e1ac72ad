//! A tank's per-tick command, `{unit_id, move, aim, fire}`.

use super::TankError;
use super::types::{Dir, UnitId};
use crate::json::{Map, Value};

/// One unit's order for one tick: move (or stand), aim (or keep facing the
/// move's way) and whether to fire. A unit keeps its last move and fire
/// until its next command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    pub unit: UnitId,
    pub mv: Dir,
    pub aim: Dir,
    pub fire: bool,
}

impl Command {
    /// The normalised wire form, every field present.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(4);
        m.insert("unit_id", Value::from(self.unit.to_string()));
        m.insert("move", Value::from(self.mv.as_str()));
        m.insert("aim", Value::from(self.aim.as_str()));
        m.insert("fire", Value::Bool(self.fire));
        Value::Object(m)
    }

    /// A command's shape from the wire: an object with `unit_id` (`h<n>` or
    /// `g<n>`) and optional `move` and `aim` (up, down, left, right, none;
    /// default none) and `fire` (a boolean, default false), nothing else.
    /// It does not say whether the unit exists: see [`validate_commands`](super::validate_commands).
    pub fn from_value(v: &Value, index: usize) -> Result<Command, TankError> {
        let Some(m) = v.as_object() else {
            return Err(TankError::new(format!("command {index} is not an object")));
        };
        if let Some(k) = m
            .keys()
            .find(|k| !matches!(*k, "unit_id" | "move" | "aim" | "fire"))
        {
            return Err(TankError::new(format!(
                "command {index} has a field the rules do not know: {k:?}"
            )));
        }
        let unit = m
            .get("unit_id")
            .and_then(Value::as_str)
            .and_then(UnitId::parse)
            .ok_or_else(|| TankError::new(format!("command {index} names no known unit")))?;
        let dir = |key: &str| -> Result<Dir, TankError> {
            match m.get(key) {
                None => Ok(Dir::None),
                Some(v) => v.as_str().and_then(Dir::parse).ok_or_else(|| {
                    TankError::new(format!(
                        "command {index}: {key} must be up, down, left, right or none"
                    ))
                }),
            }
        };
        let mv = dir("move")?;
        let aim = dir("aim")?;
        let fire = match m.get("fire") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(TankError::new(format!(
                    "command {index}: fire must be true or false"
                )));
            }
        };
        Ok(Command {
            unit,
            mv,
            aim,
            fire,
        })
    }
}

/// A list of commands in wire form.
pub fn commands_to_value(cmds: &[Command]) -> Value {
    Value::Array(cmds.iter().map(Command::to_value).collect())
}
