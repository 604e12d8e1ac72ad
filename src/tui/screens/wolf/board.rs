//! The werewolf board: god-view [`GameEvent`]s folded into what the screen
//! shows — seats, day and phase, each day's log, vote tallies, night
//! results, seat errors and the winner. When a person plays a seat the
//! board is built from the same events but only with what that seat may
//! know (its own role, its own results, the wolves' whispers if it is one).

use crate::werewolf::game::{FinishReason, GameEvent, Phase, SeatView};
use crate::werewolf::{Role, Species, Team};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Seat {
    pub idx: usize,
    pub name: String,
    pub role: Role,
    pub alive: bool,
    pub error: Option<String>,
}

/// One line of a day's log.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Phase(Phase),
    Talk {
        whisper: bool,
        seat: usize,
        text: String,
        skip: bool,
        over: bool,
    },
    Tally {
        round: i64,
        tally: Vec<(usize, usize)>,
        executed: Option<usize>,
    },
    /// `role` None: not public (a player's view).
    Executed {
        idx: usize,
        role: Option<Role>,
    },
    /// What a medium learns of the executed (player view, medium only).
    Medium {
        idx: usize,
        species: Species,
    },
    Divine {
        seer: usize,
        target: usize,
        result: Species,
    },
    Guard {
        bodyguard: usize,
        target: usize,
    },
    AttackVote {
        wolf: usize,
        target: Option<usize>,
    },
    /// `guarded`: a target was chosen but the bodyguard saved it (god view).
    Attack {
        target: Option<usize>,
        killed: bool,
        guarded: bool,
    },
    Error {
        idx: usize,
        reason: String,
    },
    Finished,
}

/// A vote round's count.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub day: i64,
    pub round: i64,
    pub tally: Vec<(usize, usize)>,
    pub executed: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    pub day: i64,
    pub winner: Team,
    pub reason: FinishReason,
    pub alive_humans: usize,
    pub alive_wolves: usize,
}

/// Whose eyes the board sees with: `None` is the god view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewer {
    /// 1-based seat.
    pub idx: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Board {
    pub game_id: String,
    pub seats: Vec<Seat>,
    pub day: i64,
    pub phase: Option<Phase>,
    /// Each day's log, in order.
    pub days: BTreeMap<i64, Vec<Item>>,
    pub tallies: Vec<Tally>,
    /// Night results and deaths as they happen: (day, item).
    pub results: Vec<(i64, Item)>,
    pub finish: Option<Finish>,
    pub viewer: Option<Viewer>,
    /// Events folded (for tests and the status line).
    pub events: usize,
}

impl Board {
    /// The god view.
    pub fn god() -> Board {
        Board::default()
    }

    /// What seat `idx` (1-based) may know.
    pub fn player(idx: usize) -> Board {
        Board {
            viewer: Some(Viewer { idx }),
            ..Board::default()
        }
    }

    pub fn seat(&self, idx: usize) -> Option<&Seat> {
        idx.checked_sub(1).and_then(|i| self.seats.get(i))
    }

    /// The name of seat `idx`, or `#idx` for a seat the board never heard of.
    pub fn name(&self, idx: usize) -> String {
        self.seat(idx)
            .map(|s| s.name.clone())
            .unwrap_or_else(|| format!("#{idx}"))
    }

    /// The viewer's own role.
    pub fn my_role(&self) -> Option<Role> {
        self.viewer.and_then(|v| self.seat(v.idx)).map(|s| s.role)
    }

    fn i_am(&self, role: Role) -> bool {
        self.my_role() == Some(role)
    }

    /// Whether the role of `idx` may be shown to this board's viewer
    /// (always in the god view; own role, fellow wolves, everyone at the end
    /// for a player).
    pub fn role_known(&self, idx: usize) -> bool {
        let Some(v) = self.viewer else { return true };
        if v.idx == idx || self.finish.is_some() {
            return true;
        }
        self.i_am(Role::Werewolf) && self.seat(idx).is_some_and(|s| s.role == Role::Werewolf)
    }

    /// Whether the game has started and not finished.
    pub fn running(&self) -> bool {
        !self.seats.is_empty() && self.finish.is_none()
    }

    fn push(&mut self, day: i64, item: Item) {
        self.days.entry(day).or_default().push(item);
    }

    fn set_alive(&mut self, alive: &[bool]) {
        for (s, a) in self.seats.iter_mut().zip(alive) {
            s.alive = *a;
        }
    }

    fn kill(&mut self, idx: usize) {
        if let Some(s) = idx.checked_sub(1).and_then(|i| self.seats.get_mut(i)) {
            s.alive = false;
        }
    }

