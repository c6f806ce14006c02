//! Helpers shared by the artifact driver tests.

use std::path::Path;

use argoexec_artifacts::ByteStream;

/// Unpack a downloaded stream into `dest` the way init does (format detected, extracted
/// while it arrives, `spill` for what cannot stream) and return how it was unpacked.
pub async fn unpack_stream(body: ByteStream, dest: &Path, spill: &Path) -> argoexec_archive::Unpacked {
    let reader = tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(body));
    let (dest, spill) = (dest.to_path_buf(), spill.to_path_buf());
    tokio::task::spawn_blocking(move || {
        argoexec_archive::unpack_input_stream(
            std::io::BufReader::new(reader),
            &dest,
            argoexec_archive::Strategy::Auto,
            &spill,
        )
    })
    .await
    .unwrap()
    .unwrap()
}
