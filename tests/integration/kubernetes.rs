//! Issue #39: the Kubernetes manifests (`ops/k8s`). Every kustomization there (the base and
//! each overlay; components are rendered through the overlays that use them) is rendered with
//! `kubectl kustomize` and validated with `kubernetes-validate --strict` (PyPI, pinned with
//! every dependency in tests/k8s/requirements.txt, in a venv at tests/k8s/.venv) against the
//! oldest and the newest Kubernetes the pinned version knows; an unknown kind fails too, but
//! for the Prometheus Operator's (which it has no schema of). Then what weaver needs of them:
//! the probes on the metrics listener's `/health` and `/ready`, a non-root, read-only root
//! with no privilege, the image's user, no Service environment variables (weaver reads every
//! `WEAVER_*` one as a config key), resource requests, the data volume where the config puts
//! the data, ports matching the config's listeners, Services and the PodDisruptionBudget
//! selecting the pods, and a ConfigMap whose `weaver.toml` `weaver check-config` accepts.
//! The PrometheusRule must be `ops/weaver-alerts.yml` as generated; the `restore` init
//! step is run for real (sh) on backups `weaver backup` made of a running daemon, which then
//! starts from the restored store.
//!
//! `kubectl` (with its kustomize) and the venv are optional on a developer's machine (SKIPPED
//! with a note), required when `WEAVER_REQUIRE_OPS_TOOLS=1` (`.ci/run` installs both).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::harness::{config_with, devnet_chain, Daemon, BIN};

/// The oldest and the newest Kubernetes versions whose schemas the pinned
/// kubernetes-validate ships.
const KUBERNETES_VERSIONS: [&str; 2] = ["1.25.0", "1.37.0"];
/// Kinds kubernetes-validate has no schema of (it warns and passes them): the Prometheus
/// Operator's, checked here by hand instead.
const CUSTOM_KINDS: [&str; 2] = ["PrometheusRule", "ServiceMonitor"];
const MOVE: &str = "minimove-1";

fn k8s_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ops/k8s")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// kubectl and the venv's kubernetes-validate and python, or None after printing why the
/// check is skipped (a failure instead with `WEAVER_REQUIRE_OPS_TOOLS=1`).
struct Tools {
    kubectl: PathBuf,
    validate: PathBuf,
    python: PathBuf,
}

fn tools() -> Option<Tools> {
    let kubectl = crate::harness::outside_tool(&["kubectl"], "kubectl")?;
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/k8s/.venv/bin");
    let (validate, python) = (venv.join("kubernetes-validate"), venv.join("python3"));
    if !validate.is_file() || !python.is_file() {
        let install = "python3 -m venv tests/k8s/.venv && tests/k8s/.venv/bin/pip install --no-deps -r tests/k8s/requirements.txt (or bash .ci/run)";
        let required = std::env::var("WEAVER_REQUIRE_OPS_TOOLS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "kubernetes-validate is not installed and WEAVER_REQUIRE_OPS_TOOLS=1: {install}"
        );
        eprintln!(
            "SKIPPED: {} not found ({install}); WEAVER_REQUIRE_OPS_TOOLS=1 makes this a failure",
            validate.display()
        );
        return None;
    }
    Some(Tools {
        kubectl,
        validate,
        python,
    })
}

/// `command`'s exit success and its stdout and stderr.
fn output(command: &mut Command) -> (bool, String, String) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Every kustomization under ops/k8s (relative directory → whether it is a Component).
fn kustomizations() -> BTreeMap<String, bool> {
    fn walk(dir: &Path, root: &Path, found: &mut BTreeMap<String, bool>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, found);
            } else if path.file_name().is_some_and(|n| n == "kustomization.yaml") {
                let text = read(&path);
                let relative = dir.strip_prefix(root).unwrap().display().to_string();
                let component = text.lines().any(|l| l.trim() == "kind: Component");
                found.insert(relative, component);
            }
        }
    }
    let mut found = BTreeMap::new();
    walk(&k8s_dir(), &k8s_dir(), &mut found);
    found
}

