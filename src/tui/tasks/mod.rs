//! Slow work of the console, started from the effects `update` returns;
//! each task reports back with a [`Report`]: the community (embedded or
//! remote) and its house agent, and the work of each screen (`sessions`,
//! `wolf`, `market`).

mod coach;
mod market;
mod seat;
mod sessions;
mod social;
mod wolf;

use super::effect::{Task, WolfTask};
use super::report::Report;
use crate::identity::KeyPair;
use crate::services::remote::PeerOpts;
use crate::services::server;
use crate::web::Client;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

/// Runs effects as tasks and keeps what ends them: the quit switch of
/// sessions run here, the watcher of the attached session, the tasks of
/// the werewolf screen's game.
pub struct Tasks {
    tx: UnboundedSender<Report>,
    /// In-process sessions and host/join tasks end when this fires.
    quit: tokio::sync::watch::Sender<bool>,
    watcher: Option<AbortOnDrop<()>>,
    game: Vec<AbortHandle>,
}

impl Tasks {
    pub fn new(tx: UnboundedSender<Report>) -> Tasks {
        Tasks {
            tx,
            quit: tokio::sync::watch::channel(false).0,
            watcher: None,
            game: Vec::new(),
        }
    }

    /// Ends the sessions this console runs (they record `cancelled`).
    pub fn quit(&self) {
        let _ = self.quit.send(true);
    }

    /// Starts `t`.
    pub fn perform(&mut self, t: Task) {
        match t {
            Task::Progress(text) => {
                let _ = self.tx.send(Report::Progress(text));
            }
            Task::Session(t) => {
                if let Some(h) = sessions::start(*t, &self.tx, &self.quit) {
                    self.watcher = Some(AbortOnDrop(h));
                }
            }
            Task::Wolf(t) => {
                // A new game ends the one before; a list of games does not.
                if !matches!(t, WolfTask::Games { .. }) {
                    self.stop_game();
                }
                self.game.extend(wolf::start(t, &self.tx));
            }
            Task::Market(t) => market::start(t, &self.tx),
            Task::Social(t) => social::start(*t, &self.tx),
        }
    }

    fn stop_game(&mut self) {
        for t in self.game.drain(..) {
            t.abort();
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.stop_game();
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
    /// Seconds the house's games pause between rounds.
    pub house_round_delay: i64,
}

/// Brings the community up and registers this identity; reports
/// `CommunityReady` (or a `Progress` line saying what failed). The house
/// agent (its games and its market bot) and the embedded server live as
/// long as the returned task.
pub fn start_community(s: Startup, tx: UnboundedSender<Report>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let fail = |tx: &UnboundedSender<Report>, e: String| {
            let _ = tx.send(Report::Invitations(Err(e)));
        };
        let keys = match KeyPair::init(&s.data_dir, false) {
            Ok((k, _)) => k,
            Err(e) => return fail(&tx, format!("identity: {e}")),
        };
        let (url, embedded_server) = match &s.server {
            Some(u) => (u.clone(), None),
            None => {
                let db = s.data_dir.join("community.sqlite");
                match server::start_embedded(&db).await {
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
        if let Err(e) = server::ensure_registered(&client, &s.nickname).await {
            return fail(&tx, format!("registering on {url}: {e}"));
        }
        let house = if embedded_server.is_some() && s.house {
            let house_dir = s.data_dir.join("house");
            match KeyPair::init(&house_dir, false) {
                Ok((hk, _)) => match Client::new(&url, hk.clone()) {
                    Ok(hc) => match server::ensure_registered(&hc, "house").await {
                        // The previous run's invitations lead nowhere now.
                        Ok(())
                            if crate::services::house::withdraw_leftovers(&hc)
                                .await
                                .map_err(|e| fail(&tx, format!("house agent: {e}")))
                                .is_err() =>
                        {
                            None
                        }
                        Ok(()) => Some((
                            AbortOnDrop(tokio::spawn(house_room(
                                url.clone(),
                                hc.clone(),
                                house_dir.clone(),
                            ))),
                            AbortOnDrop(tokio::spawn(crate::services::house::run_house(
                                hc.clone(),
                                &crate::services::house::HOUSE_GAMES,
                                PeerOpts::direct(),
                                s.house_round_delay,
                                |_alias, _p| {},
                            ))),
                            AbortOnDrop(tokio::spawn(house_market_bot(url.clone(), hk))),
                            AbortOnDrop(tokio::spawn(house_tables(hc, house_dir.join("tables")))),
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
        let _ = tx.send(Report::CommunityReady {
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

/// The house's room on the embedded community ([`HOUSE_ROOM`]), with its
/// bot member (its own identity in `house/bot`).
///
/// [`HOUSE_ROOM`]: crate::services::house::HOUSE_ROOM
async fn house_room(url: String, house: Client, house_dir: std::path::PathBuf) {
    let bot_dir = house_dir.join("bot");
    let Ok((bk, _)) = KeyPair::init(&bot_dir, false) else {
        return;
    };
    let Ok(bot) = Client::new(&url, bk) else {
        return;
    };
    if server::ensure_registered(&bot, "house-bot").await.is_err() {
        return;
    }
    crate::services::house::run_house_room(
        house,
        bot,
        house_dir.join("room"),
        PeerOpts::direct(),
        |_p| {},
    )
    .await;
}

/// The house's tables on the embedded community, one of each of
/// [`HOUSE_TABLES`], their files under `dir/<alias>`.
///
/// [`HOUSE_TABLES`]: crate::services::house::HOUSE_TABLES
async fn house_tables(house: Client, dir: std::path::PathBuf) {
    let tables = crate::services::house::HOUSE_TABLES.map(|alias| {
        crate::services::house::run_house_table(
            house.clone(),
            alias,
            dir.join(alias),
            PeerOpts::direct(),
            |_p| {},
        )
    });
    futures_util::future::join_all(tables).await;
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
