//! Label selector strings as the scale subresource reports them (`status.selector`): a parser
//! for the syntax upstream's `labels.Parse` accepts, so an invalid selector is caught with the
//! `InvalidSelector` condition, and matching against pod labels.

use std::collections::BTreeMap;

use crate::view::same_name;

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
    /// `key>value`: the label is an integer greater than `value`.
    GreaterThan(String, String),
    /// `key<value`: the label is an integer less than `value`.
    LessThan(String, String),
}

/// A parsed selector: all requirements must hold. Empty selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector(pub Vec<Requirement>);

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

/// A token of the selector language, as `labels.Parse`'s lexer cuts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Cuts a selector into tokens: runs of special symbols as the longest keyword they start with,
/// anything else up to a special symbol or whitespace as an identifier (or `in`/`notin`).
fn lex(s: &str) -> Vec<(Token, String)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < bytes.len() && whitespace(bytes[i]) {
            i += 1;
        }
        if i >= bytes.len() {
            out.push((Token::End, String::new()));
            return out;
        }
        if special(bytes[i]) {
            let start = i;
            let mut last: Option<(Token, usize)> = None;
            while i < bytes.len() && special(bytes[i]) {
                i += 1;
                if let Some(t) = keyword(&s[start..i]) {
                    last = Some((t, i));
                } else if last.is_some() {
                    i -= 1;
                    break;
                }
            }
            match last {
                Some((t, end)) => {
                    i = end;
                    out.push((t, s[start..end].to_string()));
                }
                None => out.push((
                    Token::Error,
                    format!("error expected: keyword found '{}'", &s[start..i]),
                )),
            }
        } else {
            let start = i;
            while i < bytes.len() && !special(bytes[i]) && !whitespace(bytes[i]) {
                i += 1;
            }
            let word = &s[start..i];
            out.push((keyword(word).unwrap_or(Token::Identifier), word.to_string()));
        }
    }
}

const LABEL_KEY_FORMAT: &str = "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_KEY_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn label_name_shape(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A lowercase RFC 1123 subdomain's problems (validation's `IsDNS1123Subdomain`).
fn dns_subdomain_problems(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 bytes".to_string());
    }
    let label = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    };
    if !s.split('.').all(label) {
        errs.push("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string());
    }
    errs
}

