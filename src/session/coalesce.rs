//! Files that hold a latest state (snapshot.json, decision/state.json,
//! decision/finalized.json), replaced whole and atomically, but at most once
//! per short gap, and away from the session's own thread.
//!
//! A fast match changes these many times a millisecond; replacing a file is a
//! create, a write and a rename (which on ext4 also starts writing the new
//! blocks out), so writing each change made the session spend most of a
//! round in the file system, and a file that grows with the match (the map
//! of closed windows) made every round slower than the last. Readers only
//! ever want the latest state, so a [`Coalesced`] file is written when the
//! last write is at least [`GAP`] ago (or twenty times the time that write
//! took, for a large file), with whatever is latest then. On a tokio runtime
//! a task waits for that moment and the write runs on the blocking pool:
//! creating the new inode alone (ext4 searches its inode table for one not
//! recently freed) took a tenth of an RPS round's CPU on the session's
//! thread. Without a runtime a change is written at once. `flush` (called
//! when a session ends) and `Drop` write what is pending and wait for a write
//! in flight; an older write never lands over a newer one. Every write is an
//! atomic replace, so the file parses at any moment, crash included; it is at
//! most one gap (and one write) behind the state in memory.

use super::lock;
use crate::json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The shortest time between two writes of one file.
pub const GAP: Duration = Duration::from_millis(10);

/// A file that takes long to write waits this many times as long before the
/// next write, so writing takes at most a twentieth of the time.
const SLOWER: u32 = 20;

/// What a coalesced file holds: renders its whole text.
pub trait Render: Send + 'static {
    fn render(&self) -> Cow<'_, [u8]>;
}

/// A file replaced with its latest state at most once per gap.
pub struct Coalesced<T: Render> {
    inner: Arc<Mutex<Inner<T>>>,
    /// Held while the file is replaced; the version on disk.
    io: Arc<Mutex<Disk>>,
}

struct Inner<T> {
    path: PathBuf,
    value: T,
    /// Bumped by every change.
    version: u64,
    /// Changed since the last write was taken.
    dirty: bool,
    /// A task will write it.
    scheduled: bool,
    last_write: Option<Instant>,
    gap: Duration,
}

/// The file as written, and its failures.
#[derive(Default)]
struct Disk {
    version: u64,
    writes: u64,
    errors: u64,
    last_error: Option<String>,
}

/// Takes the latest state to write, if it changed.
fn take<T: Render>(inner: &Mutex<Inner<T>>) -> Option<(PathBuf, Vec<u8>, u64)> {
    let mut g = lock(inner);
    if !g.dirty {
        return None;
    }
    g.dirty = false;
    Some((g.path.clone(), g.value.render().into_owned(), g.version))
}

/// Replaces the file with `bytes` unless a newer version is already there.
fn replace(io: &Mutex<Disk>, path: &Path, bytes: &[u8], version: u64) {
    let mut d = lock(io);
    if d.version >= version {
        return;
    }
    match crate::fsutil::write_atomic_fast(path, bytes) {
        Ok(()) => {
            d.version = version;
            d.writes += 1;
        }
        Err(e) => {
            d.errors += 1;
            d.last_error = Some(format!("{}: {e}", path.display()));
        }
    }
}

/// Takes and writes the latest state; returns how long that took.
fn write_now<T: Render>(inner: &Mutex<Inner<T>>, io: &Mutex<Disk>) -> Option<Duration> {
    let t0 = Instant::now();
    let (path, bytes, version) = take(inner)?;
    replace(io, &path, &bytes, version);
    Some(t0.elapsed())
}

impl<T: Render> Coalesced<T> {
    /// A file at `path` holding `value` (nothing is written until the first
    /// change).
    pub fn new(path: PathBuf, value: T) -> Coalesced<T> {
        Coalesced {
            inner: Arc::new(Mutex::new(Inner {
                path,
                value,
                version: 0,
                dirty: false,
                scheduled: false,
                last_write: None,
                gap: GAP,
            })),
            io: Arc::new(Mutex::new(Disk::default())),
        }
    }

