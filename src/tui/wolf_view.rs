//! The werewolf screen (F3): watch AIWolf NLP games and play a seat.

use super::action::Action;
use super::keymap::Context;
use super::screen::{Env, Paint, Screen};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// Reports for this screen.
#[derive(Debug, Clone, PartialEq)]
pub enum WolfMsg {}

#[derive(Default)]
pub struct WolfView {}

impl Screen for WolfView {
    fn title(&self) -> &'static str {
        "Werewolf"
    }
    fn context(&self) -> Context {
        Context::Werewolf
    }
    fn update(&mut self, _a: Action, _env: &Env<'_>) {}
    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(p.theme.border(true))
            .title(Span::styled(" Werewolf ", p.theme.title()));
        f.render_widget(
            Paragraph::new(Line::from(Span::styled("", p.theme.muted()))).block(b),
            area,
        );
    }
    fn hints(&self) -> Vec<Action> {
        vec![Action::ViewSessions, Action::Help, Action::Quit]
    }
}
