//! classical-mahjong-v1's part of a table view: the dealer, the tiles left in
//! the wall, every seat's wind, open melds and discards (its river, the
//! newest last), the last discard and who made it, the claim window (how
//! many of the three other seats have answered, whether this seat may and
//! what it answered), the last hand's result, and this seat's concealed
//! tiles with the one it has just drawn. The hand number is the view's
//! `round`, a seat's wind its `role`, its points its `score`.
//!
//! Tiles are not rank/suit cards: they keep their own type ([`Tile`]) and
//! are written as players read them, one compact notation throughout:
//! `1m`–`9m` characters (萬), `1p`–`9p` dots (筒), `1s`–`9s` bamboo (條),
//! the winds `東 南 西 北` and the dragons `中 發 白` (every tile two cells
//! wide); a meld as one word (`123m`, `555p`, `東東東東`).
//!
//! Your hand is sorted as players hold it (characters, dots, bamboo, winds,
//! dragons; by rank within a suit), the tile just drawn kept apart at the
//! end. The hand also fills the common [`TableView::hand`] (as [`Card`]s
//! whose `rank` is the tile's label and `value` its face, in the same
//! order) so the console's picker works on it. The view does not say
//! whether the seat to move has just drawn or just claimed a pung or a
//! chow (then it has drawn nothing); the events of the frame the view is
//! of do ([`TableView::parse_at`]: a draw or a replacement draw of this
//! seat, its pung or chow, a hand dealt to it as the dealer). Without them
//! the newest tile is taken for drawn unless the seat's newest meld is such
//! a claim.

use super::*;
use crate::protocols::tables::mahjong::tiles;

/// Discards or melds of one seat read at most.
const MAX_TILES: usize = 160;

/// One tile as the view names it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tile {
    pub card_id: String,
    /// The face's code: `1m`…`9s`, `east`…`north`, `red`, `green`, `white`.
    pub code: String,
    /// The face's index in the catalog (0–33), `None` for an unknown code.
    pub face: Option<usize>,
}

/// The label of a face code: `5p`, `東`, `中`; an unknown code cut short.
pub fn tile_label(code: &str) -> String {
    match code {
        "east" => "東".to_owned(),
        "south" => "南".to_owned(),
        "west" => "西".to_owned(),
        "north" => "北".to_owned(),
        "red" => "中".to_owned(),
        "green" => "發".to_owned(),
        "white" => "白".to_owned(),
        c if tiles::index_of(c).is_some() => c.to_owned(),
        "" => "??".to_owned(),
        c => c.chars().take(2).collect(),
    }
}

/// The seat wind's character (`東` for `east`), else the word.
pub fn wind_label(wind: &str) -> String {
    match wind {
        "east" | "south" | "west" | "north" => tile_label(wind),
        w => w.to_owned(),
    }
}

impl Tile {
    pub fn parse(v: &Value) -> Option<Tile> {
        let o = v.as_object()?;
        let code = text(o.get("code"));
        Some(Tile {
            card_id: text(o.get("card_id")),
            face: tiles::index_of(&code),
            code,
        })
    }

    /// `5p`, `東`.
    pub fn label(&self) -> String {
        tile_label(&self.code)
    }

    /// 0 characters, 1 dots, 2 bamboo, 3 winds, 4 dragons, 5 unknown: how
    /// a hand is grouped.
    pub fn group(&self) -> usize {
        match self.face {
            Some(f) if f < 27 => f / 9,
            Some(f) if f < 31 => 3,
            Some(_) => 4,
            None => 5,
        }
    }

    /// The rank of a numbered tile (1–9).
    pub fn rank(&self) -> Option<usize> {
        self.face.filter(|f| *f < 27).map(|f| f % 9 + 1)
    }

    /// The tile as the picker's card: `rank` its label, `value` its face
    /// (unknown faces last), `suit` its group's name.
    pub fn card(&self) -> Card {
        let suit = ["characters", "dots", "bamboo", "wind", "dragon", "unknown"][self.group()];
        Card {
            rank: self.label(),
            value: self.face.map_or(99, |f| f as i64),
            suit: suit.to_owned(),
            card_id: self.card_id.clone(),
            copy: 0,
        }
    }

    fn order(&self) -> (usize, &str, &str) {
        (self.face.unwrap_or(usize::MAX), &self.code, &self.card_id)
    }
}

