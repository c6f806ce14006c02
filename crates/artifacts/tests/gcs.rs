//! The GCS driver against fake-gcs-server (`argoexec_testkit::fake_gcs`), through
//! `AnyDriver` with a `serviceAccountKeySecret` (a throwaway RSA key made per run, so
//! `object_store` signs its self-signed JWT for real) and `ARGOEXEC_GCS_BASE_URL`'s setting.
//!
//! The emulator answers every read call of `object_store`'s GCS client (XML `HEAD`, `GET`,
//! ranged `GET`, `DELETE`, bucket listing) but no upload call: a plain XML `PUT` and the XML
//! multipart `POST ?uploads` both get `400 invalid uploadType`. So objects are stored through
//! the emulator's JSON media upload ([`FakeGcs::put`]) and downloads, directories, listing,
//! existence, deletion and NotFound are tested through the driver; uploads are tested only
//! for how their refusal is reported (`uploads_are_refused_by_this_emulator`).

mod common;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use argoexec_artifacts::{AnyDriver, ArtifactDriver, ArtifactError, Loaded, Opened, Settings};
use argoexec_core::PodPaths;
use argoexec_core::template::ArtifactLocation;
use argoexec_testkit::fake_gcs::{FakeGcs, service_account_key};
use futures::TryStreamExt;

const BUCKET: &str = "artifacts";

fn gcs() -> &'static FakeGcs {
    static G: OnceLock<FakeGcs> = OnceLock::new();
    G.get_or_init(|| FakeGcs::start(&[BUCKET]))
}

fn key() -> &'static str {
    static K: OnceLock<String> = OnceLock::new();
    K.get_or_init(service_account_key)
}

/// Settings whose secret mount holds `gcs/serviceAccountKey` = `key_json`.
fn settings(dir: &Path, key_json: &str) -> Arc<Settings> {
    let s = dir.join("argo/secret/gcs");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("serviceAccountKey"), key_json).unwrap();
    Arc::new(Settings {
        paths: PodPaths::new(dir),
        part_size: 5 << 20,
        range_size: 5 << 20,
        parallelism: 4,
        retries: 1,
        retry_timeout: std::time::Duration::from_secs(2),
        gcs_base_url: Some(gcs().base_url()),
        ..Settings::default()
    })
}

fn loc(key: &str) -> ArtifactLocation {
    serde_json::from_value(serde_json::json!({"gcs": {
        "bucket": BUCKET, "key": key,
        "serviceAccountKeySecret": {"name": "gcs", "key": "serviceAccountKey"},
    }}))
    .unwrap()
}

fn driver(dir: &Path, key_path: &str) -> AnyDriver {
    AnyDriver::for_location(&loc(key_path), &settings(dir, key())).unwrap()
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 37 % 251) as u8).collect()
}

