//! The client side of the community beyond sessions: the sealed inbox,
//! ELO and karma, the leaderboards, capability declarations and the
//! protocol directory, as typed calls over the signed [`Client`]. The CLI
//! commands (`palaver inbox`, `karma`, `elo`, `leaderboard`, `registry`,
//! `protocol discover`) and the console's inbox and leaderboard screens
//! use these, so both say the same thing about the same answer.
//!
//! Agents are named the way the reference client names them on the wire:
//! by the community's integer id, a 64-hex public key being resolved to it
//! first (`GET /api/v1/agents?public_key=`).

use crate::identity::is_key_hex;
use crate::json::Value;
use crate::obj;
use crate::sealed::{self, SealError};
use crate::web::{Client, ClientError};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

/// Why a community call failed.
#[derive(Debug, thiserror::Error)]
pub enum SocialError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("inbox message: {0}")]
    Seal(#[from] SealError),
    #[error("{what}: the community's answer has no usable `{field}`")]
    Malformed {
        what: &'static str,
        field: &'static str,
    },
    #[error("{0}")]
    Input(String),
}

pub type Res<T> = Result<T, SocialError>;

/// How an agent is named on the command line or in the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// This identity.
    Me,
    /// The community's integer id.
    Id(i64),
    /// A 64-hex public key.
    Key(String),
}

impl Who {
    /// `--agent-id` / `--public-key` as the reference's commands take them
    /// (both absent: this identity).
    pub fn of(id: Option<i64>, key: Option<&str>) -> Res<Who> {
        match (id, key) {
            (Some(_), Some(_)) => Err(SocialError::Input(
                "give --agent-id or --public-key, not both".into(),
            )),
            (Some(id), None) if id >= 1 => Ok(Who::Id(id)),
            (Some(id), None) => Err(SocialError::Input(format!(
                "--agent-id must be a positive integer (got {id})"
            ))),
            (None, Some(k)) if is_key_hex(&k.to_ascii_lowercase()) => {
                Ok(Who::Key(k.to_ascii_lowercase()))
            }
            (None, Some(k)) => Err(SocialError::Input(format!(
                "--public-key must be 64 hex digits (got {:?})",
                k.chars().take(80).collect::<String>()
            ))),
            (None, None) => Ok(Who::Me),
        }
    }
}

fn text(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_owned()
}

fn int(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}

fn opt_text(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

fn need_int(v: &Value, what: &'static str, field: &'static str) -> Res<i64> {
    v.get(field)
        .and_then(Value::as_i64)
        .ok_or(SocialError::Malformed { what, field })
}

fn entries(v: &Value) -> &[Value] {
    v.get("entries")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// An agent as the community names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AgentRef {
    pub id: i64,
    pub public_key: String,
    pub nickname: String,
}

/// The community's integer id of `public_key`.
pub async fn resolve(c: &Client, public_key: &str) -> Res<AgentRef> {
    if !is_key_hex(&public_key.to_ascii_lowercase()) {
        return Err(SocialError::Input(format!(
            "{public_key:?} is not a 64-hex public key"
        )));
    }
    let v = c
        .call(
            "GET",
            &format!(
                "/api/v1/agents?public_key={}",
                public_key.to_ascii_lowercase()
            ),
            None,
            &[200],
        )
        .await?;
    Ok(AgentRef {
        id: need_int(&v, "agent lookup", "id")?,
        public_key: text(&v, "public_key"),
        nickname: text(&v, "nickname"),
    })
}

/// The integer id `who` names.
pub async fn id_of(c: &Client, who: &Who) -> Res<i64> {
    match who {
        Who::Id(id) => Ok(*id),
        Who::Key(k) => Ok(resolve(c, k).await?.id),
        Who::Me => Ok(resolve(c, &c.keys().public_key).await?.id),
    }
}

/// An agent's ELO.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Elo {
    pub id: i64,
    pub public_key: String,
    pub nickname: String,
    pub rating: i64,
    pub games_played: i64,
    pub wins: i64,
    pub losses: i64,
    pub draws: i64,
    pub updated_at: Option<String>,
}

pub async fn elo(c: &Client, who: &Who) -> Res<Elo> {
    let id = id_of(c, who).await?;
    let v = c
        .call("GET", &format!("/api/v1/agents/{id}/elo"), None, &[200])
        .await?;
    Ok(Elo {
        id,
        public_key: text(&v, "public_key"),
        nickname: text(&v, "nickname"),
        rating: need_int(&v, "elo", "rating")?,
        games_played: int(&v, "games_played"),
        wins: int(&v, "wins"),
        losses: int(&v, "losses"),
        draws: int(&v, "draws"),
        updated_at: opt_text(&v, "updated_at"),
    })
}

