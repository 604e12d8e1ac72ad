//! The guest side: checking an invitation (and whether palaver can honour
//! it), dialling its host, running the handshake and playing.

use super::lobby::{self};
use super::session::Session;
use super::settle::close_on_server;
use super::{Finished, JoinPlan, Progress, RemoteError, Report, cancelled, handshake_step};
use crate::engine::mental_poker::pending::PendingKey;
use crate::engine::{Hooks, Role};
use crate::json::{Map, Value};
use crate::net::handshake::{self};
use crate::net::{self};
use crate::spec::Spec;
use crate::web::{Client, auth};
use std::future::Future;
use std::pin::Pin;

/// Why palaver cannot join an invitation as listed, if it cannot: options
/// it cannot honour (`limits::check_options`), or timing in its protocol's
/// spec beyond `limits::THINK` when the protocol is bundled. `browse` and
/// the console's invitation list show this; `join` refuses such an
/// invitation before it dials.
pub fn unjoinable(invitation: &Map) -> Option<String> {
    let options = invitation
        .get("options")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let pid = invitation
        .get("protocol_id")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = crate::library::bundled_spec_by_id(pid);
    let checked = match &spec {
        Some(spec) => crate::limits::check_session(spec.doc(), &options),
        None => crate::limits::check_options(&options),
    };
    checked.err().map(|e| e.to_string())
}

/// Joins an invitation: fetches and checks it (open, transport binding
/// signed by its author), resolves its protocol through `resolve`, dials
/// the host, runs the handshake (which records the session on the server),
/// plays, and settles the session.
pub async fn join(
    client: &Client,
    plan: JoinPlan,
    resolve: impl FnOnce(&str) -> Result<(Spec, Box<dyn Hooks>), String>,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: impl Future<Output = ()>,
) -> Result<Finished, RemoteError> {
    let mut cancel = std::pin::pin!(cancel);
    let post = plan.post_id.as_str();
    let inv = client
        .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
        .await?;
    if let Some(status) = inv
        .get_str("status")
        .filter(|v| !v.is_empty())
        .filter(|st| *st != "open")
    {
        return Err(RemoteError::Invitation(format!(
            "invitation {post} is {status}: pick an open one from `palaver browse`"
        )));
    }
    let bad = |what: &str| RemoteError::Invitation(format!("invitation {post} {what}"));
    let host_pk = inv
        .get_str("public_key")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| bad("names no host key"))?
        .to_owned();
    let pid = inv
        .get_str("protocol_id")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| bad("names no protocol"))?
        .to_owned();
    let ticket = inv
        .get_str("iroh_ticket")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| bad("has no iroh ticket"))?
        .to_owned();
    let binding_sig = inv
        .get_str("transport_binding_signature")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            bad("has no transport binding signature: refusing it (possible man in the middle)")
        })?;
    let binding = auth::transport_binding_canonical(
        &host_pk,
        inv.get_str("transport")
            .filter(|v| !v.is_empty())
            .unwrap_or("iroh"),
        &ticket,
        Some(&pid),
    );
    if !crate::identity::verify(&host_pk, binding.as_bytes(), binding_sig) {
        return Err(RemoteError::Invitation(format!(
            "invitation {post}: the transport binding is not signed by the host's key: refusing it (possible man in the middle)"
        )));
    }
    if let Some(dir) = &plan.data_dir
        && crate::library::Library::open(Some(dir))
            .map(|lib| lib.resolve(&pid).is_err())
            .unwrap_or(false)
    {
        let f = crate::services::protocol::fetch(client, dir, &pid)
            .await
            .map_err(|e| {
                RemoteError::Protocol(format!(
                    "protocol {pid} of invitation {post} is not in the library and could not be fetched: {e}"
                ))
            })?;
        progress(Progress::Fetched(Box::new(f)));
    }
    let (spec, hooks) = resolve(&pid).map_err(|e| {
        RemoteError::Protocol(format!(
            "protocol {pid} of invitation {post} (register or install it first): {e}"
        ))
    })?;
    if spec.protocol_id() != pid {
        return Err(RemoteError::Protocol(format!(
            "protocol {pid} of invitation {post} resolved to a different spec ({})",
            spec.protocol_id()
        )));
    }
    let options = inv
        .get("options")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    spec.validate_options(&Value::Object(options.clone()))
        .map_err(|e| {
            RemoteError::Protocol(format!(
                "invitation {post} has options its protocol refuses: {e}"
            ))
        })?;
    crate::limits::check_session(spec.doc(), &options).map_err(|e| {
        RemoteError::Protocol(format!(
            "invitation {post} cannot be joined: {e} (not dialling the host)"
        ))
    })?;
    if cancelled(&mut cancel).await {
        return Err(RemoteError::Cancelled);
    }
    let ep = net::bind_via(plan.peer.reach, &plan.peer.relays, plan.peer.bind).await?;
    let dial = Dial {
        host_pk: &host_pk,
        pid: &pid,
        ticket: &ticket,
        spec: &spec,
        options: &options,
    };
    let r = join_on(&ep, client, plan, dial, hooks, progress, &mut cancel).await;
    net::close(ep).await;
    r
}

