//! Finished sessions made in this process for tests that read them back
//! (replay, the console's replay view).

use palaver::engine::{ControlMode, Role};
use palaver::json::Map;
use palaver::library;
use palaver::protocols::native_hooks_for_alias;
use palaver::services::local::{Side, play};
use palaver::services::run::{Launch, engine_config, stateful_side, write_end, write_launch};
use palaver::session::StateDir;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Plays one session of `alias` with our side as `role` in `mode`, after
/// `before` has run on the fresh state dir; returns the parent dir.
pub async fn session(
    data: &Path,
    alias: &str,
    role: Role,
    mode: ControlMode,
    before: impl FnOnce(&StateDir),
) -> PathBuf {
    let spec = library::bundled_spec(alias).unwrap();
    let options = Map::new();
    let dir = StateDir::create(data, role).unwrap();
    let ours = stateful_side(
        dir.clone(),
        spec,
        native_hooks_for_alias(alias).unwrap(),
        role,
        mode,
        &options,
        Some(5),
    );
    write_launch(
        &dir,
        &Launch {
            spec,
            protocol_dir: None,
            role,
            control_mode: mode,
            options: &options,
            pid: std::process::id(),
            status: "running",
        },
    )
    .unwrap();
    before(&dir);
    let mut bot = Side::auto(
        native_hooks_for_alias(alias).unwrap(),
        Arc::new(palaver::engine::CountingSink::default()),
    );
    bot.seed = Some(9);
    let cfg = engine_config(std::time::Duration::from_secs(10));
    let outcome = match role {
        Role::Host => play(spec, &options, &cfg, ours.side, bot).await.0,
        Role::Guest => play(spec, &options, &cfg, bot, ours.side).await.1,
    };
    write_end(&dir, &outcome).unwrap();
    dir.parent.unwrap()
}

/// The state dir named in a `session state: DIR` line of `printed`.
#[allow(
    dead_code,
    reason = "not every test binary that has common reads a printed state dir"
)]
pub fn printed_state_dir(printed: &str) -> PathBuf {
    printed
        .lines()
        .find_map(|l| l.strip_prefix("session state: "))
        .and_then(|l| l.split_whitespace().next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no state dir in:\n{printed}"))
}

/// A crazy-eights-v1 match (hand_size 5) played by the palaver binary's
/// `protocol test` as host in autonomous mode on a fresh data dir `data`;
/// returns the host's state dir.
#[allow(dead_code, reason = "only the replay tests play a mental-poker match")]
pub fn crazy_eights(data: &Path) -> PathBuf {
    let bin = env!("CARGO_BIN_EXE_palaver");
    let run = |args: &[&str]| {
        std::process::Command::new(bin)
            .arg("--data-dir")
            .arg(data)
            .args(args)
            .output()
            .unwrap()
    };
    super::ok(run(&["init"]), "palaver init");
    let o = run(&[
        "protocol",
        "test",
        "crazy-eights-v1",
        "--options",
        r#"{"hand_size":5}"#,
        "--role",
        "host",
        "--control-mode",
        "autonomous",
    ]);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{printed}");
    printed_state_dir(&printed)
}
