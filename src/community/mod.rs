//! The community: the REST client every command that talks to a server
//! uses, and the server itself (`palaver serve`), wire-compatible with the
//! reference client.

pub mod auth;
pub mod client;
pub mod embedded;
pub mod recent;
pub mod server;
pub mod store;

pub use client::{Client, ClientError};
pub use embedded::{ensure_registered, start_embedded};
pub use server::{Config, router, router_with_market, serve, serve_with_market};
pub use store::{SqliteStore, Store};
