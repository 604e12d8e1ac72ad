//! The console's screens, one folder each: sessions (F2), werewolf (F3),
//! market (F4). Each implements `screen::Screen`.

pub mod market;
pub mod sessions;
pub mod wolf;
