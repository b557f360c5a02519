//! `hpa-step-reference`: the reference decision core behind the step protocol — a complete
//! example implementation for `--target exec:…`, and the proof that the protocol carries
//! everything a decision needs (its traces equal the in-process core's).
//!
//! Hidden flags make it misbehave, to test the harness's failure paths: `--crash-at T`,
//! `--hang-at T`, `--garbage-at T`, `--gates-fixed NAME=BOOL`, `--gates-unlisted NAME` (hello
//! does not report that gate), `--endless-line-at T` (an answer line that never ends),
//! `--stop-reading` (after `hello` it never reads stdin again), `--fork-child PIDFILE` (starts a
//! child that sleeps while holding stdout open, and writes its pid), `--ignore-stop`,
//! `--exit-after-stop CODE`, `--scaled-to-at T:RAW` (answers `scaledTo` with the raw JSON number),
//! `--stderr-noise` (writes characters that are not valid XML to stderr first), `--long-garbage-at
//! T` (a long line of words that is not JSON), `--levels L,…` / `--features F,…` (what hello
//! declares), `--no-memory-seeding`, `--replicas-only` (answers every status without conditions,
//! current metrics or events, like an implementation that only decides replica counts),
//! `--many-cases` (declares `manyCases` in hello and serves cases until `stop`; without it an
//! `end` is a protocol error, as for an implementation written before `end` existed),
//! `--log-cases FILE` (appends `PID CASE` to FILE at each `start`), `--delta-ticks` (declares
//! `deltaTicks` in hello and fills what a tick leaves out from the case's previous tick),
//! `--delta-metrics` (declares `deltaMetrics`: the same for the metrics APIs' answers, moved in
//! time), `--delta-pods` (declares `deltaPods`: a tick's pods may come as changes to the previous
//! tick's), `--log-unchanged FILE` (appends `T FIELDS` to FILE at each tick: what it left out, and
//! `podChanges` when the pods came as changes), `--leave-out-unwritten-status` (a result whose
//! status is the tick's HPA's leaves it out, when `start.unwrittenStatus` allows it),
//! `--no-status-at T` (the result at t=T has no status, allowed or not), `--log-answers FILE`
//! (appends every line it answers to FILE).
//!
//! `--kubernetes-version V` (default: the reference's default release) makes it that release's
//! controller, as upstream's adapter built for V is: its behaviour, its gates (one the release
//! does not have is left out of `hello`, one it locks keeps its locked value) and
//! `hello.kubernetesVersion`.

use std::io::{BufRead, Write};

