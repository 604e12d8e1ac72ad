//! The task hooks over an in-memory channel, and the task service message
//! by message.

use super::service::{Code, TaskService};
use super::transfer::CHUNK_SIZE;
use super::*;
use crate::engine::channel::Channel;
use crate::engine::{EngineConfig, MemorySink, SessionOutcome};
use crate::json::canonical::sha256_hex;
use base64::Engine;
use std::sync::Arc;

fn spec() -> &'static crate::spec::Spec {
    crate::library::bundled_spec("trusted-agent-task-v1").unwrap()
}

async fn play(
    host_opts: Map,
    guest_opts: Map,
) -> (
    SessionOutcome,
    SessionOutcome,
    Arc<MemorySink>,
    Arc<MemorySink>,
) {
    let (a, b) = Channel::memory_pair();
    let hs = Arc::new(MemorySink::default());
    let gs = Arc::new(MemorySink::default());
    let hctx = Ctx::new(Role::Host, ControlMode::Autonomous, host_opts).with_sink(hs.clone());
    let gctx = Ctx::new(Role::Guest, ControlMode::Autonomous, guest_opts).with_sink(gs.clone());
    let cfg = EngineConfig::default();
    let mut hh = crate::protocols::native_hooks_for_alias("trusted-agent-task-v1").unwrap();
    let mut gh = crate::protocols::native_hooks_for_alias("trusted-agent-task-v1").unwrap();
    let (h, g) = tokio::join!(
        crate::engine::run(spec(), hh.as_mut(), a, &hctx, &cfg),
        crate::engine::run(spec(), gh.as_mut(), b, &gctx, &cfg),
    );
    (h, g, hs, gs)
}

#[tokio::test]
async fn the_generic_exchange_is_two_queries_and_two_answers() {
    let (h, g, hs, gs) = play(Map::new(), Map::new()).await;
    assert!(h.completed && g.completed, "{h:?} {g:?}");
    assert_eq!((h.winner.as_deref(), g.winner.as_deref()), (None, None));
    let want = [
        ("received", "status_query"),
        ("sent", "task_status"),
        ("received", "status_query"),
        ("sent", "task_status"),
    ];
    let got = hs.frames();
    assert_eq!(
        got.iter()
            .map(|(d, a)| (d.as_str(), a.as_str()))
            .collect::<Vec<_>>(),
        want
    );
    assert_eq!(gs.frames().len(), 4);
    let view = TaskView::from_snapshot(&gs.snapshot.lock().unwrap()).unwrap();
    assert_eq!(view.task_id, DEMO_TASK);
    assert_eq!(
        (view.state.as_deref(), view.revision),
        (Some("received"), Some(0))
    );
}

#[tokio::test]
async fn collab_task_id_names_the_task_asked_about() {
    let opts = obj! { "collab_task_id" => "job-7" };
    let (h, g, hs, _) = play(Map::new(), opts).await;
    assert!(h.completed && g.completed);
    let view = TaskView::from_snapshot(&hs.snapshot.lock().unwrap()).unwrap();
    assert_eq!(view.task_id, "job-7");
}

#[tokio::test]
async fn a_host_with_a_data_dir_refuses_an_unknown_task_at_the_join() {
    let d = tempfile::tempdir().unwrap();
    let opts = obj! { "collab_data_dir" => d.path().display().to_string() };
    let (h, g, hs, _) = play(opts, Map::new()).await;
    // The host's answer is an error that ends its side, completed; the
    // guest stops at the peer's error.
    assert!(h.completed, "{h:?}");
    assert!(!g.completed);
    assert_eq!(g.reason, "peer_error");
    let view = TaskView::from_snapshot(&hs.snapshot.lock().unwrap()).unwrap();
    assert_eq!(view.error.as_deref(), Some("unknown_task"));
}

