//! The play loop of a match: turns in strict parity, this side's action
//! under its control mode (the decision window `action_seq`), and the
//! peer's, checked card by card.

use super::{Match, game, own_ot, peer_ot, view};
use crate::engine::Role;
use crate::engine::flows::{HookError, Hooks, Run, Stop, action_of, obj};
use crate::engine::mental_poker::fault::Fault;
use crate::engine::mental_poker::game::{CardAction, CardGame};
use crate::engine::mental_poker::side::Side;
use crate::engine::{ControlMode, Decided, Window};
use crate::json::{Map, Value};

/// The base checks of an explicit decision (the reference's
/// `proto_mp_coerce_action`), then the game's.
fn coerce(game: &dyn CardGame, side: &Side, d: &Map) -> Result<CardAction, String> {
    let action = match d.get_str("kind") {
        Some("draw") => CardAction::Draw,
        Some("pass") => CardAction::Pass,
        Some("play") => {
            let id_b = d
                .get_str("id_b")
                .filter(|id| side.hand.contains_key(*id))
                .ok_or("id_b is not a card in the local hand")?;
            let call_suit = match d.get("call_suit") {
                None | Some(Value::Null) => None,
                // Any integer passes here, as in the reference; one that is
                // no suit index is the game's to refuse, with its words.
                Some(v) => Some(
                    v.as_i64()
                        .map(|i| u8::try_from(i).unwrap_or(u8::MAX))
                        .ok_or("call_suit must be an integer")?,
                ),
            };
            CardAction::Play {
                id_b: id_b.to_owned(),
                call_suit,
            }
        }
        _ => return Err("kind must be play, draw, or pass".into()),
    };
    game.check_local(&view(side, false), &action)?;
    Ok(action)
}

/// Records a verified play, in words for the feed (`guest played 8♥,
/// calls ♠`).
fn played(
    run: &Run<'_>,
    hooks: &mut dyn Hooks,
    who: Role,
    id_b: &str,
    face: Option<crate::engine::mental_poker::game::Face>,
    call_suit: Option<u8>,
) -> Result<(), Stop> {
    let g = game(hooks)?;
    let card = face.map_or_else(|| format!("card {id_b}"), |f| g.card_name(f));
    let call = call_suit
        .map(|s| format!(", calls {}", g.suit_name(s)))
        .unwrap_or_default();
    run.ctx.emit(
        "play_verified",
        obj([("who", who.as_str().into()), ("id_b", id_b.into())]),
        Some(format!("{} played {card}{call}", who.as_str())),
    );
    Ok(())
}

/// What the table looks like from this side: the game's fields, the hand
/// (by id-B string), the stock and the opponent's hand size.
pub(super) fn table(g: &dyn CardGame, side: &Side) -> Map {
    let mut snap = g.snapshot_extras();
    let hand: Vec<Value> = side
        .hand
        .iter()
        .map(|(id, (r, s))| {
            Value::Object(obj([
                ("id_b", id.as_str().into()),
                ("rank", i64::from(*r).into()),
                ("suit", i64::from(*s).into()),
            ]))
        })
        .collect();
    snap.insert("hand", Value::Array(hand));
    snap.insert("stock_count", Value::from(side.ledger.stock_len() as i64));
    snap.insert(
        "opponent_hand_count",
        Value::from(side.ledger.hand_of(side.role.peer()).len() as i64),
    );
    snap
}

