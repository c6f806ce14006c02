//! The HTTP driver against a real HTTP server (`argoexec_testkit::files`): GET with
//! parallel ranges, PUT of files, streams and directories, basic auth, NotFound, a server
//! gone in the middle of an upload.

use std::path::Path;
use std::sync::Arc;

use argoexec_artifacts::{AnyDriver, ArtifactDriver, ArtifactError, ByteStream, Opened, Settings};
use argoexec_core::PodPaths;
use argoexec_testkit::files::FileServer;
use futures::{StreamExt, TryStreamExt};

fn settings(dir: &Path) -> Arc<Settings> {
    let s = dir.join("argo/secret/web");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("user"), "alice\n").unwrap();
    std::fs::write(s.join("pass"), "s3cret").unwrap();
    Arc::new(Settings {
        paths: PodPaths::new(dir),
        part_size: 5 << 20,
        range_size: 5 << 20,
        parallelism: 3,
        retries: 1,
        retry_timeout: std::time::Duration::from_secs(2),
        ..Settings::default()
    })
}

fn http(dir: &Path, url: &str, auth: bool) -> AnyDriver {
    let mut v = serde_json::json!({"http": {"url": url, "headers": [{"name": "X-Test", "value": "1"}]}});
    if auth {
        v["http"]["auth"] = serde_json::json!({"basicAuth": {
            "usernameSecret": {"name": "web", "key": "user"},
            "passwordSecret": {"name": "web", "key": "pass"}}});
    }
    AnyDriver::for_location(&serde_json::from_value(v).unwrap(), &settings(dir)).unwrap()
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 253) as u8).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_streams_and_directories_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let served = d.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let srv = FileServer::start(&served, Some(("alice", "s3cret")));
    for (name, len) in [("big.bin", (16 << 20) + 5), ("small", 10), ("empty", 0)] {
        let src = d.path().join(name);
        std::fs::write(&src, pattern(len)).unwrap();
        let drv = http(d.path(), &format!("{}/f/{name}", srv.url()), true);
        assert_eq!(drv.save(&src).await.unwrap(), len as u64);
        assert!(std::fs::read(served.join("f").join(name)).unwrap() == pattern(len));
        assert!(drv.exists().await.unwrap());
        let Opened::Stream { size, body } = drv.open().await.unwrap() else {
            panic!()
        };
        assert_eq!(size, Some(len as u64), "{name}");
        let got: Vec<bytes::Bytes> = body.try_collect().await.unwrap();
        assert!(got.concat() == pattern(len), "{name}");
        let back = d.path().join(format!("{name}.back"));
        drv.load(&back).await.unwrap();
        assert!(std::fs::read(&back).unwrap() == pattern(len), "{name}");
    }
    let before = srv.requests();
    let drv = http(d.path(), &format!("{}/f/big.bin", srv.url()), true);
    let Opened::Stream { body, .. } = drv.open().await.unwrap() else {
        panic!()
    };
    let _: Vec<bytes::Bytes> = body.try_collect().await.unwrap();
    assert_eq!(
        srv.requests() - before,
        4,
        "a 16 MiB object in 5 MiB ranges: 4 GETs"
    );

    let stream: ByteStream = Box::pin(futures::stream::iter(
        (0..5).map(|i| Ok(bytes::Bytes::from(vec![i as u8; 1000]))),
    ));
    let s = http(d.path(), &format!("{}/streamed.tgz", srv.url()), true);
    assert_eq!(s.save_stream(stream).await.unwrap(), 5000);
    assert_eq!(std::fs::read(served.join("streamed.tgz")).unwrap().len(), 5000);

    let tree = d.path().join("tree");
    std::fs::create_dir_all(tree.join("a")).unwrap();
    std::fs::write(tree.join("a/x"), "x").unwrap();
    std::fs::write(tree.join("y z"), "y").unwrap();
    http(d.path(), &format!("{}/tree", srv.url()), true)
        .save(&tree)
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(served.join("tree/a/x")).unwrap(), "x");
    assert_eq!(std::fs::read_to_string(served.join("tree/y z")).unwrap(), "y");

    // As Argo v4.1.2: HTTP artifacts are never deleted (nor listed), with a clear error.
    let kept = http(d.path(), &format!("{}/f/small", srv.url()), true);
    let e = kept.delete().await.unwrap_err();
    assert!(
        matches!(e, ArtifactError::Unsupported { driver: "http", .. }) && e.to_string().contains("3102"),
        "{e}"
    );
    assert!(kept.exists().await.unwrap(), "the object is left in place");
    assert!(matches!(
        kept.list_objects().await.unwrap_err(),
        ArtifactError::Unsupported { .. }
    ));
    let gone = http(d.path(), &format!("{}/f/nothing-here", srv.url()), true);
    assert!(!gone.exists().await.unwrap());
    assert!(
        gone.load(&d.path().join("nope"))
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_and_unsupported_auth_are_clear() {
    let d = tempfile::tempdir().unwrap();
    let srv = FileServer::start(d.path(), Some(("alice", "other")));
    let drv = http(d.path(), &format!("{}/x?sig=SECRETSIG", srv.url()), true);
    let e = drv.open().await.unwrap_err();
    assert!(matches!(e, ArtifactError::Denied { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("401") && !msg.contains("SECRETSIG") && !msg.contains("s3cret"),
        "{msg}"
    );
    let loc =
        serde_json::from_value(serde_json::json!({"http": {"url": "https://h/x", "auth": {"oauth2": {}}}}))
            .unwrap();
    let e = AnyDriver::for_location(&loc, &settings(d.path()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("auth.oauth2 is not supported"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gone_mid_upload_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let served = d.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let srv = std::sync::Arc::new(std::sync::Mutex::new(FileServer::start(&served, None)));
    let url = format!("{}/cut.tgz", srv.lock().unwrap().url());
    let drv = http(d.path(), &url, false);
    let killer = srv.clone();
    let body: ByteStream = Box::pin(futures::stream::iter(0..64).then(move |i| {
        let killer = killer.clone();
        async move {
            if i == 8 {
                tokio::task::spawn_blocking(move || killer.lock().unwrap().stop())
                    .await
                    .unwrap();
            }
            Ok(bytes::Bytes::from(vec![1u8; 1 << 20]))
        }
    }));
    let e = drv.save_stream(body).await.unwrap_err();
    assert!(matches!(e, ArtifactError::Remote { .. }), "{e:?}");
    assert!(!served.join("cut.tgz").exists(), "no complete-looking object");
}
