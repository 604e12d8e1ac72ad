//! The decision prompt's card pick for the card games of the
//! `mental_poker` flow: a card of the hand picked with the arrows or its
//! number and played with Enter; draw or pass when that is the legal
//! action; after an 8 in Crazy Eights, the suit to call. Only what the
//! snapshot lists as legal is ever submitted, and only for the window's own
//! action; a key that does nothing says why.

use super::cards::{self, Mark, Table};
use crate::json::{Map, Value};
use crate::obj;
use crate::tui::command::Command;
use crate::tui::theme::Theme;
use ratatui::text::{Line, Span};

/// The pick of one decision window.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    /// The window's action counter; the table must be the one for it.
    pub seq: Option<i64>,
    /// The table of the newest snapshot.
    pub table: Option<Table>,
    /// Index of the picked card in the hand.
    pub card: usize,
    /// The suit index being called for the picked 8 (the suit choice is
    /// open while this is Some).
    pub suit: Option<usize>,
    /// The picked card's id, to keep the pick when the hand is re-read.
    picked: Option<String>,
}

/// What a command does to the pick.
#[derive(Debug, Clone, PartialEq)]
pub enum Act {
    /// The pick moved, or the suit choice opened or closed.
    Moved,
    /// Submit this decision (without the window's match key).
    Decide(Map),
    /// The key does nothing now, and why.
    Refuse(String),
    /// Not a command of the card pick.
    Ignored,
}

/// The suit letter a `suit_*` command calls.
fn suit_of(c: Command) -> Option<&'static str> {
    Some(match c {
        Command::SuitClubs => "C",
        Command::SuitDiamonds => "D",
        Command::SuitHearts => "H",
        Command::SuitSpades => "S",
        _ => return None,
    })
}

fn play(id_b: &str, call_suit: Option<usize>) -> Map {
    let mut m = obj! { "kind" => "play", "id_b" => id_b };
    if let Some(s) = call_suit {
        m.insert("call_suit", Value::from(s as i64));
    }
    m
}

impl Pick {
    pub fn new(seq: Option<i64>) -> Pick {
        Pick {
            seq,
            table: None,
            card: 0,
            suit: None,
            picked: None,
        }
    }

    /// Takes the newest snapshot. The first table picks the first card that
    /// plays; later ones keep the pick on the same card.
    pub fn update(&mut self, snap: &Map) {
        let Some(t) = Table::of(snap) else {
            self.table = None;
            return;
        };
        let kept = self
            .picked
            .as_ref()
            .and_then(|id| t.hand.iter().position(|c| &c.id_b == id));
        self.card = match (kept, &self.picked) {
            (Some(i), _) => i,
            (None, None) => t.first_playable().unwrap_or(0),
            (None, Some(_)) => self.card.min(t.hand.len().saturating_sub(1)),
        };
        self.picked = t.hand.get(self.card).map(|c| c.id_b.clone());
        let calls = self
            .picked
            .as_deref()
            .and_then(|id| t.playable(id))
            .unwrap_or(false);
        if !calls {
            self.suit = None;
        }
        self.table = Some(t);
    }

    /// What the table marks: the picked card.
    pub fn mark(&self) -> Mark {
        Mark { card: self.card }
    }

    pub fn choosing_suit(&self) -> bool {
        self.suit.is_some()
    }

    /// The table, when it is the one of this window's action and that
    /// action is still open.
    fn ready(&self) -> Result<&Table, String> {
        let t = self
            .table
            .as_ref()
            .ok_or("waiting for the card table (snapshot)…")?;
        if let Some(seq) = self.seq {
            if t.action_seq != Some(seq) {
                return Err(format!(
                    "the table is not up to date for action {seq} yet; wait a moment"
                ));
            }
            if t.phase == "action_submitted" {
                return Err(format!("action {seq} is already submitted"));
            }
        }
        Ok(t)
    }

    /// Closes the suit choice (back to picking a card); false when it was
    /// not open.
    pub fn back(&mut self) -> bool {
        self.suit.take().is_some()
    }

    fn select(&mut self, i: usize) {
        self.card = i;
        self.picked = self
            .table
            .as_ref()
            .and_then(|t| t.hand.get(i))
            .map(|c| c.id_b.clone());
    }

    /// The decision the picked card makes (the suit included while one is
    /// being called), or why there is none.
    pub fn selection(&self) -> Result<Map, String> {
        let t = self.ready()?;
        let Some(card) = t.hand.get(self.card) else {
            return Err(self.nothing_plays(t));
        };
        match t.playable(&card.id_b) {
            None if t.first_playable().is_none() => Err(self.nothing_plays(t)),
            None => Err(t.why_not(card)),
            Some(false) => Ok(play(&card.id_b, None)),
            Some(true) => match self.suit {
                Some(s) => Ok(play(&card.id_b, Some(s))),
                None => Err(format!("{} is an 8: call a suit", card.label())),
            },
        }
    }

