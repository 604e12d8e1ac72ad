//! The sessions screen's work: the lists, following the attached session
//! and reading its feed back, decisions and the strategy, joining and
//! hosting over `services::remote`.

use crate::engine::ControlMode;
use crate::json::{Map, Value};
use crate::obj;
use crate::services::group;
use crate::services::remote::{self, HostPlan, JoinPlan, Progress};
use crate::session::{StateDir, StrategyFile, SubmitOptions, files};
use crate::spec::Spec;
use crate::tui::community::Community;
use crate::tui::effect::{HostJob, SessionTask};
use crate::tui::report::Report;
use crate::tui::report::feed::WatchUpdate;
use crate::tui::report::rows::{parse_invitations, scan_sessions};
use crate::tui::watch;
use crate::web::Client;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

/// Starts `t`; the handle of a watcher (the runner keeps one at a time).
pub(super) fn start(
    t: SessionTask,
    tx: &UnboundedSender<Report>,
    quit: &tokio::sync::watch::Sender<bool>,
) -> Option<JoinHandle<()>> {
    let tx = tx.clone();
    match t {
        SessionTask::Scan { data_dir } => scan(data_dir, tx),
        SessionTask::Replay { dir }
            if dir
                .child
                .join(crate::tui::tank_journal::FRAMES_FILE)
                .is_file() =>
        {
            tokio::task::spawn_blocking(move || {
                let path = dir.child.join(crate::tui::tank_journal::FRAMES_FILE);
                let r = crate::tui::tank_journal::load(&path)
                    .map(Box::new)
                    .map_err(|e| e.to_string());
                let _ = tx.send(Report::TankReplay(r));
            });
        }
        SessionTask::TankOrder { child, change } => {
            tokio::task::spawn_blocking(move || {
                let r = crate::tui::tank_order::write_change(&child, &change);
                let _ = tx.send(Report::TankOrdered(r));
            });
        }
        SessionTask::Replay { dir } => {
            tokio::task::spawn_blocking(move || {
                let t = crate::session::replay::load_dir(&dir);
                let _ = tx.send(Report::Replay(Ok(Box::new(t))));
            });
        }
        SessionTask::ReplayLog { path } if crate::session::bundle::is_bundle(&path) => {
            tokio::task::spawn_blocking(move || {
                let kind = crate::session::bundle::kind_of(&path).unwrap_or_default();
                if kind == crate::market::bundle::KIND {
                    let r = match crate::market::bundle::verify(&path) {
                        Ok(v) => Report::BundleReplay {
                            verified: format!(
                                "bundle verified (GTL transaction {}: {}, {} chained events)",
                                v.view.transaction_id,
                                v.view.state.as_str(),
                                v.chain.events
                            ),
                            timeline: Err("a transaction has no steps to replay".into()),
                        },
                        Err(e) => Report::BundleReplay {
                            verified: String::new(),
                            timeline: Err(format!("the bundle failed verification: {e}")),
                        },
                    };
                    let _ = tx.send(r);
                    return;
                }
                let werewolf = kind == crate::werewolf::bundle::KIND;
                if werewolf {
                    let r = match crate::werewolf::bundle::verify(&path) {
                        Ok(v) => Report::BundleReplay {
                            verified: format!(
                                "bundle verified (werewolf game, signed by {}…)",
                                v.manifest
                                    .get_str("participant_public_key")
                                    .unwrap_or_default()
                                    .chars()
                                    .take(12)
                                    .collect::<String>()
                            ),
                            timeline: Ok(Box::new(v.timeline)),
                        },
                        Err(e) => Report::BundleReplay {
                            verified: String::new(),
                            timeline: Err(format!("the bundle failed verification: {e}")),
                        },
                    };
                    let _ = tx.send(r);
                    return;
                }
                let r = match crate::session::bundle::replay(&path) {
                    Ok((v, t)) => {
                        let s = |k: &str| v.manifest.get_str(k).unwrap_or_default().to_owned();
                        let short = |t: String| t.chars().take(12).collect::<String>();
                        let verified = format!(
                            "bundle verified ({} scope, signed by {}…)",
                            s("scope"),
                            short(s("participant_public_key"))
                        );
                        let timeline = t.map(Box::new).ok_or_else(|| {
                            "a public bundle carries no session files to replay".to_owned()
                        });
                        Report::BundleReplay { verified, timeline }
                    }
                    Err(e) => Report::BundleReplay {
                        verified: String::new(),
                        timeline: Err(format!("the bundle failed verification: {e}")),
                    },
                };
                let _ = tx.send(r);
            });
        }
        SessionTask::ReplayLog { path } => {
            tokio::task::spawn_blocking(move || {
                let t = crate::werewolf::replay::load(&path)
                    .map(Box::new)
                    .map_err(|e| e.to_string());
                let _ = tx.send(Report::Replay(t));
            });
        }
        SessionTask::ListInvitations { client, data_dir } => list_invitations(client, data_dir, tx),
        SessionTask::CancelInvitation { client, post_id } => cancel_invitation(client, post_id, tx),
        SessionTask::Watch { dir, generation } => return Some(follow(dir, generation, tx)),
        SessionTask::LoadPage {
            events,
            generation,
            start,
            count,
        } => load_page(events, generation, start, count, tx),
        SessionTask::Search {
            events,
            generation,
            needle,
        } => search_feed(events, generation, needle, tx),
        SessionTask::Decide { child, body } => submit_decision(child, body, tx),
        SessionTask::Chat { child, body } => send_chat(child, body, tx),
        SessionTask::Whisper {
            child,
            text,
            schema,
        } => send_whisper(child, text, schema, tx),
        SessionTask::Strategy {
            child,
            strategy,
            merge,
        } => write_strategy(child, strategy, merge, tx),
        SessionTask::Join {
            community,
            post_id,
            protocol_id,
            mode,
            data_dir,
        } => {
            let plan = JoinJob {
                post_id,
                protocol_id,
                mode,
                data_dir,
            };
            join(community, plan, quit.subscribe(), tx)
        }
        SessionTask::RoomAction { dir, action } => room_action(dir, action, tx),
        SessionTask::Coach(job) => super::coach::start(job, tx),
        SessionTask::Nicknames { client, keys } => nicknames(client, keys, tx),
        SessionTask::Host {
            community,
            job,
            cancel,
        } => host(community, job, quit.subscribe(), cancel, tx),
        SessionTask::Reputation { client, keys } => super::social::reputation(client, keys, tx),
        SessionTask::Discover {
            client,
            data_dir,
            query,
            cursor,
        } => super::social::discover(client, data_dir, query, cursor, tx),
        SessionTask::Install {
            client,
            data_dir,
            protocol_id,
        } => super::social::install(client, data_dir, protocol_id, tx),
    }
    None
}

