//! `argoexec artifact put|get|ls|rm LOCATION PATH`: the artifact drivers by hand, for
//! debugging a repository configuration and for the transfer benchmarks; and
//! `argoexec artifact delete`, the main container of Argo's artifact-GC pods
//! ([`argoexec_artifact_gc`], no LOCATION: the tasks say what to delete). `LOCATION` is an
//! Argo artifact location as JSON or YAML (`{s3: {endpoint: …, bucket: …, key: …}}`); its
//! secrets are read from `/argo/secret` as in a pod (`ARGOEXEC_PATH_ROOT` re-roots it), or,
//! for S3 without secrets, the environment's `AWS_*` chain is used. Transfer settings come
//! from the `ARGOEXEC_ARTIFACT_*` variables. Prints one JSON line (bytes, seconds, peak RSS).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use argoexec_artifacts::{AnyDriver, ArtifactDriver, Opened, Settings};
use argoexec_core::PodPaths;
use argoexec_core::template::ArtifactLocation;
use argoexec_report::InClusterConfig;

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    /// Upload PATH (a file, or a directory: tar.gz streamed, or file by file with `--archive none`).
    Put,
    /// Download to PATH (`--extract` unpacks a tarball while it downloads).
    Get,
    /// List the artifact's files.
    Ls,
    /// Delete the artifact.
    Rm,
    /// Artifact GC (Argo's GC pod): delete what this pod's WorkflowArtifactGCTasks name and
    /// write their status. Takes no LOCATION.
    Delete,
}

/// How `put` sends a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Archive {
    /// One tar.gz object, compressed on all cores into the upload.
    Tar,
    /// Each file its own object (files: as they are).
    None,
}

/// Arguments of `argoexec artifact`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// put, get, ls, rm, or delete (artifact GC).
    #[arg(value_enum)]
    pub action: Action,
    /// The location (JSON or YAML); not for delete.
    pub location: Option<String>,
    /// The local path (put, get).
    pub path: Option<PathBuf>,
    /// How `put` sends a directory.
    #[arg(long, value_enum, default_value_t = Archive::None)]
    pub archive: Archive,
    /// gzip level for `--archive tar` (1–9).
    #[arg(long)]
    pub level: Option<i32>,
    /// `get`: extract a tarball into PATH while downloading.
    #[arg(long)]
    pub extract: bool,
    /// `delete`: artifacts deleted at once.
    #[arg(long, default_value_t = argoexec_artifact_gc::DEFAULT_PARALLELISM)]
    pub parallelism: usize,
}

/// Run; 0 on success, 64 with a message otherwise.
pub fn run(args: Args) -> i32 {
    if args.action == Action::Delete {
        return gc(&args);
    }
    let result = super::runtime().and_then(|rt| rt.block_on(execute(&args)));
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("argoexec artifact: {e:#}");
            argoexec_core::exit::EXECUTOR_FAILURE
        }
    }
}

async fn execute(args: &Args) -> anyhow::Result<()> {
    let text = args.location.as_deref().context("LOCATION is required")?;
    let loc = parse_location(text)?;
    let settings = Arc::new(Settings::from_env()?);
    let driver = AnyDriver::for_location(&loc, &settings)?;
    let path = || args.path.clone().context("PATH is required");
    let start = Instant::now();
    let bytes = match args.action {
        Action::Put => {
            let src = path()?;
            if src.is_dir() && args.archive == Archive::Tar {
                let level = args.level.map(|l| argoexec_archive::gzip_level(Some(l)));
                let s = src.clone();
                let (body, producer) = argoexec_artifacts::pipe::produce(4, move |w| {
                    argoexec_archive::write_tar_gz(&s, w, level)
                });
                let sent = driver.save_stream(body).await;
                producer.await??;
                sent?
            } else {
                driver.save(&src).await?
            }
        }
        Action::Get => {
            let dest = path()?;
            if args.extract {
                match driver.open().await? {
                    Opened::Stream { body, size } => {
                        let reader =
                            tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(body));
                        let spill = dest.with_extension("download");
                        tokio::task::spawn_blocking(move || {
                            argoexec_archive::unpack_input_stream(
                                std::io::BufReader::with_capacity(1 << 20, reader),
                                &dest,
                                argoexec_archive::Strategy::Auto,
                                &spill,
                            )
                        })
                        .await??;
                        size.unwrap_or(0)
                    }
                    Opened::Directory => anyhow::bail!("--extract: the location is a directory"),
                    Opened::PathOnly => {
                        anyhow::bail!(
                            "--extract: an artifact plugin writes to a path; get it without --extract"
                        )
                    }
                }
            } else {
                match driver.load(&dest).await? {
                    argoexec_artifacts::Loaded::File(n) => n,
                    argoexec_artifacts::Loaded::Directory(n) => n as u64,
                }
            }
        }
        Action::Ls => {
            for f in driver.list().await? {
                println!("{f}");
            }
            return Ok(());
        }
        Action::Rm => {
            driver.delete().await?;
            0
        }
        Action::Delete => unreachable!("artifact delete is handled by gc()"),
    };
    let rss = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| u.max_rss())
        .unwrap_or(0);
    println!(
        "{}",
        serde_json::json!({"bytes": bytes, "seconds": start.elapsed().as_secs_f64(), "peak_rss_kib": rss})
    );
    Ok(())
}

