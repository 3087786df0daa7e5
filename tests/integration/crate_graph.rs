//! The crate graph is the architecture (ARCHITECTURE.md, "Crates"): the engine depends on no
//! other weaver crate, the router only on the engine, the devnet on the engine and the router,
//! the replay node on none, and only the front (`weaver`) on the devnet and the replay node. Cargo enforces whatever the manifests say; this
//! holds the manifests to the drawing, so an edge added by mistake fails here, naming it.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// Each workspace crate's normal (non-dev, non-build) dependencies on other weaver crates.
fn weaver_edges() -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            let edges = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|name| name.starts_with("weaver"))
                .map(str::to_string)
                .collect();
            (package["name"].as_str().unwrap().to_string(), edges)
        })
        .collect()
}

#[test]
fn the_crate_graph_is_the_drawn_one() {
    let edges = weaver_edges();
    let expected: BTreeMap<String, Vec<String>> = [
        (
            "weaver",
            vec![
                "weaver-devnet",
                "weaver-engine",
                "weaver-replay",
                "weaver-router",
            ],
        ),
        ("weaver-replay", vec![]),
        ("weaver-devnet", vec!["weaver-engine", "weaver-router"]),
        ("weaver-engine", vec![]),
        ("weaver-router", vec!["weaver-engine"]),
    ]
    .into_iter()
    .map(|(name, deps)| {
        let mut deps: Vec<String> = deps.into_iter().map(str::to_string).collect();
        deps.sort();
        (name.to_string(), deps)
    })
    .collect();
    let mut actual = edges;
    for deps in actual.values_mut() {
        deps.sort();
    }
    assert_eq!(actual, expected);
}
