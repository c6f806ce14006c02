//! write_zip → extract_zip round trips and layout.

mod common;

use argoexec_archive::*;
use common::*;
use std::fs;
use std::path::Path;

#[test]
fn zip_round_trip_keeps_tree_modes_links_and_mtimes() {
    let d = tempfile::tempdir().unwrap();
    let src = sample_tree(d.path(), 200_000);
    let zf = d.path().join("a.zip");
    write_zip(&src, &zf).unwrap();
    assert_eq!(detect(&zf).unwrap(), Format::Zip);
    let out = d.path().join("out");
    assert_eq!(extract_zip(&zf, &out).unwrap(), vec![Path::new("data")]);
    assert_eq!(tree(&src), tree(&out.join("data")));
    // DOS times have 2 s resolution
    for ((a, ta), (b, tb)) in mtimes(&src).into_iter().zip(mtimes(&out.join("data"))) {
        assert_eq!(a, b);
        assert!((ta - tb).abs() <= 2, "{a}: {ta} vs {tb}");
    }
}

#[test]
fn zip_layout_names_and_deflate() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("z");
    fs::create_dir_all(src.join("s")).unwrap();
    fs::write(src.join("s/f"), "zipped ".repeat(1000)).unwrap();
    let zf = d.path().join("z.zip");
    write_zip(Path::new(&format!("{}/", src.display())), &zf).unwrap();
    let mut ar = zip::ZipArchive::new(fs::File::open(&zf).unwrap()).unwrap();
    let names: Vec<_> = (0..ar.len())
        .map(|i| ar.by_index(i).unwrap().name().unwrap().to_string())
        .collect();
    assert_eq!(names, ["z/", "z/s/", "z/s/f"]);
    let f = ar.by_index(2).unwrap();
    assert_eq!(f.compression(), zip::CompressionMethod::Deflated);
    assert!(f.compressed_size() < 200);
    // a single file
    let one = d.path().join("one.zip");
    write_zip(&src.join("s/f"), &one).unwrap();
    assert_eq!(
        extract_zip(&one, &d.path().join("o")).unwrap(),
        vec![Path::new("f")]
    );
}
