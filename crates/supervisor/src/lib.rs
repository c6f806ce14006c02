//! The emissary wrapper: PID 1 in the user container.
