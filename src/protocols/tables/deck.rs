//! The shared deck of the four-seat tables (the reference's
//! `proto/shared_deck.py`, as data): a catalog of uniquely identified cards,
//! a draw pile, a private hand per seated member, a discard pile and named
//! zones, held by the leader only and kept in the state as JSON in the
//! reference's shape:
//!
//! `{catalog: {card_id: {...face, card_id, copy}}, draw_pile: [id], hands:
//! {public_key: [id]}, discard_pile: [id], zones: {zone: {owner: [id]}},
//! total_cards}`.
//!
//! A card's id is the first 24 hex digits of SHA-256 over the canonical JSON
//! of `{seed, copy, face_index, face}`; the pile is shuffled by Fisher-Yates
//! from the end, each swap target being SHA-256 of
//! `aigenora-shared-deck-v1:{seed}:{k}` (big-endian) modulo the remaining
//! length; the deal pops from the end of the pile, one card per hand in seat
//! order, `hand_size` times. Every change checks conservation: each card is
//! in exactly one place.

use crate::json::canonical::to_string;
use crate::json::{Key, Map, Value};
use crate::obj;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::Arc;

/// Why the deck refused (the reference's `SharedDeckError` texts).
pub type DeckError = String;

/// A deck's faces made ready for dealing them hand after hand: each
/// face's card with room for its id and copy, and its identity (what the
/// card's id hashes) but for the seed, serialised once, and for the first
/// copy already hashed up to the seed.
#[derive(Debug, Clone)]
pub struct Faces {
    /// A face's card: the face, then `card_id` and `copy` (null here; a
    /// face holding either keeps its place, as Python's `{**face, ...}`).
    cards: Vec<Vec<(Key, Value)>>,
    /// Where each card's `card_id` and `copy` are.
    slots: Vec<(usize, usize)>,
    /// `,"face":{face},"face_index":{i},"seed":` (canonical JSON, keys in
    /// code point order: copy, face, face_index, seed).
    middles: Vec<Vec<u8>>,
    /// SHA-256 of `{"copy":0` and the middle.
    first_copy: Vec<Sha256>,
}

impl Faces {
    pub fn new(maps: Vec<Map>) -> Faces {
        let n = maps.len();
        let (mut cards, mut slots, mut middles, mut first_copy) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (index, face) in maps.into_iter().enumerate() {
            let mut middle = b",\"face\":".to_vec();
            middle.extend_from_slice(to_string(&Value::Object(face.clone())).as_bytes());
            middle.extend_from_slice(format!(",\"face_index\":{index},\"seed\":").as_bytes());
            first_copy.push(
                Sha256::new()
                    .chain_update(b"{\"copy\":0")
                    .chain_update(&middle),
            );
            middles.push(middle);
            let mut card = face.into_entries();
            let slot = |card: &mut Vec<(Key, Value)>, key: &str| {
                card.iter().position(|(k, _)| k == key).unwrap_or_else(|| {
                    card.push((Key::from(key), Value::Null));
                    card.len() - 1
                })
            };
            let at = (slot(&mut card, "card_id"), slot(&mut card, "copy"));
            slots.push(at);
            cards.push(card);
        }
        Faces {
            cards,
            slots,
            middles,
            first_copy,
        }
    }
}

/// A new deck from `faces` (each `copies` times) with a hand of
/// `hand_size` for every active member, in seat order.
pub fn create(
    faces: &[Map],
    members: &[Value],
    hand_size: usize,
    seed: &str,
    copies: usize,
) -> Result<Map, DeckError> {
    create_from(
        &Faces::new(faces.to_vec()),
        members,
        hand_size,
        seed,
        copies,
    )
}

