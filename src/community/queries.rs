//! The community store's queries, written once for both databases over
//! the shared SQL seam ([`crate::sql`]): [`SqlStore`] is the [`Store`] of
//! any [`Backend`]. Where the dialects differ (row locks, the per-key
//! advisory lock, byte-order collation, JSON fields, NUL in text) the SQL
//! asks [`Dialect`]; every write that reads before it writes is one
//! [`Backend::transaction`] holding the lock that keeps the read true at
//! the write (SQLite's one write lock; on PostgreSQL a per-key advisory
//! lock for the invitation limit, the invitation's row for a session, the
//! session's row for results), and single-use rows are taken by
//! `DELETE … RETURNING`.

use super::groups::Group;
use super::queries_social as social;
use super::recent::{Admission, Admit};
use super::standing::{
    Cursor, Delivery, EloRating, InboxPage, Karma, Message, Page, Ranked, Reported,
};
use super::statements::{OPEN_INVITATIONS, open_page, take_for_session};
use super::store::{
    Agent, AsyncCalls, Backend, CommunityGauges, InvitationRow, NewProtocol, NewSession, PoolState,
    Renewal, Reputation, Res, SessionRow, Store, StoreError, invitation_view,
};
use crate::json::{Map, Value};
use crate::sql::{Db, Dialect, Row, args};

/// The community's store over a backend (see the module doc).
pub struct SqlStore<B>(pub(super) B);

/// Open invitations at `$1`.
const LIVE_INVITATIONS: &str =
    "SELECT COUNT(*) FROM invitations WHERE status = 'open' AND expires_at > $1";

/// A key's active invitations at `$2`.
const ACTIVE: &str = "SELECT COUNT(*) FROM invitations WHERE public_key = $1 AND status = 'open' AND expires_at > $2";

/// The lock class of the per-key advisory lock that serialises a key's
/// invitation changes (the two-key form: class, hash of the key).
const INVITATION_LOCK: i64 = 0x696e_7601;

fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn active(db: &mut dyn Db, key: &str, now: f64) -> Res<usize> {
    Ok(count(db.query_one(ACTIVE, args![key, now])?.int(0)?))
}

/// Serialises `key`'s invitation changes until the transaction ends, on
/// every instance (a no-op where the transaction holds the database's one
/// write lock already).
fn lock_key(db: &mut dyn Db, key: &str) -> Res<()> {
    if let Some(sql) = db.dialect().advisory_lock() {
        db.execute(sql, args![INVITATION_LOCK, key])?;
    }
    Ok(())
}

/// A challenge's difficulty if it is younger than `max_age`.
fn fresh(row: Option<Row>, now: f64, max_age: f64) -> Res<Option<u32>> {
    let Some(r) = row else {
        return Ok(None);
    };
    let (d, at) = (r.int(0)?, r.float(1)?);
    Ok((now - at <= max_age)
        .then(|| u32::try_from(d).ok())
        .flatten())
}

fn session_of(r: &Row) -> Res<SessionRow> {
    Ok(SessionRow {
        session_id: r.text(0)?,
        post_id: r.text(1)?,
        protocol_id: r.text(2)?,
        host_public_key: r.text(3)?,
        guest_public_key: r.text(4)?,
        status: r.text(5)?,
        winner: r.opt_text(6)?,
        disputed: r.bool(7)?,
        iroh_ticket: r.opt_text(8)?,
        created_at: r.float(9)?,
    })
}

fn group_body(g: &Group) -> Res<String> {
    serde_json::to_string(g).map_err(|e| StoreError(e.to_string()))
}

impl<B: Backend> SqlStore<B> {
    /// Whether `s` cannot be stored (a NUL where text cannot hold one): a
    /// lookup with it matches nothing, answered without asking.
    fn unstorable(&self, s: &str) -> bool {
        !self.0.dialect().holds_nul() && s.contains('\0')
    }
}

