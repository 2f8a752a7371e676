//! The `rss` binary: everything happens in `rss::cli`.

fn main() -> std::process::ExitCode {
    rss::cli::main()
}
