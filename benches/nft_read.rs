//! NFT reads at the store level: the tokens of an account holding 10,000 tokens (first page,
//! a deep cursor page, by height, one collection, one token id) and collection-name search
//! over 10,000 collections; plus the cost of indexing the mints.
//! Run: `cargo bench --bench nft_read`

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use weaver_engine::indexers::nft::synthetic::{collection_addr, SyntheticNfts};
use weaver_engine::store::nft::{TokenCursor, TokenFilter, TokenOrder};
use weaver_engine::store::{Order, PageRequest, Store};

const TOKENS: u64 = 10_000;
const COLLECTIONS: u64 = 10_000;
/// The holder's tokens are spread over this many collections.
const HELD_IN: u64 = 10;
const OWNER: [u8; 20] = [0x11; 20];

/// Names with punctuation, case and a non-ASCII letter, as a name search meets them.
fn name(i: u64) -> String {
    let kinds = [
        "Cool Cats",
        "Bored-Apes",
        "Pudgy_Penguins",
        "Azuki!",
        "Doodles №",
    ];
    format!("{} #{i} Ünion", kinds[(i % 5) as usize])
}

fn page<C>(limit: usize, after: Option<C>) -> PageRequest<C> {
    PageRequest {
        after,
        offset: 0,
        limit,
        order: Order::Desc,
        count_total: true,
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 256 << 20).unwrap();
    let nfts = store.nft("minimove-1", "init").unwrap();
    let mut chain = SyntheticNfts::new(nfts.clone()).unwrap();
    let started = Instant::now();
    for start in (0..COLLECTIONS).step_by(1000) {
        chain.create_collections(start..start + 1000, name).unwrap();
    }
    let per_collection = TOKENS / HELD_IN;
    for collection in 0..HELD_IN {
        for start in (0..per_collection).step_by(500) {
            chain.mint(collection, start..start + 500, &OWNER).unwrap();
        }
    }
    eprintln!(
        "indexed {COLLECTIONS} collections and {TOKENS} mints in {:.2?} ({:.0} mints/s)",
        started.elapsed(),
        TOKENS as f64 / started.elapsed().as_secs_f64()
    );

    let mut group = c.benchmark_group("nft_read");
    let holder = TokenFilter {
        owner: Some(OWNER.to_vec()),
        collection: None,
        token_id: None,
    };
    group.bench_function("tokens_by_account_10k/first_page_100", |b| {
        b.iter(|| {
            black_box(
                nfts.tokens(&holder, TokenOrder::TokenId, &page(100, None))
                    .unwrap(),
            )
        })
    });
    let deep = TokenCursor {
        token_id: "5000".into(),
        height: 0,
        collection: collection_addr(5),
    };
    group.bench_function("tokens_by_account_10k/cursor_deep_100", |b| {
        b.iter(|| {
            black_box(
                nfts.tokens(&holder, TokenOrder::TokenId, &page(100, Some(deep.clone())))
                    .unwrap(),
            )
        })
    });
    group.bench_function("tokens_by_account_10k/order_by_height_100", |b| {
        b.iter(|| {
            black_box(
                nfts.tokens(&holder, TokenOrder::Height, &page(100, None))
                    .unwrap(),
            )
        })
    });
    let one_collection = TokenFilter {
        collection: Some(collection_addr(3)),
        ..holder.clone()
    };
    group.bench_function("tokens_by_account_10k/in_one_collection_100", |b| {
        b.iter(|| {
            black_box(
                nfts.tokens(&one_collection, TokenOrder::TokenId, &page(100, None))
                    .unwrap(),
            )
        })
    });
    let one_id = TokenFilter {
        token_id: Some("42".into()),
        ..holder.clone()
    };
    group.bench_function("tokens_by_account_10k/token_id_filter", |b| {
        b.iter(|| {
            black_box(
                nfts.tokens(&one_id, TokenOrder::TokenId, &page(100, None))
                    .unwrap(),
            )
        })
    });
    group.bench_function("collections_by_name_10k/common_match_100", |b| {
        b.iter(|| {
            black_box(
                nfts.collections_named("cool cats", &page(100, None))
                    .unwrap(),
            )
        })
    });
    group.bench_function("collections_by_name_10k/rare_match", |b| {
        b.iter(|| {
            black_box(
                nfts.collections_named("Azuki!#9995", &page(100, None))
                    .unwrap(),
            )
        })
    });
    group.bench_function("collections_by_name_10k/no_match", |b| {
        b.iter(|| {
            black_box(
                nfts.collections_named("nothing-like-it", &page(100, None))
                    .unwrap(),
            )
        })
    });
    group.bench_function("collections_10k/newest_page_100", |b| {
        b.iter(|| black_box(nfts.collections(&page(100, None)).unwrap()))
    });
    group.bench_function("collections_by_account/page_100", |b| {
        b.iter(|| black_box(nfts.collections_of(&OWNER, &page(100, None)).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
