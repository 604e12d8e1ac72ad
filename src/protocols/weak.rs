//! weak-wins-all (simultaneous_round, integer `bid`): each side spends a
//! budget of `total_points` over `total_rounds`; the lower bid wins the
//! round and scores both bids (a tie scores each its own). The last round
//! spends everything left. Bids above what is left are clamped, as the
//! reference does.

use super::{int_field, last_event, opt_int, str_field, strategy_applied};
use crate::engine::{
    ControlMode, Ctx, Dir, HookError, HookResult, Hooks, HostMetadata, Role, Window,
};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;

/// `mode: percent`: that share of what is left, rounded half to even as
/// Python's `round` does, at least 1 (then clamped to what is left).
fn percent_bid(remaining: i64, pct: f64) -> i64 {
    let pct = if pct.is_finite() { pct } else { 0.0 };
    let v = (remaining as f64 * pct / 100.0).round_ties_even();
    // A float far out of range saturates in the cast; the clamp after it
    // keeps the bid within what is left.
    (v as i64).max(1)
}

/// The first number in strategy.json's `operator_hint`, as the reference's
/// weak-wins-all reads a whisper it could not resolve.
fn hint_bid(strat: &Map) -> Option<i64> {
    let hint = strat.get("operator_hint")?.as_str()?;
    if hint.trim().is_empty() {
        return None;
    }
    match crate::engine::whisper::extract_number(hint)? {
        Value::Number(crate::json::Number::BigInt(_)) => Some(i64::MAX),
        v => super::as_int(&v),
    }
}

#[derive(Debug, Default)]
pub struct WeakWins {
    total_points: i64,
    total_rounds: i64,
    host_remaining: i64,
    guest_remaining: i64,
    host_score: i64,
    guest_score: i64,
    role: Option<Role>,
    /// (own, opponent) bids of the last round, for policy scripts.
    last: Option<(i64, i64)>,
}

impl WeakWins {
    fn remaining(&self) -> i64 {
        if self.role == Some(Role::Host) {
            self.host_remaining
        } else {
            self.guest_remaining
        }
    }

    /// A policy script's bid for `round` (strategy mode `script`; the
    /// last round always bids what is left): the context holds the previous
    /// round's bids (`previous.self.bid`, `previous.opponent.bid`) and what
    /// is left, as `adaptive_bid` reads it.
    async fn scripted(&self, ctx: &Ctx, round: u64, last: bool) -> Option<i64> {
        if last {
            return None;
        }
        let remaining = self.remaining();
        let context = self.last.map(|(own, opp)| {
            obj! {
                "supported" => true, "match_key" => "round", "match_value" => round, "value_field" => "bid",
                "previous" => obj! { "self" => obj! { "bid" => own }, "opponent" => obj! { "bid" => opp } },
                "remaining" => remaining, "legal_range" => vec![Value::from(0), Value::from(remaining)],
            }
        });
        let schema = self.decision_schema().unwrap_or_default();
        super::run_policy_script(ctx, round, context, schema, |d| {
            d.get("bid")
                .and_then(super::as_int)
                .filter(|b| (0..=remaining).contains(b))
                .map(Value::from)
        })
        .await?
        .as_i64()
    }

    /// (host, guest) as (this side's, the opponent's).
    fn own_first(&self, (h, g): (i64, i64)) -> (i64, i64) {
        if self.role == Some(Role::Host) {
            (h, g)
        } else {
            (g, h)
        }
    }

    fn pair(h: i64, g: i64) -> Value {
        Value::Object(obj! { "host" => h, "guest" => g })
    }

    fn bid_auto(&self, ctx: &Ctx, round: u64) -> i64 {
        let remaining = self.remaining();
        let strat = ctx.strategy.get();
        let bid = if round as i64 >= self.total_rounds - 1 {
            remaining
        } else {
            let rounds_left = (self.total_rounds - round as i64).max(1);
            let even = (remaining / rounds_left).max(1);
            match str_field(&strat, "mode") {
                "fixed" => strat.get("bid").and_then(super::as_int).unwrap_or(even),
                "percent" => {
                    let pct = strat.get("percent").and_then(Value::as_f64).unwrap_or(0.0);
                    percent_bid(remaining, pct)
                }
                "seq" => strat
                    .get("sequence")
                    .and_then(Value::as_array)
                    .filter(|s| !s.is_empty())
                    .and_then(|s| super::as_int(&s[round as usize % s.len()]))
                    .unwrap_or(even),
                "random" => ctx.random_in(1, remaining.max(1)),
                // even split, unless a whisper the sender could not resolve
                // left a number in operator_hint ("押30" bids 30).
                _ => hint_bid(&strat).unwrap_or(even),
            }
        };
        let bid = bid.clamp(0, remaining.max(0));
        strategy_applied(ctx, round, &strat, Value::from(bid));
        bid
    }

