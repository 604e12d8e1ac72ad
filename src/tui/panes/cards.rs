//! The card table of the two hidden-hand games the `mental_poker` flow
//! plays (crazy-eights-v1, briscola-v1), read from the session snapshot:
//! the hand (legal cards in brackets while it is your move), the discard
//! top and the suit to follow or the trump and the open trick, stock and
//! opponent counts, whose move it is, and at the end the audit result and
//! the transcript hash the events report. Nothing here changes state; the
//! prompt's card pick is `card_pick`.

use crate::json::{Map, Value};
use crate::tui::theme::{Slot, Theme};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Cards of a hand the table reads at most (a deck holds 52).
const MAX_CARDS: usize = 64;

/// Columns a card takes on the table, the gap after it included.
const CELL: usize = 6;

/// Width of the labels on the left (as the summary's).
const LABEL: usize = 8;

/// Suit letters of both decks, in suit-index order.
pub const SUIT_LETTERS: [&str; 4] = ["C", "D", "H", "S"];

/// Event types the table keeps facts from (see [`Verdict::take`]).
pub const FACT_EVENTS: [&str; 8] = [
    "audit_started",
    "audit_passed",
    "audit_failed",
    "mp_terminal_receipt_signed",
    "mp_terminal_receipt_verified",
    "game_over",
    "local_decision_rejected",
    "human_decision_failed",
];

/// `♣` for `C` and so on; other letters stay as they are.
pub fn suit_symbol(letter: &str) -> &str {
    match letter {
        "C" => "♣",
        "D" => "♦",
        "H" => "♥",
        "S" => "♠",
        other => other,
    }
}

/// `clubs` for `C` and so on.
pub fn suit_word(letter: &str) -> &str {
    match letter {
        "C" => "clubs",
        "D" => "diamonds",
        "H" => "hearts",
        "S" => "spades",
        other => other,
    }
}

/// One card as the snapshot names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub id_b: String,
    /// The rank's name (`10`, `Q`, `A`).
    pub rank: String,
    /// The suit's letter (`C`, `D`, `H`, `S`).
    pub suit: String,
}

impl Card {
    /// `10♦`.
    pub fn label(&self) -> String {
        format!("{}{}", self.rank, suit_symbol(&self.suit))
    }
}

/// One entry of the snapshot's `legal_actions`.
#[derive(Debug, Clone, PartialEq)]
pub enum Legal {
    /// Play this card; `call_suit`: it is an 8 and must name a suit.
    Play {
        id_b: String,
        call_suit: bool,
    },
    Draw,
    Pass,
}

/// What each game adds to the table.
#[derive(Debug, Clone, PartialEq)]
pub enum Game {
    CrazyEights {
        /// Rank name of the last card played (None before the first play).
        top_rank: Option<String>,
        /// Suit letter to follow: the last card's, or the one an 8 called.
        current_suit: Option<String>,
    },
    Briscola {
        /// The trump suit's letter.
        trump: Option<String>,
        /// Card points won: host, guest.
        points: (String, String),
        completed_tricks: String,
        /// The open trick, lead first: (who, card).
        trick: Vec<(String, Card)>,
    },
}

/// The card table of one snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub game: Game,
    pub hand: Vec<Card>,
    pub legal: Vec<Legal>,
    /// Suit letters by suit index (the snapshot's `suits`).
    pub suits: Vec<String>,
    pub stock: Option<i64>,
    pub opponent: Option<i64>,
    /// This side's action counter the snapshot was written for.
    pub action_seq: Option<i64>,
    pub phase: String,
}

fn names(snap: &Map, key: &str) -> Vec<String> {
    snap.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Value::py_str).collect())
        .unwrap_or_default()
}

/// The name at index `v` of `list`; the number itself when out of range.
fn name_at(list: &[String], v: Option<&Value>) -> Option<String> {
    let v = v.filter(|v| !v.is_null())?;
    Some(
        v.as_i64()
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| list.get(i).cloned())
            .unwrap_or_else(|| v.py_str()),
    )
}

