//! The trusted-agent-task-v1 task service against the reference's: the same
//! scripts of guest messages and local worker steps through aigenora's
//! TaskService (tests/task_diff/harness.py, its dispatcher run in place) and
//! through palaver's; every answer must be the same frame, key order
//! included, up to what is fresh or this side's own words: timestamps
//! (`at`), invocation, worker-note and worker-question ids, and event summaries (kinds and
//! ids are compared). Refusals compare by error code.
//!
//! One deliberate difference is allowed: where the reference raises past its
//! handlers (a state-machine edge it does not have, e.g. cancelling a task
//! in `dispatching`), palaver answers `task_state_conflict`.
//!
//! Needs `PALAVER_REFERENCE_PYTHON` (scripts/test sets it); `#[ignore]`d
//! like the other reference tests, and a missing interpreter fails.

use crate::common;

use base64::Engine;
use palaver::json::canonical::{sha256_hex, to_string_ordered};
use palaver::json::{self, Map, Value};
use palaver::obj;
use palaver::protocols::task::service::TaskService;
use std::io::Write;
use std::process::{Command, Stdio};

const SOURCE: &str = "engine-guest";

fn now_ms() -> i64 {
    palaver::protocols::task::store::now_ms()
}

fn handle(msg: Map) -> Value {
    Value::Object(obj! { "op" => "handle", "msg" => msg })
}

fn op(name: &str, fields: Map) -> Value {
    let mut m = obj! { "op" => name };
    for (k, v) in fields.iter() {
        m.insert(k, v.clone());
    }
    Value::Object(m)
}

fn submit(id: &str, digest_char: char, manifest: Option<Map>) -> Map {
    let mut m = obj! {
        "action" => "task_submit", "task_id" => id,
        "request_digest" => std::iter::repeat_n(digest_char, 64).collect::<String>(),
        "task_goal" => "summarise the notes", "execution_class" => "assist",
        "expires_at_ms" => now_ms() + 600_000,
    };
    if let Some(man) = manifest {
        m.insert("input_manifest", Value::Object(man));
    }
    m
}

fn query(id: &str, after: i64) -> Map {
    obj! { "action" => "status_query", "task_id" => id, "after_event_id" => after }
}

fn file(path: &str, data: &[u8]) -> Value {
    Value::Object(obj! { "path" => path, "size" => data.len(), "sha256" => sha256_hex(data) })
}

fn chunk(path: &str, data: &[u8], index: usize) -> Value {
    const C: usize = 256 * 1024;
    let raw = &data[index * C..((index + 1) * C).min(data.len())];
    Value::Object(obj! {
        "path" => path, "offset" => index * C, "size" => raw.len(), "sha256" => sha256_hex(raw),
        "data" => base64::engine::general_purpose::STANDARD.encode(raw),
    })
}

