//! The SQL of the community beyond sessions (the rules are
//! [`super::standing`]'s): functions over one connection ([`Db`]), written
//! once for both databases like [`super::queries`], which calls them
//! (inside its own transactions where they write). Every read-then-write
//! here runs in a transaction holding the lock that keeps its read true:
//! on PostgreSQL a per-key advisory lock (the pair for ELO, the rated
//! agent for karma, the recipient for the inbox) and the rows it changes
//! locked in key order; SQLite's one write lock otherwise.

use super::standing::{
    Cursor, Delivery, ELO_DEFAULT, ELO_DRAW, ELO_PAIR_LIMIT, ELO_PAIR_WINDOW, EloOutcome,
    EloRating, INBOX_MAX_MESSAGES, INBOX_MAX_PER_SENDER, INBOX_TTL, InboxPage,
    KARMA_DAILY_PER_RATER, Karma, KarmaSums, Message, Page, Ranked, confidence, elo_deltas,
    trust_body, trust_weight,
};
use super::store::{Agent, Res, StoreError};
use crate::sql::{Arg, Db, Row, args};

/// Advisory lock classes (the two-key form: class, hash of the key).
const ELO_LOCK: i64 = 0x656c_6f01;
const KARMA_LOCK: i64 = 0x6b61_7201;
const INBOX_LOCK: i64 = 0x696e_6201;

/// Takes a transaction-long advisory lock on (`class`, `key`) where the
/// database has them (SQLite's write transaction holds its one lock).
fn lock(db: &mut dyn Db, class: i64, key: &str) -> Res<()> {
    if let Some(sql) = db.dialect().advisory_lock() {
        db.execute(sql, args![class, key])?;
    }
    Ok(())
}

fn big(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The columns [`agent_of`] reads, in order.
pub(super) const AGENT_COLUMNS: &str = "id, public_key, nickname, bio, agent_id, registered_at";

/// An agent from [`AGENT_COLUMNS`] starting at column `at`.
fn agent_at(r: &Row, at: usize) -> Res<Agent> {
    Ok(Agent {
        id: r.int(at)?,
        public_key: r.text(at + 1)?,
        nickname: r.text(at + 2)?,
        bio: r.text(at + 3)?,
        agent_id: r.text(at + 4)?,
        registered_at: r.float(at + 5)?,
    })
}

/// An agent by public key, agent_id, or integer id. A decimal of up to
/// 15 digits is an id (no 16-hex agent_id or 64-hex key is that short;
/// ids never grow that long), so an all-digit agent_id is never mistaken
/// for one.
pub(super) fn agent(db: &mut dyn Db, key: &str) -> Res<Option<Agent>> {
    let number = (key.len() <= 15 && !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()))
        .then(|| key.parse::<i64>().ok())
        .flatten()
        .unwrap_or(-1);
    let sql = format!(
        "SELECT {AGENT_COLUMNS} FROM agents WHERE public_key = $1 OR agent_id = $1 OR id = $2"
    );
    db.query_opt(&sql, args![key, number])?
        .map(|r| agent_at(&r, 0))
        .transpose()
}

