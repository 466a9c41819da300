//! The page's second module: the panels below the first screen (see `lib.rs`).

fn main() {
    vramfit_web::panels::start();
}
