//! Bad output paths end to end (`argoexec run` on the local node): output parameter files
//! that are a directory, a FIFO, not UTF-8 or 10 MiB; output paths with `..`; symlinks out of
//! a volume. Base-layer cases run with emissary, docker and pns; volume cases with every
//! executor (or k8sapi as the kube representative), since they go through the `/mainctrfs`
//! mirror. The rules are docs/hardening.md's.

mod run_support;

use std::time::{Duration, Instant};

use run_support::{ALL_EXECUTORS, EXECUTORS, RunResult, docker_available, only, run_yaml, tgz_entries, wf};

/// A step whose main runs `script` (with a `/work` emptyDir) and outputs `params`.
fn step(name: &str, script: &str, params: &str) -> String {
    wf(
        name,
        &format!(
            "volumes: [{{name: work, emptyDir: {{}}}}]\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: [\"{script}\"]\n  volumeMounts: [{{name: work, mountPath: /work}}]\noutputs:\n  parameters:\n{params}"
        ),
    )
}

fn param(name: &str, path: &str) -> String {
    format!("    - {{name: {name}, valueFrom: {{path: {path}}}}}\n")
}

fn param_default(name: &str, path: &str, default: &str) -> String {
    format!("    - {{name: {name}, valueFrom: {{path: {path}, default: '{default}'}}}}\n")
}

/// `run` the workflow with each executor, checking it ends in time (a FIFO must not hang).
fn each(executors: &[&'static str], yaml: &str, check: impl Fn(&str, &RunResult)) {
    for ex in only(executors) {
        let t = Instant::now();
        let r = run_yaml(yaml, ex, &[]);
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{ex}: took {:?}: {}",
            t.elapsed(),
            r.dump()
        );
        check(ex, &r);
    }
}

/// Executors for one location: the base layer (emissary, docker, pns) or a volume
/// (those and k8sapi, reading through the mirror).
fn executors(on_volume: bool) -> Vec<&'static str> {
    let mut v = EXECUTORS.to_vec();
    if on_volume {
        v.push("k8sapi");
    }
    v
}

#[test]
fn a_parameter_file_that_is_a_directory_fifo_or_too_large_fails_clearly() {
    if !docker_available() {
        return;
    }
    for dir in ["/tmp", "/work"] {
        let on_volume = dir == "/work";
        for (what, make, needle) in [
            (
                "dir",
                format!("mkdir {dir}/p"),
                format!("{dir}/p is a directory, not a regular file"),
            ),
            (
                "fifo",
                format!("mkfifo {dir}/p"),
                format!("{dir}/p is a FIFO (named pipe)"),
            ),
            (
                "big",
                format!("head -c 10485760 /dev/zero > {dir}/p"),
                format!("{dir}/p is 10485760 bytes, above the 1048576-byte (1 MiB) limit"),
            ),
        ] {
            // A default does not hide a file that exists but cannot be a value.
            let y = step(
                &format!("bad-{what}"),
                &format!("{make}; echo fine > {dir}/q"),
                &(param_default("p", &format!("{dir}/p"), "dflt") + &param("q", &format!("{dir}/q"))),
            );
            each(&executors(on_volume), &y, |ex, r| {
                assert_eq!(r.phase(), "Error", "{ex} {dir} {what}: {}", r.dump());
                assert!(
                    r.message().contains("output parameter \"p\"") && r.message().contains(&needle),
                    "{ex} {dir} {what}: {}",
                    r.dump()
                );
                if what == "big" {
                    assert!(r.message().contains("output artifact"), "{ex}: {}", r.message());
                }
                assert_eq!(r.exit_of("main"), Some(0), "{ex}: main keeps its own exit code");
                assert_eq!(
                    r.param("q").as_deref(),
                    Some("fine"),
                    "{ex} {dir} {what}: {}",
                    r.dump()
                );
            });
        }
    }
}

#[test]
fn a_parameter_file_that_is_not_utf8_keeps_argos_replacement_characters() {
    if !docker_available() {
        return;
    }
    for dir in ["/tmp", "/work"] {
        // 'a', 0xFF, 0xFE, 'b', a truncated 3-byte sequence: one U+FFFD per invalid byte.
        let y = step(
            "nonutf8",
            &format!("printf 'a\\\\377\\\\376b\\\\342\\\\202' > {dir}/p"),
            &param("p", &format!("{dir}/p")),
        );
        each(&executors(dir == "/work"), &y, |ex, r| {
            assert_eq!(r.phase(), "Succeeded", "{ex} {dir}: {}", r.dump());
            assert_eq!(
                r.param("p").as_deref(),
                Some("a\u{FFFD}\u{FFFD}b\u{FFFD}\u{FFFD}"),
                "{ex} {dir}: {}",
                r.dump()
            );
        });
    }
}

