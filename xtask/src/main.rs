//! `cargo xtask`: the project's set-up commands and its measurement commands.
//!
//! - `serve`: install what is missing, build and serve the page at http://127.0.0.1:8080.
//! - `test`: install what is missing, then fmt, clippy, workspace tests, the measurement kit's CPU
//!   tests in its pinned Python venv, the Python package's tests, a release build of the page with Trunk, and the
//!   headless-Chromium end-to-end tests against the CLI's numbers.
//! - `test-kit`: only the measurement kit's CPU tests (installing its venv when missing).
//! - `test-python`: build the Python package's wheel with maturin and run its pytest tests.
//! - `accuracy`: the detailed method against the public measurements, per category.
//! - `configs`: docs/models.md's table of the config.json fixtures against their published figures.
//! - `bench-web`: wasm size and page timings in headless Chromium.
//!
//! Tools are installed idempotently into `$VRAMFIT_TOOLS` (default `~/.cache/vramfit/tools`) at the
//! versions pinned here and in Cargo.lock; the measurement kit's venv
//! (`measure-venv`) too, from PyPI at the versions of calibration/measure/requirements.txt, with
//! maturin and pytest added at crates/python/requirements-test.txt's.

mod accuracy;
mod configs;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const TRUNK_VERSION: &str = "0.21.14";
/// The measurement kit's pinned Python packages, relative to the repository.
const MEASURE_REQUIREMENTS: &str = "calibration/measure/requirements.txt";
/// What the Python package's build and tests add to the kit's venv, relative to the repository.
const PYTHON_REQUIREMENTS: &str = "crates/python/requirements-test.txt";

type Result<T> = std::result::Result<T, String>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn tools_dir() -> PathBuf {
    env::var_os("VRAMFIT_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/tmp"));
            home.join(".cache/vramfit/tools")
        })
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: $ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

/// The `wasm-bindgen` version Cargo.lock pinned; the CLI must match it exactly.
fn wasm_bindgen_version() -> Result<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock"))
        .map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasm-bindgen\"" {
            if let Some(version) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
            {
                return Ok(version.trim_end_matches('"').to_string());
            }
        }
    }
    Err("wasm-bindgen is not in Cargo.lock".to_string())
}

struct Tools {
    path: String,
}

fn install_cargo_tool(name: &str, krate: &str, version: &str, locked: bool) -> Result<PathBuf> {
    let dir = tools_dir().join(format!("{name}-{version}"));
    let bin = dir.join("bin");
    if bin.join(name).exists() {
        return Ok(bin);
    }
    let mut cmd = Command::new("cargo");
    cmd.args(["install", "--root"])
        .arg(&dir)
        .arg(format!("{krate}@{version}"));
    if locked {
        cmd.arg("--locked");
    }
    run(&mut cmd)?;
    Ok(bin)
}

/// Installs whatever is missing and returns a PATH with the tools first.
fn ensure_tools(browser: bool) -> Result<Tools> {
    let root = root();
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    if !String::from_utf8_lossy(&installed).contains("wasm32-unknown-unknown") {
        run(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))?;
    }
    // trunk 0.22 needs a newer rustc than this toolchain; its lockfile builds here.
    let trunk = install_cargo_tool("trunk", "trunk", TRUNK_VERSION, true)?;
    // wasm-bindgen-cli's own lockfile wants a crate version this registry lacks, so not --locked.
    let bindgen = install_cargo_tool(
        "wasm-bindgen",
        "wasm-bindgen-cli",
        &wasm_bindgen_version()?,
        false,
    )?;
    if [
        "node_modules/.bin/wasm-opt",
        "node_modules/playwright-core",
        "node_modules/terser",
    ]
    .iter()
    .any(|p| !root.join(p).exists())
    {
        run(Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&root))?;
    }
    if browser && !Path::new("/usr/bin/chromium").exists() {
        run(Command::new("apt-get").arg("update"))?;
        run(Command::new("apt-get").args(["install", "-y", "chromium", "chromium-driver"]))?;
    }
    let path = env::join_paths(
        [trunk, bindgen, root.join("node_modules/.bin")]
            .into_iter()
            .chain(env::split_paths(&env::var_os("PATH").unwrap_or_default())),
    )
    .map_err(|e| e.to_string())?;
    Ok(Tools {
        path: path.to_string_lossy().into_owned(),
    })
}

/// The measurement kit's Python: a venv in the tools directory with the kit's requirements.txt,
/// made again whenever that file changes (the copy inside the venv says what it holds). PyPI's
/// Linux torch brings the CUDA libraries, which `import torch` loads even on a CPU: gigabytes.
fn ensure_measure_venv() -> Result<PathBuf> {
    let wanted = std::fs::read_to_string(root().join(MEASURE_REQUIREMENTS))
        .map_err(|e| format!("cannot read {MEASURE_REQUIREMENTS}: {e}"))?;
    let venv = tools_dir().join("measure-venv");
    let python = venv.join("bin/python");
    let installed = venv.join("requirements.txt");
    if python.exists() && std::fs::read_to_string(&installed).ok().as_ref() == Some(&wanted) {
        return Ok(python);
    }
    if venv.exists() {
        std::fs::remove_dir_all(&venv)
            .map_err(|e| format!("cannot remove the old {}: {e}", venv.display()))?;
    }
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(&python)
        .args(["-m", "pip", "install", "--no-cache-dir", "--requirement"])
        .arg(root().join(MEASURE_REQUIREMENTS)))?;
    std::fs::write(&installed, wanted)
        .map_err(|e| format!("cannot write {}: {e}", installed.display()))?;
    Ok(python)
}

