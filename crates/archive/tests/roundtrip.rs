//! write_tar(_gz) → extract_tar(_gz) round trips, layout, and GNU tar interoperability.

mod common;

use argoexec_archive::*;
use common::*;
use std::fs;
use std::path::Path;
use std::process::Command;

#[test]
fn directory_tree_round_trips_with_modes_links_and_mtimes() {
    let d = tempfile::tempdir().unwrap();
    let src = sample_tree(d.path(), 0);
    let mut tgz = Vec::new();
    let n = write_tar_gz(&src, &mut tgz, None).unwrap();
    assert!(n > 0 && n % 512 == 0, "uncompressed tar size {n}");
    let out = d.path().join("out");
    assert_eq!(extract_tar_gz(&tgz[..], &out).unwrap(), vec![Path::new("data")]);
    assert_eq!(tree(&src), tree(&out.join("data")));
    assert_eq!(mtimes(&src), mtimes(&out.join("data")));
    assert_eq!(
        fs::read_link(out.join("data/sub/uplink")).unwrap(),
        Path::new("../zero")
    );
}

#[test]
fn big_file_makes_many_members_and_gnu_tar_agrees() {
    let d = tempfile::tempdir().unwrap();
    let src = sample_tree(d.path(), 20 << 20);
    let tgz = d.path().join("a.tgz");
    let opts = GzipOptions {
        level: 1,
        block_size: 1 << 20,
        threads: 2,
    };
    let n = write_tar_gz_with(&src, fs::File::create(&tgz).unwrap(), &opts).unwrap();
    assert!(n > 20 << 20);
    let bytes = fs::read(&tgz).unwrap();
    let members = gzip_members(&bytes);
    assert_eq!(members as u64, n.div_ceil(1 << 20), "one member per 1 MiB block");
    let out = d.path().join("out");
    extract_tar_gz(fs::File::open(&tgz).unwrap(), &out).unwrap();
    assert_eq!(tree(&src), tree(&out.join("data")));
    assert_eq!(detect(&tgz).unwrap(), Format::TarGz);
    let Some(tar) = gnu_tar() else { return };
    let gnu = d.path().join("gnu");
    fs::create_dir_all(&gnu).unwrap();
    let st = Command::new(tar)
        .arg("-xzf")
        .arg(&tgz)
        .arg("-C")
        .arg(&gnu)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(tree(&src), tree(&gnu.join("data")));
    assert_eq!(mtimes(&src), mtimes(&gnu.join("data")));
}

#[test]
fn we_extract_gnu_tar_output() {
    let Some(tar) = gnu_tar() else { return };
    let d = tempfile::tempdir().unwrap();
    let src = sample_tree(d.path(), 300_000);
    let tgz = d.path().join("gnu.tgz");
    let st = Command::new(tar)
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(d.path())
        .arg("data")
        .status()
        .unwrap();
    assert!(st.success());
    let out = d.path().join("out");
    assert_eq!(
        extract_tar_gz(fs::File::open(&tgz).unwrap(), &out).unwrap(),
        vec![Path::new("data")]
    );
    assert_eq!(tree(&src), tree(&out.join("data")));
    // `tar -C dir .` archives start with "./": accepted, top-level names are the children
    let dot = d.path().join("dot.tar");
    let st = Command::new(tar)
        .arg("-cf")
        .arg(&dot)
        .arg("-C")
        .arg(&src)
        .arg(".")
        .status()
        .unwrap();
    assert!(st.success());
    let out2 = d.path().join("out2");
    let mut tops = extract_tar(fs::File::open(&dot).unwrap(), &out2).unwrap();
    tops.sort();
    assert_eq!(tops.len(), fs::read_dir(&src).unwrap().count());
    assert_eq!(tree(&src), tree(&out2));
}

#[test]
fn uncompressed_tar_round_trips_and_counts_bytes() {
    let d = tempfile::tempdir().unwrap();
    let src = sample_tree(d.path(), 70_000);
    let mut buf = Vec::new();
    let n = write_tar(&src, &mut buf).unwrap();
    assert_eq!(n, buf.len() as u64);
    assert_eq!(detect_bytes(d.path(), &buf), Format::Tar);
    let out = d.path().join("out");
    assert_eq!(extract_tar(&buf[..], &out).unwrap(), vec![Path::new("data")]);
    assert_eq!(tree(&src), tree(&out.join("data")));
}

fn detect_bytes(dir: &Path, data: &[u8]) -> Format {
    let p = dir.join("probe");
    fs::write(&p, data).unwrap();
    detect(&p).unwrap()
}

