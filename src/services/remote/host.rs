//! The host side: posting the invitation, keeping it open, taking guests
//! through the handshake (several at once) and playing with the first that
//! passes.

use super::lobby::{Invited, Lobby, keep_open};
use super::session::Session;
use super::{
    CANCELLED_REASON, Finished, HostPlan, Progress, RemoteError, Report, cancelled, handshake_step,
};
use crate::engine::mental_poker::pending::PendingKey;
use crate::engine::{self, ControlMode, Role};
use crate::json::{Map, Value};
use crate::net::handshake::{self};
use crate::net::{self, NetError};
use crate::obj;
use crate::spec::Spec;
use crate::web::{Client, auth};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Hosts one session: posts the invitation, waits for a guest that passes
/// the handshake, plays, and settles the session on the server.
pub async fn host(
    client: &Client,
    plan: HostPlan,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: impl Future<Output = ()>,
) -> Result<Finished, RemoteError> {
    let mut cancel = std::pin::pin!(cancel);
    if !plan.options.is_empty() {
        plan.spec
            .validate_options(&Value::Object(plan.options.clone()))
            .map_err(|e| RemoteError::Protocol(format!("invitation options: {e}")))?;
    }
    crate::limits::check_session(plan.spec.doc(), &plan.options).map_err(|e| {
        RemoteError::Protocol(format!(
            "palaver cannot honour these invitation options: {e}"
        ))
    })?;
    if cancelled(&mut cancel).await {
        return Err(RemoteError::Cancelled);
    }
    let ep = net::bind_via(plan.peer.reach, &plan.peer.relays, plan.peer.bind).await?;
    let r = host_on(&ep, client, plan, progress, &mut cancel).await;
    net::close(ep).await;
    r
}

async fn host_on<C: Future<Output = ()>>(
    ep: &iroh::Endpoint,
    client: &Client,
    plan: HostPlan,
    progress: Report<'_>,
    cancel: &mut Pin<&mut C>,
) -> Result<Finished, RemoteError> {
    let HostPlan {
        spec,
        mut hooks,
        message,
        options,
        mode,
        ttl,
        upkeep,
        peer,
        data_dir,
        state_dir,
        chat,
        observer,
    } = plan;
    // RSA-2048 key generation takes a while: a spare from the data dir's
    // pool, else one made while the invitation waits for a guest.
    let rsa =
        (spec.flow_mode() == "mental_poker").then(|| PendingKey::start_in(data_dir.as_deref()));
    let ticket = net::ticket(ep).await;
    let pid = spec.protocol_id().to_owned();
    let keys = client.keys();
    // The invitation shows the hooks' own name, tags and type, as the
    // reference's does.
    hooks.prepare().await.map_err(|e| {
        RemoteError::Protocol(format!("the protocol's hooks cannot describe it: {e}"))
    })?;
    let meta = hooks.host_metadata();
    // The post itself is never cut short: a cancel during it would leave an
    // invitation nobody knows the id of.
    if cancelled(cancel).await {
        return Err(RemoteError::Cancelled);
    }
    let post_id = post_invitation(client, &spec, &ticket, &meta, &message, mode, &options).await?;
    progress(Progress::InvitationOpen {
        post_id: post_id.clone(),
    });
    // The session's state dir exists from here on: a waiting host shows in
    // `session list` and the console with its post_id.
    let lobby = match &data_dir {
        Some(d) => {
            let invited = Invited {
                spec: &spec,
                mode,
                options: &options,
                post_id: &post_id,
                ttl,
            };
            match Lobby::open(d, state_dir.as_deref(), &invited) {
                Ok(l) => Some(l),
                Err(e) => {
                    withdraw(client, &post_id, progress).await;
                    return Err(RemoteError::Io(e));
                }
            }
        }
        None => None,
    };
    if let Some(l) = &lobby {
        progress(Progress::StateDir {
            parent: l.dir.parent.clone().unwrap_or_else(|| l.dir.child.clone()),
            child: l.dir.child.clone(),
        });
    }

    let waited = {
        let wait = async {
            let now = tokio::time::Instant::now();
            // A ttl beyond any clock's range waits (practically) forever.
            let deadline = now
                .checked_add(ttl.max(Duration::from_secs(1)))
                .unwrap_or(now + Duration::from_secs(100 * 365 * 24 * 3600));
            // Guests are taken in parallel, each through its own QUIC and
            // session handshake, so a guest that stalls or misbehaves holds
            // up nobody else; the first to pass the handshake plays.
            let mut trying = FuturesUnordered::new();
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                tokio::select! {
                    incoming = tokio::time::timeout(left, ep.accept()) => {
                        let Ok(incoming) = incoming else {
                            return Err(RemoteError::NoGuest(ttl));
                        };
                        let Some(incoming) = incoming else {
                            return Err(RemoteError::Net(NetError::Accept("endpoint closed".into())));
                        };
                        if trying.len() >= MAX_HANDSHAKES {
                            incoming.refuse();
                            progress(Progress::Warning(format!(
                                "refused a connection: {MAX_HANDSHAKES} guests are already in their handshake"
                            )));
                            continue;
                        }
                        let (keys, post_id, pid, peer) = (keys, &post_id, &pid, &peer);
                        trying.push(async move {
                            let (link, mut ch) = net::establish(incoming).await.map_err(Progress::Warning)?;
                            let step = handshake_step(peer);
                            match handshake::host_within(&mut ch, keys, post_id, pid, mode, step).await {
                                Ok(est) => Ok((link, ch, est)),
                                Err(e) => {
                                    link.conn.close(1u32.into(), b"handshake failed");
                                    Err(Progress::TurnedAway { reason: e.to_string() })
                                }
                            }
                        });
                    }
                    Some(done) = trying.next(), if !trying.is_empty() => match done {
                        Ok(x) => return Ok(x),
                        Err(p) => progress(p),
                    },
                }
            }
        };
        tokio::select! {
            r = wait => r,
            closed = keep_open(client, &post_id, upkeep, lobby.as_ref(), progress) => Err(RemoteError::Closed {
                post_id: post_id.clone(),
                reason: closed.reason,
            }),
            _ = cancel.as_mut() => Err(RemoteError::Cancelled),
        }
    };
    let (link, ch, est) = match waited {
        Ok(x) => x,
        Err(e) => {
            if let Some(l) = &lobby {
                let (reason, extra, summary) = match &e {
                    RemoteError::NoGuest(_) => (
                        "max_session_minutes_reached".to_owned(),
                        obj! { "max_session_minutes" => ttl.as_secs_f64() / 60.0 },
                        "No guest came before the invitation's time ran out".to_owned(),
                    ),
                    RemoteError::Closed { reason, .. } => (
                        reason.clone(),
                        Map::new(),
                        format!("The invitation was closed on the server ({reason})"),
                    ),
                    RemoteError::Cancelled => (
                        CANCELLED_REASON.to_owned(),
                        Map::new(),
                        "The host cancelled its invitation".to_owned(),
                    ),
                    other => (
                        "error".to_owned(),
                        obj! { "error" => other.to_string() },
                        format!("Waiting for a guest failed: {other}"),
                    ),
                };
                // The session.json reason: how the invitation ended.
                let end = match &e {
                    RemoteError::NoGuest(_) => "invitation_expired",
                    _ => reason.as_str(),
                };
                l.stopped(&reason, end, extra, &summary);
            }
            if !matches!(e, RemoteError::Closed { .. }) {
                withdraw(client, &post_id, progress).await;
            }
            return Err(e);
        }
    };
    progress(Progress::Established {
        session_id: est.session_id.clone(),
    });
    let announced = lobby.is_some();
    let session = Session {
        spec: &spec,
        role: Role::Host,
        mode,
        options: &options,
        peer: &peer,
        est: &est,
        post_id: &post_id,
        data_dir: data_dir.as_deref(),
        dir: lobby.map(Lobby::into_dir),
        announced,
        chat,
        observer,
        rsa,
        identity: client.keys().clone(),
    };
    session
        .finish(client, hooks, ch, link, progress, cancel)
        .await
}