/// `kubectl kustomize` of one kustomization: the YAML, and the objects as JSON.
fn render(tools: &Tools, relative: &str) -> (String, Vec<Value>) {
    let (ok, yaml, err) = output(
        Command::new(&tools.kubectl)
            .arg("kustomize")
            .arg(k8s_dir().join(relative)),
    );
    assert!(ok, "kubectl kustomize ops/k8s/{relative} failed:\n{err}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rendered.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let (ok, json, err) = output(
        Command::new(&tools.python)
            .arg("-c")
            .arg("import json, sys, yaml; json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d], sys.stdout)")
            .arg(&file),
    );
    assert!(ok, "YAML of ops/k8s/{relative}: {err}");
    (yaml, serde_json::from_str(&json).unwrap())
}

/// `kubernetes-validate --strict` of rendered YAML against every version in
/// [`KUBERNETES_VERSIONS`]: no error, and warnings only about [`CUSTOM_KINDS`].
fn validate(tools: &Tools, relative: &str, yaml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join(format!("{}.yaml", relative.replace('/', "-")));
    std::fs::write(&file, yaml).unwrap();
    for version in KUBERNETES_VERSIONS {
        let (ok, out, err) = output(
            Command::new(&tools.validate)
                .args(["--strict", "--quiet", "--kubernetes-version", version])
                .arg(&file),
        );
        let text = format!("{out}{err}");
        assert!(
            ok && !text.contains("ERROR"),
            "kubernetes-validate --strict -k {version} of ops/k8s/{relative}:\n{text}"
        );
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            assert!(
                CUSTOM_KINDS
                    .iter()
                    .any(|kind| line.contains(&format!("schema for kind {kind} "))),
                "kubernetes-validate -k {version} of ops/k8s/{relative}: {line}"
            );
        }
    }
}

/// Every object of `kind`.
fn find<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// The one object of `kind` named `name`.
fn one<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = find(objects, kind)
        .into_iter()
        .filter(|o| o["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} {name}: {found:?}");
    found[0]
}

fn array(value: &Value) -> &Vec<Value> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
}

fn named<'a>(items: &'a Value, name: &str) -> &'a Value {
    array(items)
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {items}"))
}

/// Whether every `selector` label is among `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    let selector = selector.as_object().expect("a selector");
    !selector.is_empty() && selector.iter().all(|(k, v)| labels[k] == *v)
}

/// The port of a `listen = "host:port"` address.
fn port_of(listen: &Value) -> u64 {
    listen
        .as_str()
        .and_then(|l| l.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("not a listen address: {listen}"))
}

/// The image's user id (`ARG USER_ID=` of the Containerfile).
fn image_user_id() -> u64 {
    let containerfile = read(&k8s_dir().join("../container/Containerfile"));
    containerfile
        .lines()
        .find_map(|l| l.strip_prefix("ARG USER_ID="))
        .and_then(|id| id.trim().parse().ok())
        .expect("the Containerfile's ARG USER_ID=")
}

