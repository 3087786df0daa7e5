//! Every vector of the registry's `denom_vectors.json` (computed from real mainnet traces
//! and seen verbatim in the registry) must come out of our derivation byte for byte.

use serde_json::Value;
use weaver_router::planner::denom::{ibc_denom, l2_denom};

fn vectors() -> Value {
    serde_json::from_str(include_str!("fixtures/denom_vectors.json")).unwrap()
}

#[test]
fn every_ibc_vector() {
    let vectors = vectors();
    let ibc = vectors["ibc"].as_array().unwrap();
    assert_eq!(ibc.len(), 35);
    for v in ibc {
        assert_eq!(
            ibc_denom(v["path"].as_str().unwrap()),
            v["denom"].as_str().unwrap(),
            "path {}",
            v["path"]
        );
    }
}

#[test]
fn every_l2_vector() {
    let vectors = vectors();
    let l2 = vectors["l2"].as_array().unwrap();
    assert_eq!(l2.len(), 20);
    for v in l2 {
        let bridge: u64 = v["bridge_id"].as_str().unwrap().parse().unwrap();
        assert_eq!(
            l2_denom(bridge, v["l1_denom"].as_str().unwrap()),
            v["l2_denom"].as_str().unwrap(),
            "{v}"
        );
    }
}
