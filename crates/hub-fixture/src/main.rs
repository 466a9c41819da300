//! `vramfit-hub-fixture serve [--port N] [--ignore-range]`: the fixture Hub as a process, for
//! end-to-end tests driven from outside Rust (the page's). Prints the endpoint, then serves until
//! killed. LFS
//! redirects point at a second port, the CDN, reported on stderr.

use std::process::ExitCode;

use vramfit_hub_fixture::{Hub, HubOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = HubOptions::default();
    let mut rest = args.iter();
    if rest.next().map(String::as_str) != Some("serve") {
        eprintln!("usage: vramfit-hub-fixture serve [--port N] [--ignore-range]");
        return ExitCode::from(2);
    }
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--ignore-range" => options.ignore_range = true,
            "--port" => match rest.next().and_then(|p| p.parse().ok()) {
                Some(port) => options.port = port,
                None => {
                    eprintln!("--port needs a number");
                    return ExitCode::from(2);
                }
            },
            other => {
                eprintln!("unknown argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    let hub = Hub::start(options);
    println!("{}", hub.endpoint());
    eprintln!("LFS files redirect to {}", hub.cdn_endpoint());
    loop {
        std::thread::park();
    }
}