/// What weaver needs of a rendering holding the StatefulSet.
fn check_weaver_objects(relative: &str, objects: &[Value]) {
    let context = |what: &str| format!("ops/k8s/{relative}: {what}");
    let sts = one(objects, "StatefulSet", "weaver");
    let pod = &sts["spec"]["template"]["spec"];
    let pod_labels = &sts["spec"]["template"]["metadata"]["labels"];
    assert!(
        selects(&sts["spec"]["selector"]["matchLabels"], pod_labels),
        "{}",
        context("the StatefulSet's selector")
    );

    // The config: check-config accepts it; its listeners and data dir match the pod.
    let config_volume = named(&pod["volumes"], "config");
    let config_map_name = config_volume["configMap"]["name"].as_str().unwrap();
    let config_map = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == config_map_name)
        .unwrap_or_else(|| panic!("{}", context("the config volume's ConfigMap")));
    let text = config_map["data"]["weaver.toml"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", context("weaver.toml in the ConfigMap")));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("weaver.toml");
    std::fs::write(&file, text).unwrap();
    // With the container's environment: a WEAVER_* variable there is a config key too.
    let weaver = named(&pod["containers"], "weaver");
    let env: Vec<(String, String)> = weaver["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_string(),
                e["value"].as_str()?.to_string(),
            ))
        })
        .collect();
    let (ok, out, err) = output(
        Command::new(BIN)
            .arg("--config")
            .arg(&file)
            .arg("check-config")
            .envs(env),
    );
    assert!(ok, "{}: {out}{err}", context("weaver check-config"));
    let config: Value = serde_json::to_value(text.parse::<toml::Table>().unwrap()).unwrap();

    let ports: BTreeMap<String, u64> = array(&weaver["ports"])
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["containerPort"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ports["metrics"],
        port_of(&config["metrics"]["listen"]),
        "{}",
        context("the metrics port")
    );
    assert_eq!(
        ports["router"],
        port_of(&config["router"]["listen"]),
        "{}",
        context("the router port")
    );
    let chain_ports: Vec<u64> = array(&config["chains"])
        .iter()
        .filter(|c| c.get("listen").is_some())
        .map(|c| port_of(&c["listen"]))
        .collect();
    for port in &chain_ports {
        assert!(
            ports.values().any(|p| p == port),
            "{}",
            context(&format!(
                "no container port for the indexer listener :{port}"
            ))
        );
    }
    // The config path the image reads (WEAVER_CONFIG=/etc/weaver/weaver.toml).
    let config_mount = named(&weaver["volumeMounts"], "config");
    assert_eq!(config_mount["mountPath"], "/etc/weaver");

    // The data directory on the claim of every replica.
    let data_dir = config["data_dir"].as_str().unwrap();
    let data_mount = named(&weaver["volumeMounts"], "data");
    let mount_path = data_mount["mountPath"].as_str().unwrap();
    assert!(
        data_dir.starts_with(&format!("{mount_path}/")),
        "{}",
        context(&format!(
            "data_dir {data_dir} is not on the data volume ({mount_path})"
        ))
    );
    let claim = array(&sts["spec"]["volumeClaimTemplates"])
        .iter()
        .find(|c| c["metadata"]["name"] == "data")
        .unwrap_or_else(|| panic!("{}", context("the volumeClaimTemplate data")));
    assert_eq!(claim["spec"]["accessModes"][0], "ReadWriteOnce");

    // Probes: liveness and startup on /health, readiness on /ready, on the metrics listener.
    for (probe, path) in [
        ("livenessProbe", "/health"),
        ("startupProbe", "/health"),
        ("readinessProbe", "/ready"),
    ] {
        let get = &weaver[probe]["httpGet"];
        assert_eq!(get["path"], path, "{}", context(probe));
        let port = match &get["port"] {
            Value::String(name) => ports[name.as_str()],
            other => other.as_u64().unwrap(),
        };
        assert_eq!(port, ports["metrics"], "{}", context(probe));
    }
    // A long start (a large store opening, a restore just copied) is not a failure.
    let startup = &weaver["startupProbe"];
    let allowed = startup["periodSeconds"].as_u64().unwrap_or(10)
        * startup["failureThreshold"].as_u64().unwrap_or(3);
    assert!(
        allowed >= 600,
        "{}",
        context(&format!("the startup probe allows {allowed} s"))
    );

    // Security: non-root (the image's user), read-only root, nothing to escalate.
    let security = &pod["securityContext"];
    assert_eq!(
        security["runAsNonRoot"],
        true,
        "{}",
        context("runAsNonRoot")
    );
    assert_eq!(
        security["runAsUser"].as_u64(),
        Some(image_user_id()),
        "{}",
        context("runAsUser")
    );
    assert!(security["fsGroup"].is_u64(), "{}", context("fsGroup"));
    assert_eq!(
        pod["enableServiceLinks"],
        false,
        "{}",
        context("enableServiceLinks (WEAVER_* Service variables are config keys to weaver)")
    );
    let containers: Vec<&Value> = array(&pod["containers"])
        .iter()
        .chain(pod["initContainers"].as_array().into_iter().flatten())
        .collect();
    for container in &containers {
        let name = container["name"].as_str().unwrap();
        let security = &container["securityContext"];
        assert_eq!(
            security["readOnlyRootFilesystem"],
            true,
            "{}",
            context(&format!("{name}: readOnlyRootFilesystem"))
        );
        assert_eq!(
            security["allowPrivilegeEscalation"],
            false,
            "{}",
            context(&format!("{name}: allowPrivilegeEscalation"))
        );
        assert_eq!(
            security["capabilities"]["drop"][0],
            "ALL",
            "{}",
            context(&format!("{name}: capabilities"))
        );
        let requests = &container["resources"]["requests"];
        assert!(
            requests["cpu"].is_string() && requests["memory"].is_string(),
            "{}",
            context(&format!("{name}: resource requests"))
        );
        let image = container["image"].as_str().unwrap();
        assert!(
            image.ends_with(&format!(":{}", env!("CARGO_PKG_VERSION"))),
            "{}",
            context(&format!("{name}: image {image}"))
        );
    }

    // Services: the clients' one (router, indexers) and the StatefulSet's headless one.
    let api = one(objects, "Service", "weaver");
    assert!(selects(&api["spec"]["selector"], pod_labels));
    let api_ports: Vec<u64> = array(&api["spec"]["ports"])
        .iter()
        .map(|p| p["port"].as_u64().unwrap())
        .collect();
    assert!(
        api_ports.contains(&ports["router"]),
        "{}",
        context("the router Service port")
    );
    for port in &chain_ports {
        assert!(
            api_ports.contains(port),
            "{}",
            context("an indexer Service port")
        );
    }
    let headless_name = sts["spec"]["serviceName"].as_str().unwrap();
    let headless = one(objects, "Service", headless_name);
    assert_eq!(headless["spec"]["clusterIP"], "None");
    assert!(selects(&headless["spec"]["selector"], pod_labels));
    let pdb = one(objects, "PodDisruptionBudget", "weaver");
    assert!(selects(&pdb["spec"]["selector"]["matchLabels"], pod_labels));

    // The restore step mounts the data volume and the backup volume, read-only.
    let restore = named(&pod["initContainers"], "restore");
    assert_eq!(
        named(&restore["volumeMounts"], "data")["mountPath"],
        mount_path
    );
    assert_eq!(named(&restore["volumeMounts"], "backup")["readOnly"], true);
    named(&pod["volumes"], "backup");

    // Prometheus Operator objects, where rendered: the ServiceMonitor scrapes /metrics of
    // every replica through the headless Service, as job "weaver" (the alerts' WeaverDown).
    for monitor in find(objects, "ServiceMonitor") {
        let selector = &monitor["spec"]["selector"]["matchLabels"];
        assert!(
            selects(selector, &headless["metadata"]["labels"]),
            "{}",
            context("the ServiceMonitor selects the headless Service")
        );
        assert!(!selects(selector, &api["metadata"]["labels"]));
        let job_label = monitor["spec"]["jobLabel"].as_str().unwrap();
        assert_eq!(headless["metadata"]["labels"][job_label], "weaver");
        let endpoint = &monitor["spec"]["endpoints"][0];
        assert_eq!(endpoint["path"], "/metrics");
        named(
            &headless["spec"]["ports"],
            endpoint["port"].as_str().unwrap(),
        );
    }
    for rule in find(objects, "PrometheusRule") {
        assert!(
            !array(&rule["spec"]["groups"]).is_empty(),
            "{}",
            context("PrometheusRule groups")
        );
    }
    // A backup claim, where one is mounted: shared by every replica.
    if let Some(claim) =
        named(&pod["volumes"], "backup")["persistentVolumeClaim"]["claimName"].as_str()
    {
        let pvc = one(objects, "PersistentVolumeClaim", claim);
        assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany");
        assert_eq!(
            named(&weaver["volumeMounts"], "backup")["mountPath"],
            "/backup"
        );
    }
}

