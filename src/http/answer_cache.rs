//! Rendered answers of a domain's lists, kept for as long as the domain has not changed.
//!
//! A page of txs, NFTs or holders is read from many records and rendered on every request,
//! but it only changes when a block changes the domain ([`DomainTree::changes`]), and the same
//! pages (the newest txs, a collection's first tokens, a token's top holders) are asked for
//! again and again. A kept answer is served as shared bytes, the way single records are.
//!
//! Each cache serves one domain. It holds answers rendered at one change count only: the
//! count read *before* rendering. A higher count seen on any request empties it, and an answer
//! rendered at a lower count is not kept, so a kept answer is never older than the last
//! change the domain published, and answers of earlier counts do not hold memory.
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
use metrics::Counter;
use weaver_actors::store::DomainTree;

use super::error::{json_bytes, ApiError, ApiResult};

pub struct AnswerCache {
    inner: Mutex<Entries>,
    /// Larger answers (long or deep pages) are rendered every time.
    max_answer: usize,
    max_bytes: usize,
    hits: Counter,
    misses: Counter,
}

/// What a render made: an answer to keep, or one to send this time only (it may change
/// without the domain's count moving, e.g. it lacks records another domain has not indexed).
pub enum Rendered {
    Keep(Vec<u8>),
    Once(Vec<u8>),
}

impl From<Vec<u8>> for Rendered {
    fn from(body: Vec<u8>) -> Self {
        Rendered::Keep(body)
    }
}

#[derive(Default)]
struct Entries {
    /// The change count every kept answer was rendered at.
    changes: u64,
    answers: HashMap<Box<str>, Bytes>,
    bytes: usize,
}

impl Entries {
    fn clear(&mut self) {
        self.answers.clear();
        self.bytes = 0;
    }
}

impl AnswerCache {
    /// For lists of small rows (NFTs, holders): answers up to 256 KiB, 4 MiB in all.
    pub fn for_lists(scope: &'static str) -> Self {
        AnswerCache::with_limits(scope, 256 << 10, 4 << 20)
    }

    /// For pages of tx records (~3.8 KB each; a page of 100 is ~380 KB): answers up to 1 MiB,
    /// 8 MiB in all.
    pub fn for_record_pages(scope: &'static str) -> Self {
        AnswerCache::with_limits(scope, 1 << 20, 8 << 20)
    }

    pub fn with_limits(scope: &'static str, max_answer: usize, max_bytes: usize) -> Self {
        AnswerCache {
            inner: Mutex::default(),
            max_answer,
            max_bytes,
            hits: metrics::counter!("weaver_http_kept_answers_total", "scope" => scope, "result" => "hit"),
            misses: metrics::counter!("weaver_http_kept_answers_total", "scope" => scope, "result" => "miss"),
        }
    }

    const MAX_ENTRIES: usize = 4096;
    /// Longer keys are not kept (a real request's path and query are far shorter).
    const MAX_KEY: usize = 1024;

    fn get(&self, key: &str, changes: u64) -> Option<Bytes> {
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if changes > entries.changes {
            entries.clear();
            entries.changes = changes;
            return None;
        }
        if changes < entries.changes {
            return None;
        }
        entries.answers.get(key).cloned()
    }

    fn put(&self, key: String, changes: u64, answer: Bytes) {
        if answer.len() > self.max_answer || key.len() > Self::MAX_KEY {
            return;
        }
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if changes != entries.changes {
            // Rendered before the domain moved on (or after: then `get` clears first).
            return;
        }
        if entries.answers.len() >= Self::MAX_ENTRIES
            || entries.bytes + answer.len() > self.max_bytes
        {
            entries.clear();
        }
        entries.bytes += answer.len();
        if let Some(old) = entries.answers.insert(key.into(), answer) {
            entries.bytes -= old.len();
        }
    }

