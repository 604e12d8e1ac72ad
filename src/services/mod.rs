//! Orchestration above the engine: wiring specs, hooks, channels and
//! control modes into sessions. No UI, no command-line parsing.

pub mod adversarial;
pub mod coach;
pub mod direct;
pub mod doctor;
pub mod group;
pub mod house;
pub mod local;
pub mod mcp;
pub mod metrics;
pub mod protocol;
pub mod remote;
pub mod run;
pub mod server;
