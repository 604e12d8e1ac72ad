//! Any bytes as a GTL message: strict parsing, canonical bytes, hashes and
//! signatures (a fixed point, never a panic); the bytes submitted to a
//! market as they are; and a valid JOB_OPEN with one member replaced by the
//! input (as JSON, else as text), re-signed and submitted. Every refusal is
//! a 4xx that leaves the ledger as it was; the audit always holds.
#![no_main]

#[path = "harness/mod.rs"]
mod harness;

use libfuzzer_sys::fuzz_target;
use palaver::json::{self, Value};
use std::cell::Cell;

thread_local! {
    static MARKET: harness::Gtl = harness::Gtl::new(None);
    static N: Cell<u64> = const { Cell::new(0) };
}

fuzz_target!(|data: &[u8]| {
    harness::gtl_bytes(data);
    MARKET.with(|g| {
        harness::gtl_submit(g, &g.buyer.token, data, &String::new);
        if let Some((&pick, rest)) = data.split_first() {
            let replacement = json::parse_bytes(rest)
                .unwrap_or_else(|_| Value::from(String::from_utf8_lossy(rest).into_owned()));
            let n = N.with(|n| {
                n.set(n.get() + 1);
                n.get()
            });
            harness::gtl_mutated(g, n, pick as usize, replacement, &String::new);
        }
    });
});
