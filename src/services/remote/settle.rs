//! What a remote session reports besides its files: the sink that counts
//! frames on their way to the state dir and the caller, and how the end is
//! settled on the community server.

use super::*;

/// The side's sink, passing everything on to the session's own sink and
/// the caller's observer, and counting the protocol frames each way (so a
/// cancelled session still reports them).
pub(super) struct Tap {
    pub(super) inner: Arc<dyn EventSink>,
    pub(super) observer: Option<Arc<dyn EventSink>>,
    pub(super) sent: AtomicU64,
    pub(super) received: AtomicU64,
    /// Whether the latest protocol frame was one this side sent.
    pub(super) last_sent: AtomicBool,
}

impl Tap {
    /// Reports the end of a session this side cancelled.
    pub(super) fn cancelled(&self) -> SessionOutcome {
        let error = "the session was cancelled on this side";
        self.emit(Event {
            kind: "session_ended",
            data: obj! { "completed" => false, "reason" => CANCELLED_REASON, "error" => error },
            summary: Some(format!("Session ended: {CANCELLED_REASON}: {error}")),
        });
        self.snapshot(obj! {
            "phase" => "aborted",
            "last_event" => obj! { "summary" => format!("{CANCELLED_REASON}: {error}"), "structured" => Map::new() },
        });
        SessionOutcome {
            completed: false,
            reason: CANCELLED_REASON.to_owned(),
            error: Some(error.to_owned()),
            winner: None,
            frames_sent: self.sent.load(Ordering::Relaxed),
            frames_received: self.received.load(Ordering::Relaxed),
            transcript_hash: None,
            audit_passed: None,
        }
    }
}

impl EventSink for Tap {
    fn emit(&self, event: Event) {
        if event.kind == "protocol_message" {
            let dir = event.data.get("direction").and_then(Value::as_str);
            if dir == Some(Dir::Sent.as_str()) {
                self.sent.fetch_add(1, Ordering::Relaxed);
                self.last_sent.store(true, Ordering::Relaxed);
            } else if dir == Some(Dir::Received.as_str()) {
                self.received.fetch_add(1, Ordering::Relaxed);
                self.last_sent.store(false, Ordering::Relaxed);
            }
        }
        if let Some(o) = &self.observer {
            o.emit(event.clone());
        }
        self.inner.emit(event);
    }

    fn snapshot(&self, patch: Map) {
        if let Some(o) = &self.observer {
            o.snapshot(patch.clone());
        }
        self.inner.snapshot(patch);
    }

    fn detail(&self, record: Map) {
        if let Some(o) = &self.observer {
            o.detail(record.clone());
        }
        self.inner.detail(record);
    }

    fn state_dir(&self) -> Option<std::path::PathBuf> {
        self.inner.state_dir()
    }

    fn flush(&self) {
        if let Some(o) = &self.observer {
            o.flush();
        }
        self.inner.flush();
    }
}

pub(super) async fn close_on_server(
    client: &Client,
    session_id: &str,
    status: &str,
    progress: Report<'_>,
) {
    let path = format!("/api/v1/sessions/{session_id}/status");
    if let Err(e) = client
        .call(
            "POST",
            &path,
            Some(&Value::Object(obj! { "status" => status })),
            &[200, 409],
        )
        .await
    {
        progress(Progress::Warning(format!(
            "closing the session on the server failed: {e}"
        )));
    }
}

/// The server's status for a session that ended so (the seed's and the
/// reference's vocabulary): `closed` when the protocol completed,
/// `cancelled` when this side's user cancelled it, else `failed`.
pub(super) fn server_status(o: &SessionOutcome) -> &'static str {
    if o.completed {
        "closed"
    } else if o.reason == CANCELLED_REASON {
        "cancelled"
    } else {
        "failed"
    }
}

/// Writes the session's end back to the server: status, and the winner
/// when there is one. Failures are warnings; the local record stands.
pub(super) async fn settle(
    client: &Client,
    session_id: &str,
    o: &SessionOutcome,
    progress: Report<'_>,
) {
    close_on_server(client, session_id, server_status(o), progress).await;
    if let Some(w) = o
        .winner
        .as_deref()
        .filter(|w| matches!(*w, "host" | "guest" | "draw"))
    {
        let path = format!("/api/v1/sessions/{session_id}/result");
        if let Err(e) = client
            .call(
                "POST",
                &path,
                Some(&Value::Object(obj! { "winner" => w })),
                &[200],
            )
            .await
        {
            progress(Progress::Warning(format!(
                "reporting the result failed: {e}"
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(completed: bool, reason: &str) -> SessionOutcome {
        SessionOutcome {
            completed,
            reason: reason.to_owned(),
            error: None,
            winner: None,
            frames_sent: 0,
            frames_received: 0,
            transcript_hash: None,
            audit_passed: None,
        }
    }

    #[test]
    fn a_cancel_is_cancelled_on_the_server() {
        assert_eq!(server_status(&ended(true, "completed")), "closed");
        assert_eq!(server_status(&ended(false, CANCELLED_REASON)), "cancelled");
        assert_eq!(server_status(&ended(false, "peer_disconnected")), "failed");
        assert_eq!(server_status(&ended(false, "abort")), "failed");
    }
}