    /// Folds one event in.
    pub fn apply(&mut self, e: &GameEvent) {
        self.events += 1;
        let player = self.viewer.is_some();
        match e {
            GameEvent::Started { game_id, seats } => {
                let viewer = self.viewer;
                *self = Board {
                    viewer,
                    events: 1,
                    game_id: game_id.clone(),
                    seats: seats.iter().map(seat).collect(),
                    ..Board::default()
                };
            }
            GameEvent::DayStarted { day, alive } => {
                self.day = *day;
                self.phase = None;
                self.set_alive(alive);
                self.days.entry(*day).or_default();
            }
            GameEvent::Phase { day, phase } => {
                self.day = *day;
                self.phase = Some(*phase);
                self.push(*day, Item::Phase(*phase));
            }
            GameEvent::Talk { whisper, idx, talk } => {
                if *whisper && player && !self.i_am(Role::Werewolf) {
                    return;
                }
                self.push(
                    talk.day,
                    Item::Talk {
                        whisper: *whisper,
                        seat: *idx,
                        text: talk.text.clone(),
                        skip: talk.skip,
                        over: talk.over,
                    },
                );
            }
            // The tally says it all; single votes would flood the log.
            GameEvent::Vote { .. } => {}
            GameEvent::VoteTally {
                day,
                round,
                tally,
                executed,
                ..
            } => {
                self.tallies.push(Tally {
                    day: *day,
                    round: *round,
                    tally: tally.clone(),
                    executed: *executed,
                });
                self.push(
                    *day,
                    Item::Tally {
                        round: *round,
                        tally: tally.clone(),
                        executed: *executed,
                    },
                );
            }
            GameEvent::Executed { day, idx, role } => {
                self.kill(*idx);
                let item = Item::Executed {
                    idx: *idx,
                    role: (!player).then_some(*role),
                };
                self.results.push((*day, item.clone()));
                self.push(*day, item);
                if player && self.i_am(Role::Medium) {
                    let item = Item::Medium {
                        idx: *idx,
                        species: role.species(),
                    };
                    self.results.push((*day, item.clone()));
                    self.push(*day, item);
                }
            }
            GameEvent::Divine {
                day,
                seer,
                target,
                result,
            } => {
                if player && self.viewer.map(|v| v.idx) != Some(*seer) {
                    return;
                }
                let item = Item::Divine {
                    seer: *seer,
                    target: *target,
                    result: *result,
                };
                self.results.push((*day, item.clone()));
                self.push(*day, item);
            }
            GameEvent::Guard {
                day,
                bodyguard,
                target,
                ..
            } => {
                if player && self.viewer.map(|v| v.idx) != Some(*bodyguard) {
                    return;
                }
                let item = Item::Guard {
                    bodyguard: *bodyguard,
                    target: *target,
                };
                self.results.push((*day, item.clone()));
                self.push(*day, item);
            }
            GameEvent::AttackVote {
                day, wolf, target, ..
            } => {
                if player && !self.i_am(Role::Werewolf) {
                    return;
                }
                self.push(
                    *day,
                    Item::AttackVote {
                        wolf: *wolf,
                        target: *target,
                    },
                );
            }
            GameEvent::Attack {
                day,
                target,
                killed,
            } => {
                if *killed && let Some(t) = target {
                    self.kill(*t);
                }
                // A player learns who died, not whom the wolves chose.
                let item = if player && !self.i_am(Role::Werewolf) && !killed {
                    Item::Attack {
                        target: None,
                        killed: false,
                        guarded: false,
                    }
                } else {
                    Item::Attack {
                        target: *target,
                        killed: *killed,
                        guarded: target.is_some() && !killed,
                    }
                };
                self.results.push((*day, item.clone()));
                self.push(*day, item);
            }
            GameEvent::SeatError { day, idx, reason } => {
                if let Some(s) = idx.checked_sub(1).and_then(|i| self.seats.get_mut(i)) {
                    s.error = Some(reason.clone());
                }
                self.push(
                    *day,
                    Item::Error {
                        idx: *idx,
                        reason: reason.clone(),
                    },
                );
            }
            GameEvent::Finished {
                day,
                winner,
                reason,
                alive,
                alive_humans,
                alive_wolves,
            } => {
                self.set_alive(alive);
                self.phase = None;
                self.finish = Some(Finish {
                    day: *day,
                    winner: *winner,
                    reason: *reason,
                    alive_humans: *alive_humans,
                    alive_wolves: *alive_wolves,
                });
                let last = self.day;
                self.push(last, Item::Finished);
            }
        }
    }

    /// Roles told to a player at the end (a remote seat's FINISH).
    pub fn reveal(&mut self, roles: &[(usize, Role)]) {
        for (idx, role) in roles {
            if let Some(s) = idx.checked_sub(1).and_then(|i| self.seats.get_mut(i)) {
                s.role = *role;
            }
        }
    }

    /// The days with a log, oldest first.
    pub fn day_list(&self) -> Vec<i64> {
        self.days.keys().copied().collect()
    }

    /// The latest tally of `day` (the current day's, or the day before's
    /// while today has none yet).
    pub fn tally_for(&self, day: i64) -> Option<&Tally> {
        self.tallies
            .iter()
            .rev()
            .find(|t| t.day == day)
            .or_else(|| self.tallies.iter().rev().find(|t| t.day < day))
    }
}

