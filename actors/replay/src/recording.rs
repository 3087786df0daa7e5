//! The recording format: one directory, plain JSON, so a recording can be read, diffed and
//! edited by hand (docs/replay.md).
//!
//! ```text
//! recording.json      {"format": 1, "chain_id", "node_info", "from", "to", "unrecorded"}
//! blocks/<height>.json {"block": /block result, "block_results": /block_results result,
//!                       "txs": [REST txs of the block], "rest_block_id": REST block_id,
//!                       "next_header": the /header after it, for the last block}
//! rest.jsonl          one REST answer per line: {"method","path","height","body","status","answer"}
//! json_rpc.jsonl      one EVM JSON-RPC answer per line: {"method","params","response"}
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of the format this build reads and writes.
pub(crate) const FORMAT: u32 = 1;

/// What the replay node answers for a request the recording does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unrecorded {
    /// HTTP 501 without a gateway body (a JSON-RPC error on the EVM JSON-RPC): a follower
    /// stalls on it, visibly, instead of indexing something the node never said. The
    /// default: a recording made by `weaver node record` holds everything its range needed.
    #[default]
    Unavailable,
    /// A gateway "not found" (code 5, HTTP 404), which a domain reads as "no such state": for
    /// recordings assembled from a real node's answers where only some lookups were kept.
    NotFound,
}

/// The recording's own facts (`recording.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub format: u32,
    pub chain_id: String,
    /// The node's `/status` `node_info` (its `network` is the chain id).
    #[serde(default)]
    pub node_info: Value,
    /// The heights recorded: a follower replaying it starts at `from` (`start_height`).
    pub from: u64,
    pub to: u64,
    #[serde(default)]
    pub unrecorded: Unrecorded,
}

/// One height as the node served it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedBlock {
    /// The `result` of CometBFT `/block?height=`.
    pub block: Value,
    /// The `result` of CometBFT `/block_results?height=`.
    pub block_results: Value,
    /// The REST (decoded) txs of the block, in block order.
    #[serde(default)]
    pub txs: Vec<Value>,
    /// The `block_id` of the REST txs answer, when the node gave one.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub rest_block_id: Value,
    /// The header of the height after (CometBFT `/header`'s `header`), kept where that height
    /// is not recorded itself ([`Recording::trim`]): it commits to this block's results, so
    /// the recording's last block verifies on replay too.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub next_header: Value,
}

/// One REST answer other than a block's txs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestExchange {
    pub method: String,
    /// Path and query, as asked.
    pub path: String,
    /// The `x-cosmos-block-height` header asked with (state at that height), if any.
    #[serde(default)]
    pub height: Option<String>,
    /// The request body (a POST's JSON), if any.
    #[serde(default)]
    pub body: Option<String>,
    pub status: u16,
    pub answer: String,
}

impl RestExchange {
    fn key(&self) -> RestKey {
        rest_key(
            &self.method,
            &self.path,
            self.height.as_deref(),
            self.body.as_deref(),
        )
    }
}

/// One EVM JSON-RPC call and the node's response object (its `result` or `error`; the `id`
/// is the asker's and is not kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcExchange {
    pub method: String,
    pub params: Value,
    pub response: Value,
}

/// A REST request as a recording finds it (see [`rest_key`]).
pub(crate) type RestKey = (String, String, Option<String>, Option<String>);

/// How a REST request is found in a recording: method, path with query, height header and
/// body — a POST body compared as JSON, so key order and spacing do not matter.
pub(crate) fn rest_key(
    method: &str,
    path: &str,
    height: Option<&str>,
    body: Option<&str>,
) -> RestKey {
    let body = body.filter(|b| !b.is_empty()).map(|b| {
        serde_json::from_str::<Value>(b)
            .map(|v| canonical(&v))
            .unwrap_or_else(|_| b.to_string())
    });
    (
        method.to_ascii_uppercase(),
        path.to_string(),
        height.map(str::to_string),
        body,
    )
}

/// How a JSON-RPC call is found: method and params, compared as JSON.
pub(crate) fn rpc_key(method: &str, params: &Value) -> (String, String) {
    (method.to_string(), canonical(params))
}

/// JSON text with object keys sorted: equal values, equal text.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let ordered: BTreeMap<&String, Value> =
                    map.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// A whole recording, in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub meta: Meta,
    pub blocks: BTreeMap<u64, RecordedBlock>,
    pub rest: Vec<RestExchange>,
    pub json_rpc: Vec<RpcExchange>,
}

