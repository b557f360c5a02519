//! `hpa-conformance`: thin entry point; all logic lives in the library.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = hpa_harness::cli::main(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
