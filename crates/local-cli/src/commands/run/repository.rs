//! The artifact repository of `argoexec run`: a host directory (the default, mounted into
//! init and wait) or an S3 bucket (`--artifacts s3://bucket/prefix`). For S3 the
//! credentials come from the `run` process's own `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY` and optional `AWS_SESSION_TOKEN` — never from the command line,
//! where `ps` would show them — and reach init and wait as a secret of the local node,
//! mounted by the pod builder like any artifact-repository secret.

use std::collections::BTreeMap;

use anyhow::Context;
use argoexec_core::template::{ArtifactLocation, S3Artifact, SecretKeySelector};

/// The node secret holding the S3 credentials of a run.
pub const S3_SECRET: &str = "argoexec-run-s3";

/// Where a run's artifacts go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repository {
    /// A host directory (given, or a new temp directory).
    Local(Option<std::path::PathBuf>),
    /// An S3 bucket and key prefix.
    S3 {
        /// Bucket.
        bucket: String,
        /// Key prefix (may be empty).
        prefix: String,
    },
}

impl Repository {
    /// Parse `--artifacts`.
    ///
    /// # Errors
    /// An `s3://` URL without a bucket.
    pub fn parse(arg: Option<&str>) -> anyhow::Result<Self> {
        match arg {
            None => Ok(Self::Local(None)),
            Some(a) => match a.strip_prefix("s3://") {
                Some(rest) => {
                    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                    anyhow::ensure!(
                        !bucket.is_empty(),
                        "--artifacts {a:?}: no bucket (s3://bucket/prefix)"
                    );
                    Ok(Self::S3 {
                        bucket: bucket.to_string(),
                        prefix: prefix.trim_matches('/').to_string(),
                    })
                }
                None => Ok(Self::Local(Some(a.into()))),
            },
        }
    }
}

/// S3 endpoint options of `run`.
#[derive(Debug, Clone, Default)]
pub struct S3Options {
    /// `host:port` or a URL; none means AWS.
    pub endpoint: Option<String>,
    /// Region.
    pub region: Option<String>,
    /// Plain HTTP.
    pub insecure: bool,
}

type Secrets = BTreeMap<String, BTreeMap<String, Vec<u8>>>;

/// The archive location `s3://bucket/<prefix>/<workflow>/<pod>` and the node secret with
/// the credentials it names.
///
/// # Errors
/// Missing `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
pub fn s3_archive(
    bucket: &str,
    prefix: &str,
    opts: &S3Options,
    workflow: &str,
    pod: &str,
) -> anyhow::Result<(ArtifactLocation, Secrets)> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let access = var("AWS_ACCESS_KEY_ID")
        .context("--artifacts s3://…: set AWS_ACCESS_KEY_ID (and AWS_SECRET_ACCESS_KEY)")?;
    let secret = var("AWS_SECRET_ACCESS_KEY").context("--artifacts s3://…: set AWS_SECRET_ACCESS_KEY")?;
    let mut data = BTreeMap::from([
        ("accessKey".to_string(), access.into_bytes()),
        ("secretKey".to_string(), secret.into_bytes()),
    ]);
    let sel = |key: &str| {
        Some(SecretKeySelector {
            name: S3_SECRET.into(),
            key: key.into(),
        })
    };
    let session = var("AWS_SESSION_TOKEN").map(|t| {
        data.insert("sessionToken".into(), t.into_bytes());
        sel("sessionToken")
    });
    let key = [prefix, workflow, pod]
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    let loc = ArtifactLocation {
        s3: Some(S3Artifact {
            key,
            bucket: Some(bucket.into()),
            endpoint: opts.endpoint.clone(),
            region: opts.region.clone(),
            insecure: Some(opts.insecure),
            access_key_secret: sel("accessKey"),
            secret_key_secret: sel("secretKey"),
            session_token_secret: session.flatten(),
            ..Default::default()
        }),
        ..Default::default()
    };
    Ok((loc, BTreeMap::from([(S3_SECRET.to_string(), data)])))
}

/// Read `NAME=DIR` into a secret: one key per regular file of DIR.
///
/// # Errors
/// A malformed argument or an unreadable directory.
pub fn secret_from_dir(arg: &str) -> anyhow::Result<(String, BTreeMap<String, Vec<u8>>)> {
    let (name, dir) = arg
        .split_once('=')
        .filter(|(n, d)| !n.is_empty() && !d.is_empty())
        .with_context(|| format!("--secret {arg:?}: expected NAME=DIR"))?;
    let mut data = BTreeMap::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("--secret {name}: cannot read {dir}"))? {
        let e = e?;
        if e.file_type()?.is_file() {
            let key = e.file_name().to_string_lossy().into_owned();
            data.insert(key, std::fs::read(e.path())?);
        }
    }
    anyhow::ensure!(!data.is_empty(), "--secret {name}: {dir} holds no files");
    Ok((name.to_string(), data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_kinds() {
        assert_eq!(Repository::parse(None).unwrap(), Repository::Local(None));
        assert_eq!(
            Repository::parse(Some("/tmp/x")).unwrap(),
            Repository::Local(Some("/tmp/x".into()))
        );
        assert_eq!(
            Repository::parse(Some("s3://b/a/b/")).unwrap(),
            Repository::S3 {
                bucket: "b".into(),
                prefix: "a/b".into()
            }
        );
        assert!(Repository::parse(Some("s3:///x")).is_err());
    }
}
