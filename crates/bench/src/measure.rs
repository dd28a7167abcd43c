//! Measuring helpers shared by scenarios: bounded-concurrency request phases with per-request
//! latencies, percentiles, and a process's resident memory and CPU time from /proc.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};

/// What one phase of requests took.
#[derive(Debug, Clone)]
pub struct Phase {
    pub wall: Duration,
    /// One entry per request, in completion order.
    pub latencies: Vec<Duration>,
}

impl Phase {
    pub fn per_second(&self) -> f64 {
        per_second(self.latencies.len(), self.wall)
    }
}

/// Runs `make(i)` for every `i` in `0..count` with at most `concurrency` in flight, stopping at
/// the first error or at `limit`, so a stuck server fails the benchmark instead of hanging it.
pub async fn run_bounded<F, Fut>(
    count: usize,
    concurrency: usize,
    limit: Duration,
    make: F,
) -> anyhow::Result<Phase>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let start = Instant::now();
    let requests = futures::stream::iter(0..count)
        .map(|i| {
            let request = make(i);
            async move {
                let t = Instant::now();
                request.await?;
                anyhow::Ok(t.elapsed())
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<Duration>>();
    let latencies = tokio::time::timeout(limit, requests)
        .await
        .with_context(|| format!("did not finish {count} requests within {limit:?}"))??;
    Ok(Phase {
        wall: start.elapsed(),
        latencies,
    })
}

pub fn per_second(count: usize, wall: Duration) -> f64 {
    count as f64 / wall.as_secs_f64().max(1e-9)
}

/// The `p`-th percentile (0..=100) by nearest rank; zero for no samples.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.1}")
    }
}

pub fn rate(r: f64) -> String {
    format!("{r:.0}")
}

pub fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// A `Name:   1234 kB` field of /proc/*/status or /proc/meminfo, in KiB.
pub fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key == name)
            .then(|| value.trim().trim_end_matches("kB").trim().parse().ok())
            .flatten()
    })
}

/// Resident memory of a process, in KiB.
#[derive(Debug, Clone, Copy)]
pub struct Memory {
    pub rss_kib: u64,
    /// The high-water mark of `rss_kib` since the process started.
    pub hwm_kib: u64,
}

pub fn memory(pid: u32) -> anyhow::Result<Memory> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    let field = |name| kib_field(&status, name).with_context(|| format!("{path} has no {name}"));
    Ok(Memory {
        rss_kib: field("VmRSS")?,
        hwm_kib: field("VmHWM")?,
    })
}

/// User plus system CPU time of a whole process (all threads).
pub fn cpu_time(pid: &str) -> anyhow::Result<Duration> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    parse_cpu_time(&stat).with_context(|| format!("cannot parse {path}"))
}

fn parse_cpu_time(stat: &str) -> Option<Duration> {
    // The command name (field 2) may contain spaces and parentheses; fields after the last ')'
    // start at field 3 (state), so utime (14) and stime (15) are the 12th and 13th.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // USER_HZ is 100 on every Linux architecture we run on; /proc reports in those ticks.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU used by the emulator and by the benchmark itself over one phase: if the emulator is far
/// from a full core while the client is busy, the client, not the emulator, set the pace.
#[derive(Debug, Clone, Copy)]
pub struct CpuProbe {
    start: Instant,
    sim: Duration,
    client: Duration,
    sim_pid: u32,
}

/// CPU use over a phase, as a percentage of one core.
#[derive(Debug, Clone, Copy)]
pub struct CpuUse {
    pub sim_percent: f64,
    pub client_percent: f64,
}

impl CpuProbe {
    pub fn start(sim_pid: u32) -> anyhow::Result<Self> {
        Ok(CpuProbe {
            start: Instant::now(),
            sim: cpu_time(&sim_pid.to_string())?,
            client: cpu_time("self")?,
            sim_pid,
        })
    }

    pub fn finish(self) -> anyhow::Result<CpuUse> {
        let wall = self.start.elapsed().as_secs_f64().max(1e-9);
        let sim = cpu_time(&self.sim_pid.to_string())?.saturating_sub(self.sim);
        let client = cpu_time("self")?.saturating_sub(self.client);
        Ok(CpuUse {
            sim_percent: 100.0 * sim.as_secs_f64() / wall,
            client_percent: 100.0 * client.as_secs_f64() / wall,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&samples, 100.0), Duration::from_millis(100));
        assert_eq!(percentile(&samples[..1], 50.0), Duration::from_millis(100));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
    }

    #[test]
    fn proc_status_fields_parse_in_kib() {
        let status = "Name:\tcsi-operator\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
        assert_eq!(kib_field(status, "VmRSS"), Some(10240));
        assert_eq!(kib_field(status, "VmHWM"), Some(20480));
        assert_eq!(kib_field(status, "VmSwap"), None);
    }

    #[test]
    fn cpu_time_survives_odd_command_names() {
        let stat =
            "42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 4 0 1000 0 0";
        assert_eq!(parse_cpu_time(stat), Some(Duration::from_secs(3)));
    }

    #[test]
    fn own_memory_and_cpu_are_readable() {
        let me = memory(std::process::id()).expect("own /proc status");
        assert!(me.rss_kib > 0 && me.hwm_kib >= me.rss_kib);
        cpu_time("self").expect("own /proc stat");
    }

    #[tokio::test]
    async fn bounded_phases_run_every_request_and_stop_at_the_first_error() {
        let ok = run_bounded(10, 3, Duration::from_secs(10), |_| async { Ok(()) })
            .await
            .expect("all succeed");
        assert_eq!(ok.latencies.len(), 10);
        let failed = run_bounded(10, 3, Duration::from_secs(10), |i| async move {
            if i == 4 {
                anyhow::bail!("boom")
            } else {
                Ok(())
            }
        })
        .await;
        assert!(failed.is_err());
    }
}
