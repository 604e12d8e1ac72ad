//! The inbox and leaderboard screens' work, the invitations list's host
//! reputation, and the host form's protocol picker: each a call of
//! `community::social` (or `services::protocol::fetch`) whose outcome goes
//! back as a report. None of them blocks the loop; every failure is a
//! line of text.

use crate::community::social::{self, Who};
use crate::tui::effect::SocialTask;
use crate::tui::report::Report;
use crate::tui::report::social::{
    Found, InboxList, InboxReport, LeaderReport, Pick, PickerReport, Ready, Reputation,
};
use crate::web::Client;
use futures_util::StreamExt;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// Messages listed per inbox read.
pub const INBOX_PAGE: u32 = 50;
/// Rows per leaderboard page.
pub const BOARD_PAGE: u32 = 20;
/// Directory entries read per page, and pages per search.
const DIRECTORY_PAGE: u32 = 50;
const DIRECTORY_PAGES: u32 = 4;
/// Requests in flight at once for hosts' reputations and senders' names.
const CONCURRENT: usize = 2;
/// Senders named per inbox read.
const NAMES_PER_READ: usize = 16;
/// One call's bound.
const CALL: Duration = Duration::from_secs(10);

fn inbox(tx: &UnboundedSender<Report>, r: InboxReport) {
    let _ = tx.send(Report::Inbox(Box::new(r)));
}

async fn bounded<T>(f: impl Future<Output = social::Res<T>>) -> Result<T, String> {
    match tokio::time::timeout(CALL, f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no answer in {} s", CALL.as_secs())),
    }
}

pub(super) fn start(t: SocialTask, tx: &UnboundedSender<Report>) {
    let tx = tx.clone();
    match t {
        SocialTask::Inbox { client, known } => {
            tokio::spawn(async move {
                let r = list_inbox(&client, &known).await.map(Box::new);
                inbox(&tx, InboxReport::Listed(r));
            });
        }
        SocialTask::Read { client, id } => {
            tokio::spawn(async move {
                let r = bounded(social::inbox_read(&client, id))
                    .await
                    .map(Box::new)
                    .map_err(|e| (id, e));
                inbox(&tx, InboxReport::Opened(r));
            });
        }
        SocialTask::Send { client, to, text } => {
            tokio::spawn(async move {
                let r = bounded(social::inbox_send(&client, &to, &text)).await;
                inbox(&tx, InboxReport::Sent(r));
            });
        }
        SocialTask::Delete { client, id } => {
            tokio::spawn(async move {
                let r = bounded(social::inbox_delete(&client, id))
                    .await
                    .map(|()| id)
                    .map_err(|e| (id, e));
                inbox(&tx, InboxReport::Deleted(r));
            });
        }
        SocialTask::Board {
            client,
            board,
            cursor,
        } => {
            tokio::spawn(async move {
                let page = bounded(social::leaderboard(
                    &client,
                    board,
                    Some(BOARD_PAGE),
                    cursor.as_deref(),
                ))
                .await;
                let _ = tx.send(Report::Leaders(Box::new(LeaderReport::Page {
                    board,
                    cursor,
                    page,
                })));
            });
        }
    }
}

/// The newest messages and the names of senders not `known` yet.
async fn list_inbox(c: &Client, known: &[String]) -> Result<InboxList, String> {
    let page = bounded(social::inbox_list(c, Some(INBOX_PAGE), None)).await?;
    let mut ask: Vec<String> = page
        .entries
        .iter()
        .map(|e| e.sender_public_key.clone())
        .filter(|k| !known.contains(k))
        .collect();
    ask.sort();
    ask.dedup();
    ask.truncate(NAMES_PER_READ);
    let nicknames = futures_util::stream::iter(ask)
        .map(|k| async move {
            let nick = bounded(social::resolve(c, &k)).await.ok()?.nickname;
            (!nick.is_empty()).then_some((k, nick))
        })
        .buffer_unordered(CONCURRENT)
        .filter_map(|x| async move { x })
        .collect()
        .await;
    Ok(InboxList { page, nicknames })
}

