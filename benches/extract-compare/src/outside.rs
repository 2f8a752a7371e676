//! Extractors from outside Rust, run as one child process over every page (their start-up is
//! paid once): Python trafilatura and Readability.js with jsdom, installed by
//! `tools/setup.sh` under `target/extract-tools/`. Each prints one JSON line per page with
//! its text and the milliseconds the extraction took inside the process.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::Output;

/// Where `tools/setup.sh` installs the outside extractors.
fn tools_dir() -> PathBuf {
    std::env::var_os("EXTRACT_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/extract-tools"))
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tools")
        .join(name)
}

/// The command for each outside extractor that is installed, or why it is skipped.
pub fn commands() -> Vec<(&'static str, Result<Command, String>)> {
    let dir = tools_dir();
    let python = dir.join("venv/bin/python");
    let py = if python.exists() {
        let mut c = Command::new(python);
        c.arg(script("trafilatura_py.py"));
        Ok(c)
    } else {
        Err(format!("no {} (run tools/setup.sh)", python.display()))
    };
    let modules = dir.join("js");
    let js = if modules.join("node_modules/jsdom").exists() {
        let mut c = Command::new(std::env::var_os("EXTRACT_NODE").unwrap_or("node".into()));
        c.arg(script("readability_js.mjs")).arg(&modules);
        Ok(c)
    } else {
        Err(format!(
            "no {}/node_modules/jsdom (run tools/setup.sh)",
            modules.display()
        ))
    };
    vec![
        ("Python trafilatura 2.2", py),
        ("Readability.js 0.6 + jsdom", js),
    ]
}

/// Runs `cmd` over `pages` (`(path, url)`), one output per page in order.
pub fn run(mut cmd: Command, pages: &[(PathBuf, String)]) -> Result<Vec<Output>, String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().expect("stdin");
    let list: String = pages
        .iter()
        .map(|(p, u)| format!("{}\t{u}\n", p.display()))
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(list.as_bytes()));
    let mut out = Vec::with_capacity(pages.len());
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let line = line.map_err(|e| e.to_string())?;
        let v: serde_json::Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        out.push(Output {
            text: v["text"].as_str().unwrap_or("").to_owned(),
            took: Duration::from_secs_f64(v["ms"].as_f64().unwrap_or(0.0) / 1000.0),
        });
        if out.len() == pages.len() {
            break;
        }
    }
    let _ = writer.join();
    let _ = child.wait();
    if out.len() != pages.len() {
        return Err(format!("{} answers for {} pages", out.len(), pages.len()));
    }
    Ok(out)
}
