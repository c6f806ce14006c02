//! [`Settings`]: how transfers run (part size, parallelism, retries, progress) and where
//! mounted secrets are, read once from the environment of init or wait.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `ARGOEXEC_ARTIFACT_PART_SIZE` | `8Mi` | multipart part size (≥ 5 MiB for S3) |
//! | `ARGOEXEC_ARTIFACT_RANGE_SIZE` | `16Mi` | download range size; ranges in flight = budget ÷ range size |
//! | `ARGOEXEC_ARTIFACT_PARALLELISM` | `8` | parts in flight per upload (the budget is part size × this); files in flight for directories |
//! | `ARGOEXEC_ARTIFACT_RETRIES` | `8` | retries of a failed request (transient errors only) |
//! | `ARGOEXEC_ARTIFACT_RETRY_TIMEOUT` | `3m` | give up retrying a request after this long |
//! | `ARGOEXEC_ARTIFACT_PROGRESS_INTERVAL` | `10s` | a progress line per transfer at most this often |
//! | `ARGOEXEC_ARTIFACT_CODEC` | `gzip` | `zstd`: `tar` outputs become `<name>.tar.zst` (opt-in; only argoexec-rs's init reads them) |
//! | `ARGOEXEC_ARTIFACT_S3_CHECKSUM` | `sha256` | integrity checksum of S3 uploads: `sha256`, `crc64nvme` or `none` (see [`UploadChecksum`]) |
//! | `ARGOEXEC_GCS_BASE_URL` | unset | the GCS driver's endpoint instead of Google's (an emulator); `http://` is allowed there |
//!
//! Memory of one transfer is bounded by the budget, part size × parallelism (64 MiB by
//! default), plus the compressor's buffers, whatever the artifact's size. Uploads use small
//! parts many at a time (measured best against S3 servers: 8 × 8 MiB beat 4 × 16 MiB by 15 %);
//! downloads use fewer, larger ranges within the same budget (fewer requests per byte).

use std::path::PathBuf;
use std::time::Duration;

use argoexec_core::PodPaths;
use argoexec_core::template::SecretKeySelector;

use crate::ArtifactError;

/// S3's smallest part (all parts but the last).
pub const MIN_PART_SIZE: usize = 5 << 20;

/// The compressor of `tar` output artifacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// tar.gz, what every Argo consumer reads (default).
    #[default]
    Gzip,
    /// tar.zst: faster; only argoexec-rs's init (and zstd-aware tools) read it.
    Zstd,
}

/// The integrity checksum S3 uploads carry (`x-amz-checksum-*` on every part, the
/// algorithm announced when the multipart upload starts), which the server verifies
/// against what it received and stores with the object.
///
/// SHA-256 is the default because it costs nothing extra here: `object_store` already
/// hashes every payload with SHA-256 for the SigV4 signature, and the checksum reuses that
/// digest. (It also spares moto a 2 GiB whole-object CRC at completion that it computes
/// when no algorithm was announced, which made the 2 GiB upload benchmark 1.4× slower
/// than the AWS CLI; with it, ours is faster.) `none` is for S3-compatible servers that
/// refuse the checksum headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UploadChecksum {
    /// SHA-256 (default).
    #[default]
    Sha256,
    /// CRC-64/NVME.
    Crc64Nvme,
    /// No checksum headers.
    None,
}

