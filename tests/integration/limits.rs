//! The `[limits]` of the listeners against the real daemon over loopback: a stalled body is
//! cut with a JSON 408 and the connection closed, over-size bodies get a JSON 413, a low
//! rate limit answers 429 with `Retry-After`, the per-IP connection cap, plus the minor
//! edges (HEAD, `+1`/`01` heights, short hex accounts, empty path segments, actix's own
//! errors as JSON, client errors counted).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{config_with, devnet_chain, Daemon};

const CHAIN: &str = "minimove-1";

fn daemon(limits: &str) -> Daemon {
    Daemon::start(&format!(
        "{}\n[limits]\n{limits}\n",
        config_with(&devnet_chain(CHAIN, "move", ""))
    ))
}

fn addr(d: &Daemon, listener: &str) -> String {
    match listener {
        "router" => d.listeners["router"].as_str().unwrap().to_string(),
        _ => d.listeners["chains"][CHAIN].as_str().unwrap().to_string(),
    }
}

/// Everything the server sends until it closes the connection (bounded by `within`);
/// `closed` is false when it was still open at the deadline.
fn read_all(stream: &mut TcpStream, within: Duration) -> (String, bool) {
    let deadline = Instant::now() + within;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    for _ in 0..10_000 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (String::from_utf8_lossy(&out).into_owned(), false);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&out).into_owned(), true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return (String::from_utf8_lossy(&out).into_owned(), false)
            }
            // A reset after the answer also means closed.
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), true),
        }
    }
    panic!("endless stream");
}

/// Status line code and JSON body of a raw HTTP/1.1 answer.
fn parse_answer(raw: &str) -> (u16, String, Value) {
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no head: {raw:?}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {raw}"));
    (status, head.to_ascii_lowercase(), body)
}

/// One request per fresh connection, read until the server closes (bounded).
fn send_raw(addr: &str, request: &[u8]) -> (String, bool) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request).unwrap();
    read_all(&mut stream, Duration::from_secs(20))
}

#[test]
fn stalled_and_oversize_bodies() {
    let d = daemon("body_timeout_ms = 700\nmax_post_body_bytes = 2048\nmax_body_bytes = 256");
    let router = addr(&d, "router");

    // Headers promise 1,000 bytes, 100 arrive, then the client stalls: cut after the body
    // timeout with a JSON 408, and the connection is closed.
    let mut stream = TcpStream::connect(&router).unwrap();
    stream
        .write_all(b"POST /v2/fungible/route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
        .unwrap();
    stream.write_all(&[b' '; 100]).unwrap();
    let (raw, closed) = read_all(&mut stream, Duration::from_secs(20));
    let (status, head, body) = parse_answer(&raw);
    assert_eq!(status, 408, "{raw}");
    assert!(head.contains("content-type: application/json"), "{raw}");
    assert_eq!(body["code"], 4);
    assert!(
        body["message"].as_str().unwrap().contains("700 ms"),
        "{body}"
    );
    assert!(closed, "the connection stays open after the 408");

    // A declared length far over the POST limit (over 1 MiB): 413 at once, without reading
    // the body. (Smaller excess is read and dropped so the client sees the 413, below.)
    let (raw, closed) = send_raw(
        &router,
        b"POST /v2/fungible/route HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n{",
    );
    let (status, _, body) = parse_answer(&raw);
    assert_eq!(
        (status, body["code"].clone()),
        (413, Value::from(8)),
        "{raw}"
    );
    assert!(body["message"].as_str().unwrap().contains("2048"), "{body}");
    assert!(closed);

    // The same by chunks: counted as it arrives.
    let mut chunked =
        b"POST /v2/fungible/route HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    for _ in 0..3 {
        chunked.extend_from_slice(format!("400\r\n{}\r\n", " ".repeat(1024)).as_bytes());
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (raw, _) = send_raw(&router, &chunked);
    assert_eq!(parse_answer(&raw).0, 413, "{raw}");

    // Through an ordinary client: JSON 413; a body within the limit reaches the handler.
    let url = format!("http://{router}/v2/fungible/route");
    let response = d.http.post(&url).body(vec![b' '; 4096]).send().unwrap();
    assert_eq!(response.status().as_u16(), 413);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let response = d
        .http
        .post(&url)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 400, "the handler's own 400");
    let body: Value = response.json().unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("required"),
        "{body}"
    );

    // GET routes have their own (smaller) limit.
    let status_url = format!("{}/status", d.chain_url(CHAIN));
    let response = d
        .http
        .get(&status_url)
        .body(vec![b'x'; 1000])
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 413);
    assert_eq!(
        d.http.get(&status_url).body("x").send().unwrap().status(),
        200
    );

    let metrics = d.metrics();
    for needle in [
        "weaver_http_rejected_total{listener=\"router\",reason=\"body_timeout\"} 1",
        "weaver_http_rejected_total{listener=\"router\",reason=\"body_too_large\"}",
        "weaver_http_client_errors_total{listener=\"router\",status=\"413\"}",
        "weaver_http_client_errors_total{listener=\"router\",status=\"408\"} 1",
    ] {
        assert!(metrics.contains(needle), "metrics lack {needle}");
    }
}

