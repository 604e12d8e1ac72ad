//! The community's standing at scale: ELO and karma leaderboard pages and
//! one agent's ELO and karma, on a community of 100,000 agents and
//! 1,000,000 finished sessions, on SQLite and (when `PALAVER_TEST_PG` names
//! a cluster) PostgreSQL.
//!
//!     cargo bench --bench social
//!
//! Seeding bypasses the routes: the rows a community of that size would
//! hold are bulk-inserted in large transactions (SQLite) or `COPY` (PostgreSQL)
//! after the store has migrated the schema — 100,000 agents, 1,000,000
//! closed sessions each with both parties' agreeing results, one
//! `elo_games` row per session and one rating per session (the guest rates
//! the host). The `elo_ratings` and `karma` rows are the ones the server
//! would have materialized: the games are replayed in order through the
//! server's own rules (`standing::elo_deltas`, `KarmaSums::add`), without
//! the per-pair limit (random pairs of 100,000 agents almost never repeat).
//!
//! Timed: whole signed requests (`X-Signature` checked, replay and rate
//! tables, the route, the store, the JSON answer) through the in-process
//! router that `palaver serve` runs (`web::serve::InProcess`, no socket),
//! one at a time:
//! - ELO and karma leaderboard, first page (`limit=20`) and a deep page
//!   (a cursor at rank 50,000, as a client paging that far holds);
//! - one agent's `GET /api/v1/agents/{id}/elo` and `/karma` (integer id).
//!
//! Targets: a leaderboard page ≤ 20 ms, an agent's ELO ≤ 5 ms (medians).
//! The table prints median and p95 over the samples, per store.

use palaver::community::standing::{Cursor, ELO_DEFAULT, KarmaSums, confidence, elo_deltas};
use palaver::community::{Config, PgStore, SqliteStore, Store};
use palaver::identity::KeyPair;
use palaver::web::auth;
use palaver::web::serve::InProcess;
use std::sync::Arc;
use std::time::Instant;

const AGENTS: usize = 100_000;
const SESSIONS: usize = 1_000_000;
const SAMPLES: usize = 200;
const DEEP_RANK: usize = 50_000;
const T0: f64 = 1_767_225_600.0;

/// Everything the seed writes, made once for both stores.
struct Seed {
    keys: Vec<String>,
    /// (host, guest, winner) per session.
    games: Vec<(u32, u32, u8)>,
    /// Score the guest gave the host, per session.
    scores: Vec<i64>,
    elo: Vec<(i64, i64, i64, i64, i64)>,
    karma: Vec<KarmaSums>,
}

fn seed() -> Seed {
    let keys: Vec<String> = (0..AGENTS)
        .map(|i| palaver::json::canonical::sha256_hex(format!("agent-{i}")))
        .collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut elo = vec![(ELO_DEFAULT, 0, 0, 0, 0); AGENTS];
    let mut karma = vec![KarmaSums::default(); AGENTS];
    let mut games = Vec::with_capacity(SESSIONS);
    let mut scores = Vec::with_capacity(SESSIONS);
    for j in 0..SESSIONS {
        let h = (rnd() % AGENTS as u64) as usize;
        let mut g = (rnd() % AGENTS as u64) as usize;
        if g == h {
            g = (g + 1) % AGENTS;
        }
        let w = (rnd() % 3) as u8;
        let (rh, rg) = (elo[h].0, elo[g].0);
        let (dh, dg) = match w {
            0 => elo_deltas(rh, rg),
            1 => {
                let (a, b) = elo_deltas(rg, rh);
                (b, a)
            }
            _ => (8, 8),
        };
        for (i, d, won, lost) in [(h, dh, w == 0, w == 1), (g, dg, w == 1, w == 0)] {
            let e = &mut elo[i];
            e.0 += d;
            e.1 += 1;
            e.2 += i64::from(won);
            e.3 += i64::from(lost);
            e.4 += i64::from(w == 2);
        }
        let score = (rnd() % 5) as i64 + 1;
        karma[h] = karma[h].add(score, T0 + j as f64);
        games.push((h as u32, g as u32, w));
        scores.push(score);
    }
    Seed {
        keys,
        games,
        scores,
        elo,
        karma,
    }
}

fn winner(w: u8) -> &'static str {
    ["host", "guest", "draw"][w as usize]
}

