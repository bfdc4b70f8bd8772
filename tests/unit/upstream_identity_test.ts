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
import { upstreamPodDump } from "../../lib/config/upstream_uid.ts";
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
  // memory 1.5Gi, cpu "0.5"
  ["dec.yaml", "dda0c350d3d0a3a287ed02e7322c4c90"],
  // inf.Dec amounts (1.5Gi, 20 digits, 5e-10, 8Ei capped), exponent forms, 1n rounded up to 1m
  ["quantities.yaml", "648534118e65b39b20ac06753ad597fd"],
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

/**
 * go-spew's text of a quantity as upstream v1.37.2 decodes it, printed by its own code
 * (resource.ParseQuantity, then Quantity.RoundUp(-3) for a ResourceList value, as its v1
 * defaults do): [quantity, as a plain Quantity, as a ResourceList value].
 */
const QUANTITY_DUMPS: [string, string, string][] = [
  ["1.5Gi", dec("[1610612736000000000]", 9, "BinarySI"), dec("[1610612736000]", 3, "BinarySI")],
  [
    "12345678901234567890",
    dec("[5097733592002180096 669260594]", 9, "DecimalSI"),
    dec("[4807115922877858896 669]", 3, "DecimalSI"),
  ],
  ["5e-10", dec("[1]", 9, "DecimalExponent"), dec("[1]", 3, "DecimalExponent")],
  [
    "8Ei",
    dec("[9223372036854775807]", 0, "BinarySI"),
    dec("[18446744073709550616 499]", 3, "BinarySI"),
  ],
  ["0.1Ki", dec("[102400000000]", 9, "BinarySI"), dec("[102400]", 3, "BinarySI")],
  ["0.0Ki", dec("<nil>", 1, "BinarySI"), dec("<nil>", 3, "BinarySI")],
  ["1e3", int64(1, 3, "1e3", "DecimalExponent"), int64(1, 3, "1e3", "DecimalExponent")],
  ["1n", int64(1, -9, "1n", "DecimalSI"), int64(1, -3, "", "DecimalSI")],
];

function dec(words: string, scale: number, format: string): string {
  return "{i:(resource.int64Amount){value:(int64)0 scale:(resource.Scale)0} " +
    "d:(resource.infDecAmount){Dec:(*inf.Dec){unscaled:(big.Int){neg:(bool)false " +
    `abs:(big.nat)${words}} scale:(inf.Scale)${scale}}} s:(string) Format:(resource.Format)${format}}`;
}

function int64(value: number, scale: number, s: string, format: string): string {
  return `{i:(resource.int64Amount){value:(int64)${value} scale:(resource.Scale)${scale}} ` +
    `d:(resource.infDecAmount){Dec:(*inf.Dec)<nil>} s:(string)${s} Format:(resource.Format)${format}}`;
}

Deno.test("upstreamPodDump() prints quantities as upstream's ParseQuantity and v1 defaults leave them", () => {
  for (const [quantity, plain, rounded] of QUANTITY_DUMPS) {
    const pod = testPod({ uid: "u-1", containers: ["app"] });
    pod.spec.containers[0]!.resources = { limits: { memory: quantity } };
    pod.spec.volumes = [{ name: "v", emptyDir: { sizeLimit: quantity } }];
    const text = upstreamPodDump(pod, "");
    assert.ok(text?.includes(`SizeLimit:(*resource.Quantity)${plain} `), `${quantity} plain`);
    assert.ok(
      text?.includes(`Limits:(core.ResourceList)map[memory:${rounded}]`),
      `${quantity} limit`,
    );
  }
});

Deno.test("a static pod with a creationTimestamp gets a UID of its own", () => {
  // Upstream prints the time's *time.Location, whose contents depend on the host's zone
  // data and on whether the kubelet process has loaded it yet; that is not reproduced.
  const text = [
    "apiVersion: v1",
    "kind: Pod",
    "metadata: { name: ts, creationTimestamp: '2024-01-02T03:04:05Z' }",
    "spec: { containers: [{ name: app, image: busybox }] }",
  ].join("\n");
  const own: string[] = [];
  const read = () =>
    staticPodsFromManifest(text, {
      nodeName: "testnode",
      source: "file",
      origin: "/etc/kubernetes/manifests/ts.yaml",
      now: 0,
      onOwnUID: (name) => own.push(name),
    })[0]!;
  const first = read();
  assert.equal(read().metadata.uid, first.metadata.uid);
  assert.deepEqual(own, ["ts", "ts"]);
  const decoded = parseManifestDocuments(text, { file: "ts.yaml", allowList: false })[0]!.pod;
  const defaulted = applyPodDefaults(decoded);
  assert.equal(upstreamPodDump(defaulted, ""), undefined);
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
