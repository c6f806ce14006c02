//! Tests of the emissary backend against real files and real timing of inotify.

use super::*;
use argoexec_core::fswatch::WatchMode;
use std::time::Instant;

fn setup() -> (tempfile::TempDir, PodPaths, EmissaryExecutor) {
    let d = tempfile::tempdir().unwrap();
    let paths = PodPaths::new(d.path());
    let ex = EmissaryExecutor::new(paths.clone());
    (d, paths, ex)
}

#[tokio::test]
async fn wait_notices_exitcode_written_later() {
    let (_d, paths, ex) = setup();
    let names = vec!["main".to_string(), "b".to_string()];
    let p2 = paths.clone();
    let writer = tokio::spawn(async move {
        tokio::task::yield_now().await;
        for n in ["main", "b"] {
            protocol::create_shared_dir(&p2.ctr_dir(n)).unwrap();
            protocol::write_atomic(&p2.exitcode_file(n), if n == "main" { b"3" } else { b"0" }, 0o666)
                .unwrap();
        }
    });
    let start = Instant::now();
    let exits = ex.wait(&names, CancellationToken::new()).await.unwrap();
    writer.await.unwrap();
    assert_eq!(
        exits[0],
        ContainerExit {
            name: "main".into(),
            exit_code: Some(3)
        }
    );
    assert_eq!(exits[1].exit_code, Some(0));
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// With polling forced, an exit code written after the first scan is seen at the next scan,
/// 2 s later (virtual time: the scan period itself is what is checked).
#[tokio::test(start_paused = true)]
async fn forced_polling_sees_the_exitcode_at_the_next_scan() {
    let (_d, paths, _) = setup();
    let ex = EmissaryExecutor::with_watch_mode(paths.clone(), WatchMode::Poll);
    let names = vec!["main".to_string()];
    let waiting = ex.wait(&names, CancellationToken::new());
    tokio::pin!(waiting);
    assert!(
        tokio::time::timeout(Duration::from_millis(1), &mut waiting)
            .await
            .is_err(),
        "nothing to see yet"
    );
    protocol::create_shared_dir(&paths.ctr_dir("main")).unwrap();
    protocol::write_atomic(&paths.exitcode_file("main"), b"4", 0o666).unwrap();
    let written = tokio::time::Instant::now();
    let exits = waiting.await.unwrap();
    assert_eq!(exits[0].exit_code, Some(4));
    let seen = written.elapsed();
    let period = argoexec_core::fswatch::POLL_PERIOD;
    assert!(
        seen <= period && seen >= period - Duration::from_millis(10),
        "seen after {seen:?}"
    );
}

#[tokio::test]
async fn a_wrapper_gone_without_an_exitcode_ends_the_wait_with_an_unknown_code() {
    let (_d, paths, ex) = setup();
    let names = vec!["main".to_string(), "side".to_string()];
    let mut held = Vec::new();
    for n in &names {
        protocol::create_shared_dir(&paths.ctr_dir(n)).unwrap();
        held.push(protocol::hold_alive(&paths.ctr_dir(n)).unwrap());
    }
    let waiting = tokio::spawn({
        let names = names.clone();
        async move { ex.wait(&names, CancellationToken::new()).await }
    });
    // `side` exits cleanly (exitcode first, then the lock goes); main's wrapper just dies.
    protocol::write_atomic(&paths.exitcode_file("side"), b"0", 0o666).unwrap();
    drop(held);
    let exits = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("wait did not notice the dead wrapper")
        .unwrap()
        .unwrap();
    assert_eq!(
        exits[0],
        ContainerExit {
            name: "main".into(),
            exit_code: None
        }
    );
    assert_eq!(
        exits[1],
        ContainerExit {
            name: "side".into(),
            exit_code: Some(0)
        }
    );
}

#[tokio::test]
async fn a_live_wrapper_is_waited_for() {
    let (_d, paths, ex) = setup();
    protocol::create_shared_dir(&paths.ctr_dir("main")).unwrap();
    let _held = protocol::hold_alive(&paths.ctr_dir("main")).unwrap();
    let ended = ex
        .wait_timeout(&["main".to_string()], Duration::from_millis(300))
        .await
        .unwrap();
    assert!(!ended, "a wrapper holding its lock was taken for gone");
}

#[tokio::test]
async fn wait_is_cancellable() {
    let (_d, _paths, ex) = setup();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = ex.wait(&["main".to_string()], cancel).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Cancelled);
}

#[tokio::test]
async fn staged_outputs_and_not_found() {
    let (_d, paths, ex) = setup();
    let p = Path::new("/tmp/out.txt");
    assert!(ex.get_file_contents("main", p).await.unwrap_err().is_not_found());
    std::fs::create_dir_all(paths.staged_parameter(p).parent().unwrap()).unwrap();
    std::fs::write(paths.staged_parameter(p), "v\n").unwrap();
    assert_eq!(ex.get_file_contents("main", p).await.unwrap(), b"v\n");
    let dest = paths.root().join("a.tgz");
    assert!(
        ex.copy_file("main", Path::new("/tmp/dir/"), &dest, None)
            .await
            .unwrap_err()
            .is_not_found()
    );
    let staged = paths.staged_artifact(Path::new("/tmp/dir"));
    std::fs::create_dir_all(staged.parent().unwrap()).unwrap();
    std::fs::write(&staged, b"tgz").unwrap();
    ex.copy_file("main", Path::new("/tmp/dir/"), &dest, Some(1))
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"tgz");
}

