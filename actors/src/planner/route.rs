//! `POST /v2/fungible/route` and `POST /op-hook`: request validation, planning on a
//! snapshot, amounts along the route (integer-exact) and the response in the Skip Go v2
//! shape with Initia's additions.

use num_bigint::BigUint;
use petgraph::graph::NodeIndex;
use serde::Deserialize;
use serde_json::{json, Value};

use super::actor::PlannerSnapshot;
use super::amount;
use super::graph::Edge;
use super::msgs;
use super::search::{search, Plan, SearchError, SearchOptions};

/// Price impact above which a route carries a `BAD_PRICE_WARNING` (Initia's 5 %).
const PRICE_WARNING_PERCENT: u64 = 5;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("invalid {field}: {value:?} is not a positive integer below 2^256")]
    BadAmount { field: &'static str, value: String },
    #[error("{0}")]
    Invalid(String),
    #[error("unknown chain {0}")]
    UnknownChain(String),
    #[error("unknown asset {denom} on chain {chain_id}")]
    UnknownAsset { chain_id: String, denom: String },
    #[error(transparent)]
    Search(#[from] SearchError),
}

impl RouteError {
    /// Unknown chains and assets are missing resources (404); the rest is bad input (400).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            RouteError::UnknownChain(_) | RouteError::UnknownAsset { .. }
        )
    }
}

/// The route request; unknown fields are ignored, as real clients send many.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RouteRequest {
    pub amount_in: Option<String>,
    pub amount_out: Option<String>,
    pub source_asset_chain_id: Option<String>,
    pub source_asset_denom: Option<String>,
    pub dest_asset_chain_id: Option<String>,
    pub dest_asset_denom: Option<String>,
    pub allow_multi_tx: Option<bool>,
    pub is_op_withdraw: Option<bool>,
}

pub(crate) fn required<'a>(
    value: &'a Option<String>,
    name: &'static str,
) -> Result<&'a str, RouteError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or(RouteError::Missing(name))
}

pub fn parse_amount(text: &str, field: &'static str) -> Result<BigUint, RouteError> {
    amount::parse(text)
        .filter(|a| a.bits() > 0)
        .ok_or_else(|| RouteError::BadAmount {
            field,
            value: text.into(),
        })
}

pub(crate) fn locate(
    snapshot: &PlannerSnapshot,
    chain_id: &str,
    denom: &str,
) -> Result<NodeIndex, RouteError> {
    if snapshot.graph.chain(chain_id).is_none() {
        return Err(RouteError::UnknownChain(chain_id.into()));
    }
    snapshot
        .graph
        .find(chain_id, denom)
        .ok_or_else(|| RouteError::UnknownAsset {
            chain_id: chain_id.into(),
            denom: denom.into(),
        })
}

/// A planned route with the amount entering and leaving each step.
pub struct Planned {
    pub plan: Plan,
    pub amounts: Vec<StepAmounts>,
    pub price_impact: Option<String>,
}

pub fn plan(
    snapshot: &PlannerSnapshot,
    source: (&str, &str),
    dest: (&str, &str),
    amount_in: &BigUint,
    options: SearchOptions,
) -> Result<Planned, RouteError> {
    let from = locate(snapshot, source.0, source.1)?;
    let to = locate(snapshot, dest.0, dest.1)?;
    if from == to {
        return Err(RouteError::Invalid(
            "source and destination are the same asset on the same chain".into(),
        ));
    }
    let plan = search(&snapshot.graph, from, to, options)?;
    let (amounts, worst_impact) = amounts_along(snapshot, &plan, amount_in)?;
    Ok(Planned {
        plan,
        amounts,
        price_impact: worst_impact,
    })
}

/// The amount entering and leaving one step.
pub type StepAmounts = (BigUint, BigUint);

