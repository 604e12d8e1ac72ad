//! A [`Store`] that times every call of the store it wraps
//! ([`metrics::timed`]): a call slower than the threshold (`palaver serve
//! --slow-query-ms`) is counted in `palaver_store_slow_calls_total{op}` and
//! logged as a warning in the request's span. The community's routes run
//! over one ([`super::server::routes`]).

use super::groups::Group;
use super::recent::{Admission, Admit};
use super::standing::{
    Cursor, Delivery, EloRating, InboxPage, Karma, Message, Page, Ranked, Reported,
};
use super::store::{
    Agent, AsyncCalls, Call, CommunityGauges, NewProtocol, NewSession, PoolState, Renewal, Res,
    SessionRow, Store, StoreError,
};
use crate::json::Map;
use crate::web::metrics;
use std::sync::Arc;

pub struct Timed {
    inner: Arc<dyn Store>,
}

impl Timed {
    pub fn new(inner: Arc<dyn Store>) -> Timed {
        Timed { inner }
    }

    fn t<T>(&self, op: &'static str, f: impl FnOnce(&dyn Store) -> Res<T>) -> Res<T> {
        metrics::timed(op, || f(&*self.inner))
    }
}

impl Timed {
    /// The inner store's asynchronous calls, or the error that it has none
    /// ([`Store::async_calls`] offers this face only when it has).
    fn inner_calls(&self) -> Res<&dyn AsyncCalls> {
        self.inner
            .async_calls()
            .ok_or_else(|| StoreError("the store has no asynchronous calls".into()))
    }
}

/// Each call timed as the blocking ones are ([`metrics::timed_async`]).
impl AsyncCalls for Timed {
    fn admit<'a>(&'a self, a: Admit<'a>) -> Call<'a, Admission> {
        Box::pin(async move {
            let calls = self.inner_calls()?;
            metrics::timed_async("admit", calls.admit(a)).await
        })
    }
    fn invitations<'a>(
        &'a self,
        protocol_id: Option<&'a str>,
        kind: Option<&'a str>,
        tag: Option<&'a str>,
        n: usize,
        now: f64,
    ) -> Call<'a, Vec<Map>> {
        Box::pin(async move {
            let calls = self.inner_calls()?;
            let f = calls.invitations(protocol_id, kind, tag, n, now);
            metrics::timed_async("invitations", f).await
        })
    }
    fn add_session_at_once<'a>(
        &'a self,
        s: &'a SessionRow,
        session_nonce: &'a str,
        host_sig: &'a str,
        guest_sig: &'a str,
    ) -> Call<'a, bool> {
        Box::pin(async move {
            let calls = self.inner_calls()?;
            let f = calls.add_session_at_once(s, session_nonce, host_sig, guest_sig);
            metrics::timed_async("add_session_at_once", f).await
        })
    }
}

