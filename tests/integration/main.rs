//! Integration tests: they boot the real `weaver` binary on ephemeral loopback ports
//! (against the embedded devnet or against `weaver devnet serve`) and talk HTTP to it.

mod answer_cache;
mod api;
mod cli;
mod cors;
mod crash;
mod devnet_network;
mod devnet_send;
mod domains;
mod evm;
mod evm_rpc;
mod harness;
mod interwovenkit;
mod limits;
mod malformed_heads;
mod msgs;
mod msgs_sdk;
mod nft;
mod nft_crash;
mod nft_oracle;
mod nft_pages;
mod node_faults;
mod node_queries;
mod node_source;
mod openapi;
mod ops;
mod properties;
mod router;
mod router_input;
mod scale_out;
mod schemathesis;
mod skip_client;
mod status_page;
mod storage_faults;
mod supervision;
mod tracking;
