//! The MCP entry: palaver's market and session tools for agents that speak
//! the Model Context Protocol, on the official Rust SDK (`rmcp`).
//!
//! - `palaver mcp` serves every tool over stdio as the local identity: the
//!   market tools through [`MarketClient`] to the configured community's
//!   market (signed with this identity's bearer token, exactly like
//!   `palaver market …`), the session tools on the local data dir.
//! - `palaver serve` serves the market tools over streamable HTTP at
//!   [`PATH`] ([`http::routes`]): each request carries the market's bearer
//!   token, which names the principal the tools act for, and each call goes
//!   into the same [`Market`] `POST /api/gtl` uses
//!   ([`MarketClient::in_process`]), so a tool can never do what REST would
//!   refuse, and a refusal carries REST's status and envelope.
//!
//! A tool's arguments are checked against its input schema (unknown
//! fields, wrong types and out-of-range numbers are refused, naming the
//! field); a refusal is a tool error (`isError`) whose structured content
//! is the market's error envelope (`error`, `message`, `missing_fields`,
//! `invalid_fields`, and the HTTP `status` REST would have answered) or
//! `{"ok": false, "error": <code>, "message": …}` for a session tool.

mod http;
mod market_tools;
mod session_tools;
mod stdio;

pub use http::{PATH, routes};
pub use session_tools::SessionTools;

use crate::identity::KeyPair;
use crate::market::{Market, MarketClient, MarketClientError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig, SubscribeRequestParams, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value as Json;
use std::sync::Arc;

/// Longest line `palaver mcp` reads from its client (a JSON-RPC message);
/// a longer one is answered with a parse error and the stream goes on.
pub const MAX_STDIO_LINE: usize = 1024 * 1024;

/// Why a tool refused: its structured content.
#[derive(Debug)]
pub struct Refusal(pub Json);

impl Refusal {
    /// `{"ok": false, "error": code, "message": message}`.
    pub fn new(code: &str, message: impl Into<String>) -> Refusal {
        Refusal(serde_json::json!({ "ok": false, "error": code, "message": message.into() }))
    }

    /// Arguments that do not fit the tool's input schema.
    pub fn args(tool: &str, message: impl std::fmt::Display) -> Refusal {
        Refusal::new(
            "invalid_arguments",
            format!("{tool}: the arguments do not fit its input schema: {message}"),
        )
    }
}

impl From<MarketClientError> for Refusal {
    fn from(e: MarketClientError) -> Refusal {
        match e {
            MarketClientError::Rejected { status, body, .. } => {
                let mut v = to_json(&body);
                if let Some(m) = v.as_object_mut() {
                    m.insert("status".into(), Json::from(status));
                }
                Refusal(v)
            }
            MarketClientError::Check(m) => Refusal::new("check_failed", m),
            MarketClientError::Client(e) => Refusal::new("unreachable", e.to_string()),
            other => Refusal::new("unexpected", other.to_string()),
        }
    }
}

/// A tool's answer: structured content, or a refusal.
pub type Answer = Result<Json, Refusal>;

/// palaver's own JSON as serde_json's.
pub fn to_json(v: &crate::json::Value) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

/// serde_json's JSON as palaver's (integers stay integers).
pub fn from_json(v: &Json) -> Result<crate::json::Value, String> {
    crate::json::parse_str(&v.to_string()).map_err(|e| e.to_string())
}

/// Decodes a tool's arguments into its input type.
pub fn args<T: serde::de::DeserializeOwned>(
    tool: &str,
    a: Option<rmcp::model::JsonObject>,
) -> Result<T, Refusal> {
    serde_json::from_value(Json::Object(a.unwrap_or_default())).map_err(|e| Refusal::args(tool, e))
}

/// A tool from its input type's schema and an output schema.
pub fn tool<I: schemars::JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
    output: Json,
) -> Tool {
    let mut t = Tool::new(name, description, Arc::new(Default::default())).with_input_schema::<I>();
    if let Json::Object(o) = output {
        t = t.with_raw_output_schema(Arc::new(o));
    }
    t
}

/// The configured market, reached over REST as the local identity.
pub struct Remote {
    base: Option<String>,
    keys: Option<KeyPair>,
    client: tokio::sync::Mutex<Option<MarketClient>>,
}

/// Where the market tools reach the market.
pub enum MarketSource {
    /// The configured community's market over REST, as the local identity
    /// (`palaver mcp`); connected on the first market call.
    Remote(Box<Remote>),
    /// The market in this process, as the principal of each request's
    /// bearer token (`palaver serve`).
    Local(Arc<Market>),
}

impl MarketSource {
    /// The configured market at `base` (none: every market tool says how
    /// to configure one), as the identity `keys`.
    pub fn remote(base: Option<String>, keys: Option<KeyPair>) -> MarketSource {
        MarketSource::Remote(Box::new(Remote {
            base,
            keys,
            client: tokio::sync::Mutex::new(None),
        }))
    }

