//! Spare session RSA keys kept ready in the data dir, so that a card game
//! starts without waiting ~100–250 ms per RSA-2048 key generation.
//!
//! The pool is `<data dir>/rsa-spares/` (0700): at most [`POOL_SIZE`] files
//! `spare-<random>.key`, each 0600 and written whole (a `tmp-` file, synced,
//! then renamed into place). A key is handed out at most once: a claimer
//! opens a spare, then renames it to a `claimed-` name — only one rename of a
//! path succeeds, so two claimers never get the same file — reads it from
//! the handle it opened and removes it. A spare that does not parse, fails
//! its checksum or does not invert is discarded (removed, never used).
//!
//! Claiming never waits: with no spare, the caller generates its key inline
//! as before. After a claim the caller asks for a refill ([`request_refill`]);
//! `protocol test` once its match is over, `host` and `join` at once (they
//! wait on the network).
//! the binary installs a refiller that starts a detached `palaver
//! __refill-keys` (a short command exits before a thread could finish), and
//! that process (at the lowest CPU priority) fills the pool up to
//! [`POOL_SIZE`] under an exclusive lock
//! on `refill.lock`, so only one refiller runs per data dir. Without an
//! installed refiller (the library in tests, embedders) nothing is started.
//! `PALAVER_KEY_SPARES=0` turns the pool off (claims and refills).

use super::CryptoError;
use super::keys::{E, RsaKey};
use num_bigint::BigUint;
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Spare keys kept per data dir (identity).
pub const POOL_SIZE: usize = 4;
/// Turns the pool off when set to `0`.
pub const ENV: &str = "PALAVER_KEY_SPARES";
const MAGIC: &str = "palaver-rsa-spare-v2";
/// The first version's header: two primes, tagged `p` and `q`.
const MAGIC_V1: &str = "palaver-rsa-spare-v1";

/// Is the pool in use in this process?
pub fn enabled() -> bool {
    std::env::var_os(ENV).is_none_or(|v| v != "0")
}

/// The pool of a data dir.
pub fn pool_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("rsa-spares")
}

fn is_spare(name: &str) -> bool {
    name.starts_with("spare-") && name.ends_with(".key")
}

fn random_name(prefix: &str, suffix: &str) -> String {
    format!(
        "{prefix}{}-{:016x}{suffix}",
        std::process::id(),
        rand::random::<u64>()
    )
}

/// The spare files present now.
fn spares(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(is_spare))
        .map(|e| e.path())
        .collect()
}

/// How many spares the pool holds.
pub fn count(dir: &Path) -> usize {
    spares(dir).len()
}

/// Takes one spare key out of the pool, or `None` when it has no usable
/// one. Each spare is handed out at most once, across threads and
/// processes; unusable spares met on the way are removed.
pub fn claim(dir: &Path) -> Option<RsaKey> {
    for path in spares(dir) {
        // Open first, then rename: whoever renames owns the file and reads
        // it through this handle, whatever happens to the name afterwards.
        let Ok(mut f) = File::open(&path) else {
            continue;
        };
        let claimed = dir.join(random_name("claimed-", ""));
        if fs::rename(&path, &claimed).is_err() {
            continue; // another claimer was first
        }
        let mut text = String::new();
        let read = f.read_to_string(&mut text);
        // Claimed by the rename: no one else takes it, and a leftover
        // `claimed-` file is swept by the next refill.
        let _ = fs::remove_file(&claimed);
        if read.is_ok()
            && let Ok(key) = decode(&text)
        {
            return Some(key);
        }
    }
    None
}

/// Creates the pool dir (0700) inside an existing data dir, never the data
/// dir itself: a refiller that outlives its data dir (a removed temporary
/// one) must not bring it back.
fn make_pool_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        r => r,
    }
}

/// Writes a key as a new spare: 0600, synced, renamed into place whole.
pub fn store(dir: &Path, key: &RsaKey) -> io::Result<()> {
    make_pool_dir(dir)?;
    let tmp = dir.join(random_name("tmp-", ""));
    let write = || -> io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(encode(key).as_bytes())?;
        f.sync_all()
    };
    let done = write().and_then(|()| fs::rename(&tmp, dir.join(random_name("spare-", ".key"))));
    if done.is_err() {
        // The error returned is the one that matters; a leftover `tmp-`
        // file is swept by the next refill.
        let _ = fs::remove_file(&tmp);
    }
    done
}

/// The text of a spare: its primes, one `prime <hex>` line each (n and the
/// CRT parts are derived on load), and a SHA-256 of the lines before it.
/// Version 1 (`p <hex>`, `q <hex>`: two primes) is still read.
fn encode(key: &RsaKey) -> String {
    let mut body = format!("{MAGIC}\n");
    for p in key.primes() {
        body.push_str(&format!("prime {}\n", p.to_str_radix(16)));
    }
    let sum = hex::encode(Sha256::digest(body.as_bytes()));
    format!("{body}sha256 {sum}\n")
}

