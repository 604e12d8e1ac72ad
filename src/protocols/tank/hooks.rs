//! tank-battle-v1's native hooks: the simulation and the auto commander
//! behind the realtime runtime (`engine::realtime::RealtimeRules`).
//!
//! The host keeps the authoritative [`World`] and steps it; the guest reads
//! each verified frame's state back into a world for its commander. Both
//! sides' commanders read the session's strategy.json every tick (macro
//! orders, plans, whispers compiled into it); control is autonomous or
//! hybrid, never per-tick decision windows, as in the reference.

use super::commander::Commander;
use super::{Command, MatchSetup, Team, World, validate_commands};
use crate::engine::realtime::{RealtimeRules, RulesError, Stepped, native_ruleset_hash};
use crate::engine::{ControlMode, Ctx, HookError, Hooks, HostMetadata, Role};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;

/// The version of palaver's native tank-battle rules: part of the native
/// ruleset hash, bumped whenever the simulation or the commander changes
/// what a match does.
pub const NATIVE_RULES: &str =
    "palaver tank-battle-v1 native rules 1 (aigenora 0.1.4 hooks.py semantics)";

/// The bundled protocol's alias.
pub const ALIAS: &str = "tank-battle-v1";

pub struct TankBattle {
    setup: Option<MatchSetup>,
    world: Option<World>,
    commander: Option<Commander>,
    fallback: String,
    /// The ruleset hash to present instead of the native one.
    ruleset: Option<String>,
    team_size: i64,
    max_ticks: i64,
    friendly_fire: bool,
    pickup_mode: String,
}

impl Default for TankBattle {
    fn default() -> Self {
        TankBattle {
            setup: None,
            world: None,
            commander: None,
            fallback: "assault".into(),
            ruleset: None,
            team_size: 5,
            max_ticks: 1800,
            friendly_fire: false,
            pickup_mode: "none".into(),
        }
    }
}

fn team(role: Role) -> Team {
    match role {
        Role::Host => Team::Host,
        Role::Guest => Team::Guest,
    }
}

fn typed(list: &[Value]) -> Result<Vec<Command>, RulesError> {
    list.iter()
        .enumerate()
        .map(|(i, v)| Command::from_value(v, i).map_err(|e| RulesError(e.reason)))
        .collect()
}

/// The bundled tank-battle protocol_id.
fn protocol_id() -> String {
    crate::library::Library::bundled()
        .entries()
        .iter()
        .find(|e| e.alias == ALIAS)
        .map(|e| e.protocol_id.clone())
        .unwrap_or_default()
}

/// The ruleset hash palaver's native rules present.
pub fn native_ruleset() -> String {
    native_ruleset_hash(&protocol_id(), NATIVE_RULES)
}

impl TankBattle {
    fn world(&self) -> Result<&World, String> {
        self.world
            .as_ref()
            .ok_or_else(|| "the match has not started".to_owned())
    }

    fn stepped(world: &World) -> Stepped {
        Stepped {
            state: world.to_value(),
            state_hash: Some(world.state_hash()),
            events: super::events_value(&world.events),
            outcome: if world.game_over {
                world.winner.as_str()
            } else {
                "none"
            },
        }
    }
}

#[async_trait]
impl Hooks for TankBattle {
    fn supported_control_modes(&self) -> &'static [ControlMode] {
        &[ControlMode::Autonomous, ControlMode::Hybrid]
    }

    /// The first extra arg is the last-resort maneuver (the reference's
    /// `args[0]`, default assault).
    fn set_extra_args(&mut self, args: Vec<String>) -> Result<(), HookError> {
        if let Some(first) = args.first() {
            if first.chars().count() > 64 {
                return Err(HookError::Invalid(
                    "the fallback maneuver (first extra arg) is over 64 characters".into(),
                ));
            }
            self.fallback = first.clone();
        }
        Ok(())
    }

    fn host_metadata(&self) -> HostMetadata {
        HostMetadata {
            display_name: "Tank Battle · Realtime".into(),
            tags: "game,tank-battle,rts,realtime".into(),
            invite_type: "supply".into(),
            default_options: obj! {
                "team_size" => self.team_size,
                "max_ticks" => self.max_ticks,
                "friendly_fire" => self.friendly_fire,
                "pickup_mode" => self.pickup_mode.as_str(),
            },
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        let setup = MatchSetup::from_options(&ctx.options)
            .map_err(|e| HookError::Invalid(format!("tank-battle options: {e}")))?;
        self.team_size = setup.rules.team_size as i64;
        self.max_ticks = setup.rules.max_ticks;
        self.friendly_fire = setup.rules.friendly_fire;
        self.pickup_mode = setup.rules.pickup_mode.as_str().to_owned();
        self.commander = Some(Commander::with_fallback(team(ctx.role), &self.fallback));
        self.setup = Some(setup);
        Ok(())
    }

    fn realtime(&mut self) -> Option<&mut dyn RealtimeRules> {
        Some(self)
    }
}

#[async_trait]
impl RealtimeRules for TankBattle {
    fn ruleset_hash(&self) -> Result<String, RulesError> {
        Ok(self.ruleset.clone().unwrap_or_else(native_ruleset))
    }

