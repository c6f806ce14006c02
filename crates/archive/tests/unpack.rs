//! unpack_input: Argo's input-artifact archive strategies.

mod common;

use argoexec_archive::*;
use common::*;
use std::fs;
use std::path::Path;

fn multi_entry_tar(path: &Path) {
    let mut b = tar::Builder::new(fs::File::create(path).unwrap());
    for n in ["x", "y/z"] {
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, n, &b"z"[..]).unwrap();
    }
    b.into_inner().unwrap();
}

fn leftovers(dir: &Path) -> Vec<String> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn single_file_tgz_is_renamed_to_dest() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("one.txt"), "1").unwrap();
    let dl = d.path().join("dl");
    write_tar_gz(&d.path().join("one.txt"), fs::File::create(&dl).unwrap(), None).unwrap();
    let dest = d.path().join("in/deeper/file");
    unpack_input(&dl, &dest, Strategy::Auto).unwrap();
    assert_eq!(fs::read_to_string(&dest).unwrap(), "1");
    assert!(!dl.exists());
    assert_eq!(leftovers(&d.path().join("in/deeper")), ["file"]);
}

#[test]
fn single_dir_tgz_becomes_dest() {
    let d = tempfile::tempdir().unwrap();
    let src = sample_tree(d.path(), 0);
    let dl = d.path().join("dl");
    write_tar_gz(&src, fs::File::create(&dl).unwrap(), None).unwrap();
    let dest = d.path().join("in/art");
    unpack_input(&dl, &dest, Strategy::Tar).unwrap();
    assert_eq!(tree(&src), tree(&dest));
}

#[test]
fn multi_entry_tar_becomes_a_directory() {
    let d = tempfile::tempdir().unwrap();
    let dl = d.path().join("dl");
    multi_entry_tar(&dl);
    let dest = d.path().join("in/multi");
    unpack_input(&dl, &dest, Strategy::Tar).unwrap();
    assert!(dest.join("x").is_file() && dest.join("y/z").is_file());
    assert_eq!(leftovers(&d.path().join("in")), ["multi"]);
}

#[test]
fn none_and_auto_on_plain_text_rename() {
    let d = tempfile::tempdir().unwrap();
    let dl = d.path().join("dl");
    fs::write(&dl, "plain").unwrap();
    unpack_input(&dl, &d.path().join("in/plain"), Strategy::Auto).unwrap();
    assert_eq!(fs::read_to_string(d.path().join("in/plain")).unwrap(), "plain");
    assert!(!dl.exists());
    // None keeps even a tarball packed
    multi_entry_tar(&dl);
    let before = fs::read(&dl).unwrap();
    unpack_input(&dl, &d.path().join("in/packed.tar"), Strategy::None).unwrap();
    assert_eq!(fs::read(d.path().join("in/packed.tar")).unwrap(), before);
}

#[test]
fn zip_with_explicit_and_auto_strategy() {
    let d = tempfile::tempdir().unwrap();
    let src = sample_tree(d.path(), 10_000);
    for (i, strategy) in [Strategy::Zip, Strategy::Auto].into_iter().enumerate() {
        let dl = d.path().join(format!("dl{i}"));
        write_zip(&src, &dl).unwrap();
        let dest = d.path().join(format!("in{i}/art"));
        unpack_input(&dl, &dest, strategy).unwrap();
        assert_eq!(tree(&src), tree(&dest));
        assert!(!dl.exists());
    }
}

#[test]
fn failures_leave_nothing_at_dest() {
    let d = tempfile::tempdir().unwrap();
    let dl = d.path().join("dl");
    // refused entry after a good one
    fs::write(
        &dl,
        evil_tar(&[
            ("good", tar::EntryType::Regular, None),
            ("../evil", tar::EntryType::Regular, None),
        ]),
    )
    .unwrap();
    let dest = d.path().join("in/evil");
    assert!(unpack_input(&dl, &dest, Strategy::Tar).unwrap_err().is_unsafe());
    assert_eq!(leftovers(&d.path().join("in")), Vec::<String>::new());
    assert!(dl.exists(), "the download is kept on failure");
    // truncated tgz
    let src = sample_tree(d.path(), 500_000);
    let mut tgz = Vec::new();
    write_tar_gz(&src, &mut tgz, None).unwrap();
    fs::write(&dl, &tgz[..tgz.len() / 2]).unwrap();
    assert!(unpack_input(&dl, &dest, Strategy::Auto).is_err());
    assert_eq!(leftovers(&d.path().join("in")), Vec::<String>::new());
    // explicit tar on a non-tarball
    fs::write(&dl, "not a tar").unwrap();
    let err = unpack_input(&dl, &dest, Strategy::Tar).unwrap_err();
    assert!(matches!(err, ArchiveError::WrongFormat { .. }), "{err}");
    // explicit zip on a non-zip
    let err = unpack_input(&dl, &dest, Strategy::Zip).unwrap_err();
    assert!(matches!(err, ArchiveError::Zip { .. }), "{err}");
    assert_eq!(leftovers(&d.path().join("in")), Vec::<String>::new());
}

