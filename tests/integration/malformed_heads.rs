//! Request heads actix-http's HTTP/1 parser refuses (a raw space, raw UTF-8 or a NUL in the
//! request line, more headers than it parses, a URI or head over its limits): the spec says
//! every answer body is the JSON error body, these included.
//!
//! actix-http (3.x) answers them itself, before any service or middleware runs, with an empty
//! body; `src/http/wire_errors.rs` gives those answers the error body on their way out. This
//! test also guards that rewrite against an actix-http upgrade changing their shape.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::harness::{config_with, devnet_chain, Daemon};

const CHAIN: &str = "minimove-1";

/// Everything the server sends until it closes the connection (bounded).
fn exchange(addr: &str, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    // The server may answer (and close) before it has read everything: a reset on write is
    // still an answer to read.
    let _ = stream.write_all(request);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no close within 20 s: {out:?}");
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&out).into_owned(),
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

#[test]
fn malformed_request_heads_get_a_json_error_body() {
    let d = Daemon::start(&config_with(&devnet_chain(CHAIN, "move", "")));
    let many_headers: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "raw space",
            b"GET /status ok HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "raw UTF-8",
            "GET /indexer/block/v1/blocks/\u{e9} HTTP/1.1\r\nHost: x\r\n\r\n"
                .as_bytes()
                .to_vec(),
        ),
        ("NUL", b"GET /sta\0tus HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        (
            "200 headers",
            format!("GET /status HTTP/1.1\r\nHost: x\r\n{many_headers}\r\n").into_bytes(),
        ),
        (
            "100 KB URI",
            format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(100_000)).into_bytes(),
        ),
        (
            "200 KB header",
            format!(
                "GET /status HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
                "a".repeat(200_000)
            )
            .into_bytes(),
        ),
    ];
    let mut failures = vec![];
    for listener in ["chain", "router"] {
        let addr = match listener {
            "router" => d.listeners["router"].as_str().unwrap().to_string(),
            _ => d.listeners["chains"][CHAIN].as_str().unwrap().to_string(),
        };
        for (what, request) in &cases {
            let raw = exchange(&addr, request);
            let Some((head, body)) = raw.split_once("\r\n\r\n") else {
                failures.push(format!("{listener}, {what}: no answer: {raw:?}"));
                continue;
            };
            let status: u16 = head.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
            let json = serde_json::from_str::<serde_json::Value>(body).ok();
            let is_error_body = json.as_ref().is_some_and(|b| {
                b["code"].is_u64() && b["message"].as_str().is_some_and(|m| !m.is_empty())
            });
            let json_type = head
                .to_ascii_lowercase()
                .contains("content-type: application/json");
            if !(400..500).contains(&status) || !is_error_body || !json_type {
                failures.push(format!("{listener}, {what}: {head:?} body {body:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A head slower than `header_timeout_ms` is cut by actix-http with a 408 of its own: JSON too.
#[test]
fn a_slow_head_gets_a_json_408() {
    let d = Daemon::start(&format!(
        "{}\n[limits]\nheader_timeout_ms = 500\n",
        config_with(&devnet_chain(CHAIN, "move", ""))
    ));
    let addr = d.listeners["router"].as_str().unwrap().to_string();
    // Half a head, then nothing.
    let raw = exchange(&addr, b"GET /status HTTP/1.1\r\nHost: x\r\n");
    let (head, body) = raw.split_once("\r\n\r\n").expect("an answer");
    assert!(head.starts_with("HTTP/1.1 408 "), "{raw:?}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{raw:?}"
    );
    let body: serde_json::Value = serde_json::from_str(body).expect("a JSON body");
    assert_eq!(body["code"], 4, "{body}");
}
