//! The tx logs' edge families (`a` account, `s` signer, `g` message type; `SCHEMA.md`): one key
//! per family and block, `prefix ‖ first sequence`, whose value carries the family's count and
//! the block's further sequences of that family (store format 6).
//!
//! Why one key per block: an account most txs touch (a chain's fee collector, the metadata
//! object of its fee denom) and a message type most txs carry had a key per tx, a third of a
//! block's key writes; each key costs a write-buffer insert, its walk at flush and its free
//! (`benches/README.md`, "Store format 6, a block in one request"). A key written before
//! format 6 holds one sequence and reads as a key of one.
//!
//! Value: `[flag] ‖ count ‖ deltas`. `flag` (the `a` family only): 1 when the account signed one
//! of the key's txs (kept for the format; nothing reads it: the `s` family lists those txs).
//! `count` (u64, big-endian): the family's edges up to the key's last sequence. `deltas`: each
//! further sequence as the LEB128 varint of its distance from the one before. Edges written
//! before store format 4 hold the flag or nothing, and no count.

use std::ops::Bound;

use super::pager::{family_range, Keys, Order};
use super::{corrupt, keys, StoreError, Tree};

/// The bytes before the count in a value of the family `tag`.
fn header_len(tag: u8) -> usize {
    usize::from(tag == keys::ACCOUNT_EDGE)
}

/// The value of an edge key of the family under `prefix` (see the module docs).
pub(crate) fn edge_value(prefix: &[u8], signed: bool, count: u64, deltas: &[u8]) -> Vec<u8> {
    let mut value = Vec::with_capacity(9 + deltas.len());
    if header_len(prefix[0]) == 1 {
        value.push(u8::from(signed));
    }
    value.extend_from_slice(&count.to_be_bytes());
    value.extend_from_slice(deltas);
    value
}

/// Appends the distance to a key's next sequence to its `deltas`.
pub(crate) fn push_delta(deltas: &mut Vec<u8>, distance: u64) {
    prost::encoding::encode_varint(distance, deltas);
}

/// The count an edge value of the family under `prefix` carries; None for an edge written
/// before store format 4 (its family's count is its `c` counter).
pub(crate) fn edge_count(prefix: &[u8], value: &[u8]) -> Option<u64> {
    let at = header_len(prefix[0]);
    keys::read_u64(value.get(at..at + 8)?)
}

/// The sequences of one edge key of the family under `prefix`, in ascending order: the key's
/// own, then one per delta of its value.
fn sequences<'a>(
    prefix: &[u8],
    key: &'a [u8],
    value: &'a [u8],
) -> Result<Sequences<'a>, StoreError> {
    let first = key
        .get(prefix.len()..)
        .and_then(keys::read_u64)
        .filter(|_| key.len() == prefix.len() + 8)
        .ok_or_else(|| corrupt(key, "edge key does not end in a sequence"))?;
    Ok(Sequences {
        key,
        next: Some(first),
        deltas: value.get(header_len(prefix[0]) + 8..).unwrap_or_default(),
    })
}

struct Sequences<'a> {
    key: &'a [u8],
    next: Option<u64>,
    deltas: &'a [u8],
}

impl Iterator for Sequences<'_> {
    type Item = Result<u64, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let current = self.next.take()?;
        if !self.deltas.is_empty() {
            let next = prost::encoding::decode_varint(&mut self.deltas)
                .ok()
                .filter(|distance| *distance > 0)
                .and_then(|distance| current.checked_add(distance));
            match next {
                Some(next) => self.next = Some(next),
                None => {
                    self.deltas = &[];
                    return Some(Err(corrupt(
                        self.key,
                        "edge value holds a malformed sequence",
                    )));
                }
            }
        }
        Some(Ok(current))
    }
}

/// The keys of the family under `prefix` up to `prefix ‖ sequence`, included.
fn at_or_below(prefix: &[u8], sequence: u64) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (
        Bound::Included(prefix.to_vec()),
        Bound::Included(keys::with_sequence(prefix, sequence)),
    )
}

