//! `argoexec run --artifacts s3://…` against moto (signature checking on): output
//! artifacts of every executor land in the bucket (tar.gz streamed, `archive: none`
//! file by file), an input artifact comes back from S3 into main, and wrong credentials fail
//! the step with a clear message.

mod run_support;

use std::sync::{Arc, OnceLock};

use argoexec_artifacts::{AnyDriver, ArtifactDriver, Settings};
use argoexec_core::PodPaths;
use argoexec_testkit::moto::Moto;
use run_support::*;

const BUCKET: &str = "runs";

fn moto() -> &'static Moto {
    static M: OnceLock<Moto> = OnceLock::new();
    M.get_or_init(|| Moto::start(&[BUCKET]))
}

fn creds(m: &Moto) -> [(&str, &str); 2] {
    [
        ("AWS_ACCESS_KEY_ID", m.access_key()),
        ("AWS_SECRET_ACCESS_KEY", m.secret_key()),
    ]
}

/// A driver for `key` in the bucket, reading the credentials from a temp secret mount.
fn object(m: &Moto, key: &str) -> (AnyDriver, tempfile::TempDir) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("argo/secret/c");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("a"), m.access_key()).unwrap();
    std::fs::write(s.join("s"), m.secret_key()).unwrap();
    let loc = serde_json::from_value(serde_json::json!({"s3": {
        "endpoint": m.host_port(), "insecure": true, "bucket": BUCKET, "key": key,
        "accessKeySecret": {"name": "c", "key": "a"}, "secretKeySecret": {"name": "c", "key": "s"}}}))
    .unwrap();
    let settings = Arc::new(Settings {
        paths: PodPaths::new(d.path()),
        ..Settings::default()
    });
    (AnyDriver::for_location(&loc, &settings).unwrap(), d)
}

fn s3_key(r: &RunResult, name: &str) -> String {
    let a = r.json["outputs"]["artifacts"]
        .as_array()
        .and_then(|v| v.iter().find(|a| a["name"] == name))
        .unwrap_or_else(|| panic!("no artifact {name}: {}", r.dump()));
    assert_eq!(a["s3"]["bucket"], BUCKET, "{}", r.dump());
    a["s3"]["key"].as_str().unwrap().to_string()
}

fn run_s3(file: &std::path::Path, ex: &str, prefix: &str, env: &[(&str, &str)]) -> RunResult {
    let m = moto();
    let target = format!("s3://{BUCKET}/{prefix}");
    let endpoint = m.host_port();
    run_file_env(
        file,
        ex,
        &[
            "--artifacts",
            &target,
            "--s3-endpoint",
            &endpoint,
            "--s3-insecure",
        ],
        None,
        env,
    )
}

#[test]
fn outputs_of_every_executor_land_in_s3() {
    if !docker_available() {
        return;
    }
    let m = moto();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for ex in only(&ALL_EXECUTORS) {
        let r = run_s3(
            &example("volume-outputs.yaml"),
            ex,
            &format!("vol-{ex}"),
            &creds(m),
        );
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let key = s3_key(&r, "report");
        assert!(
            key.starts_with(&format!("vol-{ex}/")) && key.ends_with("report.tgz"),
            "{ex}: {key}"
        );
        let (drv, _d) = object(m, &key);
        let back = tempfile::tempdir().unwrap();
        rt.block_on(drv.load(&back.path().join("r.tgz"))).unwrap();
        let entries = tgz_entries(&back.path().join("r.tgz"));
        assert!(
            entries
                .iter()
                .any(|(n, b)| n == "report/data.txt" && b == b"rows\n"),
            "{ex}: {entries:?}"
        );
    }
    for ex in only(&EXECUTORS) {
        let r = run_s3(
            &example("output-artifact.yaml"),
            ex,
            &format!("base-{ex}"),
            &creds(m),
        );
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let (raw, _d) = object(m, &s3_key(&r, "raw"));
        let back = tempfile::tempdir().unwrap();
        rt.block_on(raw.load(&back.path().join("raw"))).unwrap();
        assert_eq!(
            std::fs::read_to_string(back.path().join("raw")).unwrap(),
            "raw bytes\n",
            "{ex}"
        );
    }
}

