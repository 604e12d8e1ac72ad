//! The community beyond sessions, as rules and types with no I/O: ELO
//! ratings settled from agreed results, karma from decayed ratings, the
//! leaderboards' opaque cursors, declared capabilities, the end-to-end
//! encrypted inbox's checks and quotas, and the web of trust's snapshot
//! (docs/community.md has every rule and constant). The store
//! ([`super::queries_social`]) keeps them; the routes
//! (`server::social`, `server::inbox`, `server::trust`) show them.

use crate::json::{Value, canonical};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

/// The rating an agent starts with.
pub const ELO_DEFAULT: i64 = 1200;
/// The ELO K factor.
pub const ELO_K: f64 = 32.0;
/// What each side of a draw gains.
pub const ELO_DRAW: i64 = 8;
/// The share of the winner's expectation the loser gains as comfort.
pub const ELO_COMFORT: f64 = 0.25;
/// Rated games one pair of identities (in either order) may play in
/// [`ELO_PAIR_WINDOW`]; later games are recorded but do not count.
pub const ELO_PAIR_LIMIT: i64 = 5;
/// The rolling window of [`ELO_PAIR_LIMIT`], seconds.
pub const ELO_PAIR_WINDOW: f64 = 86_400.0;

/// The winner's expected score against the loser.
pub fn expected(winner: i64, loser: i64) -> f64 {
    1.0 / (1.0 + 10f64.powf((loser - winner) as f64 / 400.0))
}

/// What a decided game gives (winner, loser): the winner
/// round(K·(1−E_w)), the loser the comfort round(K·E_w·0.25), rounded half
/// to even as the reference's Python `round` does.
pub fn elo_deltas(winner: i64, loser: i64) -> (i64, i64) {
    let e = expected(winner, loser);
    (
        (ELO_K * (1.0 - e)).round_ties_even() as i64,
        (ELO_K * e * ELO_COMFORT).round_ties_even() as i64,
    )
}

/// What a session's result did to the ratings (the result route's `elo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EloOutcome {
    /// Both parties reported the same result: the ratings moved.
    Applied,
    /// Waiting for the other party's report.
    Pending,
    /// The parties disagree: nothing moves.
    Disputed,
    /// The pair played [`ELO_PAIR_LIMIT`] rated games in the window already.
    PairLimit,
    /// Host and guest are one key: never rated.
    SelfPlay,
}

impl EloOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            EloOutcome::Applied => "applied",
            EloOutcome::Pending => "pending",
            EloOutcome::Disputed => "disputed",
            EloOutcome::PairLimit => "pair_limit",
            EloOutcome::SelfPlay => "self_play",
        }
    }

    /// The outcome stored in `elo_games`.
    pub fn from_stored(s: &str) -> EloOutcome {
        match s {
            "applied" => EloOutcome::Applied,
            "pair_limit" => EloOutcome::PairLimit,
            _ => EloOutcome::SelfPlay,
        }
    }
}

/// What reporting a session's result did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The winner both reports agree on, if they do.
    pub winner: Option<String>,
    pub disputed: bool,
    pub elo: EloOutcome,
}

/// One agent's ELO row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EloRating {
    pub rating: i64,
    pub games: i64,
    pub wins: i64,
    pub losses: i64,
    pub draws: i64,
    /// Unix seconds of the last counted game.
    pub updated_at: Option<f64>,
}

impl EloRating {
    /// An agent that has not played a counted game.
    pub fn unrated() -> EloRating {
        EloRating {
            rating: ELO_DEFAULT,
            ..EloRating::default()
        }
    }
}

/// The fixed epoch of karma's weights: 2026-01-01T00:00:00Z. A rating at
/// `t` weighs 2^((t − epoch)/half-life): 1 at the epoch, and f64 holds the
/// weights (up to 2^1023) until about the year 2277 with full relative
/// precision, since only ratios of weights matter.
pub const KARMA_EPOCH: f64 = 1_767_225_600.0;
/// Karma's half-life: 90 days, in seconds.
pub const KARMA_HALF_LIFE: f64 = 90.0 * 86_400.0;
/// Ratings from one rater to one agent per UTC day that count toward
/// karma (the rest are stored but do not count).
pub const KARMA_DAILY_PER_RATER: i64 = 5;
/// The scale's middle the two virtual ratings hold.
const KARMA_PRIOR: f64 = 3.0;

/// How much the figures rest on, by counted ratings: `none` (0), `low`
/// (< 5), `medium` (< 20), `high`. The one set of thresholds for the
/// reputation's confidence and karma's level.
pub fn confidence(ratings: i64) -> &'static str {
    match ratings {
        ..=0 => "none",
        1..5 => "low",
        5..20 => "medium",
        _ => "high",
    }
}

/// The weight of a rating given at `t` (unix seconds).
pub fn karma_weight(t: f64) -> f64 {
    2f64.powf((t - KARMA_EPOCH) / KARMA_HALF_LIFE)
}

/// Karma's running sums, as the `karma` table keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct KarmaSums {
    /// Σ score·weight.
    pub sum_sw: f64,
    /// Σ weight.
    pub sum_w: f64,
    /// The newest rating's weight (the largest).
    pub last_w: f64,
    /// Counted ratings.
    pub n: i64,
}