/// [`create`] from faces made ready beforehand.
pub fn create_from(
    faces: &Faces,
    members: &[Value],
    hand_size: usize,
    seed: &str,
    copies: usize,
) -> Result<Map, DeckError> {
    if seed.is_empty() || seed.len() > 256 {
        return Err("seed must be 1-256 UTF-8 bytes".into());
    }
    if !(1..=8).contains(&copies) {
        return Err("copies must be between 1 and 8".into());
    }
    if faces.cards.is_empty() {
        return Err("card_faces must not be empty".into());
    }
    let size = faces.cards.len() * copies;
    let mut catalog: Vec<(Key, Value)> = Vec::with_capacity(size);
    let mut ids = Vec::with_capacity(size);
    let mut taken: HashSet<[u8; 12], foldhash::fast::RandomState> =
        HashSet::with_capacity_and_hasher(size, Default::default());
    let seed_text = to_string(&Value::from(seed));
    for copy in 0..copies {
        for (index, template) in faces.cards.iter().enumerate() {
            // SHA-256 of the canonical JSON of {seed, copy, face_index,
            // face}: `{"copy":{copy}` + middle + seed + `}`.
            let hasher = match faces.first_copy.get(index) {
                Some(first) if copy == 0 => first.clone(),
                _ => Sha256::new()
                    .chain_update(format!("{{\"copy\":{copy}").as_bytes())
                    .chain_update(&faces.middles[index]),
            };
            let digest = hasher
                .chain_update(seed_text.as_bytes())
                .chain_update(b"}")
                .finalize();
            // The id is the first 24 hex digits: the first 12 bytes.
            let mut prefix = [0u8; 12];
            prefix.copy_from_slice(&digest[..12]);
            if !taken.insert(prefix) {
                return Err("card identity collision".into());
            }
            let mut hex = [0u8; 24];
            // One string for the card's id in the catalog and in the pile.
            let id: Arc<str> = Arc::from(hex_id(&prefix, &mut hex));
            // The face's members, then the id and the copy.
            let mut card = template.clone();
            let (at_id, at_copy) = faces.slots[index];
            card[at_id].1 = Value::String(id.clone());
            card[at_copy].1 = Value::from(copy);
            catalog.push((Key::from(&*id), Value::Object(Map::from_distinct(card))));
            ids.push(id);
        }
    }
    let mut pile = shuffle(ids, seed);
    let mut seated: Vec<(i64, String)> = members
        .iter()
        .filter(|m| m.get_str("status") == Some("active"))
        .filter_map(|m| {
            Some((
                m.get("seat")?.as_i64()?,
                m.get_str("public_key")?.to_owned(),
            ))
        })
        .collect();
    seated.sort_by_key(|(seat, _)| *seat);
    if hand_size * seated.len() > pile.len() {
        return Err("initial deal exceeds the shared deck".into());
    }
    let mut hands: Vec<(String, Vec<Value>)> =
        seated.into_iter().map(|(_, pk)| (pk, Vec::new())).collect();
    for _ in 0..hand_size {
        for (_, hand) in hands.iter_mut() {
            if let Some(id) = pile.pop() {
                hand.push(Value::String(id));
            }
        }
    }
    let mut hand_map = Map::with_capacity(hands.len());
    for (pk, hand) in hands {
        hand_map.insert(pk.as_str(), Value::Array(hand));
    }
    let total = catalog.len();
    let deck = obj! {
        "catalog" => Value::Object(Map::from_distinct(catalog)),
        "draw_pile" => Value::Array(pile.into_iter().map(Value::String).collect()),
        "hands" => Value::Object(hand_map),
        "discard_pile" => Value::Array(Vec::new()),
        "zones" => Value::Object(Map::new()),
        "total_cards" => total,
    };
    // Conserved by construction: every id is distinct (checked above) and
    // was placed once, in the pile or a hand.
    debug_assert_eq!(validate(&deck), Ok(()));
    Ok(deck)
}

/// The 24 lower-case hex digits of a card id's 12 bytes, written into
/// `out`.
fn hex_id<'a>(bytes: &[u8; 12], out: &'a mut [u8; 24]) -> &'a str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
    std::str::from_utf8(out).unwrap_or_default()
}

/// The reference's deterministic Fisher-Yates shuffle.
pub fn shuffle<T>(mut values: Vec<T>, seed: &str) -> Vec<T> {
    // Every swap hashes `aigenora-shared-deck-v1:{seed}:{k}`: the prefix
    // is hashed once.
    let prefix = Sha256::new_with_prefix(format!("aigenora-shared-deck-v1:{seed}:").as_bytes());
    let mut digits = [0u8; 20];
    for (counter, index) in (1..values.len()).rev().enumerate() {
        let digest = prefix
            .clone()
            .chain_update(decimal(counter, &mut digits))
            .finalize();
        let target = mod_be(&digest, index as u64 + 1) as usize;
        values.swap(index, target);
    }
    values
}

