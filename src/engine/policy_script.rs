//! Policy scripts: `strategy.json` `{"mode": "script", "script_id": ID,
//! "params": {…}, "timeout_ms": N}` (`script` is taken for `script_id`
//! too). At a decision window the protocol builds a context; the script
//! gets `{schema, context, strategy, params}` as JSON on stdin and answers
//! `{"decision": {…}, "confidence"?, "reason"?}` (or `{"ok": false,
//! "reason": …}`) on stdout, within the timeout (1 s by default).
//!
//! A script is looked up as `<state dir>/policy_scripts/<ID>.*` (a `.py`
//! runs with `PALAVER_HOOKS_PYTHON`, else `python3`; anything else must be
//! executable), then among the bundled policies, written here in Rust with
//! the reference's behaviour: `weighted_mirror`, `counter_once`,
//! `conditional_counter`, `adaptive_bid`. A program runs sandboxed as far
//! as a process can be without privileges: an empty environment but for
//! PATH, HOME and LANG, the state dir as its working dir, its own process
//! group killed whole at the timeout, stdout and stderr read to bounded
//! sizes. Every failure has the reference's reason code
//! (`script_not_found`, `policy_timeout`, `script_error`, `empty_output`,
//! `invalid_json`, `no_decision_in_output`, or the script's own), and the
//! caller falls back to its automatic choice.

use crate::json::{Map, Value};
use crate::obj;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default and largest timeouts of one run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1000);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10);
/// Most stdout read back from a script (its answer).
pub const MAX_OUTPUT: usize = 64 * 1024;
/// The bundled policies.
pub const BUNDLED: [&str; 4] = [
    "weighted_mirror",
    "counter_once",
    "conditional_counter",
    "adaptive_bid",
];

/// A decision a script produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Produced {
    pub decision: Map,
    pub reason: Option<String>,
    pub confidence: Option<Value>,
}

/// Why a script produced nothing (`reason` is the reference's code).
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    pub reason: String,
    pub detail: Option<String>,
}

impl Failed {
    fn new(reason: &str, detail: Option<String>) -> Failed {
        Failed {
            reason: reason.to_owned(),
            detail,
        }
    }
}

/// The script a strategy names, when its mode is `script`.
pub fn script_id(strategy: &Map) -> Option<&str> {
    if strategy.get("mode").and_then(Value::as_str) != Some("script") {
        return None;
    }
    strategy
        .get("script_id")
        .or_else(|| strategy.get("script"))
        .and_then(Value::as_str)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The user's script `id` in `dir/policy_scripts` (the first file, in name
/// order, whose stem is `id`).
fn local_script(dir: &Path, id: &str) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join("policy_scripts"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.file_stem().and_then(|s| s.to_str()) == Some(id))
        .collect();
    found.sort();
    found.into_iter().next()
}

