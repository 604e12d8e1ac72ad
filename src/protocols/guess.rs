//! guess-number-v1 (session_loop): the host holds a secret in
//! `[range_min, range_max]`; the guest guesses, the host answers higher or
//! lower, until a hit (guest wins) or `max_attempts` (host wins).
//!
//! A human host chooses the secret through the `setup` window
//! (`{"setup":0,"secret":N}`); guesses use the `attempt` window.

use super::{int_field, last_event, opt_int, str_field};
use crate::engine::{
    ControlMode, Ctx, Dir, HookError, HookResult, Hooks, HostMetadata, Role, Window,
};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct GuessNumber {
    range_min: i64,
    range_max: i64,
    max_attempts: i64,
    secret: i64,
    attempts: i64,
    lo: i64,
    hi: i64,
    guest_attempt: i64,
    last_guess: i64,
}

impl GuessNumber {
    fn record(&self, ctx: &Ctx, attempt: i64, number: i64, result: &str, over: bool, winner: &str) {
        let (used, max) = (self.attempts, self.max_attempts);
        ctx.sink.detail(obj! {
            "type" => "guess", "attempt" => attempt, "number" => number, "result" => result,
            "attempts_used" => used, "game_over" => over, "winner" => winner,
            "summary" => format!("#{attempt}: guessed {number} -> {result} ({used}/{max})"),
        });
        let summary = if over {
            format!(
                "Game over: {winner} wins, answer {}, {used} attempts",
                self.secret
            )
        } else {
            format!("#{attempt} guessed {number}: {result}, used {used}/{max}")
        };
        ctx.sink.snapshot(obj! {
            "phase" => if over { "game_over" } else { "playing" },
            "attempts" => used,
            "last_event" => last_event(summary, obj! {
                "attempt" => attempt, "number" => number, "result" => result, "game_over" => over, "winner" => winner,
            }),
        });
    }

    fn guess_auto(&self, ctx: &Ctx) -> i64 {
        let strat = ctx.strategy.get();
        let mut number = self.lo.saturating_add(self.hi).div_euclid(2);
        match str_field(&strat, "mode") {
            "fixed" => {
                if let Some(n) = strat.get("number").and_then(super::as_int) {
                    number = n;
                }
            }
            "seq" => {
                if let Some(seq) = strat
                    .get("sequence")
                    .and_then(Value::as_array)
                    .filter(|s| !s.is_empty())
                {
                    let i = (self.guest_attempt - 1).rem_euclid(seq.len() as i64) as usize;
                    if let Some(n) = super::as_int(&seq[i]) {
                        number = n;
                    }
                }
            }
            _ => {}
        }
        let n = number.clamp(self.lo.min(self.hi), self.hi.max(self.lo));
        super::strategy_applied(ctx, self.guest_attempt as u64, &strat, Value::from(n));
        n
    }

    async fn guess(&mut self, ctx: &Ctx) -> Result<Map, HookError> {
        let auto = if ctx.control_mode == ControlMode::Human {
            0
        } else {
            self.guess_auto(ctx)
        };
        let (lo, hi) = (self.lo, self.hi);
        let window = Window {
            match_key: "attempt",
            match_value: Value::from(self.guest_attempt),
            auto: obj! { "number" => auto },
            value_field: "number",
            policy: None,
        };
        let human = ctx.control_mode == ControlMode::Human;
        let n = ctx
            .choose(window, |d| match d.get("number").and_then(super::as_int) {
                // A hybrid decision is clamped into range, as the reference does.
                Some(n) if !human => Ok(Value::from(n.clamp(lo.min(hi), hi.max(lo)))),
                Some(n) if (lo..=hi).contains(&n) => Ok(Value::from(n)),
                Some(_) => Err(format!(
                    "number must be within the current range [{lo}, {hi}]"
                )),
                None => Err("number must be an integer".into()),
            })
            .await?;
        let n = n.as_i64().unwrap_or(auto);
        self.last_guess = n;
        Ok(obj! { "action" => "guess", "attempt" => self.guest_attempt, "number" => n })
    }
}

#[async_trait]
impl Hooks for GuessNumber {
    fn decision_schema(&self) -> Option<Map> {
        Some(obj! {
            "match_key" => "attempt", "value_field" => "number", "numeric" => true,
            "range" => vec![Value::from(self.lo), Value::from(self.hi)],
            "setup_match_key" => "setup", "setup_value_field" => "secret",
        })
    }