#[test]
fn rate_limit_answers_429_with_retry_after() {
    let d =
        daemon("rate_limit_per_ip = 0.5\nrate_limit_burst = 2\nrate_limit_exempt_loopback = false");
    let url = format!("{}/status", d.chain_url(CHAIN));
    let mut limited = None;
    for _ in 0..6 {
        let response = d.http.get(&url).send().unwrap();
        if response.status().as_u16() == 429 {
            limited = Some(response);
            break;
        }
        assert_eq!(response.status().as_u16(), 200);
    }
    let response = limited.expect("no 429 from a 0.5 requests/s limit after 6 requests");
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "Retry-After {retry}");
    let body: Value = response.json().unwrap();
    assert_eq!(body["code"], 8);
    assert!(body["message"].as_str().unwrap().contains("rate limit"));
    assert!(d.metrics().contains("reason=\"rate_limit\""));
}

#[test]
fn loopback_is_exempt_from_the_rate_limit_by_default() {
    let d = daemon("rate_limit_per_ip = 0.5\nrate_limit_burst = 1");
    let url = format!("{}/status", d.chain_url(CHAIN));
    for _ in 0..5 {
        assert_eq!(d.http.get(&url).send().unwrap().status(), 200);
    }
}

#[test]
fn connections_per_ip_are_capped() {
    // Loopback is exempt by default (a local reverse proxy); this test is the client.
    let d = daemon("max_connections_per_ip = 2\nrate_limit_exempt_loopback = false");
    let chain = addr(&d, "chain");
    let request = b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n";
    let keep_open = |stream: &mut TcpStream| {
        stream.write_all(request).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut buf = [0u8; 2048];
        let n = stream.read(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let mut first = TcpStream::connect(&chain).unwrap();
    let mut second = TcpStream::connect(&chain).unwrap();
    assert!(keep_open(&mut first).starts_with("HTTP/1.1 200"));
    assert!(keep_open(&mut second).starts_with("HTTP/1.1 200"));

    // A third connection from the same address is closed at once, unanswered: it never
    // holds a slot of the listener.
    let mut third = TcpStream::connect(&chain).unwrap();
    // The server may already have closed it: a failed write is part of the answer.
    let _ = third.write_all(request);
    let (raw, closed) = read_all(&mut third, Duration::from_secs(20));
    assert!(raw.is_empty(), "{raw}");
    assert!(closed);

    // The two kept connections still work; once one closes, a new one is served.
    assert!(keep_open(&mut first).starts_with("HTTP/1.1 200"));
    drop(second);
    let mut served = false;
    for _ in 0..100 {
        let (raw, _) = send_raw(
            &chain,
            b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        if raw.starts_with("HTTP/1.1 200") {
            served = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(served, "the slot of a closed connection was not released");
}

#[test]
fn head_heights_accounts_and_empty_segments() {
    let d = daemon("");
    d.wait_height(CHAIN, 3);
    let base = d.chain_url(CHAIN);
    let router = format!("http://{}", addr(&d, "router"));

    // HEAD on every kind of GET route: 200, the GET's headers, no body.
    for url in [
        format!("{base}/status"),
        format!("{base}/indexer/block/v1/blocks/1"),
        format!("{base}/indexer/tx/v1/txs?pagination.limit=2"),
        format!("{router}/v2/info/chains"),
        d.metrics_url(),
    ] {
        let response = d.http.head(&url).send().unwrap();
        assert_eq!(response.status().as_u16(), 200, "HEAD {url}");
        let length: usize = response.headers()["content-length"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(length > 0, "HEAD {url}");
        assert!(
            response.bytes().unwrap().is_empty(),
            "HEAD {url} has a body"
        );
    }

    // Heights as Go's strconv.ParseInt reads them: `+1` and `01` are block 1.
    let one = d.ok(&format!("{base}/indexer/block/v1/blocks/1"));
    for alias in ["+1", "01", "%2B1", "001"] {
        assert_eq!(
            d.ok(&format!("{base}/indexer/block/v1/blocks/{alias}")),
            one,
            "{alias}"
        );
    }
    assert_eq!(
        d.ok(&format!("{base}/indexer/tx/v1/txs/by_height/+1"))["pagination"],
        d.ok(&format!("{base}/indexer/tx/v1/txs/by_height/1"))["pagination"]
    );

    let cases: [(&str, u16, &str); 12] = [
        ("/indexer/block/v1/blocks/++1", 400, "height"),
        ("/indexer/block/v1/blocks/0x1", 400, "height"),
        ("/indexer/block/v1/blocks/1%20", 400, "height"),
        // Short hex without 0x: a clear 400 (0x-prefixed short forms are Move addresses).
        ("/indexer/tx/v1/txs/by_account/ab", 400, "40 or 64 digits"),
        (
            "/indexer/tx/v1/txs/by_account/abababababababababab",
            400,
            "40 or 64 digits",
        ),
        (
            "/indexer/tx/v1/txs/by_account/12345",
            400,
            "40 or 64 digits",
        ),
        // Empty path parameters name the parameter.
        ("/indexer/tx/v1/txs/by_account/", 400, "account"),
        ("/indexer/tx/v1/txs/by_account", 400, "account"),
        ("/indexer/tx/v1/txs/by_height/", 400, "height"),
        ("/indexer/tx/v1/txs/by_height//", 400, "height"),
        // Undecodable bytes in a path parameter.
        ("/indexer/block/v1/blocks/%FF", 400, "height"),
        ("/indexer/tx/v1/txs/by_account/%FF%FE", 400, "account"),
    ];
    for (path, expected, needle) in cases {
        let (status, content_type, body) = d.get(&format!("{base}{path}"));
        assert_eq!(status, expected, "{path}: {body}");
        assert!(content_type.starts_with("application/json"), "{path}");
        assert!(
            body["message"].as_str().unwrap().contains(needle),
            "{path}: {body}"
        );
        assert_eq!(body["details"], serde_json::json!([]), "{path}");
    }
    assert_eq!(
        d.ok(&format!("{base}/indexer/tx/v1/txs/by_account/0x1"))["pagination"]["next_key"],
        Value::Null
    );
    // Repeated slashes are merged.
    assert_eq!(d.ok(&format!("{base}//status"))["chain_id"], CHAIN);
    assert_eq!(d.ok(&format!("{base}/indexer//block/v1/blocks/1")), one);

    let metrics = d.metrics();
    assert!(
        metrics.contains("weaver_http_client_errors_total{listener=\"indexer\",status=\"400\"}"),
        "client errors are not counted"
    );
}
