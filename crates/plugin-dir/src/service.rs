//! [`DirPlugin`]: `artifact.ArtifactService` over a directory store (see the crate's docs for
//! what each call does).
//!
//! A request that cannot be served at all (no artifact, a configuration that is not valid, a
//! key that leaves the root) is answered with the gRPC status `INVALID_ARGUMENT`; a call that
//! fails on the filesystem or is refused by the configuration answers `success: false` (Load,
//! Save, Delete) or a non-empty `error` (ListObjects, IsDirectory, an OpenStream frame), as
//! Argo's executor expects.

use std::path::{Path, PathBuf};
use std::pin::Pin;

use argoexec_artifact_plugin::wire::artifact_service_server::ArtifactService;
use argoexec_artifact_plugin::wire::{
    DeleteArtifactRequest, DeleteArtifactResponse, GetCapabilitiesRequest, GetCapabilitiesResponse,
    IsDirectoryRequest, IsDirectoryResponse, ListObjectsRequest, ListObjectsResponse, LoadArtifactRequest,
    LoadArtifactResponse, OpenStreamRequest, OpenStreamResponse, SaveArtifactRequest, SaveArtifactResponse,
    SaveStreamArtifactRequest,
};
use futures::Stream;
use tokio::io::AsyncReadExt;
use tonic::{Request, Response, Status, Streaming};

use crate::config::{Op, RequestError, Target};
use crate::store::{self, FsError};

/// The size of an OpenStream `data` frame (well under gRPC's 4 MiB message limit).
pub const FRAME_SIZE: usize = 1 << 20;

/// The artifact service over a directory store. It keeps no state: every request carries
/// its own configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirPlugin;

/// The frames of an OpenStream answer.
pub type Frames = Pin<Box<dyn Stream<Item = Result<OpenStreamResponse, Status>> + Send>>;

fn invalid(e: RequestError) -> Status {
    Status::invalid_argument(e.to_string())
}

/// Run blocking filesystem work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(format!("the filesystem task failed: {e}")))
}

/// `(success, error)` of an outcome.
fn outcome(r: Result<(), String>) -> (bool, String) {
    match r {
        Ok(()) => (true, String::new()),
        Err(e) => (false, e),
    }
}

/// The path a Load or Save request names.
fn local_path(path: String) -> Result<PathBuf, Status> {
    if path.is_empty() {
        return Err(invalid(RequestError::Missing("path")));
    }
    Ok(PathBuf::from(path))
}

/// Copy the object `t` names to `dest` (Load).
fn load(t: &Target, dest: &Path) -> Result<(), String> {
    store::copy(&t.path, dest).map_err(|e| {
        if e.is_not_found() && e.path == t.path {
            format!("key {} does not exist", t.key)
        } else {
            format!("key {}: {e}", t.key)
        }
    })
}

/// Copy `src` to the object `t` names (Save).
fn save(src: &Path, t: &Target) -> Result<(), String> {
    store::copy(src, &t.path).map_err(|e| format!("key {}: {e}", t.key))
}

fn fs_message(t: &Target) -> impl FnOnce(FsError) -> String + '_ {
    move |e| format!("key {}: {e}", t.key)
}

#[tonic::async_trait]
impl ArtifactService for DirPlugin {
    async fn load(&self, r: Request<LoadArtifactRequest>) -> Result<Response<LoadArtifactResponse>, Status> {
        let r = r.into_inner();
        let t = Target::of(r.input_artifact.as_ref()).map_err(invalid)?;
        let dest = local_path(r.path)?;
        let done = match t.refused(Op::Load) {
            Some(refused) => Err(refused),
            None => blocking(move || load(&t, &dest)).await?,
        };
        let (success, error) = outcome(done);
        Ok(Response::new(LoadArtifactResponse { success, error }))
    }

    type OpenStreamStream = Frames;

