//! `argoexec wait` with the emissary backend against real wrapped children: the output
//! scenarios of argo-executors.md §7.3 (items 1–7, 14, 21, 22).

mod common;

use common::*;
use std::path::Path;
use std::time::Duration;

const ARCHIVE: &str = r#""archiveLocation": {"archiveLogs": false, "local": {"path": "{{repo}}/wf/pod-1"}}"#;

#[test]
fn base_layer_parameter_default_and_missing() {
    let pod = Pod::new(&format!(
        r#"{{"name": "t", "container": {{"image": "x"}}, {ARCHIVE},
        "outputs": {{"parameters": [
          {{"name": "a", "valueFrom": {{"path": "{{{{work}}}}/a.txt"}}}},
          {{"name": "b", "valueFrom": {{"path": "{{{{work}}}}/missing", "default": ""}}}},
          {{"name": "c", "valueFrom": {{"path": "{{{{work}}}}/missing", "default": "dflt"}}}}]}}}}"#
    ));
    let work = pod.work();
    let (main, wait) = pod.run(&format!("printf 'hello\\n\\n' > {}/a.txt", work.display()));
    assert_eq!(main.status.code(), Some(0));
    assert_success(&wait);
    let r = pod.report();
    assert_eq!(
        param(&r, "a").as_deref(),
        Some("hello\n"),
        "exactly one newline trimmed"
    );
    assert_eq!(param(&r, "b").as_deref(), Some(""));
    assert_eq!(param(&r, "c").as_deref(), Some("dflt"));
    assert_eq!(r["outputs"]["exitCode"], "0");
}

#[test]
fn missing_parameter_without_default_fails_wait() {
    let pod = Pod::new(
        r#"{"container": {"image": "x"}, "outputs": {"parameters": [{"name": "p", "valueFrom": {"path": "{{work}}/none"}}]}}"#,
    );
    let (_, wait) = pod.run("true");
    assert_eq!(wait.status.code(), Some(64));
    let log = pod.termination_log();
    assert!(
        log.contains("\"p\""),
        "termination log names the parameter: {log}"
    );
    assert!(pod.report()["message"].as_str().unwrap().contains("\"p\""));
}

#[test]
fn volume_parameters_use_the_mirror_and_are_not_staged() {
    let pod = Pod::new(
        r#"{"container": {"image": "x", "volumeMounts": [{"name": "o", "mountPath": "{{work}}/outer"}, {"name": "i", "mountPath": "{{work}}/outer/inner"}]},
        "outputs": {"parameters": [{"name": "d", "valueFrom": {"path": "{{work}}/outer/D"}}, {"name": "b", "valueFrom": {"path": "{{work}}/outer/inner/B"}}]}}"#,
    );
    let work = pod.work();
    pod.mount(&work.join("outer"));
    // the inner volume is mounted below the outer one
    pod.mount(&work.join("outer/inner"));
    let mirror_inner = pod
        .root()
        .join("mainctrfs")
        .join(work.strip_prefix("/").unwrap())
        .join("outer/inner");
    assert!(mirror_inner.exists());
    let (_, wait) = pod.run(&format!(
        "echo dd > {w}/outer/D; echo bb > {w}/outer/inner/B",
        w = work.display()
    ));
    assert_success(&wait);
    let r = pod.report();
    assert_eq!(param(&r, "d").as_deref(), Some("dd"));
    assert_eq!(param(&r, "b").as_deref(), Some("bb"));
    assert!(
        !pod.var_run_argo().join("outputs/parameters").exists(),
        "volume outputs are never staged"
    );
}

#[test]
fn base_layer_artifacts_file_dir_none_and_trailing_slash() {
    let pod = Pod::new(&format!(
        r#"{{"container": {{"image": "x"}}, {ARCHIVE},
        "outputs": {{"artifacts": [
          {{"name": "file", "path": "{{{{work}}}}/f.txt"}},
          {{"name": "dir", "path": "{{{{work}}}}/d/"}},
          {{"name": "raw", "path": "{{{{work}}}}/f.txt", "archive": {{"none": {{}}}}}},
          {{"name": "rawdir", "path": "{{{{work}}}}/d", "archive": {{"none": {{}}}}}},
          {{"name": "opt", "path": "{{{{work}}}}/nope", "optional": true}}]}}}}"#
    ));
    let w = pod.work();
    let (_, wait) = pod.run(&format!(
        "echo content > {w}/f.txt; mkdir -p {w}/d/sub; echo x > {w}/d/sub/x; : > {w}/d/empty",
        w = w.display()
    ));
    assert_success(&wait);
    let r = pod.report();
    let repo = pod.root().join("repo/wf/pod-1");
    assert_eq!(tar_list(&repo.join("file.tgz")), vec!["f.txt"]);
    let dir_entries = tar_list(&repo.join("dir.tgz"));
    assert!(dir_entries.iter().all(|e| e.starts_with("d/")), "{dir_entries:?}");
    assert!(dir_entries.contains(&"d/sub/x".to_string()) && dir_entries.contains(&"d/empty".to_string()));
    assert_eq!(
        std::fs::read_to_string(repo.join("f.txt")).unwrap(),
        "content\n",
        "none keeps the basename"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("d/sub/x")).unwrap(),
        "x\n",
        "a directory is uploaded as a directory"
    );
    assert!(artifact(&r, "opt").is_none(), "missing optional artifact skipped");
    assert_eq!(
        artifact(&r, "file").unwrap()["local"]["path"],
        repo.join("file.tgz").display().to_string()
    );
}

