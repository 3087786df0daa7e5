//! A large answer handed to actix-http in slices of its one shared buffer.
//!
//! actix-http copies every body chunk into the connection's write buffer, and drops a write
//! buffer that grew past 128 KiB once the answer is out (`WRITE_BUFFER_RETENTION_LIMIT` in
//! its h1 dispatcher), growing a new one for the next answer. A page of 100 txs (~490 KB) in
//! one chunk cost every request a fresh half-megabyte allocation and a copy through a cold
//! buffer. In slices of [`SLICE`] bytes (`Bytes::slice`: no copy) the write buffer stays
//! under that limit and warm in the cache; the client gets the same bytes, with the same
//! `Content-Length`.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use actix_web::web::Bytes;

/// Bytes per slice: twice actix-http's default write-buffer threshold (32 KiB), so the
/// buffer peaks near 96 KiB, below the 128 KiB it keeps between answers.
pub(crate) const SLICE: usize = 64 << 10;

/// The body of one answer, handed out [`SLICE`] bytes at a time. It never turns back into
/// one `Bytes` (`try_into_bytes` is not implemented): boxing the response would do that, and
/// the body would go out in one chunk again.
pub(crate) struct SlicedBody {
    size: u64,
    rest: Bytes,
}

impl SlicedBody {
    pub(crate) fn new(bytes: Bytes) -> Self {
        SlicedBody {
            size: bytes.len() as u64,
            rest: bytes,
        }
    }
}

impl MessageBody for SlicedBody {
    type Error = std::convert::Infallible;

    /// The whole body's, whenever asked: it is the `Content-Length`.
    fn size(&self) -> BodySize {
        BodySize::Sized(self.size)
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let take = self.rest.len().min(SLICE);
        Poll::Ready(Some(Ok(self.rest.split_to(take))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn slices_add_up_to_the_body_and_share_its_buffer() {
        let body: Bytes = (0..(SLICE * 2 + 100))
            .map(|i| i as u8)
            .collect::<Vec<_>>()
            .into();
        let mut sliced = SlicedBody::new(body.clone());
        assert_eq!(sliced.size(), BodySize::Sized(body.len() as u64));
        let mut slices = Vec::new();
        while let Some(slice) = std::future::poll_fn(|cx| Pin::new(&mut sliced).poll_next(cx)).await
        {
            slices.push(slice.unwrap());
        }
        assert_eq!(
            slices.iter().map(Bytes::len).collect::<Vec<_>>(),
            vec![SLICE, SLICE, 100]
        );
        assert_eq!(slices.concat(), body.to_vec());
        // Slices of the one buffer, not copies.
        assert_eq!(slices[1].as_ptr(), body[SLICE..].as_ptr());
        // The size stays the whole body's while it is sent.
        assert_eq!(sliced.size(), BodySize::Sized(body.len() as u64));
    }
}
