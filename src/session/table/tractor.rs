//! upgrade-tractor-v1's part of a table view: the level rank and the trump
//! suit, each team's level, the starter, the declarations and the
//! declarer, the kitty when this seat sees it, the trick on the table with
//! the shape of each play, the last trick, the points the defenders have
//! taken, the match points and the last hand's result. The hand number is
//! the view's `round`; a seat's role is its part in the hand (`declarer`,
//! `partner`, `defender`, or `starter` while declaring).
//!
//! Your hand is sorted as tractor players hold it: the trumps together,
//! strongest first (the big and the small joker, the level card of the
//! trump suit, the other level cards, then the trump suit high to low),
//! then each other suit high to low (spades, hearts, clubs, diamonds).

use super::*;
use crate::protocols::tables::tractor::cards::{Ctx, Face, SUITS};
use crate::protocols::tables::tractor::combos;

/// The two partnerships, as the view names them (team0: seats 0 and 2).
pub const TEAMS: [&str; 2] = ["team0", "team1"];

/// One seat's word in the declarations.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Declaration {
    pub public_key: String,
    /// `pass_declare` or `declare_trump`.
    pub kind: String,
    /// 0 a pass, 1 one level card, 2 a pair of one, 3 small jokers, 4 big.
    pub strength: i64,
    /// The suit it makes trump (empty: no-trump).
    pub trump_suit: String,
    pub cards: Vec<Card>,
    pub card_ids: Vec<String>,
}

impl Declaration {
    fn parse(v: &Value) -> Option<Declaration> {
        let o = v.as_object()?;
        Some(Declaration {
            public_key: text(o.get("public_key")),
            kind: text(o.get("kind")),
            strength: int(o.get("strength")).unwrap_or(0),
            trump_suit: text(o.get("trump_suit")),
            cards: cards(o.get("cards")),
            card_ids: o
                .get("card_ids")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .take(4)
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect(),
        })
    }

    pub fn is_pass(&self) -> bool {
        self.kind != "declare_trump"
    }
}

/// One play of a trick: who played which cards, and the shape the rules
/// gave it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrickPlay {
    pub public_key: String,
    pub seat: Option<i64>,
    pub team: String,
    /// Sorted as a hand is ([`Tractor::sort`]).
    pub cards: Vec<Card>,
    /// `single`, `pair`, `tractor`, `throw`, or `mixed` for a follow that
    /// spans classes.
    pub kind: String,
    pub count: i64,
    /// The class every card shares: a suit, `trump`, or `mixed`.
    pub suit: String,
    pub pair_count: i64,
    pub tractor_length: i64,
}

impl TrickPlay {
    /// A play of a trick (or an `upgrade_play` event).
    pub fn parse(v: &Value) -> Option<TrickPlay> {
        let o = v.as_object()?;
        let shape = o.get("shape").and_then(Value::as_object);
        let n = |k: &str| shape.and_then(|s| int(s.get(k))).unwrap_or(0);
        Some(TrickPlay {
            public_key: text(o.get("public_key")),
            seat: int(o.get("seat")),
            team: text(o.get("team")),
            cards: cards(o.get("cards")),
            kind: shape.map(|s| text(s.get("kind"))).unwrap_or_default(),
            count: n("count"),
            suit: shape.map(|s| text(s.get("suit"))).unwrap_or_default(),
            pair_count: n("pair_count"),
            tractor_length: n("tractor_length"),
        })
    }

    /// The shape as the rules hold a lead to it (`combos::Lead::of`).
    fn shape_value(&self) -> Value {
        Value::Object(crate::obj! {
            "kind" => self.kind.as_str(), "count" => self.count, "suit" => self.suit.as_str(),
            "pair_count" => self.pair_count, "tractor_length" => self.tractor_length,
        })
    }

    /// `a ♠ pair`, `a trump tractor of 3 pairs`, `a ♥ throw of 4`, `3
    /// cards`: the play for people.
    pub fn words(&self) -> String {
        let class = class_word(&self.suit);
        match self.kind.as_str() {
            "single" => format!("a {class} single"),
            "pair" => format!("a {class} pair"),
            "tractor" => format!("a {class} tractor of {} pairs", self.tractor_length),
            "throw" => format!("a {class} throw of {}", self.count),
            _ => format!("{} cards", self.cards.len()),
        }
    }
}

