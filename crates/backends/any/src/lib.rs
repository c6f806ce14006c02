//! Backend selection by name: one enum over every built backend.
