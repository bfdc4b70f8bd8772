import assert from "node:assert/strict";
import type { Container, Pod } from "../../lib/api/types.ts";
import { validatePod } from "../../lib/api/validation.ts";

function container(overrides: Partial<Container> = {}): Container {
  return { name: "web", image: "busybox:1.36", ...overrides };
}

/** A valid pod; each test applies one mutation. */
function basePod(): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web-node1", namespace: "default", labels: { app: "web" } },
    spec: {
      containers: [container({
        ports: [{ name: "http", containerPort: 8080, protocol: "TCP" }],
        resources: { limits: { cpu: "500m", memory: "64Mi" }, requests: { cpu: "100m" } },
        volumeMounts: [{ name: "data", mountPath: "/data" }],
      })],
      volumes: [{ name: "data", emptyDir: {} }, { name: "host", hostPath: { path: "/var/log" } }],
      restartPolicy: "Always",
    },
  };
}

function errorsAfter(mutate: (pod: Pod) => void): string[] {
  const pod = basePod();
  mutate(pod);
  return validatePod(pod);
}

function c0(pod: Pod): Container {
  const c = pod.spec.containers[0];
  if (!c) throw new Error("base pod lost its container");
  return c;
}

Deno.test("validatePod() accepts a valid pod", () => {
  assert.deepEqual(validatePod(basePod()), []);
});

Deno.test("validatePod() requires metadata.name", () => {
  assert.deepEqual(errorsAfter((p) => delete p.metadata.name), ["metadata.name: Required value"]);
});

Deno.test("validatePod() rejects a pod name that is not a DNS-1123 subdomain", () => {
  const errs = errorsAfter((p) => (p.metadata.name = "Web_Server"));
  assert.equal(errs.length, 1);
  assert.match(
    errs[0]!,
    /^metadata\.name: Invalid value: "Web_Server": a lowercase RFC 1123 subdomain/,
  );
});

Deno.test("validatePod() rejects a bad namespace and label", () => {
  const errs = errorsAfter((p) => {
    p.metadata.namespace = "Kube_System";
    p.metadata.labels = { "bad key!": "ok" };
  });
  assert.equal(errs.length, 2);
  assert.match(errs[0]!, /^metadata\.namespace: Invalid value: "Kube_System"/);
  assert.match(errs[1]!, /^metadata\.labels: Invalid value: "bad key!"/);
});

Deno.test("validatePod() requires spec.containers", () => {
  assert.deepEqual(errorsAfter((p) => (p.spec.containers = [])), [
    "spec.containers: Required value",
  ]);
});

Deno.test("validatePod() reports a duplicate container name with its index", () => {
  const errs = errorsAfter((p) => p.spec.containers.push(container()));
  assert.deepEqual(errs, ['spec.containers[1].name: Duplicate value: "web"']);
});

Deno.test("validatePod() treats init and app container names as one namespace", () => {
  const errs = errorsAfter((p) => (p.spec.initContainers = [container()]));
  assert.deepEqual(errs, ['spec.containers[0].name: Duplicate value: "web"']);
});

Deno.test("validatePod() requires a container name and validates it as a DNS-1123 label", () => {
  assert.deepEqual(errorsAfter((p) => (c0(p).name = "")), [
    "spec.containers[0].name: Required value",
  ]);
  const errs = errorsAfter((p) => (c0(p).name = "a".repeat(64)));
  assert.match(
    errs[0]!,
    /^spec\.containers\[0\]\.name: Invalid value: "a{64}": must be no more than 63 characters/,
  );
});

Deno.test("validatePod() requires a container image", () => {
  assert.deepEqual(errorsAfter((p) => delete c0(p).image), [
    "spec.containers[0].image: Required value",
  ]);
});

Deno.test("validatePod() rejects an unsupported restartPolicy, listing the supported ones", () => {
  const errs = errorsAfter((p) => (p.spec.restartPolicy = "Sometimes" as "Always"));
  assert.deepEqual(errs, [
    'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
  ]);
});

Deno.test("validatePod() rejects unsupported pull and DNS policies", () => {
  const errs = errorsAfter((p) => {
    c0(p).imagePullPolicy = "Sometimes" as "Always";
    p.spec.dnsPolicy = "Google";
  });
  assert.equal(errs.length, 2);
  assert.match(errs[0]!, /^spec\.containers\[0\]\.imagePullPolicy: Unsupported value: "Sometimes"/);
  assert.match(errs[1]!, /^spec\.dnsPolicy: Unsupported value: "Google"/);
});

