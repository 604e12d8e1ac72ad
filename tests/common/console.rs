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
    });
    assert!(
        h.until(Duration::from_secs(60), |a| a.community.is_some())
            .await,
        "the embedded community did not start: {}",
        h.app.community_status
    );
    h
}
