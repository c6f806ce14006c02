//! The client side of Argo v4.0+ artifact plugins (AW#14915): a plugin is a container serving
//! the gRPC service `artifact.ArtifactService` on the Unix socket
//! `/tmp/artifact-plugins/<name>/socket`; the executor calls it to load, save, delete and
//! list artifacts whose location is `plugin: {name, configuration, key}`.
//!
//! * [`wire`]: the service's messages and its client and server, generated at build time
//!   from the project's own `proto/artifact.proto` (message and field names and numbers as
//!   Argo's plugins expect them: `docs/design/artifact-plugins.md`);
//! * [`convert`]: an Argo artifact as the plugin sees it;
//! * [`client`]: [`PluginClient`] — waits for the socket, connects without TLS, and maps a
//!   plugin's answers to [`PluginError`]s with Argo's wording;
//! * [`dial`]: the socket dialled again while the plugin is not listening yet.

pub mod client;
pub mod convert;
pub mod dial;

/// The generated messages, client (`artifact_service_client`) and server
/// (`artifact_service_server`) of `artifact.ArtifactService`.
#[allow(missing_docs, clippy::all, clippy::pedantic, unreachable_pub)]
pub mod wire {
    tonic::include_proto!("artifact");
}

pub use client::{PluginClient, PluginError, socket_path};
