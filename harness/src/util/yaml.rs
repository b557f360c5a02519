//! The one home for YAML: typed parsing with line:column errors (serde-saphyr), and a location
//! index of a document (path → line:column) so that errors found after parsing — unknown fields
//! inside embedded Kubernetes objects, validation failures — still point into the file.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// A position in a YAML document (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    /// Line, from 1.
    pub line: u64,
    /// Column, from 1.
    pub column: u64,
}

/// A YAML syntax or type error: where, and one line of reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// Where.
    pub pos: Pos,
    /// One line of reason.
    pub reason: String,
}

fn first_line(s: &str) -> String {
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim();
    // serde-saphyr prefixes "error: line L column C: "; the position is reported separately.
    let line = line.strip_prefix("error: ").unwrap_or(line);
    let line = match line.find(": ") {
        Some(i) if line.starts_with("line ") => &line[i + 2..],
        _ => line,
    };
    // The position is reported separately: drop a trailing " at line L, column C".
    match line.rfind(" at line ") {
        Some(i) if line[i..].contains(", column ") => line[..i].to_string(),
        _ => line.to_string(),
    }
}

fn convert(e: serde_saphyr::Error) -> YamlError {
    let pos = e
        .location()
        .map(|l| Pos {
            line: l.line(),
            column: l.column(),
        })
        .unwrap_or(Pos { line: 1, column: 1 });
    YamlError {
        pos,
        reason: first_line(&e.without_snippet().to_string()),
    }
}

/// Writes a document as YAML.
pub fn to_string<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_saphyr::to_string(value).map_err(|e| e.to_string())
}

/// Parses a typed document.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    serde_saphyr::from_str(text).map_err(convert)
}

/// An untyped YAML node with the position of its value.
#[derive(Debug, Clone)]
pub struct Node {
    /// Where the value starts.
    pub pos: Pos,
    /// The value.
    pub value: NodeValue,
}

