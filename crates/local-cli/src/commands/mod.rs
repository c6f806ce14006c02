//! One module per subcommand of the local tools; [`plan`] is shared by `render` and `run`.

pub mod node;
pub mod plan;
pub mod render;
pub mod run;

/// A tokio runtime for the node and `run`.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}
