//! Label selector strings as the scale subresource reports them (`status.selector`): a parser
//! for the syntax upstream's `labels.Parse` accepts, so an invalid selector is caught with the
//! `InvalidSelector` condition, and matching against pod labels.

use std::collections::BTreeMap;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key` (exists).
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
    /// `key=value`, `key==value`, `key in (a,b)`.
    In(String, Vec<String>),
    /// `key!=value`, `key notin (a,b)`.
    NotIn(String, Vec<String>),
}

/// A parsed selector: all requirements must hold. Empty selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector(pub Vec<Requirement>);

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn valid_key(k: &str) -> Result<(), String> {
    let name = match k.split_once('/') {
        Some((prefix, name)) => {
            if prefix.is_empty()
                || prefix.len() > 253
                || !prefix.split('.').all(|p| valid_name(p) && !p.contains('_'))
            {
                return Err(format!(
                    "invalid label key {k:?}: prefix part must be a DNS subdomain"
                ));
            }
            name
        }
        None => k,
    };
    if valid_name(name) {
        Ok(())
    } else {
        Err(format!(
            "invalid label key {k:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn valid_value(v: &str) -> Result<(), String> {
    if v.is_empty() || valid_name(v) {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// Splits a selector string at its top-level commas (not inside `(...)`).
pub fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_set(key: &str, rest: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            format!("found '{rest}', expected: '(' for set-based requirement on {key}")
        })?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    for v in &values {
        valid_value(v)?;
    }
    Ok(values)
}

/// Parses a selector string.
pub fn parse(s: &str) -> Result<Selector, String> {
    let mut reqs = Vec::new();
    if s.trim().is_empty() {
        return Ok(Selector(reqs));
    }
    for part in split_top_level(s) {
        let part = part.trim();
        if part.is_empty() {
            return Err("found '', expected: identifier".to_string());
        }
        let req = if let Some(key) = part.strip_prefix('!') {
            let key = key.trim();
            valid_key(key)?;
            Requirement::DoesNotExist(key.to_string())
        } else if let Some((key, value)) = part.split_once("!=") {
            let (key, value) = (key.trim(), value.trim());
            valid_key(key)?;
            valid_value(value)?;
            Requirement::NotIn(key.to_string(), vec![value.to_string()])
        } else if let Some((key, value)) = part.split_once('=') {
            let value = value.strip_prefix('=').unwrap_or(value);
            let (key, value) = (key.trim(), value.trim());
            valid_key(key)?;
            valid_value(value)?;
            Requirement::In(key.to_string(), vec![value.to_string()])
        } else if let Some((key, rest)) = part.split_once(" notin ") {
            let key = key.trim();
            valid_key(key)?;
            Requirement::NotIn(key.to_string(), parse_set(key, rest)?)
        } else if let Some((key, rest)) = part.split_once(" in ") {
            let key = key.trim();
            valid_key(key)?;
            Requirement::In(key.to_string(), parse_set(key, rest)?)
        } else {
            valid_key(part)?;
            Requirement::Exists(part.to_string())
        };
        reqs.push(req);
    }
    Ok(Selector(reqs))
}

impl Selector {
    /// Whether a pod with these labels is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_equality_and_set_based_selectors() {
        let s = parse("app=web,tier in (a, b),!legacy,env!=prod").unwrap();
        assert_eq!(s.0.len(), 4);
        let labels = BTreeMap::from([
            ("app".to_string(), "web".to_string()),
            ("tier".to_string(), "b".to_string()),
        ]);
        assert!(s.matches(&labels));
    }

    #[test]
    fn rejects_bad_syntax() {
        assert!(parse("app=we b").is_err());
        assert!(parse("app=web,").is_err());
        assert!(parse("-bad=1").is_err());
        assert!(parse("tier in a,b").is_err());
    }
}
