//! Rooms in one test process: a community server on loopback, registered
//! identities, a leader and members run by palaver's own `services::group`.

use palaver::community::SqliteStore;
use palaver::engine::ControlMode;
use palaver::identity::KeyPair;
use palaver::json::{Map, Value};
use palaver::services::group::{self, HostRoomPlan, JoinRoomPlan, RoomFinished};
use palaver::services::remote::{PeerOpts, Progress, RemoteError};
use palaver::web::Client;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// A server in this process (`lease` seconds per leader lease, no rate limit).
pub async fn server(db: &Path, lease: i64) -> (String, tokio::task::JoinHandle<()>) {
    let store = SqliteStore::open(db).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let cfg = palaver::community::server::Config {
        rate_limit: 0.0,
        group_lease_seconds: lease,
        max_active_invitations: 64,
        ..Default::default()
    };
    let task = tokio::spawn(async move {
        let _ = palaver::services::server::serve(listener, Box::new(store), cfg).await;
    });
    (url, task)
}

/// A registered identity with its own data dir.
pub struct Who {
    pub client: Client,
    pub dir: PathBuf,
}

pub async fn who(url: &str, root: &Path, nick: &str) -> Who {
    let keys = KeyPair::generate();
    let client = Client::new(url, keys).unwrap();
    palaver::services::server::ensure_registered(&client, nick)
        .await
        .unwrap();
    let dir = root.join(nick);
    std::fs::create_dir_all(&dir).unwrap();
    Who { client, dir }
}

pub fn spec(alias: &str) -> palaver::spec::Spec {
    palaver::library::bundled_spec(alias).unwrap().clone()
}

/// A running side: its task, its state dir (once known), a cancel switch.
pub struct Side {
    pub task: tokio::task::JoinHandle<Result<RoomFinished, RemoteError>>,
    pub dir: watch::Receiver<Option<PathBuf>>,
    pub post: Option<String>,
    pub cancel: watch::Sender<bool>,
}

impl Side {
    /// The state dir, waiting for it.
    pub async fn state_dir(&mut self) -> PathBuf {
        if let Ok(d) = self.dir.wait_for(Option::is_some).await {
            return d.clone().unwrap();
        }
        // The side ended before it had a state dir: say how it ended.
        let ended = (&mut self.task).await;
        panic!("the side ended before its state dir was known: {ended:?}");
    }

    pub fn stop(&self) {
        let _ = self.cancel.send(true);
    }
}

fn progress_to(
    dir_tx: watch::Sender<Option<PathBuf>>,
    post_tx: mpsc::UnboundedSender<String>,
) -> impl Fn(Progress) + Send + Sync {
    move |p| match p {
        Progress::StateDir { parent, .. } => {
            let _ = dir_tx.send(Some(parent));
        }
        Progress::InvitationOpen { post_id } => {
            let _ = post_tx.send(post_id);
        }
        _ => {}
    }
}

async fn cancelled(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|c| *c).await;
}

/// Hosts `alias` as `w`; returns once its invitation is up.
pub async fn host(w: &Who, alias: &str, options: Map) -> Side {
    let spec = spec(alias);
    let hooks = group::native_hooks(&spec).unwrap();
    let plan = HostRoomPlan {
        bots: 0,
        spec,
        hooks,
        message: String::new(),
        options,
        mode: ControlMode::Autonomous,
        ttl: Duration::from_secs(600),
        peer: PeerOpts::direct(),
        data_dir: w.dir.clone(),
        state_dir: None,
    };
    let (dir_tx, dir) = watch::channel(None);
    let (post_tx, mut post_rx) = mpsc::unbounded_channel();
    let (cancel, crx) = watch::channel(false);
    let client = w.client.clone();
    let task = tokio::spawn(async move {
        let progress = progress_to(dir_tx, post_tx);
        group::host(&client, plan, &progress, cancelled(crx)).await
    });
    let post = tokio::time::timeout(Duration::from_secs(30), post_rx.recv())
        .await
        .unwrap();
    Side {
        task,
        dir,
        post,
        cancel,
    }
}