Deno.test("validatePod() rejects a malformed resource quantity", () => {
  const errs = errorsAfter((p) => (c0(p).resources = { limits: { cpu: "abc" } }));
  assert.equal(errs.length, 1);
  assert.match(
    errs[0]!,
    /^spec\.containers\[0\]\.resources\.limits\[cpu\]: Invalid value: "abc": quantities must match/,
  );
});

Deno.test("validatePod() rejects negative quantities and requests above limits", () => {
  const errs = errorsAfter((
    p,
  ) => (c0(p).resources = { limits: { cpu: "1", memory: "-1" }, requests: { cpu: "2" } }));
  assert.deepEqual(errs, [
    'spec.containers[0].resources.limits[memory]: Invalid value: "-1": must be greater than or equal to 0',
    'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
  ]);
});

Deno.test("validatePod() accepts the API-backed volume sources", () => {
  const errs = errorsAfter((p) =>
    p.spec.volumes!.push(
      { name: "cfg", configMap: { name: "x" } },
      { name: "sec", secret: { secretName: "x" } },
      { name: "info", downwardAPI: { items: [] } },
      { name: "all", projected: { sources: [] } },
    )
  );
  assert.deepEqual(errs, []);
});

Deno.test("validatePod() rejects duplicate volume names and bad volume names", () => {
  const errs = errorsAfter((p) => {
    p.spec.volumes!.push({ name: "data", emptyDir: {} }, { name: "Bad_Name", emptyDir: {} });
  });
  assert.equal(errs.length, 2);
  assert.equal(errs[0], 'spec.volumes[2].name: Duplicate value: "data"');
  assert.match(
    errs[1]!,
    /^spec\.volumes\[3\]\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 label/,
  );
});

Deno.test("validatePod() rejects a volume with two sources or a hostPath without path", () => {
  const errs = errorsAfter((p) => {
    p.spec.volumes = [
      { name: "data", emptyDir: {}, hostPath: { path: "/x" } },
      { name: "host", hostPath: { path: "" } },
    ];
  });
  assert.deepEqual(errs, [
    "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
    "spec.volumes[1].hostPath.path: Required value",
  ]);
});

Deno.test("validatePod() rejects a volumeMount naming an unknown volume", () => {
  const errs = errorsAfter((p) => c0(p).volumeMounts!.push({ name: "cache", mountPath: "/cache" }));
  assert.deepEqual(errs, ['spec.containers[0].volumeMounts[1].name: Not found: "cache"']);
});

Deno.test("validatePod() rejects duplicate mount paths and a missing mountPath", () => {
  const errs = errorsAfter((p) => {
    c0(p).volumeMounts!.push({ name: "host", mountPath: "/data" }, { name: "host", mountPath: "" });
  });
  assert.deepEqual(errs, [
    'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique',
    "spec.containers[0].volumeMounts[2].mountPath: Required value",
  ]);
});

Deno.test("validatePod() rejects a subPathExpr beside subPath, absolute or with ..", () => {
  const errs = errorsAfter((p) => {
    c0(p).volumeMounts!.push(
      { name: "host", mountPath: "/a", subPath: "x", subPathExpr: "$(POD_NAME)" },
      { name: "host", mountPath: "/b", subPathExpr: "/$(POD_NAME)" },
      { name: "host", mountPath: "/c", subPathExpr: "$(POD_NAME)/../x" },
      { name: "host", mountPath: "/d", subPathExpr: "logs/$(POD_NAME)" },
    );
  });
  assert.deepEqual(errs, [
    'spec.containers[0].volumeMounts[1].subPathExpr: Invalid value: "$(POD_NAME)": subPathExpr and subPath are mutually exclusive',
    'spec.containers[0].volumeMounts[2].subPathExpr: Invalid value: "/$(POD_NAME)": must be a relative path',
    "spec.containers[0].volumeMounts[3].subPathExpr: Invalid value: \"$(POD_NAME)/../x\": must not contain '..'",
  ]);
});

