//! The attached session when it is a card table (a protocol of
//! `protocols::tables::TABLES` with a view in `session::table`): the seat's
//! typed view, the cards picked in the hand, the table's log (the game's
//! events from details.jsonl, the room's notices from events.jsonl), who
//! sits where (the host's `bots/`), and the actions: a play of the picked
//! cards, a bid, a pass; at hold'em and bridge the legal bets and calls as
//! numbered choices, and bridge's one card (from the dummy's hand when the
//! declarer plays it); at aether sigil every legal action (a card with its
//! target, an attack, ending the turn, conceding) as a numbered choice, and
//! `p` ends the turn; at tractor the declarations (and the pass) as
//! numbered choices, the burial of eight and the plays as picked cards; at
//! mahjong the discard as one picked tile, a win or a concealed kong as
//! numbered choices, and in a claim window the legal claims as numbered
//! choices (or the picked tiles of one). Only what the table's rules allow now is sent
//! (`Table::is_legal_selection`, `Table::legal_actions`); anything else is
//! refused with the reason. An action is queued in the room's
//! `group-actions.jsonl` by a task, exactly as `palaver session action`
//! queues it, and its result comes back as `Report::RoomAction`.

use super::table_state::{
    CHOICE_PAGE, LANDLORD, MAHJONG, TRACTOR, TableNews, TableState, table_alias,
};
use super::{Attached, SessionsView, say};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables;
use crate::session::room::{self, RoomKind};
use crate::session::table::{Card, Play, TableView};
use crate::tui::command::Command;
use crate::tui::effect::{Effects, SessionTask};
use crate::tui::note::Note;
use crate::tui::panes::table::{self as pane, LogEntry};
use std::collections::BTreeMap;

/// What the table calls a player: you, a nickname, else a short key; with
/// the seat.
fn who(v: &TableView, nicks: &BTreeMap<String, String>, pk: &str) -> String {
    if pk == v.you {
        return "you".into();
    }
    let name = match nicks.get(pk) {
        Some(n) if !n.is_empty() => n.clone(),
        _ => room::short_key(pk),
    };
    match v.seat_of(pk).and_then(|s| s.seat) {
        Some(n) => format!("{name} (seat {n})"),
        None => name,
    }
}

/// Tractor's picked cards as a burial or a play, when the rules take them
/// now (`Table::is_legal_selection`); else why not, as a person reads it.
fn tractor_cards(
    t: &TableState,
    v: &TableView,
    options: &Map,
    nicks: &BTreeMap<String, String>,
) -> Result<Value, String> {
    let ids = t.picked_ids();
    if !ids.is_empty()
        && t.rules(options)
            .is_some_and(|r| r.is_legal_selection(&t.raw, &ids))
    {
        let kind = if v.phase == "bury" { "bury" } else { "play" };
        let ids: Vec<Value> = ids.into_iter().map(Value::from).collect();
        return Ok(Value::Object(obj! { "kind" => kind, "card_ids" => ids }));
    }
    let picked: Vec<Card> = v
        .hand
        .iter()
        .filter(|c| t.selected.contains(&c.card_id))
        .cloned()
        .collect();
    let name = |pk: &str| who(v, nicks, pk);
    Err(v.tractor().map_or_else(
        || "the rules offer nothing to send now".to_owned(),
        |g| g.refusal(&v.phase, &v.hand, &picked, &name),
    ))
}

