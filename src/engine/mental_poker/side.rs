//! One side's state of a mental-poker match, without I/O: it builds the
//! frames this side sends, checks and records the ones it receives, keeps
//! the ledger and the transcript, and holds the secrets (per-card keys, the
//! session RSA key, OT blinding factors) until the match is opened.
//!
//! Names follow the reference: the Host seals every card under `k_inner`
//! (id-A space, table labels `h-<id_a>`), the Guest re-seals and shuffles
//! under `k_outer` (id-B space, labels `g-<id_b>`); OT ids are
//! `host-<n>`/`guest-<n>` per requesting side.

use super::deck::{self, INNER_LEN, KEY_LEN, OUTER_LEN, PAD_LEN};
use super::game::Face;
use super::keys::{RsaKey, RsaPub, random_unit};
use super::ledger::Ledger;
use super::num::{from_hex, from_hex_array, hex512, int_from_hex, json_int};
use super::ot::{self, Table};
use super::transcript::Transcript;
use super::{CryptoError, MpError};
use crate::engine::Role;
use crate::json::{Map, Value, canonical};
use num_bigint::BigUint;
use std::collections::{BTreeMap, HashMap};

/// The table a role publishes.
pub fn table_of(role: Role) -> Table {
    match role {
        Role::Host => Table::Host,
        Role::Guest => Table::Guest,
    }
}

fn prefix(table: Table) -> &'static str {
    match table {
        Table::Host => "h",
        Table::Guest => "g",
    }
}

/// A disclosed OT blinding factor: which label an OT asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    pub ot_id: String,
    pub label: String,
    pub r: BigUint,
}

impl Witness {
    /// The wire form `{"ot_id":…,"label":…,"r":"<512 hex>"}`.
    pub fn to_wire(&self) -> String {
        canonical::to_string_ordered(&Value::Object(crate::obj! {
            "ot_id" => self.ot_id.as_str(),
            "label" => self.label.as_str(),
            "r" => hex512(&self.r),
        }))
    }

    /// The transcript form, `r` as an exact decimal integer.
    pub fn to_transcript(&self) -> Value {
        Value::Object(crate::obj! {
            "ot_id" => self.ot_id.as_str(),
            "label" => self.label.as_str(),
            "r" => json_int(&self.r),
        })
    }
}

/// One side's table, built off the runtime (it costs one RSA private
/// operation per card).
pub struct SealedTable {
    pub key: RsaKey,
    /// Per label index: the RSA token `FDH(ctx)^d`.
    pub tokens: Vec<BigUint>,
    /// Per label index: hex of `nonce ‖ AEAD(token key, payload, AAD = ctx)`.
    pub sealed: Vec<String>,
}

impl SealedTable {
    /// The tokens of labels `<prefix>-<i>` for `i` in `range`: one RSA
    /// private operation each (the costly part, done while waiting).
    pub fn tokens(
        key: &RsaKey,
        pid: &str,
        sid: &str,
        table: Table,
        range: std::ops::Range<usize>,
    ) -> Vec<BigUint> {
        range
            .map(|i| {
                let ctx = ot::context(pid, sid, table, &format!("{}-{i}", prefix(table)));
                key.private_op(&ot::fdh_for_key(&ctx, key).1)
            })
            .collect()
    }

    /// Seals `payloads[i]` under the token of label `<prefix>-<i>`.
    pub fn seal(
        key: RsaKey,
        tokens: Vec<BigUint>,
        pid: &str,
        sid: &str,
        table: Table,
        payloads: &[[u8; KEY_LEN]],
    ) -> Result<SealedTable, CryptoError> {
        if tokens.len() != payloads.len() {
            return Err(CryptoError::Length {
                expected: payloads.len(),
                got: tokens.len(),
            });
        }
        let mut sealed = Vec::with_capacity(payloads.len());
        for (i, (payload, token)) in payloads.iter().zip(&tokens).enumerate() {
            let ctx = ot::context(pid, sid, table, &format!("{}-{i}", prefix(table)));
            let tk = ot::token_key(token, &ctx)?;
            let nonce: [u8; 12] = rand::random();
            sealed.push(hex::encode(ot::seal_entry(&tk, &nonce, payload, &ctx)));
        }
        Ok(SealedTable {
            key,
            tokens,
            sealed,
        })
    }
}

