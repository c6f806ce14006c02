//! The plugin served in-process on a temporary socket and driven by the executor's own
//! client, [`PluginClient`]: every call, the `refuse` knob, keys that leave the root, and
//! the socket's life cycle.

use std::path::{Path, PathBuf};
use std::time::Duration;

use argoexec_artifact_plugin::wire::{Artifact, GetCapabilitiesRequest, PluginArtifact};
use argoexec_artifact_plugin::{PluginClient, PluginError};
use argoexec_plugin_dir::{DirPlugin, Listener, ServeError};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const QUICK: (u32, Duration) = (100, Duration::from_millis(50));

/// A plugin serving on a temporary socket, with its store and a scratch directory.
struct Plugin {
    dir: tempfile::TempDir,
    root: PathBuf,
    socket: PathBuf,
    client: PluginClient,
    stop: oneshot::Sender<()>,
    served: JoinHandle<Result<(), ServeError>>,
}

impl Plugin {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        // The plugin creates the socket's directory.
        let socket = dir.path().join("artifact-plugins/dir/socket");
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn({
            let socket = socket.clone();
            async move {
                argoexec_plugin_dir::serve(&socket, async {
                    let _ = stopped.await;
                })
                .await
            }
        });
        let client = PluginClient::connect("dir", &socket, Duration::ZERO, QUICK)
            .await
            .unwrap();
        Self {
            dir,
            root,
            socket,
            client,
            stop,
            served,
        }
    }

    /// An artifact at `key` in this plugin's store.
    fn art(&self, key: &str) -> Artifact {
        art_with(&format!("root: {:?}", self.root), key)
    }

    fn scratch(&self, name: &str) -> PathBuf {
        self.dir.path().join("scratch").join(name)
    }

    async fn stop(self) -> (tempfile::TempDir, PathBuf) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(20), self.served)
            .await
            .expect("the plugin stops")
            .unwrap()
            .unwrap();
        (self.dir, self.socket)
    }
}

