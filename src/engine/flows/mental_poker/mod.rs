//! The `mental_poker` flow: two-party card games with hidden hands, frame
//! for frame as the reference engine. Setup (layered deck, sealed OT
//! tables), the deal (one blind-RSA OT per card), the play loop with strict
//! turn parity, then the simultaneous opening, witness, audit and signed
//! receipt. The cryptography and the ledger live in
//! [`crate::engine::mental_poker`]; the rules in the game's [`CardGame`].

use super::{Ending, HookError, Hooks, Run, Stop, action_of, obj};

mod turns;
use crate::engine::Role;
use crate::engine::evidence_log::{EvidenceLog, MP_RECEIPT_FILE, MP_TRANSCRIPT_FILE};
use crate::engine::mental_poker::audit::audit;
use crate::engine::mental_poker::fault::Fault;
use crate::engine::mental_poker::game::{CardGame, Face, TableView};
use crate::engine::mental_poker::keys::RsaKey;
use crate::engine::mental_poker::ot::Table;
use crate::engine::mental_poker::pending::PendingKey;
use crate::engine::mental_poker::side::{PendingOt, SealedTable, Side, table_of};
use crate::engine::mental_poker::{MpError, receipt};
use crate::identity::KeyPair;
use crate::json::{Map, Value};
use std::sync::Arc;
use turns::play_loop;

impl From<MpError> for Stop {
    fn from(e: MpError) -> Self {
        match e {
            MpError::Invalid(error) => Stop::Invalid { error },
            MpError::Unexpected(error) => Stop::Unexpected { error },
            MpError::Refused { reason, detail } => Stop::Refused {
                reason,
                error: detail,
                tell: None,
            },
            MpError::Crypto(c) => Stop::from(HookError::Invalid(c.to_string())),
        }
    }
}

fn game(hooks: &mut dyn Hooks) -> Result<&mut dyn CardGame, Stop> {
    hooks.card_game().ok_or_else(|| {
        Stop::from(HookError::Invalid(
            "this protocol's hooks do not implement a mental_poker card game".into(),
        ))
    })
}

fn view<'a>(side: &'a Side, stalled: bool) -> TableView<'a> {
    TableView {
        role: side.role,
        hand: &side.hand,
        ledger: &side.ledger,
        stalled,
    }
}

