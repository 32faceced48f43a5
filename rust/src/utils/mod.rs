//! Helpers below every other module: the Fx hasher, and character classes read off generated tables.

pub mod hash;
pub mod unicode;
