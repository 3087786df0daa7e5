//! The router's world: registry, route graph and search (issue #4, in progress). So far:
//! exact denom derivation for IBC vouchers and OPinit L2 tokens.

pub mod denom;
