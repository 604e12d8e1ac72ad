//! Rooms (`authoritative_group`, community-room-v1) as their members live
//! them: 32 members in one room, each with its own identity, iroh endpoint
//! (direct, loopback) and state dir, all in this process beside a community
//! server, through palaver's own runtime (`services::group`).
//!
//! Figures:
//! - **message → every member's view**: a message appended to one member's
//!   group-actions.jsonl (what `palaver session action` and the console do)
//!   until every one of the 32 state dirs has recorded its frame in
//!   events.jsonl (the replica checked it and wrote group-checkpoint.json,
//!   details.jsonl and the snapshot first). One message at a time, from
//!   each member in turn; p50 and p99. Includes the side's poll of its action
//!   file (every 3 ms), the input frame, the leader's rules, 32 signed
//!   envelopes, each member's checks and files; excludes the console.
//! - **bulk**: the remaining messages queued at once, spread over the
//!   members (each sends one at a time, as the outbox does), until every
//!   member has them all: messages per second.
//! - **failover**: the leader's task aborted (a crash: no goodbye) until every
//!   other member has a frame of the next epoch; the server's lease is 3 s,
//!   so the figure is that lease plus the claim and the new leader's
//!   bootstrap.
//!
//! At the end every member's view (its own `you` aside) must equal the
//! leader's, or the bench fails.
//!
//! Run: `cargo bench --bench rooms` (`ROOM_MEMBERS`, `ROOM_MESSAGES`: 32 and
//! 1,000 by default; 200 of the messages are the one-at-a-time ones).

#[path = "../tests/common/rooms.rs"]
#[allow(dead_code)]
mod rooms;

use std::time::Duration;

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn main() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let members = env("ROOM_MEMBERS", 32).clamp(2, 32);
    let messages = env("ROOM_MESSAGES", 1000).max(10);
    let one_at_a_time = (messages / 5).min(200);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let c = rt.block_on(rooms::crowd(
        tmp.path(),
        members,
        one_at_a_time,
        messages - one_at_a_time,
    ));
    assert!(c.views_agree, "a member's view differs from the leader's");
    let mut l = c.latencies.clone();
    l.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("rooms: {} members, {} messages", c.members, messages);
    println!("  seating all members        {:>8.1} ms", ms(c.start));
    println!(
        "  message → every view       p50 {:>6.1} ms   p99 {:>6.1} ms   (max {:.1} ms, {} messages one at a time)",
        ms(pct(&l, 0.5)),
        ms(pct(&l, 0.99)),
        ms(*l.last().unwrap_or(&Duration::ZERO)),
        l.len()
    );
    println!(
        "  bulk                       {:>8.0} messages/s   ({} messages in {:.2} s)",
        c.bulk.0 as f64 / c.bulk.1.as_secs_f64(),
        c.bulk.0,
        c.bulk.1.as_secs_f64()
    );
    println!(
        "  failover (lease 3 s)       {:>8.2} s",
        c.failover.as_secs_f64()
    );
    println!("  every member's view equals the leader's: yes");
}
