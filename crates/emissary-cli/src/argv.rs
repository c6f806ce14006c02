//! The command line of the per-pod copy, parsed by hand (no argument-parser crate: the copy
//! is loaded into every user container and should stay small).
//!
//! What Argo's controllers write, every version from v3.1 to v4.1:
//! `/var/run/argo/argoexec emissary --loglevel L --log-format F [--gloglevel N] -- CMD ARGS…`
//! and, by `pods/exec`, `/var/run/argo/argoexec kill SIGNUM PID`. The global flags may come
//! before or after the subcommand, as `--flag value` or `--flag=value`.

use std::ffi::OsString;

/// One parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cli {
    /// `--loglevel` (Argo's level names).
    pub loglevel: String,
    /// `--log-format`.
    pub log_format: String,
    /// What to do.
    pub command: Command,
}

/// The subcommands of the per-pod copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `emissary [--] CMD ARGS…`: run CMD as the wrapper.
    Emissary(Vec<OsString>),
    /// `artifact-plugin-sidecar [--] PLUGIN ARGS… SOCKET`: an Argo v4.0+ artifact plugin's
    /// sidecar, which only its signal file stops.
    ArtifactPluginSidecar(Vec<OsString>),
    /// `artifact-plugin-init …`: not this program's work (it loads artifacts, which needs the
    /// async runtime and TLS); handed, whole command line, to the full executor (see
    /// [`crate::delegate`]).
    Delegate(Vec<OsString>),
    /// `kill SIGNUM PID`.
    Kill {
        /// Signal number.
        signum: i32,
        /// Process id (negative: a process group).
        pid: i32,
    },
    /// `pause`: the local node's pause container.
    Pause,
    /// `version`, `--version`, `-V`.
    Version,
    /// `help`, `--help`, `-h`, or nothing at all.
    Help,
}

/// A command line this program does not take.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UsageError {
    /// A flag it does not know.
    #[error("unknown flag {0:?}")]
    UnknownFlag(String),
    /// A flag without its value.
    #[error("flag {0} needs a value")]
    MissingValue(&'static str),
    /// A subcommand it does not have.
    #[error("unknown subcommand {0:?} (this is the per-pod copy: emissary, kill, pause, version)")]
    UnknownCommand(String),
    /// `emissary` without a command.
    #[error("emissary: no command to run")]
    NoCommand,
    /// `kill` with a missing or non-numeric argument.
    #[error("kill: expected SIGNUM PID as integers, got {0:?}")]
    BadKill(Vec<String>),
    /// An argument that is not UTF-8 where text is needed.
    #[error("argument {0:?} is not UTF-8")]
    NotUtf8(OsString),
}

/// The subcommands handed to the full executor with their whole command line.
const DELEGATED: [&str; 1] = ["artifact-plugin-init"];

/// The flags every subcommand takes, each followed by a value.
const GLOBALS: [&str; 3] = ["--loglevel", "--log-format", "--gloglevel"];

/// Parse `args` (without the program name).
pub fn parse<I: IntoIterator<Item = OsString>>(args: I) -> Result<Cli, UsageError> {
    let mut cli = Cli {
        loglevel: "info".into(),
        log_format: "text".into(),
        command: Command::Help,
    };
    let all: Vec<OsString> = args.into_iter().collect();
    let mut rest = all.clone().into_iter();
    let mut sub: Option<String> = None;
    let mut positionals: Vec<OsString> = Vec::new();
    while let Some(arg) = rest.next() {
        let text = arg.to_str();
        match text {
            Some("--") if wraps(sub.as_deref()) => {
                positionals.extend(rest.by_ref());
                break;
            }
            Some("-h" | "--help") => {
                return Ok(Cli {
                    command: Command::Help,
                    ..cli
                });
            }
            Some("-V" | "--version") => {
                return Ok(Cli {
                    command: Command::Version,
                    ..cli
                });
            }
            Some(t) if t.starts_with("--") && t.len() > 2 => {
                global(&mut cli, t, &mut rest)?;
            }
            Some(t) if sub.is_none() && DELEGATED.contains(&t) => {
                return Ok(Cli {
                    command: Command::Delegate(all),
                    ..cli
                });
            }
            _ if sub.is_none() => sub = Some(utf8(arg)?),
            _ if wraps(sub.as_deref()) => {
                // The first word of the command: everything from here on is the command's.
                positionals.push(arg);
                positionals.extend(rest.by_ref());
                break;
            }
            _ => positionals.push(arg),
        }
    }
    cli.command = command(sub, positionals)?;
    Ok(cli)
}

