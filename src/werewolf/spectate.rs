//! Following a running server's game from outside: the game list and the
//! god-view SSE stream (`/api/v1/games/{id}/god`), parsed into
//! [`GameEvent`]s. Plain HTTP/1.1 over TCP (loopback or LAN).

use super::WolfError;
use super::game::GameEvent;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

fn split_base(base: &str) -> Result<(String, String), WolfError> {
    let rest = base
        .strip_prefix("http://")
        .ok_or_else(|| WolfError::Connection(format!("{base}: only http:// URLs")))?;
    let (host, prefix) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    Ok((host.to_owned(), prefix.to_owned()))
}

type Body = Box<dyn tokio::io::AsyncBufRead + Unpin + Send>;

async fn get(base: &str, path: &str, token: Option<&str>) -> Result<Body, WolfError> {
    let (host, prefix) = split_base(base)?;
    let mut s = TcpStream::connect(&host)
        .await
        .map_err(|e| WolfError::Connection(format!("{host}: {e}")))?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "GET {prefix}{path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n{auth}Connection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await?;
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).await?;
    if !status.contains(" 200 ") {
        return Err(WolfError::Connection(format!(
            "GET {path}: {}",
            status.trim()
        )));
    }
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await? == 0 || h == "\r\n" {
            break;
        }
        if h.to_ascii_lowercase().starts_with("transfer-encoding:")
            && h.to_ascii_lowercase().contains("chunked")
        {
            chunked = true;
        }
    }
    if !chunked {
        return Ok(Box::new(r));
    }
    // De-chunk into a pipe so callers read plain lines.
    let (w, rd) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut w = w;
        loop {
            let mut size = String::new();
            if r.read_line(&mut size).await.unwrap_or(0) == 0 {
                break;
            }
            let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
                break;
            };
            if n == 0 {
                break;
            }
            let mut buf = vec![0u8; n + 2];
            if r.read_exact(&mut buf).await.is_err() {
                break;
            }
            if w.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    });
    Ok(Box::new(BufReader::new(rd)))
}

/// The games a server knows (`/api/v1/games`).
pub async fn list_games(base: &str, token: Option<&str>) -> Result<Vec<Value>, WolfError> {
    let mut r = get(base, "/api/v1/games", token).await?;
    let mut body = String::new();
    r.read_to_string(&mut body).await?;
    serde_json::from_str(body.trim()).map_err(|e| WolfError::Protocol(format!("game list: {e}")))
}

/// Follows one game's god-view stream; events arrive on the receiver from
/// the start of the game; the channel closes after `Finished`.
pub async fn follow(
    base: &str,
    game_id: &str,
    token: Option<&str>,
) -> Result<mpsc::UnboundedReceiver<GameEvent>, WolfError> {
    let mut r = get(base, &format!("/api/v1/games/{game_id}/god"), token).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(data) = line.trim_end().strip_prefix("data:")
                && let Ok(e) = serde_json::from_str::<GameEvent>(data.trim_start())
            {
                let end = matches!(e, GameEvent::Finished { .. });
                if tx.send(e).is_err() || end {
                    break;
                }
            }
        }
    });
    Ok(rx)
}
