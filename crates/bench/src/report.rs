//! The one report writer: scenario sections rendered as aligned text for the terminal and as
//! Markdown for BENCHMARKS.md, which is regenerated wholly from one run so that every figure in
//! it has the same date, machine and command behind it. Nobody edits that file by hand.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// What one scenario measured.
#[derive(Debug, Clone)]
pub struct Section {
    /// The scenario's command-line name.
    pub name: &'static str,
    pub title: String,
    /// What was done, so a reader can judge the figures (Markdown paragraphs).
    pub setup: String,
    pub tables: Vec<Table>,
    /// Caveats a reader needs to interpret the figures.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(title: &str, header: &[&str]) -> Self {
        Table {
            title: title.to_string(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                if i < widths.len() {
                    widths[i] = widths[i].max(cell.chars().count());
                } else {
                    widths.push(cell.chars().count());
                }
            }
        }
        widths
    }

    /// Numbers are right-aligned so magnitudes line up; the first column (a label) is not.
    fn to_text(&self) -> String {
        let widths = self.widths();
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, w) in widths.iter().enumerate() {
                let cell = cells.get(i).map(String::as_str).unwrap_or("");
                if i == 0 {
                    let _ = write!(s, "{cell:<w$}");
                } else {
                    let _ = write!(s, "  {cell:>w$}");
                }
            }
            s.trim_end().to_string() + "\n"
        };
        let mut out = format!("{}\n", self.title);
        out += &line(&self.header);
        out += &line(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>());
        for row in &self.rows {
            out += &line(row);
        }
        out
    }

    fn to_markdown(&self) -> String {
        let cells = |cells: &[String]| {
            format!(
                "| {} |\n",
                cells
                    .iter()
                    .map(|c| c.replace('|', "\\|"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            )
        };
        let mut out = format!("### {}\n\n", self.title);
        out += &cells(&self.header);
        let align: Vec<String> = (0..self.header.len())
            .map(|i| {
                if i == 0 {
                    ":--".to_string()
                } else {
                    "--:".to_string()
                }
            })
            .collect();
        out += &format!("|{}|\n", align.join("|"));
        for row in &self.rows {
            out += &cells(row);
        }
        out
    }
}

impl Section {
    pub fn to_text(&self) -> String {
        let mut out = format!("\n== {} ({}) ==\n", self.title, self.name);
        for table in &self.tables {
            out += "\n";
            out += &table.to_text();
        }
        for note in &self.notes {
            out += &format!("note: {note}\n");
        }
        out
    }

    fn to_markdown(&self) -> String {
        let mut out = format!(
            "## {} (`{}`)\n\n{}\n",
            self.title,
            self.name,
            self.setup.trim_end()
        );
        for table in &self.tables {
            out += "\n";
            out += &table.to_markdown();
        }
        if !self.notes.is_empty() {
            out += "\nNotes:\n\n";
            for note in &self.notes {
                out += &format!("- {note}\n");
            }
        }
        out
    }
}

/// Where and how the figures were produced.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub date: String,
    pub nproc: usize,
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub command: String,
    pub profile: &'static str,
    pub commit: Option<String>,
    pub quick: bool,
}

impl RunInfo {
    pub fn collect(quick: bool) -> Self {
        let args: Vec<String> = std::env::args().skip(1).map(|a| shell_quote(&a)).collect();
        let profile = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        // Under `cargo run` (which sets CARGO), the command to reproduce the figures is the cargo
        // invocation, not the path of the binary inside the target directory.
        let command = if std::env::var_os("CARGO").is_some() {
            let release = if profile == "release" {
                " --release"
            } else {
                ""
            };
            format!("cargo run{release} -p bench -- {}", args.join(" "))
        } else {
            format!("bench {}", args.join(" "))
        };
        RunInfo {
            date: utc_now(),
            nproc: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu: cpu_model(),
            memory: total_memory(),
            command,
            profile,
            commit: git_commit(),
            quick,
        }
    }
}

