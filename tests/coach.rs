//! The coach service against a stand-in agent CLI (tests/coach/fake_agent.py):
//! templates, resume, streaming, timeout, cancellation, injection safety,
//! a missing CLI, reset and adoption as a whisper.

use palaver::services::coach::{
    AgentKind, Coach, CoachConfig, CoachError, Placeholders, build_argv, split_words,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fake() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/coach/fake_agent.py")
        .to_string_lossy()
        .into_owned()
}

fn records(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A coach whose agent is the fake one: `opts` go before the template's words.
fn coach(data: &Path, opts: &str, new: &str, resume: Option<&str>) -> (Coach, PathBuf) {
    let log = data.join("agent.log");
    let pre = format!("{} --log {} {opts}", fake(), log.display());
    let cfg = CoachConfig::custom(
        &format!("{pre} {new}"),
        resume.map(|r| format!("{pre} {r}")).as_deref(),
    )
    .unwrap();
    (Coach::open(data, cfg).unwrap(), log)
}

fn never() -> std::future::Pending<()> {
    std::future::pending()
}

/// The process is gone: no /proc entry, or a zombie waiting for its reaper.
fn gone(pid: u64) -> bool {
    for _ in 0..50 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')) =>
            {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

#[test]
fn templates_per_agent() {
    let p = Placeholders {
        session_id: "SID",
        prompt: "a b",
        coach_skill_text: Some("skill text"),
        coach_skill_file: Some("/w/COACH.md"),
        coach_output_file: Some("/d/out.md"),
    };
    let argv = |kind: AgentKind, resume: bool| {
        let c = CoachConfig::for_agent(kind);
        let t = if resume {
            c.resume_command
        } else {
            c.new_command
        };
        build_argv(&t, &p).unwrap()
    };
    let v = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        argv(AgentKind::ClaudeCode, false),
        v("claude --session-id SID --system-prompt-file /w/COACH.md -p")
    );
    assert_eq!(
        argv(AgentKind::ClaudeCode, true),
        v("claude --resume SID --system-prompt-file /w/COACH.md -p")
    );
    assert_eq!(
        argv(AgentKind::Codex, false),
        v(
            "codex exec --json --ignore-user-config --ignore-rules --skip-git-repo-check --sandbox read-only -o /d/out.md -"
        )
    );
    assert_eq!(
        argv(AgentKind::Codex, true),
        v(
            "codex exec --sandbox read-only resume --json --ignore-user-config --ignore-rules --skip-git-repo-check -o /d/out.md SID -"
        )
    );
    assert_eq!(
        argv(AgentKind::Opencode, false),
        vec!["opencode", "-p", "a b"]
    );
    assert_eq!(
        argv(AgentKind::Opencode, true),
        vec!["opencode", "-p", "a b"]
    );
    // Custom: words split like shlex, placeholders inside words replaced.
    assert_eq!(
        build_argv("my 'x y' --s={session_id} \"q\\\"\" {coach_skill_text}", &p).unwrap(),
        vec!["my", "x y", "--s=SID", "q\"", "skill text"]
    );
    assert!(split_words("a 'b").is_err());
    assert!(split_words("   ").is_err());
    assert_eq!(CoachConfig::for_agent(AgentKind::Custom).binary(), None);
    assert_eq!(
        CoachConfig::default().timeout,
        Duration::from_secs(180),
        "the reference's default"
    );
}

#[test]
fn config_parts_are_checked() {
    assert!(CoachConfig::from_parts(Some("custom"), None, None, None).is_err());
    assert!(CoachConfig::from_parts(Some("gpt"), None, None, None).is_err());
    assert!(CoachConfig::from_parts(None, None, None, Some(0.0)).is_err());
    assert!(CoachConfig::from_parts(None, None, None, Some(f64::NAN)).is_err());
    assert!(CoachConfig::from_parts(None, None, None, Some(1e12)).is_err());
    assert!(CoachConfig::from_parts(Some("custom"), Some("a 'b"), None, None).is_err());
    let c = CoachConfig::from_parts(Some("codex"), None, None, Some(30.0)).unwrap();
    assert_eq!(c.agent, AgentKind::Codex);
    assert_eq!(c.timeout, Duration::from_secs(30));
    assert_eq!(c.binary().as_deref(), Some("codex"));
    let c = CoachConfig::from_parts(Some("custom"), Some("x {prompt}"), None, None).unwrap();
    assert_eq!(c.resume_command, "x {prompt}");
}

#[tokio::test]
async fn resume_passes_the_session_id_and_stdin_carries_the_prompt() {
    let d = tempfile::tempdir().unwrap();
    let (c, log) = coach(
        d.path(),
        "--delay 0",
        "--session-id {session_id} -p",
        Some("--resume {session_id} -p"),
    );
    let r1 = c.turn("first?", None, |_| {}, never()).await.unwrap();
    let sid = c.session_id().expect("a session id after the first turn");
    assert!(r1.contains(&format!("session={sid}")), "{r1}");
    let r2 = c.turn("second?", None, |_| {}, never()).await.unwrap();
    assert!(r2.contains(&format!("session={sid}")), "{r2}");
    let recs = records(&log);
    assert_eq!(recs.len(), 2);
    assert_eq!(
        recs[0]["argv"],
        serde_json::json!(["--session-id", sid, "-p"])
    );
    assert_eq!(recs[1]["argv"], serde_json::json!(["--resume", sid, "-p"]));
    let stdin = recs[1]["stdin"].as_str().unwrap();
    assert!(stdin.ends_with("## User question\nsecond?"), "{stdin}");
    // The conversation persists in the data dir, across Coach values.
    let again = Coach::open(d.path(), c.config.clone()).unwrap();
    let roles: Vec<String> = again.history().into_iter().map(|e| e.role).collect();
    assert_eq!(roles, ["user", "coach", "user", "coach"]);
    assert_eq!(again.last_reply().as_deref(), Some(r2.as_str()));
    // Reset: a new conversation next turn.
    again.reset().unwrap();
    assert!(again.history().is_empty());
    assert_eq!(again.session_id(), None);
    again.turn("third?", None, |_| {}, never()).await.unwrap();
    let recs = records(&log);
    assert_eq!(recs[2]["argv"][0], "--session-id");
    assert_ne!(recs[2]["argv"][1], serde_json::json!(sid));
}

#[tokio::test]
async fn a_lost_session_starts_a_new_one() {
    let d = tempfile::tempdir().unwrap();
    let (c, log) = coach(
        d.path(),
        "--delay 0 --fail-resume",
        "--session-id {session_id} -p",
        Some("--resume {session_id} -p"),
    );
    c.turn("one", None, |_| {}, never()).await.unwrap();
    let first = c.session_id().unwrap();
    let r = c.turn("two", None, |_| {}, never()).await.unwrap();
    assert!(r.starts_with("Coach here."));
    let recs = records(&log);
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[1]["argv"][0], "--resume");
    assert_eq!(recs[2]["argv"][0], "--session-id");
    assert_ne!(c.session_id().unwrap(), first);
}

#[tokio::test]
async fn lines_stream_before_the_process_ends() {
    let d = tempfile::tempdir().unwrap();
    let (c, _) = coach(d.path(), "--delay 0.4", "{prompt}", None);
    let start = Instant::now();
    let mut seen: Vec<(String, Duration)> = Vec::new();
    let reply = c
        .turn(
            "go",
            None,
            |l| seen.push((l.to_owned(), start.elapsed())),
            never(),
        )
        .await
        .unwrap();
    let end = start.elapsed();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[0].0, "Coach here.");
    assert!(
        end - seen[0].1 >= Duration::from_millis(700),
        "first line at {:?}, end at {end:?}",
        seen[0].1
    );
    assert_eq!(reply.lines().count(), 3);
}