#[test]
fn required_artifact_missing_fails() {
    let pod = Pod::new(&format!(
        r#"{{"container": {{"image": "x"}}, {ARCHIVE}, "outputs": {{"artifacts": [{{"name": "req", "path": "{{{{work}}}}/nope"}}]}}}}"#
    ));
    let (_, wait) = pod.run("true");
    assert_eq!(wait.status.code(), Some(64));
    assert!(
        pod.termination_log().contains("\"req\""),
        "{}",
        pod.termination_log()
    );
}

#[test]
fn volume_artifact_respects_compression_level() {
    let pod = Pod::new(&format!(
        r#"{{"container": {{"image": "x", "volumeMounts": [{{"name": "v", "mountPath": "{{{{work}}}}/vol"}}]}}, {ARCHIVE},
        "outputs": {{"artifacts": [{{"name": "l0", "path": "{{{{work}}}}/vol/big", "archive": {{"tar": {{"compressionLevel": 0}}}}}},
                                  {{"name": "l9", "path": "{{{{work}}}}/vol/big", "archive": {{"tar": {{"compressionLevel": 9}}}}}}]}}}}"#
    ));
    let w = pod.work();
    pod.mount(&w.join("vol"));
    let (_, wait) = pod.run(&format!("yes argo | head -c 1000000 > {}/vol/big", w.display()));
    assert_success(&wait);
    let repo = pod.root().join("repo/wf/pod-1");
    let l0 = std::fs::metadata(repo.join("l0.tgz")).unwrap().len();
    let l9 = std::fs::metadata(repo.join("l9.tgz")).unwrap().len();
    assert!(
        l0 > 1_000_000 && l9 < 100_000,
        "level 0 stores ({l0} bytes), level 9 compresses ({l9} bytes)"
    );
    assert_eq!(tar_list(&repo.join("l9.tgz")), vec!["big"]);
}

#[test]
fn volume_artifact_is_tar_zst_when_the_codec_is_zstd() {
    let pod = Pod::new(&format!(
        r#"{{"container": {{"image": "x", "volumeMounts": [{{"name": "v", "mountPath": "{{{{work}}}}/vol"}}]}}, {ARCHIVE},
        "outputs": {{"artifacts": [{{"name": "z", "path": "{{{{work}}}}/vol/big"}}]}}}}"#
    ))
    .with_env("ARGOEXEC_ARTIFACT_CODEC", "zstd");
    let w = pod.work();
    pod.mount(&w.join("vol"));
    let (_, wait) = pod.run(&format!("yes argo | head -c 1000000 > {}/vol/big", w.display()));
    assert_success(&wait);
    let repo = pod.root().join("repo/wf/pod-1");
    let z = repo.join("z.tar.zst");
    let bytes = std::fs::read(&z).unwrap_or_else(|e| panic!("{}: {e}", z.display()));
    assert!(
        bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) && bytes.len() < 100_000,
        "{} bytes",
        bytes.len()
    );
    assert_eq!(
        argoexec_archive::detect_prefix(&bytes),
        argoexec_archive::Format::TarZst
    );
    assert_eq!(
        pod.report()["outputs"]["artifacts"][0]["local"]["path"]
            .as_str()
            .map(|p| p.ends_with("z.tar.zst")),
        Some(true),
        "{}",
        pod.report()
    );
}