/// Keys at a hold'em, a bridge or an aether sigil table: the numbered
/// choices (bets, calls, sigil's actions) and, in bridge's play, one card
/// of the hand to play. What to send, or why not (`refusal`: why nothing
/// can be sent now).
fn choice_or_card(
    t: &mut TableState,
    v: &TableView,
    c: Command,
    refusal: Option<String>,
    nicks: &BTreeMap<String, String>,
) -> Option<Result<Value, String>> {
    let choosing = !t.choices.is_empty();
    let top = t.choices.len().saturating_sub(1);
    let last = t.hand().len().saturating_sub(1);
    let card_play = v.bridge().is_some() && v.phase == "playing";
    let holdem = v.holdem().is_some();
    let sigil = v.sigil().is_some();
    let tractor = v.tractor().is_some();
    match c {
        Command::Left if choosing => t.choice_cursor = t.choice_cursor.saturating_sub(1),
        Command::Right if choosing => t.choice_cursor = (t.choice_cursor + 1).min(top),
        Command::Up if choosing => t.choice_cursor = t.choice_cursor.saturating_sub(CHOICE_PAGE),
        Command::Down if choosing => t.choice_cursor = (t.choice_cursor + CHOICE_PAGE).min(top),
        Command::Left => t.cursor = t.cursor.saturating_sub(1),
        Command::Right => t.cursor = (t.cursor + 1).min(last),
        Command::Up => t.jump_rank(-1),
        Command::Down => t.jump_rank(1),
        Command::Top => t.cursor = 0,
        Command::Bottom => t.cursor = last,
        Command::SelectCard | Command::SelectGroup if holdem => {
            return Some(Err(
                "hold'em plays no cards: choose an action with its number".into(),
            ));
        }
        Command::SelectCard | Command::SelectGroup if sigil => {
            return Some(Err(
                "a card is played by its numbered choice (with its target)".into(),
            ));
        }
        Command::SelectGroup if tractor => t.toggle_rank(),
        Command::SelectCard | Command::SelectGroup => t.toggle_card(),
        Command::ClearSelection => t.selected.clear(),
        c if c.choice().is_some() => {
            let k = usize::from(c.choice().unwrap_or(1)) - 1;
            let (start, n) = t.choice_page();
            return Some(match refusal {
                Some(why) => Err(why),
                None if k < n => Ok(t.choices[start + k].clone()),
                None if card_play => {
                    Err("the numbers choose a call: play a card with Enter".into())
                }
                None if tractor && n == 0 => {
                    Err("the numbers choose a declaration: pick cards and Enter sends them".into())
                }
                None => Err(format!("there are {n} choices to pick from here")),
            });
        }
        Command::Submit => {
            return Some(match refusal {
                Some(why) => Err(why),
                None if choosing => t
                    .choices
                    .get(t.choice_cursor)
                    .cloned()
                    .ok_or_else(|| "the rules offer no choice now".to_owned()),
                None if card_play => play_card(t, v, nicks),
                None => Err("the rules offer nothing to send now".into()),
            });
        }
        Command::PassTurn => {
            let want = if holdem {
                "check"
            } else if sigil {
                "end_turn"
            } else if tractor {
                "pass_declare"
            } else {
                "pass"
            };
            return Some(match refusal {
                Some(why) => Err(why),
                None => t
                    .choices
                    .iter()
                    .find(|a| a.get_str("kind") == Some(want))
                    .cloned()
                    .ok_or_else(|| {
                        if holdem {
                            "there is a wager to match: call, raise or fold with the numbers"
                                .to_owned()
                        } else if tractor {
                            "only a declaration is passed: now pick cards and Enter sends them"
                                .to_owned()
                        } else {
                            "no call is open now: play a card".to_owned()
                        }
                    }),
            });
        }
        _ => {}
    }
    None
}

/// The card picked (else the one under the cursor) as a bridge play, when
/// the rules take it now.
fn play_card(
    t: &TableState,
    v: &TableView,
    nicks: &BTreeMap<String, String>,
) -> Result<Value, String> {
    let hand = v.pick_hand();
    let card = hand
        .iter()
        .find(|c| t.selected.contains(&c.card_id))
        .or_else(|| hand.get(t.cursor))
        .ok_or("there is no card to play")?;
    let legal = t.legal.iter().find(|a| {
        a.get_str("kind") == Some("play") && a.get_str("card_id") == Some(card.card_id.as_str())
    });
    if let Some(a) = legal {
        return Ok(a.clone());
    }
    let led = v
        .bridge()
        .and_then(|b| b.trick.first())
        .map(|p| (p.card.suit.clone(), p.hand_owner.clone()));
    Err(match led {
        Some((suit, by)) if hand.iter().any(|c| c.suit == suit) => format!(
            "{} does not follow {suit}, which {} led: play a card of {suit}",
            card.label(),
            who(v, nicks, &by)
        ),
        _ => format!("{} does not play now", card.label()),
    })
}

