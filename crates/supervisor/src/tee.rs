//! Fan-out of the child's output: stdout → the wrapper's stdout + `ctr/<name>/stdout` +
//! `ctr/<name>/combined`; stderr → the wrapper's stderr + `combined`.
//!
//! The capture files are opened once, for append with mode 0666, so container-set retries
//! accumulate; they exist only when `ARGO_INCLUDE_SCRIPT_OUTPUT` is true or the template
//! archives logs. Output streams through one fixed 64 KiB buffer: the child's pipes are
//! non-blocking and each readiness event moves at most one buffer, so the poll loop stays
//! responsive to signals however much the child writes. `combined` interleaves the two
//! streams in the order the reads happen, which is the write order up to one buffer.
//!
//! Writes to the wrapper's own stdout/stderr are plain blocking writes (those descriptors are
//! shared with the container runtime; the wrapper does not change their flags). A write
//! error there (nobody reading) stops passing that stream through but keeps capturing; a
//! write error on a capture file is logged once and that file is dropped.
//!
//! When the child runs on a pseudo-terminal (`pty.rs`) its only output is the terminal's
//! master side, attached as stdout (there is no separate stderr: a terminal merges them), and
//! the tee also relays the wrapper's stdin to the terminal ([`Tee::relay_input_to`]). The end
//! of a terminal's output reads as `EIO` (no process holds the other side any more), which is
//! taken as end of file.

use crate::error::SupervisorError;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Size of the one copy buffer.
pub const BUF_SIZE: usize = 64 * 1024;
/// How much [`Tee::drain`] reads at most per stream once the child is gone.
const DRAIN_LIMIT: usize = 16 * BUF_SIZE;

/// Which child stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The child's stdout.
    Out,
    /// The child's stderr.
    Err,
}

/// The fan-out state: capture files, the buffer, and the current child's pipes.
#[derive(Debug)]
pub struct Tee {
    stdout_file: Option<File>,
    combined_file: Option<File>,
    pass_out: bool,
    pass_err: bool,
    buf: Vec<u8>,
    out: Option<OwnedFd>,
    err: Option<OwnedFd>,
    /// The wrapper's stdin (a duplicate) and the terminal's master side it is copied to.
    input: Option<(OwnedFd, OwnedFd)>,
}

fn open_append(path: &Path) -> Result<File, SupervisorError> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o666)
        .open(path)
        .map_err(|source| SupervisorError::Capture {
            path: path.to_path_buf(),
            source,
        })
}

impl Tee {
    /// A tee that writes `stdout_file`/`combined_file` when `capture` is true.
    ///
    /// # Errors
    /// [`SupervisorError::Capture`] if a capture file cannot be opened.
    pub fn new(capture: bool, stdout_file: &Path, combined_file: &Path) -> Result<Self, SupervisorError> {
        let (stdout_file, combined_file) = if capture {
            (Some(open_append(stdout_file)?), Some(open_append(combined_file)?))
        } else {
            (None, None)
        };
        Ok(Self {
            stdout_file,
            combined_file,
            pass_out: true,
            pass_err: true,
            buf: vec![0; BUF_SIZE],
            out: None,
            err: None,
            input: None,
        })
    }