/// Settles a session's ELO after a report, in the report's transaction
/// (the session's row is locked): once both parties have reported the
/// same result the game is recorded in `elo_games` and, unless it is
/// self-play or over the pair limit, both ratings move. A game recorded
/// already keeps its outcome, whatever is reported later.
pub(super) fn settle_elo(
    db: &mut dyn Db,
    session_id: &str,
    parties: (&str, &str),
    reporters: &[String],
    agreed: Option<&str>,
    disputed: bool,
    now: f64,
) -> Res<EloOutcome> {
    if let Some(r) = db.query_opt(
        "SELECT outcome FROM elo_games WHERE session_id = $1",
        args![session_id],
    )? {
        return Ok(EloOutcome::from_stored(&r.text(0)?));
    }
    let (host, guest) = parties;
    let (lo, hi) = if host <= guest {
        (host, guest)
    } else {
        (guest, host)
    };
    let record = |db: &mut dyn Db, outcome: EloOutcome, winner: &str, deltas: (i64, i64)| {
        db.execute(
            "INSERT INTO elo_games (session_id, host, guest, pair_lo, pair_hi, winner, host_delta, guest_delta, \
             applied_at, counted, outcome) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            args![session_id, host, guest, lo, hi, winner, deltas.0, deltas.1, now,
                  outcome == EloOutcome::Applied, outcome.as_str()],
        )
        .map(|_| outcome)
    };
    if host == guest {
        // Recorded at its first report (one key is both parties, so no
        // second report can come): never rated.
        return Ok(record(
            db,
            EloOutcome::SelfPlay,
            agreed.unwrap_or("none"),
            (0, 0),
        )?);
    }
    if disputed {
        return Ok(EloOutcome::Disputed);
    }
    let both = [host, guest]
        .iter()
        .all(|p| reporters.iter().any(|r| r == p));
    let Some(winner) = agreed.filter(|_| both) else {
        return Ok(EloOutcome::Pending);
    };
    // One pair's games one at a time, so the count holds at the insert.
    lock(db, ELO_LOCK, &format!("{lo}:{hi}"))?;
    let recent = db
        .query_one(
            "SELECT COUNT(*) FROM elo_games WHERE pair_lo = $1 AND pair_hi = $2 AND outcome = 'applied' \
             AND applied_at > $3",
            args![lo, hi, now - ELO_PAIR_WINDOW],
        )?
        .int(0)?;
    if recent >= ELO_PAIR_LIMIT {
        return Ok(record(db, EloOutcome::PairLimit, winner, (0, 0))?);
    }
    // Both rows exist and are locked in key order (no two settlements can
    // wait for each other).
    let read = format!(
        "SELECT rating FROM elo_ratings WHERE public_key = $1{}",
        db.dialect().for_update()
    );
    let rating = |db: &mut dyn Db, key: &str| -> Res<i64> {
        db.execute(
            "INSERT INTO elo_ratings (public_key, rating, games, wins, losses, draws, updated_at) \
             VALUES ($1, $2, 0, 0, 0, 0, $3) ON CONFLICT DO NOTHING",
            args![key, ELO_DEFAULT, now],
        )?;
        Ok(db.query_one(&read, args![key])?.int(0)?)
    };
    let r_lo = rating(db, lo)?;
    let r_hi = rating(db, hi)?;
    let (rh, rg) = if lo == host {
        (r_lo, r_hi)
    } else {
        (r_hi, r_lo)
    };
    // (delta, win, loss, draw) of host and guest.
    let (h, g) = match winner {
        "host" => {
            let (w, l) = elo_deltas(rh, rg);
            ((w, 1, 0, 0), (l, 0, 1, 0))
        }
        "guest" => {
            let (w, l) = elo_deltas(rg, rh);
            ((l, 0, 1, 0), (w, 1, 0, 0))
        }
        _ => ((ELO_DRAW, 0, 0, 1), (ELO_DRAW, 0, 0, 1)),
    };
    for (key, (d, w, l, dr)) in [(host, h), (guest, g)] {
        db.execute(
            "UPDATE elo_ratings SET rating = rating + $2, games = games + 1, wins = wins + $3, \
             losses = losses + $4, draws = draws + $5, updated_at = $6 WHERE public_key = $1",
            args![key, d, w, l, dr, now],
        )?;
    }
    Ok(record(db, EloOutcome::Applied, winner, (h.0, g.0))?)
}

pub(super) fn elo(db: &mut dyn Db, key: &str) -> Res<EloRating> {
    let Some(r) = db.query_opt(
        "SELECT rating, games, wins, losses, draws, updated_at FROM elo_ratings WHERE public_key = $1",
        args![key],
    )?
    else {
        return Ok(EloRating::unrated());
    };
    Ok(EloRating {
        rating: r.int(0)?,
        games: r.int(1)?,
        wins: r.int(2)?,
        losses: r.int(3)?,
        draws: r.int(4)?,
        updated_at: Some(r.float(5)?),
    })
}

/// Takes the rated agent's lock before a rating is inserted, so the day's
/// count and the karma row below stay true until the transaction ends.
pub(super) fn lock_rated(db: &mut dyn Db, rated: &str) -> Res<()> {
    lock(db, KARMA_LOCK, rated)
}

