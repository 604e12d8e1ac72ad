//! Any bytes: parsing never panics; whatever parses serialises canonically,
//! re-parses, and serialises to the same bytes again; an object's protocol_id
//! (hashed while written) equals the hash of its contract bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palaver::json::{self, canonical};
use palaver::spec;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = json::parse_bytes(data) {
        let once = canonical::to_vec(&v);
        assert_eq!(canonical::canonical_len(&v), once.len());
        let again = json::parse_bytes(&once).expect("canonical output parses");
        assert_eq!(canonical::to_vec(&again), once, "canonical form is a fixed point");
        let _ = v.py_repr();
        // protocol_id hashes blocks while it writes; it must agree with
        // hashing the finished contract bytes.
        if let Some(m) = v.as_object() {
            assert_eq!(
                spec::protocol_id_of(m),
                canonical::sha256_hex(spec::contract_bytes(m)),
            );
        }
    }
});
