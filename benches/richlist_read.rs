//! The rich list at the store level: a page of holders of a token with 1,000,000 holders —
//! the first page, a page from a cursor deep in the list, a deep offset — and the rate of
//! indexing ERC-20 transfers.
//! Run: `cargo bench --bench richlist_read`

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use ethnum::U256;
use weaver_engine::chain::address::eip55;
use weaver_engine::chain::evm_log::TRANSFER_TOPIC;
use weaver_engine::chain::types::{BlockBundle, Event};
use weaver_engine::indexers::{DomainSet, RichListIndexer};
use weaver_engine::store::richlist::Holding;
use weaver_engine::store::{Order, PageRequest, Store};

const HOLDERS: u64 = 1_000_000;
const PER_BLOCK: u64 = 10_000;
const TOKEN: [u8; 20] = [0xaa; 20];

fn account(i: u64) -> [u8; 20] {
    let mut account = [0x11; 20];
    account[12..].copy_from_slice(&i.to_be_bytes());
    account
}

/// A mint of `amount` to account `i`, as minievm logs it.
fn mint(i: u64, amount: u64) -> Event {
    let log = serde_json::json!({
        "address": eip55(&TOKEN),
        "topics": [
            TRANSFER_TOPIC,
            format!("0x{}", "0".repeat(64)),
            format!("0x{:0>64}", hex::encode(account(i))),
        ],
        "data": format!("0x{amount:064x}"),
    });
    Event::new("evm", &[("log", &log.to_string())])
}

fn page(after: Option<Holding>, offset: u64) -> PageRequest<Holding> {
    PageRequest {
        after,
        offset,
        limit: 100,
        order: Order::Desc,
        count_total: true,
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 512 << 20).unwrap();
    let rich = store.rich_list("minievm-1").unwrap();
    let mut domains = DomainSet::open(
        "minievm-1",
        vec![Box::new(RichListIndexer::new(rich.clone()))],
    )
    .unwrap();
    let started = Instant::now();
    for block in 0..HOLDERS / PER_BLOCK {
        // Amounts repeat (every 50,000th account holds the same), so ties are broken by account.
        let events = (block * PER_BLOCK..(block + 1) * PER_BLOCK)
            .map(|i| mint(i, 1 + (i * 7919) % 50_000))
            .collect();
        let bundle = BlockBundle::of_events("minievm-1", block + 1, 0, vec![events]);
        domains.apply(&bundle).unwrap();
    }
    let elapsed = started.elapsed();
    eprintln!(
        "indexed {HOLDERS} transfers in {elapsed:.2?} ({:.0} transfers/s); {} holders",
        HOLDERS as f64 / elapsed.as_secs_f64(),
        rich.holders(&TOKEN).unwrap()
    );

    let mut group = c.benchmark_group("richlist_1m_holders");
    group.bench_function("first_page_100", |b| {
        b.iter(|| black_box(rich.page(&TOKEN, &page(None, 0)).unwrap()))
    });
    let deep = Holding {
        amount: U256::new(10_000),
        account: account(500_000),
    };
    group.bench_function("cursor_deep_page_100", |b| {
        b.iter(|| black_box(rich.page(&TOKEN, &page(Some(deep), 0)).unwrap()))
    });
    group.bench_function("offset_10000_page_100", |b| {
        b.iter(|| black_box(rich.page(&TOKEN, &page(None, 10_000)).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