/// How long a host's stats are reused, and how many hosts are asked per
/// refresh of the invitation list.
const HOST_STATS_TTL: Duration = Duration::from_secs(60);
const HOST_STATS_PER_REFRESH: usize = 8;

type HostStatsCache = std::collections::HashMap<
    String,
    (
        std::time::Instant,
        Option<crate::tui::report::rows::HostStats>,
    ),
>;

/// Hosts' stats as last asked (one table for the console process).
fn host_stats_cache() -> std::sync::MutexGuard<'static, HostStatsCache> {
    static CACHE: std::sync::OnceLock<std::sync::Mutex<HostStatsCache>> =
        std::sync::OnceLock::new();
    CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Lists the invitations; marks those whose protocol is not in the
/// library (joining fetches it) and adds each host's rating and games from
/// the server (a host the server has no stats for shows none).
fn list_invitations(client: Client, data_dir: PathBuf, tx: UnboundedSender<Report>) {
    tokio::spawn(async move {
        let mut list = match client
            .call("GET", "/api/v1/invitations?limit=200", None, &[200])
            .await
        {
            Ok(v) => parse_invitations(&v),
            Err(e) => {
                let _ = tx.send(Report::Invitations(Err(e.to_string())));
                return;
            }
        };
        if let Ok(lib) = crate::library::Library::open(Some(&data_dir)) {
            for i in &mut list {
                if let Ok(e) = lib.resolve(&i.protocol_id) {
                    i.alias = e.alias.clone();
                    i.protocol_name = e.name.clone();
                    i.installed = true;
                } else {
                    i.installed = false;
                }
            }
        }
        let mut hosts: Vec<String> = list.iter().map(|i| i.public_key.clone()).collect();
        hosts.sort();
        hosts.dedup();
        // The list refreshes every 2 s: a host's stats are asked at most once
        // a minute, and a few new hosts per refresh, so the console stays far
        // below a server's per-key rate limit.
        let due: Vec<String> = {
            let cache = host_stats_cache();
            hosts
                .iter()
                .filter(|pk| {
                    cache
                        .get(*pk)
                        .is_none_or(|(at, _)| at.elapsed() >= HOST_STATS_TTL)
                })
                .take(HOST_STATS_PER_REFRESH)
                .cloned()
                .collect()
        };
        let asks = due.into_iter().map(|pk| {
            let client = client.clone();
            async move {
                let path = format!("/api/v1/agents/{pk}/stats");
                let stats =
                    tokio::time::timeout(Duration::from_secs(5), client.raw("GET", &path, None))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .filter(|(status, _)| *status == 200)
                        .map(|(_, v)| crate::tui::report::rows::HostStats::from_json(&v));
                (pk, stats)
            }
        });
        let fetched = futures_util::future::join_all(asks).await;
        let mut cache = host_stats_cache();
        for (pk, stats) in fetched {
            cache.insert(pk, (std::time::Instant::now(), stats));
        }
        for i in &mut list {
            i.host = cache.get(&i.public_key).and_then(|(_, s)| s.clone());
        }
        drop(cache);
        let _ = tx.send(Report::Invitations(Ok(list)));
    });
}

