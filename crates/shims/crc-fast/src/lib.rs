//! argoexec-rs's stand-in for [crc-fast](https://crates.io/crates/crc-fast), patched in by the
//! workspace (`[patch.crates-io]` in the root `Cargo.toml`).
//!
//! Why: object_store's `aws` feature depends on crc-fast for one thing, the CRC-64/NVME of an
//! upload's body, computed only when an S3 checksum algorithm is configured
//! (`AWS_CHECKSUM_ALGORITHM=crc64nvme`). crc-fast links the tables and SIMD kernels of every
//! CRC it knows whichever one is asked for: 0.69 MB of the image's 13.5 MB `argoexec`
//! (issue 17, docs/performance.md). This crate offers the part of crc-fast's API object_store
//! calls ([`CrcAlgorithm::Crc64Nvme`], [`Digest::new`], [`Digest::update`],
//! [`Digest::finalize`]) and computes it with the maintained `crc` crate (slice-by-16 tables,
//! 32 KiB). Should object_store call more of crc-fast, the build fails here rather than
//! computing anything wrong; drop the patch when object_store makes crc-fast optional.

use crc::{CRC_64_NVME, Crc, Table};

/// The one algorithm object_store asks for.
static NVME: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_NVME);

/// The CRC algorithms this stand-in computes: CRC-64/NVME only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CrcAlgorithm {
    /// CRC-64/NVME (reflected polynomial 0xad93d23594c93659, as S3's `x-amz-checksum-crc64nvme`).
    Crc64Nvme,
}

/// A running CRC over bytes given in pieces.
#[derive(Clone)]
pub struct Digest {
    inner: crc::Digest<'static, u64, Table<16>>,
}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Digest")
            .field("algorithm", &CrcAlgorithm::Crc64Nvme)
            .finish_non_exhaustive()
    }
}

impl Digest {
    /// Start a digest of `algorithm`.
    pub fn new(algorithm: CrcAlgorithm) -> Self {
        match algorithm {
            CrcAlgorithm::Crc64Nvme => Self { inner: NVME.digest() },
        }
    }

    /// Add `data` to the digest.
    pub fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
    }

    /// The CRC of everything added so far (the digest can go on).
    pub fn finalize(&self) -> u64 {
        self.inner.clone().finalize()
    }
}

/// The CRC of `data` in one call.
pub fn checksum(algorithm: CrcAlgorithm, data: &[u8]) -> u64 {
    let mut d = Digest::new(algorithm);
    d.update(data);
    d.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalogue's check value (CRC of "123456789"), and the same CRC given in pieces
    /// and read part way, as object_store feeds a multi-part body.
    #[test]
    fn crc64_nvme_matches_the_catalogue_in_one_piece_and_many() {
        assert_eq!(
            checksum(CrcAlgorithm::Crc64Nvme, b"123456789"),
            0xae8b_1486_0a79_9888
        );
        let mut d = Digest::new(CrcAlgorithm::Crc64Nvme);
        d.update(b"1234");
        let part = d.finalize();
        d.update(b"");
        d.update(b"56789");
        assert_eq!(part, checksum(CrcAlgorithm::Crc64Nvme, b"1234"));
        assert_eq!(d.finalize(), 0xae8b_1486_0a79_9888);
        assert_eq!(checksum(CrcAlgorithm::Crc64Nvme, b""), 0);
    }

    /// A megabyte given in uneven pieces has the CRC of the whole.
    #[test]
    fn a_large_body_in_uneven_pieces_equals_one_piece() {
        let body: Vec<u8> = (0..1_000_003u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let whole = checksum(CrcAlgorithm::Crc64Nvme, &body);
        let mut d = Digest::new(CrcAlgorithm::Crc64Nvme);
        for piece in body.chunks(65_537) {
            d.update(piece);
        }
        assert_eq!(d.finalize(), whole);
        assert_ne!(whole, 0);
    }
}
