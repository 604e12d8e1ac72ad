//! The one tracing subscriber of a palaver process, set up here at the CLI
//! edge before the command runs. `palaver serve` logs to stderr, as text
//! (for people) or JSON lines (`--log-format json`, for a log shipper);
//! every other command, the console among them, logs through the same
//! layer to `palaver.log` in the data dir, never to the terminal (the
//! console owns the screen). What is logged: `--log-level` (serve only),
//! else `RUST_LOG`, else `info` for serve and `warn` elsewhere.
//!
//! Cheap when idle: the log file is opened (and its directory made) by the
//! first line written, so a command that logs nothing touches no file; a
//! file past [`MAX_LOG_FILE`] is moved aside to `palaver.log.1` then.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event: time, level, span fields, message.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, the
    /// event's fields, `span` with the request's fields).
    Json,
}

/// What `palaver serve` logs without `--log-level` or `RUST_LOG`.
/// PostgreSQL's notices (a schema statement that had nothing to do) are
/// not news to an operator: only its warnings show.
pub const SERVE_DEFAULT: &str = "info,postgres=warn,tokio_postgres=warn";

/// What the other commands log without `RUST_LOG`.
pub const FILE_DEFAULT: &str = "warn";

/// The log file of the console and the CLI, in the data dir.
pub const LOG_FILE: &str = "palaver.log";

/// A log file longer than this (bytes) is moved aside when first written.
pub const MAX_LOG_FILE: u64 = 8 * 1024 * 1024;

const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// `--log-level`: a level (`debug`), or comma-separated filter directives
/// each naming its level (`palaver=debug,info`) as `RUST_LOG` takes them.
pub fn parse_level(s: &str) -> Result<String, String> {
    let s = s.trim();
    let named = |d: &str| {
        let d = d.trim();
        LEVELS.iter().any(|l| d.eq_ignore_ascii_case(l)) || d.contains('=')
    };
    if s.is_empty() || !s.split(',').all(named) {
        return Err(format!(
            "--log-level = {s:?}: give a level ({}) or directives like palaver=debug,info",
            LEVELS.join(", ")
        ));
    }
    EnvFilter::try_new(s)
        .map(|_| s.to_owned())
        .map_err(|e| format!("--log-level = {s:?}: {e}"))
}

/// A problem with `RUST_LOG`, said once the server has printed its banner
/// (nothing may come before it).
static DEFERRED: OnceLock<String> = OnceLock::new();

/// What went wrong setting up the logs, if anything; `palaver serve` logs
/// it after its banner.
pub fn deferred_warning() -> Option<&'static str> {
    DEFERRED.get().map(String::as_str)
}

/// The filter: `flag`, else `RUST_LOG` (when set and valid), else
/// `default`.
fn filter(flag: Option<&str>, default: &str) -> EnvFilter {
    if let Some(f) = flag.and_then(|f| EnvFilter::try_new(f).ok()) {
        return f;
    }
    if let Ok(env) = std::env::var(EnvFilter::DEFAULT_ENV)
        && !env.trim().is_empty()
    {
        match EnvFilter::try_new(&env) {
            Ok(f) => return f,
            Err(e) => {
                let _ = DEFERRED.set(format!(
                    "RUST_LOG={env:?} is not a filter ({e}); logging at {default}"
                ));
            }
        }
    }
    EnvFilter::new(default)
}

/// Installs the subscriber: `format` lines through `writer`. A second call
/// (or another subscriber set first) leaves the first one in place.
fn install<W>(format: LogFormat, filter: EnvFilter, writer: W)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        // A closed stderr (whoever started the server stopped reading it)
        // must cost nothing, not a complaint on that same stderr.
        .log_internal_errors(false)
        .with_writer(writer);
    let registry = tracing_subscriber::registry().with(filter);
    let _ = match format {
        LogFormat::Text => registry.with(fmt).try_init(),
        LogFormat::Json => registry
            .with(
                fmt.json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false),
            )
            .try_init(),
    };
}

/// `palaver serve`: `format` lines on stderr, filtered by `level` (else
/// `RUST_LOG`, else [`SERVE_DEFAULT`]).
pub fn to_stderr(format: LogFormat, level: Option<&str>) {
    install(format, filter(level, SERVE_DEFAULT), io::stderr);
}

/// Every other command: text lines to [`LOG_FILE`] in `data_dir` (none
/// when there is no data dir), filtered by `RUST_LOG`, else
/// [`FILE_DEFAULT`].
pub fn to_file(data_dir: Option<PathBuf>) {
    let filter = filter(None, FILE_DEFAULT);
    match data_dir {
        Some(dir) => install(LogFormat::Text, filter, LogFile::new(dir.join(LOG_FILE))),
        None => install(LogFormat::Text, filter, io::sink),
    }
}

/// A log file opened by its first line.
struct LogFile {
    path: PathBuf,
    /// None until the first write; then the file, or None if it could not
    /// be opened (lines are dropped then).
    file: Mutex<Option<Option<File>>>,
}

impl LogFile {
    fn new(path: PathBuf) -> LogFile {
        LogFile {
            path,
            file: Mutex::new(None),
        }
    }
}

/// Opens `path` to append (mode 0600), making its directory, after moving
/// a file past [`MAX_LOG_FILE`] aside.
fn open_log(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_LOG_FILE) {
        // Rotation is best effort: if it fails the log grows on.
        let _ = std::fs::rename(path, path.with_extension("log.1"));
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

impl Write for &LogFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut slot = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let file = slot.get_or_insert_with(|| open_log(&self.path).ok());
        match file {
            Some(f) => f.write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogFile {
    type Writer = &'a LogFile;

    fn make_writer(&'a self) -> &'a LogFile {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_directives_are_taken_and_bare_words_are_not() {
        assert_eq!(parse_level("debug").unwrap(), "debug");
        assert_eq!(parse_level(" WARN ").unwrap(), "WARN");
        assert!(parse_level("palaver=debug,info").is_ok());
        assert!(parse_level("verbose").is_err());
        assert!(parse_level("").is_err());
        assert!(parse_level("palaver=loud").is_err());
    }

    #[test]
    fn the_log_file_is_made_by_its_first_line_and_moved_aside_when_long() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data").join(LOG_FILE);
        let log = LogFile::new(path.clone());
        assert!(!path.exists(), "made before any line");
        (&log).write_all(b"one\n").unwrap();
        (&log).write_all(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&path, vec![b'x'; MAX_LOG_FILE as usize + 1]).unwrap();
        let again = LogFile::new(path.clone());
        (&again).write_all(b"three\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
        assert!(path.with_extension("log.1").exists());
    }
}
