//! `palaver serve` run like a service, end to end against the real binary:
//! `GET /metrics` parsed as Prometheus parses it, its request counters
//! moving with real requests (by route template, never the raw path), a
//! market transition, the scrape-time gauges (and PostgreSQL's pools, when
//! `PALAVER_TEST_PG` names a cluster), `--metrics-bind` on a listener of
//! its own; and
//! `--log-format json` writing one JSON line per request that carries the
//! request's id.

use crate::common;

use common::{Kill, palaver_serve};
use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::market::MarketClient;
use palaver::market::time::system_ms;
use palaver::market::workflow::JobAsk;
use palaver::web::Client;
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");
const PID: &str = "43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f";

/// One HTTP/1.1 request with `headers`; the status, the response head and
/// the body.
fn get(url: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// A scrape of `url`'s `/metrics`, parsed; and its text.
fn scrape(url: &str) -> (prometheus_parse::Scrape, String) {
    let (status, head, body) = get(url, "/metrics", &[]);
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let lines = body.lines().map(|l| Ok(l.to_owned()));
    (prometheus_parse::Scrape::parse(lines).unwrap(), body)
}

/// The value of the sample `metric` whose labels include every one of
/// `labels` (0 when there is none).
fn value(s: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    s.samples
        .iter()
        .filter(|x| x.metric == metric)
        .filter(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match &x.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => *v,
            prometheus_parse::Value::Histogram(h) => h
                .iter()
                .find(|b| b.less_than.is_infinite())
                .map_or(0.0, |b| b.count),
            prometheus_parse::Value::Summary(_) => 0.0,
        })
        .sum()
}

