//! The console's screens besides sessions (werewolf, market): each owns its
//! state, takes the actions meant for it in `update`, and draws the body
//! under the header. `App` switches between them (F2/F3/F4) and routes keys
//! and reports; modals, help and quitting stay with `App`.

use super::action::Action;
use super::keymap::{Context, Keymap};
use super::tasks::Community;
use super::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use std::path::Path;
use tokio::sync::mpsc::UnboundedSender;

/// What a screen may use while updating: how to report back, the community,
/// the data dir.
pub struct Env<'a> {
    pub tx: &'a UnboundedSender<Action>,
    pub community: Option<&'a Community>,
    pub data_dir: &'a Path,
    /// Terminal size (for page lengths).
    pub size: (u16, u16),
}

/// What a screen draws with.
pub struct Paint<'a> {
    pub theme: &'a Theme,
    pub keymap: &'a Keymap,
}

pub trait Screen {
    /// The tab label.
    fn title(&self) -> &'static str;
    /// The keymap context of the next key (e.g. `Text` while typing).
    fn context(&self) -> Context;
    /// The one place this screen's state changes: keys' actions while it is
    /// shown, its own reports (`Action::Wolf`/`Action::Market`) and ticks.
    fn update(&mut self, a: Action, env: &Env<'_>);
    /// Draws the body (everything under the header, above the status bar).
    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>);
    /// Actions whose keys the status bar shows.
    fn hints(&self) -> Vec<Action>;
    /// The community became reachable.
    fn community_ready(&mut self, _env: &Env<'_>) {}
    /// Work this screen runs that quitting would end (for the quit question).
    fn running(&self) -> usize {
        0
    }
}