#[tokio::test]
async fn a_host_with_a_data_dir_reports_a_stored_task() {
    let d = tempfile::tempdir().unwrap();
    let mut svc = TaskService::open(d.path()).unwrap();
    svc.handle(&submit("job-1", "aa", None), ENGINE_GUEST)
        .unwrap();
    svc.dispatch_queued().unwrap();
    drop(svc);
    let host = obj! { "collab_data_dir" => d.path().display().to_string() };
    let (h, g, _, gs) = play(host, obj! { "collab_task_id" => "job-1" }).await;
    assert!(g.completed, "{g:?}");
    // The second answer is no end for a service host: the guest completed
    // and left, so the host saw its peer go.
    assert!(!h.completed);
    let view = TaskView::from_snapshot(&gs.snapshot.lock().unwrap()).unwrap();
    assert_eq!(view.state.as_deref(), Some("waiting_local_operator"));
    assert_eq!(
        view.steps
            .iter()
            .map(|s| s.kind.as_str())
            .collect::<Vec<_>>(),
        [
            "received",
            "queued",
            "dispatching",
            "running",
            "waiting_local_operator"
        ]
    );
}

#[test]
fn host_metadata_is_the_references() {
    let m = TrustedAgentTask::default().host_metadata();
    assert_eq!(
        (
            m.display_name.as_str(),
            m.tags.as_str(),
            m.invite_type.as_str()
        ),
        ("Trusted Agent Task", "collab,trusted-agent-task", "supply")
    );
    assert!(m.default_options.is_empty());
}

// -- the service -------------------------------------------------------------

const DIGEST: &str = "aa";

fn digest(c: char) -> String {
    std::iter::repeat_n(c, 64).collect()
}

fn submit(id: &str, d: &str, manifest: Option<Map>) -> Map {
    let mut m = obj! {
        "action" => "task_submit", "task_id" => id, "request_digest" => digest(d.chars().next().unwrap()),
        "task_goal" => "write a haiku", "execution_class" => "assist",
        "expires_at_ms" => store::now_ms() + 60_000,
    };
    if let Some(man) = manifest {
        m.insert("input_manifest", Value::Object(man));
    }
    m
}

fn svc() -> (tempfile::TempDir, TaskService) {
    let d = tempfile::tempdir().unwrap();
    let s = TaskService::open(d.path()).unwrap();
    (d, s)
}

fn code(r: Result<Map, service::ServiceError>) -> &'static str {
    r.unwrap_err().code.as_str()
}

fn query(id: &str, after: i64) -> Map {
    obj! { "action" => "status_query", "task_id" => id, "after_event_id" => after }
}

fn kinds(m: &Map) -> Vec<String> {
    m.get("events")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|e| e.get_str("kind").unwrap().to_owned())
        .collect()
}

#[test]
fn submit_is_durable_idempotent_and_checks_its_digest_and_deadline() {
    let (_d, mut s) = svc();
    let r = s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    assert_eq!(r.get_str("state"), Some("queued"));
    assert_eq!(r.get_str("reason_code"), Some("ok"));
    assert_eq!(r.get("revision").and_then(Value::as_i64), Some(2));
    let again = s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    assert_eq!(again.get_str("reason_code"), Some("duplicate"));
    assert_eq!(again.get("accepted"), Some(&Value::Bool(true)));
    assert_eq!(
        code(s.handle(&submit("t", "b", None), "dev")),
        "idempotency_conflict"
    );
    // Another device's namespace: the same id is another task.
    assert_eq!(
        s.handle(&submit("t", "b", None), "other")
            .unwrap()
            .get_str("reason_code"),
        Some("ok")
    );
    let mut late = submit("u", DIGEST, None);
    late.insert("expires_at_ms", Value::from(store::now_ms() - 61_000));
    assert_eq!(code(s.handle(&late, "dev")), "message_expired");
    let mut within = submit("v", DIGEST, None);
    within.insert("expires_at_ms", Value::from(store::now_ms() - 30_000));
    assert!(s.handle(&within, "dev").is_ok());
    assert_eq!(code(s.handle(&query("nope", 0), "dev")), "unknown_task");
}