    /// Reads the state in memory (what the file will hold).
    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&lock(&self.inner).value)
    }

    /// Changes the state; the file follows within the gap (at once without
    /// a runtime).
    pub fn update<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut g = lock(&self.inner);
        let r = f(&mut g.value);
        g.dirty = true;
        g.version += 1;
        if g.scheduled {
            return r;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                g.scheduled = true;
                let due = g.last_write.map(|t| t + g.gap);
                rt.spawn(write_at(Arc::downgrade(&self.inner), self.io.clone(), due));
            }
            // No runtime to wake us: write now.
            Err(_) => {
                drop(g);
                write_now(&self.inner, &self.io);
            }
        }
        r
    }

    /// Puts the latest state on disk before returning. A write in flight
    /// holds the disk lock, so it is waited for; one that has taken the
    /// state but not reached the disk yet is overtaken (it then finds a
    /// version as new as its own there and writes nothing). Without this, a
    /// process that ends right after its last change could leave the file
    /// one change behind (a finished table's snapshot still saying
    /// `completed: false`).
    pub fn flush(&self) {
        let latest = lock(&self.inner).version;
        if lock(&self.io).version >= latest {
            return;
        }
        let (path, bytes, version) = {
            let mut g = lock(&self.inner);
            g.dirty = false;
            (g.path.clone(), g.value.render().into_owned(), g.version)
        };
        replace(&self.io, &path, &bytes, version);
    }

    /// Writes so far.
    pub fn writes(&self) -> u64 {
        lock(&self.io).writes
    }

    /// Failed writes so far, and the last one.
    pub fn errors(&self) -> (u64, Option<String>) {
        let d = lock(&self.io);
        (d.errors, d.last_error.clone())
    }
}

/// Writes the file at `due` (first letting the work at hand run), on the
/// blocking pool, and again a gap later while changes keep coming.
async fn write_at<T: Render>(
    inner: Weak<Mutex<Inner<T>>>,
    io: Arc<Mutex<Disk>>,
    mut due: Option<Instant>,
) {
    loop {
        match due {
            Some(due) if due > Instant::now() => tokio::time::sleep_until(due.into()).await,
            _ => tokio::task::yield_now().await,
        }
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let io2 = io.clone();
        let took = tokio::task::spawn_blocking(move || write_now(&strong, &io2))
            .await
            .ok()
            .flatten();
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let mut g = lock(&strong);
        if let Some(took) = took {
            let now = Instant::now();
            g.gap = GAP.max(took * SLOWER);
            g.last_write = Some(now);
        }
        if !g.dirty {
            g.scheduled = false;
            return;
        }
        due = g.last_write.map(|t| t + g.gap);
    }
}

impl<T: Render> Drop for Coalesced<T> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A JSON object written as `json.dumps(v, indent=2)` plus a newline (the
/// reference's snapshot.json and state.json).
pub struct PrettyObject(pub Map);

impl Render for PrettyObject {
    fn render(&self) -> Cow<'_, [u8]> {
        let mut text = super::files::pretty(&Value::Object(self.0.clone()));
        text.push('\n');
        Cow::Owned(text.into_bytes())
    }
}

/// A map that only grows at the end (finalized.json), kept as its pretty
/// text: an insert appends one member, so neither an insert nor a write
/// serialises (or holds) the entries already there.
pub struct GrowingObject {
    /// The whole file: `{}\n`, or `{` members `\n}\n`.
    text: String,
    /// Where each member's text is (after its comma, if any).
    index: HashMap<String, Range<usize>>,
}

/// The text of one member: `\n  "key": value` at indent 1.
fn member(key: &str, value: Value) -> String {
    let mut one = Map::new();
    one.insert(key, value);
    let one = super::files::pretty(&Value::Object(one));
    // `{\n  "key": …\n}` → `\n  "key": …`.
    one[1..one.len() - 2].to_owned()
}

impl GrowingObject {
    /// Starts from the object in the file at `path`, if there is one.
    pub fn load(path: &Path) -> GrowingObject {
        let mut g = GrowingObject {
            text: "{}\n".to_owned(),
            index: HashMap::new(),
        };
        for (k, v) in super::files::read_json_object(path)
            .unwrap_or_default()
            .into_entries()
        {
            g.insert(k.to_string(), v);
        }
        g
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Sets `key` as Python does: a new key goes last, an existing one
    /// keeps its place with the new value.
    pub fn insert(&mut self, key: String, value: Value) {
        let m = member(&key, value);
        if let Some(old) = self.index.get(&key).cloned() {
            let shift = m.len() as isize - old.len() as isize;
            self.text.replace_range(old.clone(), &m);
            for r in self.index.values_mut() {
                if r.start > old.start {
                    *r = r.start.saturating_add_signed(shift)..r.end.saturating_add_signed(shift);
                }
            }
            self.index.insert(key, old.start..old.start + m.len());
            return;
        }
        if self.index.is_empty() {
            self.text.truncate(1);
        } else {
            self.text.truncate(self.text.len() - 3);
            self.text.push(',');
        }
        let start = self.text.len();
        self.text.push_str(&m);
        self.index.insert(key, start..self.text.len());
        self.text.push_str("\n}\n");
    }
}

impl Render for GrowingObject {
    fn render(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    fn entry(i: i64, reason: &str) -> Value {
        Value::Object(
            obj! { "reason" => reason, "ts" => 1.5, "match_key" => "round", "match_value" => i },
        )
    }

    /// The whole map as the reference writes it.
    fn whole(map: &Map) -> String {
        super::super::files::pretty(&Value::Object(map.clone())) + "\n"
    }

    #[test]
    fn flush_writes_the_latest_state_even_when_a_writer_took_it_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.json");
        let c = Coalesced::new(path.clone(), PrettyObject(Map::new()));
        c.update(|s| s.0.insert("completed", Value::Bool(false)));
        assert!(std::fs::read_to_string(&path).unwrap().contains("false"));
        // The last change, as `update` makes it under a runtime (whose
        // writer task runs later) ...
        {
            let mut g = lock(&c.inner);
            g.value.0.insert("completed", Value::Bool(true));
            g.version += 1;
            g.dirty = true;
        }
        // ... and that writer takes it and has not written it yet (as the
        // process ends): flush must not count on it.
        let taken = take(&c.inner);
        assert!(taken.is_some());
        c.flush();
        assert!(std::fs::read_to_string(&path).unwrap().contains("true"));
        // The late writer then finds the disk as new as its copy.
        let (p, _bytes, version) = taken.unwrap();
        replace(&c.io, &p, b"stale", version);
        assert!(std::fs::read_to_string(&path).unwrap().contains("true"));
        assert_eq!(c.writes(), 2);
        // Nothing changed since: flush writes nothing more.
        c.flush();
        assert_eq!(c.writes(), 2);
    }

