//! The `# HELP` line of every metric weaver exports: one sentence each, what it counts and
//! how to read it. docs/operations.md's table says the same with the labels; the test below
//! keeps every metric name in the sources described here.

/// Every `weaver_*` metric and its help text.
pub(super) const METRIC_HELP: &[(&str, &str)] = &[
    ("weaver_actor_restarts_total", "Actor restarts by its supervisor, by actor, chain, follower and reason (error, panic, died)."),
    ("weaver_blocks_indexed_total", "Blocks indexed, by chain."),
    ("weaver_chain_queries_total", "Chain-state reads the domains asked of the node (NFT metadata, balances, receipts, traces), by kind and outcome."),
    ("weaver_chain_tip_height", "The node's latest height, as last asked, by chain."),
    ("weaver_data_dir_fs_free_bytes", "Bytes left to an unprivileged writer on the file system holding data_dir (read every 5 s)."),
    ("weaver_data_dir_fs_size_bytes", "Size in bytes of the file system holding data_dir."),
    ("weaver_devnet_broadcasts_total", "Txs broadcast to the embedded devnet network, by chain and result code (0: accepted)."),
    ("weaver_devnet_relayed_total", "Relayer and executor steps of the embedded devnet network, by chain and kind."),
    ("weaver_domain_height", "A domain's watermark: the last height it fully indexed, by chain and domain."),
    ("weaver_follower_stopped_total", "Followers stopped for good (another chain behind the URLs, or a node without what a domain needs), by chain."),
    ("weaver_hot_tier_bytes", "Bytes of recent blocks and txs kept in memory, by chain."),
    ("weaver_hot_tier_hits_total", "Reads answered from the in-memory tier of recent blocks and txs, by chain and kind."),
    ("weaver_hot_tier_misses_total", "Reads the in-memory tier could not answer (read from the store), by chain and kind."),
    ("weaver_http_client_errors_total", "Answers with a 4xx status, by listener and status."),
    ("weaver_http_gzip_answers_total", "Kept list pages compressed for gzip clients (once per page, change and HTTP worker), by scope."),
    ("weaver_http_kept_answers_total", "List pages answered from memory (hit) or rendered (miss), by scope and result."),
    ("weaver_http_rejected_total", "Requests refused before a handler ran (limits, malformed input), by listener and reason."),
    ("weaver_http_request_duration_seconds", "Time to answer a request, by listener and route."),
    ("weaver_http_requests_total", "Requests answered, by listener, route, method and status."),
    ("weaver_index_blocks_per_second", "Blocks indexed per second while catching up, by chain."),
    ("weaver_indexed_height", "The last height every domain of the chain has indexed, by chain."),
    ("weaver_ingest_cpu_microseconds_total", "CPU time of the threads that ran each ingestion stage (parse, verify, verify_commit, prepare, index, commit), by chain: divide by weaver_blocks_indexed_total for a block's."),
    ("weaver_ingestion_stalled", "1 while a chain's follower is stalled or stopped (node error, refused lookup, malformed data, full disk, wrong chain), else 0; by chain and follower."),
    ("weaver_blocks_refused_total", "Blocks refused because they fail verification against their header (issue #43), by chain and check (block_hash, chain_id, height, data_hash, header); none of them is indexed."),
    ("weaver_malformed_chain_data_total", "Chain data refused or skipped as malformed, by chain and kind."),
    ("weaver_node_requests_total", "Requests sent to a node, retries included, by chain and api (rpc, rest, json_rpc)."),
    ("weaver_source_malformed_total", "Node answers refused as chain data, every chain together (see weaver_malformed_chain_data_total for the chain and kind)."),
    ("weaver_source_retries_total", "Node requests retried, by chain and reason (http_5xx, timeout, connect, body, transport)."),
    ("weaver_store_read_errors_total", "Store reads that failed, by chain and follower."),
    ("weaver_store_size_bytes", "Bytes allocated to the store's directory (data_dir/db), as du counts them (read every 5 s)."),
    ("weaver_store_write_errors_total", "Store writes that failed (the follower stalls until the disk takes them), by chain and follower."),
    ("weaver_store_writes_total", "Keys written to the store by indexing, by chain and domain."),
    ("weaver_tracker_actors", "Live transfer trackers (actors)."),
    ("weaver_tracker_events_dispatched_total", "Relay events handed to the transfer trackers they concern."),
    ("weaver_tracker_events_total", "Relay events the transfer tracker hub received, by chain."),
    ("weaver_tracker_lookups_total", "Node lookups of registered txs not yet seen in an indexed block, by chain."),
    ("weaver_tracker_registrations_total", "Transfers registered for tracking."),
    ("weaver_tracker_store_errors_total", "Tracker record reads and writes that failed (retried), by op."),
    ("weaver_tracker_streams", "Open transfer-status streams (server-sent events)."),
    ("weaver_tracker_time_to_terminal_seconds", "Time from registration to a terminal state, by route kind and state."),
    ("weaver_tracker_tx_feed_missed_total", "Times the tracker hub fell behind the indexed-tx feed and re-read what it missed."),
    ("weaver_tracker_unseen", "Registered txs not yet seen in an indexed block."),
    ("weaver_tracker_unseen_found_total", "Unseen registered txs found, by how (block, index or lookup)."),
    ("weaver_trackers", "Tracked transfers, by state."),
    ("weaver_txs_indexed_total", "Txs indexed, by chain."),
];

/// Gives the installed recorder every metric's help text (the exporter prints it as
/// `# HELP`, whatever the metric's kind).
pub(super) fn describe_all() {
    for (name, help) in METRIC_HELP {
        metrics::describe_counter!(*name, *help);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// Every `"weaver_…"` string literal in the workspace's production sources (the metric
    /// names: no other literal starts so).
    fn metric_names_in(dir: &Path, names: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                metric_names_in(&path, names);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with(file!()) {
                let text = std::fs::read_to_string(&path).unwrap();
                for piece in text.split("\"weaver_").skip(1) {
                    let name: String = piece
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    if piece[name.len()..].starts_with('"') {
                        names.insert(format!("weaver_{name}"));
                    }
                }
            }
        }
    }

    #[test]
    fn every_metric_in_the_sources_has_help_and_a_line_in_the_docs() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut names = BTreeSet::new();
        metric_names_in(&root.join("src"), &mut names);
        for member in std::fs::read_dir(root.join("actors")).unwrap() {
            let src = member.unwrap().path().join("src");
            if src.is_dir() {
                metric_names_in(&src, &mut names);
            }
        }
        assert!(names.len() > 30, "found only {names:?}");
        let described: BTreeSet<String> = super::METRIC_HELP
            .iter()
            .map(|(name, _)| name.to_string())
            .collect();
        let missing: Vec<_> = names.difference(&described).collect();
        assert!(missing.is_empty(), "metrics without help: {missing:?}");
        let stale: Vec<_> = described.difference(&names).collect();
        assert!(
            stale.is_empty(),
            "help for metrics no source names: {stale:?}"
        );
        let docs: String = ["operations.md", "transfer-states.md"]
            .iter()
            .map(|doc| std::fs::read_to_string(root.join("docs").join(doc)).unwrap())
            .collect();
        let undocumented: Vec<_> = names.iter().filter(|n| !docs.contains(*n)).collect();
        assert!(
            undocumented.is_empty(),
            "metrics missing from docs/operations.md: {undocumented:?}"
        );
    }
}
