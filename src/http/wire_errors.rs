//! JSON bodies for the answers actix-http writes itself.
//!
//! Before any service runs, actix-http's HTTP/1 dispatcher answers on its own, with no body:
//! 400 for a request head it cannot parse (a raw space, UTF-8 or NUL in the request line, a
//! URI over 65,534 bytes), 431 for a head too large (over 96 headers or 128 KiB), 408 for a
//! head slower than `header_timeout_ms` (actix-http 3.20, `h1/dispatcher.rs`: `poll_request`
//! and `poll_head_timer`). It has no hook for them, and its limits are constants. The spec
//! says every body is JSON, so each connection's writes go through [`JsonErrorIo`]: an answer
//! with one of those statuses and `content-length: 0` — which none of weaver's own answers
//! has, every error of ours carrying its JSON body — gets the error body on its way out.
//!
//! The rewrite needs the whole answer in one write, as actix-http writes it (its write buffer,
//! flushed after each answer). An answer that does not look exactly like that is left as it
//! is; the integration test `malformed_heads` fails if an actix-http upgrade changes the shape.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use actix_web::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::error::ApiError;

/// A connection whose bodiless error answers are given their JSON body.
pub(crate) struct JsonErrorIo<IO> {
    io: IO,
    /// The client at the other end: the TCP peer, or the address a PROXY protocol header
    /// named ([`super::proxy_protocol`]).
    peer: Option<std::net::SocketAddr>,
    /// A rewritten answer not yet wholly written, and how much of it was.
    pending: Option<(Vec<u8>, usize)>,
}

impl<IO> JsonErrorIo<IO> {
    pub(crate) fn new(io: IO, peer: Option<std::net::SocketAddr>) -> Self {
        JsonErrorIo {
            io,
            peer,
            pending: None,
        }
    }

    pub(crate) fn get_ref(&self) -> &IO {
        &self.io
    }

    pub(crate) fn peer(&self) -> Option<std::net::SocketAddr> {
        self.peer
    }
}

impl<IO: AsyncWrite + Unpin> JsonErrorIo<IO> {
    /// Writes what is left of a rewritten answer.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for JsonErrorIo<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for JsonErrorIo<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        if let Some(answer) = with_json_body(buf) {
            // Taken whole: what the socket does not take now goes out before the next write,
            // flush or shutdown.
            this.pending = Some((answer, 0));
            if let Poll::Ready(Err(e)) = this.poll_pending(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// The statuses actix-http answers by itself, and what weaver says of each.
fn message_of(status: u16) -> Option<&'static str> {
    match status {
        400 => Some("malformed request head (request line, URI or headers)"),
        408 => Some("the request head was not received in time"),
        431 => Some("request head too large (over 96 headers or 128 KiB)"),
        _ => None,
    }
}

/// The header of a bodiless answer, with the line end that follows it (the head ends in a
/// blank line, so there always is one).
const NO_BODY: &[u8] = b"\r\ncontent-length: 0\r\n";

/// `answer` with its JSON error body, if it is a whole bodiless answer of actix-http's own.
/// Every write of every answer comes here: anything but a 4xx head is turned away at its
/// first bytes.
fn with_json_body(answer: &[u8]) -> Option<Vec<u8>> {
    if !answer.starts_with(b"HTTP/1.1 4") {
        return None;
    }
    let status: u16 = std::str::from_utf8(answer.get(9..12)?).ok()?.parse().ok()?;
    let message = message_of(status)?;
    // The head and nothing after it.
    let head_len = memchr::memmem::find(answer, b"\r\n\r\n")? + 2;
    if head_len + 2 != answer.len() {
        return None;
    }
    let at = memchr::memmem::find(answer, NO_BODY)?;
    let status = StatusCode::from_u16(status).ok()?;
    let body = ApiError::new(status, message).body();
    let mut out = Vec::with_capacity(answer.len() + body.len() + 48);
    out.extend_from_slice(&answer[..at]);
    out.extend_from_slice(b"\r\ncontent-type: application/json\r\ncontent-length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(&answer[at + NO_BODY.len() - 2..]);
    out.extend_from_slice(&body);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(answer: &[u8]) -> serde_json::Value {
        let at = memchr::memmem::find(answer, b"\r\n\r\n").unwrap() + 4;
        serde_json::from_slice(&answer[at..]).unwrap()
    }

    #[test]
    fn actix_bodiless_errors_get_the_json_body() {
        let date = "date: Thu, 26 Nov 2026 14:00:00 GMT";
        for (status, code) in [("400 Bad Request", 3), ("408 Request Timeout", 4)] {
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n{date}\r\n\r\n"
            );
            let out = with_json_body(head.as_bytes()).unwrap();
            let text = String::from_utf8(out.clone()).unwrap();
            let body = body_of(&out);
            assert_eq!(body["code"], code, "{text}");
            assert!(
                text.starts_with(&format!("HTTP/1.1 {status}\r\n")),
                "{text}"
            );
            assert!(text.contains("\r\nconnection: close\r\n"), "{text}");
            assert!(
                text.contains("\r\ncontent-type: application/json\r\n"),
                "{text}"
            );
            let at = text.find("\r\n\r\n").unwrap() + 4;
            assert!(
                text.contains(&format!("\r\ncontent-length: {}\r\n", text.len() - at)),
                "{text}"
            );
        }
        // The length header last in the head.
        let out = with_json_body(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(body_of(&out)["code"], 8);
    }

    #[test]
    fn every_other_answer_is_left_alone() {
        for answer in [
            // Ours: a body.
            &b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 20\r\n\r\n",
            // Another status.
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            // Not a whole head, or more than one answer.
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nHTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
            b"{\"code\":3}",
            b"",
        ] {
            assert!(
                with_json_body(answer).is_none(),
                "{}",
                String::from_utf8_lossy(answer)
            );
        }
    }
}
