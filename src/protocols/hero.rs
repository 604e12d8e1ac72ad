//! hero-duel-v1 (simultaneous_round, `move`): each side picks a hero whose
//! numbers live in `options.balance` (a `table` parameter both sides hold);
//! every round both commit a move (normal / skill_a / skill_b / ult),
//! damage resolves at once, a skill works only with enough mana and no
//! cooldown (else it is a normal attack). HP 0, or the higher HP after
//! `max_rounds`, decides.
//!
//! The judgement is a pure function of the balance, the state after the
//! previous round and the two moves; the guest recomputes it as the shadow
//! judge and ends the session if the host's result differs.

use super::{int_field, last_event, opt_int, str_field, strategy_applied};
use crate::engine::{
    ControlMode, Ctx, Dir, HookError, HookResult, Hooks, HostMetadata, Role, Window,
};
use crate::json::{self, Map, Value};
use crate::obj;
use async_trait::async_trait;

const MOVES: [&str; 4] = ["normal", "skill_a", "skill_b", "ult"];
const SKILLS: [&str; 3] = ["skill_a", "skill_b", "ult"];

/// A move as it takes effect.
struct Resolved {
    /// The move made: the skill named, or `normal`.
    effective: &'static str,
    damage: i64,
    /// Mana spent.
    cost: i64,
    /// The skill's index, when one was used.
    skill: Option<usize>,
}

/// The balance used when the options carry none: the reference's numbers,
/// so both implementations judge the same fight.
const DEFAULT_BALANCE: &str = r#"{
 "warrior": {"hp": 250, "mana": 80, "mana_regen": 15, "atk": 25,
   "skill_a": {"dmg": 50, "cost": 20, "cd": 2}, "skill_b": {"dmg": 70, "cost": 35, "cd": 3}, "ult": {"dmg": 120, "cost": 60, "cd": 5}},
 "mage": {"hp": 150, "mana": 120, "mana_regen": 20, "atk": 12,
   "skill_a": {"dmg": 60, "cost": 25, "cd": 2}, "skill_b": {"dmg": 90, "cost": 45, "cd": 3}, "ult": {"dmg": 180, "cost": 80, "cd": 5}},
 "assassin": {"hp": 180, "mana": 60, "mana_regen": 12, "atk": 35,
   "skill_a": {"dmg": 45, "cost": 15, "cd": 1}, "skill_b": {"dmg": 65, "cost": 30, "cd": 2}, "ult": {"dmg": 110, "cost": 50, "cd": 4}},
 "tank": {"hp": 350, "mana": 70, "mana_regen": 14, "atk": 18,
   "skill_a": {"dmg": 35, "cost": 18, "cd": 2}, "skill_b": {"dmg": 55, "cost": 30, "cd": 3}, "ult": {"dmg": 90, "cost": 55, "cd": 5}}
}"#;

/// Combat state after a round (or at the start).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Fighter {
    hp: i64,
    mana: i64,
    cd: [i64; 3],
}

#[derive(Default)]
pub struct HeroDuel {
    heroes: Map,
    host_hero: String,
    guest_hero: String,
    max_rounds: i64,
    host: Fighter,
    guest: Fighter,
    role: Option<Role>,
}

fn stat(hero: &Map, path: &[&str]) -> i64 {
    let mut v: Option<&Value> = hero.get(path[0]);
    for p in &path[1..] {
        v = v.and_then(|x| x.get(p));
    }
    v.and_then(super::as_int).unwrap_or(0)
}

impl HeroDuel {
    fn hero(&self, side: Role) -> Map {
        let name = if side == Role::Host {
            &self.host_hero
        } else {
            &self.guest_hero
        };
        self.heroes
            .get(name)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }

    fn pick_hero(&self, name: Option<&Value>) -> String {
        match name.and_then(Value::as_str) {
            Some(n) if self.heroes.contains_key(n) => n.to_owned(),
            _ => {
                let mut names: Vec<&str> = self.heroes.keys().collect();
                names.sort();
                names.first().map(|s| s.to_string()).unwrap_or_default()
            }
        }
    }

    fn fresh(&mut self) {
        for side in [Role::Host, Role::Guest] {
            let h = self.hero(side);
            let f = Fighter {
                hp: stat(&h, &["hp"]),
                mana: stat(&h, &["mana"]),
                cd: [0; 3],
            };
            if side == Role::Host {
                self.host = f;
            } else {
                self.guest = f;
            }
        }
    }