#[tokio::test]
async fn refused_and_planted_parameters_are_invalid_never_blocking() {
    let (_d, paths, ex) = setup();
    // The wrapper could not stage /tmp/d: its reason is reported, with kind Invalid.
    let p = Path::new("/tmp/d");
    let marker = paths.staged_parameter_error(p);
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    std::fs::write(&marker, "/tmp/d is a directory, not a regular file").unwrap();
    let e = ex.get_file_contents("main", p).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message.contains("/tmp/d is a directory"), "{e}");
    // A FIFO planted where a staged copy belongs (the staging area is writable by main): an
    // error at once, not a wait that blocks forever.
    let q = Path::new("/tmp/q");
    let staged = paths.staged_parameter(q);
    std::fs::create_dir_all(staged.parent().unwrap()).unwrap();
    let st = std::process::Command::new("mkfifo")
        .arg(&staged)
        .status()
        .unwrap();
    assert!(st.success());
    let e = tokio::time::timeout(Duration::from_secs(5), ex.get_file_contents("main", q))
        .await
        .expect("reading a FIFO must not block")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message.contains("/tmp/q is a FIFO"), "{e}");
    let big = Path::new("/tmp/big");
    std::fs::File::create(paths.staged_parameter(big))
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    let e = ex.get_file_contents("main", big).await.unwrap_err();
    assert!(e.message.contains("2097152 bytes"), "{e}");
}

/// A fake wrapper that ignores 15 and exits 137 on 9; the kill must escalate.
async fn kill_escalates_to_sigkill_in(mode: WatchMode) {
    let (_d, paths, _) = setup();
    let ex = EmissaryExecutor::with_watch_mode(paths.clone(), mode);
    protocol::create_shared_dir(&paths.ctr_dir("side")).unwrap();
    let p2 = paths.clone();
    let fake = tokio::spawn(async move {
        let mut seen_term = false;
        loop {
            match std::fs::read_to_string(p2.signal_file("side")).as_deref() {
                Ok("15") => seen_term = true,
                Ok("9") => {
                    protocol::write_atomic(&p2.exitcode_file("side"), b"137", 0o666).unwrap();
                    return seen_term;
                }
                _ => {}
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    ex.kill(&["side".to_string()], Duration::from_millis(200))
        .await
        .unwrap();
    assert!(fake.await.unwrap(), "SIGTERM came first");
    assert_eq!(
        std::fs::read_to_string(paths.exitcode_file("side")).unwrap(),
        "137"
    );
}

#[tokio::test]
async fn kill_escalates_to_sigkill() {
    kill_escalates_to_sigkill_in(WatchMode::Inotify).await;
}

#[tokio::test]
async fn kill_escalates_to_sigkill_when_polling() {
    kill_escalates_to_sigkill_in(WatchMode::Poll).await;
}

/// As Argo since AW#15352: SIGTERM, the grace period, SIGKILL, then 10 s more whatever the
/// grace period, and an error naming the container if it is still there.
#[tokio::test(start_paused = true)]
async fn kill_waits_a_fixed_ten_seconds_after_sigkill() {
    let (_d, paths, ex) = setup();
    protocol::create_shared_dir(&paths.ctr_dir("stuck")).unwrap();
    let start = tokio::time::Instant::now();
    let grace = Duration::from_secs(30);
    let e = ex.kill(&["stuck".to_string()], grace).await.unwrap_err();
    let took = start.elapsed();
    assert_eq!(e.kind(), ErrorKind::Fatal);
    assert!(e.to_string().contains("stuck"), "{e}");
    assert_eq!(std::fs::read_to_string(paths.signal_file("stuck")).unwrap(), "9");
    assert!(
        took >= grace + KILL_WAIT && took < grace + KILL_WAIT + Duration::from_secs(1),
        "gave up after {took:?}"
    );
}

#[tokio::test]
async fn a_kill_before_the_wrapper_started_is_delivered_when_it_starts() {
    let (_d, paths, ex) = setup();
    // The "wrapper" starts after the kill was asked for, then honours the TERM it finds.
    let p2 = paths.clone();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let fake = tokio::spawn(async move {
        started_rx.await.unwrap();
        protocol::create_shared_dir(&p2.ctr_dir("main")).unwrap();
        loop {
            if std::fs::read_to_string(p2.signal_file("main")).is_ok_and(|s| s == "15") {
                protocol::write_atomic(&p2.exitcode_file("main"), b"143", 0o666).unwrap();
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let names = ["main".to_string()];
    let kill = ex.kill(&names, Duration::from_secs(10));
    tokio::pin!(kill);
    // Let the kill find no container first, then start the wrapper.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), &mut kill)
            .await
            .is_err()
    );
    started_tx.send(()).unwrap();
    kill.await.unwrap();
    fake.await.unwrap();
    assert_eq!(
        std::fs::read_to_string(paths.exitcode_file("main")).unwrap(),
        "143"
    );
}

#[tokio::test]
async fn lists_wrapped_containers() {
    let (_d, paths, ex) = setup();
    assert!(ex.list_container_names().await.unwrap().is_empty());
    for n in ["main", "sidecar"] {
        protocol::create_shared_dir(&paths.ctr_dir(n)).unwrap();
    }
    assert_eq!(ex.list_container_names().await.unwrap(), vec!["main", "sidecar"]);
}