    fn host_metadata(&self) -> HostMetadata {
        HostMetadata {
            display_name: "Guess Number".into(),
            tags: "game,guess-number".into(),
            invite_type: "supply".into(),
            default_options: obj! {
                "range_min" => self.range_min, "range_max" => self.range_max, "max_attempts" => self.max_attempts,
            },
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        let o = &ctx.options;
        self.range_min = opt_int(o, "range_min", 1);
        self.range_max = opt_int(o, "range_max", 100);
        self.max_attempts = opt_int(o, "max_attempts", 7).max(1);
        if self.range_max < self.range_min {
            return Err(HookError::Invalid(format!(
                "range_max {} is below range_min {}",
                self.range_max, self.range_min
            )));
        }
        if ctx.role == Role::Host {
            let configured = o.get("secret").and_then(super::as_int);
            self.secret = match configured {
                Some(s) => s,
                None if ctx.control_mode == ControlMode::Human => {
                    ctx.sink.snapshot(obj! {
                        "phase" => "setup_required",
                        "last_event" => last_event("Choose the secret number", obj! {
                            "range_min" => self.range_min, "range_max" => self.range_max,
                        }),
                    });
                    let (lo, hi) = (self.range_min, self.range_max);
                    let window = Window {
                        match_key: "setup",
                        match_value: Value::from(0),
                        auto: Map::new(),
                        value_field: "secret",
                        policy: None,
                    };
                    ctx.choose(window, |d| match d.get("secret").and_then(super::as_int) {
                        Some(s) if (lo..=hi).contains(&s) => Ok(Value::from(s)),
                        Some(_) => Err(format!("secret must be within [{lo}, {hi}]")),
                        None => Err("secret must be an integer".into()),
                    })
                    .await?
                    .as_i64()
                    .unwrap_or(lo)
                }
                None => ctx.random_in(self.range_min, self.range_max),
            };
            if !(self.range_min..=self.range_max).contains(&self.secret) {
                return Err(HookError::Invalid(format!(
                    "secret must be within [{}, {}]",
                    self.range_min, self.range_max
                )));
            }
        }
        self.attempts = 0;
        self.lo = self.range_min;
        self.hi = self.range_max;
        self.guest_attempt = 1;
        ctx.sink.snapshot(obj! {
            "range_min" => self.range_min, "range_max" => self.range_max, "max_attempts" => self.max_attempts,
            "attempts" => 0, "lo" => self.lo, "hi" => self.hi,
        });
        Ok(())
    }

    async fn host_handle_join(&mut self, ctx: &Ctx, join: &Map) -> Result<HookResult, HookError> {
        if let Some(m) = join.get("max_attempts").and_then(super::as_int) {
            self.max_attempts = m.max(1);
        }
        ctx.sink
            .snapshot(obj! { "max_attempts" => self.max_attempts, "phase" => "playing" });
        Ok(HookResult::send(obj! {
            "action" => "ready", "range_min" => self.range_min, "range_max" => self.range_max,
            "max_attempts" => self.max_attempts,
        }))
    }

    async fn host_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        if str_field(msg, "action") != "guess" {
            return Ok(HookResult::abort_with(
                obj! { "action" => "error", "reason" => "unexpected_action" },
            ));
        }
        let number = int_field(msg, "number");
        let attempt = int_field(msg, "attempt");
        if number < self.range_min || number > self.range_max {
            return Ok(HookResult::abort_with(
                obj! { "action" => "error", "reason" => "invalid_guess" },
            ));
        }
        self.attempts += 1;
        if number == self.secret {
            self.record(ctx, attempt, number, "hit", true, "guest");
            return Ok(HookResult::finish(obj! {
                "action" => "game_over", "winner" => "guest", "secret_number" => self.secret,
                "total_attempts" => self.attempts,
            }));
        }
        if self.attempts >= self.max_attempts {
            self.record(ctx, attempt, number, "exhausted", true, "host");
            return Ok(HookResult::finish(obj! {
                "action" => "game_over", "winner" => "host", "secret_number" => self.secret,
                "total_attempts" => self.attempts,
            }));
        }
        let result = if number < self.secret {
            "higher"
        } else {
            "lower"
        };
        self.record(ctx, attempt, number, result, false, "none");
        Ok(HookResult::send(obj! {
            "action" => "hint", "attempt" => attempt, "result" => result, "attempts_used" => self.attempts,
        }))
    }

    async fn guest_join_message(&mut self, _ctx: &Ctx) -> Result<Map, HookError> {
        Ok(obj! { "action" => "join", "max_attempts" => self.max_attempts })
    }