    /// What `mv` does for fighter `f` this round (a skill it cannot pay
    /// for or that is cooling down is a normal attack).
    fn resolve(hero: &Map, f: &Fighter, mv: &str) -> Resolved {
        if let Some(i) = SKILLS.iter().position(|s| *s == mv) {
            let cost = stat(hero, &[SKILLS[i], "cost"]);
            if f.mana >= cost && f.cd[i] == 0 {
                return Resolved {
                    effective: SKILLS[i],
                    damage: stat(hero, &[SKILLS[i], "dmg"]),
                    cost,
                    skill: Some(i),
                };
            }
        }
        Resolved {
            effective: "normal",
            damage: stat(hero, &["atk"]),
            cost: 0,
            skill: None,
        }
    }

    /// The round's result from the state before it; pure.
    fn compute(&self, round: u64, host_move: &str, guest_move: &str) -> (Map, Fighter, Fighter) {
        let (hh, gh) = (self.hero(Role::Host), self.hero(Role::Guest));
        let (mut h, mut g) = (self.host, self.guest);
        let Resolved {
            effective: he,
            damage: hd,
            cost: hc,
            skill: hs,
        } = Self::resolve(&hh, &h, host_move);
        let Resolved {
            effective: ge,
            damage: gd,
            cost: gc,
            skill: gs,
        } = Self::resolve(&gh, &g, guest_move);
        g.hp = (g.hp - hd).max(0);
        h.hp = (h.hp - gd).max(0);
        h.mana -= hc;
        g.mana -= gc;
        if let Some(i) = hs {
            h.cd[i] = stat(&hh, &[SKILLS[i], "cd"]);
        }
        if let Some(i) = gs {
            g.cd[i] = stat(&gh, &[SKILLS[i], "cd"]);
        }
        for f in [&mut h, &mut g] {
            for c in f.cd.iter_mut() {
                *c = (*c - 1).max(0);
            }
        }
        h.mana = (h.mana + stat(&hh, &["mana_regen"])).min(stat(&hh, &["mana"]));
        g.mana = (g.mana + stat(&gh, &["mana_regen"])).min(stat(&gh, &["mana"]));
        let winner = match hd.cmp(&gd) {
            std::cmp::Ordering::Greater => "host",
            std::cmp::Ordering::Less => "guest",
            std::cmp::Ordering::Equal => "draw",
        };
        let over = h.hp <= 0 || g.hp <= 0 || round as i64 + 1 >= self.max_rounds;
        let game_winner = if !over {
            "none"
        } else if h.hp <= 0 && g.hp <= 0 {
            "draw"
        } else if h.hp <= 0 {
            "guest"
        } else if g.hp <= 0 {
            "host"
        } else {
            match h.hp.cmp(&g.hp) {
                std::cmp::Ordering::Greater => "host",
                std::cmp::Ordering::Less => "guest",
                std::cmp::Ordering::Equal => "draw",
            }
        };
        let frame = obj! {
            "action" => "round_result", "round" => round, "host_move" => he, "guest_move" => ge,
            "host_hp" => h.hp, "guest_hp" => g.hp, "host_mana" => h.mana, "guest_mana" => g.mana,
            "host_damage_dealt" => hd, "guest_damage_dealt" => gd,
            "host_cd_a" => h.cd[0], "host_cd_b" => h.cd[1], "host_cd_ult" => h.cd[2],
            "guest_cd_a" => g.cd[0], "guest_cd_b" => g.cd[1], "guest_cd_ult" => g.cd[2],
            "round_winner" => winner, "game_over" => over, "game_winner" => game_winner,
        };
        (frame, h, g)
    }

    fn ui_state(&self) -> Map {
        let pair = |a: Value, b: Value| Value::Object(obj! { "host" => a, "guest" => b });
        let (hh, gh) = (self.hero(Role::Host), self.hero(Role::Guest));
        let cds = |f: &Fighter| {
            Value::Object(obj! { "skill_a" => f.cd[0], "skill_b" => f.cd[1], "ult" => f.cd[2] })
        };
        obj! {
            "heroes" => pair(self.host_hero.as_str().into(), self.guest_hero.as_str().into()),
            "hp" => pair(self.host.hp.into(), self.guest.hp.into()),
            "hp_max" => pair(stat(&hh, &["hp"]).into(), stat(&gh, &["hp"]).into()),
            "mana" => pair(self.host.mana.into(), self.guest.mana.into()),
            "mana_max" => pair(stat(&hh, &["mana"]).into(), stat(&gh, &["mana"]).into()),
            "cooldowns" => pair(cds(&self.host), cds(&self.guest)),
        }
    }

