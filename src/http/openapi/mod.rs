//! The OpenAPI 3.1 documents at `/swagger/doc.json`, generated from the handlers' own
//! annotations (`#[utoipa::path]`) and types (`ToSchema`), one per listener: an indexer
//! listener's lists only the paths its chain serves (EVM, NFT and rich-list paths only where
//! those domains are kept). Swagger UI is served at `/swagger/` from assets compiled into the
//! binary, so it works with no internet access.

pub(crate) mod params;
pub(crate) mod schemas;

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::{ContentBuilder, OpenApi as Document, RefOr};
use utoipa::OpenApi;
use weaver_engine::indexers::{Domain, DESCRIPTORS};

use super::error::ErrorBody;

/// The version every document declares (the API's, not the binary's).
pub const API_VERSION: &str = "1.0.0";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "weaver indexer API",
        description = "The indexer of one Initia-style rollup, endpoint-compatible with the \
            Initia indexer (rollytics / KV indexer). Every body is JSON, errors included: \
            `{code, message, details}` with `code` the gRPC status code of the HTTP status.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        super::indexer::status,
        super::indexer::avg_blocktime,
        super::indexer::blocks,
        super::indexer::block,
        super::indexer::txs,
        super::indexer::txs_by_account,
        super::indexer::txs_by_height,
        super::indexer::tx,
        super::evm::evm_txs,
        super::evm::evm_txs_by_account,
        super::evm::evm_txs_by_height,
        super::evm::evm_tx,
        super::evm::internal_txs,
        super::evm::internal_txs_by_account,
        super::evm::internal_txs_by_height,
        super::evm::internal_txs_of_tx,
        super::nft::collections,
        super::nft::collections_by_account,
        super::nft::collections_by_name,
        super::nft::collection,
        super::nft::tokens_by_account,
        super::nft::tokens_by_collection,
        super::nft::token_txs,
        super::richlist::holders,
    ),
    tags(
        (name = "Status", description = "What the indexer has indexed"),
        (name = "Block", description = "Blocks"),
        (name = "Tx", description = "Cosmos txs"),
        (name = "EVM", description = "EVM txs (receipts) and internal txs (call frames); EVM chains"),
        (name = "NFT", description = "NFT collections, tokens and their txs"),
        (name = "Rich list", description = "ERC-20 holders by amount; EVM chains"),
    )
)]
struct IndexerDoc;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "weaver router API",
        description = "Routes, messages and tracking of cross-chain fungible transfers between \
            Initia L1 and its rollups, compatible with the Skip Go v2 API that wallets call. \
            Every body is JSON, errors included: `{code, message, details}`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        super::router::route_handler,
        super::router::msgs_handler,
        super::router::msgs_direct_handler,
        super::router::op_hook_handler,
        super::fungible::assets_from_source,
        super::fungible::assets_between_chains_get,
        super::fungible::recommend_assets,
        super::fungible::ibc_origin_assets,
        super::router::chains,
        super::router::assets,
        super::info::balances,
        super::info::venues,
        super::info::bridges,
        super::tracking::track,
        super::tracking::status,
        super::tracking::stream,
        super::history::transfers,
        super::history::stream,
    ),
    tags(
        (name = "Fungible", description = "Plan a transfer and build its messages"),
        (name = "Info", description = "Chains, assets, venues and bridges of the registry; balances from the chains' nodes"),
        (name = "Transaction", description = "Track a submitted transfer to its end; an address's transfers without registration"),
    )
)]
struct RouterDoc;

/// The document of the indexer listener of `chain_id`, keeping `kept`: the paths every
/// chain has, those of each kept domain (its descriptor's `path_prefixes`), and the
/// plug-ins' documents (`DomainPlugin::openapi`); titled with the chain, and with the tags
/// of only the paths it has (Swagger UI shows a section per tag, empty or not).
pub(crate) fn indexer_document(
    chain_id: &str,
    kept: &[Domain],
    plugins: impl IntoIterator<Item = Document>,
) -> Document {
    let mut document = IndexerDoc::openapi();
    document.info.title = format!("weaver indexer API: {chain_id}");
    document.paths.paths.retain(|path, _| {
        DESCRIPTORS
            .iter()
            .filter(|d| !kept.contains(&d.domain))
            .all(|d| {
                !d.path_prefixes
                    .iter()
                    .any(|prefix| path.starts_with(prefix))
            })
    });
    for plugin in plugins {
        document.merge(plugin);
    }
    let used: std::collections::BTreeSet<String> = document
        .paths
        .paths
        .values()
        .flat_map(|item| [item.get.as_ref(), item.post.as_ref()])
        .flatten()
        .flat_map(|operation| operation.tags.iter().flatten().cloned())
        .collect();
    if let Some(tags) = &mut document.tags {
        tags.retain(|tag| used.contains(&tag.name));
    }
    finish(document)
}

