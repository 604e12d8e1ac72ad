//! The coach pane's work over `services::coach`: load the conversation, run
//! a turn (its lines reported as they come), reset, adopt a reply as a
//! whisper. Config is read afresh for each, so an edited `[coach]` applies
//! without a restart.

use crate::json::Value;
use crate::services::coach::{Coach, CoachConfig};
use crate::tui::effect::CoachJob;
use crate::tui::report::{CoachReport, Report};
use std::path::Path;
use tokio::sync::mpsc::UnboundedSender;

fn open(data_dir: &Path) -> Result<Coach, String> {
    let settings = crate::config::Config::load()
        .map_err(|e| e.to_string())?
        .coach;
    let config = CoachConfig::from_settings(&settings).map_err(|e| format!("config.toml: {e}"))?;
    Coach::open(data_dir, config).map_err(|e| e.to_string())
}

fn history(c: &Coach) -> Vec<(String, String)> {
    c.history().into_iter().map(|e| (e.role, e.text)).collect()
}

pub(super) fn start(job: CoachJob, tx: UnboundedSender<Report>) {
    let send = move |r: CoachReport| {
        let _ = tx.send(Report::Coach(r));
    };
    match job {
        CoachJob::Load { data_dir } => {
            tokio::task::spawn_blocking(move || {
                send(CoachReport::History(open(&data_dir).map(|c| history(&c))));
            });
        }
        CoachJob::Reset { data_dir } => {
            tokio::task::spawn_blocking(move || {
                let r = open(&data_dir).and_then(|c| c.reset().map_err(|e| e.to_string()));
                send(CoachReport::Reset(r));
            });
        }
        CoachJob::Adopt {
            child,
            text,
            schema,
        } => {
            tokio::task::spawn_blocking(move || {
                let r = Coach::adopt(&child, &text, schema.as_ref())
                    .map(|w| w.entry.get("id").map(Value::py_str).unwrap_or_default())
                    .map_err(|e| format!("not adopted: {e}"));
                send(CoachReport::Adopted(r));
            });
        }
        CoachJob::Turn {
            data_dir,
            child,
            question,
            mut cancel,
        } => {
            tokio::spawn(async move {
                let coach = match open(&data_dir) {
                    Ok(c) => c,
                    Err(e) => return send(CoachReport::Done(Err(e))),
                };
                let stop = async move {
                    while !*cancel.borrow_and_update() {
                        if cancel.changed().await.is_err() {
                            // The pane is gone: the turn runs on to its end.
                            std::future::pending::<()>().await;
                        }
                    }
                };
                let r = coach
                    .turn(
                        &question,
                        Some(&child),
                        |l| send(CoachReport::Line(l.to_owned())),
                        stop,
                    )
                    .await
                    .map_err(|e| e.to_string());
                send(CoachReport::Done(r));
            });
        }
    }
}