impl Store for Timed {
    fn add_challenge(&self, nonce: &str, difficulty: u32, now: f64) -> Res<()> {
        self.t("add_challenge", |s| s.add_challenge(nonce, difficulty, now))
    }
    fn challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>> {
        self.t("challenge", |s| s.challenge(nonce, now, max_age))
    }
    fn take_challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>> {
        self.t("take_challenge", |s| s.take_challenge(nonce, now, max_age))
    }
    fn agent(&self, public_key: &str) -> Res<Option<Agent>> {
        self.t("agent", |s| s.agent(public_key))
    }
    fn add_agent(&self, a: &Agent) -> Res<bool> {
        self.t("add_agent", |s| s.add_agent(a))
    }
    fn add_protocol(&self, p: &NewProtocol<'_>, now: f64) -> Res<bool> {
        self.t("add_protocol", |s| s.add_protocol(p, now))
    }
    fn protocol(&self, protocol_id: &str) -> Res<Option<(String, String, String, String)>> {
        self.t("protocol", |s| s.protocol(protocol_id))
    }
    fn protocols(
        &self,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Res<Page<(String, String, String)>> {
        self.t("protocols", |s| s.protocols(cursor, limit))
    }
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn ping(&self) -> Res<()> {
        self.t("ping", |s| s.ping())
    }
    fn gauges(&self, now: f64) -> Res<CommunityGauges> {
        self.t("gauges", |s| s.gauges(now))
    }
    fn pool_state(&self) -> Option<PoolState> {
        self.inner.pool_state()
    }
    fn admit(&self, a: &Admit<'_>) -> Res<Admission> {
        self.t("admit", |s| s.admit(a))
    }
    fn async_calls(&self) -> Option<&dyn AsyncCalls> {
        self.inner.async_calls().map(|_| self as &dyn AsyncCalls)
    }
    fn active_invitations(&self, public_key: &str, now: f64) -> Res<usize> {
        self.t("active_invitations", |s| {
            s.active_invitations(public_key, now)
        })
    }
    fn add_invitation(
        &self,
        inv: &Map,
        public_key: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<bool> {
        self.t("add_invitation", |s| {
            s.add_invitation(inv, public_key, now, expires_at, max_active)
        })
    }
    fn invitation(&self, post_id: &str) -> Res<Option<Map>> {
        self.t("invitation", |s| s.invitation(post_id))
    }
    fn invitation_and_agents(
        &self,
        post_id: &str,
        keys: [&str; 2],
    ) -> Res<Option<(Map, [bool; 2])>> {
        self.t("invitation_and_agents", |s| {
            s.invitation_and_agents(post_id, keys)
        })
    }
    fn invitations(
        &self,
        protocol_id: Option<&str>,
        kind: Option<&str>,
        tag: Option<&str>,
        limit: usize,
        now: f64,
    ) -> Res<Vec<Map>> {
        self.t("invitations", |s| {
            s.invitations(protocol_id, kind, tag, limit, now)
        })
    }
    fn cancel_invitation(&self, post_id: &str) -> Res<bool> {
        self.t("cancel_invitation", |s| s.cancel_invitation(post_id))
    }
    fn renew_invitation(
        &self,
        post_id: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<Renewal> {
        self.t("renew_invitation", |s| {
            s.renew_invitation(post_id, now, expires_at, max_active)
        })
    }
    fn add_session_at_once(
        &self,
        row: &SessionRow,
        session_nonce: &str,
        host_sig: &str,
        guest_sig: &str,
    ) -> Res<bool> {
        self.t("add_session_at_once", |s| {
            s.add_session_at_once(row, session_nonce, host_sig, guest_sig)
        })
    }
    fn add_session(
        &self,
        row: &SessionRow,
        session_nonce: &str,
        host_sig: &str,
        guest_sig: &str,
    ) -> Res<NewSession> {
        self.t("add_session", |s| {
            s.add_session(row, session_nonce, host_sig, guest_sig)
        })
    }
    fn session(&self, session_id: &str) -> Res<Option<SessionRow>> {
        self.t("session", |s| s.session(session_id))
    }
    fn close_session(&self, session_id: &str, status: &str, now: f64) -> Res<bool> {
        self.t("close_session", |s| {
            s.close_session(session_id, status, now)
        })
    }
    fn report_result(
        &self,
        session_id: &str,
        reporter: &str,
        winner: &str,
        now: f64,
    ) -> Res<Reported> {
        self.t("report_result", |s| {
            s.report_result(session_id, reporter, winner, now)
        })
    }
    fn set_transport(&self, session_id: &str, ticket: &str, signature: &str) -> Res<()> {
        self.t("set_transport", |s| {
            s.set_transport(session_id, ticket, signature)
        })
    }
    fn add_feedback(&self, session_id: &str, by: &str, body: &Map, now: f64) -> Res<()> {
        self.t("add_feedback", |s| {
            s.add_feedback(session_id, by, body, now)
        })
    }
    fn add_rating(
        &self,
        session_id: &str,
        rater: &str,
        rated: &str,
        score: i64,
        comment: &str,
        now: f64,
    ) -> Res<bool> {
        self.t("add_rating", |s| {
            s.add_rating(session_id, rater, rated, score, comment, now)
        })
    }
    fn agent_stats(&self, public_key: &str) -> Res<Map> {
        self.t("agent_stats", |s| s.agent_stats(public_key))
    }
    fn agent_ratings(&self, public_key: &str, limit: usize) -> Res<Vec<Map>> {
        self.t("agent_ratings", |s| s.agent_ratings(public_key, limit))
    }
    fn add_group(&self, g: &Group) -> Res<bool> {
        self.t("add_group", |s| s.add_group(g))
    }
    fn group(&self, id: &str, by_post: bool) -> Res<Option<(Group, i64)>> {
        self.t("group", |s| s.group(id, by_post))
    }
    fn save_group(&self, g: &Group, version: i64) -> Res<bool> {
        self.t("save_group", |s| s.save_group(g, version))
    }
    fn elo(&self, public_key: &str) -> Res<EloRating> {
        self.t("elo", |s| s.elo(public_key))
    }
    fn elo_board(&self, after: Option<&Cursor>, limit: usize) -> Res<Page<Ranked>> {
        self.t("elo_board", |s| s.elo_board(after, limit))
    }
    fn karma(&self, public_key: &str) -> Res<Karma> {
        self.t("karma", |s| s.karma(public_key))
    }
    fn karma_board(&self, after: Option<&Cursor>, limit: usize) -> Res<Page<Ranked>> {
        self.t("karma_board", |s| s.karma_board(after, limit))
    }
    fn set_capabilities(&self, public_key: &str, caps: &[String], now: f64) -> Res<()> {
        self.t("set_capabilities", |s| {
            s.set_capabilities(public_key, caps, now)
        })
    }
    fn capabilities(&self, public_key: &str) -> Res<Option<(Vec<String>, f64)>> {
        self.t("capabilities", |s| s.capabilities(public_key))
    }
    fn agents_with_capability(
        &self,
        capability: &str,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Res<Page<(Agent, Vec<String>)>> {
        self.t("agents_with_capability", |s| {
            s.agents_with_capability(capability, after, limit)
        })
    }
    fn send_message(
        &self,
        sender: &str,
        recipient: &str,
        ciphertext: &str,
        size: i64,
        now: f64,
    ) -> Res<Delivery> {
        self.t("send_message", |s| {
            s.send_message(sender, recipient, ciphertext, size, now)
        })
    }
    fn inbox(
        &self,
        recipient: &str,
        after: Option<&Cursor>,
        limit: usize,
        now: f64,
    ) -> Res<InboxPage> {
        self.t("inbox", |s| s.inbox(recipient, after, limit, now))
    }
    fn read_message(&self, recipient: &str, id: i64, now: f64) -> Res<Option<Message>> {
        self.t("read_message", |s| s.read_message(recipient, id, now))
    }
    fn delete_message(&self, recipient: &str, id: i64) -> Res<bool> {
        self.t("delete_message", |s| s.delete_message(recipient, id))
    }
    fn clear_inbox(&self, recipient: &str) -> Res<u64> {
        self.t("clear_inbox", |s| s.clear_inbox(recipient))
    }
    fn trust_snapshot(&self, date: &str, build: bool, now: f64) -> Res<Option<String>> {
        self.t("trust_snapshot", |s| s.trust_snapshot(date, build, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::community::SqliteStore;

    #[test]
    fn the_wrapper_answers_as_the_store_does() {
        let inner: Arc<dyn Store> = Arc::new(SqliteStore::memory().unwrap());
        let t = Timed::new(inner);
        t.ping().unwrap();
        assert!(t.agent("00").unwrap().is_none());
        assert_eq!(t.kind(), "sqlite");
        assert_eq!(t.pool_state(), None);
        assert_eq!(
            t.gauges(0.0).unwrap(),
            CommunityGauges {
                open_invitations: 0,
                live_groups: 0
            }
        );
    }
}