/// The document of the router listener.
pub(crate) fn router_document() -> Document {
    finish(RouterDoc::openapi())
}

/// Error answers every operation may give (the listener's limits, bad input, our faults),
/// added once here rather than on each handler; and the declared version.
fn finish(mut document: Document) -> Document {
    document.info.version = API_VERSION.to_string();
    let error = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                        <ErrorBody as utoipa::ToSchema>::name(),
                    ))))
                    .build(),
            )
            .build()
    };
    let common = [
        ("400", "Bad input: the message names the parameter"),
        ("404", "Not found, or not kept for this chain"),
        ("408", "The request was not read in time"),
        ("413", "The request is too large"),
        (
            "429",
            "Too many requests (per-client rate or connection cap); see Retry-After",
        ),
        (
            "503",
            "Busy, or the node behind this answer is slow; see Retry-After",
        ),
        ("500", "A fault of weaver's; the cause is logged"),
    ];
    for item in document.paths.paths.values_mut() {
        let post = item.post.is_some();
        for operation in [item.get.as_mut(), item.post.as_mut()]
            .into_iter()
            .flatten()
        {
            let responses = &mut operation.responses.responses;
            for (status, description) in common {
                responses
                    .entry(status.to_string())
                    .or_insert_with(|| error(description).into());
            }
            if post {
                responses
                    .entry("415".to_string())
                    .or_insert_with(|| error("The body is not declared application/json").into());
            }
        }
    }
    document
        .components
        .get_or_insert_with(Default::default)
        .schemas
        .insert(
            <ErrorBody as utoipa::ToSchema>::name().into_owned(),
            <ErrorBody as utoipa::PartialSchema>::schema(),
        );
    document
}

/// A listener's document, rendered once, and the Swagger UI configuration pointing at it.
pub struct ApiDocs {
    json: web::Bytes,
    ui: Arc<utoipa_swagger_ui::Config<'static>>,
}

impl ApiDocs {
    pub fn new(document: &Document) -> Self {
        let json = serde_json::to_vec(document).expect("an OpenAPI document serializes");
        let ui = utoipa_swagger_ui::Config::new(["/swagger/doc.json"])
            // No call to the online validator: the page must work with no internet.
            .validator_url("none")
            .try_it_out_enabled(true);
        ApiDocs {
            json: web::Bytes::from(json),
            ui: Arc::new(ui),
        }
    }
}

/// `/swagger/doc.json` and the Swagger UI under `/swagger/`.
pub fn routes(cfg: &mut web::ServiceConfig, docs: web::Data<ApiDocs>) {
    cfg.app_data(docs);
    super::scope(cfg, "/swagger", |s| {
        s.get("/swagger/doc.json", doc_json);
        // Paths are trimmed of a trailing slash before routing: `/swagger/` arrives as
        // `/swagger`.
        s.get("/swagger", ui_index);
        s.get("/swagger/{file:.*}", ui_file);
    });
}

async fn doc_json(docs: web::Data<ApiDocs>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(docs.json.clone())
}

async fn ui_index(docs: web::Data<ApiDocs>) -> HttpResponse {
    ui_asset(&docs, "index.html")
}

async fn ui_file(docs: web::Data<ApiDocs>, file: web::Path<String>) -> HttpResponse {
    ui_asset(&docs, &file)
}