    fn record(
        &self,
        ctx: &Ctx,
        round: i64,
        bids: (i64, i64),
        winner: &str,
        over: bool,
        game_winner: &str,
    ) {
        let rd = round + 1;
        let (hb, gb) = bids;
        let (hs, gs, hr, gr) = (
            self.host_score,
            self.guest_score,
            self.host_remaining,
            self.guest_remaining,
        );
        ctx.sink.detail(obj! {
            "type" => "round_result", "round" => rd, "host_bid" => hb, "guest_bid" => gb, "winner" => winner,
            "host_score" => hs, "guest_score" => gs, "host_remaining" => hr, "guest_remaining" => gr,
            "game_over" => over, "game_winner" => game_winner,
            "summary" => format!("R{rd}: H:{hb} G:{gb} -> {winner} (score {hs}-{gs}, left {hr}-{gr})"),
        });
        let summary = if over {
            format!("Game over: {game_winner} wins ({hs}-{gs})")
        } else {
            format!("R{rd} done: {winner} wins, score {hs}-{gs}, left {hr}-{gr}")
        };
        ctx.sink.snapshot(obj! {
            "phase" => if over { "game_over" } else { "playing" },
            "score" => Self::pair(hs, gs),
            "round" => if over { rd } else { rd + 1 },
            "remaining" => Self::pair(hr, gr),
            "last_event" => last_event(summary, obj! {
                "round" => rd, "winner" => winner, "host_bid" => hb, "guest_bid" => gb,
                "game_over" => over, "game_winner" => game_winner,
            }),
        });
    }
}

#[async_trait]
impl Hooks for WeakWins {
    fn decision_schema(&self) -> Option<Map> {
        Some(obj! {
            "match_key" => "round", "value_field" => "bid", "numeric" => true,
            "range" => vec![Value::from(0), Value::from(self.remaining())],
        })
    }

