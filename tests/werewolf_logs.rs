//! The server's logs against the reference samples (aiwolf-nlp-server
//! v0.4.12, copied into tests/data/aiwolf from the conformance set): a 5-seat
//! bot game is played over the WebSocket server with every log on, then the
//! game .log is compared line kind by line kind (field count and each
//! field's kind), the JSON log by its keys and value types (recursively,
//! the packets inside the entries included), and the realtime feed by the
//! keys and value types of each event kind.

use palaver::werewolf::agent::{BotDecider, JoinOptions, join};
use palaver::werewolf::bot::Bot;
use palaver::werewolf::config::Config;
use palaver::werewolf::server::{Server, serve};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn reference(name: &str) -> Option<String> {
    let dirs = [
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiwolf"),
        PathBuf::from("/work/shared/conformance/aiwolf"),
    ];
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map(|p| std::fs::read_to_string(p).unwrap())
}

/// The kind of one .log field.
fn field_kind(f: &str) -> String {
    const LITERALS: [&str; 14] = [
        "ALIVE",
        "DEAD",
        "VILLAGER",
        "SEER",
        "MEDIUM",
        "BODYGUARD",
        "POSSESSED",
        "WEREWOLF",
        "HUMAN",
        "true",
        "false",
        "NONE",
        "VILLAGER_TEAM",
        "WEREWOLF_TEAM",
    ];
    if f.parse::<i64>().is_ok() {
        "int".into()
    } else if f == "true" || f == "false" {
        "bool".into()
    } else if LITERALS.contains(&f) {
        "literal".into()
    } else {
        "text".into()
    }
}

