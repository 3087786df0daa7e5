//! The client side of the daemon's admin requests (`weaver backup`): finds the running
//! daemon of a data directory by the listeners it wrote (`listeners.json`) and asks its
//! metrics listener on loopback, with the token it wrote there (`admin.token`).

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
    let bound: std::net::SocketAddr = metrics.parse()?;
    // The daemon serves admin requests to loopback clients only: ask on loopback, on the
    // port it bound (a listener on one non-loopback address cannot be asked from here).
    let addr = match bound.ip() {
        ip if ip.is_loopback() => bound,
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, bound.port()))
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, bound.port()))
        }
        ip => anyhow::bail!(
            "the metrics listener is bound to {ip} only, and admin requests are accepted from loopback: bind it to 127.0.0.1 (or 0.0.0.0) to back up"
        ),
    };
    let token = crate::admin_token::read(data_dir)?;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", token.as_str()).parse()?,
    );
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .default_headers(headers)
        .build()?;
    let url = format!("http://{addr}/admin/backup");
    let answer = client
        .post(&url)
        .header("content-type", "application/json")
        .body(serde_json::json!({"to": to.display().to_string()}).to_string())
        .send()
        .map_err(|e| anyhow::anyhow!("the daemon at {addr} did not answer: {e}"))?;
    let status = answer.status();
    let body = answer.text()?;
    if !status.is_success() {
        anyhow::bail!("the daemon answered {status}: {body}");
    }
    // Started: the copy runs in the daemon; its state says when it ends.
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let text = client
            .get(&url)
            .send()
            .map_err(|e| anyhow::anyhow!("the daemon at {addr} did not answer: {e}"))?
            .text()?;
        let state: serde_json::Value = serde_json::from_str(&text)?;
        match state["state"].as_str() {
            Some("running") => continue,
            Some("done") => return Ok(state.to_string()),
            _ => anyhow::bail!("the backup failed: {state}"),
        }
    }
}