#[test]
fn kubernetes_manifests_render_validate_and_hold_what_weaver_needs() {
    let Some(tools) = tools() else { return };
    let found = kustomizations();
    assert!(found.contains_key("base"), "{found:?}");
    let rendered: Vec<&String> = found.iter().filter(|(_, c)| !**c).map(|(k, _)| k).collect();
    // Every component is used by a rendered kustomization (so it is rendered and validated).
    for (component, _) in found.iter().filter(|(_, c)| **c) {
        let name = Path::new(component).file_name().unwrap().to_str().unwrap();
        assert!(
            rendered
                .iter()
                .any(|k| read(&k8s_dir().join(k).join("kustomization.yaml"))
                    .contains(&format!("components/{name}"))),
            "no overlay uses ops/k8s/{component}: it is never rendered"
        );
    }
    let mut replicas = BTreeMap::new();
    for relative in &rendered {
        let (yaml, objects) = render(&tools, relative);
        validate(&tools, relative, &yaml);
        check_weaver_objects(relative, &objects);
        let sts = one(&objects, "StatefulSet", "weaver");
        replicas.insert(
            relative.to_string(),
            sts["spec"]["replicas"].as_u64().unwrap(),
        );
        let kinds: Vec<&str> = objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        eprintln!(
            "ops/k8s/{relative}: rendered and valid: {}",
            kinds.join(", ")
        );
    }
    assert_eq!(replicas["base"], 1, "{replicas:?}");
    assert!(replicas["overlays/replicas"] > 1, "{replicas:?}");
    // The full overlay has the optional objects.
    let (_, full) = render(&tools, "overlays/full");
    one(&full, "PrometheusRule", "weaver");
    one(&full, "ServiceMonitor", "weaver");
    one(&full, "PersistentVolumeClaim", "weaver-backups");
}

