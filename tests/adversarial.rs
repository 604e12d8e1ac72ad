//! Every case of the adversarial catalogue ends the palaver side cleanly,
//! with the expected reason, exactly one session_ended, and no hang.

use palaver::services::adversarial::{catalogue, run_case};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_catalogue_ends_cleanly() {
    let cases = catalogue();
    assert!(cases.len() >= 30, "the catalogue has {} cases", cases.len());
    let protocols: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.alias).collect();
    assert!(protocols.len() >= 8, "{protocols:?}");
    let mut failures = Vec::new();
    for case in &cases {
        let report = run_case(case, Duration::from_millis(300)).await;
        if !report.passed {
            failures.push(format!(
                "{} / {} ({:?}): {}",
                case.alias, case.name, case.victim, report.detail
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_cases_hold_for_every_native_protocol() {
    use palaver::library;
    use palaver::protocols::{NATIVE, native_hooks_for_alias};
    use palaver::services::adversarial::{ANY, run_case_on};
    let generic: Vec<_> = catalogue().into_iter().filter(|c| c.alias == ANY).collect();
    assert!(generic.len() >= 9);
    let mut failures = Vec::new();
    for alias in NATIVE {
        let spec = library::bundled_spec(alias).unwrap();
        for case in &generic {
            let report = run_case_on(
                case,
                spec,
                native_hooks_for_alias(alias).unwrap(),
                Duration::from_millis(200),
            )
            .await;
            if !report.passed {
                failures.push(format!(
                    "{alias} / {} ({:?}): {}",
                    case.name, case.victim, report.detail
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
