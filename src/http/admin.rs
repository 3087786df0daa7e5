//! Operator requests on the metrics listener. `POST /admin/backup {"to": "/abs/dir"}` starts
//! a copy of the running store — every tree as of one instant — into a new data directory
//! (`<to>/db`) that a weaver started with `--data-dir <to>` resumes from; it answers 202 at
//! once (a large store takes longer than any request may), and `GET /admin/backup` says how
//! the last one went. `weaver backup --to DIR` makes the request and polls until it ends.
//!
//! No web page may reach these (a page can send requests to loopback: CSRF, and DNS
//! rebinding, where an attacker's name resolves to 127.0.0.1). [`guard`] refuses, before
//! CORS or any route runs, an admin request that:
//! - comes from a TCP peer that is not loopback;
//! - carries an `Origin` (browsers send one with every cross-origin request and every
//!   POST; the command line never does) or `Sec-Fetch-Site` other than `none`, or is a
//!   preflight — so no CORS header is ever added to an admin answer;
//! - names a `Host` that is neither a loopback name or address nor the listener's own
//!   address (a rebound name is refused);
//! - lacks the bearer token of `<data_dir>/admin.token` ([`crate::admin_token`]), which a
//!   page cannot read.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use futures_util::future::{Either, FutureExt, LocalBoxFuture};
use serde::Deserialize;
use serde_json::{json, Value};
use weaver_engine::store::{Store, StoreError};
use weaver_engine::system::Recover;

use super::error::{ApiError, ApiResult};
use crate::admin_token::AdminToken;

pub(crate) struct AdminApi {
    store: Store,
    store_format: u64,
    /// The data directory the store lives in: no backup is written inside it.
    data_dir: PathBuf,
    /// The credential every admin request must present.
    token: AdminToken,
    /// The metrics listener's configured address: a `Host` naming it is accepted.
    listen: std::net::IpAddr,
    /// The last backup's state (one runs at a time: each reads every tree).
    backup: Mutex<Value>,
}

impl AdminApi {
    pub(crate) fn new(
        store: Store,
        store_format: u64,
        data_dir: PathBuf,
        token: AdminToken,
        listen: std::net::IpAddr,
    ) -> Self {
        AdminApi {
            store,
            store_format,
            data_dir,
            token,
            listen,
            backup: Mutex::new(json!({"state": "none"})),
        }
    }
}

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
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

/// Whether `path` is an admin route (its requests go through [`guard`]).
fn is_admin(path: &str) -> bool {
    path == "/admin" || path.starts_with("/admin/")
}

/// Why an admin request is refused, if it is (see the module doc); `None` lets it through.
fn refusal(req: &HttpRequest, api: &AdminApi) -> Option<ApiError> {
    let forbidden = |message: &str| Some(ApiError::new(StatusCode::FORBIDDEN, message));
    if !req
        .peer_addr()
        .is_some_and(|peer| peer.ip().to_canonical().is_loopback())
    {
        return forbidden("admin requests are accepted from loopback only");
    }
    let headers = req.headers();
    if *req.method() == Method::OPTIONS || headers.contains_key(header::ORIGIN) {
        return forbidden(
            "admin requests are not accepted from web pages (the request carries an Origin): use `weaver backup` or curl",
        );
    }
    if headers
        .get("sec-fetch-site")
        .is_some_and(|site| site.as_bytes() != b"none")
    {
        return forbidden("admin requests are not accepted from web pages");
    }
    match headers.get(header::HOST).map(|host| host.as_bytes()) {
        Some(host) if host_is_local(host, api.listen) => {}
        _ => {
            return forbidden(
                "admin requests must name this host as localhost, a loopback address or the listener's address (Host)",
            )
        }
    }
    match headers.get(header::AUTHORIZATION) {
        Some(value) if api.token.admits(value.as_bytes()) => None,
        _ => Some(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "admin requests need the bearer token the daemon writes to <data_dir>/admin.token (readable by weaver's user only): use `weaver backup`, or curl -H \"Authorization: Bearer $(cat <data_dir>/admin.token)\"",
        )),
    }
}

