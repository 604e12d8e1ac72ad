//! Any body on any community or market route, signed right or wrong in one
//! of several ways, through the real router in process (no network): never
//! a 5xx or a panic; a refusal is a 4xx with a JSON error; wrong auth is a
//! 401. The first byte picks the route, the second the signing, the rest is
//! the body.
#![no_main]

#[path = "harness/mod.rs"]
mod harness;

use libfuzzer_sys::fuzz_target;

thread_local! {
    static COMMUNITY: harness::Community = harness::Community::new(
        &std::env::temp_dir().join(format!("palaver-fuzz-community-{}.sqlite", std::process::id())),
    );
}

fuzz_target!(|data: &[u8]| {
    let [route, signing, body @ ..] = data else {
        return;
    };
    COMMUNITY.with(|c| {
        harness::community_request(c, *route as usize, *signing, body, &String::new);
    });
});