Deno.test("validatePod() rejects ports out of range and bad protocols", () => {
  const errs = errorsAfter((p) => {
    c0(p).ports = [
      { containerPort: 0 },
      { containerPort: 70000 },
      { containerPort: 80, hostPort: 65536 },
      { containerPort: 81, protocol: "ICMP" as "TCP" },
    ];
  });
  assert.deepEqual(errs, [
    "spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive",
    "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
    "spec.containers[0].ports[2].hostPort: Invalid value: 65536: must be between 1 and 65535, inclusive",
    'spec.containers[0].ports[3].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
  ]);
});

Deno.test("validatePod() requires hostPort to equal containerPort on the host network", () => {
  const errs = errorsAfter((p) => {
    p.spec.hostNetwork = true;
    c0(p).ports = [{ containerPort: 80, hostPort: 81 }];
  });
  assert.equal(errs.length, 1);
  assert.match(
    errs[0]!,
    /^spec\.containers\[0\]\.ports\[0\]\.hostPort: Invalid value: 81: must match/,
  );
});

Deno.test("validatePod() rejects duplicate port names within a container", () => {
  const errs = errorsAfter((p) => c0(p).ports!.push({ name: "http", containerPort: 8081 }));
  assert.deepEqual(errs, ['spec.containers[0].ports[1].name: Duplicate value: "http"']);
});

Deno.test("validatePod() allows restartPolicy Always only on init containers", () => {
  assert.deepEqual(
    errorsAfter((
      p,
    ) => (p.spec.initContainers = [container({ name: "side", restartPolicy: "Always" })])),
    [],
  );
  assert.deepEqual(errorsAfter((p) => (c0(p).restartPolicy = "Always")), [
    "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
  ]);
});

Deno.test("validatePod() rejects a probe with no handler or two handlers", () => {
  const errs = errorsAfter((p) => {
    c0(p).livenessProbe = { periodSeconds: 5 };
    c0(p).readinessProbe = { exec: { command: ["true"] }, tcpSocket: { port: 80 } };
  });
  assert.deepEqual(errs, [
    "spec.containers[0].livenessProbe.exec: Required value",
    "spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
  ]);
});

Deno.test("validatePod() rejects negative grace periods and bad env names", () => {
  const errs = errorsAfter((p) => {
    p.spec.terminationGracePeriodSeconds = -1;
    c0(p).env = [{ name: "1BAD", value: "x" }];
  });
  assert.equal(errs.length, 2);
  assert.match(errs[0]!, /^spec\.containers\[0\]\.env\[0\]\.name: Invalid value: "1BAD"/);
  assert.equal(
    errs[1],
    "spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0",
  );
});

Deno.test("validatePod() survives malformed shapes from untrusted manifests", () => {
  const pod = basePod() as unknown as Record<string, unknown>;
  (pod.spec as Record<string, unknown>).containers = "web";
  const errs = validatePod(pod as unknown as Pod);
  assert.ok(
    errs.includes('spec.containers: Invalid value: "string": must be a list'),
    errs.join("\n"),
  );
  assert.deepEqual(validatePod({ metadata: { name: "x" } } as unknown as Pod), [
    "spec: Required value",
  ]);
});

Deno.test("validatePod() checks dnsConfig as upstream's validatePodDNSConfig", () => {
  assert.deepEqual(errorsAfter((p) => (p.spec.dnsPolicy = "None")), [
    "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
  ]);
  assert.deepEqual(
    errorsAfter((p) => {
      p.spec.dnsPolicy = "None";
      p.spec.dnsConfig = { searches: ["a.example"] };
    }),
    [
      "spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None",
    ],
  );
  assert.deepEqual(
    errorsAfter((p) => {
      p.spec.dnsPolicy = "None";
      p.spec.dnsConfig = {
        nameservers: ["1.2.3.4", "010.0.0.1", "2001:db8::1"],
        searches: ["_srv.example.", ".", "svc.cluster.local"],
        options: [{ name: "ndots", value: "2" }],
      };
    }),
    [],
  );
  const errs = errorsAfter((p) => {
    p.spec.dnsConfig = {
      nameservers: ["1.2.3.4", "5.6.7.8", "9.9.9.9", "not-an-ip"],
      searches: ["Bad_Domain"],
      options: [{ name: "" }],
    };
  });
  assert.equal(errs.length, 4, errs.join("\n"));
  assert.match(
    errs[0]!,
    /^spec\.dnsConfig\.nameservers: Invalid value: .*must not have more than 3 nameservers$/,
  );
  assert.match(
    errs[1]!,
    /^spec\.dnsConfig\.nameservers\[3\]: Invalid value: "not-an-ip": must be a valid IP address/,
  );
  assert.match(errs[2]!, /^spec\.dnsConfig\.searches\[0\]: Invalid value: "Bad_Domain"/);
  assert.equal(errs[3], "spec.dnsConfig.options[0]: Required value: must not be empty");
  const long = errorsAfter((p) => {
    p.spec.dnsConfig = { searches: Array.from({ length: 33 }, (_, i) => `d${i}`) };
  });
  assert.match(long[0]!, /must not have more than 32 search paths$/);
});

