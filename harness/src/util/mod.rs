//! Small utilities every layer may use: printable text and clipping ([`text`]), ordered parallel
//! maps ([`parallel`]), and YAML with positions ([`yaml`]). Nothing here knows about HPAs.

pub mod parallel;
pub mod text;
pub mod yaml;