/// `n` in decimal, written at the end of `buf`.
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// A big-endian unsigned integer modulo `m` (m > 0).
fn mod_be(bytes: &[u8], m: u64) -> u64 {
    if (2..1 << 16).contains(&m) && bytes.len().is_multiple_of(2) {
        // A shuffle's moduli are small: two bytes at a time the running
        // value `r << 16 | chunk` stays below 2^32, and a 32-bit remainder
        // is a multiplication by the divisor's 64-bit reciprocal (Lemire,
        // Kaser and Kurz, "Faster remainder by direct computation", 2019:
        // exact for every 32-bit numerator and divisor): one division per
        // digest instead of one per four bytes.
        let c = u64::MAX / m + 1;
        let mut r: u64 = 0;
        for pair in bytes.chunks_exact(2) {
            let n = (r << 16) | u64::from(u16::from_be_bytes([pair[0], pair[1]]));
            r = ((u128::from(c.wrapping_mul(n)) * u128::from(m)) >> 64) as u64;
        }
        return r;
    }
    if m <= u64::from(u32::MAX) && bytes.len().is_multiple_of(4) {
        // Four bytes at a time: the remainder stays below 2^32, so
        // `r << 32 | chunk` fits in a u64.
        let mut r: u64 = 0;
        for chunk in bytes.chunks_exact(4) {
            let word = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            r = ((r << 32) | u64::from(word)) % m;
        }
        return r;
    }
    let m = u128::from(m);
    let mut r: u128 = 0;
    for &b in bytes {
        r = (r * 256 + u128::from(b)) % m;
    }
    r as u64
}

fn ids_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn list_mut<'a>(deck: &'a mut Map, key: &str) -> Result<&'a mut Vec<Value>, DeckError> {
    match deck.get_mut(key) {
        Some(Value::Array(a)) => Ok(a),
        _ => Err(format!("{key} must be an array")),
    }
}

fn hand_mut<'a>(deck: &'a mut Map, pk: &str) -> Result<&'a mut Vec<Value>, DeckError> {
    match deck.get_mut("hands").and_then(Value::as_object_mut) {
        Some(h) => match h.get_mut(pk) {
            Some(Value::Array(a)) => Ok(a),
            _ => Err("unknown hand owner".into()),
        },
        None => Err("unknown hand owner".into()),
    }
}

/// A copy of one catalog entry.
pub fn card(deck: &Map, id: &str) -> Option<Map> {
    deck.get("catalog")?.get(id)?.as_object().cloned()
}

/// The ids in `pk`'s hand.
pub fn hand(deck: &Map, pk: &str) -> Vec<String> {
    ids_of(deck.get("hands").and_then(|h| h.get(pk)))
}

/// Draws `count` cards from the end of the pile into `pk`'s hand.
pub fn draw(deck: &mut Map, pk: &str, count: usize) -> Result<Vec<Value>, DeckError> {
    if !(1..=32).contains(&count) {
        return Err("draw count must be between 1 and 32".into());
    }
    hand_mut(deck, pk)?;
    if list_mut(deck, "draw_pile")?.len() < count {
        return Err("shared draw pile does not have enough cards".into());
    }
    let mut drawn = Vec::with_capacity(count);
    for _ in 0..count {
        let id = list_mut(deck, "draw_pile")?.pop().unwrap_or(Value::Null);
        hand_mut(deck, pk)?.push(id.clone());
        let id = id.as_str().unwrap_or_default().to_owned();
        drawn.push(Value::Object(card(deck, &id).unwrap_or_default()));
    }
    validate(deck)?;
    Ok(drawn)
}

