//! Streaming multipart upload with bounded memory.
//!
//! Chunks from the producer (a tar.gz writer, a file reader) are gathered into parts
//! without copying. Data that ends before the first part is full goes up as one `PUT`;
//! otherwise a multipart upload starts and every full part is sent on its own task while
//! the next one fills. A [`Budget`] of part size × parallelism bytes bounds what is held:
//! filling a part takes its share first, an in-flight part returns it when the server has
//! it. For streams of unknown length the part size doubles every 2 000 parts (S3 allows
//! 10 000), so any size fits. On any failure the multipart upload is aborted, so no
//! complete-looking object is ever left.

use std::sync::Arc;

use bytes::Bytes;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use object_store::path::Path;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{ArtifactError, ByteStream, Progress, Settings};

const UNIT: usize = 64 << 10;

/// Bytes that may be held in memory by the uploads of one transfer.
#[derive(Debug, Clone)]
pub struct Budget {
    sem: Arc<Semaphore>,
    units: u32,
}

impl Budget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> Self {
        let units = u32::try_from((bytes / UNIT).max(1)).unwrap_or(u32::MAX >> 4);
        Self {
            sem: Arc::new(Semaphore::new(units as usize)),
            units,
        }
    }

    /// Take room for `bytes` (at most the whole budget), waiting while it is in use.
    pub async fn take(&self, bytes: usize) -> OwnedSemaphorePermit {
        let want = u32::try_from(bytes.div_ceil(UNIT).max(1))
            .unwrap_or(u32::MAX)
            .min(self.units);
        self.sem
            .clone()
            .acquire_many_owned(want)
            .await
            .expect("the budget semaphore is never closed")
    }
}

/// The part size for part number `index` (0-based): the base size, doubled every 2 000
/// parts, at most 4 GiB.
pub fn part_size(base: usize, index: usize) -> usize {
    let doublings = u32::try_from(index / 2000).unwrap_or(u32::MAX).min(10);
    base.saturating_mul(1 << doublings).min(4 << 30)
}

/// The base part size for an object of known `size`: the configured size, or larger so
/// that it fits in 9 000 parts.
pub fn part_size_for(settings: &Settings, size: Option<u64>) -> usize {
    let need = size.map_or(0, |s| usize::try_from(s.div_ceil(9000)).unwrap_or(usize::MAX));
    settings.part_size.max(need)
}

type Mapper = dyn Fn(&'static str, object_store::Error) -> ArtifactError + Send + Sync;

/// One part on its way.
type InFlight = FuturesUnordered<tokio::task::JoinHandle<Result<(), object_store::Error>>>;

async fn next_done(in_flight: &mut InFlight) -> Option<Result<(), object_store::Error>> {
    in_flight
        .next()
        .await
        .map(|j| j.unwrap_or_else(|e| Err(object_store::Error::JoinError { source: e })))
}

/// Upload `body` to `path`. Returns the byte count.
///
/// # Errors
/// The producer's error, or the store's (mapped by `map_err`); the upload is aborted.
#[allow(clippy::too_many_arguments)]
pub async fn upload(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    mut body: ByteStream,
    size_hint: Option<u64>,
    settings: &Settings,
    budget: &Budget,
    progress: &Progress,
    map_err: &Mapper,
) -> Result<u64, ArtifactError> {
    let base = part_size_for(settings, size_hint);
    let mut part_index = 0usize;
    let mut want = part_size(base, 0);
    let mut permit = budget.take(want).await;
    let mut pending: Vec<Bytes> = Vec::new();
    let mut pending_len = 0usize;
    let mut total = 0u64;
    let mut multipart: Option<Box<dyn MultipartUpload>> = None;
    let mut in_flight = InFlight::new();

    let result: Result<(), ArtifactError> = async {
        loop {
            // Surface a failed part early instead of after the whole stream.
            while let Some(Some(done)) = next_done(&mut in_flight).now_or_never() {
                done.map_err(|e| map_err("upload a part to", e))?;
            }
            let chunk = match body.next().await {
                Some(Ok(c)) => c,
                Some(Err(e)) => {
                    return Err(ArtifactError::Remote {
                        location: path.to_string(),
                        action: "produce the data to upload to",
                        message: e.to_string(),
                    });
                }
                None => break,
            };
            let mut chunk = chunk;
            while !chunk.is_empty() {
                let room = want - pending_len;
                let piece = if chunk.len() > room {
                    chunk.split_to(room)
                } else {
                    std::mem::take(&mut chunk)
                };
                pending_len += piece.len();
                pending.push(piece);
                if pending_len == want {
                    if multipart.is_none() {
                        multipart = Some(
                            store
                                .put_multipart(path)
                                .await
                                .map_err(|e| map_err("start a multipart upload to", e))?,
                        );
                    }
                    let up = multipart.as_mut().expect("started above");
                    let payload: PutPayload = std::mem::take(&mut pending).into_iter().collect();
                    let n = pending_len as u64;
                    pending_len = 0;
                    let part = up.put_part(payload);
                    let held = permit;
                    in_flight.push(tokio::spawn(async move {
                        let r = part.await;
                        drop(held);
                        r
                    }));
                    total += n;
                    progress.add(n);
                    part_index += 1;
                    want = part_size(base, part_index);
                    // Wait for room for the next part, but stop at the first failed part.
                    permit = loop {
                        tokio::select! {
                            p = budget.take(want) => break p,
                            Some(done) = next_done(&mut in_flight) => {
                                done.map_err(|e| map_err("upload a part to", e))?;
                            }
                        }
                    };
                }
            }
        }
        match multipart.as_mut() {
            None => {
                let payload: PutPayload = std::mem::take(&mut pending).into_iter().collect();
                store.put(path, payload).await.map_err(|e| map_err("upload", e))?;
            }
            Some(up) => {
                if pending_len > 0 {
                    let payload: PutPayload = std::mem::take(&mut pending).into_iter().collect();
                    in_flight.push(tokio::spawn(up.put_part(payload)));
                }
                while let Some(done) = next_done(&mut in_flight).await {
                    done.map_err(|e| map_err("upload a part to", e))?;
                }
                up.complete()
                    .await
                    .map_err(|e| map_err("complete the multipart upload to", e))?;
            }
        }
        total += pending_len as u64;
        progress.add(pending_len as u64);
        drop(permit);
        Ok(())
    }
    .await;
    match result {
        Ok(()) => Ok(total),
        Err(e) => {
            for j in &in_flight {
                j.abort();
            }
            if let Some(mut up) = multipart
                && let Err(abort) = up.abort().await
            {
                tracing::warn!(location = %path, error = %abort, "could not abort the multipart upload; the repository may keep its parts until a lifecycle rule removes them");
            }
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_sizes_grow_to_fit_ten_thousand_parts() {
        let s = Settings::default();
        assert_eq!(part_size_for(&s, None), 8 << 20);
        assert_eq!(
            part_size_for(&s, Some(1 << 40)),
            (1u64 << 40).div_ceil(9000) as usize
        );
        assert_eq!(part_size(8 << 20, 0), 8 << 20);
        assert_eq!(part_size(8 << 20, 1999), 8 << 20);
        assert_eq!(part_size(8 << 20, 2000), 16 << 20);
        let total: u64 = (0..10_000).map(|i| part_size(5 << 20, i) as u64).sum();
        assert!(total > 150 << 30, "{total}");
    }
}
