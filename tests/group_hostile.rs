//! Rooms against hostile peers, in one process with palaver's own server:
//! a member that sends garbage, speaks for someone else, replays or skips a
//! `client_seq`, uses a bad action id or floods inputs is refused by the
//! leader while the honest members carry on; a leader that forges a frame
//! or breaks the hash chain is detected by every member, which leaves the
//! room with the reason recorded.

use crate::common;

use common::rooms;
use palaver::engine::group::{Authority, AuthorityInit, GroupConfig};
use palaver::json::{Map, Value};
use palaver::net;
use palaver::obj;
use palaver::services::group::{admit, api};
use std::time::Duration;

const ROOM: &str = "community-room-v1";

async fn recv_receipt(ch: &mut palaver::engine::Channel) -> Map {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ch.rx.recv())
            .await
            .expect("no receipt within 10 s")
            .expect("the leader dropped the channel");
        if m.get_str("_group") == Some("receipt") {
            return m;
        }
    }
}

fn input(group_id: &str, pk: &str, seq: i64, id: &str, text: &str) -> Value {
    Value::Object(obj! {
        "_group" => "input", "group_id" => group_id, "leader_epoch" => 0, "actor_public_key" => pk,
        "client_seq" => seq, "action_id" => id, "action" => Value::Object(obj! { "kind" => "send", "text" => text }),
    })
}

fn id(n: u8) -> String {
    format!("{n:02x}").repeat(16)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_member_is_refused_and_the_room_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = rooms::server(&tmp.path().join("db.sqlite"), 15).await;
    let (lead, amy, eve) = (
        rooms::who(&url, tmp.path(), "lead").await,
        rooms::who(&url, tmp.path(), "amy").await,
        rooms::who(&url, tmp.path(), "eve").await,
    );
    let mut host = rooms::host(&lead, ROOM, Map::new()).await;
    let post = host.post.clone().unwrap();
    let mut amy_side = rooms::join(&amy, ROOM, &post);
    let (lead_dir, amy_dir) = (host.state_dir().await, amy_side.state_dir().await);
    rooms::say(&amy_dir, "amy is here");
    rooms::wait_message(&lead_dir, "amy is here", Duration::from_secs(30)).await;

    // Eve is admitted properly, then misbehaves on her channel.
    let ep = net::bind_via(net::Reach::Direct, &[], None).await.unwrap();
    let group = api::by_post(&eve.client, &post).await.unwrap();
    let gid = group.get_str("group_id").unwrap().to_owned();
    let (_link, mut ch, _member) = admit::join_leader(
        &ep,
        &eve.client,
        &group,
        "autonomous",
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let eve_pk = eve.client.keys().public_key.clone();
    let amy_pk = amy.client.keys().public_key.clone();

    // Speaking for Amy: refused, retryable.
    ch.tx
        .send(&input(&gid, &amy_pk, 1, &id(1), "forged"))
        .await
        .unwrap();
    let r = recv_receipt(&mut ch).await;
    assert_eq!(
        (r.get_str("status"), r.get_str("reason")),
        (Some("rejected"), Some("group, epoch, or actor mismatch"))
    );
    // A bad action id.
    ch.tx
        .send(&input(&gid, &eve_pk, 1, "nothex", "x"))
        .await
        .unwrap();
    let r = recv_receipt(&mut ch).await;
    assert_eq!(
        r.get_str("reason"),
        Some("action_id must be 32-char lowercase hex")
    );
    // Her first message is accepted; sent again it is a duplicate, applied once.
    ch.tx
        .send(&input(&gid, &eve_pk, 1, &id(2), "eve once"))
        .await
        .unwrap();
    assert_eq!(
        recv_receipt(&mut ch).await.get_str("status"),
        Some("accepted")
    );
    ch.tx
        .send(&input(&gid, &eve_pk, 1, &id(2), "eve once"))
        .await
        .unwrap();
    assert_eq!(
        recv_receipt(&mut ch).await.get_str("status"),
        Some("duplicate")
    );
    // Skipping a client_seq.
    ch.tx
        .send(&input(&gid, &eve_pk, 3, &id(3), "skipped"))
        .await
        .unwrap();
    let r = recv_receipt(&mut ch).await;
    assert_eq!(
        r.get_str("reason"),
        Some("client_seq gap: expected 2, got 3")
    );
    // An action the room's rules refuse.
    let mut bad = input(&gid, &eve_pk, 2, &id(4), "");
    bad.as_object_mut()
        .unwrap()
        .insert("action", Value::Object(obj! { "kind" => "close_room" }));
    ch.tx.send(&bad).await.unwrap();
    let r = recv_receipt(&mut ch).await;
    assert_eq!(
        r.get_str("reason"),
        Some("only the room owner at seat 0 can close the room")
    );
    // A flood: every input is answered, none is applied twice, and no more
    // are queued at once than the leader allows.
    for n in 0..400 {
        let _ = ch
            .tx
            .send(&input(&gid, &eve_pk, 2, &id(5), &format!("flood {n}")))
            .await;
    }
    // Amy is served all the while.
    rooms::say(&amy_dir, "amy during the flood");
    rooms::wait_message(&lead_dir, "amy during the flood", Duration::from_secs(30)).await;
    // Then garbage ends Eve's channel.
    ch.tx.send_raw("this is not json".into()).await.unwrap();
    let start = std::time::Instant::now();
    while rooms::events(&lead_dir, "group_member_disconnected").is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the leader kept the garbage channel"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rooms::say(&amy_dir, "still here");
    rooms::wait_message(&lead_dir, "still here", Duration::from_secs(30)).await;
    rooms::wait_message(&amy_dir, "still here", Duration::from_secs(30)).await;
    let texts = rooms::messages(&amy_dir);
    assert_eq!(texts.iter().filter(|t| *t == "eve once").count(), 1);
    assert_eq!(
        texts.iter().filter(|t| t.starts_with("flood")).count(),
        1,
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t == "forged" || t == "skipped"));
    assert!(!rooms::events(&lead_dir, "group_action_rejected").is_empty());
    host.stop();
    amy_side.stop();
    net::close(ep).await;
}