Deno.test("validatePod() checks hostAliases, subdomain and hostnameOverride as upstream", () => {
  assert.deepEqual(
    errorsAfter((
      p,
    ) => (p.spec.hostAliases = [{ ip: "123.45.67.89", hostnames: ["foo", "bar.baz"] }])),
    [],
  );
  const aliases = errorsAfter((
    p,
  ) => (p.spec.hostAliases = [{ ip: "foo", hostnames: ["Bad_Name"] }]));
  assert.equal(aliases.length, 2, aliases.join("\n"));
  assert.match(aliases[0]!, /^spec\.hostAliases\[0\]\.ip: Invalid value: "foo"/);
  assert.match(aliases[1]!, /^spec\.hostAliases\[0\]\.hostnames\[0\]: Invalid value: "Bad_Name"/);
  assert.match(
    errorsAfter((p) => (p.spec.subdomain = "a.b"))[0]!,
    /^spec\.subdomain: Invalid value/,
  );
  assert.deepEqual(
    errorsAfter((p) => {
      p.spec.hostnameOverride = "x.example";
      p.spec.setHostnameAsFQDN = true;
      p.spec.hostNetwork = true;
    }),
    [
      "spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true",
      "spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true",
    ],
  );
  assert.deepEqual(errorsAfter((p) => (p.spec.hostnameOverride = "a".repeat(65))), [
    "spec.hostnameOverride: Too long: may not be more than 64 bytes",
  ]);
});

Deno.test("validatePod() requires readiness gates' condition types to be qualified names", () => {
  assert.deepEqual(
    errorsAfter((p) => (p.spec.readinessGates = [{ conditionType: "example.com/feature-1" }])),
    [],
  );
  const errs = errorsAfter((p) => (p.spec.readinessGates = [{ conditionType: "not a name!" }]));
  assert.equal(errs.length, 1);
  assert.match(errs[0]!, /^spec\.readinessGates\[0\]\.conditionType: Invalid value: "not a name!"/);
});

