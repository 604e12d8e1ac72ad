//! briscola-v1: two-player Briscola on the 40-card Italian deck, as the
//! reference simplifies it. Trump is always the suit of the deck's first
//! card (Clubs); the host always leads and the guest always follows (turn
//! parity makes each trick a host turn then a guest turn). After a trick
//! each side refills to three cards while the stock lasts: the only legal
//! action on such a turn is draw. There is no pass. A trick goes to the
//! higher card of the led suit unless the follower trumps; its card points
//! (120 in the deck) go to the winner. With stock and hands empty, more
//! points win; 60-60 is a draw.
//!
//! The open trick is kept by both sides (the own card when chosen or
//! applied, the peer's when validated) and resolved inside
//! [`CardGame::check_winner`], which the flow calls exactly once per turn
//! on each side.

use super::SUITS;
use crate::engine::mental_poker::game::{CardAction, CardGame, Face, TableView};
use crate::engine::{ControlMode, Ctx, Dir, HookError, Hooks, HostMetadata, Role};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;

/// Rank names by rank index.
pub const RANKS: [&str; 10] = ["A", "2", "3", "4", "5", "6", "7", "J", "Q", "K"];

/// Trick strength by rank index: A > 3 > K > Q > J > 7 > 6 > 5 > 4 > 2.
const STRENGTH: [u8; 10] = [10, 1, 9, 2, 3, 4, 5, 6, 7, 8];

/// Card points by rank index: A 11, 3 10, K 4, Q 3, J 2, others 0.
const POINTS: [u32; 10] = [11, 0, 10, 0, 0, 0, 0, 2, 3, 4];

/// Cards in a full hand; refills stop here.
pub const HAND_SIZE: usize = 3;

/// Points in the whole deck.
pub const TOTAL_POINTS: u32 = 120;

fn strength(rank: u8) -> u8 {
    STRENGTH.get(usize::from(rank)).copied().unwrap_or(0)
}

fn points(rank: u8) -> u32 {
    POINTS.get(usize::from(rank)).copied().unwrap_or(0)
}

/// The trick's winner: the host leads, the guest follows. Same suit: the
/// stronger card; different suits: the follower only by trumping.
fn trick_winner(lead: Face, follow: Face, trump: u8) -> Role {
    if lead.1 == follow.1 {
        if strength(lead.0) > strength(follow.0) {
            Role::Host
        } else {
            Role::Guest
        }
    } else if follow.1 == trump {
        Role::Guest
    } else {
        Role::Host
    }
}

fn deck() -> Vec<Face> {
    (0..RANKS.len() as u8)
        .flat_map(|r| (0..SUITS.len() as u8).map(move |s| (r, s)))
        .collect()
}

/// One side's Briscola state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Briscola {
    /// The trump suit.
    trump: u8,
    /// The open trick: (who, card), lead first; cleared when resolved.
    trick: Vec<(Role, Face)>,
    /// Card points won: host, guest.
    points: [u32; 2],
    completed_tricks: u32,
}

impl Default for Briscola {
    fn default() -> Self {
        Briscola {
            trump: deck().first().map_or(0, |f| f.1),
            trick: Vec::new(),
            points: [0, 0],
            completed_tricks: 0,
        }
    }
}

impl Briscola {
    pub fn points(&self) -> (u32, u32) {
        (self.points[0], self.points[1])
    }

    /// A refill turn: no open trick after at least one trick, a hand short
    /// of three and a stock to draw from.
    fn must_draw(&self, view: &TableView) -> bool {
        self.trick.is_empty()
            && self.completed_tricks > 0
            && view.hand.len() < HAND_SIZE
            && !view.stock_empty()
    }

    /// The leader's card: the lowest by (is trump, points, strength, id-B
    /// string), keeping trumps and points back.
    fn pick_lead<'a>(&self, view: &TableView<'a>) -> Option<(&'a str, Face)> {
        view.hand
            .iter()
            .min_by_key(|&(id, f)| (f.1 == self.trump, points(f.0), strength(f.0), id.as_str()))
            .map(|(id, f)| (id.as_str(), *f))
    }

    /// The follower's card: the cheapest card that wins the trick by
    /// (points, strength, id-B string), else the cheapest card.
    fn pick_follow<'a>(&self, view: &TableView<'a>, lead: Face) -> Option<(&'a str, Face)> {
        let cost = |&(id, f): &(&'a String, &'a Face)| (points(f.0), strength(f.0), id.as_str());
        let winning = view
            .hand
            .iter()
            .filter(|(_, f)| trick_winner(lead, **f, self.trump) == Role::Guest)
            .min_by_key(cost);
        winning
            .or_else(|| view.hand.iter().min_by_key(cost))
            .map(|(id, f)| (id.as_str(), *f))
    }

    fn side(who: Role) -> usize {
        match who {
            Role::Host => 0,
            Role::Guest => 1,
        }
    }
}