#[test]
fn output_on_input_path_comes_from_the_input() {
    let pod = Pod::new(&format!(
        r#"{{"container": {{"image": "x"}}, {ARCHIVE},
        "inputs": {{"artifacts": [{{"name": "in", "path": "{{{{work}}}}/file", "raw": {{"data": "hi"}}}}]}},
        "outputs": {{"artifacts": [{{"name": "out", "path": "{{{{work}}}}/file", "archive": {{"none": {{}}}}}}]}}}}"#
    ));
    let init = pod.init();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let loaded = pod.root().join("argo/inputs/artifacts/in");
    assert_eq!(std::fs::read_to_string(&loaded).unwrap(), "hi");
    // main mounts the input by subPath and wait sees it through the /mainctrfs mirror;
    // hard links stand in for those bind mounts
    let mirror = pod
        .root()
        .join("mainctrfs")
        .join(pod.work().strip_prefix("/").unwrap())
        .join("file");
    std::fs::create_dir_all(mirror.parent().unwrap()).unwrap();
    std::fs::hard_link(&loaded, &mirror).unwrap();
    let wait = pod.spawn_wait();
    let main = pod.spawn_container("main", "true").wait_with_output().unwrap();
    assert_eq!(main.status.code(), Some(0));
    let wait = wait_with_timeout(wait, Duration::from_secs(30));
    assert_success(&wait);
    assert_eq!(
        std::fs::read_to_string(pod.root().join("repo/wf/pod-1/file")).unwrap(),
        "hi"
    );
}

#[test]
fn script_result_stdout_only_and_log_archive() {
    let pod = Pod::new(
        r#"{"script": {"image": "x", "command": ["sh"], "source": "echo hi"},
        "archiveLocation": {"archiveLogs": true, "local": {"path": "{{repo}}/wf/pod-1"}}}"#,
    )
    .with_env("ARGO_INCLUDE_SCRIPT_OUTPUT", "true");
    let (_, wait) = pod.run("echo result-line; echo noise >&2");
    assert_success(&wait);
    let r = pod.report();
    assert_eq!(
        r["outputs"]["result"], "result-line",
        "stdout only, one newline trimmed"
    );
    assert_eq!(
        std::fs::read_to_string(pod.root().join("argo/staging/script")).unwrap(),
        "echo hi"
    );
    let log = std::fs::read_to_string(pod.root().join("repo/wf/pod-1/main.log")).unwrap();
    assert!(log.contains("result-line") && log.contains("noise"), "{log}");
    assert!(artifact(&r, "main-logs").is_some());
}

