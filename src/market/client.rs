//! [`MarketClient`]: a buyer's or provider's connection to a market — the
//! token request (signed with the palaver identity), signed GTL messages
//! with the bearer token, and the public reads. What the CLI, the provider
//! bot and a console pane use. Every answer is bounded in size and time
//! by the [`Client`]'s [`crate::web::HttpLimits`].
//!
//! The same client also runs in the market's own process
//! ([`MarketClient::in_process`], for the MCP entry on `palaver serve`): the
//! message is signed and serialized the same way and handed to
//! [`Market::submit`], the call `POST /api/gtl` makes, and a refusal comes
//! back with the status and envelope REST would answer.

use super::canonical::CanonError;
use super::messages;
use super::view::{self, Jobs, Listing, TransactionView};
use super::vocab::Kind;
use super::{Market, MarketError, policy};
use crate::identity::KeyPair;
use crate::json::{Map, Value};
use crate::web::{Client, ClientError};
use std::sync::Arc;

/// Why a market call failed.
#[derive(Debug, thiserror::Error)]
pub enum MarketClientError {
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The market answered with an error envelope.
    #[error("{path}: HTTP {status} {code}: {message}")]
    Rejected {
        path: String,
        status: u16,
        code: String,
        message: String,
        /// The whole envelope (`missing_fields`, `invalid_fields`…).
        body: Value,
    },
    #[error("cannot sign the message: {0}")]
    Canon(#[from] CanonError),
    /// A check made here refused the step before anything was sent.
    #[error("{0}")]
    Check(String),
    #[error("{0}")]
    Unexpected(String),
}

/// Where a [`MarketClient`]'s requests go.
#[derive(Clone)]
enum Link {
    /// The market's REST endpoints.
    Http(Box<Client>),
    /// The market itself, in this process.
    Local(Arc<Market>),
}

/// A market connection for one identity (cheap to clone).
#[derive(Clone)]
pub struct MarketClient {
    link: Link,
    token: String,
    principal_id: String,
    agent_id: String,
}

fn rejected(path: &str, status: u16, body: Value) -> MarketClientError {
    let g = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    MarketClientError::Rejected {
        path: path.to_owned(),
        status,
        code: g("error"),
        message: g("message"),
        body,
    }
}

impl MarketClient {
    /// Gets this identity's bearer token (`POST /api/gtl/token`, signed
    /// with the identity's key; the identity must be registered). A
    /// `principal_id` binds the identity on its first token.
    pub async fn connect(
        base: &str,
        keys: KeyPair,
        principal_id: Option<&str>,
    ) -> Result<MarketClient, MarketClientError> {
        MarketClient::connect_with(Client::new(base, keys)?, principal_id).await
    }

