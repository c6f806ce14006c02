//! Security by default, end to end on real pods: no service-account token or secret value
//! in any log (every container's and `run`'s own, at debug level), the `/var/run/argo`
//! modes of argo-executors.md §3.5 as the user's container sees them, and non-root pods
//! with an arbitrary UID on every backend that supports them (docker's wait needs root for
//! docker.sock, as in Argo: it must fail with an error that says so). TLS verification
//! and least RBAC per backend are in `run_kube_backends.rs`, and their x509 and 403
//! messages in `crates/kube` and `crates/node-server`.

mod run_support;

use argoexec_testkit::moto::Moto;
use run_support::{ALL_EXECUTORS, docker_available, example, only, run_file_env, run_yaml, wf};

fn read_dir_text(dir: &std::path::Path) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        all.push_str(&String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()));
    }
    all
}

#[test]
fn tokens_and_secret_values_never_reach_any_log_at_debug_level() {
    if !docker_available() {
        return;
    }
    let m = Moto::start(&["sec"]);
    let endpoint = m.host_port();
    let creds = [
        ("AWS_ACCESS_KEY_ID", m.access_key()),
        ("AWS_SECRET_ACCESS_KEY", m.secret_key()),
    ];
    for ex in only(&ALL_EXECUTORS) {
        let logs = tempfile::tempdir().unwrap();
        let dir = logs.path().to_str().unwrap();
        let r = run_file_env(
            &example("volume-outputs.yaml"),
            ex,
            &[
                "--loglevel",
                "debug",
                "--executor-loglevel",
                "debug",
                "--logs",
                dir,
                "--artifacts",
                "s3://sec/logs",
                "--s3-endpoint",
                &endpoint,
                "--s3-insecure",
            ],
            None,
            &creds,
        );
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let text = read_dir_text(logs.path()) + &r.stderr;
        // The control: wait really logged at debug level, and into these files.
        let wait = std::fs::read_to_string(logs.path().join("wait.log")).unwrap_or_default();
        assert!(
            wait.contains("DEBUG"),
            "{ex}: no debug line in wait's log:\n{wait}"
        );
        // Every token the node issues is a JWT (`eyJ…`): none may appear anywhere.
        assert!(!text.contains("eyJ"), "{ex}: a token in a log:\n{text}");
        assert!(
            !text.contains(m.secret_key()),
            "{ex}: the S3 secret key in a log:\n{text}"
        );
    }
}

#[test]
fn var_run_argo_has_the_documented_modes() {
    if !docker_available() {
        return;
    }
    // The user's container (running as a non-root user) sees the files init and the
    // wrapper made: argoexec 0555, template 0444, its control directory 0777.
    let y = wf(
        "modes",
        "securityContext: {runAsUser: 4242}\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['stat -c %a /var/run/argo/argoexec /var/run/argo/template /var/run/argo/ctr/main | tr \"\\\\n\" \" \" > /tmp/modes']\noutputs:\n  parameters: [{name: modes, valueFrom: {path: /tmp/modes}}]",
    );
    for ex in only(&["emissary"]) {
        let r = run_yaml(&y, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(
            r.param("modes").as_deref(),
            Some("555 444 777 "),
            "{ex}: {}",
            r.dump()
        );
    }
}

#[test]
fn non_root_pods_with_an_arbitrary_uid() {
    if !docker_available() {
        return;
    }
    let uid = 20_000 + std::process::id() % 40_000;
    let y = wf(
        "nonroot",
        &format!(
            "securityContext: {{runAsNonRoot: true, runAsUser: {uid}}}\nvolumes: [{{name: out, emptyDir: {{}}}}]\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['id -u > /out/uid; sleep 0.3']\n  volumeMounts: [{{name: out, mountPath: /out}}]\noutputs:\n  parameters: [{{name: uid, valueFrom: {{path: /out/uid}}}}]"
        ),
    );
    for ex in only(&ALL_EXECUTORS) {
        let r = run_yaml(&y, ex, &[]);
        if ex == "docker" {
            assert_eq!(r.phase(), "Error", "{ex}: {}", r.dump());
            assert!(
                r.message()
                    .contains(&format!("/var/run/docker.sock is not writable by uid {uid}")),
                "{ex}: {}",
                r.dump()
            );
            continue;
        }
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("uid"), Some(uid.to_string()), "{ex}: {}", r.dump());
    }
}

/// The `-nonroot` executor image (USER 8737, scripts/image.sh) runs a pod under Pod Security
/// "restricted"'s `runAsNonRoot` with no UID for the executor's containers: the node checks
/// the image's user as the kubelet does. The root image is refused with the kubelet's words,
/// the control that shows the check is real.
#[test]
fn the_nonroot_image_runs_under_run_as_non_root() {
    if !docker_available() {
        return;
    }
    let y = wf(
        "restricted",
        "securityContext: {runAsNonRoot: true}\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['id -u > /tmp/uid']\n  securityContext: {runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}\noutputs:\n  parameters: [{name: uid, valueFrom: {path: /tmp/uid}}]",
    );
    for ex in only(&["emissary"]) {
        let r = run_yaml(&y, ex, &["--executor-image", "argoexec:dev-nonroot"]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("uid"), Some("1000".into()), "{ex}: {}", r.dump());
        let root = run_yaml(&y, ex, &["--executor-image", "argoexec:dev"]);
        assert_ne!(root.phase(), "Succeeded", "{ex}: {}", root.dump());
        assert!(
            root.dump()
                .contains("container has runAsNonRoot and image will run as root"),
            "{ex}: {}",
            root.dump()
        );
    }
}
