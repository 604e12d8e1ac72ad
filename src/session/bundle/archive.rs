//! The bundle's zip container, read as hostile input and written as the
//! reference writes it.
//!
//! Reading never touches the disk beyond the archive itself and holds at most
//! [`MAX_BUNDLE_TOTAL_BYTES`] of content in memory. Before any entry is
//! decompressed the archive's own size, the end-of-central-directory record
//! (entry count) and every central directory header (name, kind, declared
//! size, duplicates) are checked; only then is each entry inflated through a
//! reader that stops one byte past its declared size, so an entry that
//! inflates beyond what it declares (a zip bomb) is refused after reading at
//! most that much.

use super::{
    Failure, MAX_BUNDLE_ENTRY_BYTES, MAX_BUNDLE_FILES, MAX_BUNDLE_TOTAL_BYTES, MAX_BUNDLE_ZIP_BYTES,
};
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

const EOCD_SIG: u32 = 0x0605_4b50;
const EOCD64_LOCATOR_SIG: u32 = 0x0706_4b50;
const EOCD64_SIG: u32 = 0x0606_4b50;
const CDH_SIG: u32 = 0x0201_4b50;
const EOCD_LEN: u64 = 22;
const MAX_COMMENT: u64 = 65_535;
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFDIR: u32 = 0o040_000;

/// One entry as the central directory declares it.
struct Declared {
    name: String,
    size: u64,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

fn corrupt(what: &str) -> Failure {
    Failure::new(
        "zip",
        format!("replay bundle is not a valid zip archive: {what}"),
    )
}

fn io_fail(e: std::io::Error) -> Failure {
    corrupt(&e.to_string())
}

/// Where the central directory is and how many entries it declares.
fn directory(file: &mut File, len: u64) -> Result<(u64, u64, u64), Failure> {
    let tail_len = len.min(EOCD_LEN + MAX_COMMENT);
    if tail_len < EOCD_LEN {
        return Err(corrupt("too short"));
    }
    let tail_start = len - tail_len;
    let mut tail = vec![0u8; usize::try_from(tail_len).map_err(|_| corrupt("too large"))?];
    file.seek(SeekFrom::Start(tail_start)).map_err(io_fail)?;
    file.read_exact(&mut tail).map_err(io_fail)?;
    let eocd = (0..=tail.len() - 22)
        .rev()
        .find(|&i| u32_at(&tail, i) == EOCD_SIG)
        .ok_or_else(|| corrupt("no end of central directory record"))?;
    let mut count = u64::from(u16_at(&tail, eocd + 10));
    let mut cd_size = u64::from(u32_at(&tail, eocd + 12));
    let mut cd_offset = u64::from(u32_at(&tail, eocd + 16));
    if count == 0xFFFF || cd_size == 0xFFFF_FFFF || cd_offset == 0xFFFF_FFFF {
        // Zip64: the locator sits right before the classic record.
        let at = eocd
            .checked_sub(20)
            .ok_or_else(|| corrupt("zip64 locator missing"))?;
        if u32_at(&tail, at) != EOCD64_LOCATOR_SIG {
            return Err(corrupt("zip64 locator missing"));
        }
        let rec_at = u64_at(&tail, at + 8);
        let mut rec = [0u8; 56];
        if rec_at.checked_add(56).is_none_or(|end| end > len) {
            return Err(corrupt("zip64 record out of range"));
        }
        file.seek(SeekFrom::Start(rec_at)).map_err(io_fail)?;
        file.read_exact(&mut rec).map_err(io_fail)?;
        if u32_at(&rec, 0) != EOCD64_SIG {
            return Err(corrupt("zip64 record missing"));
        }
        count = u64_at(&rec, 32);
        cd_size = u64_at(&rec, 40);
        cd_offset = u64_at(&rec, 48);
    }
    Ok((count, cd_size, cd_offset))
}

/// The reference's path rule, stricter: a relative POSIX path of plain
/// segments (no empty, `.` or `..` segment, no backslash, no NUL).
pub(super) fn check_path(name: &str) -> Result<(), Failure> {
    if name.is_empty() || name.contains('\\') || name.contains('\0') {
        return Err(Failure::new("path", "replay bundle path is invalid").field(name));
    }
    if name.starts_with('/')
        || name
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(Failure::new("path", "replay bundle path is unsafe").field(name));
    }
    Ok(())
}

