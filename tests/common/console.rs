//! The headless console: key events, and a console on its embedded
//! community as `palaver console` starts it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::tui::tasks::Startup;
use palaver::tui::{Headless, load_settings};
use std::path::Path;
use std::time::Duration;

pub fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}
pub fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}
pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

/// A 120×40 console on its embedded community (no house), under the
/// nickname `nickname`; panics when the community does not start within
/// a minute.
pub async fn with_community(data: &Path, nickname: &str) -> Headless {
    let settings = load_settings(data, None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    h.start_community(Startup {
        data_dir: data.to_owned(),
        server: None,
        nickname: nickname.into(),
        house: false,
        house_round_delay: 0,
    });
    assert!(
        h.until(Duration::from_secs(60), |a| a.community.is_some())
            .await,
        "the embedded community did not start: {}",
        h.app.community_status
    );
    h
}

/// Seats the werewolf screen at seat 1 (human) and feeds the game's events
/// up to `extra` past the start of day 1's talk.
pub fn seat_at_day1_talk(
    h: &mut Headless,
    ev: &[palaver::werewolf::game::GameEvent],
    extra: usize,
) {
    use palaver::engine::ControlMode;
    use palaver::tui::report::Report;
    use palaver::tui::report::wolf::WolfReport;
    use palaver::werewolf::game::GameEvent;
    let g = h.app.wolf.generation();
    h.update(Report::Wolf(Box::new(WolfReport::Seated(
        g,
        1,
        ControlMode::Human,
    ))));
    let talk1 = ev
        .iter()
        .position(|e| {
            matches!(
                e,
                GameEvent::Phase {
                    day: 1,
                    phase: palaver::werewolf::Phase::Talk
                }
            )
        })
        .expect("day 1 has a talk phase");
    for e in &ev[..talk1 + extra] {
        h.update(Report::Wolf(Box::new(WolfReport::Event(g, e.clone()))));
    }
}