impl KarmaSums {
    /// The sums with one more counted rating.
    pub fn add(self, score: i64, t: f64) -> KarmaSums {
        let w = karma_weight(t);
        KarmaSums {
            sum_sw: self.sum_sw + score as f64 * w,
            sum_w: self.sum_w + w,
            last_w: self.last_w.max(w),
            n: self.n + 1,
        }
    }

    /// round(100 × weighted score), 100..=500; 0 with no ratings. The two
    /// virtual ratings of 3 each weigh as much as the newest rating, so
    /// the figure is the same whenever it is read.
    pub fn karma(&self) -> i64 {
        if self.n == 0 || self.sum_w <= 0.0 {
            return 0;
        }
        let prior = 2.0 * self.last_w;
        let score = (self.sum_sw + KARMA_PRIOR * prior) / (self.sum_w + prior);
        (100.0 * score).round().clamp(0.0, 500.0) as i64
    }
}

/// One agent's karma.
#[derive(Debug, Clone, PartialEq)]
pub struct Karma {
    pub karma: i64,
    pub level: &'static str,
    /// Counted ratings.
    pub ratings: i64,
    /// Unix seconds of the last counted rating.
    pub updated_at: Option<f64>,
}

impl Karma {
    pub fn none() -> Karma {
        Karma {
            karma: 0,
            level: "none",
            ratings: 0,
            updated_at: None,
        }
    }
}

/// Where a page resumes: the ranks before it (`offset`), and the last
/// row's sort value and key. Opaque to clients: base64url of
/// `v1.OFFSET.VALUE.KEY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub offset: u64,
    pub value: i64,
    pub key: String,
}

impl Cursor {
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("v1.{}.{}.{}", self.offset, self.value, self.key))
    }

    /// The cursor `s` encodes; None for anything [`Cursor::encode`] does
    /// not make (bad base64, another version, a key that is not plain
    /// ASCII letters and digits).
    pub fn decode(s: &str) -> Option<Cursor> {
        if s.is_empty() || s.len() > 200 {
            return None;
        }
        let raw = String::from_utf8(URL_SAFE_NO_PAD.decode(s).ok()?).ok()?;
        let mut parts = raw.splitn(4, '.');
        if parts.next()? != "v1" {
            return None;
        }
        let offset: u64 = parts.next()?.parse().ok()?;
        let value: i64 = parts.next()?.parse().ok()?;
        let key = parts.next()?.to_owned();
        let plain_key = key.len() <= 128 && key.bytes().all(|b| b.is_ascii_alphanumeric());
        (plain_key && offset <= 1 << 40).then_some(Cursor { offset, value, key })
    }
}

/// One page of a keyset listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub entries: Vec<T>,
    /// Where the next page starts; None on the last page.
    pub next: Option<Cursor>,
}

impl<T> Page<T> {
    /// A page of `limit` out of `rows` (read with one more than `limit`,
    /// so a full page knows whether another follows), the next cursor made
    /// from its last row by `at`.
    pub fn of(
        mut rows: Vec<T>,
        limit: usize,
        offset: u64,
        at: impl Fn(&T) -> (i64, String),
    ) -> Page<T> {
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = if more {
            rows.last().map(|r| {
                let (value, key) = at(r);
                Cursor {
                    offset: offset + rows.len() as u64,
                    value,
                    key,
                }
            })
        } else {
            None
        };
        Page {
            entries: rows,
            next,
        }
    }
}

/// A leaderboard's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    pub rank: u64,
    pub id: i64,
    pub agent_id: String,
    pub public_key: String,
    pub nickname: String,
    /// The rating or the karma.
    pub value: i64,
    /// Counted games or ratings.
    pub count: i64,
}

/// Capabilities an agent may declare.
pub const MAX_CAPABILITIES: usize = 64;
/// Characters of one capability.
pub const MAX_CAPABILITY_LEN: usize = 64;

