//! HTTP listeners: one indexer API per chain, the router, and Prometheus metrics. Every
//! answer is JSON (errors included) except `/metrics`, which is the Prometheus text format.

pub mod error;
pub mod indexer;
pub mod metrics;
pub mod query;
pub mod router;

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::{web, App, Handler, Responder};

pub use error::ApiError;

/// Registers a GET route whose other methods answer a JSON 405.
pub fn get<F, Args>(cfg: &mut web::ServiceConfig, path: &str, handler: F)
where
    F: Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: Responder + 'static,
{
    cfg.service(
        web::resource(path)
            .route(web::get().to(handler))
            .default_service(web::to(error::not_allowed)),
    );
}

/// An App with the shared plumbing: trailing-slash normalisation, per-route request
/// metrics and a JSON 404 for unknown routes.
pub fn app(
    listener: &'static str,
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
    App::new()
        .configure(configure)
        .default_service(web::to(error::unknown_route))
        .wrap_fn(move |req, service| {
            let started = Instant::now();
            let route = req.match_pattern().unwrap_or_else(|| "unmatched".into());
            // A fixed label set: arbitrary extension methods must not create new series.
            let method = match *req.method() {
                Method::GET => "GET",
                Method::HEAD => "HEAD",
                Method::POST => "POST",
                Method::PUT => "PUT",
                Method::DELETE => "DELETE",
                Method::OPTIONS => "OPTIONS",
                Method::PATCH => "PATCH",
                _ => "other",
            };
            let response = service.call(req);
            async move {
                let response = response.await?;
                metrics::record_request(
                    listener,
                    route,
                    method,
                    response.status().as_u16(),
                    started.elapsed(),
                );
                Ok(response)
            }
        })
        .wrap(actix_web::middleware::NormalizePath::trim())
}