    #[test]
    fn a_growing_object_renders_as_the_whole_map() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("finalized.json");
        let mut want = Map::new();
        let mut g = GrowingObject::load(&path);
        assert_eq!(
            String::from_utf8(g.render().to_vec()).unwrap(),
            whole(&want)
        );
        for i in 0..5 {
            g.insert(format!("round:{i}"), entry(i, "fallback"));
            want.insert(format!("round:{i}"), entry(i, "fallback"));
            assert_eq!(
                String::from_utf8(g.render().to_vec()).unwrap(),
                whole(&want)
            );
        }
        // Closed again: same place, new value.
        g.insert("round:1".into(), entry(1, "consumed"));
        want.insert("round:1", entry(1, "consumed"));
        assert_eq!(
            String::from_utf8(g.render().to_vec()).unwrap(),
            whole(&want)
        );
        std::fs::write(&path, g.render()).unwrap();
        // Loaded back, it carries on from the file.
        let mut g = GrowingObject::load(&path);
        g.insert("round:5".into(), entry(5, "timeout"));
        want.insert("round:5", entry(5, "timeout"));
        assert_eq!(
            String::from_utf8(g.render().to_vec()).unwrap(),
            whole(&want)
        );
        assert_eq!(g.len(), 6);
    }

    #[test]
    fn without_a_runtime_every_change_is_written_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let f = Coalesced::new(path.clone(), PrettyObject(Map::new()));
        for i in 0..3 {
            f.update(|o| o.0.insert("n", Value::from(i)));
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                whole(&obj! { "n" => i })
            );
        }
    }

    #[tokio::test]
    async fn changes_in_a_burst_share_writes_and_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("finalized.json");
        let f = Coalesced::new(path.clone(), GrowingObject::load(&path));
        let mut want = Map::new();
        for i in 0..200 {
            f.update(|g| g.insert(format!("round:{i}"), entry(i, "fallback")));
            want.insert(format!("round:{i}"), entry(i, "fallback"));
            if i % 50 == 49 {
                // Let the writer run: what lands parses and is behind or equal.
                tokio::task::yield_now().await;
                if let Some(on_disk) = super::super::files::read_json_object(&path) {
                    assert!(on_disk.len() <= i as usize + 1);
                }
            }
        }
        // The timer writes the rest without any further change, and the
        // burst shared a few writes.
        tokio::time::sleep(GAP * 5).await;
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole(&want));
        assert!(f.writes() <= 4, "{} writes for one burst", f.writes());
        f.update(|g| g.insert("round:200".into(), entry(200, "fallback")));
        want.insert("round:200", entry(200, "fallback"));
        drop(f);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole(&want));
    }

    #[test]
    fn an_older_version_never_lands_over_a_newer_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.json");
        let io = Mutex::new(Disk::default());
        replace(&io, &path, b"new", 2);
        replace(&io, &path, b"old", 1);
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }

    #[tokio::test]
    async fn flush_writes_what_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.json");
        let f = Coalesced::new(path.clone(), PrettyObject(Map::new()));
        f.update(|o| o.0.insert("phase", Value::from("playing")));
        f.update(|o| o.0.insert("phase", Value::from("game_over")));
        f.flush();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            whole(&obj! { "phase" => "game_over" })
        );
        assert_eq!(f.errors().0, 0);
    }
}
