//! [`Progress`]: byte counting for one transfer, with a log line (bytes, rate, share done)
//! at most every `progress_interval` and a summary at the end.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Counts the bytes of one transfer and logs progress.
#[derive(Debug)]
pub struct Progress {
    what: &'static str,
    location: String,
    total: Option<u64>,
    done: AtomicU64,
    start: Instant,
    interval: Duration,
    last: Mutex<Instant>,
}

fn mib(b: u64) -> f64 {
    b as f64 / f64::from(1u32 << 20)
}

impl Progress {
    /// Start counting `what` (`upload`, `download`) of `location`.
    pub fn new(what: &'static str, location: &str, total: Option<u64>, interval: Duration) -> Self {
        let now = Instant::now();
        Self {
            what,
            location: location.to_string(),
            total,
            done: AtomicU64::new(0),
            start: now,
            interval,
            last: Mutex::new(now),
        }
    }

    /// Bytes so far.
    pub fn bytes(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Count `n` more bytes; logs when the interval has passed.
    pub fn add(&self, n: u64) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        let now = Instant::now();
        let due = {
            let mut last = self
                .last
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if now.duration_since(*last) >= self.interval {
                *last = now;
                true
            } else {
                false
            }
        };
        if due {
            let secs = now.duration_since(self.start).as_secs_f64().max(1e-3);
            let pct = self
                .total
                .filter(|t| *t > 0)
                .map(|t| done as f64 * 100.0 / t as f64);
            tracing::info!(
                what = self.what,
                location = %self.location,
                mib = format_args!("{:.1}", mib(done)),
                mib_per_s = format_args!("{:.1}", mib(done) / secs),
                percent = pct.map(|p| format!("{p:.0}")).unwrap_or_default(),
                "artifact transfer in progress"
            );
        }
    }

    /// Log the summary; returns the byte count.
    pub fn finish(&self) -> u64 {
        let done = self.bytes();
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        tracing::info!(
            what = self.what,
            location = %self.location,
            bytes = done,
            seconds = format_args!("{secs:.2}"),
            mib_per_s = format_args!("{:.1}", mib(done) / secs),
            "artifact transfer done"
        );
        done
    }
}