fn seed_sqlite(path: &std::path::Path, s: &Seed) {
    let mut c = rusqlite::Connection::open(path).unwrap();
    c.pragma_update(None, "synchronous", "OFF").unwrap();
    let tx = c.transaction().unwrap();
    {
        let mut a = tx
            .prepare("INSERT INTO agents (id, public_key, nickname, bio, agent_id, registered_at) VALUES (?1, ?2, ?3, '', ?4, ?5)")
            .unwrap();
        for (i, k) in s.keys.iter().enumerate() {
            a.execute(rusqlite::params![
                i as i64 + 1,
                k,
                format!("agent{i}"),
                &k[..16],
                T0 + i as f64
            ])
            .unwrap();
        }
        let mut se = tx
            .prepare("INSERT INTO sessions (session_id, post_id, protocol_id, host_public_key, guest_public_key, session_nonce, \
                      host_signature, guest_signature, status, winner, disputed, created_at, ended_at) \
                      VALUES (?1, ?1, 'p', ?2, ?3, 'n', 'hs', 'gs', 'closed', ?4, 0, ?5, ?5)")
            .unwrap();
        let mut re = tx
            .prepare("INSERT INTO results (session_id, reporter, winner) VALUES (?1, ?2, ?3)")
            .unwrap();
        let mut eg = tx
            .prepare("INSERT INTO elo_games (session_id, host, guest, pair_lo, pair_hi, winner, host_delta, guest_delta, \
                      applied_at, counted, outcome) VALUES (?1, ?2, ?3, min(?2, ?3), max(?2, ?3), ?4, 0, 0, ?5, 1, 'applied')")
            .unwrap();
        let mut ra = tx
            .prepare("INSERT INTO ratings (session_id, rater, rated, score, comment, created_at) VALUES (?1, ?2, ?3, ?4, '', ?5)")
            .unwrap();
        for (j, &(h, g, w)) in s.games.iter().enumerate() {
            let sid = format!("s{j:08}");
            let (hk, gk) = (&s.keys[h as usize], &s.keys[g as usize]);
            let t = T0 + j as f64;
            se.execute(rusqlite::params![sid, hk, gk, winner(w), t])
                .unwrap();
            re.execute(rusqlite::params![sid, hk, winner(w)]).unwrap();
            re.execute(rusqlite::params![sid, gk, winner(w)]).unwrap();
            eg.execute(rusqlite::params![sid, hk, gk, winner(w), t])
                .unwrap();
            ra.execute(rusqlite::params![sid, gk, hk, s.scores[j], t])
                .unwrap();
        }
        let mut er = tx
            .prepare("INSERT INTO elo_ratings (public_key, rating, games, wins, losses, draws, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
            .unwrap();
        let mut ka = tx
            .prepare("INSERT INTO karma (public_key, sum_sw, sum_w, last_w, n, karma, level, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
            .unwrap();
        for (i, k) in s.keys.iter().enumerate() {
            let e = s.elo[i];
            if e.1 > 0 {
                er.execute(rusqlite::params![k, e.0, e.1, e.2, e.3, e.4, T0])
                    .unwrap();
            }
            let m = s.karma[i];
            if m.n > 0 {
                ka.execute(rusqlite::params![
                    k,
                    m.sum_sw,
                    m.sum_w,
                    m.last_w,
                    m.n,
                    m.karma(),
                    confidence(m.n),
                    T0
                ])
                .unwrap();
            }
        }
    }
    tx.commit().unwrap();
    c.execute_batch("ANALYZE").unwrap();
}

fn copy(c: &mut postgres::Client, sql: &str, rows: impl Iterator<Item = String>) {
    use std::io::Write;
    let mut w = c.copy_in(sql).unwrap();
    let mut buf = String::with_capacity(1 << 20);
    for r in rows {
        buf.push_str(&r);
        buf.push('\n');
        if buf.len() > 1 << 20 {
            w.write_all(buf.as_bytes()).unwrap();
            buf.clear();
        }
    }
    w.write_all(buf.as_bytes()).unwrap();
    w.finish().unwrap();
}

fn seed_pg(url: &str, s: &Seed) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.batch_execute("ALTER TABLE agents ALTER COLUMN id DROP DEFAULT")
        .unwrap();
    copy(
        &mut c,
        "COPY agents (id, public_key, nickname, bio, agent_id, registered_at) FROM STDIN",
        s.keys.iter().enumerate().map(|(i, k)| {
            format!(
                "{}\t{k}\tagent{i}\t\t{}\t{}",
                i + 1,
                &k[..16],
                T0 + i as f64
            )
        }),
    );
    c.batch_execute(
        "SELECT setval('agents_id_seq', (SELECT MAX(id) FROM agents) + 1, false); \
         ALTER TABLE agents ALTER COLUMN id SET DEFAULT nextval('agents_id_seq')",
    )
    .unwrap();
    let key = |i: u32| s.keys[i as usize].as_str();
    copy(
        &mut c,
        "COPY sessions (session_id, post_id, protocol_id, host_public_key, guest_public_key, session_nonce, \
         host_signature, guest_signature, status, winner, disputed, created_at, ended_at) FROM STDIN",
        s.games.iter().enumerate().map(|(j, &(h, g, w))| {
            let t = T0 + j as f64;
            format!(
                "s{j:08}\ts{j:08}\tp\t{}\t{}\tn\ths\tgs\tclosed\t{}\tf\t{t}\t{t}",
                key(h),
                key(g),
                winner(w)
            )
        }),
    );
    copy(
        &mut c,
        "COPY results (session_id, reporter, winner) FROM STDIN",
        s.games.iter().enumerate().flat_map(|(j, &(h, g, w))| {
            [
                format!("s{j:08}\t{}\t{}", key(h), winner(w)),
                format!("s{j:08}\t{}\t{}", key(g), winner(w)),
            ]
        }),
    );
    copy(
        &mut c,
        "COPY elo_games (session_id, host, guest, pair_lo, pair_hi, winner, host_delta, guest_delta, applied_at, counted, outcome) FROM STDIN",
        s.games.iter().enumerate().map(|(j, &(h, g, w))| {
            let (a, b) = (key(h), key(g));
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            format!(
                "s{j:08}\t{a}\t{b}\t{lo}\t{hi}\t{}\t0\t0\t{}\tt\tapplied",
                winner(w),
                T0 + j as f64
            )
        }),
    );
    copy(
        &mut c,
        "COPY ratings (session_id, rater, rated, score, comment, created_at) FROM STDIN",
        s.games.iter().enumerate().map(|(j, &(h, g, _))| {
            format!(
                "s{j:08}\t{}\t{}\t{}\t\t{}",
                key(g),
                key(h),
                s.scores[j],
                T0 + j as f64
            )
        }),
    );
    copy(
        &mut c,
        "COPY elo_ratings (public_key, rating, games, wins, losses, draws, updated_at) FROM STDIN",
        s.keys
            .iter()
            .enumerate()
            .filter(|(i, _)| s.elo[*i].1 > 0)
            .map(|(i, k)| {
                let e = s.elo[i];
                format!("{k}\t{}\t{}\t{}\t{}\t{}\t{T0}", e.0, e.1, e.2, e.3, e.4)
            }),
    );
    copy(
        &mut c,
        "COPY karma (public_key, sum_sw, sum_w, last_w, n, karma, level, updated_at) FROM STDIN",
        s.keys
            .iter()
            .enumerate()
            .filter(|(i, _)| s.karma[*i].n > 0)
            .map(|(i, k)| {
                let m = s.karma[i];
                format!(
                    "{k}\t{:e}\t{:e}\t{:e}\t{}\t{}\t{}\t{T0}",
                    m.sum_sw,
                    m.sum_w,
                    m.last_w,
                    m.n,
                    m.karma(),
                    confidence(m.n)
                )
            }),
    );
    c.batch_execute("ANALYZE").unwrap();
}

/// The cursor a client paging to `rank` holds: the row just above it.
fn deep_cursor(rows: &mut [(i64, &str)]) -> String {
    rows.sort_by(|a, b| b.cmp(a));
    let (value, key) = rows[DEEP_RANK - 1];
    Cursor {
        offset: DEEP_RANK as u64,
        value,
        key: key.to_owned(),
    }
    .encode()
}

fn stats(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    (
        ms[ms.len() / 2],
        ms[(ms.len() * 95 / 100).min(ms.len() - 1)],
    )
}

fn run(kind: &str, store: Arc<dyn Store>, s: &Seed) -> Vec<(String, String, f64, f64)> {
    let cfg = Config {
        rate_limit: 0.0,
        ..Config::default()
    };
    let app = InProcess::new(palaver::services::server::router_on(store, cfg, None)).unwrap();
    let keys = KeyPair::generate();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    };
    let get = |path: &str| -> f64 {
        let h: Vec<(String, String)> = auth::headers(&keys, "GET", path, b"", now())
            .map(|(k, v)| (k.to_owned(), v))
            .to_vec();
        let t = Instant::now();
        let (status, body) = app.request("GET", path, &h, Vec::new()).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        ms
    };
    let mut elo_rows: Vec<(i64, &str)> = s
        .keys
        .iter()
        .enumerate()
        .filter(|(i, _)| s.elo[*i].1 > 0)
        .map(|(i, k)| (s.elo[i].0, k.as_str()))
        .collect();
    let mut karma_rows: Vec<(i64, &str)> = s
        .keys
        .iter()
        .enumerate()
        .filter(|(i, _)| s.karma[*i].n > 0)
        .map(|(i, k)| (s.karma[i].karma(), k.as_str()))
        .collect();
    let elo_deep = deep_cursor(&mut elo_rows);
    let karma_deep = deep_cursor(&mut karma_rows);
    let cases: Vec<(&str, String)> = vec![
        (
            "ELO leaderboard, first page",
            "/api/v1/elo/leaderboard?limit=20".into(),
        ),
        (
            "ELO leaderboard, rank 50,000",
            format!("/api/v1/elo/leaderboard?limit=20&cursor={elo_deep}"),
        ),
        (
            "karma leaderboard, first page",
            "/api/v1/karma/leaderboard?limit=20".into(),
        ),
        (
            "karma leaderboard, rank 50,000",
            format!("/api/v1/karma/leaderboard?limit=20&cursor={karma_deep}"),
        ),
    ];
    let mut out = Vec::new();
    for (name, path) in cases {
        get(&path);
        let ms: Vec<f64> = (0..SAMPLES).map(|_| get(&path)).collect();
        let (m, p) = stats(ms);
        out.push((kind.to_owned(), name.to_owned(), m, p));
    }
    for (name, what) in [("one agent's ELO", "elo"), ("one agent's karma", "karma")] {
        let ms: Vec<f64> = (0..SAMPLES)
            .map(|i| {
                get(&format!(
                    "/api/v1/agents/{}/{what}",
                    1 + (i * 7_919) % AGENTS
                ))
            })
            .collect();
        let (m, p) = stats(ms);
        out.push((kind.to_owned(), name.to_owned(), m, p));
    }
    out
}

