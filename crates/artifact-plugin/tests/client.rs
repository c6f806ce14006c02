//! The client against a real gRPC server on a Unix socket: a plugin of the test's own that
//! keeps artifacts as files under a directory (the key is the file's path under it).

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use argoexec_artifact_plugin::wire::artifact_service_server::{ArtifactService, ArtifactServiceServer};
use argoexec_artifact_plugin::wire::*;
use argoexec_artifact_plugin::{PluginClient, PluginError};
use tonic::{Request, Response, Status, Streaming};

/// Keeps artifacts under `root`; `refuse` makes every Save answer `success: false`.
struct DirPlugin {
    root: PathBuf,
}

impl DirPlugin {
    fn key_path(&self, art: Option<&Artifact>) -> Result<PathBuf, Status> {
        let key = art
            .and_then(|a| a.plugin.as_ref())
            .map(|p| p.key.clone())
            .ok_or_else(|| Status::invalid_argument("no plugin key"))?;
        if key.split('/').any(|c| c == "..") {
            return Err(Status::invalid_argument("key escapes the root"));
        }
        Ok(self.root.join(key))
    }
}

type Frames = Pin<Box<dyn futures::Stream<Item = Result<OpenStreamResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ArtifactService for DirPlugin {
    async fn load(&self, r: Request<LoadArtifactRequest>) -> Result<Response<LoadArtifactResponse>, Status> {
        let r = r.into_inner();
        let src = self.key_path(r.input_artifact.as_ref())?;
        let res = std::fs::copy(&src, &r.path);
        Ok(Response::new(LoadArtifactResponse {
            success: res.is_ok(),
            error: res
                .err()
                .map(|e| format!("{}: {e}", src.display()))
                .unwrap_or_default(),
        }))
    }
    type OpenStreamStream = Frames;
    async fn open_stream(&self, r: Request<OpenStreamRequest>) -> Result<Response<Frames>, Status> {
        let src = self.key_path(r.into_inner().artifact.as_ref())?;
        let data = std::fs::read(&src).map_err(|e| Status::not_found(e.to_string()))?;
        let frames: Vec<Result<OpenStreamResponse, Status>> = data
            .chunks(3)
            .map(|c| {
                Ok(OpenStreamResponse {
                    data: c.to_vec(),
                    ..Default::default()
                })
            })
            .chain([Ok(OpenStreamResponse {
                is_end: true,
                ..Default::default()
            })])
            .collect();
        Ok(Response::new(Box::pin(futures::stream::iter(frames))))
    }
    async fn save(&self, r: Request<SaveArtifactRequest>) -> Result<Response<SaveArtifactResponse>, Status> {
        let r = r.into_inner();
        let dst = self.key_path(r.output_artifact.as_ref())?;
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        let res = std::fs::copy(&r.path, &dst);
        Ok(Response::new(SaveArtifactResponse {
            success: res.is_ok(),
            error: res.err().map(|e| e.to_string()).unwrap_or_default(),
        }))
    }
    async fn delete(
        &self,
        r: Request<DeleteArtifactRequest>,
    ) -> Result<Response<DeleteArtifactResponse>, Status> {
        let p = self.key_path(r.into_inner().artifact.as_ref())?;
        let res = std::fs::remove_file(&p);
        Ok(Response::new(DeleteArtifactResponse {
            success: res.is_ok(),
            error: res
                .err()
                .map(|e| format!("{}: {e}", p.display()))
                .unwrap_or_default(),
        }))
    }
    async fn list_objects(
        &self,
        r: Request<ListObjectsRequest>,
    ) -> Result<Response<ListObjectsResponse>, Status> {
        let dir = self.key_path(r.into_inner().artifact.as_ref())?;
        let mut objects: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| Status::not_found(e.to_string()))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        objects.sort();
        Ok(Response::new(ListObjectsResponse {
            objects,
            error: String::new(),
        }))
    }
    async fn is_directory(
        &self,
        r: Request<IsDirectoryRequest>,
    ) -> Result<Response<IsDirectoryResponse>, Status> {
        let p = self.key_path(r.into_inner().artifact.as_ref())?;
        Ok(Response::new(IsDirectoryResponse {
            is_directory: p.is_dir(),
            error: if p.exists() {
                String::new()
            } else {
                "no such key".into()
            },
        }))
    }
    async fn save_stream(
        &self,
        _r: Request<Streaming<SaveStreamArtifactRequest>>,
    ) -> Result<Response<SaveArtifactResponse>, Status> {
        Err(Status::unimplemented("save stream"))
    }
    async fn get_capabilities(
        &self,
        _r: Request<GetCapabilitiesRequest>,
    ) -> Result<Response<GetCapabilitiesResponse>, Status> {
        Ok(Response::new(GetCapabilitiesResponse::default()))
    }
}

