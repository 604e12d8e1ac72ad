//! `palaver` as a process on one data dir against one community server.

use palaver::json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// `palaver --data-dir DIR --server URL ARGS…`.
pub fn palaver(dir: &Path, url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .arg("--data-dir")
        .arg(dir)
        .args(["--server", url])
        .args(args)
        .output()
        .expect("run palaver")
}

/// `palaver --json ARGS…`: the exit code and the JSON it printed.
pub fn json(dir: &Path, url: &str, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = palaver(dir, url, &all);
    let v = palaver::json::parse_bytes(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

/// `init` and `register --nickname NICK`.
pub fn identity(dir: &Path, url: &str, nick: &str) {
    assert!(palaver(dir, url, &["init"]).status.success());
    let r = palaver(dir, url, &["register", "--nickname", nick]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}
