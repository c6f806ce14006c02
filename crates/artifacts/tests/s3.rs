//! The S3 driver against a real S3 server: moto in server mode with signature checking on
//! (`argoexec_testkit::moto`). Round trips of small, multipart, empty, unicode-named and
//! streamed objects and of directories; listing and deletion; NotFound; wrong credentials;
//! an upload cut off by the server going away.

mod common;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use argoexec_artifacts::{AnyDriver, ArtifactDriver, ArtifactError, ByteStream, Loaded, Opened, Settings};
use argoexec_core::PodPaths;
use argoexec_core::template::ArtifactLocation;
use argoexec_testkit::moto::Moto;
use futures::{StreamExt, TryStreamExt};

const BUCKET: &str = "artifacts";

fn moto() -> &'static Moto {
    static M: OnceLock<Moto> = OnceLock::new();
    M.get_or_init(|| Moto::start(&[BUCKET]))
}

/// Settings whose secret mount holds `moto/accessKey` and `moto/secretKey`.
fn settings(dir: &Path, access: &str, secret: &str) -> Arc<Settings> {
    let s = dir.join("argo/secret/moto");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("accessKey"), format!("{access}\n")).unwrap();
    std::fs::write(s.join("secretKey"), secret).unwrap();
    Arc::new(Settings {
        paths: PodPaths::new(dir),
        part_size: 5 << 20,
        range_size: 5 << 20,
        parallelism: 4,
        ..Settings::default()
    })
}

fn loc(m: &Moto, key: &str) -> ArtifactLocation {
    serde_json::from_value(serde_json::json!({"s3": {
        "endpoint": m.host_port(), "insecure": true, "bucket": BUCKET, "key": key,
        "accessKeySecret": {"name": "moto", "key": "accessKey"},
        "secretKeySecret": {"name": "moto", "key": "secretKey"},
    }}))
    .unwrap()
}