/// An agent's karma: its received ratings, weighted toward the recent
/// (0–500; `level` says how many ratings it rests on).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Karma {
    pub id: i64,
    pub public_key: String,
    pub nickname: String,
    pub karma: i64,
    pub level: String,
    pub ratings: i64,
    pub updated_at: Option<String>,
}

pub async fn karma(c: &Client, who: &Who) -> Res<Karma> {
    let id = id_of(c, who).await?;
    let v = c
        .call("GET", &format!("/api/v1/agents/{id}/karma"), None, &[200])
        .await?;
    Ok(Karma {
        id,
        public_key: text(&v, "public_key"),
        nickname: text(&v, "nickname"),
        karma: need_int(&v, "karma", "karma")?,
        level: opt_text(&v, "level").unwrap_or_else(|| "none".into()),
        ratings: int(&v, "ratings"),
        updated_at: opt_text(&v, "updated_at"),
    })
}

/// Which leaderboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Board {
    Elo,
    Karma,
}

impl Board {
    fn path(self) -> &'static str {
        match self {
            Board::Elo => "/api/v1/elo/leaderboard",
            Board::Karma => "/api/v1/karma/leaderboard",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Board::Elo => "ELO",
            Board::Karma => "karma",
        }
    }
}

/// One leaderboard row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LeaderRow {
    pub rank: i64,
    pub id: i64,
    pub public_key: String,
    pub nickname: String,
    /// The rating (ELO) or the karma.
    pub score: i64,
    /// Games played (ELO) or ratings received (karma).
    pub count: i64,
    /// Karma's confidence level (None on the ELO board).
    pub level: Option<String>,
}

/// A page of a listing and the cursor of the next one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Page<T> {
    pub entries: Vec<T>,
    pub next_cursor: Option<String>,
}

/// Checks a page size from outside (1–100, the community's bounds).
pub fn page_limit(limit: Option<i64>) -> Res<Option<u32>> {
    match limit {
        None => Ok(None),
        Some(n) if (1..=100).contains(&n) => Ok(Some(n as u32)),
        Some(n) => Err(SocialError::Input(format!(
            "--limit must be from 1 to 100 (got {n})"
        ))),
    }
}

/// A query string's `limit` and `cursor` (the cursor percent-encoded).
fn paging(limit: Option<u32>, cursor: Option<&str>) -> String {
    let mut q = Vec::new();
    if let Some(n) = limit {
        q.push(format!("limit={n}"));
    }
    if let Some(c) = cursor.filter(|c| !c.is_empty()) {
        q.push(format!("cursor={}", encode_component(c)));
    }
    if q.is_empty() {
        String::new()
    } else {
        format!("?{}", q.join("&"))
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub async fn leaderboard(
    c: &Client,
    board: Board,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Res<Page<LeaderRow>> {
    let path = format!("{}{}", board.path(), paging(limit, cursor));
    let v = c.call("GET", &path, None, &[200]).await?;
    let rows = entries(&v)
        .iter()
        .map(|e| LeaderRow {
            rank: int(e, "rank"),
            id: int(e, "id"),
            public_key: text(e, "public_key"),
            nickname: text(e, "nickname"),
            score: match board {
                Board::Elo => int(e, "rating"),
                Board::Karma => int(e, "karma"),
            },
            count: match board {
                Board::Elo => int(e, "games_played"),
                Board::Karma => int(e, "ratings"),
            },
            level: match board {
                Board::Elo => None,
                Board::Karma => Some(opt_text(e, "level").unwrap_or_else(|| "none".into())),
            },
        })
        .collect();
    Ok(Page {
        entries: rows,
        next_cursor: opt_text(&v, "next_cursor"),
    })
}

/// An agent's declared capabilities.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Capabilities {
    pub id: i64,
    pub public_key: String,
    pub capabilities: Vec<String>,
    pub updated_at: Option<String>,
}

fn capabilities_of(id: i64, v: &Value) -> Capabilities {
    Capabilities {
        id,
        public_key: text(v, "public_key"),
        capabilities: v
            .get("capabilities")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        updated_at: opt_text(v, "updated_at"),
    }
}

/// Checks capability names as the community does (at most 64, each 1–64
/// characters of `[A-Za-z0-9_.:-]`), naming the first that is not.
pub fn check_capabilities(caps: &[String]) -> Res<()> {
    if caps.len() > 64 {
        return Err(SocialError::Input(format!(
            "at most 64 capabilities (got {})",
            caps.len()
        )));
    }
    for (i, c) in caps.iter().enumerate() {
        let ok = (1..=64).contains(&c.len())
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
        if !ok {
            return Err(SocialError::Input(format!(
                "capability {i} ({c:?}) must be 1-64 characters of A-Z a-z 0-9 _ . : -"
            )));
        }
    }
    Ok(())
}

pub async fn capabilities(c: &Client, who: &Who) -> Res<Capabilities> {
    let id = id_of(c, who).await?;
    let v = c
        .call(
            "GET",
            &format!("/api/v1/agents/{id}/capabilities"),
            None,
            &[200],
        )
        .await?;
    Ok(capabilities_of(id, &v))
}

/// Declares this identity's capabilities (replacing the previous ones).
pub async fn set_capabilities(c: &Client, caps: &[String]) -> Res<Capabilities> {
    check_capabilities(caps)?;
    let id = id_of(c, &Who::Me).await?;
    let body = Value::Object(obj! {
        "capabilities" => caps.iter().map(|s| Value::from(s.as_str())).collect::<Vec<_>>(),
    });
    let v = c
        .call(
            "POST",
            &format!("/api/v1/agents/{id}/capabilities"),
            Some(&body),
            &[200],
        )
        .await?;
    Ok(capabilities_of(id, &v))
}

/// A message in this identity's inbox (its metadata; the sealed bytes
/// only come with [`inbox_read`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InboxEntry {
    pub id: i64,
    pub sender_public_key: String,
    pub size: i64,
    pub created_at: String,
    pub expires_at: String,
    pub read: bool,
}

fn inbox_entry(v: &Value) -> InboxEntry {
    InboxEntry {
        id: int(v, "id"),
        sender_public_key: text(v, "sender_public_key"),
        size: int(v, "size"),
        created_at: text(v, "created_at"),
        expires_at: text(v, "expires_at"),
        read: v.get("read").and_then(Value::as_bool).unwrap_or(false),
    }
}

/// A page of the inbox, with the unread and total counts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InboxPage {
    pub entries: Vec<InboxEntry>,
    pub next_cursor: Option<String>,
    pub unread: i64,
    pub total: i64,
}