fn art_with(configuration: &str, key: &str) -> Artifact {
    Artifact {
        name: "a".into(),
        plugin: Some(PluginArtifact {
            name: "dir".into(),
            configuration: configuration.into(),
            key: key.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn write(path: &Path, content: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    n.sort();
    n
}

#[tokio::test]
async fn a_file_is_saved_replaced_and_loaded() {
    let p = Plugin::start().await;
    let src = p.scratch("out.txt");
    write(&src, b"hello plugin");
    p.client.save(&src, p.art("wf/pod/out.txt")).await.unwrap();
    assert_eq!(read(&p.root.join("wf/pod/out.txt")), "hello plugin");
    write(&src, b"second");
    p.client.save(&src, p.art("wf/pod/out.txt")).await.unwrap();
    // Replaced whole, and no temporary copy left beside it.
    assert_eq!(names(&p.root.join("wf/pod")), ["out.txt"]);

    let back = p.scratch("in/deep/out.txt.tmp");
    p.client.load(p.art("wf/pod/out.txt"), &back).await.unwrap();
    assert_eq!(read(&back), "second");

    let e = p
        .client
        .load(p.art("wf/pod/missing.txt"), &back)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, PluginError::Refused { op: "load", .. })
            && e.to_string() == "plugin dir load failed: key wf/pod/missing.txt does not exist",
        "{e}"
    );
    let e = p
        .client
        .save(&p.scratch("nothing"), p.art("wf/x"))
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("plugin dir save failed: key wf/x: cannot read "),
        "{e}"
    );
    assert!(!p.root.join("wf/x").exists());
    p.stop().await;
}

#[tokio::test]
async fn a_directory_is_saved_listed_and_loaded() {
    let p = Plugin::start().await;
    let src = p.scratch("outdir");
    write(&src.join("a.txt"), b"a");
    write(&src.join("sub/b.txt"), b"b");
    write(&src.join("sub/deeper/c.txt"), b"c");
    p.client.save(&src, p.art("wf/pod/outdir")).await.unwrap();
    write(&p.scratch("log.txt"), b"log");
    p.client
        .save(&p.scratch("log.txt"), p.art("wf/pod/main.log"))
        .await
        .unwrap();

    let listed = p.client.list_objects(p.art("wf")).await.unwrap();
    assert_eq!(
        listed,
        [
            "wf/pod/main.log",
            "wf/pod/outdir/a.txt",
            "wf/pod/outdir/sub/b.txt",
            "wf/pod/outdir/sub/deeper/c.txt"
        ]
    );
    assert_eq!(
        p.client.list_objects(p.art("wf/pod/main.log")).await.unwrap(),
        ["wf/pod/main.log"]
    );
    assert!(p.client.list_objects(p.art("wf/none")).await.unwrap().is_empty());

    assert!(p.client.is_directory(p.art("wf/pod/outdir")).await.unwrap());
    assert!(!p.client.is_directory(p.art("wf/pod/main.log")).await.unwrap());
    assert!(!p.client.is_directory(p.art("wf/none")).await.unwrap());

    let back = p.scratch("inputs/outdir.tmp");
    p.client.load(p.art("wf/pod/outdir"), &back).await.unwrap();
    assert_eq!(read(&back.join("a.txt")), "a");
    assert_eq!(read(&back.join("sub/b.txt")), "b");
    assert_eq!(read(&back.join("sub/deeper/c.txt")), "c");

    // A file saved over a directory replaces it.
    p.client
        .save(&p.scratch("log.txt"), p.art("wf/pod/outdir"))
        .await
        .unwrap();
    assert_eq!(read(&p.root.join("wf/pod/outdir")), "log");
    p.stop().await;
}

#[tokio::test]
async fn delete_removes_a_tree_and_a_missing_key_is_deleted_already() {
    let p = Plugin::start().await;
    write(&p.root.join("wf/pod/dir/a.txt"), b"a");
    write(&p.root.join("wf/pod/b.txt"), b"b");
    p.client.delete(p.art("wf/pod/dir")).await.unwrap();
    assert!(!p.root.join("wf/pod/dir").exists());
    p.client.delete(p.art("wf/pod/b.txt")).await.unwrap();
    assert!(!p.root.join("wf/pod/b.txt").exists());
    p.client.delete(p.art("wf/pod/b.txt")).await.unwrap();
    p.client.delete(p.art("never/was")).await.unwrap();
    assert!(p.root.join("wf/pod").is_dir());
    p.stop().await;
}

#[tokio::test]
async fn open_stream_sends_the_file_in_frames() {
    let p = Plugin::start().await;
    // Two and a half frames.
    let big: Vec<u8> = (0..(argoexec_plugin_dir::FRAME_SIZE * 5 / 2))
        .map(|i| (i % 251) as u8)
        .collect();
    write(&p.root.join("wf/big.bin"), &big);
    write(&p.root.join("wf/empty"), b"");
    assert_eq!(p.client.read_all(p.art("wf/big.bin")).await.unwrap(), big);
    assert!(p.client.read_all(p.art("wf/empty")).await.unwrap().is_empty());
    for (key, message) in [
        ("wf", "plugin dir open stream failed: key wf is a directory"),
        (
            "wf/none",
            "plugin dir open stream failed: key wf/none does not exist",
        ),
    ] {
        let e = p.client.read_all(p.art(key)).await.unwrap_err();
        assert!(
            matches!(
                &e,
                PluginError::Refused {
                    op: "open stream",
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.to_string(), message);
    }
    p.stop().await;
}

#[tokio::test]
async fn refuse_makes_the_named_operations_fail() {
    let p = Plugin::start().await;
    let config = format!("root: {:?}\nrefuse: [save, list]", p.root);
    let src = p.scratch("out.txt");
    write(&src, b"x");
    let e = p
        .client
        .save(&src, art_with(&config, "wf/out.txt"))
        .await
        .unwrap_err();
    assert!(matches!(&e, PluginError::Refused { op: "save", .. }), "{e}");
    assert!(e.to_string().starts_with("plugin dir save failed: "), "{e}");
    assert!(e.to_string().contains("refuse"), "{e}");
    assert!(!p.root.join("wf/out.txt").exists());
    let e = p.client.list_objects(art_with(&config, "wf")).await.unwrap_err();
    assert!(
        e.to_string().starts_with("plugin dir list objects failed: "),
        "{e}"
    );
    // The operations it does not name still work.
    p.client.save(&src, p.art("wf/out.txt")).await.unwrap();
    assert!(
        !p.client
            .is_directory(art_with(&config, "wf/out.txt"))
            .await
            .unwrap()
    );
    p.stop().await;
}

#[tokio::test]
async fn keys_outside_the_root_and_bad_configurations_are_invalid_arguments() {
    let p = Plugin::start().await;
    let outside = p.dir.path().join("outside.txt");
    write(&outside, b"secret");
    let back = p.scratch("in.txt");
    for key in ["wf/../../outside.txt", "../outside.txt", "/etc/passwd", ""] {
        let e = p.client.load(p.art(key), &back).await.unwrap_err();
        match &e {
            PluginError::Call {
                op: "load", source, ..
            } => {
                assert_eq!(source.code(), tonic::Code::InvalidArgument, "{key:?}: {e}");
            }
            _ => panic!("{key:?}: {e}"),
        }
        let e = p.client.delete(p.art(key)).await.unwrap_err();
        assert!(
            matches!(e, PluginError::Call { op: "delete", .. }),
            "{key:?}: {e}"
        );
    }
    assert!(!back.exists() && outside.exists());
    for config in [
        "",
        "root: relative/dir",
        "bucket: b",
        "root: /x\nrefuse: [everything]",
    ] {
        let e = p.client.load(art_with(config, "k"), &back).await.unwrap_err();
        assert!(
            e.to_string().starts_with("plugin dir load failed: ")
                && e.to_string().contains("invalid configuration"),
            "{config:?}: {e}"
        );
    }
    p.stop().await;
}

#[tokio::test]
async fn capabilities_deny_save_stream() {
    use argoexec_artifact_plugin::wire::artifact_service_server::ArtifactService;
    let caps = DirPlugin
        .get_capabilities(tonic::Request::new(GetCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert!(!caps.supports_save_stream);
}

#[tokio::test]
async fn the_socket_is_removed_after_serving_and_a_stale_one_replaced() {
    let p = Plugin::start().await;
    let (dir, socket) = p.stop().await;
    assert!(!socket.exists());

    // A socket left by a plugin that was killed.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let listener = Listener::bind(&socket).unwrap();
    assert_eq!(listener.socket(), socket);
    drop(listener);

    // Anything else at the path is left alone.
    let file = dir.path().join("not-a-socket");
    write(&file, b"keep");
    let e = Listener::bind(&file).unwrap_err();
    assert!(matches!(e, ServeError::NotASocket(_)), "{e}");
    assert_eq!(read(&file), "keep");
}