/// Joins `post` as `w`.
pub fn join(w: &Who, alias: &str, post: &str) -> Side {
    let spec = spec(alias);
    let hooks = group::native_hooks(&spec).unwrap();
    let plan = JoinRoomPlan {
        post_id: post.to_owned(),
        spec,
        hooks,
        mode: ControlMode::Autonomous,
        peer: PeerOpts::direct(),
        data_dir: w.dir.clone(),
        state_dir: None,
    };
    let (dir_tx, dir) = watch::channel(None);
    let (post_tx, _) = mpsc::unbounded_channel();
    let (cancel, crx) = watch::channel(false);
    let client = w.client.clone();
    let task = tokio::spawn(async move {
        let progress = progress_to(dir_tx, post_tx);
        group::join(&client, plan, &progress, cancelled(crx)).await
    });
    Side {
        task,
        dir,
        post: None,
        cancel,
    }
}

/// The snapshot's view in a state dir (None until there is one).
pub fn view(dir: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join("snapshot.json")).ok()?;
    palaver::json::parse_str(&text)
        .ok()?
        .get("group_view")
        .cloned()
}

/// The texts of the room's messages in a state dir.
pub fn messages(dir: &Path) -> Vec<String> {
    view(dir)
        .and_then(|v| v.get("messages").cloned())
        .and_then(|m| m.as_array().cloned())
        .map(|l| {
            l.iter()
                .filter_map(|m| m.get_str("text").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `text` is among the messages in `dir`.
pub async fn wait_message(dir: &Path, text: &str, within: Duration) {
    let start = std::time::Instant::now();
    while !messages(dir).iter().any(|m| m == text) {
        assert!(
            start.elapsed() < within,
            "{text:?} never reached {}: {:?}",
            dir.display(),
            messages(dir)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Says `text` in the room from the session in `dir`.
pub fn say(dir: &Path, text: &str) {
    let mut m = Map::new();
    m.insert("kind", Value::from("send"));
    m.insert("text", Value::from(text));
    group::outbox::append_action(dir, &Value::Object(m)).unwrap();
}

/// The events of a state dir with this type.
pub fn events(dir: &Path, kind: &str) -> Vec<Map> {
    palaver::session::files::read_jsonl(&dir.join("events.jsonl"))
        .into_iter()
        .filter(|e| e.get_str("type") == Some(kind))
        .collect()
}

/// Reads the frames a state dir's events.jsonl announces as they come:
/// `group_frame` (a leader's) and `group_frame_received` (a member's), with
/// their epoch and seq.
pub struct FrameTail {
    path: PathBuf,
    offset: u64,
    /// The newest (epoch, seq) seen.
    pub newest: Option<(i64, i64)>,
}

impl FrameTail {
    pub fn new(dir: &Path) -> FrameTail {
        FrameTail {
            path: dir.join("events.jsonl"),
            offset: 0,
            newest: None,
        }
    }

    /// Reads what was appended since the last call.
    pub fn poll(&mut self) {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        if f.read_to_end(&mut buf).is_err() {
            return;
        }
        let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        self.offset += end as u64 + 1;
        for line in buf[..end].split(|b| *b == b'\n') {
            let Ok(text) = std::str::from_utf8(line) else {
                continue;
            };
            if !text.contains("\"group_frame") {
                continue;
            }
            let Ok(v) = palaver::json::parse_str(text) else {
                continue;
            };
            if !matches!(
                v.get_str("type"),
                Some("group_frame" | "group_frame_received")
            ) {
                continue;
            }
            let d = v.get("data");
            let num = |k: &str| d.and_then(|d| d.get(k)).and_then(Value::as_i64);
            if let (Some(e), Some(s)) = (num("leader_epoch"), num("seq")) {
                self.newest = Some(self.newest.map_or((e, s), |n| n.max((e, s))));
            }
        }
    }
}

/// The snapshot's view without what differs per viewer (`you`), canonical.
pub fn shared_view(dir: &Path) -> String {
    let mut v = view(dir).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.remove("you");
    }
    palaver::json::canonical::to_string(&v)
}

/// What a crowded room measured.
#[derive(Debug)]
pub struct Crowd {
    pub members: usize,
    /// Message appended to a member's group-actions.jsonl → every member's
    /// events.jsonl announces its frame; one message at a time.
    pub latencies: Vec<Duration>,
    /// Messages and the time for all of them when sent at once.
    pub bulk: (usize, Duration),
    /// Every member's view (its `you` aside) equals the leader's.
    pub views_agree: bool,
    /// The leader's task aborted → every other member has a frame of the
    /// next epoch.
    pub failover: Duration,
    pub start: Duration,
}

/// `members` in one community room (each its own identity, iroh endpoint
/// and state dir, all in this process): `latency` messages one at a time,
/// then `bulk` messages queued at once across the members, a check that
/// every view agrees, and the leader crashing (its task aborted) with a
/// member taking over.
pub async fn crowd(root: &Path, members: usize, latency: usize, bulk: usize) -> Crowd {
    let (url, _server) = server(&root.join("db.sqlite"), 3).await;
    let started = std::time::Instant::now();
    let mut whos = Vec::new();
    for i in 0..members {
        whos.push(who(&url, root, &format!("m{i}")).await);
    }
    let mut host_side = host(&whos[0], "community-room-v1", Map::new()).await;
    let post = host_side.post.clone().unwrap();
    let mut sides = vec![];
    for w in &whos[1..] {
        sides.push(join(w, "community-room-v1", &post));
    }
    let mut dirs = vec![host_side.state_dir().await];
    for s in sides.iter_mut() {
        dirs.push(s.state_dir().await);
    }
    // Everyone seated: the leader's newest view lists every member.
    let seated = |d: &Path| {
        view(d)
            .and_then(|v| {
                v.get("presence")
                    .and_then(Value::as_object)
                    .map(|p| p.len())
            })
            .unwrap_or(0)
    };
    let t = std::time::Instant::now();
    while dirs.iter().any(|d| seated(d) < members) {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the room never filled: seated {:?}; the leader refused {:?}; a member failed: {:?}",
            dirs.iter().map(|d| seated(d)).collect::<Vec<_>>(),
            events(&dirs[0], "group_join_rejected"),
            dirs.iter()
                .flat_map(|d| events(d, "group_reconnect_failed"))
                .next()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let start = started.elapsed();
    let mut tails: Vec<FrameTail> = dirs.iter().map(|d| FrameTail::new(d)).collect();
    let mut target = {
        for t in tails.iter_mut() {
            t.poll();
        }
        tails
            .iter()
            .filter_map(|t| t.newest)
            .map(|n| n.1)
            .max()
            .unwrap_or(0)
    };
    let reached = |tails: &mut Vec<FrameTail>, seq: i64| {
        tails.iter_mut().all(|t| {
            t.poll();
            t.newest.is_some_and(|n| n.1 >= seq)
        })
    };
    let mut latencies = Vec::new();
    for k in 0..latency {
        target += 1;
        let t0 = std::time::Instant::now();
        say(&dirs[k % members], &format!("latency {k}"));
        while !reached(&mut tails, target) {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "message {k} never reached everyone"
            );
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        latencies.push(t0.elapsed());
    }
    let t0 = std::time::Instant::now();
    for k in 0..bulk {
        say(&dirs[k % members], &format!("bulk {k}"));
    }
    target += bulk as i64;
    while !reached(&mut tails, target) {
        assert!(
            t0.elapsed() < Duration::from_secs(600),
            "the bulk messages never all arrived"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let bulk_time = t0.elapsed();
    // Snapshots are coalesced (written at most once per gap, longer when a
    // write is slow on a loaded machine): the views agree once the last
    // pending write of each member is out, so wait for that, within reason.
    let t0 = std::time::Instant::now();
    let views_agree = loop {
        let leader_view = shared_view(&dirs[0]);
        let differ = dirs.iter().position(|d| shared_view(d) != leader_view);
        match differ {
            None => break true,
            Some(_) if t0.elapsed() < Duration::from_secs(10) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Some(k) => {
                eprintln!(
                    "member {k}'s view differs from the leader's after 10 s:\n leader: {leader_view}\n member: {}",
                    shared_view(&dirs[k])
                );
                break false;
            }
        }
    };
    // The leader crashes.
    host_side.task.abort();
    let t0 = std::time::Instant::now();
    let moved = |tails: &mut [FrameTail]| {
        tails.iter_mut().all(|t| {
            t.poll();
            t.newest.is_some_and(|n| n.0 >= 1)
        })
    };
    while !moved(&mut tails[1..]) {
        assert!(t0.elapsed() < Duration::from_secs(120), "nobody took over");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let failover = t0.elapsed();
    for s in &sides {
        s.stop();
    }
    for s in sides {
        let _ = tokio::time::timeout(Duration::from_secs(10), s.task).await;
    }
    Crowd {
        members,
        latencies,
        bulk: (bulk, bulk_time),
        views_agree,
        failover,
        start,
    }
}