/// This side's action for its turn, under its control mode.
async fn select(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    m: &mut Match,
) -> Result<CardAction, Stop> {
    let ctx = run.ctx;
    let seq = m.action_seq;
    m.action_seq += 1;
    let mode = ctx.control_mode;
    let g = game(hooks)?;
    let legal = g.legal_actions(&view(&m.side, false));
    let mut snap = table(g, &m.side);
    let human = mode == ControlMode::Human;
    for (k, v) in [
        (
            "phase",
            Value::from(if human { "action_required" } else { "playing" }),
        ),
        ("action_seq", Value::from(seq as i64)),
        (
            "legal_actions",
            Value::Array(legal.into_iter().map(Value::Object).collect()),
        ),
        (
            "last_event",
            Value::Object(obj([
                (
                    "summary",
                    Value::from(if human {
                        "Choose a card action"
                    } else {
                        "Selecting card action"
                    }),
                ),
                (
                    "structured",
                    Value::Object(obj([
                        ("action_seq", Value::from(seq as i64)),
                        ("control_mode", Value::from(mode.as_str())),
                    ])),
                ),
            ])),
        ),
    ] {
        snap.insert(k, v);
    }
    ctx.sink.snapshot(snap);
    if human {
        // A person reads the table before answering: it is on disk before
        // the decision window opens.
        ctx.sink.flush();
    }
    let window = Window {
        match_key: "action_seq",
        match_value: Value::from(seq as i64),
        auto: Map::new(),
        value_field: "kind",
        policy: None,
    };
    let explicit = match mode {
        ControlMode::Autonomous => None,
        ControlMode::Hybrid => match ctx.decider.decide(mode, &window).await {
            Ok(Decided::Explicit(d)) => match coerce(game(hooks)?, &m.side, &d) {
                Ok(a) => Some(a),
                Err(reason) => {
                    ctx.emit(
                        "local_decision_rejected",
                        obj([
                            ("match_key", "action_seq".into()),
                            ("match_value", Value::from(seq as i64)),
                            ("reason", reason.as_str().into()),
                            ("decision", Value::Object(d)),
                        ]),
                        Some(format!("Decision rejected, playing on its own: {reason}")),
                    );
                    None
                }
            },
            _ => None,
        },
        ControlMode::Human => match ctx.decider.decide(mode, &window).await {
            Ok(Decided::Explicit(d)) => {
                Some(coerce(game(hooks)?, &m.side, &d).map_err(|reason| {
                    Stop::from(HookError::IllegalDecision {
                        match_key: "action_seq".into(),
                        match_value: Value::from(seq as i64),
                        reason,
                        decision: d.clone(),
                    })
                })?)
            }
            Ok(Decided::Auto) => {
                return Err(Stop::from(HookError::DecisionFailed(format!(
                    "no decision for action_seq={seq}"
                ))));
            }
            Err(e) => return Err(Stop::from(HookError::DecisionFailed(e.to_string()))),
        },
    };
    let g = game(hooks)?;
    match explicit {
        Some(a) => {
            g.apply_local(&view(&m.side, false), &a);
            ctx.sink.snapshot(obj([
                ("phase", "action_submitted".into()),
                (
                    "last_event",
                    Value::Object(obj([
                        ("summary", format!("Submitted {}", a.kind()).into()),
                        (
                            "structured",
                            Value::Object(obj([
                                ("action_seq", Value::from(seq as i64)),
                                ("action", Value::Object(a.to_map())),
                            ])),
                        ),
                    ])),
                ),
            ]));
            Ok(a)
        }
        None => Ok(g.choose_action(&view(&m.side, false))),
    }
}

/// Our own action, sent.
async fn act(run: &mut Run<'_>, hooks: &mut dyn Hooks, m: &mut Match) -> Result<bool, Stop> {
    let role = run.ctx.role;
    let mut action = select(run, hooks, m).await?;
    match m.fault {
        Some(Fault::CardNotInHand) if matches!(action, CardAction::Play { .. }) => {
            if let Some(stock) = m.side.ledger.next_stock_id() {
                let (id, call) = (stock.to_owned(), None);
                return cheat_play(run, hooks, &id, call).await.map(|_| false);
            }
        }
        Some(Fault::PlayTwice) if matches!(action, CardAction::Play { .. }) => {
            if let Some(id) = m.played_last.clone() {
                return cheat_play(run, hooks, &id, None).await.map(|_| false);
            }
        }
        _ => {}
    }
    match &mut action {
        CardAction::Play { id_b, call_suit } => {
            let mut frame = m.side.play_frame(id_b, *call_suit)?;
            let id_b = id_b.clone();
            match m.fault {
                Some(Fault::UnknownField) => {
                    frame.insert("x_unknown", 1.into());
                    run.send_control(frame.clone(), hooks).await?;
                }
                Some(Fault::NullCallSuit) if call_suit.is_none() => {
                    frame.insert("call_suit", Value::Null);
                    run.send_control(frame.clone(), hooks).await?;
                }
                _ => run.send(frame.clone(), hooks).await?,
            }
            let face = m.side.hand.get(&id_b).copied();
            m.side.apply_play(role, &frame)?;
            m.played_last = Some(id_b.clone());
            played(run, hooks, role, &id_b, face, *call_suit)?;
            Ok(false)
        }
        CardAction::Draw => {
            let id_b = m
                .side
                .ledger
                .next_stock_id()
                .ok_or_else(|| {
                    Stop::from(HookError::Invalid(
                        "draw requested but stock is empty".into(),
                    ))
                })?
                .to_owned();
            m.emit(
                run,
                "draw_started",
                obj([
                    ("who", role.as_str().into()),
                    ("id_b", id_b.as_str().into()),
                ]),
            );
            let done = own_ot(run, hooks, m, &id_b, Some("draw")).await?;
            m.side.record_draw(role, &done.ot_id)?;
            Ok(false)
        }
        CardAction::Pass => {
            run.send(obj([("action", "mp_pass".into())]), hooks).await?;
            m.emit(run, "pass_exchanged", obj([("who", role.as_str().into())]));
            m.side.record_pass(role)?;
            Ok(true)
        }
    }
}

