//! What a seat at upgrade-tractor-v1 may do, read from its own view, and
//! what its bot does: declare the suit it holds most trumps in, bury its
//! weakest cards, lead tractors, pairs and sure winners, follow the rules
//! (winning a trick cheaply when an opponent holds it, feeding points to a
//! partner that holds it last), and never send an illegal play: every
//! candidate is checked by the same follow rules the hooks apply.

use super::Tractor;
use super::cards::{Ctx, Face, TRUMP};
use super::combos::{self, Lead, Played};
use crate::json::Value;
use crate::obj;
use crate::protocols::tables::Table;
use std::collections::BTreeMap;

/// A card of the viewer's hand: its id and face.
type Card = (String, Face);

/// The parts of a view the bot works from.
struct Seat {
    me: String,
    phase: String,
    hand: Vec<Card>,
    ctx: Ctx,
    view: Value,
}

impl Seat {
    fn of(view: &Value) -> Option<Seat> {
        let me = view.get("you")?.get_str("public_key")?.to_owned();
        let hand = view
            .get("my_hand")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| Some((c.get_str("card_id")?.to_owned(), Face::of(c).ok()?)))
                    .collect()
            })
            .unwrap_or_default();
        Some(Seat {
            me,
            phase: view.get_str("phase").unwrap_or_default().to_owned(),
            hand,
            ctx: Ctx::of(view),
            view: view.clone(),
        })
    }

    /// The viewer's seat, when it may act now (looked at before its hand
    /// is read: most views are of seats waiting for another).
    fn acting(view: &Value) -> Option<Seat> {
        let me = view.get("you")?.get_str("public_key")?;
        let waiting = match view.get_str("phase") {
            Some("declaration") => view
                .get("declarations")
                .is_some_and(|d| d.get(me).is_some()),
            Some("bury" | "playing") => view.get_str("current_player") != Some(me),
            _ => true,
        };
        if waiting {
            return None;
        }
        Seat::of(view).filter(Seat::to_act)
    }

    /// May the viewer act now: declare (once) during the declaration, or
    /// bury and play on its turn.
    fn to_act(&self) -> bool {
        match self.phase.as_str() {
            "declaration" => self
                .view
                .get("declarations")
                .is_none_or(|d| d.get(&self.me).is_none()),
            "bury" | "playing" => self.view.get_str("current_player") == Some(self.me.as_str()),
            _ => false,
        }
    }

    fn standing_strength(&self) -> i64 {
        self.view
            .get("winning_declaration")
            .and_then(|w| w.get("strength"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }

    /// Every declaration that outranks the standing one: (strength, trump
    /// suit, card ids), one per face.
    fn declarations(&self) -> Vec<(i64, Option<&'static str>, Vec<String>)> {
        let standing = self.standing_strength();
        let mut out = Vec::new();
        for (face, ids) in by_face(&self.hand) {
            let level = face.rank == self.ctx.level && !face.is_joker();
            if level {
                out.push((1, Some(face.suit), ids[..1].to_vec()));
            }
            if ids.len() >= 2 {
                let strength = match face.rank {
                    _ if level => 2,
                    super::cards::SMALL_JOKER => 3,
                    super::cards::BIG_JOKER => 4,
                    _ => continue,
                };
                let trump = level.then_some(face.suit);
                out.push((strength, trump, ids[..2].to_vec()));
            }
        }
        out.retain(|(s, _, _)| *s > standing);
        out
    }

    /// The declaration the bot makes, if any: the one whose trump suit it
    /// holds most cards of (no-trump counts its jokers and level cards and
    /// a bonus for the control it gives), the stronger on a tie; none with
    /// fewer than nine.
    fn declaration(&self) -> Option<Value> {
        let score = |trump: Option<&'static str>| {
            let ctx = Ctx::new(self.ctx.level, trump);
            let n = self.hand.iter().filter(|(_, f)| ctx.is_trump(*f)).count() as i64;
            if trump.is_none() { n + 6 } else { n }
        };
        self.declarations()
            .into_iter()
            .map(|(s, t, ids)| ((score(t), s), ids))
            .filter(|((score, _), _)| *score >= 9)
            .max_by_key(|(k, _)| *k)
            .map(|(_, ids)| action("declare_trump", ids))
    }

    /// The ids the declarer may not bury.
    fn protected(&self) -> Vec<String> {
        self.view
            .get("winning_declaration")
            .and_then(|w| w.get("card_ids"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The eight cards the bot buries: the least worth keeping (trumps,
    /// pairs, points and aces are kept; short plain suits go first).
    fn burial(&self) -> Vec<String> {
        let protected = self.protected();
        let faces: Vec<Face> = self.hand.iter().map(|(_, f)| *f).collect();
        let mut suit_len: BTreeMap<&str, i64> = BTreeMap::new();
        for f in &faces {
            *suit_len.entry(self.ctx.class(*f)).or_default() += 1;
        }
        let keep = |f: Face| {
            let paired = faces.iter().filter(|g| **g == f).count() >= 2;
            let mut v = self.ctx.strength(f).1 + 2 * suit_len[self.ctx.class(f)];
            v += if self.ctx.is_trump(f) { 1000 } else { 0 };
            v += if paired { 200 } else { 0 };
            v += f.points() * 10;
            v + if f.rank == 14 { 60 } else { 0 }
        };
        let mut cards: Vec<&Card> = self
            .hand
            .iter()
            .filter(|(id, _)| !protected.contains(id))
            .collect();
        cards.sort_by_key(|(_, f)| keep(*f));
        cards.iter().take(8).map(|(id, _)| id.clone()).collect()
    }

    /// Another legal burial: the first eight cards it may bury, in hand
    /// order.
    fn plain_burial(&self) -> Vec<String> {
        let protected = self.protected();
        self.hand
            .iter()
            .filter(|(id, _)| !protected.contains(id))
            .take(8)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The trick so far: its plays and their public keys.
    fn trick(&self) -> Vec<(String, Played)> {
        self.view
            .get("current_trick")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(|p| {
                        Some((p.get_str("public_key")?.to_owned(), Played::of(p).ok()?))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn lead(&self) -> Option<Value> {
        self.view
            .get("current_trick")
            .and_then(Value::as_array)
            .and_then(|t| t.first())
            .map(|p| p.get("shape").cloned().unwrap_or(Value::Null))
    }

    fn faces(&self, pick: &[usize]) -> Vec<Face> {
        pick.iter().map(|i| self.hand[*i].1).collect()
    }

    fn ids(&self, pick: &[usize]) -> Vec<String> {
        pick.iter().map(|i| self.hand[*i].0.clone()).collect()
    }

    /// Is `pick` (indices into the hand) a legal play now?
    fn legal(&self, pick: &[usize]) -> bool {
        let faces = self.faces(pick);
        match self.lead() {
            None => combos::classify(&faces, &self.ctx).is_ok(),
            Some(lead) => {
                let hand: Vec<Face> = self.hand.iter().map(|(_, f)| *f).collect();
                combos::validate_follow(&hand, &faces, &lead, &self.ctx).is_ok()
            }
        }
    }

    /// Candidate plays (indices into the hand), each legal, none twice.
    fn plays(&self) -> Vec<Vec<usize>> {
        let raw = match self.lead().map(|l| Lead::of(&l)) {
            None => lead_candidates(&self.hand, &self.ctx),
            Some(Ok(lead)) => self.follow_candidates(&lead),
            Some(Err(_)) => Vec::new(),
        };
        let mut seen = std::collections::HashSet::new();
        raw.into_iter()
            .map(|mut p| {
                p.sort_unstable();
                p
            })
            .filter(|p| seen.insert(p.clone()) && self.legal(p))
            .collect()
    }

    /// Follows to `lead` built by preference: the lowest cards, the
    /// highest, the most points, and ruffs with trumps when void.
    fn follow_candidates(&self, lead: &Lead) -> Vec<Vec<usize>> {
        let ctx = &self.ctx;
        let class: Vec<usize> = (0..self.hand.len())
            .filter(|i| ctx.class(self.hand[*i].1) == lead.suit)
            .collect();
        let others: Vec<usize> = (0..self.hand.len())
            .filter(|i| ctx.class(self.hand[*i].1) != lead.suit)
            .collect();
        let mut out = Vec::new();
        if class.len() >= lead.count {
            for pref in [Pref::Low, Pref::High, Pref::Points] {
                out.extend(build(&self.hand, &class, lead, lead.suit, pref, ctx));
            }
            return out;
        }
        let need = lead.count - class.len();
        for pref in [Pref::Low, Pref::Points, Pref::High] {
            let fill = order(&self.hand, &others, pref, ctx);
            out.push([class.clone(), fill[..need.min(fill.len())].to_vec()].concat());
        }
        let trumps: Vec<usize> = others
            .iter()
            .copied()
            .filter(|i| ctx.is_trump(self.hand[*i].1))
            .collect();
        if class.is_empty() && lead.suit != TRUMP && trumps.len() >= lead.count {
            for pref in [Pref::Low, Pref::High] {
                out.extend(build(&self.hand, &trumps, lead, TRUMP, pref, ctx));
            }
        }
        out
    }

    /// The bot's play: a lead by its plan, or the cheapest follow that
    /// takes a trick an opponent holds (else the cheapest at all), giving
    /// points to a partner that holds the trick as the last to play.
    fn play(&self) -> Option<Vec<usize>> {
        let plays = self.plays();
        let trick = self.trick();
        if trick.is_empty() {
            return self.lead_choice(&plays);
        }
        let my_team = self.view.get("you")?.get_str("team")?.to_owned();
        let team_of = |pk: &str| {
            self.view
                .get("players")
                .and_then(|p| p.get(pk))
                .and_then(|p| p.get_str("team"))
                .unwrap_or_default()
                .to_owned()
        };
        let played: Vec<Played> = trick.iter().map(|(_, p)| p.clone()).collect();
        let holder = combos::trick_winner(&played, &self.ctx);
        let partner_holds = team_of(&trick[holder].0) == my_team;
        let cost = |p: &[usize]| -> i64 {
            self.faces(p)
                .iter()
                .map(|f| {
                    let (t, s) = self.ctx.strength(*f);
                    t * 60 + s.min(60) + f.points() * 4
                })
                .sum()
        };
        let points = |p: &[usize]| -> i64 { self.faces(p).iter().map(|f| f.points()).sum() };
        if partner_holds {
            if trick.len() == 3 {
                return plays.iter().max_by_key(|p| (points(p), -cost(p))).cloned();
            }
            return plays.iter().min_by_key(|p| cost(p)).cloned();
        }
        let wins = |p: &[usize]| {
            let mut t = played.clone();
            let faces = self.faces(p);
            let shape = combos::safe_shape(&faces, &self.ctx);
            t.push(Played {
                faces,
                kind: shape.get_str("kind").unwrap_or_default().to_owned(),
                suit: shape.get_str("suit").unwrap_or_default().to_owned(),
            });
            combos::trick_winner(&t, &self.ctx) == t.len() - 1
        };
        plays
            .iter()
            .filter(|p| wins(p))
            .min_by_key(|p| cost(p))
            .or_else(|| plays.iter().min_by_key(|p| cost(p)))
            .cloned()
    }

    /// A lead: the longest tractor, else the highest plain pair, else a
    /// plain card that is the top of its suit, else the lowest plain card
    /// without points, else the weakest play there is.
    fn lead_choice(&self, plays: &[Vec<usize>]) -> Option<Vec<usize>> {
        let shaped: Vec<(combos::Shape, &Vec<usize>)> = plays
            .iter()
            .filter_map(|p| Some((combos::classify(&self.faces(p), &self.ctx).ok()?, p)))
            .collect();
        let top = |s: &combos::Shape| {
            s.signatures
                .keys()
                .map(|f| self.ctx.strength(*f))
                .max()
                .unwrap_or((0, 0))
        };
        if let Some((_, p)) = shaped
            .iter()
            .filter(|(s, _)| s.kind == "tractor")
            .max_by_key(|(s, _)| (s.count, s.suit != TRUMP, top(s)))
        {
            return Some((*p).clone());
        }
        let plain = |s: &combos::Shape| s.suit != TRUMP;
        if let Some((_, p)) = shaped
            .iter()
            .filter(|(s, _)| s.kind == "pair" && plain(s))
            .max_by_key(|(s, _)| top(s))
        {
            return Some((*p).clone());
        }
        let ace = if self.ctx.level == 14 { 13 } else { 14 };
        let singles = || shaped.iter().filter(|(s, _)| s.kind == "single");
        if let Some((_, p)) = singles().find(|(s, _)| plain(s) && top(s).1 == ace) {
            return Some((*p).clone());
        }
        let no_points = |s: &combos::Shape| s.signatures.keys().all(|f| f.points() == 0);
        singles()
            .filter(|(s, _)| plain(s) && no_points(s))
            .min_by_key(|(s, _)| top(s))
            .or_else(|| singles().min_by_key(|(s, _)| (top(s), 0)))
            .or_else(|| shaped.first())
            .map(|(_, p)| (*p).clone())
    }
}

fn action(kind: &str, ids: Vec<String>) -> Value {
    Value::Object(obj! {
        "kind" => kind, "card_ids" => Value::Array(ids.into_iter().map(Value::from).collect()),
    })
}

/// The hand's ids by face.
fn by_face(hand: &[Card]) -> BTreeMap<Face, Vec<String>> {
    let mut out: BTreeMap<Face, Vec<String>> = BTreeMap::new();
    for (id, f) in hand {
        out.entry(*f).or_default().push(id.clone());
    }
    out
}

/// Indices of `among` by face.
fn index_by_face(hand: &[Card], among: &[usize]) -> BTreeMap<Face, Vec<usize>> {
    let mut out: BTreeMap<Face, Vec<usize>> = BTreeMap::new();
    for i in among {
        out.entry(hand[*i].1).or_default().push(*i);
    }
    out
}

/// Runs of pairs at strictly consecutive positions in `class` (one face
/// per position), each as its faces from low to high.
fn pair_runs(hand: &[Card], among: &[usize], class: &str, ctx: &Ctx) -> Vec<Vec<Face>> {
    let mut at: BTreeMap<i64, Face> = BTreeMap::new();
    for (f, ids) in index_by_face(hand, among) {
        if ids.len() >= 2
            && let Ok(p) = ctx.position(f, class)
        {
            at.entry(p).or_insert(f);
        }
    }
    let mut runs: Vec<Vec<Face>> = Vec::new();
    let mut last: Option<i64> = None;
    for (p, f) in at {
        match (last, runs.last_mut()) {
            (Some(l), Some(run)) if p == l + 1 => run.push(f),
            _ => runs.push(vec![f]),
        }
        last = Some(p);
    }
    runs.retain(|r| r.len() >= 2);
    runs
}

/// Every lead worth offering: each single and pair (one per face), each
/// tractor (whole, and its lowest two pairs), and per class a throw of its
/// two highest faces and one of the whole class.
fn lead_candidates(hand: &[Card], ctx: &Ctx) -> Vec<Vec<usize>> {
    let mut classes: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, f)) in hand.iter().enumerate() {
        classes.entry(ctx.class(*f)).or_default().push(i);
    }
    let mut out = Vec::new();
    for (class, among) in &classes {
        let faces = index_by_face(hand, among);
        for ids in faces.values() {
            out.push(ids[..1].to_vec());
            if ids.len() >= 2 {
                out.push(ids[..2].to_vec());
            }
        }
        for run in pair_runs(hand, among, class, ctx) {
            let pairs = |fs: &[Face]| -> Vec<usize> {
                fs.iter().flat_map(|f| faces[f][..2].to_vec()).collect()
            };
            out.push(pairs(&run));
            if run.len() > 2 {
                out.push(pairs(&run[..2]));
            }
        }
        let mut distinct: Vec<(&Face, &Vec<usize>)> = faces.iter().collect();
        distinct.sort_by_key(|(f, _)| std::cmp::Reverse(ctx.strength(**f)));
        if distinct.len() >= 2 {
            out.push(vec![distinct[0].1[0], distinct[1].1[0]]);
        }
        if among.len() >= 3 {
            out.push(among.clone());
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pref {
    /// The weakest cards, points last.
    Low,
    /// The strongest cards.
    High,
    /// Point cards first.
    Points,
}

/// `among` in the order `pref` spends them.
fn order(hand: &[Card], among: &[usize], pref: Pref, ctx: &Ctx) -> Vec<usize> {
    let mut v = among.to_vec();
    let key = |i: &usize| {
        let f = hand[*i].1;
        let s = ctx.strength(f);
        match pref {
            Pref::Low => (f.points(), s.0, s.1),
            Pref::High => (0, -s.0, -s.1),
            Pref::Points => (-f.points(), s.0, s.1),
        }
    };
    v.sort_by_key(key);
    v
}

/// A follow of `lead.count` cards from `among` (cards of `class`, at least
/// that many): a tractor of the lead's length when the lead is one and
/// `among` has one, else as many pairs as the lead has (or `among` can
/// give), then single cards, each picked in the order of `pref`.
fn build(
    hand: &[Card],
    among: &[usize],
    lead: &Lead,
    class: &str,
    pref: Pref,
    ctx: &Ctx,
) -> Option<Vec<usize>> {
    let n = lead.count;
    if among.len() < n {
        return None;
    }
    let faces = index_by_face(hand, among);
    if lead.kind == "tractor" {
        let len = usize::try_from(lead.tractor_length).unwrap_or(0);
        let mut windows: Vec<Vec<Face>> = pair_runs(hand, among, class, ctx)
            .iter()
            .flat_map(|r| {
                r.windows(len.max(1))
                    .map(<[Face]>::to_vec)
                    .collect::<Vec<_>>()
            })
            .filter(|w| w.len() == len && 2 * len == n)
            .collect();
        if pref == Pref::High {
            windows.reverse();
        }
        if let Some(w) = windows.first() {
            return Some(w.iter().flat_map(|f| faces[f][..2].to_vec()).collect());
        }
    }
    let mut pair_faces: Vec<&Face> = faces
        .iter()
        .filter(|(_, ids)| ids.len() >= 2)
        .map(|(f, _)| f)
        .collect();
    pair_faces.sort_by_key(|f| {
        let s = ctx.strength(**f);
        match pref {
            Pref::Low => (f.points(), s.0, s.1),
            Pref::High => (0, -s.0, -s.1),
            Pref::Points => (-f.points(), s.0, s.1),
        }
    });
    let owed = usize::try_from(lead.pair_count.max(0)).unwrap_or(0);
    let k = owed.min(pair_faces.len()).min(n / 2);
    let mut pick: Vec<usize> = pair_faces[..k]
        .iter()
        .flat_map(|f| faces[*f][..2].to_vec())
        .collect();
    // Singles next: cards that break no pair first (when saving cards).
    let rest: Vec<usize> = order(hand, among, pref, ctx)
        .into_iter()
        .filter(|i| !pick.contains(i))
        .collect();
    let (loose, paired): (Vec<usize>, Vec<usize>) = rest
        .iter()
        .partition(|i| faces[&hand[**i].1].len() < 2 || pref == Pref::High);
    pick.extend(loose.into_iter().chain(paired).take(n - pick.len()));
    (pick.len() == n).then_some(pick)
}

impl Table for Tractor {
    fn legal_actions(&self, view: &Value) -> Vec<Value> {
        let Some(seat) = Seat::acting(view) else {
            return Vec::new();
        };
        match seat.phase.as_str() {
            "declaration" => std::iter::once(Value::Object(obj! { "kind" => "pass_declare" }))
                .chain(
                    seat.declarations()
                        .into_iter()
                        .map(|(_, _, ids)| action("declare_trump", ids)),
                )
                .collect(),
            "bury" => {
                let (a, b) = (seat.burial(), seat.plain_burial());
                let mut out = vec![action("bury", a.clone())];
                let mut sorted = (a, b.clone());
                sorted.0.sort();
                sorted.1.sort();
                if sorted.0 != sorted.1 {
                    out.push(action("bury", b));
                }
                out.retain(|a| {
                    a.get("card_ids").and_then(Value::as_array).map(Vec::len) == Some(8)
                });
                out
            }
            "playing" => seat
                .plays()
                .iter()
                .map(|p| action("play", seat.ids(p)))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn bot_action(&self, view: &Value) -> Option<Value> {
        let seat = Seat::acting(view)?;
        match seat.phase.as_str() {
            "declaration" => Some(
                seat.declaration()
                    .unwrap_or_else(|| Value::Object(obj! { "kind" => "pass_declare" })),
            ),
            "bury" => Some(action("bury", seat.burial())),
            "playing" => seat.play().map(|p| action("play", seat.ids(&p))),
            _ => None,
        }
    }

    fn is_legal_selection(&self, view: &Value, card_ids: &[String]) -> bool {
        let Some(seat) = Seat::acting(view) else {
            return false;
        };
        let unique: std::collections::HashSet<&String> = card_ids.iter().collect();
        let pick: Option<Vec<usize>> = card_ids
            .iter()
            .map(|id| seat.hand.iter().position(|(h, _)| h == id))
            .collect();
        let Some(pick) = pick.filter(|p| !p.is_empty() && unique.len() == p.len()) else {
            return false;
        };
        match seat.phase.as_str() {
            "declaration" => {
                seat.declarations().iter().any(|(_, _, ids)| {
                    let mut a = ids.clone();
                    let mut b = card_ids.to_vec();
                    a.sort();
                    b.sort();
                    a == b
                }) || {
                    // Another copy of the same face declares the same.
                    let faces = seat.faces(&pick);
                    seat.declarations().iter().any(|(_, _, ids)| {
                        let p: Vec<usize> = ids
                            .iter()
                            .filter_map(|id| seat.hand.iter().position(|(h, _)| h == id))
                            .collect();
                        seat.faces(&p) == faces
                    })
                }
            }
            "bury" => pick.len() == 8 && !seat.protected().iter().any(|p| card_ids.contains(p)),
            "playing" => pick.len() <= 25 && seat.legal(&pick),
            _ => false,
        }
    }
}