/// The amount entering and leaving every step, and the worst swap price impact.
pub fn amounts_along(
    snapshot: &PlannerSnapshot,
    plan: &Plan,
    amount_in: &BigUint,
) -> Result<(Vec<StepAmounts>, Option<String>), RouteError> {
    let mut amounts = Vec::with_capacity(plan.steps.len());
    let mut current = amount_in.clone();
    let mut worst: Option<(BigUint, String)> = None;
    for step in &plan.steps {
        let out = match &snapshot.graph.graph[step.edge] {
            Edge::Wrap { scale, .. } if *scale >= 0 => {
                &current * BigUint::from(10u32).pow(*scale as u32)
            }
            Edge::Wrap { scale, .. } => &current / BigUint::from(10u32).pow(scale.unsigned_abs()),
            Edge::Swap {
                reserve_in,
                reserve_out,
                fee_bps,
                ..
            } => {
                let (scaled, text) = amount::price_impact(&current, reserve_in);
                if worst.as_ref().is_none_or(|(w, _)| *w < scaled) {
                    worst = Some((scaled, text));
                }
                amount::constant_product_out(&current, reserve_in, reserve_out, *fee_bps)
            }
            _ => current.clone(),
        };
        if out.bits() == 0 {
            let location = snapshot.graph.location(step.to);
            return Err(RouteError::Invalid(format!(
                "amount_in is too small: nothing would arrive as {} on {}",
                location.denom, location.chain_id
            )));
        }
        amounts.push((current, out.clone()));
        current = out;
    }
    Ok((amounts, worst.map(|(_, text)| text)))
}

fn operation(snapshot: &PlannerSnapshot, planned: &Planned, i: usize) -> Value {
    let step = &planned.plan.steps[i];
    let (from, to) = (
        snapshot.graph.location(step.from),
        snapshot.graph.location(step.to),
    );
    let chain = |id: &str| snapshot.graph.chain(id);
    let (amount_in, amount_out) = &planned.amounts[i];
    let (key, body) = match &snapshot.graph.graph[step.edge] {
        Edge::Ibc { port, channel } => (
            "transfer",
            json!({
                "port": port,
                "channel": channel,
                "from_chain_id": from.chain_id,
                "to_chain_id": to.chain_id,
                "pfm_enabled": chain(&from.chain_id).is_some_and(|c| c.pfm_enabled),
                "supports_memo": chain(&to.chain_id).is_some_and(|c| c.supports_memo),
                "denom_in": from.denom,
                "denom_out": to.denom,
                "bridge_id": "IBC",
                "smart_relay": false,
                "dest_denom": to.denom
            }),
        ),
        Edge::OpDeposit { bridge_id } | Edge::OpWithdraw { bridge_id, .. } => (
            "op_init_transfer",
            json!({
                "from_chain_id": from.chain_id,
                "to_chain_id": to.chain_id,
                "denom_in": from.denom,
                "denom_out": to.denom,
                "op_init_bridge_id": bridge_id.to_string(),
                "bridge_id": "OPINIT",
                "smart_relay": false
            }),
        ),
        Edge::Swap {
            venue,
            logo_uri,
            pool,
            reserve_in,
            ..
        } => {
            let venue = json!({"name": venue, "chain_id": from.chain_id, "logo_uri": logo_uri});
            (
                "swap",
                json!({
                    "swap_in": {
                        "swap_venue": venue,
                        "swap_operations": [{"pool": pool, "denom_in": from.denom, "denom_out": to.denom}],
                        "swap_amount_in": amount_in.to_string(),
                        "price_impact_percent": amount::price_impact_percent(amount_in, reserve_in),
                        "estimated_amount_out": amount_out.to_string()
                    },
                    "estimated_affiliate_fee": format!("0{}", to.denom),
                    "from_chain_id": from.chain_id,
                    "chain_id": from.chain_id,
                    "denom_in": from.denom,
                    "denom_out": to.denom,
                    "swap_venues": [venue]
                }),
            )
        }
        Edge::Wrap { contract, .. } => {
            let venue =
                json!({"name": "erc20-wrapper", "chain_id": from.chain_id, "logo_uri": null});
            (
                "swap",
                json!({
                    "swap_in": {
                        "swap_venue": venue,
                        "swap_operations": [{"pool": contract, "denom_in": from.denom, "denom_out": to.denom}],
                        "swap_amount_in": amount_in.to_string(),
                        "price_impact_percent": "0",
                        "estimated_amount_out": amount_out.to_string()
                    },
                    "estimated_affiliate_fee": format!("0{}", to.denom),
                    "from_chain_id": from.chain_id,
                    "chain_id": from.chain_id,
                    "denom_in": from.denom,
                    "denom_out": to.denom,
                    "swap_venues": [venue]
                }),
            )
        }
        Edge::Bridge {
            kind, bridge_id, ..
        } => {
            return json!({
                format!("{kind}_transfer"): {
                    "from_chain_id": from.chain_id,
                    "to_chain_id": to.chain_id,
                    "denom_in": from.denom,
                    "denom_out": to.denom,
                    "bridge_id": bridge_id,
                    "smart_relay": false
                },
                "tx_index": step.tx_index,
                "amount_in": amount_in.to_string(),
                "amount_out": amount_out.to_string()
            });
        }
    };
    json!({ key: body, "tx_index": step.tx_index, "amount_in": amount_in.to_string(), "amount_out": amount_out.to_string() })
}