/// The protocol id the OT contexts bind: the spec's own `protocol_id`
/// field when it has one, else its name (the reference's rule — not the
/// content hash).
fn context_pid(run: &Run<'_>) -> String {
    run.spec
        .get("protocol_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .or_else(|| run.spec.name().filter(|s| !s.is_empty()).map(str::to_owned))
        .unwrap_or_else(|| "mental-poker".into())
}

/// The tokens of a whole table, computed on two blocking threads.
async fn tokens(
    key: RsaKey,
    pid: String,
    sid: String,
    table: Table,
    n: usize,
) -> Result<(RsaKey, Vec<num_bigint::BigUint>), Stop> {
    let half = n / 2;
    let (k1, p1, s1) = (key.clone(), pid.clone(), sid.clone());
    let first =
        tokio::task::spawn_blocking(move || SealedTable::tokens(&k1, &p1, &s1, table, 0..half));
    let second = tokio::task::spawn_blocking(move || {
        let t = SealedTable::tokens(&key, &pid, &sid, table, half..n);
        (key, t)
    });
    let joined = |e: tokio::task::JoinError| {
        Stop::from(HookError::Invalid(format!(
            "building the sealed table: {e}"
        )))
    };
    let mut all = first.await.map_err(joined)?;
    let (key, rest) = second.await.map_err(joined)?;
    all.extend(rest);
    Ok((key, all))
}

/// Starts the session key and this side's tokens as soon as the match
/// starts, so that they are ready when the setup frame is due.
fn start_tokens(
    run: &Run<'_>,
    pid: &str,
    sid: &str,
    n: usize,
) -> tokio::task::JoinHandle<Result<(RsaKey, Vec<num_bigint::BigUint>), Stop>> {
    let pending = run
        .ctx
        .binding
        .rsa
        .lock()
        .ok()
        .and_then(|mut p| p.take())
        .unwrap_or_else(PendingKey::start);
    let (pid, sid, table) = (pid.to_owned(), sid.to_owned(), table_of(run.ctx.role));
    tokio::spawn(async move {
        let key = pending
            .wait()
            .await
            .map_err(|e| Stop::from(HookError::Invalid(e.to_string())))?;
        tokens(key, pid, sid, table, n).await
    })
}

struct Match {
    side: Side,
    identity: Arc<KeyPair>,
    universe: Vec<Face>,
    fault: Option<Fault>,
    /// This side's own decision counter.
    action_seq: u64,
    played_last: Option<String>,
    /// Cards dealt: (host, guest).
    deal: (usize, usize),
    /// The transcript's entries as they come (`{"seq", "type", "payload"}`),
    /// for replay bundles to recompute its root from.
    log: EvidenceLog,
    /// Transcript entries written to `log` so far.
    logged: usize,
}

impl Match {
    fn emit(&mut self, run: &Run<'_>, kind: &'static str, data: Map) {
        self.log_transcript();
        let summary = summary(kind, &data);
        run.ctx.emit(kind, data, summary);
    }

    /// Writes the transcript entries appended since the last call.
    fn log_transcript(&mut self) {
        for (seq, kind, payload) in self.side.transcript.entries_from(self.logged) {
            let line = obj([
                ("seq", Value::from(seq)),
                ("type", kind.into()),
                (
                    "payload",
                    crate::json::parse_bytes(payload).unwrap_or(Value::Null),
                ),
            ]);
            self.log.append(&line);
        }
        self.logged = self.side.transcript.len();
    }
}

/// The feed's words for the flow's events (None: the event speaks for
/// itself or is too fine-grained to show).
fn summary(kind: &str, data: &Map) -> Option<String> {
    let who = data.get_str("who").unwrap_or("?");
    Some(match kind {
        "mp_setup_completed" => format!(
            "Deck of {} cards sealed and shuffled",
            data.get("deck_size").map(Value::py_str).unwrap_or_default()
        ),
        "draw_started" => format!("{who} draws from the stock"),
        "draw_completed" => format!("{who} drew a card"),
        "pass_exchanged" => format!("{who} passes"),
        "mp_opening_sent" => "Opening every key for the audit".into(),
        "audit_started" => "Auditing the match".into(),
        "audit_passed" => "Audit passed: the deal and every card were fair".into(),
        "mp_terminal_receipt_signed" => "Transcript signed".into(),
        _ => return None,
    })
}

pub(super) async fn mental_poker(run: &mut Run<'_>, hooks: &mut dyn Hooks) -> Result<Ending, Stop> {
    let ctx = run.ctx;
    let role = ctx.role;
    let universe = game(hooks)?.deck_universe();
    let (deal_h, deal_g) = game(hooks)?.initial_deal();
    let pid = context_pid(run);
    let sid = ctx
        .binding
        .session_id
        .clone()
        .unwrap_or_else(|| "mp-session".into());
    let identity = ctx
        .binding
        .identity
        .clone()
        .unwrap_or_else(|| Arc::new(KeyPair::generate()));
    let building = start_tokens(run, &pid, &sid, universe.len());
    let mut m = Match {
        side: Side::new(role, &pid, &sid),
        identity,
        universe,
        fault: ctx.binding.fault,
        action_seq: 0,
        played_last: None,
        deal: (deal_h, deal_g),
        log: EvidenceLog::open(ctx.sink.state_dir().as_deref(), MP_TRANSCRIPT_FILE),
        logged: 0,
    };
    let result = play_match(run, hooks, &mut m, building).await;
    m.log_transcript();
    if let Some(error) = m.log.take_error() {
        ctx.emit(
            "evidence_log_not_saved",
            obj([
                ("file", MP_TRANSCRIPT_FILE.into()),
                ("error", error.as_str().into()),
            ]),
            Some(format!("The transcript log was not saved: {error}")),
        );
    }
    if result.is_err() {
        run.audit_passed.get_or_insert(false);
    }
    result
}

async fn play_match(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    m: &mut Match,
    building: tokio::task::JoinHandle<Result<(RsaKey, Vec<num_bigint::BigUint>), Stop>>,
) -> Result<Ending, Stop> {
    let role = run.ctx.role;
    let built = async {
        building
            .await
            .map_err(|e| Stop::from(HookError::Invalid(format!("session key: {e}"))))?
    };
    match role {
        Role::Host => {
            let join = run.expect("join", None, hooks).await?;
            let _ = join;
            run.send(obj([("action", "ready".into())]), hooks).await?;
            m.emit(run, "mp_setup_started", obj([("role", "host".into())]));
            let payloads = m.side.host_deck(&m.universe);
            let (key, toks) = built.await?;
            let table =
                SealedTable::seal(key, toks, &m.side.pid, &m.side.sid, Table::Host, &payloads)
                    .map_err(MpError::from)?;
            let frame = m.side.setup_frame(table)?;
            send_setup(run, hooks, m, frame).await?;
            let b = run.expect("mp_setup_b", None, hooks).await?;
            m.side.apply_setup(&b)?;
        }
        Role::Guest => {
            run.send(obj([("action", "join".into())]), hooks).await?;
            run.expect("ready", None, hooks).await?;
            m.emit(run, "mp_setup_started", obj([("role", "guest".into())]));
            let a = run.expect("mp_setup_a", None, hooks).await?;
            m.side.apply_setup(&a)?;
            let payloads = m.side.guest_deck();
            let (key, mut toks) = built.await?;
            if toks.len() != payloads.len() {
                // The host's deck is not the size our rules name: the
                // tokens are made again for the deck on the table.
                let (k, t) = tokens(
                    key.clone(),
                    m.side.pid.clone(),
                    m.side.sid.clone(),
                    Table::Guest,
                    payloads.len(),
                )
                .await?;
                toks = t;
                let _ = k;
            }
            let table =
                SealedTable::seal(key, toks, &m.side.pid, &m.side.sid, Table::Guest, &payloads)
                    .map_err(MpError::from)?;
            let frame = m.side.setup_frame(table)?;
            send_setup(run, hooks, m, frame).await?;
        }
    }
    m.side.plan_deal(m.deal.0, m.deal.1)?;
    deal(run, hooks, m).await?;
    let winner = play_loop(run, hooks, m).await?;
    finalize(run, hooks, m, winner).await
}

/// Sends our setup frame (with the adversarial faults that touch it).
async fn send_setup(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    m: &mut Match,
    mut frame: Map,
) -> Result<(), Stop> {
    match m.fault {
        Some(Fault::ShortModulus) => {
            let short = m
                .side
                .public(table_of(run.ctx.role))
                .map(|p| p.n() >> 1usize)?;
            let text = crate::json::canonical::to_string_ordered(&Value::Object(obj([
                ("e", Value::from(65537)),
                ("n", Value::from(short.to_str_radix(16))),
            ])));
            frame.insert("rsa_pub", text.into());
        }
        Some(Fault::TamperBlob) if run.ctx.role == Role::Guest => {
            if let Some(Value::Array(blobs)) = frame.get_mut("blobs")
                && let Some(Value::String(last)) = blobs.last_mut()
            {
                let flipped = if last.ends_with('0') { '1' } else { '0' };
                let mut text = last.to_string();
                text.pop();
                text.push(flipped);
                *last = text.into();
            }
            // Our own transcript keeps the honest blob: the host's audit
            // fails before any root is compared.
        }
        _ => {}
    }
    let size = m.side.deck_size as i64;
    run.send(frame, hooks).await?;
    m.emit(
        run,
        "mp_setup_completed",
        obj([
            ("role", run.ctx.role.as_str().into()),
            ("deck_size", size.into()),
        ]),
    );
    Ok(())
}

/// One of our OTs for card `id_b`, start to finish.
async fn own_ot(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    m: &mut Match,
    id_b: &str,
    kind: Option<&'static str>,
) -> Result<PendingOtDone, Stop> {
    let (frame, pending) = if m.fault == Some(Fault::Peek) && m.side.my_witnesses.is_empty() {
        // Ask for the key of the last card of the deck instead.
        let other = (m.side.deck_size - 1).to_string();
        let (f, mut p) = m.side.request_ot(&other)?;
        m.side.ot_id_to_idb.insert(p.ot_id.clone(), id_b.to_owned());
        p.id_b = other;
        (f, p)
    } else {
        m.side.request_ot(id_b)?
    };
    let mut started = obj([
        ("ot_id", pending.ot_id.as_str().into()),
        ("direction", "sent".into()),
    ]);
    if let Some(k) = kind {
        started.insert("kind", k.into());
    }
    m.emit(run, "mp_ot_started", started);
    run.send(frame, hooks).await?;
    let resp = run.expect("mp_ot_response", None, hooks).await?;
    if resp.get_str("id") != Some(pending.ot_id.as_str()) {
        return Err(Stop::Unexpected {
            error: format!(
                "OT response '{}' while '{}' is open",
                resp.get_str("id").unwrap_or_default(),
                pending.ot_id
            ),
        });
    }
    let (ot_id, label) = (pending.ot_id.clone(), pending.label.clone());
    let peeked = pending.id_b != id_b;
    finish(
        m,
        pending,
        resp.get_str("y").unwrap_or_default(),
        id_b,
        peeked,
    )?;
    let mut done = obj([
        ("ot_id", ot_id.as_str().into()),
        ("label", label.as_str().into()),
    ]);
    if let Some(k) = kind {
        done.insert("kind", k.into());
    }
    m.emit(run, "mp_ot_completed", done);
    Ok(PendingOtDone { ot_id })
}

struct PendingOtDone {
    ot_id: String,
}

fn finish(m: &mut Match, p: PendingOt, y: &str, id_b: &str, peeked: bool) -> Result<(), Stop> {
    if peeked {
        // The cheat learns another card's face; its dealt card stays
        // unknown to it (and unplayable), as a real peek would leave it.
        m.side.finish_peek(p, y, id_b)?;
    } else {
        m.side.finish_ot(p, y)?;
    }
    Ok(())
}

/// Answers the peer's OT for card `id_b`.
async fn peer_ot(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    m: &mut Match,
    req: &Map,
    id_b: &str,
    kind: Option<&'static str>,
) -> Result<String, Stop> {
    let ot_id = req.get_str("id").unwrap_or_default().to_owned();
    let mut started = obj([
        ("ot_id", ot_id.as_str().into()),
        ("direction", "received".into()),
    ]);
    if let Some(k) = kind {
        started.insert("kind", k.into());
    }
    m.emit(run, "mp_ot_started", started);
    let resp = m.side.answer_ot(req, id_b)?;
    run.send(resp, hooks).await?;
    Ok(ot_id)
}

async fn deal(run: &mut Run<'_>, hooks: &mut dyn Hooks, m: &mut Match) -> Result<(), Stop> {
    let role = run.ctx.role;
    for (owner, ids) in [
        (Role::Guest, m.side.guest_deal.clone()),
        (Role::Host, m.side.host_deal.clone()),
    ] {
        for id_b in ids {
            m.emit(
                run,
                "deal_requested",
                obj([("owner", owner.as_str().into())]),
            );
            if owner == role {
                own_ot(run, hooks, m, &id_b, None).await?;
            } else {
                let req = run.expect("mp_ot_request", None, hooks).await?;
                peer_ot(run, hooks, m, &req, &id_b, None).await?;
            }
        }
    }
    Ok(())
}

/// Opening, witnesses, audit and receipts, each sent before the peer's is
/// read (both sides do the same, so nobody waits on the other).
async fn finalize(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    m: &mut Match,
    winner: Option<&'static str>,
) -> Result<Ending, Stop> {
    let peer = run.ctx.role.peer();
    let refused = |run: &Run<'_>, got: &Map| {
        run.ctx.emit(
            "audit_refused",
            obj([("peer_role", peer.as_str().into())]),
            Some("The peer did not take part in the audit".into()),
        );
        Stop::Refused {
            reason: "audit_refused",
            error: format!(
                "the peer sent '{}' instead of its part of the audit",
                action_of(got)
            ),
            tell: None,
        }
    };
    run.phase("auditing", "Opening the deck");
    let forge = match m.fault {
        Some(Fault::ForgeToken) => Some(if run.ctx.role == Role::Host {
            "h-0"
        } else {
            "g-0"
        }),
        _ => None,
    };
    let mut opening = m.side.opening_frame(forge)?;
    if m.fault == Some(Fault::WrongKey) && run.ctx.role == Role::Host {
        rewrite_entry(
            &mut opening,
            "openings",
            |e| e.get_str("kind") == Some("k_inner"),
            |e| flip_hex(e, "k"),
        );
    }
    let count = opening
        .get("openings")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    run.send(opening, hooks).await?;
    m.emit(
        run,
        "mp_opening_sent",
        obj([("entry_count", (count as i64).into())]),
    );
    let theirs = run.recv(hooks).await?;
    if action_of(&theirs) != "mp_opening" {
        return Err(refused(run, &theirs));
    }
    m.side.apply_opening(&theirs)?;
    m.emit(run, "mp_opening_received", Map::new());

    let mut witness = m.side.witness_frame(None);
    if m.fault == Some(Fault::BadWitness) {
        rewrite_entry(&mut witness, "witnesses", |_| true, |e| flip_hex(e, "r"));
    }
    run.send(witness, hooks).await?;
    m.emit(run, "mp_witness_sent", Map::new());
    let theirs = run.recv(hooks).await?;
    if action_of(&theirs) != "mp_witness" {
        return Err(refused(run, &theirs));
    }
    m.side.apply_witness(&theirs)?;
    m.emit(run, "mp_witness_received", Map::new());

    m.emit(run, "audit_started", Map::new());
    if let Err(f) = audit(&m.side, &m.universe) {
        run.ctx.emit(
            "audit_failed",
            obj([
                ("reason", f.reason.into()),
                ("evidence", Value::Object(f.evidence.clone())),
            ]),
            Some(format!("Audit failed: {}", f.reason)),
        );
        run.audit_passed = Some(false);
        return Err(Stop::Refused {
            reason: f.reason,
            error: format!(
                "the audit failed: {}",
                crate::json::canonical::to_string(&Value::Object(f.evidence))
            ),
            tell: None,
        });
    }
    m.emit(run, "audit_passed", Map::new());
    let root = m.side.transcript.root();
    let thash = m.side.transcript.root_hex();
    let signed_root = if m.fault == Some(Fault::ReceiptOtherRoot) {
        let mut r = root;
        r[0] ^= 1;
        r
    } else {
        root
    };
    let our_signature = receipt::sign(&m.identity, &signed_root);
    let receipt = obj([
        ("action", "mp_terminal_receipt".into()),
        ("transcript_hash", thash.as_str().into()),
        ("signature", our_signature.as_str().into()),
        ("audit_status", "passed".into()),
        ("public_key", m.identity.public_key.as_str().into()),
    ]);
    run.send(receipt, hooks).await?;
    m.emit(
        run,
        "mp_terminal_receipt_signed",
        obj([("transcript_hash", thash.as_str().into())]),
    );
    let theirs = run.recv(hooks).await?;
    if action_of(&theirs) != "mp_terminal_receipt" {
        return Err(refused(run, &theirs));
    }
    let their_key = theirs.get_str("public_key").unwrap_or_default();
    let bound = run
        .ctx
        .binding
        .peer_public_key
        .as_deref()
        .is_none_or(|k| k == their_key);
    let ok = theirs.get_str("transcript_hash") == Some(thash.as_str())
        && bound
        && receipt::verify(
            their_key,
            &root,
            theirs.get_str("signature").unwrap_or_default(),
        );
    m.emit(
        run,
        "mp_terminal_receipt_verified",
        obj([
            ("transcript_hash", thash.as_str().into()),
            ("peer_signature_ok", ok.into()),
        ]),
    );
    run.transcript_hash = Some(thash.clone());
    if !ok {
        run.ctx.emit(
            "audit_failed",
            obj([("reason", "peer_receipt_signature_invalid".into())]),
            Some("The peer's receipt does not verify".into()),
        );
        run.audit_passed = Some(false);
        return Err(Stop::Refused {
            reason: "peer_receipt_signature_invalid",
            error: "the peer's receipt is not a signature of our transcript by its key".into(),
            tell: None,
        });
    }
    run.audit_passed = Some(true);
    let theirs_sig = theirs.get_str("signature").unwrap_or_default();
    // Every entry the receipt signs is in the log before the receipt is.
    m.log_transcript();
    if let Some(dir) = run.ctx.sink.state_dir()
        && let Err(e) = crate::fsutil::write_atomic(
            &dir.join(MP_RECEIPT_FILE),
            receipt_file(&thash, &our_signature, theirs_sig).as_bytes(),
        )
    {
        run.ctx.emit(
            "transcript_receipt_not_saved",
            obj([("error", e.to_string().into())]),
            Some(format!("The transcript receipt was not saved: {e}")),
        );
    }
    run.ctx.emit(
        "game_over",
        obj([
            ("outcome", winner.map_or(Value::Null, Value::from)),
            ("audit_status", "passed".into()),
        ]),
        Some(format!(
            "Game over: {} (audit passed, transcript {})",
            winner.unwrap_or("no winner"),
            &thash[..16]
        )),
    );
    Ok(Ending {
        completed: true,
        reason: "completed",
        winner: winner.map(str::to_owned),
        error: None,
    })
}

