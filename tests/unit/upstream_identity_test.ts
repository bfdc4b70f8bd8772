/**
 * What the upstream kubelet writes on its containers and names its static pods,
 * which denolet must reproduce to adopt them (and be adopted): the container
 * hash, the JSON-encoded annotations and the static pod UID. Every expected
 * value was printed once by upstream v1.37.2's own Go code
 * (kubecontainer.HashContainer, json.Marshal of the v1 types, the file source
 * of pkg/kubelet/config) for the inputs here, and is kept as a literal.
 */
import assert from "node:assert/strict";
import type { Container, Pod } from "../../lib/api/types.ts";
import { applyPodDefaults } from "../../lib/api/defaults.ts";
import { parseManifestDocuments } from "../../lib/config/manifest.ts";
import { staticPodsFromManifest, staticPodUID } from "../../lib/config/static_pod.ts";
import { containerAnnotations } from "../../lib/kuberuntime/container_config.ts";
import { hashContainer } from "../../lib/kuberuntime/hash.ts";
import { testPod } from "../kit/mod.ts";

const HASHES: [Container, string][] = [
  [{ name: "app", image: "nginx:1.25" }, "e324a2d6"],
  [{ name: "web", image: "registry.k8s.io/e2e-test-images/agnhost:2.53" }, "12df0c76"],
  [{ name: "x" }, "b41f3dd"],
  [{ name: "a<b>&c", image: "img\u2028é" }, "83c11df"],
];

Deno.test("hashContainer() equals upstream v1.37.2's HashContainer", () => {
  for (const [container, want] of HASHES) {
    assert.equal(hashContainer(container), want, JSON.stringify(container));
  }
});

Deno.test("hashContainer() ignores every field but name and image, defaulted ones included", () => {
  // Upstream printed e324a2d6 for this spec too: a field the apiserver defaults
  // (imagePullPolicy, terminationMessagePath) or any other never restarts a container.
  const full: Container = {
    name: "app",
    image: "nginx:1.25",
    command: ["sleep", "1"],
    imagePullPolicy: "Always",
    terminationMessagePath: "/dev/termination-log",
  };
  assert.equal(hashContainer(full), "e324a2d6");
});

function annotationsOf(container: Container): Record<string, string> {
  const pod = testPod({ uid: "u-1", containers: [container.name] });
  pod.spec.containers[0] = container;
  return containerAnnotations(pod, container, 0);
}

Deno.test("the ports and preStop annotations are upstream's json.Marshal bytes", () => {
  const cases: [Container, string, string][] = [
    [
      {
        name: "a",
        ports: [
          { protocol: "TCP", containerPort: 80, name: "http" },
          { containerPort: 53, protocol: "UDP", hostPort: 5353, hostIP: "127.0.0.1" },
        ],
        lifecycle: {
          preStop: {
            httpGet: {
              scheme: "HTTP",
              port: "http",
              path: "/q?a=1&b=<2>",
              httpHeaders: [{ value: "v", name: "X" }],
            },
          },
        },
      },
      '[{"name":"http","containerPort":80,"protocol":"TCP"},{"hostPort":5353,"containerPort":53,"protocol":"UDP","hostIP":"127.0.0.1"}]',
      '{"httpGet":{"path":"/q?a=1\\u0026b=\\u003c2\\u003e","port":"http","scheme":"HTTP","httpHeaders":[{"name":"X","value":"v"}]}}',
    ],
    [
      {
        name: "b",
        ports: [{ containerPort: 8080 }],
        lifecycle: { preStop: { exec: { command: ["sh", "-c", "echo \b\f done"] } } },
      },
      '[{"containerPort":8080}]',
      '{"exec":{"command":["sh","-c","echo \\b\\f done"]}}',
    ],
    [
      {
        name: "c",
        ports: [{ containerPort: 1 }],
        lifecycle: { preStop: { sleep: { seconds: 5 } } },
      },
      '[{"containerPort":1}]',
      '{"sleep":{"seconds":5}}',
    ],
    [
      {
        name: "d",
        ports: [{ containerPort: 1 }],
        lifecycle: { preStop: { tcpSocket: { host: "h", port: 9 } } },
      },
      '[{"containerPort":1}]',
      '{"tcpSocket":{"port":9,"host":"h"}}',
    ],
  ];
  for (const [container, ports, preStop] of cases) {
    const got = annotationsOf(container);
    assert.equal(got["io.kubernetes.container.ports"], ports, container.name);
    assert.equal(got["io.kubernetes.container.preStopHandler"], preStop, container.name);
  }
});

