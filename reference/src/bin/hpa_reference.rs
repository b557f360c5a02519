//! `hpa-reference`: the reference HPA controller. Thin main: flags (refused flags exit 2 with one
//! line on stderr, before anything connects), logging, then the library's controller (leader
//! election, the watch, `/healthz`, `/readyz`, `/metrics`).

use clap::Parser;

// jemalloc, not the C library's allocator: the images link musl statically, whose allocator maps
// and unmaps small groups of pages around almost every request (page faults and TLB flushes each
// time, docs/performance.md 2026-12-04).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// One thread: the controller waits on the network almost all the time, and a multi-threaded
// runtime spends more CPU handing tasks between threads than it saves (`just bench kind-scale`).
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let flags = hpa_reference::controller::flags::Flags::parse();
    if let Err(e) = flags.validate() {
        eprintln!("hpa-reference: {e}");
        std::process::exit(2);
    }
    hpa_reference::controller::run::init_logging(flags.log_json);
    hpa_reference::controller::run::run(flags).await
}
