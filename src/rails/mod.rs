//! What Rails defines and Hearth must match, byte for byte.