fn scan(data_dir: PathBuf, tx: UnboundedSender<Report>) {
    tokio::task::spawn_blocking(move || {
        let _ = tx.send(Report::Sessions(scan_sessions(&data_dir)));
    });
}

fn cancel_invitation(client: Client, post_id: String, tx: UnboundedSender<Report>) {
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
        let _ = tx.send(Report::TaskDone(r));
    });
}

fn load_page(
    events: PathBuf,
    generation: u64,
    start: usize,
    count: usize,
    tx: UnboundedSender<Report>,
) {
    tokio::task::spawn_blocking(move || {
        let rows = watch::read_page(&events, start, count);
        let _ = tx.send(Report::Watch(
            generation,
            Box::new(WatchUpdate {
                page: Some((start, rows)),
                ..WatchUpdate::default()
            }),
        ));
    });
}

/// Matches kept per search (the newest).
const SEARCH_CAP: usize = 10_000;

fn search_feed(events: PathBuf, generation: u64, needle: String, tx: UnboundedSender<Report>) {
    tokio::task::spawn_blocking(move || {
        let m = watch::search_file(&events, &needle, SEARCH_CAP);
        let _ = tx.send(Report::Watch(
            generation,
            Box::new(WatchUpdate {
                matches: Some((needle, m)),
                ..WatchUpdate::default()
            }),
        ));
    });
}

/// Submits a decision the way `palaver session decide` does.
fn submit_decision(child: PathBuf, body: Map, tx: UnboundedSender<Report>) {
    tokio::task::spawn_blocking(move || {
        let opts = SubmitOptions {
            origin: "console".into(),
            agent_id: None,
            idempotency_key: None,
            require_match_key: false,
        };
        let shown = crate::json::canonical::to_string_ordered(&Value::Object(body.clone()));
        let r = match crate::session::submit(&child, body, &opts) {
            Ok(s) if s.ok => Ok(format!("decided {shown}")),
            Ok(s) => Err(format!("not accepted: {}", s.reason.unwrap_or(s.status))),
            Err(e) => Err(format!("writing the decision: {e}")),
        };
        let _ = tx.send(Report::Submitted(r));
    });
}

/// Writes a user whisper the way `palaver session whisper` does: the
/// whispers.jsonl line, the operator_hint, the materialized intent, the ack.
fn send_whisper(
    child: PathBuf,
    text: String,
    schema: Option<crate::engine::whisper::Schema>,
    tx: UnboundedSender<Report>,
) {
    tokio::task::spawn_blocking(move || {
        let r =
            crate::session::whisper::send(&child, &text, "user", "console", None, schema.as_ref())
                .map(|w| {
                    let id = w.entry.get("id").map(Value::py_str).unwrap_or_default();
                    let what = match w.ack_status {
                        "strategy_active" | "policy_active" => {
                            "a persistent strategy (strategy.json)"
                        }
                        "decision_queued" => "a one-shot decision for the open window",
                        "intent_queued" => "an intent for the next window",
                        "rejected_finalized" => {
                            "a one-shot move, but that window is already closed"
                        }
                        _ => "a hint (not understood as a move)",
                    };
                    (id, what.to_owned())
                })
                .map_err(|e| format!("whisper not sent: {e}"));
        let _ = tx.send(Report::Whispered(r));
    });
}

