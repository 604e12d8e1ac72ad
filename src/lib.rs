//! palaver: a terminal console for protocol-driven agent-to-agent sessions.
//!
//! The library holds everything; `src/main.rs` only calls [`cli::main`].
//! Layers, from the bottom: [`json`] and [`canonical`] (byte-exact JSON),
//! [`spec`] (the protocol contract: protocol_id and validators),
//! [`library`] (bundled and installed protocols), and [`cli`].
//! ARCHITECTURE.md maps the whole system.

#![forbid(unsafe_code)]

pub mod canonical;
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
mod printable;
pub mod protocols;
pub mod services;
pub mod session;
pub mod spec;
pub mod tui;
pub mod werewolf;