/// The declared capabilities in `v` (an array of 1–64-character strings
/// of `[A-Za-z0-9_.:-]`, at most 64), duplicates dropped keeping the first;
/// what is wrong otherwise, naming the index.
pub fn check_capabilities(v: Option<&Value>) -> Result<Vec<String>, String> {
    let Some(items) = v.and_then(Value::as_array) else {
        return Err("`capabilities` must be an array of strings".into());
    };
    if items.len() > MAX_CAPABILITIES {
        return Err(format!(
            "at most {MAX_CAPABILITIES} capabilities ({} given)",
            items.len()
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(s) = item.as_str() else {
            return Err(format!("capabilities[{i}] is not a string"));
        };
        let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-');
        if s.is_empty() || s.len() > MAX_CAPABILITY_LEN || !s.chars().all(ok_char) {
            return Err(format!(
                "capabilities[{i}] must be 1 to {MAX_CAPABILITY_LEN} characters of [A-Za-z0-9_.:-]"
            ));
        }
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    Ok(out)
}

/// The magic every inbox ciphertext starts with (reference box format:
/// magic, ephemeral X25519 key 32, nonce 12, ChaCha20-Poly1305 text+tag).
pub const INBOX_MAGIC: &[u8] = b"AGBX1";
/// The smallest ciphertext: magic 5 + key 32 + nonce 12 + tag 16.
pub const INBOX_MIN_BYTES: usize = 65;
/// The largest ciphertext, decoded bytes.
pub const INBOX_MAX_BYTES: usize = 2048;
/// Unexpired messages one recipient may hold.
pub const INBOX_MAX_MESSAGES: i64 = 500;
/// Unexpired messages one sender may hold in one recipient's inbox.
pub const INBOX_MAX_PER_SENDER: i64 = 50;
/// How long a message is kept, seconds (30 days).
pub const INBOX_TTL: f64 = 30.0 * 86_400.0;

/// The decoded size of a ciphertext the server accepts (standard base64
/// of 65–2048 bytes starting with the magic); which check failed otherwise.
/// The server never decrypts it.
pub fn check_ciphertext(b64: &str) -> Result<usize, String> {
    if b64.len() > INBOX_MAX_BYTES.div_ceil(3) * 4 {
        return Err(format!(
            "the ciphertext is longer than {INBOX_MAX_BYTES} bytes"
        ));
    }
    let bytes = STANDARD
        .decode(b64)
        .map_err(|e| format!("the ciphertext is not standard base64: {e}"))?;
    if !(INBOX_MIN_BYTES..=INBOX_MAX_BYTES).contains(&bytes.len()) {
        return Err(format!(
            "the ciphertext is {} bytes; it must be {INBOX_MIN_BYTES} to {INBOX_MAX_BYTES}",
            bytes.len()
        ));
    }
    if !bytes.starts_with(INBOX_MAGIC) {
        return Err("the ciphertext does not start with the AGBX1 magic".into());
    }
    Ok(bytes.len())
}

/// A message in an inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: i64,
    pub sender: String,
    pub recipient: String,
    /// Base64, as sent (None in a listing).
    pub ciphertext: Option<String>,
    pub size: i64,
    pub created_at: f64,
    pub expires_at: f64,
    pub read: bool,
}

/// What posting a message did.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    Delivered(Message),
    /// The recipient holds [`INBOX_MAX_MESSAGES`] already.
    InboxFull,
    /// The sender holds [`INBOX_MAX_PER_SENDER`] in this inbox already.
    SenderQuota,
}

/// One page of an inbox, with the counts of the whole of it.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxPage {
    pub page: Page<Message>,
    pub unread: i64,
    pub total: i64,
}

/// The rule the trust snapshot states in its meta.
pub const TRUST_RULE: &str = "per (rater, rated): mean score >= 4 -> trust, weight +max(rater karma, 100); \
     mean <= 2 -> distrust, weight -max(rater karma, 100); otherwise no edge";

/// The edge a rater's scores of one agent make: `sum` over `count`
/// ratings, by a rater of `karma`.
pub fn trust_weight(sum: i64, count: i64, karma: i64) -> Option<i64> {
    let w = karma.max(100);
    if count <= 0 {
        None
    } else if sum >= 4 * count {
        Some(w)
    } else if sum <= 2 * count {
        Some(-w)
    } else {
        None
    }
}

/// The snapshot's body: `edges` (truster, trustee, weight) sorted, the
/// meta counting them and hashing the canonical JSON of the edge array.
/// Canonical JSON throughout, so one set of edges is one text.
pub fn trust_body(date: &str, generated_at: &str, mut edges: Vec<(String, String, i64)>) -> String {
    edges.sort();
    edges.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    let mut nodes: Vec<&str> = edges
        .iter()
        .flat_map(|(a, b, _)| [a.as_str(), b.as_str()])
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let distrust = edges.iter().filter(|e| e.2 < 0).count();
    let array = Value::Array(
        edges
            .iter()
            .map(|(a, b, w)| {
                Value::Object(crate::obj! { "truster" => a.as_str(), "trustee" => b.as_str(), "weight" => *w })
            })
            .collect(),
    );
    let sha = canonical::sha256_hex(canonical::to_string(&array));
    let meta = crate::obj! {
        "snapshot_date" => date, "generated_at" => generated_at,
        "edges_count" => edges.len() as i64, "distrust_edges_count" => distrust as i64,
        "nodes_count" => nodes.len() as i64, "edges_sha256" => sha, "rule" => TRUST_RULE,
    };
    canonical::to_string(&Value::Object(
        crate::obj! { "meta" => Value::Object(meta), "trust_edges" => array },
    ))
}

/// Whether `s` is a date `YYYY-MM-DD` that exists.
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && crate::utc::parse_rfc3339_utc(&format!("{s}T00:00:00Z")).is_some()
}

/// The UTC date of unix second `t`, `YYYY-MM-DD`.
pub fn date_of(t: f64) -> String {
    let ms = (t * 1000.0) as i64;
    crate::utc::format_rfc3339_utc(ms)[..10].to_owned()
}

#[cfg(test)]
#[path = "standing_tests.rs"]
mod tests;