    fn present_ruleset(&mut self, hash: String) {
        self.ruleset = Some(hash);
    }

    async fn initial_state(&mut self) -> Result<Stepped, RulesError> {
        let setup = self
            .setup
            .clone()
            .ok_or_else(|| RulesError("the hooks were not initialised".into()))?;
        let world = World::new(setup);
        let s = Self::stepped(&world);
        self.world = Some(world);
        Ok(s)
    }

    async fn validate_commands(
        &mut self,
        side: Role,
        commands: &Value,
        target_tick: u64,
    ) -> Result<Vec<Value>, String> {
        let world = self.world()?;
        let tick = i64::try_from(target_tick).map_err(|_| "target tick out of range")?;
        validate_commands(world, team(side), commands, tick)
            .map(|list| list.iter().map(Command::to_value).collect())
            .map_err(|e| e.reason)
    }

    async fn step(
        &mut self,
        tick: u64,
        host: &[Value],
        guest: &[Value],
    ) -> Result<Stepped, RulesError> {
        let (host, guest) = (typed(host)?, typed(guest)?);
        let world = self
            .world
            .as_mut()
            .ok_or_else(|| RulesError("the match has not started".into()))?;
        if i64::try_from(tick).ok() != Some(world.tick + 1) {
            return Err(RulesError("tank simulation tick discontinuity".into()));
        }
        world.step(&host, &guest);
        Ok(Self::stepped(world))
    }

    async fn observe(&mut self, state: &Value) -> Result<(), RulesError> {
        self.world = Some(World::from_value(state).map_err(|e| RulesError(e.reason))?);
        Ok(())
    }

    async fn commands(
        &mut self,
        side: Role,
        target_tick: u64,
        strategy: &Map,
    ) -> Result<Vec<Value>, String> {
        let world = self
            .world
            .as_ref()
            .ok_or_else(|| "the match has not started".to_owned())?;
        let commander = self
            .commander
            .get_or_insert_with(|| Commander::with_fallback(team(side), "assault"));
        let tick = i64::try_from(target_tick).map_err(|_| "target tick out of range")?;
        commander
            .commands(world, tick, &Value::Object(strategy.clone()))
            .map(|list| list.iter().map(Command::to_value).collect())
            .map_err(|e| e.reason)
    }

    async fn audit_outcome(&mut self, frame: &Map) -> Map {
        let state = frame.get("state").and_then(Value::as_object);
        let count = |side: &str| -> i64 {
            state
                .and_then(|s| s.get("tanks"))
                .and_then(Value::as_array)
                .map(|tanks| {
                    tanks
                        .iter()
                        .filter(|t| {
                            t.get("team").and_then(Value::as_str) == Some(side)
                                && t.get("hp").and_then(Value::as_i64).unwrap_or(0) > 0
                        })
                        .count() as i64
                })
                .unwrap_or(0)
        };
        let (host_alive, guest_alive) = (count("host"), count("guest"));
        let field = |k: &str| state.and_then(|s| s.get(k));
        let consistent = field("host_alive").and_then(Value::as_i64) == Some(host_alive)
            && field("guest_alive").and_then(Value::as_i64) == Some(guest_alive)
            && field("game_over").and_then(Value::as_bool) == Some(true)
            && field("winner") == frame.get("outcome");
        let max_ticks = field("rules")
            .and_then(|r| r.get("max_ticks"))
            .and_then(Value::as_i64);
        let at_end = matches!(
            (field("tick").and_then(Value::as_i64), max_ticks),
            (Some(t), Some(m)) if t >= m
        );
        let decisive = host_alive == 0 || guest_alive == 0 || at_end;
        obj! {
            "status" => if consistent && decisive { "passed" } else { "failed" },
            "check" => "terminal_condition",
            "host_alive" => host_alive,
            "guest_alive" => guest_alive,
        }
    }

    async fn snapshot(&mut self, state: &Value, events: &Value) -> Map {
        let field = |k: &str| state.get(k).cloned().unwrap_or(Value::Null);
        let over = state.get("game_over").and_then(Value::as_bool) == Some(true);
        let mut patch = obj! {
            "phase" => if over { "game_over" } else { "battle" },
            "team_size" => state.get("rules").and_then(|r| r.get("team_size")).cloned().unwrap_or(Value::Null),
            "host_alive" => field("host_alive"),
            "guest_alive" => field("guest_alive"),
            "world" => state.clone(),
            "combat_events" => events.clone(),
        };
        if let Some(last) = events.as_array().and_then(|e| e.last()) {
            let kind = last.get("type").and_then(Value::as_str).unwrap_or("");
            let summary = match kind {
                "fire" => "Tank fired",
                "hit" => "Shell hit",
                "destroyed" => "Tank destroyed",
                "brick_destroyed" => "Brick wall destroyed",
                "pickup" => "Tank collected a power-up",
                "game_over" => "Battle ended",
                "" => "Battle updated",
                other => other,
            };
            patch.insert(
                "last_event",
                Value::Object(obj! { "summary" => summary, "structured" => last.clone() }),
            );
        }
        patch
    }
}
