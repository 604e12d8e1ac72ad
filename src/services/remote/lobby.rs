//! A host between its invitation and its guest: the state dir that exists
//! from the moment the invitation is up (session.json, a `waiting_peer`
//! snapshot, `invite_created`), and the upkeep that keeps the invitation
//! open: renewals, and a cheap look at its status so a `palaver cancel`
//! elsewhere stops the host within seconds.

use super::{Progress, Report};
use crate::engine::{ControlMode, Role};
use crate::json::{Map, Value};
use crate::obj;
use crate::services::run;
use crate::session::files::epoch_now;
use crate::session::{StateDir, StateSink, update_session_file};
use crate::spec::Spec;
use crate::web::Client;
use std::path::Path;
use std::time::Duration;

/// How often a waiting host renews its invitation (the server keeps one
/// for 5 minutes by default).
pub const RENEW_EVERY: Duration = Duration::from_secs(120);

/// How often a waiting host reads its invitation's status, so a cancel
/// from elsewhere (`palaver cancel`, the web) stops it within seconds.
pub const WATCH_EVERY: Duration = Duration::from_secs(2);

/// How long one renewal or status read may take before it counts as failed.
const CALL_LIMIT: Duration = Duration::from_secs(10);

/// How a waiting host keeps its invitation open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upkeep {
    /// Time between renewals.
    pub renew_every: Duration,
    /// Time between reads of the invitation's status (zero: none; only a
    /// refused renewal then tells the host its invitation is gone).
    pub watch_every: Duration,
    /// Renew at all (`host --no-invitation-renew`: no; the invitation then
    /// lives as long as the server keeps one, its status reads still tell
    /// the host when it expired).
    pub renew: bool,
}

impl Default for Upkeep {
    /// Renewals every [`RENEW_EVERY`], a status read every [`WATCH_EVERY`].
    fn default() -> Upkeep {
        Upkeep {
            renew_every: RENEW_EVERY,
            watch_every: WATCH_EVERY,
            renew: true,
        }
    }
}

impl Upkeep {
    /// Renewals only: for a host nobody else can cancel for it (the house).
    pub fn renew_only() -> Upkeep {
        Upkeep {
            watch_every: Duration::ZERO,
            ..Upkeep::default()
        }
    }
}

/// Why an invitation stopped waiting without a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    /// `invitation_cancelled`, `invitation_expired`, or
    /// `invitation_<status>` for another status the server gave it.
    pub reason: String,
}

/// The waiting host's state dir and the sink that writes its lifecycle.
pub(super) struct Lobby {
    pub(super) dir: StateDir,
    sink: StateSink,
    post_id: String,
}

/// What the waiting host's files say about it.
pub(super) struct Invited<'a> {
    pub(super) spec: &'a Spec,
    pub(super) mode: ControlMode,
    pub(super) options: &'a Map,
    pub(super) post_id: &'a str,
    pub(super) ttl: Duration,
}

