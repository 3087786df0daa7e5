//! Liveness and readiness on the metrics listener, for load balancers and orchestrators:
//! `GET /health` answers 200 while the process serves requests; `GET /ready` answers 200
//! once every configured domain of every chain (or of `?chain_id=`) is within
//! `metrics.ready_max_lag_blocks` of its node's tip and no follower is stalled or stopped,
//! else 503 naming each domain that is behind and why. Both bodies are JSON, read from the
//! same live state as the status page.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use serde_json::json;
use weaver_engine::follower::IngestionState;

use super::error::{ApiError, ApiResult};
use super::status::{ChainSnapshot, StatusBoard};

/// The readiness threshold, from `[metrics] ready_max_lag_blocks`.
#[derive(Clone, Copy)]
pub(crate) struct ReadyPolicy {
    pub max_lag_blocks: u64,
}

/// A domain that keeps the daemon from being ready, and why.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct Behind {
    pub chain_id: String,
    pub domain: String,
    pub height: Option<u64>,
    pub node_height: Option<u64>,
    pub lag: Option<u64>,
    pub reason: String,
}

/// What keeps `chain` from being ready.
pub(crate) fn behind(chain: &ChainSnapshot, max_lag: u64) -> Vec<Behind> {
    let mut out = vec![];
    for domain in &chain.domains {
        let ingestion = domain.ingestion.as_ref().unwrap_or(&chain.ingestion);
        let reason = if ingestion.state != IngestionState::Running {
            Some(format!(
                "ingestion {}: {}",
                match ingestion.state {
                    IngestionState::Stalled => "stalled",
                    IngestionState::Stopped => "stopped",
                    IngestionState::Running => "running",
                },
                ingestion.reason.as_deref().unwrap_or("unknown")
            ))
        } else if chain.node_height.is_none() {
            Some("the node's tip is not known yet".to_string())
        } else if domain.height.is_none() {
            Some(format!(
                "its height cannot be read: {}",
                domain.error.as_deref().unwrap_or("unknown")
            ))
        } else {
            domain
                .lag
                .filter(|lag| *lag > max_lag)
                .map(|lag| format!("{lag} blocks behind the node (at most {max_lag})"))
        };
        if let Some(reason) = reason {
            out.push(Behind {
                chain_id: chain.chain_id.clone(),
                domain: domain.domain.clone(),
                height: domain.height,
                node_height: chain.node_height,
                lag: domain.lag,
                reason,
            });
        }
    }
    out
}

async fn health() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("cache-control", "no-store"))
        .json(json!({"status": "ok", "version": crate::VERSION}))
}

async fn ready(
    board: web::Data<StatusBoard>,
    policy: web::Data<ReadyPolicy>,
    req: HttpRequest,
) -> ApiResult {
    let chain_id =
        web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
            .map_err(|e| ApiError::bad_request(format!("invalid query: {e}")))?
            .get("chain_id")
            .filter(|c| !c.is_empty())
            .cloned();
    let snapshot = board.snapshot();
    let chains: Vec<&ChainSnapshot> = snapshot
        .chains
        .iter()
        .filter(|c| chain_id.as_deref().is_none_or(|id| id == c.chain_id))
        .collect();
    if let Some(id) = &chain_id {
        if chains.is_empty() {
            return Err(ApiError::not_found(format!("chain ID not followed: {id}")));
        }
    }
    let behind: Vec<Behind> = chains
        .iter()
        .flat_map(|c| behind(c, policy.max_lag_blocks))
        .collect();
    let heights: Vec<serde_json::Value> = chains
        .iter()
        .map(|c| {
            json!({
                "chain_id": c.chain_id,
                "node_height": c.node_height,
                "domains": c.domains.iter().map(|d| json!({"domain": d.domain, "height": d.height, "lag": d.lag})).collect::<Vec<_>>()
            })
        })
        .collect();
    let ready = behind.is_empty();
    let body = json!({
        "ready": ready,
        "max_lag_blocks": policy.max_lag_blocks,
        "behind": behind,
        "chains": heights,
    });
    let mut answer = if ready {
        HttpResponse::Ok()
    } else {
        HttpResponse::ServiceUnavailable()
    };
    Ok(answer
        .insert_header(("cache-control", "no-store"))
        .json(body))
}

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    super::get(cfg, "/health", health);
    super::get(cfg, "/ready", ready);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::status::DomainSnapshot;
    use weaver_engine::follower::IngestionStatus;

    fn ingestion(state: IngestionState, reason: Option<&str>) -> IngestionStatus {
        IngestionStatus {
            state,
            reason: reason.map(str::to_string),
            since: None,
            height: None,
        }
    }

    fn domain(name: &str, height: Option<u64>, lag: Option<u64>) -> DomainSnapshot {
        DomainSnapshot {
            domain: name.into(),
            height,
            lag,
            blocks_per_second: None,
            error: None,
            ingestion: None,
        }
    }

    fn chain(
        state: IngestionState,
        node_height: Option<u64>,
        domains: Vec<DomainSnapshot>,
    ) -> ChainSnapshot {
        ChainSnapshot {
            chain_id: "c-1".into(),
            vm: "move",
            source: "node",
            ingestion: ingestion(state, Some("the node answers 502")),
            node_height,
            anchor: None,
            domains,
        }
    }

    fn named(chain: &ChainSnapshot) -> Vec<(String, String)> {
        behind(chain, 10)
            .into_iter()
            .map(|b| (b.domain, b.reason))
            .collect()
    }

    #[test]
    fn a_domain_is_behind_past_the_lag_stalled_or_before_the_tip_is_known() {
        let at_tip = chain(
            IngestionState::Running,
            Some(100),
            vec![
                domain("blocks", Some(95), Some(5)),
                domain("txs", Some(90), Some(10)),
            ],
        );
        assert!(named(&at_tip).is_empty());
        let lagging = chain(
            IngestionState::Running,
            Some(100),
            vec![
                domain("blocks", Some(95), Some(5)),
                domain("nft", Some(40), Some(60)),
            ],
        );
        assert_eq!(
            named(&lagging),
            vec![(
                "nft".into(),
                "60 blocks behind the node (at most 10)".into()
            )]
        );
        let stalled = chain(
            IngestionState::Stalled,
            Some(100),
            vec![domain("blocks", Some(100), Some(0))],
        );
        assert_eq!(
            named(&stalled),
            vec![(
                "blocks".into(),
                "ingestion stalled: the node answers 502".into()
            )]
        );
        let unknown = chain(
            IngestionState::Running,
            None,
            vec![domain("blocks", Some(0), None)],
        );
        assert_eq!(named(&unknown)[0].1, "the node's tip is not known yet");
        // A domain with a follower of its own is judged by that follower's state.
        let mut own = domain("evm_txs", Some(100), Some(0));
        own.ingestion = Some(ingestion(IngestionState::Stopped, Some("refused")));
        let evm = chain(IngestionState::Running, Some(100), vec![own]);
        assert_eq!(named(&evm)[0].1, "ingestion stopped: refused");
    }
}
