//! The server's metrics, one set per process: what `GET /metrics` shows in
//! the Prometheus/OpenMetrics text format ([`render`]). Layers above record
//! into it through the functions here — a request answered
//! ([`request_done`]), a slow store call ([`timed`]), a market
//! transition ([`market_transition`]), a pool checkout ([`pool_checkout`]) —
//! and the `/metrics` route sets the gauges it reads at scrape time
//! ([`set_community`], [`set_pool`]) before it renders. Every name and label
//! is listed in docs/deploy.md ("Metrics").
//!
//! Labels never carry what a client chose: a route is its template
//! (`/api/v1/invitations/{id}`), never the raw path, and unmatched paths
//! share one label, so a scanner cannot grow the series without bound.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The `route` label of a request no route matched (a 404).
pub const UNMATCHED: &str = "unmatched";

/// The content type of [`render`]'s text (OpenMetrics).
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`render_text`]'s text (Prometheus 0.0.4).
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    op: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabels {
    r#type: &'static str,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    pool: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolStateLabels {
    pool: &'static str,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms to about 4 s.
    Histogram::new(exponential_buckets(0.001, 2.5, 10))
}

fn checkout_histogram() -> Histogram {
    // 0.5 ms to about 8 s (the pool's own timeout is 10 s).
    Histogram::new(exponential_buckets(0.0005, 4.0, 8))
}

struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Histograms<RouteLabels>,
    in_flight: Gauge,
    slow_store: Family<OpLabels, Counter>,
    transitions: Family<TransitionLabels, Counter>,
    open_invitations: Gauge,
    live_groups: Gauge,
    pool_connections: Family<PoolStateLabels, Gauge>,
    pool_max: Family<PoolLabels, Gauge>,
    pool_checkout: Histograms<PoolLabels>,
    pool_timeouts: Family<PoolLabels, Counter>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let mut r = Registry::with_prefix("palaver");
    let m = Metrics {
        registry: Registry::default(),
        requests: Family::default(),
        latency: Family::new_with_constructor(latency_histogram),
        in_flight: Gauge::default(),
        slow_store: Family::default(),
        transitions: Family::default(),
        open_invitations: Gauge::default(),
        live_groups: Gauge::default(),
        pool_connections: Family::default(),
        pool_max: Family::default(),
        pool_checkout: Family::new_with_constructor(checkout_histogram),
        pool_timeouts: Family::default(),
    };
    let build: Family<BuildLabels, Gauge> = Family::default();
    build
        .get_or_create(&BuildLabels {
            version: env!("CARGO_PKG_VERSION"),
        })
        .set(1);
    r.register(
        "build_info",
        "The running palaver's version (always 1)",
        build,
    );
    r.register(
        "http_requests",
        "HTTP requests answered, by method, route template and status",
        m.requests.clone(),
    );
    r.register(
        "http_request_duration_seconds",
        "Time from a request's head to its response, by method and route template",
        m.latency.clone(),
    );
    r.register(
        "http_requests_in_flight",
        "Requests being served now",
        m.in_flight.clone(),
    );
    r.register(
        "store_slow_calls",
        "Store calls (community store, market) slower than the --slow-query-ms threshold, by operation",
        m.slow_store.clone(),
    );
    r.register(
        "market_transitions",
        "Market messages and server events that moved a transaction, by type and the state it reached",
        m.transitions.clone(),
    );
    r.register(
        "community_open_invitations",
        "Invitations open and not expired (read at scrape time)",
        m.open_invitations.clone(),
    );
    r.register(
        "community_live_groups",
        "Group rooms in lobby or active whose leader lease has not lapsed (read at scrape time)",
        m.live_groups.clone(),
    );
    r.register(
        "db_pool_connections",
        "PostgreSQL pool connections by state (in_use, idle; read at scrape time)",
        m.pool_connections.clone(),
    );
    r.register(
        "db_pool_max_connections",
        "PostgreSQL pool size limit",
        m.pool_max.clone(),
    );
    r.register(
        "db_pool_checkout_duration_seconds",
        "Time a store call waited for a PostgreSQL pool connection",
        m.pool_checkout.clone(),
    );
    r.register(
        "db_pool_timeouts",
        "Store calls that got no PostgreSQL pool connection in time",
        m.pool_timeouts.clone(),
    );
    Metrics { registry: r, ..m }
});

/// Records a request answered: its method, route template (or
/// [`UNMATCHED`]), status and how long it took.
pub fn request_done(method: &str, route: &str, status: u16, took: Duration) {
    let m = &*METRICS;
    m.requests
        .get_or_create(&RequestLabels {
            method: method.to_owned(),
            route: route.to_owned(),
            status,
        })
        .inc();
    m.latency
        .get_or_create(&RouteLabels {
            method: method.to_owned(),
            route: route.to_owned(),
        })
        .observe(took.as_secs_f64());
}

/// A request being served: counted in `http_requests_in_flight` until the
/// guard is dropped.
pub struct InFlight(());

