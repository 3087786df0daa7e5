//! Route planning in process: search, amounts and the typed answer of `/v2/fungible/route`,
//! on the real mainnet registry and on a synthetic 500-rollup hub-and-spoke graph.
//! Run: `cargo bench --bench route_plan`

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use weaver_router::planner::denom::{ibc_denom, l2_denom};
use weaver_router::planner::request::{AssetFields, RouteRequest};
use weaver_router::planner::route;
use weaver_router::planner::{synthetic, PlannerSnapshot};

fn request(from: (&str, &str), to: (&str, &str), multi: bool) -> RouteRequest {
    RouteRequest {
        amount_in: Some("1000000".into()),
        assets: AssetFields::between(from, to),
        allow_multi_tx: Some(multi),
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    let config = weaver::config::Config::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("config/mainnet.toml"),
    )
    .unwrap();
    let mainnet = PlannerSnapshot::build(config.router.registry.clone()).unwrap();
    let usdc_echelon = ibc_denom("transfer/channel-0/transfer/channel-3/uusdc");
    let usdc_l1 = ibc_denom("transfer/channel-3/uusdc");
    let civitia_init = l2_denom(12, "uinit");
    let init_civitia_on_l1 = ibc_denom(&format!("transfer/channel-27/{civitia_init}"));
    let mainnet_routes = [
        (
            "l1_to_rollup_opinit",
            request(
                ("interwoven-1", "uinit"),
                ("civitia-1", &civitia_init),
                false,
            ),
        ),
        (
            "l1_to_rollup_ibc",
            request(
                ("interwoven-1", &usdc_l1),
                ("echelon-1", &usdc_echelon),
                false,
            ),
        ),
        (
            "rollup_to_rollup",
            request(
                ("echelon-1", &usdc_echelon),
                ("cabal-1", &usdc_echelon),
                false,
            ),
        ),
        (
            "noble_to_evm_rollup",
            request(("noble-1", "uusdc"), ("cabal-1", &usdc_echelon), false),
        ),
        (
            "op_hook",
            request(
                ("interwoven-1", "uinit"),
                ("interwoven-1", &init_civitia_on_l1),
                false,
            ),
        ),
    ];
    let mut group = c.benchmark_group("route_mainnet");
    for (name, req) in &mainnet_routes {
        route::answer(&mainnet, req).unwrap_or_else(|e| panic!("{name}: {e}"));
        group.bench_function(*name, |b| {
            b.iter(|| black_box(route::answer(&mainnet, req).unwrap()))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("route_synthetic_500");
    group.bench_function("build_snapshot", |b| {
        b.iter(|| black_box(PlannerSnapshot::build(synthetic::registry(500)).unwrap()))
    });
    let big = PlannerSnapshot::build(synthetic::registry(500)).unwrap();
    let usdc = synthetic::usdc_on_rollup(0);
    let synthetic_routes = [
        (
            "rollup_to_rollup",
            request(
                (&synthetic::rollup_id(3), &usdc),
                (&synthetic::rollup_id(411), &usdc),
                false,
            ),
        ),
        (
            "hub_to_rollup_opinit",
            request(
                (synthetic::HUB, "uinit"),
                (&synthetic::rollup_id(250), &l2_denom(350, "uinit")),
                false,
            ),
        ),
        (
            "issuer_to_rollup",
            request(
                (synthetic::ISSUER, "uusdc"),
                (&synthetic::rollup_id(499), &usdc),
                false,
            ),
        ),
    ];
    for (name, req) in &synthetic_routes {
        route::answer(&big, req).unwrap_or_else(|e| panic!("{name}: {e}"));
        group.bench_function(*name, |b| {
            b.iter(|| black_box(route::answer(&big, req).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