/// One card from the end of the pile into the hand of each of `owners`,
/// in order (a round of the deal): [`draw`] of one card for each, with the
/// conservation check once at the end (a card moved from the pile into a
/// hand is still in one place).
pub fn draw_each(deck: &mut Map, owners: &[&str]) -> Result<(), DeckError> {
    for pk in owners {
        hand_mut(deck, pk)?;
        let Some(id) = list_mut(deck, "draw_pile")?.pop() else {
            return Err("shared draw pile does not have enough cards".into());
        };
        hand_mut(deck, pk)?.push(id);
    }
    validate(deck)
}

/// Takes `ids` out of `pk`'s hand (they go nowhere yet: the caller puts
/// them somewhere, as the reference's `take_from_hand`).
pub fn take_from_hand(deck: &mut Map, pk: &str, ids: &[String]) -> Result<Vec<Value>, DeckError> {
    let unique: HashSet<&String> = ids.iter().collect();
    if ids.is_empty() || ids.len() > 64 || unique.len() != ids.len() {
        return Err("card_ids must be a non-empty unique array".into());
    }
    let hand = hand_mut(deck, pk)?;
    if ids
        .iter()
        .any(|id| !hand.iter().any(|h| h.as_str() == Some(id)))
    {
        return Err("card is not in the player's hand".into());
    }
    for id in ids {
        if let Some(i) = hand.iter().position(|h| h.as_str() == Some(id)) {
            hand.remove(i);
        }
    }
    Ok(ids
        .iter()
        .map(|id| Value::Object(card(deck, id).unwrap_or_default()))
        .collect())
}

/// Puts `ids` on the discard pile.
pub fn discard(deck: &mut Map, ids: &[String]) -> Result<(), DeckError> {
    list_mut(deck, "discard_pile")?.extend(ids.iter().map(|i| Value::from(i.as_str())));
    validate(deck)
}

/// Moves one card of the discard pile into `zone` under `owner` (a claimed
/// discard); the card's face.
pub fn discard_to_zone(
    deck: &mut Map,
    zone: &str,
    owner: &str,
    id: &str,
) -> Result<Map, DeckError> {
    if !list_mut(deck, "discard_pile")?
        .iter()
        .any(|d| d.as_str() == Some(id))
    {
        return Err("discard card does not exist".into());
    }
    let face = card(deck, id).ok_or("deck catalog is invalid")?;
    zone_cards(deck, zone, owner)?;
    let pile = list_mut(deck, "discard_pile")?;
    if let Some(i) = pile.iter().position(|d| d.as_str() == Some(id)) {
        pile.remove(i);
    }
    zone_cards(deck, zone, owner)?.push(Value::from(id));
    validate(deck)?;
    Ok(face)
}

/// Moves `count` cards from the end of the pile into `zone` under `owner`.
pub fn draw_to_zone(
    deck: &mut Map,
    zone: &str,
    owner: &str,
    count: usize,
) -> Result<Vec<Value>, DeckError> {
    let ids = move_to_zone(deck, zone, owner, count)?;
    validate(deck)?;
    Ok(faces_of(deck, &ids))
}

/// [`draw_to_zone`] for each of `moves` (zone, count) in turn, all under
/// `owner`, with the conservation check once at the end (cards moved from
/// the pile into zones are each still in one place): each move's cards.
pub fn draw_to_zones(
    deck: &mut Map,
    owner: &str,
    moves: &[(&str, usize)],
) -> Result<Vec<Vec<Value>>, DeckError> {
    let mut moved = Vec::with_capacity(moves.len());
    for (zone, count) in moves {
        moved.push(move_to_zone(deck, zone, owner, *count)?);
    }
    validate(deck)?;
    Ok(moved.iter().map(|ids| faces_of(deck, ids)).collect())
}

/// [`draw_to_zone`] but for the conservation check: the ids moved.
fn move_to_zone(
    deck: &mut Map,
    zone: &str,
    owner: &str,
    count: usize,
) -> Result<Vec<Value>, DeckError> {
    if !(1..=64).contains(&count) {
        return Err("zone draw count must be between 1 and 64".into());
    }
    if list_mut(deck, "draw_pile")?.len() < count {
        return Err("shared draw pile does not have enough cards".into());
    }
    zone_cards(deck, zone, owner)?;
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        ids.push(list_mut(deck, "draw_pile")?.pop().unwrap_or(Value::Null));
    }
    zone_cards(deck, zone, owner)?.extend(ids.iter().cloned());
    Ok(ids)
}

