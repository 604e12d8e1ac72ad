//! What a key can mean: the console's commands, as data. Keymap files name
//! them (snake_case, the serde names); the help overlay and the README
//! table show their descriptions in the order below. Nothing here knows
//! the rest of the console.

use serde::Deserialize;
use serde::de::value::{Error as DeError, StrDeserializer};

/// Defines [`Command`] from one table: variant, keymap name, description.
macro_rules! commands {
    ($($(#[$doc:meta])* $variant:ident = $name:literal : $help:literal,)*) => {
        /// A command a key is bound to.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
        )]
        pub enum Command {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl Command {
            /// Every command, in help order.
            pub const ALL: &[Command] = &[$(Command::$variant,)*];

            /// The name keymap files use.
            pub fn name(self) -> &'static str {
                match self {
                    $(Command::$variant => $name,)*
                }
            }

            /// What the command does, for the help overlay.
            pub fn description(self) -> &'static str {
                match self {
                    $(Command::$variant => $help,)*
                }
            }
        }
    };
}

commands! {
    Quit = "quit": "quit palaver (sessions run by other processes go on)",
    Help = "help": "show or hide this help",
    FocusNext = "focus_next": "focus the next pane",
    FocusPrev = "focus_prev": "focus the previous pane",
    Up = "up": "move up / scroll back",
    Down = "down": "move down / scroll on",
    Left = "left": "move left (board cursor, choices, options)",
    Right = "right": "move right",
    PageUp = "page_up": "scroll a page back",
    PageDown = "page_down": "scroll a page on",
    Top = "top": "go to the first row",
    Bottom = "bottom": "go to the last row (the feed follows new events)",
    /// Enter on a list row: join the invitation / attach the session.
    Activate = "activate": "open: join the invitation, attach the session, open the message",
    /// Close the dialog or overlay on top.
    Back = "back": "close the dialog, prompt focus or overlay",
    Search = "search": "search the list or the feed",
    SearchNext = "search_next": "jump to the next search match",
    /// Cycle the feed filter (all → protocol only → lifecycle only).
    Filter = "filter": "feed: all → protocol messages → lifecycle",
    RawToggle = "raw_toggle": "feed: summaries ↔ raw JSON",
    FoldToggle = "fold_toggle": "feed: fold or unfold _sys noise",
    Strategy = "strategy": "edit the focused session's strategy.json",
    HostNew = "host_new": "host a new invitation",
    CycleMode = "cycle_mode": "cycle the control mode in a dialog",
    CancelInvitation = "cancel_invitation": "cancel your selected invitation",
    Refresh = "refresh": "read again now: invitations, sessions, the market, the inbox, the leaderboard",
    /// Attach a state dir by path.
    OpenPath = "open_path":
        "attach a state dir by path (any process's, the reference client's too), or replay a signed replay bundle (verified first) or a werewolf game .log",
    /// Pick the n-th legal choice in the decision prompt.
    Choose1 = "choose_1": "decision prompt: choice 1",
    Choose2 = "choose_2": "decision prompt: choice 2",
    Choose3 = "choose_3": "decision prompt: choice 3",
    Choose4 = "choose_4": "decision prompt: choice 4",
    Choose5 = "choose_5": "decision prompt: choice 5",
    Choose6 = "choose_6": "decision prompt: choice 6",
    Choose7 = "choose_7": "decision prompt: choice 7",
    Choose8 = "choose_8": "decision prompt: choice 8",
    Choose9 = "choose_9": "decision prompt: choice 9",
    Submit = "submit": "submit the decision / confirm the dialog",
    /// Card games: the two non-play actions, and the suit an 8 calls.
    Draw = "draw": "card prompt: draw a card (when no card of yours plays)",
    Pass = "pass": "card prompt: pass (nothing plays and the stock is empty)",
    SuitClubs = "suit_clubs": "card prompt: the 8 calls clubs ♣",
    SuitDiamonds = "suit_diamonds": "card prompt: the 8 calls diamonds ♦",
    SuitHearts = "suit_hearts": "card prompt: the 8 calls hearts ♥",
    SuitSpades = "suit_spades": "card prompt: the 8 calls spades ♠",
    Save = "save": "strategy editor: save (replace strategy.json)",
    Merge = "merge": "strategy editor: deep-merge into strategy.json",
    Preset = "preset": "strategy editor: next preset for this protocol",
    /// Switch the console's screen.
    ViewSessions = "view_sessions": "show sessions: invitations, feed, prompt",
    ViewWerewolf = "view_werewolf": "show werewolf: watch or play AIWolf games",
    ViewMarket = "view_market": "show the GTL market: jobs, offers, deals",
    /// Market: open a job, accept the selected offer, fund the deal.
    OpenJob = "open_job": "market: open a job from a form",
    AcceptOffer = "accept_offer": "market: accept the selected offer (lock the deal)",
    Fund = "fund": "market: fund the locked deal",
    /// Werewolf: watch a bot game, play a seat, show/hide roles, follow a
    /// server's game, take a seat at a server, skip or end a talk turn.
    WatchGame = "watch_game": "werewolf: watch a bot game (5, 9 or 13 seats)",
    PlaySeat = "play_seat": "werewolf: take a seat in a bot game",
    ToggleRoles = "toggle_roles": "werewolf: show or hide the roles",
    Spectate = "spectate": "werewolf: follow a game on a wolf server",
    JoinServer = "join_server":
        "werewolf: take a seat at a wolf server (ws URL, name, token, mode)",
    Skip = "skip": "werewolf prompt: Skip this talk turn (watching: catch up)",
    Over = "over": "werewolf prompt: Over (done talking today)",
    /// Rooms (community-room-v1, meeting-room-v1): write in the compose
    /// line, set the topic, close the room.
    Compose = "compose":
        "room: write in the compose line (Enter sends; text starting with { is a raw JSON action)",
    SetTopic = "set_topic": "room: set the topic (community-room-v1)",
    CloseRoom = "close_room": "room: close the room for everyone (seat 0; asks first)",
    /// Replay a finished session: step through it or play it at a speed.
    Replay = "replay":
        "replay the finished session: step, play at a speed",
    ReplayPlay = "replay_play": "replay: play / pause",
    ReplayFaster = "replay_faster": "replay: play faster (×2, up to ×64)",
    ReplaySlower = "replay_slower": "replay: play slower (÷2, down to ×1/8)",
    ReplayNextRound = "replay_next_round":
        "replay: jump to the next round's first step (a werewolf game: the next day)",
    ReplayPrevRound = "replay_prev_round":
        "replay: jump to this round's first step, or the previous round's when there",
    /// The attached session's coaching: a whisper to your own side, the
    /// protocol's detail records in the feed, the round-by-round history.
    Whisper = "whisper":
        "whisper to your side (the line shows what it is understood as; Enter sends)",
    DetailsToggle = "details_toggle": "feed: events ↔ the protocol's detail records (details.jsonl)",
    HistoryToggle = "history_toggle": "snapshot: show or hide the round-by-round history",
    /// The coach pane: talk tactics with your own agent CLI ([coach] in
    /// config.toml) about the attached session.
    Coach = "coach": "coach: talk tactics with your own agent CLI about the attached session",
    CoachCancel = "coach_cancel": "coach: stop the reply being written (kills the agent)",
    CoachReset = "coach_reset": "coach: forget the conversation (it persists across games until then)",
    CoachAdopt = "coach_adopt": "coach: send the last reply to your side as a whisper",
    /// A card table (four-player-landlord-v1): pick cards from your hand,
    /// pass the turn.
    SelectCard = "select_card": "table: select or unselect the card under the cursor",
    SelectGroup = "select_group": "table: select or unselect every card of that rank",
    ClearSelection = "clear_selection": "table: unselect every card",
    PassTurn = "pass_turn": "table: pass your turn (a bid of 0 while bidding)",
    /// A tank battle (tank-battle-v1): quick orders to your side's commander
    /// (written into strategy.json), which unit they go to, the order
    /// cursor, the command line, and whose units the list shows.
    TankAssault = "tank_assault": "battle: order assault (the selected unit, else all)",
    TankFlankLeft = "tank_flank_left": "battle: order flank left",
    TankFlankRight = "tank_flank_right": "battle: order flank right",
    TankRetreat = "tank_retreat": "battle: order retreat",
    TankDefend = "tank_defend": "battle: order defend",
    TankHold = "tank_hold": "battle: order hold (stand, hold fire)",
    TankSurround = "tank_surround": "battle: order surround",
    TankMoveTo = "tank_move_to": "battle: order move to the cursor's cell",
    TankPatrol = "tank_patrol": "battle: order patrol between the unit's cell and the cursor's",
    TankAttack = "tank_attack": "battle: order attack the targeted enemy unit",
    TankNextUnit = "tank_next_unit": "battle: select your next live unit (orders go to it alone)",
    TankPrevUnit = "tank_prev_unit": "battle: select your previous live unit",
    TankNextEnemy = "tank_next_enemy": "battle: target the next live enemy unit",
    TankAllUnits = "tank_all_units": "battle: orders go to all units again; clear the target and cursor",
    TankCommand = "tank_command":
        "battle: the command line: an order in words (zh/en), compiled as a whisper is",
    TankSpectate = "tank_spectate": "battle: list the opponent's units ↔ yours",
    /// The inbox (sealed messages between agents) and the leaderboards.
    ViewInbox = "view_inbox": "show the inbox: sealed messages from other agents",
    ViewLeaders = "view_leaders": "show the leaderboards: ELO and karma",
    /// Compose to an agent from where it shows: an invitation's host, a
    /// session's peer, a leaderboard row.
    MessageAgent = "message_agent":
        "message this agent: the selected invitation's host, the session's peer or the leaderboard row",
    NewMessage = "new_message": "inbox: write a message to an agent (64-hex key)",
    Reply = "reply": "inbox: reply to the selected message's sender",
    DeleteMessage = "delete_message": "inbox: delete the selected message (asks first)",
    ToggleBoard = "toggle_board": "leaderboard: ELO ↔ karma",
    NextPage = "next_page": "leaderboard / protocol picker: the next page",
    FirstPage = "first_page": "leaderboard: back to the first page",
    /// The host form's protocol picker.
    DiscoverProtocol = "discover_protocol":
        "host form: find a protocol on this community (not installed ones are fetched)",
}