/// What this side asked for in one of its own OTs, until the answer comes.
pub struct PendingOt {
    pub ot_id: String,
    pub id_b: String,
    pub label: String,
    pub z: BigUint,
    r: BigUint,
    r_inv: BigUint,
}

/// The public material of one table, as this side knows it.
#[derive(Default)]
pub struct TableState {
    pub public: Option<RsaPub>,
    /// Per index, the sealed entry's hex as sent or received.
    pub sealed: Vec<String>,
    /// Ours only: the key and tokens (disclosed at the end).
    pub secret: Option<SealedTable>,
}

pub struct Side {
    pub role: Role,
    pub pid: String,
    pub sid: String,
    pub transcript: Transcript,
    pub ledger: Ledger,
    pub deck_size: usize,
    /// Host only: per id-A.
    k_inner: Vec<[u8; KEY_LEN]>,
    /// Both: per id-A.
    pub blob_a: Vec<[u8; INNER_LEN]>,
    /// Guest only: per id-B.
    k_outer: Vec<[u8; KEY_LEN]>,
    /// Both: per id-B.
    pub blob_b: Vec<[u8; OUTER_LEN]>,
    pub host_table: TableState,
    pub guest_table: TableState,
    /// id-B → id-A where this side knows it (the Guest: all; the Host: its
    /// own cards).
    ida_of: HashMap<String, usize>,
    /// OTs requested so far, per requesting role (host, guest).
    ot_seq: [u64; 2],
    pub my_witnesses: Vec<Witness>,
    pub peer_witnesses: Vec<Witness>,
    /// Every OT in transcript order with the z recorded.
    pub ot_log: Vec<(String, BigUint)>,
    /// Which id-B each OT was for (deal and draws, both sides').
    pub ot_id_to_idb: HashMap<String, String>,
    pub hand: BTreeMap<String, Face>,
    keys: HashMap<String, ([u8; KEY_LEN], [u8; KEY_LEN])>,
    pub guest_deal: Vec<String>,
    pub host_deal: Vec<String>,
    pub my_opening: Vec<Map>,
    pub peer_opening: Vec<Value>,
}

fn role_index(r: Role) -> usize {
    match r {
        Role::Host => 0,
        Role::Guest => 1,
    }
}

fn invalid(e: impl Into<String>) -> MpError {
    MpError::Invalid(e.into())
}

/// Parses the JSON text inside a frame string.
fn inner_json(s: &Value, what: &str) -> Result<Value, MpError> {
    let text = s
        .as_str()
        .ok_or_else(|| invalid(format!("{what} must be a string")))?;
    crate::json::parse_str(text).map_err(|e| invalid(format!("{what}: {e}")))
}

impl Side {
    pub fn new(role: Role, pid: &str, sid: &str) -> Side {
        Side {
            role,
            pid: pid.to_owned(),
            sid: sid.to_owned(),
            transcript: Transcript::new(),
            ledger: Ledger::new(0),
            deck_size: 0,
            k_inner: Vec::new(),
            blob_a: Vec::new(),
            k_outer: Vec::new(),
            blob_b: Vec::new(),
            host_table: TableState::default(),
            guest_table: TableState::default(),
            ida_of: HashMap::new(),
            ot_seq: [0, 0],
            my_witnesses: Vec::new(),
            peer_witnesses: Vec::new(),
            ot_log: Vec::new(),
            ot_id_to_idb: HashMap::new(),
            hand: BTreeMap::new(),
            keys: HashMap::new(),
            guest_deal: Vec::new(),
            host_deal: Vec::new(),
            my_opening: Vec::new(),
            peer_opening: Vec::new(),
        }
    }