/// What the guest learned from the invitation.
struct Dial<'a> {
    host_pk: &'a str,
    pid: &'a str,
    ticket: &'a str,
    spec: &'a Spec,
    options: &'a Map,
}

async fn join_on<C: Future<Output = ()>>(
    ep: &iroh::Endpoint,
    client: &Client,
    plan: JoinPlan,
    d: Dial<'_>,
    hooks: Box<dyn Hooks>,
    progress: Report<'_>,
    cancel: &mut Pin<&mut C>,
) -> Result<Finished, RemoteError> {
    let JoinPlan {
        post_id,
        mode,
        peer,
        data_dir,
        state_dir,
        chat,
        observer,
    } = plan;
    // The session RSA key: a spare from the pool, else made while dialling
    // and handshaking.
    let rsa =
        (d.spec.flow_mode() == "mental_poker").then(|| PendingKey::start_in(data_dir.as_deref()));
    progress(Progress::Connecting {
        host_public_key: d.host_pk.to_owned(),
    });
    // The session id the server recorded, should a cancel cut in after
    // the handshake recorded it.
    let recorded = std::sync::Mutex::new(None::<String>);
    let established = async {
        let (link, mut ch) = net::connect(ep, d.ticket).await?;
        let expect = handshake::Expect {
            post_id: &post_id,
            host_public_key: d.host_pk,
            protocol_id: d.pid,
        };
        let record = |body: Value| {
            let recorded = &recorded;
            async move {
                let v = client
                    .call("POST", "/api/v1/sessions", Some(&body), &[201])
                    .await
                    .map_err(|e| e.to_string())?;
                let id = v
                    .get_str("session_id")
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
                    .ok_or_else(|| "the reply has no session_id".to_owned())?;
                if let Ok(mut r) = recorded.lock() {
                    *r = Some(id.clone());
                }
                Ok(id)
            }
        };
        let step = handshake_step(&peer);
        let est =
            handshake::guest_within(&mut ch, client.keys(), &expect, mode, record, step).await?;
        Ok::<_, RemoteError>((link, ch, est))
    };
    let (link, ch, est) = tokio::select! {
        r = established => r?,
        _ = cancel.as_mut() => {
            let id = recorded.lock().ok().and_then(|mut r| r.take());
            if let Some(id) = id {
                close_on_server(client, &id, "cancelled", progress).await;
            }
            return Err(RemoteError::Cancelled);
        }
    };
    progress(Progress::Established {
        session_id: est.session_id.clone(),
    });
    let dir = match &state_dir {
        Some(p) => Some(lobby::adopt(p, Role::Guest)?),
        None => None,
    };
    let session = Session {
        spec: d.spec,
        role: Role::Guest,
        mode,
        options: d.options,
        peer: &peer,
        est: &est,
        post_id: &post_id,
        data_dir: data_dir.as_deref(),
        dir,
        announced: false,
        chat,
        observer,
        rsa,
        identity: client.keys().clone(),
    };
    session
        .finish(client, hooks, ch, link, progress, cancel)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invitation(text: &str) -> Map {
        match crate::json::parse_str(text).unwrap() {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_invitation_within_the_limits_is_joinable() {
        assert_eq!(unjoinable(&Map::new()), None);
        assert_eq!(
            unjoinable(&invitation(
                r#"{"protocol_id":"unknown","options":{"min_think_seconds":2,"other":1e300}}"#
            )),
            None
        );
    }

    #[test]
    fn options_no_clock_can_hold_make_an_invitation_unjoinable() {
        // Unknown protocol: the options alone are checked.
        let why = unjoinable(&invitation(
            r#"{"protocol_id":"unknown","options":{"min_think_seconds":1e300}}"#,
        ))
        .expect("unjoinable");
        assert!(why.contains("min_think_seconds"), "{why}");
        // A bundled protocol's invitation is checked with its spec.
        let pid = crate::library::bundled_spec("hero-duel-v1")
            .unwrap()
            .protocol_id()
            .to_owned();
        let mut inv = invitation(r#"{"options":{"max_think_seconds":1e300}}"#);
        inv.insert("protocol_id", Value::from(pid));
        let why = unjoinable(&inv).expect("unjoinable");
        assert!(why.contains("max_think_seconds"), "{why}");
    }
}