/// Why the rules refuse these cards now, as a person reads it.
fn why_not(t: &TableState, v: &TableView, nicks: &BTreeMap<String, String>) -> String {
    let picked: Vec<Card> = v
        .hand
        .iter()
        .filter(|c| t.selected.contains(&c.card_id))
        .cloned()
        .collect();
    let shown = pane::labels(&picked);
    let Some(l) = v.landlord() else {
        return format!("{shown} does not play now");
    };
    let faces: Vec<Map> = t
        .raw
        .get("my_hand")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_object)
                .filter(|c| {
                    c.get_str("card_id")
                        .is_some_and(|id| t.selected.contains(id))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    match tables::landlord::classify(&faces) {
        Err(_) => format!(
            "{shown} is not a combination: play a single, a pair, a triple (alone, with one card or a pair), \
             a straight of 5+, 3+ pairs in a row, an airplane, four with two, or a bomb"
        ),
        Ok(c) => {
            let mine = Play {
                public_key: v.you.clone(),
                seat: v.you_seat,
                cards: picked,
                kind: c.kind.clone(),
                primary: c.primary,
                length: c.length,
                tier: c.tier,
            };
            match &l.last_play {
                Some(p) if p.tier > 0 => format!(
                    "your {} does not beat {}'s {}: only a bigger bomb does",
                    pane::play_words(&mine),
                    who(v, nicks, &p.public_key),
                    pane::play_words(p)
                ),
                Some(p) => format!(
                    "your {} does not beat {}'s {}: play a higher {} of {} cards, or a bomb",
                    pane::play_words(&mine),
                    who(v, nicks, &p.public_key),
                    pane::play_words(p),
                    p.kind.replace('_', " "),
                    p.cards.len()
                ),
                None => format!("{shown} does not play now"),
            }
        }
    }
}

impl Attached {
    /// This session's table alias, if it is a table the console shows.
    fn table_alias(&self) -> Option<String> {
        self.session
            .get_str("protocol_id")
            .or_else(|| self.snapshot.get_str("protocol_id"))
            .and_then(table_alias)
    }

    fn options(&self) -> Map {
        self.session
            .get("options")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }
}

impl SessionsView {
    /// Is the attached session a table?
    pub fn table(&self) -> Option<&TableState> {
        self.attached.as_ref().and_then(|a| a.table.as_ref())
    }

    /// Takes what a watch update says of a table (after the snapshot and
    /// session.json are in `Attached`).
    pub(super) fn table_watched(&mut self, u: TableNews) {
        let Some(att) = self.attached.as_mut() else {
            return;
        };
        if att.table.is_none() {
            let Some(alias) = att.table_alias() else {
                return;
            };
            att.table = Some(TableState::new(alias));
        }
        let fresh = att
            .table
            .as_ref()
            .is_some_and(|t| t.seq.is_none() && t.log.is_empty());
        let options = att.options();
        let host_side = att.session.get_str("role") == Some("host");
        let Some(t) = att.table.as_mut() else {
            return;
        };
        if u.snapshot || u.session || fresh {
            t.take_snapshot(&att.snapshot, &options);
        }
        if let Some(b) = u.bots {
            t.bots = b;
        }
        t.seat_kinds(&att.snapshot, host_side);
        for d in &u.details {
            if d.get_str("type") != Some("group_frame") {
                continue;
            }
            let time = pane::time_of(d);
            for ev in d
                .get("events")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(ev) = ev.as_object() {
                    t.push_log(LogEntry::Event {
                        time: time.clone(),
                        event: ev.clone(),
                    });
                }
            }
        }
        let nicks = &self.nicks;
        let you = t.view.as_ref().map(|v| v.you.clone()).unwrap_or_default();
        let name = |pk: &str| -> String {
            if pk == you && !you.is_empty() {
                return "you".into();
            }
            match nicks.get(pk) {
                Some(n) if !n.is_empty() => n.clone(),
                _ => room::short_key(pk),
            }
        };
        for ev in &u.events {
            let Some((text, _)) = room::notice_text(ev, RoomKind::Other, &name) else {
                continue;
            };
            let refused = ev.get_str("type") == Some("group_action_receipt");
            if refused && t.sent_at.is_some() {
                // The table said no: the pick stays for another try.
                t.sent_at = None;
                t.note = Some(Note::err(text.clone()));
            }
            t.push_log(LogEntry::Notice {
                time: pane::time_of(ev),
                event: ev.clone(),
            });
        }
    }

    /// Keys on the table.
    pub(super) fn table_command(&mut self, c: Command) -> Effects {
        let mut fx = Effects::new();
        let Some(att) = self.attached.as_mut() else {
            return fx;
        };
        let live = att.room_live();
        let options = att.options();
        let dir = att.key.clone();
        let Some(t) = att.table.as_mut() else {
            return fx;
        };
        let Ok(v) = t.view.clone() else {
            say(&mut fx, false, "the table has not dealt yet");
            return fx;
        };
        let bidding = v.phase == "bidding" && v.your_turn();
        let last = v.hand.len().saturating_sub(1);
        // Why nothing can be sent now, whatever is picked.
        let refusal = if !live {
            Some("this table has ended here: nothing would send it".to_owned())
        } else if v.phase == "completed" {
            Some("the round is over: there is nothing to play".to_owned())
        } else if !v.your_turn() && v.tractor().is_some() && v.phase == "declaration" {
            Some("you have declared: waiting for the others to declare or pass".to_owned())
        } else if !v.your_turn()
            && v.phase == "claim"
            && let Some(m) = v.mahjong()
        {
            Some(mahjong_not_yours(&v, m, &self.nicks))
        } else if !v.your_turn() {
            Some(format!(
                "it is {}'s turn, not yours",
                who(&v, &self.nicks, &v.current)
            ))
        } else if t.waiting() {
            Some("your last action is on its way: waiting for the table".to_owned())
        } else {
            None
        };
        let bid = |b: i64| Value::Object(obj! { "kind" => "bid", "value" => b });
        // What to send, or why not.
        let send: Option<Result<Value, String>> = if t.alias == MAHJONG {
            mahjong_keys(t, &v, c, refusal, &options)
        } else if t.alias == TRACTOR && c == Command::Submit && t.choices.is_empty() {
            Some(match refusal {
                Some(why) => Err(why),
                None => tractor_cards(t, &v, &options, &self.nicks),
            })
        } else if t.alias != LANDLORD {
            choice_or_card(t, &v, c, refusal, &self.nicks)
        } else {
            match c {
                Command::Left if bidding => {
                    t.bid_cursor = t.bid_cursor.saturating_sub(1);
                    None
                }
                Command::Right if bidding => {
                    t.bid_cursor = (t.bid_cursor + 1).min(t.bids.len().saturating_sub(1));
                    None
                }
                Command::Left => {
                    t.cursor = t.cursor.saturating_sub(1);
                    None
                }
                Command::Right => {
                    t.cursor = (t.cursor + 1).min(last);
                    None
                }
                Command::Up => {
                    t.jump_rank(-1);
                    None
                }
                Command::Down => {
                    t.jump_rank(1);
                    None
                }
                Command::Top => {
                    t.cursor = 0;
                    None
                }
                Command::Bottom => {
                    t.cursor = last;
                    None
                }
                Command::SelectCard => {
                    t.toggle_card();
                    None
                }
                Command::SelectGroup => {
                    t.toggle_rank();
                    None
                }
                Command::ClearSelection => {
                    t.selected.clear();
                    None
                }
                c if c.choice().is_some() => {
                    let n = usize::from(c.choice().unwrap_or(1)) - 1;
                    Some(match refusal {
                        Some(why) => Err(why),
                        None if !bidding => Err("no bid is open: the numbers choose a bid".into()),
                        None => t.bids.get(n).map(|b| bid(*b)).ok_or_else(|| {
                            format!("there are {} bids to choose from", t.bids.len())
                        }),
                    })
                }
                Command::Submit => Some(match refusal {
                    Some(why) => Err(why),
                    None if bidding => t
                        .bids
                        .get(t.bid_cursor)
                        .map(|b| bid(*b))
                        .ok_or_else(|| "the rules allow no bid now".to_owned()),
                    None => {
                        let ids = t.picked_ids();
                        if ids.is_empty() {
                            Err("pick cards first (Space picks one, a picks its whole rank)".into())
                        } else if t
                            .rules(&options)
                            .is_some_and(|r| r.is_legal_selection(&t.raw, &ids))
                        {
                            let ids: Vec<Value> = ids.into_iter().map(Value::from).collect();
                            Ok(Value::Object(obj! { "kind" => "play", "card_ids" => ids }))
                        } else {
                            Err(why_not(t, &v, &self.nicks))
                        }
                    }
                }),
                Command::PassTurn => Some(match refusal {
                    Some(why) => Err(why),
                    None if bidding && t.bids.contains(&0) => Ok(bid(0)),
                    None if t.can_pass => Ok(Value::Object(obj! { "kind" => "pass" })),
                    None if v.landlord().is_some_and(|l| l.last_play.is_none()) => Err(
                        "you lead this trick: play any combination (the leader cannot pass)".into(),
                    ),
                    None => Err("the rules allow no pass now".into()),
                }),
                _ => None,
            }
        };
        match send {
            Some(Ok(action)) => {
                t.sent_at = Some(t.seq);
                t.note = Some(Note::ok("sending…"));
                fx.push(SessionTask::RoomAction { dir, action }.into());
            }
            Some(Err(why)) => {
                // In the pane and on the status bar.
                t.note = Some(Note::err(why.clone()));
                say(&mut fx, false, why);
            }
            // An old complaint no longer applies to the new pick.
            None if t.note.as_ref().is_some_and(|n| !n.ok) => t.note = None,
            None => {}
        }
        fx
    }

    /// A queued action's result, for the table.
    pub(super) fn table_sent(&mut self, r: &Result<String, String>) {
        let Some(t) = self.attached.as_mut().and_then(|a| a.table.as_mut()) else {
            return;
        };
        match r {
            Ok(s) => {
                t.selected.clear();
                t.note = Some(Note::ok(s.clone()));
            }
            Err(e) => {
                t.sent_at = None;
                t.note = Some(Note::err(e.clone()));
            }
        }
    }
}

