//! Slow work of the console, each as a task that reports back with an
//! [`Action`]: the community (embedded or remote) and its house agent,
//! listing invitations and sessions, hosting and joining, decisions, the
//! strategy file, and feed pages and searches read from disk.

use super::action::Action;
use super::data;
use super::watch::{self, WatchUpdate};
use crate::community::{Client, embedded};
use crate::engine::ControlMode;
use crate::identity::KeyPair;
use crate::json::{Map, Value};
use crate::obj;
use crate::services::remote::{self, HostPlan, JoinPlan, PeerOpts, Progress};
use crate::session::{StrategyFile, SubmitOptions, files};
use crate::spec::Spec;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// The community the console talks to.
#[derive(Clone)]
pub struct Community {
    pub client: Client,
    pub url: String,
    pub embedded: bool,
    pub nickname: String,
    /// Direct loopback reach on the embedded community; relays otherwise
    /// (config.toml's `relay_url`, else n0's), as `palaver host`/`join`.
    pub peer: PeerOpts,
}

impl Community {
    /// A client for `url` with this machine's identity; `relays` are
    /// config.toml's `relay_url` (empty: n0's relays and discovery).
    pub fn connect(
        url: &str,
        embedded: bool,
        nickname: &str,
        data_dir: &Path,
        relays: &[iroh::RelayUrl],
    ) -> Result<Community, String> {
        let keys = KeyPair::load(data_dir).map_err(|e| e.to_string())?;
        Ok(Community::connect_with(url, embedded, nickname, keys)?.with_relays(relays))
    }

    /// A client for `url` with the identity `keys` (n0's relays off the
    /// embedded community; [`Community::with_relays`] names others).
    pub fn connect_with(
        url: &str,
        embedded: bool,
        nickname: &str,
        keys: KeyPair,
    ) -> Result<Community, String> {
        let client = Client::new(url, keys).map_err(|e| e.to_string())?;
        Ok(Community {
            client,
            url: url.to_owned(),
            embedded,
            nickname: nickname.to_owned(),
            peer: peer_opts(embedded, &[]),
        })
    }

    /// The same community, its sessions reaching peers through `relays`.
    pub fn with_relays(mut self, relays: &[iroh::RelayUrl]) -> Community {
        self.peer = peer_opts(self.embedded, relays);
        self
    }
}

/// How sessions on a community reach their peers: direct on loopback for
/// the embedded one (it lives on this machine: relays are not used, as
/// `--direct` overrides `--relay` on the CLI); otherwise `relays`, or n0's
/// relays and discovery when there are none.
pub fn peer_opts(embedded: bool, relays: &[iroh::RelayUrl]) -> PeerOpts {
    if embedded {
        PeerOpts::direct()
    } else {
        PeerOpts {
            relays: relays.to_vec(),
            ..PeerOpts::relay()
        }
    }
}

/// How the console reaches its community.
#[derive(Debug, Clone)]
pub struct Startup {
    pub data_dir: PathBuf,
    /// `None`: start the embedded community with the house agent.
    pub server: Option<String>,
    pub nickname: String,
    /// Run the house agent on the embedded community.
    pub house: bool,
}

/// Brings the community up and registers this identity; reports
/// `CommunityReady` (or a `Progress` line saying what failed). The house
/// agent (its games and its market bot) and the embedded server live as
/// long as the returned task.
pub fn start_community(s: Startup, tx: UnboundedSender<Action>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let fail = |tx: &UnboundedSender<Action>, e: String| {
            let _ = tx.send(Action::Invitations(Err(e)));
        };
        let keys = match KeyPair::init(&s.data_dir, false) {
            Ok((k, _)) => k,
            Err(e) => return fail(&tx, format!("identity: {e}")),
        };
        let (url, embedded_server) = match &s.server {
            Some(u) => (u.clone(), None),
            None => {
                let db = s.data_dir.join("community.sqlite");
                match embedded::start_embedded(&db).await {
                    Ok((url, h)) => (url, Some(h)),
                    Err(e) => {
                        return fail(&tx, format!("embedded community ({}): {e}", db.display()));
                    }
                }
            }
        };
        let client = match Client::new(&url, keys) {
            Ok(c) => c,
            Err(e) => return fail(&tx, e.to_string()),
        };
        if let Err(e) = embedded::ensure_registered(&client, &s.nickname).await {
            return fail(&tx, format!("registering on {url}: {e}"));
        }
        let house = if embedded_server.is_some() && s.house {
            let house_dir = s.data_dir.join("house");
            match KeyPair::init(&house_dir, false) {
                Ok((hk, _)) => match Client::new(&url, hk.clone()) {
                    Ok(hc) => match embedded::ensure_registered(&hc, "house").await {
                        Ok(()) => Some((
                            AbortOnDrop(tokio::spawn(crate::services::house::run_house(
                                hc,
                                &crate::services::house::HOUSE_GAMES,
                                PeerOpts::direct(),
                                |_alias, _p| {},
                            ))),
                            AbortOnDrop(tokio::spawn(house_market_bot(url.clone(), hk))),
                        )),
                        Err(e) => {
                            fail(&tx, format!("house agent: {e}"));
                            None
                        }
                    },
                    Err(e) => {
                        fail(&tx, format!("house agent: {e}"));
                        None
                    }
                },
                Err(e) => {
                    fail(&tx, format!("house identity: {e}"));
                    None
                }
            }
        } else {
            None
        };
        let _ = tx.send(Action::CommunityReady {
            url,
            embedded: embedded_server.is_some(),
            nickname: s.nickname.clone(),
        });
        // Keep the embedded server and the house alive with the console;
        // the house ends with this task, even when it is aborted.
        let _house = house;
        if let Some(h) = embedded_server {
            let _ = h.await;
        }
    })
}

