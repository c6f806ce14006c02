//! Kubernetes resource quantities (`500m`, `2`, `64Mi`, `1G`, `1e3`) as the numbers Docker
//! wants: memory in bytes, CPU in nano-CPUs.

/// Bytes for a memory quantity, or `None` when it does not parse.
pub fn memory_bytes(q: &str) -> Option<i64> {
    let q = q.trim();
    const SUFFIXES: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
        ("m", 1e-3),
    ];
    let (num, mult) = SUFFIXES
        .iter()
        .find_map(|(s, m)| q.strip_suffix(s).map(|n| (n, *m)))
        .unwrap_or((q, 1.0));
    let v: f64 = num.parse().ok()?;
    (v >= 0.0).then(|| (v * mult).ceil() as i64)
}

/// Nano-CPUs for a CPU quantity (`500m` → 500 000 000), or `None`.
pub fn cpu_nanos(q: &str) -> Option<i64> {
    let q = q.trim();
    let cores: f64 = match q.strip_suffix('m') {
        Some(milli) => milli.parse::<f64>().ok()? / 1000.0,
        None => q.parse().ok()?,
    };
    (cores > 0.0).then(|| (cores * 1e9).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(memory_bytes("64Mi"), Some(64 << 20));
        assert_eq!(memory_bytes("1G"), Some(1_000_000_000));
        assert_eq!(memory_bytes("1e3"), Some(1000));
        assert_eq!(memory_bytes("12"), Some(12));
        assert_eq!(memory_bytes("x"), None);
        assert_eq!(cpu_nanos("500m"), Some(500_000_000));
        assert_eq!(cpu_nanos("2"), Some(2_000_000_000));
        assert_eq!(cpu_nanos("0"), None);
    }
}