/// The kit's venv with maturin and pytest added, so the package's tests use the kit's torch and
/// transformers rather than download them again. Added again whenever the requirements change
/// or the kit's venv is made anew (the copy inside the venv says what it holds).
fn ensure_python_test_venv() -> Result<PathBuf> {
    let python = ensure_measure_venv()?;
    let wanted = std::fs::read_to_string(root().join(PYTHON_REQUIREMENTS))
        .map_err(|e| format!("cannot read {PYTHON_REQUIREMENTS}: {e}"))?;
    let installed = tools_dir().join("measure-venv/python-requirements-test.txt");
    if std::fs::read_to_string(&installed).ok().as_ref() != Some(&wanted) {
        run(Command::new(&python)
            .args(["-m", "pip", "install", "--no-cache-dir", "--requirement"])
            .arg(root().join(PYTHON_REQUIREMENTS)))?;
        std::fs::write(&installed, wanted)
            .map_err(|e| format!("cannot write {}: {e}", installed.display()))?;
    }
    Ok(python)
}

/// The Python package's tests (crates/python/tests): maturin builds the wheel (a debug build,
/// sharing the workspace's artifacts), pip unpacks it into the target directory rather than the
/// shared venv, and pytest runs against it with this checkout's CLI as the oracle.
fn python_test() -> Result<()> {
    let python = ensure_python_test_venv()?;
    let cli = build_cli()?;
    let wheels = target_dir().join("wheels");
    let site = target_dir().join("python-site");
    for dir in [&wheels, &site] {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
        }
    }
    let maturin = python.with_file_name("maturin");
    run(Command::new(maturin)
        .args(["build", "--profile", "dev", "--manifest-path"])
        .arg(root().join("crates/python/Cargo.toml"))
        .arg("--interpreter")
        .arg(&python)
        .arg("--out")
        .arg(&wheels)
        .current_dir(root()))?;
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| format!("cannot list {}: {e}", wheels.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .ok_or_else(|| format!("maturin wrote no wheel to {}", wheels.display()))?;
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--target",
        ])
        .arg(&site)
        .arg(&wheel))?;
    run(Command::new(&python)
        .args(["-m", "pytest", "-q", "crates/python/tests"])
        .env("PYTHONPATH", &site)
        .env("VRAMFIT_BIN", cli)
        .current_dir(root()))
}

/// The measurement kit's CPU tests (calibration/measure/tests) against this checkout's CLI.
fn measure_kit_test() -> Result<()> {
    let python = ensure_measure_venv()?;
    let cli = build_cli()?;
    run(Command::new(python)
        .args([
            "-m",
            "unittest",
            "discover",
            "--start-directory",
            "calibration/measure/tests",
        ])
        .env("VRAMFIT_BIN", cli)
        .current_dir(root()))
}

fn cargo(args: &[&str]) -> Command {
    let mut cmd = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()));
    cmd.args(args).current_dir(root());
    cmd
}

fn build_page(tools: &Tools) -> Result<()> {
    run(Command::new("trunk")
        .args(["build", "--release"])
        .env("PATH", &tools.path)
        .current_dir(root()))
}

/// Builds the CLI and, beside it, the fixture Hub the page's Hub tests serve.
fn build_cli() -> Result<PathBuf> {
    run(&mut cargo(&[
        "build",
        "--package",
        "vramfit-cli",
        "--package",
        "vramfit-hub-fixture",
    ]))?;
    Ok(target_dir().join("debug/vramfit"))
}

/// Where Cargo builds: `CARGO_TARGET_DIR` (relative to the repository) or `target/`.
fn target_dir() -> PathBuf {
    let target =
        env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    root().join(target)
}

fn node_test(tools: &Tools, files: &[&str]) -> Result<()> {
    let cli = build_cli()?;
    let mut cmd = Command::new("node");
    cmd.arg("--test").arg("--test-concurrency=1").args(files);
    cmd.env("PATH", &tools.path)
        .env("VRAMFIT_BIN", cli)
        .env("VRAMFIT_DIST", root().join("dist"))
        .current_dir(root());
    run(&mut cmd)
}

fn test() -> Result<()> {
    let tools = ensure_tools(true)?;
    run(&mut cargo(&["fmt", "--all", "--", "--check"]))?;
    run(&mut cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
        // No function over 80 lines (clippy.toml); a data table says why it is longer.
        "-D",
        "clippy::too_many_lines",
    ]))?;
    run(&mut cargo(&["test", "--workspace"]))?;
    measure_kit_test()?;
    python_test()?;
    build_page(&tools)?;
    node_test(
        &tools,
        &[
            "tests/e2e/page.test.mjs",
            "tests/e2e/layout.test.mjs",
            "tests/e2e/picker.test.mjs",
            "tests/e2e/serve.test.mjs",
            "tests/e2e/hub.test.mjs",
            "tests/e2e/speed.test.mjs",
        ],
    )?;
    eprintln!("xtask: all checks passed");
    Ok(())
}

fn serve() -> Result<()> {
    let tools = ensure_tools(false)?;
    run(Command::new("trunk")
        .args(["serve", "--release"])
        .env("PATH", &tools.path)
        .current_dir(root()))
}

fn bench_web() -> Result<()> {
    let tools = ensure_tools(true)?;
    build_page(&tools)?;
    node_test(&tools, &["tests/e2e/bench.mjs"])
}

fn main() -> ExitCode {
    let task = env::args().nth(1).unwrap_or_default();
    let result = match task.as_str() {
        "test" => test(),
        "serve" => serve(),
        "test-kit" => measure_kit_test(),
        "test-python" => python_test(),
        "accuracy" => accuracy::report(&root()),
        "configs" => configs::report(&root()),
        "bench-web" => bench_web(),
        _ => Err(
            "usage: cargo xtask <serve | test | test-kit | test-python | accuracy | configs | \
             bench-web>"
                .to_string(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
