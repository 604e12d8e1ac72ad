//! upgrade-tractor-v1 at the table pane: what its events say in the log,
//! the level and the trump in the state line, each seat's team and part in
//! the hand, its board lines (the declarations or the declarer, the teams'
//! levels, the points, the trick with who holds it, the last trick, the
//! kitty while the declarer buries it, the last hand's result), the
//! declarations as numbered choices and the action line while burying and
//! playing.

use super::*;
use crate::session::table::{Tractor, TrickPlay, class_word, level_word};

/// `you bury`, `bot-1 buries`: a subject and its verb, spelled out.
fn says(who: &str, third: &str, base: &str) -> String {
    if who == "you" {
        format!("you {base}")
    } else {
        format!("{who} {third}")
    }
}

/// `team 0`, or `your team` when the view says it is.
fn team_word(team: &str, view: Option<&Tractor>) -> String {
    if view.is_some_and(|t| !t.team.is_empty() && t.team == team) {
        return "your team".to_owned();
    }
    match team.strip_prefix("team") {
        Some(n) if !n.is_empty() => format!("team {n}"),
        _ => team.to_owned(),
    }
}

/// `♥ trump`, `no-trump`.
fn trump_words(suit: &str) -> String {
    if suit.is_empty() {
        "no-trump".to_owned()
    } else {
        format!("{} trump", class_word(suit))
    }
}

pub(super) fn tractor_event(
    ev: &Map,
    name: &dyn Fn(&str) -> String,
    view: Option<&TableView>,
) -> Option<String> {
    let who = |k: &str| name(ev.get_str(k).unwrap_or(""));
    let int = |k: &str| ev.get(k).and_then(Value::as_i64).unwrap_or(0);
    let game = view.and_then(TableView::tractor);
    let team = |k: &str| team_word(ev.get_str(k).unwrap_or("?"), game);
    // Cards read in the hand's order (by the trump of the view's hand).
    let sorted = |mut cards: Vec<Card>| {
        if let Some(g) = game {
            g.sort(&mut cards);
        }
        cards
    };
    Some(match ev.get_str("kind")? {
        "pass_declare" => format!("{} on the trump", does(who("public_key"), "passes")),
        "declare_trump" => {
            let cards = labels(&sorted(event_cards(ev.get("cards"))));
            let trump = trump_words(ev.get_str("trump_suit").unwrap_or(""));
            let with = if int("strength") == 2 {
                format!("a pair, {cards}")
            } else {
                cards
            };
            format!(
                "{} {trump} with {with}",
                says(&who("public_key"), "declares", "declare")
            )
        }
        "upgrade_declarer_selected" => {
            let w = who("declarer");
            format!(
                "{} the declarer for {}: {} at level {}; {} the kitty",
                does(w.clone(), "is"),
                team("declarer_team"),
                trump_words(ev.get_str("trump_suit").unwrap_or("")),
                level_word(int("level_rank")),
                says(&w, "takes", "take"),
            )
        }
        "upgrade_kitty_buried" => {
            let w = who("declarer");
            format!(
                "{} {} cards in the kitty and {}",
                says(&w, "buries", "bury"),
                int("count"),
                if w == "you" { "lead" } else { "leads" }
            )
        }
        "upgrade_play" => {
            let mut p = TrickPlay::parse(&Value::Object(ev.clone())).unwrap_or_default();
            p.cards = sorted(std::mem::take(&mut p.cards));
            // A follower's cards of one class classify as a throw: only
            // singles, pairs and tractors are named.
            let what = match p.kind.as_str() {
                "single" | "pair" | "tractor" => p.words(),
                "throw" => format!("{} {} cards", p.count, class_word(&p.suit)),
                _ => format!("{} cards", p.cards.len()),
            };
            format!(
                "{} {what}: {}",
                does(who("public_key"), "plays"),
                labels(&p.cards)
            )
        }
        "upgrade_trick_won" => {
            let points = match int("points") {
                0 => String::new(),
                n => format!(" (+{n} points)"),
            };
            format!(
                "{} trick {} for {}{points}",
                does(who("winner"), "wins"),
                int("trick_number"),
                team("team")
            )
        }
        "upgrade_hand_complete" => {
            let control = ev.get_str("controlling_team").unwrap_or("?");
            let to = ev
                .get("levels")
                .and_then(|l| l.get(control))
                .and_then(Value::as_i64)
                .map(|l| format!(" to {}", level_word(l)))
                .unwrap_or_default();
            let kitty = match int("kitty_award") {
                0 => String::new(),
                n => format!(
                    " (the kitty's {} ×{}: {n})",
                    int("kitty_points"),
                    int("kitty_multiplier")
                ),
            };
            let steps = int("level_steps");
            format!(
                "hand over: the defenders took {} points{kitty}; {} goes up {steps} level{}{to}",
                int("defender_points"),
                team_word(control, game),
                if steps == 1 { "" } else { "s" }
            )
        }
        "upgrade_match_complete" => {
            let winner = ev.get_str("winner").unwrap_or("?");
            let at = ev
                .get("levels")
                .and_then(|l| l.get(winner))
                .and_then(Value::as_i64)
                .map(|l| format!(" at level {}", level_word(l)))
                .unwrap_or_default();
            format!("{} wins the match{at}", team_word(winner, game))
        }
        "upgrade_hand_started" => format!(
            "hand {} is dealt: {} the starter",
            int("hand_number"),
            does(who("starter"), "is")
        ),
        "upgrade_hand_restarted_after_leader_change" => format!(
            "the leader changed: hand {} is dealt again",
            int("hand_number")
        ),
        _ => return shared_event(ev, name),
    })
}