/// Transfer settings shared by every driver.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where secrets are mounted (`/argo/secret` under the pod root).
    pub paths: PodPaths,
    /// Multipart part size, in bytes.
    pub part_size: usize,
    /// Download range size, in bytes.
    pub range_size: usize,
    /// Parts, ranges or files in flight at once.
    pub parallelism: usize,
    /// Retries of one request.
    pub retries: usize,
    /// Stop retrying a request after this long.
    pub retry_timeout: Duration,
    /// Progress line interval.
    pub progress_interval: Duration,
    /// Compressor of `tar` output artifacts.
    pub codec: Codec,
    /// The GCS endpoint instead of `https://storage.googleapis.com` (an emulator).
    pub gcs_base_url: Option<String>,
    /// The checksum of S3 uploads.
    pub s3_checksum: UploadChecksum,
    /// How many times, and how often, to look for an artifact plugin's socket before giving
    /// up (Argo: 120 × 1 s, for a plugin container that starts after ours).
    pub plugin_socket_wait: (u32, Duration),
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            paths: PodPaths::default(),
            part_size: 8 << 20,
            range_size: 16 << 20,
            parallelism: 8,
            retries: 8,
            retry_timeout: Duration::from_secs(180),
            progress_interval: Duration::from_secs(10),
            codec: Codec::Gzip,
            gcs_base_url: None,
            s3_checksum: UploadChecksum::Sha256,
            plugin_socket_wait: argoexec_artifact_plugin::client::SOCKET_WAIT,
        }
    }
}

