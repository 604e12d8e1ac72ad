//! A community server inside the console's process: its own SQLite
//! database, loopback only, room for the house's invitations.

use super::{Client, ClientError, Config, SqliteStore};
use std::net::Ipv4Addr;
use std::path::Path;

/// Active invitations one key may hold on the embedded server (the house
/// keeps one per game open).
pub const EMBEDDED_MAX_ACTIVE_INVITATIONS: usize = 32;

/// Starts a community server with its store at `db` on 127.0.0.1 (a free
/// port); returns its base URL (`http://127.0.0.1:PORT`) and the task that
/// serves it (abort it to stop the server).
pub async fn start_embedded(db: &Path) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let store = SqliteStore::open(db)
        .map_err(|e| std::io::Error::other(format!("opening {}: {e}", db.display())))?;
    let market =
        crate::market::Market::open(db, crate::market::MarketConfig::default()).map_err(|e| {
            std::io::Error::other(format!("opening the market in {}: {e}", db.display()))
        })?;
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let cfg = Config {
        max_active_invitations: EMBEDDED_MAX_ACTIVE_INVITATIONS,
        ..Config::default()
    };
    let task = tokio::spawn(async move {
        // axum's serve only returns when the listener fails; the console
        // notices a dead server through its requests.
        let _ =
            super::serve_with_market(listener, Box::new(store), cfg, std::sync::Arc::new(market))
                .await;
    });
    Ok((url, task))
}

/// Registers the client's identity under `nickname`; an identity the server
/// already knows (it answers 409 `already_registered`) is fine too.
pub async fn ensure_registered(client: &Client, nickname: &str) -> Result<(), ClientError> {
    client.register(nickname, "").await.map(|_| ())
}
