//! Integration tests: they boot the real `weaver` binary on ephemeral loopback ports
//! (against the embedded devnet or against `weaver devnet serve`) and talk HTTP to it.

mod api;
mod cli;
mod crash;
mod domains;
mod harness;
mod limits;
mod msgs;
mod msgs_sdk;
mod node_source;
mod router;
mod skip_client;
mod supervision;
