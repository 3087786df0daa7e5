//! Path normalisation before routing: trailing slashes trimmed and repeated slashes merged
//! (`/indexer//tx/v1/txs/` routes as `/indexer/tx/v1/txs`), as actix's `NormalizePath::trim`
//! does — but without its regex pass over every path: a path is scanned once and rewritten only
//! when it needs it (actix's regex was a third of the CPU of a tx-by-hash read).

use actix_web::dev::ServiceRequest;
use actix_web::http::uri::{PathAndQuery, Uri};

/// Rewrites the request's path when it has a trailing slash or a repeated one.
pub(crate) fn trim(req: &mut ServiceRequest) {
    let Some(path) = normalized(req.path()) else {
        return;
    };
    let mut parts = req.head().uri.clone().into_parts();
    let path_and_query = match parts.path_and_query.as_ref().and_then(|pq| pq.query()) {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    let Ok(path_and_query) = PathAndQuery::try_from(path_and_query) else {
        return;
    };
    parts.path_and_query = Some(path_and_query);
    let Ok(uri) = Uri::from_parts(parts) else {
        return;
    };
    // Nothing is matched yet: the router reads the new path from the start.
    req.match_info_mut().get_mut().update(&uri);
    req.head_mut().uri = uri;
}

/// The normalised path, or `None` when `path` already is (the common case: no allocation).
fn normalized(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let trailing = bytes.len() > 1 && bytes.ends_with(b"/");
    let repeated = bytes.windows(2).any(|w| w == b"//");
    if !trailing && !repeated {
        return None;
    }
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    while out.len() > 1 && out.ends_with('/') {
        out.pop();
    }
    if out.is_empty() {
        out.push('/');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_and_merges_only_when_needed() {
        for clean in ["/", "/status", "/indexer/tx/v1/txs/ABCD", ""] {
            assert_eq!(normalized(clean), None, "{clean:?}");
        }
        for (dirty, want) in [
            ("/status/", "/status"),
            ("//", "/"),
            ("///status//", "/status"),
            ("/indexer//tx/v1/txs/", "/indexer/tx/v1/txs"),
            ("/swagger/", "/swagger"),
            ("/a//b///c", "/a/b/c"),
        ] {
            assert_eq!(normalized(dirty).as_deref(), Some(want), "{dirty:?}");
        }
    }

    #[actix_web::test]
    async fn the_router_sees_the_normalised_path_and_the_query_survives() {
        use actix_web::{test, web, App, HttpRequest};
        async fn echo(req: HttpRequest, id: web::Path<String>) -> String {
            format!("{} {} {}", req.path(), id, req.query_string())
        }
        let app = test::init_service(App::new().route("/a/{id}", web::get().to(echo)).wrap_fn(
            |mut req, service| {
                trim(&mut req);
                actix_web::dev::Service::call(service, req)
            },
        ))
        .await;
        for uri in ["/a/x?q=1", "/a/x/?q=1", "//a//x//?q=1"] {
            let response =
                test::call_service(&app, test::TestRequest::get().uri(uri).to_request()).await;
            assert_eq!(test::read_body(response).await, "/a/x x q=1", "{uri}");
        }
    }
}
