//! The `.jsonl` appends of a running session, written in batches just after
//! the work that made them instead of in its middle.
//!
//! A session makes several lines per frame (the frame itself, the window it
//! opens, its decision, the round's details) across three files. Written one
//! by one, each is a lock, a stat, a write and an unlock on the file system
//! while the peer waits for our answer: on ext4 that was a quarter of an RPS
//! round. An [`Appender`] queues the lines and a task writes them out
//! `BATCH_DELAY` (2 ms) after the first of them — the reply frame long sent, the
//! next few frames handled — one write per file for all its queued lines,
//! under the append lock (`files::append_tracked`), in the order they were
//! made. More than `MAX_QUEUED` (256 KiB) bytes queued are written at once.
//!
//! What a crash can cost: lines made in the last `BATCH_DELAY` are not
//! written. The files still parse, and a line is never torn by this module.
//! `flush` writes the queue at once; the sink calls it for the end of a
//! session, before anyone is told, and `Drop` writes what is left. Without a
//! tokio runtime every line is written at once.

use super::files;
use super::lock;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// How long lines wait in the queue: long enough to gather a few rounds'
/// lines into one write per file, short enough that a person or a tool
/// tailing the files never notices.
const BATCH_DELAY: std::time::Duration = std::time::Duration::from_millis(2);

/// Queued appends to a few files.
pub struct Appender {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Mutex<Queue>,
    /// The open files; held while a batch is written, so batches land in
    /// the order they were queued.
    files: Mutex<Vec<Open>>,
    errors: AtomicU64,
    last_error: Mutex<Option<String>>,
}

#[derive(Default)]
struct Queue {
    /// Lines in the order they were made, each with its file's index in
    /// `paths`.
    lines: Vec<(usize, String)>,
    paths: Vec<PathBuf>,
    /// Bytes queued.
    bytes: usize,
    /// A task will write the queue.
    scheduled: bool,
}

/// Past this many queued bytes the queue is written at once, whatever the
/// delay: a burst of lines never piles up in memory.
const MAX_QUEUED: usize = 256 * 1024;

/// A file kept open for appending, with the length it had after our last
/// line (see `files::append_tracked`).
struct Open {
    path: PathBuf,
    file: std::fs::File,
    end: Option<u64>,
}

impl Default for Appender {
    fn default() -> Self {
        Appender::new()
    }
}

impl Appender {
    pub fn new() -> Appender {
        Appender {
            inner: Arc::new(Inner {
                queue: Mutex::new(Queue::default()),
                files: Mutex::new(Vec::new()),
                errors: AtomicU64::new(0),
                last_error: Mutex::new(None),
            }),
        }
    }

    /// Queues `line` (one whole line, newline included) for `path`.
    pub fn push(&self, path: &Path, line: String) {
        let mut q = lock(&self.inner.queue);
        let idx = match q.paths.iter().position(|p| p == path) {
            Some(i) => i,
            None => {
                q.paths.push(path.to_owned());
                q.paths.len() - 1
            }
        };
        q.bytes += line.len();
        q.lines.push((idx, line));
        if q.bytes > MAX_QUEUED {
            drop(q);
            self.inner.write_queued();
            return;
        }
        if q.scheduled {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                q.scheduled = true;
                rt.spawn(write_later(Arc::downgrade(&self.inner)));
            }
            Err(_) => {
                drop(q);
                self.inner.write_queued();
            }
        }
    }

    /// Writes every queued line now.
    pub fn flush(&self) {
        self.inner.write_queued();
    }

    /// Failed writes so far, and the last one.
    pub fn errors(&self) -> (u64, Option<String>) {
        (
            self.inner.errors.load(Ordering::Relaxed),
            lock(&self.inner.last_error).clone(),
        )
    }
}

impl Drop for Appender {
    fn drop(&mut self) {
        self.inner.write_queued();
    }
}

