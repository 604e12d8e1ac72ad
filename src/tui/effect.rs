//! What an update asks of the console besides changing its own state: a
//! status line, or slow work to start. Screens return effects from
//! `update`; `App` shows the status lines and hands the rest to the task
//! runner (`tasks`), whose tasks report back with a `Report`.

use super::community::Community;
use crate::engine::ControlMode;
use crate::json::{Map, Value};
use crate::market::MarketClient;
use crate::session::StateDir;
use crate::spec::Spec;
use crate::web::Client;
use crate::werewolf::config::Config;
use std::path::PathBuf;
use std::sync::Arc;

/// What a screen's update returns.
pub type Effects = Vec<Effect>;

pub enum Effect {
    /// A line for the status bar: (ok?, text).
    Status(bool, String),
    Task(Task),
    /// Show the inbox with the compose form open, to this agent (its
    /// 64-hex key, and its nickname when known).
    MessageAgent {
        key: String,
        nickname: String,
    },
}

/// Work for the task runner.
pub enum Task {
    /// A status line that goes through the report channel, so the console
    /// log keeps it too.
    Progress(String),
    Session(Box<SessionTask>),
    Wolf(WolfTask),
    Market(MarketTask),
    Social(Box<SocialTask>),
}

impl From<SocialTask> for Effect {
    fn from(t: SocialTask) -> Effect {
        Effect::Task(Task::Social(Box::new(t)))
    }
}

impl From<SessionTask> for Effect {
    fn from(t: SessionTask) -> Effect {
        Effect::Task(Task::Session(Box::new(t)))
    }
}

impl From<WolfTask> for Effect {
    fn from(t: WolfTask) -> Effect {
        Effect::Task(Task::Wolf(t))
    }
}

impl From<MarketTask> for Effect {
    fn from(t: MarketTask) -> Effect {
        Effect::Task(Task::Market(t))
    }
}

/// Work of the sessions screen.
pub enum SessionTask {
    /// List the sessions in the data dir.
    Scan { data_dir: PathBuf },
    /// List the open invitations, each with its host's reputation and
    /// whether its protocol is in the data dir's library.
    ListInvitations { client: Client, data_dir: PathBuf },
    /// Withdraw an invitation this console does not host (any more).
    CancelInvitation { client: Client, post_id: String },
    /// Follow a session's files (replaces the one followed before).
    Watch { dir: StateDir, generation: u64 },
    /// Read feed rows `[start, start + count)` back from events.jsonl.
    LoadPage {
        events: PathBuf,
        generation: u64,
        start: usize,
        count: usize,
    },
    /// Find the events that contain `needle`.
    Search {
        events: PathBuf,
        generation: u64,
        needle: String,
    },
    /// Write a decision the way `palaver session decide` does.
    Decide { child: PathBuf, body: Map },
    /// Append a free-mode chat line to the engine's inbox.
    Chat { child: PathBuf, body: Map },
    /// Save (or merge) strategy.json.
    Strategy {
        child: PathBuf,
        strategy: Map,
        merge: bool,
    },
    /// Join an invitation and play it (ends when the console quits); a
    /// group protocol's invitation joins its room.
    Join {
        community: Box<Community>,
        post_id: String,
        /// The invitation's protocol (a room's runs `services::group`).
        protocol_id: String,
        mode: ControlMode,
        data_dir: PathBuf,
    },
    /// Queue one action of a room (`group-actions.jsonl` in its dir), as
    /// `palaver session action` does.
    RoomAction { dir: PathBuf, action: Value },
    /// Write a user whisper the way `palaver session whisper` does.
    Whisper {
        child: PathBuf,
        text: String,
        schema: Option<crate::engine::whisper::Schema>,
    },
    /// Rebuild a finished session's timeline for the replay view (a tank
    /// battle's: its realtime-frames.jsonl).
    Replay { dir: StateDir },
    /// Write a tank battle's order into strategy.json.
    TankOrder {
        child: PathBuf,
        change: crate::tui::tank_order::TankChange,
    },
    /// Read a finished werewolf game's .log (`werewolf::replay`) for the
    /// replay view.
    ReplayLog { path: PathBuf },
    /// Ask the community the nicknames of these public keys (a room's
    /// members).
    Nicknames { client: Client, keys: Vec<String> },
    /// The coach pane's work (`services::coach`).
    Coach(CoachJob),
    /// Ask the community the ELO and karma of these hosts (a few at a
    /// time).
    Reputation { client: Client, keys: Vec<String> },
    /// Search the community's protocol directory (from `cursor`: more).
    Discover {
        client: Client,
        data_dir: PathBuf,
        query: String,
        cursor: Option<String>,
    },
    /// Fetch a protocol this console does not have and install it.
    Install {
        client: Client,
        data_dir: PathBuf,
        protocol_id: String,
    },
    /// Host an invitation and play it (a group protocol's: lead its
    /// room); `cancel` withdraws this one.
    Host {
        community: Box<Community>,
        job: Box<HostJob>,
        cancel: tokio::sync::watch::Receiver<bool>,
    },
}