/// Parse `16Mi`, `8MiB`, `10M`, `1048576`.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: usize = num.parse().ok()?;
    let mult: usize = match unit.trim() {
        "" | "B" => 1,
        "Ki" | "KiB" | "K" | "KB" | "k" => 1 << 10,
        "Mi" | "MiB" | "M" | "MB" => 1 << 20,
        "Gi" | "GiB" | "G" | "GB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

impl Settings {
    /// Defaults overridden by the `ARGOEXEC_ARTIFACT_*` variables (see the module table);
    /// `paths` from `ARGOEXEC_PATH_ROOT`.
    ///
    /// # Errors
    /// A variable that does not parse, naming it.
    pub fn from_env() -> Result<Self, ArtifactError> {
        let mut s = Self {
            paths: PodPaths::from_env(),
            ..Self::default()
        };
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let bad = |k: &str, v: &str, want: &str| {
            ArtifactError::config("transfer", format!("{k}={v:?}: expected {want}"))
        };
        if let Some(v) = var("ARGOEXEC_ARTIFACT_PART_SIZE") {
            s.part_size = parse_size(&v)
                .filter(|n| *n >= MIN_PART_SIZE)
                .ok_or_else(|| bad("ARGOEXEC_ARTIFACT_PART_SIZE", &v, "a size of at least 5Mi"))?;
        }
        if let Some(v) = var("ARGOEXEC_ARTIFACT_RANGE_SIZE") {
            s.range_size = parse_size(&v)
                .filter(|n| *n >= 1 << 20)
                .ok_or_else(|| bad("ARGOEXEC_ARTIFACT_RANGE_SIZE", &v, "a size of at least 1Mi"))?;
        }
        if let Some(v) = var("ARGOEXEC_ARTIFACT_PARALLELISM") {
            s.parallelism = v
                .trim()
                .parse()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| bad("ARGOEXEC_ARTIFACT_PARALLELISM", &v, "1 to 64"))?;
        }
        if let Some(v) = var("ARGOEXEC_ARTIFACT_RETRIES") {
            s.retries = v
                .trim()
                .parse()
                .ok()
                .filter(|n| *n <= 100)
                .ok_or_else(|| bad("ARGOEXEC_ARTIFACT_RETRIES", &v, "0 to 100"))?;
        }
        let duration = |k: &str| -> Result<Option<Duration>, ArtifactError> {
            match var(k) {
                None => Ok(None),
                Some(v) => argoexec_core::template::container::parse_go_duration(&v)
                    .map(Some)
                    .ok_or_else(|| bad(k, &v, "a duration such as 30s or 2m")),
            }
        };
        if let Some(d) = duration("ARGOEXEC_ARTIFACT_RETRY_TIMEOUT")? {
            s.retry_timeout = d;
        }
        if let Some(v) = var("ARGOEXEC_ARTIFACT_CODEC") {
            s.codec = match v.trim() {
                "gzip" => Codec::Gzip,
                "zstd" => Codec::Zstd,
                _ => return Err(bad("ARGOEXEC_ARTIFACT_CODEC", &v, "gzip or zstd")),
            };
        }
        if let Some(v) = var("ARGOEXEC_ARTIFACT_S3_CHECKSUM") {
            s.s3_checksum = match v.trim().to_ascii_lowercase().as_str() {
                "sha256" => UploadChecksum::Sha256,
                "crc64nvme" => UploadChecksum::Crc64Nvme,
                "none" => UploadChecksum::None,
                _ => {
                    return Err(bad(
                        "ARGOEXEC_ARTIFACT_S3_CHECKSUM",
                        &v,
                        "sha256, crc64nvme or none",
                    ));
                }
            };
        }
        if let Some(d) = duration("ARGOEXEC_ARTIFACT_PROGRESS_INTERVAL")? {
            s.progress_interval = d.max(Duration::from_millis(100));
        }
        s.gcs_base_url = var("ARGOEXEC_GCS_BASE_URL").map(|v| v.trim().trim_end_matches('/').to_string());
        Ok(s)
    }

    /// Bytes in flight at most per transfer.
    pub fn memory_budget(&self) -> usize {
        self.part_size * self.parallelism
    }

    /// Download ranges in flight: as many ranges as fit in the budget, at least one.
    pub fn download_parallelism(&self) -> usize {
        (self.memory_budget() / self.range_size.max(1)).clamp(1, self.parallelism)
    }

    /// Where the secret key is mounted.
    pub fn secret_path(&self, sel: &SecretKeySelector) -> PathBuf {
        self.paths.secret(&sel.name, &sel.key)
    }

    /// Read a mounted secret value exactly.
    ///
    /// # Errors
    /// [`ArtifactError::Secret`] naming the secret, key and path.
    pub fn secret_bytes(&self, sel: &SecretKeySelector) -> Result<Vec<u8>, ArtifactError> {
        let path = self.secret_path(sel);
        std::fs::read(&path).map_err(|source| ArtifactError::Secret {
            name: sel.name.clone(),
            key: sel.key.clone(),
            path,
            source,
        })
    }

    /// Read a credential (access key, password, token): UTF-8 with surrounding whitespace
    /// trimmed — a trailing newline from `kubectl create secret --from-file` is the most
    /// common cause of "signature does not match", and no credential contains whitespace.
    ///
    /// # Errors
    /// [`ArtifactError::Secret`].
    pub fn credential(&self, sel: &SecretKeySelector) -> Result<String, ArtifactError> {
        let bytes = self.secret_bytes(sel)?;
        String::from_utf8(bytes)
            .map(|s| s.trim().to_string())
            .map_err(|e| ArtifactError::Secret {
                name: sel.name.clone(),
                key: sel.key.clone(),
                path: self.secret_path(sel),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16Mi"), Some(16 << 20));
        let d = Settings::default();
        assert_eq!((d.memory_budget(), d.download_parallelism()), (64 << 20, 4));
        assert_eq!(parse_size("8MiB"), Some(8 << 20));
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("1Gi"), Some(1 << 30));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("5Qi"), None);
    }

    #[test]
    fn credentials_are_trimmed_and_missing_ones_named() {
        let d = tempfile::tempdir().unwrap();
        let s = Settings {
            paths: PodPaths::new(d.path()),
            ..Settings::default()
        };
        let sel = SecretKeySelector {
            name: "creds".into(),
            key: "accessKey".into(),
        };
        let e = s.credential(&sel).unwrap_err().to_string();
        assert!(
            e.contains("\"creds\"") && e.contains("argo/secret/creds/accessKey"),
            "{e}"
        );
        std::fs::create_dir_all(d.path().join("argo/secret/creds")).unwrap();
        std::fs::write(d.path().join("argo/secret/creds/accessKey"), "AKID\n").unwrap();
        assert_eq!(s.credential(&sel).unwrap(), "AKID");
    }
}