/// Hosts' ELO and karma, a few requests at a time; a host the community
/// does not know (or cannot tell now) has neither.
pub(super) fn reputation(client: Client, keys: Vec<String>, tx: UnboundedSender<Report>) {
    tokio::spawn(async move {
        let c = &client;
        let got = futures_util::stream::iter(keys)
            .map(|k| async move {
                let Ok(agent) = bounded(social::resolve(c, &k)).await else {
                    return (k, Reputation::default());
                };
                let who = Who::Id(agent.id);
                let (elo, karma) = futures_util::join!(
                    bounded(social::elo(c, &who)),
                    bounded(social::karma(c, &who))
                );
                (
                    k,
                    Reputation {
                        elo: elo.ok().map(|e| e.rating),
                        karma: karma.ok().map(|k| k.karma),
                    },
                )
            })
            .buffer_unordered(CONCURRENT)
            .collect()
            .await;
        let _ = tx.send(Report::Reputation(got));
    });
}

/// A search of the community's protocol directory; each protocol found
/// says whether the library of `data_dir` has it.
pub(super) fn discover(
    client: Client,
    data_dir: PathBuf,
    query: String,
    cursor: Option<String>,
    tx: UnboundedSender<Report>,
) {
    tokio::spawn(async move {
        let more = cursor.is_some();
        let q = Some(query.as_str()).filter(|q| !q.is_empty());
        let found = bounded(social::discover(
            &client,
            q,
            DIRECTORY_PAGE,
            DIRECTORY_PAGES,
            cursor.as_deref(),
        ))
        .await;
        let found = match found {
            Ok(d) => {
                let lib = tokio::task::spawn_blocking(move || {
                    crate::library::Library::open(Some(&data_dir)).ok()
                })
                .await
                .ok()
                .flatten();
                let picks = d
                    .results
                    .into_iter()
                    .map(|listed| Pick {
                        local: lib
                            .as_ref()
                            .and_then(|l| l.resolve(&listed.protocol_id).ok())
                            .map(|e| e.alias.clone()),
                        listed,
                    })
                    .collect();
                Ok(Found {
                    picks,
                    next_cursor: d.next_cursor,
                })
            }
            Err(e) => Err(e),
        };
        let _ = tx.send(Report::Picker(Box::new(PickerReport::Found {
            query,
            more,
            found,
        })));
    });
}

/// The library's copy of `id`, when it has one: (alias, spec).
fn local_spec(data_dir: &std::path::Path, id: &str) -> Option<(String, crate::spec::Spec)> {
    let lib = crate::library::Library::open(Some(data_dir)).ok()?;
    let e = lib.resolve(id).ok()?;
    let spec = lib.load(e).ok()?;
    Some((e.alias.clone(), spec))
}

/// Makes protocol `id` ready for the host form: the library's copy, else
/// fetched and installed the way joining an unknown protocol does
/// (`services::protocol::fetch`: the hash checked, then installed).
pub(super) fn install(
    client: Client,
    data_dir: PathBuf,
    protocol_id: String,
    tx: UnboundedSender<Report>,
) {
    tokio::spawn(async move {
        let r = ready(&client, data_dir, &protocol_id)
            .await
            .map_err(|e| (protocol_id.clone(), e));
        let _ = tx.send(Report::Picker(Box::new(PickerReport::Installed(r))));
    });
}

async fn ready(client: &Client, data_dir: PathBuf, id: &str) -> Result<Ready, String> {
    let (dir, key) = (data_dir.clone(), id.to_owned());
    let here = tokio::task::spawn_blocking(move || local_spec(&dir, &key))
        .await
        .ok()
        .flatten();
    if let Some((alias, spec)) = here {
        return Ok(Ready {
            protocol_id: id.to_owned(),
            how: format!("{alias} was in the library already"),
            alias,
            spec: Box::new(spec),
        });
    }
    let fetched = tokio::time::timeout(
        Duration::from_secs(30),
        crate::services::protocol::fetch(client, &data_dir, id),
    )
    .await
    .map_err(|_| "no answer in 30 s".to_owned())?
    .map_err(|e| e.to_string())?;
    let how = fetched.next.explain(&fetched.installed.alias);
    let (dir, key) = (data_dir, id.to_owned());
    let (alias, spec) = tokio::task::spawn_blocking(move || local_spec(&dir, &key))
        .await
        .ok()
        .flatten()
        .ok_or_else(|| format!("{id} was installed but the library cannot read it"))?;
    Ok(Ready {
        protocol_id: id.to_owned(),
        alias,
        spec: Box::new(spec),
        how: format!("installed from the community: {how}"),
    })
}
