//! HTTP listeners: one indexer API per chain, the router, and Prometheus metrics. Every
//! answer is JSON (errors included) except `/metrics`, which is the Prometheus text format,
//! and the status page `/` on the metrics listener ([`status`]), which is HTML.
//! Every listener answers CORS preflights and adds the CORS headers of `[cors]` ([`cors`]).
//! The indexer and router listeners describe themselves at `/swagger/doc.json` (OpenAPI 3.1,
//! generated from the handlers) with Swagger UI at `/swagger/` ([`openapi`]).
//!
//! Malformed request heads get JSON too: actix-http answers a head it cannot parse itself,
//! before any service runs, with an empty body (a 400, a 431 for one too large, a 408 for one
//! too slow), so every connection goes through [`wire_errors::JsonErrorIo`], which gives those
//! answers the error body (`tests/integration/malformed_heads.rs`).

pub(crate) mod admin;
pub(crate) mod anchor;
pub(crate) mod answer_cache;
pub(crate) mod balance_cache;
pub(crate) mod client;
pub(crate) mod cors;
pub(crate) mod error;
pub mod evm;
pub(crate) mod fair_pool;
pub(crate) mod fungible;
pub(crate) mod history;
pub(crate) mod indexer;
pub(crate) mod info;
pub mod limits;
mod listing;
mod metric_help;
pub(crate) mod metrics;
pub mod nft;
pub(crate) mod normalize;
pub mod openapi;
pub(crate) mod proxy_protocol;
pub(crate) mod query;
pub(crate) mod ready;
pub mod richlist;
pub mod router;
pub(crate) mod sliced_body;
pub(crate) mod status;
pub(crate) mod tracking;
pub(crate) mod wire_errors;

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Service, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method, StatusCode};
use actix_web::{web, App, Handler, HttpMessage, Responder, ResponseError};

use crate::config::CorsConfig;
pub use error::ApiError;
pub use limits::ListenerLimits;

/// The pattern a resource was registered with, kept in its app data: the `route` label of the
/// request metrics, read after routing. (actix's `match_pattern` would route the path a
/// second time, regex by regex: a tenth of the CPU of a point read.)
#[derive(Debug, Clone, Copy)]
pub struct RouteLabel(pub &'static str);

/// Registers a GET route (HEAD answers the same headers without a body) whose other
/// methods answer a JSON 405.
pub fn get<F, Args>(cfg: &mut web::ServiceConfig, path: &'static str, handler: F)
where
    F: Handler<Args> + Clone,
    Args: actix_web::FromRequest + 'static,
    F::Output: Responder + 'static,
{
    get_at(cfg, path, path, handler);
}

/// [`get`] of `pattern` (relative to a scope), labelled with its full `path`.
fn get_at<F, Args>(cfg: &mut web::ServiceConfig, pattern: &str, path: &'static str, handler: F)
where
    F: Handler<Args> + Clone,
    Args: actix_web::FromRequest + 'static,
    F::Output: Responder + 'static,
{
    cfg.service(
        web::resource(pattern)
            .app_data(RouteLabel(path))
            .route(web::get().to(handler.clone()))
            .route(web::head().to(handler))
            .default_service(web::to(error::not_allowed)),
    );
}

/// Routes under a static path `prefix`, each given with its full path. actix compares a
/// scope's prefix as a string and only then tries the scope's own patterns (each one with a
/// `{…}` is a regex run), so a request is matched against a handful of patterns, not all of
/// the listener's. A path under the prefix that no route takes is the app's JSON 404.
pub fn scope(
    cfg: &mut web::ServiceConfig,
    prefix: &'static str,
    routes: impl FnOnce(&mut Scope<'_>),
) {
    cfg.service(web::scope(prefix).configure(|inner| routes(&mut Scope { cfg: inner, prefix })));
}

pub struct Scope<'a> {
    cfg: &'a mut web::ServiceConfig,
    prefix: &'static str,
}

impl Scope<'_> {
    /// Data the scope's handlers share (per worker, like every app data).
    pub fn data<T: 'static>(&mut self, data: T) {
        self.cfg.app_data(web::Data::new(data));
    }

    /// [`get`] of `path`, which must start with the scope's prefix.
    pub fn get<F, Args>(&mut self, path: &'static str, handler: F)
    where
        F: Handler<Args> + Clone,
        Args: actix_web::FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        let pattern = path
            .strip_prefix(self.prefix)
            .unwrap_or_else(|| panic!("{path} is not under {}", self.prefix));
        get_at(self.cfg, pattern, path, handler);
    }
}

/// An error answer that is not our JSON body (one of actix's own, e.g. a payload or
/// extractor error, or a refused CORS preflight) becomes one, with the same status and the
/// headers it had (CORS headers, `Retry-After`), less those of the old body.
fn json_error<B>(response: ServiceResponse<B>) -> ServiceResponse<EitherBody<B>> {
    let status = response.status();
    if status.as_u16() < 400 || is_json(response.headers()) {
        return response.map_into_left_body();
    }
    let message = response
        .response()
        .error()
        .map(|e| e.to_string())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_lowercase());
    let mut error = ApiError::new(status, message);
    error.close =
        response.response().head().connection_type() == actix_web::http::ConnectionType::Close;
    if let Some(seconds) = response
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
    {
        error = error.retry_after(seconds);
    }
    let (request, old) = response.into_parts();
    let mut new = error.error_response();
    let own: Vec<header::HeaderName> = new.headers().keys().cloned().collect();
    for (name, value) in old.headers() {
        let body_header = *name == header::CONTENT_TYPE
            || *name == header::CONTENT_LENGTH
            || *name == header::TRANSFER_ENCODING;
        if !body_header && !own.contains(name) {
            new.headers_mut().append(name.clone(), value.clone());
        }
    }
    ServiceResponse::new(request, new).map_into_right_body()
}

