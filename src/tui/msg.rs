//! Everything `App::update` takes: a bound key's command, a key typed into
//! a text field, a paste, the clock, the terminal's size, a task's report.

use super::command::Command;
use super::report::Report;
use crossterm::event::KeyEvent;

pub enum Msg {
    Command(Command),
    /// A key for the focused text field (search, number, chat, editor, form).
    Input(KeyEvent),
    Paste(String),
    Tick,
    Resize(u16, u16),
    Report(Report),
}

impl From<Command> for Msg {
    fn from(c: Command) -> Msg {
        Msg::Command(c)
    }
}

impl From<Report> for Msg {
    fn from(r: Report) -> Msg {
        Msg::Report(r)
    }
}
