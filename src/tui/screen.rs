//! The console's screens (sessions, werewolf, market): each owns its state,
//! takes the messages meant for it in `update` and returns the effects it
//! wants (status lines, tasks to start), and draws the body under the
//! header. `App` switches between them (F2/F3/F4), routes keys and
//! reports, runs the effects, and keeps the help overlay and quitting.

use super::command::Command;
use super::community::Community;
use super::effect::Effects;
use super::keymap::{Context, Keymap};
use super::msg::Msg;
use super::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use std::path::Path;

/// What a screen may read while updating.
pub struct Env<'a> {
    /// The community, once it is reachable.
    pub community: Option<&'a Community>,
    pub data_dir: &'a Path,
    /// This identity's public key.
    pub me: &'a str,
    /// Terminal size (for page lengths).
    pub size: (u16, u16),
}

/// What a screen draws with.
pub struct Paint<'a> {
    pub theme: &'a Theme,
    pub keymap: &'a Keymap,
    /// This identity's public key (marks what is yours).
    pub me: &'a str,
    /// Why the community is not reachable yet ("" once it is).
    pub offline: &'a str,
    /// The help overlay covers the screen: no pane shows the focus.
    pub covered: bool,
}

pub trait Screen {
    /// The tab label.
    fn title(&self) -> &'static str;
    /// The keymap context of the next key (e.g. `Text` while typing).
    fn context(&self) -> Context;
    /// Whether unbound printable keys are typed into a field.
    fn typing(&self) -> bool {
        matches!(self.context(), Context::Text | Context::Editor)
    }
    /// The one place this screen's state changes: commands and typed keys
    /// while it is shown, its own reports, and ticks.
    fn update(&mut self, m: Msg, env: &Env<'_>) -> Effects;
    /// Draws the body (everything under the header, above the status bar;
    /// a dialog may cover the whole frame).
    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>);
    /// Commands whose keys the status bar shows.
    fn hints(&self) -> Vec<Command>;
    /// The community became reachable.
    fn community_ready(&mut self, _env: &Env<'_>) -> Effects {
        Effects::new()
    }
    /// Work this screen runs that quitting would end (for the quit question).
    fn running(&self) -> usize {
        0
    }
}
