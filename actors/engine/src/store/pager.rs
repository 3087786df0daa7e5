//! The generic keyset/offset pager every domain lists with. A list is a key family
//! `prefix ‖ cursor`, where the cursor's encoding sorts like the cursor itself; a page seeks
//! straight past the cursor (never re-scanning from the start), skips an optional offset,
//! and reads one row ahead so `has_more` is exact. Domains bring their own cursor kinds by
//! implementing [`CursorKey`].

use std::ops::Bound;

use bytes::Bytes;

use super::{corrupt, StoreError, Tree};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// A cursor that is the last component of a key. `encode` must preserve order.
pub trait CursorKey: Sized {
    fn encode(&self, key: &mut Vec<u8>);
    fn decode(suffix: &[u8]) -> Option<Self>;
}

impl CursorKey for u64 {
    fn encode(&self, key: &mut Vec<u8>) {
        key.extend_from_slice(&self.to_be_bytes());
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        Some(u64::from_be_bytes(suffix.try_into().ok()?))
    }
}

#[derive(Debug, Clone)]
pub struct PageRequest<C = u64> {
    /// Keyset cursor: rows strictly after (ascending) or before (descending) this one.
    pub after: Option<C>,
    pub offset: u64,
    pub limit: usize,
    pub order: Order,
    pub count_total: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Total {
    Exact(u64),
    /// The count gave up (served as `"-1"`).
    Unknown,
    /// `count_total=false` (served as `"0"`).
    Skipped,
}

#[derive(Debug, Clone)]
pub struct Page<C = u64> {
    /// (cursor, record JSON).
    pub items: Vec<(C, Bytes)>,
    pub has_more: bool,
    pub total: Total,
}

/// A stream of cursors in list order.
pub type Keys<'a, C = u64> = Box<dyn Iterator<Item = Result<C, StoreError>> + 'a>;

/// A stream of rows (cursor, record) in list order.
pub type Rows<'a, C = u64> = Box<dyn Iterator<Item = Result<(C, Bytes), StoreError>> + 'a>;

/// The keys of the family `prefix ‖ cursor` strictly past `after` in `order`, as a range.
pub(crate) fn family_range<C: CursorKey>(
    prefix: &[u8],
    after: Option<&C>,
    order: Order,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let lower = Bound::Included(prefix.to_vec());
    let upper = match prefix_end(prefix) {
        Some(end) => Bound::Excluded(end),
        None => Bound::Unbounded,
    };
    match (order, after) {
        (_, None) => (lower, upper),
        (Order::Asc, Some(after)) => (Bound::Excluded(with_cursor(prefix, after)), upper),
        (Order::Desc, Some(before)) => (lower, Bound::Excluded(with_cursor(prefix, before))),
    }
}

/// The key `prefix ‖ cursor`.
pub(crate) fn with_cursor<C: CursorKey>(prefix: &[u8], cursor: &C) -> Vec<u8> {
    let mut key = prefix.to_vec();
    cursor.encode(&mut key);
    key
}

/// The cursor a key of a family whose prefix is `skip` bytes long ends in.
fn cursor_of<C: CursorKey>(key: &[u8], skip: usize) -> Result<C, StoreError> {
    key.get(skip..)
        .and_then(C::decode)
        .ok_or_else(|| corrupt(key, "key does not end in a cursor"))
}

/// Cursors of the family `prefix ‖ cursor` in `tree`, in `order`, strictly past `after`.
pub(crate) fn keys_under<'a, C: CursorKey + 'a>(
    tree: &Tree,
    prefix: &[u8],
    after: Option<&C>,
    order: Order,
) -> Keys<'a, C> {
    let skip = prefix.len();
    let iter = tree.keys(family_range(prefix, after, order));
    let decode = move |item: Result<super::Value, StoreError>| cursor_of(&item?, skip);
    match order {
        Order::Asc => Box::new(iter.map(decode)),
        Order::Desc => Box::new(iter.rev().map(decode)),
    }
}

/// Rows of a family whose keys `prefix ‖ cursor` hold the records themselves (blocks, txs),
/// strictly past `after`: one pass over the records, where [`keys_under`] and a lookup per
/// cursor would find every record twice (benches/README.md, "Pages in one pass").
pub(crate) fn rows_under<'a, C: CursorKey + 'a>(
    tree: &Tree,
    prefix: &[u8],
    after: Option<&C>,
    order: Order,
) -> Rows<'a, C> {
    rows_in(
        tree,
        family_range(prefix, after, order),
        prefix.len(),
        order,
    )
}