#[test]
fn result_not_captured_unless_asked() {
    let pod = Pod::new(r#"{"container": {"image": "x"}}"#);
    let (_, wait) = pod.run("echo hi");
    assert_eq!(wait.status.code(), Some(0));
    assert!(pod.report()["outputs"].get("result").is_none());
}

#[test]
fn large_result_keeps_the_last_256k() {
    let pod = Pod::new(r#"{"container": {"image": "x"}}"#).with_env("ARGO_INCLUDE_SCRIPT_OUTPUT", "true");
    let (_, wait) = pod.run("yes 0123456789abcdef | head -c 1048576; printf END");
    assert_eq!(wait.status.code(), Some(0));
    let result = pod.report()["outputs"]["result"].as_str().unwrap().to_string();
    assert_eq!(result.len(), 256 * 1024);
    assert!(result.ends_with("END"));
}

#[test]
fn sidecar_is_killed_after_main() {
    let pod = Pod::new(r#"{"container": {"image": "x"}, "sidecars": [{"name": "side", "image": "x"}]}"#)
        .with_env("ARGO_TERMINATION_GRACE_PERIOD_SECONDS", "5");
    pod.init();
    let side = pod.spawn_container("side", "trap 'exit 0' TERM; while :; do sleep 0.01; done");
    assert!(eventually(Duration::from_secs(10), || pod
        .var_run_argo()
        .join("ctr/side")
        .is_dir()));
    let wait = pod.spawn_wait();
    pod.spawn_container("main", "true").wait_with_output().unwrap();
    let wait = wait_with_timeout(wait, Duration::from_secs(30));
    assert_success(&wait);
    let side = wait_with_timeout(side, Duration::from_secs(10));
    assert_eq!(side.status.code(), Some(0), "the sidecar's TERM trap ran");
}

#[test]
fn sigterm_during_wait_still_reports_outputs() {
    let pod = Pod::new(r#"{"container": {"image": "x"}, "outputs": {"parameters": [{"name": "p", "valueFrom": {"path": "{{work}}/p", "default": "d"}}]}}"#)
        .with_env("ARGO_TERMINATION_GRACE_PERIOD_SECONDS", "5");
    pod.init();
    let ready = pod.work().join("ready");
    let main = pod.spawn_container(
        "main",
        &format!(
            "echo v > {w}/p; touch {w}/ready; exec sleep 60",
            w = pod.work().display()
        ),
    );
    let wait = pod.spawn_wait();
    assert!(eventually(Duration::from_secs(10), || ready.exists()));
    // deliver SIGTERM only once wait has its handler installed (SigCgt bit 15)
    assert!(eventually(Duration::from_secs(10), || catches_sigterm(wait.id())));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(wait.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let wait = wait_with_timeout(wait, Duration::from_secs(30));
    let main = wait_with_timeout(main, Duration::from_secs(10));
    assert_eq!(main.status.code(), Some(143));
    assert_success(&wait);
    let r = pod.report();
    assert_eq!(param(&r, "p").as_deref(), Some("v"));
    assert_eq!(r["message"], "Step terminated");
    assert_eq!(r["outputs"]["exitCode"], "143");
}

#[test]
fn deadline_is_enforced_locally() {
    let deadline = std::time::SystemTime::now() + Duration::from_secs(1);
    let secs = deadline.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let stamp = rfc3339(secs);
    let pod = Pod::new(r#"{"container": {"image": "x"}}"#).with_env("ARGO_DEADLINE", &stamp);
    let (main, wait) = pod.run("exec sleep 60");
    assert_eq!(main.status.code(), Some(143));
    assert_eq!(wait.status.code(), Some(0));
    assert_eq!(pod.report()["message"], "Step exceeded its deadline");
    assert_eq!(pod.termination_log(), "Step exceeded its deadline");
}

#[test]
fn short_lived_main_loses_no_outputs_200_runs() {
    let pod = Pod::new(&format!(
        r#"{{"container": {{"image": "x"}}, {ARCHIVE},
        "outputs": {{"parameters": [{{"name": "p", "valueFrom": {{"path": "{{{{work}}}}/p"}}}}],
                    "artifacts": [{{"name": "a", "path": "{{{{work}}}}/p"}}]}}}}"#
    ));
    let init = pod.init();
    assert!(init.status.success());
    let mut lost = 0;
    for i in 0..200 {
        let ctr = pod.var_run_argo().join("ctr");
        let _ = std::fs::remove_dir_all(&ctr);
        let _ = std::fs::remove_dir_all(pod.var_run_argo().join("outputs"));
        let wait = pod.spawn_wait();
        pod.spawn_container("main", &format!("echo {i} > {}/p", pod.work().display()))
            .wait()
            .unwrap();
        let out = wait_with_timeout(wait, Duration::from_secs(30));
        let r = pod.report();
        if !out.status.success() || param(&r, "p") != Some(i.to_string()) || artifact(&r, "a").is_none() {
            lost += 1;
        }
    }
    assert_eq!(lost, 0, "runs with lost outputs");
}

/// Whether process `pid` has a handler for SIGTERM (from /proc/<pid>/status `SigCgt`).
fn catches_sigterm(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("SigCgt:"))
                .map(|l| l[7..].trim().to_string())
        })
        .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
        .is_some_and(|mask| mask & (1 << (15 - 1)) != 0)
}

/// Format Unix seconds as RFC 3339 UTC.
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    // civil from days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[test]
fn rfc3339_helper() {
    assert_eq!(rfc3339(1_796_212_800), "2026-12-02T12:00:00Z");
    let _ = Path::new("/");
}

#[test]
fn volume_symlinks_out_of_the_mirror_are_never_followed_in_wait() {
    // The links point at files of the host, which plays the wait container's filesystem
    // here: through the mirror they resolve among main's volumes only, so none is read.
    let pod = Pod::new(&format!(
        r#"{{"container": {{"image": "x", "volumeMounts": [{{"name": "v", "mountPath": "{{{{work}}}}/vol"}}]}}, {ARCHIVE},
        "outputs": {{"parameters": [
            {{"name": "abs", "valueFrom": {{"path": "{{{{work}}}}/vol/abs", "default": "none"}}}},
            {{"name": "up", "valueFrom": {{"path": "{{{{work}}}}/vol/up", "default": "none"}}}},
            {{"name": "in", "valueFrom": {{"path": "{{{{work}}}}/vol/in"}}}}],
          "artifacts": [{{"name": "etc", "path": "{{{{work}}}}/vol/etc/passwd", "optional": true}},
                        {{"name": "raw", "path": "{{{{work}}}}/vol/abs", "optional": true, "archive": {{"none": {{}}}}}}]}}}}"#
    ));
    let w = pod.work();
    pod.mount(&w.join("vol"));
    let climb = "../".repeat(w.components().count() + 2);
    let (_, wait) = pod.run(&format!(
        "cd {v} && echo real > real && ln -s {v}/real in && ln -s /etc/passwd abs && ln -s {climb}etc/passwd up && ln -s /etc etc",
        v = w.join("vol").display()
    ));
    assert_success(&wait);
    let r = pod.report();
    assert_eq!(param(&r, "abs").as_deref(), Some("none"));
    assert_eq!(param(&r, "up").as_deref(), Some("none"));
    // An absolute link to main's own volume path resolves inside the mirror.
    assert_eq!(param(&r, "in").as_deref(), Some("real"));
    let repo = pod.root().join("repo/wf/pod-1");
    assert!(
        !repo.join("etc.tgz").exists() && !repo.join("abs").exists(),
        "a host file was uploaded"
    );
}
