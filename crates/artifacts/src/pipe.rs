//! [`pipe`]: a blocking [`std::io::Write`] on one side (a tar.gz writer on a blocking
//! thread), a [`ByteStream`] on the other (an upload), with a few 1 MiB chunks in between —
//! how an archive goes into a multipart upload with no copy on disk. If the upload side
//! goes away the writer gets `BrokenPipe`; if the producer fails it sends the error
//! ([`PipeFailer::fail`]) so the upload aborts instead of completing a truncated object.

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use crate::ByteStream;

const CHUNK: usize = 1 << 20;

/// The writing end.
#[derive(Debug)]
pub struct PipeWriter {
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    buf: BytesMut,
}

/// Sends a producer's failure down the pipe.
#[derive(Debug, Clone)]
pub struct PipeFailer(mpsc::Sender<std::io::Result<Bytes>>);

impl PipeFailer {
    /// End the stream with this error (the upload then fails and aborts).
    pub fn fail(self, e: std::io::Error) {
        let _ = self.0.blocking_send(Err(e));
    }
}

/// A pipe holding at most `chunks` MiB in flight.
pub fn pipe(chunks: usize) -> (PipeWriter, PipeFailer, ByteStream) {
    let (tx, rx) = mpsc::channel(chunks.max(1));
    let stream = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    (
        PipeWriter {
            tx: tx.clone(),
            buf: BytesMut::with_capacity(CHUNK),
        },
        PipeFailer(tx),
        Box::pin(stream),
    )
}

/// Run `produce` on a blocking thread, writing into a pipe whose reading end is returned;
/// an error of `produce` is sent down the pipe (so the upload aborts) and also returned by
/// the handle (whose message is the more precise one).
pub fn produce<T, E, F>(chunks: usize, produce: F) -> (ByteStream, tokio::task::JoinHandle<Result<T, E>>)
where
    F: FnOnce(PipeWriter) -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let (writer, failer, body) = pipe(chunks);
    let handle = tokio::task::spawn_blocking(move || {
        let r = produce(writer);
        match &r {
            Err(e) => failer.fail(std::io::Error::other(e.to_string())),
            Ok(_) => drop(failer),
        }
        r
    });
    (body, handle)
}

impl PipeWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = self.buf.split().freeze();
        self.buf.reserve(CHUNK);
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the upload stopped reading"))
    }
}

impl std::io::Write for PipeWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = data.len().min(CHUNK - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        let _ = self.send();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;
    use std::io::Write;

    #[tokio::test]
    async fn bytes_arrive_in_order_and_failures_travel() {
        let (mut w, f, body) = pipe(2);
        let t = tokio::task::spawn_blocking(move || {
            for i in 0..3000u32 {
                w.write_all(&i.to_le_bytes()).unwrap();
            }
            drop(w);
            drop(f);
        });
        let got: Vec<Bytes> = body.try_collect().await.unwrap();
        t.await.unwrap();
        let want: Vec<u8> = (0..3000u32).flat_map(|i| i.to_le_bytes()).collect();
        assert_eq!(got.concat(), want);

        let (mut w, f, body) = pipe(2);
        tokio::task::spawn_blocking(move || {
            w.write_all(b"partial").unwrap();
            drop(w);
            f.fail(std::io::Error::other("disk read error"));
        });
        let e = body.try_collect::<Vec<Bytes>>().await.unwrap_err();
        assert_eq!(e.to_string(), "disk read error");
    }
}