pub fn render_markdown(run: &RunInfo, sections: &[Section]) -> String {
    let mut out = String::from("# Benchmarks\n\n");
    out += "<!-- Generated by crates/bench; do not edit by hand. Regenerate with:\n     cargo run --release -p bench -- all --write BENCHMARKS.md -->\n\n";
    out += "Every figure below comes from one run of the `bench` command (crates/bench), which writes this\n";
    out += "file whole. Benchmarks measure; tests never assert timings.\n\n";
    if run.quick {
        out += "**This run used `--quick` (a tenth of the counts): the figures only show that the scenarios work.**\n\n";
    }
    out += "| Run | |\n|:--|:--|\n";
    out += &format!("| Date | {} |\n", run.date);
    let mut machine = format!("nproc {}", run.nproc);
    if let Some(cpu) = &run.cpu {
        machine += &format!(", {cpu}");
    }
    if let Some(mem) = &run.memory {
        machine += &format!(", {mem} RAM");
    }
    out += &format!("| Machine | {machine} |\n");
    out += &format!("| Command | `{}` |\n", run.command);
    out += &format!("| Build | {} |\n", run.profile);
    if let Some(commit) = &run.commit {
        out += &format!("| Commit | {commit} |\n");
    }
    for section in sections {
        out += "\n";
        out += &section.to_markdown();
    }
    out
}

/// Writes through a temporary file so an interrupted run never leaves half a report.
pub fn write_file(path: &Path, run: &RunInfo, sections: &[Section]) -> std::io::Result<()> {
    let tmp = path.with_extension("md.tmp");
    std::fs::write(&tmp, render_markdown(run, sections))?;
    std::fs::rename(&tmp, path)
}

fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(secs)
}

/// `YYYY-MM-DD HH:MM UTC` without a date library: days to civil date after H. Hinnant's
/// `civil_from_days`.
fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines().find_map(|l| {
        l.strip_prefix("model name")
            .and_then(|rest| rest.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    })
}

fn total_memory() -> Option<String> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = crate::measure::kib_field(&info, "MemTotal")?;
    Some(format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0)))
}

fn git_commit() -> Option<String> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{head} with uncommitted changes")
    } else {
        head
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Section {
        let mut table = Table::new("Throughput", &["Phase", "Requests", "Req/s"]);
        table.row(vec!["create Nodes".into(), "1000".into(), "5321".into()]);
        Section {
            name: "demo",
            title: "Demo".into(),
            setup: "Did things.".into(),
            tables: vec![table],
            notes: vec!["a caveat".into()],
        }
    }

    fn run_info() -> RunInfo {
        RunInfo {
            date: "2025-01-02 03:04 UTC".into(),
            nproc: 2,
            cpu: Some("Some CPU".into()),
            memory: None,
            command: "bench demo --write BENCHMARKS.md".into(),
            profile: "release",
            commit: None,
            quick: false,
        }
    }

    #[test]
    fn dates_are_rendered_in_utc_calendar_form() {
        assert_eq!(format_utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(format_utc(1_709_251_199), "2024-02-29 23:59 UTC");
        assert_eq!(format_utc(1_735_787_045), "2025-01-02 03:04 UTC");
    }

    #[test]
    fn markdown_report_carries_run_facts_and_every_figure() {
        let md = render_markdown(&run_info(), &[sample()]);
        assert!(md.starts_with("# Benchmarks\n"));
        assert!(md.contains("| Date | 2025-01-02 03:04 UTC |"));
        assert!(md.contains("nproc 2"));
        assert!(md.contains("`bench demo --write BENCHMARKS.md`"));
        assert!(md.contains("## Demo (`demo`)"));
        assert!(md.contains("| create Nodes | 1000 | 5321 |"));
        assert!(md.contains("- a caveat"));
        assert!(!md.contains("--quick"));
    }

    #[test]
    fn quick_runs_are_marked_in_the_report() {
        let md = render_markdown(
            &RunInfo {
                quick: true,
                ..run_info()
            },
            &[sample()],
        );
        assert!(md.contains("`--quick`"));
    }

    #[test]
    fn text_tables_align_columns() {
        let text = sample().tables[0].to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "Phase         Requests  Req/s");
        assert_eq!(lines[3], "create Nodes      1000   5321");
    }

    #[test]
    fn arguments_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("--write"), "--write");
        assert_eq!(shell_quote("my file.md"), "'my file.md'");
    }
}
