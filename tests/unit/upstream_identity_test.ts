/**
 * What the upstream kubelet writes on its containers, which denolet must
 * write identically to adopt them (and be adopted): the container hash and the
 * JSON-encoded annotations. Every expected value was printed once by upstream
 * v1.37.2's own Go code (kubecontainer.HashContainer, json.Marshal of the
 * v1 types) for the inputs here, and is kept as a literal.
 */
import assert from "node:assert/strict";
import type { Container } from "../../lib/api/types.ts";
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