/// `argoexec artifact delete`: 0 when every artifact was attempted and every status written
/// (failed deletes are in the statuses, as Argo); 64 with the termination message when the
/// API fails or is not configured.
/// A LOCATION argument (JSON or YAML): YAML to JSON, then the JSON into the type, as Go's
/// sigs.k8s.io/yaml does for Argo (and one YAML deserializer in the image, the one manifests
/// use: issue 17).
fn parse_location(text: &str) -> anyhow::Result<ArtifactLocation> {
    let value: serde_json::Value = serde_saphyr::from_str(text).context("LOCATION is not YAML or JSON")?;
    serde_json::from_value(value).context("LOCATION is not an artifact location")
}

fn gc(args: &Args) -> i32 {
    let paths = PodPaths::from_env();
    match gc_execute(&paths, args) {
        Ok(()) => 0,
        Err(e) => super::fail(&paths, &e),
    }
}

fn gc_execute(paths: &PodPaths, args: &Args) -> anyhow::Result<()> {
    use argoexec_core::artifact_gc::GC_POD_ENV;
    if args.location.is_some() || args.path.is_some() {
        anyhow::bail!(
            "artifact delete takes no LOCATION or PATH (the WorkflowArtifactGCTasks name the artifacts; use `rm LOCATION` for one)"
        );
    }
    let get = |k: &str| std::env::var(k).ok();
    let config = InClusterConfig::from_env(paths)
        .context("bad in-cluster API configuration")?
        .context(
            "artifact delete needs the API server: KUBERNETES_SERVICE_HOST and a service-account token",
        )?;
    let Some(label) = get(GC_POD_ENV).filter(|v| !v.trim().is_empty()) else {
        // Argo's command does nothing without it either.
        tracing::warn!(
            env = GC_POD_ENV,
            "not set: no artifact GC tasks to select, nothing to do"
        );
        return Ok(());
    };
    let namespace = get("POD_NAMESPACE")
        .filter(|n| !n.trim().is_empty())
        .or_else(|| argoexec_core::env::resolve_namespace(paths, get))
        .unwrap_or_else(|| "default".into());
    let settings = Settings {
        paths: paths.clone(),
        ..Settings::from_env().context("bad artifact transfer settings")?
    };
    let sidecars = get("ARGO_ARTIFACT_PLUGIN_NAMES").map(|v| argoexec_core::env::split_names(Some(&v)));
    let opts = argoexec_artifact_gc::Options {
        namespace,
        label: label.trim().to_string(),
        settings: Arc::new(settings),
        parallelism: args.parallelism,
        plugin_sidecars: sidecars.clone(),
    };
    let rt = super::runtime()?;
    let summary = rt.block_on(async {
        let (client, _token) = config.connect().context("cannot connect to the API server")?;
        let summary = argoexec_artifact_gc::run(&client, &opts).await;
        // As Argo, the plugin sidecars are stopped at the end, whatever the outcome: the
        // pod completes only when they have.
        let grace = argoexec_core::env::DEFAULT_GRACE;
        if let Err(e) =
            argoexec_flows::wait::stop_plugin_sidecars(paths, &sidecars.unwrap_or_default(), grace).await
        {
            tracing::warn!(error = %e, "cannot stop the artifact plugin sidecars");
        }
        anyhow::Ok(summary?)
    })?;
    tracing::info!(
        tasks = summary.tasks,
        deleted = summary.deleted,
        failed = summary.failed,
        "artifacts deleted"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_location;

    #[test]
    fn locations_parse_from_yaml_and_json_as_argo_reads_them() {
        let yaml = parse_location("s3: {bucket: b, key: 'k/x.tgz', endpoint: 'minio:9000', insecure: true}")
            .unwrap();
        let json = parse_location(
            r#"{"s3":{"bucket":"b","key":"k/x.tgz","endpoint":"minio:9000","insecure":true}}"#,
        )
        .unwrap();
        assert_eq!(yaml, json);
        let s3 = yaml.s3.expect("an s3 location");
        assert_eq!((s3.bucket.as_deref(), s3.key.as_str()), (Some("b"), "k/x.tgz"));
        // A number where Argo's field is a string is refused, as Go's YAML-to-JSON reading
        // refuses it.
        let err = parse_location("s3: {bucket: 123, key: k}").unwrap_err();
        assert!(format!("{err:#}").contains("not an artifact location"), "{err:#}");
        let err = parse_location("s3: [unclosed").unwrap_err();
        assert!(format!("{err:#}").contains("not YAML or JSON"), "{err:#}");
    }
}