/// The catalog entries of the string ids among `ids` (an id the catalog
/// lacks shows as an empty object).
fn faces_of(deck: &Map, ids: &[Value]) -> Vec<Value> {
    let catalog = deck.get("catalog").and_then(Value::as_object);
    ids.iter()
        .filter_map(Value::as_str)
        .map(|id| {
            let face = catalog.and_then(|c| c.get(id)).and_then(Value::as_object);
            Value::Object(face.cloned().unwrap_or_default())
        })
        .collect()
}

/// Moves `ids` from `pk`'s hand into `zone` under `owner`.
pub fn hand_to_zone(
    deck: &mut Map,
    pk: &str,
    zone: &str,
    owner: &str,
    ids: &[String],
) -> Result<Vec<Value>, DeckError> {
    let unique: HashSet<&String> = ids.iter().collect();
    if ids.is_empty()
        || ids.len() > 64
        || ids.iter().any(String::is_empty)
        || unique.len() != ids.len()
    {
        return Err("card_ids must be a non-empty unique array".into());
    }
    let hand = hand_mut(deck, pk)?;
    if ids
        .iter()
        .any(|id| !hand.iter().any(|h| h.as_str() == Some(id)))
    {
        return Err("card is not in the player's hand".into());
    }
    zone_cards(deck, zone, owner)?;
    for id in ids {
        let hand = hand_mut(deck, pk)?;
        if let Some(i) = hand.iter().position(|h| h.as_str() == Some(id)) {
            hand.remove(i);
        }
        zone_cards(deck, zone, owner)?.push(Value::from(id.as_str()));
    }
    validate(deck)?;
    Ok(ids
        .iter()
        .map(|id| Value::Object(card(deck, id).unwrap_or_default()))
        .collect())
}

/// Moves one card from `zone` under `owner` onto the discard pile (the zone
/// and its owner must exist already; an emptied owner list stays).
pub fn zone_to_discard(deck: &mut Map, zone: &str, owner: &str, id: &str) -> Result<(), DeckError> {
    if zone.is_empty() || zone.len() > 64 {
        return Err("zone is invalid".into());
    }
    if owner.is_empty() || owner.len() > 256 {
        return Err("zone owner is invalid".into());
    }
    let cards = match deck
        .get_mut("zones")
        .and_then(Value::as_object_mut)
        .and_then(|z| z.get_mut(zone))
        .and_then(Value::as_object_mut)
        .and_then(|o| o.get_mut(owner))
    {
        Some(Value::Array(a)) => a,
        Some(_) => return Err("owner zone is invalid".into()),
        None => return Err("zone card does not exist".into()),
    };
    let Some(at) = cards.iter().position(|c| c.as_str() == Some(id)) else {
        return Err("zone card does not exist".into());
    };
    let card = cards.remove(at);
    list_mut(deck, "discard_pile")?.push(card);
    validate(deck)
}

/// The ids under `owner` in `zone`, created when missing.
fn zone_cards<'a>(
    deck: &'a mut Map,
    zone: &str,
    owner: &str,
) -> Result<&'a mut Vec<Value>, DeckError> {
    if zone.is_empty() || zone.len() > 64 {
        return Err("zone is invalid".into());
    }
    if owner.is_empty() || owner.len() > 256 {
        return Err("zone owner is invalid".into());
    }
    let zones = match deck.get_mut("zones") {
        Some(Value::Object(z)) => z,
        _ => return Err("zones is invalid".into()),
    };
    if !zones.contains_key(zone) {
        zones.insert(zone, Value::Object(Map::new()));
    }
    let Some(Value::Object(owners)) = zones.get_mut(zone) else {
        return Err("zone map is invalid".into());
    };
    if !owners.contains_key(owner) {
        owners.insert(owner, Value::Array(Vec::new()));
    }
    match owners.get_mut(owner) {
        Some(Value::Array(a)) => Ok(a),
        _ => Err("owner zone is invalid".into()),
    }
}

