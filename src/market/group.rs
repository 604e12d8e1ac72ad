//! Group commit for the market's one SQLite connection.
//!
//! Every accepted message is durable (`synchronous=FULL`) before its caller
//! hears "accepted", so one commit per message would cap the market at one
//! fsync per message. Instead, writers that arrive while a batch is open
//! join it: each runs in its own savepoint (a refused message rolls back
//! only itself), the last writer of the batch — or the one that fills it —
//! commits for all, and every writer returns only after the commit that
//! holds its work. Readers see committed state only: they wait while a
//! batch is open.

use super::MarketError;
use rusqlite::{Connection, TransactionBehavior};
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Writers per commit at most (a steady stream still commits).
pub const MAX_BATCH: usize = 64;

/// How long a waiting writer trusts the batch to be committed by others
/// before committing it itself.
const PATIENCE: Duration = Duration::from_millis(20);

pub struct State {
    pub conn: Connection,
    in_tx: bool,
    batch: u64,
    members: usize,
    committed: u64,
    failed: Option<(u64, String)>,
    /// Commits made so far (batches closed).
    commits: u64,
}

/// The connection, shared by group commit.
pub struct Group {
    state: Mutex<State>,
    cond: Condvar,
    arrivals: AtomicUsize,
}

impl Group {
    pub fn new(conn: Connection) -> Group {
        Group {
            state: Mutex::new(State {
                conn,
                in_tx: false,
                batch: 0,
                members: 0,
                committed: 0,
                failed: None,
                commits: 0,
            }),
            cond: Condvar::new(),
            arrivals: AtomicUsize::new(0),
        }
    }

    /// Commits made so far (each one fsync with `synchronous=FULL`).
    pub fn commits(&self) -> u64 {
        self.lock().commits
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection for reading committed state.
    pub fn reader(&self) -> Reader<'_> {
        let mut g = self.lock();
        while g.in_tx {
            let (ng, timeout) = self
                .cond
                .wait_timeout(g, PATIENCE)
                .unwrap_or_else(|p| p.into_inner());
            g = ng;
            if timeout.timed_out() && g.in_tx && self.arrivals.load(Ordering::SeqCst) == 0 {
                // Nobody is left to close the batch: close it.
                let b = g.batch;
                commit(&mut g, b);
                self.cond.notify_all();
            }
        }
        Reader(g)
    }

    /// A writer: counted before it waits for the connection, so the batch
    /// open now stays open for it.
    pub fn writer(&self) -> Writer<'_> {
        self.arrivals.fetch_add(1, Ordering::SeqCst);
        Writer {
            group: self,
            g: Some(self.lock()),
            counted: true,
        }
    }
}

fn commit(g: &mut State, batch: u64) {
    if !g.in_tx {
        return;
    }
    if let Err(e) = g.conn.execute_batch("COMMIT") {
        g.failed = Some((batch, e.to_string()));
        let _ = g.conn.execute_batch("ROLLBACK");
    }
    g.in_tx = false;
    g.committed = batch;
    g.commits += 1;
}

pub struct Reader<'a>(MutexGuard<'a, State>);

impl Deref for Reader<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.0.conn
    }
}

pub struct Writer<'a> {
    group: &'a Group,
    g: Option<MutexGuard<'a, State>>,
    counted: bool,
}

impl Deref for Writer<'_> {
    type Target = Connection;
    #[allow(
        clippy::expect_used,
        reason = "the guard is taken only in `leave`, which consumes the writer's use: no deref follows it"
    )]
    fn deref(&self) -> &Connection {
        &self.g.as_ref().expect("a writer holds the connection").conn
    }
}

impl<'a> Writer<'a> {
    /// Joins (or opens) the batch with a savepoint of its own. The
    /// behaviour is always IMMEDIATE (the batch takes the write lock).
    pub fn transaction_with_behavior(
        &mut self,
        _b: TransactionBehavior,
    ) -> rusqlite::Result<WriteTx<'_, 'a>> {
        let Some(g) = self.g.as_mut() else {
            return Err(rusqlite::Error::InvalidQuery);
        };
        if !g.in_tx {
            g.conn.execute_batch("BEGIN IMMEDIATE")?;
            g.in_tx = true;
            g.batch += 1;
            g.members = 0;
        }
        g.conn.execute_batch("SAVEPOINT gtl_write")?;
        g.members += 1;
        let batch = g.batch;
        Ok(WriteTx {
            w: self,
            batch,
            open: true,
        })
    }

