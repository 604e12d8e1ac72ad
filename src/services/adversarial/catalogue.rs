//! The cases: for each bundled protocol (and for any protocol), a name,
//! the side under attack, the options, the acceptable end reasons and the
//! script the misbehaving peer follows.

use super::{ANY, Adversary, Case, Script};
use crate::engine::{Role, commit};
use crate::json::Value;
use std::future::Future;
use std::pin::Pin;

fn h(value: &str, nonce: &str) -> String {
    commit::commit_hash(&Value::from(value), nonce)
}

const N: &str = "0123456789abcdef";

macro_rules! script {
    (|$a:ident| $body:block) => {{
        fn run(mut $a: Adversary) -> Pin<Box<dyn Future<Output = ()> + Send>> {
            Box::pin(async move {
                let _ = &mut $a;
                $body
            })
        }
        run as Script
    }};
}

/// The scripted cases.
pub(super) fn cases() -> Vec<Case> {
    let c = |name, alias, victim, options, expect, script| Case {
        name,
        alias,
        victim,
        options,
        expect,
        script,
        min_peer_timeout: std::time::Duration::ZERO,
    };
    use Role::{Guest, Host};
    vec![
        // --- rps-v1, palaver hosts, the guest misbehaves
        c(
            "malformed JSON instead of join",
            "rps-v1",
            Host,
            "{}",
            &["malformed_frame"],
            script!(|a| {
                a.raw("{\"action\":\"join\",").await;
                a.silent().await;
            }),
        ),
        c(
            "join is a JSON array",
            "rps-v1",
            Host,
            "{}",
            &["malformed_frame"],
            script!(|a| {
                a.raw("[\"join\"]").await;
                a.silent().await;
            }),
        ),
        c(
            "join with an unknown field",
            "rps-v1",
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":3,"cheat":true}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "join with a wrong type",
            "rps-v1",
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":"3"}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "guest sends a host-to-guest message",
            "rps-v1",
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"ready","best_of":3,"rounds_to_win":2,"termination":"first_to_win","round_delay_seconds":0}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "commit for the wrong round",
            "rps-v1",
            Host,
            "{}",
            &["unexpected_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":3}"#).await;
                a.until("commit").await;
                a.raw(&format!(
                    r#"{{"action":"commit","round":5,"hash":"{}"}}"#,
                    h("rock", N)
                ))
                .await;
                a.silent().await;
            }),
        ),
        c(
            "forged reveal (commits rock, reveals paper)",
            "rps-v1",
            Host,
            "{}",
            &["commit_mismatch"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":3}"#).await;
                a.until("commit").await;
                a.raw(&format!(
                    r#"{{"action":"commit","round":0,"hash":"{}"}}"#,
                    h("rock", N)
                ))
                .await;
                a.until("reveal").await;
                a.raw(&format!(
                    r#"{{"action":"reveal","round":0,"choice":"paper","nonce":"{N}"}}"#
                ))
                .await;
                a.silent().await;
            }),
        ),
        c(
            "replayed commit where the reveal is due",
            "rps-v1",
            Host,
            "{}",
            &["unexpected_frame"],
            script!(|a| {
                let commit = format!(
                    r#"{{"action":"commit","round":0,"hash":"{}"}}"#,
                    h("rock", N)
                );
                a.raw(r#"{"action":"join","best_of":3}"#).await;
                a.until("commit").await;
                a.raw(&commit).await;
                a.until("reveal").await;
                a.raw(&commit).await;
                a.silent().await;
            }),
        ),
        c(
            "oversized frame (9 MiB)",
            "rps-v1",
            Host,
            "{}",
            &["oversized_frame"],
            script!(|a| {
                a.raw(&format!(
                    r#"{{"action":"join","pad":"{}"}}"#,
                    "x".repeat(9 * 1024 * 1024)
                ))
                .await;
                a.silent().await;
            }),
        ),
        c(
            "premature end from the guest",
            "rps-v1",
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":3}"#).await;
                a.until("commit").await;
                a.raw(r#"{"action":"end"}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "reveal with a malformed nonce",
            "rps-v1",
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":3}"#).await;
                a.until("commit").await;
                a.raw(&format!(
                    r#"{{"action":"commit","round":0,"hash":"{}"}}"#,
                    h("rock", N)
                ))
                .await;
                a.until("reveal").await;
                a.raw(r#"{"action":"reveal","round":0,"choice":"rock","nonce":"XYZ"}"#)
                    .await;
                a.silent().await;
            }),
        ),
        c(
            "NaN inside a frame",
            "rps-v1",
            Host,
            "{}",
            &["malformed_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":NaN}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "silence after join",
            "rps-v1",
            Host,
            "{}",
            &["peer_timeout"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":3}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "disconnect in the middle of a round",
            "rps-v1",
            Host,
            "{}",
            &["peer_disconnected"],
            script!(|a| {
                a.raw(r#"{"action":"join","best_of":3}"#).await;
                a.until("commit").await;
                a.close().await;
            }),
        ),
        // --- rps-v1, palaver joins, the host misbehaves
        c(
            "ready with a wrong type",
            "rps-v1",
            Guest,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","best_of":3,"rounds_to_win":"two","termination":"first_to_win","round_delay_seconds":0}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "host reveal does not match its commit",
            "rps-v1",
            Guest,
            "{}",
            &["commit_mismatch"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","best_of":3,"rounds_to_win":2,"termination":"first_to_win","round_delay_seconds":0}"#).await;
                a.raw(&format!(
                    r#"{{"action":"commit","round":0,"hash":"{}"}}"#,
                    h("rock", N)
                ))
                .await;
                a.until("commit").await;
                a.raw(&format!(
                    r#"{{"action":"reveal","round":0,"choice":"scissors","nonce":"{N}"}}"#
                ))
                .await;
                a.silent().await;
            }),
        ),
        c(
            "round result for another round",
            "rps-v1",
            Guest,
            "{}",
            &["unexpected_frame"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","best_of":3,"rounds_to_win":2,"termination":"first_to_win","round_delay_seconds":0}"#).await;
                a.raw(&format!(
                    r#"{{"action":"commit","round":0,"hash":"{}"}}"#,
                    h("rock", N)
                ))
                .await;
                a.until("commit").await;
                a.raw(&format!(
                    r#"{{"action":"reveal","round":0,"choice":"rock","nonce":"{N}"}}"#
                ))
                .await;
                a.until("reveal").await;
                a.raw(r#"{"action":"round_result","round":3,"host_choice":"rock","guest_choice":"rock","round_winner":"draw","host_wins":0,"guest_wins":0,"game_over":false,"game_winner":"none"}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "host gives up with an error frame",
            "rps-v1",
            Guest,
            "{}",
            &["peer_error"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","best_of":3,"rounds_to_win":2,"termination":"first_to_win","round_delay_seconds":0}"#).await;
                a.raw(r#"{"action":"error","round":0,"reason":"aborted"}"#)
                    .await;
                a.silent().await;
            }),
        ),
        c(
            "host never answers the join",
            "rps-v1",
            Guest,
            "{}",
            &["peer_timeout"],
            script!(|a| {
                a.silent().await;
            }),
        ),
        // --- coin-flip-v1 and weak-wins-all
        c(
            "coin result names a draw, which coin flip has not",
            "coin-flip-v1",
            Guest,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","best_of":3,"rounds_to_win":2}"#)
                    .await;
                a.raw(&format!(
                    r#"{{"action":"commit","round":0,"hash":"{}"}}"#,
                    h("heads", N)
                ))
                .await;
                a.until("commit").await;
                a.raw(&format!(
                    r#"{{"action":"reveal","round":0,"choice":"heads","nonce":"{N}"}}"#
                ))
                .await;
                a.until("reveal").await;
                a.raw(r#"{"action":"round_result","round":0,"host_choice":"heads","guest_choice":"heads","round_winner":"draw","host_wins":0,"guest_wins":0,"game_over":false,"game_winner":"none"}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "bid above the schema's maximum",
            "weak-wins-all",
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","total_points":25,"total_rounds":5}"#)
                    .await;
                a.until("commit").await;
                a.raw(&format!(
                    r#"{{"action":"commit","round":0,"hash":"{}"}}"#,
                    commit::commit_hash(&Value::from(5000), N)
                ))
                .await;
                a.until("reveal").await;
                a.raw(&format!(
                    r#"{{"action":"reveal","round":0,"bid":5000,"nonce":"{N}"}}"#
                ))
                .await;
                a.silent().await;
            }),
        ),
        // --- guess-number-v1
        c(
            "guess outside the range",
            "guess-number-v1",
            Host,
            "{}",
            &["abort"],
            script!(|a| {
                a.raw(r#"{"action":"join","max_attempts":7}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"guess","attempt":1,"number":1000}"#)
                    .await;
                a.silent().await;
            }),
        ),
        c(
            "guess with attempt 0",
            "guess-number-v1",
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","max_attempts":7}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"guess","attempt":0,"number":50}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "hints that contradict each other",
            "guess-number-v1",
            Guest,
            "{}",
            &["protocol_violation"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","range_min":1,"range_max":100,"max_attempts":7}"#)
                    .await;
                // Always "higher", past the top of the range.
                let mut attempt = 1;
                while a.until("guess").await.is_some() {
                    a.raw(&format!(r#"{{"action":"hint","attempt":{attempt},"result":"higher","attempts_used":{attempt}}}"#)).await;
                    attempt += 1;
                }
            }),
        ),
        c(
            "game over with an extra field",
            "guess-number-v1",
            Guest,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","range_min":1,"range_max":100,"max_attempts":7}"#)
                    .await;
                a.until("guess").await;
                a.raw(r#"{"action":"game_over","winner":"host","secret_number":3,"total_attempts":1,"note":"x"}"#).await;
                a.silent().await;
            }),
        ),
        // --- board games
        c(
            "gomoku move on an occupied cell",
            "gomoku-v1",
            Host,
            r#"{"board_size":9}"#,
            &["abort"],
            script!(|a| {
                a.raw(r#"{"action":"join","board_size":9}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"move","turn":1,"row":4,"col":4}"#).await;
                a.until("round_result").await;
                a.raw(r#"{"action":"move","turn":3,"row":4,"col":4}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "gomoku move outside the board",
            "gomoku-v1",
            Host,
            r#"{"board_size":9}"#,
            &["abort"],
            script!(|a| {
                a.raw(r#"{"action":"join","board_size":9}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"move","turn":1,"row":14,"col":2}"#)
                    .await;
                a.silent().await;
            }),
        ),
        c(
            "gomoku move out of turn",
            "gomoku-v1",
            Host,
            r#"{"board_size":9}"#,
            &["abort"],
            script!(|a| {
                a.raw(r#"{"action":"join","board_size":9}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"move","turn":7,"row":1,"col":1}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "gomoku host claims a win it does not have",
            "gomoku-v1",
            Guest,
            r#"{"board_size":9}"#,
            &["protocol_violation"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","board_size":9,"first":"guest"}"#)
                    .await;
                let m = a.until("move").await.unwrap_or_default();
                let r = m.get("row").and_then(Value::as_i64).unwrap_or(0);
                let spot = if r == 0 { 1 } else { 0 };
                a.raw(&format!(r#"{{"action":"round_result","turn":2,"row":{spot},"col":0,"player":"host","game_over":true,"winner":"host"}}"#)).await;
                a.silent().await;
            }),
        ),
        c(
            "gomoku host plays on the guest's stone",
            "gomoku-v1",
            Guest,
            r#"{"board_size":9}"#,
            &["protocol_violation"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","board_size":9,"first":"guest"}"#)
                    .await;
                let m = a.until("move").await.unwrap_or_default();
                let (r, c) = (
                    m.get("row").and_then(Value::as_i64).unwrap_or(0),
                    m.get("col").and_then(Value::as_i64).unwrap_or(0),
                );
                a.raw(&format!(r#"{{"action":"round_result","turn":2,"row":{r},"col":{c},"player":"host","game_over":false,"winner":"none"}}"#)).await;
                a.silent().await;
            }),
        ),
        c(
            "connect4 move in a column that does not exist",
            "connect4-v1",
            Host,
            "{}",
            &["abort"],
            script!(|a| {
                a.raw(r#"{"action":"join","cols":7,"rows":6}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"move","turn":1,"col":9}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "connect4 host stone floating in mid-air",
            "connect4-v1",
            Guest,
            "{}",
            &["protocol_violation"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","cols":7,"rows":6,"first":"guest"}"#)
                    .await;
                let m = a.until("move").await.unwrap_or_default();
                let c = m.get("col").and_then(Value::as_i64).unwrap_or(0);
                let other = (c + 1) % 7;
                a.raw(&format!(r#"{{"action":"round_result","turn":2,"col":{other},"row":0,"player":"host","game_over":false,"winner":"none"}}"#)).await;
                a.silent().await;
            }),
        ),
        c(
            "reversi move that flips nothing",
            "reversi-v1",
            Host,
            "{}",
            &["abort"],
            script!(|a| {
                a.raw(r#"{"action":"join","board_size":8}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"move","turn":1,"row":0,"col":0}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "reversi pass while a move exists",
            "reversi-v1",
            Host,
            "{}",
            &["abort"],
            script!(|a| {
                a.raw(r#"{"action":"join","board_size":8}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"pass","turn":1}"#).await;
                a.silent().await;
            }),
        ),
        // --- hero-duel-v1: the shadow judge catches a lying host
        c(
            "hero duel host misreports the damage",
            "hero-duel-v1",
            Guest,
            r#"{"max_rounds":5}"#,
            &["balance_mismatch"],
            script!(|a| {
                a.until("join").await;
                a.raw(r#"{"action":"ready","host_hero":"assassin","guest_hero":"assassin","max_rounds":5}"#).await;
                a.raw(&format!(
                    r#"{{"action":"commit","round":0,"hash":"{}"}}"#,
                    h("normal", N)
                ))
                .await;
                a.until("commit").await;
                a.raw(&format!(
                    r#"{{"action":"reveal","round":0,"move":"normal","nonce":"{N}"}}"#
                ))
                .await;
                let g = a.until("reveal").await.unwrap_or_default();
                let gm = g
                    .get("move")
                    .and_then(Value::as_str)
                    .unwrap_or("normal")
                    .to_owned();
                a.raw(&format!(
                r#"{{"action":"round_result","round":0,"host_move":"normal","guest_move":"{gm}","host_hp":180,"guest_hp":1,"host_mana":60,"guest_mana":60,"host_damage_dealt":179,"guest_damage_dealt":0,"host_cd_a":0,"host_cd_b":0,"host_cd_ult":0,"guest_cd_a":0,"guest_cd_b":0,"guest_cd_ult":0,"round_winner":"host","game_over":false,"game_winner":"none"}}"#
            )).await;
                a.silent().await;
            }),
        ),
        // --- human-chat-v1 (free mode drops invalid frames, as the reference)
        c(
            "chat frame with sequence 0, then a disconnect",
            "human-chat-v1",
            Host,
            "{}",
            &["peer_disconnected"],
            script!(|a| {
                a.raw(r#"{"action":"join"}"#).await;
                a.until("ready").await;
                a.raw(r#"{"action":"chat","text":"hi","seq":0}"#).await;
                a.close().await;
            }),
        ),
        c(
            "chat join with an unknown field",
            "human-chat-v1",
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"join","nick":"mallory"}"#).await;
                a.silent().await;
            }),
        ),
        // --- any protocol ("*"): what every side must survive
        c(
            "malformed JSON as the first frame",
            ANY,
            Host,
            "{}",
            &["malformed_frame"],
            script!(|a| {
                a.raw("{{{").await;
                a.silent().await;
            }),
        ),
        c(
            "first frame is a JSON string",
            ANY,
            Host,
            "{}",
            &["malformed_frame"],
            script!(|a| {
                a.raw("\"join\"").await;
                a.silent().await;
            }),
        ),
        c(
            "first frame over 8 MiB",
            ANY,
            Host,
            "{}",
            &["oversized_frame"],
            script!(|a| {
                a.raw(&format!(
                    r#"{{"action":"join","pad":"{}"}}"#,
                    "y".repeat(8 * 1024 * 1024 + 16)
                ))
                .await;
                a.silent().await;
            }),
        ),
        c(
            "first frame with an undeclared action",
            ANY,
            Host,
            "{}",
            &["invalid_frame"],
            script!(|a| {
                a.raw(r#"{"action":"zz_undeclared"}"#).await;
                a.silent().await;
            }),
        ),
        c(
            "silent guest",
            ANY,
            Host,
            "{}",
            &["peer_timeout"],
            script!(|a| {
                a.silent().await;
            }),
        ),
        c(
            "guest disconnects at once",
            ANY,
            Host,
            "{}",
            &["peer_disconnected"],
            script!(|a| {
                a.close().await;
            }),
        ),
        c(
            "malformed reply to the join",
            ANY,
            Guest,
            "{}",
            &["malformed_frame"],
            script!(|a| {
                a.next().await;
                a.raw("{\"action\":").await;
                a.silent().await;
            }),
        ),
        c(
            "silent host",
            ANY,
            Guest,
            "{}",
            &["peer_timeout"],
            script!(|a| {
                a.silent().await;
            }),
        ),
        c(
            "host disconnects after the join",
            ANY,
            Guest,
            "{}",
            &["peer_disconnected"],
            script!(|a| {
                a.next().await;
                a.close().await;
            }),
        ),
    ]
}