/// Posts an invitation for `spec` at `ticket` (signed transport binding,
/// the hooks' name, tags and type) and returns its post_id.
pub async fn post_invitation(
    client: &Client,
    spec: &Spec,
    ticket: &str,
    meta: &engine::HostMetadata,
    message: &str,
    mode: ControlMode,
    options: &Map,
) -> Result<String, RemoteError> {
    let pid = spec.protocol_id();
    let keys = client.keys();
    let binding = auth::transport_binding_canonical(&keys.public_key, "iroh", ticket, Some(pid));
    let message = if !message.is_empty() {
        message.to_owned()
    } else if !meta.display_name.is_empty() {
        meta.display_name.clone()
    } else {
        spec.name().unwrap_or(pid).to_owned()
    };
    let tags: Vec<Value> = meta
        .tags
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(Value::from)
        .collect();
    let kind = match meta.invite_type.as_str() {
        k @ ("supply" | "demand" | "chat") => k.to_owned(),
        _ => "supply".to_owned(),
    };
    let mut body = obj! {
        "message" => message, "tags" => Value::Array(tags), "iroh_ticket" => ticket, "transport" => "iroh",
        "transport_info" => Value::Object(obj! { "version" => 1, "endpoint_id" => keys.public_key.as_str(), "ticket" => ticket }),
        "transport_binding_signature" => keys.sign(binding.as_bytes()), "protocol_id" => pid,
        "host_control_mode" => mode.as_str(), "type" => kind,
    };
    if !options.is_empty() {
        body.insert("options", Value::Object(options.clone()));
    }
    let inv = client
        .call(
            "POST",
            "/api/v1/invitations",
            Some(&Value::Object(body)),
            &[201],
        )
        .await?;
    Ok(inv
        .get_str("post_id")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| RemoteError::Server("the server's invitation reply has no post_id".into()))?
        .to_owned())
}

/// How many guests a host takes through their handshakes at once; a further
/// connection is refused until one of them ends.
pub const MAX_HANDSHAKES: usize = 16;

/// Withdraws an invitation nobody will join now (a warning if that fails).
async fn withdraw(client: &Client, post_id: &str, progress: Report<'_>) {
    if let Err(d) = client
        .call(
            "DELETE",
            &format!("/api/v1/invitations/{post_id}"),
            None,
            &[204, 404],
        )
        .await
    {
        progress(Progress::Warning(format!(
            "withdrawing the invitation failed: {d}"
        )));
    }
}
