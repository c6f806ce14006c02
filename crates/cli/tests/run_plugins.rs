//! Artifact plugins end to end (Argo v4.0+): the project's own directory plugin
//! (`argoexec-plugin-dir:dev`, UID 8737, `root: /argo/artifact-repository`) serves input and
//! output artifacts and the archived logs, in the legacy layout (an `init-artifact-dir` init
//! container loads, an `artifact-plugin-dir` sidecar saves) and in the init-less one (one
//! sidecar the supervisor drives both ways); and the artifact-GC pod deletes the outputs
//! through its own plugin sidecar.

mod run_support;

use std::os::unix::fs::PermissionsExt;

use run_support::{config_map, docker, docker_available, run_file, wf};

const DRIVERS: &str = "  artifactDrivers: |\n    - {name: dir, image: 'argoexec-plugin-dir:dev'}\n  images: |\n    argoexec-plugin-dir:dev: {entrypoint: [/argoexec-plugin-dir]}\n";

const TEMPLATE: &str = r#"inputs:
  artifacts:
    - name: greeting
      path: /in/greeting.txt
      plugin: {name: dir, configuration: "root: /argo/artifact-repository", key: in/greeting.txt}
    - name: tree
      path: /in/tree
      plugin: {name: dir, configuration: "root: /argo/artifact-repository", key: in/tree}
outputs:
  artifacts:
    - name: packed
      path: /tmp/made
    - name: plain
      path: /tmp/plain.txt
      archive: {none: {}}
archiveLocation:
  archiveLogs: true
  plugin: {name: dir, configuration: "root: /argo/artifact-repository", key: runs/one}
script:
  image: busybox:latest
  command: [sh]
  source: |
    set -e
    cat /in/greeting.txt
    test "$(cat /in/tree/sub/b.txt)" = b
    mkdir -p /tmp/made/copy && cp -r /in/tree/. /tmp/made/copy/
    echo plain > /tmp/plain.txt
    echo "through the plugin"
"#;

/// The repository directory with the inputs in place, writable by the plugin's user.
fn repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::set_permissions(repo.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let tree = repo.path().join("in/tree/sub");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(repo.path().join("in/greeting.txt"), "hello through a plugin\n").unwrap();
    std::fs::write(repo.path().join("in/tree/a.txt"), "a").unwrap();
    std::fs::write(tree.join("b.txt"), "b").unwrap();
    repo
}

fn plugin_image_present() -> bool {
    if !docker_available() {
        return false;
    }
    let ok = std::process::Command::new(docker())
        .args(["image", "inspect", "argoexec-plugin-dir:dev"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "image argoexec-plugin-dir:dev is missing: run `bash scripts/setup.sh`"
    );
    true
}

fn run(extra_config: &str, name: &str, extra: &[&str]) -> (run_support::RunResult, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cm = config_map(&dir, &format!("{DRIVERS}{extra_config}"));
    let path = dir.path().join("wf.yaml");
    std::fs::write(&path, wf(name, TEMPLATE)).unwrap();
    let repo = repository();
    let root = repo.path().to_path_buf();
    let args = [&["--config", cm.as_str(), "--argo-version", "4.1"][..], extra].concat();
    let r = run_file(&path, "emissary", &args, Some(repo));
    (r, root)
}

fn names(r: &run_support::RunResult) -> Vec<String> {
    r.json["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

fn check_saved(r: &run_support::RunResult, root: &std::path::Path) {
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(
        r.result(),
        Some("hello through a plugin\nthrough the plugin"),
        "{}",
        r.dump()
    );
    let plain = root.join("runs/one/plain.txt");
    assert_eq!(
        std::fs::read_to_string(&plain).unwrap_or_default(),
        "plain\n",
        "{}",
        r.dump()
    );
    // The default archive: a gzipped tar of the directory, the input tree inside.
    let packed = std::fs::read(root.join("runs/one/packed.tgz")).expect("packed.tgz saved by the plugin");
    let mut names = Vec::new();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&packed[..]));
    for e in tar.entries().unwrap() {
        names.push(e.unwrap().path().unwrap().display().to_string());
    }
    assert!(names.iter().any(|n| n.ends_with("copy/sub/b.txt")), "{names:?}");
    let logs = std::fs::read_to_string(root.join("runs/one/main.log"))
        .expect("main.log archived through the plugin");
    assert!(logs.contains("hello through a plugin"), "{logs}");
    let art = r.json["outputs"]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "plain")
        .cloned()
        .unwrap();
    assert_eq!(art["plugin"]["name"], "dir", "{art}");
}