/// Rows of the records with keys in `range` (keys of one family whose prefix is `skip`
/// bytes long), in `order`.
pub(crate) fn rows_in<'a, C: CursorKey + 'a>(
    tree: &Tree,
    range: (Bound<Vec<u8>>, Bound<Vec<u8>>),
    skip: usize,
    order: Order,
) -> Rows<'a, C> {
    let iter = tree.range(range);
    let decode = move |item: Result<super::tree::Entry, StoreError>| {
        let (key, value) = item?;
        Ok((cursor_of(&key, skip)?, Bytes::from_owner(value)))
    };
    match order {
        Order::Asc => Box::new(iter.map(decode)),
        Order::Desc => Box::new(iter.rev().map(decode)),
    }
}

/// The first key after every key that starts with `prefix` (None: no such key).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Reads one page: skips `request.offset` cursors of `keys`, resolves up to `limit` of them
/// to their records, and looks one row ahead. A cursor whose record is missing means the
/// store is corrupt (an index entry without its record).
pub(crate) fn collect_page<C>(
    keys: Keys<'_, C>,
    request: &PageRequest<C>,
    mut record: impl FnMut(&C) -> Result<Option<Bytes>, StoreError>,
    total: impl FnOnce() -> Result<Total, StoreError>,
) -> Result<Page<C>, StoreError> {
    let resolve = |cursor: C| match record(&cursor)? {
        Some(bytes) => Ok((cursor, bytes)),
        None => Err(corrupt(b"", "an index entry points at a missing record")),
    };
    collect(keys, request, resolve, total)
}

/// Reads one page of `rows` ([`rows_under`]): skips `request.offset` of them, keeps up to
/// `limit` and looks one row ahead.
pub(crate) fn collect_rows<C>(
    rows: Rows<'_, C>,
    request: &PageRequest<C>,
    total: impl FnOnce() -> Result<Total, StoreError>,
) -> Result<Page<C>, StoreError> {
    collect(rows, request, Ok, total)
}

/// The page of `stream` past `request.offset`: up to `limit` items made rows by `resolve`
/// (the one looked ahead at is not resolved).
fn collect<C, T>(
    stream: impl Iterator<Item = Result<T, StoreError>>,
    request: &PageRequest<C>,
    mut resolve: impl FnMut(T) -> Result<(C, Bytes), StoreError>,
    total: impl FnOnce() -> Result<Total, StoreError>,
) -> Result<Page<C>, StoreError> {
    let mut items = Vec::with_capacity(request.limit.min(1024));
    let mut has_more = false;
    for item in stream.skip(request.offset as usize) {
        let item = item?;
        if items.len() == request.limit {
            has_more = true;
            break;
        }
        items.push(resolve(item)?);
    }
    let total = if request.count_total {
        total()?
    } else {
        Total::Skipped
    };
    Ok(Page {
        items,
        has_more,
        total,
    })
}

/// Union of sorted cursor streams, without repeats.
pub struct Merge<'a, C> {
    streams: Vec<std::iter::Peekable<Keys<'a, C>>>,
    order: Order,
}

impl<'a, C> Merge<'a, C> {
    pub fn new(streams: Vec<Keys<'a, C>>, order: Order) -> Self {
        Merge {
            streams: streams.into_iter().map(Iterator::peekable).collect(),
            order,
        }
    }
}

