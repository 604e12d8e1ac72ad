//! What a watcher reports about a session: feed rows (events already
//! summarised), the open decision window, and the files that changed.

use crate::json::{Map, Value};

/// What a feed row is, for colour, filter and folding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Sent,
    Received,
    /// `_sys`/`_session_*` frames and liveness events: folded by default.
    Noise,
    /// Session lifecycle: started, ended, errors, peer events.
    Lifecycle,
}

/// One event of the feed, already summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedRow {
    /// `HH:MM:SS` (UTC, from the event's ts).
    pub time: Box<str>,
    pub kind: RowKind,
    pub summary: Box<str>,
    /// The frame (or event data) as compact JSON.
    pub raw: Box<str>,
}

/// An open decision window as `decision/state.json` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenWindow {
    pub match_key: String,
    pub match_value: Value,
    pub mode: String,
    /// Monotonic seconds (the reference's clock; see `decision::mono_now`).
    pub release_at: f64,
    pub deadline_at: f64,
}

/// One report of a watcher.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WatchUpdate {
    /// New events at the end of events.jsonl, with the index of the first.
    pub appended: Option<(usize, Vec<FeedRow>)>,
    /// A page of older events loaded on request: (first index, rows).
    pub page: Option<(usize, Vec<FeedRow>)>,
    /// Event indices matching a search (oldest first), for `search_next`.
    pub matches: Option<(String, Vec<usize>)>,
    pub snapshot: Option<Map>,
    /// With `snapshot`: the file is there but is not a JSON object (torn,
    /// or not written by a runtime); `snapshot` is then empty.
    pub snapshot_unreadable: bool,
    /// With `snapshot`, when it carries a tank battle's `world` (with
    /// `tanks`): the world read back (`World::from_value`), or why not.
    pub world: Option<Result<Box<crate::protocols::tank::World>, String>>,
    pub session: Option<Map>,
    /// `Some(None)`: no window is open now.
    pub window: Option<Option<OpenWindow>>,
    /// Newest strategy.json.
    pub strategy: Option<Map>,
    /// New lines of decision/decisions.jsonl (from any process).
    pub decisions: Vec<Map>,
    /// New events the card table keeps facts from (audit, receipt,
    /// result, refused decisions), whole.
    pub facts: Vec<Map>,
    /// New room events a room's stream shows as notices (leader changes,
    /// members connecting and leaving, refused actions), whole.
    pub room_events: Vec<Map>,
    /// New events the attached session's banner and whisper mark follow
    /// (`peer_unresponsive`, `peer_resumed`, `whisper_applied`), whole.
    pub aside_events: Vec<Map>,
    /// New lines of whisper_acks.jsonl.
    pub whisper_acks: Vec<Map>,
    /// New lines of details.jsonl (the protocol's own records).
    pub details: Vec<Map>,
    /// The bots a table's host seated (its `bots/bot-N/session.json`):
    /// (member id, seat), when that list changed.
    pub bots: Option<Vec<(String, Option<i64>)>>,
}
