//! Deletion and `list_objects` (Argo's `ListObjects`) against real servers: moto (S3, with
//! signature checking and bucket policies enforced per key in `DeleteObjects`), Azurite
//! (Azure Blob, batch deletes) and the local filesystem. Directories of more objects than
//! one `DeleteObjects` batch (1000) or one listing page (1000), a missing object, a single
//! file, and a delete refused on some keys (the others are still deleted).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use argoexec_artifacts::{AnyDriver, ArtifactDriver, ArtifactError, Settings};
use argoexec_core::PodPaths;
use argoexec_testkit::azurite::{Azurite, KEY};
use argoexec_testkit::moto::Moto;

const BUCKET: &str = "gcbucket";
const LOCKED: &str = "gclocked";

fn moto() -> &'static Moto {
    static M: OnceLock<Moto> = OnceLock::new();
    M.get_or_init(|| Moto::start(&[BUCKET, LOCKED]))
}

fn settings(dir: &Path) -> Arc<Settings> {
    let m = moto();
    let s = dir.join("argo/secret/moto");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("accessKey"), m.access_key()).unwrap();
    std::fs::write(s.join("secretKey"), m.secret_key()).unwrap();
    std::fs::create_dir_all(dir.join("argo/secret/az")).unwrap();
    std::fs::write(dir.join("argo/secret/az/key"), KEY).unwrap();
    Arc::new(Settings {
        paths: PodPaths::new(dir),
        parallelism: 16,
        retries: 1,
        retry_timeout: std::time::Duration::from_secs(2),
        ..Settings::default()
    })
}

fn s3(dir: &Path, bucket: &str, key: &str) -> AnyDriver {
    let loc = serde_json::from_value(serde_json::json!({"s3": {
        "endpoint": moto().host_port(), "insecure": true, "bucket": bucket, "key": key,
        "accessKeySecret": {"name": "moto", "key": "accessKey"},
        "secretKeySecret": {"name": "moto", "key": "secretKey"},
    }}))
    .unwrap();
    AnyDriver::for_location(&loc, &settings(dir)).unwrap()
}

