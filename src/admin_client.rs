//! The client side of the daemon's admin requests (`weaver backup`): finds the running
//! daemon of a data directory by the listeners it wrote (`listeners.json`) and asks its
//! metrics listener on loopback.

use std::path::Path;
use std::time::Duration;

/// Asks the daemon writing `data_dir` to back its store up into `to`; the daemon's report.
pub fn backup(data_dir: &Path, to: &Path) -> anyhow::Result<String> {
    let to = if to.is_absolute() {
        to.to_path_buf()
    } else {
        std::env::current_dir()?.join(to)
    };
    let listeners = crate::boot::listeners_path(data_dir);
    let text = std::fs::read_to_string(&listeners).map_err(|e| {
        anyhow::anyhow!(
            "cannot read {} ({e}): is weaver running on this data directory? A stopped weaver's data directory can be copied as it is",
            listeners.display()
        )
    })?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    let metrics = value["metrics"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("{} names no metrics listener", listeners.display()))?;
    let mut addr: std::net::SocketAddr = metrics.parse()?;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let answer = reqwest::blocking::Client::builder()
        // A backup reads every tree: minutes for a large store.
        .timeout(Duration::from_secs(6 * 3600))
        .build()?
        .post(format!("http://{addr}/admin/backup"))
        .header("content-type", "application/json")
        .body(serde_json::json!({"to": to.display().to_string()}).to_string())
        .send()
        .map_err(|e| anyhow::anyhow!("the daemon at {addr} did not answer: {e}"))?;
    let status = answer.status();
    let body = answer.text()?;
    if !status.is_success() {
        anyhow::bail!("the daemon answered {status}: {body}");
    }
    Ok(body)
}
