//! A JSON body stitched from parts: a page is its stored records (shared with sled or the hot
//! tier, not copied while the page is assembled) between a few bytes of punctuation, joined
//! into one buffer once, at the exact size, when the answer is made. Measured: sending the
//! parts as a multi-chunk body instead was slower for a page of 100 txs (about 5.2k against
//! 8-9k pages/s from the hot tier): actix's HTTP/1 writer flushes a streamed body in small
//! pieces, while one buffer goes to the socket in large writes.

use std::collections::VecDeque;

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
            .body(self.to_vec())
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
