//! A node answer's body, read into a buffer reused from one answer to the next. Collected as
//! `Bytes`, every answer of more than one chunk (most: `/block_results` is ~40 KB) was copied
//! into a buffer allocated for it, and allocating those was 3.6 % of a catch-up's CPU, most of
//! it the kernel zeroing the fresh pages (`benches/README.md`, "Fewer requests, a hot tier
//! for the tip"). The copy stays (the parser wants one slice); the allocation goes.

use std::ops::Deref;
use std::sync::Mutex;

use crate::system::Recover;

/// Buffers kept for reuse: more than the answers a process parses at once (blocks in flight
/// times three requests, across chains, are in flight, not all being read).
const KEPT: usize = 64;
/// A buffer grown past this (a rare huge answer) is freed rather than kept.
const LARGEST_KEPT: usize = 1 << 20;

static FREE: Buffers = Buffers::new();

/// Emptied buffers waiting to be reused.
struct Buffers {
    free: Mutex<Vec<Vec<u8>>>,
}

impl Buffers {
    const fn new() -> Self {
        Buffers {
            free: Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> Vec<u8> {
        self.free.lock().recover().pop().unwrap_or_default()
    }

    fn give_back(&self, mut bytes: Vec<u8>) {
        if bytes.capacity() == 0 || bytes.capacity() > LARGEST_KEPT {
            return;
        }
        bytes.clear();
        let mut free = self.free.lock().recover();
        if free.len() < KEPT {
            free.push(bytes);
        }
    }
}

/// The whole body of one answer; its buffer goes back for reuse when dropped.
#[derive(Debug, Default)]
pub(crate) struct Body {
    bytes: Vec<u8>,
}

impl Body {
    /// Reads `response`'s body to its end.
    pub(crate) async fn read(mut response: reqwest::Response) -> reqwest::Result<Body> {
        let mut body = Body { bytes: FREE.take() };
        if let Some(length) = response.content_length() {
            // Capped: the length is the node's word, the bytes are what arrives.
            body.bytes.reserve((length as usize).min(LARGEST_KEPT));
        }
        while let Some(chunk) = response.chunk().await? {
            body.bytes.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

impl Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        FREE.give_back(std::mem::take(&mut self.bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_reused_empty() {
        let buffers = Buffers::new();
        let bytes = b"{\"height\":\"1\"}".to_vec();
        let address = bytes.as_ptr();
        buffers.give_back(bytes);
        let reused = buffers.take();
        assert!(reused.is_empty());
        assert_eq!(reused.as_ptr(), address, "a new buffer instead");
    }

    #[test]
    fn a_huge_buffer_is_not_kept_nor_more_than_kept() {
        let buffers = Buffers::new();
        buffers.give_back(vec![0; LARGEST_KEPT + 1]);
        assert_eq!(buffers.take().capacity(), 0);
        for _ in 0..KEPT + 5 {
            buffers.give_back(vec![0; 16]);
        }
        assert_eq!(buffers.free.lock().unwrap().len(), KEPT);
    }
}
