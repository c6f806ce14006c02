//! Every shipped example, run with `argoexec run` on the local node with each executor
//! (emissary, docker and pns), checking phase, exit code, outputs and that nothing is left behind.

mod run_support;

use run_support::{EXECUTORS, STDOUT_ONLY, docker_available, example, only, run_file, tgz_entries};

fn each(name: &str, check: impl Fn(&str, &run_support::RunResult)) {
    if !docker_available() {
        return;
    }
    for ex in only(&EXECUTORS) {
        let r = run_file(&example(name), ex, &[], None);
        check(ex, &r);
    }
}

#[test]
fn hello_world() {
    each("hello-world.yaml", |ex, r| {
        assert_eq!((r.code, r.phase()), (0, "Succeeded"), "{ex}: {}", r.dump());
        assert_eq!(r.result(), Some("hello world"), "{ex}");
        assert_eq!(r.json["exitCode"], 0, "{ex}");
    });
}

#[test]
fn parameters_resolve_workflow_arguments() {
    each("parameters.yaml", |ex, r| {
        let out = r.result().unwrap_or_default();
        assert!(out.starts_with("hello from parameters-"), "{ex}: {}", r.dump());
    });
}

#[test]
fn script_result_is_stdout_only_where_the_backend_can_separate_it() {
    each("script-result.yaml", |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        if STDOUT_ONLY.contains(&ex) {
            assert_eq!(r.result(), Some("42"), "{ex}: stderr must not be in the result");
        } else {
            // pns reads pods/log, which has both streams (documented).
            let result = r.result().unwrap_or_default();
            assert!(
                result.contains("42") && result.contains("this goes to stderr"),
                "{ex}: {result}"
            );
        }
    });
}

#[test]
fn output_parameters_from_base_layer_volume_and_default() {
    each("output-parameter.yaml", |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("base").as_deref(), Some("base-layer"), "{ex}");
        assert_eq!(
            r.param("volume").as_deref(),
            Some("from volume"),
            "{ex}: one trailing newline trimmed"
        );
        assert_eq!(r.param("missing").as_deref(), Some("fallback"), "{ex}");
    });
}

#[test]
fn output_artifacts_file_dir_raw_and_optional() {
    each("output-artifact.yaml", |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let report = tgz_entries(&r.artifact("report").expect("report"));
        assert_eq!(report.len(), 1, "{ex}: one top-level entry: {report:?}");
        assert_eq!(report[0].0, "report.txt", "{ex}");
        assert_eq!(report[0].1, b"report body\n", "{ex}");
        let dir = tgz_entries(&r.artifact("dir").expect("dir"));
        let names: Vec<&str> = dir.iter().map(|(n, _)| n.trim_end_matches('/')).collect();
        assert!(
            names.iter().all(|n| *n == "out" || n.starts_with("out/")),
            "{ex}: {names:?}"
        );
        let b = dir
            .iter()
            .find(|(n, _)| n == "out/sub/b.txt")
            .expect("out/sub/b.txt");
        assert_eq!(b.1, b"b\n", "{ex}");
        let raw = r.artifact("raw").expect("raw");
        assert_eq!(raw.file_name().unwrap(), "raw.txt", "{ex}");
        assert_eq!(std::fs::read(&raw).unwrap(), b"raw bytes\n", "{ex}");
        assert!(
            r.artifact("optional-missing").is_none(),
            "{ex}: optional missing artifact is skipped"
        );
    });
}

#[test]
fn input_artifact_is_placed_with_mode() {
    each("input-artifact.yaml", |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.result(), Some("hello from an input artifact\n444"), "{ex}");
    });
}

#[test]
fn sidecar_is_stopped_and_does_not_fail_the_node() {
    each("sidecar.yaml", |ex, r| {
        assert_eq!((r.code, r.phase()), (0, "Succeeded"), "{ex}: {}", r.dump());
        assert_eq!(r.result(), Some("serving"), "{ex}");
    });
}

#[test]
fn exit_code_failure_still_collects_outputs() {
    each("exit-code.yaml", |ex, r| {
        assert_eq!((r.code, r.phase()), (1, "Failed"), "{ex}: {}", r.dump());
        assert_eq!(r.json["exitCode"], 3, "{ex}");
        assert!(r.message().contains("(exit code 3)"), "{ex}: {}", r.message());
        assert_eq!(r.param("partial").as_deref(), Some("partial"), "{ex}");
        assert_eq!(r.result(), Some("about to fail"), "{ex}");
    });
}

#[test]
fn container_set_runs_in_dependency_order() {
    each("container-set.yaml", |ex, r| {
        if ex != "emissary" {
            assert_eq!((r.code, r.phase()), (2, "Error"), "{ex}: {}", r.dump());
            assert!(
                r.message().contains("containerSet needs the emissary"),
                "{ex}: {}",
                r.dump()
            );
            return;
        }
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let log = r.param("log").unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.first(), Some(&"a"), "{ex}: a runs first: {log:?}");
        let mut rest = lines[1..].to_vec();
        rest.sort_unstable();
        assert_eq!(rest, ["b", "c"], "{ex}: {log:?}");
        assert_eq!(r.result(), Some("a b c "), "{ex}: main ran after b and c");
    });
}
