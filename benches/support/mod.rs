//! What the process-level benches share: where the binary and the
//! reference's Python are, and how figures are summarised.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The reference client's Python: `PALAVER_REFERENCE_PYTHON`, else the venv
/// scripts/test builds. With `USER_FIGURES_REFERENCE=1` a missing one is an
/// error instead of a skipped line.
pub fn reference_python() -> Option<PathBuf> {
    let p = std::env::var_os("PALAVER_REFERENCE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/reference-venv/bin/python")
        });
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var_os("USER_FIGURES_REFERENCE").is_none(),
        "USER_FIGURES_REFERENCE is set but {} is missing",
        p.display()
    );
    None
}

pub fn median(ms: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = ms.collect();
    v.sort_by(f64::total_cmp);
    if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    }
}

/// The binary under test: `PALAVER_BIN`, else the release build in this
/// workspace's target dir.
pub fn binary() -> PathBuf {
    binary_if_built().unwrap_or_else(|| {
        panic!(
            "{} is missing: run `cargo build --release` first (or set PALAVER_BIN)",
            release_binary().display()
        )
    })
}

/// [`binary`], or `None` when it is not built.
pub fn binary_if_built() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PALAVER_BIN") {
        return Some(PathBuf::from(p));
    }
    let p = release_binary();
    p.is_file().then_some(p)
}

fn release_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("release").join("palaver")
}

/// `palaver serve` on a free loopback port with its database at `db`, no
/// rate limit: the process and the URL its banner prints.
pub fn serve(bin: &Path, db: &Path) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut serve = std::process::Command::new(bin)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--rate-limit",
            "0",
            "--db",
        ])
        .arg(db)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start palaver serve");
    let mut banner = String::new();
    std::io::BufReader::new(serve.stderr.take().expect("serve's stderr"))
        .read_line(&mut banner)
        .expect("read the serve banner");
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("serve printed no URL: {banner}"))
        .to_owned();
    (serve, url)
}

/// One figure: the median, then [min … max].
pub fn line(what: &str, ms: impl Iterator<Item = f64>) {
    let mut v: Vec<f64> = ms.collect();
    v.sort_by(f64::total_cmp);
    let median = median(v.iter().copied());
    println!(
        "  {what:<44} {median:8.2}   [{:.2} … {:.2}]",
        v[0],
        v[v.len() - 1]
    );
}
