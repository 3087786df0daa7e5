//! CORS on every listener, from `[cors]` (see [`CorsConfig`]), by actix-cors: preflight
//! `OPTIONS` requests are answered here (a refused one is a JSON 400), and every other answer —
//! errors and limit refusals included — carries `Access-Control-Allow-Origin` when the
//! request's `Origin` is allowed. Credentials are never allowed.

use actix_cors::Cors;
use actix_web::middleware::Condition;

use crate::config::CorsConfig;

/// The middleware of one worker (actix-cors is not `Send`: built per App); a no-op when
/// `cors.enabled` is false. The config has been validated ([`CorsConfig`]), so the builder
/// cannot fail (actix-cors would only log a bad value and refuse to start the worker).
pub(crate) fn middleware(config: &CorsConfig) -> Condition<Cors> {
    Condition::new(config.enabled, build(config))
}

fn is_all(values: &[String]) -> bool {
    values.iter().any(|v| v == "*")
}

fn build(config: &CorsConfig) -> Cors {
    let mut cors = Cors::default();
    if is_all(&config.allowed_origins) {
        cors = cors.allow_any_origin().send_wildcard();
    } else {
        for origin in &config.allowed_origins {
            // Browsers send scheme and host in lower case.
            cors = cors.allowed_origin(&origin.to_ascii_lowercase());
        }
    }
    cors = if is_all(&config.allowed_methods) {
        cors.allow_any_method()
    } else {
        cors.allowed_methods(config.allowed_methods.iter().map(String::as_str))
    };
    cors = if is_all(&config.allowed_headers) {
        cors.allow_any_header()
    } else {
        cors.allowed_headers(config.allowed_headers.iter().map(String::as_str))
    };
    if is_all(&config.expose_headers) {
        cors = cors.expose_any_header();
    } else if !config.expose_headers.is_empty() {
        cors = cors.expose_headers(config.expose_headers.iter().map(String::as_str));
    }
    cors.max_age(Some(config.max_age_secs as usize))
}

#[cfg(test)]
mod tests {
    use actix_web::http::{header, Method, StatusCode};
    use actix_web::{test, web, HttpResponse};

    use super::*;
    use crate::config::LimitsConfig;
    use crate::http::ListenerLimits;

    async fn ok() -> HttpResponse {
        HttpResponse::Ok().json(serde_json::json!({"ok": true}))
    }