/// Whether a subcommand runs a command given after its options (`emissary`,
/// `artifact-plugin-sidecar`): from the first word of it on, everything is the command's.
fn wraps(sub: Option<&str>) -> bool {
    matches!(sub, Some("emissary" | "artifact-plugin-sidecar"))
}

/// Take one global flag (and its value) or refuse it.
fn global(cli: &mut Cli, flag: &str, rest: &mut impl Iterator<Item = OsString>) -> Result<(), UsageError> {
    let (name, inline) = match flag.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (flag, None),
    };
    let Some(known) = GLOBALS.iter().find(|g| **g == name) else {
        return Err(UsageError::UnknownFlag(flag.to_string()));
    };
    let value = match inline {
        Some(v) => v,
        None => utf8(rest.next().ok_or(UsageError::MissingValue(known))?)?,
    };
    match *known {
        "--loglevel" => cli.loglevel = value,
        "--log-format" => cli.log_format = value,
        _ => {} // --gloglevel: glog verbosity, which this program does not have.
    }
    Ok(())
}

fn command(sub: Option<String>, positionals: Vec<OsString>) -> Result<Command, UsageError> {
    match sub.as_deref() {
        None | Some("help") => Ok(Command::Help),
        Some("version") => Ok(Command::Version),
        Some("pause") => Ok(Command::Pause),
        Some("emissary") if positionals.is_empty() => Err(UsageError::NoCommand),
        Some("emissary") => Ok(Command::Emissary(positionals)),
        Some("artifact-plugin-sidecar") if positionals.is_empty() => Err(UsageError::NoCommand),
        Some("artifact-plugin-sidecar") => Ok(Command::ArtifactPluginSidecar(positionals)),
        Some("kill") => kill(&positionals),
        Some(other) => Err(UsageError::UnknownCommand(other.to_string())),
    }
}

fn kill(positionals: &[OsString]) -> Result<Command, UsageError> {
    let words: Vec<String> = positionals
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match words.as_slice() {
        [s, p] => match (s.parse(), p.parse()) {
            (Ok(signum), Ok(pid)) => Ok(Command::Kill { signum, pid }),
            _ => Err(UsageError::BadKill(words)),
        },
        _ => Err(UsageError::BadKill(words)),
    }
}

fn utf8(arg: OsString) -> Result<String, UsageError> {
    arg.into_string().map_err(UsageError::NotUtf8)
}

/// The help text.
pub const USAGE: &str = "\
argoexec-emissary: the per-pod copy of argoexec (argoexec-rs)

Usage:
  argoexec emissary [--loglevel L] [--log-format text|json] [--gloglevel N] -- CMD [ARGS...]
  argoexec artifact-plugin-sidecar [same options] -- PLUGIN [ARGS...] SOCKET
  argoexec kill SIGNUM PID
  argoexec artifact-plugin-init ...   (run by the full executor installed beside this copy)
  argoexec pause
  argoexec version

