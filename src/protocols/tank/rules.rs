//! The match rules and how they come from the invitation's options.

use super::TankError;
use super::map::{self, Grid};
use crate::json::{Map, Value};

/// The tank's numbers (the `balance` table's `tank` row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Balance {
    /// Hit points a tank starts with (and a repair caps at). 1..=99.
    pub hp: i64,
    /// Fixed-point units a tank moves per tick (1000 = one cell). 40..=1000.
    pub speed: i64,
    /// Ticks between two shells. 1..=60.
    pub fire_cooldown: i64,
    /// Fixed-point units a shell flies per tick. 100..=3000.
    pub bullet_speed: i64,
}

impl Default for Balance {
    fn default() -> Self {
        Balance {
            hp: 4,
            speed: 180,
            fire_cooldown: 7,
            bullet_speed: 560,
        }
    }
}

/// Whether power-ups lie on the map's pickup cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickupMode {
    None,
    Powerups,
}

impl PickupMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PickupMode::None => "none",
            PickupMode::Powerups => "powerups",
        }
    }
}

/// The rules a world carries (and hashes) from its first tick to its last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub balance: Balance,
    /// Tanks per side, 1..=32.
    pub team_size: usize,
    /// The tick at which the match ends whatever is left, 10..=100000.
    pub max_ticks: i64,
    pub friendly_fire: bool,
    pub pickup_mode: PickupMode,
    /// How long a speed or rapid-fire power-up lasts, 10..=10000 ticks.
    pub powerup_duration_ticks: i64,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            balance: Balance::default(),
            team_size: 5,
            max_ticks: 1800,
            friendly_fire: false,
            pickup_mode: PickupMode::None,
            powerup_duration_ticks: 100,
        }
    }
}

/// The match a set of options describes: its rules and its map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchSetup {
    pub rules: Rules,
    pub grid: Grid,
}

fn int_in(options: &Map, key: &str, lo: i64, hi: i64, default: i64) -> Result<i64, TankError> {
    match options.get(key) {
        None => Ok(default),
        Some(v) => match v.as_i64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(TankError::new(format!(
                "option {key} must be an integer from {lo} to {hi}"
            ))),
        },
    }
}

impl MatchSetup {
    /// The rules and map of the invitation options `options` (the
    /// protocol's parameters: `balance` {tank: {hp, speed, fire_cooldown,
    /// bullet_speed}}, `team_size`, `max_ticks`, `map_text`,
    /// `friendly_fire`, `pickup_mode`, `powerup_duration_ticks`; absent ones
    /// take the reference's defaults, other keys are not the simulation's).
    /// Every value is checked as the reference checks options against the
    /// spec's parameters (types, ranges, a `balance` table whose every row
    /// has all four columns and no other, `map_text` at most 32768 UTF-8
    /// bytes); the map must parse and have room for both teams. The reference has no random seed: the
    /// same options always give the same world.
    pub fn from_options(options: &Map) -> Result<MatchSetup, TankError> {
        // The spec's `table` parameter: every row (whatever its key) complete,
        // no unknown column, each in range; the `tank` row is the one used.
        let mut balance = Balance::default();
        match options.get("balance") {
            None => {}
            Some(Value::Object(table)) => {
                for (key, row) in table.iter() {
                    let Some(row) = row.as_object() else {
                        return Err(TankError::new(format!(
                            "option balance.{key} must be an object"
                        )));
                    };
                    if let Some(k) = row
                        .keys()
                        .find(|k| !matches!(*k, "hp" | "speed" | "fire_cooldown" | "bullet_speed"))
                    {
                        return Err(TankError::new(format!(
                            "option balance.{key} has an unknown column {k:?}"
                        )));
                    }
                    let need = |col: &str, lo: i64, hi: i64| -> Result<i64, TankError> {
                        match row.get(col).and_then(Value::as_i64) {
                            Some(n) if (lo..=hi).contains(&n) => Ok(n),
                            _ => Err(TankError::new(format!(
                                "option balance.{key}.{col} must be an integer from {lo} to {hi}"
                            ))),
                        }
                    };
                    let b = Balance {
                        hp: need("hp", 1, 99)?,
                        speed: need("speed", 40, 1000)?,
                        fire_cooldown: need("fire_cooldown", 1, 60)?,
                        bullet_speed: need("bullet_speed", 100, 3000)?,
                    };
                    if key == "tank" {
                        balance = b;
                    }
                }
            }
            Some(_) => return Err(TankError::new("option balance must be an object")),
        }
        let d = Rules::default();
        let team_size = int_in(options, "team_size", 1, 32, d.team_size as i64)? as usize;
        let max_ticks = int_in(options, "max_ticks", 10, 100_000, d.max_ticks)?;
        let powerup_duration_ticks = int_in(
            options,
            "powerup_duration_ticks",
            10,
            10_000,
            d.powerup_duration_ticks,
        )?;
        let friendly_fire = match options.get("friendly_fire") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(TankError::new("option friendly_fire must be true or false")),
        };
        let pickup_mode = match options.get("pickup_mode") {
            None => PickupMode::None,
            Some(v) => match v.as_str() {
                Some("none") => PickupMode::None,
                Some("powerups") => PickupMode::Powerups,
                _ => {
                    return Err(TankError::new(
                        "option pickup_mode must be none or powerups",
                    ));
                }
            },
        };
        let grid = match options.get("map_text") {
            None => map::default_grid(),
            Some(Value::String(s)) if s.is_empty() => map::default_grid(),
            Some(Value::String(s)) => {
                if s.len() > 32_768 {
                    return Err(TankError::new(
                        "option map_text is longer than 32768 bytes (UTF-8)",
                    ));
                }
                map::parse_map(s)?
            }
            Some(_) => return Err(TankError::new("option map_text must be text")),
        };
        map::spawn_cells(&grid, team_size)?;
        Ok(MatchSetup {
            rules: Rules {
                balance,
                team_size,
                max_ticks,
                friendly_fire,
                pickup_mode,
                powerup_duration_ticks,
            },
            grid,
        })
    }
}
