//! PostgreSQL for the tests: a fresh database on the cluster named by
//! `PALAVER_TEST_PG` (a base URL such as
//! `postgres://postgres@127.0.0.1:PORT/postgres`; `scripts/pg start DIR`
//! prints one, and scripts/test starts a cluster and sets it).
//!
//! Without `PALAVER_TEST_PG`, [`fresh_database`] returns None and the test
//! says it skipped — unless `CI` or `PALAVER_REQUIRE_PG` is set, when it
//! panics: there a missing PostgreSQL is a failure, never a skip. Tests
//! that need PostgreSQL are `#[ignore]`d like the other peer-needing tests,
//! so scripts/test runs them with `--include-ignored`.

use std::sync::atomic::{AtomicU64, Ordering};

/// The variable naming the test cluster's base URL.
pub const VAR: &str = "PALAVER_TEST_PG";

/// The test cluster's base URL, or None (after saying so on stderr) when
/// none is configured and none is required.
pub fn base_url() -> Option<String> {
    match std::env::var(VAR) {
        Ok(u) if !u.trim().is_empty() => Some(u.trim().to_owned()),
        _ => {
            let required = ["CI", "PALAVER_REQUIRE_PG"]
                .iter()
                .find(|v| std::env::var(v).is_ok_and(|x| !x.is_empty()));
            if let Some(v) = required {
                panic!(
                    "{VAR} is not set but {v} is: this test needs a PostgreSQL cluster \
                     (scripts/pg start DIR prints its URL; scripts/test starts one)"
                );
            }
            eprintln!("skipped: {VAR} is not set (scripts/pg start DIR prints a URL for it)");
            None
        }
    }
}

/// `url` with its database name replaced by `db` (query parameters kept).
pub fn with_database(url: &str, db: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let authority_start = head.find("://").map(|i| i + 3).unwrap_or(0);
    let base = match head[authority_start..].find('/') {
        Some(i) => &head[..authority_start + i],
        None => head,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

/// A new, empty database on the test cluster, uniquely named after `tag`;
/// returns its URL, or None when there is no cluster and none is required
/// (see the module doc). Safe to call from inside a tokio runtime.
pub fn fresh_database(tag: &str) -> Option<String> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = base_url()?;
    let clean: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "t_{clean}_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    // The blocking client must not run on a runtime's thread.
    let admin = base.clone();
    let create = name.clone();
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{VAR}={admin}: cannot connect: {e}"));
        c.batch_execute(&format!("CREATE DATABASE \"{create}\""))
            .unwrap_or_else(|e| panic!("creating database {create}: {e}"));
    })
    .join()
    .expect("create the test database");
    Some(with_database(&base, &name))
}

type Job = Box<dyn FnOnce(&mut postgres::Client) + Send>;

/// Runs `f` with a client connected to `url`, on a thread of its own (safe
/// from inside a tokio runtime). One connection per database is kept on a
/// worker thread, so the many dumps a test takes do not each connect.
pub fn with_client<T: Send + 'static>(
    url: &str,
    f: impl FnOnce(&mut postgres::Client) -> T + Send + 'static,
) -> T {
    use std::collections::HashMap;
    use std::sync::mpsc;
    use std::sync::{Mutex, OnceLock};
    static WORKERS: OnceLock<Mutex<HashMap<String, mpsc::Sender<Job>>>> = OnceLock::new();
    let jobs = {
        let mut workers = WORKERS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        workers
            .entry(url.to_owned())
            .or_insert_with(|| {
                let (tx, rx) = mpsc::channel::<Job>();
                let url = url.to_owned();
                std::thread::spawn(move || {
                    let mut c = postgres::Client::connect(&url, postgres::NoTls)
                        .unwrap_or_else(|e| panic!("connect to {url}: {e}"));
                    for job in rx {
                        job(&mut c);
                    }
                });
                tx
            })
            .clone()
    };
    let (tx, rx) = mpsc::channel();
    jobs.send(Box::new(move |c| {
        let _ = tx.send(f(c));
    }))
    .expect("the PostgreSQL helper thread is gone");
    rx.recv()
        .expect("the PostgreSQL helper thread panicked (see its message above)")
}

/// Tables [`dump`] leaves out: the schema versions, and the replay window
/// and rate buckets, which every signed request writes (refused ones too)
/// and which SQLite keeps in memory.
pub const NOT_DUMPED: &[&str] = &["schema_version", "request_ids", "rate_buckets"];

/// Every row of every table in the public schema but [`NOT_DUMPED`], as
/// text, ordered: what "nothing was written" compares on PostgreSQL.
pub fn dump(url: &str) -> String {
    with_client(url, |c| {
        let tables: Vec<String> = c
            .query(
                "SELECT table_name::text FROM information_schema.tables \
                 WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1",
                &[],
            )
            .expect("list tables")
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut out = String::new();
        for t in tables
            .into_iter()
            .filter(|t| !NOT_DUMPED.contains(&t.as_str()))
        {
            // Each row as its JSON text, sorted: independent of physical order.
            let rows = c
                .query(
                    &format!("SELECT row_to_json(x)::text FROM \"{t}\" x ORDER BY 1"),
                    &[],
                )
                .unwrap_or_else(|e| panic!("dump {t}: {e}"));
            for r in rows {
                out.push_str(&t);
                out.push(' ');
                out.push_str(&r.get::<_, String>(0));
                out.push('\n');
            }
        }
        out
    })
}

/// Whether any text column of any table holds `needle` (in any of `forms`):
/// "accepted text is stored verbatim" on PostgreSQL.
pub fn contains(url: &str, forms: &[String]) -> bool {
    let forms = forms.to_vec();
    with_client(url, move |c| {
        let columns: Vec<(String, String)> = c
            .query(
                "SELECT table_name::text, column_name::text FROM information_schema.columns \
                 WHERE table_schema = 'public' AND data_type IN ('text', 'character varying')",
                &[],
            )
            .expect("list text columns")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        assert!(columns.len() > 20, "{columns:?}");
        columns.iter().any(|(t, col)| {
            forms.iter().any(|f| {
                // A NUL cannot be stored, so it is never found.
                !f.contains('\0')
                    && c.query_one(
                        &format!(
                            "SELECT EXISTS (SELECT 1 FROM \"{t}\" WHERE strpos(\"{col}\", $1) > 0)"
                        ),
                        &[f],
                    )
                    .expect("search a column")
                    .get::<_, bool>(0)
            })
        })
    })
}

/// Whether the public schema has table `t`.
pub fn has_table(url: &str, t: &str) -> bool {
    let t = t.to_owned();
    with_client(url, move |c| {
        c.query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = 'public' AND table_name = $1)",
            &[&t],
        )
        .expect("look for a table")
        .get(0)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn database_names_are_replaced_keeping_the_query() {
        use super::with_database;
        assert_eq!(
            with_database("postgres://u@h:1/postgres", "x"),
            "postgres://u@h:1/x"
        );
        assert_eq!(with_database("postgres://u@h:1", "x"), "postgres://u@h:1/x");
        assert_eq!(
            with_database("postgres://u@h:1/db?sslmode=disable", "x"),
            "postgres://u@h:1/x?sslmode=disable"
        );
    }
}
