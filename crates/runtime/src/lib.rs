//! The runtime seam: the RuntimeExecutor trait every backend implements.
