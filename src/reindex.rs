//! `weaver reindex --chain ID --domain NAME`: drops one domain of one chain from the store of
//! a stopped weaver (its records and watermark, in one durable step: a crash leaves it whole
//! or gone). The next start finds the domain far behind the chain's others and rebuilds it
//! from the node on a follower of its own while the others follow the tip (boot::chain,
//! `BACKFILL_GAP`). Offline on purpose: the store admits one process, and a running daemon
//! holds its domains' indexers open.

use weaver_engine::indexers::Domain;
use weaver_engine::store::Store;

use crate::config::Config;

/// Drops `domain` of `chain_id` from the store under `config.data_dir`; what was done.
pub fn reindex(config: &Config, chain_id: &str, domain: &str) -> anyhow::Result<String> {
    let chain = config
        .chains
        .iter()
        .find(|c| c.chain_id == chain_id)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "chain {chain_id} is not in the config (chains: {})",
                config
                    .chains
                    .iter()
                    .map(|c| c.chain_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
    let parsed: Domain = serde_json::from_value(serde_json::Value::String(domain.to_string()))
        .map_err(|_| anyhow::anyhow!("unknown domain {domain:?}"))?;
    if !chain.domains.contains(&parsed) {
        anyhow::bail!(
            "chain {chain_id} does not keep the {domain} domain (its domains: {})",
            chain
                .domains
                .iter()
                .map(|d| d.descriptor().name)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let tree = parsed.descriptor().tree;
    let dir = config.data_dir.join("db");
    let store = Store::open_engine(
        config.store.engine,
        &dir,
        config.cache_mb << 20,
        config.memtable_mb << 20,
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "cannot open the store in {} ({e}): is weaver running on it? Stop it first (`systemctl stop weaver`)",
            dir.display()
        )
    })?;
    store.check_format()?;
    let shared = if tree != parsed.descriptor().name {
        format!(" (the {domain} domain lives in the {tree} tree: both are rebuilt)")
    } else {
        String::new()
    };
    Ok(match store.drop_domain(chain_id, tree)? {
        Some(height) => format!(
            "dropped the {tree} domain of {chain_id}, indexed to height {height}{shared}; the next start rebuilds it from height {} on a follower of its own while the chain's other domains follow the tip",
            chain.follower.start_height.max(1)
        ),
        None => format!("{chain_id} has no {tree} tree yet: nothing to drop"),
    })
}