fn ui_asset(docs: &ApiDocs, file: &str) -> HttpResponse {
    let not_found = || super::ApiError::not_found(format!("no such Swagger UI file: {file}"));
    match utoipa_swagger_ui::serve(file, docs.ui.clone()) {
        Ok(Some(asset)) => {
            let mut response = HttpResponse::Ok();
            response
                .content_type(asset.content_type)
                .insert_header((header::CACHE_CONTROL, "public, max-age=3600"));
            if asset.gzpipped {
                response.insert_header((header::CONTENT_ENCODING, "gzip"));
            }
            if file == "index.html" {
                // Relative asset URLs must resolve under /swagger/ however the page was
                // reached (`/swagger` or `/swagger/`).
                let html = String::from_utf8_lossy(&asset.bytes).replacen(
                    "<head>",
                    "<head><base href=\"/swagger/\">",
                    1,
                );
                return response.body(html);
            }
            response.body(asset.bytes.into_owned())
        }
        Ok(None) => actix_web::ResponseError::error_response(&not_found()),
        Err(e) => actix_web::ResponseError::error_response(&super::ApiError::internal(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::query::{DEFAULT_LIMIT, MAX_LIMIT};

    fn all_paths() -> serde_json::Value {
        let every: Vec<Domain> = Domain::all().collect();
        serde_json::to_value(indexer_document("test-1", &every, [])).unwrap()
    }

    #[test]
    fn the_documented_page_bounds_are_the_parsers() {
        let doc = all_paths();
        let parameters = doc["paths"]["/indexer/tx/v1/txs"]["get"]["parameters"]
            .as_array()
            .unwrap();
        let limit = parameters
            .iter()
            .find(|p| p["name"] == "pagination.limit")
            .unwrap();
        assert_eq!(limit["schema"]["maximum"], MAX_LIMIT as u64);
        assert_eq!(limit["schema"]["default"], DEFAULT_LIMIT as u64);
        assert_eq!(doc["info"]["version"], API_VERSION);
    }

    /// Each domain's paths are documented exactly when it is kept: dropping any one domain
    /// drops its descriptor's paths and no other (a built-in missing a descriptor, or a
    /// descriptor missing its prefixes, fails here).
    #[test]
    fn documented_paths_follow_the_descriptors() {
        let full = all_paths();
        let paths = |doc: &serde_json::Value| -> Vec<String> {
            doc["paths"].as_object().unwrap().keys().cloned().collect()
        };
        let all = paths(&full);
        for descriptor in DESCRIPTORS.iter() {
            let kept: Vec<Domain> = Domain::all().filter(|d| *d != descriptor.domain).collect();
            let without =
                paths(&serde_json::to_value(indexer_document("test-1", &kept, [])).unwrap());
            let dropped: Vec<&String> = all.iter().filter(|p| !without.contains(p)).collect();
            let own = |p: &String| descriptor.path_prefixes.iter().any(|x| p.starts_with(x));
            assert!(
                dropped.iter().all(|p| own(p)),
                "{}: {dropped:?}",
                descriptor.name
            );
            assert_eq!(
                dropped.len(),
                all.iter().filter(|p| own(p)).count(),
                "{}",
                descriptor.name
            );
            if descriptor.served && !descriptor.path_prefixes.is_empty() {
                assert!(!dropped.is_empty(), "{} documents no path", descriptor.name);
            }
        }
    }

    #[test]
    fn a_chain_documents_only_the_domains_it_keeps() {
        let full = all_paths();
        let count = |doc: &serde_json::Value, prefix: &str| {
            doc["paths"]
                .as_object()
                .unwrap()
                .keys()
                .filter(|p| p.starts_with(prefix))
                .count()
        };
        assert_eq!(count(&full, "/indexer/tx/v1/evm-txs"), 4);
        assert_eq!(count(&full, "/indexer/tx/v1/evm-internal-txs"), 4);
        assert_eq!(count(&full, "/indexer/nft/"), 7);
        assert_eq!(count(&full, "/indexer/richlist/"), 1);
        let bare = serde_json::to_value(indexer_document(
            "test-1",
            &[Domain::Blocks, Domain::Txs],
            [],
        ))
        .unwrap();
        for prefix in ["/indexer/tx/v1/evm", "/indexer/nft/", "/indexer/richlist/"] {
            assert_eq!(count(&bare, prefix), 0, "{prefix}");
        }
        assert_eq!(count(&bare, "/indexer/tx/v1/txs"), 4);
        // Titled with the chain; no tag is left without a path (an empty Swagger section).
        assert_eq!(bare["info"]["title"], "weaver indexer API: test-1");
        let tags = |doc: &serde_json::Value| -> Vec<String> {
            doc["tags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        };
        let used = |doc: &serde_json::Value| -> std::collections::BTreeSet<String> {
            doc["paths"]
                .as_object()
                .unwrap()
                .values()
                .flat_map(|item| item.as_object().unwrap().values())
                .flat_map(|op| op["tags"].as_array().cloned().unwrap_or_default())
                .map(|t| t.as_str().unwrap().to_string())
                .collect()
        };
        assert!(tags(&full).len() > tags(&bare).len(), "{:?}", tags(&bare));
        for tag in tags(&bare) {
            assert!(used(&bare).contains(&tag), "tag {tag} has no path");
        }
        // Every operation documents the shared error answers.
        for item in bare["paths"].as_object().unwrap().values() {
            for status in ["400", "404", "429", "503"] {
                assert_eq!(
                    item["get"]["responses"][status]["content"]["application/json"]["schema"]
                        ["$ref"],
                    "#/components/schemas/Error"
                );
            }
        }
    }
}
