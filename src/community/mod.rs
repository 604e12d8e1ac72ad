//! The community server's routes (`palaver serve`), wire-compatible with
//! the reference client: registration, protocols, invitations, sessions,
//! feedback and ratings over a SQLite or a PostgreSQL store. The client
//! that talks to it is [`crate::web::Client`]; the server that runs these
//! routes with the market's is [`crate::services::server`].

pub mod db;
pub mod groups;
pub mod pg;
pub mod queries;
mod queries_social;
pub mod recent;
pub mod server;
pub mod social;
pub mod sqlite;
pub mod standing;
mod statements;
pub mod store;
pub mod timed;
pub mod trust;

pub use db::Database;
pub use pg::PgStore;
pub use server::Config;
pub use sqlite::SqliteStore;
pub use store::Store;

// The store's tests drive both backends: they sit at the front door,
// which may reach every file of the module.
#[cfg(test)]
#[path = "store_tests.rs"]
mod store_tests;

#[cfg(test)]
#[path = "store_social_tests.rs"]
mod store_social_tests;