fn decode(text: &str) -> Result<RsaKey, CryptoError> {
    let bad = |why: &str| CryptoError::Rsa(format!("unusable spare key: {why}"));
    let (body, sum) = text
        .strip_suffix('\n')
        .and_then(|t| t.rsplit_once("sha256 "))
        .ok_or_else(|| bad("no checksum"))?;
    if hex::encode(Sha256::digest(body.as_bytes())) != sum {
        return Err(bad("checksum mismatch"));
    }
    let mut lines = body.lines();
    let tags: &[&str] = match lines.next() {
        Some(MAGIC) => &["prime "; 3],
        Some(MAGIC_V1) => &["p ", "q "],
        _ => return Err(bad("not a spare key")),
    };
    let lines: Vec<&str> = lines.collect();
    if lines.len() < 2 || lines.len() > tags.len() {
        return Err(bad("not two or three primes"));
    }
    let one = BigUint::from(1u8);
    let primes = lines
        .iter()
        .zip(tags)
        .map(|(line, tag)| {
            line.strip_prefix(tag)
                .and_then(|h| BigUint::parse_bytes(h.as_bytes(), 16))
                .filter(|p| *p > one)
                .ok_or_else(|| bad("malformed prime"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let phi: BigUint = primes.iter().map(|p| p - 1u8).product();
    let d = BigUint::from(E)
        .modinv(&phi)
        .ok_or_else(|| bad("e is not invertible"))?;
    let n: BigUint = primes.iter().product();
    let key = RsaKey::from_parts(n, BigUint::from(E), &d, primes)?;
    // A last check that the parts belong together: one round trip.
    let z = key.public().n() - 2u8;
    if key.public().public_op(&key.private_op(&z)) != z {
        return Err(bad("does not invert"));
    }
    Ok(key)
}

/// Fills the pool of `dir` up to [`POOL_SIZE`] under `refill.lock`; when
/// another refiller holds the lock, returns at once. Returns how many keys
/// it made (never more than [`POOL_SIZE`]).
pub fn refill(dir: &Path) -> io::Result<usize> {
    refill_with(dir, RsaKey::generate)
}

fn refill_with(
    dir: &Path,
    mut make: impl FnMut() -> Result<RsaKey, CryptoError>,
) -> io::Result<usize> {
    make_pool_dir(dir)?;
    let lock = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join("refill.lock"))?;
    if lock.try_lock().is_err() {
        return Ok(0);
    }
    // Under the lock no other refiller writes: any tmp- file is a dead
    // writer's, any claimed- file a dead claimer's (never to be reused).
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("tmp-") || name.starts_with("claimed-") {
                // Sweeping leftovers: one that stays is tried next time.
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let mut made = 0;
    while made < POOL_SIZE && count(dir) < POOL_SIZE {
        let key = make().map_err(io::Error::other)?;
        store(dir, &key)?;
        made += 1;
    }
    Ok(made)
}

type Refiller = Box<dyn Fn(&Path) + Send + Sync>;
static REFILLER: OnceLock<Refiller> = OnceLock::new();

/// Installs how this process refills a pool (the binary starts a detached
/// child); the first installation wins.
pub fn set_refiller(f: impl Fn(&Path) + Send + Sync + 'static) {
    let _ = REFILLER.set(Box::new(f));
}

/// Asks for the pool of `data_dir` to be refilled in the background, when
/// it is short and a refiller is installed. Never waits.
pub fn request_refill(data_dir: &Path) {
    let dir = pool_dir(data_dir);
    if let Some(f) = REFILLER.get()
        && enabled()
        && count(&dir) < POOL_SIZE
        && fs::create_dir_all(data_dir).is_ok()
        && make_pool_dir(&dir).is_ok()
    {
        f(&dir);
    }
}

/// `n` keys for one command: spares first (claimed side by side: each
/// claim checks its key with a private operation), the rest generated
/// inline (side by side). `data_dir` None: all inline. The caller asks for
/// the refill ([`request_refill`]) when its CPU is least needed.
pub fn take(data_dir: Option<&Path>, n: usize) -> Result<Vec<RsaKey>, CryptoError> {
    let dir = data_dir.filter(|_| enabled()).map(pool_dir);
    let mut keys: Vec<RsaKey> = match dir.as_deref() {
        Some(d) if n > 0 => std::thread::scope(|s| {
            let others: Vec<_> = (1..n).map(|_| s.spawn(|| claim(d))).collect();
            let mut got: Vec<RsaKey> = claim(d).into_iter().collect();
            for h in others {
                let k = h
                    .join()
                    .unwrap_or_else(|payload| std::panic::resume_unwind(payload));
                got.extend(k);
            }
            got
        }),
        _ => Vec::new(),
    };
    if keys.len() < n {
        let missing = n - keys.len();
        let made = std::thread::scope(|s| {
            let others: Vec<_> = (1..missing).map(|_| s.spawn(RsaKey::generate)).collect();
            let mut made = vec![RsaKey::generate()];
            made.extend(others.into_iter().map(|h| {
                h.join()
                    .unwrap_or_else(|payload| std::panic::resume_unwind(payload))
            }));
            made
        });
        for k in made {
            keys.push(k?);
        }
    }
    Ok(keys)
}

#[cfg(test)]
#[path = "spares_tests.rs"]
mod tests;
