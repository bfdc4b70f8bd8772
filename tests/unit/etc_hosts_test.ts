/**
 * The managed /etc/hosts against upstream's own tables
 * (pkg/kubelet/kubelet_pods_test.go: TestManagedHostsFileContent,
 * TestNodeHostsFileContent).
 */

import assert from "node:assert/strict";
import type { HostAlias } from "../../lib/api/types.ts";
import { managedHostsContent, nodeHostsContent, writeEtcHosts } from "../../lib/volumes/mod.ts";
import { withTempDir } from "../kit/mod.ts";

const LOCAL = "127.0.0.1\tlocalhost\n" +
  "::1\tlocalhost ip6-localhost ip6-loopback\n" +
  "fe00::0\tip6-localnet\n" +
  "fe00::0\tip6-mcastprefix\n" +
  "fe00::1\tip6-allnodes\n" +
  "fe00::2\tip6-allrouters\n";
const HEADER = "# Kubernetes-managed hosts file.\n";
const fooBarBaz: HostAlias = { ip: "123.45.67.89", hostnames: ["foo", "bar", "baz"] };
const parkDooBoo: HostAlias = { ip: "456.78.90.123", hostnames: ["park", "doo", "boo"] };

Deno.test("managedHostsContent() writes upstream's TestManagedHostsFileContent table", () => {
  const cases: [string[], string, string, HostAlias[], string][] = [
    [["123.45.67.89"], "podFoo", "", [], `${HEADER}${LOCAL}123.45.67.89\tpodFoo\n`],
    [
      ["203.0.113.1"],
      "podFoo",
      "domainFoo",
      [],
      `${HEADER}${LOCAL}203.0.113.1\tpodFoo.domainFoo\tpodFoo\n`,
    ],
    [
      ["203.0.113.1"],
      "podFoo",
      "domainFoo",
      [fooBarBaz],
      `${HEADER}${LOCAL}203.0.113.1\tpodFoo.domainFoo\tpodFoo\n` +
      "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n",
    ],
    [
      ["203.0.113.1"],
      "podFoo",
      "domainFoo",
      [fooBarBaz, parkDooBoo],
      `${HEADER}${LOCAL}203.0.113.1\tpodFoo.domainFoo\tpodFoo\n` +
      "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\tboo\n",
    ],
    [
      ["203.0.113.1", "fd00::6"],
      "podFoo",
      "domainFoo",
      [],
      `${HEADER}${LOCAL}203.0.113.1\tpodFoo.domainFoo\tpodFoo\nfd00::6\tpodFoo.domainFoo\tpodFoo\n`,
    ],
  ];
  for (const [ips, hostname, domain, aliases, want] of cases) {
    assert.equal(managedHostsContent(ips, hostname, domain, aliases), want);
  }
});

Deno.test("nodeHostsContent() writes upstream's TestNodeHostsFileContent table", () => {
  const raw = `# hosts file for testing.\n${LOCAL}123.45.67.89\tsome.domain\n`;
  const header = "# Kubernetes-managed hosts file (host network).\n";
  assert.equal(nodeHostsContent(raw), header + raw);
  assert.equal(
    nodeHostsContent(raw, [fooBarBaz]),
    `${header}${raw}\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n`,
  );
  // The conformance test tells a managed file by this prefix: a host-network
  // pod's file must not carry it.
  assert.ok(!nodeHostsContent(raw).startsWith("# Kubernetes-managed hosts file."));
});

Deno.test("writeEtcHosts() replaces <podDir>/etc-hosts, mode 0644", async () => {
  await withTempDir(async (root) => {
    const path = await writeEtcHosts(root, "uid-1", "first\n");
    assert.equal(path, `${root}/pods/uid-1/etc-hosts`);
    assert.equal(await writeEtcHosts(root, "uid-1", "second\n"), path);
    assert.equal(await Deno.readTextFile(path), "second\n");
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o644);
  });
});
