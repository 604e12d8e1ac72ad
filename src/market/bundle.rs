//! Replay bundles of GTL transactions: a transaction's whole record (job,
//! offers, deal, funding, delivery, verification and its hash-chained
//! events) as one signed zip anyone can check offline.
//!
//! The reference client has no bundle for market transactions, so this is
//! palaver's own kind, `palaver-gtl-transaction`, on the session bundles'
//! frame (`session::bundle`): `manifest.json` (version, kind, scope
//! `public`, the signer's key, an empty membership, the inventory with
//! sizes and SHA-256, `bundle_id`, the Ed25519 signature) and one evidence
//! file, `evidence/transaction.json`, the transaction as the market shows
//! it. Verification runs the checks every kind shares, then the chain check
//! `palaver market verify-chain` runs (every event hash recomputed, every
//! link and sequence number followed, the last event ending in the
//! transaction's state), and holds the result to the manifest's
//! `terminal_evidence` (transaction id, state, events, chain head).

use super::chain::{ChainReport, verify_chain_value};
use super::view::TransactionView;
use crate::identity::KeyPair;
use crate::json::{Map, Value};
use crate::session::bundle::{self, BundleError, Failure};
use std::path::Path;

/// `manifest.json`'s `bundle_kind` for a market transaction.
pub const KIND: &str = "palaver-gtl-transaction";

/// The transaction's path in the bundle.
pub const TRANSACTION: &str = "evidence/transaction.json";

fn terminal(view: &TransactionView, report: &ChainReport) -> Value {
    let mut m = Map::new();
    m.insert("transaction_id", Value::from(view.transaction_id.as_str()));
    m.insert("state", Value::from(view.state.as_str()));
    m.insert("events", Value::from(report.events));
    m.insert("head", Value::from(report.head.as_str()));
    Value::Object(m)
}

/// Exports `view` as a signed public bundle at `output` (refused when it
/// exists and `force` is not given, and when its chain does not verify);
/// returns the manifest.
pub fn export(
    view: &TransactionView,
    output: &Path,
    signer: &KeyPair,
    force: bool,
) -> Result<Map, BundleError> {
    if output.exists() && !force {
        return Err(BundleError::Exists(output.to_owned()));
    }
    let report = verify_chain_value(view);
    if !report.ok() {
        return Err(BundleError::Export(format!(
            "transaction {}'s chain does not verify: {}",
            view.transaction_id,
            report.problems.join("; ")
        )));
    }
    let text = serde_json::to_vec_pretty(view)
        .map_err(|e| BundleError::Export(format!("writing the transaction: {e}")))?;
    let mut body = bundle::own_kind_body(KIND, signer);
    body.insert("terminal_evidence", terminal(view, &report));
    bundle::seal(body, vec![(TRANSACTION.to_owned(), text)], signer, output)
}

/// A verified transaction bundle: its manifest, the transaction and its
/// chain's report.
pub struct Verified {
    pub manifest: Map,
    pub view: TransactionView,
    pub chain: ChainReport,
}

impl Verified {
    /// `{"status": "verified", "path", "bundle_kind", "manifest",
    /// "terminal_evidence"}`.
    pub fn to_value(&self, path: &Path) -> Value {
        bundle::own_kind_report(
            path,
            KIND,
            &self.manifest,
            terminal(&self.view, &self.chain),
        )
    }
}

/// Verifies a transaction bundle (see the module doc); the first failed
/// check is named.
pub fn verify(path: &Path) -> Result<Verified, BundleError> {
    let (manifest, content) = bundle::open(path, KIND)?;
    let Some(text) = content.get(TRANSACTION) else {
        return Err(
            Failure::new("transaction", "the bundle holds no transaction")
                .file(TRANSACTION)
                .into(),
        );
    };
    let view: TransactionView = serde_json::from_slice(text).map_err(|e| {
        Failure::new(
            "transaction",
            format!("the transaction does not read as one: {e}"),
        )
        .file(TRANSACTION)
    })?;
    let chain = verify_chain_value(&view);
    if let Some(first) = chain.problems.first() {
        return Err(Failure::new("chain", first.clone())
            .file(TRANSACTION)
            .field("events")
            .into());
    }
    let derived = terminal(&view, &chain);
    bundle::check_terminal(
        &manifest,
        &derived,
        "the transaction does not end as the manifest's terminal evidence records",
    )?;
    Ok(Verified {
        manifest,
        view,
        chain,
    })
}
