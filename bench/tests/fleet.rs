//! 200 short steps at once on one local node (issue 16): every step's output arrives in its
//! own task result, finalized, and no step writes its task result more than twice, whatever
//! the concurrency (Argo #14617 saw 57 writes by one pod at 10 000 pods).

use std::time::Duration;

use argoexec_bench::fleet::{FleetConfig, run, writes_histogram};
use argoexec_core::ArgoVersion;

#[test]
fn two_hundred_concurrent_steps_lose_nothing_and_write_twice_at_most() {
    if std::env::var("ARGOEXEC_SKIP_DOCKER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipped: ARGOEXEC_SKIP_DOCKER_TESTS=1");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let cfg = FleetConfig {
        steps: 200,
        version: ArgoVersion::V4_1,
        image: "argoexec:dev".into(),
        label: format!("fleet-test-{}", std::process::id()),
        state_dir: state.path().to_path_buf(),
        limit: Duration::from_secs(900),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let report = rt.block_on(run(&cfg)).unwrap();
    let lost: Vec<_> = report.steps.iter().filter(|s| !s.complete()).collect();
    assert!(
        lost.is_empty(),
        "{} of 200 steps incomplete: {lost:#?}",
        lost.len()
    );
    let hist = writes_histogram(&report.steps);
    assert!(
        report.steps.iter().all(|s| s.writes <= 2),
        "writes per step → steps: {hist:?}"
    );
    assert!(
        report.steps.iter().all(|s| s.labels == ["false", "true"]),
        "every step announced, then finalized"
    );
    eprintln!(
        "200 steps in {:?}; writes per step → steps: {hist:?}",
        report.wall
    );
    let left = std::fs::read_dir(state.path()).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "the node removed every pod's files");
}
