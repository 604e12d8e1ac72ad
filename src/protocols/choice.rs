//! rps-v1 and coin-flip-v1: one choice per round through the engine's
//! commit-reveal, judged by the host.
//!
//! RPS: rock > scissors > paper > rock; `first_to_win` ends when a side has
//! `rounds_to_win` (draws do not count), `fixed_rounds` after exactly
//! `best_of` rounds. Coin flip: the guest wins a round when the two sides
//! match, the host otherwise; first to `rounds_to_win`.

use super::{int_field, last_event, opt_int, str_field, strategy_applied};
use crate::engine::whisper;
use crate::engine::{
    Ctx, Dir, HookError, HookResult, Hooks, HostMetadata, PolicyContext, Role, Window,
};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Game {
    Rps,
    Coin,
}

/// RPS or coin flip.
pub struct ChoiceGame {
    game: Game,
    best_of: i64,
    rounds_to_win: i64,
    fixed_rounds: bool,
    round_delay_seconds: i64,
    host_wins: i64,
    guest_wins: i64,
    role: Role,
    /// (own, opponent) choices of the last round, for policies.
    last: Option<(String, String)>,
    /// (own, opponent) of every round so far (the last 50), for scripts.
    history: Vec<(String, String)>,
    /// rounds_to_win came from the options.
    rtw_from_options: bool,
}

const RPS: [&str; 3] = ["rock", "paper", "scissors"];
const COIN: [&str; 2] = ["heads", "tails"];

/// (choice, what it beats) in RPS.
const RPS_BEATS: [(&str, &str); 3] = [
    ("rock", "scissors"),
    ("paper", "rock"),
    ("scissors", "paper"),
];

/// What `choice` beats.
fn beats(choice: &str) -> &'static str {
    RPS_BEATS
        .iter()
        .find(|(c, _)| *c == choice)
        .map_or("paper", |(_, b)| b)
}

impl ChoiceGame {
    pub fn rps() -> Self {
        Self::new(Game::Rps)
    }

    pub fn coin() -> Self {
        Self::new(Game::Coin)
    }

    fn new(game: Game) -> Self {
        ChoiceGame {
            game,
            best_of: 3,
            rounds_to_win: 2,
            fixed_rounds: false,
            round_delay_seconds: 0,
            host_wins: 0,
            guest_wins: 0,
            role: Role::Host,
            last: None,
            history: Vec::new(),
            rtw_from_options: false,
        }
    }

