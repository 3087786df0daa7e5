//! A list with at least one element. A route has at least one step, a transfer at least one
//! hop: code that relies on that takes a `NonEmpty` and gets `first`/`last` without an
//! `Option` to unwrap, instead of trusting a check made somewhere else.

/// At least one `T`: the first one, then the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonEmpty<T> {
    first: T,
    rest: Vec<T>,
}

impl<T> NonEmpty<T> {
    pub fn new(first: T) -> Self {
        NonEmpty {
            first,
            rest: Vec::new(),
        }
    }

    /// `None` for an empty vector.
    pub(crate) fn from_vec(items: Vec<T>) -> Option<Self> {
        let mut items = items.into_iter();
        let first = items.next()?;
        Some(NonEmpty {
            first,
            rest: items.collect(),
        })
    }

    pub fn push(&mut self, item: T) {
        self.rest.push(item);
    }

    pub fn first(&self) -> &T {
        &self.first
    }

    pub fn last(&self) -> &T {
        self.rest.last().unwrap_or(&self.first)
    }

    fn last_mut(&mut self) -> &mut T {
        self.rest.last_mut().unwrap_or(&mut self.first)
    }

    /// The elements after the first.
    pub fn rest(&self) -> &[T] {
        &self.rest
    }

    // Never empty, so there is no `is_empty` to go with it.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        1 + self.rest.len()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + Clone {
        std::iter::once(&self.first).chain(&self.rest)
    }

    pub fn as_ref(&self) -> NonEmpty<&T> {
        NonEmpty {
            first: &self.first,
            rest: self.rest.iter().collect(),
        }
    }

    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> NonEmpty<U> {
        NonEmpty {
            first: f(self.first),
            rest: self.rest.into_iter().map(f).collect(),
        }
    }

    /// Each element with its index.
    pub fn enumerate(self) -> NonEmpty<(usize, T)> {
        let mut index = 0;
        self.map(|item| {
            index += 1;
            (index - 1, item)
        })
    }

    /// Maps every element with its index, stopping at the first error.
    pub(crate) fn try_map<U, E>(
        &self,
        mut f: impl FnMut(usize, &T) -> Result<U, E>,
    ) -> Result<NonEmpty<U>, E> {
        Ok(NonEmpty {
            first: f(0, &self.first)?,
            rest: self
                .rest
                .iter()
                .enumerate()
                .map(|(i, item)| f(i + 1, item))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Pairs the elements of two lists, as long as the shorter one.
    pub fn zip<U>(self, other: NonEmpty<U>) -> NonEmpty<(T, U)> {
        NonEmpty {
            first: (self.first, other.first),
            rest: self.rest.into_iter().zip(other.rest).collect(),
        }
    }

    /// Runs of consecutive elements for which `same` holds between neighbours.
    pub(crate) fn chunk_by(self, same: impl Fn(&T, &T) -> bool) -> NonEmpty<NonEmpty<T>> {
        let mut chunks = NonEmpty::new(NonEmpty::new(self.first));
        for item in self.rest {
            let current = chunks.last_mut();
            if same(current.last(), &item) {
                current.push(item);
            } else {
                chunks.push(NonEmpty::new(item));
            }
        }
        chunks
    }
}

impl<T> IntoIterator for NonEmpty<T> {
    type Item = T;
    type IntoIter = std::iter::Chain<std::iter::Once<T>, std::vec::IntoIter<T>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self.first).chain(self.rest)
    }
}

/// Like a slice's: panics when `index` is out of range (tests; request paths iterate).
impl<T> std::ops::Index<usize> for NonEmpty<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        match index.checked_sub(1) {
            None => &self.first,
            Some(i) => &self.rest[i],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_last_need_no_option() {
        let one = NonEmpty::new(7);
        assert_eq!((one.first(), one.last(), one.len()), (&7, &7, 1));
        let many = NonEmpty::from_vec(vec![1, 2, 3]).unwrap();
        assert_eq!((many.first(), many.last(), many.len()), (&1, &3, 3));
        assert_eq!(many.rest(), [2, 3]);
        assert_eq!(NonEmpty::<u8>::from_vec(vec![]), None);
        assert_eq!(many.iter().copied().collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(many[2], 3);
    }

    #[test]
    fn try_map_passes_indices_and_stops_at_the_first_error() {
        let items = NonEmpty::from_vec(vec!["a", "b", "c"]).unwrap();
        let indexed = items
            .try_map(|i, s| Ok::<_, ()>(format!("{i}{s}")))
            .unwrap();
        assert_eq!(indexed.into_iter().collect::<Vec<_>>(), ["0a", "1b", "2c"]);
        let failed = items.try_map(|i, _| if i == 1 { Err(i) } else { Ok(i) });
        assert_eq!(failed, Err(1));
    }

    #[test]
    fn chunks_keep_order_and_are_never_empty() {
        let items = NonEmpty::from_vec(vec![0, 0, 1, 1, 1, 2]).unwrap();
        let chunks = items.chunk_by(|a, b| a == b);
        let lens: Vec<usize> = chunks.iter().map(NonEmpty::len).collect();
        assert_eq!(lens, [2, 3, 1]);
        assert_eq!(*chunks.last().first(), 2);
    }
}
