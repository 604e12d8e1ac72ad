//! `authoritative_group`: one leader holds the room's state and rules, every
//! member holds a verified replica. This module is what that flow computes,
//! without I/O: the hooks trait, JSON deltas, the hash chain and signed
//! envelopes (authority), and every check a member makes (replica).

pub mod authority;
pub mod core;
pub mod delta;
pub mod frame;
pub mod hooks;
pub mod replica;
#[cfg(test)]
pub(crate) mod testkit;

pub use authority::{Authority, AuthorityInit, Envelopes, FrameRecord};
pub use core::{GroupConfig, GroupError};
pub use delta::{DeltaError, apply_delta, make_delta};
pub use hooks::{GroupHooks, HookFailure};
pub use replica::Replica;
