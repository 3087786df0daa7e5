//! A domain added from outside: a test-only indexer (txs per message type) is plugged into
//! the real daemon through `boot::run_with`, without touching follower, store, boot or
//! HTTP-core code. It gets its own tree and watermark, is fed by the chain's follower, serves
//! its own route on the chain's listener, and resumes after a restart without counting twice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{web, HttpResponse};
use serde_json::Value;
use weaver::config::{ChainConfig, Config};
use weaver::domains::{DomainPlugin, Extensions};
use weaver_engine::chain::decode::decode_tx;
use weaver_engine::indexers::{BlockInput, DomainIndexer, IndexError};
use weaver_engine::store::{keys, Batch, DomainTree};

use crate::harness::{config_with, devnet_chain, with_world};

const CHAIN: &str = "minimove-1";
const HEIGHT: u64 = 100;
/// An hour between blocks: the chain stays at HEIGHT for the whole test.
const INTERVAL_MS: u64 = 3_600_000;

/// Key of a message type's counter: `t` + type URL.
fn counter_key(msg_type: &str) -> Vec<u8> {
    let mut key = vec![b't'];
    key.extend_from_slice(msg_type.as_bytes());
    key
}

/// Counts, per message type, the txs that carry it.
struct MsgTypeCounts {
    tree: DomainTree,
}

impl DomainIndexer for MsgTypeCounts {
    fn tree(&self) -> &DomainTree {
        &self.tree
    }

    fn index(&mut self, block: BlockInput<'_>, batch: &mut Batch) -> Result<(), IndexError> {
        let bundle = block.bundle;
        let mut added: BTreeMap<String, u64> = BTreeMap::new();
        for tx in &bundle.txs {
            let mut types = decode_tx(&tx.raw).map(|d| d.msg_types).unwrap_or_default();
            types.sort();
            types.dedup();
            for msg_type in types {
                *added.entry(msg_type).or_default() += 1;
            }
        }
        for (msg_type, n) in added {
            let key = counter_key(&msg_type);
            let total = self.tree.counter(&key)? + n;
            batch.insert(key, total.to_be_bytes());
        }
        Ok(())
    }
}

struct MsgTypeCountsPlugin;

async fn counts(tree: web::Data<DomainTree>) -> HttpResponse {
    let mut counts = serde_json::Map::new();
    for item in tree.tree().scan_prefix([b't']) {
        let Ok((key, value)) = item else {
            return HttpResponse::InternalServerError().finish();
        };
        let name = String::from_utf8_lossy(&key[1..]).into_owned();
        counts.insert(name, keys::read_u64(&value).unwrap_or(0).into());
    }
    HttpResponse::Ok().json(serde_json::json!({
        "height": tree.watermark().unwrap_or(0),
        "counts": counts,
    }))
}

impl DomainPlugin for MsgTypeCountsPlugin {
    fn name(&self) -> &str {
        "msg_type_counts"
    }

    fn open(
        &self,
        _chain: &ChainConfig,
        tree: DomainTree,
    ) -> Result<Box<dyn DomainIndexer>, IndexError> {
        Ok(Box::new(MsgTypeCounts { tree }))
    }

    fn openapi(&self) -> Option<utoipa::openapi::OpenApi> {
        let get = utoipa::openapi::path::OperationBuilder::new()
            .summary(Some("Txs per message type, as of the domain's height"))
            .response("200", utoipa::openapi::Response::new("The counts"));
        let item =
            utoipa::openapi::path::PathItem::new(utoipa::openapi::path::HttpMethod::Get, get);
        Some(
            utoipa::openapi::OpenApiBuilder::new()
                .paths(
                    utoipa::openapi::path::PathsBuilder::new()
                        .path("/test/v1/msg_type_counts", item),
                )
                .build(),
        )
    }

    fn routes(&self, tree: DomainTree, cfg: &mut web::ServiceConfig) {
        // Data scoped to the resource: another plug-in's tree is another `DomainTree`.
        cfg.service(
            web::resource("/test/v1/msg_type_counts")
                .app_data(web::Data::new(tree))
                .route(web::get().to(counts)),
        );
    }
}

