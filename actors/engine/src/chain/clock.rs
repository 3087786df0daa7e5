//! The wall clock, in the unit chains use for block times.

/// Now, in nanoseconds since the Unix epoch (UTC).
pub fn now_ns() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64
}