impl CardGame for Briscola {
    fn deck_universe(&self) -> Vec<Face> {
        deck()
    }

    fn initial_deal(&self) -> (usize, usize) {
        (HAND_SIZE, HAND_SIZE)
    }

    fn legal_actions(&self, view: &TableView) -> Vec<Map> {
        if self.must_draw(view) {
            return vec![super::kind_entry("draw")];
        }
        view.hand
            .iter()
            .map(|(id, f)| super::play_entry(id, *f))
            .collect()
    }

    fn snapshot_extras(&self) -> Map {
        let trick: Vec<Value> = self
            .trick
            .iter()
            .map(|(who, (rank, suit))| {
                Value::from(obj! {
                    "who" => who.as_str(), "rank" => i64::from(*rank), "suit" => i64::from(*suit),
                })
            })
            .collect();
        obj! {
            "game" => "briscola",
            "briscola" => i64::from(self.trump),
            "points" => obj! { "host" => self.points[0], "guest" => self.points[1] },
            "completed_tricks" => self.completed_tricks,
            "current_trick" => trick,
            "ranks" => super::names(&RANKS),
            "suits" => super::names(&SUITS),
        }
    }

    /// Draw on a refill turn; otherwise lead or follow (see the pickers)
    /// and put the card into the open trick. An empty hand, which the
    /// match never reaches (it ends once both hands and the stock are
    /// empty), passes.
    fn choose_action(&mut self, view: &TableView) -> CardAction {
        if self.must_draw(view) {
            return CardAction::Draw;
        }
        let pick = match self.trick.first() {
            None => self.pick_lead(view),
            Some((_, lead)) => self.pick_follow(view, *lead),
        };
        let Some((id, face)) = pick else {
            return CardAction::Pass;
        };
        self.trick.push((view.role, face));
        CardAction::Play {
            id_b: id.to_owned(),
            call_suit: None,
        }
    }

    fn check_local(&self, view: &TableView, action: &CardAction) -> Result<(), String> {
        match action {
            CardAction::Draw if self.must_draw(view) => Ok(()),
            CardAction::Draw => Err("draw is not legal in the current state".into()),
            CardAction::Pass => Err("Briscola only supports play and refill draw actions".into()),
            CardAction::Play { id_b, .. } => {
                if !self.must_draw(view) && view.hand.contains_key(id_b) {
                    Ok(())
                } else {
                    Err("selected card is not legal in the current state".into())
                }
            }
        }
    }

    fn apply_local(&mut self, view: &TableView, action: &CardAction) {
        if let CardAction::Play { id_b, .. } = action
            && let Some(face) = view.hand.get(id_b)
        {
            self.trick.push((view.role, *face));
        }
    }

    /// Any card in hand is legal (no duty to follow suit): the peer's card
    /// joins the open trick.
    fn validate_peer_play(
        &mut self,
        _view: &TableView,
        who: Role,
        face: Face,
        _call_suit: Option<u8>,
    ) -> Result<(), &'static str> {
        self.trick.push((who, face));
        Ok(())
    }

    /// Resolves a full trick, then ends the match once the stock and both
    /// hands are empty.
    fn check_winner(&mut self, view: &TableView) -> Option<&'static str> {
        if let [(_, lead), (_, follow), ..] = self.trick[..] {
            let winner = trick_winner(lead, follow, self.trump);
            self.points[Self::side(winner)] += points(lead.0) + points(follow.0);
            self.completed_tricks += 1;
            self.trick.clear();
        }
        let ledger = view.ledger;
        if ledger.stock_len() > 0
            || !ledger.hand_of(Role::Host).is_empty()
            || !ledger.hand_of(Role::Guest).is_empty()
        {
            return None;
        }
        let [host, guest] = self.points;
        Some(match host.cmp(&guest) {
            std::cmp::Ordering::Greater => "host",
            std::cmp::Ordering::Less => "guest",
            std::cmp::Ordering::Equal => "draw",
        })
    }

    fn card_name(&self, face: Face) -> String {
        super::face_name(&RANKS, face)
    }

    fn suit_name(&self, suit: u8) -> String {
        super::suit_letter(suit)
    }
}