/// Appends a chat line to the engine dir's inbox (free mode).
fn send_chat(child: PathBuf, body: Map, tx: UnboundedSender<Report>) {
    tokio::task::spawn_blocking(move || {
        let r = files::append_line(&child.join("inbox.jsonl"), &Value::Object(body))
            .map(|_| "sent".to_owned())
            .map_err(|e| format!("writing the inbox: {e}"));
        let _ = tx.send(Report::Submitted(r));
    });
}

/// Saves (set) or merges the strategy, recorded in strategy_events.jsonl.
fn write_strategy(child: PathBuf, strategy: Map, merge: bool, tx: UnboundedSender<Report>) {
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
        let _ = tx.send(Report::Saved(r));
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
        Progress::Fetched(f) => format!(
            "fetched protocol {}: {}",
            f.installed.alias,
            f.next.explain(&f.installed.alias)
        ),
        Progress::Warning(w) => format!("warning: {w}"),
        Progress::Group(note) => note.clone(),
        Progress::StateDir { .. } => return None,
    })
}

fn reporter(tx: UnboundedSender<Report>) -> impl Fn(Progress) + Send + Sync {
    move |p: Progress| {
        if let Progress::StateDir { parent, .. } = &p {
            let _ = tx.send(Report::Attach(parent.clone()));
        }
        if let Progress::InvitationOpen { post_id } = &p {
            let _ = tx.send(Report::InvitationOpen(post_id.clone()));
        }
        if let Some(l) = progress_line(&p) {
            let _ = tx.send(Report::Progress(l));
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
/// The status line when a session task ends, for people ("session
/// finished — you won", "session ended: peer timeout — …"), as the session
/// pane says it; the error's detail follows a failure.
fn finished(
    r: Result<remote::Finished, remote::RemoteError>,
    role: &str,
) -> Result<String, String> {
    match r {
        Ok(f) => {
            let o = &f.outcome;
            let status = if o.completed { "closed" } else { "failed" };
            let mut line = format!(
                "session {}",
                crate::tui::panes::snapshot::ending(
                    status,
                    Some(&o.reason),
                    o.winner.as_deref(),
                    role
                )
            );
            if let Some(e) = o.error.as_deref().filter(|e| !e.is_empty()) {
                line.push_str(&format!(" ({e})"));
            }
            if o.completed { Ok(line) } else { Err(line) }
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Queues a room's action in its dir, as `palaver session action` does.
fn room_action(dir: PathBuf, action: Value, tx: UnboundedSender<Report>) {
    tokio::task::spawn_blocking(move || {
        let shown = crate::json::canonical::to_string_ordered(&action);
        let r = group::outbox::append_action(&dir, &action).map(|_| format!("queued {shown}"));
        let _ = tx.send(Report::RoomAction(r));
    });
}

/// Asks the community each key's nickname (`/api/v1/agents/{key}/stats`);
/// a key it does not know is left out.
fn nicknames(client: Client, keys: Vec<String>, tx: UnboundedSender<Report>) {
    tokio::spawn(async move {
        let asks = keys.into_iter().map(|pk| {
            let client = client.clone();
            async move {
                let path = format!("/api/v1/agents/{pk}/stats");
                let nick =
                    tokio::time::timeout(Duration::from_secs(5), client.raw("GET", &path, None))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .filter(|(status, _)| *status == 200)
                        .and_then(|(_, v)| v.get_str("nickname").map(str::to_owned))
                        .filter(|n| !n.is_empty());
                nick.map(|n| (pk, n.chars().take(32).collect::<String>()))
            }
        });
        let got: Vec<(String, String)> = futures_util::future::join_all(asks)
            .await
            .into_iter()
            .flatten()
            .collect();
        if !got.is_empty() {
            let _ = tx.send(Report::Nicknames(got));
        }
    });
}

/// What to join.
struct JoinJob {
    post_id: String,
    protocol_id: String,
    mode: ControlMode,
    data_dir: PathBuf,
}

/// The task's report of a room: closed (completed) or left, and why.
fn room_finished(r: Result<group::RoomFinished, remote::RemoteError>) -> Result<String, String> {
    match r {
        Ok(f) if f.completed => Ok(format!(
            "room {} closed{}",
            f.group_id,
            f.outcome.map(|o| format!(": {o}")).unwrap_or_default()
        )),
        Ok(f) => Err(format!(
            "left room {}: {}",
            f.group_id,
            f.reason.as_deref().unwrap_or("ended")
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Joins a room as a member; the room's dir is attached as soon as it is
/// made. The rules are needed only to take over a leaderless room.
async fn join_room(
    c: &Community,
    job: JoinJob,
    spec: Spec,
    cancel: tokio::sync::watch::Receiver<bool>,
    tx: &UnboundedSender<Report>,
) -> Result<String, String> {
    let hooks = group::member_hooks(&spec);
    let plan = group::JoinRoomPlan {
        post_id: job.post_id,
        spec,
        hooks,
        mode: job.mode,
        peer: c.peer.clone(),
        data_dir: job.data_dir,
        state_dir: None,
    };
    let report = reporter(tx.clone());
    let never = tokio::sync::watch::channel(false).1;
    room_finished(group::join(&c.client, plan, &report, cancelled(cancel, never)).await)
}

/// Joins an invitation and plays it with a state dir the console attaches.
fn join(
    c: Box<Community>,
    job: JoinJob,
    cancel: tokio::sync::watch::Receiver<bool>,
    tx: UnboundedSender<Report>,
) {
    tokio::spawn(async move {
        if let Some(spec) = group::room_spec(Some(&job.data_dir), &job.protocol_id) {
            let r = join_room(&c, job, spec, cancel, &tx).await;
            let _ = tx.send(Report::TaskDone(r));
            return;
        }
        let JoinJob {
            post_id,
            mode,
            data_dir,
            ..
        } = job;
        let plan = JoinPlan::new(post_id, mode, c.peer.clone(), Some(data_dir.clone()));
        let resolve = |pid: &str| -> Result<(Spec, Box<dyn crate::engine::Hooks>), String> {
            crate::services::protocol::hooks_for(Some(&data_dir), pid, false)
                .map_err(|e| e.to_string())
        };
        let report = reporter(tx.clone());
        let never = tokio::sync::watch::channel(false).1;
        let r = remote::join(&c.client, plan, resolve, &report, cancelled(cancel, never)).await;
        let _ = tx.send(Report::TaskDone(finished(r, "guest")));
    });
}

/// How long an invitation hosted from the console waits for a guest.
const HOST_TTL: Duration = Duration::from_secs(30 * 60);

/// Hosts an invitation and plays it with a state dir the console attaches;
/// `cancel_this` withdraws this one invitation (or ends its session).
fn host(
    c: Box<Community>,
    job: Box<HostJob>,
    cancel: tokio::sync::watch::Receiver<bool>,
    cancel_this: tokio::sync::watch::Receiver<bool>,
    tx: UnboundedSender<Report>,
) {
    let HostJob {
        spec,
        options,
        mode,
        data_dir,
    } = *job;
    tokio::spawn(async move {
        if spec.flow_mode() == "authoritative_group" {
            let Some(hooks) = group::native_hooks(&spec) else {
                let _ = tx.send(Report::TaskDone(Err(
                    "palaver has no rules for this group protocol".into(),
                )));
                return;
            };
            let plan = group::HostRoomPlan {
                bots: 0,
                message: format!(
                    "{} hosted from the console",
                    spec.name().unwrap_or("a room")
                ),
                spec,
                hooks,
                options,
                mode,
                ttl: HOST_TTL,
                peer: c.peer.clone(),
                data_dir,
                state_dir: None,
            };
            let report = reporter(tx.clone());
            let r = group::host(&c.client, plan, &report, cancelled(cancel, cancel_this)).await;
            let _ = tx.send(Report::TaskDone(room_finished(r)));
            return;
        }
        let Some(hooks) = crate::protocols::native_hooks(&spec) else {
            let _ = tx.send(Report::TaskDone(Err(
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
            upkeep: remote::Upkeep::default(),
            peer: c.peer.clone(),
            data_dir: Some(data_dir),
            state_dir: None,
            chat: None,
            observer: None,
        };
        let report = reporter(tx.clone());
        let r = remote::host(&c.client, plan, &report, cancelled(cancel, cancel_this)).await;
        let _ = tx.send(Report::TaskDone(finished(r, "host")));
    });
}

/// Follows `dir` until the receiver is gone, reporting as
/// `Report::Watch(generation, …)`.
fn follow(dir: StateDir, generation: u64, tx: UnboundedSender<Report>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut w = watch::Watcher::new(dir);
        loop {
            let (back, upd) = tokio::task::spawn_blocking(move || {
                let u = w.poll();
                (w, u)
            })
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            w = back;
            if let Some(u) = upd
                && tx.send(Report::Watch(generation, Box::new(u))).is_err()
            {
                return;
            }
            if tx.is_closed() {
                return;
            }
            tokio::time::sleep(watch::POLL).await;
        }
    })
}
