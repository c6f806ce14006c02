//! `argoexec render`: the pod YAML per executor, and clear errors with exit 2.

mod common;

use std::process::Command;

fn render(args: &[&str]) -> (i32, String, String) {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let out = Command::new(common::argoexec())
        .arg("render")
        .args(args)
        .current_dir(examples)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn renders_each_executor() {
    for k in ["emissary", "docker", "kubelet", "k8sapi", "pns"] {
        let (code, yaml, err) = render(&["hello-world.yaml", "--executor", k]);
        assert_eq!(code, 0, "{k}: {err}");
        assert!(
            yaml.contains("name: wait") && yaml.contains("name: main") && yaml.contains("var-run-argo"),
            "{k}"
        );
        assert_eq!(
            yaml.contains("/var/run/argo/argoexec"),
            k == "emissary",
            "{k}: only emissary wraps the command"
        );
        assert_eq!(yaml.contains("docker-sock"), k == "docker", "{k}");
        assert_eq!(yaml.contains("shareProcessNamespace: true"), k == "pns", "{k}");
        assert_eq!(yaml.contains("status.hostIP"), k == "kubelet", "{k}");
    }
}

#[test]
fn auto_explains_its_choice() {
    let (code, yaml, err) = render(&["hello-world.yaml", "--executor", "auto"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        yaml.contains("executor-reason") && yaml.contains("every command is known"),
        "{yaml}"
    );
    assert!(yaml.contains("/var/run/argo/argoexec"), "auto picked emissary");
}

#[test]
fn bad_input_exits_2() {
    let (code, _, err) = render(&["missing.yaml"]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.yaml"), "{err}");
    let (code, _, err) = render(&["hello-world.yaml", "--template", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("nope") && err.contains("whalesay"), "{err}");
    let (code, _, err) = render(&["script-outputs.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("Workflow"), "{err}");
}

#[test]
fn parameters_are_bound_and_substituted() {
    let (code, yaml, err) = render(&["parameters.yaml", "-p", "message=bonjour"]);
    assert_eq!(code, 0, "{err}");
    assert!(yaml.contains("bonjour from parameters-local"), "{yaml}");
    let (code, yaml, _) = render(&["parameters.yaml"]);
    assert_eq!(code, 0);
    assert!(yaml.contains("hello from parameters-local"));
    let (code, _, err) = render(&["parameters.yaml", "-p", "oops"]);
    assert_eq!(code, 2);
    assert!(err.contains("oops"), "{err}");
}

#[test]
fn renders_the_artifact_gc_task_and_pod() {
    let (code, yaml, err) = render(&["output-artifact.yaml", "--artifact-gc"]);
    assert_eq!(code, 0, "{err}");
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&yaml).unwrap();
    assert_eq!(docs.len(), 2, "{yaml}");
    let (task, pod) = (&docs[0], &docs[1]);
    assert_eq!(task["kind"], "WorkflowArtifactGCTask");
    let pod_name = pod["metadata"]["name"].as_str().unwrap();
    assert!(pod_name.starts_with("output-artifact-") && pod_name.contains("-artgc-wfcomp-"));
    assert_eq!(task["metadata"]["name"], format!("{pod_name}-0"));
    let nodes = task["spec"]["artifactsByNode"].as_object().unwrap();
    assert_eq!(nodes.len(), 1);
    let arts = nodes.values().next().unwrap()["artifacts"].as_object().unwrap();
    let mut names: Vec<_> = arts.keys().cloned().collect();
    names.sort();
    assert_eq!(names, ["dir", "optional-missing", "raw", "report"]);
    assert_eq!(pod["spec"]["containers"][0]["args"][0], "artifact");
    assert_eq!(pod["spec"]["containers"][0]["args"][1], "delete");
    assert_eq!(
        pod["metadata"]["ownerReferences"][0]["kind"],
        "WorkflowArtifactGCTask"
    );

    let (code, _, err) = render(&["output-artifact.yaml", "--artifact-gc", "--argo-version", "3.3"]);
    assert_eq!(code, 2);
    assert!(err.contains("v3.3 has no artifact garbage collection"), "{err}");
    let (code, _, err) = render(&["hello-world.yaml", "--artifact-gc"]);
    assert_eq!(code, 2);
    assert!(err.contains("no output artifacts"), "{err}");
}

#[test]
fn renders_the_agent_task_set_and_pod_for_an_http_template() {
    let (code, yaml, err) = render(&["http/http-template.yaml", "-p", "url=http://svc/x"]);
    assert_eq!(code, 0, "{err}");
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&yaml).unwrap();
    assert_eq!(docs[0]["kind"], "WorkflowTaskSet");
    assert_eq!(
        docs[0]["spec"]["tasks"]["http-template-local"]["http"]["url"],
        "http://svc/x"
    );
    let pod = &docs[1];
    assert_eq!(pod["metadata"]["name"], "http-template-local-1340600742-agent");
    assert_eq!(pod["spec"]["restartPolicy"], "OnFailure");
    assert_eq!(pod["spec"]["initContainers"][0]["args"][1], "init");
    assert_eq!(pod["spec"]["containers"][0]["args"][1], "main");
}