/// Lets the work that queued the lines finish first (the reply frame sent,
/// the next few frames handled), then writes the queue.
async fn write_later(inner: Weak<Inner>) {
    tokio::time::sleep(BATCH_DELAY).await;
    if let Some(inner) = inner.upgrade() {
        inner.write_queued();
    }
}

impl Inner {
    fn write_queued(&self) {
        let mut files = lock(&self.files);
        let (lines, paths) = {
            let mut q = lock(&self.queue);
            q.scheduled = false;
            q.bytes = 0;
            (std::mem::take(&mut q.lines), q.paths.clone())
        };
        if lines.is_empty() {
            return;
        }
        // One buffer per file, its lines in order.
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); paths.len()];
        for (idx, line) in &lines {
            bufs[*idx].extend_from_slice(line.as_bytes());
        }
        for (path, buf) in paths.iter().zip(bufs) {
            if buf.is_empty() {
                continue;
            }
            if let Err(e) = append(&mut files, path, &buf) {
                self.errors.fetch_add(1, Ordering::Relaxed);
                *lock(&self.last_error) = Some(format!("{}: {e}", path.display()));
            }
        }
    }
}

fn append(files: &mut Vec<Open>, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let idx = match files.iter().position(|o| o.path == path) {
        Some(i) => i,
        None => {
            files.push(Open {
                path: path.to_owned(),
                file: files::open_append(path)?,
                end: None,
            });
            files.len() - 1
        }
    };
    let o = &mut files[idx];
    files::append_tracked(&mut o.file, bytes, &mut o.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(p: &Path) -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn without_a_runtime_each_line_is_written_at_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.jsonl");
        let a = Appender::new();
        a.push(&p, "{\"n\":1}\n".into());
        assert_eq!(lines(&p), ["{\"n\":1}"]);
    }

    #[tokio::test]
    async fn lines_wait_for_the_batch_delay_then_land_in_order_per_file() {
        let d = tempfile::tempdir().unwrap();
        let (p, q) = (d.path().join("a.jsonl"), d.path().join("sub/b.jsonl"));
        let a = Appender::new();
        for n in 0..5 {
            a.push(&p, format!("{{\"n\":{n}}}\n"));
            a.push(&q, format!("{{\"m\":{n}}}\n"));
        }
        // Still queued: the work that made them goes on first.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        assert!(lines(&p).is_empty());
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while lines(&q).len() < 5 && std::time::Instant::now() < end {
            tokio::time::sleep(BATCH_DELAY).await;
        }
        let want: Vec<String> = (0..5).map(|n| format!("{{\"n\":{n}}}")).collect();
        assert_eq!(lines(&p), want);
        assert_eq!(lines(&q).len(), 5);
        a.push(&p, "{\"n\":5}\n".into());
        a.flush();
        assert_eq!(lines(&p).len(), 6);
    }

    #[tokio::test]
    async fn a_burst_past_the_bound_is_written_at_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.jsonl");
        let a = Appender::new();
        let line = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(1000));
        let n = MAX_QUEUED / line.len() + 1;
        for _ in 0..n {
            a.push(&p, line.clone());
        }
        // No yield, no delay: the bound alone wrote them.
        assert_eq!(lines(&p).len(), n);
    }

    #[tokio::test]
    async fn dropping_writes_what_is_queued() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.jsonl");
        let a = Appender::new();
        a.push(&p, "{\"n\":1}\n".into());
        drop(a);
        assert_eq!(lines(&p), ["{\"n\":1}"]);
    }

    #[tokio::test]
    async fn a_failed_write_is_counted_and_named() {
        let d = tempfile::tempdir().unwrap();
        // A directory where the file should be: opening it fails.
        let p = d.path().join("dir.jsonl");
        std::fs::create_dir(&p).unwrap();
        let a = Appender::new();
        a.push(&p, "{}\n".into());
        a.flush();
        let (n, last) = a.errors();
        assert_eq!(n, 1);
        assert!(last.unwrap().contains("dir.jsonl"));
    }
}
