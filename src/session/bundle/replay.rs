//! A verified bundle replayed: a participant bundle carries its session's
//! own files (`participant/state/…`), which are the timeline `session
//! replay` rebuilds for a state dir. They are read only after the bundle
//! verifies, written to a private temporary dir (removed again) and read
//! back as a state dir; a public bundle carries no such files.

use super::{BundleError, Verified, archive, verify};
use crate::session::StateDir;
use crate::session::replay::{Timeline, load_dir};
use std::path::Path;

/// Is `path` a zip file (what a bundle is), by its first bytes?
pub fn is_bundle(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"PK\x03\x04"
}

/// Verifies the bundle at `path`, then rebuilds its session's timeline:
/// `None` for a bundle with no session files (public scope).
pub fn replay(path: &Path) -> Result<(Verified, Option<Timeline>), BundleError> {
    let verified = verify(path)?;
    let entries = archive::read_entries(path)?;
    // `runtime/` is the launcher's dir (session.json, lifecycle events),
    // `state/` the engine's; a one-level session (a room) has `state/` only.
    let files = |root: &str| -> Vec<(&str, &[u8])> {
        let prefix = format!("participant/{root}/");
        entries
            .iter()
            .filter_map(|(name, data)| {
                name.strip_prefix(prefix.as_str())
                    .filter(|n| !n.is_empty() && !n.contains('/'))
                    .map(|n| (n, data.as_slice()))
            })
            .collect()
    };
    let (runtime, state) = (files("runtime"), files("state"));
    if state.is_empty() {
        return Ok((verified, None));
    }
    let dir = std::env::temp_dir().join(format!(
        "palaver-bundle-{}-{}",
        std::process::id(),
        hex::encode(rand::random::<[u8; 8]>())
    ));
    let io = |e: std::io::Error| BundleError::Io {
        path: dir.clone(),
        source: e,
    };
    let private = |d: &Path| {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(d)
    };
    private(&dir).map_err(io)?;
    let engine = if runtime.is_empty() {
        dir.clone()
    } else {
        // The engine dir's name only needs the role's prefix to be found.
        dir.join(format!(
            "{}-0",
            verified
                .manifest
                .get_str("role")
                .filter(|r| *r == "guest")
                .unwrap_or("host")
        ))
    };
    let written = (|| -> std::io::Result<()> {
        if engine != dir {
            private(&engine)?;
        }
        for (name, data) in &runtime {
            std::fs::write(dir.join(name), data)?;
        }
        for (name, data) in &state {
            std::fs::write(engine.join(name), data)?;
        }
        Ok(())
    })();
    let timeline = written.map(|()| StateDir::resolve(&dir).map(|d| load_dir(&d)));
    let _ = std::fs::remove_dir_all(&dir);
    Ok((verified, timeline.map_err(io)?))
}