/// `♠`, `trump`: a class for people.
pub fn class_word(class: &str) -> String {
    match class {
        "trump" => "trump".to_owned(),
        "spades" => "♠".to_owned(),
        "hearts" => "♥".to_owned(),
        "clubs" => "♣".to_owned(),
        "diamonds" => "♦".to_owned(),
        other => other.to_owned(),
    }
}

/// `7`, `J`, `A`: a level as players say it.
pub fn level_word(level: i64) -> String {
    match level {
        11 => "J".to_owned(),
        12 => "Q".to_owned(),
        13 => "K".to_owned(),
        14 => "A".to_owned(),
        n => n.to_string(),
    }
}

/// A trick taken.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrickWon {
    pub number: i64,
    pub winner: String,
    pub team: String,
    pub points: i64,
    pub plays: Vec<TrickPlay>,
}

/// How the last hand ended (`last_result`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HandResult {
    pub defender_points: i64,
    pub kitty_points: i64,
    pub kitty_multiplier: i64,
    pub kitty_award: i64,
    /// The team that declares the next hand, and the levels it went up.
    pub controlling_team: String,
    pub level_steps: i64,
}

/// What upgrade-tractor-v1 adds to a table (the hand number is the view's
/// `round`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tractor {
    /// The rank that is trump this hand (2–14), the declaring team's level.
    pub level_rank: i64,
    /// The trump suit (empty: none, while declaring or in no-trump).
    pub trump_suit: String,
    /// Who declares when everyone passes.
    pub starter: String,
    /// The declarer ("" while declaring) and the declaring team.
    pub declarer: String,
    pub declarer_team: String,
    /// Each team's level (team0, team1).
    pub levels: [i64; 2],
    /// Every seat's team, by public key.
    pub teams: Vec<(String, String)>,
    /// The declarations and passes so far, in turn order.
    pub declarations: Vec<Declaration>,
    /// The standing (then the winning) declaration.
    pub winning: Option<Declaration>,
    pub kitty_count: i64,
    /// The kitty shown at the hand's end.
    pub kitty_revealed: Vec<Card>,
    /// The cards the declarer took from the kitty, while it buries (only
    /// in the declarer's view).
    pub kitty_taken: Vec<Card>,
    pub trick: Vec<TrickPlay>,
    pub tricks_played: usize,
    pub last_trick: Option<TrickWon>,
    /// The points each team has taken this hand (team0, team1), and the
    /// defenders' (80 takes control).
    pub captured: [i64; 2],
    pub defender_points: i64,
    /// The points of the whole match (team0, team1).
    pub match_points: [i64; 2],
    pub last_result: Option<HandResult>,
    /// This seat's team.
    pub team: String,
}

impl Tractor {
    /// The rules' classes of this hand.
    pub fn ctx(&self) -> Ctx {
        let trump = SUITS.iter().find(|s| **s == self.trump_suit).copied();
        Ctx::new(self.level_rank, trump)
    }

    /// The card's face, when it is one of the deck's.
    pub fn face(c: &Card) -> Option<Face> {
        Face::of(&Value::Object(
            crate::obj! { "suit" => c.suit.as_str(), "rank" => c.value },
        ))
        .ok()
    }

    pub fn is_trump(&self, c: &Card) -> bool {
        c.is_joker() || Tractor::face(c).is_some_and(|f| self.ctx().is_trump(f))
    }

    /// Where a card's class goes in a sorted hand: 0 the trumps, then the
    /// plain suits (spades, hearts, clubs, diamonds), 5 anything else.
    pub fn class_group(&self, c: &Card) -> i64 {
        if self.is_trump(c) {
            0
        } else {
            (c.suit_group() + 1).min(5)
        }
    }

    /// Strength inside the class: higher is stronger (a level card of
    /// another suit under the trump suit's, the jokers on top).
    fn strength(&self, c: &Card) -> i64 {
        match Tractor::face(c) {
            Some(f) => self.ctx().strength(f).1,
            None => c.value,
        }
    }

    /// A gap in the hand between two of these: the class, then the face
    /// (copies of one face sit together, a pair at a glance).
    pub fn hand_group(&self, c: &Card) -> i64 {
        self.class_group(c) * 100_000 + self.strength(c).clamp(0, 9_999) * 8 + c.suit_group()
    }

