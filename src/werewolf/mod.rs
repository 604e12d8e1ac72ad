//! AIWolf NLP werewolf: the wire protocol, a seeded game master, a
//! compatible WebSocket server (`palaver wolf serve`), an agent client
//! (`palaver wolf join`), a rule-based bot, logs in the reference formats,
//! and the in-process game a console can watch or sit in.
//!
//! Layers, from the bottom: [`packet`] (types), [`config`] and [`length`]
//! (rules data), [`game`] (the pure master: a [`game::Transport`] for I/O
//! and an [`game::Observer`] for god-view events), [`view`] (what one seat
//! knows), [`bot`] (decisions from a view), [`agent`] (the decision hook
//! and the client loop), [`local`] (in-process games), [`logs`],
//! [`replay`] (a finished game's .log as a session replay timeline),
//! [`jwt`], [`server`], [`spectate`].

pub mod agent;
pub mod bot;
pub mod bundle;
pub mod config;
pub mod game;
pub mod jwt;
pub mod length;
pub mod local;
pub mod logs;
pub mod packet;
pub mod replay;
pub mod server;
pub mod spectate;
pub mod view;

pub use config::Config;
pub use game::{Game, GameEvent, Observer, Outcome, Phase, SeatView, Transport};
pub use packet::{Packet, Request, Role, Species, Status, Team};
pub use view::View;

/// Errors of the werewolf library.
#[derive(Debug, thiserror::Error)]
pub enum WolfError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("connection: {0}")]
    Connection(String),
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("authentication: {0}")]
    Auth(String),
}

impl WolfError {
    /// The kind as one word (`palaver wolf join --json` reports it).
    pub fn kind(&self) -> &'static str {
        match self {
            WolfError::Config(_) => "config",
            WolfError::Io(_) => "io",
            WolfError::Connection(_) => "connection",
            WolfError::Protocol(_) => "protocol",
            WolfError::Auth(_) => "auth",
        }
    }
}