/// The daemon in this process, on its own actix system thread, until dropped.
struct InProcess {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    base: String,
}

impl InProcess {
    fn start(config: Config) -> InProcess {
        let data_dir = config.data_dir.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, is_ready) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let extensions = Extensions {
                domains: vec![Arc::new(MsgTypeCountsPlugin)],
            };
            let shutdown = async move {
                let _ = stopped.await;
            };
            actix::System::new()
                .block_on(weaver::boot::run_with(
                    config,
                    None,
                    extensions,
                    shutdown,
                    move |_| {
                        let _ = ready.send(());
                    },
                ))
                .unwrap();
        });
        is_ready
            .recv_timeout(Duration::from_secs(60))
            .expect("the daemon did not start");
        let listeners: Value = serde_json::from_slice(
            &std::fs::read(weaver::boot::listeners_path(&data_dir)).unwrap(),
        )
        .unwrap();
        let base = format!("http://{}", listeners["chains"][CHAIN].as_str().unwrap());
        InProcess {
            stop: Some(stop),
            thread: Some(thread),
            base,
        }
    }

    fn get(&self, path: &str) -> Value {
        reqwest::blocking::get(format!("{}{path}", self.base))
            .unwrap()
            .json()
            .unwrap()
    }

    /// Waits until both the blocks domain and the plug-in are at `HEIGHT`.
    fn counts_at_height(&self) -> BTreeMap<String, u64> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let counts = self.get("/test/v1/msg_type_counts");
            let status = self.get("/status");
            if counts["height"] == HEIGHT && status["height"] == HEIGHT {
                return counts["counts"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                    .collect();
            }
            assert!(Instant::now() < deadline, "stuck: {counts} {status}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_plugged_in_domain_is_fed_served_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // A frozen chain: HEIGHT blocks exist and the next one is at least 15 minutes away.
    let genesis = now - HEIGHT * INTERVAL_MS - INTERVAL_MS / 2;
    let chain = devnet_chain(CHAIN, "move", "").replace(
        "block_interval_ms = 200",
        &format!("block_interval_ms = {INTERVAL_MS}"),
    );
    let text = with_world(
        &config_with(&chain),
        &format!("genesis_unix_ms = {genesis}"),
    );
    let mut config = Config::from_toml(&text).unwrap();
    config.data_dir = dir.path().to_path_buf();

    let daemon = InProcess::start(config.clone());
    let counts = daemon.counts_at_height();
    assert!(
        counts.contains_key("cosmos.bank.v1beta1.MsgSend")
            && counts.contains_key("ibc.applications.transfer.v1.MsgTransfer"),
        "{counts:?}"
    );
    // The plug-in's counts agree with the built-in index of message types.
    for (msg_type, count) in &counts {
        let page = daemon.get(&format!(
            "/indexer/tx/v1/txs?pagination.limit=1&msgs={msg_type}"
        ));
        // (Failed once in a full-suite run, 293 counted against 299 indexed for MsgSend, and
        // never alone: the message says where both stood, for the next time.)
        assert_eq!(
            page["pagination"]["total"],
            count.to_string(),
            "{msg_type}: plug-in {} / status {}",
            daemon.get("/test/v1/msg_type_counts"),
            daemon.get("/status")
        );
    }
    // The plug-in's paths are in the chain's OpenAPI document, with the common error answers.
    let doc = daemon.get("/swagger/doc.json");
    let documented = &doc["paths"]["/test/v1/msg_type_counts"]["get"];
    assert!(
        documented["responses"]["200"].is_object(),
        "not documented: {}",
        doc["paths"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    );
    assert!(documented["responses"]["400"].is_object(), "{documented}");
    assert!(doc["paths"]["/indexer/tx/v1/txs"].is_object());
    drop(daemon);

    // Restarted on the same data: it resumes at its watermark and counts nothing twice.
    // Under heavy load the first run's store was once still locked when the second opened it
    // (seen once in CI, not reproduced since); wait until the store can be opened, at most 20 s.
    let db = config.data_dir.join("db");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fjall::Database::builder(&db).open().is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never released its store"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let daemon = InProcess::start(config);
    assert_eq!(daemon.counts_at_height(), counts);
}
