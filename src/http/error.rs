//! The one error body every listener answers with: `{"code", "message", "details"}`, where
//! `code` is the gRPC status code matching the HTTP status (as grpc-gateway, the KV indexer
//! and the Skip API do).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// Seconds for a `Retry-After` header (429, 503).
    pub retry_after: Option<u64>,
    /// Close the connection after this answer (its body was not, or not wholly, read).
    pub close: bool,
}

/// The error body of every listener.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub(crate) struct ErrorBody<'a> {
    /// The gRPC status code matching the HTTP status (3 invalid argument, 5 not found, …).
    code: u16,
    message: &'a str,
    /// Always `[]`.
    #[schema(value_type = Vec<Object>)]
    details: [(); 0],
}

impl ApiError {
    /// An error with `status` and `message` (no `Retry-After`, connection kept).
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
            close: false,
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    pub(crate) fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
    }

    /// 429 with `Retry-After` (rate limit, connection cap).
    pub(crate) fn too_many_requests(message: impl Into<String>, retry_after_secs: u64) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, message).retry_after(retry_after_secs)
    }

    /// 503 with `Retry-After` (busy, or the request ran out of time).
    pub fn unavailable(message: impl Into<String>, retry_after_secs: u64) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, message).retry_after(retry_after_secs)
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds.max(1));
        self
    }

    /// Answers and closes the connection (used when the body is left unread).
    pub fn closing(mut self) -> Self {
        self.close = true;
        self
    }

    /// A fault of ours: the cause is logged, the client gets a generic message.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error while serving a request");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
    }

    /// `[INVALID_VALUE] invalid value for <what>: <value> (<why>)`, the reference wording.
    pub(crate) fn invalid_value(what: &str, value: &str, why: &str) -> Self {
        Self::bad_request(format!(
            "[INVALID_VALUE] invalid value for {what}: {value} ({why})"
        ))
    }

    /// gRPC status code for the HTTP status.
    pub(crate) fn grpc_code(&self) -> u16 {
        match self.status.as_u16() {
            400 => 3,
            401 => 16,
            403 => 7,
            404 => 5,
            405 => 12,
            408 => 4,
            409 => 6,
            413 => 8,
            429 => 8,
            431 => 8,
            503 => 14,
            504 => 4,
            _ => 13,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut builder = HttpResponse::build(self.status);
        if let Some(seconds) = self.retry_after {
            builder.insert_header((actix_web::http::header::RETRY_AFTER, seconds.to_string()));
        }
        if self.close {
            builder.force_close();
        }
        builder.json(self.error_body())
    }
}

impl ApiError {
    fn error_body(&self) -> ErrorBody<'_> {
        ErrorBody {
            code: self.grpc_code(),
            message: &self.message,
            details: [],
        }
    }

    /// The JSON error body, as bytes.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&self.error_body()).expect("an error body serialises")
    }
}

impl From<weaver_engine::store::StoreError> for ApiError {
    fn from(e: weaver_engine::store::StoreError) -> Self {
        match e {
            // The disk, not us: a read the disk refused (a full or failing disk). Say so and
            // when to retry.
            io if io.is_io() => {
                tracing::warn!(error = %io, "store read failed with an IO error");
                metrics::counter!("weaver_store_read_errors_total").increment(1);
                ApiError::unavailable("storage is temporarily unavailable", 5)
            }
            other => ApiError::internal(other),
        }
    }
}

/// Default service: unknown routes are a JSON 404.
pub(crate) async fn unknown_route(req: actix_web::HttpRequest) -> HttpResponse {
    ApiError::not_found(format!("Cannot {} {}", req.method(), req.path())).error_response()
}

pub(crate) async fn not_allowed() -> HttpResponse {
    ApiError::method_not_allowed().error_response()
}

pub(crate) type ApiResult = Result<HttpResponse, ApiError>;

/// A 200 `application/json` response from already-serialized bytes (a large one handed to
/// actix-http in slices: [`super::sliced_body`]).
pub(crate) fn json_bytes(body: impl Into<actix_web::web::Bytes>) -> HttpResponse {
    let body = body.into();
    let mut response = HttpResponse::Ok();
    response.content_type("application/json");
    if body.len() > super::sliced_body::SLICE {
        response.body(super::sliced_body::SlicedBody::new(body))
    } else {
        response.body(body)
    }
}
