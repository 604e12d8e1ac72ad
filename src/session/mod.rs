//! The session runtime: what makes a running session observable and
//! steerable from files — the reference's state dir layout and formats,
//! the decision bus, strategy.json, session.json — plus an in-process
//! broadcast of every write.

pub mod appender;
pub mod bundle;
pub mod coalesce;
pub mod decision;
pub mod files;
pub mod replay;
pub mod room;
pub mod state;
pub mod strategy;
pub mod table;
/// The task view of a trusted-agent-task session (the protocol keeps it).
pub use crate::protocols::task::view as task;
pub mod whisper;
pub mod whisper_log;

pub use decision::{DecisionBus, SubmitOptions, Submitted, submit, submit_caused_by};
pub use state::{StateDir, StateSink, Update, update_session_file, update_session_file_if};
pub use strategy::StrategyFile;

/// Locks a mutex, taking it over from a thread that panicked while holding
/// it: the session's files and queues stay usable after a bug elsewhere.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
