//! The wrapper's v4.1 inputs: arguments offloaded to `ARGO_CONTAINER_ARGS_FILE`, the trace
//! context (`TRACEPARENT`/`TRACESTATE`), and a pty for a command whose stdin is a terminal.

use crate::pod::*;
use std::fs;
use std::io::{Read, Write};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Prints each argument after the script on a line of `seen`.
const PRINT_ARGS: &str = r#"printf '%s\n' "$@" > seen"#;

#[test]
fn offloaded_arguments_are_appended_and_long_ones_become_at_files() {
    let pod = Pod::new();
    let long = "L".repeat(200 * 1024);
    let file = pod.root().join("ARGO_CONTAINER_ARGS_FILE");
    fs::write(&file, serde_json::to_string(&["short", long.as_str()]).unwrap()).unwrap();
    let mut c = pod.wrap("main", PLAIN, &["/bin/sh", "-c", PRINT_ARGS, "sh", "given"]);
    c.env("ARGO_CONTAINER_ARGS_FILE", &file);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Arguments count from 0 after the program: -c, the script, sh, given, short, long → 5.
    let offloaded = pod.root().join("tmp/argo_arg_5.txt");
    assert_eq!(
        fs::read_to_string(pod.work().join("seen")).unwrap(),
        format!("given\nshort\n@{}\n", offloaded.display())
    );
    assert_eq!(fs::read_to_string(&offloaded).unwrap(), long);
}

#[test]
fn a_bad_arguments_file_is_a_wrapper_failure_naming_the_variable_and_the_file() {
    let pod = Pod::new();
    let missing = pod.root().join("no-such-args.json");
    let bad = pod.root().join("bad-args.json");
    fs::write(&bad, r#"{"args": ["x"]}"#).unwrap();
    for file in [&missing, &bad] {
        let mut c = pod.sh("main", PLAIN, "touch ran");
        c.env("ARGO_CONTAINER_ARGS_FILE", file);
        let out = run(c);
        assert_eq!(out.status.code(), Some(64));
        let err = text(&out.stderr);
        assert!(
            err.contains("ARGO_CONTAINER_ARGS_FILE") && err.contains(&file.display().to_string()),
            "{err}"
        );
        assert_eq!(pod.exitcode("main").as_deref(), Some("64"));
        assert!(!pod.work().join("ran").exists(), "the command ran");
    }
    assert!(
        pod.termination_log().contains("not a JSON array of strings"),
        "{}",
        pod.termination_log()
    );
}

#[test]
fn the_trace_context_reaches_the_command() {
    let pod = Pod::new();
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let state = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
    let mut c = pod.sh("main", PLAIN, r#"printf '%s|%s' "$TRACEPARENT" "$TRACESTATE""#);
    c.env("TRACEPARENT", parent).env("TRACESTATE", state);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), format!("{parent}|{state}"));
}

/// Collect a reader's bytes on a thread.
fn collect(mut from: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    seen
}

/// The child on a pty: `isatty`, the window size and its change, input from the wrapper's
/// stdin, the wrapper's stdin in raw mode while the child runs and restored after. (`nix`'s
/// `pty` and `termios` are enabled for this binary by `argoexec-supervisor`.)
#[test]
fn a_terminal_stdin_gives_the_command_a_pty() {
    use nix::sys::termios::{LocalFlags, tcgetattr};
    let pod = Pod::new();
    let size = nix::pty::Winsize {
        ws_row: 33,
        ws_col: 101,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    let script = "[ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo tty-ok; echo \"size $(stty size)\"; \
                  while [ ! -e resized ]; do sleep 0.02; done; echo \"size $(stty size)\"; \
                  IFS= read -r line; echo \"got:$line\"";
    let mut c = pod.sh("main", PLAIN, script);
    c.env("ARGO_INCLUDE_SCRIPT_OUTPUT", "true")
        .env("RUST_LOG", "debug")
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::piped())
        .stderr(fs::File::create(pod.root().join("logs/main.log")).unwrap());
    let mut child = c.spawn().unwrap();
    let stdout = collect(child.stdout.take().unwrap());
    let shown = |s: &str| String::from_utf8_lossy(&stdout.lock().unwrap()).contains(s);
    assert!(
        eventually(Duration::from_secs(10), || shown("size 33 101")),
        "{}",
        pod.log("main")
    );
    assert!(shown("tty-ok"), "stdin, stdout and stderr are a terminal");
    let outer = tcgetattr(&pty.master).unwrap();
    assert!(
        !outer.local_flags.contains(LocalFlags::ICANON),
        "stdin is raw while the child runs"
    );

    // Resize the wrapper's terminal, then tell it as the runtime would.
    let stty = std::process::Command::new("stty")
        .args(["rows", "44", "cols", "120"])
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .status()
        .unwrap();
    assert!(stty.success());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGWINCH,
    )
    .unwrap();
    pod.await_log("main", "rows=44");
    fs::write(pod.work().join("resized"), "").unwrap();
    assert!(
        eventually(Duration::from_secs(10), || shown("size 44 120")),
        "{}",
        pod.log("main")
    );

    let mut input = fs::File::from(pty.master.try_clone().unwrap());
    input.write_all(b"hello\n").unwrap();
    assert_eq!(
        finish(&mut child, Duration::from_secs(10)).code(),
        Some(0),
        "{}",
        pod.log("main")
    );
    assert!(
        eventually(Duration::from_secs(5), || shown("got:hello\r\n")),
        "{:?}",
        String::from_utf8_lossy(&stdout.lock().unwrap())
    );
    let captured = fs::read_to_string(pod.paths().stdout_file("main")).unwrap();
    assert!(
        captured.contains("got:hello"),
        "the pty's output is captured too: {captured:?}"
    );
    let restored = tcgetattr(&pty.master).unwrap();
    assert!(
        restored.local_flags.contains(LocalFlags::ICANON),
        "stdin's settings are restored"
    );
}
