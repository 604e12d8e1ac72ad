//! `palaver mcp`: the MCP server on stdin/stdout (services::mcp).

use super::{Ctx, Outcome};
use crate::identity::KeyPair;
use crate::services::mcp::{MarketSource, Palaver, SessionTools, serve_stdio};
use anyhow::{Context, Result, anyhow};

pub fn run(ctx: &Ctx) -> Result<Outcome> {
    let data_dir = ctx.data_dir()?;
    // Neither is needed to start: the session reads work without a server,
    // and a market tool says what is missing when it is called.
    let server = super::community_cmd::server_url(ctx).ok();
    let keys = KeyPair::load(&data_dir).ok();
    let exe = std::env::current_exe().context("locating the palaver binary")?;
    let server_flag = ctx.server.clone().or_else(|| server.clone());
    let palaver = Palaver::new(
        MarketSource::remote(server, keys),
        SessionTools::new(data_dir, exe, server_flag),
    );
    tracing::info!("palaver mcp: serving on stdio");
    super::community_cmd::runtime()?
        .block_on(serve_stdio(palaver))
        .map_err(|e| anyhow!(e))?;
    Ok(Outcome::Ok)
}
