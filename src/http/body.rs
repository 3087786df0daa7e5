//! A JSON body sent as the parts it was stitched from: a page is its stored records (shared
//! with sled or the hot tier, never copied) between a few bytes of punctuation. actix copies
//! each part once into the connection's write buffer; building one contiguous body first
//! would copy every record twice more (a page of 100 txs is ~380 KB).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use actix_web::HttpResponse;
use bytes::Bytes;

#[derive(Debug, Default)]
pub struct JsonParts {
    parts: VecDeque<Bytes>,
    len: usize,
}

impl JsonParts {
    pub fn with_capacity(parts: usize) -> Self {
        JsonParts {
            parts: VecDeque::with_capacity(parts),
            len: 0,
        }
    }

    /// Appends `part` (an empty one is dropped).
    pub fn push(&mut self, part: impl Into<Bytes>) {
        let part = part.into();
        if !part.is_empty() {
            self.len += part.len();
            self.parts.push_back(part);
        }
    }

    pub fn push_static(&mut self, part: &'static [u8]) {
        self.push(Bytes::from_static(part));
    }

    /// `{"<name>":<record>}`.
    pub fn wrapped(name: &str, record: impl Into<Bytes>) -> Self {
        let mut body = JsonParts::with_capacity(3);
        body.push(format!("{{\"{name}\":"));
        body.push(record);
        body.push_static(b"}");
        body
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole body in one buffer (tests, and callers that need the bytes).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for part in &self.parts {
            out.extend_from_slice(part);
        }
        out
    }

    /// A 200 `application/json` answer of this body.
    pub fn response(self) -> HttpResponse {
        HttpResponse::Ok()
            .content_type("application/json")
            .body(self)
    }
}

impl MessageBody for JsonParts {
    type Error = Infallible;

    fn size(&self) -> BodySize {
        BodySize::Sized(self.len as u64)
    }

    fn poll_next(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let this = self.get_mut();
        Poll::Ready(this.parts.pop_front().map(|part| {
            this.len -= part.len();
            Ok(part)
        }))
    }

    fn try_into_bytes(mut self) -> Result<Bytes, Self> {
        match self.parts.len() {
            0 => Ok(Bytes::new()),
            1 => Ok(self.parts.pop_front().expect("one part")),
            _ => Err(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn parts_are_sent_in_order_with_their_length() {
        let mut body = JsonParts::wrapped("tx", Bytes::from_static(b"{\"a\":1}"));
        assert_eq!(body.len(), 14);
        body.push_static(b"");
        assert_eq!(body.to_vec(), b"{\"tx\":{\"a\":1}}");
        let response = body.response();
        assert_eq!(
            response.headers().get("content-type").unwrap(),
            "application/json"
        );
        let bytes = actix_web::body::to_bytes(response.into_body())
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"{\"tx\":{\"a\":1}}");
        let one = JsonParts::wrapped("x", Bytes::new());
        assert_eq!(one.to_vec(), b"{\"x\":}");
    }
}