/// A tree of `n` small files, `f00000` … spread over `d0` … `d9`.
fn tree(root: &Path, n: usize) -> Vec<String> {
    let mut rels = Vec::new();
    for i in 0..n {
        let rel = format!("d{}/f{i:05}", i % 10);
        let p = root.join(&rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("{i}")).unwrap();
        rels.push(rel);
    }
    rels.sort();
    rels
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_a_directory_of_2500_objects_lists_in_full_and_is_deleted_whole() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    let rels = tree(&src, 2500);
    let dir = s3(d.path(), BUCKET, "gc/many");
    dir.save(&src).await.unwrap();
    let sibling = s3(d.path(), BUCKET, "gc/many-sibling");
    std::fs::write(d.path().join("one"), "1").unwrap();
    sibling.save(&d.path().join("one")).await.unwrap();

    // Three listing pages (moto pages by 1000), full keys, sorted, nothing from the sibling.
    let keys = dir.list_objects().await.unwrap();
    let want: Vec<String> = rels.iter().map(|r| format!("gc/many/{r}")).collect();
    assert_eq!(keys.len(), 2500);
    assert!(keys == want, "first keys: {:?}", &keys[..3]);
    // A trailing slash or a leading one names the same directory.
    assert_eq!(
        s3(d.path(), BUCKET, "/gc/many/")
            .list_objects()
            .await
            .unwrap()
            .len(),
        2500
    );

    // Three DeleteObjects batches.
    dir.delete().await.unwrap();
    assert!(!dir.exists().await.unwrap());
    assert!(dir.list_objects().await.unwrap_err().is_not_found());
    assert!(sibling.exists().await.unwrap(), "delete stays inside key/");
    // Deleting again (nothing there) is success.
    dir.delete().await.unwrap();
    sibling.delete().await.unwrap();
    assert!(
        !sibling.exists().await.unwrap(),
        "a single object is deleted as itself"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_single_files_and_missing_keys_follow_argo() {
    let d = tempfile::tempdir().unwrap();
    let missing = s3(d.path(), BUCKET, "gc/never/was");
    missing.delete().await.unwrap();
    let e = missing.list_objects().await.unwrap_err();
    assert!(
        e.is_not_found() && e.to_string().contains("s3://gcbucket/gc/never/was"),
        "{e}"
    );

    std::fs::write(d.path().join("f"), "file").unwrap();
    let file = s3(d.path(), BUCKET, "gc/file.tgz");
    file.save(&d.path().join("f")).await.unwrap();
    // Argo's S3 ListObjects lists `key/`: a file key has nothing under it and exists, so `[]`.
    assert_eq!(file.list_objects().await.unwrap(), Vec::<String>::new());
    file.delete().await.unwrap();
    assert!(!file.exists().await.unwrap());
    assert!(file.list_objects().await.unwrap_err().is_not_found());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_an_empty_key_lists_the_whole_bucket_but_never_deletes_it() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f"), "x").unwrap();
    s3(d.path(), LOCKED, "whole/a")
        .save(&d.path().join("f"))
        .await
        .unwrap();
    let all = s3(d.path(), LOCKED, "");
    assert!(all.list_objects().await.unwrap().contains(&"whole/a".to_string()));
    let e = all.delete().await.unwrap_err();
    assert!(matches!(e, ArtifactError::Config { .. }), "{e:?}");
    assert!(s3(d.path(), LOCKED, "whole/a").exists().await.unwrap());
}

/// Put a bucket policy on the locked bucket through boto3 (the moto venv's).
fn deny_deletes_under(prefix: &str) {
    let m = moto();
    let policy = serde_json::json!({"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
        "Resource": format!("arn:aws:s3:::{LOCKED}/{prefix}*")}]});
    let script = "import sys, boto3\n\
c = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], \
aws_secret_access_key=sys.argv[3], region_name='us-east-1')\n\
c.put_bucket_policy(Bucket=sys.argv[4], Policy=sys.argv[5])\n";
    let out = std::process::Command::new(argoexec_testkit::moto::python())
        .args([
            "-c",
            script,
            &m.endpoint(),
            m.access_key(),
            m.secret_key(),
            LOCKED,
        ])
        .arg(policy.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_keys_refused_inside_a_delete_objects_answer_fail_the_delete_but_not_the_others() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    for (rel, n) in [("free", 5), ("locked", 3)] {
        for i in 0..n {
            std::fs::create_dir_all(src.join(rel)).unwrap();
            std::fs::write(src.join(format!("{rel}/{i}")), "x").unwrap();
        }
    }
    let dir = s3(d.path(), LOCKED, "mixed");
    dir.save(&src).await.unwrap();
    deny_deletes_under("mixed/locked/");

    let e = dir.delete().await.unwrap_err();
    let ArtifactError::DeleteFailed {
        failed,
        attempted,
        first,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    // The key itself (no object, deleted as nothing) and its 8 objects were tried.
    assert_eq!((*failed, *attempted), (3, 9), "{e}");
    assert!(matches!(**first, ArtifactError::Denied { .. }), "{first:?}");
    let text = format!("{e}: {first}");
    assert!(text.contains("3 of 9 objects at s3://gclocked/mixed"), "{text}");
    assert!(
        text.contains("mixed/locked/"),
        "the first failure names its key: {text}"
    );
    assert_eq!(
        dir.list_objects().await.unwrap(),
        ["mixed/locked/0", "mixed/locked/1", "mixed/locked/2"],
        "the refused objects remain, the others are gone"
    );
}

fn azurite() -> &'static Azurite {
    static A: OnceLock<Azurite> = OnceLock::new();
    A.get_or_init(|| Azurite::start(&["gcdir"]))
}

fn azure(dir: &Path, blob: &str) -> AnyDriver {
    let loc = serde_json::from_value(serde_json::json!({"azure": {
        "endpoint": azurite().endpoint(), "container": "gcdir", "blob": blob,
        "accountKeySecret": {"name": "az", "key": "key"}}}))
    .unwrap();
    AnyDriver::for_location(&loc, &settings(dir)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_directories_delete_in_batches_and_list_as_argo() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    let rels = tree(&src, 600);
    let dir = azure(d.path(), "out/run");
    dir.save(&src).await.unwrap();
    std::fs::write(d.path().join("f"), "f").unwrap();
    let file = azure(d.path(), "out/run.txt");
    file.save(&d.path().join("f")).await.unwrap();

    let keys = dir.list_objects().await.unwrap();
    let want: Vec<String> = rels.iter().map(|r| format!("out/run/{r}")).collect();
    assert!(keys == want, "{} keys, first {:?}", keys.len(), keys.first());
    // Argo's Azure ListObjects: the blob itself when it exists; nothing is `[]`.
    assert_eq!(file.list_objects().await.unwrap(), ["out/run.txt"]);
    assert_eq!(
        azure(d.path(), "out/none").list_objects().await.unwrap(),
        Vec::<String>::new()
    );

    dir.delete().await.unwrap(); // three batches of at most 256
    assert!(!dir.exists().await.unwrap());
    assert!(file.exists().await.unwrap(), "delete stays inside key/");
    azure(d.path(), "out/none").delete().await.unwrap();
    file.delete().await.unwrap();
    assert!(!file.exists().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_lists_absolute_sorted_paths_and_deletes_trees() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("repo/out");
    let rels = tree(&root, 30);
    std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
    let loc = |p: &Path| {
        let loc = serde_json::from_value(serde_json::json!({"local": {"path": p}})).unwrap();
        AnyDriver::for_location(&loc, &settings(d.path())).unwrap()
    };
    let dir = loc(&root);
    let want: Vec<String> = rels.iter().map(|r| root.join(r).display().to_string()).collect();
    assert_eq!(
        dir.list_objects().await.unwrap(),
        want,
        "regular files only, sorted"
    );
    let one = root.join("d3/f00003");
    assert_eq!(
        loc(&one).list_objects().await.unwrap(),
        [one.display().to_string()]
    );
    let missing = loc(&d.path().join("nope"));
    assert!(missing.list_objects().await.unwrap_err().is_not_found());
    missing.delete().await.unwrap();
    dir.delete().await.unwrap();
    assert!(!root.exists());
    assert!(d.path().join("repo").exists(), "only the artifact is removed");
}

#[tokio::test]
async fn raw_deletes_nothing_and_does_not_list() {
    let loc = serde_json::from_value(serde_json::json!({"raw": {"data": "hi"}})).unwrap();
    let raw = AnyDriver::for_location(&loc, &Arc::new(Settings::default())).unwrap();
    raw.delete().await.unwrap();
    assert!(matches!(
        raw.list_objects().await.unwrap_err(),
        ArtifactError::Unsupported { driver: "raw", .. }
    ));
}
