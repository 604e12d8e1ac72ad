//! crazy-eights-v1: a shedding game on a 52-card deck. No starting
//! discard, so the first play is free; afterwards a card plays when it is
//! an 8 (wild, naming the next suit) or matches the current suit or the
//! top rank. A side with no playable card draws one (which ends its turn)
//! or, with the stock empty, passes. First to an empty hand wins; after two
//! passes in a row the smaller hand wins, equal hands have no winner.

use super::{CardsError, SUITS};
use crate::engine::mental_poker::game::{CardAction, CardGame, Face, TableView};
use crate::engine::{ControlMode, Ctx, Dir, HookError, Hooks, HostMetadata, Role};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;
use std::collections::BTreeMap;

/// Rank names by rank index.
pub const RANKS: [&str; 13] = [
    "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A",
];

/// The rank index of the wild 8.
const EIGHT: u8 = 6;

/// `hand_size` bounds of the spec's options, and the default.
pub const HAND_SIZE_MIN: i64 = 3;
pub const HAND_SIZE_MAX: i64 = 7;
pub const HAND_SIZE_DEFAULT: i64 = 5;

/// One side's Crazy Eights state: the hand size and what the next card
/// must follow. Both sides update the follow state on every play (their own
/// when chosen or applied, the peer's when validated), so it stays equal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrazyEights {
    hand_size: usize,
    /// Rank of the last card played.
    top_rank: Option<u8>,
    /// Suit to follow: the last card's, or the suit an 8 called.
    current_suit: Option<u8>,
}

impl Default for CrazyEights {
    fn default() -> Self {
        CrazyEights {
            hand_size: HAND_SIZE_DEFAULT as usize,
            top_rank: None,
            current_suit: None,
        }
    }
}

/// Whether `face` may be played now.
fn can_play(face: Face, top_rank: Option<u8>, current_suit: Option<u8>, first: bool) -> bool {
    first || face.0 == EIGHT || current_suit == Some(face.1) || top_rank == Some(face.0)
}

/// The suit an 8 calls: the suit held most often among the hand's other
/// cards, the first seen (in arrival order) on a tie, Clubs when the hand
/// holds only 8s.
fn pick_call_suit(hand: &BTreeMap<String, Face>) -> u8 {
    let mut counts: Vec<(u8, usize)> = Vec::new();
    for (_, (rank, suit)) in super::in_arrival_order(hand) {
        if rank == EIGHT {
            continue;
        }
        match counts.iter_mut().find(|(s, _)| *s == suit) {
            Some((_, n)) => *n += 1,
            None => counts.push((suit, 1)),
        }
    }
    let mut best: Option<(u8, usize)> = None;
    for (suit, n) in counts {
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((suit, n));
        }
    }
    best.map_or(0, |(suit, _)| suit)
}

impl CrazyEights {
    /// A game dealing `hand_size` cards to each side (3..=7).
    pub fn new(hand_size: i64) -> Result<Self, CardsError> {
        if !(HAND_SIZE_MIN..=HAND_SIZE_MAX).contains(&hand_size) {
            return Err(CardsError::HandSize {
                got: hand_size,
                min: HAND_SIZE_MIN,
                max: HAND_SIZE_MAX,
            });
        }
        Ok(CrazyEights {
            hand_size: hand_size as usize,
            ..CrazyEights::default()
        })
    }

    /// The game the invitation's options ask for (`hand_size`, default 5,
    /// read as the reference's `int(options.get("hand_size") or 5)`).
    pub fn from_options(options: &Map) -> Result<Self, CardsError> {
        Self::new(super::super::opt_int(
            options,
            "hand_size",
            HAND_SIZE_DEFAULT,
        ))
    }

    pub fn hand_size(&self) -> usize {
        self.hand_size
    }

    /// The hand's playable cards in id-B string order.
    fn playable<'a>(&self, view: &TableView<'a>) -> Vec<(&'a str, Face)> {
        let first = view.nothing_played();
        view.hand
            .iter()
            .filter(|(_, f)| can_play(**f, self.top_rank, self.current_suit, first))
            .map(|(id, f)| (id.as_str(), *f))
            .collect()
    }

    /// The one non-play action when nothing plays.
    fn fallback(view: &TableView) -> CardAction {
        if view.stock_empty() {
            CardAction::Pass
        } else {
            CardAction::Draw
        }
    }

    /// A play is final: the discard top and the suit to follow move on.
    fn record(&mut self, face: Face, call_suit: Option<u8>) {
        self.top_rank = Some(face.0);
        self.current_suit = if face.0 == EIGHT {
            call_suit
        } else {
            Some(face.1)
        };
    }
}

