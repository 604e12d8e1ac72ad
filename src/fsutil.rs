//! File primitives with crash-safe semantics.
//!
//! Replacing a file goes through a temporary file in the same directory,
//! `fsync`, and `rename`, then an `fsync` of the directory, so a crash at any
//! point leaves either the old or the new content, never a torn file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Atomically replaces `path` with `bytes`, creating parent directories,
/// durably (the data and the rename reach the disk before this returns).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, true)
}

/// Atomically replaces `path` with `bytes` without waiting for the disk: a
/// crash of the process still leaves the old or the new content; a power
/// loss may lose the newest update. For files rewritten many times a second
/// (snapshots) that can be rebuilt from the append-only logs.
pub fn write_atomic_fast(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), unique()));
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(&tmp, path)?;
        // Make the rename itself durable.
        if durable && let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        // The write's error is the one returned; the temp file is only
        // litter (a unique name, never read).
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ N.fetch_add(1, Ordering::Relaxed).rotate_left(48)
}

/// A `.jsonl` file that does not end in a newline ends in a line whose
/// writer died before finishing it; truncates it back to just after the
/// last newline and returns the bytes cut. Call it where no live writer can
/// be mid-line: under the append lock, or as the file's only writer.
pub fn cut_torn_tail(f: &File) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(0);
    }
    let mut last = [0u8];
    f.read_exact_at(&mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok(0);
    }
    // Search backwards in blocks for the newline that ends the last
    // complete line (none: the whole file is the fragment).
    let mut end = len;
    let mut block = vec![0u8; 64 * 1024];
    let keep = loop {
        if end == 0 {
            break 0;
        }
        let start = end.saturating_sub(block.len() as u64);
        let chunk = &mut block[..(end - start) as usize];
        f.read_exact_at(chunk, start)?;
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            break start + i as u64 + 1;
        }
        end = start;
    };
    f.set_len(keep)?;
    Ok(len - keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temp_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b/x.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }
}
