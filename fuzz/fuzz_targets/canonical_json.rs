//! Any bytes: parsing never panics; whatever parses serialises canonically,
//! re-parses, and serialises to the same bytes again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palaver::{canonical, json};

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = json::parse_bytes(data) {
        let once = canonical::to_vec(&v);
        assert_eq!(canonical::canonical_len(&v), once.len());
        let again = json::parse_bytes(&once).expect("canonical output parses");
        assert_eq!(canonical::to_vec(&again), once, "canonical form is a fixed point");
        let _ = v.py_repr();
    }
});
