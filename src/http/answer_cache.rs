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
//! A kept answer of at least [`GZIP_MIN`] bytes is also served gzip-compressed to clients
//! that accept it (`Accept-Encoding`, q-values honoured): compressed once per worker, on the
//! blocking pool when a heavy-page permit is free, the first time such a client asks for it,
//! and kept beside the plain bytes until the domain changes. A page of 100 txs shrinks ~10×. Answers
//! that are not kept, or not yet compressed while the pool is busy, go out uncompressed;
//! every answer of a cache carries `Vary: Accept-Encoding`.
//!
//! [`DomainTree::changes`]: weaver_engine::store::DomainTree::changes

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use actix_web::http::header::{self, AcceptEncoding, Encoding, Header};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use metrics::Counter;
use weaver_engine::store::DomainTree;
use weaver_engine::system::Recover;

use super::error::{json_bytes, ApiError, ApiResult};
use super::limits::HeavyPages;

/// Smaller answers are always sent as they are: compressing them saves less than a packet.
pub(crate) const GZIP_MIN: usize = 2048;

pub(crate) struct AnswerCache {
    /// Shared with the blocking job that compresses an answer, which keeps its result even
    /// if the request that asked for it has gone.
    inner: Arc<Mutex<Entries>>,
    /// Larger answers (long or deep pages) are rendered every time.
    max_answer: usize,
    max_bytes: usize,
    hits: Counter,
    misses: Counter,
    gzipped: Counter,
}

/// What a render made: an answer to keep, or one to send this time only (it may change
/// without the domain's count moving, e.g. it lacks records another domain has not indexed).
pub(crate) enum Rendered {
    Keep(Vec<u8>),
    Once(Vec<u8>),
}

impl From<Vec<u8>> for Rendered {
    fn from(body: Vec<u8>) -> Self {
        Rendered::Keep(body)
    }
}

/// One kept answer: its bytes, and the same gzip-compressed once a client has asked for that.
#[derive(Clone)]
struct Kept {
    plain: Bytes,
    gzip: Gzip,
}

/// The compressed form of a kept answer.
#[derive(Clone)]
enum Gzip {
    /// No gzip client has asked yet (or none got a compression permit).
    NotYet,
    Kept(Bytes),
    /// Compressing it gained nothing, or both forms would not fit the cache: served plain to
    /// everyone, never compressed again.
    Never,
}

impl Kept {
    fn plain(plain: Bytes) -> Self {
        Kept {
            plain,
            gzip: Gzip::NotYet,
        }
    }

    fn gzip(&self) -> Option<&Bytes> {
        match &self.gzip {
            Gzip::Kept(gzip) => Some(gzip),
            Gzip::NotYet | Gzip::Never => None,
        }
    }

    fn bytes(&self) -> usize {
        self.plain.len() + self.gzip().map_or(0, Bytes::len)
    }
}

#[derive(Default)]
struct Entries {
    /// The change count every kept answer was rendered at.
    changes: u64,
    answers: HashMap<Box<str>, Kept>,
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
    pub(crate) fn for_lists(scope: &'static str) -> Self {
        AnswerCache::with_limits(scope, 256 << 10, 4 << 20)
    }

    /// For pages of tx records (~3.8 KB each; a page of 100 is ~380 KB): answers up to 1 MiB,
    /// 8 MiB in all.
    pub(crate) fn for_record_pages(scope: &'static str) -> Self {
        AnswerCache::with_limits(scope, 1 << 20, 8 << 20)
    }

    pub(crate) fn with_limits(scope: &'static str, max_answer: usize, max_bytes: usize) -> Self {
        AnswerCache {
            inner: Arc::default(),
            max_answer,
            max_bytes,
            hits: metrics::counter!("weaver_http_kept_answers_total", "scope" => scope, "result" => "hit"),
            misses: metrics::counter!("weaver_http_kept_answers_total", "scope" => scope, "result" => "miss"),
            gzipped: metrics::counter!("weaver_http_gzip_answers_total", "scope" => scope),
        }
    }

