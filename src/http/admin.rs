//! Operator requests on the metrics listener, accepted from loopback only. `POST
//! /admin/backup {"to": "/abs/dir"}` starts a copy of the running store — every tree as of one
//! instant — into a new data directory (`<to>/db`) that a weaver started with `--data-dir <to>`
//! resumes from; it answers 202 at once (a large store takes longer than any request may),
//! and `GET /admin/backup` says how the last one went. `weaver backup --to DIR` makes the
//! request and polls until it ends.

use std::path::PathBuf;
use std::sync::Mutex;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};
use weaver_engine::store::{Store, StoreError};
use weaver_engine::system::Recover;

use super::error::{ApiError, ApiResult};

pub struct AdminApi {
    store: Store,
    store_format: u64,
    /// The last backup's state (one runs at a time: each reads every tree).
    backup: Mutex<Value>,
}

impl AdminApi {
    pub fn new(store: Store, store_format: u64) -> Self {
        AdminApi {
            store,
            store_format,
            backup: Mutex::new(json!({"state": "none"})),
        }
    }
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/admin/backup")
            .app_data(super::RouteLabel("/admin/backup"))
            .route(web::get().to(backup_state))
            .route(
                web::post()
                    .guard(actix_web::guard::fn_guard(super::router::is_json))
                    .to(start_backup),
            )
            .default_service(web::to(super::error::not_allowed)),
    );
}

#[derive(Deserialize)]
struct BackupRequest {
    to: Option<String>,
}

/// Only a process on this host may ask: the metrics listener may face a network.
fn loopback_only(req: &HttpRequest) -> Result<(), ApiError> {
    if req.peer_addr().is_some_and(|peer| peer.ip().is_loopback()) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "admin requests are accepted from loopback only",
        ))
    }
}

async fn backup_state(api: web::Data<AdminApi>, req: HttpRequest) -> ApiResult {
    loopback_only(&req)?;
    let state = api.backup.lock().recover().clone();
    Ok(HttpResponse::Ok().json(state))
}

async fn start_backup(api: web::Data<AdminApi>, req: HttpRequest, body: web::Bytes) -> ApiResult {
    loopback_only(&req)?;
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
    {
        let mut state = api.backup.lock().recover();
        if state["state"] == "running" {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("a backup is running already (into {})", state["to"]),
            ));
        }
        if to.exists()
            && std::fs::read_dir(&to)
                .map(|mut entries| entries.next().is_some())
                .unwrap_or(true)
        {
            return Err(ApiError::bad_request(format!(
                "{} is not empty: a backup goes into a new (or empty) directory",
                to.display()
            )));
        }
        *state = json!({"state": "running", "to": to.display().to_string()});
    }
    let api = api.into_inner();
    let running = json!({"state": "running", "to": to.display().to_string()});
    // On the blocking pool, outliving this request (its timeout does not cut the copy).
    actix_web::rt::task::spawn_blocking(move || {
        let copied = api.store.backup_to(&to.join("db"));
        let done = match copied {
            Ok(report) => {
                tracing::info!(to = %to.display(), trees = report.trees, keys = report.keys, seconds = report.seconds, "backup written");
                json!({
                    "state": "done",
                    "to": to.display().to_string(),
                    "store_format": api.store_format,
                    "trees": report.trees,
                    "keys": report.keys,
                    "bytes": report.bytes,
                    "seconds": report.seconds,
                })
            }
            Err(e) => {
                tracing::error!(error = %e, to = %to.display(), "backup failed");
                let bad_request = matches!(
                    e,
                    StoreError::BackupTarget(_) | StoreError::BackupUnsupported
                );
                json!({
                    "state": "failed",
                    "to": to.display().to_string(),
                    "error": e.to_string(),
                    "retry": !bad_request,
                })
            }
        };
        *api.backup.lock().recover() = done;
    });
    Ok(HttpResponse::Accepted().json(running))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::ResponseError;

    fn request(peer: &str) -> HttpRequest {
        actix_web::test::TestRequest::post()
            .peer_addr(peer.parse().unwrap())
            .to_http_request()
    }

    /// The metrics listener may face a network: a backup asked from another host is refused
    /// before anything is read or written; from loopback it runs, and its state says when
    /// it is done.
    #[actix_web::test]
    async fn a_backup_from_another_host_is_refused_and_one_from_loopback_runs() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), 8 << 20).unwrap();
        let api = web::Data::new(AdminApi::new(store, 2));
        let to = dir.path().join("copy");
        let body = web::Bytes::from(json!({"to": to.display().to_string()}).to_string());
        let refused = start_backup(api.clone(), request("10.1.2.3:5000"), body.clone())
            .await
            .unwrap_err();
        assert_eq!(refused.status_code(), StatusCode::FORBIDDEN);
        assert!(backup_state(api.clone(), request("10.1.2.3:5000"))
            .await
            .is_err());
        assert!(!to.exists(), "a refused backup wrote something");
        let started = start_backup(api.clone(), request("127.0.0.1:5000"), body)
            .await
            .unwrap();
        assert_eq!(started.status(), StatusCode::ACCEPTED);
        for _ in 0..500 {
            if api.backup.lock().unwrap()["state"] != "running" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let state = api.backup.lock().unwrap().clone();
        assert_eq!(state["state"], "done", "{state}");
        assert!(to.join("db").exists());
    }
}