impl Recording {
    pub fn new(chain_id: &str) -> Self {
        Recording {
            meta: Meta {
                format: FORMAT,
                chain_id: chain_id.to_string(),
                node_info: serde_json::json!({"network": chain_id}),
                from: 0,
                to: 0,
                unrecorded: Unrecorded::default(),
            },
            blocks: BTreeMap::new(),
            rest: Vec::new(),
            json_rpc: Vec::new(),
        }
    }

    /// The highest height recorded (0: none).
    pub fn tip(&self) -> u64 {
        self.blocks.keys().next_back().copied().unwrap_or(0)
    }

    /// The header at `height`: the recorded block's, or the one recorded after the block
    /// before.
    pub(crate) fn header(&self, height: u64) -> Option<&Value> {
        let own = self
            .blocks
            .get(&height)
            .map(|b| &b.block["block"]["header"])
            .filter(|h| !h.is_null());
        own.or_else(|| {
            let before = self.blocks.get(&height.checked_sub(1)?)?;
            Some(&before.next_header).filter(|h| !h.is_null())
        })
    }

    /// The tip a node serving the recording reports: its highest block, or the height after
    /// when that one's header was recorded (a follower that verifies results indexes up to
    /// the block before the tip).
    pub(crate) fn served_tip(&self) -> u64 {
        let tip = self.tip();
        match self.blocks.get(&tip) {
            Some(block) if !block.next_header.is_null() => tip + 1,
            _ => tip,
        }
    }

    /// The lowest height recorded (0: none).
    pub(crate) fn earliest(&self) -> u64 {
        self.blocks.keys().next().copied().unwrap_or(0)
    }

    /// Keeps only the heights `from..=to` (and sets the range); REST answers asked at a
    /// height above `to` go too.
    pub fn trim(&mut self, from: u64, to: u64) {
        self.blocks.retain(|h, _| (from..=to).contains(h));
        // A recorded block's own header is the one served at its height: the header after a
        // block is kept only where that height is not recorded (the range's last block).
        let recorded: std::collections::BTreeSet<u64> = self.blocks.keys().copied().collect();
        for (height, block) in &mut self.blocks {
            if recorded.contains(&(height + 1)) {
                block.next_header = Value::Null;
            }
        }
        self.rest.retain(|e| {
            e.height
                .as_deref()
                .and_then(|h| h.parse::<u64>().ok())
                .is_none_or(|h| h <= to)
        });
        self.meta.from = from;
        self.meta.to = to;
    }

    /// One answer per request — the last successful one recorded, else the last one (a
    /// late error must not replace an answer the indexing used) — and no `eth_blockNumber`
    /// (the replay node answers its own tip): what a recording keeps of a capture.
    pub fn compact(&mut self) {
        fn keep<T, K: std::hash::Hash + Eq>(
            items: &mut Vec<T>,
            key: impl Fn(&T) -> K,
            succeeded: impl Fn(&T) -> bool,
        ) {
            let mut chosen: HashMap<K, (usize, bool)> = HashMap::new();
            for (i, item) in items.iter().enumerate() {
                let ok = succeeded(item);
                let entry = chosen.entry(key(item)).or_insert((i, ok));
                if ok || !entry.1 {
                    *entry = (i, ok);
                }
            }
            let kept: std::collections::HashSet<usize> =
                chosen.into_values().map(|(i, _)| i).collect();
            let mut index = 0;
            items.retain(|_| {
                index += 1;
                kept.contains(&(index - 1))
            });
        }
        keep(&mut self.rest, RestExchange::key, |e| e.status < 400);
        self.json_rpc.retain(|e| e.method != "eth_blockNumber");
        keep(
            &mut self.json_rpc,
            |e| rpc_key(&e.method, &e.params),
            |e| e.response.get("error").is_none(),
        );
    }

    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let blocks = dir.join("blocks");
        fs::create_dir_all(&blocks)
            .with_context(|| format!("cannot create {}", blocks.display()))?;
        write_json(&dir.join("recording.json"), &self.meta)?;
        for (height, block) in &self.blocks {
            write_json(&blocks.join(format!("{height}.json")), block)?;
        }
        write_lines(&dir.join("rest.jsonl"), &self.rest)?;
        write_lines(&dir.join("json_rpc.jsonl"), &self.json_rpc)?;
        Ok(())
    }

    pub fn read(dir: &Path) -> anyhow::Result<Self> {
        let meta: Meta = read_json(&dir.join("recording.json"))?;
        anyhow::ensure!(
            meta.format == FORMAT,
            "{}: recording format {} (this build reads format {FORMAT})",
            dir.display(),
            meta.format
        );
        let mut blocks = BTreeMap::new();
        let blocks_dir = dir.join("blocks");
        for entry in fs::read_dir(&blocks_dir)
            .with_context(|| format!("cannot read {}", blocks_dir.display()))?
        {
            let path = entry?.path();
            let Some(height) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|_| path.extension().is_some_and(|e| e == "json"))
            else {
                continue;
            };
            blocks.insert(height, read_json(&path)?);
        }
        Ok(Recording {
            meta,
            blocks,
            rest: read_lines(&dir.join("rest.jsonl"))?,
            json_rpc: read_lines(&dir.join("json_rpc.jsonl"))?,
        })
    }

    /// The REST answers by request (the last one recorded for a request wins).
    /// Moved out of the recording: the replay node answers from the index alone.
    pub(crate) fn take_rest_index(&mut self) -> HashMap<RestKey, (u16, String)> {
        std::mem::take(&mut self.rest)
            .into_iter()
            .map(|e| (e.key(), (e.status, e.answer)))
            .collect()
    }

    /// The JSON-RPC responses by call (the last one recorded for a call wins).
    /// Moved out of the recording, as [`Self::take_rest_index`].
    pub(crate) fn take_rpc_index(&mut self) -> HashMap<(String, String), Value> {
        std::mem::take(&mut self.json_rpc)
            .into_iter()
            .map(|e| (rpc_key(&e.method, &e.params), e.response))
            .collect()
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_vec_pretty(value)?;
    fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<T> {
    let text = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("{} is not valid", path.display()))
}