#[test]
fn dot_dot_in_an_output_path_reads_mains_file() {
    if !docker_available() {
        return;
    }
    // /etc/marker exists only in main; `..` stays inside main's filesystem.
    let y = wf(
        "dotdot",
        "container: {image: busybox, command: [sh, -c], args: ['echo main-only > /etc/marker']}\noutputs:\n  parameters: [{name: p, valueFrom: {path: /tmp/../etc/marker}}]\n  artifacts: [{name: a, path: /tmp/../../etc/marker}]",
    );
    each(&EXECUTORS, &y, |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("p").as_deref(), Some("main-only"), "{ex}: {}", r.dump());
        let e = tgz_entries(&r.artifact("a").expect("artifact a"));
        assert_eq!(e, vec![("marker".to_string(), b"main-only\n".to_vec())], "{ex}");
    });
    // On a volume: `/work/sub/../v` is `/work/v`, read through the mirror by every executor.
    let y = step(
        "dotdot-vol",
        "mkdir /work/sub; echo right > /work/v; echo wrong > /work/sub/v",
        &param("p", "/work/sub/../v"),
    );
    each(&ALL_EXECUTORS, &y, |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("p").as_deref(), Some("right"), "{ex}: {}", r.dump());
    });
}

#[test]
fn volume_symlinks_out_of_the_volume_never_read_the_wait_containers_files() {
    if !docker_available() {
        return;
    }
    // Each target exists in the wait container (argoexec:dev: /argoexec, the CA bundle) or in
    // neither (/etc/shadow; ../../etc/passwd exists in main's image only, not on a volume):
    // through the mirror, none of them may be read. A link inside the volume still works.
    let script = "echo in-volume > /work/real; ln -s /work/real /work/inside; \
                  ln -s /etc/shadow /work/shadow; ln -s ../../etc/passwd /work/passwd; \
                  ln -s /etc/ssl/certs/ca-certificates.crt /work/ca; ln -s ../../argoexec /work/bin; \
                  mkdir /work/d; ln -s /etc/ssl/certs /work/d/certs";
    let params = param("inside", "/work/inside")
        + &param_default("shadow", "/work/shadow", "none")
        + &param_default("passwd", "/work/passwd", "none")
        + &param_default("ca", "/work/ca", "none")
        + &param_default("bin", "/work/bin", "none");
    let y = step("links", script, &params)
        + "        artifacts:\n          - {name: certs, path: /work/d/certs/ca-certificates.crt, optional: true}\n          - {name: raw, path: /work/ca, optional: true, archive: {none: {}}}\n";
    each(&ALL_EXECUTORS, &y, |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("inside").as_deref(), Some("in-volume"), "{ex}");
        for p in ["shadow", "passwd", "ca", "bin"] {
            assert_eq!(r.param(p).as_deref(), Some("none"), "{ex}: {p}: {}", r.dump());
        }
        assert!(
            r.artifact("certs").is_none(),
            "{ex}: wait's CA bundle uploaded: {}",
            r.dump()
        );
        assert!(
            r.artifact("raw").is_none(),
            "{ex}: wait's CA bundle uploaded: {}",
            r.dump()
        );
    });
    // Without a default the error says where the link leads.
    let y = step(
        "link-err",
        "ln -s /etc/shadow /work/shadow",
        &param("shadow", "/work/shadow"),
    );
    each(&["emissary", "k8sapi"], &y, |ex, r| {
        assert_eq!(r.phase(), "Error", "{ex}: {}", r.dump());
        assert!(
            r.message()
                .contains("/work/shadow is a symbolic link to /etc/shadow, which is not on a volume"),
            "{ex}: {}",
            r.dump()
        );
    });
}

#[test]
fn base_layer_symlinks_resolve_inside_main() {
    if !docker_available() {
        return;
    }
    // The busybox image's /etc/passwd; the wait image (argoexec:dev) has none.
    let y = wf(
        "baselinks",
        "container: {image: busybox, command: [sh, -c], args: ['mkdir -p /tmp/sub; ln -s /etc/passwd /tmp/abs; ln -s ../../etc/passwd /tmp/sub/up']}\noutputs:\n  parameters:\n    - {name: abs, valueFrom: {path: /tmp/abs}}\n    - {name: up, valueFrom: {path: /tmp/sub/up}}",
    );
    each(&EXECUTORS, &y, |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        for p in ["abs", "up"] {
            assert_eq!(
                r.param(p).as_deref(),
                Some("root:x:0:0:root:/root:/bin/sh"),
                "{ex}: {p}: {}",
                r.dump()
            );
        }
    });
}