fn is_json(headers: &header::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
}

/// Client errors (4xx) are the client's business: logged at debug, counted, never at error.
fn note_client_error(
    listener: &'static str,
    method: &str,
    path: &str,
    client: Option<std::net::IpAddr>,
    status: StatusCode,
    message: Option<String>,
) {
    if !status.is_client_error() {
        return;
    }
    ::metrics::counter!(
        "weaver_http_client_errors_total",
        "listener" => listener,
        "status" => status.as_str().to_string()
    )
    .increment(1);
    // Not the `message` field: that one is written as it is, and the path and the error
    // text hold what the client sent (a field other than `message` is written escaped).
    // The client as the limits found it: behind a trusted proxy, the one it named.
    let client = client.map(|ip| ip.to_string()).unwrap_or_default();
    tracing::debug!(
        listener,
        method,
        path,
        client,
        status = status.as_u16(),
        reason = message.as_deref().unwrap_or(""),
        "client error"
    );
}

/// An App with the shared plumbing: trailing-slash normalisation, the listener's
/// [`limits`], [`cors`], per-route request metrics, JSON for every error (actix's own
/// included) and a JSON 404 for unknown routes.
///
/// Order, outermost first: path normalisation, metrics and JSON errors, CORS, limits, routes.
/// CORS sits outside the limits so that their refusals (429, 413, 408, 503) carry the CORS
/// headers a page needs to read them; a preflight is answered before the limits (it reads
/// nothing and costs no more than a refusal) and is still counted in the request metrics.
pub fn app(
    listener: &'static str,
    limits: Arc<ListenerLimits>,
    cors: &CorsConfig,
    configure: impl FnOnce(&mut web::ServiceConfig),
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    // Bodies are bounded (and read) by the limits middleware; the extractors must not
    // refuse what it let through.
    let payload = web::PayloadConfig::new(
        limits
            .config
            .max_post_body_bytes
            .max(limits.config.max_body_bytes),
    );
    App::new()
        .app_data(payload)
        .app_data(limits.heavy.clone())
        .configure(configure)
        .default_service(web::to(error::unknown_route))
        .wrap(limits::Limits(limits))
        .wrap(cors::middleware(cors))
        // Outside CORS: an admin request from a page is refused before actix-cors answers
        // its preflight or marks its answer readable.
        .wrap_fn(admin::guard)
        .wrap_fn(move |req, service| {
            let started = Instant::now();
            let method = method_label(req.method());
            let response = service.call(req);
            async move {
                match response.await {
                    Ok(response) => Ok(record_answer(
                        listener,
                        method,
                        started,
                        json_error(response),
                    )),
                    Err(error) => {
                        record_failure(listener, method, started, &error);
                        Err(error)
                    }
                }
            }
        })
        .wrap_fn(|mut req, service| {
            normalize::trim(&mut req);
            service.call(req)
        })
}

