//! The deploy recipes run as written. `deploy/k8s/sweep-job.yaml` and
//! `deploy/ci/github-actions-sweep.yml` are parsed, checked structurally
//! (an Indexed Job, its index variable, the volume the merge reads, one
//! shard count), and their commands are run here the way each engine runs
//! them: every Job index / matrix value as a separate process in its own
//! working directory, with `JOB_COMPLETION_INDEX` or the matrix value set,
//! sharing only the results volume / the artifacts. The merged report,
//! JUnit and HTML must equal the unsharded run's byte for byte, so the files
//! cannot drift from the CLI. `deploy/Containerfile` is checked
//! structurally (building it is too slow for a test).
//!
//! Only the sweep size is overridden (a few scenarios, a few hundred
//! seeds), the way a user edits the ConfigMap or the workflow's `env`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use yaml_rust2::{Yaml, YamlLoader};

/// Small and mixed: a scripted article scenario and a random-faults one.
const SCENARIOS: &str =
    "scenarios/article/gc-pause-stale-write.toml scenarios/random/random-faults-fenced-cas.toml";
const SEEDS: &str = "240";
/// No command of a recipe may take longer (the merge's wait loop included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(super) fn bin_dir() -> PathBuf {
    crate::common::bin()
        .parent()
        .expect("the binary has a directory")
        .to_path_buf()
}

fn load_yaml(rel: &str) -> Vec<Yaml> {
    let text = std::fs::read_to_string(repo().join(rel)).expect("recipe readable");
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn str_of<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{what}: expected a string, found {y:?}"))
}

fn list<'a>(y: &'a Yaml, what: &str) -> &'a [Yaml] {
    y.as_vec()
        .unwrap_or_else(|| panic!("{what}: expected a list, found {y:?}"))
}

/// A fresh machine: an empty working directory with the checkout's
/// scenarios and models, as the image's WORKDIR or a CI checkout has them.
pub(super) fn machine(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for d in ["scenarios", "models"] {
        std::os::unix::fs::symlink(repo().join(d), dir.join(d)).unwrap();
    }
    dir
}

