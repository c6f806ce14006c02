//! Argo v4.1's init-less pod layout end to end (`initlessPod.enabled` in the config map):
//! no init container, the supervisor prepares the pod and reports, the user containers run
//! the per-pod copy from the executor image mounted as an `image` volume at `/argo-bin`.

mod run_support;

use run_support::{config_map, docker_available, run_yaml, wf};

const INITLESS: &str = "  initlessPod: |\n    enabled: true\n";

fn initless_run(template: &str, name: &str) -> run_support::RunResult {
    let dir = tempfile::tempdir().unwrap();
    let cm = config_map(&dir, INITLESS);
    run_yaml(
        &wf(name, template),
        "emissary",
        &["--config", &cm, "--argo-version", "4.1"],
    )
}

/// Parameters, the script result, an input artifact linked into main's own file system and
/// saved again from there (an output under an input's path is on main's base layer in this
/// layout), an output artifact, and a sidecar that ends itself.
#[test]
fn a_script_with_inputs_outputs_and_a_sidecar() {
    if !docker_available() {
        return;
    }
    let r = initless_run(
        r#"inputs:
  artifacts:
    - name: greeting
      path: /in/greeting.txt
      raw: {data: "hello from an input"}
outputs:
  parameters:
    - name: seen
      valueFrom: {path: /tmp/seen.txt}
  artifacts:
    - name: again
      path: /in/greeting.txt
      archive: {none: {}}
    - name: made
      path: /tmp/made
sidecars:
  - name: side
    image: busybox:latest
    command: [sh, -c, "sleep 600"]
script:
  image: busybox:latest
  command: [sh]
  source: |
    test -L /in/greeting.txt || { echo "not a link"; exit 3; }
    cat /in/greeting.txt > /tmp/seen.txt
    mkdir -p /tmp/made && echo made > /tmp/made/f.txt
    echo "result line"
"#,
        "initless",
    );
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.result(), Some("result line"));
    assert_eq!(r.param("seen").as_deref(), Some("hello from an input"));
    let again = r.artifact("again").expect("the input saved again");
    assert_eq!(std::fs::read_to_string(again).unwrap(), "hello from an input");
    assert!(r.artifact("made").is_some(), "{}", r.dump());
    let names: Vec<&str> = r.json["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        names.contains(&"supervisor") && !names.contains(&"init") && !names.contains(&"wait"),
        "{names:?}"
    );
    assert_eq!(r.exit_of("supervisor"), Some(0), "{}", r.dump());
}

/// An input that cannot be loaded: the supervisor marks the pod FAILED, main never runs its
/// command (65), and the step fails with the supervisor's message (Argo's ranking).
#[test]
fn a_failed_preparation_fails_the_step_before_main_runs() {
    if !docker_available() {
        return;
    }
    let r = initless_run(
        r#"inputs:
  artifacts:
    - name: unreachable
      path: /in/x
      http: {url: "http://127.0.0.1:9/nothing-listens-here"}
container:
  image: busybox:latest
  command: [sh, -c, "echo main ran; exit 0"]
"#,
        "initless-fail",
    );
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    assert_eq!(r.exit_of("main"), Some(65), "{}", r.dump());
    assert_eq!(r.exit_of("supervisor"), Some(64), "{}", r.dump());
    assert!(
        r.message().starts_with("supervisor: ") && r.message().contains("unreachable"),
        "{}",
        r.dump()
    );
}

/// Every shipped example runs the same in the init-less layout as in the legacy one.
#[test]
fn every_example_runs_initless() {
    if !docker_available() {
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
    let cm_dir = tempfile::tempdir().unwrap();
    let cm = config_map(&cm_dir, INITLESS);
    for name in names {
        let r = run_support::run_file(
            &run_support::example(&name),
            "emissary",
            &["--config", &cm, "--argo-version", "4.1"],
            None,
        );
        let containers = r.json["containers"].to_string();
        assert!(
            !containers.contains("\"wait\"") && !containers.contains("\"init\""),
            "{name}: not the init-less layout: {containers}"
        );
        match name.as_str() {
            "exit-code.yaml" => {
                assert_eq!(r.phase(), "Failed", "{name}: {}", r.dump());
                assert_eq!(r.param("partial").as_deref(), Some("partial"), "{name}");
            }
            _ => assert_eq!(r.phase(), "Succeeded", "{name}: {}", r.dump()),
        }
        if name == "hello-world.yaml" {
            assert_eq!(r.result(), Some("hello world"), "{name}");
        }
        if name == "output-artifact.yaml" {
            assert!(r.artifact("report").is_some(), "{name}: {}", r.dump());
        }
    }
}
