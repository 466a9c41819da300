//! The page's first module: the shell (see `lib.rs`).

fn main() {
    vramfit_web::shell::start();
}