    fn host_metadata(&self) -> HostMetadata {
        HostMetadata {
            display_name: "Weak Wins All".into(),
            tags: "game,weak-wins-all".into(),
            invite_type: "supply".into(),
            default_options: obj! { "total_points" => self.total_points, "total_rounds" => self.total_rounds },
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        self.role = Some(ctx.role);
        self.total_points = opt_int(&ctx.options, "total_points", 25).max(0);
        self.total_rounds = opt_int(&ctx.options, "total_rounds", 5).max(1);
        self.host_remaining = self.total_points;
        self.guest_remaining = self.total_points;
        ctx.sink.snapshot(obj! {
            "score" => Self::pair(0, 0), "round" => 1, "total_rounds" => self.total_rounds,
            "total_points" => self.total_points, "remaining" => Self::pair(self.total_points, self.total_points),
        });
        Ok(())
    }

    async fn host_handle_join(&mut self, ctx: &Ctx, join: &Map) -> Result<HookResult, HookError> {
        if let Some(p) = join.get("total_points").and_then(super::as_int) {
            self.total_points = p;
        }
        if let Some(r) = join.get("total_rounds").and_then(super::as_int) {
            self.total_rounds = r.max(1);
        }
        self.host_remaining = self.total_points;
        self.guest_remaining = self.total_points;
        ctx.sink.snapshot(obj! {
            "total_points" => self.total_points, "total_rounds" => self.total_rounds,
            "remaining" => Self::pair(self.total_points, self.total_points), "phase" => "playing",
        });
        Ok(HookResult::send(
            obj! { "action" => "ready", "total_points" => self.total_points, "total_rounds" => self.total_rounds },
        ))
    }

    async fn guest_join_message(&mut self, _ctx: &Ctx) -> Result<Map, HookError> {
        Ok(
            obj! { "action" => "join", "total_points" => self.total_points, "total_rounds" => self.total_rounds },
        )
    }

    async fn guest_handle_ready(&mut self, ctx: &Ctx, ready: &Map) -> Result<(), HookError> {
        self.total_points = int_field(ready, "total_points");
        self.total_rounds = int_field(ready, "total_rounds").max(1);
        self.host_remaining = self.total_points;
        self.guest_remaining = self.total_points;
        ctx.sink.snapshot(obj! {
            "total_points" => self.total_points, "total_rounds" => self.total_rounds,
            "remaining" => Self::pair(self.total_points, self.total_points), "phase" => "playing",
        });
        Ok(())
    }

    async fn round_value(&mut self, ctx: &Ctx, round: u64) -> Result<Value, HookError> {
        let remaining = self.remaining();
        let last = round as i64 >= self.total_rounds - 1;
        let auto = if ctx.control_mode == ControlMode::Human {
            remaining
        } else if let Some(b) = self.scripted(ctx, round, last).await {
            b
        } else {
            self.bid_auto(ctx, round)
        };
        let human = ctx.control_mode == ControlMode::Human;
        let window = Window {
            match_key: "round",
            match_value: Value::from(round),
            auto: obj! { "bid" => auto },
            value_field: "bid",
            policy: None,
        };
        ctx.choose(window, |d| match d.get("bid").and_then(super::as_int) {
            None => Err("bid must be an integer".into()),
            Some(b) if !(0..=remaining).contains(&b) => {
                Err(format!("bid must be between 0 and {remaining}"))
            }
            Some(b) if human && last && b != remaining => {
                Err(format!("final-round bid must equal {remaining}"))
            }
            Some(b) => Ok(Value::from(b)),
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
        let hb = host
            .as_i64()
            .unwrap_or(0)
            .clamp(0, self.host_remaining.max(0));
        let gb = guest
            .as_i64()
            .unwrap_or(0)
            .clamp(0, self.guest_remaining.max(0));
        self.host_remaining -= hb;
        self.guest_remaining -= gb;
        let winner = match hb.cmp(&gb) {
            std::cmp::Ordering::Equal => {
                self.host_score += hb;
                self.guest_score += gb;
                "draw"
            }
            std::cmp::Ordering::Less => {
                self.host_score += hb + gb;
                "host"
            }
            std::cmp::Ordering::Greater => {
                self.guest_score += hb + gb;
                "guest"
            }
        };
        let over = round as i64 + 1 >= self.total_rounds;
        let game_winner = if !over {
            "none"
        } else {
            match self.host_score.cmp(&self.guest_score) {
                std::cmp::Ordering::Greater => "host",
                std::cmp::Ordering::Less => "guest",
                std::cmp::Ordering::Equal => "draw",
            }
        };
        let resp = obj! {
            "action" => "round_result", "round" => round, "host_bid" => hb, "guest_bid" => gb,
            "round_winner" => winner, "host_score" => self.host_score, "guest_score" => self.guest_score,
            "host_remaining" => self.host_remaining, "guest_remaining" => self.guest_remaining,
            "game_over" => over, "game_winner" => game_winner,
        };
        self.record(ctx, round as i64, (hb, gb), winner, over, game_winner);
        self.last = Some(self.own_first((hb, gb)));
        Ok(HookResult {
            response: Some(resp),
            completed: over,
            abort: false,
        })
    }

    async fn guest_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        if str_field(msg, "action") == "round_result" {
            self.host_score = int_field(msg, "host_score");
            self.guest_score = int_field(msg, "guest_score");
            self.host_remaining = int_field(msg, "host_remaining");
            self.guest_remaining = int_field(msg, "guest_remaining");
            let over = msg.get("game_over").is_some_and(Value::truthy);
            let gw = str_field(msg, "game_winner").to_owned();
            let w = str_field(msg, "round_winner").to_owned();
            let bids = (int_field(msg, "host_bid"), int_field(msg, "guest_bid"));
            self.record(ctx, int_field(msg, "round"), bids, &w, over, &gw);
            self.last = Some(self.own_first(bids));
        }
        Ok(HookResult::none())
    }

    fn display(&self, msg: &Map, _dir: Dir) -> Option<String> {
        (str_field(msg, "action") == "round_result").then(|| {
            format!(
                "Round {}: host bids {} vs guest {} -> {} (score {}-{}, left {}-{})",
                int_field(msg, "round") + 1,
                int_field(msg, "host_bid"),
                int_field(msg, "guest_bid"),
                str_field(msg, "round_winner"),
                int_field(msg, "host_score"),
                int_field(msg, "guest_score"),
                int_field(msg, "host_remaining"),
                int_field(msg, "guest_remaining"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{hint_bid, percent_bid};
    use crate::obj;

    #[test]
    fn percent_rounds_half_to_even_and_bids_at_least_one() {
        assert_eq!(percent_bid(100, 25.0), 25);
        assert_eq!(percent_bid(10, 25.0), 2); // 2.5 → 2, as Python's round
        assert_eq!(percent_bid(14, 25.0), 4); // 3.5 → 4
        assert_eq!(percent_bid(100, 0.0), 1);
        assert_eq!(percent_bid(100, f64::NAN), 1);
        assert_eq!(percent_bid(100, 1e300), i64::MAX);
    }

    #[test]
    fn a_number_in_the_hint_is_the_bid() {
        assert_eq!(hint_bid(&obj! { "operator_hint" => "押30" }), Some(30));
        assert_eq!(
            hint_bid(&obj! { "operator_hint" => "bid 7 then 9" }),
            Some(7)
        );
        assert_eq!(hint_bid(&obj! { "operator_hint" => "go low" }), None);
        assert_eq!(hint_bid(&obj! { "operator_hint" => " " }), None);
        assert_eq!(hint_bid(&obj! {}), None);
        assert_eq!(
            hint_bid(&obj! { "operator_hint" => "99999999999999999999999" }),
            Some(i64::MAX)
        );
    }
}
