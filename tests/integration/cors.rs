//! Browsers and lenient clients against the real daemon: CORS on the indexer, router and
//! metrics listeners (preflights answered, `Access-Control-Allow-Origin` on answers and on
//! errors, `[cors]` restricting or disabling it), and query values read the way the Go
//! indexer's consumers send them (Go `strconv.ParseBool` forms, empty = default).

use reqwest::blocking::Response;
use reqwest::Method;
use serde_json::Value;

use crate::harness::{config_with, devnet_chain, Daemon};

const CHAIN: &str = "minimove-1";
const ORIGIN: &str = "https://app.example";

fn daemon(extra: &str) -> Daemon {
    Daemon::start(&format!(
        "{}\n{extra}\n",
        config_with(&devnet_chain(CHAIN, "move", ""))
    ))
}

/// Base URLs of the three listeners: indexer, router, metrics.
fn bases(d: &Daemon) -> [String; 3] {
    [
        d.chain_url(CHAIN),
        format!("http://{}", d.listeners["router"].as_str().unwrap()),
        format!("http://{}", d.listeners["metrics"].as_str().unwrap()),
    ]
}

fn preflight(d: &Daemon, url: &str, origin: &str, method: &str) -> Response {
    d.http
        .request(Method::OPTIONS, url)
        .header("origin", origin)
        .header("access-control-request-method", method)
        .header("access-control-request-headers", "content-type")
        .send()
        .unwrap()
}

fn get(d: &Daemon, url: &str, origin: &str) -> Response {
    d.http.get(url).header("origin", origin).send().unwrap()
}

fn header(response: &Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
}

/// Status, allow-origin header and JSON body of an answer that must be JSON.
fn json_answer(response: Response) -> (u16, Option<String>, Value) {
    let status = response.status().as_u16();
    let allow = header(&response, "access-control-allow-origin");
    let content_type = header(&response, "content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{status}: {content_type}"
    );
    (status, allow, response.json().unwrap())
}

#[test]
fn every_listener_answers_preflights_and_marks_answers_and_errors() {
    let d = daemon("");
    let [indexer, router, metrics] = bases(&d);

    for (url, method) in [
        (format!("{indexer}/indexer/tx/v1/txs"), "GET"),
        (format!("{indexer}/status"), "GET"),
        (format!("{router}/v2/fungible/route"), "POST"),
        (format!("{router}/v2/info/chains"), "GET"),
        (format!("{metrics}/metrics"), "GET"),
    ] {
        let response = preflight(&d, &url, ORIGIN, method);
        assert!(response.status().is_success(), "{url}: {:?}", response);
        assert_eq!(
            header(&response, "access-control-allow-origin").as_deref(),
            Some("*"),
            "{url}"
        );
        let methods = header(&response, "access-control-allow-methods").unwrap();
        assert!(methods.contains(method), "{url}: {methods}");
        assert_eq!(
            header(&response, "access-control-allow-headers").as_deref(),
            Some("content-type"),
            "{url}"
        );
        assert_eq!(
            header(&response, "access-control-max-age").as_deref(),
            Some("3600")
        );
        assert!(header(&response, "access-control-allow-credentials").is_none());
    }

    // Answers carry the header; so do errors, still JSON.
    for url in [
        format!("{indexer}/status"),
        format!("{router}/v2/info/chains"),
        format!("{metrics}/metrics"),
    ] {
        let response = get(&d, &url, ORIGIN);
        assert_eq!(response.status().as_u16(), 200, "{url}");
        assert_eq!(
            header(&response, "access-control-allow-origin").as_deref(),
            Some("*"),
            "{url}"
        );
        assert_eq!(
            header(&response, "access-control-expose-headers").as_deref(),
            Some("retry-after")
        );
    }
    for (url, expected) in [
        (format!("{indexer}/indexer/nope"), 404),
        (format!("{indexer}/indexer/block/v1/blocks/abc"), 400),
        (format!("{router}/v2/nope"), 404),
        (format!("{metrics}/nope"), 404),
    ] {
        let (status, allow, body) = json_answer(get(&d, &url, ORIGIN));
        assert_eq!(status, expected, "{url}: {body}");
        assert_eq!(allow.as_deref(), Some("*"), "{url}");
    }
    let response = d
        .http
        .post(format!("{router}/v2/fungible/route"))
        .header("origin", ORIGIN)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .unwrap();
    let (status, allow, body) = json_answer(response);
    assert_eq!((status, body["code"].clone()), (400, Value::from(3)));
    assert_eq!(allow.as_deref(), Some("*"));
    // Without an Origin (not a browser) nothing changes.
    let response = d.http.get(format!("{indexer}/status")).send().unwrap();
    assert!(header(&response, "access-control-allow-origin").is_none());
}