/// Counts a rating just inserted toward `rated`'s karma, unless the rater
/// gave this agent [`KARMA_DAILY_PER_RATER`] ratings already this UTC day.
pub(super) fn count_karma(
    db: &mut dyn Db,
    rater: &str,
    rated: &str,
    score: i64,
    now: f64,
) -> Res<()> {
    let day = (now / 86_400.0).floor() * 86_400.0;
    let today = db
        .query_one(
            "SELECT COUNT(*) FROM ratings WHERE rater = $1 AND rated = $2 AND created_at >= $3 AND created_at < $4",
            args![rater, rated, day, day + 86_400.0],
        )?
        .int(0)?;
    if today > KARMA_DAILY_PER_RATER {
        return Ok(());
    }
    let sums = db
        .query_opt(
            "SELECT sum_sw, sum_w, last_w, n FROM karma WHERE public_key = $1",
            args![rated],
        )?
        .map(|r| -> Res<KarmaSums> {
            Ok(KarmaSums {
                sum_sw: r.float(0)?,
                sum_w: r.float(1)?,
                last_w: r.float(2)?,
                n: r.int(3)?,
            })
        })
        .transpose()?
        .unwrap_or_default()
        .add(score, now);
    db.execute(
        "INSERT INTO karma (public_key, sum_sw, sum_w, last_w, n, karma, level, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (public_key) DO UPDATE SET \
         sum_sw = excluded.sum_sw, sum_w = excluded.sum_w, last_w = excluded.last_w, n = excluded.n, \
         karma = excluded.karma, level = excluded.level, updated_at = excluded.updated_at",
        args![rated, sums.sum_sw, sums.sum_w, sums.last_w, sums.n, sums.karma(), confidence(sums.n), now],
    )?;
    Ok(())
}

pub(super) fn karma(db: &mut dyn Db, key: &str) -> Res<Karma> {
    let Some(r) = db.query_opt(
        "SELECT karma, n, updated_at FROM karma WHERE public_key = $1",
        args![key],
    )?
    else {
        return Ok(Karma::none());
    };
    let n = r.int(1)?;
    Ok(Karma {
        karma: r.int(0)?,
        level: confidence(n),
        ratings: n,
        updated_at: Some(r.float(2)?),
    })
}

/// A leaderboard page over `table` (`elo_ratings` or `karma`) ranked by
/// `value` then public key, both descending, with each agent's count
/// column `count`; keyset paging on (value, public_key).
fn board(
    db: &mut dyn Db,
    table: &str,
    value: &str,
    count: &str,
    after: Option<&Cursor>,
    n: usize,
) -> Res<Page<Ranked>> {
    let head = format!(
        "SELECT a.id, a.agent_id, t.public_key, a.nickname, t.{value}, t.{count} FROM {table} t \
         JOIN agents a ON a.public_key = t.public_key"
    );
    let tail = format!("ORDER BY t.{value} DESC, t.public_key DESC LIMIT $1");
    let rows = match after {
        None => db.query(&format!("{head} {tail}"), args![big(n + 1)])?,
        Some(c) => db.query(
            &format!("{head} WHERE (t.{value}, t.public_key) < ($2, $3) {tail}"),
            args![big(n + 1), c.value, c.key.as_str()],
        )?,
    };
    let offset = after.map_or(0, |c| c.offset);
    let ranked = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Ok(Ranked {
                rank: offset + i as u64 + 1,
                id: r.int(0)?,
                agent_id: r.text(1)?,
                public_key: r.text(2)?,
                nickname: r.text(3)?,
                value: r.int(4)?,
                count: r.int(5)?,
            })
        })
        .collect::<Res<Vec<_>>>()?;
    Ok(Page::of(ranked, n, offset, |r| {
        (r.value, r.public_key.clone())
    }))
}

pub(super) fn elo_board(db: &mut dyn Db, after: Option<&Cursor>, n: usize) -> Res<Page<Ranked>> {
    board(db, "elo_ratings", "rating", "games", after, n)
}

pub(super) fn karma_board(db: &mut dyn Db, after: Option<&Cursor>, n: usize) -> Res<Page<Ranked>> {
    board(db, "karma", "karma", "n", after, n)
}