async fn streamed(drv: &AnyDriver) -> (Option<u64>, Vec<u8>) {
    let Opened::Stream { size, body } = drv.open().await.unwrap() else {
        panic!("an object opens as a stream")
    };
    let chunks: Vec<bytes::Bytes> = body.try_collect().await.unwrap();
    (size, chunks.concat())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_download_whole_ranged_and_empty() {
    let d = tempfile::tempdir().unwrap();
    // 1000 B and 0 B are one GET each; 12 MiB + 3 is over the 5 MiB range size, so `load`
    // writes parallel ranges in place and `open` delivers ranges in order.
    for (key, len) in [
        ("f/small.bin", 1000),
        ("f/ranged.bin", (12 << 20) + 3),
        ("f/empty", 0),
    ] {
        gcs().put(BUCKET, key, &pattern(len));
        let drv = driver(d.path(), key);
        assert!(drv.exists().await.unwrap(), "{key}");
        assert_eq!(drv.list().await.unwrap(), [""], "{key} is one object");
        let back = d.path().join("back");
        assert_eq!(drv.load(&back).await.unwrap(), Loaded::File(len as u64), "{key}");
        assert!(
            std::fs::read(&back).unwrap() == pattern(len),
            "{key}: content differs"
        );
        let (size, data) = streamed(&drv).await;
        assert_eq!(size, Some(len as u64), "{key}");
        assert!(data == pattern(len), "{key}: streamed content differs");
        std::fs::remove_file(&back).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tarball_directory_streams_down_and_unpacks() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("tree");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    std::fs::write(src.join("a/b/deep.txt"), "deep").unwrap();
    std::fs::write(src.join("big.bin"), pattern(7 << 20)).unwrap();
    std::fs::write(src.join("zero"), "").unwrap();
    // The tarball wait writes (multi-core tar.gz), stored as the object the driver reads.
    let mut tgz = Vec::new();
    argoexec_archive::write_tar_gz(&src, &mut tgz, Some(6)).unwrap();
    gcs().put(BUCKET, "tgz/tree.tgz", &tgz);
    let drv = driver(d.path(), "tgz/tree.tgz");
    // As init does: extracted while it downloads.
    let Opened::Stream { size, body } = drv.open().await.unwrap() else {
        panic!("a tarball opens as a stream")
    };
    assert_eq!(size, Some(tgz.len() as u64));
    let dest = d.path().join("back/tree");
    let spill = d.path().join("back/spill");
    let how = common::unpack_stream(body, &dest, &spill).await;
    assert_eq!(
        how,
        argoexec_archive::Unpacked::Streamed(argoexec_archive::Format::TarGz)
    );
    assert_eq!(
        std::fs::read_to_string(dest.join("a/b/deep.txt")).unwrap(),
        "deep"
    );
    assert!(std::fs::read(dest.join("big.bin")).unwrap() == pattern(7 << 20));
    assert_eq!(std::fs::read(dest.join("zero")).unwrap().len(), 0);
    assert!(!spill.exists(), "streamed, never spilled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unarchived_directory_lists_loads_and_deletes() {
    let d = tempfile::tempdir().unwrap();
    // `archive: none`: one object per file under `key/`; a sibling sharing the key's
    // first characters must stay outside the directory.
    gcs().put(BUCKET, "dir/out/a/b/deep.txt", b"deep");
    gcs().put(BUCKET, "dir/out/top.bin", &pattern(6 << 20));
    gcs().put(BUCKET, "dir/out/zero", b"");
    gcs().put(BUCKET, "dir/outside/other", b"other");
    let drv = driver(d.path(), "dir/out");
    assert!(drv.exists().await.unwrap());
    assert_eq!(drv.list().await.unwrap(), ["a/b/deep.txt", "top.bin", "zero"]);
    assert!(matches!(drv.open().await.unwrap(), Opened::Directory));
    let back = d.path().join("back");
    assert_eq!(drv.load(&back).await.unwrap(), Loaded::Directory(3));
    assert_eq!(
        std::fs::read_to_string(back.join("a/b/deep.txt")).unwrap(),
        "deep"
    );
    assert!(std::fs::read(back.join("top.bin")).unwrap() == pattern(6 << 20));
    assert_eq!(std::fs::read(back.join("zero")).unwrap().len(), 0);
    assert!(!back.join("other").exists() && !back.join("side").exists());

    drv.delete().await.unwrap();
    assert!(!drv.exists().await.unwrap());
    assert!(
        drv.load(&d.path().join("again"))
            .await
            .unwrap_err()
            .is_not_found()
    );
    let sibling = driver(d.path(), "dir/outside/other");
    assert!(sibling.exists().await.unwrap(), "delete stays inside key/");

    // A single object is deleted as itself.
    sibling.delete().await.unwrap();
    assert!(!sibling.exists().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unicode_keys_work() {
    let d = tempfile::tempdir().unwrap();
    let file = "u/ünïcødé dir/naïve file ✓.tgz";
    gcs().put(BUCKET, file, &pattern(4321));
    let drv = driver(d.path(), file);
    let back = d.path().join("f");
    assert_eq!(drv.load(&back).await.unwrap(), Loaded::File(4321));
    assert!(std::fs::read(&back).unwrap() == pattern(4321));

    gcs().put(BUCKET, "u/ünï dir/naïve ✓.txt", b"x");
    gcs().put(BUCKET, "u/ünï dir/日本/語.txt", b"y");
    let dir = driver(d.path(), "u/ünï dir");
    assert_eq!(dir.list().await.unwrap(), ["naïve ✓.txt", "日本/語.txt"]);
    let out = d.path().join("dir");
    assert_eq!(dir.load(&out).await.unwrap(), Loaded::Directory(2));
    assert_eq!(std::fs::read(out.join("日本/語.txt")).unwrap(), b"y");
    dir.delete().await.unwrap();
    assert!(!dir.exists().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_objects_are_not_found() {
    let d = tempfile::tempdir().unwrap();
    let drv = driver(d.path(), "t/does/not/exist");
    let e = drv.load(&d.path().join("x")).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert!(e.to_string().contains("gs://artifacts/t/does/not/exist"), "{e}");
    assert!(!d.path().join("x").exists());
    assert!(drv.open().await.unwrap_err().is_not_found());
    assert!(!drv.exists().await.unwrap());
    assert!(drv.list().await.unwrap_err().is_not_found());
    drv.delete().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_are_refused_by_this_emulator() {
    // fake-gcs-server takes XML PUTs only as signed-URL uploads: object_store's PUT (small
    // files) and its XML multipart initiation (files over one part) both get
    // `400 invalid uploadType`. When this test fails because the upload worked, the emulator
    // has learned the calls: replace this test with upload round trips.
    let d = tempfile::tempdir().unwrap();
    for (key, len, call) in [
        ("up/small", 100, "PUT "),
        ("up/empty", 0, "PUT "),
        ("up/multipart", (11 << 20) + 5, "?uploads"),
    ] {
        let src = d.path().join("src");
        std::fs::write(&src, pattern(len)).unwrap();
        let drv = driver(d.path(), key);
        let e = drv.save(&src).await.unwrap_err();
        assert!(matches!(e, ArtifactError::Remote { .. }), "{key}: {e:?}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("gs://artifacts/{key}")), "{msg}");
        assert!(msg.contains(call), "{key} goes through {call:?}: {msg}");
        assert!(msg.contains("400 Bad Request"), "{key}: {msg}");
        assert!(msg.contains("invalid uploadType"), "{key}: {msg}");
        assert!(!msg.contains("PRIVATE KEY"), "the key never appears: {msg}");
        assert!(!drv.exists().await.unwrap(), "{key}: nothing half-written");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_service_account_key_is_a_config_error() {
    let d = tempfile::tempdir().unwrap();
    for bad in [
        "not json at all".to_string(),
        serde_json::json!({
            "private_key": "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
            "private_key_id": "x", "client_email": "x@example.com",
        })
        .to_string(),
    ] {
        let e = AnyDriver::for_location(&loc("t/k"), &settings(d.path(), &bad)).unwrap_err();
        assert!(matches!(e, ArtifactError::Config { .. }), "{bad}: {e:?}");
        assert!(
            !e.to_string().contains("bm90IGEga2V5"),
            "the key never appears: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_objects_follows_argo_gcs() {
    let d = tempfile::tempdir().unwrap();
    let g = gcs();
    for k in [
        "lo/dir/a",
        "lo/dir/sub/b",
        "lo/dir.txt",
        "lo/file",
        "lo/file/under",
    ] {
        g.put(BUCKET, k, b"x");
    }
    // A directory: full keys under `key/`, sorted; the sibling `lo/dir.txt` is not listed.
    assert_eq!(
        driver(d.path(), "lo/dir").list_objects().await.unwrap(),
        ["lo/dir/a", "lo/dir/sub/b"]
    );
    // An object named exactly the key: Argo's GCS listing answers that key alone.
    assert_eq!(
        driver(d.path(), "lo/file").list_objects().await.unwrap(),
        ["lo/file"]
    );
    // Nothing there: an empty list, not an error (unlike S3).
    assert_eq!(
        driver(d.path(), "lo/none").list_objects().await.unwrap(),
        Vec::<String>::new()
    );
    // Deleting the directory leaves the sibling; deleting nothing is success.
    driver(d.path(), "lo/dir").delete().await.unwrap();
    assert!(!driver(d.path(), "lo/dir").exists().await.unwrap());
    assert!(driver(d.path(), "lo/dir.txt").exists().await.unwrap());
    driver(d.path(), "lo/none").delete().await.unwrap();
}
