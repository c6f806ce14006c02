//! Parallel ranged downloads: an object of known size is cut into ranges of the range size,
//! fetched as many at a time as the memory budget holds (each retried on transient errors), and either written in
//! place at its offset ([`to_file`]) or delivered strictly in order ([`ordered`]) so that an
//! archive can be extracted while it downloads. At most the budget (part size ×
//! parallelism) is held at once.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};

use crate::{ArtifactError, ByteStream, Progress, Settings};

/// Something ranges of one object can be fetched from.
pub trait RangeSource: Send + Sync + 'static {
    /// Fetch `range` (end exclusive) of the object.
    fn fetch(&self, range: Range<u64>) -> BoxFuture<'static, Result<Bytes, ArtifactError>>;
}

/// The ranges covering `0..size` in steps of `part`.
pub fn ranges(size: u64, part: u64) -> Vec<Range<u64>> {
    let part = part.max(1);
    (0..size.div_ceil(part))
        .map(|i| i * part..((i + 1) * part).min(size))
        .collect()
}

/// True for errors worth another attempt (not absence, not a refusal, not bad config).
pub fn transient(e: &ArtifactError) -> bool {
    matches!(e, ArtifactError::Remote { .. })
}

/// Run `attempt` until it succeeds, fails for good, or `settings.retries` retries (with
/// exponential backoff from 100 ms, capped at 10 s) are used up.
pub async fn retrying<T, F, Fut>(settings: &Settings, what: &str, mut attempt: F) -> Result<T, ArtifactError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ArtifactError>>,
{
    let start = std::time::Instant::now();
    let mut delay = std::time::Duration::from_millis(100);
    let mut tries = 0;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e)
                if transient(&e) && tries < settings.retries && start.elapsed() < settings.retry_timeout =>
            {
                tries += 1;
                tracing::warn!(what, attempt = tries, error = %e, retry_in = ?delay, "transient artifact error; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(10));
            }
            Err(e) => return Err(e),
        }
    }
}

fn fetch_retrying(
    src: &Arc<dyn RangeSource>,
    settings: &Arc<Settings>,
    r: Range<u64>,
) -> impl std::future::Future<Output = Result<(u64, Bytes), ArtifactError>> + use<> {
    let src = src.clone();
    let settings = settings.clone();
    async move {
        let what = format!("range {}-{}", r.start, r.end);
        let bytes = retrying(&settings, &what, || src.fetch(r.clone())).await?;
        if bytes.len() as u64 != r.end - r.start {
            return Err(ArtifactError::Remote {
                location: what,
                action: "download",
                message: format!(
                    "server returned {} bytes for a {}-byte range",
                    bytes.len(),
                    r.end - r.start
                ),
            });
        }
        Ok((r.start, bytes))
    }
}

/// The object from byte `from` on as an in-order stream, fetched `parallelism` ranges
/// ahead (`from` is 0, or a part boundary the caller already has).
pub fn ordered(
    src: Arc<dyn RangeSource>,
    size: u64,
    from: u64,
    settings: Arc<Settings>,
    progress: Arc<Progress>,
) -> ByteStream {
    let mut parts = ranges(size, settings.range_size as u64);
    parts.retain(|r| r.start >= from);
    let par = settings.download_parallelism();
    let s = futures::stream::iter(parts)
        .map(move |r| fetch_retrying(&src, &settings, r))
        .buffered(par)
        .map_ok(move |(_, b)| {
            progress.add(b.len() as u64);
            b
        })
        .map_err(std::io::Error::other);
    Box::pin(s)
}

