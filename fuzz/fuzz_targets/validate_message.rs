//! Any bytes as a message against every bundled spec, and as a spec of its
//! own: validation always answers (Ok or an error text), never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palaver::{json, library, spec};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = json::parse_bytes(data) else { return };
    let dirs = [None, Some("host_to_guest"), Some("guest_to_host"), Some("both")];
    for (alias, _) in library::BUNDLED_SPECS {
        let s = library::bundled_spec(alias).expect("bundled");
        for d in dirs {
            let _ = s.validate_message(&v, d, None);
        }
        let _ = s.validate_message(&v, None, Some("join"));
        let _ = s.validate_options(&v);
    }
    // The input as a spec: load, lint, hash, and validate a message with it.
    if let Some(m) = v.as_object() {
        let _ = spec::protocol_id_of(m);
        let _ = spec::lint::check(&v);
        if let Ok(s) = spec::Spec::from_value(v.clone()) {
            let msg = json::parse_str(r#"{"action":"join","best_of":3}"#).expect("literal");
            let _ = s.validate_message(&msg, Some("guest_to_host"), None);
            let _ = s.validate_options(&msg);
        }
    }
});
