//! Looking names up in a sorted map while walking names in ascending order: one comparison per
//! step instead of a tree search per name (the hot path of a decision over many pods).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::iter::Peekable;

/// A cursor over a map's entries for ascending lookups.
pub(crate) struct Ascending<'m, K, V> {
    map: &'m BTreeMap<K, V>,
    iter: Peekable<std::collections::btree_map::Iter<'m, K, V>>,
    sorted: bool,
}

impl<'m, K: AsRef<str> + Ord + std::borrow::Borrow<str>, V> Ascending<'m, K, V> {
    /// A cursor; `sorted` says whether the names will be asked in strictly ascending order
    /// (otherwise every lookup searches the tree).
    pub(crate) fn new(map: &'m BTreeMap<K, V>, sorted: bool) -> Self {
        Ascending {
            map,
            iter: map.iter().peekable(),
            sorted,
        }
    }

    /// The value for `name`.
    pub(crate) fn get(&mut self, name: &str) -> Option<&'m V> {
        if !self.sorted {
            return self.map.get(name);
        }
        loop {
            let (k, _) = self.iter.peek()?;
            match k.as_ref().cmp(name) {
                Ordering::Less => {
                    self.iter.next();
                }
                Ordering::Equal => return self.iter.next().map(|(_, v)| v),
                Ordering::Greater => return None,
            }
        }
    }
}

/// Whether names are in strictly ascending order.
pub(crate) fn ascending<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    let Some(mut prev) = names.next() else {
        return true;
    };
    for n in names {
        if n <= prev {
            return false;
        }
        prev = n;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_lookups_match_tree_lookups() {
        let map: BTreeMap<String, i32> = [("a", 1), ("c", 3), ("e", 5)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let mut c = Ascending::new(&map, true);
        let got: Vec<Option<i32>> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|n| c.get(n).copied())
            .collect();
        assert_eq!(got, [Some(1), None, Some(3), None, Some(5), None]);
        let mut c = Ascending::new(&map, false);
        assert_eq!(c.get("e"), Some(&5));
        assert_eq!(c.get("a"), Some(&1));
        assert!(ascending(["a", "b"].into_iter()));
        assert!(!ascending(["b", "a"].into_iter()));
        assert!(!ascending(["a", "a"].into_iter()));
    }
}
