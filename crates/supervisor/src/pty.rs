//! A pseudo-terminal for the child when the wrapper's stdin is a terminal (a pod container
//! with `tty: true` and `stdin: true`), as Argo's emissary does (`command_unix.go`).
//!
//! * The child gets a new pty as stdin, stdout and stderr, in a new session whose
//!   controlling terminal it is (so it is also the leader of its own process group, where
//!   forwarded signals go, and job control and `isatty` work as in an interactive shell).
//! * The pty's output is the child's only output: it goes to the wrapper's stdout and, when
//!   output is captured, to `stdout` and `combined` (there is no separate stderr on a
//!   terminal, as with Argo, whose copy splits it arbitrarily between the two streams).
//! * The wrapper's stdin is switched to raw mode for the life of the child (the child's pty
//!   does the line editing and echo) and restored afterwards; what arrives on it is copied
//!   to the pty.
//! * The window size is copied from the wrapper's stdin at the start and again on every
//!   SIGWINCH the wrapper receives; the kernel then signals the child's foreground group
//!   itself when the size changed, so SIGWINCH is not forwarded as well.

use crate::error::SupervisorError;
use nix::sys::termios::{SetArg, Termios, cfmakeraw, tcgetattr, tcsetattr};
use std::os::fd::{AsFd, OwnedFd};

/// Whether the wrapper's stdin is a terminal.
pub fn stdin_is_terminal() -> bool {
    rustix::termios::isatty(std::io::stdin())
}

/// The master side of the child's pty, and the wrapper's stdin settings to restore.
#[derive(Debug)]
pub struct Terminal {
    master: OwnedFd,
    saved: Option<Termios>,
}

impl Terminal {
    /// Open a pty sized like the wrapper's stdin and put the stdin in raw mode. Returns the
    /// terminal and the slave side, which becomes the child's stdin, stdout and stderr (drop
    /// it once the child is started, so the master reads end of file when the child exits).
    ///
    /// # Errors
    /// [`SupervisorError::Terminal`] if no pty can be opened.
    pub fn open() -> Result<(Self, OwnedFd), SupervisorError> {
        let pty = nix::pty::openpty(None, None).map_err(SupervisorError::Terminal)?;
        let stdin = std::io::stdin();
        let saved = match tcgetattr(stdin.as_fd()) {
            Ok(original) => {
                let mut raw = original.clone();
                cfmakeraw(&mut raw);
                match tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw) {
                    Ok(()) => Some(original),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot put stdin in raw mode");
                        None
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read stdin's terminal settings");
                None
            }
        };
        let terminal = Self {
            master: pty.master,
            saved,
        };
        terminal.resize();
        Ok((terminal, pty.slave))
    }

    /// A second descriptor of the master side (one is read for output, one written for
    /// input; they share the file description).
    ///
    /// # Errors
    /// [`SupervisorError::Terminal`] if `dup` fails.
    pub fn duplicate(&self) -> Result<OwnedFd, SupervisorError> {
        nix::unistd::dup(&self.master).map_err(SupervisorError::Terminal)
    }

    /// Give the pty the wrapper's stdin's window size (failures are logged only).
    pub fn resize(&self) {
        match rustix::termios::tcgetwinsize(std::io::stdin()) {
            Ok(size) => {
                if let Err(e) = rustix::termios::tcsetwinsize(&self.master, size) {
                    tracing::debug!(error = %e, "cannot set the pty's window size");
                } else {
                    tracing::debug!(rows = size.ws_row, cols = size.ws_col, "pty window size");
                }
            }
            Err(e) => tracing::debug!(error = %e, "cannot read stdin's window size"),
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Some(saved) = self.saved.take()
            && let Err(e) = tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &saved)
        {
            tracing::warn!(error = %e, "cannot restore stdin's terminal settings");
        }
    }
}
