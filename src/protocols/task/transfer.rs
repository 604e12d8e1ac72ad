//! Artifact transfer for trusted-agent-task-v1: peer paths checked before
//! they touch the disk, chunks of a fixed size carried as base64 with their
//! own digest, files verified as a whole once every chunk is in.
//!
//! The rules are the reference's (aigenora 0.1.4 `collab/transfer.py`):
//! 256 KiB chunks, at most 8 chunks a batch, 512 files a manifest page,
//! paths of at most 512 characters.

use crate::json::canonical::sha256_hex;
use crate::json::{Map, Value};
use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Decoded bytes of one chunk (the last chunk of a file may be shorter).
pub const CHUNK_SIZE: u64 = 256 * 1024;
/// Chunks one `artifact_put` may carry.
pub const MAX_BATCH_CHUNKS: usize = 8;
/// Files one manifest (an offer, a result listing) may name.
pub const MAX_MANIFEST_FILES: usize = 512;
/// Chunks one `artifact_data` answer carries at most.
pub const PULL_BATCH_CHUNKS: usize = 4;
/// The longest artifact path, in characters.
const MAX_PATH_CHARS: usize = 512;

/// base64 as Python's `b64decode(validate=True)` reads it: the standard
/// alphabet, padding required, unused trailing bits ignored.
const B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Why a peer's path or chunk was refused (local text, never sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub &'static str);

/// Checks a peer-supplied relative path and returns its normal form
/// (`a/b/` becomes `a/b`). Refused: empty or over 512 characters, absolute,
/// a drive letter, `..` components, control characters, backslashes and
/// the characters Windows forbids, and any spelling that is not already
/// normal (`a//b`, `a/./b`, `./a`).
pub fn safe_rel_path(path: &str) -> Result<String, Refused> {
    const UNSAFE: Refused = Refused("unsafe path");
    if path.is_empty() || path.chars().count() > MAX_PATH_CHARS {
        return Err(UNSAFE);
    }
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if path.starts_with('/')
        || drive
        || path
            .chars()
            .any(|c| (c as u32) < 0x20 || "<>:\"|?*\\".contains(c))
        || path.split('/').any(|part| part == "..")
    {
        return Err(UNSAFE);
    }
    // What a POSIX path normalisation would make of it: empty and `.`
    // components dropped. Only the exact form, or the exact form with one
    // trailing slash, is taken.
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let normal = if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    };
    if normal != path && format!("{normal}/") != path {
        return Err(UNSAFE);
    }
    Ok(parts.join("/"))
}

/// Chunks in a file of `size` bytes.
pub fn chunk_count(size: u64) -> u64 {
    size.div_ceil(CHUNK_SIZE)
}

/// One entry of an artifact manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

impl FileEntry {
    pub fn to_value(&self) -> Value {
        Value::Object(crate::obj! {
            "path" => self.path.as_str(), "size" => self.size, "sha256" => self.sha256.as_str(),
        })
    }

    /// An entry as this side stored it (its own files, already checked).
    pub fn from_value(v: &Value) -> Option<FileEntry> {
        Some(FileEntry {
            path: v.get_str("path")?.to_owned(),
            size: v.get("size").and_then(Value::as_i64)?.try_into().ok()?,
            sha256: v.get_str("sha256")?.to_owned(),
        })
    }
}

/// A checked chunk, decoded.
#[derive(Debug)]
pub struct Chunk {
    pub path: String,
    pub offset: u64,
    pub raw: Vec<u8>,
}

fn lower_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn non_negative(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_i64)
        .and_then(|i| u64::try_from(i).ok())
}

/// Checks one peer chunk against the registered manifest: a known path, an
/// aligned offset, a size within the chunk bound and the file, base64 data
/// of exactly that size whose sha256 matches, and only the file's last
/// chunk short.
pub fn validate_chunk(chunk: &Value, files: &[FileEntry]) -> Result<Chunk, Refused> {
    let Some(m) = chunk.as_object() else {
        return Err(Refused("chunk must be an object"));
    };
    let path = safe_rel_path(&m.get("path").map(Value::py_str).unwrap_or_default())?;
    let entry = files
        .iter()
        .find(|f| f.path == path)
        .ok_or(Refused("chunk path is not in the registered manifest"))?;
    let offset = non_negative(m.get("offset"))
        .ok_or(Refused("chunk offset must be a non-negative integer"))?;
    let size = non_negative(m.get("size"))
        .filter(|s| *s > 0)
        .ok_or(Refused("chunk size must be a positive integer"))?;
    if offset % CHUNK_SIZE != 0 {
        return Err(Refused("chunk offset must align to the chunk size"));
    }
    if size > CHUNK_SIZE {
        return Err(Refused("chunk size exceeds the chunk bound"));
    }
    if offset.saturating_add(size) > entry.size {
        return Err(Refused("chunk range exceeds the registered file size"));
    }
    let digest = m
        .get_str("sha256")
        .filter(|d| lower_hex64(d))
        .ok_or(Refused("chunk sha256 must be lowercase hex"))?;
    let data = m
        .get_str("data")
        .ok_or(Refused("chunk data must be base64 text"))?;
    // A chunk of at most CHUNK_SIZE bytes has at most this much base64.
    if data.len() as u64 > CHUNK_SIZE.div_ceil(3) * 4 {
        return Err(Refused(
            "chunk data length does not match the declared size",
        ));
    }
    let raw = B64
        .decode(data)
        .map_err(|_| Refused("chunk data is not valid base64"))?;
    if raw.len() as u64 != size {
        return Err(Refused(
            "chunk data length does not match the declared size",
        ));
    }
    if sha256_hex(&raw) != digest {
        return Err(Refused("chunk digest mismatch"));
    }
    if offset + size != entry.size && size != CHUNK_SIZE {
        return Err(Refused(
            "a chunk before the last must be exactly the chunk size",
        ));
    }
    Ok(Chunk { path, offset, raw })
}

