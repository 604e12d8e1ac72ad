//! A full community room: 32 members (one leader, 31 members, each with
//! its own identity, iroh endpoint and state dir, in this process) exchange
//! messages; every member's view ends equal to the leader's; then the
//! leader crashes and a member takes over. The same scenario, with 1,000
//! messages and timings, is `cargo bench --bench rooms`.

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_members_agree_and_survive_their_leader() {
    let tmp = tempfile::tempdir().unwrap();
    let c = common::rooms::crowd(
        tmp.path(),
        std::env::var("CROWD")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(32),
        10,
        90,
    )
    .await;
    eprintln!("{c:?}");
    assert!(c.views_agree, "a member's view differs from the leader's");
    assert_eq!(c.latencies.len(), 10);
}