/// A label key's problems (validation's `IsLabelKey`, which is also its `IsQualifiedName`),
/// each a sentence.
pub(crate) fn label_key_problems(k: &str) -> Vec<String> {
    let parts: Vec<&str> = k.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns_subdomain_problems(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {LABEL_KEY_MESSAGE} {LABEL_KEY_FORMAT} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !label_name_shape(name) {
        errs.push(format!("name part {LABEL_KEY_MESSAGE} {LABEL_KEY_FORMAT}"));
    }
    errs
}

/// A label value's problems (validation's `IsLabelValue`).
fn label_value_problems(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !v.is_empty() && !label_name_shape(v) {
        errs.push("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string());
    }
    errs
}

/// A field error as apimachinery prints it: `PATH: Invalid value: "VALUE": DETAIL`.
fn invalid(path: &str, value: &str, problems: &[String]) -> String {
    format!(
        "{path}: Invalid value: {}: {}",
        crate::gotext::go_quote(value),
        problems.join("; ")
    )
}

/// Several field errors as one (`field.ErrorList.ToAggregate`): duplicates dropped, one printed
/// alone, more in brackets.
fn aggregate(errors: Vec<String>) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

/// The parser over the tokens, with `labels.Parse`'s lookahead rules: in a value position `in`
/// and `notin` are identifiers.
struct Parser {
    tokens: Vec<(Token, String)>,
    at: usize,
}

impl Parser {
    fn value_token(t: Token) -> Token {
        match t {
            Token::In | Token::NotIn => Token::Identifier,
            t => t,
        }
    }

    fn lookahead(&self) -> (Token, &str) {
        let (t, l) = &self.tokens[self.at.min(self.tokens.len() - 1)];
        (Self::value_token(*t), l)
    }

    fn consume(&mut self, values: bool) -> (Token, String) {
        let (t, l) = self.tokens[self.at.min(self.tokens.len() - 1)].clone();
        self.at += 1;
        (if values { Self::value_token(t) } else { t }, l)
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (mut tok, mut key) = self.consume(true);
        let mut does_not_exist = false;
        if tok == Token::DoesNotExist {
            does_not_exist = true;
            (tok, key) = self.consume(true);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        let key_problems = label_key_problems(&key);
        if !key_problems.is_empty() {
            return Err(invalid("<nil>", &key, &key_problems));
        }
        if matches!(self.lookahead().0, Token::End | Token::Comma) || does_not_exist {
            return Ok(if does_not_exist {
                Requirement::DoesNotExist(key)
            } else {
                Requirement::Exists(key)
            });
        }
        let (op, lit) = self.consume(false);
        let values: Vec<String> = match op {
            Token::In | Token::NotIn => self.set()?,
            Token::Equals
            | Token::DoubleEquals
            | Token::NotEquals
            | Token::GreaterThan
            | Token::LessThan => {
                let (t, _) = self.lookahead();
                if matches!(t, Token::End | Token::Comma) {
                    vec![String::new()]
                } else {
                    let (t, l) = self.consume(true);
                    if t != Token::Identifier {
                        return Err(format!("found '{l}', expected: identifier"));
                    }
                    vec![l]
                }
            }
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        };
        // The key was checked above; NewRequirement's checks of the values follow.
        let mut errors = Vec::new();
        if matches!(op, Token::GreaterThan | Token::LessThan) {
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errors.push(invalid(
                        &format!("values[{i}]"),
                        v,
                        &["for 'Gt', 'Lt' operators, the value must be an integer".to_string()],
                    ));
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let p = label_value_problems(v);
            if !p.is_empty() {
                errors.push(invalid(&format!("values[{i}][{key}]"), v, &p));
            }
        }
        if let Some(e) = aggregate(errors) {
            return Err(e);
        }
        Ok(match op {
            Token::In | Token::Equals | Token::DoubleEquals => Requirement::In(key, values),
            Token::NotIn | Token::NotEquals => Requirement::NotIn(key, values),
            Token::GreaterThan => Requirement::GreaterThan(key, values.concat()),
            _ => Requirement::LessThan(key, values.concat()),
        })
    }

    /// `( a, b )`: the values sorted and without duplicates, `""` for empty slots.
    fn set(&mut self) -> Result<Vec<String>, String> {
        let (t, l) = self.consume(true);
        if t != Token::OpenPar {
            return Err(format!("found '{l}' expected: '('"));
        }
        let (t, l) = self.lookahead();
        let l = l.to_string();
        let mut set = std::collections::BTreeSet::new();
        match t {
            Token::Identifier | Token::Comma => {
                loop {
                    let (t, l) = self.consume(true);
                    match t {
                        Token::Identifier => {
                            set.insert(l);
                            let (t2, l2) = self.lookahead();
                            match t2 {
                                Token::Comma => continue,
                                Token::ClosedPar => break,
                                _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                            }
                        }
                        Token::Comma => {
                            if set.is_empty() {
                                set.insert(String::new());
                            }
                            let (t2, _) = self.lookahead();
                            if t2 == Token::ClosedPar {
                                set.insert(String::new());
                                break;
                            }
                            if t2 == Token::Comma {
                                set.insert(String::new());
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',', or identifier")),
                    }
                }
                if self.consume(true).0 != Token::ClosedPar {
                    return Err(format!("found '{l}', expected: ')'"));
                }
            }
            Token::ClosedPar => {
                self.consume(true);
                set.insert(String::new());
            }
            _ => return Err(format!("found '{l}', expected: ',', ')' or identifier")),
        }
        Ok(set.into_iter().collect())
    }
}

/// Parses a selector string as `labels.Parse` does, with its error messages word for word
/// (they reach the `InvalidSelector` event and condition).
pub fn parse(s: &str) -> Result<Selector, String> {
    let mut p = Parser {
        tokens: lex(s),
        at: 0,
    };
    let mut reqs = Vec::new();
    loop {
        let (t, l) = p.lookahead();
        match t {
            Token::Identifier | Token::DoesNotExist => {
                let r = p
                    .requirement()
                    .map_err(|e| format!("unable to parse requirement: {e}"))?;
                reqs.push(r);
                let (t, l) = p.consume(true);
                match t {
                    Token::End => return Ok(Selector(reqs)),
                    Token::Comma => {
                        let (t2, l2) = p.lookahead();
                        if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                            return Err(format!("found '{l2}', expected: identifier after ','"));
                        }
                    }
                    _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                }
            }
            Token::End => return Ok(Selector(reqs)),
            _ => {
                return Err(format!(
                    "found '{l}', expected: !, identifier, or 'end of string'"
                ));
            }
        }
    }
}

/// A `metav1.LabelSelector` as a selector string, as upstream writes it
/// (`metav1.LabelSelectorAsSelector(sel).String()`): the scale subresource's `status.selector`
/// of a Deployment, and the metrics APIs' `metricLabelSelector`. One requirement per label
/// (`key=value`) and per expression (`key in (a,b)`, `key notin (a,b)`, `key`, `!key`), ordered
/// by key (stably: labels before expressions of the same key), each expression's values sorted;
/// nothing to require (`None`, or no label and no expression) → `""`. The API server refuses any
/// other operator; one here reads as `!key`.
pub fn format(
    sel: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> String {
    let Some(sel) = sel else {
        return String::new();
    };
    let mut parts: Vec<(&str, String)> = sel
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), format!("{k}={v}")))
        .collect();
    for e in sel.match_expressions.iter().flatten() {
        let mut values: Vec<&str> = e.values.iter().flatten().map(String::as_str).collect();
        values.sort_unstable();
        let values = values.join(",");
        let key = e.key.as_str();
        parts.push((
            key,
            match e.operator.as_str() {
                "In" => format!("{key} in ({values})"),
                "NotIn" => format!("{key} notin ({values})"),
                "Exists" => key.to_string(),
                _ => format!("!{key}"),
            },
        ));
    }
    parts.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = parts.into_iter().map(|(_, p)| p).collect();
    parts.join(",")
}

impl Selector {
    /// Whether a pod with these labels is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let one_of = |vs: &[String], v: &str| {
            for x in vs {
                if same_name(x, v) {
                    return true;
                }
            }
            false
        };
        self.0.iter().all(|r| match r {
            Requirement::Exists(k) => label(labels, k).is_some(),
            Requirement::DoesNotExist(k) => label(labels, k).is_none(),
            Requirement::In(k, vs) => label(labels, k).is_some_and(|v| one_of(vs, v)),
            Requirement::NotIn(k, vs) => label(labels, k).is_none_or(|v| !one_of(vs, v)),
            Requirement::GreaterThan(k, v) | Requirement::LessThan(k, v) => {
                let (Some(Ok(have)), Ok(bound)) =
                    (label(labels, k).map(|l| l.parse::<i64>()), v.parse::<i64>())
                else {
                    return false;
                };
                if matches!(r, Requirement::GreaterThan(..)) {
                    have > bound
                } else {
                    have < bound
                }
            }
        })
    }
}