/// The timeout a strategy asks for (`timeout_ms`, 10 to 10,000).
fn timeout_of(strategy: &Map) -> Duration {
    strategy
        .get("timeout_ms")
        .and_then(Value::as_f64)
        .filter(|t| t.is_finite())
        .map(|t| Duration::from_millis(t.clamp(10.0, MAX_TIMEOUT.as_millis() as f64) as u64))
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// Runs the strategy's script for one window.
pub async fn run(
    state_dir: Option<&Path>,
    strategy: &Map,
    schema: &Map,
    context: &Map,
) -> Result<Produced, Failed> {
    let Some(id) = script_id(strategy) else {
        return Err(Failed::new("no_script_id", None));
    };
    if !valid_id(id) {
        return Err(Failed::new(
            "script_not_found",
            Some(format!(
                "{id:?} is not a script id (letters, digits, _ and -)"
            )),
        ));
    }
    let params = strategy
        .get("params")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let input = obj! {
        "schema" => schema.clone(), "context" => context.clone(),
        "strategy" => strategy.clone(), "params" => params.clone(),
    };
    if let Some(file) = state_dir.and_then(|d| local_script(d, id)) {
        let out = run_program(&file, state_dir, &input, timeout_of(strategy)).await?;
        return answer(&out);
    }
    match bundled(id, schema, context, &params) {
        Some(v) => answer(&crate::json::canonical::to_string_ordered(&Value::Object(
            v,
        ))),
        None => Err(Failed::new("script_not_found", Some(id.to_owned()))),
    }
}

/// Reads a script's stdout as the reference does.
fn answer(stdout: &str) -> Result<Produced, Failed> {
    let text = stdout.trim();
    if text.is_empty() {
        return Err(Failed::new("empty_output", None));
    }
    let v = crate::json::parse_str(text)
        .map_err(|e| Failed::new("invalid_json", Some(e.to_string())))?;
    let Value::Object(m) = v else {
        return Err(Failed::new(
            "invalid_json",
            Some("the answer is not a JSON object".into()),
        ));
    };
    if m.get("ok") == Some(&Value::Bool(false)) {
        let reason = m
            .get("reason")
            .map(Value::py_str)
            .unwrap_or_else(|| "script_declined".into());
        return Err(Failed::new(&reason, None));
    }
    match m.get("decision") {
        Some(Value::Object(d)) if !d.is_empty() => Ok(Produced {
            decision: d.clone(),
            reason: m.get("reason").map(Value::py_str),
            confidence: m.get("confidence").cloned(),
        }),
        _ => Err(Failed::new("no_decision_in_output", None)),
    }
}

/// Runs a user's script program and returns its stdout.
async fn run_program(
    file: &Path,
    dir: Option<&Path>,
    input: &Map,
    timeout: Duration,
) -> Result<String, Failed> {
    use std::os::unix::process::CommandExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut cmd = if file.extension().and_then(|e| e.to_str()) == Some("py") {
        let python = std::env::var("PALAVER_HOOKS_PYTHON").unwrap_or_else(|_| "python3".into());
        let mut c = std::process::Command::new(python);
        c.arg(file);
        c
    } else {
        std::process::Command::new(file)
    };
    cmd.env_clear();
    for k in ["PATH", "HOME", "LANG"] {
        if let Ok(v) = std::env::var(k) {
            cmd.env(k, v);
        }
    }
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    cmd.process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Failed::new("script_error", Some(format!("{}: {e}", file.display()))))?;
    let pgid = child.id();
    let payload = crate::json::canonical::to_string_ordered(&Value::Object(input.clone()));
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(Failed::new("script_error", Some("no pipes".into())));
    };
    let work = async {
        // A script that never reads its stdin must not hold this up.
        let feed = async {
            let _ = stdin.write_all(payload.as_bytes()).await;
            drop(stdin);
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let read_out = async {
            let _ = stdout
                .take(MAX_OUTPUT as u64 + 1)
                .read_to_end(&mut out)
                .await;
        };
        let read_err = async {
            let _ = stderr.take(4096).read_to_end(&mut err).await;
        };
        tokio::join!(feed, read_out, read_err);
        let status = child.wait().await;
        (status, out, err)
    };
    // Only at the timeout, before the script is reaped (its group id is
    // still its own then).
    let kill = || {
        if let Some(pid) = pgid {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    };
    let (status, out, err) = match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => {
            kill();
            return Err(Failed::new(
                "policy_timeout",
                Some(format!("no answer within {} ms", timeout.as_millis())),
            ));
        }
    };
    // No kill here: once the script is reaped its group id may be reused,
    // and a group left with no member holding stdout is not ours to chase.
    if out.len() > MAX_OUTPUT {
        return Err(Failed::new(
            "script_error",
            Some(format!("it printed more than {MAX_OUTPUT} bytes")),
        ));
    }
    match status {
        Ok(s) if s.success() => Ok(String::from_utf8_lossy(&out).into_owned()),
        Ok(s) => Err(Failed::new(
            "script_error",
            Some(format!(
                "exit {}: {}",
                s.code().map_or("by signal".into(), |c| c.to_string()),
                String::from_utf8_lossy(&err).trim()
            )),
        )),
        Err(e) => Err(Failed::new("script_error", Some(e.to_string()))),
    }
}

fn previous<'a>(context: &'a Map, who: &str, field: &str) -> Option<&'a Value> {
    context.get("previous")?.get(who)?.get(field)
}