init, wait, artifact and the other executor subcommands are in the executor image's
`argoexec`; run, node and render in the local tools (`argoexec-local`).
";

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Cli, UsageError> {
        parse(args.iter().map(OsString::from))
    }

    fn cmd(words: &[&str]) -> Command {
        Command::Emissary(words.iter().map(OsString::from).collect())
    }

    #[test]
    fn what_every_controller_version_writes() {
        let v35 = p(&[
            "emissary",
            "--loglevel",
            "info",
            "--log-format",
            "text",
            "--",
            "sh",
            "-c",
            "echo",
        ])
        .unwrap();
        assert_eq!(v35.command, cmd(&["sh", "-c", "echo"]));
        let v37 = p(&[
            "emissary",
            "--loglevel",
            "debug",
            "--log-format",
            "json",
            "--gloglevel",
            "0",
            "--",
            "ls",
        ]);
        let v37 = v37.unwrap();
        assert_eq!(
            (v37.loglevel.as_str(), v37.log_format.as_str()),
            ("debug", "json")
        );
        assert_eq!(v37.command, cmd(&["ls"]));
        assert_eq!(
            p(&["kill", "15", "1"]).unwrap().command,
            Command::Kill { signum: 15, pid: 1 }
        );
    }

    #[test]
    fn flags_anywhere_before_the_command_and_with_equals() {
        let c = p(&["--loglevel=warning", "emissary", "--log-format=json", "--", "x"]).unwrap();
        assert_eq!((c.loglevel.as_str(), c.log_format.as_str()), ("warning", "json"));
        assert_eq!(c.command, cmd(&["x"]));
    }

    #[test]
    fn the_command_keeps_its_own_flags() {
        let c = p(&["emissary", "--", "grep", "--loglevel", "-v", "--", "x"]).unwrap();
        assert_eq!(c.command, cmd(&["grep", "--loglevel", "-v", "--", "x"]));
        // Without `--`, the first non-flag word starts the command.
        let c = p(&["emissary", "sh", "-c", "--help"]).unwrap();
        assert_eq!(c.command, cmd(&["sh", "-c", "--help"]));
    }

    #[test]
    fn negative_pids_name_process_groups() {
        assert_eq!(
            p(&["kill", "9", "-1"]).unwrap().command,
            Command::Kill { signum: 9, pid: -1 }
        );
    }

    #[test]
    fn bad_command_lines_are_named() {
        assert_eq!(p(&["emissary", "--"]).unwrap_err(), UsageError::NoCommand);
        assert_eq!(p(&["emissary"]).unwrap_err(), UsageError::NoCommand);
        assert_eq!(
            p(&["emissary", "--bogus", "--", "x"]).unwrap_err(),
            UsageError::UnknownFlag("--bogus".into())
        );
        assert_eq!(
            p(&["emissary", "--loglevel"]).unwrap_err(),
            UsageError::MissingValue("--loglevel")
        );
        assert!(matches!(
            p(&["kill", "TERM", "1"]).unwrap_err(),
            UsageError::BadKill(_)
        ));
        assert!(matches!(p(&["kill", "15"]).unwrap_err(), UsageError::BadKill(_)));
        let e = p(&["wait"]).unwrap_err();
        assert_eq!(e, UsageError::UnknownCommand("wait".into()));
        assert!(e.to_string().contains("per-pod copy"), "{e}");
    }

    #[test]
    fn help_and_version() {
        assert_eq!(p(&[]).unwrap().command, Command::Help);
        assert_eq!(p(&["--help"]).unwrap().command, Command::Help);
        assert_eq!(p(&["version"]).unwrap().command, Command::Version);
        assert_eq!(p(&["--version"]).unwrap().command, Command::Version);
    }

    #[test]
    fn the_artifact_plugin_sidecar_line_argo_writes() {
        let c = p(&[
            "artifact-plugin-sidecar",
            "--loglevel",
            "debug",
            "--log-format",
            "json",
            "--gloglevel",
            "0",
            "--",
            "/plugin",
            "--flag",
            "/tmp/artifact-plugins/dir/socket",
        ])
        .unwrap();
        assert_eq!(c.loglevel, "debug");
        assert_eq!(
            c.command,
            Command::ArtifactPluginSidecar(
                ["/plugin", "--flag", "/tmp/artifact-plugins/dir/socket"]
                    .iter()
                    .map(OsString::from)
                    .collect()
            )
        );
        assert!(matches!(
            p(&["artifact-plugin-sidecar"]).unwrap_err(),
            UsageError::NoCommand
        ));
    }

    #[test]
    fn artifact_plugin_init_is_handed_over_whole() {
        let line = [
            "artifact-plugin-init",
            "--plugin-name",
            "dir",
            "--loglevel",
            "info",
            "--",
            "/plugin",
            "/tmp/artifact-plugins/dir/socket",
        ];
        let c = p(&line).unwrap();
        assert_eq!(
            c.command,
            Command::Delegate(line.iter().map(OsString::from).collect())
        );
        // Flags before the subcommand are kept too.
        let c = p(&["--loglevel=debug", "artifact-plugin-init", "--plugin-name", "x"]).unwrap();
        match c.command {
            Command::Delegate(args) => assert_eq!(args[0], "--loglevel=debug"),
            other => panic!("{other:?}"),
        }
    }
}