    fn record(&self, ctx: &Ctx, r: &Map) {
        let rd = int_field(r, "round") + 1;
        let over = r.get("game_over").is_some_and(Value::truthy);
        let (w, gw) = (str_field(r, "round_winner"), str_field(r, "game_winner"));
        ctx.sink.detail(obj! {
            "type" => "round_result", "round" => rd, "host_move" => str_field(r, "host_move"),
            "guest_move" => str_field(r, "guest_move"), "host_hp" => self.host.hp, "guest_hp" => self.guest.hp,
            "host_mana" => self.host.mana, "guest_mana" => self.guest.mana,
            "host_damage" => int_field(r, "host_damage_dealt"), "guest_damage" => int_field(r, "guest_damage_dealt"),
            "winner" => w, "game_over" => over, "game_winner" => gw,
        });
        let summary = if over {
            format!("Game over: {gw} (H:{} G:{})", self.host.hp, self.guest.hp)
        } else {
            format!(
                "R{rd}: {w} lands more, H:{} G:{}",
                self.host.hp, self.guest.hp
            )
        };
        let mut snap = obj! {
            "phase" => if over { "game_over" } else { "playing" },
            "round" => if over { rd } else { rd + 1 },
            "last_event" => last_event(summary, obj! { "round" => rd, "winner" => w, "game_over" => over, "game_winner" => gw }),
        };
        for (k, v) in self.ui_state().iter() {
            snap.insert(k, v.clone());
        }
        ctx.sink.snapshot(snap);
    }

    fn own(&self) -> (Map, Fighter) {
        let side = self.role.unwrap_or(Role::Host);
        (
            self.hero(side),
            if side == Role::Host {
                self.host
            } else {
                self.guest
            },
        )
    }

    fn pick_auto(&self, ctx: &Ctx, round: u64) -> String {
        let strat = ctx.strategy.get();
        let legal = |m: &str| MOVES.contains(&m);
        let picked = match str_field(&strat, "mode") {
            "fixed" => strat
                .get("move")
                .and_then(Value::as_str)
                .filter(|m| legal(m))
                .map(str::to_owned),
            "seq" => strat
                .get("sequence")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .filter(|m| legal(m))
                        .collect::<Vec<_>>()
                })
                .filter(|s| !s.is_empty())
                .map(|s| s[round as usize % s.len()].to_owned()),
            "random" => Some(MOVES[ctx.random_below(MOVES.len())].to_owned()),
            _ => None,
        };
        let mv = picked.unwrap_or_else(|| {
            // The strongest move this side can afford now.
            let (hero, f) = self.own();
            ["ult", "skill_b", "skill_a"]
                .iter()
                .find(|s| Self::resolve(&hero, &f, s).effective == **s)
                .copied()
                .unwrap_or("normal")
                .to_owned()
        });
        strategy_applied(ctx, round, &strat, Value::from(mv.as_str()));
        mv
    }
}

#[async_trait]
impl Hooks for HeroDuel {
    fn decision_schema(&self) -> Option<Map> {
        let moves: Vec<Value> = MOVES.iter().map(|m| Value::from(*m)).collect();
        Some(
            obj! { "match_key" => "round", "value_field" => "move", "choices" => moves, "strategy_field" => "move" },
        )
    }

