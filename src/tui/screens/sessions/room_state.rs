//! What the console keeps of an attached room besides its files (the
//! stream's notices, who is linked, the compose line) and what a watch
//! update says a room needs; the keys and the actions on it are in `room`.

use crate::json::Map;
use crate::session::room::{Notice, RoomKind, RoomModel};
use crate::tui::note::Note;
use crate::tui::panes::room;
use std::collections::BTreeMap;

/// What the console keeps of an attached room besides its files.
#[derive(Debug, Clone)]
pub struct RoomState {
    /// The room as its snapshot and session.json tell it (`Err`: the
    /// snapshot is unreadable, and why).
    pub model: Result<RoomModel, String>,
    /// Lines of the stream from events.jsonl, oldest first.
    pub notices: Vec<Notice>,
    /// Who is connected to this side, as its events tell (leader side).
    pub links: BTreeMap<String, bool>,
    /// The compose line.
    pub input: String,
    /// Entries of the stream hidden below the bottom (0: following).
    pub scroll: usize,
    /// The last send's result.
    pub note: Option<Note>,
    /// The text whose action is being queued (back in the line if that
    /// fails).
    pub sending: Option<String>,
    /// Was the snapshot unreadable when last read?
    pub(super) torn: bool,
}

impl RoomState {
    pub(super) fn new() -> RoomState {
        RoomState {
            model: RoomModel::parse(&Map::new(), &Map::new()),
            notices: Vec::new(),
            links: BTreeMap::new(),
            input: String::new(),
            scroll: 0,
            note: None,
            sending: None,
            torn: false,
        }
    }

    pub(super) fn len(&self) -> usize {
        room::stream_len(&self.model, &self.notices)
    }

    pub(super) fn kind(&self) -> RoomKind {
        self.model.as_ref().map_or(RoomKind::Other, |m| m.kind)
    }
}

/// What a watch update says that a room needs.
pub(super) struct RoomNews {
    pub snapshot: bool,
    pub session: bool,
    pub torn: bool,
    pub events: Vec<Map>,
}