    /// Sorts cards as tractor players hold them ([module docs](self)).
    pub fn sort(&self, cards: &mut [Card]) {
        cards.sort_by(|a, b| {
            let key = |c: &Card| {
                (
                    self.class_group(c),
                    -self.strength(c),
                    c.suit_group(),
                    c.copy,
                )
            };
            key(a).cmp(&key(b)).then_with(|| a.card_id.cmp(&b.card_id))
        });
    }

    /// A team's index (0 or 1) by its name.
    pub fn team_index(team: &str) -> Option<usize> {
        TEAMS.iter().position(|t| *t == team)
    }

    pub fn team_of(&self, pk: &str) -> &str {
        self.teams
            .iter()
            .find(|(k, _)| k == pk)
            .map_or("", |(_, t)| t.as_str())
    }

    /// The seats of a team, by public key, in seat order.
    pub fn members(&self, team: &str) -> Vec<&str> {
        self.teams
            .iter()
            .filter(|(_, t)| t == team)
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// Has `pk` still to declare or pass?
    pub fn to_declare(&self, pk: &str) -> bool {
        !pk.is_empty()
            && self.teams.iter().any(|(k, _)| k == pk)
            && !self.declarations.iter().any(|d| d.public_key == pk)
    }

    /// `pk`'s word in the declarations, if it has spoken.
    pub fn declaration_of(&self, pk: &str) -> Option<&Declaration> {
        self.declarations.iter().find(|d| d.public_key == pk)
    }

    /// Which play of the trick on the table holds it so far, by the rules'
    /// `trick_winner` (None: no trick, or a card that is none of the
    /// deck's).
    pub fn holder(&self) -> Option<usize> {
        let played: Option<Vec<combos::Played>> = self
            .trick
            .iter()
            .map(|p| {
                Some(combos::Played {
                    faces: p.cards.iter().map(Tractor::face).collect::<Option<_>>()?,
                    kind: p.kind.clone(),
                    suit: p.suit.clone(),
                })
            })
            .collect();
        let played = played.filter(|p| !p.is_empty())?;
        Some(combos::trick_winner(&played, &self.ctx())).filter(|i| *i < played.len())
    }

    /// The points among `cards`: 5 a five, 10 a ten or a king.
    pub fn points(cards: &[Card]) -> i64 {
        cards
            .iter()
            .filter_map(Tractor::face)
            .map(Face::points)
            .sum()
    }

    /// The card ids the declarer may not bury (its declaration's).
    pub fn protected(&self) -> &[String] {
        self.winning.as_ref().map_or(&[], |w| w.card_ids.as_slice())
    }

    /// Why the rules refuse `picked` (cards of `hand`) now, as a person
    /// reads it: the lead to follow and what it asks of this hand, a
    /// burial of the wrong size, a lead that mixes suits. `name` says who
    /// a public key is.
    pub fn refusal(
        &self,
        phase: &str,
        hand: &[Card],
        picked: &[Card],
        name: &dyn Fn(&str) -> String,
    ) -> String {
        let shown = picked.iter().map(Card::label).collect::<Vec<_>>().join(" ");
        if picked.is_empty() {
            return match phase {
                "bury" => format!("pick {} cards to bury", self.kitty_count),
                _ => "pick cards first (Space picks one, a picks a pair)".to_owned(),
            };
        }
        match phase {
            "bury" if picked.len() as i64 != self.kitty_count => format!(
                "bury exactly {} cards: {} picked",
                self.kitty_count,
                picked.len()
            ),
            "bury" => {
                let kept: Vec<String> = picked
                    .iter()
                    .filter(|c| self.protected().contains(&c.card_id))
                    .map(Card::label)
                    .collect();
                if kept.is_empty() {
                    format!("{shown} cannot be buried now")
                } else {
                    format!(
                        "{} declared the trump: it stays in your hand, bury another card",
                        kept.join(" ")
                    )
                }
            }
            "playing" => self.play_refusal(hand, picked, &shown, name),
            "declaration" => format!(
                "{shown} is no declaration: the numbered choices are the ones the rules allow"
            ),
            _ => format!("{shown} does not play now"),
        }
    }

    fn play_refusal(
        &self,
        hand: &[Card],
        picked: &[Card],
        shown: &str,
        name: &dyn Fn(&str) -> String,
    ) -> String {
        let faces: Option<Vec<Face>> = picked.iter().map(Tractor::face).collect();
        let held: Option<Vec<Face>> = hand.iter().map(Tractor::face).collect();
        let (Some(faces), Some(held)) = (faces, held) else {
            return format!("{shown} does not play now");
        };
        let ctx = self.ctx();
        let Some(lead) = self.trick.first() else {
            return match combos::classify(&faces, &ctx) {
                Err(e) if e.contains("share an effective suit") => format!(
                    "{shown} mixes suits: a lead is all trumps or all of one suit \
                     (a single, a pair, a tractor of pairs in a row, or a throw)"
                ),
                Err(e) => format!("{shown}: {e}"),
                Ok(_) => format!("{shown} does not play now"),
            };
        };
        let Err(e) = combos::validate_follow(&held, &faces, &lead.shape_value(), &ctx) else {
            return format!("{shown} does not play now");
        };
        let led = format!("{} led {}", name(&lead.public_key), lead.words());
        let class = class_word(&lead.suit);
        let n = lead.count;
        let have = held.iter().filter(|f| ctx.class(**f) == lead.suit).count() as i64;
        if e.contains("same number of cards") {
            format!("{led}: play {n} cards ({} picked)", picked.len())
        } else if e.contains("exhaust the led") {
            if have >= n {
                format!("{led}: play {n} {class} cards, you hold {have}")
            } else {
                format!(
                    "{led}: play all {have} of your {class} cards, then {} other",
                    n - have
                )
            }
        } else if e.contains("preserve available pairs") {
            format!("{led}: you hold {class} pairs, so follow with your pairs")
        } else if e.contains("pair must follow a pair") {
            format!("{led}: you hold a {class} pair, so play a pair")
        } else if e.contains("tractor must follow a tractor") {
            format!("{led}: you hold a {class} tractor as long, so play it")
        } else {
            format!("{shown}: {e}")
        }
    }
}

/// `{team0: a, team1: b}` as (a, b).
fn pair_of(v: Option<&Value>) -> [i64; 2] {
    let m = v.and_then(Value::as_object);
    TEAMS.map(|t| m.and_then(|m| int(m.get(t))).unwrap_or(0))
}

pub(super) fn tractor(alias: &str, v: &Map) -> Result<TableView, String> {
    let declarer = text(v.get("declarer"));
    let starter = text(v.get("starter"));
    let phase = text(v.get("phase"));
    let declarer_team = text(v.get("declarer_team"));
    let team_of_player = |p: Option<&Value>| p.map(|p| text(p.get("team"))).unwrap_or_default();
    let seats = seats_of(v, &|s, p| {
        let team = team_of_player(p);
        s.role = if phase == "declaration" {
            if s.public_key == starter {
                "starter"
            } else {
                ""
            }
        } else if s.public_key == declarer {
            "declarer"
        } else if !team.is_empty() && team == declarer_team {
            "partner"
        } else if !team.is_empty() {
            "defender"
        } else {
            ""
        }
        .to_owned();
    })?;
    let players = v.get("players").and_then(Value::as_object);
    let teams = seats
        .iter()
        .map(|s| {
            let team = team_of_player(players.and_then(|p| p.get(&s.public_key)));
            (s.public_key.clone(), team)
        })
        .collect();
    let order = keys(v.get("turn_order"));
    let mut declarations: Vec<Declaration> = v
        .get("declarations")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.iter())
        .take(MAX_SEATS)
        .filter_map(|(pk, d)| {
            let mut d = Declaration::parse(d)?;
            if d.public_key.is_empty() {
                d.public_key = pk.to_owned();
            }
            Some(d)
        })
        .collect();
    declarations.sort_by_key(|d| {
        order
            .iter()
            .position(|k| *k == d.public_key)
            .unwrap_or(usize::MAX)
    });
    let history = v.get("trick_history").and_then(Value::as_array);
    let trick_of = |t: Option<&Value>| -> Vec<TrickPlay> {
        t.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(MAX_SEATS)
            .filter_map(TrickPlay::parse)
            .collect()
    };
    let last_trick = history.and_then(|h| h.last()).map(|t| TrickWon {
        number: int(t.get("number")).unwrap_or(0),
        winner: text(t.get("winner")),
        team: text(t.get("team")),
        points: int(t.get("points")).unwrap_or(0),
        plays: trick_of(t.get("plays")),
    });
    let last_result = v.get("last_result").and_then(Value::as_object).map(|r| {
        let n = |k: &str| int(r.get(k)).unwrap_or(0);
        HandResult {
            defender_points: n("defender_points"),
            kitty_points: n("kitty_points"),
            kitty_multiplier: n("kitty_multiplier"),
            kitty_award: n("kitty_award"),
            controlling_team: text(r.get("controlling_team")),
            level_steps: n("level_steps"),
        }
    });
    let you = v.get("you").and_then(Value::as_object);
    let you_pk = you.map(|y| text(y.get("public_key"))).unwrap_or_default();
    let mut game = Tractor {
        level_rank: int(v.get("level_rank")).unwrap_or(0),
        trump_suit: match v.get("trump_suit") {
            Some(Value::String(s)) => s.to_string(),
            _ => String::new(),
        },
        starter,
        declarer: declarer.clone(),
        declarer_team,
        levels: pair_of(v.get("levels")),
        teams,
        declarations,
        winning: v.get("winning_declaration").and_then(Declaration::parse),
        kitty_count: int(v.get("kitty_count")).unwrap_or(8).clamp(0, 64),
        kitty_revealed: cards(v.get("kitty_revealed")),
        kitty_taken: Vec::new(),
        trick: trick_of(v.get("current_trick")),
        tricks_played: history.map_or(0, Vec::len),
        last_trick,
        captured: pair_of(v.get("captured_points")),
        defender_points: int(v.get("defender_points")).unwrap_or(0),
        match_points: pair_of(v.get("match_points")),
        last_result,
        team: you.map(|y| text(y.get("team"))).unwrap_or_default(),
    };
    let raw = cards(v.get("my_hand"));
    // The kitty is drawn onto the end of the declarer's hand: while it
    // buries, the last cards of the hand as dealt are the kitty's.
    let k = usize::try_from(game.kitty_count).unwrap_or(0);
    if phase == "bury" && !you_pk.is_empty() && declarer == you_pk && k > 0 && raw.len() > k {
        let mut taken = raw[raw.len() - k..].to_vec();
        game.sort(&mut taken);
        game.kitty_taken = taken;
    }
    let mut hand = raw;
    game.sort(&mut hand);
    // Every list of cards reads in the hand's order.
    let sorter = game.clone();
    sorter.sort(&mut game.kitty_revealed);
    let plays = game
        .trick
        .iter_mut()
        .chain(game.last_trick.iter_mut().flat_map(|t| t.plays.iter_mut()));
    for p in plays {
        sorter.sort(&mut p.cards);
    }
    for d in game.declarations.iter_mut().chain(game.winning.as_mut()) {
        sorter.sort(&mut d.cards);
    }
    Ok(common(
        alias,
        v,
        "hand_number",
        seats,
        hand,
        Game::Tractor(game),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::protocols::tables::Table;
    use crate::session::table::tests::*;

    const ALIAS: &str = "upgrade-tractor-v1";

    fn act(rules: &mut Box<dyn Table>, state: &mut Value, n: usize, a: Value) {
        let r = rules.handle(state.clone(), &members()[n], &a).unwrap();
        *state = r.get("state").unwrap().clone();
    }

    fn view(rules: &mut Box<dyn Table>, state: &Value, n: usize) -> TableView {
        TableView::parse(ALIAS, &rules.view(state, &members()[n]).unwrap()).unwrap()
    }

    /// Every seat's bot acts, the first that has a move, until `done`.
    fn bots_until(rules: &mut Box<dyn Table>, state: &mut Value, done: impl Fn(&Value) -> bool) {
        for _ in 0..400 {
            if done(state) {
                return;
            }
            let n = (0..4)
                .find(|n| {
                    let v = rules.view(state, &members()[*n]).unwrap();
                    rules.bot_action(&v).is_some()
                })
                .expect("a seat has a move");
            let v = rules.view(state, &members()[n]).unwrap();
            let a = rules.bot_action(&v).unwrap();
            act(rules, state, n, a);
        }
        panic!("never got there: {state:?}");
    }

    #[test]
    fn a_dealt_hand_declares_in_any_order_with_the_trumps_sorted_first() {
        let (mut rules, mut state) = dealt(ALIAS);
        let t = view(&mut rules, &state, 0);
        assert_eq!(t.phase, "declaration");
        assert_eq!(t.round, Some(1));
        assert_eq!(t.hand.len(), 25);
        let g = t.tractor().unwrap();
        assert_eq!((g.level_rank, g.trump_suit.as_str()), (2, ""));
        assert_eq!(g.levels, [2, 2]);
        assert_eq!(g.team, "team0");
        assert_eq!(g.members("team1"), ["pk1", "pk3"]);
        assert_eq!(t.seats[0].role, "starter");
        // Nobody holds the turn: every seat declares or passes once.
        assert!(t.current.is_empty());
        assert!(t.your_turn() && view(&mut rules, &state, 3).your_turn());
        // The trumps (jokers, the level's twos) come first, strongest first.
        let groups: Vec<i64> = t.hand.iter().map(|c| g.class_group(c)).collect();
        assert!(groups.windows(2).all(|w| w[0] <= w[1]), "{groups:?}");
        for w in t.hand.windows(2) {
            if g.class_group(&w[0]) == g.class_group(&w[1]) {
                assert!(g.strength(&w[0]) >= g.strength(&w[1]), "{w:?}");
            }
        }
        // Seat 0 passes: no longer its turn, seat 1's still.
        act(
            &mut rules,
            &mut state,
            0,
            Value::Object(obj! { "kind" => "pass_declare" }),
        );
        let t = view(&mut rules, &state, 0);
        assert!(!t.your_turn());
        let g = t.tractor().unwrap();
        assert!(g.declaration_of("pk0").is_some_and(Declaration::is_pass));
        assert!(g.to_declare("pk1") && !g.to_declare("pk0"));
        assert!(view(&mut rules, &state, 1).your_turn());
    }

    #[test]
    fn the_declarer_sees_the_kitty_it_buries_and_a_trick_reads_with_its_shapes() {
        let (mut rules, mut state) = dealt(ALIAS);
        bots_until(&mut rules, &mut state, |s| {
            s.get_str("phase") == Some("bury")
        });
        let declarer = state.get_str("declarer").unwrap().to_owned();
        let n: usize = declarer[2..].parse().unwrap();
        let t = view(&mut rules, &state, n);
        assert!(t.your_turn());
        assert_eq!(t.hand.len(), 33);
        let g = t.tractor().unwrap();
        assert_eq!(g.kitty_taken.len(), 8);
        assert!(
            g.kitty_taken
                .iter()
                .all(|k| t.hand.iter().any(|c| c.card_id == k.card_id))
        );
        assert_eq!(t.seats[n].role, "declarer");
        assert_eq!(t.seats[(n + 2) % 4].role, "partner");
        assert_eq!(t.seats[(n + 1) % 4].role, "defender");
        // Another seat sees no kitty and waits for the declarer.
        let other = view(&mut rules, &state, (n + 1) % 4);
        assert!(other.tractor().unwrap().kitty_taken.is_empty() && !other.your_turn());
        // A burial of the wrong size is said so.
        let name = |pk: &str| pk.to_owned();
        assert_eq!(
            g.refusal("bury", &t.hand, &t.hand[..3], &name),
            "bury exactly 8 cards: 3 picked"
        );
        bots_until(&mut rules, &mut state, |s| {
            s.get("current_trick")
                .and_then(Value::as_array)
                .is_some_and(|t| t.len() == 2)
        });
        let t = view(&mut rules, &state, 0);
        let g = t.tractor().unwrap();
        assert_eq!(t.phase, "playing");
        assert_eq!(g.trick.len(), 2);
        assert!(g.trick[0].count >= 1);
        assert_eq!(g.trick[0].cards.len() as i64, g.trick[0].count);
        assert!(!g.trick[0].words().is_empty());
        assert_eq!(t.seats[0].cards_left, Some(t.hand.len() as i64));
        assert!(g.holder().is_some_and(|i| i < 2));
    }

    #[test]
    fn a_follow_that_breaks_the_rules_is_refused_with_the_lead_it_owes() {
        let c = |rank: i64, suit: &str, id: &str| {
            Card::parse(&Value::Object(
                obj! { "rank" => rank, "suit" => suit, "card_id" => id },
            ))
            .unwrap()
        };
        let g = Tractor {
            level_rank: 7,
            trump_suit: "hearts".into(),
            kitty_count: 8,
            trick: vec![TrickPlay {
                public_key: "b".into(),
                cards: vec![c(9, "spades", "x"), c(9, "spades", "y")],
                kind: "pair".into(),
                count: 2,
                suit: "spades".into(),
                pair_count: 1,
                ..TrickPlay::default()
            }],
            ..Tractor::default()
        };
        let hand = vec![
            c(4, "spades", "4a"),
            c(4, "spades", "4b"),
            c(12, "spades", "q"),
            c(3, "hearts", "3h"),
        ];
        let name = |pk: &str| format!("<{pk}>");
        assert_eq!(
            g.refusal("playing", &hand, &hand[2..3], &name),
            "<b> led a ♠ pair: play 2 cards (1 picked)"
        );
        assert_eq!(
            g.refusal("playing", &hand, &hand[2..4], &name),
            "<b> led a ♠ pair: play 2 ♠ cards, you hold 3"
        );
        let q_and_4 = [hand[0].clone(), hand[2].clone()];
        assert_eq!(
            g.refusal("playing", &hand, &q_and_4, &name),
            "<b> led a ♠ pair: you hold ♠ pairs, so follow with your pairs"
        );
        // A lead that mixes a trump and a plain suit.
        let lead = Tractor {
            trick: Vec::new(),
            ..g.clone()
        };
        assert!(
            lead.refusal("playing", &hand, &hand[2..4], &name)
                .starts_with("Q♠ 3♥ mixes suits")
        );
        // A ten of hearts is trump, the sevens too: hearts sort with them.
        let mut cards = vec![
            c(14, "spades", "as"),
            c(10, "hearts", "th"),
            c(7, "clubs", "7c"),
            c(16, "joker", "sj"),
            c(7, "hearts", "7h"),
            c(2, "diamonds", "2d"),
        ];
        g.sort(&mut cards);
        let labels: Vec<String> = cards.iter().map(Card::label).collect();
        assert_eq!(labels, ["BJ", "7♥", "7♣", "10♥", "A♠", "2♦"]);
    }

    #[test]
    fn odd_tractor_views_read_without_a_panic() {
        for odd in [
            r#"{"phase":"bury","declarer":"a","you":{"public_key":"a"},"my_hand":[{"rank":99,"suit":"x"},{"rank":7}],"kitty_count":-5}"#,
            r#"{"phase":"bury","declarer":"a","you":{"public_key":"a"},"my_hand":[{"rank":3,"suit":"clubs"}],"kitty_count":1e300}"#,
            r#"{"phase":"declaration","declarations":{"a":7,"b":{"kind":"declare_trump","cards":"x","card_ids":[1,"q"]}},"players":{"a":{"team":3},"b":{"team":"team9"}}}"#,
            r#"{"phase":"playing","current_trick":[{"shape":{"kind":"tractor","count":"2"},"cards":[{"rank":16,"suit":"joker"}]},5],"trick_history":[{"plays":7},{"number":"x"}],"levels":[1],"level_rank":99,"trump_suit":7}"#,
            r#"{"last_result":{"levels":3},"captured_points":{"team0":"9"},"match_points":null,"kitty_revealed":[{"rank":17,"suit":"joker"}],"winning_declaration":{"card_ids":"x"}}"#,
        ] {
            let v = crate::json::parse_str(odd).unwrap();
            let t = TableView::parse(ALIAS, &v).unwrap();
            let g = t.tractor().unwrap();
            let name = |pk: &str| pk.to_owned();
            for phase in ["declaration", "bury", "playing", "completed", ""] {
                for n in 0..=t.hand.len() {
                    g.refusal(phase, &t.hand, &t.hand[..n], &name);
                }
            }
            for c in &t.hand {
                g.hand_group(c);
            }
            assert!(!t.your_turn() || t.phase == "bury");
        }
    }
}