    const MAX_ENTRIES: usize = 4096;
    /// Longer keys are not kept (a real request's path and query are far shorter).
    const MAX_KEY: usize = 1024;

    fn get(&self, key: &str, changes: u64) -> Option<Kept> {
        let mut entries = self.inner.lock().recover();
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

    /// Keeps `answer` for `key` at `changes`; false if it was not kept (too large, or rendered
    /// at another count than the cache's).
    fn put(&self, key: String, changes: u64, answer: Bytes) -> bool {
        if answer.len() > self.max_answer || key.len() > Self::MAX_KEY {
            return false;
        }
        let mut entries = self.inner.lock().recover();
        if changes != entries.changes {
            // Rendered before the domain moved on (or after: then `get` clears first).
            return false;
        }
        if entries.answers.len() >= Self::MAX_ENTRIES
            || entries.bytes + answer.len() > self.max_bytes
        {
            entries.clear();
        }
        entries.bytes += answer.len();
        if let Some(old) = entries.answers.insert(key.into(), Kept::plain(answer)) {
            entries.bytes -= old.bytes();
        }
        true
    }

    /// Keeps the compressed form of the answer kept for `key` at `changes`, if that answer is
    /// still `plain` (the same bytes that were compressed). Past the bytes bound the cache
    /// starts over with this answer, as [`AnswerCache::put`] does: refusing would leave it to
    /// be compressed again by every gzip client. An answer that does not shrink, or whose two
    /// forms would not fit even alone, is marked to be served plain from then on.
    fn put_gzip(
        inner: &Mutex<Entries>,
        max_bytes: usize,
        key: &str,
        changes: u64,
        plain: &Bytes,
        gzip: Bytes,
    ) {
        let mut entries = inner.lock().recover();
        if changes != entries.changes {
            return;
        }
        let Some(kept) = entries.answers.get_mut(key) else {
            return;
        };
        if kept.plain != *plain || !matches!(kept.gzip, Gzip::NotYet) {
            return;
        }
        if gzip.len() >= plain.len() || plain.len() + gzip.len() > max_bytes {
            kept.gzip = Gzip::Never;
            return;
        }
        let both = Kept {
            plain: plain.clone(),
            gzip: Gzip::Kept(gzip),
        };
        if entries.bytes - plain.len() + both.bytes() > max_bytes {
            entries.clear();
        } else {
            entries.bytes -= plain.len();
        }
        entries.bytes += both.bytes();
        entries.answers.insert(key.into(), both);
    }

    /// The answer to `req` kept for `domain`'s current change count, else the one `render`
    /// makes, kept for the next request unless it says otherwise.
    pub(crate) async fn answer<F, R>(
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
        let gzip_wanted = accepts_gzip(req);
        let plain = match self.get(&key, changes) {
            Some(kept) => {
                self.hits.increment(1);
                match kept.gzip {
                    Gzip::Kept(gzip) if gzip_wanted => return Ok(answer_response(gzip, true)),
                    Gzip::NotYet if gzip_wanted && kept.plain.len() >= GZIP_MIN => kept.plain,
                    _ => return Ok(answer_response(kept.plain, false)),
                }
            }
            None => {
                self.misses.increment(1);
                match render().await?.into() {
                    Rendered::Keep(body) => {
                        let plain = Bytes::from(body);
                        let kept = self.put(key.clone(), changes, plain.clone());
                        if !(kept && gzip_wanted && plain.len() >= GZIP_MIN) {
                            return Ok(answer_response(plain, false));
                        }
                        plain
                    }
                    Rendered::Once(body) => return Ok(answer_response(body.into(), false)),
                }
            }
        };
        // A kept answer a gzip client asked for first: compressed once, kept beside it.
        let Some(heavy) = req.app_data::<web::Data<HeavyPages>>() else {
            return Ok(answer_response(plain, false));
        };
        let (inner, max_bytes, gzipped) =
            (self.inner.clone(), self.max_bytes, self.gzipped.clone());
        let input = plain.clone();
        let compressed = heavy.run_if_free(move || {
            let gzip = Bytes::from(gzip(&input).ok()?);
            Self::put_gzip(&inner, max_bytes, &key, changes, &input, gzip.clone());
            gzipped.increment(1);
            Some(gzip)
        });
        match compressed.await.flatten() {
            Some(gzip) => Ok(answer_response(gzip, true)),
            None => Ok(answer_response(plain, false)),
        }
    }
}

/// A kept-cache answer: JSON, gzip-compressed or not, varying by `Accept-Encoding`.
fn answer_response(body: Bytes, gzip: bool) -> HttpResponse {
    let mut response = json_bytes(body);
    let headers = response.headers_mut();
    headers.insert(
        header::VARY,
        header::HeaderValue::from_static("accept-encoding"),
    );
    if gzip {
        headers.insert(
            header::CONTENT_ENCODING,
            header::HeaderValue::from_static("gzip"),
        );
    }
    response
}

/// Whether the client takes gzip over the plain bytes (RFC 9110 §12.5.3): gzip named with a
/// non-zero quality, not ranked below identity. A bare `*` gets the plain bytes (either is
/// allowed, and no real client sends only that); no header, or one that cannot be read, too.
fn accepts_gzip(req: &HttpRequest) -> bool {
    if !req.headers().contains_key(header::ACCEPT_ENCODING) {
        return false;
    }
    let Ok(accepted) = AcceptEncoding::parse(req) else {
        return false;
    };
    let offered = [Encoding::gzip(), Encoding::identity()];
    accepted.negotiate(offered.iter()) == Some(Encoding::gzip())
}

fn gzip(plain: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    // Level 6 (zlib's default): an answer is compressed once and then served many times.
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(plain.len() / 4),
        flate2::Compression::default(),
    );
    encoder.write_all(plain)?;
    encoder.finish()
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
        assert_eq!(
            cache.get("/b", 6).map(|kept| kept.plain).as_deref(),
            Some(b"[1]".as_slice())
        );
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

