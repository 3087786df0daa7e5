//! The devnet chain's one validator, which signs each block as CometBFT's would (issue #43):
//! an ed25519 key derived from the world's seed and the chain id, its address the first 20
//! bytes of the sha256 of its public key, and for each block a commit whose precommit is
//! signed over CometBFT's canonical vote bytes. A client in light-client mode
//! (`verify_commits`) checks the commit against the validator set its header names
//! (`validators_hash`), with `tendermint-light-client-verifier`.

use sha2::{Digest, Sha256};
use tendermint::block::{self, parts, Commit, CommitSig, Round};
use tendermint::{account, chain, validator, vote, Hash, PublicKey, Signature, Time};

/// The voting power the devnet's validator holds (the whole set's).
const POWER: u32 = 10;

pub(crate) struct Validator {
    key: ed25519_consensus::SigningKey,
    info: validator::Info,
    /// The set's hash, which every header carries as `validators_hash`.
    set_hash: [u8; 32],
}

impl Validator {
    /// The validator of the chain `chain_id` in the world of `seed`.
    pub(crate) fn of(seed: u64, chain_id: &str) -> Validator {
        let secret: [u8; 32] = Sha256::new()
            .chain_update(b"weaver-devnet-validator-key")
            .chain_update(seed.to_be_bytes())
            .chain_update(chain_id.as_bytes())
            .finalize()
            .into();
        let key = ed25519_consensus::SigningKey::from(secret);
        let public = PublicKey::from(key.verification_key());
        let info = validator::Info::new(public, vote::Power::from(POWER));
        let set_hash = match validator::Set::without_proposer(vec![info.clone()]).hash() {
            Hash::Sha256(hash) => hash,
            Hash::None => unreachable!("a validator set hashes with sha256"),
        };
        Validator {
            key,
            info,
            set_hash,
        }
    }

    /// Its address: what blocks name as their proposer.
    pub(crate) fn address(&self) -> [u8; 20] {
        self.info
            .address
            .as_bytes()
            .try_into()
            .expect("a validator address is 20 bytes")
    }

    /// Its public key (serialised as CometBFT writes one: `{"type", "value"}`).
    pub(crate) fn pub_key(&self) -> PublicKey {
        self.info.pub_key
    }

    /// The hash of the validator set (this validator alone).
    pub(crate) fn set_hash(&self) -> [u8; 32] {
        self.set_hash
    }

    /// The set as CometBFT's `/validators` lists it.
    pub(crate) fn validators_json(&self, height: u64) -> serde_json::Value {
        serde_json::json!({
            "block_height": height.to_string(),
            "validators": [{
                "address": hex::encode_upper(self.address()),
                "pub_key": self.info.pub_key,
                "voting_power": POWER.to_string(),
                "proposer_priority": "0"
            }],
            "count": "1",
            "total": "1"
        })
    }

    /// The commit of the block at `height` of `chain_id` whose ID is `hash` (its part set
    /// `parts_hash`), signed at `time`: this validator's precommit.
    pub(crate) fn commit(
        &self,
        chain_id: &str,
        height: u64,
        hash: [u8; 32],
        parts_hash: [u8; 32],
        time: Time,
    ) -> Commit {
        let block_id = block::Id {
            hash: Hash::Sha256(hash),
            part_set_header: parts::Header::new(1, Hash::Sha256(parts_hash)).expect("one part"),
        };
        let height = block::Height::try_from(height).expect("a height within CometBFT's range");
        let address = account::Id::new(self.address());
        let precommit = vote::Vote {
            vote_type: vote::Type::Precommit,
            height,
            round: Round::default(),
            block_id: Some(block_id),
            timestamp: Some(time),
            validator_address: address,
            validator_index: vote::ValidatorIndex::try_from(0u32).expect("index 0"),
            signature: None,
            extension: vec![],
            extension_signature: None,
        };
        let chain_id =
            chain::Id::try_from(chain_id.to_string()).expect("a devnet chain id is a valid one");
        let signed = self.key.sign(&precommit.into_signable_vec(chain_id));
        Commit {
            height,
            round: Round::default(),
            block_id,
            signatures: vec![CommitSig::BlockIdFlagCommit {
                validator_address: address,
                timestamp: time,
                signature: Signature::new(signed.to_bytes()).expect("an ed25519 signature"),
            }],
        }
    }
}