impl Table {
    /// The table of a card-game snapshot (`game` is crazy_eights or
    /// briscola); None for every other snapshot.
    pub fn of(snap: &Map) -> Option<Table> {
        let kind = snap.get("game").and_then(Value::as_str)?;
        if kind != "crazy_eights" && kind != "briscola" {
            return None;
        }
        let ranks = names(snap, "ranks");
        let mut suits = names(snap, "suits");
        if suits.is_empty() {
            suits = SUIT_LETTERS.iter().map(|s| (*s).to_owned()).collect();
        }
        let card = |m: &Map| -> Option<Card> {
            Some(Card {
                id_b: m.get("id_b").map(Value::py_str).unwrap_or_default(),
                rank: name_at(&ranks, m.get("rank"))?,
                suit: name_at(&suits, m.get("suit"))?,
            })
        };
        let objects = |key: &str| -> Vec<Map> {
            snap.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_object)
                        .take(MAX_CARDS)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        };
        let hand = objects("hand").iter().filter_map(card).collect();
        let legal = objects("legal_actions")
            .iter()
            .filter_map(|m| match m.get("kind").and_then(Value::as_str)? {
                "play" => Some(Legal::Play {
                    id_b: m.get("id_b").map(Value::py_str)?,
                    call_suit: m.get("call_suit_required") == Some(&Value::Bool(true)),
                }),
                "draw" => Some(Legal::Draw),
                "pass" => Some(Legal::Pass),
                _ => None,
            })
            .collect();
        let game = if kind == "crazy_eights" {
            Game::CrazyEights {
                top_rank: name_at(&ranks, snap.get("top_rank")),
                current_suit: name_at(&suits, snap.get("current_suit")),
            }
        } else {
            let points = snap.get("points").and_then(Value::as_object);
            let side = |k: &str| {
                points
                    .and_then(|p| p.get(k))
                    .map(Value::py_str)
                    .unwrap_or_else(|| "0".into())
            };
            Game::Briscola {
                trump: name_at(&suits, snap.get("briscola")),
                points: (side("host"), side("guest")),
                completed_tricks: snap
                    .get("completed_tricks")
                    .map(Value::py_str)
                    .unwrap_or_else(|| "0".into()),
                trick: objects("current_trick")
                    .iter()
                    .filter_map(|m| Some((m.get("who").map(Value::py_str)?, card(m)?)))
                    .collect(),
            }
        };
        Some(Table {
            game,
            hand,
            legal,
            suits,
            stock: snap.get("stock_count").and_then(Value::as_i64),
            opponent: snap.get("opponent_hand_count").and_then(Value::as_i64),
            action_seq: snap.get("action_seq").and_then(Value::as_i64),
            phase: snap.get("phase").map(Value::py_str).unwrap_or_default(),
        })
    }

    /// Whether the card `id_b` plays now: Some(it must call a suit).
    pub fn playable(&self, id_b: &str) -> Option<bool> {
        self.legal.iter().find_map(|l| match l {
            Legal::Play {
                id_b: id,
                call_suit,
            } if id == id_b => Some(*call_suit),
            _ => None,
        })
    }

    pub fn can_draw(&self) -> bool {
        self.legal.contains(&Legal::Draw)
    }

    pub fn can_pass(&self) -> bool {
        self.legal.contains(&Legal::Pass)
    }

    /// Index in the hand of the first card that plays.
    pub fn first_playable(&self) -> Option<usize> {
        self.hand
            .iter()
            .position(|c| self.playable(&c.id_b).is_some())
    }

    /// The suit index of a suit letter (the snapshot's `suits` order).
    pub fn suit_index(&self, letter: &str) -> Option<usize> {
        self.suits.iter().position(|s| s == letter)
    }

    pub fn is_crazy_eights(&self) -> bool {
        matches!(self.game, Game::CrazyEights { .. })
    }

    /// Why `card` does not play now.
    pub fn why_not(&self, card: &Card) -> String {
        let label = card.label();
        if self.can_draw() && !self.is_crazy_eights() {
            return format!("{label} waits: after a trick you draw to refill first");
        }
        if self.legal.is_empty() {
            return format!("{label}: no move is open for you now");
        }
        match &self.game {
            Game::CrazyEights {
                top_rank: Some(top),
                current_suit,
            } => {
                let suit = current_suit.as_deref().map(suit_symbol).unwrap_or("?");
                if top == "8" {
                    format!("{label} does not play: an 8 called {suit}; play {suit} or an 8")
                } else {
                    format!("{label} does not play: play {suit}, a {top} or an 8")
                }
            }
            _ => format!("{label} is not a legal play now"),
        }
    }

    /// Why drawing is not open now.
    pub fn why_no_draw(&self) -> String {
        if self.is_crazy_eights() {
            if self.can_pass() {
                "the stock is empty: pass instead".into()
            } else {
                "you draw only when no card of yours plays".into()
            }
        } else {
            "in Briscola you draw only to refill after a trick".into()
        }
    }

    /// Why passing is not open now.
    pub fn why_no_pass(&self) -> String {
        if !self.is_crazy_eights() {
            "Briscola has no pass".into()
        } else if self.can_draw() {
            "no card of yours plays: draw a card instead".into()
        } else {
            "you pass only when nothing plays and the stock is empty".into()
        }
    }
}

