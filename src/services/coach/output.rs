//! Reading the agent's output: `codex exec --json` events (the thread id,
//! errors, the agent's messages) and the stderr of a CLI that forgot its
//! session.

use crate::json::Value;

pub(super) fn session_lost(stderr: &str) -> bool {
    let s = stderr.to_lowercase();
    [
        "no conversation found",
        "session not found",
        "thread not found",
    ]
    .iter()
    .any(|m| s.contains(m))
}

pub(super) enum CodexEvent {
    Thread(String),
    Error(String),
    Text(String),
    Other,
}

pub(super) fn codex_event(line: &str) -> CodexEvent {
    let Ok(v) = crate::json::parse_str(line) else {
        return CodexEvent::Error(line.trim().to_owned());
    };
    let Some(o) = v.as_object() else {
        return CodexEvent::Other;
    };
    match o.get("type").and_then(Value::as_str) {
        Some("thread.started") => match o.get("thread_id").and_then(Value::as_str) {
            Some(id) => CodexEvent::Thread(id.to_owned()),
            None => CodexEvent::Other,
        },
        Some("error") => {
            let m = o
                .get("message")
                .filter(|m| m.truthy())
                .or_else(|| o.get("error").filter(|m| m.truthy()));
            m.map(|m| CodexEvent::Error(m.py_str()))
                .unwrap_or(CodexEvent::Other)
        }
        Some("item.completed") => {
            let item = o.get("item").and_then(Value::as_object);
            match item {
                Some(i) if i.get("type").and_then(Value::as_str) == Some("agent_message") => {
                    match i.get("text").and_then(Value::as_str) {
                        Some(t) if !t.is_empty() => CodexEvent::Text(t.to_owned()),
                        _ => CodexEvent::Other,
                    }
                }
                _ => CodexEvent::Other,
            }
        }
        _ => CodexEvent::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forgotten_session_is_recognised_in_any_case() {
        assert!(session_lost("Error: No conversation found with id abc"));
        assert!(session_lost("fatal: SESSION NOT FOUND"));
        assert!(session_lost("thread not found: 0199"));
        assert!(!session_lost("rate limited, try again"));
        assert!(!session_lost(""));
    }

    #[test]
    fn codex_events_give_the_thread_errors_and_messages() {
        assert!(matches!(
            codex_event(r#"{"type":"thread.started","thread_id":"t-1"}"#),
            CodexEvent::Thread(id) if id == "t-1"
        ));
        assert!(matches!(
            codex_event(r#"{"type":"thread.started"}"#),
            CodexEvent::Other
        ));
        assert!(matches!(
            codex_event(r#"{"type":"item.completed","item":{"type":"agent_message","text":"push left"}}"#),
            CodexEvent::Text(t) if t == "push left"
        ));
        // Other items and empty messages carry no reply.
        assert!(matches!(
            codex_event(r#"{"type":"item.completed","item":{"type":"reasoning","text":"hmm"}}"#),
            CodexEvent::Other
        ));
        assert!(matches!(
            codex_event(r#"{"type":"item.completed","item":{"type":"agent_message","text":""}}"#),
            CodexEvent::Other
        ));
        assert!(matches!(
            codex_event(r#"{"type":"turn.started"}"#),
            CodexEvent::Other
        ));
        assert!(matches!(codex_event("[1, 2]"), CodexEvent::Other));
    }

    #[test]
    fn codex_errors_take_the_message_else_the_error_field() {
        assert!(matches!(
            codex_event(r#"{"type":"error","message":"quota exceeded"}"#),
            CodexEvent::Error(m) if m == "quota exceeded"
        ));
        assert!(matches!(
            codex_event(r#"{"type":"error","message":"","error":"bad key"}"#),
            CodexEvent::Error(m) if m == "bad key"
        ));
        assert!(matches!(
            codex_event(r#"{"type":"error"}"#),
            CodexEvent::Other
        ));
        // A line that is not JSON is an error message as it stands.
        assert!(matches!(
            codex_event("  panic: cannot start  \n"),
            CodexEvent::Error(m) if m == "panic: cannot start"
        ));
    }
}