/// Writes one received chunk at its offset, durably; writing it again is
/// harmless. A staging path that is a symlink is refused.
pub fn write_chunk(staging: &Path, path: &str, offset: u64, raw: &[u8]) -> io::Result<()> {
    let target = staging.join(path);
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent)?;
    }
    if fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::other("staging path is a symlink"));
    }
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&target)?;
    f.seek(SeekFrom::Start(offset))?;
    f.write_all(raw)?;
    f.sync_all()
}

/// sha256 of a file, read in blocks.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    use sha2::Digest;
    let mut f = fs::File::open(path)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Whether the staged file has the manifest's size and sha256.
pub fn verify_staged(staging: &Path, entry: &FileEntry) -> bool {
    let target = staging.join(&entry.path);
    match fs::symlink_metadata(&target) {
        Ok(m) if m.is_file() && m.len() == entry.size => {
            sha256_file(&target).is_ok_and(|d| d == entry.sha256)
        }
        _ => false,
    }
}

/// Chunk `index` of a local file as the wire carries it; `None` past the end.
pub fn encode_chunk(root: &Path, entry: &FileEntry, index: u64) -> io::Result<Option<Map>> {
    let offset = index.saturating_mul(CHUNK_SIZE);
    if offset >= entry.size {
        return Ok(None);
    }
    let mut f = fs::File::open(root.join(&entry.path))?;
    f.seek(SeekFrom::Start(offset))?;
    let mut raw = Vec::with_capacity(CHUNK_SIZE as usize);
    f.take(CHUNK_SIZE).read_to_end(&mut raw)?;
    Ok(Some(crate::obj! {
        "path" => entry.path.as_str(),
        "offset" => offset,
        "size" => raw.len(),
        "sha256" => sha256_hex(&raw),
        "data" => B64.encode(&raw),
    }))
}

fn excluded_dir(name: &str) -> bool {
    matches!(
        name,
        ".git"
            | "__pycache__"
            | ".mypy_cache"
            | ".pytest_cache"
            | "node_modules"
            | ".venv"
            | ".aigenora"
    )
}

