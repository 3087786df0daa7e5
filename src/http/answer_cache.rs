//! Rendered answers of a domain's lists, kept for as long as the domain has not changed.
//!
//! An NFT or rich-list page is read from several records and rendered on every request, but
//! it only changes when a block changes the domain ([`DomainTree::changes`]), and the same
//! heads (a collection's first tokens, a token's top holders) are asked for again and again.
//! A kept answer is served as shared bytes, the way the tx records are. Each entry is tagged
//! with the domain's change count read *before* it was rendered, and served only while the
//! count is the same, so an answer is never older than the last indexed change.
//!
//! One cache per worker and scope (no lock shared between workers), keyed by the request's
//! path and query string. Bounded in entries and bytes: past either bound it starts over.
//! Only successful answers are kept; errors are computed every time.
//!
//! [`DomainTree::changes`]: weaver_actors::store::DomainTree::changes

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use actix_web::web::Bytes;
use actix_web::HttpRequest;

use super::error::{json_bytes, ApiError, ApiResult};

pub struct AnswerCache {
    inner: Mutex<Entries>,
    /// Larger answers (long or deep pages) are rendered every time.
    max_answer: usize,
    max_bytes: usize,
}

impl Default for AnswerCache {
    /// For lists of small rows (NFTs, holders): answers up to 256 KiB, 16 MiB in all.
    fn default() -> Self {
        AnswerCache::with_limits(256 << 10, 16 << 20)
    }
}

#[derive(Default)]
struct Entries {
    answers: HashMap<Box<str>, (u64, Bytes)>,
    bytes: usize,
}

impl AnswerCache {
    /// For pages of tx records (~3.8 KB each): a page of 100 is ~380 KB.
    pub fn for_record_pages() -> Self {
        AnswerCache::with_limits(1 << 20, 32 << 20)
    }

    pub fn with_limits(max_answer: usize, max_bytes: usize) -> Self {
        AnswerCache {
            inner: Mutex::default(),
            max_answer,
            max_bytes,
        }
    }

    const MAX_ENTRIES: usize = 4096;
    /// Longer keys are not kept (a real request's path and query are far shorter).
    const MAX_KEY: usize = 1024;

    fn get(&self, key: &str, changes: u64) -> Option<Bytes> {
        let entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (rendered_at, answer) = entries.answers.get(key)?;
        (*rendered_at == changes).then(|| answer.clone())
    }

    fn put(&self, key: String, changes: u64, answer: Bytes) {
        if answer.len() > self.max_answer || key.len() > Self::MAX_KEY {
            return;
        }
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if entries.answers.len() >= Self::MAX_ENTRIES
            || entries.bytes + answer.len() > self.max_bytes
        {
            entries.answers.clear();
            entries.bytes = 0;
        }
        entries.bytes += answer.len();
        if let Some((_, old)) = entries.answers.insert(key.into(), (changes, answer)) {
            entries.bytes -= old.len();
        }
    }

    /// The answer to `req` kept at `changes` (read from the domain before this call), else
    /// the one `render` makes, kept for the next request.
    pub async fn answer<F>(
        &self,
        req: &HttpRequest,
        changes: u64,
        render: impl FnOnce() -> F,
    ) -> ApiResult
    where
        F: Future<Output = Result<Vec<u8>, ApiError>>,
    {
        let key = key_of(req);
        if let Some(answer) = self.get(&key, changes) {
            return Ok(json_bytes(answer));
        }
        let answer = Bytes::from(render().await?);
        self.put(key, changes, answer.clone());
        Ok(json_bytes(answer))
    }
}

fn key_of(req: &HttpRequest) -> String {
    let (path, query) = (req.path(), req.query_string());
    let mut key = String::with_capacity(path.len() + 1 + query.len());
    key.push_str(path);
    key.push('?');
    key.push_str(query);
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;
    use actix_web::test::TestRequest;
    use std::cell::Cell;

    async fn body_of(cache: &AnswerCache, uri: &str, changes: u64, renders: &Cell<u32>) -> Bytes {
        let req = TestRequest::get().uri(uri).to_http_request();
        let response = cache
            .answer(&req, changes, || async {
                renders.set(renders.get() + 1);
                Ok(format!("{{\"render\":{}}}", renders.get()).into_bytes())
            })
            .await
            .unwrap();
        response.into_body().try_into_bytes().unwrap()
    }

    #[actix_web::test]
    async fn an_answer_is_kept_until_its_domain_changes() {
        let cache = AnswerCache::default();
        let renders = Cell::new(0);
        let first = body_of(&cache, "/a?limit=1", 7, &renders).await;
        assert_eq!(body_of(&cache, "/a?limit=1", 7, &renders).await, first);
        assert_eq!(renders.get(), 1);
        // Another query, another answer.
        body_of(&cache, "/a?limit=2", 7, &renders).await;
        assert_eq!(renders.get(), 2);
        // The domain changed: rendered again, and the new answer is the one kept.
        let second = body_of(&cache, "/a?limit=1", 8, &renders).await;
        assert_ne!(second, first);
        assert_eq!(body_of(&cache, "/a?limit=1", 8, &renders).await, second);
        assert_eq!(renders.get(), 3);
    }

    #[actix_web::test]
    async fn errors_are_not_kept() {
        let cache = AnswerCache::default();
        let req = TestRequest::get().uri("/a").to_http_request();
        let failed = cache
            .answer(&req, 1, || async { Err(ApiError::not_found("nothing")) })
            .await;
        assert_eq!(failed.unwrap_err().status.as_u16(), 404);
        let renders = Cell::new(0);
        body_of(&cache, "/a", 1, &renders).await;
        assert_eq!(renders.get(), 1);
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = AnswerCache::default();
        for n in 0..AnswerCache::MAX_ENTRIES + 10 {
            cache.put(format!("/k{n}"), 0, Bytes::from_static(b"{}"));
        }
        assert!(cache.inner.lock().unwrap().answers.len() <= AnswerCache::MAX_ENTRIES);
        let big = Bytes::from(vec![b' '; cache.max_answer]);
        for n in 0..(cache.max_bytes / cache.max_answer) + 3 {
            cache.put(format!("/big{n}"), 0, big.clone());
        }
        assert!(cache.inner.lock().unwrap().bytes <= cache.max_bytes);
        cache.put(
            "/huge".into(),
            0,
            Bytes::from(vec![b' '; cache.max_answer + 1]),
        );
        assert!(cache.get("/huge", 0).is_none());
        cache.put(
            "/".repeat(AnswerCache::MAX_KEY + 1),
            0,
            Bytes::from_static(b"{}"),
        );
        assert!(cache
            .get(&"/".repeat(AnswerCache::MAX_KEY + 1), 0)
            .is_none());
    }
}
