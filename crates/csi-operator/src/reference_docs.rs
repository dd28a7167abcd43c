//! Shell completion scripts and man pages, generated from the command-line definitions
//! themselves so they can never disagree with `--help`.

use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

/// `csi-operator completion SHELL`.
#[derive(clap::Args)]
pub struct CompletionArgs {
    /// The shell to print a completion script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `csi-operator man DIR`.
#[derive(clap::Args)]
pub struct ManArgs {
    /// Directory to write `csi-operator.1` and one page per subcommand
    /// (`csi-operator-openstack-cinder-start.1`, ...) into; created if missing.
    pub dir: std::path::PathBuf,
}

/// Writes the completion script of `shell` for the command `C` to `out`.
pub fn completion<C: CommandFactory>(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    let mut command = C::command();
    let name = command.get_name().to_string();
    clap_complete::generate(shell, &mut command, name, out);
}

/// Writes one man page per command and subcommand of `C` into `dir`; returns how many.
pub fn man_pages<C: CommandFactory>(dir: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let command = C::command();
    clap_mangen::generate_to(command, dir)
        .with_context(|| format!("cannot write man pages into {}", dir.display()))?;
    let written = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "1"))
        .count();
    Ok(written)
}