    fn choices(&self) -> &'static [&'static str] {
        match self.game {
            Game::Rps => &RPS,
            Game::Coin => &COIN,
        }
    }

    fn legal(&self, v: &str) -> bool {
        self.choices().contains(&v)
    }

    fn score(&self) -> Value {
        Value::Object(obj! { "host" => self.host_wins, "guest" => self.guest_wins })
    }

    /// The automatic choice for a round from strategy.json.
    fn pick_auto(&self, ctx: &Ctx, round: u64) -> String {
        let strat = ctx.strategy.get();
        let choices = self.choices();
        let mode = str_field(&strat, "mode");
        let picked: Option<String> = match mode {
            "fixed" => strat
                .get("fixed")
                .and_then(Value::as_str)
                .filter(|c| self.legal(c))
                .map(str::to_owned),
            "seq" => {
                let seq: Vec<&str> = strat
                    .get("sequence")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .filter(|c| self.legal(c))
                            .collect()
                    })
                    .unwrap_or_default();
                (!seq.is_empty()).then(|| seq[round as usize % seq.len()].to_owned())
            }
            "policy" => self
                .policy_context()
                .and_then(|p| p.run(str_field(&strat, "policy")).ok()),
            "" | "random" => {
                if let Some((pick, cmd)) = self.hint_override(&strat, round) {
                    strategy_applied(ctx, round, &cmd, Value::from(pick.as_str()));
                    return pick;
                }
                None
            }
            _ => None,
        };
        let result = picked.unwrap_or_else(|| choices[ctx.random_below(choices.len())].to_owned());
        strategy_applied(ctx, round, &strat, Value::from(result.as_str()));
        result
    }

    /// A policy script's answer for `round` (strategy mode `script`), with
    /// the reference's context: the previous round (`self`, `opponent`,
    /// `result`) and the rounds so far; `beats` in the schema.
    async fn scripted(&self, ctx: &Ctx, round: u64) -> Option<String> {
        let beats: Vec<(&str, &str)> = match self.game {
            Game::Rps => RPS_BEATS.to_vec(),
            Game::Coin => Vec::new(),
        };
        let pair = |o: &str, p: &str| obj! { "self" => obj! { "choice" => o }, "opponent" => obj! { "choice" => p } };
        let context = self.last.clone().map(|(own, opp)| {
            let result = if own == opp {
                "draw"
            } else if beats.contains(&(own.as_str(), opp.as_str())) {
                "win"
            } else if self.game == Game::Coin {
                "draw"
            } else {
                "loss"
            };
            let mut previous = pair(&own, &opp);
            previous.insert("result", Value::from(result));
            obj! {
                "supported" => true, "match_key" => "round", "match_value" => round, "value_field" => "choice",
                "legal_values" => self.choices().iter().map(|c| Value::from(*c)).collect::<Vec<_>>(),
                "previous" => previous,
                "history" => self.history.iter().map(|(o, p)| Value::Object(pair(o, p))).collect::<Vec<_>>(),
            }
        });
        let mut schema = self.decision_schema().unwrap_or_default();
        schema.insert(
            "beats",
            Value::Object(beats.iter().map(|(a, b)| (*a, Value::from(*b))).collect()),
        );
        let v = super::run_policy_script(ctx, round, context, schema, |d| {
            d.get("choice")
                .and_then(Value::as_str)
                .filter(|c| self.legal(c))
                .map(Value::from)
        })
        .await?;
        v.as_str().map(str::to_owned)
    }

    /// The previous round for this side's policies (none before the first
    /// round is scored). RPS runs mirror, counter and repeat; coin flip only
    /// mirror (nothing beats anything there), as the reference's hooks do.
    fn policy_context(&self) -> Option<PolicyContext> {
        let (own, opp) = self.last.clone()?;
        Some(match self.game {
            Game::Rps => PolicyContext {
                value_field: "choice",
                own,
                opponent: opp,
                beats: &RPS_BEATS,
                policies: &[
                    "mirror_previous_opponent",
                    "counter_previous_opponent",
                    "repeat_own_previous",
                ],
            },
            Game::Coin => PolicyContext {
                value_field: "choice",
                own,
                opponent: opp,
                beats: &[],
                policies: &["mirror_previous_opponent"],
            },
        })
    }

    /// A persistent choice read from strategy.json's `operator_hint` (a
    /// whisper the sender could not resolve), with the command it came to.
    fn hint_override(&self, strat: &Map, round: u64) -> Option<(String, Map)> {
        let hint = strat.get("operator_hint")?.as_str()?;
        let name = match self.game {
            Game::Rps => "rps-v1",
            Game::Coin => "coin-flip-v1",
        };
        let keywords = whisper::Schema::legacy_keywords(name);
        let cmd = whisper::parse_command(hint, keywords.as_deref(), "round", Value::from(round))?;
        let whisper::Command::Strategy(payload) = &cmd else {
            return None;
        };
        let fixed = payload.get("fixed")?.as_str()?;
        self.legal(fixed).then(|| (fixed.to_owned(), cmd.to_json()))
    }

    fn record_round(
        &mut self,
        ctx: &Ctx,
        round: i64,
        (host, guest): (&str, &str),
        winner: &str,
        (over, game_winner): (bool, &str),
    ) {
        let (own, opp) = if self.role == Role::Host {
            (host, guest)
        } else {
            (guest, host)
        };
        self.last = Some((own.to_owned(), opp.to_owned()));
        if self.history.len() == 50 {
            self.history.remove(0);
        }
        self.history.push((own.to_owned(), opp.to_owned()));
        let rd = round + 1;
        let label = |c: &str| {
            let mut s = c.to_owned();
            if let Some(f) = s.get_mut(..1) {
                f.make_ascii_uppercase();
            }
            s
        };
        let (hw, gw) = (self.host_wins, self.guest_wins);
        ctx.sink.detail(obj! {
            "type" => "round_result", "round" => rd, "host_choice" => host, "guest_choice" => guest,
            "winner" => winner, "host_wins" => hw, "guest_wins" => gw, "game_over" => over,
            "game_winner" => game_winner,
            "summary" => format!("R{rd}: {} vs {} -> {winner} ({hw}-{gw})", label(host), label(guest)),
        });
        let summary = if over {
            format!("Game over: {game_winner} wins ({hw}-{gw})")
        } else {
            match winner {
                "draw" => format!("R{rd} done: draw, score {hw}-{gw}"),
                w => format!("R{rd} done: {w} wins, score {hw}-{gw}"),
            }
        };
        ctx.sink.snapshot(obj! {
            "phase" => if over { "game_over" } else { "playing" },
            "score" => self.score(),
            "round" => if over { rd } else { rd + 1 },
            "last_event" => last_event(summary, obj! {
                "round" => rd, "winner" => winner, "game_over" => over, "game_winner" => game_winner,
            }),
        });
    }

    /// (over, game_winner) after `round` (0-based) has been scored.
    fn termination(&self, round: u64) -> (bool, &'static str) {
        let played = round as i64 + 1;
        if self.fixed_rounds {
            if played >= self.best_of {
                return (
                    true,
                    match self.host_wins.cmp(&self.guest_wins) {
                        std::cmp::Ordering::Greater => "host",
                        std::cmp::Ordering::Less => "guest",
                        std::cmp::Ordering::Equal => "draw",
                    },
                );
            }
            return (false, "none");
        }
        if self.host_wins >= self.rounds_to_win {
            (true, "host")
        } else if self.guest_wins >= self.rounds_to_win {
            (true, "guest")
        } else {
            (false, "none")
        }
    }
}