/// What the reference answered, one JSON object per step.
fn reference(py: &str, steps: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let script = Value::Object(obj! {
        "data_dir" => dir.path().display().to_string(), "source" => SOURCE, "steps" => steps.to_vec(),
    });
    let harness = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/task_diff/harness.py");
    let mut child = Command::new(py)
        .arg(harness)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(to_string_ordered(&script).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "harness failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| json::parse_str(l).unwrap())
        .collect()
}

/// What palaver's service answers to the same steps.
fn palaver_side(steps: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut svc = TaskService::open(dir.path()).unwrap();
    let mut input_id = String::new();
    let ok = || Value::Object(obj! { "ok" => true });
    let err = |e: palaver::protocols::task::service::ServiceError| {
        Value::Object(obj! { "error" => e.code.as_str() })
    };
    steps
        .iter()
        .map(|step| {
            let s = |k: &str| step.get_str(k).unwrap_or("").to_owned();
            match step.get_str("op").unwrap() {
                "handle" => {
                    let mut msg = step.get("msg").unwrap().as_object().unwrap().clone();
                    if msg.get_str("input_id") == Some("$input") {
                        msg.insert("input_id", Value::from(input_id.as_str()));
                    }
                    let r = svc.handle(&msg, SOURCE);
                    match r {
                        Ok(a) => Value::Object(obj! { "answer" => a }),
                        Err(e) => err(e),
                    }
                }
                "dispatch" => svc.dispatch_queued().map(|_| ok()).unwrap_or_else(err),
                "worker_note" => svc
                    .worker_note(SOURCE, &s("task_id"), &s("text"))
                    .map(|_| ok())
                    .unwrap_or_else(err),
                "worker_ask" => match svc.worker_ask(SOURCE, &s("task_id"), &s("question")) {
                    Ok(id) => {
                        input_id = id;
                        ok()
                    }
                    Err(e) => err(e),
                },
                "write" => {
                    let p = svc
                        .store()
                        .task_root(SOURCE, &s("task_id"))
                        .join("workspace")
                        .join(s("path"));
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(p, s("text")).unwrap();
                    ok()
                }
                "publish" => svc
                    .worker_publish(SOURCE, &s("task_id"), &s("path"))
                    .map(|_| ok())
                    .unwrap_or_else(err),
                "finish" => svc
                    .worker_finish(SOURCE, &s("task_id"), &s("state"), &s("summary"))
                    .map(|_| ok())
                    .unwrap_or_else(err),
                other => panic!("unknown step {other}"),
            }
        })
        .collect()
}

/// Leaves out what is fresh on each run or each side's own words.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let event = m.contains_key("event_id");
            let mut out = Map::new();
            for (k, x) in m.iter() {
                match k {
                    "at" => continue,
                    "summary" if event => continue,
                    "invocation_id" => {
                        out.insert(k, Value::from("inv-*"));
                        continue;
                    }
                    "note_id" if x.as_str().is_some_and(|s| s.starts_with("wn-")) => {
                        out.insert(k, Value::from("wn-*"));
                        continue;
                    }
                    "input_id" if x.as_str().is_some_and(|s| s.starts_with("in-")) => {
                        out.insert(k, Value::from("in-*"));
                        continue;
                    }
                    _ => {}
                }
                out.insert(k, normalize(x));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

fn compare(name: &str, steps: Vec<Value>) {
    let py = common::reference_python();
    let theirs = reference(&py, &steps);
    let ours = palaver_side(&steps);
    assert_eq!(
        theirs.len(),
        steps.len(),
        "{name}: the harness stopped early"
    );
    let mut diffs = Vec::new();
    for (i, ((t, o), step)) in theirs.iter().zip(&ours).zip(&steps).enumerate() {
        let allowed = t.get_str("exception") == Some("ValueError")
            && o.get_str("error") == Some("task_state_conflict");
        let (t, o) = (
            to_string_ordered(&normalize(t)),
            to_string_ordered(&normalize(o)),
        );
        if t != o && !allowed {
            diffs.push(format!(
                "step {i} {}:\n  reference: {t}\n  palaver:   {o}",
                to_string_ordered(step)
            ));
        }
    }
    assert!(diffs.is_empty(), "{name}:\n{}", diffs.join("\n"));
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn task_submit_status_notes_and_cancel_match_the_reference() {
    let note = |id: &str| {
        obj! { "action" => "agent_note", "task_id" => "t1", "note_id" => id, "note_text" => "prefer short answers" }
    };
    let mut late = submit("t9", 'a', None);
    late.insert("expires_at_ms", Value::from(now_ms() - 120_000));
    compare(
        "submit/status/notes/cancel",
        vec![
            handle(query("t1", 0)),
            handle(submit("t1", 'a', None)),
            handle(submit("t1", 'a', None)),
            handle(submit("t1", 'b', None)),
            handle(late),
            handle(query("t1", 0)),
            handle(note("n1")),
            handle(note("n1")),
            handle(note("n2")),
            op("dispatch", Map::new()),
            handle(query("t1", 0)),
            handle(query("t1", 4)),
            op(
                "worker_note",
                obj! { "task_id" => "t1", "text" => "started" },
            ),
            handle(query("t1", 0)),
            handle(query("t1", 0)),
            handle(
                obj! { "action" => "cancel_request", "task_id" => "t1", "reason" => "no longer needed" },
            ),
            handle(query("t1", 0)),
            handle(obj! { "action" => "cancel_request", "task_id" => "t1" }),
            handle(obj! { "action" => "result_ack", "task_id" => "t1" }),
            handle(submit("t2", 'c', None)),
            handle(obj! { "action" => "cancel_request", "task_id" => "t2" }),
            handle(obj! { "action" => "cancel_request", "task_id" => "nope" }),
        ],
    );
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn task_artifacts_match_the_reference() {
    let big: Vec<u8> = (0..(256 * 1024 * 2 + 17))
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let small = b"just a few bytes".to_vec();
    let manifest = obj! { "artifacts" => vec![Value::Object(obj! {
        "artifact_id" => "in1", "files" => vec![file("data/big.bin", &big), file("small.txt", &small)],
    })] };
    let offer = |files: Vec<Value>| {
        obj! { "action" => "artifact_offer", "task_id" => "t1", "artifact_id" => "in1",
        "artifact_kind" => "input", "files" => files }
    };
    let good = || vec![file("data/big.bin", &big), file("small.txt", &small)];
    let put = |artifact: &str, chunks: Vec<Value>| {
        obj! { "action" => "artifact_put", "task_id" => "t1", "artifact_id" => artifact, "chunks" => chunks }
    };
    let pull = |artifact: &str, paths: Vec<Value>, cursor: Option<Map>| {
        let mut m = obj! { "action" => "artifact_pull", "task_id" => "t1", "artifact_id" => artifact, "paths" => paths };
        if let Some(c) = cursor {
            m.insert("cursor", Value::Object(c));
        }
        m
    };
    let mut lying = file("x.txt", &small);
    if let Value::Object(m) = &mut lying {
        m.insert("sha256", Value::from(sha256_hex(b"not it")));
    }
    let mut bad_chunk = chunk("small.txt", &small, 0);
    if let Value::Object(m) = &mut bad_chunk {
        m.insert("data", Value::from("!!!!"));
    }
    compare(
        "artifacts",
        vec![
            handle(submit("t1", 'a', Some(manifest))),
            handle(offer(vec![file("../escape", &small)])),
            handle(offer(vec![file("a//b", &small)])),
            handle(offer(vec![file("dup", &small), file("dup/", &small)])),
            handle(offer(vec![])),
            handle(offer(good())),
            handle(put(
                "in1",
                vec![
                    chunk("data/big.bin", &big, 2),
                    chunk("data/big.bin", &big, 0),
                ],
            )),
            handle(put("in1", vec![bad_chunk])),
            handle(put("in1", vec![chunk("other.txt", &small, 0)])),
            handle(put("nope", vec![chunk("small.txt", &small, 0)])),
            handle(put("in1", vec![])),
            handle(pull("in1", vec![Value::from("small.txt")], None)),
            handle(offer(good())),
            handle(put(
                "in1",
                vec![
                    chunk("small.txt", &small, 0),
                    chunk("data/big.bin", &big, 1),
                ],
            )),
            handle(query("t1", 0)),
            handle(pull(
                "in1",
                vec![Value::from("data/big.bin"), Value::from("small.txt")],
                None,
            )),
            handle(pull(
                "in1",
                vec![Value::from("data/big.bin")],
                Some(obj! { "data/big.bin" => 2 }),
            )),
            handle(pull("in1", vec![Value::from("../x")], None)),
            handle(pull("in1", vec![Value::from("missing.txt")], None)),
            handle(pull("result", vec![Value::from("a")], None)),
            handle(offer(good())),
            handle(
                obj! { "action" => "artifact_offer", "task_id" => "t1", "artifact_id" => "bad",
                "artifact_kind" => "input", "files" => vec![lying] },
            ),
            handle(put("bad", vec![chunk("x.txt", &small, 0)])),
            op("dispatch", Map::new()),
            handle(query("t1", 5)),
        ],
    );
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn task_results_inputs_and_receipts_match_the_reference() {
    let input = |id: &str| {
        obj! { "action" => "input_submit", "task_id" => "t1", "input_id" => id, "answer" => "blue" }
    };
    compare(
        "results/inputs/receipts",
        vec![
            handle(submit("t1", 'a', None)),
            handle(obj! { "action" => "result_ack", "task_id" => "t1" }),
            op("dispatch", Map::new()),
            handle(input("i-unknown")),
            op(
                "worker_ask",
                obj! { "task_id" => "t1", "question" => "which colour?" },
            ),
            handle(query("t1", 0)),
            handle(input("$input")),
            handle(query("t1", 5)),
            op(
                "write",
                obj! { "task_id" => "t1", "path" => "report/summary.md", "text" => "# Summary\nall good\n" },
            ),
            op(
                "write",
                obj! { "task_id" => "t1", "path" => "a.txt", "text" => "a" },
            ),
            op(
                "publish",
                obj! { "task_id" => "t1", "path" => "report/summary.md" },
            ),
            op("publish", obj! { "task_id" => "t1", "path" => "a.txt" }),
            op(
                "finish",
                obj! { "task_id" => "t1", "state" => "completed", "summary" => "summary written" },
            ),
            handle(query("t1", 0)),
            handle(
                obj! { "action" => "artifact_pull", "task_id" => "t1", "artifact_id" => "result",
                "paths" => vec![Value::from("report/summary.md"), Value::from("a.txt")] },
            ),
            handle(obj! { "action" => "result_ack", "task_id" => "t1" }),
            handle(obj! { "action" => "result_ack", "task_id" => "t1" }),
            handle(submit("t2", 'b', None)),
            op("dispatch", Map::new()),
            op(
                "finish",
                obj! { "task_id" => "t2", "state" => "failed", "summary" => "could not" },
            ),
            handle(query("t2", 0)),
            handle(obj! { "action" => "result_ack", "task_id" => "t2" }),
        ],
    );
}
