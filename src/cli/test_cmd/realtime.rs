//! `protocol test` of a realtime protocol (tank-battle-v1): what it prints.

use super::Subject;
use crate::cli::{Ctx, Outcome};
use crate::engine::{MemorySink, SessionOutcome};
use crate::json::{Map, Value};
use anyhow::Result;
use serde::Serialize;
use std::io::Write;
use std::time::Duration;

/// The data of the last event of `kind` a side emitted.
fn last_event(sink: &MemorySink, kind: &str) -> Option<Map> {
    let events = sink.events.lock().ok()?;
    events
        .iter()
        .rev()
        .find(|e| e.kind == kind)
        .map(|e| e.data.clone())
}

/// `protocol test` of a realtime protocol: the outcome both sides
/// recorded, the ticks played, the guest's audit and the time per tick.
#[allow(clippy::too_many_arguments)]
pub(super) fn report(
    ctx: &Ctx,
    subject: &Subject,
    seed: u64,
    options: &Map,
    (h, g): (&SessionOutcome, &SessionOutcome),
    (host_sink, guest_sink): (&MemorySink, &MemorySink),
    elapsed: Duration,
    paced: bool,
) -> Result<Outcome> {
    let ended = last_event(host_sink, "realtime_ended").unwrap_or_default();
    let ticks = ended.get("tick").and_then(Value::as_i64).unwrap_or(0);
    let audit = last_event(guest_sink, "realtime_ended")
        .and_then(|d| d.get("audit").and_then(Value::as_object).cloned())
        .unwrap_or_default();
    let audit_passed = audit.get("status").and_then(Value::as_str) == Some("passed");
    let agree = h.winner == g.winner && h.completed == g.completed;
    let ok = h.completed && g.completed && agree && audit_passed;
    let per_tick_us = if ticks > 0 {
        elapsed.as_secs_f64() * 1e6 / ticks as f64
    } else {
        0.0
    };
    if ctx.json {
        #[derive(Serialize)]
        struct Out<'a> {
            ok: bool,
            protocol: &'a str,
            protocol_id: &'a str,
            flow_mode: &'a str,
            seed: u64,
            paced: bool,
            options: &'a Map,
            host: &'a SessionOutcome,
            guest: &'a SessionOutcome,
            ticks: i64,
            audit: &'a Map,
            tick_lateness: Option<&'a Value>,
            elapsed_ms: f64,
            per_tick_us: f64,
        }
        ctx.print_json(&Out {
            ok,
            protocol: &subject.name,
            protocol_id: subject.spec.protocol_id(),
            flow_mode: subject.spec.flow_mode(),
            seed,
            paced,
            options,
            host: h,
            guest: g,
            ticks,
            audit: &audit,
            tick_lateness: ended.get("tick_lateness").filter(|_| paced),
            elapsed_ms: elapsed.as_secs_f64() * 1e3,
            per_tick_us,
        })?;
        return Ok(if ok { Outcome::Ok } else { Outcome::Rejected });
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} ({}), authoritative_realtime — {}",
        subject.name,
        &subject.spec.protocol_id()[..12],
        if paced {
            "paced at the tick rate"
        } else {
            "unpaced (lockstep, as fast as the CPU allows)"
        }
    )?;
    let side = |o: &SessionOutcome| {
        let mut s = format!(
            "{} ({}), winner {}",
            if o.completed { "completed" } else { "failed" },
            o.reason,
            o.winner.as_deref().unwrap_or("none")
        );
        if let Some(e) = &o.error {
            s.push_str(&format!(": {e}"));
        }
        s
    };
    writeln!(out, "host: {}", side(h))?;
    writeln!(out, "guest: {}", side(g))?;
    writeln!(
        out,
        "audit (guest): {} — {} host and {} guest tanks alive, chain {}",
        audit
            .get("status")
            .map(Value::py_str)
            .unwrap_or_else(|| "not reached".into()),
        audit
            .get("host_alive")
            .map(Value::py_str)
            .unwrap_or_default(),
        audit
            .get("guest_alive")
            .map(Value::py_str)
            .unwrap_or_default(),
        audit
            .get("chain_hash")
            .and_then(Value::as_str)
            .map(|c| &c[..c.len().min(16)])
            .unwrap_or("-"),
    )?;
    if paced && let Some(l) = ended.get("tick_lateness") {
        writeln!(
            out,
            "tick lateness: p50 {} ms, p99 {} ms, max {} ms",
            l.get("p50_ms").map(Value::py_str).unwrap_or_default(),
            l.get("p99_ms").map(Value::py_str).unwrap_or_default(),
            l.get("max_ms").map(Value::py_str).unwrap_or_default()
        )?;
    }
    writeln!(
        out,
        "{}: {ticks} ticks in {:.1} ms ({per_tick_us:.1} µs a tick), seed {seed}",
        if ok { "OK" } else { "FAILED" },
        elapsed.as_secs_f64() * 1e3
    )?;
    Ok(if ok { Outcome::Ok } else { Outcome::Rejected })
}