/// What `viewer` may see of the deck: its own hand, every hand's size, the
/// discard pile, the zones not in `hidden` and every zone's counts.
pub fn private_view(deck: &Map, viewer: &str, hidden: &[&str]) -> Result<Map, DeckError> {
    let (my_hand, counts) = hand_view(deck, viewer)?;
    let faces = |ids: &[Value]| Value::Array(faces_of(deck, ids));
    let zones = deck
        .get("zones")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut shown = Map::new();
    let mut zone_counts = Map::new();
    for (zone, owners) in zones.iter() {
        let owners = owners.as_object().cloned().unwrap_or_default();
        let show = !hidden.contains(&zone);
        let mut cards = Map::new();
        let mut n = Map::new();
        for (owner, ids) in owners.iter() {
            let ids = ids.as_array().map_or(&[][..], Vec::as_slice);
            let count = ids.iter().filter(|i| i.as_str().is_some()).count();
            n.insert(owner, Value::from(count));
            if show {
                cards.insert(owner, faces(ids));
            }
        }
        if show {
            shown.insert(zone, Value::Object(cards));
        }
        zone_counts.insert(zone, Value::Object(n));
    }
    let discard = deck
        .get("discard_pile")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    Ok(obj! {
        "draw_count" => ids_of(deck.get("draw_pile")).len(),
        "discard" => faces(discard),
        "my_hand" => my_hand,
        "hand_counts" => counts,
        "zones" => Value::Object(shown),
        "zone_counts" => Value::Object(zone_counts),
        "total_cards" => deck.get("total_cards").cloned().unwrap_or(Value::Null),
    })
}

/// The part of [`private_view`] a table that shows no pile or zone needs,
/// with the same checks: `viewer`'s own hand (the cards' faces) and every
/// hand's size.
pub fn hand_view(deck: &Map, viewer: &str) -> Result<(Value, Value), DeckError> {
    validate_shown(deck)?;
    let empty = Map::new();
    let hands = deck
        .get("hands")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let Some(mine) = hands.get(viewer) else {
        return Err("viewer does not own a hand".into());
    };
    let mut counts = Map::with_capacity(hands.len());
    for (pk, ids) in hands.iter() {
        counts.push_new(pk, Value::from(ids.as_array().map_or(0, Vec::len)));
    }
    let mine = mine.as_array().map_or(&[][..], Vec::as_slice);
    Ok((Value::Array(faces_of(deck, mine)), Value::Object(counts)))
}

/// [`validate`] for a deck only looked at: the four views of one state
/// check the same deck, so the last deck that passed is kept (a copy,
/// which keeps its members from being reused) and passes again at once.
fn validate_shown(deck: &Map) -> Result<(), DeckError> {
    thread_local! {
        static PASSED: std::cell::RefCell<Option<Map>> = const { std::cell::RefCell::new(None) };
    }
    if PASSED.with_borrow(|p| p.as_ref().is_some_and(|p| p.same_members(deck))) {
        return Ok(());
    }
    validate(deck)?;
    PASSED.set(Some(deck.clone()));
    Ok(())
}

/// Every card of the catalog is in exactly one place, and nowhere else.
pub fn validate(deck: &Map) -> Result<(), DeckError> {
    let catalog = match deck.get("catalog") {
        Some(Value::Object(c)) if !c.is_empty() => c,
        _ => return Err("catalog must be a non-empty object".into()),
    };
    let mut lists: Vec<&Vec<Value>> = Vec::with_capacity(8);
    for key in ["draw_pile", "discard_pile"] {
        match deck.get(key) {
            Some(Value::Array(a)) => lists.push(a),
            _ => return Err(format!("{key} must be an array")),
        }
    }
    match deck.get("hands") {
        Some(Value::Object(h)) => {
            for (_, cards) in h.iter() {
                match cards {
                    Value::Array(a) => lists.push(a),
                    _ => return Err("hand must be an array".into()),
                }
            }
        }
        _ => return Err("hands must be an object".into()),
    }
    match deck.get("zones") {
        Some(Value::Object(z)) => {
            for (_, owners) in z.iter() {
                let Value::Object(owners) = owners else {
                    return Err("zone owners must be an object".into());
                };
                for (_, cards) in owners.iter() {
                    match cards {
                        Value::Array(a) => lists.push(a),
                        _ => return Err("zone cards must be an array".into()),
                    }
                }
            }
        }
        _ => return Err("zones must be an object".into()),
    }
    if !conserved_small(&lists, catalog) {
        conservation(&lists, catalog)?;
    }
    if deck.get("total_cards").and_then(Value::as_i64) != Some(catalog.len() as i64) {
        return Err("total_cards does not match catalog size".into());
    }
    Ok(())
}

