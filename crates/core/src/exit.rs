//! Exit-code rules and end-of-step messages shared by the wrapper, the flows, the binaries
//! and the controller side.

/// The message wait reports when `activeDeadlineSeconds` ends a step (Argo's wording, part of
/// the pod ↔ controller contract: the controller side matches it when it assesses a pod).
pub const DEADLINE_MESSAGE: &str = "Step exceeded its deadline";

/// Exit code of an executor (or emissary wrapper) failure, as in Argo.
pub const EXECUTOR_FAILURE: i32 = 64;

/// Exit code of a wrapped container whose pod's `supervisor` failed before the command could
/// start (init-less layout, Argo v4.1's `ExitCodeSupervisorPreMainFailure`, sysexits'
/// `EX_DATAERR`): the marker said `FAILED`, went stale or never appeared, or the input
/// artifacts could not be linked. The controller then ranks the supervisor's status first.
pub const SUPERVISOR_PRE_MAIN: i32 = 65;

/// The shell convention for a process killed by signal `n`: 128 + n (SIGTERM 143, SIGKILL 137).
pub fn signalled(n: i32) -> i32 {
    128 + n
}

/// Exit code for a `waitpid` status: the exit status, or 128 + signal.
pub fn from_wait_status(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => signalled(s),
        _ => EXECUTOR_FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    #[test]
    fn codes() {
        assert_eq!(from_wait_status(std::process::ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(from_wait_status(std::process::ExitStatus::from_raw(15)), 143);
        assert_eq!(from_wait_status(std::process::ExitStatus::from_raw(9)), 137);
    }
}