    fn nothing_plays(&self, t: &Table) -> String {
        if t.can_draw() {
            "no card of yours plays: draw a card".into()
        } else if t.can_pass() {
            "nothing plays and the stock is empty: pass".into()
        } else {
            "no move is open for you now".into()
        }
    }

    /// The suit the hand holds most (8s and the picked card aside), the
    /// first in suit order on a tie: where the suit choice starts.
    fn likely_suit(&self, t: &Table) -> usize {
        let mut counts = vec![0usize; t.suits.len().max(1)];
        for (i, c) in t.hand.iter().enumerate() {
            if i != self.card
                && c.rank != "8"
                && let Some(s) = t.suit_index(&c.suit)
            {
                counts[s] += 1;
            }
        }
        let best = counts.iter().copied().max().unwrap_or(0);
        counts.iter().position(|n| *n == best).unwrap_or(0)
    }

    /// Applies a prompt command.
    pub fn command(&mut self, c: Command) -> Act {
        let Some(t) = self.table.as_ref() else {
            return match c {
                Command::Left | Command::Right | Command::Up | Command::Down => Act::Moved,
                _ if c.choice().is_some() || c == Command::Submit => {
                    Act::Refuse("waiting for the card table (snapshot)…".into())
                }
                _ => Act::Ignored,
            };
        };
        let cards = t.hand.len();
        let suits = t.suits.len();
        if let Some(s) = self.suit {
            return match c {
                Command::Left | Command::Up => {
                    self.suit = Some(s.saturating_sub(1));
                    Act::Moved
                }
                Command::Right | Command::Down => {
                    self.suit = Some((s + 1).min(suits.saturating_sub(1)));
                    Act::Moved
                }
                Command::Submit => self.decide(),
                _ if c.choice().is_some() => {
                    let n = c.choice().map_or(0, usize::from);
                    if n > suits {
                        return Act::Refuse(format!("there are {suits} suits: 1 to {suits}"));
                    }
                    self.suit = Some(n - 1);
                    self.decide()
                }
                _ if suit_of(c).is_some() => self.call(c),
                Command::Draw | Command::Pass => {
                    Act::Refuse("call a suit for your 8 first (or go back)".into())
                }
                _ => Act::Ignored,
            };
        }
        match c {
            Command::Left | Command::Up => {
                self.select(self.card.saturating_sub(1));
                Act::Moved
            }
            Command::Right | Command::Down => {
                self.select((self.card + 1).min(cards.saturating_sub(1)));
                Act::Moved
            }
            _ if c.choice().is_some() => {
                let n = c.choice().map_or(0, usize::from);
                if n > cards {
                    return Act::Refuse(match cards {
                        0 => "your hand is empty".into(),
                        1 => "you hold one card".into(),
                        _ => format!("you hold {cards} cards: 1 to {cards}"),
                    });
                }
                self.select(n - 1);
                Act::Moved
            }
            Command::Submit => {
                let needs_suit = t
                    .hand
                    .get(self.card)
                    .and_then(|c| t.playable(&c.id_b))
                    .unwrap_or(false);
                if needs_suit {
                    if let Err(e) = self.ready() {
                        return Act::Refuse(e);
                    }
                    self.suit = Some(self.likely_suit(t));
                    return Act::Moved;
                }
                self.decide()
            }
            Command::Draw => match self.ready() {
                Err(e) => Act::Refuse(e),
                Ok(t) if t.can_draw() => Act::Decide(obj! { "kind" => "draw" }),
                Ok(t) => Act::Refuse(t.why_no_draw()),
            },
            Command::Pass => match self.ready() {
                Err(e) => Act::Refuse(e),
                Ok(t) if t.can_pass() => Act::Decide(obj! { "kind" => "pass" }),
                Ok(t) => Act::Refuse(t.why_no_pass()),
            },
            _ if suit_of(c).is_some() => {
                let is_eight = t
                    .hand
                    .get(self.card)
                    .and_then(|c| t.playable(&c.id_b))
                    .unwrap_or(false);
                if is_eight {
                    self.call(c)
                } else {
                    Act::Refuse("only an 8 calls a suit: pick one that plays".into())
                }
            }
            _ => Act::Ignored,
        }
    }

    /// Calls the suit of a `suit_*` command for the picked 8.
    fn call(&mut self, c: Command) -> Act {
        let Some(letter) = suit_of(c) else {
            return Act::Ignored;
        };
        match self.table.as_ref().and_then(|t| t.suit_index(letter)) {
            Some(i) => {
                self.suit = Some(i);
                self.decide()
            }
            None => Act::Refuse(format!("this game has no {}", cards::suit_word(letter))),
        }
    }