#[test]
fn inputs_come_from_s3_and_bad_credentials_fail_clearly() {
    if !docker_available() {
        return;
    }
    let m = moto();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A tarball in the bucket, as an earlier step would have left it.
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("data")).unwrap();
    std::fs::write(src.path().join("data/in.txt"), "from s3\n").unwrap();
    let tgz = src.path().join("data.tgz");
    let mut bytes = Vec::new();
    argoexec_archive::write_tar_gz(&src.path().join("data"), &mut bytes, Some(1)).unwrap();
    std::fs::write(&tgz, bytes).unwrap();
    let (drv, _d) = object(m, "inputs/data.tgz");
    rt.block_on(drv.save(&tgz)).unwrap();

    let secret = |k: &str| format!("{{name: argoexec-run-s3, key: {k}}}");
    let y = wf(
        "s3-input",
        &format!(
            "inputs:\n  artifacts:\n    - name: data\n      path: /in/data\n      s3: {{endpoint: '{}', insecure: true, bucket: {BUCKET}, key: inputs/data.tgz, accessKeySecret: {}, secretKeySecret: {}}}\nscript: {{image: busybox, command: [sh], source: 'cat /in/data/in.txt'}}",
            m.host_port(),
            secret("accessKey"),
            secret("secretKey")
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wf.yaml");
    std::fs::write(&file, &y).unwrap();
    for ex in only(&EXECUTORS) {
        let r = run_s3(&file, ex, "in", &creds(m));
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.result(), Some("from s3"), "{ex}: {}", r.dump());
    }
    // An optional input whose object is missing is skipped; a required one is an init error.
    let missing = |optional: bool| {
        wf(
            "s3-missing",
            &format!(
                "inputs:\n  artifacts:\n    - name: data\n      path: /in/data\n      optional: {optional}\n      s3: {{endpoint: '{}', insecure: true, bucket: {BUCKET}, key: inputs/none.tgz, accessKeySecret: {}, secretKeySecret: {}}}\nscript: {{image: busybox, command: [sh], source: '[ -e /in/data/in.txt ] && echo present || echo absent'}}",
                m.host_port(),
                secret("accessKey"),
                secret("secretKey")
            ),
        )
    };
    for (optional, phase) in [(true, "Succeeded"), (false, "Error")] {
        std::fs::write(&file, missing(optional)).unwrap();
        let r = run_s3(&file, "emissary", "in", &creds(m));
        assert_eq!(r.phase(), phase, "optional={optional}: {}", r.dump());
        if optional {
            assert_eq!(r.result(), Some("absent"), "{}", r.dump());
        } else {
            assert!(r.message().contains("not found"), "{}", r.dump());
        }
    }
    std::fs::write(&file, &y).unwrap();
    let bad = [
        ("AWS_ACCESS_KEY_ID", m.access_key()),
        ("AWS_SECRET_ACCESS_KEY", "wrong"),
    ];
    let r = run_s3(&file, "emissary", "in", &bad);
    assert_ne!(r.phase(), "Succeeded", "{}", r.dump());
    assert!(r.message().contains("access denied"), "{}", r.dump());
    assert!(
        !r.dump().contains("wrong\""),
        "the secret never appears: {}",
        r.dump()
    );
}

#[test]
fn the_config_maps_artifact_repository_is_used_with_its_secret() {
    if !docker_available() {
        return;
    }
    let m = moto();
    let dir = tempfile::tempdir().unwrap();
    let creds_dir = dir.path().join("creds");
    std::fs::create_dir_all(&creds_dir).unwrap();
    std::fs::write(creds_dir.join("id"), m.access_key()).unwrap();
    std::fs::write(creds_dir.join("key"), m.secret_key()).unwrap();
    let cm = config_map(
        &dir,
        &format!(
            "  artifactRepository: |\n    s3:\n      bucket: {BUCKET}\n      endpoint: '{}'\n      insecure: true\n      keyFormat: 'cm/{{{{workflow.name}}}}/{{{{pod.name}}}}'\n      accessKeySecret: {{name: repo-creds, key: id}}\n      secretKeySecret: {{name: repo-creds, key: key}}\n",
            m.host_port()
        ),
    );
    let secret = format!("repo-creds={}", creds_dir.display());
    let r = run_file_env(
        &example("volume-outputs.yaml"),
        "emissary",
        &["--artifacts", "-", "--config", &cm, "--secret", &secret],
        None,
        &[],
    );
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    let key = s3_key(&r, "report");
    assert!(
        key.starts_with("cm/volume-outputs-") && key.ends_with("/report.tgz"),
        "{key}"
    );
    let (drv, _d) = object(m, &key);
    let rt = tokio::runtime::Runtime::new().unwrap();
    assert!(rt.block_on(drv.exists()).unwrap(), "{key} is in the bucket");
}

