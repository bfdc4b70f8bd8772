/** tools/conformance: the JUnit reading, the selection, the repo list and the registry mirror. */

import assert from "node:assert/strict";
import { parseJUnit, tally, type TestResult } from "../../tools/conformance/junit.ts";
import { DEFAULT_FOCUS, DEFAULT_SKIP } from "../../tools/conformance/mod.ts";
import { repoList } from "../../tools/conformance/images.ts";
import { compareMarkdown, type Summary, totals } from "../../tools/conformance/compare.ts";
import { containerdConfig, runtimePaths } from "../harness/config.ts";

// The shape test/e2e/framework/internal/junit writes: no message attribute, node type first.
const REPORT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="0" errors="0" failures="2" time="40.1">
  <testsuite name="Kubernetes e2e suite" package="/tmp" tests="4" disabled="0" skipped="1" errors="0" failures="2" time="40.1">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.2"></testcase>
    <testcase name="[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="passed" time="4.5"></testcase>
    <testcase name="[It] [sig-node] Downward API should provide pod UID as env vars [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="failed" time="30.25">
      <failure type="failed">[FAILED] expected &quot;POD_UID=&quot; to contain &lt;uid&gt;&#xA;In [It] at: downwardapi.go:203</failure>
      <system-err>log</system-err>
    </testcase>
    <testcase name="[It] [sig-node] Pods should cap back-off [Slow] [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] [sig-node] NoExecuteTaintManager Multiple Pods evicts pods [Serial] [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0.01">
      <skipped message="skipped - Requires at least 2 nodes (not 1)&#xA;more"></skipped>
    </testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e JUnit report" classname="Kubernetes e2e suite" status="failed" time="0.1">
      <failure type="failed">cannot write report</failure>
    </testcase>
  </testsuite>
</testsuites>`;

Deno.test("parseJUnit() reads each spec's name, status, time and the first line of why it failed or skipped", () => {
  const results = parseJUnit(REPORT);
  assert.deepEqual(results, [
    {
      name: "[sig-node] Pods should get a host IP [NodeConformance] [Conformance]",
      status: "passed",
      time: 4.5,
    },
    {
      name:
        "[sig-node] Downward API should provide pod UID as env vars [NodeConformance] [Conformance]",
      status: "failed",
      time: 30.25,
      message: '[FAILED] expected "POD_UID=" to contain <uid>',
    },
    {
      name: "[sig-node] Pods should cap back-off [Slow] [Conformance]",
      status: "skipped",
      time: 0,
    },
    {
      name: "[sig-node] NoExecuteTaintManager Multiple Pods evicts pods [Serial] [Conformance]",
      status: "skipped",
      time: 0.01,
      message: "Requires at least 2 nodes (not 1)",
    },
    {
      name: "[ReportAfterSuite] Kubernetes e2e JUnit report",
      status: "failed",
      time: 0.1,
      message: "cannot write report",
    },
  ]);
  assert.deepEqual(tally(results), { passed: 1, failed: 2, skipped: 2 });
});

Deno.test("the default selection is sig-node's Conformance tests and the kubelet-side volume ones", () => {
  const focus = new RegExp(DEFAULT_FOCUS);
  const skip = new RegExp(DEFAULT_SKIP);
  for (
    const name of [
      "[sig-node] Pods should get a host IP [NodeConformance] [Conformance]",
      "[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance] [Conformance]",
      "[sig-storage] Projected secret should be consumable from pods in volume [NodeConformance] [Conformance]",
      "[sig-storage] Downward API volume should provide podname only [NodeConformance] [Conformance]",
      "[sig-storage] EmptyDir volumes should support (root,0644,tmpfs) [LinuxOnly] [NodeConformance] [Conformance]",
      "[sig-storage] Subpath Atomic writer volumes should support subpaths with secret pod [Conformance]",
    ]
  ) assert.ok(focus.test(name) && !skip.test(name), name);
  for (
    const name of [
      "[sig-apps] Deployment deployment should support rollover [Conformance]",
      "[sig-storage] CSIInlineVolumes should support CSIVolumeSource in Pod API [Conformance]",
      "[sig-node] Pods should get a host IP [NodeConformance]",
    ]
  ) assert.ok(!focus.test(name), name);
  assert.ok(skip.test("[sig-node] Taints [Serial] [Disruptive] [Conformance]"));
});

Deno.test("repoList() moves every registry but the invalid and the private one", () => {
  const lines = repoList("127.0.0.1:5000").trim().split("\n");
  assert.ok(lines.includes("promoterE2eRegistry: 127.0.0.1:5000/e2e-test-images"));
  assert.ok(lines.includes("gcRegistry: 127.0.0.1:5000"));
  assert.ok(!lines.some((l) => /^(invalidRegistry|privateRegistry):/.test(l)));
});

Deno.test("containerdConfig() adds a plain-http mirror entry per registry, none by default", () => {
  const paths = runtimePaths("/tmp/x");
  const base = { paths, sandboxImage: "p:1", snapshotter: "native" };
  assert.ok(!containerdConfig(base).includes("registry.mirrors"));
  const text = containerdConfig({
    ...base,
    plainHttpRegistries: { "127.0.0.1:5000": "http://127.0.0.1:5000" },
  });
  assert.match(
    text,
    /\[plugins\."io\.containerd\.grpc\.v1\.cri"\.registry\.mirrors\."127\.0\.0\.1:5000"\]\n\s+endpoint = \["http:\/\/127\.0\.0\.1:5000"\]/,
  );
});

Deno.test("totals() counts passes of both runs over the union of their tests", () => {
  const up = [
    { name: "a", status: "passed", time: 1 },
    { name: "b", status: "passed", time: 1 },
    { name: "c", status: "failed", time: 1 },
  ];
  const dl = [
    { name: "a", status: "passed", time: 1 },
    { name: "b", status: "failed", time: 1 },
    { name: "c", status: "passed", time: 1 },
    { name: "d", status: "passed", time: 1 },
  ];
  assert.deepEqual(totals(up, dl), {
    selected: 4,
    upstream: 2,
    denolet: 3,
    both: 1,
    onlyUpstream: 1,
    onlyDenolet: 2,
  });
});

Deno.test("compareMarkdown() gives a cause for each test not passed by both, known causes first", () => {
  const run = (kubelet: string, results: TestResult[]): Summary => ({
    kubelet,
    commit: "abc",
    started: "2026-12-02T00:00:00Z",
    seconds: 600,
    results,
  });
  const up = run("upstream", [
    { name: "[sig-node] A works", status: "passed", time: 1 },
    { name: "[sig-node] B works", status: "passed", time: 1 },
    { name: "[sig-node] C works", status: "failed", time: 1, message: "C broke" },
  ]);
  const dl = run("denolet", [
    { name: "[sig-node] A works", status: "passed", time: 1 },
    { name: "[sig-node] B works", status: "failed", time: 1, message: "timed out" },
    { name: "[sig-node] C works", status: "failed", time: 1, message: "C broke too" },
  ]);
  const md = compareMarkdown(up, dl, { "C works": "harness: no such image" });
  assert.match(
    md,
    /^3 tests; upstream passed 2, denolet passed 1; both 1, only upstream 1, only denolet 0\./,
  );
  assert.match(md, /\| \[sig-node\] A works \| passed \| passed \| {2}\|/);
  assert.match(md, /\| \[sig-node\] B works \| passed \| failed \| timed out \|/);
  assert.match(md, /\| \[sig-node\] C works \| failed \| failed \| harness: no such image \|/);
});