fn seat(s: &SeatView) -> Seat {
    Seat {
        idx: s.idx,
        name: s.name.clone(),
        role: s.role,
        alive: true,
        error: None,
    }
}

/// Phase names as the screen prints them.
pub fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::MorningWhisper => "morning whisper",
        Phase::Talk => "talk",
        Phase::EveningWhisper => "evening whisper",
        Phase::Execution => "vote and execution",
        Phase::Divine => "divination",
        Phase::NightWhisper => "night whisper",
        Phase::Guard => "guard",
        Phase::Attack => "attack",
    }
}

pub fn reason_name(r: FinishReason) -> &'static str {
    match r {
        FinishReason::Victory => "victory",
        FinishReason::MaxDay => "max day reached",
        FinishReason::AbortedByError => "aborted: too many seat errors",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::werewolf::packet::Talk;

    fn seats() -> Vec<SeatView> {
        [
            ("Ann", Role::Seer),
            ("Bob", Role::Werewolf),
            ("Cy", Role::Villager),
        ]
        .iter()
        .enumerate()
        .map(|(i, (n, r))| SeatView {
            idx: i + 1,
            name: (*n).into(),
            original_name: format!("bot{}", i + 1),
            team: "bot".into(),
            role: *r,
            profile: None,
            avatar: None,
        })
        .collect()
    }

    fn talk(whisper: bool, idx: usize, text: &str) -> GameEvent {
        GameEvent::Talk {
            whisper,
            idx,
            talk: Talk {
                idx: 0,
                day: 1,
                turn: 0,
                agent: String::new(),
                text: text.into(),
                skip: false,
                over: false,
                time: 0,
            },
        }
    }

    fn game() -> Vec<GameEvent> {
        vec![
            GameEvent::Started {
                game_id: "g".into(),
                seats: seats(),
            },
            GameEvent::DayStarted {
                day: 1,
                alive: vec![true; 3],
            },
            talk(true, 2, "let's eat Ann"),
            talk(false, 1, "hello"),
            GameEvent::Divine {
                day: 1,
                seer: 1,
                target: 2,
                result: Species::Werewolf,
            },
            GameEvent::Executed {
                day: 1,
                idx: 3,
                role: Role::Villager,
            },
            GameEvent::Attack {
                day: 1,
                target: Some(1),
                killed: true,
            },
        ]
    }

    #[test]
    fn the_god_view_keeps_everything() {
        let mut b = Board::god();
        game().iter().for_each(|e| b.apply(e));
        assert_eq!(b.days[&1].len(), 5);
        assert!(!b.seats[0].alive && b.seats[1].alive && !b.seats[2].alive);
        assert!(b.role_known(2));
        assert!(b.days[&1].contains(&Item::Executed {
            idx: 3,
            role: Some(Role::Villager)
        }));
    }

    #[test]
    fn a_player_sees_only_what_its_seat_knows() {
        // The villager: no whispers, no divination, no executed role.
        let mut b = Board::player(3);
        game().iter().for_each(|e| b.apply(e));
        assert_eq!(b.my_role(), Some(Role::Villager));
        assert!(!b.role_known(1) && !b.role_known(2) && b.role_known(3));
        let day = &b.days[&1];
        assert!(
            !day.iter()
                .any(|i| matches!(i, Item::Talk { whisper: true, .. }))
        );
        assert!(!day.iter().any(|i| matches!(i, Item::Divine { .. })));
        assert!(day.contains(&Item::Executed { idx: 3, role: None }));
        // The seer sees its divination; the wolf its whispers and partner.
        let mut seer = Board::player(1);
        game().iter().for_each(|e| seer.apply(e));
        assert!(
            seer.days[&1]
                .iter()
                .any(|i| matches!(i, Item::Divine { .. }))
        );
        let mut wolf = Board::player(2);
        game().iter().for_each(|e| wolf.apply(e));
        assert!(
            wolf.days[&1]
                .iter()
                .any(|i| matches!(i, Item::Talk { whisper: true, .. }))
        );
        // Everyone's role shows once the game is over.
        b.apply(&GameEvent::Finished {
            day: 2,
            winner: Team::Werewolf,
            reason: FinishReason::Victory,
            alive: vec![false, true, false],
            alive_humans: 0,
            alive_wolves: 1,
        });
        assert!(b.role_known(1) && b.role_known(2));
    }

    #[test]
    fn out_of_range_seats_never_panic() {
        let mut b = Board::god();
        for e in [
            GameEvent::Executed {
                day: 1,
                idx: 0,
                role: Role::Villager,
            },
            GameEvent::Attack {
                day: 1,
                target: Some(99),
                killed: true,
            },
            GameEvent::SeatError {
                day: 1,
                idx: 42,
                reason: "gone".into(),
            },
        ] {
            b.apply(&e);
        }
        assert_eq!(b.name(42), "#42");
    }
}