/// Key-only artifacts (issue 16): `s3: {key: …}` inputs and key-less outputs take bucket,
/// endpoint and credentials from the repository in the config map (its Secret mounted at
/// `/argo/secret/<name>/<key>`), logs go to `<key format>/main.log`, and main reads another
/// key of the Secret through `secretKeyRef` — for a v3.5 pod and a v4.1 one.
#[test]
fn key_only_inputs_outputs_and_logs_use_the_repository() {
    if !docker_available() {
        return;
    }
    let m = moto();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("raw.csv"), "a,b\n1,2\n").unwrap();
    let (drv, _d) = object(m, "keyonly/raw.csv");
    rt.block_on(drv.save(&src.path().join("raw.csv"))).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let creds_dir = dir.path().join("creds");
    std::fs::create_dir_all(&creds_dir).unwrap();
    std::fs::write(creds_dir.join("accesskey"), m.access_key()).unwrap();
    std::fs::write(creds_dir.join("secretkey"), m.secret_key()).unwrap();
    std::fs::write(creds_dir.join("password"), "s3cret").unwrap();
    let cm = config_map(
        &dir,
        &format!(
            "  artifactRepository: |\n    archiveLogs: true\n    s3:\n      bucket: {BUCKET}\n      endpoint: '{}'\n      insecure: true\n      keyFormat: 'ko/{{{{workflow.name}}}}/{{{{pod.name}}}}'\n      accessKeySecret: {{name: my-minio-cred, key: accesskey}}\n      secretKeySecret: {{name: my-minio-cred, key: secretkey}}\n",
            m.host_port()
        ),
    );
    let yaml = wf(
        "key-only",
        "inputs:\n  artifacts:\n    - {name: raw, path: /tmp/raw.csv, s3: {key: keyonly/raw.csv}, archive: {none: {}}}\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['cat /tmp/raw.csv; test \"$DB_PASSWORD\" = s3cret && echo password-ok; wc -l < /tmp/raw.csv > /tmp/rows']\n  env:\n    - name: DB_PASSWORD\n      valueFrom: {secretKeyRef: {name: my-minio-cred, key: password}}\noutputs:\n  artifacts:\n    - {name: rows, path: /tmp/rows}\n",
    );
    let file = dir.path().join("wf.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let secret = format!("my-minio-cred={}", creds_dir.display());
    for v in ["3.5", "4.1"] {
        let r = run_file_env(
            &file,
            "emissary",
            &[
                "--artifacts",
                "-",
                "--config",
                &cm,
                "--secret",
                &secret,
                "--argo-version",
                v,
            ],
            None,
            &[],
        );
        assert_eq!(r.phase(), "Succeeded", "{v}: {}", r.dump());
        let key = s3_key(&r, "rows");
        assert!(
            key.starts_with("ko/key-only-") && key.ends_with("/rows.tgz"),
            "{v}: {key}"
        );
        let prefix = key.trim_end_matches("rows.tgz");
        let (rows, _d1) = object(m, &key);
        let back = tempfile::tempdir().unwrap();
        rt.block_on(rows.load(&back.path().join("rows.tgz"))).unwrap();
        let entries = tgz_entries(&back.path().join("rows.tgz"));
        assert!(
            entries.iter().any(|(n, b)| n == "rows" && b.starts_with(b"2")),
            "{v}: {entries:?}"
        );
        let (log, _d2) = object(m, &format!("{prefix}main.log"));
        rt.block_on(log.load(&back.path().join("main.log"))).unwrap();
        let text = std::fs::read_to_string(back.path().join("main.log")).unwrap();
        assert!(
            text.contains("a,b") && text.contains("password-ok"),
            "{v}: {text}"
        );
        assert!(!r.dump().contains("s3cret"), "{v}: the secret never appears");
    }
}
