//! Any bytes as AIWolf server packets (one per line) through `wolf join`'s
//! decoding and per-packet handling, and as agent answers (one per line)
//! through whole games of the `wolf serve` master. The checks are shared
//! with the property tests (tests/werewolf_packets_prop.rs), which run the
//! same harness in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/aiwolf_harness/mod.rs"]
mod aiwolf_harness;

fuzz_target!(|data: &[u8]| {
    aiwolf_harness::client_side(data);
    let _ = aiwolf_harness::server_side(data);
});
