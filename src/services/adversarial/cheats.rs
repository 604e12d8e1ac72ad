//! Cheats at hidden-hand card games (the `mental_poker` flow): the
//! misbehaving peer is a whole palaver side playing by the protocol except
//! for one deliberate [`Fault`], so that each of the honest side's checks
//! (the play checks, the audit, the receipt) is seen to fire with the
//! reference's reason.

use super::{Adversary, Case, Script};
use crate::engine::mental_poker::fault::Fault;
use crate::engine::{self, Channel, ControlMode, Ctx, EngineConfig, MatchBinding, Role};
use crate::json::Map;
use crate::library;
use crate::protocols::native_hooks_for_alias;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Plays `alias` as `role` with `fault` on the adversary's channel.
async fn cheat(a: Adversary, alias: &'static str, role: Role, fault: Fault) {
    let (Some(spec), Some(mut hooks)) =
        (library::bundled_spec(alias), native_hooks_for_alias(alias))
    else {
        return;
    };
    let ctx = Ctx::new(role, ControlMode::Autonomous, Map::new()).with_binding(MatchBinding {
        fault: Some(fault),
        ..MatchBinding::default()
    });
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let channel = Channel { tx: a.tx, rx: a.rx };
    engine::run(spec, hooks.as_mut(), channel, &ctx, &cfg).await;
}

macro_rules! cheat {
    ($alias:expr, $role:expr, $fault:expr) => {{
        fn run(a: Adversary) -> Pin<Box<dyn Future<Output = ()> + Send>> {
            Box::pin(cheat(a, $alias, $role, $fault))
        }
        run as Script
    }};
}

/// The card-game cases: (name, alias, victim, expected reason, script).
pub(super) fn cases() -> Vec<Case> {
    use Role::{Guest, Host};
    const CE: &str = "crazy-eights-v1";
    const BR: &str = "briscola-v1";
    let c = |name, alias, victim, expect, script| Case {
        name,
        alias,
        victim,
        options: "{}",
        expect,
        script,
        min_peer_timeout: Duration::from_secs(20),
    };
    vec![
        c(
            "a tampered blob in the outer deck",
            CE,
            Host,
            &["derive_id_map_failed"],
            cheat!(CE, Role::Guest, Fault::TamperBlob),
        ),
        c(
            "a forged token in the opening",
            CE,
            Guest,
            &["forged_token"],
            cheat!(CE, Role::Host, Fault::ForgeToken),
        ),
        c(
            "a forged token in the guest's opening",
            BR,
            Host,
            &["forged_token"],
            cheat!(BR, Role::Guest, Fault::ForgeToken),
        ),
        c(
            "a wrong key disclosed in the opening",
            CE,
            Guest,
            &["payload_mismatch"],
            cheat!(CE, Role::Host, Fault::WrongKey),
        ),
        c(
            "a card played that is not in the hand",
            CE,
            Host,
            &["card_not_in_hand"],
            cheat!(CE, Role::Guest, Fault::CardNotInHand),
        ),
        c(
            "a card played twice",
            BR,
            Guest,
            &["card_not_in_hand"],
            cheat!(BR, Role::Host, Fault::PlayTwice),
        ),
        c(
            "a bad witness for an OT",
            CE,
            Host,
            &["bad_witness"],
            cheat!(CE, Role::Guest, Fault::BadWitness),
        ),
        c(
            "an OT that peeks at another card",
            CE,
            Host,
            &["peeked_non_hand"],
            cheat!(CE, Role::Guest, Fault::Peek),
        ),
        c(
            "a receipt over a different root",
            CE,
            Guest,
            &["peer_receipt_signature_invalid"],
            cheat!(CE, Role::Host, Fault::ReceiptOtherRoot),
        ),
        c(
            "an unknown field in a play",
            BR,
            Guest,
            &["invalid_frame"],
            cheat!(BR, Role::Host, Fault::UnknownField),
        ),
        c(
            "a null call_suit in a play",
            CE,
            Host,
            &["invalid_frame"],
            cheat!(CE, Role::Guest, Fault::NullCallSuit),
        ),
        c(
            "a 2047-bit RSA modulus",
            CE,
            Guest,
            &["invalid_frame"],
            cheat!(CE, Role::Host, Fault::ShortModulus),
        ),
    ]
}