    /// The answer to `req` kept for `domain`'s current change count, else the one `render`
    /// makes, kept for the next request unless it says otherwise.
    pub async fn answer<F, R>(
        &self,
        req: &HttpRequest,
        domain: &DomainTree,
        render: impl FnOnce() -> F,
    ) -> ApiResult
    where
        F: Future<Output = Result<R, ApiError>>,
        R: Into<Rendered>,
    {
        // Read before rendering: an answer may be newer than its count, never older.
        self.answer_at(req, domain.changes(), render).await
    }

    async fn answer_at<F, R>(
        &self,
        req: &HttpRequest,
        changes: u64,
        render: impl FnOnce() -> F,
    ) -> ApiResult
    where
        F: Future<Output = Result<R, ApiError>>,
        R: Into<Rendered>,
    {
        let key = key_of(req);
        if let Some(answer) = self.get(&key, changes) {
            self.hits.increment(1);
            return Ok(json_bytes(answer));
        }
        self.misses.increment(1);
        match render().await?.into() {
            Rendered::Keep(body) => {
                let answer = Bytes::from(body);
                self.put(key, changes, answer.clone());
                Ok(json_bytes(answer))
            }
            Rendered::Once(body) => Ok(json_bytes(body)),
        }
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
            .answer_at(&req, changes, || async {
                renders.set(renders.get() + 1);
                Ok::<_, ApiError>(format!("{{\"render\":{}}}", renders.get()).into_bytes())
            })
            .await
            .unwrap();
        response.into_body().try_into_bytes().unwrap()
    }

    #[actix_web::test]
    async fn an_answer_is_kept_until_its_domain_changes() {
        let cache = AnswerCache::for_lists("test");
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

    #[test]
    fn a_higher_count_retires_every_kept_answer_and_a_late_render_is_not_kept() {
        let cache = AnswerCache::for_lists("test");
        cache.get("/a", 5);
        cache.put("/a".into(), 5, Bytes::from_static(b"{}"));
        cache.put("/b".into(), 5, Bytes::from_static(b"[]"));
        assert!(cache.get("/a", 5).is_some());
        assert!(cache.get("/b", 6).is_none());
        let entries = cache.inner.lock().unwrap();
        assert!(entries.answers.is_empty(), "answers of count 5 still held");
        assert_eq!(entries.bytes, 0);
        drop(entries);
        // Rendered at 5, finished after a request saw 6: not kept, and 6's answers stay.
        cache.put("/b".into(), 6, Bytes::from_static(b"[1]"));
        cache.put("/a".into(), 5, Bytes::from_static(b"{}"));
        assert!(cache.get("/a", 6).is_none());
        assert_eq!(cache.get("/b", 6).as_deref(), Some(b"[1]".as_slice()));
        // An older reader does not see the newer answer.
        assert!(cache.get("/b", 5).is_none());
    }

    #[actix_web::test]
    async fn an_answer_rendered_once_is_not_kept() {
        let cache = AnswerCache::for_lists("test");
        let req = TestRequest::get().uri("/a").to_http_request();
        for _ in 0..2 {
            cache
                .answer_at(&req, 1, || async {
                    Ok::<_, ApiError>(Rendered::Once(b"{}".to_vec()))
                })
                .await
                .unwrap();
        }
        assert!(cache.get("/a", 1).is_none());
    }

    #[actix_web::test]
    async fn errors_are_not_kept() {
        let cache = AnswerCache::for_lists("test");
        let req = TestRequest::get().uri("/a").to_http_request();
        let failed = cache
            .answer_at(&req, 1, || async {
                Err::<Vec<u8>, _>(ApiError::not_found("nothing"))
            })
            .await;
        assert_eq!(failed.unwrap_err().status.as_u16(), 404);
        let renders = Cell::new(0);
        body_of(&cache, "/a", 1, &renders).await;
        assert_eq!(renders.get(), 1);
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = AnswerCache::for_lists("test");
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
