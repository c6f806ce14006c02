//! The Azure Blob driver against Azurite (the Azure Storage emulator): files (single and
//! block-list uploads), streams, directories, NotFound, a wrong account key.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use argoexec_artifacts::{AnyDriver, ArtifactDriver, ArtifactError, ByteStream, Loaded, Settings};
use argoexec_core::PodPaths;
use argoexec_testkit::azurite::{Azurite, KEY};

const CONTAINER: &str = "artifacts";

fn azurite() -> &'static Azurite {
    static A: OnceLock<Azurite> = OnceLock::new();
    A.get_or_init(|| Azurite::start(&[CONTAINER]))
}

fn driver(dir: &Path, blob: &str, key: &str) -> AnyDriver {
    let s = dir.join("argo/secret/az");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("key"), key).unwrap();
    let settings = Arc::new(Settings {
        paths: PodPaths::new(dir),
        part_size: 5 << 20,
        range_size: 5 << 20,
        parallelism: 3,
        retries: 1,
        retry_timeout: std::time::Duration::from_secs(2),
        ..Settings::default()
    });
    let loc = serde_json::from_value(serde_json::json!({"azure": {
        "endpoint": azurite().endpoint(), "container": CONTAINER, "blob": blob,
        "accountKeySecret": {"name": "az", "key": "key"}}}))
    .unwrap();
    AnyDriver::for_location(&loc, &settings).unwrap()
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 13 % 251) as u8).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blobs_round_trip() {
    let d = tempfile::tempdir().unwrap();
    for (blob, len) in [("t/small", 100), ("t/multi", (12 << 20) + 1), ("t/empty", 0)] {
        let src = d.path().join("src");
        std::fs::write(&src, pattern(len)).unwrap();
        let drv = driver(d.path(), blob, KEY);
        assert_eq!(drv.save(&src).await.unwrap(), len as u64);
        let back = d.path().join("back");
        assert_eq!(drv.load(&back).await.unwrap(), Loaded::File(len as u64));
        assert!(std::fs::read(&back).unwrap() == pattern(len), "{blob}");
        std::fs::remove_file(&back).unwrap();
    }
    let data = pattern((7 << 20) + 9);
    let body: ByteStream = Box::pin(futures::stream::iter(
        data.chunks(65536)
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect::<Vec<_>>(),
    ));
    let drv = driver(d.path(), "t/streamed ü.tgz", KEY);
    drv.save_stream(body).await.unwrap();
    drv.load(&d.path().join("s")).await.unwrap();
    assert!(std::fs::read(d.path().join("s")).unwrap() == data);

    let tree = d.path().join("tree");
    std::fs::create_dir_all(tree.join("a")).unwrap();
    std::fs::write(tree.join("a/x"), "x").unwrap();
    std::fs::write(tree.join("y"), "y").unwrap();
    let dir = driver(d.path(), "t/tree", KEY);
    dir.save(&tree).await.unwrap();
    assert_eq!(dir.list().await.unwrap(), ["a/x", "y"]);
    assert_eq!(
        dir.load(&d.path().join("tree-back")).await.unwrap(),
        Loaded::Directory(2)
    );
    dir.delete().await.unwrap();
    assert!(!dir.exists().await.unwrap());
    assert!(
        driver(d.path(), "t/none", KEY)
            .load(&d.path().join("n"))
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_denied() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("f");
    std::fs::write(&src, "x").unwrap();
    let bad = "AAAA".repeat(22);
    let e = driver(d.path(), "t/denied", &bad).save(&src).await.unwrap_err();
    assert!(matches!(e, ArtifactError::Denied { .. }), "{e:?}");
    assert!(!driver(d.path(), "t/denied", KEY).exists().await.unwrap());
}
