//! The one HTTP client stack of palaver's clients (the signed
//! [`super::Client`] of the community and the market, the werewolf
//! spectator): hyper's legacy client over plain TCP, with every byte from
//! the server bounded and every wait timed ([`HttpLimits`]).
//!
//! - The response head (status line and headers) may take at most
//!   [`HttpLimits::max_head`] bytes: it is hyper's read buffer, so no piece
//!   of a body is ever larger either. A chunk size line is parsed by hyper
//!   into a count it streams against; nothing is allocated from it.
//! - A plain request ([`Http::fetch`]) ends within [`HttpLimits::request`]
//!   with a body of at most [`HttpLimits::max_body`] bytes.
//! - A stream ([`Http::stream`]) gets its head within
//!   [`HttpLimits::head`], then is read line by line ([`Lines`]): a line of
//!   more than [`HttpLimits::max_line`] bytes, or [`HttpLimits::idle`] of
//!   silence, ends it.
//!
//! Each refusal is an [`HttpError`] naming the URL and what was exceeded.

use crate::limits;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Bytes, Incoming};
use hyper_util::client::legacy::{Client as Hyper, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// The bounds of one HTTP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// The TCP connect.
    pub connect: Duration,
    /// From the start of a request to its response head (connect included).
    pub head: Duration,
    /// A plain request from its start to the end of its body.
    pub request: Duration,
    /// The longest silence inside a streamed body.
    pub idle: Duration,
    /// The largest response head, in bytes (at least 8192: hyper's floor).
    pub max_head: usize,
    /// The largest body of a plain request, in bytes.
    pub max_body: usize,
    /// The longest line of a streamed body, in bytes (without its end).
    pub max_line: usize,
}

impl Default for HttpLimits {
    /// The numbers of [`crate::limits`]: `HTTP_*`.
    fn default() -> Self {
        HttpLimits {
            connect: limits::HTTP_CONNECT_TIMEOUT,
            head: limits::HTTP_HEAD_TIMEOUT,
            request: limits::HTTP_REQUEST_TIMEOUT,
            idle: limits::HTTP_IDLE_TIMEOUT,
            max_head: limits::HTTP_MAX_HEAD_BYTES,
            max_body: limits::HTTP_MAX_BODY_BYTES,
            max_line: limits::HTTP_MAX_LINE_BYTES,
        }
    }
}

/// Why a request failed; every case names the URL.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HttpError {
    #[error("bad URL {url}: {msg}")]
    BadUrl { url: String, msg: String },
    #[error("cannot connect to {url}: {msg}")]
    Connect { url: String, msg: String },
    #[error("{url}: no connection within {secs} s")]
    ConnectTimeout { url: String, secs: f64 },
    #[error("{url}: no response head within {secs} s")]
    HeadTimeout { url: String, secs: f64 },
    #[error("{url}: no complete answer within {secs} s")]
    RequestTimeout { url: String, secs: f64 },
    #[error("{url}: the server sent nothing for {secs} s")]
    Idle { url: String, secs: f64 },
    /// hyper says the same for a head past the buffer and for a
    /// Content-Length past what 64 bits hold.
    #[error("{url}: the response head is over {limit} bytes, or declares a body longer than 2^64")]
    HeadTooLarge { url: String, limit: usize },
    #[error("{url}: the response body is over {limit} bytes")]
    BodyTooLarge { url: String, limit: usize },
    #[error("{url}: a line of the stream is over {limit} bytes")]
    LineTooLong { url: String, limit: usize },
    #[error("{url}: the answer is not valid HTTP/1.1: {msg}")]
    Malformed { url: String, msg: String },
    #[error("{url}: the connection broke: {msg}")]
    Broken { url: String, msg: String },
}

/// A plain answer: the status, the headers and the whole body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

/// An HTTP client with its bounds (cheap to clone: the connection pool is
/// shared).
#[derive(Clone)]
pub struct Http {
    client: Hyper<HttpConnector, Full<Bytes>>,
    limits: HttpLimits,
}

