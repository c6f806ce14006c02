//! The emissary backend: the wait side of the emissary file protocol.
