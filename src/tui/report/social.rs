//! What the inbox, leaderboard and protocol-picker tasks report, and the
//! reputation the invitations list shows beside a host's rating.

use crate::community::social::{Board, InboxPage, LeaderRow, Listed, Opened, Page, Sent};
use crate::spec::Spec;

/// A page of the inbox, with the nicknames of senders the community told.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxList {
    pub page: InboxPage,
    /// (public key, nickname) of senders resolved this time.
    pub nicknames: Vec<(String, String)>,
}

/// Reports for the inbox screen (and the header's unread count).
#[derive(Debug, Clone, PartialEq)]
pub enum InboxReport {
    /// The inbox was listed (a poll or a refresh), or why not.
    Listed(Result<Box<InboxList>, String>),
    /// A message was opened: its text, or (its id, why not).
    Opened(Result<Box<Opened>, (i64, String)>),
    /// A message was sealed and sent, or why not.
    Sent(Result<Sent, String>),
    /// A message was deleted: its id, or (its id, why not).
    Deleted(Result<i64, (i64, String)>),
}

/// Reports for the leaderboard screen.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaderReport {
    /// A page of `board` read from `cursor` (None: the first), or why not.
    Page {
        board: Board,
        cursor: Option<String>,
        page: Result<Page<LeaderRow>, String>,
    },
}

/// A host's standing on the community: its ELO and karma (None: the
/// community does not know it, or has no figure for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reputation {
    pub elo: Option<i64>,
    pub karma: Option<i64>,
}

impl Reputation {
    /// `ELO 1512 · karma 320`; a figure the community lacks is `-`.
    pub fn line(&self) -> String {
        let f = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |n| n.to_string());
        format!("ELO {} · karma {}", f(self.elo), f(self.karma))
    }
}

/// A protocol of the community's directory, and its alias here when
/// this console's library has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub listed: Listed,
    pub local: Option<String>,
}

/// What a directory search found: the protocols, where more start.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub picks: Vec<Pick>,
    pub next_cursor: Option<String>,
}

/// A protocol now in the library, ready for the host form.
#[derive(Debug, Clone)]
pub struct Ready {
    pub protocol_id: String,
    pub alias: String,
    pub spec: Box<Spec>,
    /// What runs it (native hooks, a hooks program, a scaffold to fill).
    pub how: String,
}

/// Reports for the host form's protocol picker.
#[derive(Debug, Clone)]
pub enum PickerReport {
    /// A directory search for `query` (more: a further page was read).
    Found {
        query: String,
        more: bool,
        found: Result<Found, String>,
    },
    /// A protocol fetched and installed (or found installed), or
    /// (its id, why not).
    Installed(Result<Ready, (String, String)>),
}