/// What a tractor choice says: `pass`, `♥ trump with 7♥ 7♥`, `no-trump
/// with RJ RJ`, `bury 8 cards`, `play 9♠ 9♠`.
pub(super) fn tractor_choice(a: &Value, v: &TableView) -> String {
    let ids: Vec<&str> = a
        .get("card_ids")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let cards: Vec<Card> = ids
        .iter()
        .filter_map(|id| v.hand.iter().find(|c| c.card_id == *id).cloned())
        .collect();
    match a.get_str("kind").unwrap_or("?") {
        "pass_declare" => "pass".to_owned(),
        "declare_trump" => {
            let trump = match cards.first() {
                Some(c) if c.is_joker() => "no-trump".to_owned(),
                Some(c) => format!("{} trump", c.suit_symbol()),
                None => "declare".to_owned(),
            };
            format!("{trump} with {}", labels(&cards))
        }
        "bury" => format!("bury {} cards", ids.len()),
        "play" => format!("play {}", labels(&cards)),
        k => k.replace('_', " "),
    }
}

/// Spans cut to `w` cells, ending in `…` when they do not fit.
fn fit(spans: Vec<Span<'static>>, w: usize) -> Line<'static> {
    if spans_width(&spans) <= w {
        return Line::from(spans);
    }
    let room = w.saturating_sub(1);
    let mut out = Vec::new();
    let mut used = 0;
    for sp in spans {
        let n = sp.width();
        if used + n > room {
            let mut part = String::new();
            for ch in sp.content.chars() {
                part.push(ch);
                if used + Span::raw(part.as_str()).width() > room {
                    part.pop();
                    break;
                }
            }
            let style = sp.style;
            if !part.is_empty() {
                out.push(Span::styled(part, style));
            }
            out.push(Span::styled("…", style));
            break;
        }
        used += n;
        out.push(sp);
    }
    Line::from(out)
}

impl TablePaint<'_> {
    /// `you & bot-2`: a team by its players, else `team 0`.
    fn team_names(&self, g: &Tractor, team: &str) -> String {
        let names: Vec<String> = g.members(team).iter().map(|pk| self.name(pk)).collect();
        if names.is_empty() {
            team_word(team, None)
        } else {
            names.join(" & ")
        }
    }

    /// The state line's part: the trump and the level, always in sight
    /// (`♥ trump · level 7 · `; while declaring, `♥ trump? · ` for the
    /// standing declaration, `trump open · ` for none).
    pub(super) fn tractor_state(&self, theme: &Theme, v: &TableView) -> Vec<Span<'static>> {
        let Some(g) = v.tractor() else {
            return Vec::new();
        };
        let trump = if v.phase == "declaration" {
            match &g.winning {
                Some(w) => format!("{}?", trump_words(&w.trump_suit)),
                None => "trump open".to_owned(),
            }
        } else {
            trump_words(&g.trump_suit)
        };
        let strong = theme.fg(Slot::Warn).add_modifier(Modifier::BOLD);
        vec![
            Span::styled(trump, strong),
            Span::styled(" · ", theme.muted()),
            Span::styled(format!("level {}", level_word(g.level_rank)), strong),
            Span::styled(" · ", theme.muted()),
        ]
    }

    /// A seat's team, part in the hand (while declaring: what it declared,
    /// `passed` or `deciding`) and cards left, within `room` cells.
    pub(super) fn tractor_seat(
        &self,
        theme: &Theme,
        v: &TableView,
        s: &Seat,
        base: Style,
        room: usize,
    ) -> Vec<Span<'static>> {
        let Some(g) = v.tractor() else {
            return Vec::new();
        };
        let team = team_word(g.team_of(&s.public_key), None);
        // team (7), role, a space, cards (8): the role takes what is left.
        let role_w = room.saturating_sub(16).clamp(6, 10);
        // While declaring, the role column says what the seat declared.
        let (role, role_style) = if v.phase == "declaration" {
            match g.declaration_of(&s.public_key) {
                Some(d) if d.is_pass() => ("passed".to_owned(), theme.muted()),
                Some(d) => (
                    labels(&d.cards),
                    theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
                ),
                None => ("deciding".to_owned(), theme.muted()),
            }
        } else if s.role == "declarer" {
            (
                s.role.clone(),
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
            )
        } else {
            (s.role.clone(), theme.muted())
        };
        let spans = vec![
            Span::styled(format!("{} ", pad(&team, 6)), theme.muted()),
            Span::styled(format!("{} ", pad(&role, role_w)), role_style),
            Span::styled(
                s.cards_left
                    .map(|n| format!("{n:>2} cards"))
                    .unwrap_or_default(),
                base,
            ),
        ];
        fit(spans, room).spans
    }

    /// Tractor: the declarations (or the declarer), the teams' levels,
    /// the points, the trick and the last one, the kitty the declarer
    /// took while it buries, the last hand's result while declaring.
    pub(super) fn tractor_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        let Some(g) = v.tractor() else {
            return Vec::new();
        };
        let w = usize::from(w);
        let label = |s: &str| Span::styled(format!("{s:<9}"), theme.muted());
        let bold = |s: String| Span::styled(s, theme.text().add_modifier(Modifier::BOLD));
        let mut out = Vec::new();
        if v.phase == "declaration" {
            // Who has spoken is in the seats' lines.
            let mut spans = vec![label("trump")];
            match &g.winning {
                Some(d) => {
                    spans.push(Span::styled(
                        trump_words(&d.trump_suit),
                        theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
                    ));
                    spans.push(Span::styled(
                        format!(" by {} with ", self.who(&d.public_key)),
                        theme.text(),
                    ));
                    spans.extend(card_spans(theme, &d.cards, 12));
                }
                None => spans.push(Span::styled(
                    format!(
                        "none yet; if all pass, {} no-trump",
                        does(self.who(&g.starter), "declares")
                    ),
                    theme.muted(),
                )),
            }
            // How to outbid, when there is room.
            let l = level_word(g.level_rank);
            let hint = format!(" · strength: one {l} < a pair of {l}s < BJ BJ < RJ RJ");
            if spans_width(&spans) + hint.chars().count() <= w {
                spans.push(Span::styled(hint, theme.muted()));
            }
            out.push(fit(spans, w));
        } else if !g.declarer.is_empty() {
            let mut spans = vec![
                label("declarer"),
                Span::styled(
                    self.who(&g.declarer),
                    theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
                ),
            ];
            match &g.winning {
                Some(d) if !d.cards.is_empty() => {
                    spans.push(Span::styled(" with ", theme.muted()));
                    spans.extend(card_spans(theme, &d.cards, 12));
                }
                _ => spans.push(Span::styled(
                    " (all passed: the starter declares no-trump)",
                    theme.muted(),
                )),
            }
            if v.phase == "bury" && g.declarer != v.you {
                spans.push(Span::styled(
                    format!(" · burying {} cards", g.kitty_count),
                    theme.muted(),
                ));
            } else if v.phase != "bury" {
                spans.push(Span::styled(
                    format!(" · {} cards buried", g.kitty_count),
                    theme.muted(),
                ));
            }
            out.push(fit(spans, w));
        }
        // The teams and their levels, the declaring one marked.
        let mut spans = vec![label("levels")];
        let mut declaring = None;
        for (i, team) in crate::session::table::TEAMS.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", theme.muted()));
            }
            let style = if g.team == *team {
                theme.accent()
            } else {
                theme.text()
            };
            spans.push(Span::styled(
                format!("{} at ", self.team_names(g, team)),
                style,
            ));
            spans.push(bold(level_word(g.levels[i])));
            if g.declarer_team == *team {
                declaring = Some(spans.len());
            }
        }
        // Which team declares, when the line has room to say it.
        let mark = " (declaring)";
        if let Some(at) = declaring
            && spans_width(&spans) + mark.len() <= w
        {
            spans.insert(at, Span::styled(mark, theme.muted()));
        }
        out.push(fit(spans, w));
        if v.phase != "declaration" {
            let mut spans = vec![
                label("points"),
                Span::styled("defenders ", theme.text()),
                bold(g.defender_points.to_string()),
                Span::styled(" (80 take control)", theme.muted()),
            ];
            if g.match_points != [0, 0] {
                spans.push(Span::styled(
                    format!(" · match {}–{}", g.match_points[0], g.match_points[1]),
                    theme.muted(),
                ));
            }
            out.push(fit(spans, w));
        }
        if v.phase == "playing" {
            out.push(self.tractor_trick_line(theme, v, g, w));
            if let Some(last) = g.last_trick.as_ref().filter(|_| !g.trick.is_empty()) {
                let mut spans = vec![
                    label("last"),
                    Span::styled(
                        format!(
                            "trick {} to {}{}: ",
                            last.number,
                            self.name(&last.winner),
                            match last.points {
                                0 => String::new(),
                                n => format!(" (+{n})"),
                            }
                        ),
                        theme.muted(),
                    ),
                ];
                spans.extend(self.plays_spans(theme, &last.plays, None));
                out.push(fit(spans, w));
            }
        }
        if v.phase == "bury" && !g.kitty_taken.is_empty() {
            let mut spans = vec![label("kitty"), Span::styled("you took ", theme.muted())];
            let room = w.saturating_sub(spans_width(&spans) + 22);
            spans.extend(card_spans(theme, &g.kitty_taken, room));
            spans.push(Span::styled(
                format!(" · bury {} of your cards", g.kitty_count),
                theme.muted(),
            ));
            out.push(fit(spans, w));
        }
        if !g.kitty_revealed.is_empty() {
            let mut spans = vec![label("kitty")];
            spans.extend(card_spans(theme, &g.kitty_revealed, w.saturating_sub(9)));
            out.push(fit(spans, w));
        }
        if v.phase == "declaration"
            && let Some(r) = &g.last_result
        {
            let kitty = match r.kitty_award {
                0 => String::new(),
                n => format!(" (kitty ×{}: {n})", r.kitty_multiplier),
            };
            let spans = vec![
                label("last hand"),
                Span::styled(
                    format!(
                        "defenders {} points{kitty}: {} up {}",
                        r.defender_points,
                        self.team_names(g, &r.controlling_team),
                        r.level_steps
                    ),
                    theme.muted(),
                ),
            ];
            out.push(fit(spans, w));
        }
        out
    }

    /// `bot-1 9♠ 9♠ · ada K♠ 3♠`: the plays of a trick, the name of the
    /// one that holds it (`holder`) highlighted.
    fn plays_spans(
        &self,
        theme: &Theme,
        plays: &[TrickPlay],
        holder: Option<usize>,
    ) -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        for (i, p) in plays.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", theme.muted()));
            }
            spans.push(Span::styled(
                format!("{} ", self.name(&p.public_key)),
                if holder == Some(i) {
                    theme.fg(Slot::Warn).add_modifier(Modifier::BOLD)
                } else {
                    theme.muted()
                },
            ));
            spans.extend(card_spans(theme, &p.cards, 64));
        }
        spans
    }

    fn tractor_trick_line(
        &self,
        theme: &Theme,
        v: &TableView,
        g: &Tractor,
        w: usize,
    ) -> Line<'static> {
        let mut spans = vec![Span::styled(
            format!("{:<9}", format!("trick {}", g.tricks_played + 1)),
            theme.muted(),
        )];
        match g.trick.first() {
            None => {
                let lead = if v.your_turn() {
                    "you lead".to_owned()
                } else {
                    format!("{} leads", self.who(&v.current))
                };
                spans.push(Span::styled(lead, theme.muted()));
                if let Some(last) = &g.last_trick {
                    spans.push(Span::styled(
                        format!(" · last trick to {}: ", self.name(&last.winner)),
                        theme.muted(),
                    ));
                    spans.extend(self.plays_spans(theme, &last.plays, None));
                }
            }
            Some(lead) => {
                let holder = g.holder();
                let plays = self.plays_spans(theme, &g.trick, holder);
                // The lead's shape, when the plays leave room for it (the
                // action line says it on your turn).
                let words = format!("{} · ", lead.words());
                if spans_width(&spans) + spans_width(&plays) + words.chars().count() <= w {
                    spans.push(Span::styled(words, theme.text()));
                }
                spans.extend(plays);
                let cards: Vec<Card> = g
                    .trick
                    .iter()
                    .flat_map(|p| p.cards.iter().cloned())
                    .collect();
                let points = Tractor::points(&cards);
                // Who holds it and what it is worth, as far as there is room.
                let holds = holder
                    .and_then(|i| g.trick.get(i))
                    .map(|p| does(self.name(&p.public_key), "holds") + " it");
                let worth = (points > 0).then(|| format!("{points} points"));
                let tail = match (holds, worth) {
                    (Some(h), Some(p)) => vec![format!("{h}, {p}"), p],
                    (Some(h), None) => vec![h],
                    (None, Some(p)) => vec![p],
                    (None, None) => Vec::new(),
                };
                if let Some(t) = tail
                    .into_iter()
                    .find(|t| spans_width(&spans) + 3 + t.chars().count() <= w)
                {
                    spans.push(Span::styled(format!(" · {t}"), theme.muted()));
                }
            }
        }
        fit(spans, w)
    }

    /// Waiting during the declarations: for whom.
    pub(super) fn tractor_waiting(&self, v: &TableView) -> Option<String> {
        let g = v.tractor()?;
        if v.phase != "declaration" {
            return None;
        }
        let left: Vec<String> = g
            .teams
            .iter()
            .filter(|(pk, _)| g.to_declare(pk))
            .map(|(pk, _)| self.name(pk))
            .collect();
        Some(if left.is_empty() {
            "waiting for the declarer".to_owned()
        } else {
            format!("waiting for {} to declare or pass", left.join(", "))
        })
    }

    /// The action line on your turn while burying or playing: what to
    /// pick, and the keys.
    pub(super) fn tractor_action(&self, theme: &Theme, v: &TableView) -> Vec<Span<'static>> {
        let Some(g) = v.tractor() else {
            return Vec::new();
        };
        let muted = theme.muted();
        let head = theme.fg(Slot::Warn).add_modifier(Modifier::BOLD);
        let picked = self.pick.selected.map_or(0, BTreeSet::len);
        let (what, enter) = if v.phase == "bury" {
            (
                format!("bury {} (picked {picked})", g.kitty_count),
                "buries them",
            )
        } else {
            match g.trick.first() {
                Some(lead) => (format!("follow {}", lead.words()), "plays"),
                None => ("your lead".to_owned(), "plays"),
            }
        };
        let mut line = vec![Span::styled(what, head)];
        let keys = [
            format!("{} picks", self.key(Command::SelectCard)),
            format!("{} picks a pair", self.key(Command::SelectGroup)),
            format!("{} {enter}", self.key(Command::Submit)),
        ];
        for k in keys {
            line.push(Span::styled(format!(" · {k}"), muted));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    fn card(rank: i64, suit: &str) -> Value {
        Value::Object(obj! { "rank" => rank, "suit" => suit, "card_id" => format!("{rank}{suit}") })
    }

    #[test]
    fn tractor_events_read_as_sentences() {
        let name = |pk: &str| {
            if pk == "me" {
                "you".to_owned()
            } else {
                format!("<{pk}>")
            }
        };
        let alias = "upgrade-tractor-v1";
        let say = |ev: Map| event_text(alias, &ev, &name, None).unwrap();
        assert_eq!(
            say(obj! { "kind" => "pass_declare", "public_key" => "me", "strength" => 0 }),
            "you pass on the trump"
        );
        assert_eq!(
            say(obj! {
                "kind" => "declare_trump", "public_key" => "a", "strength" => 2, "trump_suit" => "hearts",
                "cards" => vec![card(7, "hearts"), card(7, "hearts")],
            }),
            "<a> declares ♥ trump with a pair, 7♥ 7♥"
        );
        assert_eq!(
            say(obj! {
                "kind" => "declare_trump", "public_key" => "me", "strength" => 4, "trump_suit" => Value::Null,
                "cards" => vec![card(17, "joker"), card(17, "joker")],
            }),
            "you declare no-trump with RJ RJ"
        );
        assert_eq!(
            say(obj! {
                "kind" => "upgrade_declarer_selected", "declarer" => "a", "declarer_team" => "team1",
                "trump_suit" => "spades", "level_rank" => 12,
            }),
            "<a> is the declarer for team 1: ♠ trump at level Q; <a> takes the kitty"
        );
        assert_eq!(
            say(obj! { "kind" => "upgrade_kitty_buried", "declarer" => "me", "count" => 8 }),
            "you bury 8 cards in the kitty and lead"
        );
        assert_eq!(
            say(obj! {
                "kind" => "upgrade_play", "public_key" => "b", "seat" => 1, "team" => "team1",
                "cards" => vec![card(9, "spades"), card(9, "spades")],
                "shape" => obj! { "kind" => "pair", "count" => 2, "suit" => "spades", "pair_count" => 1 },
            }),
            "<b> plays a ♠ pair: 9♠ 9♠"
        );
        assert_eq!(
            say(obj! {
                "kind" => "upgrade_play", "public_key" => "me",
                "cards" => vec![card(3, "clubs"), card(16, "joker")],
                "shape" => obj! { "kind" => "mixed", "count" => 2, "suit" => "mixed" },
            }),
            "you play 2 cards: 3♣ BJ"
        );
        // A follow of one class classifies as a throw: it is not called one.
        assert_eq!(
            say(obj! {
                "kind" => "upgrade_play", "public_key" => "c",
                "cards" => vec![card(4, "hearts"), card(8, "hearts")],
                "shape" => obj! { "kind" => "throw", "count" => 2, "suit" => "hearts", "pair_count" => 0 },
            }),
            "<c> plays 2 ♥ cards: 4♥ 8♥"
        );
        assert_eq!(
            say(obj! {
                "kind" => "upgrade_trick_won", "winner" => "me", "team" => "team0", "points" => 15, "trick_number" => 4,
            }),
            "you win trick 4 for team 0 (+15 points)"
        );
        assert_eq!(
            say(obj! {
                "kind" => "upgrade_hand_complete", "defender_points" => 90, "kitty_points" => 10,
                "kitty_multiplier" => 2, "kitty_award" => 20, "controlling_team" => "team1", "level_steps" => 1,
                "levels" => obj! { "team0" => 2, "team1" => 3 },
            }),
            "hand over: the defenders took 90 points (the kitty's 10 ×2: 20); team 1 goes up 1 level to 3"
        );
        assert_eq!(
            say(obj! {
                "kind" => "upgrade_match_complete", "winner" => "team0",
                "levels" => obj! { "team0" => 14, "team1" => 9 },
            }),
            "team 0 wins the match at level A"
        );
        assert_eq!(
            say(obj! { "kind" => "upgrade_hand_started", "hand_number" => 2, "starter" => "me" }),
            "hand 2 is dealt: you are the starter"
        );
        assert_eq!(
            say(obj! {
                "kind" => "upgrade_hand_restarted_after_leader_change", "hand_number" => 3,
                "old_leader" => "x", "new_leader" => "y",
            }),
            "the leader changed: hand 3 is dealt again"
        );
        assert_eq!(
            say(obj! { "kind" => "member_rejoined", "public_key" => "a" }),
            "<a> is back"
        );
        // Odd fields never panic.
        for odd in [
            obj! { "kind" => "upgrade_play", "cards" => 3, "shape" => "x" },
            obj! { "kind" => "declare_trump", "cards" => vec![Value::Null] },
            obj! { "kind" => "upgrade_hand_complete", "levels" => 7 },
            obj! { "kind" => "upgrade_match_complete", "winner" => 5 },
        ] {
            say(odd);
        }
    }

    #[test]
    fn fit_cuts_spans_at_the_width() {
        let line = fit(
            vec![Span::raw("abcd"), Span::raw("efgh"), Span::raw("ij")],
            6,
        );
        let text: String = line.spans.iter().map(|s| s.content.to_string()).collect();
        assert_eq!(text, "abcde…");
        assert_eq!(fit(vec![Span::raw("ab")], 6).spans.len(), 1);
    }
}