    /// The decision of the pick; a suit choice closes once it decided.
    fn decide(&mut self) -> Act {
        match self.selection() {
            Ok(m) => {
                self.suit = None;
                Act::Decide(m)
            }
            Err(e) => Act::Refuse(e),
        }
    }

    /// The commands the status bar hints at: only what is legal now.
    pub fn hints(&self) -> Vec<Command> {
        if self.suit.is_some() {
            return vec![
                Command::SuitClubs,
                Command::SuitDiamonds,
                Command::SuitHearts,
                Command::SuitSpades,
                Command::Submit,
                Command::Back,
            ];
        }
        let mut v = Vec::new();
        if let Some(t) = &self.table {
            if t.first_playable().is_some() {
                v.extend([Command::Submit, Command::Left]);
            }
            if t.can_draw() {
                v.push(Command::Draw);
            }
            if t.can_pass() {
                v.push(Command::Pass);
            }
        }
        v.extend([Command::Back, Command::Help]);
        v
    }

    /// The prompt's first line: the picked card and whether it plays, or
    /// the suit choice.
    pub fn lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let Some(t) = &self.table else {
            return vec![Line::from(Span::styled(
                "waiting for the card table…",
                theme.muted(),
            ))];
        };
        let card = t.hand.get(self.card);
        if let (Some(s), Some(c)) = (self.suit, card) {
            let mut spans = vec![Span::styled(
                format!("{} calls: ", c.label()),
                theme.muted(),
            )];
            for (i, letter) in t.suits.iter().enumerate() {
                let text = format!("[{} {}]", i + 1, cards::suit_symbol(letter));
                if i == s {
                    spans.push(Span::styled("›", theme.accent()));
                    spans.push(Span::styled(
                        format!(
                            "[{} {} {}]",
                            i + 1,
                            cards::suit_symbol(letter),
                            cards::suit_word(letter)
                        ),
                        theme.selected(),
                    ));
                    spans.push(Span::raw(" "));
                } else {
                    spans.push(Span::styled(format!("{text} "), theme.accent()));
                }
            }
            return vec![Line::from(spans)];
        }
        if t.first_playable().is_none() {
            return vec![Line::from(Span::styled(
                self.nothing_plays(t),
                theme.accent(),
            ))];
        }
        let Some(c) = card else {
            return vec![Line::from(Span::styled(
                "your hand is empty",
                theme.muted(),
            ))];
        };
        let (what, style) = match t.playable(&c.id_b) {
            Some(true) => ("plays · then call a suit".to_owned(), theme.accent()),
            Some(false) => ("plays".to_owned(), theme.accent()),
            None => (t.why_not(c), theme.muted()),
        };
        vec![Line::from(vec![
            Span::styled(
                format!("card {}/{}: ", self.card + 1, t.hand.len()),
                theme.muted(),
            ),
            Span::styled(c.label(), theme.selected()),
            Span::styled(format!(" {what}"), style),
        ])]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(legal: Vec<Value>, phase: &str) -> Map {
        obj! {
            "game" => "crazy_eights", "phase" => phase, "action_seq" => 5,
            "top_rank" => 3, "current_suit" => 2,
            "ranks" => ["2","3","4","5","6","7","8","9","10","J","Q","K","A"].map(Value::from).to_vec(),
            "suits" => ["C","D","H","S"].map(Value::from).to_vec(),
            "hand" => vec![
                Value::from(obj! { "id_b" => "12", "rank" => 10, "suit" => 0 }),
                Value::from(obj! { "id_b" => "20", "rank" => 6, "suit" => 0 }),
                Value::from(obj! { "id_b" => "31", "rank" => 1, "suit" => 2 }),
                Value::from(obj! { "id_b" => "7", "rank" => 4, "suit" => 3 }),
                Value::from(obj! { "id_b" => "8", "rank" => 9, "suit" => 3 }),
            ],
            "legal_actions" => legal,
        }
    }

    fn plays() -> Vec<Value> {
        vec![
            Value::from(obj! { "kind" => "play", "id_b" => "20", "call_suit_required" => true }),
            Value::from(obj! { "kind" => "play", "id_b" => "31", "call_suit_required" => false }),
        ]
    }

    fn pick(legal: Vec<Value>) -> Pick {
        let mut p = Pick::new(Some(5));
        p.update(&table(legal, "action_required"));
        p
    }

    fn decided(a: Act) -> String {
        match a {
            Act::Decide(m) => crate::json::canonical::to_string(&Value::Object(m)),
            other => panic!("no decision: {other:?}"),
        }
    }