    async fn guest_handle_ready(&mut self, ctx: &Ctx, ready: &Map) -> Result<(), HookError> {
        // The host's numbers are checked before any arithmetic: a range at the
        // edge of i64 (or beyond it) would overflow, and reading it as 0
        // would play a game the host never offered.
        let int = |k: &str, limit: crate::limits::Count| match ready.get(k) {
            Some(Value::Number(crate::json::Number::Int(i))) => limit
                .check_as(&format!("ready's {k}"), *i)
                .map_err(|e| e.to_string()),
            other => Err(format!(
                "ready's {k} is not an integer palaver can play: {}",
                other
                    .map(Value::py_str)
                    .unwrap_or_else(|| "(missing)".into())
                    .chars()
                    .take(40)
                    .collect::<String>()
            )),
        };
        let lo = int("range_min", crate::limits::RANGE_END).map_err(HookError::Protocol)?;
        let hi = int("range_max", crate::limits::RANGE_END).map_err(HookError::Protocol)?;
        let attempts = int(
            "max_attempts",
            crate::limits::Count {
                field: "max_attempts",
                min: 1,
                max: crate::limits::ROUNDS.max,
            },
        )
        .map_err(HookError::Protocol)?;
        if lo > hi {
            return Err(HookError::Protocol(format!(
                "ready's range_max {hi} is below its range_min {lo}"
            )));
        }
        self.lo = lo;
        self.hi = hi;
        self.range_min = self.lo;
        self.range_max = self.hi;
        self.max_attempts = attempts;
        ctx.sink.snapshot(obj! {
            "range_min" => self.range_min, "range_max" => self.range_max, "max_attempts" => self.max_attempts,
            "lo" => self.lo, "hi" => self.hi, "phase" => "playing",
        });
        Ok(())
    }

    async fn guest_first_action(&mut self, ctx: &Ctx) -> Result<Option<Map>, HookError> {
        self.guess(ctx).await.map(Some)
    }

    async fn guest_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        match str_field(msg, "action") {
            "hint" => {
                let last = self.last_guess;
                match str_field(msg, "result") {
                    "higher" => self.lo = last.saturating_add(1),
                    "lower" => self.hi = last.saturating_sub(1),
                    _ => {}
                }
                if self.lo > self.hi {
                    return Err(HookError::Protocol(format!(
                        "the hints contradict each other: nothing is left between {} and {}",
                        self.lo, self.hi
                    )));
                }
                let attempt = int_field(msg, "attempt");
                self.attempts = msg
                    .get("attempts_used")
                    .and_then(super::as_int)
                    .unwrap_or(self.guest_attempt);
                let result = str_field(msg, "result");
                ctx.sink.snapshot(obj! {
                    "lo" => self.lo, "hi" => self.hi, "attempts" => self.attempts,
                    "last_event" => last_event(
                        format!("#{attempt} guessed {last}: {result}, range narrowed to [{},{}]", self.lo, self.hi),
                        obj! { "attempt" => attempt, "number" => last, "result" => result, "lo" => self.lo, "hi" => self.hi },
                    ),
                });
                ctx.sink.detail(obj! {
                    "type" => "hint", "attempt" => attempt, "number" => last, "result" => result,
                    "lo" => self.lo, "hi" => self.hi,
                    "summary" => format!("#{attempt} guessed {last} -> {result} (range [{},{}])", self.lo, self.hi),
                });
                self.guest_attempt += 1;
                Ok(HookResult::send(self.guess(ctx).await?))
            }
            "game_over" => {
                let winner = msg.get("winner").and_then(Value::as_str).unwrap_or("none");
                let secret = int_field(msg, "secret_number");
                let total = int_field(msg, "total_attempts");
                let summary =
                    format!("Game over: {winner} wins, answer {secret}, {total} attempts");
                ctx.sink.snapshot(obj! {
                    "phase" => "game_over", "attempts" => total,
                    "last_event" => last_event(summary.clone(), obj! {
                        "game_over" => true, "winner" => winner, "secret_number" => secret, "total_attempts" => total,
                    }),
                });
                ctx.sink.detail(obj! {
                    "type" => "game_over", "winner" => winner, "secret_number" => secret,
                    "total_attempts" => total, "summary" => summary,
                });
                Ok(HookResult::done())
            }
            "error" => Ok(HookResult {
                response: None,
                completed: false,
                abort: true,
            }),
            _ => Ok(HookResult::abort_with(
                obj! { "action" => "error", "reason" => "unexpected_action" },
            )),
        }
    }

    fn display(&self, msg: &Map, _dir: Dir) -> Option<String> {
        match str_field(msg, "action") {
            "guess" => Some(format!(
                "Guess #{}: {}",
                int_field(msg, "attempt"),
                int_field(msg, "number")
            )),
            "hint" => Some(format!(
                "Hint #{}: {}",
                int_field(msg, "attempt"),
                str_field(msg, "result")
            )),
            "game_over" => Some(format!(
                "Game over: {} wins, the number was {} ({} attempts)",
                str_field(msg, "winner"),
                int_field(msg, "secret_number"),
                int_field(msg, "total_attempts")
            )),
            "ready" => Some(format!(
                "Ready: {}..{}, {} attempts",
                int_field(msg, "range_min"),
                int_field(msg, "range_max"),
                int_field(msg, "max_attempts")
            )),
            _ => None,
        }
    }
}
