//! Artifact drivers behind one trait: raw (inline) and local filesystem.