impl Http {
    pub fn new(limits: HttpLimits) -> Http {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(limits.connect));
        let client = Hyper::builder(TokioExecutor::new())
            .http1_max_buf_size(limits.max_head.max(8192))
            .build(connector);
        Http { client, limits }
    }

    pub fn limits(&self) -> &HttpLimits {
        &self.limits
    }

    /// Sends `req` and waits for its response head (within
    /// [`HttpLimits::head`]).
    async fn head(
        &self,
        req: hyper::Request<Full<Bytes>>,
    ) -> Result<hyper::Response<Incoming>, HttpError> {
        let url = req.uri().to_string();
        if req.uri().scheme_str() != Some("http") || req.uri().host().is_none() {
            return Err(HttpError::BadUrl {
                url,
                msg: "only http://host:port URLs".into(),
            });
        }
        match tokio::time::timeout(self.limits.head, self.client.request(req)).await {
            Err(_) => Err(HttpError::HeadTimeout {
                url,
                secs: self.limits.head.as_secs_f64(),
            }),
            Ok(Err(e)) => Err(self.request_error(url, &e)),
            Ok(Ok(resp)) => Ok(resp),
        }
    }

    /// A plain request: the status, headers and body, all within
    /// [`HttpLimits::request`]; a body over [`HttpLimits::max_body`] is an
    /// error.
    pub async fn fetch(&self, req: hyper::Request<Full<Bytes>>) -> Result<Answer, HttpError> {
        let url = req.uri().to_string();
        let whole = async {
            let resp = self.head(req).await?;
            let (parts, body) = resp.into_parts();
            let body = self.collect(&url, body).await?;
            Ok(Answer {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(self.limits.request, whole)
            .await
            .unwrap_or_else(|_| {
                Err(HttpError::RequestTimeout {
                    url: url.clone(),
                    secs: self.limits.request.as_secs_f64(),
                })
            })
    }

    /// The body, frame by frame, refused as soon as it would pass
    /// [`HttpLimits::max_body`] (at once when its Content-Length says so).
    async fn collect(&self, url: &str, mut body: Incoming) -> Result<Bytes, HttpError> {
        let limit = self.limits.max_body;
        let too_large = || HttpError::BodyTooLarge {
            url: url.to_owned(),
            limit,
        };
        if body.size_hint().lower() > limit as u64 {
            return Err(too_large());
        }
        let mut out: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| body_error(url, &e))?;
            if let Ok(data) = frame.into_data() {
                if data.len() > limit - out.len() {
                    return Err(too_large());
                }
                out.extend_from_slice(&data);
            }
        }
        Ok(Bytes::from(out))
    }

    /// A streamed request: the status and headers within
    /// [`HttpLimits::head`], and the body as [`Lines`].
    pub async fn stream(
        &self,
        req: hyper::Request<Full<Bytes>>,
    ) -> Result<(u16, hyper::HeaderMap, Lines), HttpError> {
        let url = req.uri().to_string();
        let resp = self.head(req).await?;
        let (parts, body) = resp.into_parts();
        Ok((
            parts.status.as_u16(),
            parts.headers,
            Lines {
                url,
                body,
                pending: Vec::new(),
                start: 0,
                scanned: 0,
                done: false,
                idle: self.limits.idle,
                max_line: self.limits.max_line,
            },
        ))
    }

    fn request_error(&self, url: String, e: &hyper_util::client::legacy::Error) -> HttpError {
        let msg = chain(e);
        if e.is_connect() {
            if has_io_kind(e, std::io::ErrorKind::TimedOut) {
                return HttpError::ConnectTimeout {
                    url,
                    secs: self.limits.connect.as_secs_f64(),
                };
            }
            return HttpError::Connect { url, msg };
        }
        match find_hyper(e) {
            Some(h) if h.is_parse_too_large() => HttpError::HeadTooLarge {
                url,
                limit: self.limits.max_head.max(8192),
            },
            Some(h) if h.is_parse() || h.is_parse_status() => HttpError::Malformed { url, msg },
            _ => HttpError::Broken { url, msg },
        }
    }
}

