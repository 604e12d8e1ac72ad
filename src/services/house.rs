//! The "house": an agent of the console's embedded community that always
//! has one open invitation per game, plays whoever joins autonomously, and
//! in human-chat-v1 greets its guest and answers every line.

use super::remote::{self, HostPlan, PeerOpts, Progress, RemoteError};
use crate::engine::{ChatSource, ControlMode, Dir, Event, EventSink};
use crate::json::{Map, Value};
use crate::spec::Spec;
use crate::web::Client;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The games the house offers in the console's embedded community.
pub const HOUSE_GAMES: [&str; 9] = [
    "rps-v1",
    "coin-flip-v1",
    "guess-number-v1",
    "gomoku-v1",
    "connect4-v1",
    "reversi-v1",
    "crazy-eights-v1",
    "briscola-v1",
    "human-chat-v1",
];

/// Seconds a guest may think per move in the house's games (the specs'
/// default of 3 is for bots; a person needs longer).
pub const HUMAN_THINK_SECONDS: i64 = 30;

/// Seconds the house's games pause between rounds where the spec has a
/// `round_delay_seconds` parameter (rps), unless config.toml's
/// `[house] round_delay_seconds` says otherwise: a person watching sees each
/// round, and a coach has time to whisper or decide before the next one.
pub const ROUND_DELAY_SECONDS: i64 = 2;

/// The house ends a chat nobody has written in for this long.
pub const CHAT_IDLE_LIMIT: Duration = Duration::from_secs(600);

/// How long one invitation waits before the house opens a fresh one.
const INVITATION_TTL: Duration = Duration::from_secs(30 * 60);

/// Where each game's task reports, by alias.
type Reporter = Arc<dyn Fn(&str, Progress) + Send + Sync>;

/// Longest pause after a failed session before the next invitation.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The house's invitation options for a game: the library's default
/// profile for `alias` and the defaults its spec's parameters declare, with
/// [`HUMAN_THINK_SECONDS`] where the spec has a `max_think_seconds`
/// parameter, `round_delay` seconds where it has `round_delay_seconds` (and
/// RPS as exactly three rounds).
pub fn house_options(alias: &str, spec: &Spec, round_delay: i64) -> Map {
    let lib = crate::library::Library::bundled();
    let mut options = lib
        .entries()
        .iter()
        .find(|e| e.alias == alias && e.protocol_id == spec.protocol_id())
        .and_then(|e| {
            let profile = e.default_profile.as_deref()?;
            e.profiles
                .get(profile)?
                .get("options")?
                .as_object()
                .cloned()
        })
        .unwrap_or_default();
    if let Some(params) = spec.get("parameters").and_then(Value::as_object) {
        for (k, p) in params.iter() {
            if let Some(d) = p.get("default")
                && !options.contains_key(k)
            {
                options.insert(k, d.clone());
            }
        }
        if params.contains_key("max_think_seconds") {
            options.insert("max_think_seconds", Value::from(HUMAN_THINK_SECONDS));
        }
        if params.contains_key("round_delay_seconds") {
            options.insert("round_delay_seconds", Value::from(round_delay));
        }
    }
    // A newcomer's first game has a known length: RPS is exactly three
    // rounds, draws included.
    if alias == "rps-v1" {
        options.insert("best_of", Value::from(3));
        options.insert("termination", Value::from("fixed_rounds"));
    }
    options
}