Deno.test("validatePod() checks securityContext profiles, procMount, sysctls and policies as upstream", async (t) => {
  const PATH_RE = "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?";
  const cases: { name: string; mutate: (p: Pod) => void; want: string[] }[] = [
    {
      name: "valid profiles, sysctls and policies",
      mutate: (p) => {
        p.spec.securityContext = {
          seccompProfile: { type: "Localhost", localhostProfile: "profiles/audit.json" },
          appArmorProfile: { type: "RuntimeDefault" },
          sysctls: [{ name: "kernel.shm_rmid_forced", value: "1" }, {
            name: "net/ipv4/ip_local_port_range",
            value: "1024 65535",
          }],
          fsGroupChangePolicy: "OnRootMismatch",
          supplementalGroupsPolicy: "Merge",
        };
        c0(p).securityContext = { procMount: "Default", seccompProfile: { type: "Unconfined" } };
      },
      want: [],
    },
    {
      name: "seccomp: unknown type, Localhost without a name, a name on RuntimeDefault",
      mutate: (p) => {
        p.spec.securityContext = { seccompProfile: { type: "Bogus" as "Unconfined" } };
        c0(p).securityContext = { seccompProfile: { type: "Localhost" } };
        p.spec.initContainers = [container({
          name: "init",
          securityContext: { seccompProfile: { type: "RuntimeDefault", localhostProfile: "x" } },
        })];
      },
      want: [
        'spec.initContainers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "x": can only be set when seccomp type is Localhost',
        "spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
        'spec.securityContext.seccompProfile.type: Unsupported value: "Bogus": supported values: "Localhost", "RuntimeDefault", "Unconfined"',
      ],
    },
    {
      name: "AppArmor Localhost with a padded name; procMount Unmasked with host users",
      mutate: (p) => {
        c0(p).securityContext = {
          appArmorProfile: { type: "Localhost", localhostProfile: " deny" },
          procMount: "Unmasked",
        };
      },
      want: [
        'spec.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: " deny": must not be padded with whitespace',
        'spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`',
      ],
    },
    {
      name: "sysctls: bad name, duplicate, net sysctl on the host network; bad policies",
      mutate: (p) => {
        p.spec.hostNetwork = true;
        p.spec.securityContext = {
          sysctls: [
            { name: "Kernel.Foo", value: "1" },
            { name: "kernel.shm_rmid_forced", value: "1" },
            { name: "kernel.shm_rmid_forced", value: "0" },
            { name: "net.ipv4.tcp_syncookies", value: "1" },
          ],
          fsGroupChangePolicy: "Sometimes" as "Always",
          supplementalGroupsPolicy: "Loose" as "Merge",
        };
      },
      want: [
        'spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"',
        'spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Loose": supported values: "Merge", "Strict"',
        `spec.securityContext.sysctls[0].name: Invalid value: "Kernel.Foo": must have at most 253 characters and match regex ^${PATH_RE}$`,
        'spec.securityContext.sysctls[2].name: Duplicate value: "kernel.shm_rmid_forced"',
        "spec.securityContext.sysctls[3].name: Invalid value: \"net.ipv4.tcp_syncookies\": may not be specified when 'hostNetwork' is true",
      ],
    },
  ];
  for (const tc of cases) {
    await t.step(tc.name, () => {
      const got = errorsAfter(tc.mutate).filter((e) => e.includes("ecurityContext"));
      assert.deepEqual(got.sort(), [...tc.want].sort());
    });
  }
});

// Found by the fuzz suite (tests/fuzz/manifest_test.ts): a null or scalar entry in a list
// of objects threw a TypeError out of validatePod instead of naming the entry.
Deno.test("validatePod() names a null or scalar entry in every list of objects, never throws", () => {
  const cases: [string, (pod: Pod, bad: unknown) => void][] = [
    ["spec.containers[0].env[1]", (p, bad) => (c0(p).env = [{ name: "A" }, bad as never])],
    ["spec.containers[0].ports[1]", (p, bad) => c0(p).ports!.push(bad as never)],
    ["spec.containers[0].volumeMounts[1]", (p, bad) => c0(p).volumeMounts!.push(bad as never)],
    ["spec.tolerations[0]", (p, bad) => (p.spec.tolerations = [bad as never])],
    ["spec.hostAliases[0]", (p, bad) => (p.spec.hostAliases = [bad as never])],
    ["spec.readinessGates[0]", (p, bad) => (p.spec.readinessGates = [bad as never])],
    ["spec.dnsConfig.options[0]", (p, bad) => (p.spec.dnsConfig = { options: [bad as never] })],
    ["spec.securityContext.sysctls[0]", (p, bad) => {
      p.spec.securityContext = { sysctls: [bad as never] };
    }],
  ];
  for (const [path, mutate] of cases) {
    for (const bad of [null, 1, "x"]) {
      const errs = errorsAfter((pod) => mutate(pod, bad));
      assert.deepEqual(
        errs,
        [`${path}: Invalid value: ${JSON.stringify(bad)}: must be an object`],
        `${path} = ${JSON.stringify(bad)}`,
      );
    }
  }
});

Deno.test("validatePod() refuses a container's image, command, args, workingDir or env value of another type", () => {
  const errs = errorsAfter((pod) => {
    const c = c0(pod) as unknown as Record<string, unknown>;
    c.image = 5;
    c.command = ["sh", null];
    c.args = "not a list";
    c.workingDir = ["/"];
    c.env = [{ name: "A", value: 1 }];
  });
  assert.deepEqual(errs, [
    "spec.containers[0].image: Invalid value: 5: must be a string",
    'spec.containers[0].workingDir: Invalid value: ["/"]: must be a string',
    "spec.containers[0].command[1]: Invalid value: null: must be a string",
    'spec.containers[0].args: Invalid value: "string": must be a list',
    "spec.containers[0].env[0].value: Invalid value: 1: must be a string",
  ]);
});
