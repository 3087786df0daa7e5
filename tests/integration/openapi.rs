//! Every answer the integration tests receive from an indexer or router listener is checked
//! against the OpenAPI document that listener serves (`/swagger/doc.json`): the harness's GET
//! and POST call [`Documents::check`] with the daemon's own cache of documents (a port a later
//! daemon reuses is fetched again), so the whole suite exercises the schemas with real
//! data. A body that does not validate against the schema of its path, method and status
//! fails the test that received it. The tests below add what the rest of the suite does not
//! reach: each path of both documents, with real data, and the Swagger UI.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::harness::{frozen_config, Daemon};

/// A listener's document, or `None` for a base that serves none (a node, the metrics
/// listener).
type Cached = Option<Arc<Document>>;

struct Document {
    doc: Value,
    /// Compiled schemas by (template, method, status).
    validators: Mutex<HashMap<(String, String, String), Arc<jsonschema::Validator>>>,
}

/// One daemon's listener documents by base URL, fetched on first use.
#[derive(Default)]
pub struct Documents(Mutex<HashMap<String, Cached>>);

/// `http://host:port` and the path of `url` (its query left out).
fn split(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = path.split('?').next().unwrap_or("");
    Some((format!("http://{host}"), path.to_string()))
}

fn fetch(base: &str) -> Cached {
    reqwest::blocking::Client::new()
        .get(format!("{base}/swagger/doc.json"))
        .send()
        .ok()
        .filter(|r| r.status().is_success())
        .and_then(|r| r.json::<Value>().ok())
        .filter(|doc| doc.get("openapi").is_some())
        .map(|doc| {
            Arc::new(Document {
                doc,
                validators: Mutex::default(),
            })
        })
}

/// Whether `path` matches `template`: `{x}` takes one segment, and a template's last
/// `{denom}` (the rich list's) takes the rest, slashes included.
fn matches(template: &str, path: &str) -> bool {
    let want: Vec<&str> = template.trim_matches('/').split('/').collect();
    let got: Vec<&str> = path.trim_matches('/').split('/').collect();
    for (i, part) in want.iter().enumerate() {
        let is_param = part.starts_with('{') && part.ends_with('}');
        if is_param && i == want.len() - 1 && *part == "{denom}" {
            return got.len() > i && !got[i].is_empty();
        }
        match got.get(i) {
            Some(segment) if is_param => {
                if segment.is_empty() {
                    return false;
                }
            }
            Some(segment) if segment == part => {}
            _ => return false,
        }
    }
    got.len() == want.len()
}

/// The template of `path` in `doc`: a literal match before one with parameters (as the
/// listeners route `/txs/by_account/…` before `/txs/{tx_hash}`).
fn template_of(doc: &Value, path: &str) -> Option<String> {
    let paths = doc["paths"].as_object()?;
    let mut found: Vec<&String> = paths.keys().filter(|t| matches(t, path)).collect();
    found.sort_by_key(|t| t.matches('{').count());
    found.first().map(|t| t.to_string())
}

impl Documents {
    /// Checks `body`, the answer with `status` to `method url`, against the document of the
    /// listener it came from. Answers of paths the document does not describe pass (nodes,
    /// `/metrics`, `/swagger/…`), as do bodies that are not JSON objects (a stream).
    pub fn check(&self, method: &str, url: &str, status: u16, body: &Value) {
        if let Err(message) = self.conforms(method, url, status, body) {
            panic!("{message}");
        }
    }

