//! The published verification policy `sha256_nonce.v1`, its verifier, and a
//! fast multi-threaded solver for providers.
//!
//! The verifier follows the seed exactly: recompute
//! `SHA-256(UTF-8(prefix + "|" + decimal_nonce))`, require the delivered
//! digest to equal it and to start with `job.input.target`, check the
//! artifact against the frozen output format, require evidence, and bind
//! the delivery to the current DealHash.
//!
//! The solver hashes the fixed `prefix|` once (its whole 64-byte blocks
//! become a midstate), keeps the nonce's decimal digits in the last block
//! and increments them in place, and runs SHA-256's compression function
//! once per candidate (`sha2::compress256`, which uses the SHA-NI
//! instructions when the CPU has them). The target is compared on the raw
//! state words, so no candidate is ever hex-encoded.

use super::canonical::{self, MAX_SAFE_INT};
use crate::json::canonical::SHA256_H0 as H0;
use crate::json::{Map, Value};
use sha2::digest::generic_array::GenericArray;
use sha2::digest::typenum::U64;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The policy id and verifier name.
pub const POLICY_ID: &str = "sha256_nonce.v1";
pub const VERIFIER: &str = "AIguishi/sha256_nonce.v1";

/// The output format both the job and the policy carry.
pub const OUTPUT_FORMAT: &str = r#"{"type":"object","required":["nonce","digest"],"properties":{"nonce":{"type":"integer","minimum":0},"digest":{"type":"string","pattern":"^[0-9a-f]{64}$"}},"additionalProperties":false}"#;

/// The published policy, exactly the seed's object.
pub fn policy() -> Value {
    let text = format!(
        r#"{{"id":"sha256_nonce.v1","version":"1.0","verifier":"AIguishi/sha256_nonce.v1","digest_algorithm":"SHA-256","input_encoding":"UTF-8","message_template":"{{prefix}}|{{nonce}}","acceptance":{{"nonce_type":"non-negative-integer","digest_encoding":"lowercase-hex","digest_length":64,"digest_must_equal_computed":true,"digest_must_start_with":"job.input.target"}},"output_format":{OUTPUT_FORMAT}}}"#
    );
    // A constant that parses: covered by the PolicyHash test vector below.
    canonical::parse_strict(text.as_bytes()).unwrap_or_default()
}

/// The output format as a value.
pub fn output_format() -> Value {
    canonical::parse_strict(OUTPUT_FORMAT.as_bytes()).unwrap_or_default()
}

/// The PolicyHash of the published policy.
pub fn policy_hash() -> String {
    canonical::hash(&policy()).unwrap_or_default()
}

/// The message the digest covers: `{prefix}|{nonce}`.
pub fn message(prefix: &str, nonce: u64) -> String {
    format!("{prefix}|{nonce}")
}

/// Lowercase hex SHA-256 of `{prefix}|{nonce}`.
pub fn digest(prefix: &str, nonce: u64) -> String {
    crate::json::canonical::sha256_hex(message(prefix, nonce))
}

/// A verdict: PASS with no reasons, or FAIL with every reason found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub pass: bool,
    /// The recomputed digest (empty when the nonce could not be read).
    pub computed_digest: String,
    pub reasons: Vec<String>,
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Runs `sha256_nonce.v1` over a stored job and a delivery. `deal_hash` is
/// the transaction's current DealHash: a delivery naming any other deal
/// fails, so a PASS artifact from an old deal cannot be reused.
pub fn verify(job: &Map, delivery: &Map, deal_hash: &str) -> Verdict {
    let mut reasons = Vec::new();
    let input = job.get("input").and_then(Value::as_object);
    let prefix = input.and_then(|i| i.get("prefix")).and_then(Value::as_str);
    let target = input.and_then(|i| i.get("target")).and_then(Value::as_str);
    let artifact = delivery.get("artifact").and_then(Value::as_object);
    // 1. the artifact against the frozen output format.
    let mut nonce = None;
    let mut claimed = None;
    match artifact {
        None => reasons.push("output_format: artifact must be an object".to_owned()),
        Some(a) => {
            for k in a.keys() {
                if k != "nonce" && k != "digest" {
                    reasons.push(format!(
                        "output_format: artifact.{k} is not allowed (additionalProperties is false)"
                    ));
                }
            }
            match a.get("nonce").and_then(Value::as_i64) {
                Some(n)
                    if (0..=MAX_SAFE_INT).contains(&n)
                        && a.get("nonce").is_some_and(Value::is_integer) =>
                {
                    nonce = Some(n as u64)
                }
                Some(_) => reasons.push("output_format: artifact.nonce must be ≥ 0".into()),
                None => reasons.push(
                    "output_format: artifact.nonce is required, a non-negative integer".into(),
                ),
            }
            match a.get("digest").and_then(Value::as_str) {
                Some(d) if is_hex64(d) => claimed = Some(d),
                Some(_) => {
                    reasons.push("output_format: artifact.digest must match ^[0-9a-f]{64}$".into())
                }
                None => reasons.push("output_format: artifact.digest is required".into()),
            }
        }
    }
    // 2. evidence.
    if delivery
        .get("evidence")
        .and_then(Value::as_array)
        .is_none_or(|e| e.is_empty())
    {
        reasons.push("no_evidence: delivery.evidence needs at least one item".into());
    }
    // 3. the current deal.
    if delivery.get("deal_hash").and_then(Value::as_str) != Some(deal_hash) {
        reasons
            .push("stale_or_foreign_deal: delivery.deal_hash is not the current DealHash".into());
    }
    // 4-6. recompute.
    let computed = match (prefix, nonce) {
        (Some(p), Some(n)) => digest(p, n),
        _ => String::new(),
    };
    if prefix.is_none() || target.is_none() {
        reasons.push("job.input: prefix and target are required".into());
    }
    if let Some(d) = claimed
        && !computed.is_empty()
        && d != computed
    {
        reasons.push("digest_must_equal_computed: the digest is not SHA-256(prefix|nonce)".into());
    }
    if let Some(t) = target
        && !computed.is_empty()
        && !computed.starts_with(t)
    {
        reasons.push(format!(
            "digest_must_start_with: the computed digest does not start with job.input.target ({t})"
        ));
    }
    Verdict {
        pass: reasons.is_empty(),
        computed_digest: computed,
        reasons,
    }
}

