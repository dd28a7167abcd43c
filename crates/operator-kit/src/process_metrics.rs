//! The `process_*` metrics every Prometheus client library exports (the names and meanings of
//! client_golang's process collector), read from `/proc/self` at each scrape: CPU seconds,
//! resident and virtual memory, open and maximum file descriptors, start time. No crate: the
//! files are small and their formats are the kernel's ABI (proc(5)).
//!
//! Off Linux (or when `/proc` is not mounted) a value that cannot be read is left out of the
//! page rather than reported as 0.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// The kernel reports CPU times and start times in clock ticks of `USER_HZ`, which is 100 on
/// every architecture Linux exposes to user space (`sysconf(_SC_CLK_TCK)`; reading it would
/// take `libc` and `unsafe`).
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// A snapshot of the process, from `/proc`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: Option<f64>,
    pub resident_memory_bytes: Option<i64>,
    pub virtual_memory_bytes: Option<i64>,
    pub open_fds: Option<i64>,
    pub max_fds: Option<i64>,
    pub start_time_seconds: Option<f64>,
}

/// The fields of `/proc/<pid>/stat` after the command name (which may hold spaces and
/// parentheses, so it is skipped up to the last `)`): index 0 is field 3, `state`.
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let end = stat.rfind(')')?;
    Some(stat[end + 1..].split_whitespace().collect())
}

/// Parses `/proc/self/stat`, `/proc/self/status`, `/proc/self/limits` and `/proc/stat`'s
/// `btime`, and the number of entries of `/proc/self/fd`.
pub fn parse(
    stat: Option<&str>,
    status: Option<&str>,
    limits: Option<&str>,
    proc_stat: Option<&str>,
    open_fds: Option<i64>,
) -> ProcessStats {
    let fields = stat.and_then(stat_fields).unwrap_or_default();
    // proc(5): utime is field 14, stime 15, starttime 22, vsize 23 (1-based).
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    let cpu_seconds = match (field(14), field(15)) {
        (Some(u), Some(s)) => Some((u + s) as f64 / CLOCK_TICKS_PER_SECOND),
        _ => None,
    };
    let btime = proc_stat.and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse::<u64>().ok())
    });
    let start_time_seconds = match (field(22), btime) {
        (Some(ticks), Some(boot)) => Some(boot as f64 + ticks as f64 / CLOCK_TICKS_PER_SECOND),
        _ => None,
    };
    let kib = |key: &str| {
        status.and_then(|s| {
            s.lines().find_map(|l| {
                let rest = l.strip_prefix(key)?.trim();
                let n = rest.strip_suffix("kB").unwrap_or(rest).trim();
                n.parse::<i64>().ok().map(|k| k * 1024)
            })
        })
    };
    let max_fds = limits.and_then(|s| {
        s.lines().find_map(|l| {
            let rest = l.strip_prefix("Max open files")?;
            let soft = rest.split_whitespace().next()?;
            soft.parse::<i64>().ok()
        })
    });
    ProcessStats {
        cpu_seconds,
        resident_memory_bytes: kib("VmRSS:"),
        virtual_memory_bytes: field(23).map(|v| v as i64).or_else(|| kib("VmSize:")),
        open_fds,
        max_fds,
        start_time_seconds,
    }
}

/// This process, now.
pub fn read() -> ProcessStats {
    let file = |p: &str| std::fs::read_to_string(p).ok();
    let fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as i64);
    parse(
        file("/proc/self/stat").as_deref(),
        file("/proc/self/status").as_deref(),
        file("/proc/self/limits").as_deref(),
        file("/proc/stat").as_deref(),
        fds,
    )
}

/// The collector that encodes [`read`] at each scrape.
#[derive(Debug, Default)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = read();
        if let Some(v) = s.cpu_seconds {
            let c = ConstCounter::new(v);
            c.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                None,
                c.metric_type(),
            )?)?;
        }
        let gauges: [(&str, &str, Option<f64>); 5] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                s.resident_memory_bytes.map(|v| v as f64),
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                s.virtual_memory_bytes.map(|v| v as f64),
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                s.open_fds.map(|v| v as f64),
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                s.max_fds.map(|v| v as f64),
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                s.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(v) = value {
                let g = ConstGauge::new(v);
                g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_as_proc5_says() {
        let stat = "4242 (csi (op) erator) S 1 4242 4242 0 -1 4194560 2000 0 0 0 \
                    250 150 0 0 20 0 8 0 123456 104857600 5000 18446744073709551615";
        let status = "Name:\tcsi-operator\nVmSize:\t  102400 kB\nVmRSS:\t   20480 kB\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1048576              1048576              files\n";
        let proc_stat = "cpu  1 2 3\nbtime 1700000000\nprocesses 10\n";
        let s = parse(
            Some(stat),
            Some(status),
            Some(limits),
            Some(proc_stat),
            Some(12),
        );
        assert_eq!(s.cpu_seconds, Some(4.0), "(250 + 150) ticks");
        assert_eq!(s.start_time_seconds, Some(1_700_000_000.0 + 1234.56));
        assert_eq!(s.resident_memory_bytes, Some(20480 * 1024));
        assert_eq!(s.virtual_memory_bytes, Some(104_857_600));
        assert_eq!(s.open_fds, Some(12));
        assert_eq!(s.max_fds, Some(1_048_576));
        assert_eq!(parse(None, None, None, None, None), ProcessStats::default());
    }

    #[test]
    fn this_process_is_read() {
        let s = read();
        let rss = s.resident_memory_bytes.expect("VmRSS");
        assert!(rss > 1024 * 1024, "{rss}");
        assert!(s.open_fds.expect("fds") >= 3);
        let start = s.start_time_seconds.expect("start");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs_f64();
        assert!(
            start <= now + 1.0 && start > now - 86_400.0 * 365.0,
            "{start} vs {now}"
        );
        assert!(s.cpu_seconds.expect("cpu") >= 0.0);
    }
}