impl InFlight {
    pub fn start() -> InFlight {
        METRICS.in_flight.inc();
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        METRICS.in_flight.dec();
    }
}

/// How slow a store call is before [`timed`] counts and logs it, by
/// default (`palaver serve --slow-query-ms`).
pub const DEFAULT_SLOW_CALL: Duration = Duration::from_millis(250);

/// The threshold in microseconds, set once by `palaver serve`.
static SLOW_CALL_US: AtomicU64 = AtomicU64::new(DEFAULT_SLOW_CALL.as_micros() as u64);

/// Sets the threshold of a slow store call for this process.
pub fn set_slow_call(d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    SLOW_CALL_US.store(us, Ordering::Relaxed);
}

/// Runs a store call (`op`: the community store's method, or `market.*`);
/// one that took the threshold or longer is counted in
/// `store_slow_calls_total{op}` and logged as a warning (in the request's
/// span, when there is one).
pub fn timed<T>(op: &'static str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let r = f();
    took(op, start);
    r
}

/// [`timed`] for a call that is a future: the time from its first poll to
/// its answer.
pub async fn timed_async<T>(op: &'static str, f: impl std::future::Future<Output = T>) -> T {
    let start = Instant::now();
    let r = f.await;
    took(op, start);
    r
}

/// Counts and logs store call `op` begun at `start` if it was slow.
fn took(op: &'static str, start: Instant) {
    let took = start.elapsed();
    if took.as_micros() >= u128::from(SLOW_CALL_US.load(Ordering::Relaxed)) {
        METRICS.slow_store.get_or_create(&OpLabels { op }).inc();
        tracing::warn!(op, ms = took.as_secs_f64() * 1000.0, "slow store call");
    }
}

/// Counts a market transition: the message or server event `kind` and the
/// state the transaction reached.
pub fn market_transition(kind: &'static str, state: &str) {
    METRICS
        .transitions
        .get_or_create(&TransitionLabels {
            r#type: kind,
            state: state.to_owned(),
        })
        .inc();
}

/// What the community holds now, read at scrape time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommunityGauges {
    pub open_invitations: i64,
    pub live_groups: i64,
}

pub fn set_community(g: CommunityGauges) {
    METRICS.open_invitations.set(g.open_invitations);
    METRICS.live_groups.set(g.live_groups);
}

/// A connection pool's state (r2d2's `state()` and its limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolState {
    pub max: u32,
    /// Connections open, in use or idle.
    pub open: u32,
    pub idle: u32,
}

pub fn set_pool(pool: &'static str, s: PoolState) {
    let m = &*METRICS;
    let set = |state, v: u32| {
        m.pool_connections
            .get_or_create(&PoolStateLabels { pool, state })
            .set(i64::from(v));
    };
    set("in_use", s.open.saturating_sub(s.idle));
    set("idle", s.idle);
    m.pool_max
        .get_or_create(&PoolLabels { pool })
        .set(i64::from(s.max));
}

/// Records how long a checkout from `pool` waited.
pub fn pool_checkout(pool: &'static str, waited: Duration) {
    METRICS
        .pool_checkout
        .get_or_create(&PoolLabels { pool })
        .observe(waited.as_secs_f64());
}

/// Counts a checkout from `pool` that timed out.
pub fn pool_timeout(pool: &'static str) {
    METRICS
        .pool_timeouts
        .get_or_create(&PoolLabels { pool })
        .inc();
}

/// Every metric in the OpenMetrics text format (ends with `# EOF`): what
/// Prometheus asks for.
pub fn render() -> String {
    let mut out = String::with_capacity(8 * 1024);
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &METRICS.registry);
    out
}

/// Every metric in the Prometheus text format 0.0.4, for a client that
/// does not ask for OpenMetrics (curl, older scrapers): [`render`]'s text
/// with a counter's HELP and TYPE naming its `_total` samples, and no
/// `# EOF` or `# UNIT` lines.
pub fn render_text() -> String {
    let om = render();
    let counters: std::collections::HashSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(om.len() + 256);
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let (name, tail) = line.strip_prefix(p)?.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_request_shows_in_the_text() {
        request_done("GET", "/api/v1/t/{id}", 404, Duration::from_millis(3));
        set_slow_call(Duration::ZERO);
        timed("agent", || ());
        set_slow_call(DEFAULT_SLOW_CALL);
        let text = render();
        assert!(
            text.contains(
                r#"palaver_http_requests_total{method="GET",route="/api/v1/t/{id}",status="404"}"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"palaver_store_slow_calls_total{op="agent"}"#),
            "{text}"
        );
        assert!(text.contains("palaver_build_info{version="), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        let plain = render_text();
        assert!(
            plain.contains("# TYPE palaver_http_requests_total counter\n"),
            "{plain}"
        );
        assert!(
            plain.contains("# TYPE palaver_http_request_duration_seconds histogram\n"),
            "{plain}"
        );
        assert!(!plain.contains("# EOF"), "{plain}");
    }
}
