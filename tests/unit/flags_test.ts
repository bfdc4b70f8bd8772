import assert from "node:assert/strict";
import { FlagError, parseFlags } from "../../lib/options/flags.ts";
import { formatDuration, parseDuration } from "../../lib/util/duration.ts";

Deno.test("parseDuration() reads Go durations", () => {
  assert.equal(parseDuration("20s"), 20_000);
  assert.equal(parseDuration("1m30s"), 90_000);
  assert.equal(parseDuration("500ms"), 500);
  assert.equal(parseDuration("2h"), 7_200_000);
  assert.equal(parseDuration("1.5s"), 1500);
  assert.equal(parseDuration("0"), 0);
});

Deno.test("parseDuration() rejects text that is not a duration, naming it", () => {
  for (const bad of ["", "20", "s", "1x", "1m junk", "-1s"]) {
    assert.throws(() => parseDuration(bad), new RegExp(`invalid duration "${bad}"`));
  }
});

Deno.test("formatDuration() prints as Go does", () => {
  assert.equal(formatDuration(180_000), "3m0s");
  assert.equal(formatDuration(1500), "1.5s");
  assert.equal(formatDuration(250), "250ms");
});

Deno.test("parseFlags() applies upstream defaults", () => {
  const r = parseFlags([]);
  assert.equal(r.kind, "run");
  if (r.kind !== "run") return;
  assert.equal(r.options.runtimeRequestTimeoutMs, 120_000);
  assert.equal(r.options.fileCheckFrequencyMs, 20_000);
  assert.equal(r.options.httpCheckFrequencyMs, 20_000);
  assert.equal(r.options.healthzPort, 10248);
  assert.equal(r.options.healthzBindAddress, "127.0.0.1");
  // Without --config upstream keeps the legacy read-only port (applyLegacyDefaults).
  assert.equal(r.options.readOnlyPort, 10255);
  assert.equal(r.options.rootDir, "/var/lib/kubelet");
  assert.equal(r.options.imageServiceEndpoint, r.options.containerRuntimeEndpoint);
});

Deno.test("parseFlags() accepts --a=b, --a b, -a=b and repeated headers", () => {
  const r = parseFlags([
    "--pod-manifest-path=/etc/kubernetes/manifests",
    "--container-runtime-endpoint",
    "unix:///run/c.sock",
    "-v=4",
    "--file-check-frequency=5s",
    "--manifest-url-header=Authorization: Bearer x",
    "--manifest-url-header=Authorization: Bearer y",
  ]);
  assert.equal(r.kind, "run");
  if (r.kind !== "run") return;
  assert.equal(r.options.podManifestPath, "/etc/kubernetes/manifests");
  assert.equal(r.options.containerRuntimeEndpoint, "unix:///run/c.sock");
  assert.equal(r.options.imageServiceEndpoint, "unix:///run/c.sock");
  assert.equal(r.options.verbosity, 4);
  assert.equal(r.options.fileCheckFrequencyMs, 5000);
  assert.deepEqual(r.options.manifestUrlHeader, { Authorization: ["Bearer x", "Bearer y"] });
});

Deno.test("parseFlags() names the flag in its errors", () => {
  assert.throws(
    () => parseFlags(["--no-such-flag=1"]),
    (e) => e instanceof FlagError && /--no-such-flag/.test(e.message),
  );
  assert.throws(
    () => parseFlags(["--healthz-port=abc"]),
    /invalid argument "abc" for "--healthz-port" flag/,
  );
  assert.throws(
    () => parseFlags(["--sync-frequency=soon"]),
    /invalid argument "soon" for "--sync-frequency" flag/,
  );
  assert.throws(() => parseFlags(["--root-dir"]), /flag needs an argument: --root-dir/);
});

Deno.test("parseFlags() answers --help with every flag and --version", () => {
  const h = parseFlags(["--help"]);
  assert.equal(h.kind, "help");
  if (h.kind === "help") {
    assert.match(h.text, /--container-runtime-endpoint[\s\S]*--pod-manifest-path/);
  }
  assert.equal(parseFlags(["--version"]).kind, "version");
});
