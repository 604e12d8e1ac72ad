//! The post-match audit: with both sides' openings (every token and key)
//! and witnesses (every OT's blinding factor) on the table, each side checks
//! that the deck was a whole, honest deck, that every sealed table entry
//! held the key it claimed, and that no OT fetched a card other than the
//! one the ledger dealt. The first failure wins; its reason string is the
//! reference's.

use super::deck::{self, KEY_LEN};
use super::game::Face;
use super::num::{from_hex, from_hex_array, int_from_hex};
use super::ot::{self, Table};
use super::side::{Side, Witness};
use crate::json::{Map, Value};
use num_bigint::BigUint;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A failed audit: the reference's reason and what was found.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditFailure {
    pub reason: &'static str,
    pub evidence: Map,
}

fn fail(reason: &'static str, evidence: Map) -> AuditFailure {
    AuditFailure { reason, evidence }
}

fn detail(reason: &'static str, text: String) -> AuditFailure {
    fail(reason, crate::obj! { "detail" => text })
}

fn sorted_list<'a>(it: impl IntoIterator<Item = &'a String>) -> Value {
    let set: BTreeSet<&String> = it.into_iter().collect();
    Value::Array(set.into_iter().map(|s| Value::from(s.as_str())).collect())
}

/// Everything both openings disclosed, by label (a later entry for a label
/// replaces an earlier one, as the reference's dicts do).
#[derive(Default)]
struct Disclosed {
    /// Tokens per table, in the order disclosed.
    tokens: [Vec<(String, BigUint)>; 2],
    k_inner: HashMap<String, [u8; KEY_LEN]>,
    k_outer: HashMap<String, [u8; KEY_LEN]>,
}

fn slot(t: Table) -> usize {
    match t {
        Table::Host => 0,
        Table::Guest => 1,
    }
}

fn put_token(list: &mut Vec<(String, BigUint)>, label: String, tok: BigUint) {
    match list.iter_mut().find(|(l, _)| *l == label) {
        Some(e) => e.1 = tok,
        None => list.push((label, tok)),
    }
}

fn disclosed(side: &Side) -> Result<Disclosed, AuditFailure> {
    let mut d = Disclosed::default();
    let entries = side
        .my_opening
        .iter()
        .cloned()
        .map(Value::Object)
        .chain(side.peer_opening.iter().cloned());
    for (i, e) in entries.enumerate() {
        let bad = || {
            detail(
                "keyset_mismatch",
                format!("opening entry {i} is not a well-formed token or key"),
            )
        };
        let label = e.get_str("label").ok_or_else(bad)?.to_owned();
        match e.get_str("kind") {
            Some("token") => {
                let tok = int_from_hex(e.get_str("token").ok_or_else(bad)?).map_err(|_| bad())?;
                let t = if label.starts_with("h-") {
                    Table::Host
                } else {
                    Table::Guest
                };
                put_token(&mut d.tokens[slot(t)], label, tok);
            }
            Some(kind @ ("k_inner" | "k_outer")) => {
                let k = from_hex_array::<KEY_LEN>(e.get_str("k").ok_or_else(bad)?)
                    .map_err(|_| bad())?;
                let map = if kind == "k_inner" {
                    &mut d.k_inner
                } else {
                    &mut d.k_outer
                };
                map.insert(label, k);
            }
            _ => {}
        }
    }
    Ok(d)
}

/// id-B → id-A from the disclosed outer keys: every blob_B must open to a
/// distinct blob_A of the Host's setup, covering all of them.
fn derive_id_map(side: &Side, d: &Disclosed) -> Result<Vec<usize>, String> {
    let mut by_blob = HashMap::with_capacity(side.blob_a.len());
    for (id_a, a) in side.blob_a.iter().enumerate() {
        if by_blob.insert(*a, id_a).is_some() {
            return Err(format!(
                "duplicate blob_A in Host transcript (id_a '{id_a}')"
            ));
        }
    }
    let mut used = HashSet::new();
    let mut map = Vec::with_capacity(side.blob_b.len());
    for (id_b, b) in side.blob_b.iter().enumerate() {
        let k = d
            .k_outer
            .get(&format!("g-{id_b}"))
            .ok_or_else(|| format!("missing k_outer for id_b '{id_b}'"))?;
        let a =
            deck::open_outer(k, b).map_err(|_| format!("cannot open blob_B for id_b '{id_b}'"))?;
        let id_a = *by_blob
            .get(&a)
            .ok_or_else(|| format!("blob_A for id_b '{id_b}' not in Host transcript"))?;
        if !used.insert(id_a) {
            return Err(format!(
                "many-to-one: id_a '{id_a}' claimed by multiple id_b"
            ));
        }
        map.push(id_a);
    }
    if used.len() != side.blob_a.len() {
        let missing: Vec<String> = (0..side.blob_a.len())
            .filter(|i| !used.contains(i))
            .map(|i| format!("'{i}'"))
            .collect();
        return Err(format!(
            "id map not surjective: uncovered id_a [{}]",
            missing.join(", ")
        ));
    }
    Ok(map)
}