fn driver(dir: &Path, key: &str) -> AnyDriver {
    let m = moto();
    AnyDriver::for_location(&loc(m, key), &settings(dir, m.access_key(), m.secret_key())).unwrap()
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_round_trip_whole_and_multipart() {
    let d = tempfile::tempdir().unwrap();
    for (key, len) in [
        ("t/small.bin", 1000),
        ("t/multi.bin", (17 << 20) + 3),
        ("t/empty", 0),
    ] {
        let src = d.path().join("src");
        std::fs::write(&src, pattern(len)).unwrap();
        let drv = driver(d.path(), key);
        assert_eq!(drv.save(&src).await.unwrap(), len as u64, "{key}");
        assert!(drv.exists().await.unwrap());
        assert_eq!(drv.list().await.unwrap(), [""]);
        let back = d.path().join("back");
        assert_eq!(drv.load(&back).await.unwrap(), Loaded::File(len as u64));
        assert!(
            std::fs::read(&back).unwrap() == pattern(len),
            "{key}: content differs"
        );
        let Opened::Stream { size, body } = drv.open().await.unwrap() else {
            panic!("a file opens as a stream")
        };
        assert_eq!(size, Some(len as u64));
        let chunks: Vec<bytes::Bytes> = body.try_collect().await.unwrap();
        assert!(chunks.concat() == pattern(len), "{key}: streamed content differs");
        std::fs::remove_file(&back).unwrap();
    }
}

/// The object's stored checksum as the server reports it (`HeadObject` with checksum mode
/// on, through boto3 from the moto venv): `ChecksumSHA256`, `ChecksumCRC64NVME` or "".
fn stored_checksum(key: &str) -> String {
    let m = moto();
    let script = "import sys, boto3\n\
c = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], \
aws_secret_access_key=sys.argv[3], region_name='us-east-1')\n\
h = c.head_object(Bucket=sys.argv[4], Key=sys.argv[5], ChecksumMode='ENABLED')\n\
print(' '.join(k for k in h if k.startswith('Checksum') and k != 'ChecksumType'))\n";
    let out = std::process::Command::new(argoexec_testkit::moto::python())
        .args([
            "-c",
            script,
            &m.endpoint(),
            m.access_key(),
            m.secret_key(),
            BUCKET,
            key,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_carry_the_configured_checksum() {
    let d = tempfile::tempdir().unwrap();
    let m = moto();
    let src = d.path().join("src");
    for (mode, want) in [
        (argoexec_artifacts::UploadChecksum::Sha256, "ChecksumSHA256"),
        (argoexec_artifacts::UploadChecksum::Crc64Nvme, "ChecksumCRC64NVME"),
        (argoexec_artifacts::UploadChecksum::None, ""),
    ] {
        // Multipart: moto records the checksum of a single PUT only when an AWS SDK also
        // sends its `x-amz-sdk-checksum-algorithm` hint, which real S3 does not need.
        let len = (11 << 20) + 1;
        let key = format!("sum/{mode:?}-{len}");
        std::fs::write(&src, pattern(len)).unwrap();
        let mut s = (*settings(d.path(), m.access_key(), m.secret_key())).clone();
        s.s3_checksum = mode;
        let drv = AnyDriver::for_location(&loc(m, &key), &Arc::new(s)).unwrap();
        drv.save(&src).await.unwrap();
        assert_eq!(stored_checksum(&key), want, "{key}");
        let back = d.path().join("back");
        drv.load(&back).await.unwrap();
        assert!(
            std::fs::read(&back).unwrap() == pattern(len),
            "{key}: content differs"
        );
        std::fs::remove_file(&back).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_upload_in_parts_and_unicode_keys_work() {
    let d = tempfile::tempdir().unwrap();
    let key = "t/ünïcødé dir/naïve file ✓.tgz";
    let drv = driver(d.path(), key);
    let data = pattern((12 << 20) + 77);
    let chunks: Vec<std::io::Result<bytes::Bytes>> = data
        .chunks(100_000)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let body: ByteStream = Box::pin(futures::stream::iter(chunks));
    assert_eq!(drv.save_stream(body).await.unwrap(), data.len() as u64);
    let back = d.path().join("b");
    drv.load(&back).await.unwrap();
    assert!(std::fs::read(&back).unwrap() == data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directories_upload_file_by_file_and_come_back() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("tree");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    std::fs::create_dir_all(src.join("empty")).unwrap();
    std::fs::write(src.join("a/b/deep.txt"), "deep").unwrap();
    std::fs::write(src.join("top.bin"), pattern(6 << 20)).unwrap();
    std::fs::write(src.join("zero"), "").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
    let drv = driver(d.path(), "t/dir");
    drv.save(&src).await.unwrap();
    assert_eq!(
        drv.list().await.unwrap(),
        ["a/b/deep.txt", "top.bin", "zero"],
        "symlinks are never uploaded"
    );
    assert!(matches!(drv.open().await.unwrap(), Opened::Directory));
    let back = d.path().join("back");
    assert_eq!(drv.load(&back).await.unwrap(), Loaded::Directory(3));
    assert_eq!(
        std::fs::read_to_string(back.join("a/b/deep.txt")).unwrap(),
        "deep"
    );
    assert!(std::fs::read(back.join("top.bin")).unwrap() == pattern(6 << 20));
    assert_eq!(std::fs::read(back.join("zero")).unwrap().len(), 0);
    drv.delete().await.unwrap();
    assert!(!drv.exists().await.unwrap());
    assert!(
        drv.load(&d.path().join("again"))
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_objects_are_not_found() {
    let d = tempfile::tempdir().unwrap();
    let drv = driver(d.path(), "t/does/not/exist");
    let e = drv.load(&d.path().join("x")).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert!(e.to_string().contains("s3://artifacts/t/does/not/exist"), "{e}");
    assert!(!d.path().join("x").exists());
    assert!(drv.open().await.unwrap_err().is_not_found());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_are_denied_and_leave_nothing() {
    let d = tempfile::tempdir().unwrap();
    let m = moto();
    let bad = AnyDriver::for_location(
        &loc(m, "t/denied"),
        &settings(d.path(), m.access_key(), "not-the-secret"),
    )
    .unwrap();
    let src = d.path().join("f");
    std::fs::write(&src, pattern(11 << 20)).unwrap();
    let e = bad.save(&src).await.unwrap_err();
    assert!(matches!(e, ArtifactError::Denied { .. }), "{e:?}");
    assert!(
        e.to_string().contains("access denied at s3://artifacts/t/denied"),
        "{e}"
    );
    assert!(
        !e.to_string().contains("not-the-secret"),
        "the secret never appears: {e}"
    );
    let good = driver(&d.path().join("good"), "t/denied");
    assert!(!good.exists().await.unwrap(), "nothing half-written");
    let e = bad.load(&d.path().join("x")).await.unwrap_err();
    assert!(matches!(e, ArtifactError::Denied { .. }), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_cut_off_by_the_server_fails() {
    let d = tempfile::tempdir().unwrap();
    let m = Arc::new(std::sync::Mutex::new(Moto::start(&["cutoff"])));
    let (access, secret, host) = {
        let g = m.lock().unwrap();
        (
            g.access_key().to_string(),
            g.secret_key().to_string(),
            g.host_port(),
        )
    };
    let mut l = loc(&m.lock().unwrap(), "t/cut");
    l.s3.as_mut().unwrap().bucket = Some("cutoff".into());
    l.s3.as_mut().unwrap().endpoint = Some(host);
    let s = settings(d.path(), &access, &secret);
    let s = Arc::new(Settings {
        retries: 1,
        retry_timeout: std::time::Duration::from_secs(2),
        ..(*s).clone()
    });
    let drv = AnyDriver::for_location(&l, &s).unwrap();
    // 40 MiB in 1 MiB chunks; the server dies after the 12th.
    let killer = m.clone();
    let body: ByteStream = Box::pin(futures::stream::iter(0..40).map(move |i| {
        if i == 12 {
            killer.lock().unwrap().stop();
        }
        Ok(bytes::Bytes::from(vec![7u8; 1 << 20]))
    }));
    let e = drv.save_stream(body).await.unwrap_err();
    assert!(matches!(e, ArtifactError::Remote { .. }), "{e:?}");
}

/// Compare two files in 8 MiB chunks.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let (mut fa, mut fb) = (std::fs::File::open(a).unwrap(), std::fs::File::open(b).unwrap());
    let (mut ba, mut bb) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    loop {
        let na = fa.read(&mut ba).unwrap();
        let mut nb = 0;
        while nb < na {
            let n = fb.read(&mut bb[nb..na]).unwrap();
            if n == 0 {
                return false;
            }
            nb += n;
        }
        if na == 0 {
            return fb.read(&mut bb).unwrap() == 0;
        }
        if ba[..na] != bb[..na] {
            return false;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_gib_sparse_file_round_trips() {
    use std::os::unix::fs::FileExt;
    let d = tempfile::tempdir_in("/tmp").unwrap();
    let src = d.path().join("big");
    let f = std::fs::File::create(&src).unwrap();
    f.set_len(2 << 30).unwrap();
    for (i, off) in [0u64, 1 << 20, 700 << 20, (2 << 30) - 4096]
        .into_iter()
        .enumerate()
    {
        f.write_all_at(&pattern(4096 + i), off.min((2 << 30) - 4096 - i as u64))
            .unwrap();
    }
    drop(f);
    // 64 MiB ranges: moto re-reads the whole stored object for every ranged GET, so small
    // ranges of a 2 GiB object would measure moto, not the driver.
    let m = moto();
    let s = settings(d.path(), m.access_key(), m.secret_key());
    let s = Arc::new(Settings {
        part_size: 16 << 20,
        range_size: 64 << 20,
        parallelism: 8,
        ..(*s).clone()
    });
    let drv = AnyDriver::for_location(&loc(m, "t/two-gib"), &s).unwrap();
    assert_eq!(drv.save(&src).await.unwrap(), 2 << 30);
    let back = d.path().join("back");
    assert_eq!(drv.load(&back).await.unwrap(), Loaded::File(2 << 30));
    assert!(same_file(&src, &back), "2 GiB content differs");
    drv.delete().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_directory_round_trips_as_a_streamed_tarball() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let drv = driver(d.path(), "t/empty-dir.tgz");
    // As wait does: tar.gz produced on a blocking thread straight into the upload.
    let src = empty.clone();
    let (body, producer) =
        argoexec_artifacts::pipe::produce(4, move |w| argoexec_archive::write_tar_gz(&src, w, Some(6)));
    drv.save_stream(body).await.unwrap();
    producer.await.unwrap().unwrap();
    // As init does: extracted while it downloads.
    let Opened::Stream { body, .. } = drv.open().await.unwrap() else {
        panic!()
    };
    let dest = d.path().join("back/empty");
    let how = common::unpack_stream(body, &dest, &d.path().join("back/spill")).await;
    assert_eq!(
        how,
        argoexec_archive::Unpacked::Streamed(argoexec_archive::Format::TarGz)
    );
    let back = d.path().join("back/empty");
    assert!(back.is_dir() && std::fs::read_dir(&back).unwrap().next().is_none());
}
