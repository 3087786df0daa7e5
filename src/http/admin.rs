//! Operator requests on the metrics listener, accepted from loopback only: `POST
//! /admin/backup {"to": "/abs/dir"}` copies the running store, every tree as of one instant,
//! into a new data directory (`<to>/db`) that a weaver started with `--data-dir <to>` resumes
//! from. `weaver backup --to DIR` makes the request.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::json;
use weaver_engine::store::{Store, StoreError};

use super::error::{ApiError, ApiResult};

pub struct AdminApi {
    store: Store,
    store_format: u64,
    /// A backup is running (one at a time: each reads every tree).
    busy: AtomicBool,
}

impl AdminApi {
    pub fn new(store: Store, store_format: u64) -> Self {
        AdminApi {
            store,
            store_format,
            busy: AtomicBool::new(false),
        }
    }
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    super::router::post(cfg, "/admin/backup", backup);
}

#[derive(Deserialize)]
struct BackupRequest {
    to: Option<String>,
}

/// Clears the busy flag however the backup ends.
struct Busy<'a>(&'a AtomicBool);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

async fn backup(api: web::Data<AdminApi>, req: HttpRequest, body: web::Bytes) -> ApiResult {
    // The metrics listener may face a network: only a process on this host may ask.
    if !req.peer_addr().is_some_and(|peer| peer.ip().is_loopback()) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "admin requests are accepted from loopback only",
        ));
    }
    let request: BackupRequest = super::router::parse_body(&body, &["to"], &[])?;
    let to = request
        .to
        .filter(|to| !to.is_empty())
        .ok_or_else(|| ApiError::bad_request("to is required: the directory to back up into"))?;
    let to = PathBuf::from(to);
    if !to.is_absolute() {
        return Err(ApiError::invalid_value(
            "to",
            &to.display().to_string(),
            "must be an absolute path (the daemon's working directory is not yours)",
        ));
    }
    if api.busy.swap(true, Ordering::SeqCst) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "a backup is running already",
        ));
    }
    let store_format = api.store_format;
    let api = api.into_inner();
    let target = to.clone();
    let copied = web::block(move || {
        let _busy = Busy(&api.busy);
        api.store.backup_to(&target.join("db"))
    })
    .await
    .map_err(|e| ApiError::unavailable(format!("the backup could not run: {e}"), 5))?;
    match copied {
        Ok(report) => {
            tracing::info!(to = %to.display(), trees = report.trees, keys = report.keys, seconds = report.seconds, "backup written");
            Ok(HttpResponse::Ok().json(json!({
                "to": to.display().to_string(),
                "store_format": store_format,
                "trees": report.trees,
                "keys": report.keys,
                "bytes": report.bytes,
                "seconds": report.seconds,
            })))
        }
        Err(e @ (StoreError::BackupTarget(_) | StoreError::BackupUnsupported)) => {
            Err(ApiError::bad_request(e.to_string()))
        }
        Err(e) => {
            tracing::error!(error = %e, to = %to.display(), "backup failed");
            Err(ApiError::unavailable(format!("the backup failed: {e}"), 30))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::ResponseError;

    /// The metrics listener may face a network: a backup asked from another host is refused
    /// before anything is read or written.
    #[actix_web::test]
    async fn a_backup_from_another_host_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), 8 << 20).unwrap();
        let api = web::Data::new(AdminApi::new(store, 2));
        let to = dir.path().join("copy");
        let body = web::Bytes::from(json!({"to": to.display().to_string()}).to_string());
        let request = |peer: &str| {
            actix_web::test::TestRequest::post()
                .peer_addr(peer.parse().unwrap())
                .to_http_request()
        };
        let refused = backup(api.clone(), request("10.1.2.3:5000"), body.clone())
            .await
            .unwrap_err();
        assert_eq!(refused.status_code(), StatusCode::FORBIDDEN);
        assert!(!to.exists(), "a refused backup wrote something");
        let done = backup(api, request("127.0.0.1:5000"), body).await.unwrap();
        assert_eq!(done.status(), StatusCode::OK);
        assert!(to.join("db").exists());
    }
}
