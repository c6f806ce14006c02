//! `extract_zip`: the safe zip extractor of `argoexec-archive` (`extract_zip`) and init's
//! unpack rules for zips (`unpack_input` with the `zip` strategy, `unpack_input_stream`
//! spilling a zip to disk first), on arbitrary bytes in a fresh scratch directory per input.
//!
//! The first byte picks the entry point (`0` `extract_zip`, `1` `unpack_input(Zip)`,
//! `2` `unpack_input(Auto)`, `3` `unpack_input_stream(Zip)`); the rest is the zip file.
//!
//! Checks: no panic; nothing is created beside the destination and the canary directory
//! next to it is untouched (zip-slip names, symlink entries, duplicate names); every entry
//! extracted resolves inside the destination and no symlink left there points out; a failed
//! `unpack_input*` leaves no `dest` and never its `.tmpdir`.

#![no_main]

use argoexec_archive::{Strategy, extract_zip, unpack_input, unpack_input_stream};
use argoexec_fuzz::Sandbox;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let sb = Sandbox::new();
    let zip = sb.root().join("in.zip");
    std::fs::write(&zip, body).expect("write the zip");
    let failed = match mode % 4 {
        0 => {
            drop(extract_zip(&zip, &sb.dest));
            false
        }
        1 => unpack_input(&zip, &sb.dest, Strategy::Zip).is_err(),
        2 => unpack_input(&zip, &sb.dest, Strategy::Auto).is_err(),
        _ => {
            let spill = sb.root().join("spill");
            let r = unpack_input_stream(body, &sb.dest, Strategy::Zip, &spill).is_err();
            assert!(
                std::fs::symlink_metadata(&spill).is_err(),
                "the spill file survived"
            );
            r
        }
    };
    if failed {
        assert!(
            std::fs::symlink_metadata(&sb.dest).is_err(),
            "a failed unpack left the destination behind"
        );
    }
    assert!(
        std::fs::symlink_metadata(sb.root().join("dest.tmpdir")).is_err(),
        "the .tmpdir survived"
    );
    sb.check(&["in.zip"]);
});
