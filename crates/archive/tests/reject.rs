//! Malicious tars and zips are refused with `ArchiveError::Unsafe` and create nothing
//! outside the destination.

mod common;

use argoexec_archive::*;
use common::*;
use std::fs;
use std::io::Write;
use std::path::Path;
use tar::EntryType::{Directory, Link, Regular, Symlink};

type Entry = (&'static str, tar::EntryType, Option<&'static str>);

/// dest is `<tmp>/box/dest`; `<tmp>/box` is the sentinel that must hold only `dest`.
fn assert_refused_tar(case: &[Entry]) {
    let d = tempfile::tempdir().unwrap();
    let sentinel = d.path().join("box");
    let dest = sentinel.join("dest");
    fs::create_dir_all(&dest).unwrap();
    let err = extract_tar(&evil_tar(case)[..], &dest).unwrap_err();
    assert!(err.is_unsafe(), "{case:?}: expected Unsafe, got {err}");
    let outside: Vec<_> = fs::read_dir(&sentinel)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, vec!["dest"], "{case:?} wrote outside the destination");
    let top: Vec<_> = fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top, vec!["box"], "{case:?} wrote two levels up");
}

#[test]
fn escaping_names_are_refused() {
    assert_refused_tar(&[("../evil", Regular, None)]);
    assert_refused_tar(&[("/abs/evil", Regular, None)]);
    assert_refused_tar(&[("a/../../evil", Regular, None)]);
    assert_refused_tar(&[("ok", Regular, None), ("./../evil", Regular, None)]);
    assert_refused_tar(&[("../../evil/", Directory, None)]);
    assert!(!Path::new("/abs/evil").exists());
}

#[test]
fn symlink_attacks_are_refused() {
    // absolute target, then writing through it
    assert_refused_tar(&[("link", Symlink, Some("/etc")), ("link/passwd", Regular, None)]);
    assert_refused_tar(&[("link", Symlink, Some("/etc"))]);
    // relative escape
    assert_refused_tar(&[("link", Symlink, Some("../../x"))]);
    assert_refused_tar(&[("a/b/link", Symlink, Some("../../../x"))]);
    // in-bounds link to the parent, then writing through it
    assert_refused_tar(&[("d/link", Symlink, Some("..")), ("d/link/evil", Regular, None)]);
    // a chain that only escapes through another symlink
    assert_refused_tar(&[
        ("a/b/", Directory, None),
        ("a/b/up", Symlink, Some("..")),
        ("x", Symlink, Some("a/b/up/../..")),
    ]);
}

#[test]
fn hardlink_attacks_are_refused() {
    assert_refused_tar(&[("ok", Regular, None), ("hard", Link, Some("../x"))]);
    assert_refused_tar(&[("hard", Link, Some("/etc/passwd"))]);
    // a hard link whose target passes through any symlink is refused
    assert_refused_tar(&[
        ("ok", Regular, None),
        ("s", Symlink, Some(".")),
        ("hard", Link, Some("s/ok")),
    ]);
    // and so is one to a symlink
    assert_refused_tar(&[("s", Symlink, Some(".")), ("hard", Link, Some("s"))]);
}

#[test]
fn a_preexisting_symlink_in_dest_is_never_written_through() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let dest = d.path().join("dest");
    fs::create_dir(&dest).unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.join("f"), dest.join("leaf")).unwrap();
    let err = extract_tar(&evil_tar(&[("sub/f", Regular, None)])[..], &dest).unwrap_err();
    assert!(err.is_unsafe(), "{err}");
    // a leaf symlink is replaced, not followed
    extract_tar(&evil_tar(&[("leaf", Regular, None)])[..], &dest).unwrap();
    assert_eq!(fs::read(dest.join("leaf")).unwrap(), b"pwned");
    assert!(
        fs::read_dir(&outside).unwrap().next().is_none(),
        "wrote through a symlink"
    );
}

#[test]
fn benign_links_are_accepted() {
    let d = tempfile::tempdir().unwrap();
    let dest = d.path().join("dest");
    let tops = extract_tar(
        &evil_tar(&[
            ("a/b/f", Regular, None),
            ("a/b/l", Symlink, Some("../../a/b/f")),
            ("a/h", Link, Some("a/b/f")),
            ("c", Symlink, Some("a")),
        ])[..],
        &dest,
    )
    .unwrap();
    assert_eq!(tops, [Path::new("a"), Path::new("c")]);
    assert_eq!(fs::read(dest.join("a/h")).unwrap(), b"pwned");
    assert_eq!(fs::read(dest.join("a/b/l")).unwrap(), b"pwned");
}

#[test]
fn zip_slip_is_refused_before_anything_is_written() {
    for (name, symlink_target) in [
        ("../evil", None),
        ("/abs/evil", None),
        ("a/../../evil", None),
        ("l", Some("../x")),
        ("l", Some("/etc")),
    ] {
        let d = tempfile::tempdir().unwrap();
        let evil = d.path().join("evil.zip");
        let mut w = zip::ZipWriter::new(fs::File::create(&evil).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        w.start_file("first-ok", opts).unwrap();
        w.write_all(b"ok").unwrap();
        match symlink_target {
            Some(t) => w.add_symlink(name, t, opts).unwrap(),
            None => {
                w.start_file(name, opts).unwrap();
                w.write_all(b"x").unwrap();
            }
        }
        w.finish().unwrap();
        let sentinel = d.path().join("box");
        let dest = sentinel.join("dest");
        let err = extract_zip(&evil, &dest).unwrap_err();
        assert!(err.is_unsafe(), "{name}: {err}");
        assert!(!sentinel.join("evil").exists() && !d.path().join("evil").exists());
        assert!(!dest.join("first-ok").exists(), "{name}: wrote before refusing");
    }
}