/// The chains a route touches, in order, without repeats in a row.
pub fn chain_ids(snapshot: &PlannerSnapshot, plan: &Plan) -> Vec<String> {
    chains_of(snapshot, &plan.steps)
}

/// The chains some steps touch, in order, without repeats in a row.
pub(crate) fn chains_of(snapshot: &PlannerSnapshot, steps: &[super::search::Step]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for step in steps {
        for node in [step.from, step.to] {
            let id = &snapshot.graph.location(node).chain_id;
            if ids.last() != Some(id) {
                ids.push(id.clone());
            }
        }
    }
    ids
}

pub fn route(snapshot: &PlannerSnapshot, request: &RouteRequest) -> Result<Value, RouteError> {
    let source_chain = required(&request.source_asset_chain_id, "source_asset_chain_id")?;
    let source_denom = required(&request.source_asset_denom, "source_asset_denom")?;
    let dest_chain = required(&request.dest_asset_chain_id, "dest_asset_chain_id")?;
    let dest_denom = required(&request.dest_asset_denom, "dest_asset_denom")?;
    if request.amount_out.is_some() && request.amount_in.is_none() {
        return Err(RouteError::Invalid(
            "amount_out (exact-out routing) is not supported: give amount_in".into(),
        ));
    }
    let amount_in = parse_amount(required(&request.amount_in, "amount_in")?, "amount_in")?;
    let options = SearchOptions {
        allow_multi_tx: request.allow_multi_tx.unwrap_or(false),
        is_op_withdraw: request.is_op_withdraw.unwrap_or(false),
    };
    let planned = plan(
        snapshot,
        (source_chain, source_denom),
        (dest_chain, dest_denom),
        &amount_in,
        options,
    )?;
    let operations: Vec<Value> = (0..planned.plan.steps.len())
        .map(|i| operation(snapshot, &planned, i))
        .collect();
    let amount_out = planned
        .amounts
        .last()
        .map(|(_, out)| out.to_string())
        .unwrap_or_default();
    let chain_ids = chain_ids(snapshot, &planned.plan);
    let mut venues: Vec<Value> = Vec::new();
    for step in &planned.plan.steps {
        if let Edge::Swap {
            venue, logo_uri, ..
        } = &snapshot.graph.graph[step.edge]
        {
            let entry = json!({"name": venue, "chain_id": snapshot.graph.location(step.from).chain_id, "logo_uri": logo_uri});
            if !venues.contains(&entry) {
                venues.push(entry);
            }
        }
    }
    let warning = planned.price_impact.as_ref().and_then(|impact| {
        let whole: u64 = impact.split('.').next().and_then(|w| w.parse().ok()).unwrap_or(0);
        (whole >= PRICE_WARNING_PERCENT).then(|| {
            json!({
                "type": "BAD_PRICE_WARNING",
                "message": format!("swap execution price in route deviates too far from market price. expected price impact: {impact}%")
            })
        })
    });
    let mut extra_warnings = Vec::new();
    let mut extra_infos = Vec::new();
    for step in &planned.plan.steps {
        if let Edge::OpWithdraw {
            finalization_seconds,
            ..
        } = &snapshot.graph.graph[step.edge]
        {
            extra_warnings.push(format!(
                "This route withdraws through the optimistic bridge: the funds can be claimed on {} after the challenge period of about {} (the withdrawal must then be finalized on L1).",
                snapshot.graph.location(step.to).chain_id,
                human_duration(*finalization_seconds)
            ));
        }
    }
    if planned.plan.requires_op_hook {
        extra_infos.push("This route needs an op hook: call POST /op-hook, sign the returned messages, and pass the result as signed_op_hook to /v2/fungible/msgs.".to_string());
    }
    Ok(json!({
        "source_asset_denom": source_denom,
        "source_asset_chain_id": source_chain,
        "dest_asset_denom": dest_denom,
        "dest_asset_chain_id": dest_chain,
        "amount_in": amount_in.to_string(),
        "amount_out": amount_out,
        "operations": operations,
        "chain_ids": chain_ids,
        "required_chain_addresses": chain_ids,
        "does_swap": !venues.is_empty(),
        "estimated_amount_out": amount_out,
        "swap_venues": venues,
        "txs_required": planned.plan.txs_required,
        "swap_price_impact_percent": planned.price_impact,
        "warning": warning,
        "estimated_fees": [],
        "estimated_route_duration_seconds": planned.plan.duration_seconds,
        "required_op_hook": planned.plan.requires_op_hook,
        "extra_warnings": extra_warnings,
        "extra_infos": extra_infos
    }))
}

