//! What a leader's frame leaves behind, shared by the side that builds
//! frames ([`super::authority`]) and the side that follows them
//! ([`super::replica`]): the envelopes of one frame and the record of what
//! it writes to the state dir.

use crate::json::{Map, Value};
use std::sync::Arc;

/// The envelopes of one frame: member public key → envelope, in seat order.
pub type Envelopes = Arc<Map>;

/// What one frame leaves for the state dir (the files the reference
/// writes as it builds the frame).
#[derive(Debug, Clone)]
pub struct FrameRecord {
    pub seq: u64,
    pub frame_hash: String,
    /// The checkpoint certifying this frame: `group-checkpoint.json`.
    pub checkpoint: Arc<Value>,
    /// Its canonical bytes, the exact content of `group-checkpoint.json`.
    pub checkpoint_json: Vec<u8>,
    /// `details.jsonl` lines in the order written (without `ts`, which the
    /// writer adds).
    pub details: Vec<Value>,
    /// One `events.jsonl` event: its type and data.
    pub event: (&'static str, Value),
    /// The fields the snapshot is updated with (deep-merged into it).
    pub snapshot: Map,
}