#[test]
fn query_values_are_read_like_go_clients_send_them() {
    let d = daemon("");
    let [indexer, router, _] = bases(&d);
    d.wait_height(CHAIN, 20);
    let blocks = |query: &str| d.ok(&format!("{indexer}/indexer/block/v1/blocks?{query}"));
    let heights = |page: &Value| -> Vec<u64> {
        page["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["height"].as_str().unwrap().parse().unwrap())
            .collect()
    };

    // Every Go strconv.ParseBool form; `True` is what Python requests sends.
    // (The block list always counts, as rollytics does: `count_total` shows on txs.)
    let txs_total = |flag: &str| {
        d.ok(&format!(
            "{indexer}/indexer/tx/v1/txs?pagination.limit=1&pagination.count_total={flag}"
        ))["pagination"]["total"]
            .clone()
    };
    for yes in ["1", "t", "T", "TRUE", "true", "True"] {
        let h = heights(&blocks(&format!(
            "pagination.limit=2&pagination.reverse={yes}"
        )));
        assert!(h[0] > h[1], "reverse={yes}: {h:?}");
        assert_ne!(txs_total(yes), "0", "count_total={yes}");
    }
    for no in ["0", "f", "F", "FALSE", "false", "False"] {
        let page = blocks(&format!("pagination.limit=2&pagination.reverse={no}"));
        assert_eq!(heights(&page), [1, 2], "reverse={no}");
        assert_eq!(txs_total(no), "0", "count_total={no}");
    }
    // Empty values are the defaults: 100 per page (or all there are), newest first, counted.
    let page = blocks("pagination.limit=&pagination.reverse=&pagination.count_total=&pagination.offset=&pagination.key=");
    let h = heights(&page);
    assert!(h.len() >= 20 && h.len() <= 100, "{}", h.len());
    assert!(h[0] > h[1]);
    assert_ne!(txs_total(""), "0");
    d.ok(&format!(
        "{indexer}/indexer/tx/v1/txs/by_height/3?pagination.limit=&msgs=&is_signer="
    ));
    d.ok(&format!(
        "{indexer}/indexer/nft/v1/collections?pagination.reverse=False&pagination.limit="
    ));
    d.ok(&format!("{router}/v2/info/chains?only_testnets=True"));
    d.ok(&format!(
        "{router}/v2/fungible/assets?native_only=&include_evm_assets=F&only_testnets="
    ));

    // Really wrong values stay a 400 that names the parameter.
    for (url, name) in [
        (
            format!("{indexer}/indexer/block/v1/blocks?pagination.limit=abc"),
            "pagination.limit",
        ),
        (
            format!("{indexer}/indexer/tx/v1/txs?pagination.reverse=maybe"),
            "pagination.reverse",
        ),
        (
            format!("{indexer}/indexer/nft/v1/collections?pagination.count_total=yes"),
            "pagination.count_total",
        ),
        (
            format!("{router}/v2/fungible/assets?native_only=maybe"),
            "native_only",
        ),
    ] {
        let (status, content_type, body) = d.get(&url);
        assert_eq!(status, 400, "{url}: {body}");
        assert!(content_type.starts_with("application/json"));
        assert_eq!(body["code"], 3);
        assert!(
            body["message"].as_str().unwrap().contains(name),
            "{url}: {body}"
        );
    }
}

#[test]
fn restricted_origins_and_refusals_of_the_limits() {
    // One allowed origin; a rate limit of 3 requests (loopback not exempt) to reach a 429.
    let d = daemon(
        "[cors]\nallowed_origins = [\"https://app.example\"]\nmax_age_secs = 60\n[limits]\nrate_limit_exempt_loopback = false\nrate_limit_per_ip = 0.001\nrate_limit_burst = 3\n",
    );
    let [indexer, router, _] = bases(&d);
    let url = format!("{indexer}/status");

    // Preflights come before the limits (they use no token).
    let response = preflight(&d, &url, ORIGIN, "GET");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        header(&response, "access-control-allow-origin").as_deref(),
        Some(ORIGIN)
    );
    assert_eq!(
        header(&response, "access-control-max-age").as_deref(),
        Some("60")
    );
    assert!(header(&response, "vary").unwrap().contains("Origin"));
    let (status, allow, body) = json_answer(preflight(
        &d,
        &format!("{router}/v2/fungible/route"),
        "https://evil.example",
        "POST",
    ));
    assert_eq!((status, body["code"].clone()), (400, Value::from(3)));
    assert!(allow.is_none());

    // Token 1: the allowed origin is echoed. Token 2: another origin is served without it.
    let response = get(&d, &url, ORIGIN);
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        header(&response, "access-control-allow-origin").as_deref(),
        Some(ORIGIN)
    );
    let response = get(&d, &url, "https://evil.example");
    assert_eq!(response.status().as_u16(), 200);
    assert!(header(&response, "access-control-allow-origin").is_none());
    // Token 3, then the 429: JSON, with the CORS headers and Retry-After readable by a page.
    get(&d, &url, ORIGIN);
    let response = get(&d, &url, ORIGIN);
    assert!(header(&response, "retry-after").is_some());
    assert_eq!(
        header(&response, "access-control-expose-headers").as_deref(),
        Some("retry-after")
    );
    let (status, allow, body) = json_answer(response);
    assert_eq!((status, body["code"].clone()), (429, Value::from(8)));
    assert_eq!(allow.as_deref(), Some(ORIGIN));
}

#[test]
fn cors_can_be_turned_off_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("weaver.toml");
    std::fs::write(&config, config_with(&devnet_chain(CHAIN, "move", ""))).unwrap();
    let d = Daemon::start_with_env(
        config.to_str().unwrap(),
        &[("WEAVER_CORS__ENABLED", "false")],
    );
    let [indexer, router, metrics] = bases(&d);
    for url in [
        format!("{indexer}/status"),
        format!("{router}/v2/info/chains"),
        format!("{metrics}/metrics"),
    ] {
        // No preflight handling: an OPTIONS is an ordinary request (JSON 405), and nothing
        // carries CORS headers.
        let (status, allow, body) = json_answer(preflight(&d, &url, ORIGIN, "GET"));
        assert_eq!(
            (status, body["code"].clone()),
            (405, Value::from(12)),
            "{url}"
        );
        assert!(allow.is_none(), "{url}");
    }
    let response = get(&d, &format!("{}/status", d.chain_url(CHAIN)), ORIGIN);
    assert_eq!(response.status().as_u16(), 200);
    assert!(header(&response, "access-control-allow-origin").is_none());
}