fn human_duration(seconds: u64) -> String {
    match seconds {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{} days", s / 86_400),
        s if s >= 3_600 => format!("{} hours", s / 3_600),
        s => format!("{s} seconds"),
    }
}

/// `POST /op-hook` request; `amount_in` is a weaver addition (the hook moves exactly the
/// deposited amount onward, so it must be known).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct OpHookRequest {
    pub source_address: Option<String>,
    pub source_asset_chain_id: Option<String>,
    pub source_asset_denom: Option<String>,
    pub dest_address: Option<String>,
    pub dest_asset_chain_id: Option<String>,
    pub dest_asset_denom: Option<String>,
    pub amount_in: Option<String>,
    pub timeout_seconds: Option<String>,
}

/// The hook to sign: the onward IBC transfer(s) the rollup runs after the deposit lands.
pub fn op_hook(
    snapshot: &PlannerSnapshot,
    request: &OpHookRequest,
    now_ns: u128,
) -> Result<Value, RouteError> {
    let source_address = required(&request.source_address, "source_address")?;
    let source_chain = required(&request.source_asset_chain_id, "source_asset_chain_id")?;
    let source_denom = required(&request.source_asset_denom, "source_asset_denom")?;
    let dest_address = required(&request.dest_address, "dest_address")?;
    let dest_chain = required(&request.dest_asset_chain_id, "dest_asset_chain_id")?;
    let dest_denom = required(&request.dest_asset_denom, "dest_asset_denom")?;
    let amount_in = parse_amount(required(&request.amount_in, "amount_in")?, "amount_in")?;
    let timeout_seconds =
        msgs::parse_timeout(&request.timeout_seconds, msgs::DEFAULT_HOOK_TIMEOUT_SECONDS)?;
    let options = SearchOptions {
        allow_multi_tx: true,
        is_op_withdraw: false,
    };
    let planned = plan(
        snapshot,
        (source_chain, source_denom),
        (dest_chain, dest_denom),
        &amount_in,
        options,
    )?;
    if !planned.plan.requires_op_hook {
        return Err(RouteError::Invalid(format!(
            "the route from {source_denom} on {source_chain} to {dest_denom} on {dest_chain} does not require an op hook (only routes that continue by IBC after an OPinit deposit do)"
        )));
    }
    let hook: Vec<usize> = (0..planned.plan.steps.len())
        .filter(|i| planned.plan.steps[*i].in_op_hook)
        .collect();
    let first = &planned.plan.steps[hook[0]];
    let hook_chain = snapshot.graph.location(first.from).chain_id.clone();
    let address_bytes = crate::chain::address::parse_account(source_address)
        .ok()
        .ok_or_else(|| RouteError::Invalid(format!("invalid source_address {source_address:?}")))?;
    if crate::chain::address::parse_account(dest_address).is_err() {
        return Err(RouteError::Invalid(format!(
            "invalid dest_address {dest_address:?}"
        )));
    }
    let last_step = planned.plan.steps.len() - 1;
    let hops: Vec<msgs::Hop> = hook
        .iter()
        .filter_map(|i| {
            let step = &planned.plan.steps[*i];
            let Edge::Ibc { port, channel } = &snapshot.graph.graph[step.edge] else {
                return None;
            };
            let to_chain = &snapshot.graph.location(step.to).chain_id;
            // The last hop of the route pays the recipient; others the user's own account.
            let receiver = if *i == last_step {
                dest_address.to_string()
            } else {
                msgs::address_on(snapshot, to_chain, &address_bytes)
            };
            Some(msgs::Hop {
                port: port.clone(),
                channel: channel.clone(),
                receiver,
            })
        })
        .collect();
    let sender = msgs::address_on(snapshot, &hook_chain, &address_bytes);
    let denom = &snapshot.graph.location(first.from).denom;
    let transfer = msgs::ibc_transfer(
        &hops,
        denom,
        &planned.amounts[hook[0]].0.to_string(),
        &sender,
        now_ns,
        timeout_seconds,
    );
    Ok(json!({ "chain_id": hook_chain, "hook": [transfer] }))
}