impl CardGame for CrazyEights {
    fn deck_universe(&self) -> Vec<Face> {
        (0..RANKS.len() as u8)
            .flat_map(|r| (0..SUITS.len() as u8).map(move |s| (r, s)))
            .collect()
    }

    fn initial_deal(&self) -> (usize, usize) {
        (self.hand_size, self.hand_size)
    }

    fn legal_actions(&self, view: &TableView) -> Vec<Map> {
        let playable = self.playable(view);
        if playable.is_empty() {
            return vec![super::kind_entry(Self::fallback(view).kind())];
        }
        playable
            .into_iter()
            .map(|(id, face)| {
                let mut m = super::play_entry(id, face);
                m.insert("call_suit_required", Value::from(face.0 == EIGHT));
                m
            })
            .collect()
    }

    fn snapshot_extras(&self) -> Map {
        let opt = |v: Option<u8>| v.map_or(Value::Null, |x| Value::from(i64::from(x)));
        obj! {
            "game" => "crazy_eights",
            "top_rank" => opt(self.top_rank),
            "current_suit" => opt(self.current_suit),
            "ranks" => super::names(&RANKS),
            "suits" => super::names(&SUITS),
        }
    }

    /// The lowest id-B (string order) playable card that is not an 8; else
    /// the lowest playable 8, calling [`pick_call_suit`]; else draw, or
    /// pass on an empty stock.
    fn choose_action(&mut self, view: &TableView) -> CardAction {
        let playable = self.playable(view);
        let pick = playable
            .iter()
            .find(|(_, f)| f.0 != EIGHT)
            .map(|(id, f)| (*id, *f, None))
            .or_else(|| {
                playable
                    .first()
                    .map(|(id, f)| (*id, *f, Some(pick_call_suit(view.hand))))
            });
        match pick {
            Some((id, face, call_suit)) => {
                self.record(face, call_suit);
                CardAction::Play {
                    id_b: id.to_owned(),
                    call_suit,
                }
            }
            None => Self::fallback(view),
        }
    }

    fn check_local(&self, view: &TableView, action: &CardAction) -> Result<(), String> {
        let playable = self.playable(view);
        let CardAction::Play { id_b, call_suit } = action else {
            return if playable.is_empty() && Self::fallback(view) == *action {
                Ok(())
            } else {
                Err(format!(
                    "{} is not legal in the current state",
                    action.kind()
                ))
            };
        };
        let Some((_, face)) = playable.iter().find(|(id, _)| *id == id_b.as_str()) else {
            return Err("selected card is not playable".into());
        };
        match (face.0 == EIGHT, call_suit) {
            (true, Some(s)) if usize::from(*s) < SUITS.len() => Ok(()),
            (true, _) => Err("playing an 8 requires call_suit between 0 and 3".into()),
            (false, Some(_)) => Err("call_suit is only allowed when playing an 8".into()),
            (false, None) => Ok(()),
        }
    }

    fn apply_local(&mut self, view: &TableView, action: &CardAction) {
        if let CardAction::Play { id_b, call_suit } = action
            && let Some(face) = view.hand.get(id_b)
        {
            self.record(*face, *call_suit);
        }
    }

    /// Call before the ledger records the play: "nothing played yet" must
    /// still see the table as it was.
    fn validate_peer_play(
        &mut self,
        view: &TableView,
        _who: Role,
        face: Face,
        call_suit: Option<u8>,
    ) -> Result<(), &'static str> {
        if !can_play(
            face,
            self.top_rank,
            self.current_suit,
            view.nothing_played(),
        ) {
            return Err("illegal_play");
        }
        match (face.0 == EIGHT, call_suit) {
            (true, None) => return Err("missing_call_suit"),
            (false, Some(_)) => return Err("unexpected_call_suit"),
            _ => {}
        }
        self.record(face, call_suit);
        Ok(())
    }

    fn check_winner(&mut self, view: &TableView) -> Option<&'static str> {
        let host_n = view.ledger.hand_of(Role::Host).len();
        let guest_n = view.ledger.hand_of(Role::Guest).len();
        if host_n == 0 {
            return Some("host");
        }
        if guest_n == 0 {
            return Some("guest");
        }
        if !view.stalled {
            return None;
        }
        match host_n.cmp(&guest_n) {
            std::cmp::Ordering::Less => Some("host"),
            std::cmp::Ordering::Greater => Some("guest"),
            std::cmp::Ordering::Equal => None,
        }
    }

    fn card_name(&self, face: Face) -> String {
        super::face_name(&RANKS, face)
    }

    fn suit_name(&self, suit: u8) -> String {
        super::suit_letter(suit)
    }

    fn uses_call_suit(&self) -> bool {
        true
    }
}