/// Every catalog card once among `lists` and nothing else, for a deck of
/// up to 128 cards, in a table on the stack: `true` when so (`false` may
/// also mean a larger deck; [`conservation`] then says which).
fn conserved_small(lists: &[&Vec<Value>], catalog: &Map) -> bool {
    use std::hash::BuildHasher;
    const CARDS: usize = 128;
    const SLOTS: usize = 2 * CARDS;
    let observed: usize = lists.iter().map(|l| l.len()).sum();
    if observed != catalog.len() || observed > CARDS {
        return false;
    }
    // Open addressing with linear probing: a slot holds 1 + the index of
    // its id. The ids are digests, so a fixed hasher spreads them (and ids
    // picked to collide cost at most 128 probes each).
    let hasher = foldhash::fast::FixedState::with_seed(0x9e37_79b9_7f4a_7c15);
    let mut slots = [0u8; SLOTS];
    let mut ids = [""; CARDS];
    let find = |slots: &[u8; SLOTS], ids: &[&str; CARDS], id: &str| -> (usize, bool) {
        let mut at = hasher.hash_one(id) as usize % SLOTS;
        while slots[at] != 0 {
            if ids[usize::from(slots[at]) - 1] == id {
                return (at, true);
            }
            at = (at + 1) % SLOTS;
        }
        (at, false)
    };
    let mut n = 0;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let Some(id) = v.as_str() else {
            return false;
        };
        let (at, found) = find(&slots, &ids, id);
        if found {
            return false;
        }
        ids[n] = id;
        n += 1;
        slots[at] = n as u8;
    }
    // As many distinct ids as catalog cards: the same cards when every
    // catalog card is among them.
    catalog.keys().all(|k| find(&slots, &ids, k).1)
}

/// The conservation check, with the reference's refusal when it fails.
fn conservation(lists: &[&Vec<Value>], catalog: &Map) -> Result<(), DeckError> {
    let ids: Vec<&Value> = lists.iter().flat_map(|l| l.iter()).collect();
    let observed = ids.len();
    // Checked after every change of the deck: a fast hasher (the ids are
    // digests, so no one picks them to collide), not SipHash.
    let mut seen: HashSet<&str, foldhash::fast::RandomState> =
        HashSet::with_capacity_and_hasher(observed, Default::default());
    let mut dup = false;
    for id in ids {
        match id.as_str() {
            Some(s) => dup |= !seen.insert(s),
            None => dup = true,
        }
    }
    if dup {
        return Err("a card appears in more than one deck zone".into());
    }
    // With no card twice, as many cards as the catalog holds are exactly
    // its cards when every catalog card is among them (hashed look-ups: the
    // catalog itself is a list).
    if observed != catalog.len() || !catalog.keys().all(|k| seen.contains(k)) {
        let known: HashSet<&str, foldhash::fast::RandomState> = catalog.keys().collect();
        let mut missing: Vec<&str> = catalog.keys().filter(|k| !seen.contains(k)).collect();
        let mut unknown: Vec<&str> = seen
            .iter()
            .copied()
            .filter(|k| !known.contains(k))
            .collect();
        missing.sort_unstable();
        unknown.sort_unstable();
        return Err(format!(
            "deck conservation failed (missing={}, unknown={})",
            py_list(&missing[..missing.len().min(3)]),
            py_list(&unknown[..unknown.len().min(3)])
        ));
    }
    Ok(())
}

/// Python's repr of a list of strings.
fn py_list(items: &[&str]) -> String {
    let inner: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", inner.join(", "))
}

#[cfg(test)]
#[path = "deck_tests.rs"]
mod tests;
