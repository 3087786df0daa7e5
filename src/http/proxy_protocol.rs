//! The PROXY protocol (HAProxy's, v1 text and v2 binary) on listeners with `proxy_protocol =
//! true`: an L4 load balancer (HAProxy in TCP mode, nginx `stream`, cloud network balancers)
//! opens each connection with a header naming the client's address, and that address is the
//! connection's peer for everything after it — per-client limits, logs, the loopback
//! exemption. The header is parsed by the `ppp` crate; this module only reads its bytes off
//! the socket, exactly as many as it has, so the HTTP bytes after it stay unread.
//!
//! Only a trusted proxy (`[limits] trusted_proxies`) may send one: on such a listener a
//! connection from any other peer is closed unread (anyone could otherwise name any address),
//! and so is one whose header is missing, malformed or slower than `header_timeout_ms`.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The v2 header's first 12 bytes.
const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// A v1 header's longest form, CRLF included (the protocol's own bound).
const V1_MAX: usize = 107;

/// Reads the PROXY header at the start of `stream` within `timeout`: the client address it
/// names, or `None` when it names none (v2 `LOCAL`, a balancer's own health check; v1
/// `UNKNOWN`; a Unix socket) and the TCP peer stands.
pub(crate) async fn read_header(
    stream: &mut TcpStream,
    timeout: Duration,
) -> io::Result<Option<SocketAddr>> {
    tokio::time::timeout(timeout, read(stream))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no PROXY header in time"))?
}

fn invalid(why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("PROXY header: {why}"))
}

async fn read(stream: &mut TcpStream) -> io::Result<Option<SocketAddr>> {
    let mut start = [0u8; 16];
    stream.read_exact(&mut start[..6]).await?;
    if &start[..6] == b"PROXY " {
        return read_v1(stream, &start[..6]).await;
    }
    stream.read_exact(&mut start[6..]).await?;
    if start[..12] != V2_SIGNATURE {
        return Err(invalid("the connection does not start with one"));
    }
    let length = u16::from_be_bytes([start[14], start[15]]) as usize;
    let mut header = Vec::with_capacity(16 + length);
    header.extend_from_slice(&start);
    header.resize(16 + length, 0);
    stream.read_exact(&mut header[16..]).await?;
    let parsed = ppp::v2::Header::try_from(&header[..]).map_err(invalid)?;
    Ok(match parsed.addresses {
        ppp::v2::Addresses::IPv4(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
        ppp::v2::Addresses::IPv6(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
        ppp::v2::Addresses::Unspecified | ppp::v2::Addresses::Unix(_) => None,
    })
}

/// A v1 line, read a byte at a time up to its CRLF (it is at most 107 bytes, once per
/// connection; reading ahead would swallow the request after it).
async fn read_v1(stream: &mut TcpStream, start: &[u8]) -> io::Result<Option<SocketAddr>> {
    let mut line = start.to_vec();
    while !line.ends_with(b"\r\n") {
        if line.len() >= V1_MAX {
            return Err(invalid("a v1 header longer than 107 bytes"));
        }
        line.push(stream.read_u8().await?);
    }
    let text = std::str::from_utf8(&line).map_err(invalid)?;
    let parsed = ppp::v1::Header::try_from(text).map_err(invalid)?;
    Ok(match parsed.addresses {
        ppp::v1::Addresses::Tcp4(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
        ppp::v1::Addresses::Tcp6(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
        ppp::v1::Addresses::Unknown => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// What `read_header` makes of a connection opening with `bytes`, and what it left
    /// unread.
    async fn read_after(bytes: Vec<u8>) -> (io::Result<Option<SocketAddr>>, Vec<u8>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sender = tokio::spawn(async move {
            let mut client = TcpStream::connect(addr).await.unwrap();
            client.write_all(&bytes).await.unwrap();
            client.shutdown().await.unwrap();
            // Held open until the reader is done.
            let mut rest = Vec::new();
            let _ = client.read_to_end(&mut rest).await;
        });
        let (mut server, _) = listener.accept().await.unwrap();
        let header = read_header(&mut server, Duration::from_secs(5)).await;
        let mut rest = Vec::new();
        if header.is_ok() {
            server.read_to_end(&mut rest).await.unwrap();
        }
        drop(server);
        sender.await.unwrap();
        (header, rest)
    }

    #[tokio::test]
    async fn both_versions_name_the_client_and_leave_the_request_unread() {
        let request = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n".to_vec();
        let v1 = [
            b"PROXY TCP4 198.51.100.7 10.0.0.1 51234 8090\r\n".to_vec(),
            request.clone(),
        ];
        let (header, rest) = read_after(v1.concat()).await;
        assert_eq!(header.unwrap(), Some("198.51.100.7:51234".parse().unwrap()));
        assert_eq!(rest, request);

        let v1_6 = b"PROXY TCP6 2001:db8::7 2001:db8::1 4000 8090\r\n".to_vec();
        let (header, _) = read_after(v1_6).await;
        assert_eq!(header.unwrap(), Some("[2001:db8::7]:4000".parse().unwrap()));

        let (header, _) = read_after(b"PROXY UNKNOWN\r\n".to_vec()).await;
        assert_eq!(header.unwrap(), None);

        let v2 = ppp::v2::Builder::with_addresses(
            ppp::v2::Version::Two | ppp::v2::Command::Proxy,
            ppp::v2::Protocol::Stream,
            (
                "198.51.100.9:40000".parse::<SocketAddr>().unwrap(),
                "10.0.0.1:8090".parse::<SocketAddr>().unwrap(),
            ),
        )
        .build()
        .unwrap();
        let (header, rest) = read_after([v2, request.clone()].concat()).await;
        assert_eq!(header.unwrap(), Some("198.51.100.9:40000".parse().unwrap()));
        assert_eq!(rest, request);
    }

    #[tokio::test]
    async fn a_connection_without_a_valid_header_is_refused() {
        for bytes in [
            b"GET / HTTP/1.1\r\nhost: x\r\n\r\n".to_vec(),
            b"PROXY TCP4 not-an-address 10.0.0.1 1 2\r\n".to_vec(),
            [b"PROXY TCP4 ".to_vec(), vec![b'1'; 200]].concat(),
            b"PROX".to_vec(),
            [V2_SIGNATURE.to_vec(), vec![0x21, 0x11, 0, 4, 1, 2]].concat(),
        ] {
            let (header, _) = read_after(bytes.clone()).await;
            assert!(header.is_err(), "{:?}", String::from_utf8_lossy(&bytes));
        }
    }
}