/// Serve a [`DirPlugin`] over `root` on `socket` in the background.
fn serve(root: &Path, socket: &Path) {
    let listener = tokio::net::UnixListener::bind(socket).unwrap();
    let incoming = futures::stream::unfold(listener, |l| async move {
        let accepted = l.accept().await.map(|(s, _)| s);
        Some((accepted, l))
    });
    let svc = ArtifactServiceServer::new(DirPlugin {
        root: root.to_path_buf(),
    });
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming(incoming)
            .await
            .unwrap();
    });
}

fn art(key: &str) -> Artifact {
    Artifact {
        name: "a".into(),
        plugin: Some(PluginArtifact {
            name: "dir".into(),
            key: key.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

const QUICK: (u32, Duration) = (50, Duration::from_millis(100));

#[tokio::test]
async fn every_call_against_a_directory_plugin() {
    let d = tempfile::tempdir().unwrap();
    let (root, socket) = (d.path().join("store"), d.path().join("socket"));
    std::fs::create_dir_all(root.join("wf")).unwrap();
    serve(&root, &socket);
    let c = PluginClient::connect("dir", &socket, Duration::ZERO, QUICK)
        .await
        .unwrap();

    let src = d.path().join("out.txt");
    std::fs::write(&src, "hello plugin").unwrap();
    c.save(&src, art("wf/out.txt")).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("wf/out.txt")).unwrap(),
        "hello plugin"
    );

    let back = d.path().join("in.txt");
    c.load(art("wf/out.txt"), &back).await.unwrap();
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "hello plugin");
    assert_eq!(c.read_all(art("wf/out.txt")).await.unwrap(), b"hello plugin");
    assert_eq!(c.list_objects(art("wf")).await.unwrap(), ["out.txt"]);
    assert!(c.is_directory(art("wf")).await.unwrap());
    assert!(!c.is_directory(art("wf/out.txt")).await.unwrap());

    c.delete(art("wf/out.txt")).await.unwrap();
    assert!(!root.join("wf/out.txt").exists());
    let e = c.delete(art("wf/out.txt")).await.unwrap_err();
    assert!(
        matches!(&e, PluginError::Refused { op: "delete", .. })
            && e.to_string().starts_with("plugin dir delete failed: "),
        "{e}"
    );
    let e = c.load(art("wf/../../etc/passwd"), &back).await.unwrap_err();
    assert!(matches!(e, PluginError::Call { op: "load", .. }), "{e}");
}

#[tokio::test]
async fn the_client_waits_for_a_late_socket_and_gives_up_with_argos_message() {
    let d = tempfile::tempdir().unwrap();
    let (root, socket) = (d.path().to_path_buf(), d.path().join("socket"));
    let late = {
        let (root, socket) = (root.clone(), socket.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            serve(&root, &socket);
        })
    };
    let c = PluginClient::connect("dir", &socket, Duration::from_secs(2), QUICK).await;
    late.await.unwrap();
    assert!(c.is_ok(), "{:?}", c.err());

    let missing = d.path().join("never");
    let e = PluginClient::connect("dir", &missing, Duration::ZERO, (3, Duration::from_millis(10)))
        .await
        .unwrap_err();
    assert!(
        e.to_string().starts_with("plugin dir expected unix socket at ")
            && e.to_string().contains("does not exist"),
        "{e}"
    );
}
