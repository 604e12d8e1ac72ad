//! The tank battle end to end with the real binary in a real terminal
//! (tmux): a live match at 10 Hz (`palaver protocol test tank-battle-v1
//! --role host --daemon`: the host's session in a state dir, a bot guest in
//! the same process), the console attaching its state dir (`o`), drawing the
//! battlefield from the runtime's own snapshot as the ticks go by, and one
//! key giving an order that lands in the session's strategy.json, where the
//! host's commander reads it.
//!
//! The harness is the one of tests/console_tables_tmux.rs. Needs `tmux`:
//! the test is `#[ignore]`d and runs under scripts/test
//! (`--include-ignored`), where a missing tmux fails it.

use crate::common;

use common::ok;
use common::tmux::{POLL, require_tmux, serial};
use common::tmux_dirs::{Console, palaver, read_json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// 31×31, steel border and a steel wall across the middle row: the match
/// cannot end before max_ticks.
fn walled_map() -> String {
    (0..31)
        .map(|r| {
            (0..31)
                .map(|c| {
                    if r == 0 || r == 30 || c == 0 || c == 30 || r == 15 {
                        '#'
                    } else {
                        '.'
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tick the battlefield's score line shows (`tick N/…`).
fn shown_tick(screen: &str) -> Option<u64> {
    let at = screen.find("tick ")?;
    screen[at + 5..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn the_console_watches_a_live_tank_battle_and_orders_a_retreat() {
    require_tmux("the_console_watches_a_live_tank_battle_and_orders_a_retreat");
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (_serve, url) =
        common::palaver_serve(&root.join("community.sqlite"), &["--rate-limit", "0"]);
    let data = root.join("player");
    ok(palaver(&data, &url).arg("init").output().unwrap(), "init");
    let options = serde_json::json!({ "map_text": walled_map(), "max_ticks": 3000 }).to_string();
    let started = ok(
        palaver(&data, &url)
            .args([
                "protocol",
                "test",
                "tank-battle-v1",
                "--role",
                "host",
                "--daemon",
                "--options",
                &options,
            ])
            .output()
            .unwrap(),
        "protocol test --role host --daemon",
    );
    let started: serde_json::Value = serde_json::from_str(&started).unwrap();
    let dir = PathBuf::from(started["state_dir"].as_str().unwrap());
    let engine = PathBuf::from(started["engine_state_dir"].as_str().unwrap());
    let pid = started["pid"].as_u64().unwrap() as i32;
    struct Stop(i32);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .arg(self.0.to_string())
                .status();
        }
    }
    let _stop = Stop(pid);

    let config = root.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), format!("server = \"{url}\"\n")).unwrap();
    let c = Console::start("tank", root, &data, &config);
    c.wait_until("the console", Duration::from_secs(30), |s| {
        s.contains("Invitations")
    });
    c.keys(&["o"]);
    c.wait_until("the path box", Duration::from_secs(10), |s| {
        s.contains("Attach a state dir")
    });
    c.type_text(dir.to_str().unwrap());
    c.keys(&["Enter"]);
    let first = c.wait_until("the battlefield", Duration::from_secs(60), |s| {
        s.contains("HOST") && s.contains("GUEST") && shown_tick(s).is_some_and(|t| t > 0)
    });
    println!("the battlefield:\n{first}");
    // Live: the tick the screen shows moves on.
    let t0 = shown_tick(&first).unwrap();
    let later = c.wait_until("the next ticks", Duration::from_secs(20), |s| {
        shown_tick(s).is_some_and(|t| t >= t0 + 10)
    });
    assert!(
        later.contains('▲') || later.contains('▼') || later.contains('◀') || later.contains('▶'),
        "{later}"
    );

    // r: retreat, for all units, into the session's strategy.json.
    c.keys(&["r"]);
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let s = read_json(&engine.join("strategy.json"));
        if s["order"]["kind"] == "retreat" {
            assert_eq!(s["maneuver"], "retreat", "{s:#}");
            break;
        }
        assert!(
            Instant::now() < end,
            "no retreat in strategy.json:\n{s:#}\nscreen:\n{}",
            c.capture()
        );
        std::thread::sleep(POLL);
    }
    c.wait_until("the order's note", Duration::from_secs(10), |s| {
        s.to_lowercase().contains("retreat")
    });
}