/// Reads and checks the central directory: count, names, kinds, sizes.
fn declared_entries(file: &mut File, len: u64) -> Result<Vec<Declared>, Failure> {
    let (count, cd_size, cd_offset) = directory(file, len)?;
    if count == 0 || count > MAX_BUNDLE_FILES as u64 {
        return Err(Failure::new(
            "file_count",
            format!(
                "replay bundle file count is invalid ({count} entries; 1 to {MAX_BUNDLE_FILES} allowed)"
            ),
        ));
    }
    // 46 fixed bytes and at most three 64 KiB fields per header.
    let max_cd = count * (46 + 3 * 65_535);
    if cd_size > max_cd || cd_offset.checked_add(cd_size).is_none_or(|end| end > len) {
        return Err(corrupt("central directory out of range"));
    }
    let mut cd = vec![0u8; usize::try_from(cd_size).map_err(|_| corrupt("too large"))?];
    file.seek(SeekFrom::Start(cd_offset)).map_err(io_fail)?;
    file.read_exact(&mut cd).map_err(io_fail)?;
    let mut at = 0usize;
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut total: u64 = 0;
    for index in 0..count {
        if at + 46 > cd.len() || u32_at(&cd, at) != CDH_SIG {
            return Err(corrupt(&format!(
                "central directory header {index} is damaged"
            )));
        }
        let made_by_os = cd[at + 5];
        let flags = u16_at(&cd, at + 8);
        let mut size = u64::from(u32_at(&cd, at + 24));
        let name_len = usize::from(u16_at(&cd, at + 28));
        let extra_len = usize::from(u16_at(&cd, at + 30));
        let comment_len = usize::from(u16_at(&cd, at + 32));
        let external = u32_at(&cd, at + 38);
        let name_at = at + 46;
        let extra_at = name_at + name_len;
        let next = extra_at + extra_len + comment_len;
        if next > cd.len() {
            return Err(corrupt(&format!(
                "central directory header {index} is damaged"
            )));
        }
        let raw = &cd[name_at..extra_at];
        let name = match std::str::from_utf8(raw) {
            Ok(s) if flags & 0x0800 != 0 || raw.is_ascii() => s.to_owned(),
            _ => {
                return Err(Failure::new("path", "replay bundle path is invalid")
                    .field(String::from_utf8_lossy(raw)));
            }
        };
        if size == 0xFFFF_FFFF {
            size = zip64_size(&cd[extra_at..extra_at + extra_len])
                .ok_or_else(|| corrupt(&format!("entry {name} has no zip64 size")))?;
        }
        let mode = (made_by_os == 3).then_some(external >> 16);
        let is_dir = name.ends_with('/') || mode.is_some_and(|m| m & S_IFMT == S_IFDIR);
        if is_dir {
            return Err(Failure::new(
                "duplicate_or_directory",
                "replay bundle contains a duplicate or directory entry",
            )
            .field(name));
        }
        check_path(&name)?;
        if !seen.insert(name.clone()) {
            return Err(Failure::new(
                "duplicate_or_directory",
                "replay bundle contains a duplicate or directory entry",
            )
            .field(name));
        }
        if mode.is_some_and(|m| m & S_IFMT == S_IFLNK) {
            return Err(
                Failure::new("symlink", "replay bundle contains a symbolic link entry").field(name),
            );
        }
        if size > MAX_BUNDLE_ENTRY_BYTES {
            return Err(Failure::new(
                "entry_size",
                format!("replay bundle entry exceeds the size limit ({size} bytes declared)"),
            )
            .field(name));
        }
        total += size;
        if total > MAX_BUNDLE_TOTAL_BYTES {
            return Err(
                Failure::new("total_size", "replay bundle exceeds the total size limit")
                    .field(name),
            );
        }
        out.push(Declared { name, size });
        at = next;
    }
    Ok(out)
}

/// The uncompressed size from a zip64 extended-information extra field.
fn zip64_size(extra: &[u8]) -> Option<u64> {
    let mut at = 0;
    while at + 4 <= extra.len() {
        let id = u16_at(extra, at);
        let len = usize::from(u16_at(extra, at + 2));
        if id == 0x0001 && len >= 8 && at + 12 <= extra.len() {
            return Some(u64_at(extra, at + 4));
        }
        at += 4 + len;
    }
    None
}

/// Reads a bundle's entries into memory, in archive order, after every
/// check above; each entry's inflated size must equal its declared size.
pub fn read_entries(path: &Path) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    let mut file = File::open(path).map_err(|e| {
        Failure::new("open", format!("cannot open the replay bundle: {e}"))
            .file(path.display().to_string())
    })?;
    let len = file.metadata().map_err(io_fail)?.len();
    if len > MAX_BUNDLE_ZIP_BYTES {
        return Err(Failure::new(
            "archive_size",
            format!(
                "replay bundle archive is too large ({len} bytes; at most {MAX_BUNDLE_ZIP_BYTES})"
            ),
        ));
    }
    let declared = declared_entries(&mut file, len)?;
    file.seek(SeekFrom::Start(0)).map_err(io_fail)?;
    let mut archive =
        zip::ZipArchive::new(BufReader::new(file)).map_err(|e| corrupt(&e.to_string()))?;
    if archive.len() != declared.len() {
        return Err(corrupt("entry count differs from the central directory"));
    }
    let mut out = Vec::with_capacity(declared.len());
    for (i, d) in declared.into_iter().enumerate() {
        let mut entry = archive.by_index(i).map_err(|e| corrupt(&e.to_string()))?;
        if entry.name_raw() != d.name.as_bytes() || entry.size() != d.size {
            return Err(corrupt(&format!(
                "entry {} differs from the central directory",
                d.name
            )));
        }
        // At most one byte past the declared size is ever inflated.
        let mut data = Vec::with_capacity(usize::try_from(d.size).unwrap_or(0));
        let read = (&mut entry).take(d.size + 1).read_to_end(&mut data);
        // The zip crate stops an entry that inflates past its declared
        // size itself; either way it is the same refusal.
        let overflow = match &read {
            Err(e) => e.to_string().contains("larger than its declared"),
            Ok(_) => false,
        };
        if !overflow {
            read.map_err(|e| corrupt(&format!("{}: {e}", d.name)))?;
        }
        if overflow || data.len() as u64 != d.size {
            return Err(Failure::new(
                "actual_size",
                format!(
                    "replay bundle entry inflates to a different size than it declares ({} declared)",
                    d.size
                ),
            )
            .field(d.name));
        }
        out.push((d.name, data));
    }
    Ok(out)
}

/// The archive's bytes: entries sorted by name, deflated (level 9), dated
/// 1980-01-01, mode 0600, as the reference writes them.
pub fn zip_bytes(files: &[(String, Vec<u8>)]) -> zip::result::ZipResult<Vec<u8>> {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(9))
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o600);
    for (name, data) in sorted {
        w.start_file(name.as_str(), options)?;
        w.write_all(data)?;
    }
    Ok(w.finish()?.into_inner())
}