use hpa_harness::protocol::{
    FromImplementation, Hello, Implementation, PROTOCOL_VERSION, ProtocolMemory, TickResult,
    ToImplementation,
};
use hpa_harness::targets::{CoreSession, Session};

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
    let long_garbage_at: Option<i64> =
        flag(&args, "--long-garbage-at").and_then(|v| v.parse().ok());
    let fixed = flag(&args, "--gates-fixed").and_then(|v| {
        let (k, b) = v.split_once('=')?;
        Some((k.to_string(), b == "true"))
    });
    let unlisted = flag(&args, "--gates-unlisted");
    let endless_at: Option<i64> = flag(&args, "--endless-line-at").and_then(|v| v.parse().ok());
    let stop_reading = args.iter().any(|a| a == "--stop-reading");
    let ignore_stop = args.iter().any(|a| a == "--ignore-stop");
    let exit_after_stop: Option<i32> =
        flag(&args, "--exit-after-stop").and_then(|v| v.parse().ok());
    let scaled_to_at: Option<(i64, String)> = flag(&args, "--scaled-to-at").and_then(|v| {
        let (t, raw) = v.split_once(':')?;
        Some((t.parse().ok()?, raw.to_string()))
    });
    let list = |name: &str| {
        flag(&args, name).map(|v| v.split(',').map(str::to_string).collect::<Vec<_>>())
    };
    let levels = list("--levels");
    // Without --features it declares every feature it has, memoryReport included (an absent
    // list would leave that one out).
    let features = list("--features").or_else(|| {
        Some(
            hpa_harness::case::features::Feature::ALL
                .iter()
                .map(|f| f.as_str().to_string())
                .collect(),
        )
    });
    let memory_seeding = !args.iter().any(|a| a == "--no-memory-seeding");
    let replicas_only = args.iter().any(|a| a == "--replicas-only");
    let many_cases = args.iter().any(|a| a == "--many-cases");
    let delta_ticks = args.iter().any(|a| a == "--delta-ticks");
    let delta_metrics = args.iter().any(|a| a == "--delta-metrics");
    let delta_pods = args.iter().any(|a| a == "--delta-pods");
    let leave_out_status = args.iter().any(|a| a == "--leave-out-unwritten-status");
    let no_status_at: Option<i64> = flag(&args, "--no-status-at").and_then(|v| v.parse().ok());
    let log_answers = flag(&args, "--log-answers");
    let log_unchanged = flag(&args, "--log-unchanged");
    let log_cases = flag(&args, "--log-cases");
    let version: hpa_reference::KubernetesVersion = match flag(&args, "--kubernetes-version") {
        None => hpa_reference::KubernetesVersion::DEFAULT,
        Some(v) => match v.parse() {
            Ok(v) => v,
            Err(e) => {
                eprintln!("hpa-step-reference: --kubernetes-version: {e}");
                std::process::exit(2);
            }
        },
    };
    if args.iter().any(|a| a == "--sleep-forever") {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    if args.iter().any(|a| a == "--stderr-noise") {
        eprintln!("noise: \u{0}\u{1}\u{1b}[31m\u{b}\u{c}\u{fffe}\u{ffff} <&> ]]> end");
    }
    if let Some(pidfile) = flag(&args, "--fork-child") {
        // The child inherits stdin, stdout and stderr, and outlives us unless its group is killed.
        match std::env::current_exe().and_then(|exe| {
            std::process::Command::new(exe)
                .arg("--sleep-forever")
                .spawn()
        }) {
            Ok(child) => {
                let _ = std::fs::write(&pidfile, child.id().to_string());
            }
            Err(e) => {
                eprintln!("hpa-step-reference: cannot fork a child: {e}");
                std::process::exit(2);
            }
        }
    }

    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut session: Option<CoreSession> = None;
    // The case's previous tick, for what a delta tick leaves out.
    let mut previous: Option<hpa_harness::world::Snapshot> = None;
    // The case's start allows a result without status (and --leave-out-unwritten-status asks).
    let mut unwritten_status = false;
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
            ToImplementation::Stop if ignore_stop => {
                eprintln!("hpa-step-reference: ignoring stop as asked");
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
            }
            ToImplementation::Stop => {
                if let Some(code) = exit_after_stop {
                    eprintln!("hpa-step-reference: exiting with {code} after stop as asked");
                    std::process::exit(code);
                }
                return;
            }
            ToImplementation::End(end) if many_cases => {
                session = None;
                previous = None;
                FromImplementation::Ended(hpa_harness::protocol::Ended {
                    case: Some(end.case),
                })
            }
            ToImplementation::End(_) => {
                eprintln!("hpa-step-reference: unknown message kind \"end\"");
                std::process::exit(2);
            }
            ToImplementation::Start(start) => {
                if let Some(file) = &log_cases {
                    use std::io::Write as _;
                    let _ = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(file)
                        .and_then(|mut f| writeln!(f, "{} {}", std::process::id(), start.case));
                }
                let mut gates = start.feature_gates.clone();
                gates.retain(|k, _| version.has_gate(k));
                for (k, v) in gates.iter_mut() {
                    if version.locks_gate(k) {
                        *v = version.default_gates().get(k).unwrap_or(*v);
                    }
                }
                // A gate fixed by --gates-fixed wins, even over a lock (it poses an
                // implementation that cannot take the case's gates).
                if let Some((k, v)) = &fixed {
                    gates.insert(k.clone(), *v);
                }
                let mut reported = gates.clone();
                if let Some(k) = &unlisted {
                    reported.remove(k);
                }
                let settings = match start.settings.to_settings(&gates, version) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("hpa-step-reference: {e}");
                        std::process::exit(2);
                    }
                };
                previous = None;
                unwritten_status = leave_out_status && start.unwritten_status;
                session = Some(
                    CoreSession::new(settings, ProtocolMemory::to_memory(start.memory.as_ref()))
                        .reporting_memory(start.report_memory),
                );
                FromImplementation::Hello(Hello {
                    protocol: PROTOCOL_VERSION,
                    implementation: Implementation {
                        name: "hpa-step-reference".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                    },
                    feature_gates: reported,
                    memory_seeding,
                    levels: levels.clone(),
                    features: features.clone(),
                    many_cases,
                    delta_ticks,
                    delta_metrics,
                    delta_pods,
                    kubernetes_version: Some(version.name().to_string()),
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
                if endless_at == Some(t) {
                    eprintln!("hpa-step-reference: an endless line at t={t} as asked");
                    let chunk = vec![b'x'; 1 << 20];
                    while out.write_all(&chunk).is_ok() {}
                    std::process::exit(0);
                }
                if long_garbage_at == Some(t) {
                    let words: Vec<String> = (0..100).map(|i| format!("word{i}")).collect();
                    let _ = writeln!(out, "{}", words.join(" "));
                    let _ = out.flush();
                    continue;
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
                if let Some(file) = &log_unchanged {
                    use std::io::Write as _;
                    let mut names: Vec<String> = tick
                        .unchanged
                        .iter()
                        .map(|u| {
                            serde_json::to_string(u)
                                .unwrap_or_default()
                                .replace('"', "")
                        })
                        .collect();
                    if tick.pod_changes.is_some() {
                        names.push("podChanges".into());
                    }
                    let _ = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(file)
                        .and_then(|mut f| writeln!(f, "{t} {}", names.join(",")));
                }
                let snapshot = match (*tick).into_snapshot(previous.as_ref()) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("hpa-step-reference: {e}");
                        std::process::exit(2);
                    }
                };
                let outcome = match s.tick(&snapshot) {
                    Ok(mut o) if replicas_only => {
                        o.status.conditions = None;
                        o.status.current_metrics = None;
                        o.events.clear();
                        o
                    }
                    Ok(o) => o,
                    Err(e) => {
                        eprintln!("hpa-step-reference: {e}");
                        std::process::exit(2);
                    }
                };
                let kept = (unwritten_status
                    && snapshot.hpa.status.as_ref() == Some(&outcome.status))
                    || no_status_at == Some(t);
                previous = Some(snapshot);
                FromImplementation::Result(TickResult {
                    t,
                    scaled_to: outcome.scaled_to,
                    status: (!kept).then_some(outcome.status),
                    events: outcome
                        .events
                        .into_iter()
                        .map(|e| hpa_harness::protocol::ProtocolEvent {
                            type_: e.type_.as_str().into(),
                            reason: e.reason,
                            message: e.message,
                        })
                        .collect(),
                    memory: outcome
                        .memory
                        .as_ref()
                        .and_then(ProtocolMemory::from_memory),
                })
            }
        };
        let mut text = serde_json::to_string(&reply).unwrap_or_default();
        if let (Some((t, raw)), FromImplementation::Result(r)) = (&scaled_to_at, &reply)
            && r.t == *t
            && let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&text)
        {
            v["scaledTo"] = serde_json::Value::Null;
            text = serde_json::to_string(&v)
                .unwrap_or_default()
                .replace("\"scaledTo\":null", &format!("\"scaledTo\":{raw}"));
        }
        if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
            return;
        }
        if let Some(file) = &log_answers {
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .and_then(|mut f| writeln!(f, "{text}"));
        }
        if stop_reading && matches!(reply, FromImplementation::Hello(_)) {
            eprintln!("hpa-step-reference: not reading stdin any more, as asked");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
    }
}
