//! The fan-out core.
