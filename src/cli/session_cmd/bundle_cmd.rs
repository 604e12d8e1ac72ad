//! `palaver session replay [DIR]` and its bundle subcommands: `export`,
//! `verify`, `reconcile` (signed replay bundles in the reference client's
//! format; the library is `session::bundle`).

use super::{Target, resolve};
use crate::cli::{Ctx, Outcome};
use crate::identity::KeyPair;
use crate::json::Value;
use crate::session::bundle::{self, BundleError, Scope};
use crate::session::files::pretty;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;

/// `session replay`: a state dir's timeline, or a bundle subcommand.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub target: Target,
    /// Pace the steps by their recorded times, this many times faster
    /// (1 = real time; each pause at most 5 s; a game .log has no times:
    /// a line that says something takes a second). Default: all at once.
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    #[command(subcommand)]
    pub bundle: Option<BundleCmd>,
}

/// Signed replay bundles: evidence of a session anyone can check offline.
#[derive(Debug, Subcommand)]
pub enum BundleCmd {
    /// Export a finished session as a signed replay bundle.
    ///
    /// A zip with manifest.json and the evidence files, signed with this
    /// data dir's key. `public` holds the authority frames and their protocol events,
    /// the lifecycle events with their public fields only, and the peer
    /// index; `participant` adds this participant's own state files. The
    /// reference client's format: `aigenora session replay verify` checks
    /// it. A werewolf game's .log exports as palaver's own kind
    /// (`palaver-werewolf-replay`, public: the log, checked again on
    /// verify), which the reference does not read.
    /// Example: palaver session replay export DIR --output game.zip
    Export {
        #[command(flatten)]
        target: Target,
        /// Where to write the bundle (refused if it exists, unless --force).
        #[arg(long, value_name = "FILE")]
        output: PathBuf,
        /// What the bundle shows: public evidence, or also your own view.
        #[arg(long, value_enum, default_value = "public")]
        scope: ScopeArg,
        /// Replace --output if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Verify a replay bundle (yours or anyone's); nothing is written.
    ///
    /// Checks, in order: the zip (refused before anything is read
    /// when it has more than 64 entries, a path with `..`, an absolute path,
    /// a backslash, a duplicate, a directory or symlink entry, or entries
    /// past 32 MiB each / 128 MiB in all, declared or inflated), the
    /// manifest's bundle_id and signature, each file's size and SHA-256,
    /// the authority frames (core hash, checkpoint certificate, chain), the
    /// protocol events of each frame, the peer index and the terminal
    /// evidence. Nothing is written. Exit 0: verified; 1: a check failed
    /// (named, with the file, line and field); 2: an error.
    Verify {
        /// The bundle (.zip).
        #[arg(value_name = "BUNDLE")]
        bundle: PathBuf,
    },
    /// Cross-check two or more members' bundles of one group session.
    ///
    /// Compares the authority frames each holds (gaps) and where they differ
    /// (conflicts), peer messages seen by both ends, terminal evidence.
    /// Prints the report as JSON (also to --output). Exit 0: status ok;
    /// 1: conflict or incomplete, or a bundle failed verification; 2: an
    /// error (fewer than two bundles, not one group).
    Reconcile {
        #[arg(value_name = "BUNDLE", required = true, num_args = 1..)]
        bundles: Vec<PathBuf>,
        /// Also write the report to this file.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// `--scope`: who the bundle is for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ScopeArg {
    /// Frames, protocol events, public lifecycle events and the peer index.
    Public,
    /// Also your own state files (your view, peer message payloads).
    Participant,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Scope {
        match s {
            ScopeArg::Public => Scope::Public,
            ScopeArg::Participant => Scope::Participant,
        }
    }
}

/// Runs a bundle subcommand.
pub fn run(ctx: &Ctx, cmd: BundleCmd) -> Result<Outcome> {
    match cmd {
        BundleCmd::Export {
            target,
            output,
            scope,
            force,
        } => export(ctx, &target, &output, scope.into(), force),
        BundleCmd::Verify { bundle } => verify(ctx, &bundle),
        BundleCmd::Reconcile { bundles, output } => reconcile(ctx, &bundles, output.as_deref()),
    }
}

fn export(
    ctx: &Ctx,
    target: &Target,
    output: &std::path::Path,
    scope: Scope,
    force: bool,
) -> Result<Outcome> {
    let dir = match target.dir.clone().or_else(|| target.state_dir.clone()) {
        Some(p) => p,
        None => {
            let d = resolve(ctx, target)?;
            d.parent.unwrap_or(d.child)
        }
    };
    let data_dir = ctx.data_dir()?;
    let key = KeyPair::load(&data_dir)
        .with_context(|| format!("loading the signing key from {}", data_dir.display()))?;
    // A werewolf game's .log (by its content) is palaver's own kind.
    let manifest = if dir.is_file() && crate::werewolf::replay::sniff(&dir) {
        if scope != Scope::Public {
            anyhow::bail!(
                "a werewolf game log's bundle is public: it holds the log and nothing of yours (drop --scope)"
            );
        }
        crate::werewolf::bundle::export(&dir, output, &key, force)?
    } else {
        bundle::export(&dir, output, scope, &key, force)?
    };
    let mut out = std::io::stdout().lock();
    if ctx.json {
        writeln!(out, "{}", pretty(&Value::Object(manifest)))?;
    } else {
        let s = |k: &str| manifest.get_str(k).unwrap_or_default().to_owned();
        writeln!(out, "[OK] replay bundle: {}", s("output"))?;
        writeln!(out, "bundle_id: {}", s("bundle_id"))?;
        writeln!(out, "scope: {}", s("scope"))?;
        writeln!(out, "participant: {}", s("participant_public_key"))?;
    }
    Ok(Outcome::Ok)
}

/// Prints a failed check; `Err` for anything that is not one.
fn refused(ctx: &Ctx, path: &std::path::Path, e: BundleError) -> Result<Outcome> {
    let BundleError::Failed(f) = e else {
        return Err(e.into());
    };
    if ctx.json {
        let out = serde_json::json!({
            "status": "failed",
            "path": path.display().to_string(),
            "failure": f,
        });
        ctx.print_json(&out)?;
    } else {
        writeln!(std::io::stdout(), "[FAILED] {}: {f}", path.display())?;
    }
    Ok(Outcome::Rejected)
}

/// Whether the bundle at `path` says it is a werewolf game's (palaver's own
/// kind); anything unreadable goes to the session verifier, which names it.
fn is_werewolf(path: &std::path::Path) -> bool {
    bundle::kind_of(path).is_ok_and(|k| k == crate::werewolf::bundle::KIND)
}

/// A market transaction's bundle: verified, its report printed.
fn verify_transaction(ctx: &Ctx, path: &std::path::Path) -> Result<Outcome> {
    let v = match crate::market::bundle::verify(path) {
        Ok(v) => v,
        Err(e) => return refused(ctx, path, e),
    };
    if ctx.json {
        writeln!(std::io::stdout(), "{}", pretty(&v.to_value(path)))?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "[OK] GTL transaction bundle verified")?;
        writeln!(
            out,
            "bundle_id: {}",
            v.manifest.get_str("bundle_id").unwrap_or_default()
        )?;
        writeln!(
            out,
            "signed by: {}",
            v.manifest
                .get_str("participant_public_key")
                .unwrap_or_default()
        )?;
        writeln!(
            out,
            "transaction {}: {}, a chain of {} events, head {}",
            v.view.transaction_id,
            v.view.state.as_str(),
            v.chain.events,
            v.chain.head
        )?;
    }
    Ok(Outcome::Ok)
}

fn is_transaction(path: &std::path::Path) -> bool {
    bundle::kind_of(path).is_ok_and(|k| k == crate::market::bundle::KIND)
}

fn verify(ctx: &Ctx, path: &std::path::Path) -> Result<Outcome> {
    if is_transaction(path) {
        return verify_transaction(ctx, path);
    }
    if is_werewolf(path) {
        let v = match crate::werewolf::bundle::verify(path) {
            Ok(v) => v,
            Err(e) => return refused(ctx, path, e),
        };
        if ctx.json {
            writeln!(std::io::stdout(), "{}", pretty(&v.to_value(path)))?;
        } else {
            let s = |k: &str| v.manifest.get_str(k).unwrap_or_default().to_owned();
            let mut out = std::io::stdout().lock();
            writeln!(out, "[OK] werewolf game bundle verified")?;
            writeln!(out, "bundle_id: {}", s("bundle_id"))?;
            writeln!(out, "signed by: {}", s("participant_public_key"))?;
            writeln!(
                out,
                "game: {} steps, {}",
                v.timeline.steps.len(),
                v.timeline.winner.as_deref().unwrap_or("no winner")
            )?;
        }
        return Ok(Outcome::Ok);
    }
    let v = match bundle::verify(path) {
        Ok(v) => v,
        Err(e) => return refused(ctx, path, e),
    };
    let mut out = std::io::stdout().lock();
    if ctx.json {
        writeln!(out, "{}", pretty(&v.to_value()))?;
    } else {
        let s = |k: &str| v.manifest.get_str(k).unwrap_or_default().to_owned();
        writeln!(out, "[OK] replay bundle verified")?;
        writeln!(out, "bundle_id: {}", s("bundle_id"))?;
        writeln!(out, "participant: {}", s("participant_public_key"))?;
        writeln!(out, "scope: {}", s("scope"))?;
        writeln!(out, "authority_frames: {}", v.authority_frames.len())?;
        writeln!(out, "peer_records: {}", v.peer_index.len())?;
        for c in &v.extensions {
            let status = if c.ran { "passed" } else { "not applicable" };
            writeln!(out, "{}: {status} ({})", c.check, c.detail)?;
        }
    }
    Ok(Outcome::Ok)
}

/// `palaver session replay BUNDLE`: the verification first (a failed check
/// ends it there, exit 1), then the session's timeline from the bundle's
/// own files.
pub fn replay_bundle(ctx: &Ctx, path: &std::path::Path, speed: Option<f64>) -> Result<Outcome> {
    // A transaction has no steps to play: its verification is its record.
    if is_transaction(path) {
        return verify_transaction(ctx, path);
    }
    if is_werewolf(path) {
        let v = match crate::werewolf::bundle::verify(path) {
            Ok(v) => v,
            Err(e) => return refused(ctx, path, e),
        };
        if !ctx.json {
            writeln!(
                std::io::stdout(),
                "[OK] werewolf game bundle verified ({}; signed by {})",
                v.manifest.get_str("bundle_id").unwrap_or_default(),
                v.manifest
                    .get_str("participant_public_key")
                    .unwrap_or_default()
            )?;
        }
        return super::replay::print_timeline(ctx, &v.timeline, speed);
    }
    let (v, timeline) = match bundle::replay(path) {
        Ok(r) => r,
        Err(e) => return refused(ctx, path, e),
    };
    let s = |k: &str| v.manifest.get_str(k).unwrap_or_default().to_owned();
    let Some(tl) = timeline else {
        if ctx.json {
            ctx.print_json(&serde_json::json!({
                "status": "verified", "bundle_id": s("bundle_id"), "scope": s("scope"),
                "timeline": null, "why": "a public bundle carries no session files to replay",
            }))?;
        } else {
            writeln!(
                std::io::stdout(),
                "[OK] replay bundle verified ({}; signed by {})\na {} bundle carries no session files to replay: `palaver session replay verify --json {}` lists its frames and events",
                s("bundle_id"),
                s("participant_public_key"),
                s("scope"),
                path.display()
            )?;
        }
        return Ok(Outcome::Ok);
    };
    if !ctx.json {
        writeln!(
            std::io::stdout(),
            "[OK] replay bundle verified ({}; signed by {}; {} scope)",
            s("bundle_id"),
            s("participant_public_key"),
            s("scope")
        )?;
    }
    super::replay::print_timeline(ctx, &tl, speed)
}

fn reconcile(ctx: &Ctx, paths: &[PathBuf], output: Option<&std::path::Path>) -> Result<Outcome> {
    let report = match bundle::reconcile(paths) {
        Ok(r) => r,
        Err(BundleError::BundleFailed { path, failure }) => {
            return refused(ctx, &path, BundleError::Failed(failure));
        }
        Err(e) => return Err(e.into()),
    };
    let text = pretty(&report);
    if let Some(path) = output {
        crate::fsutil::write_atomic(path, format!("{text}\n").as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if ctx.json || output.is_none() {
        writeln!(out, "{text}")?;
    } else if let Some(path) = output {
        let count = |k: &str| report.get(k).and_then(Value::as_array).map_or(0, Vec::len);
        writeln!(out, "[OK] replay reconciliation: {}", path.display())?;
        writeln!(
            out,
            "status: {}",
            report.get_str("status").unwrap_or_default()
        )?;
        writeln!(out, "participants: {}", count("participants"))?;
        writeln!(out, "authority_conflicts: {}", count("authority_conflicts"))?;
        writeln!(out, "peer_unmatched: {}", count("peer_unmatched"))?;
    }
    Ok(if report.get_str("status") == Some("ok") {
        Outcome::Ok
    } else {
        Outcome::Rejected
    })
}
