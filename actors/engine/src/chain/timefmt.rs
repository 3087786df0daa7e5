//! Timestamps in the exact text forms the wire and the API use: Go's RFC3339Nano (fraction
//! with trailing zeros trimmed, `Z`) and RFC3339 with whole seconds.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

fn datetime(ns: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(ns as i128).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn seconds_part(dt: OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        dt.month() as u8,
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

/// `2025-03-01T12:00:00.5Z` (RFC3339Nano, trailing zeros trimmed).
pub fn rfc3339_nano(ns: i64) -> String {
    let dt = datetime(ns);
    let mut out = seconds_part(dt);
    let nanos = dt.nanosecond();
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// `2025-03-01T12:00:00Z` (whole seconds).
pub fn rfc3339_seconds(ns: i64) -> String {
    let mut out = seconds_part(datetime(ns));
    out.push('Z');
    out
}

/// Parses any RFC3339 timestamp into nanoseconds since the epoch.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let dt = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    i64::try_from(dt.unix_timestamp_nanos()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go() {
        let ns = parse_rfc3339("2025-03-01T12:00:00.500Z").unwrap();
        assert_eq!(rfc3339_nano(ns), "2025-03-01T12:00:00.5Z");
        assert_eq!(rfc3339_seconds(ns), "2025-03-01T12:00:00Z");
        let whole = parse_rfc3339("2025-03-01T12:00:00Z").unwrap();
        assert_eq!(rfc3339_nano(whole), "2025-03-01T12:00:00Z");
        let fine = parse_rfc3339("2025-03-01T12:00:00.123456789Z").unwrap();
        assert_eq!(rfc3339_nano(fine), "2025-03-01T12:00:00.123456789Z");
        assert_eq!(fine - whole, 123_456_789);
    }
}