    async fn plain_413() -> actix_web::Result<&'static str> {
        Err(actix_web::error::ErrorPayloadTooLarge("too big"))
    }

    /// Status, headers and body of `request` against an app with `config`.
    async fn call(
        config: &CorsConfig,
        request: test::TestRequest,
    ) -> (StatusCode, header::HeaderMap, web::Bytes) {
        let limits = ListenerLimits::new("test", &LimitsConfig::default());
        let app = test::init_service(crate::http::app("test", limits, config, |cfg| {
            crate::http::get(cfg, "/ok", ok);
            crate::http::get(cfg, "/plain", plain_413);
        }))
        .await;
        let response = test::call_service(&app, request.to_request()).await;
        let (status, headers) = (response.status(), response.headers().clone());
        (status, headers, test::read_body(response).await)
    }

    fn preflight(path: &str, origin: &str) -> test::TestRequest {
        test::TestRequest::default()
            .method(Method::OPTIONS)
            .uri(path)
            .insert_header((header::ORIGIN, origin))
            .insert_header((header::ACCESS_CONTROL_REQUEST_METHOD, "GET"))
            .insert_header((header::ACCESS_CONTROL_REQUEST_HEADERS, "content-type"))
    }

    fn get(path: &str, origin: &str) -> test::TestRequest {
        test::TestRequest::get()
            .uri(path)
            .insert_header((header::ORIGIN, origin))
    }

    fn value(headers: &header::HeaderMap, name: header::HeaderName) -> &str {
        headers
            .get(&name)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }

    fn json(body: &[u8]) -> serde_json::Value {
        serde_json::from_slice(body).unwrap()
    }

    /// InterwovenKit sends `InterwovenKit-Version` on its router requests (since February
    /// 2026), and the Skip client its own headers: the default config's preflight allows them,
    /// echoed back (issue #40).
    #[actix_web::test]
    async fn the_default_preflight_allows_wallet_sdk_headers() {
        let config = CorsConfig::default();
        let request = test::TestRequest::default()
            .method(Method::OPTIONS)
            .uri("/ok")
            .insert_header((header::ORIGIN, "https://app.initia.xyz"))
            .insert_header((header::ACCESS_CONTROL_REQUEST_METHOD, "POST"))
            .insert_header((
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                "content-type,interwovenkit-version",
            ));
        let (status, headers, _) = call(&config, request).await;
        assert_eq!(status, StatusCode::OK);
        let allowed = value(&headers, header::ACCESS_CONTROL_ALLOW_HEADERS).to_ascii_lowercase();
        assert!(allowed.contains("interwovenkit-version"), "{allowed}");
        assert_eq!(value(&headers, header::ACCESS_CONTROL_ALLOW_ORIGIN), "*");
    }

    #[actix_web::test]
    async fn defaults_answer_preflights_and_mark_every_answer() {
        let config = CorsConfig::default();
        let (status, headers, _) = call(&config, preflight("/ok", "https://app.example")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(value(&headers, header::ACCESS_CONTROL_ALLOW_ORIGIN), "*");
        let methods = value(&headers, header::ACCESS_CONTROL_ALLOW_METHODS);
        for method in ["GET", "POST", "OPTIONS"] {
            assert!(methods.contains(method), "{methods}");
        }
        assert_eq!(
            value(&headers, header::ACCESS_CONTROL_ALLOW_HEADERS),
            "content-type"
        );
        assert_eq!(value(&headers, header::ACCESS_CONTROL_MAX_AGE), "3600");
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_CREDENTIALS));

        // A preflight for a route that does not exist is answered too (the route 404s later).
        let (status, _, _) = call(&config, preflight("/nope", "https://app.example")).await;
        assert_eq!(status, StatusCode::OK);

        let (status, headers, _) = call(&config, get("/ok", "https://app.example")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(value(&headers, header::ACCESS_CONTROL_ALLOW_ORIGIN), "*");
        assert_eq!(
            value(&headers, header::ACCESS_CONTROL_EXPOSE_HEADERS),
            "retry-after"
        );

        // Errors: ours (404) and actix's own made JSON (413) keep the CORS headers.
        for (path, expected) in [("/nope", 404), ("/plain", 413)] {
            let (status, headers, body) = call(&config, get(path, "https://app.example")).await;
            assert_eq!(status.as_u16(), expected, "{path}");
            assert_eq!(
                value(&headers, header::ACCESS_CONTROL_ALLOW_ORIGIN),
                "*",
                "{path}"
            );
            assert!(value(&headers, header::CONTENT_TYPE).starts_with("application/json"));
            assert!(json(&body)["code"].is_number(), "{path}");
        }

        // A plain OPTIONS (no Access-Control-Request-Method) is no preflight: JSON 405.
        let plain = test::TestRequest::default()
            .method(Method::OPTIONS)
            .uri("/ok")
            .insert_header((header::ORIGIN, "https://app.example"));
        let (status, headers, body) = call(&config, plain).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(json(&body)["code"], 12);
        assert_eq!(value(&headers, header::ACCESS_CONTROL_ALLOW_ORIGIN), "*");
    }

    #[actix_web::test]
    async fn restricted_origins_are_echoed_and_others_get_nothing() {
        let config = CorsConfig {
            allowed_origins: vec!["https://App.example".into()],
            ..CorsConfig::default()
        };
        let (status, headers, _) = call(&config, preflight("/ok", "https://app.example")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            value(&headers, header::ACCESS_CONTROL_ALLOW_ORIGIN),
            "https://app.example"
        );
        assert!(value(&headers, header::VARY).contains("Origin"));

        let (status, headers, body) = call(&config, preflight("/ok", "https://evil.example")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(value(&headers, header::CONTENT_TYPE).starts_with("application/json"));
        assert_eq!(json(&body)["code"], 3);
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));

        // The request itself is served (CORS is the browser's to enforce), without the header.
        let (status, headers, _) = call(&config, get("/ok", "https://evil.example")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));

        // A method the config does not list is refused at preflight.
        let put = preflight("/ok", "https://app.example")
            .insert_header((header::ACCESS_CONTROL_REQUEST_METHOD, "PUT"));
        let (status, _, body) = call(&config, put).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(json(&body)["code"], 3);
    }

    #[actix_web::test]
    async fn disabled_means_no_headers_and_no_preflight() {
        let config = CorsConfig {
            enabled: false,
            ..CorsConfig::default()
        };
        let (status, headers, body) = call(&config, preflight("/ok", "https://app.example")).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(json(&body)["code"], 12);
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
        let (status, headers, _) = call(&config, get("/ok", "https://app.example")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
    }
}
