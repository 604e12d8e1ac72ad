//! Reconciliation: several members' verified bundles of one group session,
//! cross-checked as the reference does — which authority frames each holds
//! (gaps), frames two bundles disagree on (conflicts), peer messages both
//! ends recorded, and whether the terminal evidence agrees. The report has
//! the reference's fields in its order.

use super::verify::{Verified, verify};
use super::{BundleError, int, is_hash};
use crate::json::canonical::to_string as canon;
use crate::json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> Value {
    Value::Array(items.into_iter().map(|s| Value::from(s.as_str())).collect())
}

fn obj(entries: Vec<(&str, Value)>) -> Value {
    let mut m = Map::new();
    for (k, v) in entries {
        m.insert(k, v);
    }
    Value::Object(m)
}

/// The one value of a manifest field the bundles name (truthy ones only).
fn single(verified: &[Verified], key: &str) -> Option<Value> {
    let mut seen: BTreeMap<String, Value> = BTreeMap::new();
    for v in verified {
        if let Some(x) = v.manifest.get(key).filter(|x| x.truthy()) {
            seen.insert(canon(x), x.clone());
        }
    }
    (seen.len() == 1).then(|| seen.into_values().next().unwrap_or_default())
}

fn key_of(v: &Verified) -> String {
    v.manifest
        .get_str("participant_public_key")
        .unwrap_or_default()
        .to_owned()
}