    pub fn ctx(&self, table: Table, label: &str) -> Vec<u8> {
        ot::context(&self.pid, &self.sid, table, label)
    }

    fn table(&self, t: Table) -> &TableState {
        match t {
            Table::Host => &self.host_table,
            Table::Guest => &self.guest_table,
        }
    }

    fn table_mut(&mut self, t: Table) -> &mut TableState {
        match t {
            Table::Host => &mut self.host_table,
            Table::Guest => &mut self.guest_table,
        }
    }

    /// The public key of a table, once known.
    pub fn public(&self, t: Table) -> Result<&RsaPub, MpError> {
        self.table(t)
            .public
            .as_ref()
            .ok_or_else(|| invalid("the peer's table is not known yet"))
    }

    /// Host: the inner layer for `universe` (id-A order) and the payloads
    /// (k_inner per id-A) its sealed table will carry.
    pub fn host_deck(&mut self, universe: &[Face]) -> Vec<[u8; KEY_LEN]> {
        self.deck_size = universe.len();
        self.k_inner = (0..universe.len()).map(|_| rand::random()).collect();
        self.blob_a = universe
            .iter()
            .zip(&self.k_inner)
            .map(|(&(rank, suit), k)| {
                let pad: [u8; PAD_LEN] = rand::random();
                deck::seal_inner(k, [rank, suit], &pad, &rand::random())
            })
            .collect();
        self.k_inner.clone()
    }

    /// Guest: re-seals every blob_A under a fresh k_outer and shuffles;
    /// returns the payloads (k_outer per id-B).
    pub fn guest_deck(&mut self) -> Vec<[u8; KEY_LEN]> {
        use rand::seq::SliceRandom;
        let mut items: Vec<(usize, [u8; OUTER_LEN], [u8; KEY_LEN])> = self
            .blob_a
            .iter()
            .enumerate()
            .map(|(id_a, a)| {
                let k: [u8; KEY_LEN] = rand::random();
                (id_a, deck::seal_outer(&k, a, &rand::random()), k)
            })
            .collect();
        items.shuffle(&mut rand::rng());
        self.k_outer.clear();
        self.blob_b.clear();
        for (id_b, (id_a, b, k)) in items.into_iter().enumerate() {
            self.ida_of.insert(id_b.to_string(), id_a);
            self.blob_b.push(b);
            self.k_outer.push(k);
        }
        self.k_outer.clone()
    }

