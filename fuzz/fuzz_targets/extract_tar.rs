//! `extract_tar`: the safe tar extractors of `argoexec-archive` (`extract_tar`,
//! `extract_tar_gz`, `extract_tar_zst`) and init's streaming unpack
//! (`unpack_input_stream`, which detects the format and falls back to `unpack_input`), on
//! arbitrary bytes, in a fresh scratch directory per input.
//!
//! The first byte picks the entry point; the rest is the archive, or what gets compressed
//! into one, so the fuzzer mutates tar structure rather than compressed bits:
//! `0` plain tar, `1` gzip of the rest, `2` the rest as a gzip stream, `3` zstd of the rest,
//! `4` `unpack_input_stream(Auto)` of the rest, `5` the same of its gzip. Unless the first
//! byte has its top bit set, the harness rewrites every tar header's checksum first
//! (`fix_tar_checksums`), so mutated headers reach the extractor instead of being refused
//! by the tar reader.
//!
//! Checks: no panic; nothing is created beside the destination and the canary directory
//! next to it is untouched (no `..`, absolute name, symlink or hard link reaches it); every
//! entry extracted resolves inside the destination and no symlink left there points out;
//! `unpack_input_stream` leaves no `dest` after a failure and never its `.tmpdir`.

#![no_main]

use argoexec_archive::{Strategy, extract_tar, extract_tar_gz, extract_tar_zst, unpack_input_stream};
use argoexec_fuzz::{Sandbox, fix_tar_checksums, gzip};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let mut body = body.to_vec();
    if mode & 0x80 == 0 && (mode & 0x7f) % 6 != 2 {
        fix_tar_checksums(&mut body);
    }
    let body = &body[..];
    let sb = Sandbox::new();
    let spill = sb.root().join("spill");
    let unpack = |bytes: &[u8]| {
        let r = unpack_input_stream(bytes, &sb.dest, Strategy::Auto, &spill);
        if r.is_err() {
            assert!(
                std::fs::symlink_metadata(&sb.dest).is_err(),
                "a failed unpack left the destination behind: {r:?}"
            );
        }
        assert!(
            std::fs::symlink_metadata(sb.root().join("dest.tmpdir")).is_err(),
            "the .tmpdir survived"
        );
        assert!(
            std::fs::symlink_metadata(&spill).is_err(),
            "the spill file survived"
        );
    };
    match (mode & 0x7f) % 6 {
        0 => drop(extract_tar(body, &sb.dest)),
        1 => drop(extract_tar_gz(&gzip(body)[..], &sb.dest)),
        2 => drop(extract_tar_gz(body, &sb.dest)),
        3 => {
            let z = zstd::bulk::compress(body, 1).expect("zstd to memory");
            drop(extract_tar_zst(&z[..], &sb.dest));
        }
        4 => unpack(body),
        _ => unpack(&gzip(body)),
    }
    sb.check(&[]);
});