/// A body read as lines (`\n` or `\r\n` ends one), each at most
/// `max_line` bytes, with at most `idle` between two pieces of it.
pub struct Lines {
    url: String,
    body: Incoming,
    /// Bytes read and not yet returned; never more than `max_line` plus
    /// one piece of the body (itself at most the read buffer).
    pending: Vec<u8>,
    /// Where the next line starts in `pending`.
    start: usize,
    /// How much of `pending` is known to hold no line end.
    scanned: usize,
    done: bool,
    idle: Duration,
    max_line: usize,
}

impl Lines {
    /// The URL being read.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The next line (without its end, invalid UTF-8 replaced); `None` at
    /// the end of the body. A line over the limit, silence over the idle
    /// time and a broken body are errors.
    pub async fn next_line(&mut self) -> Result<Option<String>, HttpError> {
        loop {
            if let Some(i) = self.pending[self.scanned..]
                .iter()
                .position(|&b| b == b'\n')
            {
                let end = self.scanned + i;
                let mut line = &self.pending[self.start..end];
                if let [rest @ .., b'\r'] = line {
                    line = rest;
                }
                if line.len() > self.max_line {
                    return Err(self.too_long());
                }
                let line = String::from_utf8_lossy(line).into_owned();
                self.start = end + 1;
                self.scanned = self.start;
                return Ok(Some(line));
            }
            self.scanned = self.pending.len();
            if self.pending.len() - self.start > self.max_line {
                return Err(self.too_long());
            }
            if self.done {
                if self.start == self.pending.len() {
                    return Ok(None);
                }
                let line = String::from_utf8_lossy(&self.pending[self.start..]).into_owned();
                self.start = self.pending.len();
                return Ok(Some(line));
            }
            match tokio::time::timeout(self.idle, self.body.frame()).await {
                Err(_) => {
                    return Err(HttpError::Idle {
                        url: self.url.clone(),
                        secs: self.idle.as_secs_f64(),
                    });
                }
                Ok(None) => self.done = true,
                Ok(Some(Err(e))) => return Err(body_error(&self.url, &e)),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        // Drop the lines already returned, then add the piece.
                        self.pending.drain(..self.start);
                        self.scanned -= self.start;
                        self.start = 0;
                        self.pending.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    fn too_long(&self) -> HttpError {
        HttpError::LineTooLong {
            url: self.url.clone(),
            limit: self.max_line,
        }
    }
}

/// A body that did not read to its end: hyper's reason with its causes
/// (an invalid or overflowing chunk size, a connection closed early).
fn body_error(url: &str, e: &hyper::Error) -> HttpError {
    HttpError::Broken {
        url: url.to_owned(),
        msg: chain(e),
    }
}

/// An error and its causes, `: `-joined, each said once.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let s = err.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = err.source();
    }
    // hyper-util's own layer says only "client error (Kind)".
    if parts.len() > 1 && parts[0].starts_with("client error (") {
        parts.remove(0);
    }
    parts.join(": ")
}

fn find_hyper<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a hyper::Error> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            return Some(h);
        }
        cur = err.source();
    }
    None
}

fn has_io_kind(e: &(dyn std::error::Error + 'static), kind: std::io::ErrorKind) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_timeouts_nest() {
        // A connect fails before the head's wait, the head's before the
        // whole request's: each error names the wait that really ran out.
        let l = HttpLimits::default();
        assert!(l.connect < l.head && l.head < l.request);
        assert!(l.max_head >= 8192, "hyper's floor");
    }

    #[tokio::test]
    async fn only_http_urls_are_requested() {
        let h = Http::new(HttpLimits::default());
        let req = hyper::Request::get("https://127.0.0.1:1/x")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let e = h.fetch(req).await.unwrap_err();
        assert!(matches!(e, HttpError::BadUrl { .. }), "{e}");
        assert!(e.to_string().contains("https://127.0.0.1:1/x"), "{e}");
    }
}