/// Runs `script` under `shell` in `cwd` with exactly `env` (nothing
/// inherited), killed after [`COMMAND_TIMEOUT`].
pub(super) fn sh(
    shell: &[&str],
    script: &str,
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Output {
    let mut child = Command::new(shell[0])
        .args(&shell[1..])
        .arg(script)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("shell starts");
    // Drain the pipes on threads: a full pipe would block the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).map(|_| v)
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).map(|_| v)
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > COMMAND_TIMEOUT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("timed out after {COMMAND_TIMEOUT:?}: {script}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}

pub(super) fn show(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub(super) fn base_path() -> String {
    "/usr/local/bin:/usr/bin:/bin".to_string()
}

/// What the unsharded run writes: (exit code, JSON, JUnit, HTML directory).
pub(super) struct Unsharded {
    pub(super) code: Option<i32>,
    pub(super) json: Vec<u8>,
    pub(super) junit: Vec<u8>,
    pub(super) html: PathBuf,
}

pub(super) fn unsharded(root: &Path, scenarios: &str, seeds: &str) -> Unsharded {
    let dir = machine(root, "unsharded");
    let env = BTreeMap::from([(
        "PATH".to_string(),
        format!("{}:{}", bin_dir().display(), base_path()),
    )]);
    let run = sh(
        &["sh", "-c"],
        &format!(
            "fencesim run {scenarios} --seeds {seeds} --format json --junit junit.xml --report html"
        ),
        &dir,
        &env,
    );
    assert!(matches!(run.status.code(), Some(0 | 1)), "{}", show(&run));
    Unsharded {
        code: run.status.code(),
        json: run.stdout,
        junit: std::fs::read(dir.join("junit.xml")).unwrap(),
        html: dir.join("html"),
    }
}

/// Every file under `dir`, by relative path.
pub(super) fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                files.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

pub(super) fn assert_same_as_unsharded(
    base: &Unsharded,
    code: Option<i32>,
    json: &[u8],
    junit: &Path,
    html: &Path,
) {
    assert_eq!(code, base.code, "merged exit code");
    assert_eq!(
        String::from_utf8_lossy(json),
        String::from_utf8_lossy(&base.json),
        "merged JSON report"
    );
    assert_eq!(std::fs::read(junit).unwrap(), base.junit, "merged JUnit");
    let (merged, unsharded) = (tree(html), tree(&base.html));
    assert!(unsharded.contains_key(Path::new("index.html")));
    assert_eq!(
        merged.keys().collect::<Vec<_>>(),
        unsharded.keys().collect::<Vec<_>>()
    );
    assert!(merged == unsharded, "merged HTML report differs");
}

// ---------------------------------------------------------------- Containerfile

#[test]
fn containerfile_builds_in_one_stage_and_runs_unprivileged_in_another() {
    let text = std::fs::read_to_string(repo().join("deploy/Containerfile")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let froms: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("FROM "))
        .copied()
        .collect();
    assert_eq!(froms.len(), 2, "multi-stage: a build and a runtime stage");
    assert!(froms[0].ends_with(" AS build"), "{}", froms[0]);
    let runtime = lines
        .iter()
        .position(|l| l.starts_with("FROM ") && !l.ends_with(" AS build"))
        .unwrap();
    let (build, run) = lines.split_at(runtime);
    assert!(build
        .iter()
        .any(|l| l.starts_with("RUN cargo build --release --locked")));
    assert!(run
        .iter()
        .any(|l| l.starts_with("COPY --from=build /src/target/release/fencesim ")));
    for dir in ["scenarios", "models"] {
        assert!(
            run.contains(&format!("COPY {dir} {dir}").as_str()),
            "runtime stage bundles {dir}/"
        );
    }
    // Every target Cargo.toml names must be in the build context.
    for copied in [
        "COPY Cargo.toml Cargo.lock ./",
        "COPY src src",
        "COPY benches benches",
    ] {
        assert!(build.contains(&copied), "{copied}");
    }
    let user = run
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("a USER in the runtime stage");
    let uid = user.split(':').next().unwrap();
    assert!(uid != "0" && uid != "root", "runs as non-root, not {user}");
    assert_eq!(workdir(), "/opt/fencesim");
    assert!(run.contains(&r#"ENTRYPOINT ["fencesim"]"#));
}

/// The runtime stage's working directory (where scenario paths resolve).
fn workdir() -> String {
    let text = std::fs::read_to_string(repo().join("deploy/Containerfile")).unwrap();
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("WORKDIR "))
        .expect("a WORKDIR")
        .to_string()
}

// ---------------------------------------------------------------- Kubernetes

struct K8s {
    config: BTreeMap<String, String>,
    completions: i64,
    claim: String,
    sweep_script: String,
    wait_script: String,
    merge_script: String,
}

fn the_container<'a>(pod: &'a Yaml, key: &str, what: &str) -> &'a Yaml {
    let containers = list(&pod[key], what);
    assert_eq!(containers.len(), 1, "{what}: one container");
    &containers[0]
}

fn sh_c_script(c: &Yaml, what: &str) -> String {
    let command = list(&c["command"], what);
    assert_eq!(command.len(), 3, "{what}: sh -c SCRIPT");
    assert_eq!(str_of(&command[0], what), "sh");
    assert_eq!(str_of(&command[1], what), "-c");
    str_of(&command[2], what).to_string()
}

/// Checks a container of either Job and returns its script.
fn check_container(
    c: &Yaml,
    config_name: &str,
    results_dir: &str,
    claim: &str,
    pod: &Yaml,
) -> String {
    let name = str_of(&c["name"], "container name");
    assert_eq!(
        str_of(&c["image"], name),
        "fencesim:0.1.0",
        "{name}: one image"
    );
    assert_eq!(
        str_of(&c["workingDir"], name),
        workdir(),
        "{name}: the image's WORKDIR"
    );
    let env_from = list(&c["envFrom"], name);
    assert!(
        env_from
            .iter()
            .any(|e| e["configMapRef"]["name"].as_str() == Some(config_name)),
        "{name}: reads the ConfigMap"
    );
    let mounts = list(&c["volumeMounts"], name);
    assert_eq!(mounts.len(), 1);
    assert_eq!(
        str_of(&mounts[0]["mountPath"], name),
        results_dir,
        "{name}: mounts RESULTS_DIR"
    );
    let volume = str_of(&mounts[0]["name"], name);
    let volumes = list(&pod["volumes"], "volumes");
    let v = volumes
        .iter()
        .find(|v| v["name"].as_str() == Some(volume))
        .unwrap_or_else(|| panic!("{name}: volume {volume} declared"));
    assert_eq!(
        str_of(&v["persistentVolumeClaim"]["claimName"], name),
        claim,
        "{name}: the shared results claim"
    );
    assert_eq!(pod["securityContext"]["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
    sh_c_script(c, name)
}

fn k8s() -> K8s {
    let docs = load_yaml("deploy/k8s/sweep-job.yaml");
    let of_kind = |kind: &str| -> Vec<&Yaml> {
        docs.iter()
            .filter(|d| d["kind"].as_str() == Some(kind))
            .collect()
    };
    let [cm] = of_kind("ConfigMap")[..] else {
        panic!("one ConfigMap")
    };
    let [pvc] = of_kind("PersistentVolumeClaim")[..] else {
        panic!("one PVC")
    };
    let jobs = of_kind("Job");
    assert_eq!(jobs.len(), 2, "the sweep and the merge");
    let config_name = str_of(&cm["metadata"]["name"], "ConfigMap name");
    let config: BTreeMap<String, String> = cm["data"]
        .as_hash()
        .expect("ConfigMap data")
        .iter()
        .map(|(k, v)| {
            (
                str_of(k, "key").to_string(),
                str_of(v, "ConfigMap values are strings").to_string(),
            )
        })
        .collect();
    let results_dir = &config["RESULTS_DIR"];
    let claim = str_of(&pvc["metadata"]["name"], "PVC name").to_string();
    assert!(list(&pvc["spec"]["accessModes"], "accessModes")
        .iter()
        .any(|m| m.as_str() == Some("ReadWriteMany")));
    let (sweep, merge) = match jobs[0]["spec"]["completionMode"].as_str() {
        Some("Indexed") => (jobs[0], jobs[1]),
        _ => (jobs[1], jobs[0]),
    };
    for job in [sweep, merge] {
        assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"));
    }
    let spec = &sweep["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    assert!(
        merge["spec"]["completionMode"].is_badvalue(),
        "the merge is one pod"
    );
    let completions = spec["completions"].as_i64().expect("completions");
    let parallelism = spec["parallelism"].as_i64().expect("parallelism");
    let shards: i64 = config["SHARDS"].parse().expect("SHARDS is a number");
    assert_eq!(completions, shards, "completions = the ConfigMap's SHARDS");
    assert!((1..=completions).contains(&parallelism));
    let pod = &spec["template"]["spec"];
    let c = the_container(pod, "containers", "sweep");
    let sweep_script = check_container(c, config_name, results_dir, &claim, pod);
    assert!(sweep_script.contains(r#"--shard "$JOB_COMPLETION_INDEX/$SHARDS""#));
    let rule = &list(&spec["podFailurePolicy"]["rules"], "podFailurePolicy")[0];
    assert_eq!(rule["action"].as_str(), Some("FailJob"));
    assert_eq!(
        rule["onExitCodes"]["containerName"].as_str(),
        c["name"].as_str()
    );
    let mpod = &merge["spec"]["template"]["spec"];
    let wait = the_container(mpod, "initContainers", "merge init");
    let wait_script = check_container(wait, config_name, results_dir, &claim, mpod);
    let m = the_container(mpod, "containers", "merge");
    let merge_script = check_container(m, config_name, results_dir, &claim, mpod);
    assert!(merge_script.contains("fencesim merge"));
    K8s {
        config,
        completions,
        claim,
        sweep_script,
        wait_script,
        merge_script,
    }
}

#[test]
fn kubernetes_indexed_job_shards_merge_into_the_unsharded_report() {
    let k = k8s();
    assert_eq!(k.claim, "fencesim-results");
    let root = tempfile::tempdir().unwrap();
    let results = root.path().join("volume");
    std::fs::create_dir(&results).unwrap();
    let mut env = k.config.clone();
    env.insert("SEEDS".into(), SEEDS.into());
    env.insert("SCENARIOS".into(), SCENARIOS.into());
    env.insert("RESULTS_DIR".into(), results.display().to_string());
    // The image has fencesim in /usr/local/bin.
    env.insert(
        "PATH".into(),
        format!("{}:{}", bin_dir().display(), base_path()),
    );
    // Every index, as its own pod would run it.
    for index in 0..k.completions {
        let dir = machine(root.path(), &format!("pod-{index}"));
        let mut env = env.clone();
        env.insert("JOB_COMPLETION_INDEX".into(), index.to_string());
        let out = sh(&["sh", "-c"], &k.sweep_script, &dir, &env);
        assert_eq!(out.status.code(), Some(0), "index {index}: {}", show(&out));
    }
    let shards: Vec<_> = tree(&results).into_keys().collect();
    assert_eq!(
        shards.len() as i64,
        k.completions,
        "one file per index: {shards:?}"
    );
    let dir = machine(root.path(), "merge-pod");
    let wait = sh(&["sh", "-c"], &k.wait_script, &dir, &env);
    assert_eq!(wait.status.code(), Some(0), "{}", show(&wait));
    let merge = sh(&["sh", "-c"], &k.merge_script, &dir, &env);
    assert!(
        String::from_utf8_lossy(&merge.stdout).contains("gc-pause-stale-write"),
        "the table in the log: {}",
        show(&merge)
    );
    let base = unsharded(root.path(), SCENARIOS, SEEDS);
    assert_same_as_unsharded(
        &base,
        merge.status.code(),
        &std::fs::read(results.join("report.json")).unwrap(),
        &results.join("junit.xml"),
        &results.join("html"),
    );
    // The same merge over an incomplete volume refuses, naming the gap.
    std::fs::remove_file(results.join("shard-3.json")).unwrap();
    let partial = sh(&["sh", "-c"], &k.merge_script, &dir, &env);
    assert_eq!(partial.status.code(), Some(2), "{}", show(&partial));
    assert!(String::from_utf8_lossy(&partial.stderr).contains("missing shards: 3/8"));
}

// ---------------------------------------------------------------- GitHub Actions

/// The shell GitHub Actions runs `run:` steps with on Linux.
const GHA_SHELL: [&str; 5] = ["bash", "--noprofile", "--norc", "-eo", "pipefail"];

/// Fills in the `${{ … }}` expressions the steps use; any other is a test failure.
fn expand(text: &str, matrix_shard: Option<&str>) -> String {
    let mut s = text.to_string();
    if let Some(shard) = matrix_shard {
        s = s.replace("${{ matrix.shard }}", shard);
    }
    assert!(!s.contains("${{"), "unhandled expression in {text:?}");
    s
}

/// One job's steps on a fresh runner. Returns the artifacts it uploaded
/// (name → files) and the job's exit code: its first failing `run` step's,
/// else 0.
fn run_job(
    steps: &[Yaml],
    dir: &Path,
    env: &BTreeMap<String, String>,
    shard: Option<&str>,
    downloads: &BTreeMap<String, Vec<PathBuf>>,
) -> (BTreeMap<String, Vec<PathBuf>>, Option<i32>) {
    // The runner's checkout has a target/release the build step filled: ours.
    std::fs::create_dir(dir.join("target")).unwrap();
    std::os::unix::fs::symlink(bin_dir(), dir.join("target/release")).unwrap();
    let github_path = dir.join("github-path");
    let mut last: Option<i32> = None;
    std::fs::write(&github_path, "").unwrap();
    let mut uploads = BTreeMap::new();
    for (n, step) in steps.iter().enumerate() {
        // A failed step skips the rest of the job but `if: always()` steps.
        if last.is_some_and(|c| c != 0) && step["if"].as_str() != Some("always()") {
            continue;
        }
        if let Some(action) = step["uses"].as_str() {
            let with = &step["with"];
            match action {
                "actions/checkout@v4" => {}
                "actions/upload-artifact@v4" => {
                    let name = expand(str_of(&with["name"], "artifact name"), shard);
                    let files = str_of(&with["path"], "artifact path")
                        .lines()
                        .map(|p| dir.join(expand(p.trim(), shard)))
                        .collect::<Vec<_>>();
                    for f in &files {
                        assert!(f.exists(), "uploaded {} exists", f.display());
                    }
                    uploads.insert(name, files);
                }
                "actions/download-artifact@v4" => {
                    assert_eq!(with["merge-multiple"].as_bool(), Some(true));
                    let pattern = str_of(&with["pattern"], "pattern");
                    let prefix = pattern.strip_suffix('*').expect("a prefix pattern");
                    let into = dir.join(str_of(&with["path"], "download path"));
                    std::fs::create_dir_all(&into).unwrap();
                    for (name, files) in downloads {
                        if name.starts_with(prefix) {
                            for f in files {
                                std::fs::copy(f, into.join(f.file_name().unwrap())).unwrap();
                            }
                        }
                    }
                }
                other => panic!("unexpected action {other}"),
            }
            continue;
        }
        let script = str_of(&step["run"], "a step is `uses` or `run`");
        if script.starts_with("cargo build --release") {
            continue; // the binary under test is that build
        }
        let mut env = env.clone();
        if let Some(step_env) = step["env"].as_hash() {
            for (k, v) in step_env {
                env.insert(
                    str_of(k, "env").into(),
                    expand(str_of(v, "env value"), shard),
                );
            }
        }
        let added = std::fs::read_to_string(&github_path).unwrap();
        let mut path: Vec<String> = added.lines().rev().map(String::from).collect();
        path.push(base_path());
        env.insert("PATH".into(), path.join(":"));
        env.insert("GITHUB_PATH".into(), github_path.display().to_string());
        env.insert(
            "GITHUB_OUTPUT".into(),
            dir.join("github-output").display().to_string(),
        );
        // The runner writes the step to a file and runs `bash … {0}` on it.
        let file = dir.join(format!("step-{n}.sh"));
        std::fs::write(&file, expand(script, shard)).unwrap();
        let out = sh(&GHA_SHELL, &file.display().to_string(), dir, &env);
        let code = out.status.code();
        assert!(matches!(code, Some(0 | 1)), "{script}: {}", show(&out));
        if last.is_none_or(|c| c == 0) {
            last = code;
        }
    }
    (uploads, last)
}

#[test]
fn github_actions_matrix_shards_merge_into_the_unsharded_report() {
    let docs = load_yaml("deploy/ci/github-actions-sweep.yml");
    let wf = &docs[0];
    let jobs = &wf["jobs"];
    let mut env: BTreeMap<String, String> = wf["env"]
        .as_hash()
        .expect("workflow env")
        .iter()
        .map(|(k, v)| {
            (
                str_of(k, "env").into(),
                str_of(v, "env values are strings").into(),
            )
        })
        .collect();
    let shards: u64 = env["SHARDS"].parse().expect("SHARDS is a number");
    env.insert("SEEDS".into(), SEEDS.into());
    env.insert("SCENARIOS".into(), SCENARIOS.into());
    let sweep = &jobs["sweep"];
    let merge = &jobs["merge"];
    assert_eq!(sweep["needs"].as_str(), Some("plan"));
    assert_eq!(merge["needs"].as_str(), Some("sweep"));
    assert_eq!(sweep["strategy"]["fail-fast"].as_bool(), Some(false));
    assert_eq!(
        sweep["strategy"]["matrix"]["shard"].as_str(),
        Some("${{ fromJSON(needs.plan.outputs.shards) }}"),
        "the matrix comes from SHARDS"
    );
    assert_eq!(
        jobs["plan"]["outputs"]["shards"].as_str(),
        Some("${{ steps.shards.outputs.shards }}")
    );
    // The plan job, as the runner runs it.
    let root = tempfile::tempdir().unwrap();
    let plan_dir = machine(root.path(), "plan");
    let (_, code) = run_job(
        list(&jobs["plan"]["steps"], "plan"),
        &plan_dir,
        &env,
        None,
        &BTreeMap::new(),
    );
    assert_eq!(code, Some(0));
    let output = std::fs::read_to_string(plan_dir.join("github-output")).unwrap();
    let matrix: Vec<u64> =
        serde_json::from_str(output.trim().strip_prefix("shards=").unwrap()).unwrap();
    assert_eq!(matrix, (0..shards).collect::<Vec<_>>());
    // Every matrix value on its own runner.
    let mut artifacts = BTreeMap::new();
    for shard in &matrix {
        let dir = machine(root.path(), &format!("sweep-{shard}"));
        let shard = shard.to_string();
        let (up, code) = run_job(
            list(&sweep["steps"], "sweep"),
            &dir,
            &env,
            Some(&shard),
            &BTreeMap::new(),
        );
        assert_eq!(code, Some(0), "shard {shard}");
        artifacts.extend(up);
    }
    assert_eq!(artifacts.len() as u64, shards);
    let dir = machine(root.path(), "merge");
    let (up, code) = run_job(list(&merge["steps"], "merge"), &dir, &env, None, &artifacts);
    assert!(up.contains_key("fencesim-report"));
    let base = unsharded(root.path(), SCENARIOS, SEEDS);
    assert_same_as_unsharded(
        &base,
        code,
        &std::fs::read(dir.join("report.json")).unwrap(),
        &dir.join("junit.xml"),
        &dir.join("html"),
    );
}

// ---------------------------------------------------------------- validate shards

#[test]
fn validate_shards_merge_into_the_unsharded_validation() {
    // The store that acknowledges before it persists: its violations make
    // the first-failure block and the verdict part of the comparison.
    let node = format!(
        "resource=python3 {}",
        repo()
            .join("examples/python/fencelock_ack_before_fsync.py")
            .display()
    );
    let validate = |extra: &[&str]| {
        let out = crate::common::fencesim_command()
            .current_dir(repo())
            .args(["validate", "--node", &node, "--seeds", "6", "--jobs", "2"])
            .args([
                "examples/python/scenarios/resource-crash-after-ack.toml",
                "--format",
                "json",
            ])
            .args(extra)
            .output()
            .expect("fencesim runs");
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        out.stdout
    };
    let whole = validate(&[]);
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for shard in ["1/2", "0/2"] {
        let file = dir.path().join(format!("validate-{}.json", &shard[..1]));
        std::fs::write(&file, validate(&["--shard", shard])).unwrap();
        files.push(file);
    }
    let merged = crate::common::fencesim_command()
        .current_dir(repo())
        .args(["merge", "--format", "json"])
        .args(&files)
        .output()
        .unwrap();
    assert_eq!(merged.status.code(), Some(1), "{}", show(&merged));
    assert_eq!(
        String::from_utf8_lossy(&merged.stdout),
        String::from_utf8_lossy(&whole)
    );
    let report: serde_json::Value = serde_json::from_slice(&whole).unwrap();
    assert_eq!(report["scenarios"][0]["seeds"].as_array().unwrap().len(), 6);
    assert_eq!(report["scenarios"][0]["first_failure"]["seed"], 0);
    // One shard alone is not the validation.
    let alone = crate::common::fencesim_command()
        .current_dir(repo())
        .args(["merge"])
        .arg(&files[0])
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(2), "{}", show(&alone));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("missing shards: 0/2"));
}