/**
 * Manifests in tests/fixtures/upstream_static_pods, and the UIDs upstream v1.37.2's own file
 * source (config.NewSourceFile, node "testnode") gave them when they were read from
 * /tmp/denolet-uid-fixtures/manifests/<file>; the path is part of the hash, not read here.
 */
const UPSTREAM_UIDS: [string, string][] = [
  ["web.yaml", "418c218b3cd621baaaf6b84e407434e2"],
  ["rich.yaml", "614a5e64636e2b337a45baff783902ac"],
  ["etcd.yaml", "b06de3ddd99aaf15eb2d1de7eeaf8d42"],
  ["misc.json", "0ffc159af6b3947017632dea4b471558"],
];

function fixturePod(file: string, nodeName = "testnode"): Pod {
  const text = Deno.readTextFileSync(
    new URL(`../fixtures/upstream_static_pods/${file}`, import.meta.url),
  );
  const origin = `/tmp/denolet-uid-fixtures/manifests/${file}`;
  const pods = staticPodsFromManifest(text, { nodeName, source: "file", origin, now: 0 });
  assert.equal(pods.length, 1);
  return pods[0]!;
}

Deno.test("a static pod without a UID gets the one upstream v1.37.2 gives it", () => {
  for (const [file, want] of UPSTREAM_UIDS) {
    const pod = fixturePod(file);
    assert.equal(pod.metadata.uid, want, file);
    assert.equal(pod.metadata.annotations!["kubernetes.io/config.hash"], want, file);
  }
});

Deno.test("the static pod UID changes with the node name", () => {
  assert.notEqual(fixturePod("web.yaml", "othernode").metadata.uid, UPSTREAM_UIDS[0]![1]);
});

Deno.test("a static pod whose quantities upstream keeps as inf.Dec gets a UID of its own", () => {
  // Upstream gave dec.yaml (memory 1.5Gi, cpu "0.5") dda0c350d3d0a3a287ed02e7322c4c90; its dump
  // holds inf.Dec internals we do not reproduce, so the UID is ours (stable, not upstream's).
  const manifest = fixturePod("dec.yaml");
  assert.notEqual(manifest.metadata.uid, "dda0c350d3d0a3a287ed02e7322c4c90");
  assert.equal(fixturePod("dec.yaml").metadata.uid, manifest.metadata.uid);
  const decoded = parseManifestDocuments(
    Deno.readTextFileSync(new URL("../fixtures/upstream_static_pods/dec.yaml", import.meta.url)),
    { file: "dec.yaml", allowList: false },
  )[0]!.pod;
  const defaulted = applyPodDefaults(decoded);
  assert.equal(
    staticPodUID(defaulted, "", { nodeName: "testnode", source: "file", origin: "x" }).upstream,
    false,
  );
});

Deno.test("a URL manifest's pod gets the UID upstream v1.37.2's http source gives it", () => {
  // Printed by config.NewSourceURL reading the fixture served at each URL.
  const cases: [string, string, string][] = [
    ["etcd.yaml", "http://127.0.0.1:38811/manifests/etcd.yaml", "b45940f60491d455a02552de55987585"],
    ["web.yaml", "http://127.0.0.1:38811/web", "ad733eb24d76bc7a7abbf97cfe50a3b3"],
  ];
  for (const [file, origin, want] of cases) {
    const text = Deno.readTextFileSync(
      new URL(`../fixtures/upstream_static_pods/${file}`, import.meta.url),
    );
    const [pod] = staticPodsFromManifest(text, {
      nodeName: "testnode",
      source: "http",
      origin,
      now: 0,
    });
    assert.equal(pod!.metadata.uid, want, origin);
  }
});
