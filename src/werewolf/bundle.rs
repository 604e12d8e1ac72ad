//! Replay bundles of werewolf games: a finished game's .log (the AIWolf
//! server's format) as one signed zip anyone can check offline.
//!
//! The reference client has no bundle for werewolf games, so this is
//! palaver's own kind, `palaver-werewolf-replay`, on the same frame as the
//! session bundles (`session::bundle`): `manifest.json` with the version,
//! the kind, scope `public`, the signer's key, an empty membership, the
//! file inventory with sizes and SHA-256, `bundle_id` and the Ed25519
//! signature; one evidence file, `evidence/game.log`. Verification runs the
//! checks every kind shares, then reads the log again: it must be a game
//! log, and what it says (finished, winner, steps, lines skipped) must be
//! what the manifest's `terminal_evidence` recorded at export.

use crate::identity::KeyPair;
use crate::json::{Map, Value};
use crate::session::bundle::{self, BundleError, Failure};
use crate::session::replay::Timeline;
use std::io::Read;
use std::path::Path;

/// `manifest.json`'s `bundle_kind` for a werewolf game.
pub const KIND: &str = "palaver-werewolf-replay";

/// The game log's path in the bundle.
pub const LOG: &str = "evidence/game.log";

/// What a game log's timeline says, as the manifest records it.
fn terminal(t: &Timeline) -> Value {
    let mut m = Map::new();
    m.insert("finished", Value::Bool(t.finished));
    m.insert(
        "winner",
        t.winner.as_deref().map_or(Value::Null, Value::from),
    );
    m.insert("steps", Value::from(t.steps.len()));
    m.insert("skipped_lines", Value::from(t.skipped));
    Value::Object(m)
}

/// Reads a game log's text (at most the replay's bound); an error when the
/// file is larger or is not a game log.
fn log_text(path: &Path) -> Result<Vec<u8>, BundleError> {
    let io = |source| BundleError::Io {
        path: path.to_owned(),
        source,
    };
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(super::replay::MAX_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() as u64 > super::replay::MAX_BYTES {
        return Err(BundleError::Export(format!(
            "{} is larger than a game log may be ({} bytes)",
            path.display(),
            super::replay::MAX_BYTES
        )));
    }
    if !super::replay::is_game_log(&String::from_utf8_lossy(&buf)) {
        return Err(BundleError::Export(format!(
            "{} is not a werewolf game log",
            path.display()
        )));
    }
    Ok(buf)
}

/// Exports the game log at `log` as a signed public bundle at `output`
/// (refused when it exists and `force` is not given); returns the manifest.
pub fn export(
    log: &Path,
    output: &Path,
    signer: &KeyPair,
    force: bool,
) -> Result<Map, BundleError> {
    if output.exists() && !force {
        return Err(BundleError::Exists(output.to_owned()));
    }
    let text = log_text(log)?;
    let timeline = super::replay::parse(&String::from_utf8_lossy(&text), LOG);
    let mut body = bundle::own_kind_body(KIND, signer);
    body.insert(
        "source_name",
        Value::from(
            log.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    );
    body.insert("terminal_evidence", terminal(&timeline));
    bundle::seal(body, vec![(LOG.to_owned(), text)], signer, output)
}

/// A verified werewolf bundle: its manifest and the game's timeline.
pub struct Verified {
    pub manifest: Map,
    pub timeline: Timeline,
}

impl Verified {
    /// `{"status": "verified", "path", "bundle_kind", "manifest",
    /// "terminal_evidence"}`.
    pub fn to_value(&self, path: &Path) -> Value {
        bundle::own_kind_report(path, KIND, &self.manifest, terminal(&self.timeline))
    }
}

/// Verifies a werewolf bundle (see the module doc); the first failed check
/// is named.
pub fn verify(path: &Path) -> Result<Verified, BundleError> {
    let (manifest, content) = bundle::open(path, KIND)?;
    let Some(text) = content.get(LOG) else {
        return Err(Failure::new("werewolf_log", "the bundle holds no game log")
            .file(LOG)
            .into());
    };
    let text = String::from_utf8_lossy(text);
    if !super::replay::is_game_log(&text) {
        return Err(
            Failure::new("werewolf_log", "the evidence is not a werewolf game log")
                .file(LOG)
                .into(),
        );
    }
    let timeline = super::replay::parse(&text, &path.display().to_string());
    let derived = terminal(&timeline);
    bundle::check_terminal(
        &manifest,
        &derived,
        "the game log does not say what the manifest's terminal evidence records",
    )?;
    Ok(Verified { manifest, timeline })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/aiwolf/v0.4.12_5p_abort_after_timeout_game.log")
    }

    #[test]
    fn a_log_exports_and_verifies_and_a_wrong_terminal_record_is_named() {
        let src = log();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("game.zip");
        let key = KeyPair::generate();
        let m = export(&src, &out, &key, false).unwrap();
        assert_eq!(m.get_str("bundle_kind"), Some(KIND));
        let v = verify(&out).unwrap();
        assert!(v.timeline.werewolf);
        assert_eq!(bundle::kind_of(&out).unwrap(), KIND);
        // A session-bundle verifier refuses the kind by name.
        let e = bundle::verify(&out).unwrap_err().to_string();
        assert!(e.contains("field bundle_kind"), "{e}");
        assert!(matches!(
            export(&src, &out, &key, false),
            Err(BundleError::Exists(_))
        ));
        // Not a game log: refused at export.
        let notes = tmp.path().join("notes.log");
        std::fs::write(&notes, "hello\n").unwrap();
        let e = export(&notes, &tmp.path().join("n.zip"), &key, false).unwrap_err();
        assert!(e.to_string().contains("not a werewolf game log"), "{e}");
    }
}
