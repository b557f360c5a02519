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
    /// Any scalar, as text.
    Scalar(String),
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
        Ok(NodeValue::Scalar(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<NodeValue, E> {
        Ok(NodeValue::Scalar(v))
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
            NodeValue::Scalar(s) => Ok(KeyText(s)),
            NodeValue::Null => Ok(KeyText("null".into())),
            _ => Err(de::Error::custom("mapping keys must be scalars")),
        }
    }
}

/// Positions of every node of a document by path (`hpa.spec.metrics[0].resource.name`).
#[derive(Debug, Clone, Default)]
pub struct Index {
    positions: BTreeMap<String, Pos>,
    root: Option<Node>,
}

/// Indexes `node` at `path`; `at` is where the path is best pointed at (a mapping entry's key).
fn walk(path: &str, at: Pos, node: &Node, out: &mut BTreeMap<String, Pos>) {
    out.insert(path.to_string(), at);
    match &node.value {
        NodeValue::Map(entries) => {
            for (k, key_pos, v) in entries {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(&p, *key_pos, v, out);
            }
        }
        NodeValue::Seq(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(&format!("{path}[{i}]"), v.pos, v, out);
            }
        }
        _ => {}
    }
}

impl Index {
    /// Indexes a document.
    pub fn build(text: &str) -> Result<Index, YamlError> {
        let root: Node = from_str(text)?;
        let mut positions = BTreeMap::new();
        walk("", root.pos, &root, &mut positions);
        Ok(Index {
            positions,
            root: Some(root),
        })
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
    fn syntax_errors_have_a_position_and_one_line() {
        let e = from_str::<serde_json::Value>("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.pos.line >= 1);
        assert!(!e.reason.contains('\n'));
    }
}