/// A found nonce and its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Solution {
    pub nonce: u64,
    pub digest: String,
}

/// A target as masked comparisons on SHA-256 state words.
#[derive(Debug, Clone)]
struct Target {
    words: Vec<(usize, u32, u32)>,
}

impl Target {
    fn parse(target: &str) -> Option<Target> {
        if target.len() > 64
            || !target
                .bytes()
                .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
        {
            return None;
        }
        let mut words = Vec::new();
        for (w, chunk) in target.as_bytes().chunks(8).enumerate() {
            let mut mask = 0u32;
            let mut value = 0u32;
            for (i, c) in chunk.iter().enumerate() {
                let nib = (*c as char).to_digit(16)?;
                let shift = 28 - 4 * i as u32;
                mask |= 0xf << shift;
                value |= nib << shift;
            }
            words.push((w, mask, value));
        }
        Some(Target { words })
    }

    #[inline(always)]
    fn hit(&self, st: &[u32; 8]) -> bool {
        self.words.iter().all(|&(w, m, v)| st[w] & m == v)
    }
}

type Block = GenericArray<u8, U64>;

/// The fixed part of the message, pre-hashed.
struct Midstate {
    state: [u32; 8],
    /// Bytes of `prefix|` after the last whole block.
    tail: Vec<u8>,
    /// Bytes hashed into `state`.
    done: usize,
}

impl Midstate {
    fn new(prefix: &str) -> Midstate {
        let mut fixed = prefix.as_bytes().to_vec();
        fixed.push(b'|');
        let whole = fixed.len() / 64 * 64;
        let mut state = H0;
        let blocks: Vec<Block> = fixed[..whole]
            .chunks(64)
            .map(Block::clone_from_slice)
            .collect();
        sha2::compress256(&mut state, &blocks);
        Midstate {
            state,
            tail: fixed[whole..].to_vec(),
            done: whole,
        }
    }
}