/// The prompt's pick, marked on the table: the picked card's index in the
/// hand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    pub card: usize,
}

/// What the events said about the match: the audit, the receipt, the
/// result, and a decision of ours the engine did not take.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    pub audit: Option<Audit>,
    pub transcript_hash: Option<String>,
    /// Whether the peer's terminal receipt verified.
    pub peer_signature_ok: Option<bool>,
    /// `game_over`'s outcome (`host`, `guest`, `draw`; None: no winner).
    pub outcome: Option<Option<String>>,
    /// The last decision the engine refused, and why.
    pub rejected: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Audit {
    Checking,
    Passed,
    Failed(String),
}

impl Verdict {
    /// Takes one events.jsonl record (`{type, data}`) of [`FACT_EVENTS`].
    pub fn take(&mut self, ev: &Map) {
        let empty = Map::new();
        let data = ev.get("data").and_then(Value::as_object).unwrap_or(&empty);
        let text = |k: &str| data.get(k).filter(|v| !v.is_null()).map(Value::py_str);
        match ev.get("type").and_then(Value::as_str).unwrap_or("") {
            "audit_started" => self.audit = Some(Audit::Checking),
            "audit_passed" => self.audit = Some(Audit::Passed),
            "audit_failed" => {
                self.audit = Some(Audit::Failed(
                    text("reason").unwrap_or_else(|| "unknown".into()),
                ))
            }
            "mp_terminal_receipt_signed" if self.transcript_hash.is_none() => {
                self.transcript_hash = text("transcript_hash");
            }
            "mp_terminal_receipt_verified" => {
                self.transcript_hash = text("transcript_hash").or(self.transcript_hash.take());
                self.peer_signature_ok = data.get("peer_signature_ok").and_then(Value::as_bool);
            }
            "game_over" => self.outcome = Some(text("outcome")),
            "local_decision_rejected" | "human_decision_failed" => {
                let at = text("match_value")
                    .map(|v| format!("action {v}: "))
                    .unwrap_or_default();
                let why = text("reason").unwrap_or_else(|| "rejected".into());
                self.rejected = Some(format!("{at}{why}"));
            }
            _ => {}
        }
    }
}

/// What the pane draws the table with.
pub struct Paint<'a> {
    pub theme: &'a Theme,
    pub mark: Option<Mark>,
    pub verdict: Option<&'a Verdict>,
    /// A decision window of this side is open (the prompt is up).
    pub your_move: bool,
    pub role: &'a str,
}

fn label(theme: &Theme, k: &str) -> Span<'static> {
    Span::styled(format!("{k:<LABEL$}"), theme.muted())
}

fn kv(theme: &Theme, k: &str, v: String, style: Style) -> Line<'static> {
    Line::from(vec![label(theme, k), Span::styled(v, style)])
}

fn suit_style(theme: &Theme, letter: &str) -> Style {
    match letter {
        "D" | "H" => theme.fg(Slot::Error),
        _ => theme.text(),
    }
}