/// Line kind → the set of field-kind signatures seen. Talk and whisper
/// texts may hold commas: their sixth field is the rest of the line.
fn log_shapes(text: &str) -> BTreeMap<String, BTreeSet<Vec<String>>> {
    let mut m: BTreeMap<String, BTreeSet<Vec<String>>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let kind = line.split(',').nth(1).unwrap_or("").to_owned();
        let fields: Vec<&str> = if kind == "talk" || kind == "whisper" {
            line.splitn(6, ',').collect()
        } else {
            line.split(',').collect()
        };
        let mut sig: Vec<String> = fields.iter().map(|f| field_kind(f)).collect();
        sig[1] = kind.clone();
        // Names and texts are both free text; role/team literals vary.
        for s in sig.iter_mut().skip(2) {
            if s == "literal" {
                *s = "literal".into();
            }
        }
        m.entry(kind).or_default().insert(sig);
    }
    m
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every path (`a.b[].c`) with the value types seen there. Strings that
/// hold a JSON object (the JSON log's packets) are walked too, under `path{}`.
fn shape(v: &Value, path: &str, out: &mut BTreeMap<String, BTreeSet<&'static str>>) {
    out.entry(path.to_owned()).or_default().insert(type_name(v));
    match v {
        Value::Object(o) => {
            // Maps keyed by agent name: the names differ, the shape not.
            let by_name = path.ends_with("status_map") || path.ends_with("role_map");
            for (k, x) in o {
                let k = if by_name { "<name>" } else { k.as_str() };
                shape(x, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for x in a {
                shape(x, &format!("{path}[]"), out);
            }
        }
        Value::String(s) if s.starts_with('{') => {
            if let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                shape(&inner, &format!("{path}{{}}"), out);
            }
        }
        _ => {}
    }
}

/// The key order of each object kind in the realtime feed, per event.
fn realtime_shapes(text: &str) -> BTreeMap<String, BTreeMap<String, BTreeSet<&'static str>>> {
    let mut m: BTreeMap<String, BTreeMap<String, BTreeSet<&'static str>>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        let ev = v["event"].as_str().unwrap_or("?").to_owned();
        shape(&v, "", m.entry(ev).or_default());
    }
    m
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Plays a 5-seat bot game on the server with every log on; returns the
/// game .log, the JSON log and the realtime JSONL.
async fn served_game(root: &Path) -> (String, String, String) {
    let mut cfg = Config::default_for(5).unwrap();
    cfg.log.game_dir = root.join("game").display().to_string();
    cfg.log.json_dir = root.join("json").display().to_string();
    cfg.log.realtime_dir = root.join("realtime").display().to_string();
    let srv = Server::new(cfg, 2).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, srv.clone()));
    for i in 1..=5u64 {
        let opts = JoinOptions {
            url: format!("ws://{addr}/ws"),
            name: format!("cap{i}"),
            token: None,
            seed: i,
        };
        tokio::spawn(async move {
            let mut d = BotDecider(Bot::new(i));
            let _ = join(&opts, &mut d).await;
        });
    }
    tokio::time::timeout(Duration::from_secs(60), srv.wait_finished(1))
        .await
        .expect("the game ends");
    // The logs are written as the game ends; give the writer a moment.
    let mut out = None;
    for _ in 0..50 {
        let g = files(&root.join("game"), "log");
        let j = files(&root.join("json"), "json");
        let r = files(&root.join("realtime"), "jsonl");
        if let (Some(g), Some(j), Some(r)) = (g.first(), j.first(), r.first()) {
            let jt = std::fs::read_to_string(j).unwrap();
            if serde_json::from_str::<Value>(&jt).is_ok() {
                out = Some((
                    std::fs::read_to_string(g).unwrap(),
                    jt,
                    std::fs::read_to_string(r).unwrap(),
                ));
                if out.as_ref().unwrap().0.contains(",result,") {
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    out.expect("all three logs were written")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_have_the_reference_shapes() {
    let (Some(ref_log), Some(ref_json), Some(ref_rt)) = (
        reference("v0.4.12_5p_game.log"),
        reference("v0.4.12_5p_jsonlog.json"),
        reference("v0.4.12_5p_realtime.jsonl"),
    ) else {
        panic!("the reference samples are missing");
    };
    // A game that ends on day 1 with the wolf exiled has no attack: play
    // until one has every line kind of the reference game (at most five).
    let want = log_shapes(&ref_log);
    let mut played = Vec::new();
    for _ in 0..5 {
        let d = tempfile::tempdir().unwrap();
        let game = served_game(d.path()).await;
        let complete = want.keys().all(|k| log_shapes(&game.0).contains_key(k));
        played.push(game);
        if complete {
            break;
        }
    }
    let (log, json, rt) = played.pop().unwrap();

    // The game .log: every line kind ours writes, with the reference's
    // field count and field kinds; every kind the reference's 5-seat game
    // has, ours has too.
    let got = log_shapes(&log);
    println!("log kinds: reference {:?}\n ours {:?}", want, got);
    for (kind, sigs) in &got {
        let w = want
            .get(kind)
            .unwrap_or_else(|| panic!("line kind {kind} is not in the reference"));
        for s in sigs {
            assert!(w.contains(s), "{kind}: {s:?} not among {w:?}");
        }
    }
    for kind in want.keys() {
        assert!(got.contains_key(kind), "no {kind} lines: {log}");
    }

    // The JSON log: the same paths with the same value types.
    let (mut want, mut got) = (BTreeMap::new(), BTreeMap::new());
    shape(&serde_json::from_str(&ref_json).unwrap(), "", &mut want);
    shape(&serde_json::from_str(&json).unwrap(), "", &mut got);
    let only_ref: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
    let only_ours: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    let mismatched: Vec<_> = got
        .iter()
        .filter(|(k, t)| want.get(*k).is_some_and(|w| !t.is_subset(w)))
        .map(|(k, t)| (k, t, &want[k]))
        .collect();
    println!(
        "json: only in the reference {only_ref:?}\n only ours {only_ours:?}\n types {mismatched:?}"
    );
    // The one documented addition (docs/compatibility.md: "v0.4 packets … plus the newer
    // fields — `Talk.time` in ms"): talks carry their time.
    let only_ours: Vec<_> = only_ours
        .into_iter()
        .filter(|k| !(k.ends_with("_history[].time") || k.ends_with("new_talk.time")))
        .collect();
    assert!(
        only_ours.is_empty(),
        "paths the reference lacks: {only_ours:?}"
    );
    assert!(mismatched.is_empty(), "value types differ: {mismatched:?}");
    assert!(only_ref.is_empty(), "paths ours lacks: {only_ref:?}");

    // The realtime feed: per event kind, the same paths and value types.
    let (want, got) = (realtime_shapes(&ref_rt), realtime_shapes(&rt));
    for (ev, g) in &got {
        let w = want
            .get(ev)
            .unwrap_or_else(|| panic!("realtime event {ev} is not in the reference"));
        let only_ref: Vec<_> = w.keys().filter(|k| !g.contains_key(*k)).collect();
        // `timestamp` (Unix s) is the newer servers' field, documented in
        // docs/compatibility.md with `Talk.time`.
        let only_ours: Vec<_> = g
            .keys()
            .filter(|k| !w.contains_key(*k) && k.as_str() != ".timestamp")
            .collect();
        let mismatched: Vec<_> = g
            .iter()
            .filter(|(k, t)| w.get(*k).is_some_and(|x| !t.is_subset(x)))
            .collect();
        println!(
            "realtime {ev}: only ref {only_ref:?} only ours {only_ours:?} types {mismatched:?}"
        );
        assert!(
            only_ours.is_empty(),
            "{ev}: paths the reference lacks: {only_ours:?}"
        );
        assert!(only_ref.is_empty(), "{ev}: paths ours lacks: {only_ref:?}");
        assert!(
            mismatched.is_empty(),
            "{ev}: value types differ: {mismatched:?}"
        );
    }
    for ev in want.keys() {
        assert!(got.contains_key(ev), "no realtime {ev} event");
    }
}