/// A play of a card this side does not hold (adversarial only): sent with
/// whatever keys it has, unvalidated; the peer must refuse it.
async fn cheat_play(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    id_b: &str,
    call_suit: Option<u8>,
) -> Result<(), Stop> {
    let frame = obj([
        ("action", "mp_play".into()),
        ("id_b", id_b.into()),
        ("k_inner", "00".repeat(32).into()),
        ("k_outer", "00".repeat(32).into()),
        ("rank", 0.into()),
        ("suit", 0.into()),
    ]);
    let _ = call_suit;
    run.send_control(frame, hooks).await?;
    // The honest peer answers with an error frame and closes.
    let answer = run.recv(hooks).await?;
    Err(Stop::PeerError(answer))
}

/// The peer's action.
async fn react(run: &mut Run<'_>, hooks: &mut dyn Hooks, m: &mut Match) -> Result<bool, Stop> {
    let peer = run.ctx.role.peer();
    let msg = run.recv(hooks).await?;
    match action_of(&msg) {
        "mp_play" => {
            let face = match m.side.verify_peer_play(&msg) {
                Ok(f) => f,
                Err(reason) => return Err(rejected(run, m, reason, "play_rejected")),
            };
            let call_suit = msg
                .get("call_suit")
                .and_then(Value::as_i64)
                .and_then(|c| u8::try_from(c).ok());
            let g = game(hooks)?;
            if let Err(reason) = g.validate_peer_play(&view(&m.side, false), peer, face, call_suit)
            {
                return Err(rejected(run, m, reason, "rule_rejected"));
            }
            m.side.apply_play(peer, &msg)?;
            let id_b = msg.get_str("id_b").unwrap_or_default();
            played(run, hooks, peer, id_b, Some(face), call_suit)?;
            Ok(false)
        }
        "mp_ot_request" => {
            let id_b = m
                .side
                .ledger
                .next_stock_id()
                .ok_or_else(|| Stop::Unexpected {
                    error: "draw requested but stock is empty".into(),
                })?
                .to_owned();
            let ot_id = peer_ot(run, hooks, m, &msg, &id_b, Some("draw")).await?;
            m.side.record_draw(peer, &ot_id)?;
            m.emit(
                run,
                "draw_completed",
                obj([("who", peer.as_str().into()), ("id_b", id_b.into())]),
            );
            Ok(false)
        }
        "mp_pass" => {
            m.emit(run, "pass_exchanged", obj([("who", peer.as_str().into())]));
            m.side.record_pass(peer)?;
            Ok(true)
        }
        "error" => Err(Stop::PeerError(msg)),
        other => Err(Stop::Unexpected {
            error: format!("unexpected play-loop message: '{other}'"),
        }),
    }
}

fn rejected(run: &Run<'_>, m: &mut Match, reason: &'static str, tell: &'static str) -> Stop {
    m.emit(
        run,
        "play_rejected",
        obj([
            ("who", run.ctx.role.peer().as_str().into()),
            ("reason", reason.into()),
        ]),
    );
    Stop::Refused {
        reason,
        error: format!("the peer's play was refused: {reason}"),
        tell: Some(tell),
    }
}

/// Turns until a winner, a stall (two passes in a row) or two empty hands.
pub(super) async fn play_loop(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    m: &mut Match,
) -> Result<Option<&'static str>, Stop> {
    let role = run.ctx.role;
    let mut turn: u64 = 0;
    let mut passes = 0u32;
    run.phase("playing", "Cards dealt");
    loop {
        let actor = if turn.is_multiple_of(2) {
            Role::Host
        } else {
            Role::Guest
        };
        run.round = Some(turn);
        let passed = if actor == role {
            act(run, hooks, m).await?
        } else {
            react(run, hooks, m).await?
        };
        passes = if passed { passes + 1 } else { 0 };
        let stalled = passes >= 2;
        let g = game(hooks)?;
        let winner = g.check_winner(&view(&m.side, stalled));
        turn += 1;
        let emptied = m.side.hand.is_empty() && m.side.ledger.hand_of(role.peer()).is_empty();
        if winner.is_some() || stalled || emptied {
            // The table as it ended (the last snapshot was of our last turn).
            let mut last = table(g, &m.side);
            last.insert("legal_actions", Value::Array(Vec::new()));
            run.ctx.sink.snapshot(last);
            return Ok(winner);
        }
    }
}