#[test]
fn empty_mount_point_is_filled_in_place() {
    let d = tempfile::tempdir().unwrap();
    let src = sample_tree(d.path(), 0);
    let dl = d.path().join("dl");
    write_tar_gz(&src, fs::File::create(&dl).unwrap(), None).unwrap();
    let mount = d.path().join("mnt");
    fs::create_dir(&mount).unwrap();
    unpack_input(&dl, &mount, Strategy::Auto).unwrap();
    assert_eq!(leftovers(&mount), leftovers(&src));
    // a failure empties it again
    fs::write(
        &dl,
        evil_tar(&[
            ("ok", tar::EntryType::Regular, None),
            ("/abs", tar::EntryType::Regular, None),
        ]),
    )
    .unwrap();
    let mount2 = d.path().join("mnt2");
    fs::create_dir(&mount2).unwrap();
    assert!(unpack_input(&dl, &mount2, Strategy::Tar).is_err());
    assert!(mount2.is_dir() && leftovers(&mount2).is_empty());
    // a non-empty destination is refused and untouched
    multi_entry_tar(&dl);
    let err = unpack_input(&dl, &mount, Strategy::Tar).unwrap_err();
    assert!(matches!(err, ArchiveError::DestinationExists { .. }), "{err}");
    assert_eq!(leftovers(&mount), leftovers(&src));
}

#[test]
fn missing_download_is_not_found() {
    let d = tempfile::tempdir().unwrap();
    let err = unpack_input(&d.path().join("nope"), &d.path().join("dest"), Strategy::Auto).unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

/// A symlink checked against the extraction directory can point out of `dest` once the
/// single top-level directory is promoted to `dest` (`top/x -> ../y`): refused, for tar
/// (file and stream) and zip, and nothing is left. A link that stays inside `top` is kept.
#[test]
fn links_out_of_a_promoted_top_directory_are_refused() {
    use tar::EntryType::{Directory, Regular, Symlink};
    let escaping = evil_tar(&[
        ("top/", Directory, None),
        ("top/a.txt", Regular, None),
        ("top/x", Symlink, Some("../a.txt")),
    ]);
    let inside = evil_tar(&[
        ("top/", Directory, None),
        ("top/a.txt", Regular, None),
        ("top/sub/", Directory, None),
        ("top/sub/x", Symlink, Some("../a.txt")),
    ]);
    let d = tempfile::tempdir().unwrap();
    let dl = d.path().join("dl");
    let dest = d.path().join("in/art");

    fs::write(&dl, &escaping).unwrap();
    let e = unpack_input(&dl, &dest, Strategy::Tar).unwrap_err();
    assert!(matches!(e, ArchiveError::Unsafe { .. }), "{e}");
    assert!(e.to_string().contains("top-level"), "{e}");
    assert!(fs::symlink_metadata(&dest).is_err());
    assert_eq!(leftovers(&d.path().join("in")), Vec::<String>::new());

    let spill = d.path().join("spill");
    let e = unpack_input_stream(&escaping[..], &dest, Strategy::Auto, &spill).unwrap_err();
    assert!(matches!(e, ArchiveError::Unsafe { .. }), "{e}");
    assert!(fs::symlink_metadata(&dest).is_err());

    let zf = d.path().join("dl.zip");
    {
        let mut z = zip::ZipWriter::new(fs::File::create(&zf).unwrap());
        let o = zip::write::SimpleFileOptions::default();
        z.add_directory("top/", o).unwrap();
        z.start_file("top/a.txt", o).unwrap();
        std::io::Write::write_all(&mut z, b"a").unwrap();
        z.add_symlink("top/x", "../a.txt", o).unwrap();
        z.finish().unwrap();
    }
    let e = unpack_input(&zf, &dest, Strategy::Zip).unwrap_err();
    assert!(matches!(e, ArchiveError::Unsafe { .. }), "{e}");
    assert!(fs::symlink_metadata(&dest).is_err());

    fs::write(&dl, &inside).unwrap();
    unpack_input(&dl, &dest, Strategy::Tar).unwrap();
    assert_eq!(fs::read_link(dest.join("sub/x")).unwrap(), Path::new("../a.txt"));
    assert_eq!(fs::read_to_string(dest.join("sub/x")).unwrap(), "pwned");
}