/// Runs the house for `games` (bundled aliases with native hooks): one task
/// per game, each keeping one invitation open, hosting whoever joins, and
/// opening the next invitation when a session ends (after a short pause
/// when it failed). Never returns while any game can be offered; what
/// happens is reported per alias through `progress`. `round_delay` is the
/// pause between rounds (see [`ROUND_DELAY_SECONDS`]; 0 to 300).
pub async fn run_house(
    client: Client,
    games: &[&str],
    peer: PeerOpts,
    round_delay: i64,
    progress: impl Fn(&str, Progress) + Send + Sync + 'static,
) {
    let progress: Reporter = Arc::new(progress);
    let round_delay = round_delay.clamp(0, 300);
    let mut tasks = tokio::task::JoinSet::new();
    for alias in games {
        let Some(spec) = crate::library::bundled_spec(alias) else {
            progress(
                alias,
                Progress::Warning(format!("{alias} is not a bundled protocol: not offered")),
            );
            continue;
        };
        if crate::protocols::native_hooks(spec).is_none() {
            progress(
                alias,
                Progress::Warning(format!("{alias} has no native hooks: not offered")),
            );
            continue;
        }
        tasks.spawn(offer(
            client.clone(),
            (*alias).to_owned(),
            spec,
            peer.clone(),
            round_delay,
            progress.clone(),
        ));
    }
    while tasks.join_next().await.is_some() {}
}

