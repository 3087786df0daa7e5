//! Prometheus metrics: the recorder, the `/metrics` listener and the per-route request
//! counters and latency histograms.

use std::sync::OnceLock;
use std::time::Duration;

use actix_web::{web, HttpResponse};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Installs the global recorder once per process and returns its handle.
pub(crate) fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
                .expect("static buckets are valid")
                .install_recorder()
                .expect("the metrics recorder is installed once");
            super::metric_help::describe_all();
            handle
        })
        .clone()
}

/// Histogram upkeep, which the exporter leaves to us when we serve `/metrics` ourselves.
pub(crate) fn spawn_upkeep(handle: PrometheusHandle) {
    actix::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tick.tick().await;
            handle.run_upkeep();
        }
    });
}

pub(crate) fn record_request(
    listener: &'static str,
    route: &'static str,
    method: &'static str,
    status: u16,
    elapsed: Duration,
) {
    metrics::counter!(
        "weaver_http_requests_total",
        "listener" => listener,
        "route" => route,
        "method" => method,
        "status" => status.to_string()
    )
    .increment(1);
    metrics::histogram!("weaver_http_request_duration_seconds", "listener" => listener, "route" => route)
        .record(elapsed.as_secs_f64());
}

async fn render(handle: web::Data<PrometheusHandle>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(handle.render())
}

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    super::get(cfg, "/metrics", render);
}
