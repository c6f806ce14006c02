//! The init and wait flows, generic over the runtime seam.
