//! The clock the market reads (replaceable in tests), in unix
//! milliseconds; its RFC 3339 text form (`2030-01-01T00:00:00.000Z`) is
//! [`crate::utc::format_rfc3339_utc`].

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Where the market reads the time: the system clock, or a manual one a
/// test moves forward.
#[derive(Clone, Default)]
pub enum Clock {
    #[default]
    System,
    Manual(Arc<AtomicI64>),
}

impl Clock {
    /// A manual clock starting at `ms`, and the handle that moves it.
    pub fn manual(ms: i64) -> (Clock, Arc<AtomicI64>) {
        let a = Arc::new(AtomicI64::new(ms));
        (Clock::Manual(a.clone()), a)
    }

    /// Now, in unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => system_ms(),
            Clock::Manual(a) => a.load(Ordering::SeqCst),
        }
    }
}

/// The system clock in unix milliseconds.
pub fn system_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