    pub fn conforms(
        &self,
        method: &str,
        url: &str,
        status: u16,
        body: &Value,
    ) -> Result<(), String> {
        let Some((base, path)) = split(url) else {
            return Ok(());
        };
        let cached = self.0.lock().unwrap().get(&base).cloned();
        let cached = cached.unwrap_or_else(|| {
            let fetched = fetch(&base);
            self.0.lock().unwrap().insert(base.clone(), fetched.clone());
            fetched
        });
        let Some(document) = cached else {
            return Ok(());
        };
        let Some(template) = template_of(&document.doc, &path) else {
            return Ok(());
        };
        let operation = &document.doc["paths"][&template][method];
        if operation.is_null() {
            // A method the path does not have: the listener's 405 is an Error body.
            return Ok(());
        }
        let responses = &operation["responses"];
        let response = responses
            .get(status.to_string())
            .or_else(|| responses.get("default"))
            .ok_or_else(|| {
                format!("{method} {url}: status {status} is not documented for {template}: {body}")
            })?;
        let Some(schema) = response["content"]["application/json"].get("schema") else {
            return Ok(());
        };
        let key = (template.clone(), method.to_string(), status.to_string());
        let validator = {
            let mut validators = document.validators.lock().unwrap();
            match validators.get(&key) {
                Some(v) => v.clone(),
                None => {
                    let mut root = schema.clone();
                    root["components"] = document.doc["components"].clone();
                    let compiled = Arc::new(jsonschema::draft202012::new(&root).map_err(|e| {
                        format!("the schema of {template} {status} does not compile: {e}")
                    })?);
                    validators.insert(key, compiled.clone());
                    compiled
                }
            }
        };
        let errors: Vec<String> = validator
            .iter_errors(body)
            .map(|e| format!("  at {}: {e}", e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
            "{method} {url} ({status}) does not match the {template} schema of {base}/swagger/doc.json:\n{}\nbody: {}",
            errors.join("\n"),
            truncated(body)
        ))
        }
    }
}

fn truncated(body: &Value) -> String {
    let text = body.to_string();
    if text.len() > 2000 {
        format!("{}…", &text[..2000])
    } else {
        text
    }
}

#[test]
fn matching_prefers_literal_paths_and_lets_the_denom_take_slashes() {
    let doc = json!({"paths": {
        "/indexer/tx/v1/txs/{tx_hash}": {}, "/indexer/tx/v1/txs/by_account/{account}": {},
        "/indexer/richlist/v1/{denom}": {}
    }});
    assert_eq!(
        template_of(&doc, "/indexer/tx/v1/txs/by_account/init1x").as_deref(),
        Some("/indexer/tx/v1/txs/by_account/{account}")
    );
    assert_eq!(
        template_of(&doc, "/indexer/tx/v1/txs/ABCD").as_deref(),
        Some("/indexer/tx/v1/txs/{tx_hash}")
    );
    assert_eq!(
        template_of(&doc, "/indexer/richlist/v1/ibc/ABC").as_deref(),
        Some("/indexer/richlist/v1/{denom}")
    );
    assert_eq!(template_of(&doc, "/indexer/tx/v1/txs"), None);
}

const CHAIN: &str = "minievm-1";
const HEIGHT: u64 = 120;

fn first<'a>(page: &'a Value, list: &str) -> &'a Value {
    let items = page[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list}: {page}"));
    assert!(!items.is_empty(), "an empty {list} page: {page}");
    &items[0]
}

