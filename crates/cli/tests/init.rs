//! `argoexec init` input artifacts (argo-executors.md §7.3 item 6) through the real binary
//! and the local-filesystem driver.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

#[test]
fn input_artifacts_unpack_mode_volume_and_optional() {
    let pod = Pod::new(
        r#"{"container": {"image": "x", "volumeMounts": [{"name": "v", "mountPath": "{{work}}/vol"}]},
        "inputs": {"artifacts": [
          {"name": "single", "path": "/in/single", "local": {"path": "{{repo}}/single.tgz"}, "mode": 384},
          {"name": "multi", "path": "/in/multi", "local": {"path": "{{repo}}/multi.tgz"}, "mode": 493, "recurseMode": true},
          {"name": "zipped", "path": "/in/zipped", "local": {"path": "{{repo}}/z.zip"}, "archive": {"zip": {}}},
          {"name": "onvol", "path": "{{work}}/vol/data.txt", "local": {"path": "{{repo}}/plain.txt"}},
          {"name": "gone", "path": "/in/gone", "optional": true, "local": {"path": "{{repo}}/missing"}},
          {"name": "unsupplied", "path": "/in/unsupplied", "optional": true}]}}"#,
    );
    let repo = pod.root().join("repo");
    let src = pod.root().join("src");
    std::fs::create_dir_all(src.join("multi")).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(src.join("one.txt"), "one").unwrap();
    std::fs::write(src.join("multi/a"), "a").unwrap();
    std::fs::write(src.join("multi/b"), "b").unwrap();
    std::fs::write(repo.join("plain.txt"), "plain").unwrap();
    let tar = |args: &str| assert!(Command::new("sh").arg("-c").arg(args).status().unwrap().success());
    tar(&format!(
        "tar -C {} -czf {}/single.tgz one.txt",
        src.display(),
        repo.display()
    ));
    tar(&format!(
        "tar -C {}/multi -czf {}/multi.tgz a b",
        src.display(),
        repo.display()
    ));
    argoexec_archive::write_zip(&src.join("one.txt"), &repo.join("z.zip")).unwrap();
    pod.mount(&pod.work().join("vol"));

    let out = pod.init();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let inputs = pod.root().join("argo/inputs/artifacts");
    assert_eq!(
        std::fs::read_to_string(inputs.join("single")).unwrap(),
        "one",
        "single entry renamed to the path"
    );
    assert_eq!(
        std::fs::metadata(inputs.join("single"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::read_to_string(inputs.join("multi/b")).unwrap(),
        "b",
        "several entries make a directory"
    );
    assert_eq!(
        std::fs::metadata(inputs.join("multi/a"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755,
        "recurseMode"
    );
    assert_eq!(std::fs::read_to_string(inputs.join("zipped")).unwrap(), "one");
    assert_eq!(
        std::fs::read_to_string(pod.work().join("vol/data.txt")).unwrap(),
        "plain",
        "written through /mainctrfs"
    );
    assert!(!inputs.join("onvol").exists());
    assert!(!inputs.join("gone").exists() && !inputs.join("unsupplied").exists());
}

#[test]
fn traversal_in_an_input_archive_is_refused() {
    let pod = Pod::new(
        r#"{"inputs": {"artifacts": [{"name": "evil", "path": "/in/evil", "local": {"path": "{{repo}}/evil.tar"}}]}}"#,
    );
    let repo = pod.root().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let mut h = tar::Header::new_old();
    h.as_old_mut().name[..9].copy_from_slice(b"../../../");
    h.as_old_mut().name[9..13].copy_from_slice(b"pwnd");
    h.set_size(1);
    h.set_mode(0o644);
    h.set_cksum();
    let mut b = tar::Builder::new(std::fs::File::create(repo.join("evil.tar")).unwrap());
    b.append(&h, &b"x"[..]).unwrap();
    b.into_inner().unwrap();
    let out = pod.init();
    assert_eq!(out.status.code(), Some(64));
    assert!(
        pod.termination_log().contains("evil"),
        "{}",
        pod.termination_log()
    );
    assert!(!pod.root().join("argo/pwnd").exists() && !pod.root().join("pwnd").exists());
}