    /// Take over a new child's output: its stdout and, unless it runs on a terminal, its
    /// stderr (both made non-blocking).
    pub fn attach(&mut self, stdout: impl Into<OwnedFd>, stderr: Option<OwnedFd>) {
        let (out, err) = (stdout.into(), stderr);
        for fd in std::iter::once(&out).chain(err.as_ref()) {
            if let Err(e) = fcntl(fd.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)) {
                tracing::debug!(error = %e, "could not make a child pipe non-blocking");
            }
        }
        self.out = Some(out);
        self.err = err;
    }

    /// Copy the wrapper's stdin to `terminal` (the master side of the child's terminal) from
    /// now until the stdin ends or the child is detached.
    ///
    /// # Errors
    /// [`SupervisorError::Terminal`] if the stdin cannot be duplicated.
    pub fn relay_input_to(&mut self, terminal: OwnedFd) -> Result<(), SupervisorError> {
        let stdin = nix::unistd::dup(std::io::stdin().as_fd()).map_err(SupervisorError::Terminal)?;
        self.input = Some((stdin, terminal));
        Ok(())
    }

    /// Close whatever is left of the current child's pipes.
    pub fn detach(&mut self) {
        self.out = None;
        self.err = None;
        self.input = None;
    }

    /// The descriptors to poll for readability: the child's stdout and stderr, and the
    /// wrapper's stdin while it is relayed to a terminal.
    pub fn fds(&self) -> [Option<BorrowedFd<'_>>; 3] {
        [
            self.out.as_ref().map(|f| f.as_fd()),
            self.err.as_ref().map(|f| f.as_fd()),
            self.input.as_ref().map(|(stdin, _)| stdin.as_fd()),
        ]
    }

    /// Copy what the wrapper's stdin has ready to the child's terminal. Stops relaying at the
    /// end of the stdin, or when the terminal does not take the input (the child is not
    /// reading and the terminal's buffer is full: dropped rather than blocking the loop).
    pub fn relay_input(&mut self) {
        let Some((stdin, terminal)) = self.input.as_ref() else {
            return;
        };
        let n = loop {
            match nix::unistd::read(stdin, &mut self.buf) {
                Ok(n) => break n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(nix::errno::Errno::EAGAIN) => return,
                Err(e) => {
                    tracing::debug!(error = %e, "reading stdin failed, no more input for the child");
                    break 0;
                }
            }
        };
        if n == 0 {
            self.input = None;
            return;
        }
        match nix::unistd::write(terminal, &self.buf[..n]) {
            Ok(w) if w == n => {}
            Ok(w) => tracing::warn!(
                dropped = n - w,
                "the child's terminal took only part of the input"
            ),
            Err(e) => tracing::warn!(error = %e, bytes = n, "input for the child's terminal dropped"),
        }
    }

    /// Move at most one buffer from `stream` to its sinks. Returns the bytes moved (0 when
    /// nothing was readable); closes the stream at end of file.
    pub fn pump(&mut self, stream: Stream) -> usize {
        let slot = match stream {
            Stream::Out => &mut self.out,
            Stream::Err => &mut self.err,
        };
        let Some(fd) = slot.as_ref() else { return 0 };
        let n = loop {
            match nix::unistd::read(fd, &mut self.buf) {
                Ok(0) => {
                    *slot = None;
                    return 0;
                }
                Ok(n) => break n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(nix::errno::Errno::EAGAIN) => return 0,
                // A terminal whose other side no process holds any more: its end of file.
                Err(nix::errno::Errno::EIO) => {
                    *slot = None;
                    return 0;
                }
                Err(e) => {
                    tracing::debug!(?stream, error = %e, "reading the child's output failed");
                    *slot = None;
                    return 0;
                }
            }
        };
        let data = &self.buf[..n];
        match stream {
            Stream::Out => {
                if self.pass_out && write_fd_all(std::io::stdout().as_fd(), data).is_err() {
                    self.pass_out = false;
                }
                write_file(&mut self.stdout_file, data);
            }
            Stream::Err => {
                if self.pass_err && write_fd_all(std::io::stderr().as_fd(), data).is_err() {
                    self.pass_err = false;
                }
            }
        }
        write_file(&mut self.combined_file, data);
        n
    }

    /// Copy what is readable right now from both pipes, without waiting for end of file (a
    /// background process may hold the pipes open for ever), then detach.
    pub fn drain(&mut self) {
        for stream in [Stream::Out, Stream::Err] {
            let mut total = 0;
            while total < DRAIN_LIMIT {
                match self.pump(stream) {
                    0 => break,
                    n => total += n,
                }
            }
        }
        self.detach();
    }
}

/// Append to a capture file; drop it after the first error.
fn write_file(file: &mut Option<File>, data: &[u8]) {
    if let Some(f) = file
        && let Err(e) = f.write_all(data)
    {
        tracing::warn!(error = %e, "writing captured output failed, capture stopped");
        *file = None;
    }
}

/// Write all of `data` to `fd`, retrying on EINTR and waiting out EAGAIN.
fn write_fd_all(fd: BorrowedFd<'_>, mut data: &[u8]) -> nix::Result<()> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    while !data.is_empty() {
        match nix::unistd::write(fd, data) {
            Ok(0) => return Err(nix::errno::Errno::EIO),
            Ok(n) => data = &data[n..],
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => {
                let mut p = [PollFd::new(fd, PollFlags::POLLOUT)];
                poll(&mut p, PollTimeout::from(1000u16))?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_and_appends() {
        let d = std::env::temp_dir().join(format!("argoexec-tee-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let (so, co) = (d.join("stdout"), d.join("combined"));
        for round in 0..2 {
            let mut tee = Tee::new(true, &so, &co).unwrap();
            (tee.pass_out, tee.pass_err) = (false, false); // keep the test output clean
            let (r1, w1) = nix::unistd::pipe().unwrap();
            let (r2, w2) = nix::unistd::pipe().unwrap();
            tee.attach(r1, Some(r2));
            nix::unistd::write(&w1, b"out\n").unwrap();
            nix::unistd::write(&w2, b"err\n").unwrap();
            assert_eq!(tee.pump(Stream::Out), 4);
            assert_eq!(tee.pump(Stream::Out), 0, "nothing more readable, no blocking");
            assert_eq!(tee.pump(Stream::Err), 4);
            drop(w1);
            tee.pump(Stream::Out);
            assert!(tee.fds()[0].is_none(), "EOF closes the stream");
            tee.drain();
            let want = if round == 0 { "out\n" } else { "out\nout\n" };
            assert_eq!(std::fs::read_to_string(&so).unwrap(), want);
            drop(w2);
        }
        assert_eq!(std::fs::read_to_string(&co).unwrap(), "out\nerr\nout\nerr\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn no_capture_no_files() {
        let d = std::env::temp_dir().join(format!("argoexec-tee-test2-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let _ = Tee::new(false, &d.join("stdout"), &d.join("combined")).unwrap();
        assert!(!d.join("stdout").exists() && !d.join("combined").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