    #[test]
    fn the_first_playable_card_is_picked_and_numbers_move_the_pick() {
        let mut p = pick(plays());
        assert_eq!(p.card, 1, "the 8 is the first card that plays");
        assert_eq!(p.command(Command::Choose3), Act::Moved);
        assert_eq!(p.card, 2);
        assert_eq!(
            decided(p.command(Command::Submit)),
            r#"{"id_b":"31","kind":"play"}"#
        );
        assert!(matches!(p.command(Command::Choose7), Act::Refuse(w) if w.contains("5 cards")));
        assert_eq!(p.command(Command::Choose1), Act::Moved);
        let Act::Refuse(why) = p.command(Command::Submit) else {
            panic!("the Q♣ does not play");
        };
        assert!(why.contains("play ♥, a 5 or an 8"), "{why}");
        for _ in 0..9 {
            p.command(Command::Right);
        }
        assert_eq!(p.card, 4, "the pick stays in the hand");
    }

    #[test]
    fn an_eight_asks_for_a_suit_by_arrow_letter_or_number() {
        let mut p = pick(plays());
        assert_eq!(p.command(Command::Submit), Act::Moved);
        assert_eq!(p.suit, Some(3), "spades: the suit held most");
        assert_eq!(p.command(Command::Left), Act::Moved);
        assert_eq!(
            decided(p.command(Command::Submit)),
            r#"{"call_suit":2,"id_b":"20","kind":"play"}"#
        );
        assert!(!p.choosing_suit(), "a decision closes the suit choice");
        // A suit letter plays a picked 8 at once.
        assert_eq!(
            decided(p.command(Command::SuitDiamonds)),
            r#"{"call_suit":1,"id_b":"20","kind":"play"}"#
        );
        p.command(Command::Submit);
        assert_eq!(
            decided(p.command(Command::Choose1)),
            r#"{"call_suit":0,"id_b":"20","kind":"play"}"#
        );
        p.command(Command::Submit);
        assert!(matches!(p.command(Command::Choose5), Act::Refuse(_)));
        assert!(matches!(p.command(Command::Draw), Act::Refuse(_)));
        assert!(p.choosing_suit());
        assert!(p.back());
        assert!(!p.back());
        assert!(!p.choosing_suit());
        assert!(
            matches!(p.command(Command::Draw), Act::Refuse(w) if w.contains("only when no card"))
        );
        assert!(matches!(p.command(Command::Pass), Act::Refuse(_)));
    }

    #[test]
    fn draw_and_pass_only_when_listed() {
        let mut p = pick(vec![Value::from(obj! { "kind" => "draw" })]);
        assert!(matches!(p.command(Command::Submit), Act::Refuse(w) if w.contains("draw")));
        assert!(
            matches!(p.command(Command::Pass), Act::Refuse(w) if w.contains("draw a card instead"))
        );
        assert_eq!(decided(p.command(Command::Draw)), r#"{"kind":"draw"}"#);
        assert_eq!(p.hints(), [Command::Draw, Command::Back, Command::Help]);
        let mut p = pick(vec![Value::from(obj! { "kind" => "pass" })]);
        assert_eq!(decided(p.command(Command::Pass)), r#"{"kind":"pass"}"#);
        assert!(matches!(p.command(Command::Draw), Act::Refuse(w) if w.contains("pass instead")));
        assert!(matches!(p.command(Command::SuitHearts), Act::Refuse(_)));
    }

    #[test]
    fn nothing_is_decided_for_a_stale_or_submitted_table() {
        let mut p = Pick::new(Some(6));
        assert!(matches!(p.command(Command::Submit), Act::Refuse(w) if w.contains("waiting")));
        p.update(&table(plays(), "action_required"));
        assert!(matches!(p.command(Command::Choose3), Act::Moved));
        assert!(
            matches!(p.command(Command::Submit), Act::Refuse(w) if w.contains("not up to date"))
        );
        let mut p = Pick::new(Some(5));
        p.update(&table(plays(), "action_submitted"));
        p.command(Command::Choose3);
        assert!(
            matches!(p.command(Command::Submit), Act::Refuse(w) if w.contains("already submitted"))
        );
    }

    #[test]
    fn a_new_snapshot_keeps_the_pick_on_the_same_card() {
        let mut p = pick(plays());
        p.command(Command::Choose3);
        let mut snap = table(plays(), "action_required");
        if let Some(Value::Array(hand)) = snap.get_mut("hand") {
            hand.remove(0);
        }
        p.update(&snap);
        assert_eq!(p.card, 1);
        assert_eq!(p.table.as_ref().unwrap().hand[p.card].id_b, "31");
        p.update(&obj! { "phase" => "game_over" });
        assert!(p.table.is_none());
        assert!(matches!(p.command(Command::Choose1), Act::Refuse(_)));
    }
}
