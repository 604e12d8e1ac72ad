//! Following a running server's game from outside: the game list and the
//! god-view SSE stream (`/api/v1/games/{id}/god`), parsed into
//! [`GameEvent`]s. Plain HTTP/1.1 (loopback or LAN) through palaver's one
//! bounded client ([`crate::web::http`]): the list's size, each stream
//! line, each event's data and every wait are held to [`HttpLimits`].

use super::WolfError;
use super::game::GameEvent;
use crate::web::http::{Http, HttpError, HttpLimits};
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

/// Events a follower reads ahead of its reader; past this it stops reading
/// the server until the reader catches up.
const EVENT_QUEUE: usize = 1024;

fn connection(e: HttpError) -> WolfError {
    WolfError::Connection(e.to_string())
}

/// A GET of `path` under `base` (`http://host:port[/prefix]`).
fn request(
    base: &str,
    path: &str,
    token: Option<&str>,
    accept: &str,
) -> Result<hyper::Request<Full<Bytes>>, WolfError> {
    let base = base.trim_end_matches('/');
    if !base.starts_with("http://") {
        return Err(WolfError::Connection(format!("{base}: only http:// URLs")));
    }
    let url = format!("{base}{path}");
    let mut req = hyper::Request::get(url.as_str()).header("accept", accept);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    req.body(Full::new(Bytes::new()))
        .map_err(|e| WolfError::Connection(format!("{url}: {e}")))
}

fn refused(url: &str, status: u16, body: &[u8]) -> WolfError {
    let reason = hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let text: String = String::from_utf8_lossy(body)
        .trim()
        .chars()
        .take(200)
        .collect();
    let text = if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    };
    WolfError::Connection(format!("GET {url}: HTTP {status} {reason}{text}"))
}

/// The games a server knows (`/api/v1/games`), with the default limits.
pub async fn list_games(base: &str, token: Option<&str>) -> Result<Vec<Value>, WolfError> {
    list_games_with(base, token, &HttpLimits::default()).await
}

/// The games a server knows: the whole answer within `limits.request`, at
/// most `limits.max_body` bytes.
pub async fn list_games_with(
    base: &str,
    token: Option<&str>,
    limits: &HttpLimits,
) -> Result<Vec<Value>, WolfError> {
    let req = request(base, "/api/v1/games", token, "application/json")?;
    let url = req.uri().to_string();
    let answer = Http::new(*limits).fetch(req).await.map_err(connection)?;
    if answer.status != 200 {
        return Err(refused(&url, answer.status, &answer.body));
    }
    serde_json::from_slice(&answer.body)
        .map_err(|e| WolfError::Protocol(format!("game list from {url}: {e}")))
}

/// Follows one game's god-view stream with the default limits; events
/// arrive on the receiver from the start of the game; the channel closes
/// after `Finished`, or early when the stream breaks ([`follow_with`]
/// says why).
pub async fn follow(
    base: &str,
    game_id: &str,
    token: Option<&str>,
) -> Result<mpsc::Receiver<GameEvent>, WolfError> {
    let mut inner = follow_with(base, game_id, token, &HttpLimits::default()).await?;
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    tokio::spawn(async move {
        while let Some(Ok(e)) = inner.recv().await {
            if tx.send(e).await.is_err() {
                break;
            }
        }
    });
    Ok(rx)
}

/// Follows one game's god-view stream: the response head within
/// `limits.head`, then its events as they come. The channel closes after
/// `Finished` or at the end of the stream; a stream that breaks first
/// (a line or an event's data over `limits.max_line` bytes, `limits.idle`
/// of silence, a broken chunk) sends its error last.
pub async fn follow_with(
    base: &str,
    game_id: &str,
    token: Option<&str>,
    limits: &HttpLimits,
) -> Result<mpsc::Receiver<Result<GameEvent, WolfError>>, WolfError> {
    let req = request(
        base,
        &format!("/api/v1/games/{game_id}/god"),
        token,
        "text/event-stream",
    )?;
    let url = req.uri().to_string();
    let (status, _, mut lines) = Http::new(*limits).stream(req).await.map_err(connection)?;
    if status != 200 {
        return Err(refused(&url, status, b""));
    }
    let max_data = limits.max_line;
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    tokio::spawn(async move {
        // The data lines of the event being read (SSE: joined by `\n`,
        // dispatched at the blank line that ends the event).
        let mut data = String::new();
        loop {
            let line = match lines.next_line().await {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.send(Err(connection(e))).await;
                    break;
                }
            };
            if line.is_empty() {
                let event = std::mem::take(&mut data);
                if let Ok(e) = serde_json::from_str::<GameEvent>(&event) {
                    let end = matches!(e, GameEvent::Finished { .. });
                    if tx.send(Ok(e)).await.is_err() || end {
                        break;
                    }
                }
                continue;
            }
            let Some(d) = line.strip_prefix("data:") else {
                // `event:`, `id:`, `retry:` and comments: not needed.
                continue;
            };
            let d = d.strip_prefix(' ').unwrap_or(d);
            if data.len() + d.len() + 1 > max_data {
                let e =
                    WolfError::Protocol(format!("{url}: an event's data is over {max_data} bytes"));
                let _ = tx.send(Err(e)).await;
                break;
            }
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d);
        }
    });
    Ok(rx)
}