    async fn open_stream(&self, r: Request<OpenStreamRequest>) -> Result<Response<Frames>, Status> {
        let t = Target::of(r.into_inner().artifact.as_ref()).map_err(invalid)?;
        if let Some(refused) = t.refused(Op::OpenStream) {
            return Ok(Response::new(error_frame(refused)));
        }
        let opened = match tokio::fs::metadata(&t.path).await {
            Ok(m) if m.is_dir() => Err(format!("key {} is a directory", t.key)),
            Ok(_) => tokio::fs::File::open(&t.path)
                .await
                .map_err(|e| format!("key {}: cannot open {}: {e}", t.key, t.path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(format!("key {} does not exist", t.key))
            }
            Err(e) => Err(format!("key {}: cannot read {}: {e}", t.key, t.path.display())),
        };
        Ok(Response::new(match opened {
            Ok(file) => frames(file, t.key),
            Err(e) => error_frame(e),
        }))
    }

    async fn save(&self, r: Request<SaveArtifactRequest>) -> Result<Response<SaveArtifactResponse>, Status> {
        let r = r.into_inner();
        let t = Target::of(r.output_artifact.as_ref()).map_err(invalid)?;
        let src = local_path(r.path)?;
        let done = match t.refused(Op::Save) {
            Some(refused) => Err(refused),
            None => blocking(move || save(&src, &t)).await?,
        };
        let (success, error) = outcome(done);
        Ok(Response::new(SaveArtifactResponse { success, error }))
    }

    async fn delete(
        &self,
        r: Request<DeleteArtifactRequest>,
    ) -> Result<Response<DeleteArtifactResponse>, Status> {
        let t = Target::of(r.into_inner().artifact.as_ref()).map_err(invalid)?;
        let done = match t.refused(Op::Delete) {
            Some(refused) => Err(refused),
            None => blocking(move || store::remove(&t.path).map_err(fs_message(&t))).await?,
        };
        let (success, error) = outcome(done);
        Ok(Response::new(DeleteArtifactResponse { success, error }))
    }

    async fn list_objects(
        &self,
        r: Request<ListObjectsRequest>,
    ) -> Result<Response<ListObjectsResponse>, Status> {
        let t = Target::of(r.into_inner().artifact.as_ref()).map_err(invalid)?;
        let listed = match t.refused(Op::List) {
            Some(refused) => Err(refused),
            None => blocking(move || store::list(&t.config.root, &t.path).map_err(fs_message(&t))).await?,
        };
        Ok(Response::new(match listed {
            Ok(objects) => ListObjectsResponse {
                objects,
                error: String::new(),
            },
            Err(error) => ListObjectsResponse {
                objects: Vec::new(),
                error,
            },
        }))
    }

    async fn is_directory(
        &self,
        r: Request<IsDirectoryRequest>,
    ) -> Result<Response<IsDirectoryResponse>, Status> {
        let t = Target::of(r.into_inner().artifact.as_ref()).map_err(invalid)?;
        let is_dir = match t.refused(Op::IsDirectory) {
            Some(refused) => Err(refused),
            None => blocking(move || store::is_dir(&t.path).map_err(fs_message(&t))).await?,
        };
        let (is_directory, error) = match is_dir {
            Ok(d) => (d, String::new()),
            Err(e) => (false, e),
        };
        Ok(Response::new(IsDirectoryResponse { is_directory, error }))
    }

    async fn save_stream(
        &self,
        _r: Request<Streaming<SaveStreamArtifactRequest>>,
    ) -> Result<Response<SaveArtifactResponse>, Status> {
        Err(Status::unimplemented(
            "argoexec-plugin-dir does not implement SaveStream (GetCapabilities says so): use Save",
        ))
    }

    async fn get_capabilities(
        &self,
        _r: Request<GetCapabilitiesRequest>,
    ) -> Result<Response<GetCapabilitiesResponse>, Status> {
        Ok(Response::new(GetCapabilitiesResponse {
            supports_save_stream: false,
        }))
    }
}

/// One frame carrying `error`.
fn error_frame(error: String) -> Frames {
    Box::pin(futures::stream::iter([Ok(OpenStreamResponse {
        error,
        ..Default::default()
    })]))
}

/// `file` in [`FRAME_SIZE`] `data` frames, then an `is_end` frame (or an `error` frame when
/// reading fails).
fn frames(file: tokio::fs::File, key: String) -> Frames {
    Box::pin(futures::stream::unfold(Some(file), move |file| {
        let key = key.clone();
        async move {
            let mut file = file?;
            let mut data = Vec::with_capacity(FRAME_SIZE);
            let frame = match (&mut file).take(FRAME_SIZE as u64).read_to_end(&mut data).await {
                Ok(0) => OpenStreamResponse {
                    is_end: true,
                    ..Default::default()
                },
                Ok(_) => {
                    return Some((
                        Ok(OpenStreamResponse {
                            data,
                            ..Default::default()
                        }),
                        Some(file),
                    ));
                }
                Err(e) => OpenStreamResponse {
                    error: format!("key {key}: read: {e}"),
                    ..Default::default()
                },
            };
            Some((Ok(frame), None))
        }
    }))
}
