//! [`Sweep`]: removes every Docker container of a local node (by its node label) when
//! dropped, so a test that fails before its node's shutdown leaves nothing running.

/// Drop guard removing the containers labelled `io.argoexec-rs.node=<label>`.
#[derive(Debug)]
pub struct Sweep(pub String);

impl Drop for Sweep {
    fn drop(&mut self) {
        let docker = if std::path::Path::new("/usr/bin/docker").exists() {
            "/usr/bin/docker"
        } else {
            "docker"
        };
        let filter = format!("label=io.argoexec-rs.node={}", self.0);
        let Ok(o) = std::process::Command::new(docker)
            .args(["ps", "-aq", "--filter", &filter])
            .output()
        else {
            return;
        };
        let ids: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if !ids.is_empty() {
            let _ = std::process::Command::new(docker)
                .args(["rm", "-f"])
                .args(&ids)
                .output();
        }
    }
}
