/**
 * The Conformance harness kept from rotting: `deno task conformance` (tools/conformance,
 * docs/conformance.md) runs a few fast upstream Conformance specs that denolet passes,
 * through the whole harness a full run uses (e2e.test and the ginkgo CLI, the test images
 * on a loopback registry, a cluster with kube-scheduler, denolet as the node), and every
 * one of them must pass. The full selection takes hours and is not part of the test suite.
 *
 * The binaries come from tools/e2e/build.sh and tools/conformance/build.sh, which the test
 * runner (tools/test.ts) runs before this file; a missing one fails the test, named, before
 * the harness could start a build of its own.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import { isExecutable, which } from "../harness/_exec.ts";
import { e2eBinDir } from "./_cluster.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/**
 * The specs, by their text without the trailing tags (`[Conformance]`, `[NodeConformance]`,
 * whose order differs between Ginkgo's text and the JUnit name): the node's host IP in pod
 * status, downward API env vars, the kubelet's log endpoint behind the apiserver (node IP
 * and port 10250), a secret volume read by agnhost from the loopback registry, and a preStop
 * exec hook. Each took 2-18 s in the runs of docs/conformance.md.
 */
export const SMOKE_SPECS = [
  "[sig-node] Pods should get a host IP",
  "[sig-node] Downward API should provide pod UID as env vars",
  "[sig-node] Downward API should provide host IP as an env var",
  "[sig-node] Kubelet when scheduling a busybox command in a pod should print the output to logs",
  "[sig-storage] Secrets should be consumable from pods in volume",
  "[sig-node] Container Lifecycle Hook when create a pod with lifecycle hook should execute prestop exec hook properly",
] as const;

/** What a denolet run needs: tools/e2e/build.sh's control plane, tools/conformance/build.sh's rest. */
const BINARIES = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kubectl",
  "kube-scheduler",
  "e2e.test",
  "ginkgo",
  "agnhost",
  "nonewprivs",
] as const;

/** A spec's text without its trailing `[Tag]`s. */
function specText(name: string): string {
  return name.replace(/( \[[^\]]+\])+$/, "");
}

/** Ginkgo's --focus for exactly these specs: each text, escaped, followed by its tags. */
function focusOf(specs: readonly string[]): string {
  return specs.map((spec) => `${spec.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\[`).join("|");
}

interface Summary {
  ginkgoExit: number;
  seconds: number;
  results: { name: string; status: string; time: number; message?: string }[];
}

Deno.test("conformance smoke: a few upstream Conformance specs pass against denolet through the whole harness", async () => {
  requireRoot();
  const problems: string[] = [];
  const binDir = e2eBinDir();
  for (const bin of BINARIES) {
    if (!isExecutable(`${binDir}/${bin}`)) problems.push(`${binDir}/${bin} is missing`);
  }
  for (const tool of ["docker-registry", "skopeo"]) {
    if (which(tool) === undefined) problems.push(`${tool} not found (apt-get install ${tool})`);
  }
  assert.deepEqual(
    problems,
    [],
    `conformance smoke: ${problems.join("; ")}: run bash tools/e2e/build.sh and ` +
      "bash tools/conformance/build.sh (tools/dev.sh installs the packages)",
  );

  const reportDir = await Deno.makeTempDir({ prefix: "denolet-conformance-smoke-" });
  let passed = false;
  try {
    const { code } = await new Deno.Command(Deno.execPath(), {
      args: [
        "task",
        "conformance",
        "--kubelet=denolet",
        `--focus=${focusOf(SMOKE_SPECS)}`,
        `--report-dir=${reportDir}`,
        "--timeout=10m",
      ],
      cwd: ROOT,
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    assert.equal(code, 0, `deno task conformance exited ${code} (report in ${reportDir})`);
    const summary: Summary = JSON.parse(await Deno.readTextFile(`${reportDir}/summary.json`));
    const seen = summary.results.map((r) => ({
      spec: specText(r.name),
      status: r.status,
      ...(r.message === undefined ? {} : { message: r.message }),
    }));
    assert.ok(seen.length > 0, `no spec ran (report in ${reportDir})`);
    assert.deepEqual(
      seen.toSorted((a, b) => a.spec.localeCompare(b.spec)),
      SMOKE_SPECS.map((spec) => ({ spec, status: "passed" }))
        .toSorted((a, b) => a.spec.localeCompare(b.spec)),
      `report in ${reportDir}`,
    );
    assert.equal(summary.ginkgoExit, 0, `ginkgo exited ${summary.ginkgoExit}`);
    console.log(`conformance smoke: ${seen.length} specs passed in ${summary.seconds} s`);
    passed = true;
  } finally {
    // Kept when the test failed: ginkgo's, the kubelet's and the control plane's logs.
    if (passed) await Deno.remove(reportDir, { recursive: true });
  }
});
