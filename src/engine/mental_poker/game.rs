//! What a hidden-hand card game supplies to the `mental_poker` flow: its
//! deck, its deal, its rules and its automatic player. The flow owns the
//! cryptography, the ledger and every frame; a game only sees card faces it
//! is entitled to (its own hand, and the cards played in the open).

use super::ledger::Ledger;
use crate::engine::Role;
use crate::json::Map;
use std::collections::BTreeMap;

/// A card face: (rank index, suit index) into the game's own lists.
pub type Face = (u8, u8);

/// One action of the side whose turn it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardAction {
    /// Play the card `id_b` from the hand; `call_suit` names the next suit
    /// where the game asks for one (Crazy Eights' 8).
    Play {
        id_b: String,
        call_suit: Option<u8>,
    },
    /// Take the next card of the stock (one oblivious transfer).
    Draw,
    Pass,
}

impl CardAction {
    pub fn kind(&self) -> &'static str {
        match self {
            CardAction::Play { .. } => "play",
            CardAction::Draw => "draw",
            CardAction::Pass => "pass",
        }
    }

    /// The action as a decision record would carry it:
    /// `{"kind":"play","id_b":"5","call_suit":2}`.
    pub fn to_map(&self) -> Map {
        let mut m = Map::new();
        m.insert("kind", self.kind().into());
        if let CardAction::Play { id_b, call_suit } = self {
            m.insert("id_b", id_b.as_str().into());
            if let Some(s) = call_suit {
                m.insert("call_suit", i64::from(*s).into());
            }
        }
        m
    }
}

/// What a game may look at: this side's role and hand (faces it learned by
/// oblivious transfer), and the public ledger (who holds which id-B, the
/// stock, the played cards).
pub struct TableView<'a> {
    pub role: Role,
    /// This side's hand, id-B → face, in id-B string order.
    pub hand: &'a BTreeMap<String, Face>,
    pub ledger: &'a Ledger,
    /// Two passes in a row: `check_winner` is asked one last time.
    pub stalled: bool,
}

impl TableView<'_> {
    pub fn stock_empty(&self) -> bool {
        self.ledger.stock_len() == 0
    }

    /// Nothing has been played yet this match.
    pub fn nothing_played(&self) -> bool {
        self.ledger.played_len() == 0
    }
}

/// The rules of one hidden-hand card game, as the reference's
/// `proto_mp_*` hooks define them. Both sides run the same rules and must
/// reach the same verdicts: every method is deterministic in its inputs
/// and the game's own state.
pub trait CardGame: Send + Sync {
    /// Every card of the deck; the index is the card's id-A.
    fn deck_universe(&self) -> Vec<Face>;

    /// Cards dealt at the start: (host, guest).
    fn initial_deal(&self) -> (usize, usize);

    /// The legal actions of this side now, as the snapshot shows them
    /// (`{"kind":"play","id_b":…,"rank":…,"suit":…}`, `{"kind":"draw"}`, …).
    fn legal_actions(&self, view: &TableView) -> Vec<Map>;

    /// Game fields for the snapshot (`game`, scores, trump, trick, …).
    fn snapshot_extras(&self) -> Map;

    /// The automatic player's action; records it in the game's state as
    /// the reference's pickers do.
    fn choose_action(&mut self, view: &TableView) -> CardAction;

    /// Checks an explicit (human or hybrid) action the flow already knows
    /// to be well formed (`play` of a card in hand, or `draw`/`pass`);
    /// the error says why it is not legal now.
    fn check_local(&self, view: &TableView, action: &CardAction) -> Result<(), String>;

    /// Records an explicit action that passed [`CardGame::check_local`].
    fn apply_local(&mut self, view: &TableView, action: &CardAction);

    /// The peer's play, after the flow verified the card and its keys: the
    /// game's rule verdict (a reason such as `illegal_play` when it breaks a
    /// rule); a legal play is recorded.
    fn validate_peer_play(
        &mut self,
        view: &TableView,
        who: Role,
        face: Face,
        call_suit: Option<u8>,
    ) -> Result<(), &'static str>;

    /// Asked once per turn on both sides: `host`, `guest`, `draw`, or None
    /// (no winner yet, or none at all after a stall).
    fn check_winner(&mut self, view: &TableView) -> Option<&'static str>;

    /// A card in words for the feed (`8♥`).
    fn card_name(&self, face: Face) -> String;

    /// A suit in words for the feed (`♠`).
    fn suit_name(&self, suit: u8) -> String;

    /// Whether `mp_play` frames carry `call_suit` in this game.
    fn uses_call_suit(&self) -> bool {
        false
    }
}
