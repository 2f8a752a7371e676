//! The `rss` binary: everything happens in the library's command line (`rss::main`).

fn main() -> std::process::ExitCode {
    rss::main()
}