/// Each indexer path of an EVM chain that keeps every domain, with real data and with bad
/// input, is answered as its document says (the harness checks each answer).
#[test]
fn every_indexer_path_answers_as_documented() {
    let daemon = Daemon::start(&frozen_config(CHAIN, "evm", HEIGHT));
    daemon.wait_height(CHAIN, HEIGHT);
    let base = daemon.chain_url(CHAIN);
    let doc = daemon.ok(&format!("{base}/swagger/doc.json"));
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.0.0");
    let get = |path: &str| daemon.ok(&format!("{base}{path}"));
    let mut seen: Vec<String> = Vec::new();
    let mut visit = |path: &str| {
        let body = get(path);
        let (_, only_path) = split(&format!("{base}{path}")).unwrap();
        seen.push(
            template_of(&doc, &only_path).unwrap_or_else(|| panic!("{path} is not documented")),
        );
        body
    };
    // Wait for the EVM domains and the NFT domain (they follow the blocks domain).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let status = visit("/status");
        if status["internal_tx_height"] == HEIGHT && status["rich_list_height"] == HEIGHT {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "EVM domains did not catch up: {status}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    visit("/indexer/block/v1/avg_blocktime");
    visit("/indexer/block/v1/blocks?pagination.limit=3");
    visit(&format!("/indexer/block/v1/blocks/{HEIGHT}"));
    let txs = visit("/indexer/tx/v1/txs?pagination.limit=5&pagination.count_total=false");
    let tx = first(&txs, "txs").clone();
    let hash = tx["txhash"].as_str().unwrap();
    visit(&format!("/indexer/tx/v1/txs/{hash}"));
    visit(&format!(
        "/indexer/tx/v1/txs/by_height/{}",
        tx["height"].as_str().unwrap()
    ));
    let signer = tx["events"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["attributes"].as_array().cloned().unwrap_or_default())
        .find(|a| a["key"] == "sender" || a["key"] == "signer")
        .and_then(|a| a["value"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no sender in {tx}"));
    visit(&format!(
        "/indexer/tx/v1/txs/by_account/{signer}?is_signer=true"
    ));

    let evm_txs = visit("/indexer/tx/v1/evm-txs?pagination.limit=20");
    let evm_tx = first(&evm_txs, "txs").clone();
    let evm_hash = evm_tx["transactionHash"].as_str().unwrap();
    visit(&format!("/indexer/tx/v1/evm-txs/{evm_hash}"));
    visit(&format!(
        "/indexer/tx/v1/evm-txs/by_account/{}",
        evm_tx["from"].as_str().unwrap()
    ));
    visit(&format!(
        "/indexer/tx/v1/evm-txs/by_height/{}",
        u64::from_str_radix(
            evm_tx["blockNumber"]
                .as_str()
                .unwrap()
                .trim_start_matches("0x"),
            16
        )
        .unwrap()
    ));
    let internal = visit("/indexer/tx/v1/evm-internal-txs?pagination.limit=5");
    let call = first(&internal, "internal_txs").clone();
    visit(&format!(
        "/indexer/tx/v1/evm-internal-txs/{}",
        call["hash"].as_str().unwrap()
    ));
    visit(&format!(
        "/indexer/tx/v1/evm-internal-txs/by_account/{}",
        call["from"].as_str().unwrap()
    ));
    visit(&format!(
        "/indexer/tx/v1/evm-internal-txs/by_height/{}",
        call["height"]
    ));
    let token = evm_txs["txs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["logs"].as_array().cloned().unwrap_or_default())
        .map(|log| log["address"].as_str().unwrap().to_string())
        .next()
        .expect("an EVM tx with a log");
    visit(&format!("/indexer/richlist/v1/{token}?pagination.limit=3"));

    let collections = visit("/indexer/nft/v1/collections?pagination.limit=3");
    let collection = first(&collections, "collections").clone();
    let addr = collection["object_addr"].as_str().unwrap();
    visit(&format!("/indexer/nft/v1/collections/{addr}"));
    let name = collection["collection"]["name"].as_str().unwrap();
    visit(&format!(
        "/indexer/nft/v1/collections/by_name/{}",
        &name[..name.len().min(3)]
    ));
    let tokens = visit(&format!(
        "/indexer/nft/v1/tokens/by_collection/{addr}?order_by=height"
    ));
    let nft = first(&tokens, "tokens").clone();
    let owner = nft["owner"].as_str().unwrap();
    visit(&format!(
        "/indexer/nft/v1/tokens/by_account/{owner}?collection_addr={addr}"
    ));
    visit(&format!("/indexer/nft/v1/collections/by_account/{owner}"));
    visit(&format!(
        "/indexer/nft/v1/txs/{addr}/{}",
        crate::harness::urlencode(nft["nft"]["token_id"].as_str().unwrap())
    ));

    // Every documented path was visited with real data.
    let documented: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    for path in documented {
        assert!(seen.contains(path), "{path} was not exercised");
    }
    // The check bites: a block of the wrong shape, or an error body where a block belongs.
    let block_url = format!("{base}/indexer/block/v1/blocks/{HEIGHT}");
    assert!(daemon
        .documents
        .conforms("get", &block_url, 200, &json!({"block": {"height": 1}}))
        .is_err());
    assert!(daemon
        .documents
        .conforms(
            "get",
            &block_url,
            200,
            &json!({"code": 5, "message": "x", "details": []})
        )
        .is_err());
    assert!(daemon
        .documents
        .conforms(
            "get",
            &block_url,
            404,
            &json!({"code": 5, "message": "x", "details": []})
        )
        .is_ok());
    // Errors are documented bodies too (the harness checks them).
    for (path, want) in [
        ("/indexer/block/v1/blocks/abc", 400),
        ("/indexer/block/v1/blocks/999999999", 404),
        ("/indexer/tx/v1/txs?pagination.limit=abc", 400),
        ("/indexer/tx/v1/txs/zz", 400),
        ("/indexer/nft/v1/collections/0x1", 404),
    ] {
        let (status, _, body) = daemon.get(&format!("{base}{path}"));
        assert_eq!(status, want, "{path}: {body}");
    }
}

/// The router's document describes its paths, and Swagger UI is served from the binary
/// for both listeners (no asset from elsewhere).
#[test]
fn the_router_is_documented_and_swagger_ui_is_local() {
    let daemon = Daemon::start(&frozen_config(CHAIN, "evm", 5));
    let router = format!("http://{}", daemon.listeners["router"].as_str().unwrap());
    let doc = daemon.ok(&format!("{router}/swagger/doc.json"));
    assert_eq!(doc["info"]["version"], "1.0.0");
    for path in [
        "/v2/fungible/route",
        "/v2/fungible/msgs",
        "/op-hook",
        "/v2/info/chains",
        "/v2/fungible/assets",
        "/v2/info/balances",
        "/v2/fungible/venues",
        "/v2/info/bridges",
        "/v2/tx/track",
        "/v2/tx/status",
        "/v2/tx/status/stream",
        "/v2/tx/transfers",
        "/v2/tx/transfers/stream",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} is not documented");
    }
    for schema in [
        "Route",
        "Operation",
        "MsgsAnswer",
        "TxStatusResponse",
        "TransferHistoryResponse",
        "BalancesRequest",
        "BalancesResponse",
        "VenuesResponse",
        "BridgesResponse",
        "Error",
    ] {
        assert!(
            doc["components"]["schemas"].get(schema).is_some(),
            "no {schema} schema"
        );
    }
    daemon.ok(&format!("{router}/v2/info/chains"));
    daemon.ok(&format!("{router}/v2/fungible/assets"));
    daemon.ok(&format!("{router}/v2/fungible/venues"));
    daemon.ok(&format!("{router}/v2/info/bridges"));
    // A chain the registry does not know: an error in a 200, checked against the schema.
    let (status, _, body) = daemon.post(
        &format!("{router}/v2/info/balances"),
        &json!({"chains": {"nowhere-1": {"address": "init1x", "denoms": ["uinit"]}}}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body["chains"]["nowhere-1"]["denoms"]["uinit"]["error"]["message"].is_string());

    let http = reqwest::blocking::Client::new();
    for base in [router.clone(), daemon.chain_url(CHAIN)] {
        for page in ["/swagger/", "/swagger"] {
            let response = http.get(format!("{base}{page}")).send().unwrap();
            assert_eq!(response.status(), 200, "{base}{page}");
            let html = response.text().unwrap();
            assert!(html.contains("swagger-ui-bundle.js"), "{html}");
            assert!(
                !html.contains("https://") && !html.contains("http://"),
                "an outside asset: {html}"
            );
        }
        let init = http
            .get(format!("{base}/swagger/swagger-initializer.js"))
            .send()
            .unwrap()
            .text()
            .unwrap();
        assert!(init.contains("\"url\": \"/swagger/doc.json\""), "{init}");
        assert!(init.contains("\"validatorUrl\": \"none\""), "{init}");
        for asset in [
            "swagger-ui-bundle.js",
            "swagger-ui.css",
            "swagger-ui-standalone-preset.js",
        ] {
            let response = http.get(format!("{base}/swagger/{asset}")).send().unwrap();
            assert_eq!(response.status(), 200, "{asset}");
            assert!(response.bytes().unwrap().len() > 1000, "{asset}");
        }
        let response = http
            .get(format!("{base}/swagger/nothing.js"))
            .send()
            .unwrap();
        assert_eq!(response.status(), 404);
    }
}
