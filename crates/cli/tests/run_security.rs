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

/// `wf` with every template restricted: `runAsNonRoot` on the pod, UID 1000 on each user
/// container (main, script, container-set and sidecars) and nothing on the executor's, whose
/// user is then the image's. Written as JSON, which `run` reads as YAML.
fn restricted(example_yaml: &str) -> String {
    use serde_json::{Value, json};
    // YAML 1.1 octal (`mode: 0444`), as Argo's parser and `run` read it.
    let opts = serde_saphyr::options! { legacy_octal_numbers: true };
    let mut wf: Value = serde_saphyr::from_str_with_options(example_yaml, opts).expect("example parses");
    let as_user = |c: &mut Value| {
        let sc = c
            .as_object_mut()
            .expect("a container")
            .entry("securityContext")
            .or_insert_with(|| json!({}));
        sc["runAsUser"] = json!(1000);
    };
    for t in wf["spec"]["templates"].as_array_mut().expect("templates") {
        t["securityContext"] = json!({"runAsNonRoot": true});
        for key in ["container", "script"] {
            if t.get(key).is_some() {
                as_user(&mut t[key]);
            }
        }
        if let Some(cs) = t
            .pointer_mut("/containerSet/containers")
            .and_then(Value::as_array_mut)
        {
            cs.iter_mut().for_each(as_user);
        }
        if let Some(sc) = t.get_mut("sidecars").and_then(Value::as_array_mut) {
            sc.iter_mut().for_each(as_user);
        }
    }
    wf.to_string()
}

/// Every shipped example on the `-nonroot` image under `runAsNonRoot` (Pod Security
/// "restricted"), with the emissary: the executor's containers run as the image's UID 8737
/// and the users' as 1000, and each example ends as it does as root (exit-code.yaml fails
/// with its exit code; the others succeed with their outputs).
#[test]
fn every_example_runs_on_the_nonroot_image_under_run_as_non_root() {
    if !docker_available() || only(&["emissary"]).is_empty() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        let y = restricted(&std::fs::read_to_string(example(&name)).unwrap());
        let r = run_yaml(&y, "emissary", &["--executor-image", "argoexec:dev-nonroot"]);
        if name == "exit-code.yaml" {
            assert_eq!(r.phase(), "Failed", "{name}: {}", r.dump());
            assert_eq!(
                r.param("partial").as_deref(),
                Some("partial"),
                "{name}: {}",
                r.dump()
            );
            continue;
        }
        assert_eq!(r.phase(), "Succeeded", "{name}: {}", r.dump());
        if name == "hello-world.yaml" {
            assert_eq!(r.result(), Some("hello world"), "{name}");
        }
        if name == "output-parameter.yaml" {
            assert_eq!(r.param("volume").as_deref(), Some("from volume"), "{name}");
        }
        if name == "output-artifact.yaml" {
            assert!(r.artifact("report").is_some(), "{name}: {}", r.dump());
        }
    }
}