/// The sequences of the edge family under `prefix` in `order`, strictly past `after`.
pub(crate) fn edges_under<'a>(
    tree: &Tree,
    prefix: &[u8],
    after: Option<u64>,
    order: Order,
) -> Keys<'a> {
    let mut range = family_range(prefix, after.as_ref(), order);
    if let (Order::Asc, Some(after)) = (order, after) {
        // The key at or below the cursor may hold sequences past it.
        match floor_key(tree, prefix, after) {
            Ok(Some(key)) => range.0 = Bound::Included(key),
            Ok(None) => {}
            Err(e) => return Box::new(std::iter::once(Err(e))),
        }
    }
    let past = move |sequence: u64| match (order, after) {
        (_, None) => true,
        (Order::Asc, Some(after)) => sequence > after,
        (Order::Desc, Some(before)) => sequence < before,
    };
    let prefix = prefix.to_vec();
    let expand = move |item: Result<super::Entry, StoreError>| {
        let (key, value) = match item {
            Ok(entry) => entry,
            Err(e) => return vec![Err(e)],
        };
        let all = sequences(&prefix, &key, &value)
            .and_then(|listed| listed.collect::<Result<Vec<u64>, _>>());
        match all {
            Ok(mut all) => {
                all.retain(|sequence| past(*sequence));
                if order == Order::Desc {
                    all.reverse();
                }
                all.into_iter().map(Ok).collect()
            }
            Err(e) => vec![Err(e)],
        }
    };
    let iter = tree.range(range);
    match order {
        Order::Asc => Box::new(iter.flat_map(expand)),
        Order::Desc => Box::new(iter.rev().flat_map(expand)),
    }
}

/// The newest key of the family under `prefix` at or below `prefix ‖ sequence`.
fn floor_key(tree: &Tree, prefix: &[u8], sequence: u64) -> Result<Option<Vec<u8>>, StoreError> {
    match tree.keys(at_or_below(prefix, sequence)).next_back() {
        None => Ok(None),
        Some(key) => Ok(Some(key?.to_vec())),
    }
}

/// Whether the edge family under `prefix` lists `sequence`: the one key that may, the newest
/// at or below it, read up to it.
pub(crate) fn edge_contains(tree: &Tree, prefix: &[u8], sequence: u64) -> Result<bool, StoreError> {
    let Some(entry) = tree.range(at_or_below(prefix, sequence)).next_back() else {
        return Ok(false);
    };
    let (key, value) = entry?;
    for listed in sequences(prefix, &key, &value)? {
        let listed = listed?;
        if listed >= sequence {
            return Ok(listed == sequence);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Batch, StoreEngine};

    const GAS: &[u8] = b"gtype\0";

    fn deltas(distances: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for distance in distances {
            push_delta(&mut out, *distance);
        }
        out
    }

    fn read(tree: &Tree, after: Option<u64>, order: Order) -> Result<Vec<u64>, StoreError> {
        edges_under(tree, GAS, after, order).collect()
    }

    #[test]
    fn a_key_lists_its_sequences_and_a_malformed_one_is_an_error() {
        for engine in StoreEngine::built() {
            let (_dir, tree) = crate::store::tree::scratch_on(engine);
            let mut batch = Batch::default();
            // Sequences 3, 4, 300 in one key (a distance of two varint bytes), 301 in the next.
            let value = edge_value(GAS, false, 3, &deltas(&[1, 296]));
            batch.insert(keys::with_sequence(GAS, 3), value);
            batch.insert(
                keys::with_sequence(GAS, 301),
                edge_value(GAS, false, 4, &[]),
            );
            tree.apply_batch(batch).unwrap();
            assert_eq!(read(&tree, None, Order::Asc).unwrap(), [3, 4, 300, 301]);
            assert_eq!(read(&tree, Some(4), Order::Asc).unwrap(), [300, 301]);
            assert_eq!(read(&tree, Some(301), Order::Desc).unwrap(), [300, 4, 3]);
            assert_eq!(read(&tree, Some(4), Order::Desc).unwrap(), [3]);
            for (sequence, listed) in [(3, true), (4, true), (5, false), (300, true), (302, false)]
            {
                assert_eq!(
                    edge_contains(&tree, GAS, sequence).unwrap(),
                    listed,
                    "{engine} {sequence}"
                );
            }
            let newest = tree.get(keys::with_sequence(GAS, 301)).unwrap().unwrap();
            assert_eq!(edge_count(GAS, &newest), Some(4));
            // A count written before format 4 is not there; the `a` family's flag comes first.
            assert_eq!(edge_count(GAS, &[]), None);
            let account = keys::account_prefix(keys::ACCOUNT_EDGE, &[1; 20]);
            assert_eq!(edge_count(&account, &[1]), None);
            assert_eq!(
                edge_count(&account, &edge_value(&account, true, 9, &[5])),
                Some(9)
            );

            // A truncated varint and a distance of zero: errors, not a panic or a loop.
            for bad in [vec![0x80], deltas(&[0])] {
                let mut batch = Batch::default();
                batch.insert(keys::with_sequence(GAS, 3), edge_value(GAS, false, 1, &bad));
                tree.apply_batch(batch).unwrap();
                assert!(read(&tree, None, Order::Asc).is_err(), "{engine} {bad:?}");
                assert!(edge_contains(&tree, GAS, 3).is_err(), "{engine} {bad:?}");
            }
        }
    }
}