impl Lobby {
    /// The state dir of a host whose invitation is up: a fresh one under
    /// `data_dir/sessions`, or the one a launcher made (`made`, a parent
    /// with session.json). Writes session.json (`running`, the post_id and
    /// when it was posted), the reference's `waiting_peer` snapshot and
    /// `invite_created`.
    pub(super) fn open(
        data_dir: &Path,
        made: Option<&Path>,
        i: &Invited<'_>,
    ) -> std::io::Result<Lobby> {
        let dir = match made {
            Some(parent) => adopt(parent, Role::Host)?,
            None => StateDir::create(data_dir, Role::Host).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("creating a session under {}: {e}", data_dir.display()),
                )
            })?,
        };
        run::write_launch(
            &dir,
            &run::Launch {
                spec: i.spec,
                protocol_dir: None,
                role: Role::Host,
                control_mode: i.mode,
                options: i.options,
                pid: std::process::id(),
                status: "running",
            },
        )?;
        if let Some(f) = dir.session_file() {
            update_session_file(
                &f,
                obj! {
                    "post_id" => i.post_id, "invited_at" => epoch_now(), "transport" => "iroh",
                    "invitation_ttl_minutes" => i.ttl.as_secs_f64() / 60.0,
                },
            )?;
        }
        let sink = StateSink::new(dir.clone());
        use crate::engine::EventSink;
        sink.snapshot(obj! {
            "phase" => "waiting_peer", "role" => "host", "protocol_id" => i.spec.protocol_id(),
            "protocol_name" => i.spec.name().unwrap_or_default(), "control_mode" => i.mode.as_str(),
            "started_at" => epoch_now(),
            "last_event" => obj! { "summary" => "Waiting for peer", "structured" => obj! { "role" => "host" } },
        });
        let lobby = Lobby {
            dir,
            sink,
            post_id: i.post_id.to_owned(),
        };
        lobby.event(
            "invite_created",
            obj! { "post_id" => i.post_id, "protocol_id" => i.spec.protocol_id() },
            format!("Invitation {} is open", i.post_id),
        );
        Ok(lobby)
    }

    /// Appends a lifecycle event, written at once.
    pub(super) fn event(&self, kind: &str, data: Map, summary: String) {
        use crate::engine::EventSink;
        self.sink.event(kind, data, Some(summary));
        self.sink.flush();
    }

    /// The invitation ended without a session: `invitation_renew_stopped`
    /// with `reason`, session.json `stopped` with `end` as its end_reason
    /// (unless something else, a `session abort`, ended it already), and
    /// the snapshot `aborted`.
    pub(super) fn stopped(&self, reason: &str, end: &str, extra: Map, summary: &str) {
        use crate::engine::EventSink;
        let mut data = obj! { "post_id" => self.post_id.as_str(), "reason" => reason };
        for (k, v) in extra.into_entries() {
            data.insert(k, v);
        }
        self.event("invitation_renew_stopped", data, summary.to_owned());
        if let Some(f) = self.dir.session_file() {
            let _ = run::end_if_running(
                &f,
                obj! {
                    "status" => "stopped", "completed" => false, "ended_at" => epoch_now(),
                    "end_reason" => end,
                },
            );
        }
        self.sink.snapshot(obj! {
            "phase" => "aborted",
            "last_event" => obj! { "summary" => summary, "structured" => obj! { "role" => "host", "reason" => end } },
        });
        self.sink.flush();
    }

    /// Writes everything out and hands the dir to the session.
    pub(super) fn into_dir(self) -> StateDir {
        use crate::engine::EventSink;
        self.sink.flush();
        self.dir
    }
}