/// An untyped YAML value.
#[derive(Debug, Clone)]
pub enum NodeValue {
    /// `null` or `~` or nothing.
    Null,
    /// A number or boolean scalar, as text.
    Scalar(String),
    /// A scalar YAML reads as a string (quoted, or plain text that is no number or boolean).
    Text(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in document order: key, the key's position, value.
    Map(Vec<(String, Pos, Node)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<NodeValue>::deserialize(d)?;
        Ok(Node {
            pos: Pos {
                line: s.referenced.line(),
                column: s.referenced.column(),
            },
            value: s.value,
        })
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = NodeValue;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<NodeValue, E> {
        Ok(NodeValue::Scalar(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<NodeValue, E> {
        Ok(NodeValue::Scalar(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<NodeValue, E> {
        Ok(NodeValue::Scalar(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<NodeValue, E> {
        Ok(NodeValue::Scalar(v.to_string()))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<NodeValue, E> {
        Ok(NodeValue::Text(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<NodeValue, E> {
        Ok(NodeValue::Text(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<NodeValue, E> {
        Ok(NodeValue::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<NodeValue, E> {
        Ok(NodeValue::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<NodeValue, D::Error> {
        NodeValue::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeValue, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = seq.next_element::<Node>()? {
            items.push(n);
        }
        Ok(NodeValue::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeValue, A::Error> {
        let mut entries = Vec::new();
        while let Some(k) = map.next_key::<Spanned<KeyText>>()? {
            let pos = Pos {
                line: k.referenced.line(),
                column: k.referenced.column(),
            };
            let v = map.next_value::<Node>()?;
            entries.push((k.value.0, pos, v));
        }
        Ok(NodeValue::Map(entries))
    }
}

impl<'de> Deserialize<'de> for NodeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// A mapping key of any scalar type, as text.
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NodeValue::deserialize(d)? {
            NodeValue::Scalar(s) | NodeValue::Text(s) => Ok(KeyText(s)),
            NodeValue::Null => Ok(KeyText("null".into())),
            _ => Err(de::Error::custom("mapping keys must be scalars")),
        }
    }
}

/// Positions of every node of a document by path (`hpa.spec.metrics[0].resource.name`), and
/// the path and text of every scalar by the position of its value.
#[derive(Debug, Clone, Default)]
pub struct Index {
    positions: BTreeMap<String, Pos>,
    scalars: BTreeMap<(u64, u64), (String, String)>,
    root: Option<Node>,
}

/// Indexes `node` at `path`; `at` is where the path is best pointed at (a mapping entry's key).
fn walk(path: &str, at: Pos, node: &Node, index: &mut Index) {
    index.positions.insert(path.to_string(), at);
    match &node.value {
        NodeValue::Map(entries) => {
            for (k, key_pos, v) in entries {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(&p, *key_pos, v, index);
            }
        }
        NodeValue::Seq(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(&format!("{path}[{i}]"), v.pos, v, index);
            }
        }
        NodeValue::Scalar(text) | NodeValue::Text(text) => {
            index.scalars.insert(
                (node.pos.line, node.pos.column),
                (path.to_string(), text.clone()),
            );
        }
        NodeValue::Null => {}
    }
}

/// The range of an integer type serde names in its errors (`invalid i32`).
fn integer_range(reason: &str) -> Option<(&'static str, String, String)> {
    let ty = reason.strip_prefix("invalid ")?.split_whitespace().next()?;
    let (lo, hi) = match ty {
        "i32" => (i32::MIN.to_string(), i32::MAX.to_string()),
        "u32" => ("0".into(), u32::MAX.to_string()),
        "i64" => (i64::MIN.to_string(), i64::MAX.to_string()),
        "u64" | "usize" => ("0".into(), u64::MAX.to_string()),
        "i8" | "u8" | "i16" | "u16" | "isize" => return None,
        _ => return None,
    };
    let name = match ty {
        "i32" | "u32" => "32-bit",
        _ => "64-bit",
    };
    Some((name, lo, hi))
}

impl Index {
    /// Indexes a document.
    pub fn build(text: &str) -> Result<Index, YamlError> {
        let root: Node = from_str(text)?;
        let mut index = Index::default();
        walk("", root.pos, &root, &mut index);
        index.root = Some(root);
        Ok(index)
    }

    /// A typed-parse error in words a user can act on: an integer that does not fit its field
    /// is named by its path, with the field's range.
    pub fn explain(&self, e: YamlError) -> YamlError {
        let Some((bits, lo, hi)) = integer_range(&e.reason) else {
            return e;
        };
        match self.scalars.get(&(e.pos.line, e.pos.column)) {
            Some((path, text)) => YamlError {
                reason: format!(
                    "{path} must be an integer from {lo} to {hi}, not {}",
                    crate::util::text::clip(text, 40)
                ),
                pos: e.pos,
            },
            None => YamlError {
                reason: format!("{} (a {bits} integer from {lo} to {hi})", e.reason),
                pos: e.pos,
            },
        }
    }

    /// The node at a path (`timeline[2].hpaPatch`).
    pub fn node(&self, path: &str) -> Option<&Node> {
        let mut node = self.root.as_ref()?;
        for part in path.split('.') {
            let (key, indices) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if !key.is_empty() {
                node = match &node.value {
                    NodeValue::Map(entries) => entries
                        .iter()
                        .find(|(k, _, _)| k == key)
                        .map(|(_, _, v)| v)?,
                    _ => return None,
                };
            }
            for i in indices
                .split(['[', ']'])
                .filter(|s| !s.is_empty())
                .map(str::parse::<usize>)
            {
                node = match &node.value {
                    NodeValue::Seq(items) => items.get(i.ok()?)?,
                    _ => return None,
                };
            }
        }
        Some(node)
    }

    /// The position of a path, or of its nearest indexed ancestor.
    pub fn locate(&self, path: &str) -> Pos {
        let mut p = path.to_string();
        loop {
            if let Some(pos) = self.positions.get(&p) {
                return *pos;
            }
            match p.rfind(['.', '[']) {
                Some(i) => p.truncate(i),
                None => {
                    return self
                        .positions
                        .get("")
                        .copied()
                        .unwrap_or(Pos { line: 1, column: 1 });
                }
            }
        }
    }

    /// The node at a top-level key.
    pub fn top(&self, key: &str) -> Option<&Node> {
        match &self.root.as_ref()?.value {
            NodeValue::Map(entries) => entries.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }
}

/// Paths of keys present (with a non-null value) in `node` but absent from `known`, the same
/// document after a typed round trip: fields the typed model does not know.
pub fn unknown_fields(path: &str, node: &Node, known: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    match (&node.value, known) {
        (NodeValue::Map(entries), serde_json::Value::Object(obj)) => {
            for (k, _, v) in entries {
                if matches!(v.value, NodeValue::Null) {
                    continue;
                }
                let p = format!("{path}.{k}");
                match obj.get(k) {
                    None => out.push(p),
                    Some(child) => out.extend(unknown_fields(&p, v, child)),
                }
            }
        }
        (NodeValue::Seq(items), serde_json::Value::Array(arr)) => {
            for (i, (v, child)) in items.iter().zip(arr).enumerate() {
                out.extend(unknown_fields(&format!("{path}[{i}]"), v, child));
            }
        }
        _ => {}
    }
    out
}

/// Scalars under `path` that YAML reads as strings where the typed value `known` (its round
/// trip) has an integer — `maxReplicas: "20"`, which serde reads as 20 and the API server
/// refuses — each as (path, the string).
pub fn strings_for_integers(
    path: &str,
    node: &Node,
    known: &serde_json::Value,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    match (&node.value, known) {
        (NodeValue::Text(text), serde_json::Value::Number(n)) if !n.is_f64() => {
            out.push((path.to_string(), text.clone()));
        }
        (NodeValue::Map(entries), serde_json::Value::Object(obj)) => {
            for (k, _, v) in entries {
                if let Some(child) = obj.get(k) {
                    out.extend(strings_for_integers(&format!("{path}.{k}"), v, child));
                }
            }
        }
        (NodeValue::Seq(items), serde_json::Value::Array(arr)) => {
            for (i, (v, child)) in items.iter().zip(arr).enumerate() {
                out.extend(strings_for_integers(&format!("{path}[{i}]"), v, child));
            }
        }
        _ => {}
    }
    out
}

/// The range of the integer type named by serde (`i32`, `u64`…) in words, for a message:
/// `an integer from -2147483648 to 2147483647`.
pub fn integer_words(ty: &str) -> String {
    match integer_range(&format!("invalid {ty}")) {
        Some((_, lo, hi)) => format!("an integer from {lo} to {hi}"),
        None => "an integer".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_locates_nested_paths_and_falls_back_to_ancestors() {
        let text = "a:\n  b:\n    - x: 1\n    - y: 2\n";
        let idx = Index::build(text).unwrap();
        assert_eq!(idx.locate("a.b[1].y").line, 4);
        assert_eq!(idx.locate("a.b[1].nope").line, 4);
    }

    #[test]
    fn integer_errors_name_the_field_and_its_range() {
        let text = "a:\n  - count: 99999999999\n";
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Item {
            count: i32,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Doc {
            a: Vec<Item>,
        }
        let e = from_str::<Doc>(text).unwrap_err();
        let e = Index::build(text).unwrap().explain(e);
        assert_eq!(
            e.reason,
            "a[0].count must be an integer from -2147483648 to 2147483647, not 99999999999"
        );
        assert_eq!((e.pos.line, e.pos.column), (2, 12));
    }

    #[test]
    fn nodes_are_found_by_path() {
        let idx = Index::build("a:\n  b:\n    - x: 1\n    - w: {z: 2}\n").unwrap();
        assert!(matches!(
            idx.node("a.b[1].w").map(|n| &n.value),
            Some(NodeValue::Map(_))
        ));
        assert!(idx.node("a.b[2]").is_none());
    }

    #[test]
    fn syntax_errors_have_a_position_and_one_line() {
        let e = from_str::<serde_json::Value>("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.pos.line >= 1);
        assert!(!e.reason.contains('\n'));
    }
}