#[test]
fn legacy_layout_loads_in_an_init_container_and_saves_from_a_sidecar() {
    if !plugin_image_present() {
        return;
    }
    let (r, root) = run("", "plugins-legacy", &[]);
    check_saved(&r, &root);
    let names = names(&r);
    assert!(
        names.contains(&"init-artifact-dir".to_string())
            && names.contains(&"artifact-plugin-dir".to_string()),
        "{names:?}"
    );
    assert_eq!(r.exit_of("init-artifact-dir"), Some(0), "{}", r.dump());
    // Stopped by wait through its signal file after saving: the plugin's own exit code.
    assert_eq!(r.exit_of("artifact-plugin-dir"), Some(0), "{}", r.dump());
}

#[test]
fn initless_layout_drives_one_sidecar_both_ways() {
    if !plugin_image_present() {
        return;
    }
    let (r, root) = run("  initlessPod: |\n    enabled: true\n", "plugins-initless", &[]);
    check_saved(&r, &root);
    let names = names(&r);
    assert!(
        names.contains(&"supervisor".to_string())
            && names.contains(&"artifact-plugin-dir".to_string())
            && !names.iter().any(|n| n.starts_with("init")),
        "{names:?}"
    );
    assert_eq!(r.exit_of("artifact-plugin-dir"), Some(0), "{}", r.dump());
}

#[test]
fn the_gc_pod_deletes_through_its_own_sidecar() {
    if !plugin_image_present() {
        return;
    }
    let (r, root) = run("", "plugins-gc", &["--artifact-gc"]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    let gc = &r.json["artifactGC"];
    assert_eq!(gc["phase"], "Succeeded", "{}", r.dump());
    let results = gc["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "packed, plain and the logs: {}", r.dump());
    for a in results {
        assert_eq!(a["success"], true, "{a}: {}", r.dump());
    }
    for f in ["plain.txt", "packed.tgz", "main.log"] {
        assert!(
            !root.join("runs/one").join(f).exists(),
            "{f} deleted: {}",
            r.dump()
        );
    }
    // The inputs are not the run's outputs: untouched.
    assert!(root.join("in/greeting.txt").exists());
}

/// A plugin that answers a load with a failure: its init container fails, main never runs,
/// and the step's message names the plugin and the plugin's own words.
#[test]
fn a_refused_load_fails_the_step_with_the_plugins_words() {
    if !plugin_image_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cm = config_map(&dir, DRIVERS);
    let path = dir.path().join("wf.yaml");
    let template = r#"inputs:
  artifacts:
    - name: greeting
      path: /in/greeting.txt
      plugin: {name: dir, configuration: "root: /argo/artifact-repository\nrefuse: [load]", key: in/greeting.txt}
container:
  image: busybox:latest
  command: [sh, -c, "echo should not run"]
"#;
    std::fs::write(&path, wf("plugins-refused", template)).unwrap();
    let r = run_file(
        &path,
        "emissary",
        &["--config", &cm, "--argo-version", "4.1"],
        Some(repository()),
    );
    // An init container's failure is the node's Error, as for init's own (run_bad_input.rs).
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    let m = r.message();
    assert!(
        m.contains("init-artifact-dir") && m.contains("plugin dir load failed") && m.contains("refused"),
        "{m}: {}",
        r.dump()
    );
    assert_eq!(r.exit_of("init-artifact-dir"), Some(64), "{}", r.dump());
    assert!(!r.json.to_string().contains("should not run"), "{}", r.dump());
}
