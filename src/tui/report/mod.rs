//! What background work reports back to the console. Tasks send a
//! [`Report`] on the console's channel; `App::update` takes it like any
//! other message. The types reports carry live here too, so this module
//! uses nothing else of the console.

pub mod feed;
pub mod market;
pub mod rows;
pub mod social;
pub mod wolf;

use feed::WatchUpdate;
use market::MarketReport;
use rows::{Invitation, SessionRow};
use social::{InboxReport, LeaderReport, PickerReport, Reputation};
use std::path::PathBuf;
use wolf::WolfReport;

/// A background task's report.
pub enum Report {
    /// The community is reachable (URL, embedded?, our nickname).
    CommunityReady {
        url: String,
        embedded: bool,
        nickname: String,
    },
    Invitations(Result<Vec<Invitation>, String>),
    Sessions(Vec<SessionRow>),
    /// New data from the watched session (generation, update).
    Watch(u64, Box<WatchUpdate>),
    /// A line for the status bar (host/join progress, market notes).
    Progress(String),
    /// An invitation this console hosts is open.
    InvitationOpen(String),
    /// A session this console started has a state dir: attach to it.
    Attach(PathBuf),
    /// A background task ended: Ok(summary) or Err(error text).
    TaskDone(Result<String, String>),
    /// A decision was submitted: Ok(status line) or Err(why not).
    Submitted(Result<String, String>),
    /// The strategy editor's save/merge finished.
    Saved(Result<String, String>),
    /// A room's action was queued: Ok(what) or Err(why not).
    RoomAction(Result<String, String>),
    /// A session's timeline for the replay view, or why it cannot be read.
    Replay(Result<Box<crate::session::replay::Timeline>, String>),
    /// A signed replay bundle opened: its verification (a failed check is
    /// `timeline`'s error) and the session's timeline from its files.
    BundleReplay {
        verified: String,
        timeline: Result<Box<crate::session::replay::Timeline>, String>,
    },
    /// A tank battle's frames for its replay (and the side the session
    /// played), or why they cannot be read.
    TankReplay(Result<Box<crate::tui::tank_journal::Journal>, String>),
    /// A tank battle's order was written: what, or why not.
    TankOrdered(Result<String, String>),
    /// A whisper was written to the attached session: Ok((whisper id,
    /// what it was understood as)) or Err(why not).
    Whispered(Result<(String, String), String>),
    /// The coach pane's news.
    Coach(CoachReport),
    /// Nicknames the community told: (public key, nickname).
    Nicknames(Vec<(String, String)>),
    /// Reports for the werewolf screen.
    Wolf(Box<WolfReport>),
    /// Reports for the market screen.
    Market(Box<MarketReport>),
    /// Reports for the inbox screen.
    Inbox(Box<InboxReport>),
    /// Reports for the leaderboard screen.
    Leaders(Box<LeaderReport>),
    /// Hosts' ELO and karma for the invitations list: (public key, what
    /// the community told).
    Reputation(Vec<(String, Reputation)>),
    /// The host form's protocol picker.
    Picker(Box<PickerReport>),
}

/// What the coach pane hears back.
#[derive(Debug, Clone, PartialEq)]
pub enum CoachReport {
    /// The conversation kept in the data dir: (role, text).
    History(Result<Vec<(String, String)>, String>),
    /// One line of the reply streaming in.
    Line(String),
    /// The turn ended: the reply, or the error the pane shows.
    Done(Result<String, String>),
    /// The conversation was reset.
    Reset(Result<(), String>),
    /// The last reply was sent as a whisper: Ok(whisper id) or Err(why not).
    Adopted(Result<String, String>),
}
