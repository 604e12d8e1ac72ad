//! HTTP shared by the community and the market: the signed-request scheme
//! ([`auth`]), the one bounded client stack every HTTP client uses
//! ([`http`]), the client that signs ([`Client`]), the serving pieces
//! both servers' routes run on ([`serve`]: body guard, connection-capped
//! loop, in-process calls), and what serving leaves behind ([`observe`]:
//! request ids, a span and a log line per request, internal errors kept
//! from clients; [`metrics`]: the counters `GET /metrics` shows).

pub mod auth;
pub mod client;
pub mod http;
pub mod metrics;
pub mod observe;
pub mod serve;

pub use client::{Client, ClientError};
pub use http::{Http, HttpError, HttpLimits};
pub use serve::{
    BodyProblem, Drained, InProcess, buffer_body, call, closing, json_response, serve_router,
    serve_router_until,
};