#[test]
fn layout_is_basename_first_sorted_with_dir_slashes() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("art");
    fs::create_dir_all(src.join("b/c")).unwrap();
    fs::write(src.join("a"), "1").unwrap();
    fs::write(src.join("b/z"), "2").unwrap();
    let mut buf = Vec::new();
    write_tar(&src, &mut buf).unwrap();
    assert_eq!(
        tar_names(&buf[..]),
        ["art/", "art/a", "art/b/", "art/b/c/", "art/b/z"]
    );
    // trailing slash and relative forms name the same top-level entry
    let mut buf2 = Vec::new();
    write_tar(Path::new(&format!("{}/", src.display())), &mut buf2).unwrap();
    assert_eq!(tar_names(&buf2[..])[0], "art/");
    let mut buf3 = Vec::new();
    write_tar(&src.join("b/.."), &mut buf3).unwrap();
    assert_eq!(tar_names(&buf3[..])[0], "art/");
    // a single file is one entry named by its basename
    let mut gz = Vec::new();
    write_tar_gz(&src.join("b/z"), &mut gz, Some(9)).unwrap();
    let out = d.path().join("o");
    assert_eq!(extract_tar_gz(&gz[..], &out).unwrap(), vec![Path::new("z")]);
    assert_eq!(fs::read_to_string(out.join("z")).unwrap(), "2");
    assert_eq!(tar_names(flate2::read::MultiGzDecoder::new(&gz[..])), ["z"]);
}

#[test]
fn empty_dir_and_zero_byte_file_at_top_level() {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir(d.path().join("empty")).unwrap();
    fs::write(d.path().join("nothing"), "").unwrap();
    for name in ["empty", "nothing"] {
        let mut gz = Vec::new();
        write_tar_gz(&d.path().join(name), &mut gz, Some(0)).unwrap();
        let out = d.path().join(format!("out-{name}"));
        assert_eq!(extract_tar_gz(&gz[..], &out).unwrap(), vec![Path::new(name)]);
        assert_eq!(tree(&d.path().join(name)), tree(&out.join(name)));
    }
}

#[test]
fn missing_source_is_not_found() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope");
    assert!(
        write_tar_gz(&missing, Vec::new(), None)
            .unwrap_err()
            .is_not_found()
    );
    assert!(write_tar(&missing, Vec::new()).unwrap_err().is_not_found());
    assert!(
        write_zip(&missing, &d.path().join("z.zip"))
            .unwrap_err()
            .is_not_found()
    );
    let e = write_tar_gz(&missing, Vec::new(), None).unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
}

#[test]
fn symlinks_are_stored_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("s");
    fs::create_dir(&src).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", src.join("abs")).unwrap();
    std::os::unix::fs::symlink("dangling-target", src.join("dangling")).unwrap();
    let mut buf = Vec::new();
    write_tar(&src, &mut buf).unwrap();
    let mut ar = tar::Archive::new(&buf[..]);
    let links: Vec<_> = ar
        .entries()
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.header().entry_type() == tar::EntryType::Symlink)
        .map(|e| {
            (
                e.path().unwrap().display().to_string(),
                e.link_name().unwrap().unwrap().display().to_string(),
            )
        })
        .collect();
    assert_eq!(
        links,
        [
            ("s/abs".into(), "/etc/passwd".into()),
            ("s/dangling".into(), "dangling-target".into())
        ]
    );
}

#[test]
fn following_resolves_the_top_link_only_and_keeps_its_name() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("real-dir");
    fs::create_dir(&real).unwrap();
    fs::write(real.join("f.txt"), "content").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", real.join("inner")).unwrap();
    let top = d.path().join("shown-name");
    std::os::unix::fs::symlink(&real, &top).unwrap();
    let mut gz = Vec::new();
    write_tar_gz_following(&top, &mut gz, None).unwrap();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(&gz[..]));
    let entries: Vec<(String, tar::EntryType)> = ar
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.path().unwrap().display().to_string(), e.header().entry_type())
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("shown-name/".into(), tar::EntryType::Directory),
            ("shown-name/f.txt".into(), tar::EntryType::Regular),
            ("shown-name/inner".into(), tar::EntryType::Symlink),
        ],
        "the top link's target under the link's name; links below stay links"
    );
    let dangling = d.path().join("dangling");
    std::os::unix::fs::symlink(d.path().join("nothing"), &dangling).unwrap();
    assert!(
        write_tar_gz_following(&dangling, Vec::new(), None)
            .unwrap_err()
            .is_not_found()
    );
}