/// Reconciles the bundles at `paths` (each verified first). The report's
/// `status` is `ok`, `conflict` or `incomplete`.
pub fn reconcile(paths: &[impl AsRef<Path>]) -> Result<Value, BundleError> {
    let verified = paths
        .iter()
        .map(|p| {
            verify(p.as_ref()).map_err(|e| match e {
                BundleError::Failed(failure) => BundleError::BundleFailed {
                    path: p.as_ref().to_owned(),
                    failure,
                },
                e => e,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if verified.len() < 2 {
        return Err(BundleError::Reconcile(
            "replay reconciliation requires at least two bundles".into(),
        ));
    }
    let (Some(group_id), Some(protocol_id)) = (
        single(&verified, "group_id"),
        single(&verified, "protocol_id"),
    ) else {
        return Err(BundleError::Reconcile(
            "replay bundles do not describe one group and protocol".into(),
        ));
    };
    let participants: Vec<String> = verified.iter().map(key_of).collect();
    let duplicates: BTreeSet<&String> = participants
        .iter()
        .filter(|p| participants.iter().filter(|q| q == p).count() > 1)
        .collect();

    let mut observed: BTreeMap<(i64, i64), BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut coverage = Vec::new();
    for v in &verified {
        let pk = key_of(v);
        let mut per_epoch: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
        for f in &v.authority_frames {
            let (Some(epoch), Some(seq), true) = (
                int(f.get("leader_epoch")),
                int(f.get("seq")),
                is_hash(f.get("frame_hash")),
            ) else {
                continue;
            };
            per_epoch.entry(epoch).or_default().insert(seq);
            observed
                .entry((epoch, seq))
                .or_default()
                .entry(f.get_str("frame_hash").unwrap_or_default().to_owned())
                .or_default()
                .insert(pk.clone());
        }
        let mut gaps = Vec::new();
        for (epoch, seqs) in &per_epoch {
            let seqs: Vec<i64> = seqs.iter().copied().collect();
            for w in seqs.windows(2) {
                if w[1] != w[0] + 1 {
                    gaps.push(obj(vec![
                        ("leader_epoch", Value::from(*epoch)),
                        ("after", Value::from(w[0])),
                        ("before", Value::from(w[1])),
                    ]));
                }
            }
        }
        coverage.push((pk, v.authority_frames.len(), gaps));
    }
    let conflicts: Vec<Value> = observed
        .iter()
        .filter(|(_, variants)| variants.len() > 1)
        .map(|((epoch, seq), variants)| {
            obj(vec![
                ("leader_epoch", Value::from(*epoch)),
                ("seq", Value::from(*seq)),
                (
                    "variants",
                    Value::Array(
                        variants
                            .iter()
                            .map(|(h, who)| {
                                obj(vec![
                                    ("frame_hash", Value::from(h.as_str())),
                                    ("participants", strings(who)),
                                ])
                            })
                            .collect(),
                    ),
                ),
            ])
        })
        .collect();

    let mut peers: BTreeMap<String, Vec<Map>> = BTreeMap::new();
    for v in &verified {
        let pk = key_of(v);
        for r in &v.peer_index {
            if let Some(id) = r.get_str("message_id") {
                let mut o = r.clone();
                o.insert("bundle_participant", Value::from(pk.as_str()));
                peers.entry(id.to_owned()).or_default().push(o);
            }
        }
    }
    let (mut matches, mut unmatched, mut peer_conflicts) = (Vec::new(), Vec::new(), Vec::new());
    for (id, obs) in peers {
        let field = |o: &Map, k: &str| o.get(k).map_or_else(|| "null".to_owned(), canon);
        let hashes: BTreeSet<String> = obs.iter().map(|o| field(o, "envelope_hash")).collect();
        let dirs: BTreeSet<Option<&str>> = obs.iter().map(|o| o.get_str("direction")).collect();
        let both = dirs.contains(&Some("sent")) && dirs.contains(&Some("received"));
        let routed = obs.iter().any(|s| {
            s.get_str("direction") == Some("sent")
                && obs.iter().any(|r| {
                    r.get_str("direction") == Some("received")
                        && field(s, "bundle_participant") == field(r, "peer_public_key")
                        && field(s, "peer_public_key") == field(r, "bundle_participant")
                })
        });
        let summary = obj(vec![
            ("message_id", Value::from(id)),
            (
                "observations",
                Value::Array(obs.iter().cloned().map(Value::Object).collect()),
            ),
        ]);
        if hashes.len() > 1 {
            peer_conflicts.push(summary);
        } else if both {
            if routed {
                matches.push(summary);
            } else {
                peer_conflicts.push(summary);
            }
        } else {
            unmatched.push(summary);
        }
    }

    let reports: Vec<(String, Value)> = verified
        .iter()
        .map(|v| {
            let t = v
                .manifest
                .get("terminal_evidence")
                .cloned()
                .unwrap_or_default();
            (key_of(v), t)
        })
        .collect();
    let incomplete: Vec<String> = reports
        .iter()
        .filter(|(_, t)| !matches!(t.get("completed"), Some(Value::Bool(true))))
        .map(|(pk, _)| pk.clone())
        .collect();
    let variants: BTreeSet<String> = reports
        .iter()
        .filter(|(_, t)| matches!(t.get("completed"), Some(Value::Bool(true))))
        .map(|(_, t)| {
            ["leader_epoch", "seq", "frame_hash", "outcome"]
                .iter()
                .map(|k| t.get(k).map_or_else(|| "null".to_owned(), canon))
                .collect::<Vec<_>>()
                .join("\u{0}")
        })
        .collect();
    let terminal_conflict = variants.len() > 1;
    let status = if !conflicts.is_empty()
        || !peer_conflicts.is_empty()
        || !duplicates.is_empty()
        || terminal_conflict
    {
        "conflict"
    } else if !unmatched.is_empty()
        || !incomplete.is_empty()
        || coverage.iter().any(|c| !c.2.is_empty())
    {
        "incomplete"
    } else {
        "ok"
    };
    let head = observed.keys().next_back().map_or(Value::Null, |(e, s)| {
        obj(vec![
            ("leader_epoch", Value::from(*e)),
            ("seq", Value::from(*s)),
        ])
    });
    Ok(obj(vec![
        ("reconciliation_version", Value::from(1)),
        ("status", Value::from(status)),
        ("group_id", group_id),
        ("protocol_id", protocol_id),
        ("participants", strings(&participants)),
        ("duplicate_participants", strings(duplicates)),
        ("authority_head", head),
        (
            "coverage",
            Value::Array(
                coverage
                    .into_iter()
                    .map(|(pk, n, gaps)| {
                        obj(vec![
                            ("participant_public_key", Value::from(pk)),
                            ("frame_count", Value::from(n)),
                            ("gaps", Value::Array(gaps)),
                        ])
                    })
                    .collect(),
            ),
        ),
        ("authority_conflicts", Value::Array(conflicts)),
        ("peer_matches", Value::Array(matches)),
        ("peer_unmatched", Value::Array(unmatched)),
        ("peer_conflicts", Value::Array(peer_conflicts)),
        (
            "terminal_reports",
            Value::Array(
                reports
                    .into_iter()
                    .map(|(pk, t)| {
                        obj(vec![
                            ("participant_public_key", Value::from(pk)),
                            ("terminal_evidence", t),
                        ])
                    })
                    .collect(),
            ),
        ),
        ("incomplete_terminal_participants", strings(&incomplete)),
        ("terminal_conflict", Value::Bool(terminal_conflict)),
        (
            "limitations",
            Value::Array(vec![
                Value::from("Consistency covers submitted Aigenora evidence only."),
                Value::from("Missing bundles and off-platform communication cannot be disproved."),
            ]),
        ),
    ]))
}
