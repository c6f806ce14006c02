//! Azurite, the Azure Storage emulator (npm, pinned in `tests/azurite`, installed by
//! `scripts/setup.sh`), blob service only, in memory, on a free loopback port. The launcher
//! (`tests/azurite/launch.js`) creates the containers asked for, says `READY`, and stops
//! when its stdin closes, so the emulator ends with the test process however that ends.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Azurite's well-known development account.
pub const ACCOUNT: &str = "devstoreaccount1";
/// Its well-known key (public; Microsoft documents it for the emulator).
pub const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// A running Azurite blob service.
#[derive(Debug)]
pub struct Azurite {
    child: Child,
    port: u16,
}

impl Azurite {
    /// Start Azurite and create `containers`.
    ///
    /// # Panics
    /// When `tests/azurite/node_modules` is missing (run `bash scripts/setup.sh`) or the
    /// emulator does not start.
    pub fn start(containers: &[&str]) -> Self {
        let dir = crate::workspace_root().join("tests/azurite");
        assert!(
            dir.join("node_modules/.bin/azurite-blob").exists(),
            "{}/node_modules is missing: run `bash scripts/setup.sh`",
            dir.display()
        );
        let port = crate::free_port();
        let mut child = Command::new("node")
            .arg(dir.join("launch.js"))
            .arg(port.to_string())
            .args(containers)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start node");
        let out = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(out).lines();
        match lines.next() {
            Some(Ok(l)) if l.trim() == "READY" => {}
            other => panic!("azurite did not start: {other:?}"),
        }
        Self { child, port }
    }

    /// The blob endpoint, ending in the account: `http://127.0.0.1:<port>/devstoreaccount1`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{ACCOUNT}", self.port)
    }
}

impl Drop for Azurite {
    /// Closing the launcher's stdin makes it stop the emulator and exit; killing the launcher
    /// instead would orphan the emulator, which keeps the test's stderr open (a `| tail` or a
    /// CI log pipe then never ends). Killed only if it has not gone within five seconds.
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