/// Why a seat cannot act in a mahjong claim window it may not answer.
fn mahjong_not_yours(
    v: &TableView,
    m: &crate::session::table::Mahjong,
    nicks: &BTreeMap<String, String>,
) -> String {
    let Some(w) = &m.window else {
        return "no claim window is open".to_owned();
    };
    let tile = w.tile.label();
    if w.by == v.you {
        format!("you discarded {tile}: the others are answering the claim window")
    } else if w.my_claim.is_some() {
        format!("you have answered the claim window on {tile}: waiting for the others")
    } else {
        format!(
            "the claim window on {}'s {tile} is not yours to answer",
            who(v, nicks, &w.by)
        )
    }
}

/// Keys at a mahjong table. On your turn the arrows move along the hand,
/// `Enter` discards the picked tile (the one under the cursor when none
/// is picked; four of a face picked: a concealed kong), the numbers send a
/// win or a concealed kong. In a claim window you may answer, the claims
/// are the choices: the arrows move the mark, the numbers and `Enter` send
/// one, `p` passes.
fn mahjong_keys(
    t: &mut TableState,
    v: &TableView,
    c: Command,
    refusal: Option<String>,
    options: &Map,
) -> Option<Result<Value, String>> {
    let claims = v.phase == "claim" && !t.choices.is_empty();
    let last = t.hand().len().saturating_sub(1);
    let top = t.choices.len().saturating_sub(1);
    match c {
        Command::Left if claims => t.choice_cursor = t.choice_cursor.saturating_sub(1),
        Command::Right if claims => t.choice_cursor = (t.choice_cursor + 1).min(top),
        Command::SelectCard | Command::SelectGroup if claims => {
            return Some(Err(
                "a claim is sent by its number (or ←/→ and Enter), not by picked tiles".into(),
            ));
        }
        Command::Left => t.cursor = t.cursor.saturating_sub(1),
        Command::Right => t.cursor = (t.cursor + 1).min(last),
        Command::Up => t.jump_rank(-1),
        Command::Down => t.jump_rank(1),
        Command::Top => t.cursor = 0,
        Command::Bottom => t.cursor = last,
        Command::SelectCard => t.toggle_card(),
        Command::SelectGroup => t.toggle_rank(),
        Command::ClearSelection => t.selected.clear(),
        c if c.choice().is_some() => {
            let k = usize::from(c.choice().unwrap_or(1)) - 1;
            let (start, n) = t.choice_page();
            return Some(match refusal {
                Some(why) => Err(why),
                None if k < n => Ok(t.choices[start + k].clone()),
                None if n == 0 => {
                    Err("nothing is chosen by number now: pick a tile and Enter discards it".into())
                }
                None => Err(format!("there are {n} choices to pick from here")),
            });
        }
        Command::PassTurn => {
            return Some(match refusal {
                Some(why) => Err(why),
                None if v.phase == "claim" => t
                    .choices
                    .iter()
                    .find(|a| a.get_str("kind") == Some("pass_claim"))
                    .cloned()
                    .ok_or_else(|| "the rules offer no pass now".to_owned()),
                None => Err("there is no passing on your turn: discard a tile".into()),
            });
        }
        Command::Submit => {
            return Some(match refusal {
                Some(why) => Err(why),
                None if claims => t
                    .choices
                    .get(t.choice_cursor)
                    .cloned()
                    .ok_or_else(|| "the rules offer no claim now".to_owned()),
                None => mahjong_discard(t, v, options),
            });
        }
        _ => {}
    }
    None
}