/// Work of the coach pane; each reads `[coach]` from config.toml afresh.
pub enum CoachJob {
    /// Read the conversation kept in the data dir.
    Load { data_dir: PathBuf },
    /// One turn about the session in `child`; `cancel` set to true stops it.
    Turn {
        data_dir: PathBuf,
        child: PathBuf,
        question: String,
        cancel: tokio::sync::watch::Receiver<bool>,
    },
    /// Forget the conversation and the CLI's session.
    Reset { data_dir: PathBuf },
    /// Send `text` (the last reply) to `child` as a user whisper.
    Adopt {
        child: PathBuf,
        text: String,
        schema: Option<crate::engine::whisper::Schema>,
    },
}

/// What to host: the protocol, its options, how to play, where to write.
pub struct HostJob {
    pub spec: Spec,
    pub options: Map,
    pub mode: ControlMode,
    pub data_dir: PathBuf,
}

/// A remote seat to take: where, as whom, and who decides.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinSpec {
    /// The server's WebSocket URL, e.g. `ws://127.0.0.1:8080/ws`.
    pub url: String,
    /// The connection name answered to NAME, e.g. `team1`.
    pub name: String,
    pub token: Option<String>,
    pub mode: ControlMode,
    pub seed: u64,
}

/// Work of the werewolf screen. A game (watched, played, joined or
/// followed) replaces the one before: its tasks end.
pub enum WolfTask {
    /// An in-process bot game of `seats`.
    Watch {
        generation: u64,
        seats: usize,
        seed: u64,
    },
    /// An in-process game with a person at `seat` (0-based).
    Play {
        generation: u64,
        config: Box<Config>,
        seed: u64,
        seat: usize,
        mode: ControlMode,
    },
    /// A seat at a remote server.
    Join { generation: u64, spec: JoinSpec },
    /// The games a server lists.
    Games { url: String, token: String },
    /// Follow one game of a server.
    Spectate {
        generation: u64,
        url: String,
        token: String,
        game: String,
    },
}

/// Work of the market screen.
pub enum MarketTask {
    /// Get this identity's market token.
    Connect { url: String, data_dir: PathBuf },
    /// Read the listing, the balance and one transaction's view.
    Refresh {
        client: Arc<MarketClient>,
        selected: Option<String>,
    },
    /// Post JOB_OPEN for a digest starting with `target`.
    Open {
        client: Arc<MarketClient>,
        target: String,
        budget: i64,
        minutes: i64,
    },
    /// Lock the deal on an offer.
    Accept {
        client: Arc<MarketClient>,
        txid: String,
        offer: String,
    },
    /// Fund the locked deal.
    Fund {
        client: Arc<MarketClient>,
        txid: String,
    },
}

/// Work of the inbox and leaderboard screens.
pub enum SocialTask {
    /// List the inbox (the newest messages; the unread count), naming the
    /// senders not in `known`.
    Inbox {
        client: Client,
        known: Vec<String>,
    },
    /// Fetch message `id` and open it with this identity's key.
    Read {
        client: Client,
        id: i64,
    },
    /// Seal `text` for `to` and send it.
    Send {
        client: Client,
        to: String,
        text: String,
    },
    Delete {
        client: Client,
        id: i64,
    },
    /// A page of a leaderboard (from `cursor`; None: the first).
    Board {
        client: Client,
        board: crate::community::social::Board,
        cursor: Option<String>,
    },
}