fn digits_of(n: u64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// The last one or two blocks for nonces with `ndigits` digits.
struct Tail {
    blocks: Vec<Block>,
    /// Where the digits start in the concatenated tail blocks.
    at: usize,
    ndigits: usize,
}

impl Tail {
    fn new(m: &Midstate, digits: &[u8]) -> Tail {
        let mut t = m.tail.clone();
        let at = t.len();
        t.extend_from_slice(digits);
        let bits = ((m.done + t.len()) as u64) * 8;
        t.push(0x80);
        while t.len() % 64 != 56 {
            t.push(0);
        }
        t.extend_from_slice(&bits.to_be_bytes());
        Tail {
            blocks: t.chunks(64).map(Block::clone_from_slice).collect(),
            at,
            ndigits: digits.len(),
        }
    }

    #[inline(always)]
    fn byte(&mut self, i: usize) -> &mut u8 {
        &mut self.blocks[i / 64][i % 64]
    }

    /// Adds one to the decimal digits in place; false when the count of
    /// digits must grow (the caller rebuilds the tail).
    #[inline(always)]
    fn increment(&mut self) -> bool {
        let mut i = self.at + self.ndigits;
        while i > self.at {
            i -= 1;
            let b = self.byte(i);
            if *b == b'9' {
                *b = b'0';
            } else {
                *b += 1;
                return true;
            }
        }
        false
    }
}

/// Scans `range` in order on this thread; the first nonce whose digest
/// starts with `target`. `None` when no nonce in the range qualifies (or
/// the target is not lowercase hex).
pub fn search_range(prefix: &str, target: &str, range: std::ops::Range<u64>) -> Option<u64> {
    let t = Target::parse(target)?;
    let m = Midstate::new(prefix);
    scan(&m, &t, range, &AtomicBool::new(false))
}

fn scan(m: &Midstate, t: &Target, range: std::ops::Range<u64>, stop: &AtomicBool) -> Option<u64> {
    let end = range.end.min(MAX_SAFE_INT as u64 + 1);
    let mut n = range.start;
    while n < end {
        let mut tail = Tail::new(m, &digits_of(n));
        // Nonces with this many digits, up to the end of the range.
        let last_same = 10u64.saturating_pow(tail.ndigits as u32).saturating_sub(1);
        let stop_at = end.min(last_same.saturating_add(1));
        while n < stop_at {
            let mut st = m.state;
            sha2::compress256(&mut st, &tail.blocks);
            if t.hit(&st) {
                return Some(n);
            }
            n += 1;
            if n < stop_at {
                tail.increment();
            }
            if n & 0xffff == 0 && stop.load(Ordering::Relaxed) {
                return None;
            }
        }
    }
    None
}

/// Nonces one worker takes at a time.
const CHUNK: u64 = 1 << 16;

/// Finds the smallest nonce ≥ `start` whose digest starts with `target`,
/// on `threads` threads (at least one). Stops early, returning `None`,
/// when `stop` is set or no nonce up to 2^53−1 qualifies.
pub fn solve(
    prefix: &str,
    target: &str,
    start: u64,
    threads: usize,
    stop: &AtomicBool,
) -> Option<Solution> {
    let t = Target::parse(target)?;
    let m = Midstate::new(prefix);
    let next = AtomicU64::new(0);
    let best = AtomicU64::new(u64::MAX);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    let lo = start.saturating_add(c.saturating_mul(CHUNK));
                    if lo >= best.load(Ordering::Relaxed)
                        || lo > MAX_SAFE_INT as u64
                        || stop.load(Ordering::Relaxed)
                    {
                        break;
                    }
                    if let Some(n) = scan(&m, &t, lo..lo.saturating_add(CHUNK), stop) {
                        best.fetch_min(n, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let n = best.load(Ordering::Relaxed);
    // Confirm with the plain hasher: the fast path must agree.
    (n != u64::MAX).then(|| {
        let d = Sha256::digest(message(prefix, n).as_bytes());
        Solution {
            nonce: n,
            digest: hex::encode(d),
        }
    })
}

/// Hashes per second a core can do (the solver's inner loop, measured).
pub fn hashes_in(prefix: &str, count: u64) -> u64 {
    // An all-`f` 16-digit target practically never matches, so every
    // candidate is hashed.
    let t = Target::parse("ffffffffffffffff").unwrap_or(Target { words: Vec::new() });
    let m = Midstate::new(prefix);
    scan(&m, &t, 0..count, &AtomicBool::new(false)).map_or(count, |n| n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_hash_matches_the_study_vector() {
        assert_eq!(
            policy_hash(),
            "6e192291f5bba3b99416856cf68acef9c248d7338b61609a902b166098ae74f9"
        );
        assert_eq!(canonical::canonical_json(&policy()).unwrap().len(), 553);
    }

    #[test]
    fn fast_path_agrees_with_the_plain_hasher_across_digit_and_block_boundaries() {
        // Prefix lengths around one block, nonces crossing 9→10, 99→100.
        for plen in [0usize, 1, 40, 46, 54, 55, 62, 63, 64, 100, 127] {
            let prefix: String = "p".repeat(plen);
            let m = Midstate::new(&prefix);
            for n in (0..130u64).chain([999_999, 1_000_000, 9_007_199_254_740_991]) {
                let tail = Tail::new(&m, &digits_of(n));
                let mut st = m.state;
                sha2::compress256(&mut st, &tail.blocks);
                let fast: String = st.iter().map(|w| format!("{w:08x}")).collect();
                assert_eq!(fast, digest(&prefix, n), "prefix len {plen}, nonce {n}");
            }
            // In-place increments agree too.
            let mut tail = Tail::new(&m, b"90");
            for n in 90..=99u64 {
                let mut st = m.state;
                sha2::compress256(&mut st, &tail.blocks);
                let fast: String = st.iter().map(|w| format!("{w:08x}")).collect();
                assert_eq!(fast, digest(&prefix, n));
                tail.increment();
            }
        }
    }

    #[test]
    fn seed_test_vector_smallest_nonce_is_124071() {
        let p = "AIguishi|GTL|job_demo_001";
        assert_eq!(search_range(p, "0000", 0..200_000), Some(124_071));
        let s = solve(p, "0000", 0, 3, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.nonce, 124_071);
        assert_eq!(
            s.digest,
            "00009f1f3757ad7d69a483e90f5d9db58f7918a0f8cd82ce98d3117a62726adf"
        );
        assert_eq!(search_range(p, "0000", 0..124_071), None);
        assert_eq!(search_range(p, "0G", 0..10), None);
    }
}