/// The `method` label of the request metrics: a fixed label set, so that arbitrary
/// extension methods do not create new series.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// Counts a request that ended in an error rather than an answer (rendered by actix from
/// the error itself; ours are JSON), as `unmatched`.
fn record_failure(
    listener: &'static str,
    method: &'static str,
    started: Instant,
    error: &actix_web::Error,
) {
    let status = error.as_response_error().status_code();
    note_client_error(
        listener,
        method,
        "unmatched",
        None,
        status,
        Some(error.to_string()),
    );
    metrics::record_request(
        listener,
        "unmatched",
        method,
        status.as_u16(),
        started.elapsed(),
    );
}

/// Counts an answered request under its route (and a client error with its client), then
/// hands the answer on.
fn record_answer<B>(
    listener: &'static str,
    method: &'static str,
    started: Instant,
    response: ServiceResponse<B>,
) -> ServiceResponse<B> {
    let status = response.status();
    let route = response
        .request()
        .app_data::<RouteLabel>()
        .map_or("unmatched", |label| label.0);
    if status.is_client_error() {
        let message = response.response().error().map(|e| e.to_string());
        let client = response
            .request()
            .extensions()
            .get::<client::Client>()
            .map(|client| client.ip)
            .or_else(|| {
                response
                    .request()
                    .peer_addr()
                    .map(|a| a.ip().to_canonical())
            });
        note_client_error(
            listener,
            method,
            response.request().path(),
            client,
            status,
            message,
        );
    }
    metrics::record_request(
        listener,
        route,
        method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test;

    async fn plain_413() -> actix_web::Result<&'static str> {
        Err(actix_web::error::ErrorPayloadTooLarge("too big"))
    }

    async fn bytes(body: web::Bytes) -> String {
        body.len().to_string()
    }

    #[actix_web::test]
    async fn actix_errors_become_json_and_head_has_no_body() {
        let limits = ListenerLimits::new("test", &crate::config::LimitsConfig::default());
        let cors = CorsConfig::default();
        let app = test::init_service(app("test", limits, &cors, |cfg| {
            get(cfg, "/plain", plain_413);
            get(cfg, "/bytes", bytes);
        }))
        .await;
        let response =
            test::call_service(&app, test::TestRequest::get().uri("/plain").to_request()).await;
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(is_json(response.headers()));
        let body: serde_json::Value = test::read_body_json(response).await;
        assert_eq!(body["code"], 8);
        assert_eq!(body["message"], "too big");

        let response = test::call_service(
            &app,
            test::TestRequest::get()
                .uri("/bytes")
                .set_payload("abc")
                .to_request(),
        )
        .await;
        assert_eq!(test::read_body(response).await, "3");
        let response = test::call_service(
            &app,
            test::TestRequest::get()
                .uri("/bytes")
                .set_payload(vec![b'x'; 20 * 1024])
                .to_request(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(is_json(response.headers()));

        let response = test::call_service(
            &app,
            test::TestRequest::default()
                .method(Method::HEAD)
                .uri("/bytes")
                .to_request(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        let response =
            test::call_service(&app, test::TestRequest::post().uri("/bytes").to_request()).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
}