/// Sorts tiles as players hold them (catalog order: characters, dots,
/// bamboo by rank, the winds, the dragons; unknown faces last).
pub fn sort_tiles(t: &mut [Tile]) {
    t.sort_by(|a, b| a.order().cmp(&b.order()));
}

/// Tiles of one meld or claim as one word: `123m`, `555p`, `東東東`; tiles
/// of different suits each with its own letter.
pub fn meld_label(t: &[Tile]) -> String {
    let mut sorted = t.to_vec();
    sort_tiles(&mut sorted);
    let mut out = String::new();
    for (i, tile) in sorted.iter().enumerate() {
        match tile.rank() {
            Some(r) => {
                out.push_str(&r.to_string());
                let next_same = sorted
                    .get(i + 1)
                    .is_some_and(|n| n.rank().is_some() && n.group() == tile.group());
                if !next_same {
                    out.push_str(&tile.code[1..]);
                }
            }
            None => out.push_str(&tile.label()),
        }
    }
    out
}

/// `5p 5p 東`: tiles one by one.
pub fn tile_labels(t: &[Tile]) -> String {
    t.iter().map(Tile::label).collect::<Vec<_>>().join(" ")
}

/// A declared meld.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Meld {
    /// `pung`, `kong`, `chow` (open, claimed) or `concealed_kong`.
    pub kind: String,
    pub owner: String,
    /// The seat whose discard it claimed (empty for a concealed kong).
    pub from: String,
    /// Sorted.
    pub tiles: Vec<Tile>,
}

impl Meld {
    pub fn parse(v: &Value) -> Option<Meld> {
        let o = v.as_object()?;
        let mut tiles = tile_list(o.get("cards"));
        sort_tiles(&mut tiles);
        Some(Meld {
            kind: text(o.get("kind")),
            owner: text(o.get("owner")),
            from: text(o.get("from")),
            tiles,
        })
    }

    /// `555p`; a concealed kong in parentheses, `(東東東東)`.
    pub fn label(&self) -> String {
        let word = meld_label(&self.tiles);
        if self.kind == "concealed_kong" {
            format!("({word})")
        } else {
            word
        }
    }

    /// A pung or chow taken from a discard (its owner discards next,
    /// drawing nothing).
    pub fn claimed_without_draw(&self) -> bool {
        matches!(self.kind.as_str(), "pung" | "chow")
    }
}

/// One seat's side of the table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MahjongSeat {
    pub public_key: String,
    /// `east`, `south`, `west`, `north`.
    pub wind: String,
    pub melds: Vec<Meld>,
    /// Its discards still on the table, the newest last (a claimed one
    /// leaves the river for the claimant's meld).
    pub river: Vec<Tile>,
}

/// The open claim window after a discard.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClaimWindow {
    pub tile: Tile,
    /// Who discarded it, and its seat.
    pub by: String,
    pub seat: Option<i64>,
    /// Answers in, of how many (the three other seats).
    pub answered: i64,
    pub required: i64,
    /// This seat is one of those asked.
    pub may_claim: bool,
    /// This seat's answer, once sent (`pass_claim`, `win`, `pung`, …).
    pub my_claim: Option<String>,
}

impl ClaimWindow {
    /// May this seat still answer?
    pub fn to_answer(&self) -> bool {
        self.may_claim && self.my_claim.is_none()
    }
}

/// How the last hand ended (`last_result`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MahjongResult {
    /// `self_draw`, `discard_win` or `wall_exhausted`.
    pub kind: String,
    pub winner: String,
    pub discarder: String,
    /// `standard`, `seven_pairs`, `thirteen_orphans`.
    pub win_kind: String,
    /// The scoring patterns and their points, in the rules' order.
    pub patterns: Vec<(String, i64)>,
    pub points: i64,
    /// What each seat gained or paid, by public key.
    pub delta: Vec<(String, i64)>,
}

impl MahjongResult {
    pub fn parse(v: &Value) -> Option<MahjongResult> {
        let o = v.as_object()?;
        let patterns = o
            .get("patterns")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(MAX_ENTRIES)
            .filter_map(|p| Some((text(p.get("code")), int(p.get("points"))?)))
            .collect();
        let delta = o
            .get("score_delta")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.iter())
            .take(MAX_SEATS)
            .filter_map(|(k, d)| Some((k.to_owned(), int(Some(d))?)))
            .collect();
        Some(MahjongResult {
            kind: text(o.get("kind")),
            winner: text(o.get("winner")),
            discarder: text(o.get("discarder")),
            win_kind: text(o.get("win_kind")),
            patterns,
            points: int(o.get("points")).unwrap_or(0),
            delta,
        })
    }
}

