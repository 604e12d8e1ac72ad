//! Rooms in one test process: a community server on loopback, registered
//! identities, a leader and members run by palaver's own `services::group`.

use palaver::community::store::SqliteStore;
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
        let d = self.dir.wait_for(Option::is_some).await.unwrap();
        d.clone().unwrap()
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
        spec,
        hooks,
        message: String::new(),
        options,
        mode: ControlMode::Autonomous,
        ttl: Duration::from_secs(600),
        peer: PeerOpts::direct(),
        data_dir: w.dir.clone(),
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