#[test]
fn status_carries_events_after_the_cursor_and_delivers_worker_notes_once() {
    let (_d, mut s) = svc();
    s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    s.dispatch_queued().unwrap();
    let st = s.handle(&query("t", 0), "dev").unwrap();
    assert_eq!(
        kinds(&st),
        [
            "received",
            "queued",
            "dispatching",
            "running",
            "waiting_local_operator"
        ]
    );
    assert_eq!(st.get("revision").and_then(Value::as_i64), Some(5));
    let exec = st.get("execution").and_then(Value::as_object).unwrap();
    assert_eq!(exec.get_str("adapter"), Some("file"));
    assert_eq!(exec.get_str("status"), Some("submitted"));
    assert!(s.store().task_root("dev", "t").join("TASK.md").is_file());
    assert_eq!(
        kinds(&s.handle(&query("t", 3), "dev").unwrap()),
        ["running", "waiting_local_operator"]
    );
    s.worker_note("dev", "t", "halfway").unwrap();
    let st = s.handle(&query("t", 5), "dev").unwrap();
    let notes = st.get("notes").and_then(Value::as_array).unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].get_str("text"), Some("halfway"));
    assert_eq!(kinds(&st), ["worker_note"]);
    let st = s.handle(&query("t", 0), "dev").unwrap();
    assert!(
        st.get("notes")
            .and_then(Value::as_array)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn notes_from_the_coordinator_are_acknowledged_once() {
    let (_d, mut s) = svc();
    s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    let note = obj! { "action" => "agent_note", "task_id" => "t", "note_id" => "n1", "note_text" => "use tabs" };
    let a = s.handle(&note, "dev").unwrap();
    assert_eq!(a.get("duplicate"), Some(&Value::Bool(false)));
    let b = s.handle(&note, "dev").unwrap();
    assert_eq!(b.get("duplicate"), Some(&Value::Bool(true)));
    let st = s.handle(&query("t", 0), "dev").unwrap();
    assert_eq!(
        kinds(&st)
            .iter()
            .filter(|k| *k == "coordinator_note")
            .count(),
        1
    );
}

fn b64(raw: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(raw)
}

fn chunk(path: &str, data: &[u8], index: u64) -> Value {
    let start = (index * CHUNK_SIZE) as usize;
    let end = (start + CHUNK_SIZE as usize).min(data.len());
    let raw = &data[start..end];
    Value::Object(obj! {
        "path" => path, "offset" => start, "size" => raw.len(), "sha256" => sha256_hex(raw), "data" => b64(raw),
    })
}

fn file(path: &str, data: &[u8]) -> Value {
    Value::Object(obj! { "path" => path, "size" => data.len(), "sha256" => sha256_hex(data) })
}

#[test]
fn inputs_arrive_by_chunks_verify_unpack_and_queue_the_task() {
    let (_d, mut s) = svc();
    let big: Vec<u8> = (0..(CHUNK_SIZE as usize * 2 + 3))
        .map(|i| (i % 97) as u8)
        .collect();
    let manifest = obj! { "artifacts" => vec![Value::Object(obj! {
        "artifact_id" => "in1", "files" => vec![file("src/big.bin", &big), file("empty", b"")],
    })] };
    let r = s
        .handle(&submit("t", DIGEST, Some(manifest)), "dev")
        .unwrap();
    assert_eq!(r.get_str("state"), Some("waiting_inputs"));
    let offer = obj! {
        "action" => "artifact_offer", "task_id" => "t", "artifact_id" => "in1", "artifact_kind" => "input",
        "files" => vec![file("src/big.bin", &big), file("empty", b"")],
    };
    let ack = s.handle(&offer, "dev").unwrap();
    assert_eq!(ack.get_str("artifact_state"), Some("partial"));
    let put = |chunks: Vec<Value>| obj! { "action" => "artifact_put", "task_id" => "t", "artifact_id" => "in1", "chunks" => chunks };
    let ack = s
        .handle(
            &put(vec![
                chunk("src/big.bin", &big, 2),
                chunk("src/big.bin", &big, 0),
            ]),
            "dev",
        )
        .unwrap();
    assert_eq!(ack.get_str("artifact_state"), Some("partial"));
    let files = ack.get("files").and_then(Value::as_array).unwrap();
    assert_eq!(
        files[0].get("received_chunks"),
        Some(&Value::Array(vec![Value::from(0), Value::from(2)]))
    );
    // A re-offer keeps what arrived.
    let again = s.handle(&offer, "dev").unwrap();
    assert_eq!(
        again.get("files").and_then(Value::as_array).unwrap()[1].get("complete"),
        Some(&Value::Bool(true))
    );
    // Pulling an unverified artifact is refused.
    let pull = obj! { "action" => "artifact_pull", "task_id" => "t", "artifact_id" => "in1", "paths" => vec![Value::from("src/big.bin")] };
    assert_eq!(code(s.handle(&pull, "dev")), "artifact_incomplete");
    let ack = s
        .handle(&put(vec![chunk("src/big.bin", &big, 1)]), "dev")
        .unwrap();
    assert_eq!(ack.get_str("artifact_state"), Some("complete"));
    let ws = s.store().task_root("dev", "t").join("workspace");
    assert_eq!(std::fs::read(ws.join("src/big.bin")).unwrap(), big);
    assert_eq!(std::fs::read(ws.join("empty")).unwrap(), b"");
    let st = s.handle(&query("t", 0), "dev").unwrap();
    assert_eq!(st.get_str("state"), Some("queued"));
    assert!(kinds(&st).contains(&"inputs_ready".to_owned()));
    // The verified artifact can be pulled back, 4 chunks a batch at most.
    let data = s.handle(&pull, "dev").unwrap();
    assert_eq!(data.get("done"), Some(&Value::Bool(true)));
    let chunks = data.get("chunks").and_then(Value::as_array).unwrap();
    let back: Vec<u8> = chunks
        .iter()
        .flat_map(|c| {
            base64::engine::general_purpose::STANDARD
                .decode(c.get_str("data").unwrap())
                .unwrap()
        })
        .collect();
    assert_eq!(back, big);
}

#[test]
fn corrupt_unsafe_and_unknown_chunks_are_refused_with_their_codes() {
    let (_d, mut s) = svc();
    s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    let data = b"hello world".to_vec();
    let offer = |files: Vec<Value>| {
        obj! {
            "action" => "artifact_offer", "task_id" => "t", "artifact_id" => "a", "artifact_kind" => "input", "files" => files,
        }
    };
    assert_eq!(
        code(s.handle(&offer(vec![file("../x", &data)]), "dev")),
        "path_unsafe"
    );
    assert_eq!(
        code(s.handle(&offer(vec![file("/abs", &data)]), "dev")),
        "path_unsafe"
    );
    assert_eq!(
        code(s.handle(&offer(vec![file("x", &data), file("x/", &data)]), "dev")),
        "path_unsafe"
    );
    assert_eq!(code(s.handle(&offer(vec![]), "dev")), "internal_error");
    let mut neg = file("x", &data);
    if let Value::Object(m) = &mut neg {
        m.insert("size", Value::from(-1));
    }
    assert_eq!(code(s.handle(&offer(vec![neg]), "dev")), "path_unsafe");
    let too_many: Vec<Value> = (0..513).map(|i| file(&format!("f{i}"), &data)).collect();
    assert_eq!(code(s.handle(&offer(too_many), "dev")), "internal_error");
    // A manifest whose file claims a different digest: the chunks pass,
    // the file check fails.
    let mut lying = file("x", &data);
    if let Value::Object(m) = &mut lying {
        m.insert("sha256", Value::from(sha256_hex(b"something else")));
    }
    s.handle(&offer(vec![lying]), "dev").unwrap();
    let put = |chunks: Vec<Value>| obj! { "action" => "artifact_put", "task_id" => "t", "artifact_id" => "a", "chunks" => chunks };
    let ack = s.handle(&put(vec![chunk("x", &data, 0)]), "dev").unwrap();
    assert_eq!(ack.get_str("artifact_state"), Some("verified_failed"));
    assert_eq!(code(s.handle(&put(vec![]), "dev")), "internal_error");
    assert_eq!(
        code(s.handle(&put(vec![chunk("y", &data, 0)]), "dev")),
        "path_unsafe"
    );
    let nine: Vec<Value> = (0..9).map(|_| chunk("x", &data, 0)).collect();
    assert_eq!(code(s.handle(&put(nine), "dev")), "internal_error");
    let mut bad = chunk("x", &data, 0);
    if let Value::Object(m) = &mut bad {
        m.insert("data", Value::from(b64(b"hello WORLD")));
    }
    assert_eq!(code(s.handle(&put(vec![bad]), "dev")), "path_unsafe");
    let unknown = obj! { "action" => "artifact_put", "task_id" => "t", "artifact_id" => "zz", "chunks" => vec![chunk("x", &data, 0)] };
    assert_eq!(code(s.handle(&unknown, "dev")), "artifact_unknown");
    // No disk left: the offer is refused before anything is written.
    s.set_free(|_| Some(1024));
    assert_eq!(
        code(s.handle(&offer(vec![file("z", &data)]), "dev")),
        "storage_full"
    );
}

#[test]
fn results_are_acknowledged_pulled_and_receipted() {
    let (_d, mut s) = svc();
    s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    let ack = obj! { "action" => "result_ack", "task_id" => "t" };
    assert_eq!(code(s.handle(&ack, "dev")), "task_state_conflict");
    let pull = obj! { "action" => "artifact_pull", "task_id" => "t", "artifact_id" => "result", "paths" => vec![Value::from("poem.txt")] };
    assert_eq!(code(s.handle(&pull, "dev")), "artifact_incomplete");
    s.dispatch_queued().unwrap();
    let root = s.store().task_root("dev", "t");
    std::fs::write(
        root.join("workspace/poem.txt"),
        "old pond\nfrog jumps\nsplash\n",
    )
    .unwrap();
    s.worker_publish("dev", "t", "poem.txt").unwrap();
    assert_eq!(
        s.worker_publish("dev", "t", "../etc").unwrap_err().code,
        Code::PathUnsafe
    );
    s.worker_finish("dev", "t", "completed", "a haiku").unwrap();
    let st = s.handle(&query("t", 0), "dev").unwrap();
    assert_eq!(st.get_str("state"), Some("completed"));
    let files = st
        .get("result_manifest")
        .and_then(|m| m.get("files"))
        .and_then(Value::as_array)
        .unwrap();
    assert_eq!(files[0].get_str("path"), Some("poem.txt"));
    let data = s.handle(&pull, "dev").unwrap();
    assert_eq!(data.get("done"), Some(&Value::Bool(true)));
    let receipt = s.handle(&ack, "dev").unwrap();
    assert_eq!(receipt.get_str("action"), Some("receipt"));
    assert_eq!(receipt.get_str("result_state"), Some("completed"));
    assert_eq!(receipt.get_str("summary"), Some("a haiku"));
    // A final task is cancelled no further.
    let cancel = obj! { "action" => "cancel_request", "task_id" => "t" };
    assert_eq!(
        s.handle(&cancel, "dev").unwrap().get_str("state"),
        Some("completed")
    );
}

#[test]
fn cancel_and_inputs_follow_the_state_machine() {
    let (_d, mut s) = svc();
    s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    let cancel =
        obj! { "action" => "cancel_request", "task_id" => "t", "reason" => "changed my mind" };
    assert_eq!(
        s.handle(&cancel, "dev").unwrap().get_str("state"),
        Some("cancelled")
    );
    let input = obj! { "action" => "input_submit", "task_id" => "t", "input_id" => "i1", "answer" => "yes" };
    assert_eq!(code(s.handle(&input, "dev")), "task_state_conflict");
    s.handle(&submit("u", DIGEST, None), "dev").unwrap();
    s.dispatch_queued().unwrap();
    let id = s.worker_ask("dev", "u", "which colour?").unwrap();
    let st = s.handle(&query("u", 0), "dev").unwrap();
    assert_eq!(
        st.get("input_request").and_then(|q| q.get_str("question")),
        Some("which colour?")
    );
    let answer = obj! { "action" => "input_submit", "task_id" => "u", "input_id" => id.as_str(), "answer" => "blue" };
    assert_eq!(
        s.handle(&answer, "dev").unwrap().get_str("action"),
        Some("input_ack")
    );
    assert!(
        s.handle(&query("u", 0), "dev")
            .unwrap()
            .get("input_request")
            .is_none()
    );
    // waiting_local_operator cancels at once.
    let cancel_u = obj! { "action" => "cancel_request", "task_id" => "u" };
    assert_eq!(
        s.handle(&cancel_u, "dev").unwrap().get_str("state"),
        Some("cancelled")
    );
}

#[test]
fn a_restart_reconciles_tasks_caught_mid_dispatch() {
    let d = tempfile::tempdir().unwrap();
    let s = TaskService::open(d.path()).unwrap();
    let st = s.store();
    st.insert_task("dev", "a", "x", "g", "assist", None, "in")
        .unwrap();
    st.transition("dev", "a", "queued", None, |_| {}).unwrap();
    st.transition("dev", "a", "dispatching", None, |_| {})
        .unwrap();
    st.insert_task("dev", "b", "x", "g", "assist", None, "in")
        .unwrap();
    st.transition("dev", "b", "queued", None, |_| {}).unwrap();
    st.transition("dev", "b", "dispatching", None, |_| {})
        .unwrap();
    st.put_invocation(
        "dev",
        "b",
        &store::Invocation {
            id: "inv-1".into(),
            adapter: "file".into(),
            handle: "file-inv-1".into(),
            status: "submitted".into(),
            started_at: 1,
            finished_at: None,
        },
    )
    .unwrap();
    drop(s);
    let s = TaskService::open(d.path()).unwrap();
    assert_eq!(
        s.store().get_task("dev", "a").unwrap().unwrap().state,
        "queued"
    );
    // `dispatching` has no edge to `execution_unknown`: the task stays
    // where it was (as the reference's does) and the operator is told.
    assert_eq!(
        s.store().get_task("dev", "b").unwrap().unwrap().state,
        "dispatching"
    );
    assert_eq!(s.diagnostics().len(), 1);
    st_running_goes_to_execution_unknown();
}

fn st_running_goes_to_execution_unknown() {
    let d = tempfile::tempdir().unwrap();
    let mut s = TaskService::open(d.path()).unwrap();
    s.handle(&submit("r", DIGEST, None), "dev").unwrap();
    s.dispatch_queued().unwrap();
    s.store()
        .transition("dev", "r", "running", None, |_| {})
        .unwrap();
    drop(s);
    let s = TaskService::open(d.path()).unwrap();
    assert_eq!(
        s.store().get_task("dev", "r").unwrap().unwrap().state,
        "execution_unknown"
    );
}

#[test]
fn unknown_actions_and_junk_fields_are_refused_without_a_panic() {
    let (_d, mut s) = svc();
    assert_eq!(
        code(s.handle(&obj! { "action" => "task_status" }, "dev")),
        "internal_error"
    );
    assert_eq!(code(s.handle(&Map::new(), "dev")), "internal_error");
    s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    let odd = obj! { "action" => "status_query", "task_id" => "t", "after_event_id" => "seven" };
    assert_eq!(
        s.handle(&odd, "dev")
            .unwrap()
            .get("events")
            .and_then(Value::as_array)
            .map(Vec::len),
        Some(2)
    );
    let pull =
        obj! { "action" => "artifact_pull", "task_id" => "t", "artifact_id" => 5, "paths" => "x" };
    assert_eq!(code(s.handle(&pull, "dev")), "artifact_unknown");
    let offer = obj! { "action" => "artifact_offer", "task_id" => "t", "artifact_id" => "a", "files" => vec![Value::from(1)] };
    assert_eq!(code(s.handle(&offer, "dev")), "path_unsafe");
}

#[test]
fn worker_notes_beyond_the_specs_budget_wait_for_the_next_status() {
    let (_d, mut s) = svc();
    s.handle(&submit("t", DIGEST, None), "dev").unwrap();
    let long = "é".repeat(40_000); // 80 000 bytes each
    for _ in 0..10 {
        s.worker_note("dev", "t", &long).unwrap();
    }
    let spec = crate::library::bundled_spec("trusted-agent-task-v1").unwrap();
    let mut delivered = 0;
    for _ in 0..10 {
        let st = s.handle(&query("t", 0), "dev").unwrap();
        spec.validate_object(&st, Some("host_to_guest"), None)
            .unwrap();
        let n = st.get("notes").and_then(Value::as_array).unwrap().len();
        if n == 0 {
            break;
        }
        delivered += n;
    }
    assert_eq!(delivered, 10);
}