#[async_trait]
impl Hooks for CrazyEights {
    fn supported_control_modes(&self) -> &'static [ControlMode] {
        &ControlMode::ALL
    }

    fn decision_schema(&self) -> Option<Map> {
        Some(super::decision_schema(&["play", "draw", "pass"], true))
    }

    fn host_metadata(&self) -> HostMetadata {
        HostMetadata {
            display_name: "Crazy Eights".into(),
            tags: "game,crazy-eights,cards".into(),
            invite_type: "supply".into(),
            default_options: obj! { "hand_size" => self.hand_size },
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        *self = CrazyEights::from_options(&ctx.options)
            .map_err(|e| HookError::Invalid(e.to_string()))?;
        Ok(())
    }

    fn card_game(&mut self) -> Option<&mut dyn CardGame> {
        Some(self)
    }

    fn display(&self, msg: &Map, _dir: Dir) -> Option<String> {
        super::display(msg, &RANKS, true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::{is_listed, play_match};
    use super::*;
    use crate::engine::mental_poker::ledger::Ledger;

    /// `"8H"` → (6, 2).
    fn card(name: &str) -> Face {
        let (rank, suit) = name.split_at(name.len() - 1);
        let r = RANKS.iter().position(|x| *x == rank).expect("rank");
        let s = SUITS.iter().position(|x| *x == suit).expect("suit");
        (r as u8, s as u8)
    }

    fn hand(cards: &[(&str, &str)]) -> BTreeMap<String, Face> {
        cards
            .iter()
            .map(|(id, c)| ((*id).to_owned(), card(c)))
            .collect()
    }

    /// A ledger where `played` cards are on the table and `stock` cards
    /// remain (ids from 100 up, out of everyone's way).
    fn table(played: usize, stock: usize) -> Ledger {
        let mut l = Ledger::new(100 + played + stock);
        for i in 0..100 {
            l.deal_to(Role::Guest, &i.to_string());
        }
        for i in 100..100 + played {
            let id = i.to_string();
            l.deal_to(Role::Host, &id);
            l.play(Role::Host, &id);
        }
        l
    }

    fn view<'a>(h: &'a BTreeMap<String, Face>, l: &'a Ledger) -> TableView<'a> {
        TableView {
            role: Role::Host,
            hand: h,
            ledger: l,
            stalled: false,
        }
    }

    fn follow(top: &str, suit: &str) -> CrazyEights {
        let mut g = CrazyEights::default();
        g.record(card(top), Some(card(&format!("2{suit}")).1));
        g
    }

    fn play(id: &str, call_suit: Option<u8>) -> CardAction {
        CardAction::Play {
            id_b: id.into(),
            call_suit,
        }
    }

    #[test]
    fn deck_and_options() {
        let g = CrazyEights::default();
        let deck = g.deck_universe();
        assert_eq!(deck.len(), 52);
        assert_eq!(deck[0], (0, 0));
        assert_eq!(deck[27], (6, 3), "id-A 27 is the 8 of spades");
        assert_eq!(g.initial_deal(), (5, 5));
        assert_eq!(
            CrazyEights::from_options(&obj! { "hand_size" => 7 })
                .unwrap()
                .initial_deal(),
            (7, 7)
        );
        assert_eq!(
            CrazyEights::from_options(&obj! { "hand_size" => 0 })
                .unwrap()
                .hand_size(),
            5,
            "a falsy option takes the default, as `or 5` does"
        );
        assert_eq!(
            CrazyEights::from_options(&obj! { "hand_size" => 8 }),
            Err(CardsError::HandSize {
                got: 8,
                min: 3,
                max: 7
            })
        );
        assert!(CrazyEights::new(2).is_err());
        assert_eq!(g.card_name(card("10D")), "10D");
    }

    #[test]
    fn first_play_is_free_then_suit_rank_or_an_eight() {
        let h = hand(&[("1", "KD"), ("2", "5H"), ("3", "8C"), ("4", "5S")]);
        let fresh = table(0, 10);
        let g = follow("5C", "C");
        // Nothing played yet: everything plays, whatever the follow state.
        assert_eq!(g.legal_actions(&view(&h, &fresh)).len(), 4);
        let on_table = table(1, 10);
        let legal = g.legal_actions(&view(&h, &on_table));
        let ids: Vec<_> = legal.iter().filter_map(|m| m.get_str("id_b")).collect();
        assert_eq!(ids, ["2", "3", "4"], "5 matches the rank, 8 is wild");
        assert_eq!(
            legal[1],
            obj! { "kind" => "play", "id_b" => "3", "rank" => 6, "suit" => 0, "call_suit_required" => true }
        );
        assert_eq!(
            legal[0].get("call_suit_required"),
            Some(&Value::Bool(false))
        );
        // An 8 that called hearts: hearts follow, the 8's rank too.
        let mut g = CrazyEights::default();
        g.record(card("8S"), Some(2));
        let ids: Vec<_> = g
            .legal_actions(&view(&h, &on_table))
            .iter()
            .filter_map(|m| m.get_str("id_b").map(str::to_owned))
            .collect();
        assert_eq!(ids, ["2", "3"]);
    }

    #[test]
    fn nothing_playable_draws_then_passes() {
        let h = hand(&[("1", "KD"), ("2", "5H")]);
        let g = follow("3C", "C");
        let with_stock = table(1, 3);
        let empty = table(1, 0);
        assert_eq!(
            g.legal_actions(&view(&h, &with_stock)),
            [obj! { "kind" => "draw" }]
        );
        assert_eq!(
            g.legal_actions(&view(&h, &empty)),
            [obj! { "kind" => "pass" }]
        );
        let mut g2 = g.clone();
        assert_eq!(g2.choose_action(&view(&h, &with_stock)), CardAction::Draw);
        assert_eq!(g2.choose_action(&view(&h, &empty)), CardAction::Pass);
        assert_eq!(g2, g, "drawing or passing leaves the follow state");
        assert_eq!(
            g.check_local(&view(&h, &with_stock), &CardAction::Draw),
            Ok(())
        );
        assert_eq!(
            g.check_local(&view(&h, &with_stock), &CardAction::Pass),
            Err("pass is not legal in the current state".into())
        );
        assert_eq!(
            g.check_local(&view(&h, &empty), &CardAction::Draw),
            Err("draw is not legal in the current state".into())
        );
        // A playable card forbids drawing.
        let h = hand(&[("1", "KC")]);
        assert_eq!(
            g.check_local(&view(&h, &with_stock), &CardAction::Draw),
            Err("draw is not legal in the current state".into())
        );
    }

    #[test]
    fn check_local_call_suit_rules() {
        let h = hand(&[("1", "KD"), ("2", "5C"), ("3", "8H")]);
        let l = table(1, 5);
        let g = follow("3C", "C");
        let v = view(&h, &l);
        assert_eq!(g.check_local(&v, &play("2", None)), Ok(()));
        assert_eq!(
            g.check_local(&v, &play("1", None)),
            Err("selected card is not playable".into())
        );
        assert_eq!(
            g.check_local(&v, &play("9", None)),
            Err("selected card is not playable".into())
        );
        assert_eq!(
            g.check_local(&v, &play("2", Some(1))),
            Err("call_suit is only allowed when playing an 8".into())
        );
        for bad in [None, Some(4)] {
            assert_eq!(
                g.check_local(&v, &play("3", bad)),
                Err("playing an 8 requires call_suit between 0 and 3".into())
            );
        }
        assert_eq!(g.check_local(&v, &play("3", Some(3))), Ok(()));
        let mut g2 = g.clone();
        g2.apply_local(&v, &play("3", Some(3)));
        assert_eq!((g2.top_rank, g2.current_suit), (Some(EIGHT), Some(3)));
        g2.apply_local(&v, &play("2", None));
        assert_eq!((g2.top_rank, g2.current_suit), (Some(3), Some(0)));
        g2.apply_local(&v, &CardAction::Draw);
        assert_eq!((g2.top_rank, g2.current_suit), (Some(3), Some(0)));
    }

    #[test]
    fn picker_prefers_the_lowest_string_id_that_is_not_an_eight() {
        let h = hand(&[("2", "5H"), ("10", "5S"), ("7", "8C")]);
        let l = table(0, 5);
        let mut g = CrazyEights::default();
        let a = g.choose_action(&view(&h, &l));
        assert_eq!(a, play("10", None), "\"10\" sorts before \"2\"");
        assert_eq!((g.top_rank, g.current_suit), (Some(3), Some(3)));
    }

    #[test]
    fn picker_falls_back_to_an_eight_calling_its_longest_suit() {
        let h = hand(&[
            ("3", "8C"),
            ("12", "2H"),
            ("5", "4H"),
            ("20", "9S"),
            ("1", "8S"),
        ]);
        let l = table(2, 5);
        let mut g = follow("KD", "D");
        let a = g.choose_action(&view(&h, &l));
        assert_eq!(a, play("1", Some(2)), "8S, calling hearts (two of them)");
        assert_eq!((g.top_rank, g.current_suit), (Some(EIGHT), Some(2)));
    }

    #[test]
    fn call_suit_ties_go_to_the_suit_that_arrived_first() {
        // Hearts arrived first (id 9 before id 10), though "10" < "9" as
        // strings.
        let h = hand(&[("9", "2H"), ("10", "3S"), ("4", "8D")]);
        assert_eq!(pick_call_suit(&h), 2);
        let h = hand(&[("9", "2H"), ("10", "3S"), ("11", "4S"), ("4", "8D")]);
        assert_eq!(pick_call_suit(&h), 3, "more spades");
        assert_eq!(pick_call_suit(&hand(&[("4", "8D"), ("5", "8H")])), 0);
        let l = table(1, 0);
        let mut g = follow("KC", "C");
        let h = hand(&[("9", "2H"), ("10", "3S"), ("4", "8D")]);
        assert_eq!(g.choose_action(&view(&h, &l)), play("4", Some(2)));
    }

    #[test]
    fn peer_plays_are_checked_and_recorded() {
        let fresh = table(0, 5);
        let l = table(1, 5);
        let h = BTreeMap::new();
        let mut g = CrazyEights::default();
        assert_eq!(
            g.validate_peer_play(&view(&h, &fresh), Role::Guest, card("KD"), None),
            Ok(())
        );
        assert_eq!((g.top_rank, g.current_suit), (Some(11), Some(1)));
        let before = g.clone();
        assert_eq!(
            g.validate_peer_play(&view(&h, &l), Role::Guest, card("5C"), None),
            Err("illegal_play")
        );
        assert_eq!(
            g.validate_peer_play(&view(&h, &l), Role::Guest, card("8C"), None),
            Err("missing_call_suit")
        );
        assert_eq!(
            g.validate_peer_play(&view(&h, &l), Role::Guest, card("KS"), Some(1)),
            Err("unexpected_call_suit")
        );
        assert_eq!(g, before, "a rejected play changes nothing");
        assert_eq!(
            g.validate_peer_play(&view(&h, &l), Role::Guest, card("8C"), Some(3)),
            Ok(())
        );
        assert_eq!((g.top_rank, g.current_suit), (Some(EIGHT), Some(3)));
        // The first play is free even for an 8, but it still needs a suit.
        let mut g = CrazyEights::default();
        assert_eq!(
            g.validate_peer_play(&view(&h, &fresh), Role::Host, card("8D"), None),
            Err("missing_call_suit")
        );
    }

    #[test]
    fn winners() {
        let mut g = CrazyEights::default();
        let h = BTreeMap::new();
        let mut l = Ledger::new(10);
        for i in 0..3 {
            l.deal_to(Role::Host, &i.to_string());
        }
        for i in 3..5 {
            l.deal_to(Role::Guest, &i.to_string());
        }
        let mut v = view(&h, &l);
        assert_eq!(g.check_winner(&v), None, "nobody is out, no stall");
        v.stalled = true;
        assert_eq!(g.check_winner(&v), Some("guest"), "fewer cards");
        let mut l2 = l.clone();
        l2.play(Role::Host, "0");
        let v = TableView { ledger: &l2, ..v };
        assert_eq!(g.check_winner(&v), None, "equal hands: no winner");
        let mut l3 = l2.clone();
        l3.play(Role::Host, "1");
        l3.play(Role::Host, "2");
        let v = TableView {
            ledger: &l3,
            stalled: false,
            ..v
        };
        assert_eq!(g.check_winner(&v), Some("host"), "empty hand");
        let mut l4 = l.clone();
        l4.play(Role::Guest, "3");
        l4.play(Role::Guest, "4");
        let v = TableView { ledger: &l4, ..v };
        assert_eq!(g.check_winner(&v), Some("guest"));
    }

    #[test]
    fn hooks_surface() {
        let g = CrazyEights::new(3).unwrap();
        let schema = g.decision_schema().unwrap();
        assert_eq!(schema.get_str("match_key"), Some("action_seq"));
        assert_eq!(schema.get_str("card_field"), Some("id_b"));
        assert_eq!(
            schema.get("choices"),
            Some(&super::super::names(&["play", "draw", "pass"]))
        );
        assert_eq!(
            schema.get("optional_fields"),
            Some(&super::super::names(&["call_suit"]))
        );
        let meta = g.host_metadata();
        assert_eq!(meta.display_name, "Crazy Eights");
        assert_eq!(meta.default_options, obj! { "hand_size" => 3 });
        assert!(g.uses_call_suit());
        let shown = |m: Map| g.display(&m, Dir::Received);
        assert_eq!(
            shown(
                obj! { "action" => "mp_play", "id_b" => "3", "rank" => 6, "suit" => 2, "call_suit" => 3 }
            ),
            Some("play 8H (call S)".into())
        );
        assert_eq!(
            shown(
                obj! { "action" => "mp_play", "rank" => 8, "suit" => 0, "call_suit" => Value::Null }
            ),
            Some("play 10C".into())
        );
        assert_eq!(shown(obj! { "action" => "mp_pass" }), Some("PASS".into()));
        assert_eq!(
            shown(obj! { "action" => "error", "reason" => "rule_rejected" }),
            Some("illegal: rule_rejected".into())
        );
        assert_eq!(
            shown(obj! { "action" => "error" }),
            Some("illegal: None".into())
        );
        assert_eq!(
            shown(obj! { "action" => "mp_play", "rank" => 13, "suit" => 0 }),
            None
        );
        assert_eq!(shown(obj! { "action" => "mp_ot_request" }), None);
        let snap = g.snapshot_extras();
        assert_eq!(snap.get("top_rank"), Some(&Value::Null));
        assert_eq!(snap.get_str("game"), Some("crazy_eights"));
        assert_eq!(snap.get("suits"), Some(&super::super::names(&SUITS)));
    }

    #[test]
    fn whole_matches_end_with_agreed_legal_results() {
        let (mut seen, mut stalls) = (BTreeMap::new(), 0);
        for (seed, explicit) in (0..300u64).flat_map(|s| [(s, false), (s, true)]) {
            let size = 3 + (seed % 5) as i64;
            let mut host = CrazyEights::new(size).unwrap();
            let mut guest = CrazyEights::new(size).unwrap();
            let o = play_match(&mut host, &mut guest, seed, explicit);
            let [hn, gn] = o.hands;
            assert_eq!(o.ledger.hand_of(Role::Host).len(), hn);
            assert_eq!(o.ledger.hand_of(Role::Guest).len(), gn);
            let cards = hn + gn + o.ledger.stock_len() + o.ledger.played_len();
            assert_eq!(cards, 52, "no card lost or doubled");
            match o.winner {
                Some("host") => assert!(hn == 0 || (o.stalled && hn < gn)),
                Some("guest") => assert!(gn == 0 || (o.stalled && gn < hn)),
                None => assert!(o.stalled && hn == gn),
                Some(other) => panic!("unexpected outcome {other}"),
            }
            if o.stalled {
                assert_eq!(o.ledger.stock_len(), 0, "a stall needs an empty stock");
                stalls += 1;
            }
            assert!(o.turns > 0);
            *seen.entry(o.winner).or_insert(0) += 1;
        }
        assert!(seen.contains_key(&Some("host")) && seen.contains_key(&Some("guest")));
        assert!(stalls > 0, "some matches stall (seed 154 does)");
    }

    #[test]
    fn listed_actions_match_check_local() {
        // Every action legal_actions lists passes check_local, and the
        // driver's listing rule agrees.
        let h = hand(&[("1", "KD"), ("2", "5C"), ("3", "8H")]);
        let l = table(1, 5);
        let g = follow("3C", "C");
        let v = view(&h, &l);
        for m in g.legal_actions(&v) {
            let a = play(
                m.get_str("id_b").unwrap(),
                (m.get("call_suit_required") == Some(&Value::Bool(true))).then_some(0),
            );
            assert_eq!(g.check_local(&v, &a), Ok(()));
            assert!(is_listed(&g.legal_actions(&v), &a));
        }
    }
}