/// `transcript_receipt.json`'s text, byte for byte as the reference's
/// `json.dumps` writes it (its default separators, this key order).
fn receipt_file(transcript_hash: &str, signature: &str, peer_signature: &str) -> String {
    let q = |s: &str| {
        let mut out = Vec::new();
        crate::json::canonical::write_str(s, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    format!(
        "{{\"transcript_hash\": {}, \"signature\": {}, \"peer_signature\": {}, \"audit_status\": \"passed\"}}",
        q(transcript_hash),
        q(signature),
        q(peer_signature)
    )
}

/// Rewrites the first entry of a frame's list of JSON strings that
/// `pick` accepts (adversarial faults only).
fn rewrite_entry(
    frame: &mut Map,
    list: &str,
    pick: impl Fn(&Map) -> bool,
    edit: impl Fn(&mut Map),
) {
    let Some(Value::Array(items)) = frame.get_mut(list) else {
        return;
    };
    for item in items.iter_mut() {
        let Some(Ok(Value::Object(mut e))) = item.as_str().map(crate::json::parse_str) else {
            continue;
        };
        if pick(&e) {
            edit(&mut e);
            *item = crate::json::canonical::to_string_ordered(&Value::Object(e)).into();
            return;
        }
    }
}

/// Flips the last hex digit of a string field.
fn flip_hex(e: &mut Map, key: &str) {
    if let Some(Value::String(s)) = e.get_mut(key) {
        let mut text = s.to_string();
        if let Some(c) = text.pop() {
            text.push(if c == '0' { '1' } else { '0' });
            *s = text.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receipt_file_is_written_as_the_references_json_dumps_writes_it() {
        // aigenora 0.1.4's transcript_receipt.json: default separators,
        // this key order, no newline at the end.
        assert_eq!(
            receipt_file("ab12", "cd34", "ef\"56"),
            r#"{"transcript_hash": "ab12", "signature": "cd34", "peer_signature": "ef\"56", "audit_status": "passed"}"#
        );
    }
}
