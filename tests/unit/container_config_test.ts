import assert from "node:assert/strict";
import type { Container, Pod } from "../../lib/api/types.ts";
import {
  type LinuxContainerSecurityContext,
  MountPropagation,
  NamespaceMode,
  ProfileType,
} from "../../lib/cri/types.ts";
import {
  containerResources,
  containerSubPaths,
  DEFAULT_MASKED_PATHS,
  DEFAULT_READONLY_PATHS,
  generateContainerConfig,
  milliCPUToQuota,
  milliCPUToShares,
} from "../../lib/kuberuntime/container_config.ts";
import { ContainerConfigError, expandVars } from "../../lib/kuberuntime/env.ts";
import { hashContainer } from "../../lib/kuberuntime/hash.ts";
import { containerOOMScoreAdj } from "../../lib/kuberuntime/qos.ts";
import { testPod } from "../kit/mod.ts";

const GiB = 2 ** 30;

function basePod(mutate: (p: Pod, c: Container) => void = () => {}): Pod {
  const pod = testPod({
    namespace: "prod",
    uid: "u-1",
    containers: ["app"],
    spec: { nodeName: "node-a" },
  });
  mutate(pod, pod.spec.containers[0]!);
  return pod;
}

function build(pod: Pod, extra: Partial<Parameters<typeof generateContainerConfig>[0]> = {}) {
  return generateContainerConfig({
    pod,
    container: pod.spec.containers[0]!,
    restartCount: 2,
    imageRef: "sha256:abc",
    volumePaths: new Map(),
    memoryCapacity: 4 * GiB,
    ...extra,
  });
}

Deno.test("expandVars() follows upstream's $(VAR) rules, including $$ escapes", () => {
  const vars = new Map([["A", "x"], ["B", "y"]]);
  const lookup = (n: string) => vars.get(n);
  assert.equal(expandVars("$(A)-$(B)", lookup), "x-y");
  assert.equal(expandVars("$(MISSING)", lookup), "$(MISSING)");
  assert.equal(expandVars("$$(A)", lookup), "$(A)");
  assert.equal(expandVars("$$$(A)", lookup), "$x");
  assert.equal(expandVars("a$b", lookup), "a$b");
  assert.equal(expandVars("$(A", lookup), "$(A");
  assert.equal(expandVars("end$", lookup), "end$");
  assert.equal(expandVars("$()", lookup), "$()");
});