/// The PrometheusRule is ops/weaver-alerts.yml under `spec:`, as its header's command makes it.
#[test]
fn kubernetes_prometheus_rule_is_generated_from_the_alert_rules() {
    let rule_path = k8s_dir().join("components/prometheus/prometheusrule.yaml");
    let rule = read(&rule_path);
    let alerts = read(&k8s_dir().join("../weaver-alerts.yml"));
    let (head, _) = rule
        .split_once("\nspec:\n")
        .expect("prometheusrule.yaml has a `spec:` line");
    let indented: String = alerts
        .lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    let generated = format!("{head}\nspec:\n{indented}");
    assert!(
        rule == generated,
        "{} is not ops/weaver-alerts.yml as generated: regenerate it with the command in its header",
        rule_path.display()
    );
    assert!(head.contains("kind: PrometheusRule"));
}

/// The `restore` init container's script, run with sh on a real backup of a running daemon:
/// the latest complete backup is copied in; a volume holding a store is never touched; an
/// empty RESTORE_FROM or no backup start empty; a named backup that does not exist fails.
/// A daemon started on the restored volume serves what the backup held at once.
#[test]
fn kubernetes_restore_step_starts_a_replica_from_the_latest_backup() {
    let Some(tools) = tools() else { return };
    let (_, objects) = render(&tools, "base");
    let sts = one(&objects, "StatefulSet", "weaver");
    let restore = named(
        &sts["spec"]["template"]["spec"]["initContainers"],
        "restore",
    );
    let command = array(&restore["command"]);
    assert_eq!(command[0], "/bin/sh");
    assert_eq!(command[1], "-c");
    let script = command[2].as_str().unwrap();
    assert_eq!(
        named(&restore["env"], "RESTORE_FROM")["value"],
        "latest",
        "the default"
    );
    for path in ["/var/lib/weaver/data", "/backup"] {
        assert!(script.contains(path), "the script no longer uses {path}");
    }

    // A daemon with data, and a backup of it taken through the CLI while it runs.
    let daemon = Daemon::start(&config_with(&devnet_chain(MOVE, "move", "")));
    daemon.wait_height(MOVE, 20);
    let height = daemon.height(MOVE);
    let base = daemon.chain_url(MOVE);
    let txs = daemon.ok(&format!("{base}/indexer/tx/v1/txs?pagination.limit=1"));
    let hash = txs["txs"][0]["txhash"].as_str().unwrap().to_string();
    let tx = daemon.ok(&format!("{base}/indexer/tx/v1/txs/{hash}"));
    let work = tempfile::tempdir().unwrap();
    let backups = work.path().join("backups");
    let latest = backups.join("20261126T0300Z");
    let (ok, out, err) = output(
        Command::new(BIN)
            .arg("--config")
            .arg(&daemon.config)
            .arg("--data-dir")
            .arg(daemon.dir.as_ref().unwrap().path().join("data"))
            .arg("backup")
            .arg("--to")
            .arg(&latest),
    );
    assert!(ok, "weaver backup: {out}{err}");
    let (_dir, config, exit) = daemon.stop();
    assert!(exit.success());
    // An older backup, and a newer one that never completed (only db.partial).
    std::fs::create_dir_all(backups.join("20250101T0000Z/db")).unwrap();
    std::fs::write(backups.join("20250101T0000Z/db/old"), "old").unwrap();
    std::fs::create_dir_all(backups.join("20261231T0000Z/db.partial")).unwrap();

    let run = |volume: &Path, restore_from: &str| {
        let script = script
            .replace(
                "/var/lib/weaver/data",
                volume.join("data").to_str().unwrap(),
            )
            .replace("/backup", backups.to_str().unwrap());
        output(
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .env("RESTORE_FROM", restore_from),
        )
    };

    // Nothing to restore: an empty RESTORE_FROM, or no complete backup.
    let empty = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(empty.path(), "");
    assert!(ok && !empty.path().join("data/db").exists(), "{out}{err}");
    let (ok, out, err) = run(empty.path(), "19990101T0000Z");
    assert!(
        !ok,
        "a named backup that does not exist must fail: {out}{err}"
    );
    assert!(!empty.path().join("data/db").exists());

    // The latest complete backup.
    let restored = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(restored.path(), "latest");
    assert!(ok, "{out}{err}");
    assert!(out.contains("20261126T0300Z/db"), "{out}");
    let db = restored.path().join("data/db");
    assert!(db.is_dir() && !db.join("old").exists(), "{out}");
    assert!(!restored.path().join("data/db.restoring").exists());
    // Again: the store is there, nothing is touched.
    std::fs::write(db.join("marker"), "kept").unwrap();
    let (ok, out, err) = run(restored.path(), "latest");
    assert!(ok && out.contains("nothing to do"), "{out}{err}");
    assert_eq!(std::fs::read_to_string(db.join("marker")).unwrap(), "kept");
    std::fs::remove_file(db.join("marker")).unwrap();

    // A daemon on the restored volume starts where the backup was taken.
    let replica = Daemon::start_in(restored, config);
    let first = replica.height(MOVE);
    assert!(
        first >= height,
        "the restored replica started at {first}, below the backup's {height}"
    );
    let (status, _, body) = replica.get(&format!(
        "{}/indexer/tx/v1/txs/{hash}",
        replica.chain_url(MOVE)
    ));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, tx);
    let (_, _, exit) = replica.stop();
    assert!(exit.success());
}
