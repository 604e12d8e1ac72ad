//! palaver: a terminal console for protocol-driven agent-to-agent sessions.
//!
//! The library holds everything; `src/main.rs` only calls [`cli::main`].
//! Modules by layer, bottom first (a module uses its own layer or lower
//! ones, never in a cycle; `tests/layers.rs` checks it, ARCHITECTURE.md
//! maps the whole system):
//!
//! 0. [`json`]: the JSON value model, canonical form, Python's repr rules.
//!    [`fsutil`]: atomic file replacement. [`paths`]: the data and config
//!    dirs. [`limits`]: checked numbers from outside. [`utc`]: the timestamp
//!    forms of the files and the wire.
//! 1. [`spec`]: the protocol contract (protocol_id, validators, lint).
//!    [`library`]: bundled and installed protocols. [`identity`]: the
//!    Ed25519 key pair. [`sealed`]: the inbox's sealed messages. [`web`]: the signed-request scheme, its client,
//!    the HTTP serving pieces, request ids, logs and metrics.
//! 2. [`engine`]: channels, hooks, flow runners, commit-reveal, decisions.
//!    [`sql`]: the one SQL seam of the community and the market (dialects,
//!    the PostgreSQL pool and retry policy).
//! 3. [`session`]: state dirs, the decision bus, strategy files.
//!    [`protocols`]: the native hooks of the bundled games.
//! 4. [`net`]: iroh endpoints and the session handshake. [`community`]: the
//!    community server's routes and store. [`market`]: the GTL 0.2 market.
//!    [`werewolf`]: the AIWolf NLP game, server and agents.
//! 5. [`services`]: sessions local and remote, the adversarial catalogue,
//!    the house, the community-and-market server. [`config`]: config.toml.
//! 6. [`tui`]: the console. [`cli`]: the commands.

#![forbid(unsafe_code)]
// A panic on data from outside is a bug: `?` or a typed error instead.
// Exceptions say why at the site (`#[allow(..., reason = ...)]`); tests
// may unwrap (clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod cli;
pub mod community;
pub mod config;
pub mod engine;
pub mod fsutil;
pub mod identity;
pub mod json;
pub mod library;
pub mod limits;
pub mod market;
pub mod net;
pub mod paths;
pub mod protocols;
pub mod sealed;
pub mod services;
pub mod session;
pub mod spec;
pub mod sql;
pub mod tui;
pub mod utc;
pub mod web;
pub mod werewolf;