/// A launcher's parent dir with its engine dir (made if missing).
pub(super) fn adopt(parent: &Path, role: Role) -> std::io::Result<StateDir> {
    if let Some(dir) = StateDir::resolve(parent).filter(|d| d.child != parent) {
        return Ok(dir);
    }
    let child = parent.join(format!(
        "{}-{}",
        role.as_str(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&child)?;
    Ok(StateDir {
        parent: Some(parent.to_owned()),
        child,
    })
}

/// The invitation's status as the server gives it, and whether that means
/// it is gone for good (None: still open, matched, or unknown).
fn closed_by(status: &str) -> Option<Closed> {
    match status {
        "" | "open" | "matched" => None,
        "cancelled" | "withdrawn" | "deleted" => Some(Closed {
            reason: "invitation_cancelled".into(),
        }),
        "expired" => Some(Closed {
            reason: "invitation_expired".into(),
        }),
        other => Some(Closed {
            reason: format!("invitation_{other}"),
        }),
    }
}

/// Reads the invitation: Some when the server says it is gone (404) or
/// closed; None while it is open, or when the read failed (it is tried
/// again next time).
async fn look(client: &Client, path: &str) -> Option<Closed> {
    match tokio::time::timeout(CALL_LIMIT, client.raw("GET", path, None)).await {
        Ok(Ok((404 | 410, _))) => Some(Closed {
            reason: "invitation_cancelled".into(),
        }),
        Ok(Ok((200, v))) => closed_by(v.get_str("status").unwrap_or("")),
        _ => None,
    }
}

/// Keeps the invitation open until it is closed on the server: renews it
/// every `upkeep.renew_every` (`invitation_renewed {post_id, expires_at}`),
/// reads its status every `upkeep.watch_every`, and returns why it closed.
/// A renewal that fails for another reason is reported
/// (`invitation_renew_failed {post_id, error}`) and ends the renewals; the
/// status reads go on. Never returns while the invitation stays open.
pub(super) async fn keep_open(
    client: &Client,
    post_id: &str,
    upkeep: Upkeep,
    lobby: Option<&Lobby>,
    progress: Report<'_>,
) -> Closed {
    let inv_path = format!("/api/v1/invitations/{post_id}");
    let renew_path = format!("{inv_path}/renew");
    let start = tokio::time::Instant::now();
    let mut next_renew = upkeep
        .renew
        .then(|| start + upkeep.renew_every.max(Duration::from_millis(10)));
    let watch = (!upkeep.watch_every.is_zero()).then_some(upkeep.watch_every);
    let mut next_watch = watch.map(|w| start + w);
    loop {
        let wake = match (next_renew, next_watch) {
            (Some(r), Some(w)) => r.min(w),
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => return std::future::pending().await,
        };
        tokio::time::sleep_until(wake).await;
        let now = tokio::time::Instant::now();
        if let Some(at) = next_renew.filter(|at| *at <= now) {
            next_renew = Some(at + upkeep.renew_every.max(Duration::from_millis(10)));
            let r = tokio::time::timeout(CALL_LIMIT, client.raw("POST", &renew_path, None)).await;
            // None: renewed; Some(None): no use renewing any more (a guest
            // is in its handshake); Some(Some(e)): the renewal failed.
            let stop: Option<Option<String>> = match r {
                Ok(Ok((200, v))) => {
                    let expires_at = v.get("expires_at").cloned().unwrap_or(Value::Null);
                    if let Some(l) = lobby {
                        l.event(
                            "invitation_renewed",
                            obj! { "post_id" => post_id, "expires_at" => expires_at },
                            format!("Invitation {post_id} renewed"),
                        );
                    }
                    None
                }
                // Refused: the invitation may be closed; its status says.
                Ok(Ok((status @ (404 | 409 | 410), v))) => {
                    if let Some(c) = look(client, &inv_path).await {
                        return c;
                    }
                    let why = v.get("message").map(Value::py_str).unwrap_or_default();
                    Some((!why.contains("matched")).then(|| format!("HTTP {status}: {why}")))
                }
                Ok(Ok((status, v))) => Some(Some(format!(
                    "HTTP {status}: {}",
                    v.get("message").map(Value::py_str).unwrap_or_default()
                ))),
                Ok(Err(e)) => Some(Some(e.to_string())),
                Err(_) => Some(Some(format!("no answer within {} s", CALL_LIMIT.as_secs()))),
            };
            if let Some(failed) = stop {
                next_renew = None;
                if let Some(error) = failed {
                    progress(Progress::Warning(format!(
                        "renewing the invitation failed: {error} (renewals stop)"
                    )));
                    if let Some(l) = lobby {
                        l.event(
                            "invitation_renew_failed",
                            obj! { "post_id" => post_id, "error" => error.as_str() },
                            format!("Renewing invitation {post_id} failed: {error}"),
                        );
                    }
                }
            }
            continue;
        }
        if let (Some(at), Some(w)) = (next_watch, watch)
            && at <= now
        {
            next_watch = Some(tokio::time::Instant::now() + w);
            if let Some(c) = look(client, &inv_path).await {
                return c;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_that_close_an_invitation() {
        assert_eq!(closed_by("open"), None);
        assert_eq!(closed_by("matched"), None);
        assert_eq!(
            closed_by("cancelled").unwrap().reason,
            "invitation_cancelled"
        );
        assert_eq!(closed_by("expired").unwrap().reason, "invitation_expired");
        assert_eq!(closed_by("closed").unwrap().reason, "invitation_closed");
    }
}
