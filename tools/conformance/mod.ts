/**
 * `deno task conformance [--kubelet=denolet|upstream] [--focus=REGEX] [--skip=REGEX]
 * [--report-dir=DIR] [--parallel=N] [--timeout=6h] [--seed=1]`: upstream's e2e suite (e2e.test, k8s.io/kubernetes at
 * the version of tools/e2e/go.mod) against a one-node cluster whose node is denolet or
 * the upstream kubelet, in the same harness.
 *
 * 1. builds what is missing (tools/e2e/build.sh, tools/conformance/build.sh);
 * 2. builds the test images and pushes them to a registry on loopback (images.ts);
 * 3. starts etcd, kube-apiserver, kube-controller-manager (all controllers) and
 *    kube-scheduler (tests/e2e/_cluster.ts), a private containerd with a CNI bridge for
 *    pods and a mirror entry for that registry (tests/harness), a test host address for
 *    the node IP, and the kubelet (kubelets.ts); waits for the Node to be Ready;
 * 4. runs the ginkgo CLI on e2e.test with `KUBE_TEST_REPO_LIST` pointing at the registry;
 * 5. reads the JUnit report into `summary.json` and prints the totals;
 * 6. tears everything down, whatever failed.
 *
 * The default selection is the issue's: every `[Conformance]` test of `[sig-node]` and
 * the kubelet-side `[Conformance]` volume tests of `[sig-storage]`; `[Disruptive]` and
 * `[Flaky]` ones are skipped. The spec order is Ginkgo's shuffle with a fixed seed, so two
 * runs (one per kubelet) cut short by `--timeout` cover the same specs first. The report dir keeps the JUnit report, ginkgo's output, the
 * kubelet's and the control plane's logs.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  startTestHost,
  startTestRuntime,
  type TestHost,
  type TestRuntime,
} from "../../tests/harness/mod.ts";
import { type Cluster, e2eBinDir, startCluster } from "../../tests/e2e/_cluster.ts";
import { NODE } from "../../tests/e2e/_node.ts";
import type { Node } from "../../lib/api/cluster_types.ts";
import { waitFor } from "../../tests/kit/mod.ts";
import { buildConformanceImages, pushImages, repoList } from "./images.ts";
import { type KubeletKind, type NodeAgent, startKubelet } from "./kubelets.ts";
import { parseJUnit, tally } from "./junit.ts";
import { type Registry, startRegistry } from "./registry.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/** The issue's selection (see the module doc). */
export const DEFAULT_FOCUS = String.raw`\[sig-node\].*\[Conformance\]|` +
  String
    .raw`\[sig-storage\] (ConfigMap|Secrets|Projected (configMap|secret|downwardAPI|combined)|EmptyDir|Downward API volume|HostPath|Subpath)\b.*\[Conformance\]`;
export const DEFAULT_SKIP = String.raw`\[Disruptive\]|\[Flaky\]`;

async function run(cmd: string, args: string[], opts: { cwd?: string } = {}): Promise<void> {
  const status = await new Deno.Command(cmd, {
    args,
    stdout: "inherit",
    stderr: "inherit",
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
  }).spawn().status;
  if (!status.success) {
    throw new Error(`conformance: ${cmd} ${args.join(" ")} exited ${status.code}`);
  }
}

async function output(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "inherit",
    ...(cwd ? { cwd } : {}),
  })
    .output();
  if (!out.success) throw new Error(`conformance: ${cmd} ${args.join(" ")} exited ${out.code}`);
  return new TextDecoder().decode(out.stdout).trim();
}