/// One table's tokens against its sealed entries and the disclosed keys.
fn audit_table(
    side: &Side,
    t: Table,
    tokens: &[(String, BigUint)],
    expected: &HashMap<String, [u8; KEY_LEN]>,
) -> Result<(), AuditFailure> {
    let public = side
        .public(t)
        .map_err(|e| detail("keyset_mismatch", e.to_string()))?;
    let p = match t {
        Table::Host => "h",
        Table::Guest => "g",
    };
    let sealed: HashMap<String, &String> = match t {
        Table::Host => &side.host_table.sealed,
        Table::Guest => &side.guest_table.sealed,
    }
    .iter()
    .enumerate()
    .map(|(i, c)| (format!("{p}-{i}"), c))
    .collect();
    let token_set: HashSet<&String> = tokens.iter().map(|(l, _)| l).collect();
    let sealed_set: HashSet<&String> = sealed.keys().collect();
    let expected_set: HashSet<&String> = expected.keys().collect();
    if token_set != sealed_set || token_set != expected_set {
        return Err(fail(
            "keyset_mismatch",
            crate::obj! {
                "tokens" => sorted_list(token_set.iter().copied()),
                "sealed" => sorted_list(sealed_set.iter().copied()),
                "expected" => sorted_list(expected_set.iter().copied()),
            },
        ));
    }
    for (label, token) in tokens {
        let at = || crate::obj! { "label" => label.as_str() };
        let ctx = side.ctx(t, label);
        if !ot::verify_token(&ctx, token, public) {
            return Err(fail("forged_token", at()));
        }
        let payload = ot::token_key(token, &ctx).ok().and_then(|k| {
            let bytes = from_hex(sealed[label]).ok()?;
            ot::open_entry(&k, &bytes, &ctx).ok()
        });
        match payload {
            None => return Err(fail("sealed_payload_poisoned", at())),
            Some(p) if Some(&p) != expected.get(label) => {
                return Err(fail("payload_mismatch", at()));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The OTs of one direction: every transcript OT has exactly one witness,
/// which pins its request to a label whose card the ledger gave the
/// requester.
fn audit_witnesses(
    side: &Side,
    t: Table,
    prefix: &str,
    label_to_idb: &HashMap<String, String>,
) -> Result<(), AuditFailure> {
    let public = side
        .public(t)
        .map_err(|e| detail("bad_witness", e.to_string()))?;
    let pairs: Vec<&(String, BigUint)> = side
        .ot_log
        .iter()
        .filter(|(id, _)| id.starts_with(prefix))
        .collect();
    let t_ids: Vec<&String> = pairs.iter().map(|(id, _)| id).collect();
    let t_set: HashSet<&String> = t_ids.iter().copied().collect();
    if t_set.len() != t_ids.len() {
        return Err(fail("duplicate_transcript_ot_id", Map::new()));
    }
    let z_of: HashMap<&String, &BigUint> = pairs.iter().map(|(id, z)| (id, z)).collect();
    let ws: Vec<&Witness> = side
        .my_witnesses
        .iter()
        .chain(&side.peer_witnesses)
        .filter(|w| w.ot_id.starts_with(prefix))
        .collect();
    let w_set: HashSet<&String> = ws.iter().map(|w| &w.ot_id).collect();
    if w_set.len() != ws.len() {
        return Err(fail("duplicate_witness_ot_id", Map::new()));
    }
    if w_set != t_set {
        return Err(fail(
            "witness_transcript_mismatch",
            crate::obj! {
                "missing" => sorted_list(t_set.difference(&w_set).copied()),
                "extra" => sorted_list(w_set.difference(&t_set).copied()),
            },
        ));
    }
    for w in ws {
        let z = z_of[&w.ot_id];
        if !ot::verify_witness(z, &side.ctx(t, &w.label), &w.r, public) {
            return Err(fail(
                "bad_witness",
                crate::obj! { "ot_id" => w.ot_id.as_str() },
            ));
        }
        let Some(id_b) = label_to_idb.get(&w.label) else {
            return Err(fail(
                "label_not_in_map",
                crate::obj! { "label" => w.label.as_str(), "ot_id" => w.ot_id.as_str() },
            ));
        };
        if side.ot_id_to_idb.get(&w.ot_id) != Some(id_b) {
            return Err(fail(
                "peeked_non_hand",
                crate::obj! {
                    "ot_id" => w.ot_id.as_str(),
                    "id_b" => id_b.as_str(),
                    "label" => w.label.as_str(),
                },
            ));
        }
    }
    Ok(())
}

/// The whole audit, in the reference's order.
pub fn audit(side: &Side, universe: &[Face]) -> Result<(), AuditFailure> {
    let d = disclosed(side)?;
    let id_map = derive_id_map(side, &d).map_err(|e| detail("derive_id_map_failed", e))?;
    let n = side.deck_size;
    let expected_h: HashMap<String, [u8; KEY_LEN]> = (0..side.blob_a.len())
        .filter_map(|i| {
            let l = format!("h-{i}");
            d.k_inner.get(&l).map(|k| (l, *k))
        })
        .collect();
    audit_table(side, Table::Host, &d.tokens[0], &expected_h)?;
    let expected_g: HashMap<String, [u8; KEY_LEN]> = (0..n)
        .filter_map(|i| {
            let l = format!("g-{i}");
            d.k_outer.get(&l).map(|k| (l, *k))
        })
        .collect();
    audit_table(side, Table::Guest, &d.tokens[1], &expected_g)?;

    let mut cards: Vec<[u8; 2]> = Vec::with_capacity(n);
    for (id_b, &id_a) in id_map.iter().enumerate() {
        let card = d
            .k_outer
            .get(&format!("g-{id_b}"))
            .zip(d.k_inner.get(&format!("h-{id_a}")))
            .and_then(|(ko, ki)| {
                let a = deck::open_outer(ko, &side.blob_b[id_b]).ok()?;
                deck::open_inner(ki, &a).ok()
            });
        match card {
            Some(c) => cards.push(c),
            None => {
                return Err(detail(
                    "deck_universe_mismatch",
                    format!("card id_b '{id_b}' does not open with the disclosed keys"),
                ));
            }
        }
    }
    let expected: BTreeSet<[u8; 2]> = universe.iter().map(|&(r, s)| [r, s]).collect();
    if cards.len() != expected.len() {
        return Err(fail(
            "deck_size_mismatch",
            crate::obj! { "actual" => cards.len() as i64, "expected" => expected.len() as i64 },
        ));
    }
    let got: BTreeSet<[u8; 2]> = cards.iter().copied().collect();
    if got != expected {
        let list = |s: BTreeSet<&[u8; 2]>| {
            Value::Array(
                s.into_iter()
                    .map(|c| Value::Array(vec![i64::from(c[0]).into(), i64::from(c[1]).into()]))
                    .collect(),
            )
        };
        return Err(fail(
            "deck_universe_mismatch",
            crate::obj! {
                "missing" => list(expected.difference(&got).collect()),
                "extra" => list(got.difference(&expected).collect()),
            },
        ));
    }

    for w in side.my_witnesses.iter().chain(&side.peer_witnesses) {
        if !side.ot_id_to_idb.contains_key(&w.ot_id)
            && (w.ot_id.starts_with("guest-") || w.ot_id.starts_with("host-"))
        {
            return Err(fail(
                "ot_snapshot_missing",
                crate::obj! { "ot_id" => w.ot_id.as_str() },
            ));
        }
    }
    let label_to_idb_h: HashMap<String, String> = id_map
        .iter()
        .enumerate()
        .map(|(id_b, id_a)| (format!("h-{id_a}"), id_b.to_string()))
        .collect();
    let label_to_idb_g: HashMap<String, String> =
        (0..n).map(|i| (format!("g-{i}"), i.to_string())).collect();
    audit_witnesses(side, Table::Host, "guest-", &label_to_idb_h)?;
    audit_witnesses(side, Table::Guest, "host-", &label_to_idb_g)?;
    Ok(())
}
