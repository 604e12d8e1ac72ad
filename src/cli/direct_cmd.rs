//! `palaver guest --iroh-ticket T` and `palaver host … --no-server`: a
//! session on an iroh ticket with no community in between
//! (`services::direct`).

use super::p2p_cmd::{PeerArgs, ctrl_c, interrupted, options_of, peer_opts, present_ruleset, say};
use super::test_cmd::subject;
use super::{Ctx, Outcome};
use crate::engine::ControlMode;
use crate::services::direct::{self, DirectError, DirectFinished, DirectPlan, DirectProgress};
use anyhow::{Result, anyhow};
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct GuestArgs {
    /// The ticket a host printed (`palaver host … --no-server`, or any
    /// peer that plays the engine straight on the stream).
    #[arg(long, value_name = "TICKET")]
    pub iroh_ticket: String,
    /// Protocol: a library alias or protocol_id, a protocol dir, or a spec.json.
    #[arg(
        required_unless_present = "protocol_flag",
        conflicts_with = "protocol_flag"
    )]
    pub protocol: Option<String>,
    /// The protocol, as the reference client spells it (`--protocol-dir`
    /// is accepted too).
    #[arg(
        long = "protocol",
        visible_alias = "protocol-dir",
        value_name = "PROTOCOL"
    )]
    pub protocol_flag: Option<String>,
    /// The options the host plays with, as a JSON object (there is no
    /// invitation to read them from; they must equal the host's).
    #[arg(long, value_name = "JSON")]
    pub options: Option<String>,
    /// Start from this profile's options; --options then changes single keys.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    #[command(flatten)]
    pub peer: PeerArgs,
    /// Arguments for the hooks after `--`, as for host.
    #[arg(last = true, value_name = "ARGS")]
    pub extra_args: Vec<String>,
}

fn show(ctx: &Ctx, p: DirectProgress<'_>) {
    match p {
        DirectProgress::Ticket(t) => {
            say(ctx, &format!("iroh_ticket: {t}"));
            say(
                ctx,
                "waiting for a guest (palaver guest --iroh-ticket TICKET PROTOCOL)",
            );
        }
        DirectProgress::Connected => say(ctx, "connected (direct ticket: no session proof)"),
        DirectProgress::StateDir(d) => say(
            ctx,
            &format!(
                "session state: {} (steer it with `palaver session … {}`)",
                d.display(),
                d.display()
            ),
        ),
    }
}

fn report(ctx: &Ctx, r: Result<DirectFinished, DirectError>) -> Result<Outcome> {
    let f = r.map_err(anyhow::Error::new)?;
    if ctx.json {
        ctx.print_json(&f)?;
    } else {
        say(ctx, &super::test_cmd::outcome_line(&f.outcome));
    }
    Ok(if f.outcome.completed {
        Outcome::Ok
    } else {
        Outcome::Rejected
    })
}

/// The plan of one side: protocol, hooks (with extra args and
/// `--ruleset-dir`), checked options, control mode.
fn plan(
    ctx: &Ctx,
    protocol: &str,
    raw_options: Option<&str>,
    profile: Option<&str>,
    peer: &PeerArgs,
    extra: &[String],
    wait: Duration,
) -> Result<DirectPlan> {
    let subj = subject(ctx, protocol, peer.allow_skeleton_hooks)?;
    if subj.spec.flow_mode() == "authoritative_group" {
        return Err(anyhow!(
            "a group protocol (a room or table) has no direct two-party session; host it with `palaver host`"
        ));
    }
    subj.spec
        .check_extra_args(extra)
        .map_err(anyhow::Error::msg)?;
    let mut hooks = subj.hooks()?;
    hooks
        .set_extra_args(extra.to_vec())
        .map_err(anyhow::Error::new)?;
    present_ruleset(hooks.as_mut(), peer.ruleset_dir.as_deref()).map_err(anyhow::Error::msg)?;
    let mode = match &peer.control_mode {
        Some(m) => m.parse().map_err(anyhow::Error::msg)?,
        None => ControlMode::author_default(&subj.spec),
    };
    let options = options_of(ctx, &subj, profile, raw_options)?;
    Ok(DirectPlan {
        spec: subj.spec,
        hooks,
        options,
        mode,
        peer: peer_opts(peer)?,
        data_dir: ctx.data_dir()?,
        wait,
    })
}

/// `palaver guest --iroh-ticket T PROTOCOL`.
pub fn guest(ctx: &Ctx, a: GuestArgs) -> Result<Outcome> {
    let protocol = a
        .protocol
        .clone()
        .or(a.protocol_flag.clone())
        .ok_or_else(|| anyhow!("name a protocol"))?;
    let p = plan(
        ctx,
        &protocol,
        a.options.as_deref(),
        a.profile.as_deref(),
        &a.peer,
        &a.extra_args,
        Duration::ZERO,
    )?;
    let rt = super::p2p_cmd::session_runtime()?;
    let r = rt.block_on(async {
        let mut sig = ctrl_c()?;
        let progress = |x: DirectProgress<'_>| show(ctx, x);
        tokio::select! {
            r = direct::guest(p, &a.iroh_ticket, &progress) => report(ctx, r),
            _ = interrupted(&mut sig) => Err(anyhow!("interrupted")),
        }
    });
    rt.shutdown_background();
    r
}

/// `palaver host PROTOCOL --no-server`: waits --invitation-ttl-minutes
/// for a guest.
pub fn host(ctx: &Ctx, a: &super::p2p_cmd::HostArgs) -> Result<Outcome> {
    let protocol = a
        .protocol
        .clone()
        .or(a.protocol_flag.clone())
        .ok_or_else(|| anyhow!("name a protocol"))?;
    let wait = crate::limits::INVITATION_TTL_MINUTES.check(a.invitation_ttl_minutes)?;
    let p = plan(
        ctx,
        &protocol,
        a.options.as_deref(),
        a.profile.as_deref(),
        &a.peer,
        &a.extra_args,
        wait,
    )?;
    let rt = super::p2p_cmd::session_runtime()?;
    let r = rt.block_on(async {
        let mut sig = ctrl_c()?;
        let progress = |x: DirectProgress<'_>| show(ctx, x);
        report(ctx, direct::host(p, &progress, interrupted(&mut sig)).await)
    });
    rt.shutdown_background();
    r
}
