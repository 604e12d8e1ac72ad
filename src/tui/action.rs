//! The one message type of the console. Keys become actions through the
//! keymap; background tasks report with actions; `App::update` is the only
//! place state changes.

use super::data::{Invitation, SessionRow};
use super::watch::WatchUpdate;
use crossterm::event::KeyEvent;
use std::path::PathBuf;
use std::sync::Arc;

/// A value a task hands to `update` that can be neither copied nor compared
/// (a client, a reply channel): shared, and equal only to itself.
pub struct Shared<T>(pub Arc<T>);

impl<T> Shared<T> {
    pub fn new(v: T) -> Shared<T> {
        Shared(Arc::new(v))
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shared<{}>", std::any::type_name::<T>())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    // ---- bindable (named in keymap files; see `BINDABLE`) ----
    Quit,
    Help,
    FocusNext,
    FocusPrev,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Enter on a list row: join the invitation / attach the session.
    Activate,
    /// Close the dialog or overlay on top.
    Back,
    Search,
    SearchNext,
    /// Cycle the feed filter (all → protocol only → lifecycle only).
    Filter,
    RawToggle,
    FoldToggle,
    Strategy,
    HostNew,
    CycleMode,
    CancelInvitation,
    Refresh,
    /// Attach a state dir by path.
    OpenPath,
    /// Pick the n-th legal choice (1-based) in the decision prompt.
    Choose(u8),
    Submit,
    Save,
    Merge,
    Preset,
    /// Switch the console's view.
    ViewSessions,
    ViewWerewolf,
    ViewMarket,
    /// Market: open a job, accept the selected offer, fund the deal.
    OpenJob,
    AcceptOffer,
    Fund,
    /// Werewolf: watch a bot game, play a seat, show/hide roles, follow a
    /// server's game, skip or end a talk turn.
    WatchGame,
    PlaySeat,
    ToggleRoles,
    Spectate,
    JoinServer,
    Skip,
    Over,
    // ---- text input ----
    /// A key for the focused text field (search, number, chat, editor, form).
    Input(KeyEvent),
    Paste(String),
    // ---- time and terminal ----
    Tick,
    Resize(u16, u16),
    // ---- reports from background tasks ----
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
    /// Progress of a host/join task, shown in the status line.
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
    /// Reports for the werewolf view.
    Wolf(Box<super::wolf::WolfMsg>),
    /// Reports for the market view.
    Market(Box<super::market_view::MarketMsg>),
}

/// Bindable actions with their keymap names and help texts, in help order.
pub const BINDABLE: &[(&str, &str)] = &[
    (
        "quit",
        "quit palaver (sessions run by other processes go on)",
    ),
    ("help", "show or hide this help"),
    ("focus_next", "focus the next pane"),
    ("focus_prev", "focus the previous pane"),
    ("up", "move up / scroll back"),
    ("down", "move down / scroll on"),
    ("left", "move left (board cursor, choices, options)"),
    ("right", "move right"),
    ("page_up", "scroll a page back"),
    ("page_down", "scroll a page on"),
    ("top", "go to the first row"),
    ("bottom", "go to the last row (the feed follows new events)"),
    ("activate", "join the invitation / attach the session"),
    ("back", "close the dialog, prompt focus or overlay"),
    ("search", "search the list or the feed"),
    ("search_next", "jump to the next search match"),
    ("filter", "feed: all → protocol messages → lifecycle"),
    ("raw_toggle", "feed: summaries ↔ raw JSON"),
    ("fold_toggle", "feed: fold or unfold _sys noise"),
    ("strategy", "edit the focused session's strategy.json"),
    ("host_new", "host a new invitation"),
    ("cycle_mode", "cycle the control mode in a dialog"),
    ("cancel_invitation", "cancel your selected invitation"),
    ("refresh", "refresh invitations, sessions, the market now"),
    (
        "open_path",
        "attach a state dir by path (any process's, the reference client's too)",
    ),
    ("choose_1", "decision prompt: choice 1"),
    ("choose_2", "decision prompt: choice 2"),
    ("choose_3", "decision prompt: choice 3"),
    ("choose_4", "decision prompt: choice 4"),
    ("choose_5", "decision prompt: choice 5"),
    ("choose_6", "decision prompt: choice 6"),
    ("choose_7", "decision prompt: choice 7"),
    ("choose_8", "decision prompt: choice 8"),
    ("choose_9", "decision prompt: choice 9"),
    ("submit", "submit the decision / confirm the dialog"),
    ("save", "strategy editor: save (replace strategy.json)"),
    ("merge", "strategy editor: deep-merge into strategy.json"),
    ("preset", "strategy editor: next preset for this protocol"),
    ("view_sessions", "show sessions: invitations, feed, prompt"),
    ("view_werewolf", "show werewolf: watch or play AIWolf games"),
    ("view_market", "show the GTL market: jobs, offers, deals"),
    ("open_job", "market: open a job from a form"),
    (
        "accept_offer",
        "market: accept the selected offer (lock the deal)",
    ),
    ("fund", "market: fund the locked deal"),
    (
        "watch_game",
        "werewolf: watch a bot game (5, 9 or 13 seats)",
    ),
    ("play_seat", "werewolf: take a seat in a bot game"),
    ("toggle_roles", "werewolf: show or hide the roles"),
    ("spectate", "werewolf: follow a game on a wolf server"),
    (
        "join_server",
        "werewolf: take a seat at a wolf server (ws URL, name, token, mode)",
    ),
    (
        "skip",
        "werewolf prompt: Skip this talk turn (watching: catch up)",
    ),
    ("over", "werewolf prompt: Over (done talking today)"),
];

impl Action {
    /// The bindable action named `name` in a keymap file.
    pub fn from_name(name: &str) -> Option<Action> {
        Some(match name {
            "quit" => Action::Quit,
            "help" => Action::Help,
            "focus_next" => Action::FocusNext,
            "focus_prev" => Action::FocusPrev,
            "up" => Action::Up,
            "down" => Action::Down,
            "left" => Action::Left,
            "right" => Action::Right,
            "page_up" => Action::PageUp,
            "page_down" => Action::PageDown,
            "top" => Action::Top,
            "bottom" => Action::Bottom,
            "activate" => Action::Activate,
            "back" => Action::Back,
            "search" => Action::Search,
            "search_next" => Action::SearchNext,
            "filter" => Action::Filter,
            "raw_toggle" => Action::RawToggle,
            "fold_toggle" => Action::FoldToggle,
            "strategy" => Action::Strategy,
            "host_new" => Action::HostNew,
            "cycle_mode" => Action::CycleMode,
            "cancel_invitation" => Action::CancelInvitation,
            "refresh" => Action::Refresh,
            "open_path" => Action::OpenPath,
            "submit" => Action::Submit,
            "save" => Action::Save,
            "merge" => Action::Merge,
            "preset" => Action::Preset,
            "view_sessions" => Action::ViewSessions,
            "view_werewolf" => Action::ViewWerewolf,
            "view_market" => Action::ViewMarket,
            "open_job" => Action::OpenJob,
            "accept_offer" => Action::AcceptOffer,
            "fund" => Action::Fund,
            "watch_game" => Action::WatchGame,
            "play_seat" => Action::PlaySeat,
            "toggle_roles" => Action::ToggleRoles,
            "spectate" => Action::Spectate,
            "join_server" => Action::JoinServer,
            "skip" => Action::Skip,
            "over" => Action::Over,
            _ => {
                let n: u8 = name.strip_prefix("choose_")?.parse().ok()?;
                if !(1..=9).contains(&n) {
                    return None;
                }
                Action::Choose(n)
            }
        })
    }

    /// The keymap name of a bindable action.
    pub fn name(&self) -> Option<&'static str> {
        Some(match self {
            Action::Choose(n) => {
                BINDABLE
                    .iter()
                    .find(|(k, _)| k.strip_prefix("choose_") == Some(&n.to_string()))?
                    .0
            }
            other => {
                BINDABLE
                    .iter()
                    .find(|(k, _)| Action::from_name(k).as_ref() == Some(other))?
                    .0
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bindable_name_round_trips() {
        for (name, help) in BINDABLE {
            let a = Action::from_name(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(a.name(), Some(*name));
            assert!(!help.is_empty());
        }
        assert_eq!(Action::from_name("choose_0"), None);
        assert_eq!(Action::from_name("launch_missiles"), None);
    }
}