#[tokio::test]
async fn a_slow_turn_times_out_and_the_process_is_gone() {
    let d = tempfile::tempdir().unwrap();
    let (mut c, log) = coach(d.path(), "--sleep 30", "{prompt}", None);
    c.config.timeout = Duration::from_millis(800);
    let start = Instant::now();
    let e = c.turn("slow", None, |_| {}, never()).await.unwrap_err();
    assert_eq!(e, CoachError::Timeout(Duration::from_millis(800)));
    assert!(start.elapsed() < Duration::from_secs(10));
    let pid = records(&log)[0]["pid"].as_u64().unwrap();
    assert!(gone(pid), "pid {pid} still runs");
    let h = c.history();
    assert_eq!(h.last().unwrap().role, "error");
    assert!(h.last().unwrap().text.contains("no reply within"));
}

#[tokio::test]
async fn a_cancelled_turn_kills_the_process() {
    let d = tempfile::tempdir().unwrap();
    let (c, log) = coach(d.path(), "--sleep 30", "{prompt}", None);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let turn = c.turn("stop me", None, |_| {}, async move {
        let _ = rx.await;
    });
    let canceller = async {
        // Wait for the agent to start (it logs first).
        while records(&log).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = tx.send(());
    };
    let (r, ()) = tokio::join!(turn, canceller);
    assert_eq!(r.unwrap_err(), CoachError::Cancelled);
    let pid = records(&log)[0]["pid"].as_u64().unwrap();
    assert!(gone(pid), "pid {pid} still runs");
}