Deno.test("generateContainerConfig() expands command and args from env defined in order", () => {
  const pod = basePod((_, c) => {
    c.env = [
      { name: "GREETING", value: "hello" },
      { name: "MSG", value: "$(GREETING) world $(LATER)" },
      { name: "LATER", value: "!" },
      { name: "POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
      { name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    ];
    c.command = ["sh", "-c", "echo $(MSG) $$(MSG) $(POD)"];
    c.args = ["$(NODE)", "$(IP)"];
  });
  const cfg = build(pod, { podIP: "10.1.2.3" });
  assert.deepEqual(cfg.envs, [
    { key: "GREETING", value: "hello" },
    { key: "MSG", value: "hello world $(LATER)" },
    { key: "LATER", value: "!" },
    { key: "POD", value: "web" },
    { key: "NODE", value: "node-a" },
    { key: "IP", value: "10.1.2.3" },
  ]);
  assert.deepEqual(cfg.command, ["sh", "-c", "echo hello world $(LATER) $(MSG) web"]);
  assert.deepEqual(cfg.args, ["node-a", "10.1.2.3"]);
});

Deno.test("generateContainerConfig() fails a configMap env source without an apiserver, naming it", () => {
  const pod = basePod((_, c) => {
    c.env = [{ name: "X", valueFrom: { configMapKeyRef: { name: "cm", key: "k" } } }];
  });
  assert.throws(() => build(pod), (err: unknown) => {
    assert.ok(err instanceof ContainerConfigError);
    assert.equal(err.reason, "CreateContainerConfigError");
    assert.match(
      err.message,
      /env "X" of container "app": configmap "cm" cannot be read: no apiserver/,
    );
    return true;
  });
});

Deno.test("milliCPUToShares() and milliCPUToQuota() match upstream's arithmetic", () => {
  assert.equal(milliCPUToShares(0), 2);
  assert.equal(milliCPUToShares(1), 2);
  assert.equal(milliCPUToShares(100), 102);
  assert.equal(milliCPUToShares(1000), 1024);
  assert.equal(milliCPUToShares(10_000_000), 262_144);
  assert.equal(milliCPUToQuota(0), 0);
  assert.equal(milliCPUToQuota(5), 1000);
  assert.equal(milliCPUToQuota(250), 25_000);
  assert.equal(milliCPUToQuota(2000), 200_000);
});

Deno.test("containerResources() maps requests and limits to shares, quota and memory", () => {
  const pod = basePod((_, c) => {
    c.resources = {
      requests: { cpu: "250m", memory: "1Gi" },
      limits: { cpu: "500m", memory: "2Gi" },
    };
  });
  assert.deepEqual(containerResources(pod, pod.spec.containers[0]!, 4 * GiB), {
    cpuShares: 256,
    cpuPeriod: 100_000,
    cpuQuota: 50_000,
    memoryLimitInBytes: 2 * GiB,
    oomScoreAdj: 750,
  });
  const onlyLimit = basePod((_, c) => (c.resources = { limits: { cpu: "1" } }));
  const r = containerResources(onlyLimit, onlyLimit.spec.containers[0]!, 4 * GiB);
  assert.equal(r.cpuShares, 1024);
  const none = containerResources(basePod(), basePod().spec.containers[0]!, 4 * GiB);
  assert.deepEqual(none, { cpuShares: 2, oomScoreAdj: 1000 });
});

Deno.test("containerOOMScoreAdj() follows the QoS policy", () => {
  const guaranteed = basePod((_, c) => (c.resources = { limits: { cpu: "1", memory: "1Gi" } }));
  assert.equal(containerOOMScoreAdj(guaranteed, guaranteed.spec.containers[0]!, 4 * GiB), -997);
  const huge = basePod((_, c) => (c.resources = { requests: { memory: "4Gi" } }));
  assert.equal(containerOOMScoreAdj(huge, huge.spec.containers[0]!, 4 * GiB), 3);
  const tiny = basePod((_, c) => (c.resources = { requests: { cpu: "10m" } }));
  assert.equal(containerOOMScoreAdj(tiny, tiny.spec.containers[0]!, 4 * GiB), 999);
  // Go's integer division rounds the request's share down: 40Mi of 4Gi is 9.7‰ → 991, not 990.
  const burstable = basePod((_, c) => (c.resources = { requests: { memory: "40Mi" } }));
  assert.equal(containerOOMScoreAdj(burstable, burstable.spec.containers[0]!, 4 * GiB), 991);
});

Deno.test("generateContainerConfig() writes metadata, image, log path, labels and annotations", () => {
  const pod = basePod((p, c) => {
    p.spec.terminationGracePeriodSeconds = 5;
    c.ports = [{ containerPort: 80, name: "http" }];
    c.lifecycle = { preStop: { exec: { command: ["sleep", "1"] } } };
  });
  const c = pod.spec.containers[0]!;
  const cfg = build(pod);
  assert.deepEqual(cfg.metadata, { name: "app", attempt: 2 });
  assert.deepEqual(cfg.image, { image: "sha256:abc" });
  assert.equal(cfg.logPath, "app/2.log");
  assert.deepEqual(cfg.labels, {
    "io.kubernetes.pod.name": "web",
    "io.kubernetes.pod.namespace": "prod",
    "io.kubernetes.pod.uid": "u-1",
    "io.kubernetes.container.name": "app",
  });
  assert.deepEqual(cfg.annotations, {
    "io.kubernetes.container.hash": hashContainer(c),
    "io.kubernetes.container.restartCount": "2",
    "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
    "io.kubernetes.container.terminationMessagePolicy": "File",
    "io.kubernetes.pod.terminationGracePeriod": "5",
    "io.kubernetes.container.preStopHandler": '{"exec":{"command":["sleep","1"]}}',
    "io.kubernetes.container.ports": '[{"name":"http","containerPort":80}]', // v1.ContainerPort's field order
  });
});

Deno.test("generateContainerConfig() mounts volumes, the termination log and /etc/hosts", () => {
  const pod = basePod((_, c) => {
    c.volumeMounts = [
      { name: "data", mountPath: "/data", readOnly: true },
      { name: "host", mountPath: "/h", subPath: "sub/dir", mountPropagation: "HostToContainer" },
    ];
  });
  const cfg = build(pod, {
    volumePaths: new Map([["data", "/v/data"], ["host", "/srv/h/"]]),
    terminationLogPath: "/root/pods/u-1/containers/app/x1",
    etcHostsPath: "/root/pods/u-1/etc-hosts",
  });
  assert.deepEqual(cfg.mounts, [
    {
      containerPath: "/data",
      hostPath: "/v/data",
      readonly: true,
      propagation: MountPropagation.PROPAGATION_PRIVATE,
    },
    {
      containerPath: "/h",
      hostPath: "/srv/h/sub/dir",
      readonly: false,
      propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
    },
    { containerPath: "/dev/termination-log", hostPath: "/root/pods/u-1/containers/app/x1" },
    { containerPath: "/etc/hosts", hostPath: "/root/pods/u-1/etc-hosts", selinuxRelabel: true },
  ]);
});

Deno.test("generateContainerConfig() mounts configMap, secret, downwardAPI and projected volumes read-only", () => {
  const pod = basePod((p, c) => {
    p.spec.volumes = [
      { name: "cm", configMap: { name: "x" } },
      { name: "tok", projected: { sources: [] } },
      { name: "scratch", emptyDir: {} },
    ];
    c.volumeMounts = [
      { name: "cm", mountPath: "/cm", readOnly: false },
      { name: "tok", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount" },
      { name: "scratch", mountPath: "/s" },
    ];
  });
  const cfg = build(pod, {
    volumePaths: new Map([["cm", "/v/cm"], ["tok", "/v/tok"], ["scratch", "/v/s"]]),
  });
  assert.deepEqual(cfg.mounts?.map((m) => [m.containerPath, m.readonly]), [
    ["/cm", true],
    ["/var/run/secrets/kubernetes.io/serviceaccount", true],
    ["/s", false],
  ]);
});

Deno.test("generateContainerConfig() refuses unknown volumes and escaping subPaths", () => {
  const missing = basePod((_, c) => (c.volumeMounts = [{ name: "nope", mountPath: "/x" }]));
  assert.throws(() => build(missing), /cannot find volume "nope" of container "app"/);
  const escape = basePod((
    _,
    c,
  ) => (c.volumeMounts = [{ name: "d", mountPath: "/x", subPath: "../etc" }]));
  assert.throws(
    () => build(escape, { volumePaths: new Map([["d", "/v"]]) }),
    /unable to provision SubPath `\.\.\/etc`: must not contain '\.\.'/,
  );
});

Deno.test("generateContainerConfig() expands subPathExpr from the container's env, downward API included", () => {
  const pod = basePod((p, c) => {
    p.metadata.annotations = { mysubpath: "mypath" };
    c.env = [
      { name: "POD_NAME", value: "foo" },
      {
        name: "ANNOTATION",
        valueFrom: { fieldRef: { fieldPath: "metadata.annotations['mysubpath']" } },
      },
    ];
    c.volumeMounts = [
      { name: "work", mountPath: "/subpath_mount", subPathExpr: "$(ANNOTATION)/$(POD_NAME)" },
      { name: "work", mountPath: "/volume_mount" },
    ];
  });
  const cfg = build(pod, { volumePaths: new Map([["work", "/v/work"]]) });
  assert.deepEqual(cfg.mounts?.slice(0, 2).map((m) => [m.containerPath, m.hostPath]), [
    ["/subpath_mount", "/v/work/mypath/foo"],
    ["/volume_mount", "/v/work"],
  ]);
  assert.deepEqual(containerSubPaths(pod.spec.containers[0]!, cfg.envs ?? []), [
    { volumeName: "work", subPath: "mypath/foo" },
  ]);
});

Deno.test("generateContainerConfig() fails a subPathExpr with an unset variable, an absolute path or .. with upstream's errors", () => {
  const withValue = (value: string | undefined) =>
    basePod((_, c) => {
      c.env = value === undefined ? [] : [{ name: "POD_NAME", value }];
      c.volumeMounts = [{ name: "work", mountPath: "/logs", subPathExpr: "$(POD_NAME)" }];
    });
  const cases: [string | undefined, string][] = [
    [undefined, 'volume "work" of container "app": missing value for POD_NAME'],
    ["/tmp", 'volume "work" of container "app": error SubPath `/tmp` must not be an absolute path'],
    [
      "..",
      'volume "work" of container "app": unable to provision SubPath `..`: must not contain \'..\'',
    ],
  ];
  for (const [value, message] of cases) {
    assert.throws(
      () => build(withValue(value), { volumePaths: new Map([["work", "/v/work"]]) }),
      (err: unknown) => {
        assert.ok(err instanceof ContainerConfigError);
        assert.equal(err.reason, "CreateContainerConfigError");
        assert.equal(err.message, message);
        return true;
      },
    );
  }
});

Deno.test("generateContainerConfig() builds the security context over the pod's", () => {
  const pod = basePod((p, c) => {
    p.spec.hostNetwork = true;
    p.spec.securityContext = { runAsUser: 1000, runAsGroup: 100, fsGroup: 7 };
    c.securityContext = {
      runAsUser: 2000,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { add: ["NET_ADMIN"], drop: ["ALL"] },
    };
  });
  const sc = build(pod).linux?.securityContext;
  assert.deepEqual(sc, {
    namespaceOptions: {
      network: NamespaceMode.NODE,
      ipc: NamespaceMode.POD,
      pid: NamespaceMode.CONTAINER,
    },
    privileged: false,
    readonlyRootfs: true,
    noNewPrivs: true,
    runAsUser: { value: 2000 },
    runAsGroup: { value: 100 },
    supplementalGroups: [7],
    capabilities: { addCapabilities: ["NET_ADMIN"], dropCapabilities: ["ALL"] },
    maskedPaths: [...DEFAULT_MASKED_PATHS],
    readonlyPaths: [...DEFAULT_READONLY_PATHS],
    seccomp: { profileType: ProfileType.Unconfined },
  });
  assert.ok(DEFAULT_MASKED_PATHS.includes("/proc/kcore"));
});

Deno.test("generateContainerConfig() masks no paths for a privileged container", () => {
  const pod = basePod((_p, c) => (c.securityContext = { privileged: true }));
  const sc = build(pod).linux?.securityContext;
  assert.equal(sc?.privileged, true);
  assert.equal(sc?.maskedPaths, undefined);
  assert.equal(sc?.readonlyPaths, undefined);
});

Deno.test("generateContainerConfig() enforces runAsNonRoot against the image user", () => {
  const pod = basePod((p) => (p.spec.securityContext = { runAsNonRoot: true }));
  assert.throws(() => build(pod, { imageUid: 0 }), /runAsNonRoot and image will run as root/);
  assert.equal(build(pod, { imageUid: 1000 }).linux?.securityContext?.runAsUser, undefined);
});

Deno.test("generateContainerConfig() puts an ephemeral container in its target's pid namespace", () => {
  const pod = basePod();
  const own = build(pod).linux?.securityContext?.namespaceOptions;
  assert.equal(own?.pid, NamespaceMode.CONTAINER);
  const targeted = build(pod, { targetContainerId: "c0ffee" }).linux?.securityContext
    ?.namespaceOptions;
  assert.deepEqual(targeted, { ...own, pid: NamespaceMode.TARGET, targetId: "c0ffee" });
});

Deno.test("generateContainerConfig() keeps a shared or host pid namespace despite a target", () => {
  const shared = basePod((p) => Object.assign(p.spec, { shareProcessNamespace: true }));
  const opts = build(shared, { targetContainerId: "c0ffee" }).linux?.securityContext
    ?.namespaceOptions;
  assert.equal(opts?.pid, NamespaceMode.POD);
  assert.equal(opts?.targetId, undefined);
  const host = basePod((p) => (p.spec.hostPID = true));
  const hostOpts = build(host, { targetContainerId: "c0ffee" }).linux?.securityContext
    ?.namespaceOptions;
  assert.equal(hostOpts?.pid, NamespaceMode.NODE);
});

Deno.test("generateContainerConfig() sends seccomp, AppArmor, SELinux and procMount as upstream", async (t) => {
  const UNCONFINED = { profileType: ProfileType.Unconfined };
  const RUNTIME_DEFAULT = { profileType: ProfileType.RuntimeDefault };
  const cases: {
    name: string;
    mutate: (p: Pod, c: Container) => void;
    seccompDefault?: boolean;
    want: {
      [K in keyof LinuxContainerSecurityContext]?: LinuxContainerSecurityContext[K] | undefined;
    };
  }[] = [
    { name: "no profile: Unconfined", mutate: () => {}, want: { seccomp: UNCONFINED } },
    {
      name: "no profile with seccompDefault: RuntimeDefault",
      mutate: () => {},
      seccompDefault: true,
      want: { seccomp: RUNTIME_DEFAULT },
    },
    {
      name: "pod RuntimeDefault",
      mutate: (p) => (p.spec.securityContext = { seccompProfile: { type: "RuntimeDefault" } }),
      want: { seccomp: RUNTIME_DEFAULT },
    },
    {
      name: "container Unconfined over the pod's RuntimeDefault, even with seccompDefault",
      mutate: (p, c) => {
        p.spec.securityContext = { seccompProfile: { type: "RuntimeDefault" } };
        c.securityContext = { seccompProfile: { type: "Unconfined" } };
      },
      seccompDefault: true,
      want: { seccomp: UNCONFINED },
    },
    {
      name: "Localhost under <root-dir>/seccomp",
      mutate: (_p, c) => (c.securityContext = {
        seccompProfile: { type: "Localhost", localhostProfile: "profiles/audit.json" },
      }),
      want: {
        seccomp: {
          profileType: ProfileType.Localhost,
          localhostRef: "/var/lib/kubelet/seccomp/profiles/audit.json",
        },
      },
    },
    {
      name: "AppArmor RuntimeDefault from the pod, both spellings",
      mutate: (p) => (p.spec.securityContext = { appArmorProfile: { type: "RuntimeDefault" } }),
      want: {
        seccomp: UNCONFINED,
        apparmor: RUNTIME_DEFAULT,
        apparmorProfile: "runtime/default",
      },
    },
    {
      name: "AppArmor Localhost from the deprecated annotation",
      mutate: (p) => (p.metadata.annotations = {
        "container.apparmor.security.beta.kubernetes.io/app": "localhost/k8s-deny",
      }),
      want: {
        seccomp: UNCONFINED,
        apparmor: { profileType: ProfileType.Localhost, localhostRef: "k8s-deny" },
        apparmorProfile: "localhost/k8s-deny",
      },
    },
    {
      name: "SELinux options from the pod",
      mutate: (p) => (p.spec.securityContext = { seLinuxOptions: { level: "s0:c123,c456" } }),
      want: {
        seccomp: UNCONFINED,
        selinuxOptions: { user: "", role: "", type: "", level: "s0:c123,c456" },
      },
    },
    {
      name: "procMount Unmasked: no masked or read-only paths",
      mutate: (_p, c) => (c.securityContext = { procMount: "Unmasked" }),
      want: { seccomp: UNCONFINED, maskedPaths: undefined, readonlyPaths: undefined },
    },
  ];
  for (const tc of cases) {
    await t.step(tc.name, () => {
      const pod = basePod(tc.mutate);
      const sc = build(pod, {
        seccomp: {
          profileRoot: "/var/lib/kubelet/seccomp",
          ...(tc.seccompDefault !== undefined ? { seccompDefault: tc.seccompDefault } : {}),
        },
      }).linux?.securityContext;
      for (const [key, value] of Object.entries(tc.want)) {
        assert.deepEqual(sc?.[key as keyof LinuxContainerSecurityContext], value, key);
      }
      if (!("apparmor" in tc.want)) assert.equal(sc?.apparmor, undefined);
      if (!("maskedPaths" in tc.want)) assert.deepEqual(sc?.maskedPaths, [...DEFAULT_MASKED_PATHS]);
    });
  }
});

Deno.test("generateContainerConfig() refuses a Localhost profile without a name", () => {
  const seccomp = basePod((
    _p,
    c,
  ) => (c.securityContext = { seccompProfile: { type: "Localhost" } }));
  assert.throws(
    () => build(seccomp),
    /localhostProfile must be set if seccompProfile type is Localhost/,
  );
  const apparmor = basePod((
    _p,
    c,
  ) => (c.securityContext = { appArmorProfile: { type: "Localhost" } }));
  assert.throws(() => build(apparmor), /missing localhost apparmor profile name/);
});

Deno.test("generateContainerConfig() lists fsGroup before supplementalGroups, as upstream", () => {
  const pod = basePod((p) => (p.spec.securityContext = { fsGroup: 7, supplementalGroups: [8, 9] }));
  assert.deepEqual(build(pod).linux?.securityContext?.supplementalGroups, [7, 8, 9]);
});
