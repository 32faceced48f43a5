//! `Token`: what tokenizing yields, for every family.

/// One token: id and byte offsets into the text given to `tokenize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub id: u32,
    pub start: usize,
    pub end: usize,
}
