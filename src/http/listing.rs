//! The shell every kept list page shares: its request, the listener's answer cache and its
//! pool for heavy pages, taken by one extractor. A list handler takes its API, its path and a
//! [`Listing`], and says only how its page is read.

use std::future::{ready, Future, Ready};

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpRequest};
use weaver_engine::store::DomainTree;

use super::answer_cache::{AnswerCache, Rendered};
use super::error::{ApiError, ApiResult};
use super::limits::HeavyPages;

/// A list request on an indexer listener, with what answering it needs.
pub(crate) struct Listing {
    req: HttpRequest,
    cache: web::Data<AnswerCache>,
    heavy: web::Data<HeavyPages>,
}

impl Listing {
    /// The answer kept for this request while `domain` has not changed, or `render`'s.
    pub(crate) async fn answer<F, R>(
        &self,
        domain: &DomainTree,
        render: impl FnOnce() -> F,
    ) -> ApiResult
    where
        F: Future<Output = Result<R, ApiError>>,
        R: Into<Rendered>,
    {
        self.cache.answer(&self.req, domain, render).await
    }

    /// The request's query string (its pagination and filters).
    pub(crate) fn query(&self) -> &str {
        self.req.query_string()
    }

    pub(crate) fn request(&self) -> &HttpRequest {
        &self.req
    }

    /// Where a heavy page (long, deep or filtered row by row) is rendered.
    pub(crate) fn heavy(&self) -> &HeavyPages {
        &self.heavy
    }
}

impl FromRequest for Listing {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let cache = req.app_data::<web::Data<AnswerCache>>().cloned();
        let heavy = req.app_data::<web::Data<HeavyPages>>().cloned();
        ready(match (cache, heavy) {
            (Some(cache), Some(heavy)) => Ok(Listing {
                req: req.clone(),
                cache,
                heavy,
            }),
            _ => Err(ApiError::internal(
                "a list route on a listener without its answer cache or heavy-page pool",
            )),
        })
    }
}