    /// Our setup frame (`mp_setup_a` for the Host, `mp_setup_b` for the
    /// Guest) from the finished table; recorded in the transcript.
    pub fn setup_frame(&mut self, table: SealedTable) -> Result<Map, MpError> {
        let t = table_of(self.role);
        let (action, blobs): (&str, Vec<Value>) = match self.role {
            Role::Host => (
                "mp_setup_a",
                self.blob_a.iter().map(|b| hex::encode(b).into()).collect(),
            ),
            Role::Guest => (
                "mp_setup_b",
                self.blob_b.iter().map(|b| hex::encode(b).into()).collect(),
            ),
        };
        let public = table.key.public().clone();
        let sealed_keys: Vec<Value> = table
            .sealed
            .iter()
            .enumerate()
            .map(|(i, c)| {
                canonical::to_string_ordered(&Value::Object(crate::obj! {
                    "label" => format!("{}-{i}", prefix(t)),
                    "c" => c.as_str(),
                }))
                .into()
            })
            .collect();
        let frame = crate::obj! {
            "action" => action,
            "rsa_pub" => public.to_json_string(),
            "blobs" => Value::Array(blobs.clone()),
            "sealed_keys" => Value::Array(sealed_keys),
        };
        let sealed_map: Map = table
            .sealed
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("{}-{i}", prefix(t)), Value::from(c.as_str())))
            .collect();
        self.transcript.append(
            action,
            crate::obj! {
                "rsa_pub" => public.to_json(),
                "blobs" => Value::Array(blobs),
                "sealed" => sealed_map,
            },
        )?;
        let state = self.table_mut(t);
        state.public = Some(public);
        state.sealed = table.sealed.clone();
        state.secret = Some(table);
        Ok(frame)
    }

    /// The peer's setup frame: its key, blobs and sealed table, checked as
    /// the reference checks them; recorded in the transcript.
    pub fn apply_setup(&mut self, msg: &Map) -> Result<(), MpError> {
        let (action, t) = match self.role {
            Role::Host => ("mp_setup_b", Table::Guest),
            Role::Guest => ("mp_setup_a", Table::Host),
        };
        let rsa_pub = inner_json(msg.get("rsa_pub").unwrap_or(&Value::Null), "rsa_pub")?;
        let public = RsaPub::parse(&rsa_pub).map_err(|e| invalid(e.to_string()))?;
        let empty = Vec::new();
        let blobs = msg.get("blobs").and_then(Value::as_array).unwrap_or(&empty);
        let sealed_keys = msg
            .get("sealed_keys")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        match t {
            Table::Host => {
                if sealed_keys.len() != blobs.len() {
                    return Err(invalid("mp_setup_a: sealed_keys length != blobs length"));
                }
                self.deck_size = blobs.len();
            }
            Table::Guest => {
                if sealed_keys.len() != blobs.len() || blobs.len() != self.deck_size {
                    return Err(invalid("mp_setup_b: length mismatch"));
                }
            }
        }
        let mut sealed = Vec::with_capacity(sealed_keys.len());
        let mut sealed_map = Map::new();
        for (i, sk) in sealed_keys.iter().enumerate() {
            let o = inner_json(sk, &format!("{action}: sealed_keys[{i}]"))?;
            let label = format!("{}-{i}", prefix(t));
            if o.get_str("label") != Some(label.as_str()) {
                return Err(invalid(format!(
                    "{action}: sealed_keys[{i}] label mismatch"
                )));
            }
            let c = o
                .get_str("c")
                .ok_or_else(|| invalid(format!("{action}: sealed_keys[{i}].c must be a string")))?;
            sealed.push(c.to_owned());
            sealed_map.insert(label, Value::from(c));
        }
        let bad_blob = |i: usize| invalid(format!("{action}: blobs[{i}] is not a card blob"));
        for (i, b) in blobs.iter().enumerate() {
            let text = b.as_str().ok_or_else(|| bad_blob(i))?;
            match t {
                Table::Host => self
                    .blob_a
                    .push(from_hex_array(text).map_err(|_| bad_blob(i))?),
                Table::Guest => self
                    .blob_b
                    .push(from_hex_array(text).map_err(|_| bad_blob(i))?),
            }
        }
        self.transcript.append(
            action,
            crate::obj! {
                "rsa_pub" => rsa_pub,
                "blobs" => Value::Array(blobs.clone()),
                "sealed" => sealed_map,
            },
        )?;
        let state = self.table_mut(t);
        state.public = Some(public);
        state.sealed = sealed;
        Ok(())
    }

    /// Splits the first cards of the deck: the Guest gets id-B `0..g`, the
    /// Host `g..g+h`; the rest is the stock.
    pub fn plan_deal(&mut self, host: usize, guest: usize) -> Result<(), MpError> {
        if host.saturating_add(guest) > self.deck_size {
            return Err(invalid("deal plan asks for more cards than the deck"));
        }
        self.ledger = Ledger::new(self.deck_size);
        self.guest_deal = (0..guest).map(|i| i.to_string()).collect();
        self.host_deal = (guest..guest + host).map(|i| i.to_string()).collect();
        Ok(())
    }

    fn next_ot_id(&mut self, who: Role) -> String {
        let n = &mut self.ot_seq[role_index(who)];
        let id = format!("{}-{n}", who.as_str());
        *n += 1;
        id
    }

    /// The id the peer's next OT request must carry.
    pub fn expected_peer_ot_id(&self) -> String {
        let who = self.role.peer();
        format!("{}-{}", who.as_str(), self.ot_seq[role_index(who)])
    }

    /// Starts one of our OTs for card `id_b`: the request frame and what
    /// is needed to finish it.
    pub fn request_ot(&mut self, id_b: &str) -> Result<(Map, PendingOt), MpError> {
        let (t, label) = match self.role {
            Role::Guest => {
                let id_a = *self
                    .ida_of
                    .get(id_b)
                    .ok_or_else(|| invalid(format!("no id-A for id-B {id_b}")))?;
                (Table::Host, format!("h-{id_a}"))
            }
            Role::Host => (Table::Guest, format!("g-{id_b}")),
        };
        let public = self.public(t)?.clone();
        let ot_id = self.next_ot_id(self.role);
        self.ot_id_to_idb.insert(ot_id.clone(), id_b.to_owned());
        let (_, h) = ot::fdh(&self.ctx(t, &label), &public);
        let (r, r_inv) = random_unit(&public);
        let z = ot::blind(&h, &r, &public);
        let frame = crate::obj! {
            "action" => "mp_ot_request",
            "id" => ot_id.as_str(),
            "z" => hex512(&z),
        };
        Ok((
            frame,
            PendingOt {
                ot_id,
                id_b: id_b.to_owned(),
                label,
                z,
                r,
                r_inv,
            },
        ))
    }

    /// Finishes one of our OTs with the peer's `y`: the card's face, now in
    /// our hand. `Poisoned` when the sealed entry does not open (its token
    /// is wrong or the entry was tampered with), `Blob` when the keys do not
    /// open the card.
    pub fn finish_ot(&mut self, p: PendingOt, y_hex: &str) -> Result<Face, MpError> {
        let y = int_from_hex(y_hex).map_err(|_| invalid("mp_ot_response.y is not hex"))?;
        let t = match self.role {
            Role::Guest => Table::Host,
            Role::Host => Table::Guest,
        };
        let public = self.public(t)?.clone();
        let ctx = self.ctx(t, &p.label);
        let poisoned = || MpError::Refused {
            reason: "sealed_payload_poisoned",
            detail: format!("the sealed entry {} does not open with its token", p.label),
        };
        let token = (&y * &p.r_inv) % public.n();
        let tk = ot::token_key(&token, &ctx).map_err(|_| poisoned())?;
        let idx: usize = p.label[2..].parse().map_err(|_| poisoned())?;
        let sealed_hex = self.table(t).sealed.get(idx).ok_or_else(poisoned)?;
        let sealed = from_hex(sealed_hex).map_err(|_| poisoned())?;
        let payload = ot::open_entry(&tk, &sealed, &ctx).map_err(|_| poisoned())?;
        let blob = |detail: &str| MpError::Refused {
            reason: "invalid_keys_or_blob",
            detail: format!("card {}: {detail}", p.id_b),
        };
        let b_idx: usize = p.id_b.parse().map_err(|_| blob("no such card"))?;
        let blob_b = *self.blob_b.get(b_idx).ok_or_else(|| blob("no such card"))?;
        let (k_inner, k_outer, blob_a) = match self.role {
            Role::Guest => {
                let k_outer = self.k_outer[b_idx];
                let a = deck::open_outer(&k_outer, &blob_b)
                    .map_err(|_| blob("our outer key does not open its blob"))?;
                (payload, k_outer, a)
            }
            Role::Host => {
                let a = deck::open_outer(&payload, &blob_b)
                    .map_err(|_| blob("the transferred outer key does not open its blob"))?;
                let id_a = self
                    .blob_a
                    .iter()
                    .position(|x| *x == a)
                    .ok_or_else(|| blob("blob_A not found in Host transcript"))?;
                self.ida_of.insert(p.id_b.clone(), id_a);
                (self.k_inner[id_a], payload, a)
            }
        };
        let card = deck::open_inner(&k_inner, &blob_a)
            .map_err(|_| blob("the inner key does not open its blob"))?;
        let face = (card[0], card[1]);
        self.ot_log.push((p.ot_id.clone(), p.z.clone()));
        self.transcript.append(
            "mp_ot",
            crate::obj! { "ot_id" => p.ot_id.as_str(), "z" => json_int(&p.z), "y" => json_int(&y) },
        )?;
        if !self.ledger.deal_to(self.role, &p.id_b) {
            return Err(invalid(format!("card {} is not in the stock", p.id_b)));
        }
        self.keys.insert(p.id_b.clone(), (k_inner, k_outer));
        self.hand.insert(p.id_b.clone(), face);
        self.my_witnesses.push(Witness {
            ot_id: p.ot_id,
            label: p.label,
            r: p.r,
        });
        Ok(face)
    }

    /// Finishes an OT that asked for another card than the one dealt
    /// (adversarial only): recorded like any OT, the dealt card joins the
    /// hand in the ledger but its face stays unknown.
    pub fn finish_peek(&mut self, p: PendingOt, y_hex: &str, dealt: &str) -> Result<(), MpError> {
        let y = int_from_hex(y_hex).map_err(|_| invalid("mp_ot_response.y is not hex"))?;
        self.ot_log.push((p.ot_id.clone(), p.z.clone()));
        self.transcript.append(
            "mp_ot",
            crate::obj! { "ot_id" => p.ot_id.as_str(), "z" => json_int(&p.z), "y" => json_int(&y) },
        )?;
        self.ledger.deal_to(self.role, dealt);
        self.my_witnesses.push(Witness {
            ot_id: p.ot_id,
            label: p.label,
            r: p.r,
        });
        Ok(())
    }

    /// Answers the peer's OT request for card `id_b` (the ledger's choice,
    /// never the peer's): the response frame, recorded.
    pub fn answer_ot(&mut self, req: &Map, id_b: &str) -> Result<Map, MpError> {
        let ot_id = req.get_str("id").unwrap_or_default().to_owned();
        let expected = self.expected_peer_ot_id();
        if ot_id != expected {
            return Err(MpError::Unexpected(format!(
                "OT request '{ot_id}' while '{expected}' is due"
            )));
        }
        let z = int_from_hex(req.get_str("z").unwrap_or_default())
            .map_err(|_| invalid("mp_ot_request.z is not hex"))?;
        let secret = self
            .table(table_of(self.role))
            .secret
            .as_ref()
            .ok_or_else(|| invalid("our table is not built"))?;
        let y = secret.key.private_op_split(&z);
        self.next_ot_id(self.role.peer());
        self.ot_log.push((ot_id.clone(), z.clone()));
        self.transcript.append(
            "mp_ot",
            crate::obj! { "ot_id" => ot_id.as_str(), "z" => json_int(&z), "y" => json_int(&y) },
        )?;
        self.ot_id_to_idb.insert(ot_id.clone(), id_b.to_owned());
        if !self.ledger.deal_to(self.role.peer(), id_b) {
            return Err(invalid(format!("card {id_b} is not in the stock")));
        }
        Ok(crate::obj! {
            "action" => "mp_ot_response",
            "id" => ot_id.as_str(),
            "y" => hex512(&y),
        })
    }

    /// Records a draw (after its OT) in the transcript.
    pub fn record_draw(&mut self, who: Role, ot_id: &str) -> Result<(), MpError> {
        self.transcript.append(
            "mp_draw",
            crate::obj! { "who" => who.as_str(), "ot_id" => ot_id },
        )?;
        Ok(())
    }

    pub fn record_pass(&mut self, who: Role) -> Result<(), MpError> {
        self.transcript
            .append("mp_pass", crate::obj! { "who" => who.as_str() })?;
        Ok(())
    }

    /// Our `mp_play` for a card in hand.
    pub fn play_frame(&self, id_b: &str, call_suit: Option<u8>) -> Result<Map, MpError> {
        let (rank, suit) = *self
            .hand
            .get(id_b)
            .ok_or_else(|| invalid(format!("card {id_b} is not in our hand")))?;
        let (ki, ko) = self
            .keys
            .get(id_b)
            .ok_or_else(|| invalid(format!("no keys for card {id_b}")))?;
        let mut m = crate::obj! {
            "action" => "mp_play",
            "id_b" => id_b,
            "k_inner" => hex::encode(ki),
            "k_outer" => hex::encode(ko),
            "rank" => i64::from(rank),
            "suit" => i64::from(suit),
        };
        if let Some(s) = call_suit {
            m.insert("call_suit", i64::from(s).into());
        }
        Ok(m)
    }

    /// Checks the peer's `mp_play` as the reference does, in its order:
    /// the face it claims, or the reason it is refused.
    pub fn verify_peer_play(&self, msg: &Map) -> Result<Face, &'static str> {
        let id_b = msg.get_str("id_b").unwrap_or_default();
        let peer = self.role.peer();
        if !self.ledger.hand_of(peer).contains(id_b) {
            return Err("card_not_in_hand");
        }
        if self.ledger.is_played(id_b) {
            return Err("card_already_played");
        }
        let field = |k: &str| {
            msg.get(k)
                .and_then(Value::as_i64)
                .and_then(|v| u8::try_from(v).ok())
        };
        let face = match (field("rank"), field("suit")) {
            (Some(r), Some(s)) => (r, s),
            _ => return Err("card_face_mismatch"),
        };
        let key = |k: &str| from_hex_array::<KEY_LEN>(msg.get_str(k).unwrap_or_default());
        let (Ok(ki), Ok(ko)) = (key("k_inner"), key("k_outer")) else {
            return Err("invalid_keys_or_blob");
        };
        let Some(blob_b) = id_b.parse::<usize>().ok().and_then(|i| self.blob_b.get(i)) else {
            return Err("card_not_in_hand");
        };
        let card = deck::open_outer(&ko, blob_b)
            .and_then(|a| deck::open_inner(&ki, &a))
            .map_err(|_| "invalid_keys_or_blob")?;
        if (card[0], card[1]) != face {
            return Err("card_face_mismatch");
        }
        Ok(face)
    }

    /// A verified play (ours or the peer's) moves to the played cards and
    /// into the transcript.
    pub fn apply_play(&mut self, who: Role, msg: &Map) -> Result<(), MpError> {
        let id_b = msg.get_str("id_b").unwrap_or_default().to_owned();
        if !self.ledger.play(who, &id_b) {
            return Err(invalid(format!(
                "card {id_b} cannot be played by the {}",
                who.as_str()
            )));
        }
        if who == self.role {
            self.hand.remove(&id_b);
        }
        let int = |k: &str| msg.get(k).and_then(Value::as_i64).unwrap_or(0);
        let mut entry = crate::obj! {
            "who" => who.as_str(),
            "id_b" => id_b.as_str(),
            "rank" => int("rank"),
            "suit" => int("suit"),
        };
        if let Some(c) = msg.get("call_suit").filter(|v| !v.is_null()) {
            entry.insert("call_suit", c.as_i64().unwrap_or(0).into());
        }
        self.transcript.append("mp_play", entry)?;
        Ok(())
    }

    /// Our `mp_opening`: every token of our table (labels in string order),
    /// then every key of our layer in id order.
    pub fn opening_frame(&mut self, forge: Option<&str>) -> Result<Map, MpError> {
        let t = table_of(self.role);
        let secret = self
            .table(t)
            .secret
            .as_ref()
            .ok_or_else(|| invalid("our table is not built"))?;
        let n = secret.key.public().n().clone();
        let mut labelled: Vec<(String, &BigUint)> = secret
            .tokens
            .iter()
            .enumerate()
            .map(|(i, tok)| (format!("{}-{i}", prefix(t)), tok))
            .collect();
        labelled.sort_by(|a, b| a.0.cmp(&b.0));
        let mut entries: Vec<Map> = labelled
            .into_iter()
            .map(|(label, tok)| {
                let tok = if forge == Some(label.as_str()) {
                    (tok + 1u8) % &n
                } else {
                    tok.clone()
                };
                crate::obj! { "kind" => "token", "label" => label, "token" => hex512(&tok) }
            })
            .collect();
        let (kind, keys) = match self.role {
            Role::Host => ("k_inner", &self.k_inner),
            Role::Guest => ("k_outer", &self.k_outer),
        };
        for (i, k) in keys.iter().enumerate() {
            entries.push(crate::obj! {
                "kind" => kind,
                "label" => format!("{}-{i}", prefix(t)),
                "k" => hex::encode(k),
            });
        }
        let openings: Vec<Value> = entries
            .iter()
            .map(|e| canonical::to_string_ordered(&Value::Object(e.clone())).into())
            .collect();
        self.my_opening = entries;
        Ok(crate::obj! { "action" => "mp_opening", "openings" => Value::Array(openings) })
    }

    /// The peer's `mp_opening`; both openings go into the transcript
    /// (host's first). Entries that are not JSON objects are kept as they
    /// came and fail the audit.
    pub fn apply_opening(&mut self, msg: &Map) -> Result<(), MpError> {
        let items = msg
            .get("openings")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("mp_opening.openings must be a list"))?;
        self.peer_opening = items
            .iter()
            .map(|s| inner_json(s, "mp_opening entry"))
            .collect::<Result<_, _>>()?;
        let mine = Value::Array(self.my_opening.iter().cloned().map(Value::Object).collect());
        let theirs = Value::Array(self.peer_opening.clone());
        let (host, guest) = match self.role {
            Role::Host => (mine, theirs),
            Role::Guest => (theirs, mine),
        };
        self.transcript.append(
            "mp_opening",
            crate::obj! { "role" => "host", "entries" => host },
        )?;
        self.transcript.append(
            "mp_opening",
            crate::obj! { "role" => "guest", "entries" => guest },
        )?;
        Ok(())
    }

    /// Our `mp_witness`: the blinding factor of each of our OTs, by ot_id
    /// string.
    pub fn witness_frame(&self, extra: Option<Witness>) -> Map {
        let mut ws: Vec<&Witness> = self.my_witnesses.iter().collect();
        ws.sort_by(|a, b| a.ot_id.cmp(&b.ot_id));
        let mut items: Vec<Value> = ws.iter().map(|w| w.to_wire().into()).collect();
        if let Some(w) = extra {
            items.push(w.to_wire().into());
        }
        crate::obj! { "action" => "mp_witness", "witnesses" => Value::Array(items) }
    }

    /// The peer's `mp_witness`; both sides' witnesses go into the
    /// transcript by role, each sorted by ot_id.
    pub fn apply_witness(&mut self, msg: &Map) -> Result<(), MpError> {
        let items = msg
            .get("witnesses")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("mp_witness.witnesses must be a list"))?;
        let mut ws = Vec::with_capacity(items.len());
        for s in items {
            let o = inner_json(s, "mp_witness entry")?;
            let field = |k: &str| {
                o.get_str(k)
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(format!("mp_witness entry needs a string '{k}'")))
            };
            let r = int_from_hex(&field("r")?).map_err(|_| invalid("mp_witness r is not hex"))?;
            ws.push(Witness {
                ot_id: field("ot_id")?,
                label: field("label")?,
                r,
            });
        }
        self.peer_witnesses = ws;
        let all: Vec<&Witness> = self
            .my_witnesses
            .iter()
            .chain(&self.peer_witnesses)
            .collect();
        for role in ["host", "guest"] {
            let mut list: Vec<&&Witness> = all
                .iter()
                .filter(|w| w.ot_id.starts_with(&format!("{role}-")))
                .collect();
            list.sort_by(|a, b| a.ot_id.cmp(&b.ot_id));
            let v: Vec<Value> = list.iter().map(|w| w.to_transcript()).collect();
            self.transcript.append(
                "mp_witness",
                crate::obj! { "role" => role, "witnesses" => Value::Array(v) },
            )?;
        }
        Ok(())
    }
}