/// Whether a `Host` header value names this machine's loopback (`localhost`, an address of
/// 127.0.0.0/8 or `[::1]`) or the listener's configured address `own` (the port is not
/// checked: a rebound name is refused by its name, whatever port it names).
fn host_is_local(host: &[u8], own: std::net::IpAddr) -> bool {
    let Ok(host) = std::str::from_utf8(host) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, port)) if port.is_empty() || port.starts_with(':') => v6,
            _ => return false,
        },
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match name.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.to_canonical().is_loopback() || (ip == own && !ip.is_unspecified()),
        Err(_) => false,
    }
}

/// The answer to a refused admin request (`WWW-Authenticate` with a 401).
fn refused(error: &ApiError) -> HttpResponse {
    let mut response = error.error_response();
    if error.status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
    }
    response
}

/// The admin handlers check again what [`guard`] checked: whichever way a request reached
/// them, it is refused the same (defence in depth: the guard matches paths as the router does,
/// and this holds even if a route is added that it would not see).
fn unauthorized(req: &HttpRequest, api: &AdminApi) -> Option<HttpResponse> {
    refusal(req, api).map(|error| refused(&error))
}

/// What [`guard`] answers: the inner service's answer, or a refusal made at once.
type Answer<B> = Result<ServiceResponse<EitherBody<B>>, actix_web::Error>;
pub(crate) type Guarded<B> =
    Either<LocalBoxFuture<'static, Answer<B>>, std::future::Ready<Answer<B>>>;

/// The middleware of [`refusal`], placed outside CORS (so a preflight never reaches actix-cors
/// and an admin answer never carries CORS headers) on listeners whose app holds an
/// [`AdminApi`]; other requests pass untouched.
pub(crate) fn guard<S, B>(req: ServiceRequest, service: &S) -> Guarded<B>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
    S::Future: 'static,
    B: MessageBody + 'static,
{
    // The path the router matches (`%61dmin` is `admin` to it), not the raw one.
    if is_admin(req.match_info().as_str()) {
        if let Some(api) = req.app_data::<web::Data<AdminApi>>() {
            if let Some(error) = refusal(req.request(), api) {
                let response = refused(&error);
                return Either::Right(std::future::ready(Ok(req
                    .into_response(response)
                    .map_into_right_body())));
            }
        }
    }
    Either::Left(
        service
            .call(req)
            .map(|response| response.map(ServiceResponse::map_into_left_body))
            .boxed_local(),
    )
}

#[derive(Deserialize)]
struct BackupRequest {
    to: Option<String>,
}

/// The directory a backup may be written into, from the request's `to`: an absolute, clean
/// path (no `.` or `..`, no control characters) outside the data directory, empty or absent
/// (or holding only what an interrupted backup left, which the copy replaces).
fn backup_target(to: &str, data_dir: &Path) -> Result<PathBuf, ApiError> {
    let refuse = |why: &str| {
        Err(ApiError::bad_request(format!(
            "[INVALID_VALUE] invalid value for to: {to:?} ({why})"
        )))
    };
    if to.chars().any(char::is_control) {
        return refuse("control characters are not allowed in a path");
    }
    let trimmed = if to.len() > 1 {
        to.trim_end_matches('/')
    } else {
        to
    };
    let path = PathBuf::from(trimmed);
    if !path.is_absolute() {
        return refuse("must be an absolute path (the daemon's working directory is not yours)");
    }
    let clean = path
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    // `components` drops a `.` and repeated slashes: compare with the text as sent.
    if !clean || path.components().collect::<PathBuf>().as_os_str() != trimmed {
        return refuse("must be a clean path: no `.` or `..` parts, no repeated slashes");
    }
    if path.parent().is_none() {
        return refuse("the root directory is not a backup directory");
    }
    let data_dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    if resolved(&path).starts_with(&data_dir) {
        return refuse(&format!(
            "inside the data directory {:?}: a backup goes beside the store, never into it",
            data_dir
        ));
    }
    if let Ok(entries) = std::fs::read_dir(&path) {
        let leftover = |entry: std::io::Result<std::fs::DirEntry>| {
            entry.is_ok_and(|e| e.file_name() == *BACKUP_PARTIAL)
        };
        if !entries.into_iter().all(leftover) {
            return Err(ApiError::bad_request(format!(
                "{path:?} is not empty: a backup goes into a new (or empty) directory"
            )));
        }
    } else if path.exists() {
        return Err(ApiError::bad_request(format!(
            "{path:?} is not a directory this daemon can read"
        )));
    }
    Ok(path)
}