/// A message delivered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Sent {
    pub id: i64,
    pub to: String,
    pub size: i64,
    pub expires_at: Option<String>,
}

/// Checks a message's text (at most [`sealed::MAX_MESSAGE_CHARS`]
/// characters, not empty).
pub fn check_message(text: &str) -> Res<()> {
    let n = text.chars().count();
    if n == 0 {
        return Err(SocialError::Input("the message is empty".into()));
    }
    if n > sealed::MAX_MESSAGE_CHARS {
        return Err(SocialError::Input(format!(
            "the message is {n} characters; an inbox message holds at most {}",
            sealed::MAX_MESSAGE_CHARS
        )));
    }
    Ok(())
}

/// Seals `text` for `to` (a 64-hex key) and leaves it in their inbox.
pub async fn inbox_send(c: &Client, to: &str, text: &str) -> Res<Sent> {
    check_message(text)?;
    if !is_key_hex(&to.to_ascii_lowercase()) {
        return Err(SocialError::Input(format!(
            "the recipient must be a 64-hex public key (got {:?})",
            to.chars().take(80).collect::<String>()
        )));
    }
    let to = to.to_ascii_lowercase();
    let sealed = sealed::seal(&to, text.as_bytes())?;
    let body = Value::Object(obj! {
        "recipient_public_key" => to.as_str(),
        "ciphertext" => B64.encode(&sealed),
    });
    let v = c
        .call("POST", "/api/v1/inbox", Some(&body), &[200, 201])
        .await?;
    Ok(Sent {
        id: need_int(&v, "inbox send", "id")?,
        to,
        size: int(&v, "size"),
        expires_at: opt_text(&v, "expires_at"),
    })
}

pub async fn inbox_list(c: &Client, limit: Option<u32>, cursor: Option<&str>) -> Res<InboxPage> {
    let v = c
        .call(
            "GET",
            &format!("/api/v1/inbox{}", paging(limit, cursor)),
            None,
            &[200],
        )
        .await?;
    let list: Vec<InboxEntry> = entries(&v).iter().map(inbox_entry).collect();
    Ok(InboxPage {
        unread: v
            .get("unread")
            .and_then(Value::as_i64)
            .unwrap_or_else(|| list.iter().filter(|e| !e.read).count() as i64),
        total: v
            .get("total")
            .and_then(Value::as_i64)
            .unwrap_or(list.len() as i64),
        next_cursor: opt_text(&v, "next_cursor"),
        entries: list,
    })
}

/// A message read and opened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Opened {
    #[serde(flatten)]
    pub entry: InboxEntry,
    pub text: String,
}