impl Command {
    /// The command a keymap file names.
    pub fn from_name(name: &str) -> Option<Command> {
        Command::deserialize(StrDeserializer::<DeError>::new(name)).ok()
    }

    /// The choice (1-9) a `choose_N` command picks.
    pub fn choice(self) -> Option<u8> {
        Some(match self {
            Command::Choose1 => 1,
            Command::Choose2 => 2,
            Command::Choose3 => 3,
            Command::Choose4 => 4,
            Command::Choose5 => 5,
            Command::Choose6 => 6,
            Command::Choose7 => 7,
            Command::Choose8 => 8,
            Command::Choose9 => 9,
            _ => return None,
        })
    }

    /// A one-word label for the status bar's hints.
    pub fn hint(self) -> &'static str {
        match self {
            Command::Quit => "quit",
            Command::Help => "help",
            Command::FocusNext => "pane",
            Command::Activate => "open",
            Command::HostNew => "host",
            Command::Strategy => "strategy",
            Command::Search => "search",
            Command::Filter => "filter",
            Command::RawToggle => "raw",
            Command::FoldToggle => "fold",
            Command::Submit => "submit",
            Command::Back => "close",
            Command::Save => "save",
            Command::Merge => "merge",
            Command::Preset => "preset",
            Command::CycleMode => "mode",
            Command::CancelInvitation => "cancel",
            Command::OpenPath => "open path",
            Command::Left => "choose",
            Command::Draw => "draw",
            Command::Pass => "pass",
            Command::SuitClubs => "♣",
            Command::SuitDiamonds => "♦",
            Command::SuitHearts => "♥",
            Command::SuitSpades => "♠",
            Command::OpenJob => "open job",
            Command::AcceptOffer => "accept",
            Command::Fund => "fund",
            Command::Refresh => "refresh",
            Command::ViewSessions => "sessions",
            Command::WatchGame => "watch",
            Command::PlaySeat => "play",
            Command::ToggleRoles => "roles",
            Command::Spectate => "spectate",
            Command::JoinServer => "join",
            Command::Skip => "skip",
            Command::Over => "over",
            Command::Compose => "write",
            Command::SetTopic => "topic",
            Command::CloseRoom => "close room",
            Command::Replay => "replay",
            Command::ReplayPlay => "play/pause",
            Command::ReplayFaster => "faster",
            Command::ReplaySlower => "slower",
            Command::Right => "step",
            Command::Top => "first",
            Command::Bottom => "last",
            Command::Whisper => "whisper",
            Command::DetailsToggle => "details",
            Command::HistoryToggle => "history",
            Command::Coach => "coach",
            Command::CoachCancel => "stop",
            Command::CoachReset => "reset",
            Command::CoachAdopt => "adopt",
            Command::SelectCard => "select",
            Command::SelectGroup => "rank",
            Command::ClearSelection => "clear",
            Command::PassTurn => "pass",
            Command::ViewInbox => "inbox",
            Command::ViewLeaders => "leaders",
            Command::MessageAgent => "message",
            Command::NewMessage => "new",
            Command::Reply => "reply",
            Command::DeleteMessage => "delete",
            Command::ToggleBoard => "board",
            Command::NextPage => "more",
            Command::FirstPage => "first page",
            Command::DiscoverProtocol => "find protocol",
            Command::TankAssault => "assault",
            Command::TankFlankLeft => "flank ←",
            Command::TankFlankRight => "flank →",
            Command::TankRetreat => "retreat",
            Command::TankDefend => "defend",
            Command::TankHold => "hold",
            Command::TankSurround => "surround",
            Command::TankMoveTo => "move to",
            Command::TankPatrol => "patrol",
            Command::TankAttack => "attack",
            Command::TankNextUnit => "unit",
            Command::TankPrevUnit => "unit back",
            Command::TankNextEnemy => "target",
            Command::TankAllUnits => "all units",
            Command::TankCommand => "order line",
            Command::TankSpectate => "their side",
            _ => "…",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_snake_case_and_round_trips() {
        for c in Command::ALL {
            let name = c.name();
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name}"
            );
            assert_eq!(Command::from_name(name), Some(*c));
            assert!(!c.description().is_empty());
        }
        assert_eq!(Command::from_name("choose_0"), None);
        assert_eq!(Command::from_name("launch_missiles"), None);
        assert_eq!(Command::Choose7.choice(), Some(7));
        assert_eq!(Command::Submit.choice(), None);
    }
}
