//! The GTL 0.2 market core: verifiable jobs, offers, two-party deals,
//! deal-specific funding, verified delivery and exactly one value outcome,
//! on palaver's community server (same process, same SQLite file).
//!
//! - [`canonical`]: `canonical_json` (RFC 8785-identical under GTL's
//!   restrictions), object hashes and the bearer-token message signature.
//! - [`gate`]: the JOB_OPEN hard gate.
//! - [`policy`]: the published `sha256_nonce.v1` policy, its verifier and
//!   the providers' multi-threaded solver.
//! - [`store`]: the tables, whose constraints and triggers hold the
//!   invariants (SQLite); [`store_pg`]: the same on PostgreSQL; [`db`]: the
//!   seam that runs one machine over either.
//! - [`vocab`]: states, message kinds and statuses as enums, and the
//!   transition table.
//! - [`Market`] (in `machine`): the one state machine every write goes
//!   through, the sandbox GTU ledger and the per-transaction event chain
//!   ([`chain`]).
//! - [`view`]: what the market shows (a listing row, a transaction with
//!   its history), one serde type for the server, the client, the CLI, the
//!   console and the bot.
//! - [`http`]: the endpoints; [`client`]: what the CLI, the bot and the
//!   console use to talk to them, and [`workflow`]: the buyer's and the
//!   provider's steps; [`messages`]: builders for every message a buyer or
//!   provider signs.
//!
//! docs/gtl.md records every decision the seed leaves open.

pub mod bot;
pub mod bundle;
pub mod canonical;
pub mod chain;
pub mod client;
pub mod db;
pub mod gate;
mod group;
pub mod http;
mod machine;
pub mod messages;
pub mod policy;
pub mod schema;
pub mod store;
pub mod store_pg;
pub mod time;
pub mod view;
pub mod vocab;
pub mod workflow;

pub use chain::{ChainReport, verify_chain_value};
pub use client::{MarketClient, MarketClientError};
pub use db::postgres::{PgPool, PgSource};
pub use machine::{Audit, Finish, Grant, Market};
pub use view::{Listing, TransactionView};
pub use vocab::{Kind, State};

use crate::json::Value;
use crate::obj;

/// The GTL versions this market speaks.
pub const GTL_VERSIONS: &[&str] = &["0.2"];
/// How messages are canonicalised, as discovery advertises it.
pub const CANONICALIZATION: &str = "jcs-rfc8785-restricted";
/// How messages are signed, as discovery advertises it.
pub const SIGNATURE_SCHEME: &str = "sha256-bearer-prefix.v0";
/// Largest `POST /api/gtl` body.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// Market settings.
#[derive(Debug, Clone)]
pub struct MarketConfig {
    /// GTU a new principal receives from the sandbox mint.
    pub grant: i64,
    /// How far in the future a deadline must be, milliseconds.
    pub deadline_margin_ms: i64,
    /// Longest `input.target`, hex digits (difficulty cap).
    pub max_target_hex: usize,
    /// Longest `input.prefix`, bytes.
    pub max_prefix_bytes: usize,
    /// Run settlement or refund right after verification (and let the
    /// sweep finish any a crash left behind). Off, VERIFIED and REJECTED
    /// transactions wait for [`Market::finish`] (a separate settlement
    /// worker).
    pub settle_inline: bool,
    /// `synchronous=FULL`: a transition is on disk before it is answered.
    pub durable: bool,
}

impl Default for MarketConfig {
    fn default() -> Self {
        MarketConfig {
            grant: 1000,
            deadline_margin_ms: 60_000,
            max_target_hex: 8,
            max_prefix_bytes: 256,
            settle_inline: true,
            durable: true,
        }
    }
}

/// The party a bearer token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub principal_id: String,
    pub agent_id: String,
    pub public_key: String,
}

/// One field the gate or a guard refused, by dotted path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub path: String,
    pub reason: String,
}