impl<B: Backend> Store for SqlStore<B> {
    fn kind(&self) -> &'static str {
        match self.0.dialect() {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        }
    }

    fn ping(&self) -> Res<()> {
        self.0.ping()
    }

    fn gauges(&self, now: f64) -> Res<CommunityGauges> {
        self.0.run(|db| {
            let d = db.dialect();
            let live = format!(
                "SELECT COUNT(*) FROM groups WHERE {} IN ('lobby', 'active') AND {} > $1",
                d.json_text("body", "status"),
                d.json_number("body", "leader_lease_expires_at"),
            );
            Ok(CommunityGauges {
                open_invitations: db.query_one(LIVE_INVITATIONS, args![now])?.int(0)?,
                live_groups: db.query_one(&live, args![now])?.int(0)?,
            })
        })
    }

    fn pool_state(&self) -> Option<PoolState> {
        self.0.pool_state()
    }

    fn admit(&self, a: &Admit<'_>) -> Res<Admission> {
        self.0.admit(a)
    }

    fn async_calls(&self) -> Option<&dyn AsyncCalls> {
        self.0.async_calls()
    }

    fn add_challenge(&self, nonce: &str, difficulty: u32, now: f64) -> Res<()> {
        self.0.run(|db| {
            db.execute(
                "DELETE FROM challenges WHERE created_at < $1",
                args![now - 600.0],
            )?;
            db.execute(
                "INSERT INTO challenges (nonce, difficulty, created_at) VALUES ($1, $2, $3)",
                args![nonce, i64::from(difficulty), now],
            )?;
            Ok(())
        })
    }

    fn challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>> {
        if self.unstorable(nonce) {
            return Ok(None);
        }
        self.0.run(|db| {
            let row = db.query_opt(
                "SELECT difficulty, created_at FROM challenges WHERE nonce = $1",
                args![nonce],
            )?;
            fresh(row, now, max_age)
        })
    }

    fn take_challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>> {
        if self.unstorable(nonce) {
            return Ok(None);
        }
        // Single use: of two racing registrations one deletes the row.
        self.0.run(|db| {
            let row = db.query_opt(
                "DELETE FROM challenges WHERE nonce = $1 RETURNING difficulty, created_at",
                args![nonce],
            )?;
            fresh(row, now, max_age)
        })
    }

    fn agent(&self, public_key: &str) -> Res<Option<Agent>> {
        if self.unstorable(public_key) {
            return Ok(None);
        }
        self.0.run(|db| social::agent(db, public_key))
    }

    fn add_agent(&self, a: &Agent) -> Res<bool> {
        let n = self.0.run(|db| {
            Ok(db.execute(
                "INSERT INTO agents (public_key, nickname, bio, agent_id, registered_at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT DO NOTHING",
                args![&a.public_key, &a.nickname, &a.bio, &a.agent_id, a.registered_at],
            )?)
        })?;
        Ok(n == 1)
    }

    fn add_protocol(&self, p: &NewProtocol<'_>, now: f64) -> Res<bool> {
        let n = self.0.run(|db| {
            Ok(db.execute(
                "INSERT INTO protocols (protocol_id, name, description, type, spec_json, registered_by, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
                args![p.protocol_id, p.name, p.description, p.kind, p.spec_json, p.registered_by, now],
            )?)
        })?;
        Ok(n == 1)
    }

    fn protocol(&self, protocol_id: &str) -> Res<Option<(String, String, String, String)>> {
        if self.unstorable(protocol_id) {
            return Ok(None);
        }
        self.0.run(|db| {
            db.query_opt(
                "SELECT name, description, type, spec_json FROM protocols WHERE protocol_id = $1",
                args![protocol_id],
            )?
            .map(|r| Ok((r.text(0)?, r.text(1)?, r.text(2)?, r.text(3)?)))
            .transpose()
        })
    }

    fn protocols(&self, after: Option<&Cursor>, n: usize) -> Res<Page<(String, String, String)>> {
        self.0.run(|db| {
            // Newest first; the tiebreak in byte order on both databases,
            // so the pages are the same on either.
            let c = db.dialect().bytewise();
            let head = "SELECT protocol_id, name, description, created_at FROM protocols";
            let tail = format!("ORDER BY created_at DESC, protocol_id {c} DESC LIMIT $1");
            let rows = match after {
                None => db.query(&format!("{head} {tail}"), args![limit(n + 1)])?,
                Some(k) => db.query(
                    &format!(
                        "{head} WHERE created_at < $2 OR (created_at = $2 AND protocol_id {c} < $3) {tail}"
                    ),
                    args![limit(n + 1), f64::from_bits(k.value as u64), k.key.as_str()],
                )?,
            };
            let rows = rows
                .iter()
                .map(|r| Ok(((r.text(0)?, r.text(1)?, r.text(2)?), r.float(3)?)))
                .collect::<Res<Vec<_>>>()?;
            let page = Page::of(rows, n, after.map_or(0, |k| k.offset), |(p, at)| {
                (at.to_bits() as i64, p.0.clone())
            });
            Ok(Page {
                entries: page.entries.into_iter().map(|(p, _)| p).collect(),
                next: page.next,
            })
        })
    }

    fn active_invitations(&self, public_key: &str, now: f64) -> Res<usize> {
        if self.unstorable(public_key) {
            return Ok(0);
        }
        self.0.run(|db| active(db, public_key, now))
    }

    fn add_invitation(
        &self,
        inv: &Map,
        public_key: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<bool> {
        let row = InvitationRow::of(inv);
        self.0.transaction(|db| {
            // The key's invitations change one transaction at a time: the
            // count below is still true at the insert.
            lock_key(db, public_key)?;
            if active(db, public_key, now)? >= max_active {
                return Ok(false);
            }
            db.execute(
                "INSERT INTO invitations (post_id, public_key, protocol_id, type, tags, body, status, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, $8)",
                args![&row.post_id, public_key, &row.protocol_id, &row.kind, &row.tags, &row.body, now, expires_at],
            )?;
            Ok(true)
        })
    }

    fn invitation(&self, post_id: &str) -> Res<Option<Map>> {
        if self.unstorable(post_id) {
            return Ok(None);
        }
        self.0.run(|db| {
            db.query_opt(
                "SELECT body, status, expires_at FROM invitations WHERE post_id = $1",
                args![post_id],
            )?
            .map(|r| Ok(invitation_view(&r.text(0)?, r.text(1)?, r.float(2)?)))
            .transpose()
        })
    }

    fn invitation_and_agents(
        &self,
        post_id: &str,
        keys: [&str; 2],
    ) -> Res<Option<(Map, [bool; 2])>> {
        if self.unstorable(post_id) {
            return Ok(None);
        }
        // A key the database cannot hold is not registered ("" is no key).
        let [a, b] = keys.map(|k| if self.unstorable(k) { "" } else { k });
        self.0.run(|db| {
            db.query_opt(
                "SELECT body, status, expires_at, EXISTS (SELECT 1 FROM agents WHERE public_key = $2), \
                 EXISTS (SELECT 1 FROM agents WHERE public_key = $3) FROM invitations WHERE post_id = $1",
                args![post_id, a, b],
            )?
            .map(|r| {
                let inv = invitation_view(&r.text(0)?, r.text(1)?, r.float(2)?);
                Ok((inv, [r.bool(3)?, r.bool(4)?]))
            })
            .transpose()
        })
    }

    fn invitations(
        &self,
        protocol_id: Option<&str>,
        kind: Option<&str>,
        tag: Option<&str>,
        n: usize,
        now: f64,
    ) -> Res<Vec<Map>> {
        if [protocol_id, kind, tag]
            .iter()
            .flatten()
            .any(|s| self.unstorable(s))
        {
            return Ok(Vec::new());
        }
        self.0.run(|db| {
            let rows = db.query(OPEN_INVITATIONS, args![now, protocol_id, kind])?;
            open_page(rows, tag, n)
        })
    }

    fn cancel_invitation(&self, post_id: &str) -> Res<bool> {
        if self.unstorable(post_id) {
            return Ok(false);
        }
        let n = self.0.run(|db| {
            Ok(db.execute(
                "UPDATE invitations SET status = 'cancelled' WHERE post_id = $1 AND status = 'open'",
                args![post_id],
            )?)
        })?;
        Ok(n == 1)
    }

    fn renew_invitation(
        &self,
        post_id: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<Renewal> {
        if self.unstorable(post_id) {
            return Ok(Renewal::Missing);
        }
        self.0.transaction(|db| {
            let Some(key) = db.query_opt(
                "SELECT public_key FROM invitations WHERE post_id = $1",
                args![post_id],
            )?
            else {
                return Ok(Renewal::Missing);
            };
            let key = key.text(0)?;
            // The key's lock first (as posting takes it), then the row.
            lock_key(db, &key)?;
            let sql = format!(
                "SELECT status, expires_at FROM invitations WHERE post_id = $1{}",
                db.dialect().for_update()
            );
            let r = db.query_one(&sql, args![post_id])?;
            let (status, old) = (r.text(0)?, r.float(1)?);
            if status != "open" {
                return Ok(Renewal::NotOpen(status));
            }
            if old <= now && active(db, &key, now)? >= max_active {
                return Ok(Renewal::TooMany);
            }
            db.execute(
                "UPDATE invitations SET expires_at = $2 WHERE post_id = $1",
                args![post_id, expires_at],
            )?;
            Ok(Renewal::Renewed)
        })
    }

    fn add_session(
        &self,
        s: &SessionRow,
        session_nonce: &str,
        host_sig: &str,
        guest_sig: &str,
    ) -> Res<NewSession> {
        if self.unstorable(&s.post_id) {
            return Ok(NewSession::NoInvitation);
        }
        self.0.transaction(|db| {
            if take_for_session(db, s, session_nonce, host_sig, guest_sig)? {
                return Ok(NewSession::Added);
            }
            // Otherwise why not, under the invitation's row lock (and, should
            // it have opened meanwhile, the session recorded after all).
            let sql = format!(
                "SELECT status FROM invitations WHERE post_id = $1{}",
                db.dialect().for_update()
            );
            let status = db
                .query_opt(&sql, args![&s.post_id])?
                .map(|r| r.text(0))
                .transpose()?;
            let exists = db
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = $1)",
                    args![&s.session_id],
                )?
                .bool(0)?;
            if exists {
                return Ok(NewSession::Exists);
            }
            match status {
                None => return Ok(NewSession::NoInvitation),
                Some(st) if st != "open" => return Ok(NewSession::NotOpen(st)),
                Some(_) => {}
            }
            let n = db.execute(
                "INSERT INTO sessions (session_id, post_id, protocol_id, host_public_key, guest_public_key, session_nonce, \
                 host_signature, guest_signature, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'matched', $9) \
                 ON CONFLICT DO NOTHING",
                args![&s.session_id, &s.post_id, &s.protocol_id, &s.host_public_key, &s.guest_public_key, session_nonce, host_sig, guest_sig, s.created_at],
            )?;
            if n == 0 {
                return Ok(NewSession::Exists);
            }
            db.execute(
                "UPDATE invitations SET status = 'matched' WHERE post_id = $1",
                args![&s.post_id],
            )?;
            Ok(NewSession::Added)
        })
    }

    fn add_session_at_once(
        &self,
        s: &SessionRow,
        session_nonce: &str,
        host_sig: &str,
        guest_sig: &str,
    ) -> Res<bool> {
        let fields = [&s.post_id, &s.host_public_key, &s.guest_public_key];
        if fields.iter().any(|f| self.unstorable(f)) {
            return Ok(false);
        }
        let take = |db: &mut dyn Db| take_for_session(db, s, session_nonce, host_sig, guest_sig);
        if self.0.dialect().writes_in_with() {
            return self.0.run(take);
        }
        self.0.transaction(take)
    }

    fn session(&self, session_id: &str) -> Res<Option<SessionRow>> {
        if self.unstorable(session_id) {
            return Ok(None);
        }
        self.0.run(|db| {
            db.query_opt(
                "SELECT session_id, post_id, protocol_id, host_public_key, guest_public_key, status, winner, disputed, \
                 iroh_ticket, created_at FROM sessions WHERE session_id = $1",
                args![session_id],
            )?
            .as_ref()
            .map(session_of)
            .transpose()
        })
    }

    fn close_session(&self, session_id: &str, status: &str, now: f64) -> Res<bool> {
        if self.unstorable(session_id) {
            return Ok(false);
        }
        // Compare-and-swap: only a matched session moves.
        let n = self.0.run(|db| {
            Ok(db.execute(
                "UPDATE sessions SET status = $2, ended_at = $3 WHERE session_id = $1 AND status = 'matched'",
                args![session_id, status, now],
            )?)
        })?;
        Ok(n == 1)
    }

    fn report_result(
        &self,
        session_id: &str,
        reporter: &str,
        winner: &str,
        now: f64,
    ) -> Res<Reported> {
        if self.unstorable(session_id) {
            return Err(StoreError(format!(
                "no session {}",
                session_id.escape_debug()
            )));
        }
        self.0.transaction(|db| {
            // The session's row lock: two reporters at once each see the
            // other's report, so a disagreement is never missed, and the
            // game is rated once.
            let sql = format!(
                "SELECT host_public_key, guest_public_key FROM sessions WHERE session_id = $1{}",
                db.dialect().for_update()
            );
            let parties = db
                .query_opt(&sql, args![session_id])?
                .map(|r| Ok::<_, StoreError>((r.text(0)?, r.text(1)?)))
                .transpose()?;
            db.execute(
                "INSERT INTO results (session_id, reporter, winner) VALUES ($1, $2, $3) \
                 ON CONFLICT (session_id, reporter) DO UPDATE SET winner = excluded.winner",
                args![session_id, reporter, winner],
            )?;
            let reports = db
                .query(
                    "SELECT reporter, winner FROM results WHERE session_id = $1",
                    args![session_id],
                )?
                .iter()
                .map(|r| Ok((r.text(0)?, r.text(1)?)))
                .collect::<Res<Vec<_>>>()?;
            let first = reports.first().map(|r| r.1.clone());
            let disputed = reports.iter().any(|r| Some(&r.1) != first.as_ref());
            let agreed = if disputed { None } else { first };
            db.execute(
                "UPDATE sessions SET winner = $2, disputed = $3 WHERE session_id = $1",
                args![session_id, &agreed, disputed],
            )?;
            let elo = match &parties {
                Some((host, guest)) => {
                    let reporters: Vec<String> = reports.into_iter().map(|r| r.0).collect();
                    social::settle_elo(
                        db,
                        session_id,
                        (host, guest),
                        &reporters,
                        agreed.as_deref(),
                        disputed,
                        now,
                    )?
                }
                None => super::standing::EloOutcome::Pending,
            };
            Ok(Reported {
                winner: agreed,
                disputed,
                elo,
            })
        })
    }

    fn set_transport(&self, session_id: &str, ticket: &str, signature: &str) -> Res<()> {
        if self.unstorable(session_id) {
            return Ok(());
        }
        self.0.run(|db| {
            db.execute(
                "UPDATE sessions SET iroh_ticket = $2, transport_signature = $3 WHERE session_id = $1",
                args![session_id, ticket, signature],
            )?;
            Ok(())
        })
    }

    fn add_feedback(&self, session_id: &str, by: &str, body: &Map, now: f64) -> Res<()> {
        let text = crate::json::canonical::to_string_ordered(&Value::Object(body.clone()));
        self.0.run(|db| {
            db.execute(
                "INSERT INTO feedback (session_id, public_key, body, created_at) VALUES ($1, $2, $3, $4)",
                args![session_id, by, &text, now],
            )?;
            Ok(())
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
        self.0.transaction(|db| {
            social::lock_rated(db, rated)?;
            let n = db.execute(
                "INSERT INTO ratings (session_id, rater, rated, score, comment, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT DO NOTHING",
                args![session_id, rater, rated, score, comment, now],
            )?;
            if n != 1 {
                return Ok(false);
            }
            social::count_karma(db, rater, rated, score, now)?;
            Ok(true)
        })
    }

    fn agent_stats(&self, public_key: &str) -> Res<Map> {
        let key = if self.unstorable(public_key) {
            ""
        } else {
            public_key
        };
        let r = self.0.run(|db| {
            Ok(db.query_one(
                "SELECT \
                   (SELECT COUNT(*) FROM sessions WHERE host_public_key = $1 OR guest_public_key = $1), \
                   (SELECT COUNT(*) FROM sessions WHERE (host_public_key = $1 OR guest_public_key = $1) AND status = 'closed'), \
                   (SELECT COUNT(*) FROM sessions WHERE (host_public_key = $1 AND winner = 'host') OR (guest_public_key = $1 AND winner = 'guest')), \
                   (SELECT COUNT(*) FROM ratings WHERE rated = $1), \
                   (SELECT CAST(AVG(score) AS DOUBLE PRECISION) FROM ratings WHERE rated = $1), \
                   (SELECT CAST(COALESCE(SUM(score), 0) AS BIGINT) FROM ratings WHERE rated = $1)",
                args![key],
            )?)
        })?;
        let (sessions, closed, wins, ratings) = (r.int(0)?, r.int(1)?, r.int(2)?, r.int(3)?);
        let avg = r.opt_float(4)?;
        let rep = Reputation::of(sessions, closed, ratings, r.int(5)?);
        Ok(crate::obj! {
            "public_key" => public_key, "sessions" => sessions, "closed" => closed, "wins" => wins,
            "ratings" => ratings, "rating_average" => avg.map(Value::from).unwrap_or(Value::Null),
            "total_sessions" => sessions, "successful_sessions" => closed,
            "success_rate" => rep.success_rate.map(Value::from).unwrap_or(Value::Null),
            "weighted_score" => rep.weighted_score, "confidence_level" => rep.confidence,
        })
    }

    fn agent_ratings(&self, public_key: &str, n: usize) -> Res<Vec<Map>> {
        if self.unstorable(public_key) {
            return Ok(Vec::new());
        }
        self.0.run(|db| {
            let sql = format!(
                "SELECT session_id, rater, score, comment, created_at FROM ratings WHERE rated = $1 \
                 ORDER BY created_at DESC, session_id {} LIMIT $2",
                db.dialect().bytewise()
            );
            db.query(&sql, args![public_key, limit(n)])?
                .iter()
                .map(|r| {
                    Ok(crate::obj! {
                        "session_id" => r.text(0)?, "rater_public_key" => r.text(1)?,
                        "score" => r.int(2)?, "comment" => r.text(3)?,
                        "created_at" => r.float(4)?,
                    })
                })
                .collect()
        })
    }

    fn add_group(&self, g: &Group) -> Res<bool> {
        let body = group_body(g)?;
        let n = self.0.run(|db| {
            Ok(db.execute(
                "INSERT INTO groups (group_id, post_id, body, version) VALUES ($1, $2, $3, 1) ON CONFLICT DO NOTHING",
                args![&g.group_id, &g.post_id, &body],
            )?)
        })?;
        Ok(n == 1)
    }

    fn group(&self, id: &str, by_post: bool) -> Res<Option<(Group, i64)>> {
        if self.unstorable(id) {
            return Ok(None);
        }
        let sql = if by_post {
            "SELECT body, version FROM groups WHERE post_id = $1"
        } else {
            "SELECT body, version FROM groups WHERE group_id = $1"
        };
        let row = self.0.run(|db| Ok(db.query_opt(sql, args![id])?))?;
        row.map(|r| {
            let (body, v) = (r.text(0)?, r.int(1)?);
            serde_json::from_str::<Group>(&body)
                .map(|g| (g, v))
                .map_err(|e| StoreError(format!("group {id}: stored body does not parse: {e}")))
        })
        .transpose()
    }

    fn save_group(&self, g: &Group, version: i64) -> Res<bool> {
        let body = group_body(g)?;
        // Compare-and-set: an UPDATE racing another re-reads the row after
        // it, so at most one of two writers of one version succeeds.
        let n = self.0.run(|db| {
            Ok(db.execute(
                "UPDATE groups SET body = $1, version = version + 1 WHERE group_id = $2 AND version = $3",
                args![&body, &g.group_id, version],
            )?)
        })?;
        Ok(n == 1)
    }

    fn elo(&self, public_key: &str) -> Res<EloRating> {
        self.0.run(|db| social::elo(db, public_key))
    }

    fn elo_board(&self, after: Option<&Cursor>, n: usize) -> Res<Page<Ranked>> {
        self.0.run(|db| social::elo_board(db, after, n))
    }

    fn karma(&self, public_key: &str) -> Res<Karma> {
        self.0.run(|db| social::karma(db, public_key))
    }

    fn karma_board(&self, after: Option<&Cursor>, n: usize) -> Res<Page<Ranked>> {
        self.0.run(|db| social::karma_board(db, after, n))
    }

    fn set_capabilities(&self, public_key: &str, caps: &[String], now: f64) -> Res<()> {
        self.0
            .transaction(|db| social::set_capabilities(db, public_key, caps, now))
    }

    fn capabilities(&self, public_key: &str) -> Res<Option<(Vec<String>, f64)>> {
        self.0.run(|db| social::capabilities(db, public_key))
    }

    fn agents_with_capability(
        &self,
        capability: &str,
        after: Option<&Cursor>,
        n: usize,
    ) -> Res<Page<(Agent, Vec<String>)>> {
        if self.unstorable(capability) {
            return Ok(Page::of(Vec::new(), n, 0, |_| (0, String::new())));
        }
        self.0
            .run(|db| social::agents_with_capability(db, capability, after, n))
    }

    fn send_message(
        &self,
        sender: &str,
        recipient: &str,
        ciphertext: &str,
        size: i64,
        now: f64,
    ) -> Res<Delivery> {
        self.0
            .transaction(|db| social::send_message(db, sender, recipient, ciphertext, size, now))
    }

    fn inbox(&self, recipient: &str, after: Option<&Cursor>, n: usize, now: f64) -> Res<InboxPage> {
        self.0.run(|db| social::inbox(db, recipient, after, n, now))
    }

    fn read_message(&self, recipient: &str, id: i64, now: f64) -> Res<Option<Message>> {
        self.0
            .run(|db| social::read_message(db, recipient, id, now))
    }

    fn delete_message(&self, recipient: &str, id: i64) -> Res<bool> {
        self.0.run(|db| social::delete_message(db, recipient, id))
    }

    fn clear_inbox(&self, recipient: &str) -> Res<u64> {
        self.0.run(|db| social::clear_inbox(db, recipient))
    }

    fn trust_snapshot(&self, date: &str, build: bool, now: f64) -> Res<Option<String>> {
        self.0
            .run(|db| social::trust_snapshot(db, date, build, now))
    }
}
