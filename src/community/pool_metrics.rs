//! What `GET /metrics` reads of a PostgreSQL community: its pool (every
//! checkout's wait and timeout, as r2d2 reports them, and the pool's state
//! at scrape time) and the gauges the store counts.

use super::store::{CommunityGauges, LIVE_INVITATIONS, Res};
use crate::web::metrics::{self, PoolState};
use r2d2_postgres::{PostgresConnectionManager, r2d2};

/// A pool of PostgreSQL connections (the store's and the market's).
type Pool = r2d2::Pool<PostgresConnectionManager<postgres::NoTls>>;

/// Records a pool's checkouts under the `pool` label `name`.
#[derive(Debug)]
pub struct PoolEvents(pub &'static str);

impl r2d2::HandleEvent for PoolEvents {
    fn handle_checkout(&self, e: r2d2::event::CheckoutEvent) {
        metrics::pool_checkout(self.0, e.duration());
    }

    fn handle_timeout(&self, _: r2d2::event::TimeoutEvent) {
        metrics::pool_timeout(self.0);
    }
}

/// A pool's connections now, and its limit.
pub fn state(pool: &Pool) -> PoolState {
    let s = pool.state();
    PoolState {
        max: pool.max_size(),
        open: s.connections,
        idle: s.idle_connections,
    }
}

/// The community's gauges, counted on one PostgreSQL connection.
pub fn gauges(c: &mut postgres::Client, now: f64) -> Res<CommunityGauges> {
    let open_invitations: i64 = c.query_one(LIVE_INVITATIONS, &[&now])?.get(0);
    let live_groups: i64 = c
        .query_one(
            "SELECT COUNT(*) FROM groups WHERE body::jsonb->>'status' IN ('lobby', 'active')
             AND (body::jsonb->>'leader_lease_expires_at')::float8 > $1",
            &[&now],
        )?
        .get(0);
    Ok(CommunityGauges {
        open_invitations,
        live_groups,
    })
}