/// Why the market refused a message (nothing was written).
#[derive(Debug, Clone, thiserror::Error)]
pub enum MarketError {
    /// Not a GTL message: invalid JSON, a duplicate key, a float…
    #[error("bad_request: {0}")]
    Malformed(String),
    #[error("unsupported_version: {0}")]
    UnsupportedVersion(String),
    /// No bearer token, or one the market never issued.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// A bad signature, or a sender without the right to this step.
    #[error("{code}: {message}")]
    Forbidden { code: &'static str, message: String },
    #[error("not_found: {0}")]
    NotFound(String),
    /// Illegal in the transaction's current state, or a duplicate.
    #[error("{code}: {message}")]
    Conflict { code: &'static str, message: String },
    /// The JOB_OPEN hard gate: every missing and invalid field at once.
    #[error(
        "missing_fields: {missing_fields:?}; invalid_fields: {}",
        show_fields(invalid_fields)
    )]
    Gate {
        missing_fields: Vec<String>,
        invalid_fields: Vec<FieldError>,
    },
    /// Fields of another message that break its rules.
    #[error("invalid_fields: {}", show_fields(.0))]
    Invalid(Vec<FieldError>),
    #[error("store: {0}")]
    Store(String),
}

fn show_fields(f: &[FieldError]) -> String {
    f.iter()
        .map(|e| format!("{}: {}", e.path, e.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

impl From<rusqlite::Error> for MarketError {
    fn from(e: rusqlite::Error) -> Self {
        MarketError::Store(e.to_string())
    }
}

pub(crate) fn conflict(code: &'static str, message: impl Into<String>) -> MarketError {
    MarketError::Conflict {
        code,
        message: message.into(),
    }
}

pub(crate) fn forbidden(code: &'static str, message: impl Into<String>) -> MarketError {
    MarketError::Forbidden {
        code,
        message: message.into(),
    }
}

pub(crate) fn invalid(path: &str, reason: impl Into<String>) -> MarketError {
    MarketError::Invalid(vec![FieldError {
        path: path.to_owned(),
        reason: reason.into(),
    }])
}

impl MarketError {
    /// The HTTP status this refusal answers with.
    pub fn status(&self) -> u16 {
        match self {
            MarketError::Malformed(_) | MarketError::UnsupportedVersion(_) => 400,
            MarketError::Unauthorized(_) => 401,
            MarketError::Forbidden { .. } => 403,
            MarketError::NotFound(_) => 404,
            MarketError::Conflict { .. } => 409,
            MarketError::Gate { .. } | MarketError::Invalid(_) => 422,
            MarketError::Store(_) => 500,
        }
    }

    /// The machine-readable error code.
    pub fn code(&self) -> &'static str {
        match self {
            MarketError::Malformed(_) => "bad_request",
            MarketError::UnsupportedVersion(_) => "unsupported_version",
            MarketError::Unauthorized(_) => "unauthorized",
            MarketError::Forbidden { code, .. } | MarketError::Conflict { code, .. } => code,
            MarketError::NotFound(_) => "not_found",
            MarketError::Gate { missing_fields, .. } if !missing_fields.is_empty() => {
                "missing_fields"
            }
            MarketError::Gate { .. } | MarketError::Invalid(_) => "invalid_fields",
            MarketError::Store(_) => "store_error",
        }
    }

    /// The error envelope: `{"ok":false,"error":…,"message":…}` plus
    /// `missing_fields` and `invalid_fields` where they apply.
    pub fn to_json(&self) -> Value {
        let mut m = obj! { "ok" => false, "error" => self.code(), "message" => self.to_string() };
        let fields = |f: &[FieldError]| -> Value {
            Value::Array(
                f.iter()
                    .map(|e| {
                        Value::Object(
                            obj! { "path" => e.path.as_str(), "reason" => e.reason.as_str() },
                        )
                    })
                    .collect(),
            )
        };
        match self {
            MarketError::Gate {
                missing_fields,
                invalid_fields,
            } => {
                m.insert(
                    "missing_fields",
                    Value::Array(
                        missing_fields
                            .iter()
                            .map(|s| Value::from(s.as_str()))
                            .collect(),
                    ),
                );
                m.insert("invalid_fields", fields(invalid_fields));
            }
            MarketError::Invalid(f) => {
                m.insert("invalid_fields", fields(f));
            }
            _ => {}
        }
        Value::Object(m)
    }
}