/// A task that ends when this is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The house's provider bot on the embedded market, so a newcomer can
/// watch a job solved and settled: one solver thread, targets up to six hex
/// digits, the job's budget as its price. It reconnects when the market
/// cannot be read (the bot ends on listing errors).
async fn house_market_bot(url: String, keys: KeyPair) {
    let opts = crate::market::bot::BotOptions {
        threads: 1,
        max_target_hex: 6,
        ..crate::market::bot::BotOptions::default()
    };
    loop {
        if let Ok(c) = crate::market::MarketClient::connect(&url, keys.clone(), None).await {
            let _ = crate::market::bot::run(&c, &opts, &|_| {}).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

pub fn list_invitations(client: Client, tx: UnboundedSender<Action>) {
    tokio::spawn(async move {
        let r = client
            .call("GET", "/api/v1/invitations?limit=200", None, &[200])
            .await
            .map(|v| data::parse_invitations(&v))
            .map_err(|e| e.to_string());
        let _ = tx.send(Action::Invitations(r));
    });
}

pub fn scan_sessions(data_dir: PathBuf, tx: UnboundedSender<Action>) {
    tokio::task::spawn_blocking(move || {
        let _ = tx.send(Action::Sessions(data::scan_sessions(&data_dir)));
    });
}

pub fn cancel_invitation(client: Client, post_id: String, tx: UnboundedSender<Action>) {
    tokio::spawn(async move {
        let r = client
            .call(
                "DELETE",
                &format!("/api/v1/invitations/{post_id}"),
                None,
                &[200, 204],
            )
            .await
            .map(|_| format!("invitation {post_id} cancelled"))
            .map_err(|e| format!("cancelling {post_id}: {e}"));
        let _ = tx.send(Action::TaskDone(r));
    });
}

pub fn load_page(
    events: PathBuf,
    generation: u64,
    start: usize,
    count: usize,
    tx: UnboundedSender<Action>,
) {
    tokio::task::spawn_blocking(move || {
        let rows = watch::read_page(&events, start, count);
        let _ = tx.send(Action::Watch(
            generation,
            Box::new(WatchUpdate {
                page: Some((start, rows)),
                ..WatchUpdate::default()
            }),
        ));
    });
}

/// Matches kept per search (the newest).
pub const SEARCH_CAP: usize = 10_000;

pub fn search_feed(events: PathBuf, generation: u64, needle: String, tx: UnboundedSender<Action>) {
    tokio::task::spawn_blocking(move || {
        let m = watch::search_file(&events, &needle, SEARCH_CAP);
        let _ = tx.send(Action::Watch(
            generation,
            Box::new(WatchUpdate {
                matches: Some((needle, m)),
                ..WatchUpdate::default()
            }),
        ));
    });
}

/// Submits a decision the way `palaver session decide` does.
pub fn submit_decision(child: PathBuf, body: Map, tx: UnboundedSender<Action>) {
    tokio::task::spawn_blocking(move || {
        let opts = SubmitOptions {
            origin: "console".into(),
            agent_id: None,
            idempotency_key: None,
            require_match_key: false,
        };
        let shown = crate::canonical::to_string_ordered(&Value::Object(body.clone()));
        let r = match crate::session::submit(&child, body, &opts) {
            Ok(s) if s.ok => Ok(format!("decided {shown}")),
            Ok(s) => Err(format!("not accepted: {}", s.reason.unwrap_or(s.status))),
            Err(e) => Err(format!("writing the decision: {e}")),
        };
        let _ = tx.send(Action::Submitted(r));
    });
}

/// Appends a chat line to the engine dir's inbox (free mode).
pub fn send_chat(child: PathBuf, body: Map, tx: UnboundedSender<Action>) {
    tokio::task::spawn_blocking(move || {
        let r = files::append_line(&child.join("inbox.jsonl"), &Value::Object(body))
            .map(|_| "sent".to_owned())
            .map_err(|e| format!("writing the inbox: {e}"));
        let _ = tx.send(Action::Submitted(r));
    });
}

/// Saves (set) or merges the strategy, recorded in strategy_events.jsonl.
pub fn write_strategy(child: PathBuf, strategy: Map, merge: bool, tx: UnboundedSender<Action>) {
    tokio::task::spawn_blocking(move || {
        let f = StrategyFile::in_dir(&child);
        let meta = Some(obj! { "origin" => "console" });
        let r = if merge {
            f.merge(strategy, meta)
        } else {
            f.set(strategy, meta)
        };
        let r = r
            .map(|_| {
                if merge {
                    "strategy merged".to_owned()
                } else {
                    "strategy saved".to_owned()
                }
            })
            .map_err(|e| format!("writing {}: {e}", f.path.display()));
        let _ = tx.send(Action::Saved(r));
    });
}

fn progress_line(p: &Progress) -> Option<String> {
    Some(match p {
        Progress::InvitationOpen { post_id } => {
            format!("invitation {post_id} is open: waiting for a guest")
        }
        Progress::TurnedAway { reason } => format!("turned a guest away: {reason}"),
        Progress::Connecting { host_public_key } => {
            format!(
                "connecting to {}…",
                host_public_key.chars().take(12).collect::<String>()
            )
        }
        Progress::Established { session_id } => {
            format!(
                "session {} established",
                session_id.chars().take(12).collect::<String>()
            )
        }
        Progress::Warning(w) => format!("warning: {w}"),
        Progress::StateDir { .. } => return None,
    })
}

fn reporter(tx: UnboundedSender<Action>) -> impl Fn(Progress) + Send + Sync {
    move |p: Progress| {
        if let Progress::StateDir { parent, .. } = &p {
            let _ = tx.send(Action::Attach(parent.clone()));
        }
        if let Progress::InvitationOpen { post_id } = &p {
            let _ = tx.send(Action::InvitationOpen(post_id.clone()));
        }
        if let Some(l) = progress_line(&p) {
            let _ = tx.send(Action::Progress(l));
        }
    }
}

/// Resolves when the console quits or this one task is cancelled (a
/// switch that is dropped never fires).
fn cancelled(
    all: tokio::sync::watch::Receiver<bool>,
    this: tokio::sync::watch::Receiver<bool>,
) -> impl Future<Output = ()> + Send {
    async fn on(mut rx: tokio::sync::watch::Receiver<bool>) {
        if rx.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
    async move {
        tokio::select! {
            _ = on(all) => {}
            _ = on(this) => {}
        }
    }
}

/// The task's report: a session that did not complete (a peer that
/// misbehaved, a cancel) is a failure the status line shows as one, with
/// its reason and detail.
fn finished(r: Result<remote::Finished, remote::RemoteError>) -> Result<String, String> {
    match r {
        Ok(f) if f.outcome.completed => Ok(f.outcome.line()),
        Ok(f) => Err(f.outcome.line()),
        Err(e) => Err(e.to_string()),
    }
}

/// Joins an invitation and plays it with a state dir the console attaches.
pub fn join(
    c: Community,
    post_id: String,
    mode: ControlMode,
    data_dir: PathBuf,
    cancel: tokio::sync::watch::Receiver<bool>,
    tx: UnboundedSender<Action>,
) {
    tokio::spawn(async move {
        let plan = JoinPlan::new(post_id, mode, c.peer.clone(), Some(data_dir.clone()));
        let resolve = |pid: &str| -> Result<(Spec, Box<dyn crate::engine::Hooks>), String> {
            let lib = crate::library::Library::open(Some(&data_dir)).map_err(|e| e.to_string())?;
            let entry = lib
                .resolve(pid)
                .map_err(|e| format!("protocol {pid}: {e} (install it to join)"))?;
            let spec = lib.load(entry).map_err(|e| e.to_string())?;
            let hooks = crate::protocols::native_hooks(&spec)
                .ok_or_else(|| format!("{} has no native hooks in palaver", entry.alias))?;
            Ok((spec, hooks))
        };
        let report = reporter(tx.clone());
        let never = tokio::sync::watch::channel(false).1;
        let r = remote::join(&c.client, plan, resolve, &report, cancelled(cancel, never)).await;
        let _ = tx.send(Action::TaskDone(finished(r)));
    });
}

/// How long an invitation hosted from the console waits for a guest.
pub const HOST_TTL: Duration = Duration::from_secs(30 * 60);

/// Hosts an invitation and plays it with a state dir the console attaches.
/// What to host: the protocol, its options, how to play, where to write.
pub struct HostJob {
    pub spec: Spec,
    pub options: Map,
    pub mode: ControlMode,
    pub data_dir: PathBuf,
}

/// Hosts an invitation and plays it with a state dir the console attaches;
/// `cancel_this` withdraws this one invitation (or ends its session).
pub fn host(
    c: Community,
    job: HostJob,
    cancel: tokio::sync::watch::Receiver<bool>,
    cancel_this: tokio::sync::watch::Receiver<bool>,
    tx: UnboundedSender<Action>,
) {
    let HostJob {
        spec,
        options,
        mode,
        data_dir,
    } = job;
    tokio::spawn(async move {
        let Some(hooks) = crate::protocols::native_hooks(&spec) else {
            let _ = tx.send(Action::TaskDone(Err(
                "this protocol has no native hooks".into()
            )));
            return;
        };
        let plan = HostPlan {
            message: format!(
                "{} hosted from the console",
                spec.name().unwrap_or("a game")
            ),
            spec,
            hooks,
            options,
            mode,
            ttl: HOST_TTL,
            peer: c.peer.clone(),
            data_dir: Some(data_dir),
            chat: None,
            observer: None,
        };
        let report = reporter(tx.clone());
        let r = remote::host(&c.client, plan, &report, cancelled(cancel, cancel_this)).await;
        let _ = tx.send(Action::TaskDone(finished(r)));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Reach;

    fn relay(s: &str) -> iroh::RelayUrl {
        crate::net::parse_relay_url(s).unwrap()
    }

    #[test]
    fn a_remote_community_uses_the_configured_relays() {
        let relays = [
            relay("http://127.0.0.1:3340"),
            relay("https://relay.example.org"),
        ];
        let dir = tempfile::tempdir().unwrap();
        KeyPair::init(dir.path(), false).unwrap();
        let c = Community::connect("http://127.0.0.1:9", false, "me", dir.path(), &relays).unwrap();
        assert_eq!(c.peer.reach, Reach::Relay);
        assert_eq!(c.peer.relays, relays);
        assert_eq!(c.peer.bind, None);
        // Without any: n0's relays and discovery, as before.
        let c = Community::connect("http://127.0.0.1:9", false, "me", dir.path(), &[]).unwrap();
        assert_eq!(c.peer.reach, Reach::Relay);
        assert!(c.peer.relays.is_empty());
    }

    #[test]
    fn the_embedded_community_stays_direct_whatever_the_relays() {
        let relays = [relay("http://127.0.0.1:3340")];
        let c = Community::connect_with("http://127.0.0.1:9", true, "me", KeyPair::generate())
            .unwrap()
            .with_relays(&relays);
        assert_eq!(c.peer.reach, Reach::Direct);
        assert!(c.peer.relays.is_empty());
        assert_eq!(c.peer.bind, PeerOpts::direct().bind);
    }

    #[test]
    fn the_console_options_relays_reach_its_settings() {
        let dir = tempfile::tempdir().unwrap();
        let relays = vec![relay("http://127.0.0.1:3340")];
        let opts = crate::tui::ConsoleOptions {
            data_dir: dir.path().to_owned(),
            server: Some("http://127.0.0.1:9".into()),
            house: false,
            theme: None,
            nickname: "me".into(),
            relays: relays.clone(),
            attach: Vec::new(),
            wolf_join: None,
        };
        let settings = crate::tui::console_settings(&opts, None).unwrap();
        assert_eq!(settings.relays, relays);
    }

    #[tokio::test]
    async fn the_console_takes_its_settings_relays_to_a_remote_community() {
        let dir = tempfile::tempdir().unwrap();
        KeyPair::init(dir.path(), false).unwrap();
        let relays = vec![relay("http://127.0.0.1:3340")];
        let mut settings = crate::tui::load_settings(dir.path(), None, None).unwrap();
        settings.relays = relays.clone();
        let mut h = crate::tui::Headless::new(settings, 80, 24);
        h.update(Action::CommunityReady {
            url: "http://127.0.0.1:9".into(),
            embedded: false,
            nickname: "me".into(),
        });
        let c = h.app.community.as_ref().expect("connected");
        assert_eq!(c.peer.reach, Reach::Relay);
        assert_eq!(c.peer.relays, relays);
        // The embedded community stays on loopback.
        h.update(Action::CommunityReady {
            url: "http://127.0.0.1:9".into(),
            embedded: true,
            nickname: "me".into(),
        });
        let c = h.app.community.as_ref().expect("connected");
        assert_eq!(c.peer.reach, Reach::Direct);
        assert!(c.peer.relays.is_empty());
    }
}