/// Manifest entries for the files under `root`, directories and files in
/// name order, at most [`MAX_MANIFEST_FILES`]; symlinks are not followed.
pub fn collect_tree(root: &Path) -> io::Result<Vec<FileEntry>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<FileEntry>) -> io::Result<bool> {
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for e in fs::read_dir(dir)? {
            let e = e?;
            let t = e.file_type()?;
            let name = e.file_name().to_string_lossy().into_owned();
            if t.is_dir() {
                if !excluded_dir(&name) {
                    dirs.push(name);
                }
            } else if t.is_file() && !matches!(name.as_str(), ".DS_Store" | "Thumbs.db") {
                files.push(name);
            }
        }
        files.sort();
        dirs.sort();
        for name in files {
            let full = dir.join(&name);
            let rel = full
                .strip_prefix(root)
                .map_err(io::Error::other)?
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            let Ok(path) = safe_rel_path(&rel) else {
                continue;
            };
            let size = fs::metadata(&full)?.len();
            out.push(FileEntry {
                path,
                size,
                sha256: sha256_file(&full)?,
            });
            if out.len() >= MAX_MANIFEST_FILES {
                return Ok(true);
            }
        }
        for name in dirs {
            if walk(root, &dir.join(name), out)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
    let mut out = Vec::new();
    if root.is_dir() {
        walk(root, root, &mut out)?;
    }
    Ok(out)
}

/// `root/rel` for a path [`safe_rel_path`] accepted.
pub fn under(root: &Path, rel: &str) -> PathBuf {
    root.join(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_taken_only_in_their_normal_form() {
        for ok in ["a", "a/b.txt", "dir/sub/file", "a/", "ünï/cödé", "a b/c"] {
            assert!(safe_rel_path(ok).is_ok(), "{ok}");
        }
        assert_eq!(safe_rel_path("a/b/").unwrap(), "a/b");
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a/..",
            "C:x",
            "a\\b",
            "a//b",
            "a/./b",
            "./a",
            "a/.",
            "a\u{1}b",
            "a:b",
            "a|b",
            "a?",
            "a*",
            "<a>",
            "\"q\"",
        ] {
            assert!(safe_rel_path(bad).is_err(), "{bad:?}");
        }
        assert!(safe_rel_path(&"x".repeat(512)).is_ok());
        assert!(safe_rel_path(&"x".repeat(513)).is_err());
        // `.` alone normalises to nothing, as the reference's does.
        assert_eq!(safe_rel_path(".").unwrap(), "");
    }

    fn entry(path: &str, data: &[u8]) -> FileEntry {
        FileEntry {
            path: path.into(),
            size: data.len() as u64,
            sha256: sha256_hex(data),
        }
    }

    fn chunk(path: &str, offset: u64, raw: &[u8]) -> Value {
        Value::Object(crate::obj! {
            "path" => path, "offset" => offset, "size" => raw.len(),
            "sha256" => sha256_hex(raw), "data" => B64.encode(raw),
        })
    }

    #[test]
    fn chunks_are_checked_against_the_manifest() {
        let big = vec![7u8; CHUNK_SIZE as usize + 10];
        let files = vec![entry("f", b"hello"), entry("big", &big)];
        let ok = validate_chunk(&chunk("f", 0, b"hello"), &files).unwrap();
        assert_eq!(
            (ok.path.as_str(), ok.offset, ok.raw.as_slice()),
            ("f", 0, &b"hello"[..])
        );
        let first = &big[..CHUNK_SIZE as usize];
        assert!(validate_chunk(&chunk("big", 0, first), &files).is_ok());
        assert!(
            validate_chunk(
                &chunk("big", CHUNK_SIZE, &big[CHUNK_SIZE as usize..]),
                &files
            )
            .is_ok()
        );
        // A short chunk that is not the file's last.
        assert!(validate_chunk(&chunk("big", 0, &big[..100]), &files).is_err());
        assert!(validate_chunk(&chunk("g", 0, b"hello"), &files).is_err());
        assert!(validate_chunk(&chunk("f", 1, b"ello"), &files).is_err());
        assert!(validate_chunk(&chunk("f", 0, b"hello!"), &files).is_err());
        let mut bad_digest = chunk("f", 0, b"hello");
        if let Value::Object(m) = &mut bad_digest {
            m.insert("sha256", Value::from(sha256_hex(b"other")));
        }
        assert!(validate_chunk(&bad_digest, &files).is_err());
        let mut bad_b64 = chunk("f", 0, b"hello");
        if let Value::Object(m) = &mut bad_b64 {
            m.insert("data", Value::from("aGVsbG8"));
        }
        assert!(validate_chunk(&bad_b64, &files).is_err());
        let mut neg = chunk("f", 0, b"hello");
        if let Value::Object(m) = &mut neg {
            m.insert("offset", Value::from(-262144i64));
        }
        assert!(validate_chunk(&neg, &files).is_err());
        assert!(validate_chunk(&Value::from("x"), &files).is_err());
    }

    #[test]
    fn written_chunks_verify_and_encode_back() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(CHUNK_SIZE as usize + 5))
            .map(|i| (i % 251) as u8)
            .collect();
        let e = entry("d/x.bin", &data);
        assert!(!verify_staged(dir.path(), &e));
        write_chunk(
            dir.path(),
            "d/x.bin",
            CHUNK_SIZE,
            &data[CHUNK_SIZE as usize..],
        )
        .unwrap();
        assert!(!verify_staged(dir.path(), &e));
        write_chunk(dir.path(), "d/x.bin", 0, &data[..CHUNK_SIZE as usize]).unwrap();
        assert!(verify_staged(dir.path(), &e));
        let c0 = encode_chunk(dir.path(), &e, 0).unwrap().unwrap();
        let c1 = encode_chunk(dir.path(), &e, 1).unwrap().unwrap();
        assert!(encode_chunk(dir.path(), &e, 2).unwrap().is_none());
        let files = vec![e.clone()];
        let back0 = validate_chunk(&Value::Object(c0), &files).unwrap();
        let back1 = validate_chunk(&Value::Object(c1), &files).unwrap();
        assert_eq!([back0.raw, back1.raw].concat(), data);
        let listed = collect_tree(dir.path()).unwrap();
        assert_eq!(listed, vec![e]);
    }
}
