//! Generate the `artifact.ArtifactService` client and server from `proto/artifact.proto`,
//! compiled by protox (no protoc needed).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/artifact.proto");
    let fds = protox::compile(["proto/artifact.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
