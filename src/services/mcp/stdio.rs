//! `palaver mcp`'s transport: newline-delimited JSON-RPC on stdin/stdout,
//! each line bounded, and every line that is not a message answered.
//!
//! The SDK's own stdio transport drops a line it cannot parse without a
//! word; here a client that sends one gets the JSON-RPC answer it is owed:
//! `-32700` (parse error, `id` null) for text that is not JSON or a line
//! longer than [`super::MAX_STDIO_LINE`], `-32600` (invalid request, with
//! its `id` when it has one) for JSON that is no JSON-RPC message. Either
//! way the stream goes on with the next line.

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value as Json, json};
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

/// One read: a line, a line that was too long (dropped), or the end.
#[derive(Debug, PartialEq)]
enum Line {
    Text(Vec<u8>),
    TooLong,
    End,
}

/// A line being read: what has arrived of it, and whether it already ran
/// past the limit (then nothing more of it is kept). Held between polls, so
/// a read that is cancelled half-way (the service selects over it) loses
/// nothing.
#[derive(Default)]
struct Partial {
    line: Vec<u8>,
    over: bool,
}

/// Reads up to the next `\n`, holding at most `max` bytes of it.
/// Cancel-safe: everything read so far stays in `p`.
async fn read_line(
    r: &mut (impl AsyncBufRead + Unpin),
    p: &mut Partial,
    max: usize,
) -> std::io::Result<Line> {
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            let done = std::mem::take(p);
            return Ok(match (done.line.is_empty(), done.over) {
                (_, true) => Line::TooLong,
                (true, false) => Line::End,
                (false, false) => Line::Text(done.line),
            });
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !p.over {
            if p.line.len() + chunk.len() > max {
                p.over = true;
                p.line = Vec::new();
            } else {
                p.line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            let done = std::mem::take(p);
            return Ok(if done.over {
                Line::TooLong
            } else {
                Line::Text(done.line)
            });
        }
    }
}

/// The transport over a reader and a writer (stdin and stdout).
pub struct LineTransport<R, W> {
    read: R,
    partial: Partial,
    write: Arc<Mutex<W>>,
    max: usize,
}

impl<R, W> LineTransport<R, W> {
    pub fn new(read: R, write: W, max: usize) -> LineTransport<R, W> {
        LineTransport {
            read,
            partial: Partial::default(),
            write: Arc::new(Mutex::new(write)),
            max,
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    w: &Mutex<W>,
    v: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut text = serde_json::to_vec(v).map_err(std::io::Error::other)?;
    text.push(b'\n');
    let mut w = w.lock().await;
    w.write_all(&text).await?;
    w.flush().await
}

fn error(id: Json, code: i32, message: String) -> Json {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let w = self.write.clone();
        async move { write_line(&w, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let answer = match read_line(&mut self.read, &mut self.partial, self.max).await {
                Err(e) => {
                    tracing::warn!(error = %e, "palaver mcp: reading stdin failed");
                    return None;
                }
                Ok(Line::End) => return None,
                Ok(Line::TooLong) => error(
                    Json::Null,
                    -32700,
                    format!(
                        "Parse error: a message line is limited to {} bytes; this one was dropped",
                        self.max
                    ),
                ),
                Ok(Line::Text(t)) if t.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(Line::Text(t)) => match serde_json::from_slice::<Json>(&t) {
                    Err(e) => error(
                        Json::Null,
                        -32700,
                        format!("Parse error: the line is not JSON: {e}"),
                    ),
                    Ok(v) => {
                        match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(v.clone()) {
                            Ok(m) => return Some(m),
                            // A notification gets no answer, not even an error.
                            Err(_) if v.get("id").is_none() && v.get("method").is_some() => {
                                tracing::warn!(
                                    "palaver mcp: dropped a notification that is not one: {v}"
                                );
                                continue;
                            }
                            Err(e) => error(
                                v.get("id").cloned().unwrap_or(Json::Null),
                                -32600,
                                format!("Invalid Request: not a JSON-RPC 2.0 message of MCP: {e}"),
                            ),
                        }
                    }
                },
            };
            tracing::warn!("palaver mcp: {answer}");
            // Written by its own task: this read may be cancelled, a
            // half-written line may not.
            let w = self.write.clone();
            tokio::spawn(async move { write_line(&w, &answer).await });
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = tokio::io::BufReader::with_capacity(4, input);
        let (mut out, mut p) = (Vec::new(), Partial::default());
        loop {
            let l = read_line(&mut r, &mut p, max).await.unwrap();
            let end = l == Line::End;
            out.push(l);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn lines_are_bounded_and_a_long_one_does_not_swallow_the_next() {
        let got = lines(b"abc\n0123456789\nxy\nlast", 5).await;
        assert_eq!(
            got,
            vec![
                Line::Text(b"abc".to_vec()),
                Line::TooLong,
                Line::Text(b"xy".to_vec()),
                Line::Text(b"last".to_vec()),
                Line::End
            ]
        );
        assert_eq!(lines(b"", 5).await, vec![Line::End]);
        assert_eq!(lines(b"123456", 5).await, vec![Line::TooLong, Line::End]);
    }

    #[tokio::test]
    async fn every_bad_line_is_answered_and_the_next_message_still_arrives() {
        let input: &[u8] = b"not json\n[1,2\n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":5,\"method\":1}\n\n{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n";
        let (w, mut peer) = tokio::io::duplex(1 << 16);
        let mut t = LineTransport::new(tokio::io::BufReader::new(input), w, 1024);
        let m = t.receive().await.expect("the ping");
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["id"], 8);
        assert_eq!(v["method"], "ping");
        drop(t);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut peer, &mut out)
            .await
            .unwrap();
        let answers: Vec<Json> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // Each answer is written by its own task: in any order.
        let mut got: Vec<(i64, String)> = answers
            .iter()
            .map(|a| (a["error"]["code"].as_i64().unwrap(), a["id"].to_string()))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                (-32700, "null".into()),
                (-32700, "null".into()),
                (-32600, "7".into())
            ],
            "{out}"
        );
    }
}