#[tokio::test]
async fn the_prompt_is_one_argument_and_the_workspace_holds_only_instructions() {
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("snapshot.json"),
        r#"{"phase":"play","round":3,"score":{"host":1,"guest":2},"secret":"x","last_event":{"summary":"guest revealed rock"}}"#,
    )
    .unwrap();
    let mut events = String::new();
    events.push_str("{\"type\":\"peer_joined\",\"ts\":1,\"summary\":\"peer joined\"}\n");
    events.push_str("{\"type\":\"protocol_message\",\"ts\":2,\"summary\":\"guest played rock\"}\n");
    for i in 0..40 {
        events.push_str(&format!(
            "{{\"type\":\"local_decision_window_started\",\"ts\":{i},\"summary\":\"window {i}\"}}\n"
        ));
    }
    events.push_str("not json\n");
    std::fs::write(state.join("events.jsonl"), events).unwrap();
    let (c, log) = coach(d.path(), "--delay 0", "--ask {prompt}", None);
    let question = "it's \"quoted\" $(touch /tmp/pwned) `id`; rm -rf / && echo\nsecond line\\n";
    c.turn(question, Some(&state), |_| {}, never())
        .await
        .unwrap();
    let rec = &records(&log)[0];
    let argv = rec["argv"].as_array().unwrap();
    assert_eq!(argv.len(), 2, "{argv:?}");
    assert_eq!(argv[0], "--ask");
    let prompt = argv[1].as_str().unwrap();
    assert!(
        prompt.ends_with(&format!("## User question\n{}", question.trim())),
        "{prompt}"
    );
    assert!(
        prompt.contains("phase=play; round=3; score={'host': 1, 'guest': 2}"),
        "{prompt}"
    );
    assert!(prompt.contains("last=guest revealed rock"));
    assert!(
        prompt.contains("- [1] peer joined\n- [2] guest played rock"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("window"),
        "decision-window bookkeeping left out"
    );
    assert!(!prompt.contains("secret"));
    assert!(
        prompt.contains("tactics coach"),
        "the instructions lead the prompt"
    );
    assert_eq!(
        rec["stdin"], "",
        "stdin is closed when the prompt is an argument"
    );
    assert_eq!(rec["files"], serde_json::json!(["COACH.md"]));
    assert_eq!(
        Path::new(rec["cwd"].as_str().unwrap()),
        c.workspace().canonicalize().unwrap()
    );
}

#[tokio::test]
async fn a_missing_cli_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let cfg = CoachConfig::custom("palaver-no-such-agent-cli {prompt}", None).unwrap();
    let c = Coach::open(d.path(), cfg).unwrap();
    let e = c.turn("hi", None, |_| {}, never()).await.unwrap_err();
    assert!(matches!(e, CoachError::Missing { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("`palaver-no-such-agent-cli` was not found on PATH"),
        "{msg}"
    );
    assert!(msg.contains("[coach]"), "{msg}");
    let c = Coach::open(
        d.path(),
        CoachConfig::custom("/nonexistent/agent", None).unwrap(),
    )
    .unwrap();
    assert!(matches!(
        c.turn("hi", None, |_| {}, never()).await.unwrap_err(),
        CoachError::Missing { .. }
    ));
}

#[tokio::test]
async fn an_adopted_reply_lands_in_whispers_jsonl() {
    let d = tempfile::tempdir().unwrap();
    let child = d.path().join("state");
    std::fs::create_dir_all(&child).unwrap();
    let (c, _) = coach(d.path(), "--delay 0", "{prompt}", None);
    c.turn("what now?", None, |_| {}, never()).await.unwrap();
    let reply = c.last_reply().unwrap();
    let w = Coach::adopt(&child, &reply, None).unwrap();
    assert_eq!(w.entry.get("role").and_then(|v| v.as_str()), Some("user"));
    let log = std::fs::read_to_string(child.join("whispers.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(line["text"], reply.trim());
    assert_eq!(line["origin"], "coach");
    assert!(Coach::adopt(&child, "   ", None).is_err());
}

#[tokio::test]
async fn codex_json_gives_the_thread_id_and_the_last_message() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("codex.log");
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/coach/fake_codex.py")
        .to_string_lossy()
        .into_owned();
    let pre = format!("{bin} --log {}", log.display());
    let cfg = CoachConfig {
        agent: AgentKind::Codex,
        new_command: format!("{pre} exec --json -o {{coach_output_file}} -"),
        resume_command: format!(
            "{pre} exec resume --json -o {{coach_output_file}} {{session_id}} -"
        ),
        ..CoachConfig::for_agent(AgentKind::Codex)
    };
    let c = Coach::open(d.path(), cfg).unwrap();
    let mut lines = Vec::new();
    let r = c
        .turn("what?", None, |l| lines.push(l.to_owned()), never())
        .await
        .unwrap();
    assert_eq!(r, "Play paper.");
    assert_eq!(lines, ["Play paper."], "only agent messages stream");
    assert_eq!(c.session_id().as_deref(), Some("thread-42"));
    c.turn("and now?", None, |_| {}, never()).await.unwrap();
    let recs = records(&log);
    let argv: Vec<&str> = recs[1]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(argv[..3], ["exec", "resume", "--json"]);
    assert_eq!(argv[argv.len() - 2..], ["thread-42", "-"]);
    assert!(recs[1]["stdin"].as_str().unwrap().ends_with("and now?"));
    // The output file lives outside the workspace and is removed.
    assert!(!argv[4].starts_with(&*c.workspace().to_string_lossy()));
    assert!(!Path::new(argv[4]).exists());
}
