//! The console's screens, one folder each: sessions (F2), werewolf (F3),
//! market (F4), inbox (F5), leaderboard (F6). Each implements
//! `screen::Screen`.

pub mod inbox;
pub mod leaders;
pub mod market;
pub mod sessions;
pub mod wolf;