impl Table {
    /// The table's lines at `width` columns (the hand wraps).
    pub fn lines(&self, p: &Paint<'_>, width: u16) -> Vec<Line<'static>> {
        let theme = p.theme;
        let mut out = Vec::new();
        match &self.game {
            Game::CrazyEights {
                top_rank,
                current_suit,
            } => {
                let suit = current_suit.as_deref().unwrap_or("?");
                let line = match top_rank {
                    None => vec![Span::styled("no card yet: any card plays", theme.text())],
                    Some(r) if r == "8" => vec![
                        Span::styled("8", theme.accent().add_modifier(Modifier::BOLD)),
                        Span::styled(" · called ", theme.muted()),
                        Span::styled(
                            format!("{} {}", suit_symbol(suit), suit_word(suit)),
                            suit_style(theme, suit).add_modifier(Modifier::BOLD),
                        ),
                    ],
                    Some(r) => vec![
                        Span::styled(
                            format!("{r}{}", suit_symbol(suit)),
                            suit_style(theme, suit).add_modifier(Modifier::BOLD),
                        ),
                        Span::styled(
                            format!(" · follow {} or {r}", suit_symbol(suit)),
                            theme.muted(),
                        ),
                    ],
                };
                let mut spans = vec![label(theme, "top")];
                spans.extend(line);
                out.push(Line::from(spans));
            }
            Game::Briscola {
                trump,
                points,
                completed_tricks,
                trick,
            } => {
                let t = trump.as_deref().unwrap_or("?");
                out.push(Line::from(vec![
                    label(theme, "trump"),
                    Span::styled(
                        format!("{} {}", suit_symbol(t), suit_word(t)),
                        suit_style(theme, t).add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(" · points ", theme.muted()),
                    Span::styled(
                        format!("host {}", points.0),
                        theme.fg(Slot::Host).add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(" : ", theme.muted()),
                    Span::styled(
                        format!("guest {}", points.1),
                        theme.fg(Slot::Guest).add_modifier(Modifier::BOLD),
                    ),
                ]));
                let mut spans = vec![label(theme, "trick")];
                if trick.is_empty() {
                    spans.push(Span::styled("empty: the host leads", theme.muted()));
                }
                for (i, (who, c)) in trick.iter().enumerate() {
                    if i > 0 {
                        spans.push(Span::styled(" · ", theme.muted()));
                    }
                    let you = if who == p.role { " (you)" } else { "" };
                    spans.push(Span::styled(format!("{who}{you} "), theme.muted()));
                    spans.push(Span::styled(
                        c.label(),
                        suit_style(theme, &c.suit).add_modifier(Modifier::BOLD),
                    ));
                }
                spans.push(Span::styled(
                    format!(" · {completed_tricks} done"),
                    theme.muted(),
                ));
                out.push(Line::from(spans));
            }
        }
        let count = |n: Option<i64>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
        out.push(kv(
            theme,
            "stock",
            format!(
                "{} · opponent holds {}",
                count(self.stock),
                count(self.opponent)
            ),
            theme.text(),
        ));
        if let Some((t, style)) = self.turn(p) {
            out.push(kv(theme, "move", t, style));
        }
        out.extend(self.hand_lines(p, width));
        if let Some(v) = p.verdict {
            out.extend(verdict_lines(theme, v, width));
        }
        out
    }

    /// Whose move it is, when the phase says.
    fn turn(&self, p: &Paint<'_>) -> Option<(String, Style)> {
        let theme = p.theme;
        let seq = self
            .action_seq
            .map(|s| format!(" (action {s})"))
            .unwrap_or_default();
        let yours = |what: &str| {
            (
                format!("yours{seq}: {what}"),
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
            )
        };
        match self.phase.as_str() {
            "action_required" | "playing" if p.your_move => Some(if self.can_draw() {
                yours("nothing to play, draw")
            } else if self.can_pass() {
                yours("nothing plays, pass")
            } else {
                yours("play a [card]")
            }),
            "action_required" => Some((format!("yours{seq}"), theme.fg(Slot::Warn))),
            "action_submitted" => Some(("the opponent's".into(), theme.muted())),
            _ => None,
        }
    }

    /// The hand: a row of numbers (`▼` over the picked card) over a row of
    /// cards, wrapped to `width`. While it is your move, cards that play are
    /// in brackets.
    fn hand_lines(&self, p: &Paint<'_>, width: u16) -> Vec<Line<'static>> {
        let theme = p.theme;
        if self.hand.is_empty() {
            return vec![kv(theme, "hand", "empty".into(), theme.muted())];
        }
        let per_row = ((width as usize).saturating_sub(LABEL) / CELL).max(1);
        let mut out = Vec::new();
        for (row, chunk) in self.hand.chunks(per_row).enumerate() {
            let mut head = vec![label(theme, if row == 0 { "hand" } else { "" })];
            let mut cards = vec![Span::raw(" ".repeat(LABEL))];
            for (j, c) in chunk.iter().enumerate() {
                let i = row * per_row + j;
                let picked = p.mark.is_some_and(|m| m.card == i);
                let plays = p.your_move && self.playable(&c.id_b).is_some();
                head.push(if picked {
                    Span::styled(format!("{:^5} ", "▼"), theme.accent())
                } else {
                    Span::styled(format!("{:^5} ", i + 1), theme.muted())
                });
                let face = format!("{:>2}{}", c.rank, suit_symbol(&c.suit));
                let (text, mut style) = if plays {
                    (
                        format!("[{face}]"),
                        suit_style(theme, &c.suit).add_modifier(Modifier::BOLD),
                    )
                } else if p.your_move {
                    (format!(" {face} "), theme.muted())
                } else {
                    (format!(" {face} "), suit_style(theme, &c.suit))
                };
                if picked {
                    style = theme.cursor();
                }
                cards.push(Span::styled(text, style));
                cards.push(Span::raw(" "));
            }
            out.push(Line::from(head));
            out.push(Line::from(cards));
        }
        out
    }

    /// The widest line of the table with the whole hand (and a transcript
    /// hash) on one row.
    pub fn natural_width(&self, verdict: Option<&Verdict>) -> u16 {
        let hand = LABEL + CELL * self.hand.len().max(1);
        let hash = verdict
            .and_then(|v| v.transcript_hash.as_ref())
            .map_or(0, |h| LABEL + h.chars().count().min(256));
        hand.max(hash).clamp(44, 80) as u16
    }
}

/// The audit, receipt and result lines.
fn verdict_lines(theme: &Theme, v: &Verdict, width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    match &v.audit {
        Some(Audit::Checking) => out.push(kv(
            theme,
            "audit",
            "checking the opened deck…".into(),
            theme.fg(Slot::Warn),
        )),
        Some(Audit::Passed) => {
            let receipt = match v.peer_signature_ok {
                Some(true) => " · receipts signed",
                Some(false) => " · peer receipt INVALID",
                None => "",
            };
            out.push(kv(
                theme,
                "audit",
                format!("passed{receipt}"),
                theme.fg(Slot::Ok).add_modifier(Modifier::BOLD),
            ));
        }
        Some(Audit::Failed(why)) => out.push(kv(
            theme,
            "audit",
            format!("FAILED: {why}"),
            theme.fg(Slot::Error).add_modifier(Modifier::BOLD),
        )),
        None => {}
    }
    if let Some(h) = &v.transcript_hash {
        // Whole, on as many lines as it takes: it is there to be compared.
        let room = (width as usize).saturating_sub(LABEL).max(8);
        let chars: Vec<char> = h.chars().take(256).collect();
        for (i, part) in chars.chunks(room).enumerate() {
            let part: String = part.iter().collect();
            out.push(kv(
                theme,
                if i == 0 { "hash" } else { "" },
                part,
                theme.accent(),
            ));
        }
    }
    if let Some(o) = &v.outcome {
        let text = match o.as_deref() {
            Some("draw") => "a draw".to_owned(),
            Some(w) => format!("{w} wins"),
            None => "no winner".to_owned(),
        };
        out.push(kv(theme, "result", text, theme.fg(Slot::Ok)));
    }
    if let Some(r) = &v.rejected {
        out.push(kv(theme, "refused", r.clone(), theme.fg(Slot::Error)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    fn ce(top: Value, suit: Value) -> Map {
        obj! {
            "game" => "crazy_eights", "phase" => "action_required", "action_seq" => 3,
            "top_rank" => top, "current_suit" => suit,
            "ranks" => ["2","3","4","5","6","7","8","9","10","J","Q","K","A"].map(Value::from).to_vec(),
            "suits" => ["C","D","H","S"].map(Value::from).to_vec(),
            "hand" => vec![
                Value::from(obj! { "id_b" => "11", "rank" => 1, "suit" => 2 }),
                Value::from(obj! { "id_b" => "17", "rank" => 6, "suit" => 3 }),
                Value::from(obj! { "id_b" => "4", "rank" => 10, "suit" => 1 }),
            ],
            "legal_actions" => vec![
                Value::from(obj! { "kind" => "play", "id_b" => "11", "rank" => 1, "suit" => 2, "call_suit_required" => false }),
                Value::from(obj! { "kind" => "play", "id_b" => "17", "rank" => 6, "suit" => 3, "call_suit_required" => true }),
            ],
            "stock_count" => 30, "opponent_hand_count" => 4,
        }
    }

    #[test]
    fn a_crazy_eights_snapshot_reads_as_a_table() {
        let t = Table::of(&ce(Value::from(6), Value::from(2))).unwrap();
        assert_eq!(t.hand.len(), 3);
        assert_eq!(t.hand[1].label(), "8♠");
        assert_eq!(t.hand[2].label(), "Q♦");
        assert_eq!(t.playable("17"), Some(true));
        assert_eq!(t.playable("11"), Some(false));
        assert_eq!(t.playable("4"), None);
        assert_eq!(t.first_playable(), Some(0));
        assert_eq!(
            t.game,
            Game::CrazyEights {
                top_rank: Some("8".into()),
                current_suit: Some("H".into())
            }
        );
        assert!(
            t.why_not(&t.hand[2]).contains("an 8 called ♥"),
            "{}",
            t.why_not(&t.hand[2])
        );
        assert!(!t.can_draw() && !t.can_pass());
        assert!(t.why_no_draw().contains("only when no card"));
        assert_eq!(t.suit_index("S"), Some(3));
    }

    #[test]
    fn other_snapshots_and_odd_values_do_not_make_a_table_or_a_panic() {
        assert!(Table::of(&obj! { "board" => Vec::<Value>::new() }).is_none());
        assert!(Table::of(&obj! { "game" => "chess" }).is_none());
        let mut s = ce(Value::Null, Value::Null);
        s.insert(
            "hand",
            Value::from(vec![
                Value::from(obj! { "id_b" => "1", "rank" => 99, "suit" => -1 }),
                Value::from("not a card"),
                Value::from(obj! { "id_b" => "2" }),
            ]),
        );
        s.insert(
            "legal_actions",
            Value::from(vec![Value::from(obj! { "kind" => "fly" })]),
        );
        let t = Table::of(&s).unwrap();
        assert_eq!(t.hand.len(), 1, "a card without rank or suit is left out");
        assert_eq!(t.hand[0].label(), "99-1");
        assert!(t.legal.is_empty());
        assert!(t.why_not(&t.hand[0]).contains("no move is open"));
    }

    #[test]
    fn briscola_reads_trump_points_and_the_trick() {
        let s = obj! {
            "game" => "briscola", "phase" => "playing", "briscola" => 0,
            "points" => obj! { "host" => 11, "guest" => 24 }, "completed_tricks" => 5,
            "current_trick" => vec![Value::from(obj! { "who" => "host", "rank" => 0, "suit" => 2 })],
            "ranks" => ["A","2","3","4","5","6","7","J","Q","K"].map(Value::from).to_vec(),
            "suits" => ["C","D","H","S"].map(Value::from).to_vec(),
            "legal_actions" => vec![Value::from(obj! { "kind" => "draw" })],
        };
        let t = Table::of(&s).unwrap();
        let Game::Briscola {
            trump,
            points,
            trick,
            ..
        } = &t.game
        else {
            panic!("{:?}", t.game)
        };
        assert_eq!(trump.as_deref(), Some("C"));
        assert_eq!(points, &("11".to_owned(), "24".to_owned()));
        assert_eq!(trick[0].1.label(), "A♥");
        assert!(t.can_draw());
        assert!(t.why_no_pass().contains("no pass"));
    }

    #[test]
    fn the_verdict_follows_the_end_events() {
        let mut v = Verdict::default();
        let ev = |t: &str, d: Map| obj! { "type" => t, "data" => d };
        v.take(&ev("audit_started", Map::new()));
        assert_eq!(v.audit, Some(Audit::Checking));
        v.take(&ev(
            "mp_terminal_receipt_signed",
            obj! { "transcript_hash" => "ab" },
        ));
        v.take(&ev("audit_passed", Map::new()));
        v.take(&ev(
            "mp_terminal_receipt_verified",
            obj! { "transcript_hash" => "cd", "peer_signature_ok" => true },
        ));
        v.take(&ev(
            "game_over",
            obj! { "outcome" => Value::Null, "audit_status" => "passed" },
        ));
        assert_eq!(v.audit, Some(Audit::Passed));
        assert_eq!(v.transcript_hash.as_deref(), Some("cd"));
        assert_eq!(v.peer_signature_ok, Some(true));
        assert_eq!(v.outcome, Some(None));
        v.take(&ev("audit_failed", obj! { "reason" => "card_not_in_hand" }));
        assert_eq!(v.audit, Some(Audit::Failed("card_not_in_hand".into())));
        v.take(&ev(
            "local_decision_rejected",
            obj! { "match_key" => "action_seq", "match_value" => 4, "reason" => "kind must be play, draw, or pass" },
        ));
        assert_eq!(
            v.rejected.as_deref(),
            Some("action 4: kind must be play, draw, or pass")
        );
    }
}
