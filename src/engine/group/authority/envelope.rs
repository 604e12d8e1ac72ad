//! One member's signed envelope: the shared frame, the member's view (or
//! its delta) and direct messages, with its canonical length.

use super::super::core::{Result, compose, fits_one_down, quoted};
use crate::identity::KeyPair;
use crate::json::canonical::{self, sha256_hex};
use crate::json::{Map, Value};

/// What every envelope of one frame shares.
pub(super) struct Shared<'a> {
    pub(super) core: &'a Map,
    pub(super) core_len: usize,
    pub(super) frame_hash: &'a str,
    pub(super) events: &'a Value,
    pub(super) events_json: &'a [u8],
    pub(super) checkpoint: &'a Value,
    pub(super) checkpoint_json: &'a [u8],
    pub(super) checkpoint_nest: usize,
    /// `(ops, canonical ops, deepest level)` when the checkpoint is sent as
    /// a delta; the full checkpoint otherwise.
    pub(super) checkpoint_delta: Option<(&'a Value, &'a [u8], usize)>,
    pub(super) checkpoint_hash: &'a str,
    pub(super) checkpoint_signature: &'a str,
}

/// One member's part of an envelope.
pub(super) struct ViewPart<'a> {
    pub(super) public_key: &'a str,
    pub(super) view: &'a Value,
    pub(super) view_json: &'a [u8],
    pub(super) view_nest: usize,
    /// `(ops, canonical ops, deepest level)` when the view is sent as a delta.
    pub(super) delta: Option<(Value, Vec<u8>, usize)>,
    pub(super) direct: Value,
}

pub(super) const EMPTY_ARRAY: &[u8] = b"[]";
pub(super) const NULL: &[u8] = b"null";

/// Length of `"key":` and a value of `len` bytes.
pub(super) fn member_len(key: &str, len: usize) -> usize {
    key.len() + 3 + len
}

/// One member's signed envelope and its canonical length.
pub(super) fn member_envelope(
    keys: &KeyPair,
    s: &Shared<'_>,
    p: ViewPart<'_>,
) -> Result<(Value, usize)> {
    let view_full = p.delta.is_none();
    if view_full {
        fits_one_down(p.view_nest)?;
    }
    if let Some((_, _, nest)) = &p.delta {
        fits_one_down(*nest)?;
    }
    match s.checkpoint_delta {
        None => fits_one_down(s.checkpoint_nest)?,
        Some((_, _, nest)) => fits_one_down(nest)?,
    }
    let view_state_hash = sha256_hex(p.view_json);
    let view_mode = if view_full { "full" } else { "delta" };
    let checkpoint_mode = if s.checkpoint_delta.is_none() {
        "full"
    } else {
        "delta"
    };
    let direct_json = canonical::to_vec(&p.direct);
    let (q_ck_hash, q_ck_sig, q_ck_mode) = (
        quoted(s.checkpoint_hash),
        quoted(s.checkpoint_signature),
        quoted(checkpoint_mode),
    );
    let (q_mode, q_vsh, q_viewer) = (
        quoted(view_mode),
        quoted(&view_state_hash),
        quoted(p.public_key),
    );
    let mut private = [
        ("viewer_public_key", q_viewer.as_slice()),
        ("view_mode", q_mode.as_slice()),
        ("view", if view_full { p.view_json } else { NULL }),
        (
            "view_delta",
            p.delta.as_ref().map_or(EMPTY_ARRAY, |d| d.1.as_slice()),
        ),
        ("view_state_hash", q_vsh.as_slice()),
        ("direct", direct_json.as_slice()),
        ("checkpoint_mode", q_ck_mode.as_slice()),
        (
            "checkpoint",
            if s.checkpoint_delta.is_none() {
                s.checkpoint_json
            } else {
                NULL
            },
        ),
        (
            "checkpoint_delta",
            s.checkpoint_delta.map_or(EMPTY_ARRAY, |d| d.1),
        ),
        ("checkpoint_hash", q_ck_hash.as_slice()),
        ("checkpoint_signature", q_ck_sig.as_slice()),
    ];
    let private_json = compose(&mut private);
    let view_hash = sha256_hex(&private_json);
    let (q_fh, q_vh) = (quoted(s.frame_hash), quoted(&view_hash));
    let signed = compose(&mut [
        ("frame_hash", q_fh.as_slice()),
        ("view_hash", q_vh.as_slice()),
        ("viewer_public_key", q_viewer.as_slice()),
    ]);
    let signature = keys.sign(&signed);
    let len = 2
        + (s.core_len - 2)
        + (private_json.len() - 2)
        + member_len("frame_hash", q_fh.len())
        + member_len("events", s.events_json.len())
        + member_len("view_hash", q_vh.len())
        + member_len("signature", signature.len() + 2)
        // 28 members: 27 commas, 22 of them inside the two composed parts.
        + 5;

    let mut env = Map::with_capacity(28);
    for (k, v) in s.core.iter() {
        env.push_new(k, v.clone());
    }
    env.push_new("frame_hash", Value::from(s.frame_hash));
    env.push_new("events", s.events.clone());
    env.push_new("viewer_public_key", Value::from(p.public_key));
    env.push_new("view_mode", Value::from(view_mode));
    env.push_new(
        "view",
        if view_full {
            p.view.clone()
        } else {
            Value::Null
        },
    );
    env.push_new(
        "view_delta",
        p.delta.map_or_else(|| Value::Array(Vec::new()), |d| d.0),
    );
    env.push_new("view_state_hash", Value::from(view_state_hash));
    env.push_new("direct", p.direct);
    env.push_new("checkpoint_mode", Value::from(checkpoint_mode));
    env.push_new(
        "checkpoint",
        if s.checkpoint_delta.is_none() {
            s.checkpoint.clone()
        } else {
            Value::Null
        },
    );
    env.push_new(
        "checkpoint_delta",
        s.checkpoint_delta
            .map_or_else(|| Value::Array(Vec::new()), |d| d.0.clone()),
    );
    env.push_new("checkpoint_hash", Value::from(s.checkpoint_hash));
    env.push_new("checkpoint_signature", Value::from(s.checkpoint_signature));
    env.push_new("view_hash", Value::from(view_hash));
    env.push_new("signature", Value::from(signature));
    Ok((Value::Object(env), len))
}