/// Download the object into the new file `dest` (preallocated sparse to `size`), ranges
/// written at their offsets as they arrive. The file is removed on failure.
///
/// # Errors
/// The first failed range (after retries), or a write error.
pub async fn to_file(
    src: Arc<dyn RangeSource>,
    size: u64,
    dest: &Path,
    settings: Arc<Settings>,
    progress: Arc<Progress>,
) -> Result<u64, ArtifactError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dest)
        .map_err(|e| ArtifactError::io("create", dest, e))?;
    file.set_len(size)
        .map_err(|e| ArtifactError::io("size", dest, e))?;
    let file = Arc::new(file);
    let par = settings.download_parallelism();
    let dest_buf = dest.to_path_buf();
    let result = futures::stream::iter(ranges(size, settings.range_size as u64))
        .map(|r| fetch_retrying(&src, &settings, r))
        .buffer_unordered(par)
        .map(|res| {
            let file = file.clone();
            let dest = dest_buf.clone();
            let progress = progress.clone();
            async move {
                let (off, bytes) = res?;
                let n = bytes.len() as u64;
                crate::blocking(move || {
                    use std::os::unix::fs::FileExt;
                    file.write_all_at(&bytes, off)
                        .map_err(|e| ArtifactError::io("write", &dest, e))
                })
                .await?;
                progress.add(n);
                Ok::<_, ArtifactError>(())
            }
        })
        .buffer_unordered(par)
        .try_collect::<Vec<()>>()
        .await;
    match result {
        Ok(_) => Ok(size),
        Err(e) => {
            let _ = std::fs::remove_file(dest);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_exactly() {
        assert_eq!(ranges(0, 4), Vec::<Range<u64>>::new());
        assert_eq!(ranges(4, 4), vec![0..4]);
        assert_eq!(ranges(9, 4), vec![0..4, 4..8, 8..9]);
    }

    struct Flaky {
        data: Bytes,
        fails: std::sync::atomic::AtomicUsize,
    }

    impl RangeSource for Flaky {
        fn fetch(&self, r: Range<u64>) -> BoxFuture<'static, Result<Bytes, ArtifactError>> {
            let fail = self
                .fails
                .fetch_update(
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                    |n| n.checked_sub(1),
                )
                .is_ok();
            let b = self.data.slice(r.start as usize..r.end as usize);
            Box::pin(async move {
                if fail {
                    Err(ArtifactError::Remote {
                        location: "flaky".into(),
                        action: "get",
                        message: "connection reset".into(),
                    })
                } else {
                    Ok(b)
                }
            })
        }
    }

    fn settings() -> Arc<Settings> {
        Arc::new(Settings {
            part_size: 7,
            range_size: 7,
            parallelism: 3,
            ..Settings::default()
        })
    }

    #[tokio::test]
    async fn ordered_and_in_place_agree_despite_transient_failures() {
        let data: Bytes = (0..100u8).collect::<Vec<_>>().into();
        let src: Arc<dyn RangeSource> = Arc::new(Flaky {
            data: data.clone(),
            fails: 3.into(),
        });
        let p = Arc::new(Progress::new(
            "download",
            "t",
            Some(100),
            std::time::Duration::from_secs(60),
        ));
        let got: Vec<Bytes> = ordered(src.clone(), 100, 0, settings(), p.clone())
            .try_collect()
            .await
            .unwrap();
        assert_eq!(got.concat(), data.to_vec());
        assert_eq!(p.bytes(), 100);
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        to_file(src, 100, &f, settings(), p).await.unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), data.to_vec());
    }

    #[tokio::test]
    async fn permanent_failure_removes_the_file() {
        let src: Arc<dyn RangeSource> = Arc::new(Flaky {
            data: Bytes::from_static(&[0; 50]),
            fails: usize::MAX.into(),
        });
        let s = Arc::new(Settings {
            retries: 2,
            ..(*settings()).clone()
        });
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        let p = Arc::new(Progress::new(
            "download",
            "t",
            None,
            std::time::Duration::from_secs(60),
        ));
        let e = to_file(src, 50, &f, s, p).await.unwrap_err();
        assert!(e.to_string().contains("connection reset"), "{e}");
        assert!(!f.exists());
    }
}