    /// As [`MarketClient::connect`], over `http` (a [`Client`] made with
    /// its own [`crate::web::HttpLimits`], say).
    pub async fn connect_with(
        http: Client,
        principal_id: Option<&str>,
    ) -> Result<MarketClient, MarketClientError> {
        let mut body = Map::new();
        if let Some(p) = principal_id {
            body.insert("principal_id", Value::from(p));
        }
        let path = "/api/gtl/token";
        let (status, v) = http.raw("POST", path, Some(&Value::Object(body))).await?;
        if status != 200 && status != 201 {
            return Err(rejected(path, status, v));
        }
        let g = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    MarketClientError::Unexpected(format!("the token answer has no {k}"))
                })
        };
        Ok(MarketClient {
            token: g("token")?,
            principal_id: g("principal_id")?,
            agent_id: g("agent_id")?,
            link: Link::Http(Box::new(http)),
        })
    }

    /// The principal `token` speaks for, on `market` in this process. An
    /// unknown token is refused as `POST /api/gtl` refuses it (401
    /// `unauthorized`).
    pub async fn in_process(
        market: Arc<Market>,
        token: &str,
    ) -> Result<MarketClient, MarketClientError> {
        let (m, t) = (market.clone(), token.to_owned());
        let who = local(move || m.principal(&t)).await?.ok_or_else(|| {
            refused(
                "/api/gtl",
                &MarketError::Unauthorized("the bearer token is not one this market issued".into()),
            )
        })?;
        Ok(MarketClient {
            link: Link::Local(market),
            token: token.to_owned(),
            principal_id: who.principal_id,
            agent_id: who.agent_id,
        })
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn principal_id(&self) -> &str {
        &self.principal_id
    }

    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// Posts a message exactly as given (no signing): how tests send
    /// forged or incomplete messages. Returns the status and the answer.
    pub async fn post_unsigned(&self, msg: &Map) -> Result<(u16, Value), MarketClientError> {
        let bytes =
            crate::json::canonical::to_string_ordered(&Value::Object(msg.clone())).into_bytes();
        match &self.link {
            Link::Http(http) => {
                let headers = [("Authorization".to_owned(), format!("Bearer {}", self.token))];
                Ok(http.send("POST", "/api/gtl", bytes, &headers).await?)
            }
            Link::Local(market) => {
                let (m, token) = (market.clone(), self.token.clone());
                match local(move || m.submit(Some(&token), &bytes)).await {
                    Ok(v) => Ok((200, v)),
                    Err(MarketClientError::Rejected { status, body, .. }) => Ok((status, body)),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Signs `msg` with the token and posts it; the market's answer, or
    /// its refusal as [`MarketClientError::Rejected`].
    pub async fn post(&self, msg: Map) -> Result<Value, MarketClientError> {
        let signed = messages::sign(&self.token, msg)?;
        let (status, v) = self.post_unsigned(&signed).await?;
        if status == 200 {
            Ok(v)
        } else {
            Err(rejected("/api/gtl", status, v))
        }
    }

    async fn get(&self, path: &str) -> Result<Value, MarketClientError> {
        let Link::Http(http) = &self.link else {
            return Err(MarketClientError::Unexpected(format!(
                "GET {path} has no in-process form"
            )));
        };
        let (status, v) = http.send("GET", path, Vec::new(), &[]).await?;
        if status == 200 {
            Ok(v)
        } else {
            Err(rejected(path, status, v))
        }
    }

    /// HELLO: the version the market selects.
    pub async fn hello(&self) -> Result<Value, MarketClientError> {
        let mut m = Map::new();
        m.insert("type", Value::from(Kind::Hello.as_str()));
        m.insert("supported_versions", Value::Array(vec![Value::from("0.2")]));
        let (status, v) = self.post_unsigned(&m).await?;
        if status == 200 {
            Ok(v)
        } else {
            Err(rejected("/api/gtl", status, v))
        }
    }

    /// Reads the answer of `GET path` as a view type.
    async fn get_view<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<T, MarketClientError> {
        let v = self.get(path).await?;
        view::decode(&v)
            .map_err(|e| MarketClientError::Unexpected(format!("{path}: unexpected answer: {e}")))
    }

    /// Open jobs (all jobs with `all`), newest first.
    pub async fn market(&self, all: bool) -> Result<Vec<Listing>, MarketClientError> {
        if let Link::Local(m) = &self.link {
            let m = m.clone();
            return local(move || m.listing(all)).await;
        }
        let path = if all {
            "/api/market?all=1"
        } else {
            "/api/market"
        };
        Ok(self.get_view::<Jobs>(path).await?.jobs)
    }

    /// A transaction with its full history.
    pub async fn transaction(&self, id: &str) -> Result<TransactionView, MarketClientError> {
        if let Link::Local(m) = &self.link {
            let (m, id) = (m.clone(), id.to_owned());
            return local(move || m.transaction(&id)).await;
        }
        self.get_view(&format!("/api/gtl/transactions/{id}")).await
    }

    /// This principal's GTU balance.
    pub async fn balance(&self) -> Result<i64, MarketClientError> {
        if let Link::Local(m) = &self.link {
            let (m, who) = (m.clone(), self.principal_id.clone());
            let path = format!("/api/gtl/accounts/{who}");
            return local(move || m.balance(&who)).await?.ok_or_else(|| {
                refused(
                    &path,
                    &MarketError::NotFound(format!("no principal {}", self.principal_id)),
                )
            });
        }
        let v = self
            .get(&format!("/api/gtl/accounts/{}", self.principal_id))
            .await?;
        v.get("balance").and_then(Value::as_i64).ok_or_else(|| {
            MarketClientError::Unexpected("the account answer has no balance".into())
        })
    }

    /// The published policy object.
    pub async fn policy(&self, id: &str) -> Result<Value, MarketClientError> {
        let path = format!("/api/gtl/policies/{id}");
        match &self.link {
            Link::Http(_) => self.get(&path).await,
            Link::Local(_) if id == policy::POLICY_ID => Ok(policy::policy()),
            Link::Local(_) => Err(refused(
                &path,
                &MarketError::NotFound(format!(
                    "no policy {id}: this market publishes {}",
                    policy::POLICY_ID
                )),
            )),
        }
    }

    /// The JobSpec and message schema (`GET /api/gtl/schema`).
    pub async fn schema(&self) -> Result<Value, MarketClientError> {
        match &self.link {
            Link::Http(_) => self.get("/api/gtl/schema").await,
            Link::Local(_) => Ok(super::schema::schema()),
        }
    }
}

/// A market refusal as REST would answer it at `path`.
fn refused(path: &str, e: &MarketError) -> MarketClientError {
    let (status, body) = super::http::refusal(e);
    rejected(path, status, body)
}

/// Runs a call on the market in this process on the blocking pool (its
/// store calls block), its refusal as REST would answer `POST /api/gtl`.
async fn local<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, MarketError> + Send + 'static,
) -> Result<T, MarketClientError> {
    super::http::work("market.mcp", f)
        .await
        .map_err(|e| refused("/api/gtl", &e))
}