    /// The client for this call.
    async fn client(&self, ctx: &RequestContext<RoleServer>) -> Result<MarketClient, Refusal> {
        match self {
            MarketSource::Local(market) => {
                let token = ctx
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .and_then(|p| crate::market::http::bearer(&p.headers))
                    .ok_or_else(|| {
                        Refusal::new("unauthorized", "no bearer token on the request")
                    })?;
                Ok(MarketClient::in_process(market.clone(), &token).await?)
            }
            MarketSource::Remote(r) => {
                let Remote { base, keys, client } = &**r;
                let mut slot = client.lock().await;
                if let Some(c) = &*slot {
                    return Ok(c.clone());
                }
                let base = base.as_deref().ok_or_else(|| {
                    Refusal::new(
                        "no_market",
                        "no community server configured: start palaver mcp with --server http://HOST:PORT, set PALAVER_SERVER, or put server = \"…\" in config.toml",
                    )
                })?;
                let keys = keys.clone().ok_or_else(|| {
                    Refusal::new("no_identity", "this data dir has no identity: run palaver init, then palaver register --nickname NAME")
                })?;
                let c = MarketClient::connect(base, keys, None).await.map_err(|e| {
                    let mut r = Refusal::from(e);
                    if let Some(m) = r.0.get_mut("message") {
                        *m = Json::from(format!(
                            "getting this identity's market token (is it registered? palaver register --nickname NAME): {}",
                            m.as_str().unwrap_or("")
                        ));
                    }
                    r
                })?;
                *slot = Some(c.clone());
                Ok(c)
            }
        }
    }

    fn in_process(&self) -> bool {
        matches!(self, MarketSource::Local(_))
    }
}

/// How many tools a server lists: the market's, and the session tools
/// with `sessions`.
pub fn tool_count(sessions: bool) -> usize {
    market_tools::catalogue().len()
        + if sessions {
            session_tools::catalogue().len()
        } else {
            0
        }
}

/// Every tool's name, market tools first.
pub fn tool_names() -> Vec<String> {
    market_tools::catalogue()
        .into_iter()
        .chain(session_tools::catalogue())
        .map(|t| t.name.to_string())
        .collect()
}

/// palaver's MCP server: the market tools, and the session tools when it
/// runs on a data dir.
#[derive(Clone)]
pub struct Palaver {
    market: Arc<MarketSource>,
    sessions: Option<Arc<SessionTools>>,
}

impl Palaver {
    /// Every tool (`palaver mcp`).
    pub fn new(market: MarketSource, sessions: SessionTools) -> Palaver {
        Palaver {
            market: Arc::new(market),
            sessions: Some(Arc::new(sessions)),
        }
    }

    /// The market tools only, on the market in this process.
    pub fn market_only(market: Arc<Market>) -> Palaver {
        Palaver {
            market: Arc::new(MarketSource::Local(market)),
            sessions: None,
        }
    }

    /// The tools this server lists.
    pub fn tools(&self) -> Vec<Tool> {
        let mut t = market_tools::catalogue();
        if self.sessions.is_some() {
            t.extend(session_tools::catalogue());
        }
        t
    }

    /// Runs one tool; `None` for a tool this server does not have.
    pub async fn call(
        &self,
        name: &str,
        a: Option<rmcp::model::JsonObject>,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<Answer> {
        if let Some(r) = market_tools::call(&self.market, name, a.clone(), ctx).await {
            return Some(r);
        }
        match &self.sessions {
            Some(s) => s.call(name, a).await,
            None => None,
        }
    }
}

const INSTRUCTIONS: &str = "palaver: protocol-driven agent-to-agent sessions and the GTL 0.2 market. \
Market: market_policy and market_jobs read; a buyer calls market_open_job, market_offers, market_lock, market_fund; \
a provider calls market_jobs, market_offer, market_confirm, market_deliver; anyone calls market_transaction and market_verify. \
Sessions (palaver mcp only): browse, then join (or host); poll session_window and answer with session_decide before its deadline; \
session_events and session_snapshot show what happened. Refusals are tool errors carrying an `error` code.";

impl ServerHandler for Palaver {
    fn get_info(&self) -> ServerConfig {
        let caps = if self.sessions.is_some() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("palaver", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        match self.call(&name, request.arguments, &context).await {
            None => Err(ErrorData::invalid_params(
                format!("no tool named {name:?}: tools/list names them"),
                None,
            )),
            Some(Ok(v)) => Ok(CallToolResult::structured(v).into()),
            Some(Err(Refusal(v))) => Ok(CallToolResult::structured_error(v).into()),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        match &self.sessions {
            Some(s) => Ok(ListResourcesResult::with_all_items(s.resources())),
            None => Ok(ListResourcesResult::default()),
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(s) = &self.sessions else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        };
        s.read(&request.uri)
            .map(|text| {
                ReadResourceResult::new(vec![
                    rmcp::model::ResourceContents::text(text, request.uri.clone())
                        .with_mime_type("application/json"),
                ])
                .into()
            })
            .map_err(|m| ErrorData::resource_not_found(m, None))
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Some(s) = &self.sessions else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        };
        s.subscribe(&request.uri, context.peer.clone())
            .map_err(|m| ErrorData::resource_not_found(m, None))
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Some(s) = &self.sessions {
            s.unsubscribe(&request.uri);
        }
        Ok(())
    }
}

/// Serves every tool over stdin/stdout until the client closes them.
pub async fn serve_stdio(server: Palaver) -> Result<(), String> {
    use rmcp::ServiceExt;
    let transport = stdio::LineTransport::new(
        tokio::io::BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
        MAX_STDIO_LINE,
    );
    let running = server
        .serve(transport)
        .await
        .map_err(|e| format!("the MCP handshake failed: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the MCP service ended abnormally: {e}"))
}

#[cfg(test)]
mod tests;
