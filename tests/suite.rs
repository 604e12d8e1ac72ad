//! palaver's integration tests, compiled into one test binary.
//!
//! Each `tests/<name>.rs` listed here is a module of this binary
//! (`cargo test --test suite <name>::` runs one file's tests). One binary
//! links the library once instead of once per file: a clean test build
//! takes a fraction of the disk (each linked test binary is 50–170 MB
//! unoptimised) and of the link time it took with a binary per file.
//!
//! A file whose tests need the process to themselves stays a binary of its
//! own, named in Cargo.toml's `[[test]]` list (with `autotests = false`, a
//! file in neither place would not run: `every_test_file_runs` below
//! fails then):
//! - `console_hostile` holds the process's peak resident memory to a limit;
//! - `console_coach` sets the process's `PALAVER_CONFIG_DIR`;
//! - `community_hostile` opens two thousand connections against the
//!   process's open-file limit.

#[path = "common/mod.rs"]
mod common;

#[path = "adversarial.rs"]
mod adversarial;
#[path = "cli.rs"]
mod cli;
#[path = "coach.rs"]
mod coach;
#[path = "community.rs"]
mod community;
#[path = "community_pg.rs"]
mod community_pg;
#[path = "conformance.rs"]
mod conformance;
#[path = "console.rs"]
mod console;
#[path = "console_app.rs"]
mod console_app;
#[path = "console_cards.rs"]
mod console_cards;
#[path = "console_coach_tmux.rs"]
mod console_coach_tmux;
#[path = "console_market.rs"]
mod console_market;
#[path = "console_replay.rs"]
mod console_replay;
#[path = "console_replay_tmux.rs"]
mod console_replay_tmux;
#[path = "console_rooms.rs"]
mod console_rooms;
#[path = "console_rooms_tmux.rs"]
mod console_rooms_tmux;
#[path = "console_social.rs"]
mod console_social;
#[path = "console_tables.rs"]
mod console_tables;
#[path = "console_tables_tmux.rs"]
mod console_tables_tmux;
#[path = "console_tank.rs"]
mod console_tank;
#[path = "console_tank_tmux.rs"]
mod console_tank_tmux;
#[path = "console_tmux.rs"]
mod console_tmux;
#[path = "console_whisper.rs"]
mod console_whisper;
#[path = "console_wolf.rs"]
mod console_wolf;
#[path = "console_wolf_limits.rs"]
mod console_wolf_limits;
#[path = "console_wolf_remote.rs"]
mod console_wolf_remote;
#[path = "console_wolf_tmux.rs"]
mod console_wolf_tmux;
#[path = "daemon.rs"]
mod daemon;
#[path = "direct.rs"]
mod direct;
#[path = "engine.rs"]
mod engine;
#[path = "every_game.rs"]
mod every_game;
#[path = "external_hooks.rs"]
mod external_hooks;
#[path = "group_core.rs"]
mod group_core;
#[path = "group_crowd.rs"]
mod group_crowd;
#[path = "group_hostile.rs"]
mod group_hostile;
#[path = "group_rooms.rs"]
mod group_rooms;
#[path = "hostile_fuzz.rs"]
mod hostile_fuzz;
#[path = "hostile_peer.rs"]
mod hostile_peer;
#[path = "hostile_props.rs"]
mod hostile_props;
#[path = "hostile_servers.rs"]
mod hostile_servers;
#[path = "house.rs"]
mod house;
#[path = "join_anything.rs"]
mod join_anything;
#[path = "layers.rs"]
mod layers;
#[path = "limits.rs"]
mod limits;
#[path = "market.rs"]
mod market;
#[path = "market_e2e.rs"]
mod market_e2e;
#[path = "market_http.rs"]
mod market_http;
#[path = "mcp.rs"]
mod mcp;
#[path = "mental_poker_flow.rs"]
mod mental_poker_flow;
#[path = "mental_poker_vectors.rs"]
mod mental_poker_vectors;
#[path = "p2p.rs"]
mod p2p;
#[path = "policy_scripts.rs"]
mod policy_scripts;
#[path = "properties.rs"]
mod properties;
#[path = "realtime.rs"]
mod realtime;
#[path = "realtime_bridge.rs"]
mod realtime_bridge;
#[path = "reference_bridge.rs"]
mod reference_bridge;
#[path = "reference_community.rs"]
mod reference_community;
#[path = "reference_diff.rs"]
mod reference_diff;
#[path = "reference_engine.rs"]
mod reference_engine;
#[path = "reference_mental_poker.rs"]
mod reference_mental_poker;
#[path = "reference_p2p.rs"]
mod reference_p2p;
#[path = "reference_realtime.rs"]
mod reference_realtime;
#[path = "reference_social.rs"]
mod reference_social;
#[path = "relay.rs"]
mod relay;
#[path = "replay.rs"]
mod replay;
#[path = "replay_bundle.rs"]
mod replay_bundle;
#[path = "replay_rederive.rs"]
mod replay_rederive;
#[path = "rooms_hooks.rs"]
mod rooms_hooks;
#[path = "serve_ops.rs"]
mod serve_ops;
#[path = "session.rs"]
mod session;
#[path = "skill.rs"]
mod skill;
#[path = "social.rs"]
mod social;
#[path = "tables.rs"]
mod tables;
#[path = "tables_hooks.rs"]
mod tables_hooks;
#[path = "tank_commander.rs"]
mod tank_commander;
#[path = "tank_sim.rs"]
mod tank_sim;
#[path = "task_diff.rs"]
mod task_diff;
#[path = "werewolf_group_chat.rs"]
mod werewolf_group_chat;
#[path = "werewolf_hostile.rs"]
mod werewolf_hostile;
#[path = "werewolf_logs.rs"]
mod werewolf_logs;
#[path = "werewolf_packets_prop.rs"]
mod werewolf_packets_prop;
#[path = "werewolf_rules.rs"]
mod werewolf_rules;
#[path = "werewolf_server_compat.rs"]
mod werewolf_server_compat;
#[path = "werewolf_wire.rs"]
mod werewolf_wire;
#[path = "whisper_diff.rs"]
mod whisper_diff;

/// Every `tests/*.rs` file is a module above or a `[[test]]` of its own in
/// Cargo.toml: with `autotests = false`, cargo would silently skip one in
/// neither place.
#[test]
fn every_test_file_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let suite = std::fs::read_to_string(root.join("tests/suite.rs")).unwrap();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("tests")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        if stem == "suite" {
            continue;
        }
        let module = format!("#[path = \"{name}\"]\nmod {stem};\n");
        let target = format!("path = \"tests/{name}\"");
        if !suite.contains(&module) && !manifest.contains(&target) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "test files that no test binary compiles: {missing:?} (add each to tests/suite.rs or to Cargo.toml's [[test]] list)"
    );
}
