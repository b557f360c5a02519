//! Text for people: messages clipped at a word boundary, user strings quoted without Rust's debug
//! syntax, optional values shown as `unset`.

use std::fmt::Display;

/// `s` cut to at most `max` characters at a word boundary, with `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max.saturating_sub(1)).collect();
    let at_word = match cut.rfind(char::is_whitespace) {
        // Keep at least half: a single huge word is cut inside it.
        Some(i) if i >= cut.len() / 2 => cut[..i].trim_end(),
        _ => cut.as_str(),
    };
    format!("{at_word}…")
}

/// `s` in double quotes, with control characters and quotes escaped (`\n`, `\u{1b}`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A value, or `unset`.
pub fn or_unset<T: Display>(v: Option<T>) -> String {
    v.map_or_else(|| "unset".to_string(), |v| v.to_string())
}

/// Items joined by `, `, or `none`.
pub fn list<T: Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_keeps_whole_words() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("the quick brown fox jumps", 12), "the quick…");
        assert_eq!(clip("abcdefghijklmnop", 6), "abcde…");
    }

    #[test]
    fn quoting_escapes_controls_only() {
        assert_eq!(quote("a \"b\"\n\u{1}é"), "\"a \\\"b\\\"\\n\\u{1}é\"");
    }

    #[test]
    fn options_and_lists_read_as_words() {
        assert_eq!(or_unset(Some(6)), "6");
        assert_eq!(or_unset::<i32>(None), "unset");
        assert_eq!(list::<i32>(&[]), "none");
        assert_eq!(list(&[80, 72]), "80, 72");
    }
}
