//! Real-Docker tests of reading files, copying archives, output streams and the listing.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};

use argoexec_runtime::{ErrorKind, RuntimeExecutor, StreamKind};
use common::TestPod;
use tokio::io::AsyncReadExt;

/// Entries of a .tar.gz as (path, bytes), read with tar + flate2.
fn read_tgz(path: &Path) -> Vec<(String, Vec<u8>)> {
    let f = std::fs::File::open(path).expect("open archive");
    let mut ar = tar::Archive::new(flate2::read::MultiGzDecoder::new(f));
    let mut out = Vec::new();
    for e in ar.entries().expect("entries") {
        let mut e = e.expect("entry");
        let p = e.path().expect("path").to_string_lossy().into_owned();
        let mut buf = Vec::new();
        e.read_to_end(&mut buf).expect("read entry");
        out.push((p, buf));
    }
    out
}

fn top_levels(entries: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut tops: Vec<String> = entries
        .iter()
        .filter_map(|(p, _)| p.split('/').next().map(str::to_string))
        .collect();
    tops.dedup();
    tops
}

fn numbers(n: u32) -> String {
    (1..=n).map(|i| format!("{i}\n")).collect()
}

#[tokio::test]
async fn get_file_contents_after_exit() {
    let Some(t) = TestPod::new().await else { return };
    t.run_to_exit(
        "main",
        "printf 'hello\\nworld' > /tmp/x; ln -s x /tmp/l; mkdir /tmp/d",
    )
    .await;
    // A base-layer file of the image, read after the container exited.
    let passwd = t
        .exec
        .get_file_contents("main", Path::new("/etc/passwd"))
        .await
        .expect("read /etc/passwd");
    assert!(passwd.starts_with(b"root:x:0:0:"), "{passwd:?}");
    // Above the 1 MiB parameter limit (/bin/cat is a symlink to the ~2 MB /bin/busybox, and is
    // followed): refused from the archive header, with the size.
    let e = t
        .exec
        .get_file_contents("main", Path::new("/bin/cat"))
        .await
        .expect_err("busybox is larger than a parameter may be");
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert!(
        e.message.contains("/bin/busybox is") && e.message.contains("above the 1048576-byte"),
        "{e}"
    );
    // A file the container wrote, directly and through a symlink.
    let x = t
        .exec
        .get_file_contents("main", Path::new("/tmp/x"))
        .await
        .expect("read /tmp/x");
    assert_eq!(x, b"hello\nworld");
    let l = t
        .exec
        .get_file_contents("main", Path::new("/tmp/l"))
        .await
        .expect("read /tmp/l");
    assert_eq!(l, b"hello\nworld");

    let missing = t
        .exec
        .get_file_contents("main", Path::new("/no/such"))
        .await
        .expect_err("missing");
    assert_eq!(missing.kind(), ErrorKind::NotFound, "{missing}");
    let ghost = t
        .exec
        .get_file_contents("ghost", Path::new("/bin/busybox"))
        .await
        .expect_err("ghost");
    assert_eq!(ghost.kind(), ErrorKind::NotFound, "{ghost}");
    let dir = t
        .exec
        .get_file_contents("main", Path::new("/tmp/d"))
        .await
        .expect_err("dir");
    assert!(dir.message.contains("is a directory"), "{dir}");
    assert_eq!(dir.kind(), ErrorKind::Invalid, "{dir}");
}

#[tokio::test]
async fn copy_file_and_directory() {
    let Some(t) = TestPod::new().await else { return };
    t.run_to_exit(
        "main",
        "seq 1 20000 > /tmp/out.txt; mkdir -p /tmp/d/sub /tmp/d/empty; echo a > /tmp/d/a; \
         seq 1 5 > /tmp/d/sub/b; : > /tmp/d/zero; ln -s a /tmp/d/link",
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    for level in [None, Some(1), Some(9)] {
        let dest = dir.path().join(format!("file-{level:?}.tgz"));
        t.exec
            .copy_file("main", Path::new("/tmp/out.txt"), &dest, level)
            .await
            .expect("copy file");
        let entries = read_tgz(&dest);
        assert_eq!(
            entries.len(),
            1,
            "{:?}",
            entries.iter().map(|e| &e.0).collect::<Vec<_>>()
        );
        assert_eq!(entries[0].0, "out.txt");
        assert_eq!(String::from_utf8_lossy(&entries[0].1), numbers(20000));
    }

    let dest = dir.path().join("dir.tgz");
    t.exec
        .copy_file("main", Path::new("/tmp/d"), &dest, Some(1))
        .await
        .expect("copy dir");
    let entries = read_tgz(&dest);
    assert_eq!(top_levels(&entries), vec!["d".to_string()], "{entries:?}");
    let get = |name: &str| {
        entries
            .iter()
            .find(|(p, _)| p.trim_end_matches('/') == name)
            .map(|e| e.1.clone())
    };
    assert_eq!(get("d/a").as_deref(), Some(&b"a\n"[..]));
    assert_eq!(get("d/sub/b").as_deref(), Some(numbers(5).as_bytes()));
    assert_eq!(get("d/zero").as_deref(), Some(&b""[..]));
    assert!(get("d/empty").is_some(), "empty dir kept: {entries:?}");
    assert!(get("d/link").is_some(), "symlink kept: {entries:?}");

    // `/tmp/d/.` names the same directory: still one top-level entry `d`.
    let dest = dir.path().join("dot.tgz");
    t.exec
        .copy_file("main", Path::new("/tmp/d/."), &dest, None)
        .await
        .expect("copy dir/.");
    assert_eq!(top_levels(&read_tgz(&dest)), vec!["d".to_string()]);

    let dest: PathBuf = dir.path().join("missing.tgz");
    let e = t
        .exec
        .copy_file("main", Path::new("/tmp/none"), &dest, None)
        .await
        .expect_err("missing src");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(!dest.exists(), "no partial destination for a missing source");
}

async fn read_all(t: &TestPod, name: &str, kind: StreamKind) -> String {
    let mut s = t.exec.output_stream(name, kind).await.expect("output stream");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read stream");
    out
}

#[tokio::test]
async fn output_stream_stdout_and_combined() {
    let Some(t) = TestPod::new().await else { return };
    t.run_to_exit("main", "echo out1; echo err1 >&2; echo out2").await;
    assert_eq!(read_all(&t, "main", StreamKind::Stdout).await, "out1\nout2\n");
    let combined = read_all(&t, "main", StreamKind::Combined).await;
    for l in ["out1", "err1", "out2"] {
        assert!(combined.lines().any(|x| x == l), "{l} in {combined:?}");
    }
    // A TTY container has one raw stream: everything comes through either kind.
    let id = t.create_with("tty", "echo tout; echo terr >&2", true).await;
    t.start(&id).await;
    t.wait_exit(&id).await;
    let raw = read_all(&t, "tty", StreamKind::Stdout).await;
    assert!(raw.contains("tout") && raw.contains("terr"), "{raw:?}");

    let e = t
        .exec
        .output_stream("ghost", StreamKind::Stdout)
        .await
        .err()
        .map(|e| e.kind());
    assert_eq!(e, Some(ErrorKind::NotFound));
}

#[tokio::test]
async fn list_container_names_skips_pause() {
    let Some(t) = TestPod::new().await else { return };
    t.create("POD", "sleep 1").await;
    t.create("main", "true").await;
    t.create("wait", "true").await;
    let names = t.exec.list_container_names().await.expect("list");
    assert_eq!(names, vec!["main".to_string(), "wait".to_string()]);
    assert_eq!(t.exec.api_version(), t.exec.client().client_version().to_string());
}
