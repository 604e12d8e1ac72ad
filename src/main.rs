#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    palaver::cli::main()
}