fn caps_of(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

pub(super) fn set_capabilities(db: &mut dyn Db, key: &str, caps: &[String], now: f64) -> Res<()> {
    let list = serde_json::to_string(caps).map_err(|e| StoreError(e.to_string()))?;
    db.execute(
        "INSERT INTO capabilities (public_key, list, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (public_key) DO UPDATE SET list = excluded.list, updated_at = excluded.updated_at",
        args![key, &list, now],
    )?;
    db.execute(
        "DELETE FROM agent_capabilities WHERE public_key = $1",
        args![key],
    )?;
    for c in caps {
        db.execute(
            "INSERT INTO agent_capabilities (capability, public_key) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            args![c, key],
        )?;
    }
    Ok(())
}

pub(super) fn capabilities(db: &mut dyn Db, key: &str) -> Res<Option<(Vec<String>, f64)>> {
    db.query_opt(
        "SELECT list, updated_at FROM capabilities WHERE public_key = $1",
        args![key],
    )?
    .map(|r| Ok((caps_of(&r.text(0)?), r.float(1)?)))
    .transpose()
}

pub(super) fn agents_with_capability(
    db: &mut dyn Db,
    capability: &str,
    after: Option<&Cursor>,
    n: usize,
) -> Res<Page<(Agent, Vec<String>)>> {
    let sql = format!(
        "SELECT {}, c.list FROM agent_capabilities x JOIN agents a ON a.public_key = x.public_key \
         JOIN capabilities c ON c.public_key = x.public_key WHERE x.capability = $1 AND x.public_key > $2 \
         ORDER BY x.public_key LIMIT $3",
        AGENT_COLUMNS
            .split(", ")
            .map(|c| format!("a.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let from = after.map_or("", |c| c.key.as_str());
    let rows = db
        .query(&sql, args![capability, from, big(n + 1)])?
        .iter()
        .map(|r| Ok((agent_at(r, 0)?, caps_of(&r.text(6)?))))
        .collect::<Res<Vec<_>>>()?;
    let offset = after.map_or(0, |c| c.offset);
    Ok(Page::of(rows, n, offset, |(a, _)| {
        (0, a.public_key.clone())
    }))
}

pub(super) fn send_message(
    db: &mut dyn Db,
    sender: &str,
    recipient: &str,
    ciphertext: &str,
    size: i64,
    now: f64,
) -> Res<Delivery> {
    // The recipient's messages change one transaction at a time: the
    // counts below still hold at the insert.
    lock(db, INBOX_LOCK, recipient)?;
    db.execute("DELETE FROM inbox WHERE expires_at <= $1", args![now])?;
    let held = db
        .query_one(
            "SELECT COUNT(*) FROM inbox WHERE recipient = $1 AND expires_at > $2",
            args![recipient, now],
        )?
        .int(0)?;
    if held >= INBOX_MAX_MESSAGES {
        return Ok(Delivery::InboxFull);
    }
    let mine = db
        .query_one(
            "SELECT COUNT(*) FROM inbox WHERE recipient = $1 AND sender = $2 AND expires_at > $3",
            args![recipient, sender, now],
        )?
        .int(0)?;
    if mine >= INBOX_MAX_PER_SENDER {
        return Ok(Delivery::SenderQuota);
    }
    let expires_at = now + INBOX_TTL;
    let id = db
        .query_one(
            "INSERT INTO inbox (recipient, sender, ciphertext, size, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            args![recipient, sender, ciphertext, size, now, expires_at],
        )?
        .int(0)?;
    Ok(Delivery::Delivered(Message {
        id,
        sender: sender.to_owned(),
        recipient: recipient.to_owned(),
        ciphertext: None,
        size,
        created_at: now,
        expires_at,
        read: false,
    }))
}

pub(super) fn inbox(
    db: &mut dyn Db,
    recipient: &str,
    after: Option<&Cursor>,
    n: usize,
    now: f64,
) -> Res<InboxPage> {
    let before = after.map_or(i64::MAX, |c| c.value);
    let rows = db
        .query(
            "SELECT id, sender, size, created_at, expires_at, is_read FROM inbox \
             WHERE recipient = $1 AND expires_at > $2 AND id < $3 ORDER BY id DESC LIMIT $4",
            args![recipient, now, before, big(n + 1)],
        )?
        .iter()
        .map(|r| {
            Ok(Message {
                id: r.int(0)?,
                sender: r.text(1)?,
                recipient: recipient.to_owned(),
                ciphertext: None,
                size: r.int(2)?,
                created_at: r.float(3)?,
                expires_at: r.float(4)?,
                read: r.bool(5)?,
            })
        })
        .collect::<Res<Vec<_>>>()?;
    let counts = db.query_one(
        "SELECT COUNT(*), CAST(COALESCE(SUM(CASE WHEN is_read THEN 0 ELSE 1 END), 0) AS BIGINT) \
         FROM inbox WHERE recipient = $1 AND expires_at > $2",
        args![recipient, now],
    )?;
    let offset = after.map_or(0, |c| c.offset);
    Ok(InboxPage {
        page: Page::of(rows, n, offset, |m| (m.id, String::new())),
        total: counts.int(0)?,
        unread: counts.int(1)?,
    })
}

pub(super) fn read_message(
    db: &mut dyn Db,
    recipient: &str,
    id: i64,
    now: f64,
) -> Res<Option<Message>> {
    db.query_opt(
        "UPDATE inbox SET is_read = $4 WHERE id = $1 AND recipient = $2 AND expires_at > $3 \
         RETURNING id, sender, recipient, ciphertext, size, created_at, expires_at",
        &[
            Arg::Int(id),
            Arg::Text(recipient),
            Arg::Float(now),
            Arg::Bool(true),
        ],
    )?
    .map(|r| {
        Ok(Message {
            id: r.int(0)?,
            sender: r.text(1)?,
            recipient: r.text(2)?,
            ciphertext: Some(r.text(3)?),
            size: r.int(4)?,
            created_at: r.float(5)?,
            expires_at: r.float(6)?,
            read: true,
        })
    })
    .transpose()
}

pub(super) fn delete_message(db: &mut dyn Db, recipient: &str, id: i64) -> Res<bool> {
    Ok(db.execute(
        "DELETE FROM inbox WHERE id = $1 AND recipient = $2",
        args![id, recipient],
    )? == 1)
}

pub(super) fn clear_inbox(db: &mut dyn Db, recipient: &str) -> Res<u64> {
    Ok(db.execute("DELETE FROM inbox WHERE recipient = $1", args![recipient])?)
}

/// The stored snapshot of `date`, or (`build`) one built from every
/// rating now and stored unless another request stored its own first
/// (then that one: every request of a date is answered the same text).
pub(super) fn trust_snapshot(
    db: &mut dyn Db,
    date: &str,
    build: bool,
    now: f64,
) -> Res<Option<String>> {
    const READ: &str = "SELECT body FROM trust_snapshots WHERE snapshot_date = $1";
    if let Some(r) = db.query_opt(READ, args![date])? {
        return Ok(Some(r.text(0)?));
    }
    if !build {
        return Ok(None);
    }
    let rows = db.query(
        "SELECT r.rater, r.rated, CAST(SUM(r.score) AS BIGINT), COUNT(*), CAST(COALESCE(MAX(k.karma), 0) AS BIGINT) \
         FROM ratings r LEFT JOIN karma k ON k.public_key = r.rater GROUP BY r.rater, r.rated",
        &[],
    )?;
    let mut edges = Vec::new();
    for r in rows {
        let (rater, rated) = (r.text(0)?, r.text(1)?);
        if rater == rated {
            continue;
        }
        if let Some(w) = trust_weight(r.int(2)?, r.int(3)?, r.int(4)?) {
            edges.push((rater, rated, w));
        }
    }
    let generated = crate::utc::format_rfc3339_utc((now * 1000.0) as i64);
    let body = trust_body(date, &generated, edges);
    db.execute(
        "INSERT INTO trust_snapshots (snapshot_date, body) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        args![date, &body],
    )?;
    Ok(Some(db.query_one(READ, args![date])?.text(0)?))
}