    /// This writer is done; commits the batch when it is the last one (or
    /// the batch is full), else waits for the commit when `wait`.
    fn leave(&mut self, batch: u64, wait: bool) -> Result<(), MarketError> {
        let left = if self.counted {
            self.counted = false;
            self.group.arrivals.fetch_sub(1, Ordering::SeqCst) - 1
        } else {
            self.group.arrivals.load(Ordering::SeqCst)
        };
        let Some(mut g) = self.g.take() else {
            return Ok(());
        };
        if g.in_tx && g.batch == batch && (left == 0 || g.members >= MAX_BATCH) {
            commit(&mut g, batch);
            self.group.cond.notify_all();
        } else if wait {
            while g.committed < batch {
                let (ng, timeout) = self
                    .group
                    .cond
                    .wait_timeout(g, PATIENCE)
                    .unwrap_or_else(|p| p.into_inner());
                g = ng;
                if timeout.timed_out() && g.in_tx && g.batch == batch {
                    commit(&mut g, batch);
                    self.group.cond.notify_all();
                }
            }
        }
        match &g.failed {
            Some((b, e)) if *b == batch => Err(MarketError::Store(format!("commit failed: {e}"))),
            _ => Ok(()),
        }
    }
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        // A writer that never opened its savepoint still closes the batch
        // when it was the last one expected.
        if self.counted {
            let batch = self.g.as_ref().map(|g| g.batch).unwrap_or(0);
            let _ = self.leave(batch, false);
        }
    }
}

/// One writer's part of the batch.
pub struct WriteTx<'w, 'a> {
    w: &'w mut Writer<'a>,
    batch: u64,
    open: bool,
}

impl Deref for WriteTx<'_, '_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.w
    }
}

impl WriteTx<'_, '_> {
    /// Keeps this writer's work and returns once the batch holding it is
    /// committed (durable).
    pub fn commit(mut self) -> Result<(), MarketError> {
        self.open = false;
        self.w
            .execute_batch("RELEASE gtl_write")
            .map_err(|e| MarketError::Store(e.to_string()))?;
        self.w.leave(self.batch, true)
    }
}

impl Drop for WriteTx<'_, '_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self
                .w
                .execute_batch("ROLLBACK TO gtl_write; RELEASE gtl_write");
            let _ = self.w.leave(self.batch, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn group() -> (tempfile::TempDir, Arc<Group>) {
        let d = tempfile::tempdir().unwrap();
        let c = Connection::open(d.path().join("g.sqlite")).unwrap();
        c.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (v INTEGER UNIQUE);",
        )
        .unwrap();
        (d, Arc::new(Group::new(c)))
    }

    #[test]
    fn one_writer_alone_commits_at_once() {
        let (_d, g) = group();
        let mut w = g.writer();
        let tx = w
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        tx.execute("INSERT INTO t VALUES (1)", []).unwrap();
        tx.commit().unwrap();
        drop(w);
        assert_eq!(g.commits(), 1);
        let n: i64 = g
            .reader()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn concurrent_writers_share_commits_and_a_refused_one_rolls_back_alone() {
        let (_d, g) = group();
        let threads: Vec<_> = (0..16)
            .map(|i| {
                let g = g.clone();
                std::thread::spawn(move || {
                    for k in 0..20 {
                        let mut w = g.writer();
                        let tx = w
                            .transaction_with_behavior(TransactionBehavior::Immediate)
                            .unwrap();
                        // Every thread also tries a duplicate: refused, rolled back alone.
                        let v = if k == 7 { 0 } else { i * 100 + k + 1 };
                        match tx.execute("INSERT INTO t VALUES (?1)", [v]) {
                            Ok(_) => tx.commit().unwrap(),
                            Err(_) => drop(tx),
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n: i64 = g
            .reader()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        // 16 × 19 distinct values, plus the one 0 that got in first.
        assert_eq!(n, 16 * 19 + 1);
        // Writers that overlapped shared commits.
        assert!(
            g.commits() < 16 * 19,
            "{} commits for {} writes",
            g.commits(),
            16 * 19
        );
    }
}
