//! Serving the HTTP routes: the body guard both servers' routes run
//! ([`buffer_body`], [`closing`]), JSON responses, the connection-capped
//! serve loop, and requests run in process (fuzz targets, property tests).

use crate::json::Value;
use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;

/// Connections served at once; further ones wait in the listen backlog
/// until one closes.
pub const MAX_CONNECTIONS: usize = 4096;

/// `v` as a JSON response (canonical member order) with `status`.
pub fn json_response(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        crate::json::canonical::to_string_ordered(v),
    )
        .into_response()
}

/// Why a request body was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyProblem {
    /// Longer than the limit (bytes).
    TooLarge(usize),
    /// Not complete within the read timeout.
    TimedOut(Duration),
    /// The connection failed or the framing was broken.
    Broken(String),
}

impl BodyProblem {
    pub fn status(&self) -> StatusCode {
        match self {
            BodyProblem::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            BodyProblem::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
            BodyProblem::Broken(_) => StatusCode::BAD_REQUEST,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            BodyProblem::TooLarge(_) => "too_large",
            BodyProblem::TimedOut(_) => "timeout",
            BodyProblem::Broken(_) => "bad_body",
        }
    }

    pub fn message(&self) -> String {
        match self {
            BodyProblem::TooLarge(n) => format!("request bodies are limited to {n} bytes"),
            BodyProblem::TimedOut(t) => format!(
                "the request body did not arrive within {} s",
                t.as_secs_f64()
            ),
            BodyProblem::Broken(e) => format!("the request body could not be read: {e}"),
        }
    }
}

/// Reads a request's whole body, at most `limit` bytes within `timeout`,
/// and hands the request on with the body in memory. A declared
/// Content-Length past the limit is refused before a byte is read.
pub async fn buffer_body(
    req: axum::extract::Request,
    limit: usize,
    timeout: Duration,
) -> Result<axum::extract::Request, BodyProblem> {
    let (parts, body) = req.into_parts();
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyProblem::TooLarge(limit));
    }
    let bytes = match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Err(_) => return Err(BodyProblem::TimedOut(timeout)),
        Ok(Err(e)) => {
            let e = e.into_inner();
            return Err(
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    BodyProblem::TooLarge(limit)
                } else {
                    BodyProblem::Broken(e.to_string())
                },
            );
        }
        Ok(Ok(b)) => b,
    };
    Ok(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
}

/// The response with `Connection: close`: after a refused body the rest of
/// it is not read, so the connection cannot carry another request.
pub fn closing(mut r: Response) -> Response {
    r.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    r
}

/// Runs one request through `app` in process, with no network (the fuzz
/// targets and the property tests drive the routes this way).
pub async fn call(app: &Router, req: axum::extract::Request) -> Response {
    use hyper::service::Service as _;
    match hyper_util::service::TowerToHyperService::new(app.clone())
        .call(req)
        .await
    {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// A router driven in process, one request at a time, on its own
/// single-threaded runtime: what the fuzz targets and property tests use
/// (they need neither a socket nor an async runtime of their own).
pub struct InProcess {
    rt: tokio::runtime::Runtime,
    app: Router,
}

impl InProcess {
    pub fn new(app: Router) -> std::io::Result<InProcess> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(InProcess { rt, app })
    }

    /// Sends one request; returns the status and the body bytes. A request
    /// that cannot be built (a bad method, path or header) is `Err`.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<(u16, Vec<u8>), String> {
        let mut b = axum::http::Request::builder().method(method).uri(path);
        for (k, v) in headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let req = b
            .body(axum::body::Body::from(body))
            .map_err(|e| e.to_string())?;
        self.rt.block_on(async {
            let resp = call(&self.app, req).await;
            let status = resp.status().as_u16();
            let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
                .await
                .map_err(|e| e.to_string())?;
            Ok((status, bytes.to_vec()))
        })
    }
}

/// Serves `app` over HTTP/1.1: at most [`MAX_CONNECTIONS`] connections at
/// once, each with `read_timeout` to send every request head (hyper's
/// header read timeout, which also ends idle keep-alive connections); the
/// routes' body guards bound the bodies. A failed accept (out of file
/// descriptors, say) is retried after a short pause, never fatal.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    app: Router,
    read_timeout: Duration,
) -> std::io::Result<()> {
    serve_router_until(
        listener,
        app,
        read_timeout,
        std::future::pending(),
        Duration::ZERO,
    )
    .await
    .map(|_| ())
}

/// Completes when `rx` holds true (or its sender is gone).
async fn stopped(mut rx: tokio::sync::watch::Receiver<bool>) {
    loop {
        if *rx.borrow_and_update() {
            return;
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// How a graceful stop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Connections still open when the grace period ran out (cut off).
    pub cut_off: usize,
}

/// [`serve_router`] until `shutdown` completes; then it stops accepting
/// (the listener is closed), lets every connection finish the request it
/// is serving (keep-alive connections close after it, idle ones at once),
/// and returns when none is left or after `grace`, whichever comes first.
pub async fn serve_router_until(
    listener: tokio::net::TcpListener,
    app: Router,
    read_timeout: Duration,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<Drained> {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            _ = &mut shutdown => break,
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                continue;
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(read_timeout);
            let conn = http
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stopped(stop) => {
                    // Finish the request in flight, then close.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let all = u32::try_from(MAX_CONNECTIONS).unwrap_or(u32::MAX);
    match tokio::time::timeout(grace, slots.acquire_many(all)).await {
        Ok(_) => Ok(Drained { cut_off: 0 }),
        Err(_) => Ok(Drained {
            cut_off: MAX_CONNECTIONS - slots.available_permits(),
        }),
    }
}