/// A leader that follows the admission but then sends what `tamper` makes
/// of its envelopes; both palaver members must leave, saying why.
async fn hostile_leader(tamper: fn(&mut Vec<Map>), expect: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = rooms::server(&tmp.path().join("db.sqlite"), 15).await;
    let lead = rooms::who(&url, tmp.path(), "lead").await;
    let members = [
        rooms::who(&url, tmp.path(), "amy").await,
        rooms::who(&url, tmp.path(), "bob").await,
    ];
    let spec = rooms::spec(ROOM);
    let cfg = GroupConfig::from_spec(&spec).unwrap();
    let ep = net::bind_via(net::Reach::Direct, &[], None).await.unwrap();
    let ticket = net::ticket(&ep).await;
    let meta = palaver::services::group::host_metadata(&spec);
    let post = palaver::services::remote::post_invitation(
        &lead.client,
        &spec,
        &ticket,
        &meta,
        "",
        palaver::engine::ControlMode::Autonomous,
        &Map::new(),
    )
    .await
    .unwrap();
    let group = api::create(&lead.client, &post, &cfg).await.unwrap();
    let gid = group.get_str("group_id").unwrap().to_owned();
    let mut sides: Vec<_> = members
        .iter()
        .map(|w| rooms::join(w, ROOM, &post))
        .collect();
    // Admit both, then run a real authority and send tampered envelopes.
    let mut chans = Vec::new();
    while chans.len() < 2 {
        let incoming = ep.accept().await.unwrap();
        let (link, mut ch) = net::establish(incoming).await.unwrap();
        let g = api::get(&lead.client, &gid).await.unwrap();
        let member = admit::admit_member(&mut ch, &lead.client, lead.client.keys(), &g)
            .await
            .unwrap();
        let pk = member.get_str("public_key").unwrap().to_owned();
        chans.push((pk, link, ch));
    }
    let g = api::get(&lead.client, &gid).await.unwrap();
    let hooks = palaver::services::group::native_hooks(&spec).unwrap();
    let mut auth = Authority::new(AuthorityInit {
        config: cfg,
        hooks: hooks(&meta.default_options).unwrap(),
        protocol_name: "Community Room".into(),
        group_id: gid.clone(),
        keys: lead.client.keys().clone(),
        leader_epoch: 0,
        membership_version: api::count(&g, "membership_version").unwrap(),
        members: api::active_members(&g),
        checkpoint: None,
    })
    .unwrap();
    let boot = auth.bootstrap_envelopes().unwrap();
    let lead_pk = lead.client.keys().public_key.clone();
    let mut frames = vec![boot];
    for n in 0..3 {
        let (envs, _) = auth
            .apply_input(
                &lead_pk,
                n + 1,
                &Value::Object(obj! { "kind" => "send", "text" => format!("frame {n}") }),
            )
            .unwrap();
        frames.push((*envs).clone());
    }
    tamper(&mut frames);
    // Each member gets its own envelopes, on the channel it was admitted on.
    for (pk, _link, ch) in &chans {
        for f in &frames {
            if let Some(env) = f.get(pk) {
                let _ = ch.tx.send(env).await;
            }
        }
    }
    for s in sides.iter_mut() {
        let done = tokio::time::timeout(Duration::from_secs(30), &mut s.task)
            .await
            .expect("a member stayed with a forging leader")
            .unwrap()
            .unwrap();
        assert!(!done.completed);
        let reason = done.reason.unwrap_or_default();
        assert!(reason.contains(expect), "{reason:?} should say {expect:?}");
        let rejected = rooms::events(&s.state_dir().await, "group_leader_rejected");
        assert_eq!(rejected.len(), 1);
    }
    // The server has both members as left.
    let g = api::get(&lead.client, &gid).await.unwrap();
    let left = g
        .get("members")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter(|m| m.get_str("status") == Some("left"))
        .count();
    assert_eq!(left, 2);
    net::close(ep).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_frame_makes_every_member_leave() {
    hostile_leader(
        |frames| {
            // The second frame's message text changed after signing.
            let keys: Vec<String> = frames[2].keys().map(str::to_owned).collect();
            for k in keys {
                if let Some(ev) = frames[2]
                    .get_mut(&k)
                    .and_then(|env| env.as_object_mut())
                    .and_then(|env| env.get_mut("events"))
                    .and_then(|e| match e {
                        Value::Array(a) => a.first_mut(),
                        _ => None,
                    })
                {
                    *ev = Value::Object(obj! { "kind" => "message", "text" => "forged" });
                }
            }
        },
        "group events hash mismatch",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_hash_chain_makes_every_member_leave() {
    hostile_leader(
        |frames| {
            // A frame left out: the next one does not chain to what members hold.
            frames.remove(2);
        },
        "group frame sequence has a gap",
    )
    .await;
}

/// A member that connects again while its old channel is still open is
/// served on the new one, and the old one closing afterwards does not drop
/// it. (The leader also ignores an end-of-channel report that was already
/// queued for the old connection when the new one attached: each report
/// names its connection, see `leader::Msg::Gone`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_an_old_channel_leaves_a_reconnected_member_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _server) = rooms::server(&tmp.path().join("db.sqlite"), 15).await;
    let (lead, amy, eve) = (
        rooms::who(&url, tmp.path(), "lead").await,
        rooms::who(&url, tmp.path(), "amy").await,
        rooms::who(&url, tmp.path(), "eve").await,
    );
    let mut host = rooms::host(&lead, ROOM, Map::new()).await;
    let post = host.post.clone().unwrap();
    let mut amy_side = rooms::join(&amy, ROOM, &post);
    let (lead_dir, amy_dir) = (host.state_dir().await, amy_side.state_dir().await);
    rooms::say(&amy_dir, "amy is here");
    rooms::wait_message(&lead_dir, "amy is here", Duration::from_secs(30)).await;
    let ep = net::bind_via(net::Reach::Direct, &[], None).await.unwrap();
    let group = api::by_post(&eve.client, &post).await.unwrap();
    let dial = Duration::from_secs(30);
    let (old_link, old_ch, _) = admit::join_leader(&ep, &eve.client, &group, "autonomous", dial)
        .await
        .unwrap();
    let group = api::by_post(&eve.client, &post).await.unwrap();
    let (_link, mut ch, _) = admit::join_leader(&ep, &eve.client, &group, "autonomous", dial)
        .await
        .unwrap();
    // The first channel ends after the second is attached.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(old_ch);
    old_link.finish(Duration::ZERO).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    rooms::say(&amy_dir, "for the new channel");
    let start = std::time::Instant::now();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ch.rx.recv())
            .await
            .expect("the new channel heard nothing")
            .expect("the leader dropped the new channel");
        let text = palaver::json::canonical::to_string(&Value::Object(m));
        if text.contains("for the new channel") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the message never came"
        );
    }
    host.stop();
    amy_side.stop();
    net::close(ep).await;
}
