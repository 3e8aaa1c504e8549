//! Where an owner password comes from: a file, standard input (`-`), or
//! typed at the terminal (`--prompt`), twice and never echoed, so it lands
//! neither in the shell's history nor in a file left behind.

use std::io::{BufRead as _, Write as _};
use std::path::Path;

use anyhow::{bail, Context};

/// A password from a file, or standard input for `-`, without its line
/// ending (the rest is kept: spaces may be part of it).
pub(super) fn from_file(file: &Path) -> anyhow::Result<String> {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("cannot read the password from standard input")?;
        text
    } else {
        std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the password from {}", file.display()))?
    };
    non_empty(text.trim_end_matches(['\n', '\r']))
}

/// The password given with `file` or typed at the terminal (`prompt`);
/// `None` when neither was asked for.
pub(super) fn given(file: Option<&Path>, prompt: bool) -> anyhow::Result<Option<String>> {
    match (file, prompt) {
        (Some(_), true) => bail!("give the password with a file or --prompt, not both"),
        (Some(file), false) => from_file(file).map(Some),
        (None, true) => typed().map(Some),
        (None, false) => Ok(None),
    }
}

fn non_empty(password: &str) -> anyhow::Result<String> {
    if password.is_empty() {
        bail!("the password is empty");
    }
    Ok(password.to_owned())
}

/// Asks for the password on the terminal, twice, with echo off (and back
/// on whatever happens).
#[cfg(unix)]
fn typed() -> anyhow::Result<String> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .context("--prompt needs a terminal; give the password with a file instead")?;
    let first = ask(&tty, "Owner password: ")?;
    let second = ask(&tty, "The same again: ")?;
    if first != second {
        bail!("the two passwords differ: nothing was changed");
    }
    non_empty(&first)
}

#[cfg(not(unix))]
fn typed() -> anyhow::Result<String> {
    bail!("--prompt needs a Unix terminal; give the password with a file instead")
}

/// One line read from the terminal with echo off.
#[cfg(unix)]
fn ask(tty: &std::fs::File, question: &str) -> anyhow::Result<String> {
    let mut out = tty;
    write!(out, "{question}")?;
    out.flush()?;
    echo(tty, false)?;
    let mut line = String::new();
    let read = std::io::BufReader::new(tty).read_line(&mut line);
    let restored = echo(tty, true);
    writeln!(out)?;
    read.context("cannot read the password from the terminal")?;
    restored?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Turns the terminal's echo on or off (`stty`, which every Unix has).
#[cfg(unix)]
fn echo(tty: &std::fs::File, on: bool) -> anyhow::Result<()> {
    let status = std::process::Command::new("stty")
        .arg(if on { "echo" } else { "-echo" })
        .stdin(tty.try_clone()?)
        .status()
        .context("cannot run stty to hide the password")?;
    if !status.success() {
        bail!(
            "stty could not turn the terminal's echo {}",
            if on { "on" } else { "off" }
        );
    }
    Ok(())
}
