//! The console's panes and dialogs, one module each; every one draws from
//! `&self` (or plain data) and never changes state while drawing.

pub mod aside;
pub mod battlefield;
pub mod card_pick;
pub mod cards;
pub mod coach;
pub mod dialogs;
pub mod editor;
pub mod feed;
pub mod lists;
pub mod numbering;
pub mod picker;
pub mod prompt;
pub mod replay;
pub mod room;
pub mod snapshot;
pub mod table;
pub mod task;
pub mod whisper;