/** Runs ginkgo, copying its output to the terminal and to `log`; resolves to its exit code. */
async function runGinkgo(
  bin: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
  log: string,
): Promise<number> {
  const file = await Deno.open(log, { write: true, create: true, truncate: true });
  try {
    const child = new Deno.Command(bin, {
      args,
      env,
      cwd,
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
    })
      .spawn();
    const pump = async (
      stream: ReadableStream<Uint8Array>,
      to: { write(p: Uint8Array): Promise<number> },
    ) => {
      for await (const chunk of stream) {
        await file.write(chunk);
        await to.write(chunk);
      }
    };
    await Promise.all([pump(child.stdout, Deno.stdout), pump(child.stderr, Deno.stderr)]);
    return (await child.status).code;
  } finally {
    file.close();
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      kubelet: { type: "string", default: "denolet" },
      focus: { type: "string", default: DEFAULT_FOCUS },
      skip: { type: "string", default: DEFAULT_SKIP },
      "report-dir": { type: "string" },
      parallel: { type: "string", default: "1" },
      timeout: { type: "string", default: "6h" },
      seed: { type: "string", default: "1" },
    },
  });
  const kind = values.kubelet as KubeletKind;
  if (kind !== "denolet" && kind !== "upstream") {
    console.error(`conformance: --kubelet must be denolet or upstream, not ${values.kubelet}`);
    return 2;
  }
  const started = new Date();
  // The tree the run starts from (the kubelet and the harness are read now, not at the end).
  const commit = await output("git", ["describe", "--always", "--dirty"], ROOT)
    .catch(() => "unknown");
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const binDir = e2eBinDir();
  const reportDir = values["report-dir"] ??
    `${binDir.replace(/\/e2e\/[^/]+$/, "")}/conformance/${kind}-${stamp}`;
  await Deno.mkdir(reportDir, { recursive: true });
  console.log(`conformance: ${kind}; report in ${reportDir}`);

  await run("bash", [`${ROOT}/tools/e2e/build.sh`]);
  await run("bash", [`${ROOT}/tools/conformance/build.sh`]);
  const k8sDir = await output(
    "go",
    ["list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"],
    `${ROOT}/tools/conformance`,
  );
  const images = await buildConformanceImages({
    agnhost: `${binDir}/agnhost`,
    nonewprivs: `${binDir}/nonewprivs`,
    k8sDir,
  });

  let registry: Registry | undefined;
  let cluster: Cluster | undefined;
  let runtime: TestRuntime | undefined;
  let host: TestHost | undefined;
  let agent: NodeAgent | undefined;
  const scratch = await Deno.makeTempDir({ prefix: "denolet-conformance-" });
  // Ctrl-C reaches ginkgo too, which stops the specs and writes its report; this process
  // must live on to read it and tear down.
  const interrupted = () => console.error("conformance: interrupted; tearing down after ginkgo");
  Deno.addSignalListener("SIGINT", interrupted);
  let code = 1;
  try {
    registry = await startRegistry();
    await pushImages(registry.host, images);
    console.log(`conformance: ${images.length} images in ${registry.url}`);
    cluster = await startCluster({ scheduler: true, controllers: ["*"] });
    runtime = await startTestRuntime({
      name: "conformance",
      plainHttpRegistries: { [registry.host]: registry.url },
    });
    host = await startTestHost();
    agent = await startKubelet({
      kind,
      runtime,
      nodeIP: host.address,
      kubeconfig: await cluster.nodeKubeconfig(NODE),
      caFile: cluster.caFile,
      kubeletBin: `${binDir}/kubelet`,
      dir: scratch,
    });
    const c = cluster;
    const a = agent;
    await waitFor("node Ready", async () => {
      const n = await c.kubectlJson<Node>(["get", "node", NODE]).catch(() => undefined);
      return n?.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True");
    }, {
      timeoutMs: 120_000,
      giveUp: () => a.alive() ? undefined : `${kind} exited`,
      log: () => a.log().split("\n").slice(-40).join("\n"),
    });
    console.log(`conformance: node ${NODE} Ready (${kind}, node IP ${host.address})`);

    await Deno.writeTextFile(`${reportDir}/repo-list.yaml`, repoList(registry.host));
    const e2eArgs = [
      `--kubeconfig=${cluster.adminKubeconfig}`,
      "--provider=skeleton",
      `--report-dir=${reportDir}`,
      `--kubectl-path=${binDir}/kubectl`,
      "--ginkgo.no-color",
    ];
    const ginkgoArgs = [
      `--procs=${values.parallel}`,
      `--timeout=${values.timeout}`,
      `--seed=${values.seed}`,
      "--no-color",
      "--silence-skips",
      `--focus=${values.focus}`,
      `--skip=${values.skip}`,
      `${binDir}/e2e.test`,
      "--",
      ...e2eArgs,
    ];
    const t0 = Date.now();
    const ginkgoCode = await runGinkgo(
      `${binDir}/ginkgo`,
      ginkgoArgs,
      { KUBE_TEST_REPO_LIST: `${reportDir}/repo-list.yaml` },
      reportDir,
      `${reportDir}/ginkgo.log`,
    );
    const seconds = Math.round((Date.now() - t0) / 1000);
    const junit = `${reportDir}/junit_01.xml`;
    // Specs the focus left out are skipped without a reason; those are not part of the run.
    const results = parseJUnit(await Deno.readTextFile(junit).catch(() => ""))
      .filter((r) => r.status !== "skipped" || r.message !== undefined);
    await Deno.writeTextFile(
      `${reportDir}/summary.json`,
      JSON.stringify(
        {
          kubelet: kind,
          commit,
          started: started.toISOString(),
          seconds,
          focus: values.focus,
          skip: values.skip,
          ginkgoExit: ginkgoCode,
          results,
        },
        null,
        2,
      ),
    );
    console.log(
      `\nconformance: ${kind}: ${
        JSON.stringify(tally(results))
      } of ${results.length} selected (${seconds} s); ginkgo exited ${ginkgoCode}`,
    );
    for (const r of results.filter((r) => r.status !== "passed")) {
      console.log(`  ${r.status}: ${r.name}${r.message ? `\n      ${r.message}` : ""}`);
    }
    code = results.length > 0 ? 0 : 1;
  } finally {
    if (agent !== undefined) {
      await Deno.writeTextFile(`${reportDir}/kubelet.log`, agent.log()).catch(() => {});
    }
    if (cluster !== undefined) {
      for (const name of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
        await Deno.copyFile(`${cluster.dir}/${name}.log`, `${reportDir}/${name}.log`).catch(
          () => {},
        );
      }
    }
    const problems: string[] = [];
    const step = async (what: string, fn: () => Promise<void> | undefined) => {
      try {
        await fn();
      } catch (err) {
        problems.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    await step("kubelet", () => agent?.stop());
    await step("runtime", () => runtime?.stop());
    await step("test host", () => host?.stop());
    await step("cluster", () => cluster?.stop());
    await step("registry", () => registry?.stop());
    await step("scratch", () => Deno.remove(scratch, { recursive: true }));
    if (problems.length > 0) {
      console.error(`conformance: tear-down left work: ${problems.join("; ")}`);
      code = 1;
    }
  }
  return code;
}

if (import.meta.main) Deno.exit(await main());
