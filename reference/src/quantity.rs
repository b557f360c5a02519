//! placeholder (temporary stub until the real parser lands)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad quantity")]
pub struct QuantityError;
pub fn parse_milli(s: &str) -> Result<i64, QuantityError> {
    if let Some(m) = s.strip_suffix('m') { return m.parse().map_err(|_| QuantityError); }
    s.parse::<f64>().map(|v| (v * 1000.0).ceil() as i64).map_err(|_| QuantityError)
}
pub fn milli_of(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> Result<i64, QuantityError> { parse_milli(&q.0) }
pub fn as_f64(s: &str) -> Result<f64, QuantityError> { parse_milli(s).map(|m| m as f64 / 1000.0) }
pub fn format_milli_decimal(m: i64) -> String { if m % 1000 == 0 { format!("{}", m / 1000) } else { format!("{m}m") } }
pub fn format_milli_binary(m: i64) -> String { format_milli_decimal(m) }