/// The key of `beats` that beats `v` (`beats[k] == v`).
fn counter_of(schema: &Map, v: &str) -> Option<String> {
    schema
        .get("beats")?
        .as_object()?
        .iter()
        .find(|(_, b)| b.as_str() == Some(v))
        .map(|(k, _)| k.to_owned())
}

fn value_field(context: &Map) -> String {
    context
        .get("value_field")
        .and_then(Value::as_str)
        .unwrap_or("choice")
        .to_owned()
}

fn legal(context: &Map) -> Vec<String> {
    context
        .get("legal_values")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Value::py_str).collect())
        .unwrap_or_default()
}

fn pick(options: &[String]) -> Option<String> {
    (!options.is_empty()).then(|| options[rand::random_range(0..options.len())].clone())
}

fn declined(reason: &str) -> Map {
    obj! { "ok" => false, "reason" => reason }
}

/// A bundled policy's answer, as its script would print it; `None` for an
/// id that is not bundled.
pub fn bundled(id: &str, schema: &Map, context: &Map, params: &Map) -> Option<Map> {
    let field = value_field(context);
    Some(match id {
        "weighted_mirror" => {
            // The weight as given (its text goes into the reason as the
            // reference's script prints it: 1.0 stays "1.0").
            let wv = params
                .get("mirror_weight")
                .filter(|v| v.as_f64().is_some())
                .cloned()
                .unwrap_or(Value::from(0.6));
            let w = wv.as_f64().unwrap_or(0.6);
            let legal = legal(context);
            match previous(context, "opponent", "choice").and_then(Value::as_str) {
                Some(opp) if legal.iter().any(|l| l == opp) => {
                    let others: Vec<String> = legal.iter().filter(|l| *l != opp).cloned().collect();
                    let choice = if rand::random::<f64>() < w {
                        opp.to_owned()
                    } else {
                        pick(&others).unwrap_or_else(|| opp.to_owned())
                    };
                    obj! {
                        "decision" => obj! { field.as_str() => choice.as_str() },
                        "confidence" => wv.clone(),
                        "reason" => format!("weighted mirror w={}, chose {choice}", wv.py_str()),
                    }
                }
                _ => declined("no_context"),
            }
        }
        "counter_once" => match previous(context, "opponent", "choice").and_then(Value::as_str) {
            None => declined("no_context"),
            Some(opp) => match counter_of(schema, opp) {
                None => declined("no_counter"),
                Some(c) => obj! {
                    "decision" => obj! { field.as_str() => c.as_str() },
                    "confidence" => 1.0,
                    "reason" => format!("counter {opp} -> {c}"),
                },
            },
        },
        "conditional_counter" => {
            let history = context
                .get("history")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let repeated = (history.len() >= 2)
                .then(|| {
                    let opp = |h: &Value| {
                        h.get("opponent")
                            .and_then(|o| o.get("choice"))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    };
                    let (a, b) = (
                        opp(&history[history.len() - 2]),
                        opp(&history[history.len() - 1]),
                    );
                    a.filter(|a| Some(a) == b.as_ref())
                })
                .flatten();
            match repeated.and_then(|r| counter_of(schema, &r).map(|c| (r, c))) {
                Some((r, c)) => obj! {
                    "decision" => obj! { field.as_str() => c.as_str() },
                    "confidence" => 0.9,
                    "reason" => format!("conditional counter: opponent repeated {r}"),
                },
                None => match pick(&legal(context)) {
                    Some(c) => obj! {
                        "decision" => obj! { field.as_str() => c.as_str() },
                        "confidence" => 0.3,
                        "reason" => "random fallback (no repeat detected)",
                    },
                    None => declined("no_legal_values"),
                },
            }
        }
        "adaptive_bid" => {
            let param = |k: &str| params.get(k).cloned().unwrap_or(Value::from(1));
            let (default_bid, conservative) = (param("default_bid"), param("conservative_bid"));
            let opp = previous(context, "opponent", "bid").filter(|v| !v.is_null());
            let own = previous(context, "self", "bid").filter(|v| !v.is_null());
            match (opp.and_then(Value::as_f64), own.and_then(Value::as_f64)) {
                (Some(o), Some(s)) if o > s => {
                    let bid = (o as i64 - 1).max(1);
                    obj! {
                        "decision" => obj! { "bid" => bid },
                        "reason" => format!("counter: opp bid {} > self {}, bid {bid} to weak-win", opp.map(Value::py_str).unwrap_or_default(), own.map(Value::py_str).unwrap_or_default()),
                    }
                }
                (Some(_), Some(_)) => obj! {
                    "decision" => obj! { "bid" => conservative },
                    "reason" => format!("conservative: opp bid {} <= self {}", opp.map(Value::py_str).unwrap_or_default(), own.map(Value::py_str).unwrap_or_default()),
                },
                _ => obj! {
                    "decision" => obj! { "bid" => default_bid.clone() },
                    "reason" => format!("no history, default bid {}", default_bid.py_str()),
                },
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rps_schema() -> Map {
        obj! { "match_key" => "round", "value_field" => "choice",
        "beats" => obj! { "rock" => "scissors", "paper" => "rock", "scissors" => "paper" } }
    }

    fn ctx(opp: Option<&str>) -> Map {
        let mut c = obj! { "supported" => true, "value_field" => "choice",
        "legal_values" => vec![Value::from("rock"), Value::from("paper"), Value::from("scissors")],
        "history" => Value::Array(Vec::new()) };
        if let Some(o) = opp {
            c.insert("previous", Value::Object(obj! { "opponent" => obj! { "choice" => o }, "self" => obj! { "choice" => "rock" } }));
        }
        c
    }

    #[test]
    fn the_bundled_policies_answer_as_their_scripts_do() {
        let s = rps_schema();
        let d = bundled("counter_once", &s, &ctx(Some("rock")), &Map::new()).unwrap();
        assert_eq!(
            d.get("decision")
                .and_then(|d| d.get("choice"))
                .and_then(Value::as_str),
            Some("paper")
        );
        let d = bundled("counter_once", &s, &ctx(None), &Map::new()).unwrap();
        assert_eq!(d.get("reason").and_then(Value::as_str), Some("no_context"));
        let w1 = obj! { "mirror_weight" => 1.0 };
        let d = bundled("weighted_mirror", &s, &ctx(Some("scissors")), &w1).unwrap();
        assert_eq!(
            d.get("decision")
                .and_then(|d| d.get("choice"))
                .and_then(Value::as_str),
            Some("scissors")
        );
        let mut c = ctx(None);
        let h = |o: &str| Value::Object(obj! { "opponent" => obj! { "choice" => o } });
        c.insert("history", Value::Array(vec![h("paper"), h("paper")]));
        let d = bundled("conditional_counter", &s, &c, &Map::new()).unwrap();
        assert_eq!(
            d.get("decision")
                .and_then(|d| d.get("choice"))
                .and_then(Value::as_str),
            Some("scissors")
        );
        let mut c = Map::new();
        c.insert(
            "previous",
            Value::Object(
                obj! { "opponent" => obj! { "bid" => 5 }, "self" => obj! { "bid" => 3 } },
            ),
        );
        let d = bundled("adaptive_bid", &Map::new(), &c, &Map::new()).unwrap();
        assert_eq!(
            d.get("decision")
                .and_then(|d| d.get("bid"))
                .and_then(Value::as_i64),
            Some(4)
        );
        assert!(bundled("nope", &s, &ctx(None), &Map::new()).is_none());
    }

    #[test]
    fn answers_are_read_with_the_references_reason_codes() {
        assert_eq!(answer("").unwrap_err().reason, "empty_output");
        assert_eq!(answer("nope").unwrap_err().reason, "invalid_json");
        assert_eq!(
            answer(r#"{"ok":false,"reason":"no_context"}"#)
                .unwrap_err()
                .reason,
            "no_context"
        );
        assert_eq!(
            answer(r#"{"confidence":1}"#).unwrap_err().reason,
            "no_decision_in_output"
        );
        let p = answer(r#"{"decision":{"choice":"rock"},"reason":"r"}"#).unwrap();
        assert_eq!(
            p.decision.get("choice").and_then(Value::as_str),
            Some("rock")
        );
        assert!(!valid_id("../x") && !valid_id("") && valid_id("counter_once"));
    }
}