#[async_trait]
impl Hooks for ChoiceGame {
    fn decision_schema(&self) -> Option<Map> {
        let choices: Vec<Value> = self.choices().iter().map(|c| Value::from(*c)).collect();
        Some(
            obj! { "match_key" => "round", "value_field" => "choice", "choices" => choices, "strategy_field" => "fixed" },
        )
    }

    fn host_metadata(&self) -> HostMetadata {
        match self.game {
            Game::Rps => HostMetadata {
                display_name: "Rock-Paper-Scissors".into(),
                tags: "game,rps".into(),
                invite_type: "supply".into(),
                default_options: obj! {
                    "best_of" => self.best_of,
                    "termination" => if self.fixed_rounds { "fixed_rounds" } else { "first_to_win" },
                    "round_delay_seconds" => self.round_delay_seconds,
                },
            },
            Game::Coin => HostMetadata {
                display_name: "Coin Flip".into(),
                tags: "game,coin".into(),
                invite_type: "supply".into(),
                default_options: obj! { "best_of" => self.best_of },
            },
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        let o = &ctx.options;
        self.role = ctx.role;
        self.best_of = opt_int(o, "best_of", 3).max(1);
        self.rounds_to_win = self.best_of / 2 + 1;
        if self.game == Game::Rps {
            self.fixed_rounds = str_field(o, "termination") == "fixed_rounds";
            self.round_delay_seconds = opt_int(o, "round_delay_seconds", 0).max(0);
            let rtw = opt_int(o, "rounds_to_win", 0);
            if rtw > 0 {
                self.rounds_to_win = rtw;
                self.rtw_from_options = true;
            }
        }
        ctx.sink.snapshot(obj! {
            "score" => self.score(), "round" => 1, "best_of" => self.best_of,
            "rounds_to_win" => self.rounds_to_win,
        });
        Ok(())
    }

    async fn host_handle_join(&mut self, ctx: &Ctx, join: &Map) -> Result<HookResult, HookError> {
        if let Some(b) = join.get("best_of").and_then(super::as_int) {
            self.best_of = b.max(1);
        }
        if !self.rtw_from_options {
            self.rounds_to_win = self.best_of / 2 + 1;
        }
        ctx.sink.snapshot(obj! { "best_of" => self.best_of, "rounds_to_win" => self.rounds_to_win, "phase" => "playing" });
        Ok(HookResult::send(match self.game {
            Game::Rps => obj! {
                "action" => "ready", "best_of" => self.best_of, "rounds_to_win" => self.rounds_to_win,
                "termination" => if self.fixed_rounds { "fixed_rounds" } else { "first_to_win" },
                "round_delay_seconds" => self.round_delay_seconds,
            },
            Game::Coin => {
                obj! { "action" => "ready", "best_of" => self.best_of, "rounds_to_win" => self.rounds_to_win }
            }
        }))
    }

    async fn guest_join_message(&mut self, _ctx: &Ctx) -> Result<Map, HookError> {
        // The reference also sends `rounds_to_win` when the options set it,
        // which its own spec rejects; the host decides it from `best_of`.
        Ok(obj! { "action" => "join", "best_of" => self.best_of })
    }

    async fn guest_handle_ready(&mut self, ctx: &Ctx, ready: &Map) -> Result<(), HookError> {
        self.best_of = int_field(ready, "best_of");
        self.rounds_to_win = int_field(ready, "rounds_to_win");
        if self.game == Game::Rps {
            self.fixed_rounds = str_field(ready, "termination") == "fixed_rounds";
            if let Some(d) = ready.get("round_delay_seconds").and_then(super::as_int) {
                self.round_delay_seconds = d.max(0);
            }
        }
        ctx.sink.snapshot(obj! { "best_of" => self.best_of, "rounds_to_win" => self.rounds_to_win, "phase" => "playing" });
        Ok(())
    }

    async fn round_value(&mut self, ctx: &Ctx, round: u64) -> Result<Value, HookError> {
        if ctx.role == Role::Guest && self.round_delay_seconds > 0 && round > 0 {
            tokio::time::sleep(std::time::Duration::from_secs(
                self.round_delay_seconds as u64,
            ))
            .await;
        }
        let auto = if ctx.control_mode == crate::engine::ControlMode::Human {
            String::new()
        } else if let Some(c) = self.scripted(ctx, round).await {
            c
        } else {
            self.pick_auto(ctx, round)
        };
        let window = Window {
            match_key: "round",
            match_value: Value::from(round),
            auto: obj! { "choice" => auto },
            value_field: "choice",
            policy: self.policy_context(),
        };
        let choices = self.choices();
        let what = if self.game == Game::Rps {
            "rock, paper, or scissors"
        } else {
            "heads or tails"
        };
        ctx.choose(window, |d| match d.get("choice").and_then(Value::as_str) {
            Some(c) if choices.contains(&c) => Ok(Value::from(c)),
            _ => Err(format!("choice must be {what}")),
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
        let (h, g) = (host.as_str().unwrap_or(""), guest.as_str().unwrap_or(""));
        if !self.legal(h) || !self.legal(g) {
            return Err(HookError::Protocol(format!(
                "illegal choice in round {round}: {h} / {g}"
            )));
        }
        let winner = match self.game {
            Game::Rps if h == g => "draw",
            Game::Rps if beats(h) == g => "host",
            Game::Rps => "guest",
            Game::Coin if h == g => "guest",
            Game::Coin => "host",
        };
        match winner {
            "host" => self.host_wins += 1,
            "guest" => self.guest_wins += 1,
            _ => {}
        }
        let (over, game_winner) = self.termination(round);
        let resp = obj! {
            "action" => "round_result", "round" => round, "host_choice" => h, "guest_choice" => g,
            "round_winner" => winner, "host_wins" => self.host_wins, "guest_wins" => self.guest_wins,
            "game_over" => over, "game_winner" => game_winner,
        };
        self.record_round(ctx, round as i64, (h, g), winner, (over, game_winner));
        Ok(HookResult {
            response: Some(resp),
            completed: over,
            abort: false,
        })
    }

    async fn guest_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        if str_field(msg, "action") == "round_result" {
            self.host_wins = int_field(msg, "host_wins");
            self.guest_wins = int_field(msg, "guest_wins");
            let over = msg.get("game_over").is_some_and(Value::truthy);
            let gw = msg
                .get("game_winner")
                .and_then(Value::as_str)
                .unwrap_or("none")
                .to_owned();
            let (h, g, w) = (
                str_field(msg, "host_choice").to_owned(),
                str_field(msg, "guest_choice").to_owned(),
                str_field(msg, "round_winner").to_owned(),
            );
            self.record_round(ctx, int_field(msg, "round"), (&h, &g), &w, (over, &gw));
        }
        Ok(HookResult::none())
    }

    fn display(&self, msg: &Map, _dir: Dir) -> Option<String> {
        match str_field(msg, "action") {
            "round_result" => {
                let rd = int_field(msg, "round") + 1;
                let mut s = format!(
                    "Round {rd}: host {} vs guest {} -> {} ({}-{})",
                    str_field(msg, "host_choice"),
                    str_field(msg, "guest_choice"),
                    str_field(msg, "round_winner"),
                    int_field(msg, "host_wins"),
                    int_field(msg, "guest_wins"),
                );
                if msg.get("game_over").is_some_and(Value::truthy) {
                    s.push_str(&format!(
                        "; game over, winner: {}",
                        str_field(msg, "game_winner")
                    ));
                }
                Some(s)
            }
            "commit" => Some(format!("Round {}: commitment", int_field(msg, "round") + 1)),
            "reveal" => Some(format!(
                "Round {}: reveals {}",
                int_field(msg, "round") + 1,
                msg.get("choice").map(Value::py_str).unwrap_or_default()
            )),
            "ready" if str_field(msg, "termination") == "fixed_rounds" => Some(format!(
                "Ready: {} rounds, all played",
                int_field(msg, "best_of")
            )),
            "ready" => Some(format!(
                "Ready: best of {}, first to {}",
                int_field(msg, "best_of"),
                int_field(msg, "rounds_to_win")
            )),
            _ => None,
        }
    }
}