/// What classical-mahjong-v1 adds to a table (the hand number is the
/// view's `round`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mahjong {
    pub dealer: String,
    /// Tiles left in the wall.
    pub wall: i64,
    /// Every seat, in seat order.
    pub seats: Vec<MahjongSeat>,
    /// This seat's concealed tiles, sorted, the drawn one last.
    pub hand: Vec<Tile>,
    /// The id of the tile just drawn (on this seat's turn).
    pub drawn: Option<String>,
    pub window: Option<ClaimWindow>,
    pub last_result: Option<MahjongResult>,
    /// This seat's wind.
    pub wind: String,
}

impl Mahjong {
    pub fn seat(&self, pk: &str) -> Option<&MahjongSeat> {
        self.seats.iter().find(|s| s.public_key == pk)
    }

    /// The tile of this seat's hand with this id.
    pub fn tile(&self, id: &str) -> Option<&Tile> {
        self.hand.iter().find(|t| t.card_id == id)
    }

    /// The hand's tiles these ids name, in hand order.
    pub fn tiles_of(&self, ids: &[&str]) -> Vec<Tile> {
        self.hand
            .iter()
            .filter(|t| ids.contains(&t.card_id.as_str()))
            .cloned()
            .collect()
    }

    /// May this seat answer the open window now?
    pub fn to_answer(&self) -> bool {
        self.window.as_ref().is_some_and(ClaimWindow::to_answer)
    }
}

fn tile_list(v: Option<&Value>) -> Vec<Tile> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().take(MAX_TILES).filter_map(Tile::parse).collect())
        .unwrap_or_default()
}

/// How this seat's turn began, as the frame's events tell: `Some(true)`
/// with a draw (a hand dealt to it as the dealer, a draw, a replacement
/// draw), `Some(false)` with a pung or chow it claimed; `None` when they
/// do not say.
fn drew_by_events(events: &[Value], me: &str) -> Option<bool> {
    for e in events.iter().rev().take(MAX_ENTRIES) {
        let field = |k: &str| e.get_str(k).unwrap_or_default();
        match field("kind") {
            "mahjong_draw" | "replacement_draw" if field("public_key") == me => return Some(true),
            "pung" | "chow" if field("owner") == me => return Some(false),
            "mahjong_hand_started" => return Some(field("dealer") == me),
            _ => {}
        }
    }
    None
}