impl<C: Ord + Clone> Iterator for Merge<'_, C> {
    type Item = Result<C, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut best: Option<C> = None;
        for stream in &mut self.streams {
            match stream.peek() {
                Some(Ok(v)) => {
                    let better = match (&best, self.order) {
                        (None, _) => true,
                        (Some(b), Order::Asc) => v < b,
                        (Some(b), Order::Desc) => v > b,
                    };
                    if better {
                        best = Some(v.clone());
                    }
                }
                Some(Err(_)) => return stream.next(),
                None => {}
            }
        }
        let best = best?;
        for stream in &mut self.streams {
            if matches!(stream.peek(), Some(Ok(v)) if *v == best) {
                stream.next();
            }
        }
        Some(Ok(best))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_with(keys: &[(&[u8], u64)]) -> (tempfile::TempDir, Tree) {
        tree_on(crate::store::StoreEngine::default(), keys)
    }

    fn tree_on(
        engine: crate::store::StoreEngine,
        keys: &[(&[u8], u64)],
    ) -> (tempfile::TempDir, Tree) {
        let (dir, tree) = crate::store::tree::scratch_on(engine);
        for (prefix, n) in keys {
            let mut key = prefix.to_vec();
            n.encode(&mut key);
            tree.insert(key, []).unwrap();
        }
        (dir, tree)
    }

    fn walk(tree: &Tree, prefix: &[u8], after: Option<u64>, order: Order) -> Vec<u64> {
        keys_under::<u64>(tree, prefix, after.as_ref(), order)
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn seeks_past_the_cursor_in_both_orders_and_stays_in_its_family() {
        for engine in crate::store::StoreEngine::built() {
            let (_dir, tree) = tree_on(
                engine,
                &[
                    (b"a", 1),
                    (b"a", 5),
                    (b"a", 9),
                    (b"b", 3),
                    (b"c\xff", 2),
                    (b"\xff", u64::MAX),
                ],
            );
            assert_eq!(walk(&tree, b"a", None, Order::Asc), [1, 5, 9], "{engine}");
            assert_eq!(walk(&tree, b"a", Some(1), Order::Asc), [5, 9], "{engine}");
            assert_eq!(walk(&tree, b"a", Some(9), Order::Desc), [5, 1], "{engine}");
            assert_eq!(walk(&tree, b"a", None, Order::Desc), [9, 5, 1], "{engine}");
            assert_eq!(
                walk(&tree, b"a", Some(0), Order::Desc),
                Vec::<u64>::new(),
                "{engine}"
            );
            assert_eq!(
                walk(&tree, b"\xff", None, Order::Desc),
                [u64::MAX],
                "{engine}"
            );
            assert_eq!(walk(&tree, b"c\xff", None, Order::Asc), [2], "{engine}");
        }
    }

    #[test]
    fn a_page_looks_ahead_and_merges_without_repeats() {
        let (_dir, tree) = tree_with(&[(b"x", 1), (b"x", 4), (b"y", 2), (b"y", 4), (b"y", 7)]);
        let merged = Merge::new(
            vec![
                keys_under::<u64>(&tree, b"x", None, Order::Desc),
                keys_under::<u64>(&tree, b"y", None, Order::Desc),
            ],
            Order::Desc,
        );
        let request = PageRequest {
            after: None,
            offset: 1,
            limit: 2,
            order: Order::Desc,
            count_total: false,
        };
        let page = collect_page(
            Box::new(merged),
            &request,
            |n| Ok(Some(Bytes::from(n.to_string()))),
            || unreachable!("count_total is false"),
        )
        .unwrap();
        let cursors: Vec<u64> = page.items.iter().map(|(c, _)| *c).collect();
        assert_eq!(cursors, [4, 2]);
        assert!(page.has_more);
        assert_eq!(page.total, Total::Skipped);
    }

    #[test]
    fn rows_are_read_with_their_records_past_the_cursor_in_both_orders() {
        for engine in crate::store::StoreEngine::built() {
            let (_dir, tree) = crate::store::tree::scratch_on(engine);
            for (prefix, n) in [(b"a", 1u64), (b"a", 5), (b"a", 9), (b"b", 3)] {
                tree.insert(with_cursor(prefix, &n), format!("{n}").into_bytes())
                    .unwrap();
            }
            let page = |after: Option<u64>, order, offset| {
                let request = PageRequest {
                    after,
                    offset,
                    limit: 1,
                    order,
                    count_total: true,
                };
                let rows = rows_under(&tree, b"a", after.as_ref(), order);
                let page = collect_rows(rows, &request, || Ok(Total::Exact(3))).unwrap();
                let items: Vec<(u64, Vec<u8>)> = page
                    .items
                    .into_iter()
                    .map(|(cursor, record)| (cursor, record.to_vec()))
                    .collect();
                (items, page.has_more, page.total)
            };
            let five = vec![(5, b"5".to_vec())];
            assert_eq!(
                page(Some(1), Order::Asc, 0),
                (five.clone(), true, Total::Exact(3))
            );
            assert_eq!(
                page(Some(9), Order::Desc, 0),
                (five, true, Total::Exact(3)),
                "{engine}"
            );
            let one = vec![(1, b"1".to_vec())];
            assert_eq!(
                page(None, Order::Desc, 2),
                (one, false, Total::Exact(3)),
                "{engine}"
            );
            assert_eq!(
                page(Some(9), Order::Asc, 0),
                (vec![], false, Total::Exact(3))
            );
            let bounds = (
                Bound::Included(with_cursor(b"a", &2u64)),
                Bound::Excluded(with_cursor(b"a", &9u64)),
            );
            let rows: Vec<u64> = rows_in::<u64>(&tree, bounds, 1, Order::Desc)
                .map(|row| row.unwrap().0)
                .collect();
            assert_eq!(rows, [5], "{engine}");
        }
    }
}