/// Keeps one game on offer, forever.
async fn offer(
    client: Client,
    alias: String,
    spec: &'static Spec,
    peer: PeerOpts,
    round_delay: i64,
    progress: Reporter,
) {
    let mut backoff = Duration::from_secs(1);
    loop {
        // Each session in its own task: a panic in one is a failed session,
        // not the end of the offer.
        let session = tokio::spawn(host_once(
            client.clone(),
            alias.clone(),
            spec,
            peer.clone(),
            round_delay,
            progress.clone(),
        ));
        let failure = match session.await {
            Ok(Ok(_)) | Ok(Err(RemoteError::NoGuest(_))) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(e) => Some(format!("the session task failed: {e}")),
        };
        match failure {
            None => backoff = Duration::from_secs(1),
            Some(why) => {
                progress(
                    &alias,
                    Progress::Warning(format!(
                        "{why} (next invitation in {} s)",
                        backoff.as_secs()
                    )),
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// One invitation and the session that comes of it.
async fn host_once(
    client: Client,
    alias: String,
    spec: &'static Spec,
    peer: PeerOpts,
    round_delay: i64,
    progress: Reporter,
) -> Result<remote::Finished, RemoteError> {
    let hooks = crate::protocols::native_hooks(spec)
        .ok_or_else(|| RemoteError::Protocol(format!("{alias} has no native hooks")))?;
    let options = house_options(&alias, spec, round_delay);
    let name = hooks.host_metadata().display_name;
    let name = if name.is_empty() {
        spec.name().unwrap_or(&alias).to_owned()
    } else {
        name
    };
    let (chat, observer) = if spec.flow_mode() == "free" {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Some(Box::new(HouseChat::new(rx, CHAT_IDLE_LIMIT)) as Box<dyn ChatSource>),
            Some(Arc::new(ChatTap { lines: tx }) as Arc<dyn EventSink>),
        )
    } else {
        (None, None)
    };
    let plan = HostPlan {
        spec: spec.clone(),
        hooks,
        message: format!("House {name}: join to play"),
        options,
        mode: ControlMode::Autonomous,
        ttl: INVITATION_TTL,
        upkeep: remote::Upkeep::renew_only(),
        peer,
        data_dir: None,
        state_dir: None,
        chat,
        observer,
    };
    let report = |p: Progress| progress(&alias, p);
    remote::host(&client, plan, &report, std::future::pending()).await
}

/// Withdraws every open invitation of the house's key: what a previous
/// console run left behind (its host is gone, so a newcomer joining one
/// would wait for nobody). Returns how many were withdrawn.
pub async fn withdraw_leftovers(house: &Client) -> Result<usize, crate::web::ClientError> {
    let me = house.keys().public_key.clone();
    let mut withdrawn = 0;
    // Pages of 100, newest first; stop when a page holds none of ours.
    for _ in 0..20 {
        let v = house
            .call("GET", "/api/v1/invitations?limit=100", None, &[200])
            .await?;
        let ours: Vec<String> = v
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|inv| inv.get_str("public_key") == Some(me.as_str()))
            .filter_map(|inv| inv.get_str("post_id").map(str::to_owned))
            .collect();
        if ours.is_empty() {
            break;
        }
        for post in ours {
            house
                .call(
                    "DELETE",
                    &format!("/api/v1/invitations/{post}"),
                    None,
                    &[204, 404, 409],
                )
                .await?;
            withdrawn += 1;
        }
    }
    Ok(withdrawn)
}

/// The room the house keeps open in the console's embedded community.
pub const HOUSE_ROOM: &str = "community-room-v1";

/// Keeps [`HOUSE_ROOM`] open forever: the house leads it and its bot sits in
/// it as a second member, so a newcomer finds a live room to join at once;
/// the bot answers every message from anyone else with a short reply. The
/// room's files go under `dir` (`leader/` and `bot/`). A room that ends is
/// opened again (after a pause that grows while it keeps failing).
pub async fn run_house_room(
    house: Client,
    bot: Client,
    dir: std::path::PathBuf,
    peer: PeerOpts,
    progress: impl Fn(Progress) + Send + Sync + 'static,
) {
    let progress: Arc<dyn Fn(Progress) + Send + Sync> = Arc::new(progress);
    let Some(spec) = crate::library::bundled_spec(HOUSE_ROOM) else {
        return progress(Progress::Warning(format!("{HOUSE_ROOM} is not bundled")));
    };
    let mut backoff = Duration::from_secs(1);
    loop {
        let failure = match room_once(&house, &bot, &dir, spec, &peer, &progress).await {
            Ok(()) => None,
            Err(e) => Some(e.to_string()),
        };
        match failure {
            None => backoff = Duration::from_secs(1),
            Some(why) => {
                progress(Progress::Warning(format!(
                    "the house room: {why} (opening it again in {} s)",
                    backoff.as_secs()
                )));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// The tables the house keeps open in the console's embedded community,
/// one of each: every four-seat table palaver has rules and a console view
/// for.
pub const HOUSE_TABLES: [&str; 6] = [
    HOUSE_TABLE,
    "texas-holdem-v1",
    "contract-bridge-v1",
    "upgrade-tractor-v1",
    "classical-mahjong-v1",
    "aether-sigil-v1",
];

/// The house's landlord table (the first of [`HOUSE_TABLES`]).
pub const HOUSE_TABLE: &str = "four-player-landlord-v1";

/// Keeps a table of `alias` open forever: the house leads it and plays its
/// own seat with the table's bot, and two bots take two more seats, so a
/// newcomer who joins fills the fourth and plays at once. A table that ends
/// is opened again (after a pause that grows while it keeps failing). The
/// table's files go under `dir`.
pub async fn run_house_table(
    house: Client,
    alias: &'static str,
    dir: std::path::PathBuf,
    peer: PeerOpts,
    progress: impl Fn(Progress) + Send + Sync + 'static,
) {
    use super::group::{self, HostRoomPlan};
    let Some(spec) = crate::library::bundled_spec(alias) else {
        return progress(Progress::Warning(format!("{alias} is not bundled")));
    };
    let Some(hooks) = group::native_hooks(spec) else {
        return progress(Progress::Warning(format!("{alias} has no rules")));
    };
    let name = spec.name().unwrap_or(alias).to_owned();
    let mut backoff = Duration::from_secs(1);
    loop {
        let plan = HostRoomPlan {
            bots: 2,
            spec: spec.clone(),
            hooks: hooks.clone(),
            message: format!("House table: {name} with two bots and the house, one seat free"),
            options: Map::new(),
            mode: ControlMode::Autonomous,
            ttl: Duration::MAX,
            peer: peer.clone(),
            data_dir: dir.clone(),
            state_dir: None,
        };
        match group::host(&house, plan, &progress, std::future::pending()).await {
            Ok(_) => backoff = Duration::from_secs(1),
            Err(e) => {
                progress(Progress::Warning(format!(
                    "the house table: {e} (opening it again in {} s)",
                    backoff.as_secs()
                )));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// One house room, from its invitation until it ends.
async fn room_once(
    house: &Client,
    bot: &Client,
    dir: &std::path::Path,
    spec: &'static Spec,
    peer: &PeerOpts,
    progress: &Arc<dyn Fn(Progress) + Send + Sync>,
) -> Result<(), RemoteError> {
    use super::group::{self, HostRoomPlan, JoinRoomPlan, Task};
    let hooks = group::native_hooks(spec)
        .ok_or_else(|| RemoteError::Protocol(format!("{HOUSE_ROOM} has no native hooks")))?;
    let mut options = Map::new();
    options.insert("initial_topic", Value::from("The house room: say hello"));
    let plan = HostRoomPlan {
        bots: 0,
        spec: spec.clone(),
        hooks: hooks.clone(),
        message: "House room: talk to whoever is here".into(),
        options,
        mode: ControlMode::Autonomous,
        ttl: Duration::MAX,
        peer: peer.clone(),
        data_dir: dir.join("leader"),
        state_dir: None,
    };
    let (post_tx, mut post_rx) = mpsc::unbounded_channel();
    let leading = {
        let (house, progress) = (house.clone(), progress.clone());
        Task::spawn(async move {
            let report = |p: Progress| {
                if let Progress::InvitationOpen { post_id } = &p {
                    let _ = post_tx.send(post_id.clone());
                }
                progress(p);
            };
            group::host(&house, plan, &report, std::future::pending()).await
        })
    };
    let mut leading = std::pin::pin!(leading);
    let post = tokio::select! {
        p = post_rx.recv() => p,
        r = &mut leading => return match r {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(RemoteError::Server(format!("the room's task failed: {e}"))),
        },
    };
    let Some(post) = post else {
        return Err(RemoteError::Server("the room opened no invitation".into()));
    };
    let (dir_tx, dir_rx) = tokio::sync::watch::channel(None::<std::path::PathBuf>);
    let plan = JoinRoomPlan {
        post_id: post,
        spec: spec.clone(),
        hooks,
        mode: ControlMode::Autonomous,
        peer: peer.clone(),
        data_dir: dir.join("bot"),
        state_dir: None,
    };
    let sitting = {
        let bot = bot.clone();
        Task::spawn(async move {
            let report = |p: Progress| {
                if let Progress::StateDir { parent, .. } = p {
                    let _ = dir_tx.send(Some(parent));
                }
            };
            group::join(&bot, plan, &report, std::future::pending()).await
        })
    };
    let answering = Task::spawn(answer_room(
        dir_rx,
        bot.keys().public_key.clone(),
        house.keys().public_key.clone(),
    ));
    let ended = tokio::select! {
        r = &mut leading => r,
        r = sitting => r,
    };
    drop(answering);
    match ended {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(RemoteError::Server(format!("the room's task failed: {e}"))),
    }
}

/// The house bot's ears: reads each frame the bot's replica records
/// (details.jsonl) and answers every message that neither the bot nor the
/// house sent, through the bot's group-actions.jsonl.
async fn answer_room(
    mut dir: tokio::sync::watch::Receiver<Option<std::path::PathBuf>>,
    bot_pk: String,
    house_pk: String,
) {
    let dir = match dir.wait_for(Option::is_some).await {
        Ok(d) => d.clone(),
        Err(_) => return,
    };
    let Some(dir) = dir else { return };
    let details = dir.join("details.jsonl");
    let mut tail = crate::session::files::Tail::new();
    let mut answered = 0usize;
    loop {
        for line in tail.poll(&details) {
            if line.get_str("type") != Some("group_frame") {
                continue;
            }
            let events = line
                .get("events")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for ev in events {
                let Some(msg) = ev
                    .get("message")
                    .filter(|_| ev.get_str("kind") == Some("message"))
                else {
                    continue;
                };
                let from = msg.get_str("from").unwrap_or_default();
                if from == bot_pk || from == house_pk {
                    continue;
                }
                let text = msg.get_str("text").unwrap_or_default();
                answered += 1;
                let mut action = Map::new();
                action.insert("kind", Value::from("send"));
                action.insert("text", Value::from(reply(text, answered)));
                if let Err(e) = super::group::outbox::append_action(&dir, &Value::Object(action)) {
                    tracing::warn!(dir = %dir.display(), error = %e, "the house bot's reply could not be queued");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Passes the text of every chat line the peer sends to the house's
/// [`HouseChat`].
pub struct ChatTap {
    pub lines: mpsc::UnboundedSender<String>,
}

impl EventSink for ChatTap {
    fn emit(&self, event: Event) {
        if event.kind != "protocol_message"
            || event.data.get("direction").and_then(Value::as_str) != Some(Dir::Received.as_str())
        {
            return;
        }
        let Some(msg) = event.data.get("msg") else {
            return;
        };
        if msg.get("action").and_then(Value::as_str) == Some("chat")
            && let Some(text) = msg.get("text").and_then(Value::as_str)
        {
            let _ = self.lines.send(text.to_owned());
        }
    }

    fn snapshot(&self, _patch: Map) {}

    fn detail(&self, _record: Map) {}
}

/// The house's side of a chat: a greeting, then one short reply to each
/// line the guest sends (fed in by a [`ChatTap`]). It leaves only after
/// `idle` without a line from the guest, with a goodbye.
pub struct HouseChat {
    incoming: mpsc::UnboundedReceiver<String>,
    idle: Duration,
    last_heard: Instant,
    greeted: bool,
    said_goodbye: bool,
    replies: usize,
}

impl HouseChat {
    pub fn new(incoming: mpsc::UnboundedReceiver<String>, idle: Duration) -> HouseChat {
        HouseChat {
            incoming,
            idle,
            last_heard: Instant::now(),
            greeted: false,
            said_goodbye: false,
            replies: 0,
        }
    }
}

#[async_trait::async_trait]
impl ChatSource for HouseChat {
    async fn next_line(&mut self) -> Option<String> {
        if !self.greeted {
            self.greeted = true;
            self.last_heard = Instant::now();
            return Some(GREETING.to_owned());
        }
        if self.said_goodbye {
            return Some("/quit".to_owned());
        }
        // Cancel-safe: state changes only once a branch has completed.
        tokio::select! {
            line = self.incoming.recv() => {
                let text = line?;
                self.last_heard = Instant::now();
                self.replies += 1;
                Some(reply(&text, self.replies))
            }
            _ = tokio::time::sleep_until(self.last_heard + self.idle) => {
                self.said_goodbye = true;
                let quiet = match self.idle.as_secs() / 60 {
                    0 => "a while".to_owned(),
                    1 => "a minute".to_owned(),
                    m => format!("{m} minutes"),
                };
                Some(format!(
                    "Nobody has written for {quiet}, so I'm closing this chat. Come back any time!"
                ))
            }
        }
    }
}

const GREETING: &str = "Hello, I'm the house. Say anything you like; type /quit when you're done.";

/// A short answer to `text`, the `n`-th of this chat (1-based); varies with
/// what was said and with `n`.
pub fn reply(text: &str, n: usize) -> String {
    let t = text.trim().to_lowercase();
    let words: Vec<&str> = t
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &[&str]| words.iter().any(|x| w.contains(x));
    let pick = |options: &[&str]| options[(n + t.len()) % options.len()].to_owned();
    if t.is_empty() {
        return pick(&["Still there?", "I'm listening.", "Go on."]);
    }
    if has(&["bye", "goodbye", "farewell", "cya"]) || t.contains("see you") {
        return pick(&[
            "Goodbye! Type /quit whenever you want to leave.",
            "See you! /quit ends the chat on your side.",
        ]);
    }
    if has(&["thanks", "thank", "thx", "ty"]) {
        return pick(&["You're welcome!", "Any time.", "Glad to help."]);
    }
    if t.contains("how are you") || t.contains("how's it going") {
        return pick(&[
            "I'm fine, thanks for asking. And you?",
            "All good here: eight games on offer and a chat. How about you?",
        ]);
    }
    if has(&[
        "hi",
        "hello",
        "hey",
        "hiya",
        "greetings",
        "morning",
        "evening",
    ]) {
        return pick(&[
            "Hi there! What's on your mind?",
            "Hello! Nice to meet you.",
            "Hey! Fancy a game after this?",
        ]);
    }
    if has(&[
        "game", "games", "play", "rps", "gomoku", "reversi", "connect4",
    ]) {
        return pick(&[
            "I host Rock-Paper-Scissors, Coin Flip, Guess Number, Gomoku, Connect Four and Reversi: join one from the list.",
            "Pick any of my games from the invitations list; I play them all.",
        ]);
    }
    if t.ends_with('?') {
        return pick(&[
            "Good question. What do you think?",
            "Hard to say. Why do you ask?",
            "I'd guess yes, but I'm only the house.",
            "Maybe! Tell me more about it.",
        ]);
    }
    let snippet: String = text.trim().chars().take(40).collect();
    let ellipsis = if text.trim().chars().count() > 40 {
        "…"
    } else {
        ""
    };
    match (n + words.len()) % 5 {
        0 => format!("\"{snippet}{ellipsis}\": interesting, tell me more."),
        1 => "I see. Go on.".to_owned(),
        2 => "Ha, nice.".to_owned(),
        3 => format!("Noted: \"{snippet}{ellipsis}\". What else?"),
        _ => "That makes sense.".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_house_table_has_rules_and_a_console_view() {
        for alias in HOUSE_TABLES {
            assert!(crate::protocols::tables::TABLES.contains(&alias), "{alias}");
            assert!(crate::session::table::VIEWS.contains(&alias), "{alias}");
            assert!(crate::library::bundled_spec(alias).is_some(), "{alias}");
        }
    }

    #[test]
    fn replies_vary_and_stay_short() {
        let a = reply("hello", 1);
        let b = reply("what time is it?", 2);
        let c = reply("I like turtles", 3);
        let d = reply("I like turtles", 4);
        assert!(a.starts_with("H"), "{a}");
        assert_ne!(b, c);
        assert_ne!(c, d);
        for r in [a, b, c, d, reply(&"x".repeat(500), 5)] {
            assert!(r.chars().count() < 200, "{r}");
            assert_ne!(r.trim(), "/quit");
        }
    }

    #[test]
    fn house_options_give_people_time_to_think() {
        for alias in HOUSE_GAMES {
            let spec = crate::library::bundled_spec(alias).unwrap();
            let o = house_options(alias, spec, ROUND_DELAY_SECONDS);
            spec.validate_options(&Value::Object(o.clone()))
                .unwrap_or_else(|e| panic!("{alias}: {e}"));
            let has = |k: &str| spec.get("parameters").and_then(|p| p.get(k)).is_some();
            assert_eq!(
                o.get("max_think_seconds").and_then(Value::as_i64),
                has("max_think_seconds").then_some(HUMAN_THINK_SECONDS),
                "{alias}"
            );
            assert_eq!(
                o.get("round_delay_seconds").and_then(Value::as_i64),
                has("round_delay_seconds").then_some(ROUND_DELAY_SECONDS),
                "{alias}"
            );
        }
    }

    #[tokio::test]
    async fn the_house_chat_greets_answers_and_leaves_only_when_idle() {
        assert_eq!(CHAT_IDLE_LIMIT, Duration::from_secs(600));
        let idle = Duration::from_millis(400);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut chat = HouseChat::new(rx, idle);
        assert_eq!(chat.next_line().await.as_deref(), Some(GREETING));
        tx.send("hello".into()).unwrap();
        let r = chat.next_line().await.unwrap();
        assert!(!r.is_empty() && r != "/quit", "{r}");
        // A quiet guest, but not for the whole limit: the house keeps waiting.
        let waited = tokio::time::timeout(idle / 2, chat.next_line()).await;
        assert!(waited.is_err(), "left early: {waited:?}");
        tx.send("still here".into()).unwrap();
        assert_ne!(chat.next_line().await.as_deref(), Some("/quit"));
        // Idle for the whole limit: a goodbye, then /quit.
        let t0 = Instant::now();
        let bye = chat.next_line().await.unwrap();
        assert!(t0.elapsed() >= idle / 2, "{:?}", t0.elapsed());
        assert!(bye.contains("closing"), "{bye}");
        assert_eq!(chat.next_line().await.as_deref(), Some("/quit"));
    }
}