/// The value of label `key`. A pod has a few labels: a look at each in order, compared in line,
/// is cheaper than the map's search (a `memcmp` call per key it passes); many are searched.
#[inline]
fn label<'a>(labels: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    if labels.len() > 8 {
        return labels.get(key).map(String::as_str);
    }
    for (k, v) in labels {
        if same_name(k, key) {
            return Some(v);
        }
    }
    None
}

thread_local! {
    /// The last selector known to parse: `decide` only checks that the scale's selector is valid,
    /// and a valid string stays valid.
    static VALID_SELECTOR: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Whether `selector` is the last selector [`remember_valid`] was told parses.
pub(crate) fn known_valid(selector: &str) -> bool {
    VALID_SELECTOR.with_borrow(|v| v.as_deref() == Some(selector))
}

/// Remembers that `selector` parses.
pub(crate) fn remember_valid(selector: &str) {
    VALID_SELECTOR.with_borrow_mut(|v| match v {
        Some(s) => {
            s.clear();
            s.push_str(selector);
        }
        None => *v = Some(selector.to_string()),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(selector, labels.Parse's error or <nil>)` printed by a Go program calling apimachinery
    /// v0.36.4's `labels.Parse` on each.
    const FROM_GO: &[(&str, &str)] = &[
        (
            r#"a b"#,
            r#"unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"#,
        ),
        (
            r#"=x"#,
            r#"found '=', expected: !, identifier, or 'end of string'"#,
        ),
        (r#"app="#, r#"<nil>"#),
        (
            r#"app in a"#,
            r#"unable to parse requirement: found 'a' expected: '('"#,
        ),
        (
            r#"app=a b"#,
            r#"found 'b', expected: ',' or 'end of string'"#,
        ),
        (
            r#"!"#,
            r#"unable to parse requirement: found '', expected: identifier"#,
        ),
        (
            r#","#,
            r#"found ',', expected: !, identifier, or 'end of string'"#,
        ),
        (r#"app=web,"#, r#"found '', expected: identifier after ','"#),
        (
            r#"key$=v"#,
            r#"unable to parse requirement: <nil>: Invalid value: "key$": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
        ),
        (
            r#"app=-bad"#,
            r#"unable to parse requirement: values[0][app]: Invalid value: "-bad": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
        ),
        (
            r#"x in (a b)"#,
            r#"unable to parse requirement: found 'b', expected: ',' or ')'"#,
        ),
        (
            r#"_a=b"#,
            r#"unable to parse requirement: <nil>: Invalid value: "_a": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
        ),
        (
            r#"a/b/c=d"#,
            r#"unable to parse requirement: <nil>: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#,
        ),
        (
            r#"app notin (a,"#,
            r#"unable to parse requirement: found '', expected: ',', or identifier"#,
        ),
        (r#"app=web,tier in (a, b),!legacy,env!=prod"#, r#"<nil>"#),
        (r#"x>5"#, r#"<nil>"#),
        (
            r#"x<abc"#,
            r#"unable to parse requirement: values[0]: Invalid value: "abc": for 'Gt', 'Lt' operators, the value must be an integer"#,
        ),
        (
            r#"x>"#,
            r#"unable to parse requirement: values[0]: Invalid value: "": for 'Gt', 'Lt' operators, the value must be an integer"#,
        ),
        (r#"!a=b"#, r#"found '=', expected: ',' or 'end of string'"#),
        (r#"a==b"#, r#"<nil>"#),
        (
            r#"a!==b"#,
            r#"unable to parse requirement: found '=', expected: identifier"#,
        ),
        (r#"a in ()"#, r#"<nil>"#),
        (r#"a in (,)"#, r#"<nil>"#),
        (r#"a in (b,,c)"#, r#"<nil>"#),
        (r#"a in (,b)"#, r#"<nil>"#),
        (r#"a notin (b,)"#, r#"<nil>"#),
        (
            r#"Example.com/x=y"#,
            r#"unable to parse requirement: <nil>: Invalid value: "Example.com/x": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
        ),
        (r#"example.com/x=y"#, r#"<nil>"#),
        (
            r#"/x=y"#,
            r#"unable to parse requirement: <nil>: Invalid value: "/x": prefix part must be non-empty"#,
        ),
        (
            r#"example.com/=y"#,
            r#"unable to parse requirement: <nil>: Invalid value: "example.com/": name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
        ),
        (
            r#"a=verylongvalueverylongvalueverylongvalueverylongvalueverylongvalue1"#,
            r#"unable to parse requirement: values[0][a]: Invalid value: "verylongvalueverylongvalueverylongvalueverylongvalueverylongvalue1": must be no more than 63 bytes"#,
        ),
        (
            r#"verylongkeyverylongkeyverylongkeyverylongkeyverylongkeyverylongkey1=a"#,
            r#"unable to parse requirement: <nil>: Invalid value: "verylongkeyverylongkeyverylongkeyverylongkeyverylongkeyverylongkey1": name part must be no more than 63 bytes"#,
        ),
        (r#"in=a"#, r#"<nil>"#),
        (r#"a=in"#, r#"<nil>"#),
        (r#"a in (in, notin)"#, r#"<nil>"#),
        (
            r#"a in (x"#,
            r#"unable to parse requirement: found '', expected: ',' or ')'"#,
        ),
        (
            r#"a in x)"#,
            r#"unable to parse requirement: found 'x' expected: '('"#,
        ),
        (r#"a,b"#, r#"<nil>"#),
        (r#"a, ,b"#, r#"found ',', expected: identifier after ','"#),
        (r#" "#, r#"<nil>"#),
        (
            r#"a=b c=d"#,
            r#"found 'c', expected: ',' or 'end of string'"#,
        ),
        (
            r#"a in (-x,y_)"#,
            r#"unable to parse requirement: [values[0][a]: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), values[1][a]: Invalid value: "y_": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]"#,
        ),
        (
            r#"a>-5"#,
            r#"unable to parse requirement: values[0][a]: Invalid value: "-5": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
        ),
        (
            r#"a>+5"#,
            r#"unable to parse requirement: values[0][a]: Invalid value: "+5": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
        ),
        (
            r#"a>1.5"#,
            r#"unable to parse requirement: values[0]: Invalid value: "1.5": for 'Gt', 'Lt' operators, the value must be an integer"#,
        ),
        (
            r#"(a)"#,
            r#"found '(', expected: !, identifier, or 'end of string'"#,
        ),
        (
            r#"a)"#,
            r#"unable to parse requirement: found ')', expected: in, notin, =, ==, !=, gt, lt"#,
        ),
        (
            r#"a=(b)"#,
            r#"unable to parse requirement: found '(', expected: identifier"#,
        ),
        (
            r#"a notin"#,
            r#"unable to parse requirement: found '' expected: '('"#,
        ),
        (r#"notin=x"#, r#"<nil>"#),
        (r#"x=y,"#, r#"found '', expected: identifier after ','"#),
        (
            r#"!!a"#,
            r#"unable to parse requirement: found '!', expected: identifier"#,
        ),
        (
            r#"a<b,c>d"#,
            r#"unable to parse requirement: values[0]: Invalid value: "b": for 'Gt', 'Lt' operators, the value must be an integer"#,
        ),
        (
            r#"a=é"#,
            r#"unable to parse requirement: values[0][a]: Invalid value: "é": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
        ),
    ];

    #[test]
    fn errors_are_labels_parse_word_for_word() {
        for &(input, go) in FROM_GO {
            let ours = match parse(input) {
                Ok(_) => "<nil>".to_string(),
                Err(e) => e,
            };
            assert_eq!(ours, go, "labels.Parse({input:?})");
        }
    }

    #[test]
    fn greater_and_less_than_compare_integers() {
        let s = parse("a>5,b<0").unwrap();
        let labels = |a: &str, b: &str| {
            BTreeMap::from([
                ("a".to_string(), a.to_string()),
                ("b".to_string(), b.to_string()),
            ])
        };
        assert!(s.matches(&labels("6", "-1")));
        assert!(!s.matches(&labels("5", "-1")));
        assert!(!s.matches(&labels("x", "-1")));
    }

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
    fn matching_looks_labels_up_as_the_map_does() {
        // The map's own lookups, against which `label`'s in-line walk is checked.
        fn by_map(s: &Selector, labels: &BTreeMap<String, String>) -> bool {
            s.0.iter().all(|r| match r {
                Requirement::Exists(k) => labels.contains_key(k),
                Requirement::DoesNotExist(k) => !labels.contains_key(k),
                Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
                Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
                Requirement::GreaterThan(k, v) | Requirement::LessThan(k, v) => {
                    let (Some(Ok(have)), Ok(bound)) =
                        (labels.get(k).map(|l| l.parse::<i64>()), v.parse::<i64>())
                    else {
                        return false;
                    };
                    if matches!(r, Requirement::GreaterThan(..)) {
                        have > bound
                    } else {
                        have < bound
                    }
                }
            })
        }
        let selectors = [
            "app=web",
            "app==web,tier=b",
            "app!=web",
            "app in (web, db),!legacy",
            "tier notin (a, b)",
            "legacy",
            "!app",
            "zz=1",
            "a0=v",
            "k3>2",
            "k3<2",
            "app=we",
            "app=webb",
        ];
        let mut maps: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
        for n in [1, 2, 3, 8, 9, 20] {
            let mut m: BTreeMap<String, String> =
                (0..n).map(|i| (format!("k{i}"), i.to_string())).collect();
            maps.push(m.clone());
            m.insert("app".into(), "web".into());
            maps.push(m.clone());
            m.insert("tier".into(), "b".into());
            m.insert("legacy".into(), String::new());
            maps.push(m.clone());
            m.insert("a0".into(), "v".into());
            m.insert("zz".into(), "1".into());
            maps.push(m);
        }
        for text in selectors {
            let s = parse(text).unwrap();
            for labels in &maps {
                assert_eq!(
                    s.matches(labels),
                    by_map(&s, labels),
                    "{text} on {labels:?}"
                );
            }
        }
    }

    #[test]
    fn rejects_bad_syntax() {
        assert!(parse("app=we b").is_err());
        assert!(parse("app=web,").is_err());
        assert!(parse("-bad=1").is_err());
        assert!(parse("tier in a,b").is_err());
    }

    #[test]
    fn only_the_remembered_selector_is_known_valid() {
        remember_valid("app=web");
        assert!(known_valid("app=web"));
        assert!(!known_valid("app=db"));
        remember_valid("app=db");
        assert!(!known_valid("app=web"));
    }

    /// `metav1.LabelSelectorAsSelector(sel).String()` of each selector, printed by a Go program
    /// against apimachinery v0.37.2 (JSON in, the quoted string out).
    #[test]
    fn a_label_selector_is_written_as_upstream_writes_it() {
        let from_go: &[(&str, &str)] = &[
            ("null", ""),
            ("{}", ""),
            (r#"{"matchLabels":{"b":"2","a":"1"}}"#, "a=1,b=2"),
            (
                r#"{"matchLabels":{"app":"web","tier":"x"},"matchExpressions":[
                    {"key":"env","operator":"In","values":["z","a","m"]},
                    {"key":"app","operator":"NotIn","values":["y","b"]},
                    {"key":"zone","operator":"Exists"},
                    {"key":"gone","operator":"DoesNotExist"}]}"#,
                "app=web,app notin (b,y),env in (a,m,z),!gone,tier=x,zone",
            ),
            (
                r#"{"matchExpressions":[{"key":"k","operator":"In","values":["b","a","b"]}]}"#,
                "k in (a,b,b)",
            ),
        ];
        for (json, want) in from_go {
            let sel: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> =
                serde_json::from_str(json).expect("selector");
            assert_eq!(format(sel.as_ref()), *want, "{json}");
            // What it writes parses back (the controller lists pods by it).
            assert!(parse(want).is_ok(), "{want}");
        }
    }
}