    fn host_metadata(&self) -> HostMetadata {
        HostMetadata {
            display_name: "Hero Duel".into(),
            tags: "game,hero-duel,moba".into(),
            invite_type: "supply".into(),
            default_options: obj! { "host_hero" => self.host_hero.as_str(), "max_rounds" => self.max_rounds },
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        self.role = Some(ctx.role);
        self.heroes = match ctx.options.get("balance").and_then(Value::as_object) {
            Some(b) if !b.is_empty() => b.clone(),
            _ => json::parse_str(DEFAULT_BALANCE)
                .ok()
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default(),
        };
        if self.heroes.is_empty() {
            return Err(HookError::Invalid("the balance table has no heroes".into()));
        }
        self.host_hero = self.pick_hero(ctx.options.get("host_hero"));
        self.guest_hero = self.pick_hero(ctx.options.get("guest_hero"));
        self.max_rounds = opt_int(&ctx.options, "max_rounds", 30).max(1);
        self.fresh();
        let mut snap =
            obj! { "phase" => "handshake", "round" => 1, "max_rounds" => self.max_rounds };
        for (k, v) in self.ui_state().iter() {
            snap.insert(k, v.clone());
        }
        ctx.sink.snapshot(snap);
        Ok(())
    }

    async fn host_handle_join(&mut self, ctx: &Ctx, join: &Map) -> Result<HookResult, HookError> {
        if let Some(h) = join
            .get("hero")
            .and_then(Value::as_str)
            .filter(|h| self.heroes.contains_key(h))
        {
            self.guest_hero = h.to_owned();
        }
        if let Some(m) = join.get("max_rounds").and_then(super::as_int) {
            self.max_rounds = m.max(1);
        }
        self.fresh();
        ctx.sink
            .snapshot(obj! { "phase" => "playing", "round" => 1, "max_rounds" => self.max_rounds });
        Ok(HookResult::send(obj! {
            "action" => "ready", "host_hero" => self.host_hero.as_str(), "guest_hero" => self.guest_hero.as_str(),
            "max_rounds" => self.max_rounds,
        }))
    }

    async fn guest_join_message(&mut self, _ctx: &Ctx) -> Result<Map, HookError> {
        Ok(
            obj! { "action" => "join", "hero" => self.guest_hero.as_str(), "max_rounds" => self.max_rounds },
        )
    }

    async fn guest_handle_ready(&mut self, ctx: &Ctx, ready: &Map) -> Result<(), HookError> {
        for (key, slot) in [
            ("host_hero", &mut self.host_hero),
            ("guest_hero", &mut self.guest_hero),
        ] {
            match ready.get(key).and_then(Value::as_str) {
                Some(h) if self.heroes.contains_key(h) => *slot = h.to_owned(),
                Some(h) => {
                    return Err(HookError::Protocol(format!(
                        "hero '{h}' is not in our balance table"
                    )));
                }
                None => {}
            }
        }
        self.max_rounds = int_field(ready, "max_rounds").max(1);
        self.fresh();
        ctx.sink
            .snapshot(obj! { "phase" => "playing", "round" => 1, "max_rounds" => self.max_rounds });
        Ok(())
    }

    async fn round_value(&mut self, ctx: &Ctx, round: u64) -> Result<Value, HookError> {
        let auto = if ctx.control_mode == ControlMode::Human {
            "normal".to_owned()
        } else {
            self.pick_auto(ctx, round)
        };
        let window = Window {
            match_key: "round",
            match_value: Value::from(round),
            auto: obj! { "move" => auto },
            value_field: "move",
            policy: None,
        };
        ctx.choose(window, |d| match d.get("move").and_then(Value::as_str) {
            Some(m) if MOVES.contains(&m) => Ok(Value::from(m)),
            _ => Err("move is not a legal hero action".into()),
        })
        .await
    }

    async fn round_judge(
        &mut self,
        ctx: &Ctx,
        round: u64,
        host: &Value,
        guest: &Value,
    ) -> Result<HookResult, HookError> {
        let (frame, h, g) = self.compute(
            round,
            host.as_str().unwrap_or(""),
            guest.as_str().unwrap_or(""),
        );
        self.host = h;
        self.guest = g;
        self.record(ctx, &frame);
        let over = frame.get("game_over").is_some_and(Value::truthy);
        Ok(HookResult {
            response: Some(frame),
            completed: over,
            abort: false,
        })
    }

    async fn round_judge_pure(
        &mut self,
        _ctx: &Ctx,
        round: u64,
        host: &Value,
        guest: &Value,
    ) -> Option<Map> {
        Some(
            self.compute(
                round,
                host.as_str().unwrap_or(""),
                guest.as_str().unwrap_or(""),
            )
            .0,
        )
    }

    async fn guest_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        if str_field(msg, "action") == "round_result" {
            let f = |p: &str| Fighter {
                hp: int_field(msg, &format!("{p}_hp")),
                mana: int_field(msg, &format!("{p}_mana")),
                cd: [
                    int_field(msg, &format!("{p}_cd_a")),
                    int_field(msg, &format!("{p}_cd_b")),
                    int_field(msg, &format!("{p}_cd_ult")),
                ],
            };
            self.host = f("host");
            self.guest = f("guest");
            self.record(ctx, msg);
        }
        Ok(HookResult::none())
    }

    fn display(&self, msg: &Map, _dir: Dir) -> Option<String> {
        (str_field(msg, "action") == "round_result").then(|| {
            let mut s = format!(
                "Round {}: host {}({}) vs guest {}({}); HP {}-{}",
                int_field(msg, "round") + 1,
                str_field(msg, "host_move"),
                int_field(msg, "host_damage_dealt"),
                str_field(msg, "guest_move"),
                int_field(msg, "guest_damage_dealt"),
                int_field(msg, "host_hp"),
                int_field(msg, "guest_hp"),
            );
            if msg.get("game_over").is_some_and(Value::truthy) {
                s.push_str(&format!(
                    "; game over, winner: {}",
                    str_field(msg, "game_winner")
                ));
            }
            s
        })
    }
}
