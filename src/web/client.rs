//! The signed REST client every palaver command that talks to a community
//! or a market uses. Requests go through [`Http`]: every answer is
//! bounded in size and time ([`HttpLimits`]).

use super::auth;
use super::http::{Http, HttpError, HttpLimits};
use crate::identity::KeyPair;
use crate::json::{self, Value};
use http_body_util::Full;
use hyper::body::Bytes;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "{method} {path}: cannot reach {base}: {msg} (is the server running? start one with `palaver serve`)"
    )]
    Unreachable {
        method: String,
        path: String,
        base: String,
        msg: String,
    },
    #[error("{method} {path} failed: HTTP {status}: {message}")]
    Status {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    /// The server answered, but not within the bounds (too large, too
    /// slow, not HTTP).
    #[error("{method} {path}: {why}")]
    Answer {
        method: String,
        path: String,
        why: HttpError,
    },
    #[error("bad server URL {0}: only http://host:port is supported")]
    BadUrl(String),
}

impl ClientError {
    /// A failed request as its kind: a server not reached is
    /// [`ClientError::Unreachable`], anything past the connect is
    /// [`ClientError::Answer`].
    fn of(method: &str, path: &str, base: &str, e: HttpError) -> ClientError {
        match e {
            HttpError::Connect { msg, .. } => ClientError::Unreachable {
                method: method.into(),
                path: path.into(),
                base: base.into(),
                msg,
            },
            HttpError::BadUrl { msg, .. } => ClientError::Unreachable {
                method: method.into(),
                path: path.into(),
                base: base.into(),
                msg,
            },
            why => ClientError::Answer {
                method: method.into(),
                path: path.into(),
                why,
            },
        }
    }
}

/// A signed client for one server and identity (cheap to clone).
#[derive(Clone)]
pub struct Client {
    base: String,
    keys: KeyPair,
    http: Http,
}

impl Client {
    /// A client with the default [`HttpLimits`].
    pub fn new(base: &str, keys: KeyPair) -> Result<Client, ClientError> {
        Client::with_limits(base, keys, HttpLimits::default())
    }

    /// A client whose answers are held to `limits`.
    pub fn with_limits(
        base: &str,
        keys: KeyPair,
        limits: HttpLimits,
    ) -> Result<Client, ClientError> {
        let base = base.trim_end_matches('/').to_owned();
        if !base.starts_with("http://") {
            return Err(ClientError::BadUrl(base));
        }
        Ok(Client {
            base,
            keys,
            http: Http::new(limits),
        })
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn keys(&self) -> &KeyPair {
        &self.keys
    }

    /// Sends a signed request; returns the status and the JSON body (Null
    /// when empty).
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), ClientError> {
        let bytes = body
            .map(|b| crate::json::canonical::to_string_ordered(b).into_bytes())
            .unwrap_or_default();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let headers =
            auth::headers(&self.keys, method, path, &bytes, now).map(|(k, v)| (k.to_owned(), v));
        self.send(method, path, bytes, &headers).await
    }

    /// Sends exactly these body bytes and headers (no signing of its own):
    /// the building block of [`Client::raw`], and how tests forge requests.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        bytes: Vec<u8>,
        headers: &[(String, String)],
    ) -> Result<(u16, Value), ClientError> {
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let unreachable = |msg: String| ClientError::Unreachable {
            method: method.into(),
            path: path.into(),
            base: self.base.clone(),
            msg,
        };
        let req = req
            .body(Full::new(Bytes::from(bytes)))
            .map_err(|e| unreachable(e.to_string()))?;
        let answer = self
            .http
            .fetch(req)
            .await
            .map_err(|e| ClientError::of(method, path, &self.base, e))?;
        let body = answer.body;
        let v = if body.is_empty() {
            Value::Null
        } else {
            json::parse_bytes(&body)
                .unwrap_or_else(|_| Value::from(String::from_utf8_lossy(&body).as_ref()))
        };
        Ok((answer.status, v))
    }

    /// The server's clock as its `Date` header says (an unsigned GET of
    /// `path`), in Unix seconds; None when it sends no readable date.
    pub async fn server_time(&self, path: &str) -> Result<Option<i64>, ClientError> {
        let req = hyper::Request::builder()
            .method("GET")
            .uri(format!("{}{path}", self.base))
            .body(Full::new(Bytes::new()))
            .map_err(|e| ClientError::Unreachable {
                method: "GET".into(),
                path: path.into(),
                base: self.base.clone(),
                msg: e.to_string(),
            })?;
        let answer = self
            .http
            .fetch(req)
            .await
            .map_err(|e| ClientError::of("GET", path, &self.base, e))?;
        Ok(answer
            .headers
            .get(hyper::header::DATE)
            .and_then(|d| d.to_str().ok())
            .and_then(crate::utc::parse_http_date))
    }

    /// A request that must answer with one of `expected`.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        expected: &[u16],
    ) -> Result<Value, ClientError> {
        let (status, v) = self.raw(method, path, body).await?;
        if expected.contains(&status) {
            return Ok(v);
        }
        let message = v
            .get("message")
            .map(Value::py_str)
            .unwrap_or_else(|| crate::json::canonical::to_string_ordered(&v));
        Err(ClientError::Status {
            method: method.into(),
            path: path.into(),
            status,
            message,
        })
    }

    /// Registers this identity with the proof of work.
    pub async fn register(&self, nickname: &str, bio: &str) -> Result<(u16, Value), ClientError> {
        let ch = self
            .call("GET", "/api/v1/auth/challenge", None, &[200])
            .await?;
        let nonce = ch
            .get("nonce")
            .or_else(|| ch.get("challenge"))
            .map(Value::py_str)
            .unwrap_or_default();
        let difficulty = ch
            .get("difficulty")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .clamp(0, 8) as u32;
        let pk = self.keys.public_key.clone();
        let counter = auth::solve_pow(&nonce, &pk, difficulty);
        let sig = self
            .keys
            .sign(auth::registration_canonical(&nonce, &pk, nickname).as_bytes());
        let body = Value::Object(crate::obj! {
            "public_key" => pk.as_str(), "nickname" => nickname, "bio" => bio, "nonce" => nonce.as_str(),
            "counter" => counter, "signature" => sig,
        });
        let (status, v) = self
            .raw("POST", "/api/v1/auth/register", Some(&body))
            .await?;
        if [200, 201, 409].contains(&status) {
            Ok((status, v))
        } else {
            let message = v.get("message").map(Value::py_str).unwrap_or_default();
            Err(ClientError::Status {
                method: "POST".into(),
                path: "/api/v1/auth/register".into(),
                status,
                message,
            })
        }
    }
}