#[async_trait]
impl Hooks for Briscola {
    fn supported_control_modes(&self) -> &'static [ControlMode] {
        &ControlMode::ALL
    }

    /// The reference's schema: play and draw only (Briscola has no pass).
    fn decision_schema(&self) -> Option<Map> {
        Some(super::decision_schema(&["play", "draw"], false))
    }

    fn host_metadata(&self) -> HostMetadata {
        HostMetadata {
            display_name: "Briscola".into(),
            tags: "game,briscola,cards,trick-taking".into(),
            invite_type: "supply".into(),
            default_options: Map::new(),
        }
    }

    async fn init(&mut self, _ctx: &Ctx) -> Result<(), HookError> {
        *self = Briscola::default();
        Ok(())
    }

    fn card_game(&mut self) -> Option<&mut dyn CardGame> {
        Some(self)
    }

    fn display(&self, msg: &Map, _dir: Dir) -> Option<String> {
        super::display(msg, &RANKS, false)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::play_match;
    use super::*;
    use crate::engine::mental_poker::ledger::Ledger;
    use std::collections::BTreeMap;

    /// `"KH"` → (9, 2).
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

    fn view<'a>(role: Role, h: &'a BTreeMap<String, Face>, l: &'a Ledger) -> TableView<'a> {
        TableView {
            role,
            hand: h,
            ledger: l,
            stalled: false,
        }
    }

    fn play(id: &str) -> CardAction {
        CardAction::Play {
            id_b: id.into(),
            call_suit: None,
        }
    }

    #[test]
    fn deck_trump_and_points() {
        let g = Briscola::default();
        let deck = g.deck_universe();
        assert_eq!(deck.len(), 40);
        assert_eq!(deck[39], card("KS"));
        assert_eq!(g.trump, 0, "Clubs, the suit of the first card");
        assert_eq!(deck.iter().map(|f| points(f.0)).sum::<u32>(), TOTAL_POINTS);
        assert_eq!(g.initial_deal(), (3, 3));
        assert_eq!(g.card_name(card("JD")), "JD");
        let mut by_strength: Vec<&str> = RANKS.to_vec();
        by_strength.sort_by_key(|r| std::cmp::Reverse(strength(card(&format!("{r}C")).0)));
        assert_eq!(
            by_strength,
            ["A", "3", "K", "Q", "J", "7", "6", "5", "4", "2"]
        );
    }

    #[test]
    fn tricks() {
        let t = 0;
        let w = |a: &str, b: &str| trick_winner(card(a), card(b), t);
        assert_eq!(w("KH", "3H"), Role::Guest, "3 beats K in the same suit");
        assert_eq!(w("AH", "3H"), Role::Host);
        assert_eq!(w("7D", "JD"), Role::Guest);
        assert_eq!(
            w("AH", "2C"),
            Role::Guest,
            "any trump beats a non-trump lead"
        );
        assert_eq!(w("2C", "AH"), Role::Host, "a trump lead holds");
        assert_eq!(w("2C", "AC"), Role::Guest, "trump on trump by strength");
        assert_eq!(
            w("2H", "AS"),
            Role::Host,
            "off suit without trump: the leader"
        );
    }

    #[test]
    fn pickers() {
        let l = Ledger::new(0);
        let g = Briscola::default();
        let h = hand(&[("1", "AC"), ("2", "KD"), ("3", "2H")]);
        assert_eq!(
            g.pick_lead(&view(Role::Host, &h, &l)),
            Some(("3", card("2H")))
        );
        // Ties on (trump, points, strength) go to the lower id-B string.
        let h = hand(&[("5", "4H"), ("12", "4D"), ("1", "AH")]);
        assert_eq!(g.pick_lead(&view(Role::Host, &h, &l)).unwrap().0, "12");
        // Only trumps: the cheapest one.
        let h = hand(&[("5", "AC"), ("6", "4C"), ("7", "KC")]);
        assert_eq!(g.pick_lead(&view(Role::Host, &h, &l)).unwrap().0, "6");
        // Follow: the cheapest winner (2C trumps for 0 points; 3H wins for 10).
        let h = hand(&[("1", "3H"), ("2", "2C"), ("3", "AD")]);
        let v = view(Role::Guest, &h, &l);
        assert_eq!(g.pick_follow(&v, card("KH")).unwrap().0, "2");
        // Nothing wins: the cheapest card.
        let h = hand(&[("1", "3H"), ("2", "KD"), ("3", "4S")]);
        let v = view(Role::Guest, &h, &l);
        assert_eq!(g.pick_follow(&v, card("AC")).unwrap().0, "3");
        // Among winners, strength breaks a points tie: 4H over 6H on a 2H.
        let h = hand(&[("1", "6H"), ("2", "4H"), ("3", "AS")]);
        let v = view(Role::Guest, &h, &l);
        assert_eq!(g.pick_follow(&v, card("2H")).unwrap().0, "2");
    }

    #[test]
    fn a_trick_then_the_refill_cycle() {
        let mut l = Ledger::new(40);
        for i in 0..3 {
            l.deal_to(Role::Guest, &i.to_string());
        }
        for i in 3..6 {
            l.deal_to(Role::Host, &i.to_string());
        }
        let hh = hand(&[("3", "KH"), ("4", "AC"), ("5", "5D")]);
        let gh = hand(&[("0", "3H"), ("1", "2S"), ("2", "QC")]);
        let (mut host, mut guest) = (Briscola::default(), Briscola::default());
        // Turn 0: the host leads 5D (no points, not trump).
        let a = host.choose_action(&view(Role::Host, &hh, &l));
        assert_eq!(a, play("5"));
        guest
            .validate_peer_play(&view(Role::Guest, &gh, &l), Role::Host, card("5D"), None)
            .unwrap();
        l.play(Role::Host, "5");
        let hh = hand(&[("3", "KH"), ("4", "AC")]);
        assert_eq!(host.check_winner(&view(Role::Host, &hh, &l)), None);
        assert_eq!(guest.check_winner(&view(Role::Guest, &gh, &l)), None);
        assert_eq!(host.completed_tricks, 0, "half a trick is not resolved");
        // Turn 1: the guest trumps with QC, the cheapest winner.
        let legal = guest.legal_actions(&view(Role::Guest, &gh, &l));
        assert_eq!(legal.len(), 3);
        assert_eq!(
            legal[2],
            obj! { "kind" => "play", "id_b" => "2", "rank" => 8, "suit" => 0 }
        );
        let a = guest.choose_action(&view(Role::Guest, &gh, &l));
        assert_eq!(a, play("2"));
        host.validate_peer_play(&view(Role::Host, &hh, &l), Role::Guest, card("QC"), None)
            .unwrap();
        l.play(Role::Guest, "2");
        let gh = hand(&[("0", "3H"), ("1", "2S")]);
        assert_eq!(host.check_winner(&view(Role::Host, &hh, &l)), None);
        assert_eq!(guest.check_winner(&view(Role::Guest, &gh, &l)), None);
        assert_eq!(host.points(), (0, 3));
        assert_eq!(host, guest);
        // Turn 2: the host must refill.
        let v = view(Role::Host, &hh, &l);
        assert_eq!(host.legal_actions(&v), [obj! { "kind" => "draw" }]);
        assert_eq!(host.check_local(&v, &CardAction::Draw), Ok(()));
        assert_eq!(
            host.check_local(&v, &play("3")),
            Err("selected card is not legal in the current state".into())
        );
        assert_eq!(
            host.check_local(&v, &CardAction::Pass),
            Err("Briscola only supports play and refill draw actions".into())
        );
        assert_eq!(host.choose_action(&v), CardAction::Draw);
        l.deal_to(Role::Host, "6");
        let hh = hand(&[("3", "KH"), ("4", "AC"), ("6", "7S")]);
        host.check_winner(&view(Role::Host, &hh, &l));
        guest.check_winner(&view(Role::Guest, &gh, &l));
        // Turn 3: the guest refills; then the host, full again, leads.
        let v = view(Role::Guest, &gh, &l);
        assert_eq!(guest.legal_actions(&v), [obj! { "kind" => "draw" }]);
        l.deal_to(Role::Guest, "7");
        let v = view(Role::Host, &hh, &l);
        assert_eq!(host.legal_actions(&v).len(), 3);
        assert_eq!(
            host.check_local(&v, &CardAction::Draw),
            Err("draw is not legal in the current state".into())
        );
        assert_eq!(host.check_local(&v, &play("6")), Ok(()));
        host.apply_local(&v, &play("6"));
        assert_eq!(host.trick, [(Role::Host, card("7S"))]);
        let snap = host.snapshot_extras();
        assert_eq!(
            snap.get("current_trick"),
            Some(&Value::from(vec![Value::from(
                obj! { "who" => "host", "rank" => 6, "suit" => 3 }
            )]))
        );
        assert_eq!(
            snap.get("points"),
            Some(&Value::from(obj! { "host" => 0, "guest" => 3 }))
        );
        assert_eq!(snap.get("completed_tricks"), Some(&Value::from(1)));
    }

    #[test]
    fn final_scores() {
        let empty = Ledger::new(0);
        let h = BTreeMap::new();
        let v = view(Role::Host, &h, &empty);
        for (pts, want) in [([61, 59], "host"), ([59, 61], "guest"), ([60, 60], "draw")] {
            let mut g = Briscola {
                points: pts,
                ..Briscola::default()
            };
            assert_eq!(g.check_winner(&v), Some(want));
        }
        // The last trick is scored before the verdict.
        let mut g = Briscola {
            points: [49, 60],
            trick: vec![(Role::Host, card("AH")), (Role::Guest, card("2H"))],
            completed_tricks: 19,
            ..Briscola::default()
        };
        assert_eq!(g.check_winner(&v), Some("draw"));
        assert_eq!(g.completed_tricks, 20);
        // Cards still out: no verdict.
        let mut l = Ledger::new(2);
        l.deal_to(Role::Host, "0");
        let mut g = Briscola::default();
        assert_eq!(g.check_winner(&view(Role::Host, &h, &l)), None);
    }

    #[test]
    fn hooks_surface() {
        let g = Briscola::default();
        let schema = g.decision_schema().unwrap();
        assert_eq!(
            schema.get("choices"),
            Some(&super::super::names(&["play", "draw"]))
        );
        assert!(schema.get("optional_fields").is_none());
        let meta = g.host_metadata();
        assert_eq!(meta.display_name, "Briscola");
        assert_eq!(meta.tags, "game,briscola,cards,trick-taking");
        assert!(meta.default_options.is_empty());
        assert!(!g.uses_call_suit());
        assert_eq!(
            g.display(
                &obj! { "action" => "mp_play", "rank" => 0, "suit" => 0, "call_suit" => 2 },
                Dir::Sent
            ),
            Some("play AC".into())
        );
        assert_eq!(
            g.display(&obj! { "action" => "mp_pass" }, Dir::Sent),
            Some("PASS".into())
        );
    }

    #[test]
    fn whole_matches_end_with_agreed_scores() {
        let mut outcomes = BTreeMap::new();
        for seed in 0..120u64 {
            let (mut host, mut guest) = (Briscola::default(), Briscola::default());
            let o = play_match(&mut host, &mut guest, seed, seed % 3 == 2);
            assert!(!o.stalled, "Briscola never passes");
            assert_eq!(o.turns, 40 + 34, "20 tricks and 34 refill draws");
            assert_eq!(o.ledger.played_len(), 40);
            assert_eq!(host, guest);
            assert_eq!(host.completed_tricks, 20);
            let (h, g) = host.points();
            assert_eq!(h + g, TOTAL_POINTS);
            let want = match h.cmp(&g) {
                std::cmp::Ordering::Greater => "host",
                std::cmp::Ordering::Less => "guest",
                std::cmp::Ordering::Equal => "draw",
            };
            assert_eq!(o.winner, Some(want));
            assert_eq!(
                o.extras.get("points"),
                Some(&Value::from(obj! { "host" => h, "guest" => g }))
            );
            *outcomes.entry(want).or_insert(0) += 1;
        }
        assert!(outcomes.contains_key("host") && outcomes.contains_key("guest"));
    }
}
