//! Shared test helpers: proptest strategies for JSON values.
#![allow(dead_code)]

pub mod tmux;

use palaver::json::{Map, Number, Value};
use proptest::prelude::*;

pub fn big_int() -> impl Strategy<Value = Number> {
    ("-?[1-9][0-9]{19,40}").prop_map(|s| Number::BigInt(s.into()))
}

pub fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::Int),
        big_int(),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Number::Float),
        prop_oneof![
            Just(1e16),
            Just(1e-5),
            Just(-0.0),
            Just(0.1),
            Just(5e-324),
            Just(1.0)
        ]
        .prop_map(Number::Float),
    ]
}

/// Text that exercises escapes, non-ASCII and quotes.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[\\x00-\\x1f\"\\\\/a'é人\u{2028}\u{7f}]{0,8}"
    ]
}

/// Arbitrary JSON values.
pub fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number().prop_map(Value::Number),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map>())),
        ]
    })
}

/// The Python with the reference client installed (`PALAVER_REFERENCE_PYTHON`,
/// set by scripts/test). The tests that call this are `#[ignore]`d, so a
/// plain `cargo test` lists them as ignored; run with `--include-ignored`
/// (as scripts/test does), a missing interpreter is a failure, never a skip.
pub fn reference_python() -> String {
    peer_python(
        "PALAVER_REFERENCE_PYTHON",
        "a Python with aigenora==0.1.4 (scripts/test makes one in target/reference-venv)",
    )
}

/// The interpreter named by `var`; panics naming what is missing.
pub fn peer_python(var: &str, what: &str) -> String {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => {
            assert!(
                std::path::Path::new(&p).exists(),
                "{var}={p} does not exist: it must name {what}"
            );
            p
        }
        _ => panic!("{var} is not set: this test needs {what}; run it through scripts/test"),
    }
}

/// A `palaver serve` process, killed when dropped.
pub struct Serve(pub std::process::Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `palaver serve` on a free loopback port with its database at
/// `db` (and any `extra` flags); returns the process and the URL it prints.
pub fn palaver_serve(db: &std::path::Path, extra: &[&str]) -> (Serve, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(extra)
        .arg("--db")
        .arg(db)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start palaver serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("read the serve banner");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("serve printed no URL: {line}"))
        .to_owned();
    (Serve(child), url)
}

/// Every row of every table, as text: what "nothing was written" compares.
pub fn dump(db: &std::path::Path) -> String {
    let c = rusqlite::Connection::open(db).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = String::new();
    for t in tables {
        let mut st = c
            .prepare(&format!("SELECT * FROM {t} ORDER BY rowid"))
            .unwrap();
        let n = st.column_count();
        let mut rows = st.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            out.push_str(&t);
            for i in 0..n {
                // Text as its length and its bytes (unambiguous, and fast
                // for long values: Debug would print each byte as a number).
                match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(t) => {
                        out.push_str(&format!(" Text[{}]", t.len()));
                        out.push_str(&String::from_utf8_lossy(t));
                    }
                    v => out.push_str(&format!(" {v:?}")),
                }
            }
            out.push('\n');
        }
    }
    out
}
