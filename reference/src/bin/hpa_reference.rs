//! `hpa-reference`: the reference HPA controller. Thin main: flags, logging, the client, then the
//! library's controller (leader election, the watch, `/healthz`, `/readyz`, `/metrics`).

use clap::Parser;

// One thread: the controller waits on the network almost all the time, and a multi-threaded
// runtime spends more CPU handing tasks between threads than it saves (`just bench kind-scale`).
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let flags = hpa_reference::controller::flags::Flags::parse();
    hpa_reference::controller::run::init_logging(flags.log_json);
    hpa_reference::controller::run::run(flags).await
}