fn write_lines<T: Serialize>(path: &Path, items: &[T]) -> anyhow::Result<()> {
    let file =
        fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut out = BufWriter::new(file);
    for item in items {
        serde_json::to_writer(&mut out, item)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// The lines of a `.jsonl` file; a missing file is an empty list.
fn read_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<Vec<T>> {
    let file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .filter(|(_, line)| line.as_ref().map_or(true, |l| !l.trim().is_empty()))
        .map(|(n, line)| {
            let line = line?;
            serde_json::from_str(&line)
                .with_context(|| format!("{} line {}: not valid", path.display(), n + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_recording_reads_back_as_written() {
        let mut recording = Recording::new("minievm-1");
        recording.blocks.insert(
            7,
            RecordedBlock {
                block: json!({"block": {"header": {"height": "7"}}}),
                block_results: json!({"height": "7"}),
                txs: vec![json!({"body": {}})],
                rest_block_id: json!({"hash": "AAAA"}),
                next_header: json!({"height": "8"}),
            },
        );
        recording.rest.push(RestExchange {
            method: "POST".into(),
            path: "/minievm/evm/v1/call".into(),
            height: Some("7".into()),
            body: Some(r#"{"b":1,"a":2}"#.into()),
            status: 200,
            answer: r#"{"response":"0x"}"#.into(),
        });
        recording.json_rpc.push(RpcExchange {
            method: "eth_getBlockReceipts".into(),
            params: json!(["0x7"]),
            response: json!({"result": []}),
        });
        recording.trim(7, 7);
        let dir = tempfile::tempdir().unwrap();
        recording.write(dir.path()).unwrap();
        assert_eq!(Recording::read(dir.path()).unwrap(), recording);
    }

    /// A late failure does not replace an answer that succeeded; a failure alone is kept.
    #[test]
    fn compaction_keeps_the_last_success_per_request() {
        let mut recording = Recording::new("c");
        let answer = |path: &str, status: u16| RestExchange {
            method: "GET".into(),
            path: path.into(),
            height: Some("5".into()),
            body: None,
            status,
            answer: status.to_string(),
        };
        recording.rest = vec![
            answer("/a", 200),
            answer("/a", 503),
            answer("/b", 404),
            answer("/b", 400),
        ];
        recording.compact();
        let kept: Vec<(&str, u16)> = recording
            .rest
            .iter()
            .map(|e| (e.path.as_str(), e.status))
            .collect();
        assert_eq!(kept, [("/a", 200), ("/b", 400)]);
    }

    #[test]
    fn bodies_match_as_json_whatever_their_key_order() {
        assert_eq!(
            rest_key("post", "/x", Some("7"), Some(r#"{"a":2, "b":1}"#)),
            rest_key("POST", "/x", Some("7"), Some(r#"{"b":1,"a":2}"#))
        );
        assert_ne!(
            rest_key("POST", "/x", Some("7"), None),
            rest_key("POST", "/x", Some("8"), None)
        );
    }

    #[test]
    fn another_format_is_refused_with_what_this_build_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut recording = Recording::new("c");
        recording.meta.format = 9;
        recording.write(dir.path()).unwrap();
        let error = Recording::read(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("format 9") && error.contains("reads format 1"),
            "{error}"
        );
    }
}