    /// A request for `uri`, with `Accept-Encoding: accept` if given, on a listener with its
    /// heavy-page pool.
    fn request(uri: &str, accept: Option<&str>) -> HttpRequest {
        let mut req = TestRequest::get()
            .uri(uri)
            .app_data(web::Data::new(HeavyPages::new(
                "test",
                2,
                1.0,
                std::time::Duration::from_secs(1),
            )));
        if let Some(accept) = accept {
            req = req.insert_header((header::ACCEPT_ENCODING, accept));
        }
        req.to_http_request()
    }

    /// A JSON page of `rows` rows, each one different (as records are).
    fn page(rows: usize) -> Vec<u8> {
        let rows: Vec<String> = (0..rows)
            .map(|n| format!("{{\"height\":\"{n}\",\"txhash\":\"{:064X}\"}}", n * 7919))
            .collect();
        format!("{{\"txs\":[{}]}}", rows.join(",")).into_bytes()
    }

    struct Served {
        body: Bytes,
        gzip: bool,
        vary: bool,
    }

    async fn serve(
        cache: &AnswerCache,
        req: &HttpRequest,
        changes: u64,
        body: &[u8],
        renders: &Cell<u32>,
    ) -> Served {
        let response = cache
            .answer_at(req, changes, || async {
                renders.set(renders.get() + 1);
                Ok::<_, ApiError>(body.to_vec())
            })
            .await
            .unwrap();
        let headers = response.headers();
        let gzip = headers.get(header::CONTENT_ENCODING).map(|v| v.as_bytes()) == Some(b"gzip");
        let vary = headers
            .get(header::VARY)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"accept-encoding"));
        Served {
            body: actix_web::body::to_bytes(response.into_body())
                .await
                .unwrap(),
            gzip,
            vary,
        }
    }

    fn gunzip(body: &[u8]) -> Vec<u8> {
        use std::io::Read;
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(body)
            .read_to_end(&mut plain)
            .unwrap();
        plain
    }

    #[actix_web::test]
    async fn a_kept_answer_is_served_gzipped_to_clients_that_accept_it() {
        let cache = AnswerCache::for_record_pages("test");
        let body = page(200);
        assert!(body.len() >= GZIP_MIN);
        let renders = Cell::new(0);
        let uri = "/txs?limit=100";
        let plain = serve(&cache, &request(uri, None), 3, &body, &renders).await;
        assert!(!plain.gzip && plain.vary);
        assert_eq!(plain.body, body);
        for accept in [
            "gzip",
            "gzip, deflate, br, zstd",
            "br;q=1, gzip;q=0.5",
            "GZIP",
        ] {
            let served = serve(&cache, &request(uri, Some(accept)), 3, &body, &renders).await;
            assert!(served.gzip && served.vary, "{accept}: not gzipped");
            assert!(
                served.body.len() < body.len() / 4,
                "{accept}: barely compressed"
            );
            assert_eq!(gunzip(&served.body), body, "{accept}");
        }
        // Rendered once; compressed once and kept beside the plain bytes.
        assert_eq!(renders.get(), 1);
        let kept = cache.get(uri, 3).unwrap();
        assert_eq!(gunzip(kept.gzip().unwrap()), body);
        assert_eq!(
            cache.inner.lock().unwrap().bytes,
            kept.plain.len() + kept.gzip().unwrap().len()
        );
        // Clients that do not take gzip still get the plain bytes.
        for accept in [
            "identity",
            "gzip;q=0",
            "br",
            "gzip;q=0.5, identity",
            "*;q=0, identity",
        ] {
            let served = serve(&cache, &request(uri, Some(accept)), 3, &body, &renders).await;
            assert!(!served.gzip && served.vary, "{accept}: gzipped");
            assert_eq!(served.body, body, "{accept}");
        }
        // The domain moved: the compressed answer goes with the plain one.
        let newer = page(201);
        let served = serve(&cache, &request(uri, Some("gzip")), 4, &newer, &renders).await;
        assert!(served.gzip);
        assert_eq!(gunzip(&served.body), newer);
        assert_eq!(renders.get(), 2);
    }

    #[actix_web::test]
    async fn small_and_unkept_answers_are_never_gzipped() {
        let cache = AnswerCache::for_lists("test");
        let renders = Cell::new(0);
        let small = page(1);
        assert!(small.len() < GZIP_MIN);
        let req = request("/small", Some("gzip"));
        for _ in 0..2 {
            let served = serve(&cache, &req, 1, &small, &renders).await;
            assert!(!served.gzip);
            assert_eq!(served.body, small);
        }
        // Larger than the cache keeps: rendered every time, sent as it is.
        let huge = page(cache.max_answer / 40);
        assert!(huge.len() > cache.max_answer);
        let served = serve(&cache, &request("/huge", Some("gzip")), 1, &huge, &renders).await;
        assert!(!served.gzip);
        assert_eq!(served.body, huge);
        // Rendered for this request only.
        let req = request("/once", Some("gzip"));
        let response = cache
            .answer_at(&req, 1, || async {
                Ok::<_, ApiError>(Rendered::Once(page(200)))
            })
            .await
            .unwrap();
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
    }

    #[actix_web::test]
    async fn without_a_free_permit_the_plain_answer_goes_out() {
        let cache = AnswerCache::for_record_pages("test");
        let renders = Cell::new(0);
        let body = page(200);
        let heavy = web::Data::new(HeavyPages::new("test", 1, 1.0, std::time::Duration::ZERO));
        let req = TestRequest::get()
            .uri("/busy")
            .insert_header((header::ACCEPT_ENCODING, "gzip"))
            .app_data(heavy.clone())
            .to_http_request();
        // The pool's only permit is held by a long page.
        let (started, release) = (
            std::sync::Arc::new(tokio::sync::Notify::new()),
            std::sync::mpsc::channel::<()>(),
        );
        let (release_tx, release_rx) = release;
        let started_in = started.clone();
        let holder = actix_web::rt::spawn(async move {
            heavy
                .run(move || {
                    started_in.notify_one();
                    release_rx.recv().ok();
                    Ok(())
                })
                .await
        });
        started.notified().await;
        let served = serve(&cache, &req, 1, &body, &renders).await;
        assert!(!served.gzip && served.vary);
        assert_eq!(served.body, body);
        release_tx.send(()).unwrap();
        holder.await.unwrap().unwrap();
        // Free again: the same kept answer is compressed for the next gzip client.
        let served = serve(&cache, &req, 1, &body, &renders).await;
        assert!(served.gzip);
        assert_eq!(renders.get(), 1);
    }

    #[actix_web::test]
    async fn a_full_cache_starts_over_rather_than_compress_a_page_again_and_again() {
        let body = page(200);
        // Room for two plain pages: the second one's compressed form does not fit beside them.
        let cache = AnswerCache::with_limits("test", 1 << 20, 2 * body.len());
        let renders = Cell::new(0);
        serve(&cache, &request("/other", None), 1, &body, &renders).await;
        let req = request("/full", Some("gzip"));
        for _ in 0..3 {
            let served = serve(&cache, &req, 1, &body, &renders).await;
            assert!(served.gzip);
            assert_eq!(gunzip(&served.body), body);
        }
        assert_eq!(renders.get(), 2);
        let entries = cache.inner.lock().unwrap();
        let kept = &entries.answers["/full?"];
        assert!(kept.gzip().is_some(), "the compressed form was not kept");
        assert!(!entries.answers.contains_key("/other?"));
        assert_eq!(entries.bytes, kept.bytes());
        assert!(entries.bytes <= cache.max_bytes);
    }

    #[actix_web::test]
    async fn a_page_whose_two_forms_cannot_fit_is_compressed_once_then_served_plain() {
        let body = page(200);
        let cache = AnswerCache::with_limits("test", 1 << 20, body.len() + 100);
        let renders = Cell::new(0);
        let req = request("/tight", Some("gzip"));
        // The first gzip client gets what was compressed for it; nobody asks for it again.
        let first = serve(&cache, &req, 1, &body, &renders).await;
        assert!(first.gzip);
        assert_eq!(gunzip(&first.body), body);
        for _ in 0..2 {
            let served = serve(&cache, &req, 1, &body, &renders).await;
            assert!(!served.gzip && served.vary);
            assert_eq!(served.body, body);
        }
        assert_eq!(renders.get(), 1);
        let entries = cache.inner.lock().unwrap();
        let kept = &entries.answers["/tight?"];
        assert!(matches!(kept.gzip, Gzip::Never));
        assert_eq!(entries.bytes, body.len());
    }

    #[actix_web::test]
    async fn a_compression_whose_client_has_gone_is_still_kept() {
        use std::time::{Duration, Instant};
        let cache = AnswerCache::for_record_pages("test");
        let body = page(200);
        let req = request("/gone", Some("gzip"));
        {
            let answer = cache.answer_at(&req, 1, || async { Ok::<_, ApiError>(body.clone()) });
            let mut answer = std::pin::pin!(answer);
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            // Polled once (rendered, compression started), then dropped: the client went away.
            let _ = answer.as_mut().poll(&mut cx);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while cache
            .get("/gone?", 1)
            .and_then(|kept| kept.gzip().cloned())
            .is_none()
        {
            assert!(
                Instant::now() < deadline,
                "the compressed answer was never kept"
            );
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