fn main() {
    let t = Instant::now();
    let s = seed();
    eprintln!("seed computed in {:.1}s", t.elapsed().as_secs_f64());
    let mut rows = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("community.sqlite");
    drop(SqliteStore::open(&path).unwrap());
    let t = Instant::now();
    seed_sqlite(&path, &s);
    eprintln!("SQLite seeded in {:.1}s", t.elapsed().as_secs_f64());
    rows.extend(run(
        "sqlite",
        Arc::new(SqliteStore::open(&path).unwrap()),
        &s,
    ));
    if let Ok(base) = std::env::var("PALAVER_TEST_PG")
        && !base.trim().is_empty()
    {
        let name = format!("bench_social_{}", std::process::id());
        let mut admin = postgres::Client::connect(base.trim(), postgres::NoTls).unwrap();
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let (head, _) = base.trim().split_once('?').unwrap_or((base.trim(), ""));
        let url = format!("{}/{name}", &head[..head.rfind('/').unwrap()]);
        let (store, _) = PgStore::connect(&url, 4).unwrap();
        let t = Instant::now();
        seed_pg(&url, &s);
        eprintln!("PostgreSQL seeded in {:.1}s", t.elapsed().as_secs_f64());
        rows.extend(run("postgres", Arc::new(store), &s));
        admin
            .batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .unwrap();
    }
    println!(
        "\n{AGENTS} agents, {SESSIONS} sessions; {SAMPLES} signed requests each, in process\n"
    );
    println!("| store | request | median ms | p95 ms | target |");
    println!("|---|---|---|---|---|");
    for (kind, name, m, p) in rows {
        let target = if name.contains("leaderboard") {
            "≤ 20 ms"
        } else if name.contains("ELO") {
            "≤ 5 ms"
        } else {
            "-"
        };
        println!("| {kind} | {name} | {m:.2} | {p:.2} | {target} |");
    }
}