fn requests(s: &prometheus_parse::Scrape, route: &str, status: &str) -> f64 {
    value(
        s,
        "palaver_http_requests_total",
        &[("method", "GET"), ("route", route), ("status", status)],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_real_requests_by_route_template() {
    let dir = tempfile::tempdir().unwrap();
    let (_k, url) = palaver_serve(&dir.path().join("c.sqlite"), &["--metrics"]);
    let (before, _) = scrape(&url);
    assert!(
        matches!(
            before
                .samples
                .iter()
                .find(|x| x.metric == "palaver_build_info")
                .map(|x| &x.value),
            Some(prometheus_parse::Value::Gauge(v)) if *v == 1.0
        ),
        "{:?}",
        before.samples
    );
    for _ in 0..3 {
        assert_eq!(get(&url, "/healthz", &[]).0, 200);
    }
    // Unsigned: refused, counted under the route's template.
    for _ in 0..2 {
        assert_eq!(get(&url, "/api/v1/protocols/raw-id-xyz", &[]).0, 401);
    }
    assert_eq!(get(&url, "/no/such/path-abc", &[]).0, 404);
    // An open invitation shows in the scrape-time gauge.
    let host = Client::new(&url, KeyPair::generate()).unwrap();
    assert_eq!(host.register("host", "").await.unwrap().0, 201);
    common::post_invitation(
        &host,
        common::invitation_body(host.keys(), "ticket", PID, "play"),
    )
    .await;
    // A market job opened: one transition.
    let buyer = MarketClient::connect(&url, host.keys().clone(), Some("host"))
        .await
        .unwrap();
    let ask = JobAsk {
        transaction_id: Some("job_ops_1"),
        prefix: None,
        target: "0",
        budget: 15,
        deadline_ms: system_ms() + 3_600_000,
    };
    buyer.open_job(&ask).await.unwrap();

    let (after, text) = scrape(&url);
    assert_eq!(
        requests(&after, "/healthz", "200") - requests(&before, "/healthz", "200"),
        3.0,
        "{text}"
    );
    // prometheus-parse reads label values up to the first `}`, so a
    // template's own braces are checked in the text.
    assert!(
        text.lines().any(|l| l
            == r#"palaver_http_requests_total{method="GET",route="/api/v1/protocols/{id}",status="401"} 2"#),
        "{text}"
    );
    assert_eq!(requests(&after, "unmatched", "404"), 1.0, "{text}");
    assert!(
        !text.contains("raw-id-xyz") && !text.contains("path-abc"),
        "a raw path became a label:\n{text}"
    );
    // The scrape before this one was itself a request.
    assert!(requests(&after, "/metrics", "200") >= 1.0, "{text}");
    let latency = value(
        &after,
        "palaver_http_request_duration_seconds",
        &[("route", "/healthz")],
    );
    assert!(latency >= 3.0, "{text}");
    assert_eq!(
        value(&after, "palaver_community_open_invitations", &[]),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(&after, "palaver_community_live_groups", &[]),
        0.0,
        "{text}"
    );
    assert_eq!(
        value(
            &after,
            "palaver_market_transitions_total",
            &[("type", "JOB_OPEN"), ("state", "JOB_OPEN")]
        ),
        1.0,
        "{text}"
    );
    // Prometheus itself asks for OpenMetrics, and gets it.
    let (status, head, body) = get(
        &url,
        "/metrics",
        &[(
            "Accept",
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
        )],
    );
    assert_eq!(status, 200);
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(body.ends_with("# EOF\n"), "{body}");
}

/// Starts `palaver serve` with `args` (and its database in `dir`), its
/// stderr into `log`; returns the process and the first line's URL.
fn serve_logging(dir: &Path, log: &Path, args: &[&str]) -> (Kill, String) {
    let child = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--db"])
        .arg(dir.join("c.sqlite"))
        .args(args)
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let k = Kill(child);
    let line = wait_for_line(log, |l| l.contains("http://"));
    let url = line
        .split(|c: char| c.is_whitespace() || c == '"')
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    (k, url)
}

/// The first line of `log` for which `want` holds (waits up to 20 s).
fn wait_for_line(log: &Path, want: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let f = std::fs::File::open(log).unwrap();
        if let Some(l) = std::io::BufReader::new(f)
            .lines()
            .map_while(Result::ok)
            .find(|l| want(l))
        {
            return l;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no such line in:\n{}",
            std::fs::read_to_string(log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn json_logs_carry_each_requests_id() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let (_k, url) = serve_logging(dir.path(), &log, &["--log-format", "json"]);
    let first = std::fs::read_to_string(&log).unwrap();
    let banner = palaver::json::parse_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(
        banner.get("url").and_then(Value::as_str),
        Some(url.as_str())
    );

    let id = format!("ops-{:016x}", rand::random::<u64>());
    let (status, head, _) = get(&url, "/api/market", &[("X-Request-Id", &id)]);
    assert_eq!(status, 200);
    assert!(head.contains(&format!("x-request-id: {id}")), "{head}");
    let line = wait_for_line(&log, |l| l.contains(&id));
    let v = palaver::json::parse_str(&line).unwrap();
    let span = v.get("span").unwrap_or_else(|| panic!("no span: {line}"));
    assert_eq!(
        span.get("request_id").and_then(Value::as_str),
        Some(id.as_str())
    );
    assert_eq!(
        span.get("route").and_then(Value::as_str),
        Some("/api/market")
    );
    assert_eq!(span.get("method").and_then(Value::as_str), Some("GET"));
    assert_eq!(v.get("status").and_then(Value::as_i64), Some(200));
    assert!(v.get("latency_ms").is_some(), "{line}");
    assert_eq!(v.get("level").and_then(Value::as_str), Some("INFO"));

    // An id that could forge a log line is replaced by one of the server's.
    let (_, head, _) = get(&url, "/api/market", &[("X-Request-Id", "two words")]);
    let echoed = head
        .lines()
        .find_map(|l| l.strip_prefix("x-request-id: "))
        .unwrap_or_else(|| panic!("{head}"))
        .trim()
        .to_owned();
    assert_eq!(echoed.len(), 32, "{echoed}");
    wait_for_line(&log, |l| l.contains(&echoed));
    let all = std::fs::read_to_string(&log).unwrap();
    for l in all.lines() {
        palaver::json::parse_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
    }
}

#[test]
fn metrics_bind_serves_the_metrics_on_their_own_listener_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let (_k, url) = serve_logging(dir.path(), &log, &["--metrics-bind", "127.0.0.1:0"]);
    let line = wait_for_line(&log, |l| l.contains("metrics on http://"));
    let metrics = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .trim_end_matches("/metrics")
        .to_owned();
    assert_ne!(metrics, url);
    // The first scrape is counted (after it is answered) on its listener.
    for _ in 0..2 {
        assert_eq!(get(&metrics, "/metrics", &[]).0, 200);
    }
    let (s, text) = scrape(&metrics);
    assert!(requests(&s, "/metrics", "200") >= 2.0, "{text}");
    // Not on the API's listener.
    let (status, _, body) = get(&url, "/metrics", &[]);
    assert_eq!(status, 404, "{body}");
}

/// On PostgreSQL the scrape also shows both pools (community and market):
/// their connections, their limit, and the checkouts the requests made; and
/// the gauges come from PostgreSQL's own SQL.
#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pools_and_gauges_show_in_the_scrape() {
    let Some(db) = common::pg::fresh_database("serve_ops") else {
        return;
    };
    let (_k, url) = palaver_serve(Path::new(&db), &["--metrics", "--db-pool", "4"]);
    let host = Client::new(&url, KeyPair::generate()).unwrap();
    assert_eq!(host.register("host", "").await.unwrap().0, 201);
    common::post_invitation(
        &host,
        common::invitation_body(host.keys(), "ticket", PID, "play"),
    )
    .await;
    assert_eq!(get(&url, "/api/market", &[]).0, 200);
    let (s, text) = scrape(&url);
    assert_eq!(
        value(&s, "palaver_community_open_invitations", &[]),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(&s, "palaver_community_live_groups", &[]),
        0.0,
        "{text}"
    );
    for pool in ["community", "market"] {
        assert_eq!(
            value(&s, "palaver_db_pool_max_connections", &[("pool", pool)]),
            4.0,
            "{text}"
        );
        let open = value(&s, "palaver_db_pool_connections", &[("pool", pool)]);
        assert!((1.0..=4.0).contains(&open), "{pool}: {open}\n{text}");
        assert!(
            value(
                &s,
                "palaver_db_pool_checkout_duration_seconds",
                &[("pool", pool)]
            ) >= 1.0,
            "{pool}\n{text}"
        );
    }
}