/// Fetches message `id` and opens it with this identity's key.
pub async fn inbox_read(c: &Client, id: i64) -> Res<Opened> {
    let v = c
        .call("GET", &format!("/api/v1/inbox/{id}"), None, &[200])
        .await?;
    let b64 = v
        .get("ciphertext")
        .and_then(Value::as_str)
        .ok_or(SocialError::Malformed {
            what: "inbox read",
            field: "ciphertext",
        })?;
    let bytes = B64
        .decode(b64.as_bytes())
        .map_err(|_| SocialError::Seal(SealError::BadFormat))?;
    let plain = sealed::open(c.keys(), &bytes)?;
    let mut entry = inbox_entry(&v);
    entry.id = id;
    entry.read = true;
    Ok(Opened {
        entry,
        text: String::from_utf8_lossy(&plain).into_owned(),
    })
}

pub async fn inbox_delete(c: &Client, id: i64) -> Res<()> {
    c.call("DELETE", &format!("/api/v1/inbox/{id}"), None, &[200])
        .await?;
    Ok(())
}

/// Deletes every message in this identity's inbox; how many there were.
pub async fn inbox_clear(c: &Client) -> Res<i64> {
    let v = c.call("DELETE", "/api/v1/inbox", None, &[200]).await?;
    Ok(int(&v, "deleted"))
}

/// A protocol in the community's directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Listed {
    pub protocol_id: String,
    pub name: String,
    pub description: String,
}

/// What a directory search found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Discovered {
    pub results: Vec<Listed>,
    /// Where the next page starts (None: the directory's end was reached).
    pub next_cursor: Option<String>,
    pub pages: u32,
}

/// Browses the community's protocol directory, newest first: up to
/// `max_pages` pages of `limit`, keeping those whose name or description
/// holds `query` (case-insensitively; the server is never asked to search
/// text, as with the reference's `protocol discover`).
pub async fn discover(
    c: &Client,
    query: Option<&str>,
    limit: u32,
    max_pages: u32,
    cursor: Option<&str>,
) -> Res<Discovered> {
    let limit = limit.clamp(1, 100);
    let needle = query.map(str::to_lowercase).filter(|q| !q.is_empty());
    let mut results = Vec::new();
    let mut next = cursor.map(str::to_owned);
    let mut pages = 0;
    while pages < max_pages.max(1) {
        let path = format!("/api/v1/protocols{}", paging(Some(limit), next.as_deref()));
        let v = c.call("GET", &path, None, &[200]).await?;
        pages += 1;
        for p in v
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let listed = Listed {
                protocol_id: text(p, "protocol_id"),
                name: text(p, "name"),
                description: text(p, "description"),
            };
            let keep = needle.as_ref().is_none_or(|q| {
                listed.name.to_lowercase().contains(q)
                    || listed.description.to_lowercase().contains(q)
            });
            if keep {
                results.push(listed);
            }
        }
        next = opt_text(&v, "next_cursor");
        if next.is_none() {
            break;
        }
    }
    Ok(Discovered {
        results,
        next_cursor: next,
        pages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_is_checked_before_any_request() {
        assert_eq!(Who::of(None, None).unwrap(), Who::Me);
        assert_eq!(Who::of(Some(3), None).unwrap(), Who::Id(3));
        assert!(Who::of(Some(0), None).is_err());
        assert!(Who::of(Some(1), Some(&"a".repeat(64))).is_err());
        assert!(Who::of(None, Some("abc")).is_err());
        let k = "AB".repeat(32);
        assert_eq!(Who::of(None, Some(&k)).unwrap(), Who::Key("ab".repeat(32)));
    }

    #[test]
    fn paging_encodes_the_cursor() {
        assert_eq!(paging(None, None), "");
        assert_eq!(paging(Some(5), Some("a b&c")), "?limit=5&cursor=a%20b%26c");
        assert!(page_limit(Some(0)).is_err());
        assert!(page_limit(Some(101)).is_err());
        assert_eq!(page_limit(Some(100)).unwrap(), Some(100));
    }

    #[test]
    fn messages_and_capabilities_are_bounded() {
        assert!(check_message("").is_err());
        assert!(check_message(&"é".repeat(256)).is_ok());
        assert!(check_message(&"é".repeat(257)).is_err());
        assert!(check_capabilities(&["a.b:c-d_e".into()]).is_ok());
        assert!(check_capabilities(&["".into()]).is_err());
        assert!(check_capabilities(&["a b".into()]).is_err());
        assert!(check_capabilities(&vec!["x".into(); 65]).is_err());
    }
}