pub(super) fn mahjong(alias: &str, v: &Map, events: &[Value]) -> Result<TableView, String> {
    let players = v.get("players").and_then(Value::as_object);
    let scores = v.get("scores").and_then(Value::as_object);
    let seats = seats_of(v, &|s, p| {
        s.role = p.map(|p| text(p.get("wind"))).unwrap_or_default();
        s.score = scores.and_then(|m| int(m.get(&s.public_key)));
    })?;
    let per = |k: &str| v.get(k).and_then(Value::as_object);
    let (melds, rivers) = (per("melds"), per("rivers"));
    let table: Vec<MahjongSeat> = seats
        .iter()
        .map(|s| {
            let pk = &s.public_key;
            MahjongSeat {
                public_key: pk.clone(),
                wind: players
                    .and_then(|p| p.get(pk))
                    .map(|p| text(p.get("wind")))
                    .unwrap_or_default(),
                melds: melds
                    .and_then(|m| m.get(pk))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .take(MAX_ENTRIES)
                    .filter_map(Meld::parse)
                    .collect(),
                river: tile_list(rivers.and_then(|r| r.get(pk))),
            }
        })
        .collect();
    let you = v.get("you").and_then(Value::as_object);
    let me = you.map(|y| text(y.get("public_key"))).unwrap_or_default();
    let phase = text(v.get("phase"));
    // The hand as dealt and drawn: the newest tile is the last.
    let mut hand = tile_list(v.get("my_hand"));
    let newest_meld_claimed = table
        .iter()
        .find(|s| s.public_key == me)
        .and_then(|s| s.melds.last())
        .is_some_and(Meld::claimed_without_draw);
    let drew = drew_by_events(events, &me).unwrap_or(!newest_meld_claimed);
    let drawn = if phase == "discard"
        && !me.is_empty()
        && text(v.get("current_player")) == me
        && hand.len() % 3 == 2
        && drew
    {
        hand.pop()
    } else {
        None
    };
    sort_tiles(&mut hand);
    let drawn_id = drawn.as_ref().map(|t| t.card_id.clone());
    hand.extend(drawn);
    let window = match v.get("last_discard") {
        Some(Value::Object(d)) if phase == "claim" => Some(ClaimWindow {
            tile: d.get("card").and_then(Tile::parse).unwrap_or_default(),
            by: text(d.get("public_key")),
            seat: int(d.get("seat")),
            answered: int(v.get("claim_response_count")).unwrap_or(0),
            required: int(v.get("claim_required_count")).unwrap_or(0),
            may_claim: you.and_then(|y| y.get("may_claim")) == Some(&Value::Bool(true)),
            my_claim: v
                .get("my_claim")
                .filter(|c| !c.is_null())
                .map(|c| match c.get("kind") {
                    Some(k) => text(Some(k)),
                    None => text(Some(c)),
                }),
        }),
        _ => None,
    };
    let game = Mahjong {
        dealer: text(v.get("dealer")),
        wall: int(v.get("wall_count")).unwrap_or(0),
        seats: table,
        drawn: drawn_id,
        window,
        last_result: v.get("last_result").and_then(MahjongResult::parse),
        wind: you.map(|y| text(y.get("wind"))).unwrap_or_default(),
        hand,
    };
    let cards = game.hand.iter().map(Tile::card).collect();
    Ok(common(
        alias,
        v,
        "hand_number",
        seats,
        cards,
        Game::Mahjong(game),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{dealt, members};
    use super::*;

    const ALIAS: &str = "classical-mahjong-v1";

    fn labels(ids: &[Tile]) -> Vec<String> {
        ids.iter().map(Tile::label).collect()
    }

    #[test]
    fn tiles_read_as_players_write_them() {
        let t = |code: &str| Tile {
            card_id: code.into(),
            code: code.into(),
            face: tiles::index_of(code),
        };
        assert_eq!(t("5p").label(), "5p");
        assert_eq!(t("east").label(), "東");
        assert_eq!(t("red").label(), "中");
        assert_eq!(t("green").label(), "發");
        assert_eq!(t("white").label(), "白");
        assert_eq!(t("zzz").label(), "zz");
        assert_eq!(tile_label(""), "??");
        assert_eq!(meld_label(&[t("3m"), t("1m"), t("2m")]), "123m");
        assert_eq!(meld_label(&[t("5p"), t("5p"), t("5p")]), "555p");
        assert_eq!(meld_label(&[t("north"), t("north"), t("north")]), "北北北");
        assert_eq!(meld_label(&[t("9s"), t("1m"), t("east")]), "1m9s東");
        let mut hand = vec![t("white"), t("1s"), t("east"), t("9m"), t("2p"), t("1m")];
        sort_tiles(&mut hand);
        assert_eq!(labels(&hand), ["1m", "9m", "2p", "1s", "東", "白"]);
        let groups: Vec<usize> = hand.iter().map(Tile::group).collect();
        assert_eq!(groups, [0, 0, 1, 2, 3, 4]);
        let c = t("east").card();
        assert_eq!(
            (c.label(), c.value, c.suit.as_str()),
            ("東".into(), 27, "wind")
        );
        assert_eq!(t("7s").card().label(), "7s");
        assert_eq!(wind_label("south"), "南");
        assert_eq!(wind_label("up"), "up");
    }

    #[test]
    fn a_dealt_hand_the_dealer_moves_with_a_drawn_tile_then_a_claim_window() {
        let (mut rules, state) = dealt(ALIAS);
        let view = |r: &mut Box<dyn crate::protocols::tables::Table>, s: &Value, n: usize| {
            r.view(s, &members()[n]).unwrap()
        };
        let v0 = view(&mut rules, &state, 0);
        let t = TableView::parse(ALIAS, &v0).unwrap();
        let m = t.mahjong().unwrap();
        assert_eq!(t.round, Some(1));
        assert_eq!(t.phase, "discard");
        assert!(t.your_turn());
        assert_eq!(t.seats.len(), 4);
        assert_eq!(t.seats[0].role, "east");
        assert_eq!(t.seats[0].score, Some(25000));
        assert_eq!(t.seats[0].cards_left, Some(14));
        assert_eq!(t.seats[1].cards_left, Some(13));
        assert_eq!(m.dealer, "pk0");
        assert_eq!(m.wall, 136 - 53);
        assert_eq!(m.wind, "east");
        assert!(m.window.is_none());
        // The 14th tile is the one drawn: last, the rest sorted.
        assert_eq!(m.hand.len(), 14);
        let raw_last = v0.get("my_hand").and_then(Value::as_array).unwrap()[13]
            .get_str("card_id")
            .unwrap()
            .to_owned();
        assert_eq!(m.drawn.as_deref(), Some(raw_last.as_str()));
        assert_eq!(m.hand[13].card_id, raw_last);
        let faces: Vec<usize> = m.hand[..13].iter().map(|t| t.face.unwrap()).collect();
        assert!(faces.windows(2).all(|w| w[0] <= w[1]), "{faces:?}");
        // The picker's cards are the same tiles, in the same order.
        let ids: Vec<&str> = t.hand.iter().map(|c| c.card_id.as_str()).collect();
        let tids: Vec<&str> = m.hand.iter().map(|t| t.card_id.as_str()).collect();
        assert_eq!(ids, tids);
        // Another seat: not its turn, nothing drawn, the hand sorted.
        let t1 = TableView::parse(ALIAS, &view(&mut rules, &state, 1)).unwrap();
        assert!(!t1.your_turn());
        assert!(t1.mahjong().unwrap().drawn.is_none());

        // The dealer discards: a claim window for the three others.
        let discard = rules.bot_action(&v0).unwrap();
        let out = rules.handle(state, &members()[0], &discard).unwrap();
        let s = out.get("state").cloned().unwrap();
        let t0 = TableView::parse(ALIAS, &view(&mut rules, &s, 0)).unwrap();
        let w = t0.mahjong().unwrap().window.clone().unwrap();
        assert_eq!((w.by.as_str(), w.seat), ("pk0", Some(0)));
        assert_eq!((w.answered, w.required), (0, 3));
        assert!(
            !w.may_claim && !t0.your_turn(),
            "the discarder does not answer"
        );
        assert_eq!(t0.mahjong().unwrap().seat("pk0").unwrap().river.len(), 1);
        assert_eq!(
            t0.mahjong().unwrap().seat("pk0").unwrap().river[0].card_id,
            discard.get_str("card_id").unwrap()
        );
        let t2 = TableView::parse(ALIAS, &view(&mut rules, &s, 2)).unwrap();
        assert!(t2.your_turn() && t2.mahjong().unwrap().to_answer());
        // Seat 2 passes: it has answered, no longer its turn.
        let pass = Value::Object(crate::obj! { "kind" => "pass_claim" });
        let out = rules.handle(s, &members()[2], &pass).unwrap();
        let s = out.get("state").cloned().unwrap();
        let t2 = TableView::parse(ALIAS, &view(&mut rules, &s, 2)).unwrap();
        let w = t2.mahjong().unwrap().window.clone().unwrap();
        assert_eq!(w.my_claim.as_deref(), Some("pass_claim"));
        assert_eq!(w.answered, 1);
        assert!(!t2.your_turn());
        assert!(
            TableView::parse(ALIAS, &view(&mut rules, &s, 3))
                .unwrap()
                .your_turn()
        );
    }

    #[test]
    fn melds_results_and_a_claim_without_a_draw_read_from_a_view() {
        let v = crate::json::parse_str(
            r#"{"phase":"discard","hand_number":2,"current_player":"a","dealer":"b","wall_count":40,
            "players":{"a":{"seat":0,"wind":"east"},"b":{"seat":1,"wind":"south"}},
            "scores":{"a":24990,"b":25010},"hand_counts":{"a":11,"b":13},
            "my_hand":[{"card_id":"x1","code":"9s"},{"card_id":"x2","code":"1m"},{"card_id":"x3","code":"white"},
              {"card_id":"x4","code":"2m"},{"card_id":"x5","code":"3m"},{"card_id":"x6","code":"east"},
              {"card_id":"x7","code":"4p"},{"card_id":"x8","code":"5p"},{"card_id":"x9","code":"6p"},
              {"card_id":"x10","code":"7s"},{"card_id":"x11","code":"8s"}],
            "melds":{"a":[{"kind":"pung","owner":"a","from":"b","cards":[{"card_id":"p1","code":"5s"},{"card_id":"p2","code":"5s"},{"card_id":"p3","code":"5s"}]}]},
            "rivers":{"a":[],"b":[{"card_id":"r1","code":"north"}]},
            "last_discard":null,
            "last_result":{"kind":"discard_win","winner":"b","discarder":"a","win_kind":"standard",
              "patterns":[{"code":"winning_hand","points":1},{"code":"all_simples","points":1}],"points":2,
              "score_delta":{"a":-6,"b":6}},
            "you":{"public_key":"a","seat":0,"wind":"east","may_claim":false}}"#,
        )
        .unwrap();
        let t = TableView::parse(ALIAS, &v).unwrap();
        let m = t.mahjong().unwrap();
        assert_eq!(t.round, Some(2));
        assert!(t.your_turn());
        // Just claimed a pung: nothing drawn, the whole hand sorted.
        assert!(m.drawn.is_none());
        assert_eq!(
            labels(&m.hand),
            [
                "1m", "2m", "3m", "4p", "5p", "6p", "7s", "8s", "9s", "東", "白"
            ]
        );
        assert_eq!(m.seat("a").unwrap().melds[0].label(), "555s");
        assert_eq!(m.seat("a").unwrap().melds[0].from, "b");
        assert_eq!(labels(&m.seat("b").unwrap().river), ["北"]);
        let r = m.last_result.as_ref().unwrap();
        assert_eq!((r.winner.as_str(), r.points), ("b", 2));
        assert_eq!(r.patterns[1], ("all_simples".to_owned(), 1));
        assert!(r.delta.contains(&("a".to_owned(), -6)));
        assert_eq!(t.seats[1].score, Some(25010));
        assert_eq!(m.tiles_of(&["x3", "x1"]).len(), 2);
        // The frame's events tell a draw since (the newest tile apart)…
        let ev = |kind: &str, key: &str| Value::Object(crate::obj! { "kind" => kind, key => "a" });
        let drew = TableView::parse_at(ALIAS, &v, &[ev("mahjong_draw", "public_key")]).unwrap();
        let m = drew.mahjong().unwrap();
        assert_eq!(m.drawn.as_deref(), Some("x11"));
        assert_eq!(drew.hand.last().unwrap().card_id, "x11");
        // …or the claim, or another seat's draw that says nothing of it.
        let claimed = TableView::parse_at(ALIAS, &v, &[ev("pung", "owner")]).unwrap();
        assert!(claimed.mahjong().unwrap().drawn.is_none());
        let other = Value::Object(crate::obj! { "kind" => "mahjong_draw", "public_key" => "b" });
        let t = TableView::parse_at(ALIAS, &v, &[other]).unwrap();
        assert!(t.mahjong().unwrap().drawn.is_none());
        assert_eq!(m.tile("x6").unwrap().label(), "東");
    }

    #[test]
    fn odd_mahjong_views_never_panic() {
        for odd in [
            r#"{}"#,
            r#"{"phase":"claim","last_discard":{"card":7},"you":{"public_key":"a","may_claim":true},"my_claim":{"kind":3}}"#,
            r#"{"phase":"claim","last_discard":[],"claim_response_count":"2","my_claim":"x"}"#,
            r#"{"phase":"discard","current_player":"a","you":{"public_key":"a"},"my_hand":[{"code":7},{"code":"9z"},{"code":"1m"},null,{"code":"east","card_id":5}]}"#,
            r#"{"melds":{"a":[1,{"cards":"x"},{"cards":[{"code":"1m"},3]}]},"rivers":{"a":{"b":1}},"players":{"a":{"wind":9}}}"#,
            r#"{"last_result":{"patterns":[1,{"code":2,"points":"3"}],"score_delta":{"a":"x","b":1e300}},"scores":[1],"wall_count":-5}"#,
            r#"{"melds":[],"rivers":7,"last_result":5,"you":"a","turn_order":["a",1,"a"]}"#,
        ] {
            let v = crate::json::parse_str(odd).unwrap();
            let t = TableView::parse(ALIAS, &v).unwrap();
            let m = t.mahjong().unwrap();
            for tile in &m.hand {
                let _ = (tile.label(), tile.card(), tile.group());
            }
            for s in &m.seats {
                for meld in &s.melds {
                    let _ = meld.label();
                }
            }
            assert_eq!(t.hand.len(), m.hand.len());
        }
        // An odd claim window: read, nothing to answer without the flag.
        let v = crate::json::parse_str(
            r#"{"phase":"claim","last_discard":{"card":{"code":"5p"},"public_key":"b"},"you":{"public_key":"a","may_claim":"yes"}}"#,
        )
        .unwrap();
        let t = TableView::parse(ALIAS, &v).unwrap();
        assert!(!t.your_turn());
        assert_eq!(
            t.mahjong().unwrap().window.as_ref().unwrap().tile.label(),
            "5p"
        );
    }
}