/// What an interrupted backup leaves in its target directory (`<to>/db.partial`).
const BACKUP_PARTIAL: &str = "db.partial";

/// `path` with its existing part's symbolic links resolved (the rest appended as it is).
fn resolved(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

async fn backup_state(api: web::Data<AdminApi>, req: HttpRequest) -> ApiResult {
    if let Some(refused) = unauthorized(&req, &api) {
        return Ok(refused);
    }
    let state = api.backup.lock().recover().clone();
    Ok(HttpResponse::Ok().json(state))
}

async fn start_backup(api: web::Data<AdminApi>, req: HttpRequest, body: web::Bytes) -> ApiResult {
    if let Some(refused) = unauthorized(&req, &api) {
        return Ok(refused);
    }
    let request: BackupRequest = super::router::parse_body(&body, &["to"], &[])?;
    let to = request
        .to
        .filter(|to| !to.is_empty())
        .ok_or_else(|| ApiError::bad_request("to is required: the directory to back up into"))?;
    let to = backup_target(&to, &api.data_dir)?;
    let shown = to.display().to_string();
    let running = json!({"state": "running", "to": shown});
    {
        let mut state = api.backup.lock().recover();
        if state["state"] == "running" {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("a backup is running already (into {})", state["to"]),
            ));
        }
        *state = running.clone();
    }
    let api = api.into_inner();
    // On the blocking pool, outliving this request (its timeout does not cut the copy). A
    // copy that panics still ends the state (else every later backup would be a 409).
    let watched = api.clone();
    let copy = actix_web::rt::task::spawn_blocking(move || {
        let copied = api.store.backup_to(&to.join("db"));
        let done = match copied {
            Ok(report) => {
                // `?`: a path is the client's text, logged escaped.
                tracing::info!(to = ?to, trees = report.trees, keys = report.keys, seconds = report.seconds, "backup written");
                json!({
                    "state": "done",
                    "to": shown,
                    "store_format": api.store_format,
                    "trees": report.trees,
                    "keys": report.keys,
                    "bytes": report.bytes,
                    "seconds": report.seconds,
                })
            }
            Err(e) => {
                tracing::error!(error = %e, to = ?to, "backup failed");
                let bad_request = matches!(
                    e,
                    StoreError::BackupTarget(_) | StoreError::BackupUnsupported
                );
                json!({
                    "state": "failed",
                    "to": shown,
                    "error": e.to_string(),
                    "retry": !bad_request,
                })
            }
        };
        *api.backup.lock().recover() = done;
    });
    actix_web::rt::spawn(async move {
        if let Err(e) = copy.await {
            tracing::error!(error = %e, "backup task failed");
            let mut state = watched.backup.lock().recover();
            if state["state"] == "running" {
                let to = state["to"].clone();
                *state = json!({"state": "failed", "to": to, "error": format!("the copy stopped: {e}"), "retry": true});
            }
        }
    });
    Ok(HttpResponse::Accepted().json(running))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test as actix_test;

    struct Admin {
        dir: tempfile::TempDir,
        api: web::Data<AdminApi>,
    }

    fn admin() -> Admin {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        let store = Store::open(&data_dir.join("db"), 8 << 20).unwrap();
        let token = crate::admin_token::create(&data_dir).unwrap();
        let listen = "127.0.0.1".parse().unwrap();
        let api = web::Data::new(AdminApi::new(store, 2, data_dir, token, listen));
        Admin { dir, api }
    }

    impl Admin {
        fn bearer(&self) -> String {
            format!("Bearer {}", self.api.token.as_str())
        }

        /// A backup request as `weaver backup` sends it, from `peer`.
        fn post(&self, peer: &str, to: &str) -> actix_test::TestRequest {
            actix_test::TestRequest::post()
                .uri("/admin/backup")
                .peer_addr(peer.parse().unwrap())
                .insert_header((header::HOST, "127.0.0.1:9090"))
                .insert_header((header::AUTHORIZATION, self.bearer()))
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .set_payload(json!({"to": to}).to_string())
        }

        /// Status, headers and body of `request` on a metrics listener's app (CORS on, the
        /// defaults: any origin).
        async fn call(
            &self,
            request: actix_test::TestRequest,
        ) -> (StatusCode, header::HeaderMap, serde_json::Value) {
            let config = crate::config::LimitsConfig::default();
            let limits = crate::http::ListenerLimits::new("metrics", &config);
            let cors = crate::config::CorsConfig::default();
            let app = actix_test::init_service(
                crate::http::app("metrics", limits, &cors, routes).app_data(self.api.clone()),
            )
            .await;
            let response = actix_test::call_service(&app, request.to_request()).await;
            let (status, headers) = (response.status(), response.headers().clone());
            let body = actix_test::read_body(response).await;
            (
                status,
                headers,
                serde_json::from_slice(&body).unwrap_or(Value::Null),
            )
        }

        async fn wait_done(&self) -> Value {
            for _ in 0..1000 {
                if self.api.backup.lock().unwrap()["state"] != "running" {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            self.api.backup.lock().unwrap().clone()
        }
    }

    /// The metrics listener may face a network, and a browser on the operator's machine may
    /// run any page: each way such a page (or another host) could ask for a backup is
    /// refused before anything is read or written, with no CORS header to read the answer
    /// by; the command line's request runs.
    #[actix_web::test]
    async fn only_the_operator_with_the_token_on_loopback_starts_a_backup() {
        let admin = admin();
        let to = admin.dir.path().join("copy");
        let to_text = to.display().to_string();
        let evil = "https://evil.example";
        let cases: Vec<(&str, actix_test::TestRequest, StatusCode)> = vec![
            (
                "another host",
                admin.post("10.1.2.3:5000", &to_text),
                StatusCode::FORBIDDEN,
            ),
            (
                "a preflight",
                actix_test::TestRequest::default()
                    .method(Method::OPTIONS)
                    .uri("/admin/backup")
                    .peer_addr("127.0.0.1:5000".parse().unwrap())
                    .insert_header((header::HOST, "127.0.0.1:9090"))
                    .insert_header((header::ORIGIN, evil))
                    .insert_header((header::ACCESS_CONTROL_REQUEST_METHOD, "POST"))
                    .insert_header((header::ACCESS_CONTROL_REQUEST_HEADERS, "authorization")),
                StatusCode::FORBIDDEN,
            ),
            (
                "a page's POST (Origin)",
                admin
                    .post("127.0.0.1:5000", &to_text)
                    .insert_header((header::ORIGIN, evil)),
                StatusCode::FORBIDDEN,
            ),
            (
                "a page's POST (Sec-Fetch-Site)",
                admin
                    .post("127.0.0.1:5000", &to_text)
                    .insert_header(("sec-fetch-site", "cross-site")),
                StatusCode::FORBIDDEN,
            ),
            (
                "a rebound name (Host)",
                admin
                    .post("127.0.0.1:5000", &to_text)
                    .insert_header((header::HOST, "evil.example:9090")),
                StatusCode::FORBIDDEN,
            ),
            (
                "a percent-encoded path, no token",
                actix_test::TestRequest::post()
                    .uri("/%61dmin/backup")
                    .peer_addr("127.0.0.1:5000".parse().unwrap())
                    .insert_header((header::HOST, "127.0.0.1:9090"))
                    .insert_header((header::CONTENT_TYPE, "application/json"))
                    .set_payload(json!({"to": to_text}).to_string()),
                StatusCode::UNAUTHORIZED,
            ),
            (
                "a percent-encoded path from a page",
                admin
                    .post("127.0.0.1:5000", &to_text)
                    .uri("/adm%69n/backup")
                    .insert_header((header::ORIGIN, evil)),
                StatusCode::FORBIDDEN,
            ),
            (
                "no token",
                admin
                    .post("127.0.0.1:5000", &to_text)
                    .insert_header((header::AUTHORIZATION, "")),
                StatusCode::UNAUTHORIZED,
            ),
            (
                "a wrong token",
                admin
                    .post("127.0.0.1:5000", &to_text)
                    .insert_header((header::AUTHORIZATION, format!("Bearer {}", "0".repeat(64)))),
                StatusCode::UNAUTHORIZED,
            ),
        ];
        for (what, request, status) in cases {
            let (got, headers, body) = admin.call(request).await;
            assert_eq!(got, status, "{what}: {body}");
            assert!(body["message"].is_string(), "{what}: {body}");
            for name in headers.keys() {
                assert!(
                    !name.as_str().starts_with("access-control-"),
                    "{what}: {name} on an admin answer"
                );
            }
            assert!(!to.exists(), "{what}: a refused backup wrote something");
            assert_eq!(admin.api.backup.lock().unwrap()["state"], "none", "{what}");
        }
        // The state is the operator's business too.
        let (got, _, _) = admin
            .call(
                actix_test::TestRequest::get()
                    .uri("/admin/backup")
                    .peer_addr("127.0.0.1:5000".parse().unwrap())
                    .insert_header((header::HOST, "localhost:9090")),
            )
            .await;
        assert_eq!(got, StatusCode::UNAUTHORIZED);

        let (got, headers, body) = admin.call(admin.post("127.0.0.1:5000", &to_text)).await;
        assert_eq!(got, StatusCode::ACCEPTED, "{body}");
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
        let state = admin.wait_done().await;
        assert_eq!(state["state"], "done", "{state}");
        assert!(to.join("db").exists());
    }

    #[test]
    fn hosts_of_this_machine_are_accepted_and_others_refused() {
        let own: std::net::IpAddr = "192.0.2.10".parse().unwrap();
        for host in [
            "localhost",
            "LOCALHOST:9090",
            "127.0.0.1",
            "127.0.0.1:9090",
            "127.8.9.10:1",
            "[::1]",
            "[::1]:9090",
            "192.0.2.10:9090",
        ] {
            assert!(host_is_local(host.as_bytes(), own), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:9090",
            "localhost.evil.example",
            "192.0.2.11:9090",
            "[::1",
            "[::2]:9090",
            "0.0.0.0:9090",
            "",
        ] {
            assert!(!host_is_local(host.as_bytes(), own), "{host}");
        }
        let unspecified = "0.0.0.0".parse().unwrap();
        assert!(!host_is_local(b"0.0.0.0:9090", unspecified));
    }

    #[test]
    fn a_backup_goes_into_a_clean_absolute_empty_directory_outside_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        std::fs::create_dir_all(data_dir.join("db")).unwrap();
        let base = dir.path().display().to_string();
        let full = dir.path().join("full");
        std::fs::create_dir_all(&full).unwrap();
        std::fs::write(full.join("file"), "x").unwrap();
        let leftover = dir.path().join("leftover");
        std::fs::create_dir_all(leftover.join(BACKUP_PARTIAL)).unwrap();
        let link = dir.path().join("link");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&data_dir, &link).unwrap();
        for (to, why) in [
            ("relative/dir".to_string(), "absolute"),
            (format!("{base}/a/../data/x"), "clean"),
            (format!("{base}/./x"), "clean"),
            (format!("{base}//x"), "clean"),
            (format!("{base}/x\ny"), "control"),
            (format!("{base}/x\u{1b}[31m"), "control"),
            ("/".to_string(), "root"),
            (format!("{base}/data"), "inside the data directory"),
            (
                format!("{base}/data/backups/today"),
                "inside the data directory",
            ),
            (format!("{base}/link/x"), "inside the data directory"),
            (format!("{base}/full"), "not empty"),
        ] {
            let error = backup_target(&to, &data_dir).unwrap_err();
            assert_eq!(error.status, StatusCode::BAD_REQUEST, "{to:?}");
            assert!(error.message.contains(why), "{to:?}: {}", error.message);
            assert!(!error.message.contains('\n') && !error.message.contains('\u{1b}'));
        }
        for to in [
            format!("{base}/new"),
            format!("{base}/new/deeper/"),
            leftover.display().to_string(),
        ] {
            assert!(backup_target(&to, &data_dir).is_ok(), "{to}");
        }
    }
}