/// The picked tile as a discard (the one under the cursor when none is
/// picked), or four picked of a face as a concealed kong, when the rules
/// take them now (`Table::is_legal_selection`); else why not.
fn mahjong_discard(t: &TableState, v: &TableView, options: &Map) -> Result<Value, String> {
    let m = v.mahjong().ok_or("the rules offer nothing to send now")?;
    let mut ids = t.picked_ids();
    if ids.is_empty()
        && let Some(c) = t.hand().get(t.cursor)
    {
        ids.push(c.card_id.clone());
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let tiles = m.tiles_of(&refs);
    let shown = crate::session::table::tile_labels(&tiles);
    let legal = t
        .rules(options)
        .is_some_and(|r| r.is_legal_selection(&t.raw, &ids));
    let same = tiles.windows(2).all(|p| p[0].code == p[1].code);
    match ids.len() {
        1 if legal => Ok(Value::Object(
            obj! { "kind" => "discard", "card_id" => ids[0].as_str() },
        )),
        4 if legal => {
            let ids: Vec<Value> = ids.iter().map(|id| Value::from(id.as_str())).collect();
            Ok(Value::Object(
                obj! { "kind" => "concealed_kong", "card_ids" => ids },
            ))
        }
        4 if !same => Err(format!(
            "{shown} is no kong: a concealed kong takes four tiles of one face"
        )),
        0 => Err("there is no tile to discard".into()),
        1 => Err(format!("{shown} cannot be discarded now")),
        n => Err(format!(
            "{shown}: discard one tile, or pick four of a face for a concealed kong ({n} picked)"
        )),
    }
}
