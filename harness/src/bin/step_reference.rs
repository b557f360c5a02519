//! `hpa-step-reference`: the reference decision core behind the step protocol — a complete
//! example implementation for `--target exec:…`, and the proof that the protocol carries
//! everything a decision needs (its traces equal the in-process core's).
//!
//! Hidden flags make it misbehave, to test the harness's failure paths: `--crash-at T`,
//! `--hang-at T`, `--garbage-at T`, `--gates-fixed NAME=BOOL`.

use std::io::{BufRead, Write};

use hpa_harness::protocol::{
    FromImplementation, Hello, Implementation, PROTOCOL_VERSION, ProtocolMemory, TickResult,
    ToImplementation,
};
use hpa_harness::target::{CoreSession, Session};

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let crash_at: Option<i64> = flag(&args, "--crash-at").and_then(|v| v.parse().ok());
    let hang_at: Option<i64> = flag(&args, "--hang-at").and_then(|v| v.parse().ok());
    let garbage_at: Option<i64> = flag(&args, "--garbage-at").and_then(|v| v.parse().ok());
    let fixed = flag(&args, "--gates-fixed").and_then(|v| {
        let (k, b) = v.split_once('=')?;
        Some((k.to_string(), b == "true"))
    });

    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut session: Option<CoreSession> = None;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let msg: ToImplementation = match serde_json::from_str(&line) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("hpa-step-reference: not a protocol message: {e}");
                std::process::exit(2);
            }
        };
        let reply = match msg {
            ToImplementation::Stop => return,
            ToImplementation::Start(start) => {
                let mut gates = start.feature_gates.clone();
                if let Some((k, v)) = &fixed {
                    gates.insert(k.clone(), *v);
                }
                let settings = match start.settings.to_settings(&gates) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("hpa-step-reference: {e}");
                        std::process::exit(2);
                    }
                };
                session = Some(CoreSession::new(
                    settings,
                    ProtocolMemory::to_memory(start.memory.as_ref()),
                ));
                FromImplementation::Hello(Hello {
                    protocol: PROTOCOL_VERSION,
                    implementation: Implementation {
                        name: "hpa-step-reference".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                    },
                    feature_gates: gates,
                    memory_seeding: true,
                })
            }
            ToImplementation::Tick(tick) => {
                let t = tick.t;
                if crash_at == Some(t) {
                    eprintln!("hpa-step-reference: crashing at t={t} as asked");
                    std::process::exit(3);
                }
                if hang_at == Some(t) {
                    eprintln!("hpa-step-reference: hanging at t={t} as asked");
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
                if garbage_at == Some(t) {
                    let _ = writeln!(out, "this is not JSON");
                    let _ = out.flush();
                    continue;
                }
                let Some(s) = session.as_mut() else {
                    eprintln!("hpa-step-reference: tick before start");
                    std::process::exit(2);
                };
                let snapshot = (*tick).into_snapshot();
                let outcome = match s.tick(&snapshot) {
                    Ok(o) => o,
                    Err(e) => {
                        eprintln!("hpa-step-reference: {e}");
                        std::process::exit(2);
                    }
                };
                FromImplementation::Result(TickResult {
                    t,
                    scaled_to: outcome.scaled_to,
                    status: outcome.status,
                    events: outcome
                        .events
                        .into_iter()
                        .map(|e| hpa_harness::protocol::ProtocolEvent {
                            type_: e.type_.as_str().into(),
                            reason: e.reason,
                            message: e.message,
                        })
                        .collect(),
                })
            }
        };
        let text = serde_json::to_string(&reply).unwrap_or_default();
        if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
            return;
        }
    }
}
