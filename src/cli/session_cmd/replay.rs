//! `session replay` and the werewolf game log's replay: a timeline printed
//! whole as JSON, else a line per step paced by `--speed`.

use super::super::{Ctx, Outcome};
use crate::json::Value;
use crate::session::StateDir;
use anyhow::{Result, bail};
use std::io::Write;
use std::time::Duration;

pub(super) fn check_speed(speed: Option<f64>) -> Result<()> {
    if let Some(x) = speed
        && !(x.is_finite() && x > 0.0)
    {
        bail!("--speed must be a number above 0, not {x}");
    }
    Ok(())
}

/// `session replay`: the timeline of a finished session, step by step.
pub(super) fn replay(ctx: &Ctx, dir: &StateDir, speed: Option<f64>) -> Result<Outcome> {
    check_speed(speed)?;
    let tl = crate::session::replay::load_dir(dir);
    print_timeline(ctx, &tl, speed)
}

/// Prints a timeline (a session's or a werewolf game's): --json whole, else
/// a line per step, paced by `speed`.
pub(super) fn print_timeline(
    ctx: &Ctx,
    tl: &crate::session::replay::Timeline,
    speed: Option<f64>,
) -> Result<Outcome> {
    use crate::session::replay;
    if ctx.json {
        ctx.print_json(tl)?;
        return Ok(Outcome::Ok);
    }
    let mut out = std::io::stdout().lock();
    if tl.werewolf {
        let agents = tl
            .steps
            .last()
            .and_then(|s| s.state.get("agents"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        writeln!(
            out,
            "{} — werewolf game log, {agents} agents, {} steps{}{}",
            tl.dir,
            tl.steps.len(),
            if tl.finished { "" } else { ", not finished" },
            if tl.skipped > 0 {
                format!(", {} unreadable lines skipped", tl.skipped)
            } else {
                String::new()
            }
        )?;
    } else {
        writeln!(
            out,
            "{} — {} as {} ({}), {} steps{}",
            tl.dir,
            tl.protocol_name.as_deref().unwrap_or("?"),
            tl.role.as_deref().unwrap_or("?"),
            tl.control_mode.as_deref().unwrap_or("?"),
            tl.steps.len(),
            if tl.finished { "" } else { ", not finished" }
        )?;
    }
    let mut last_board: Option<Vec<String>> = None;
    let mut prev_t = 0.0;
    for (i, step) in tl.steps.iter().enumerate() {
        if let Some(x) = speed {
            let gap = ((step.t - prev_t) / x).clamp(0.0, 5.0);
            if gap > 0.0 {
                out.flush()?;
                std::thread::sleep(Duration::from_secs_f64(gap));
            }
        }
        prev_t = step.t;
        if tl.werewolf {
            writeln!(
                out,
                "{:>4} {:>8.3}s  {:<10} {}  ({})",
                i + 1,
                step.t,
                step.action,
                step.summary,
                crate::werewolf::replay::state_line(&step.state)
            )?;
            continue;
        }
        let by = step
            .by
            .map(|b| format!(" [{}]", b.as_str()))
            .unwrap_or_default();
        let at = step.ts.get(11..23).unwrap_or("");
        writeln!(
            out,
            "{:>4} {at} {:>8.3}s  {}{by}  ({})",
            i + 1,
            step.t,
            step.summary,
            replay::state_line(&step.state)
        )?;
        let board = replay::board_rows(&step.state);
        if board.is_some() && board != last_board {
            for row in board.iter().flatten() {
                writeln!(out, "         {row}")?;
            }
            last_board = board;
        }
    }
    let mut end = format!(
        "end: {}",
        tl.end_reason.as_deref().unwrap_or(if tl.finished {
            "finished"
        } else {
            "no end recorded"
        })
    );
    if let Some(w) = &tl.winner {
        end.push_str(&format!(", winner {w}"));
    }
    let marks = tl.interventions().len();
    if marks > 0 {
        end.push_str(&format!(", {marks} human/whisper interventions"));
    }
    if tl.truncated && tl.werewolf {
        end.push_str(&format!(
            " (cut short at {} steps: the log is too large)",
            tl.steps.len()
        ));
    } else if tl.truncated {
        end.push_str(&format!(" (only the first {} steps)", replay::MAX_STEPS));
    }
    writeln!(out, "{end}")?;
    Ok(Outcome::Ok)
}
