//! Any bytes from a peer through the NDJSON stream channel and the session
//! handshake (host and guest side) over an in-memory byte stream: the
//! receiver and the handshake always end (an error or a session), never
//! panic. The body is shared with the CI proptest in tests/hostile_fuzz.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/ndjson_handshake.rs"]
mod body;

fuzz_target!(|data: &[u8]| {
    body::run(data);
});
