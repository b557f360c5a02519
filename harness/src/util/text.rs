//! Text for people: messages clipped at a word boundary or a byte budget, user strings quoted
//! without Rust's debug syntax, optional values shown as `unset` — and the one place that decides
//! which characters are shown as themselves ([`printable`]): every report (the terminal's, JUnit
//! XML, the HTML page, the markdown statement) writes any other character as the text `\u{…}`, so
//! what a case or an implementation says can neither rewrite a terminal or a CI log (ESC and OSC
//! sequences, BEL, CR, U+009B) nor break a document (NUL, U+FFFE, U+FFFF).

use std::borrow::Cow;
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

/// `s` cut to at most `max` bytes at a character boundary, `…` after the cut (so a clipped text
/// is at most `max + 3` bytes); `None` when it fits.
pub fn clip_bytes(s: &str, max: usize) -> Option<String> {
    if s.len() <= max {
        return None;
    }
    let end = (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    Some(format!("{}…", &s[..end]))
}

/// Whether `c` is shown as itself to people. Not: control characters (C0 such as NUL, BEL, ESC,
/// CR; DEL; C1 such as U+009B, a terminal's one-character CSI), the noncharacters U+FFFE and
/// U+FFFF (not allowed in XML), and the bidirectional overrides and isolates (U+202A–U+202E,
/// U+2066–U+2069), which reorder what a reader sees. Tab and newline are controls: the callers
/// that keep them say so ([`visible`]).
pub fn printable(c: char) -> bool {
    !(c.is_control()
        || matches!(c, '\u{FFFE}' | '\u{FFFF}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
}

/// Appends `c` as the text `\u{…}` (its code point in hex).
pub fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write;
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

/// `s` with every character but tabs, newlines and [`printable`] ones written as `\u{…}`: text of
/// several lines (an implementation's stderr, an error with its stderr tail).
pub fn visible(s: &str) -> Cow<'_, str> {
    escaped(s, |c| printable(c) || c == '\n' || c == '\t')
}

/// [`visible`] for one line: a newline is written as `\u{a}` too, so a name, an event or a
/// failure cannot start a line of its own in a report.
pub fn visible_line(s: &str) -> Cow<'_, str> {
    escaped(s, |c| printable(c) || c == '\t')
}

fn escaped(s: &str, shown: impl Fn(char) -> bool) -> Cow<'_, str> {
    if s.chars().all(&shown) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if shown(c) {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// `s` as inline markdown text: one line ([`visible_line`]), with the characters markdown reads
/// as markup or HTML (`\ ` * _ [ ] < > & | ~ #`) backslash-escaped, so a name shows as written.
pub fn markdown(s: &str) -> String {
    let line = visible_line(s);
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '~' | '#'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
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
            c if !printable(c) => push_escaped(&mut out, c),
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
    fn clipping_to_bytes_cuts_at_a_character_boundary() {
        assert_eq!(clip_bytes("short", 5), None);
        assert_eq!(clip_bytes("abcdef", 4).as_deref(), Some("abcd…"));
        // "é" is two bytes: a cut inside it falls before it.
        assert_eq!(clip_bytes("aé", 2).as_deref(), Some("a…"));
    }

    #[test]
    fn quoting_escapes_controls_only() {
        assert_eq!(quote("a \"b\"\n\u{1}é"), "\"a \\\"b\\\"\\n\\u{1}é\"");
    }

    #[test]
    fn what_could_rewrite_a_terminal_or_break_a_document_becomes_a_visible_escape() {
        // ESC and an OSC sequence, BEL, NUL, CR, the one-character CSI, noncharacters, a
        // right-to-left override.
        assert_eq!(
            visible("a\u{1b}]0;x\u{7}b\u{0}c\rd\u{9b}2Je\u{fffe}\u{ffff}\u{202e}f\tg\nh"),
            "a\\u{1b}]0;x\\u{7}b\\u{0}c\\u{d}d\\u{9b}2Je\\u{fffe}\\u{ffff}\\u{202e}f\tg\nh"
        );
        assert_eq!(visible_line("one\ntwo\tthree"), "one\\u{a}two\tthree");
        assert!(matches!(visible("plain é ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn markdown_text_cannot_open_markup() {
        assert_eq!(
            markdown("my-hpa <img src=x> *v1* [l](u)\n## x"),
            "my-hpa \\<img src=x\\> \\*v1\\* \\[l\\](u)\\\\u{a}\\#\\# x"
        );
    }

    #[test]
    fn options_and_lists_read_as_words() {
        assert_eq!(or_unset(Some(6)), "6");
        assert_eq!(or_unset::<i32>(None), "unset");
        assert_eq!(list::<i32>(&[]), "none");
        assert_eq!(list(&[80, 72]), "80, 72");
    }
}
