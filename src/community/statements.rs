//! The statements that both faces of the community store run — the
//! blocking [`super::queries::SqlStore`] and PostgreSQL's async calls
//! ([`super::pg`], over [`crate::sql::pg_lane`]) — each with its arguments
//! and the reading of its answer, written once.

use super::store::{Res, SessionRow, invitation_view, tagged};
use crate::json::Map;
use crate::sql::{Arg, Db, Row, SqlError};

/// The open invitations newest first, of a protocol (`$2`) and a kind
/// (`$3`) when given, at `$1`: the rows [`open_page`] reads. Both the
/// blocking store and the PostgreSQL lane run it.
pub(super) const OPEN_INVITATIONS: &str = "SELECT body, status, expires_at, tags FROM invitations \
     WHERE status = 'open' AND expires_at > $1 AND ($2 IS NULL OR protocol_id = $2) \
     AND ($3 IS NULL OR type = $3) ORDER BY created_at DESC LIMIT 500";

/// The first `n` of [`OPEN_INVITATIONS`]' `rows` that carry `tag` (any,
/// without one), as the API shows an invitation.
pub(super) fn open_page(rows: Vec<Row>, tag: Option<&str>, n: usize) -> Res<Vec<Map>> {
    let mut out = Vec::new();
    for r in rows {
        if let Some(t) = tag
            && !tagged(&r.text(3)?, t)
        {
            continue;
        }
        out.push(invitation_view(&r.text(0)?, r.text(1)?, r.float(2)?));
        if out.len() >= n {
            break;
        }
    }
    Ok(out)
}

/// The invitation a session with every check passed takes (`$1` the post,
/// `$2` the session, `$3` the host, `$4` the guest): open, the host's, no
/// such session yet, both parties registered.
macro_rules! taken_for_session {
    () => {
        "post_id = $1 AND status = 'open' AND public_key = $3 \
         AND NOT EXISTS (SELECT 1 FROM sessions WHERE session_id = $2) \
         AND EXISTS (SELECT 1 FROM agents a WHERE a.public_key = $3) \
         AND EXISTS (SELECT 1 FROM agents a WHERE a.public_key = $4)"
    };
}

/// [`take_for_session`] as one statement, where the dialect can write in a
/// `WITH` (its arguments: [`session_args`]).
pub(super) const TAKE_FOR_SESSION: &str = concat!(
    "WITH took AS (UPDATE invitations SET status = 'matched' WHERE ",
    taken_for_session!(),
    " RETURNING post_id) INSERT INTO sessions (session_id, post_id, protocol_id, host_public_key, \
     guest_public_key, session_nonce, host_signature, guest_signature, status, created_at) \
     SELECT $2, took.post_id, $5, $3, $4, $6, $7, $8, 'matched', $9 FROM took"
);

/// The arguments of [`take_for_session`]'s statements.
pub(super) fn session_args<'a>(
    s: &'a SessionRow,
    session_nonce: &'a str,
    host_sig: &'a str,
    guest_sig: &'a str,
) -> [Arg<'a>; 9] {
    [
        Arg::from(&s.post_id),
        Arg::from(&s.session_id),
        Arg::from(&s.host_public_key),
        Arg::from(&s.guest_public_key),
        Arg::from(&s.protocol_id),
        Arg::from(session_nonce),
        Arg::from(host_sig),
        Arg::from(guest_sig),
        Arg::from(s.created_at),
    ]
}

/// [`TAKE_FOR_SESSION`]'s answer: whether it took the invitation (a
/// constraint's refusal, a racing insert of the session, took nothing).
pub(super) fn took_for_session(n: Result<u64, SqlError>) -> Res<bool> {
    match n {
        Ok(n) => Ok(n == 1),
        Err(SqlError::Constraint { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A session create's usual case: take the invitation while it is open,
/// the host's, both parties registered and the session new (the UPDATE's
/// row lock makes a second create racing for it wait, then see it matched
/// and take nothing), and record the session. False, with nothing written,
/// when any of that does not hold. Where the dialect allows it this is one
/// statement, atomic on its own and needing no transaction (under READ
/// COMMITTED, as the transaction is), where the same session recorded
/// meanwhile is a constraint refusal answered as nothing taken (the
/// caller's checks one by one then say why); otherwise two statements in
/// the caller's transaction.
pub(super) fn take_for_session(
    db: &mut dyn Db,
    s: &SessionRow,
    session_nonce: &str,
    host_sig: &str,
    guest_sig: &str,
) -> Res<bool> {
    let args = &session_args(s, session_nonce, host_sig, guest_sig);
    if db.dialect().writes_in_with() {
        return took_for_session(db.execute(TAKE_FOR_SESSION, args));
    }
    // Two statements in the caller's write transaction, whose lock keeps
    // the update's checks true at the insert.
    let update = concat!(
        "UPDATE invitations SET status = 'matched' WHERE ",
        taken_for_session!()
    );
    if db.execute(update, &args[..4])? != 1 {
        return Ok(false);
    }
    db.execute(
        "INSERT INTO sessions (session_id, post_id, protocol_id, host_public_key, guest_public_key, \
         session_nonce, host_signature, guest_signature, status, created_at) \
         VALUES ($2, $1, $5, $3, $4, $6, $7, $8, 'matched', $9)",
        args,
    )?;
    Ok(true)
}
