/**
 * fast-check generators for the fuzz suite: valid pods, the same pods mutated one field at
 * a time (wrong types, huge strings and arrays, deep nesting, unicode, duplicate names,
 * invalid quantities, negative and huge numbers, every enum wrong, nulls in lists), the
 * manifest files they become (YAML or JSON, sometimes cut short), random bytes, and
 * KubeletConfiguration documents and kubelet command lines mutated the same way.
 *
 * Every generator is plain data: the tests decide where the data goes (the static pod
 * decoder, a manifest directory, the apiserver, the config loader).
 *
 * @module
 */

import fc from "fast-check";
import { stringify as toYaml } from "yaml";
import type { Pod } from "../../lib/api/types.ts";

type Json = unknown;
type Path = readonly (string | number)[];

// ---- valid pods ----------------------------------------------------------------

const LABEL = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/);

/**
 * A valid pod with most of the fields denolet validates set, so that mutating any field
 * reaches a validation rule. `image` is what a test can run (busybox); `command` keeps
 * the container alive.
 * @param image the image the containers use
 * @returns pods that pass validation unmutated
 */
export function validPodArb(image = "busybox"): fc.Arbitrary<Pod> {
  return fc.record({
    name: LABEL,
    container: LABEL,
    init: fc.boolean(),
    cpu: fc.constantFrom("100m", "0.5", "1", "250m"),
    memory: fc.constantFrom("64Mi", "128M", "1Gi", "100000000"),
    port: fc.integer({ min: 1, max: 65535 }),
  }).map(({ name, container, init, cpu, memory, port }) => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: "default",
        labels: { app: name, "example.com/tier": "fuzz" },
        annotations: { note: "fuzz" },
      },
      spec: {
        // The host's network: no CNI setup per pod, so a real agent runs many cheaply.
        hostNetwork: true,
        restartPolicy: "Always",
        dnsPolicy: "ClusterFirst",
        terminationGracePeriodSeconds: 1,
        activeDeadlineSeconds: 3600,
        hostname: name,
        volumes: [
          { name: "scratch", emptyDir: { sizeLimit: "10Mi", medium: "" } },
          { name: "host", hostPath: { path: "/tmp", type: "Directory" } },
        ],
        ...(init
          ? {
            initContainers: [{
              name: `${container}-init`.slice(0, 63),
              image,
              imagePullPolicy: "Never",
              command: ["true"],
            }],
          }
          : {}),
        containers: [{
          name: container,
          image,
          imagePullPolicy: "Never",
          command: ["sh", "-c", "sleep 3600"],
          env: [{ name: "FUZZ", value: "1" }],
          ports: [{ name: "web", containerPort: port, protocol: "TCP" }],
          resources: { requests: { cpu, memory }, limits: { memory } },
          volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
          readinessProbe: { exec: { command: ["true"] }, periodSeconds: 5, failureThreshold: 3 },
          terminationMessagePolicy: "File",
          securityContext: { seccompProfile: { type: "RuntimeDefault" } },
        }],
        tolerations: [{ key: "k", operator: "Equal", value: "v", effect: "NoSchedule" }],
        dnsConfig: {
          nameservers: ["10.0.0.10"],
          searches: ["svc.local"],
          options: [{ name: "ndots", value: "2" }],
        },
        hostAliases: [{ ip: "10.1.2.3", hostnames: ["fuzz.local"] }],
        readinessGates: [{ conditionType: "example.com/ready" }],
        securityContext: {
          sysctls: [{ name: "kernel.shm_rmid_forced", value: "0" }],
          fsGroupChangePolicy: "OnRootMismatch",
        },
      },
    };
    return pod as unknown as Pod;
  });
}

// ---- bad values ----------------------------------------------------------------

/** Strings that stress decoders and validators: huge, unicode, control characters. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "\ud800",
    "💥",
    "ｗｅｂ",
    "Web",
    "a".repeat(64),
    "-a-",
    "../../etc",
    "/abs",
    "${HOME}",
    "$(VAR)",
    "NaN",
    "Infinity",
    "-1",
    "1e309",
    "0x10",
    "__proto__",
    "constructor",
    "true",
    "null",
  ),
  fc.integer({ min: 254, max: 70_000 }).map((n) => "x".repeat(n)),
  fc.tuple(fc.constantFrom("a", "é", "💥", "-", ".", "/"), fc.integer({ min: 64, max: 5_000 }))
    .map(([c, n]) => c.repeat(n)),
);

/** Numbers at and beyond every edge a field could have. */
export const nastyNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    -1,
    0,
    -0,
    0.5,
    -2147483648,
    2147483648,
    4294967296,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER + 2,
    1e308,
    -1e308,
    Number.MIN_VALUE,
    65536,
  ),
  fc.integer(),
  fc.double({ noNaN: true }),
);

/** Quantities upstream refuses (and a few it takes), as strings. */
export const badQuantity: fc.Arbitrary<string | number> = fc.oneof(
  fc.constantFrom(
    "",
    "-1",
    "1.2.3",
    "1Qi",
    "1 Gi",
    "Mi",
    "1e",
    "1e999",
    "9".repeat(400),
    "1Ei",
    "0.0000000001",
    "+-1",
    "1mi",
    "NaN",
    "Infinity",
    "0x10",
    "1_000",
  ),
  nastyNumber,
  nastyString,
);

/**
 * A deeply nested value (arrays or objects), deep enough to find recursion without a bound.
 * @param maxDepth the deepest nesting generated
 * @returns nested values
 */
export function deepValue(maxDepth = 3_000): fc.Arbitrary<Json> {
  return fc.tuple(fc.integer({ min: 20, max: maxDepth }), fc.boolean()).map(([depth, arrays]) => {
    let v: Json = "bottom";
    for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
    return v;
  });
}

/** Any bad value for any field: wrong types, extremes, nulls, nesting, big lists. */
export const badValue: fc.Arbitrary<Json> = fc.oneof(
  {
    arbitrary: fc.constantFrom(null, true, false, [], {}, [null], [[]], [{}], { "": null }),
    weight: 3,
  },
  { arbitrary: nastyString, weight: 3 },
  { arbitrary: nastyNumber, weight: 3 },
  { arbitrary: badQuantity, weight: 1 },
  { arbitrary: deepValue(), weight: 1 },
  {
    arbitrary: fc.integer({ min: 100, max: 5_000 }).chain((n) =>
      fc.constantFrom<Json>(
        Array.from({ length: n }, () => null),
        Array.from({ length: n }, (_, i) => `x${i}`),
        Array.from({ length: n }, () => ({ name: "dup" })),
      )
    ),
    weight: 1,
  },
  {
    arbitrary: fc.jsonValue({ maxDepth: 4 }),
    weight: 2,
  },
);

// ---- mutations -----------------------------------------------------------------

/** One change to a valid pod, described so a failure message can say what it was. */
export interface Mutation {
  /** `set`, `delete`, `duplicate` a list entry, `push` a value into a list, or `key` (add one). */
  kind: "set" | "delete" | "duplicate" | "push" | "key";
  path: Path;
  value?: Json;
}

/** Every enum field of the valid pod, with the list of its values' shapes. */
const ENUM_PATHS: readonly Path[] = [
  ["spec", "restartPolicy"],
  ["spec", "dnsPolicy"],
  ["spec", "containers", 0, "imagePullPolicy"],
  ["spec", "containers", 0, "terminationMessagePolicy"],
  ["spec", "containers", 0, "restartPolicy"],
  ["spec", "containers", 0, "ports", 0, "protocol"],
  ["spec", "containers", 0, "securityContext", "seccompProfile", "type"],
  ["spec", "containers", 0, "securityContext", "procMount"],
  ["spec", "volumes", 0, "emptyDir", "medium"],
  ["spec", "volumes", 1, "hostPath", "type"],
  ["spec", "tolerations", 0, "operator"],
  ["spec", "tolerations", 0, "effect"],
  ["spec", "securityContext", "fsGroupChangePolicy"],
  ["spec", "securityContext", "supplementalGroupsPolicy"],
  ["spec", "securityContext", "seccompProfile", "type"],
  ["spec", "containers", 0, "readinessProbe", "httpGet", "scheme"],
];

/** The quantity fields of the valid pod. */
const QUANTITY_PATHS: readonly Path[] = [
  ["spec", "containers", 0, "resources", "requests", "cpu"],
  ["spec", "containers", 0, "resources", "requests", "memory"],
  ["spec", "containers", 0, "resources", "limits", "memory"],
  ["spec", "containers", 0, "resources", "limits", "ephemeral-storage"],
  ["spec", "volumes", 0, "emptyDir", "sizeLimit"],
];

/** Lists whose entries carry a name that must be unique. */
const NAMED_LISTS: readonly Path[] = [
  ["spec", "containers"],
  ["spec", "volumes"],
  ["spec", "containers", 0, "ports"],
  ["spec", "containers", 0, "env"],
  ["spec", "containers", 0, "volumeMounts"],
  ["spec", "securityContext", "sysctls"],
];

/**
 * Every path in a JSON value (objects and arrays walked), the root excluded.
 * @param value the value
 * @returns the paths, parents before children
 */
export function pathsOf(value: Json): Path[] {
  const out: Path[] = [];
  const walk = (v: Json, path: Path) => {
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        out.push([...path, i]);
        walk(item, [...path, i]);
      });
    } else if (v !== null && typeof v === "object") {
      for (const [k, item] of Object.entries(v)) {
        out.push([...path, k]);
        walk(item, [...path, k]);
      }
    }
  };
  walk(value, []);
  return out;
}

/** A shallow copy of an object or array (own keys only, `__proto__` kept as a plain key). */
function shallowCopy(v: Json): Record<string | number, Json> {
  if (Array.isArray(v)) return [...v] as unknown as Record<number, Json>;
  const out: Record<string, Json> = {};
  for (const [k, item] of Object.entries(v as object)) setOwn(out, k, item);
  return out;
}

/** Sets a key as an own data property, so `__proto__` is a key and not the prototype. */
function setOwn(target: Record<string | number, Json>, key: string | number, value: Json): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/**
 * Applies a mutation to `pod`, copying only the objects on the path (the rest is shared,
 * so a 3,000-deep value costs nothing to keep).
 * @param pod the valid pod; not modified
 * @param m the mutation
 * @returns the mutated pod
 */
export function applyMutation(pod: Json, m: Mutation): Json {
  const create = m.kind === "set" || m.kind === "key";
  const root = shallowCopy(pod);
  let parent = root;
  for (const key of m.path.slice(0, -1)) {
    const next = parent[key];
    if (next === null || typeof next !== "object") {
      if (!create) return root;
      const made = {};
      setOwn(parent, key, made);
      parent = made;
      continue;
    }
    const copy = shallowCopy(next);
    setOwn(parent, key, copy);
    parent = copy;
  }
  const last = m.path[m.path.length - 1]!;
  switch (m.kind) {
    case "set":
    case "key":
      setOwn(parent, last, m.value);
      break;
    case "delete":
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete parent[last];
      break;
    case "duplicate":
    case "push": {
      const list = parent[last];
      if (!Array.isArray(list)) break;
      if (m.kind === "push") setOwn(parent, last, [...list, m.value]);
      else if (list.length > 0) setOwn(parent, last, [...list, list[0]]);
      break;
    }
  }
  return root;
}

/** The fields of a document that deserve their own mutations. */
export interface MutationTargets {
  /** Enum fields: set to near misses and junk. */
  enums: readonly Path[];
  /** Quantity fields: set to invalid quantities. */
  quantities: readonly Path[];
  /** Lists whose entries must have unique names: an entry duplicated. */
  namedLists: readonly Path[];
  /** Duration fields: set to invalid or extreme durations. */
  durations?: readonly Path[];
}

/** The pod's targets. */
export const POD_TARGETS: MutationTargets = {
  enums: ENUM_PATHS,
  quantities: QUANTITY_PATHS,
  namedLists: NAMED_LISTS,
};

/** Durations Go's time.ParseDuration refuses, or takes at an extreme. */
export const badDuration: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(
    "",
    "-1s",
    "1",
    "1y",
    "1d",
    "NaN",
    "Infinity",
    "1e400h",
    "9999999999999999h",
    "2562048h",
    "1.5.5s",
    "1h-1m",
    "+5m",
    "0",
    "0s",
    ".s",
    "1µs",
    "1us",
    "1ns",
    "-0s",
    "5m0s0",
  ),
  nastyNumber,
  nastyString,
);

/**
 * Mutations of a valid document: any field set to a bad value or deleted, every enum set
 * wrong, quantities and durations made invalid, named list entries duplicated, nulls and
 * junk pushed into lists, unknown keys added.
 * @param doc the valid document (a pod by default)
 * @param targets its enum, quantity, duration and named-list fields
 * @returns mutations for it
 */
export function mutationArb(
  doc: Json,
  targets: MutationTargets = POD_TARGETS,
): fc.Arbitrary<Mutation> {
  const pod = doc;
  const paths = pathsOf(pod);
  const lists = paths.filter((p) => Array.isArray(getAt(pod, p)));
  const objects: Path[] = [[], ...paths.filter((p) => isObject(getAt(pod, p)))];
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant("set" as const),
        path: fc.constantFrom(...paths),
        value: badValue,
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("delete" as const),
        path: fc.constantFrom(...paths),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant("set" as const),
        path: fc.constantFrom(...targets.enums),
        value: fc.oneof(
          nastyString,
          fc.constantFrom("always", "ALWAYS", "Unknown", "", " Always"),
          nastyNumber,
        ),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("set" as const),
        path: fc.constantFrom(...targets.quantities),
        value: badQuantity,
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("duplicate" as const),
        path: fc.constantFrom(...targets.namedLists),
      }),
    },
    {
      weight: targets.durations?.length ? 3 : 0,
      arbitrary: fc.record({
        kind: fc.constant("set" as const),
        path: fc.constantFrom<Path>(...(targets.durations ?? [[]])),
        value: badDuration,
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("push" as const),
        path: fc.constantFrom(...lists),
        value: fc.oneof(fc.constantFrom(null, 1, "x", [], true), badValue),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("key" as const),
        path: fc.tuple(fc.constantFrom(...objects), fc.oneof(nastyString, fc.constant("__proto__")))
          .map(([p, k]) => [...p, k]),
        value: badValue,
      }),
    },
  );
}

function isObject(v: Json): boolean {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function getAt(root: Json, path: Path): Json {
  let v = root;
  for (const key of path) v = (v as Record<string | number, Json>)?.[key];
  return v;
}

/** A valid pod, the mutations applied to it (one to three), and the result. */
export interface MutatedPod {
  base: Pod;
  mutations: Mutation[];
  pod: Json;
}

/**
 * Valid pods mutated one to three times.
 * @param image the image of the base pods
 * @returns the mutated pods with what was done to them
 */
export function mutatedPodArb(image = "busybox"): fc.Arbitrary<MutatedPod> {
  return validPodArb(image).chain((base) =>
    fc.array(mutationArb(base), { minLength: 1, maxLength: 3 }).map((mutations) => ({
      base,
      mutations,
      pod: mutations.reduce<Json>((p, m) => applyMutation(p, m), base),
    }))
  );
}

// ---- manifest files ------------------------------------------------------------

/** A manifest file's content and how it was made. */
export interface ManifestText {
  text: string;
  /** "json", "yaml", "yaml-multi" (the pod after a good document), "truncated", "bytes", "yamlish". */
  form: string;
  /** The mutations, when the text came from a mutated pod. */
  mutations?: Mutation[];
}

function serialize(value: Json, yaml: boolean): string {
  if (yaml) {
    try {
      return toYaml(value, { aliasDuplicateObjects: false });
    } catch {
      // Deeply nested values overflow the YAML writer (test code); JSON is YAML too.
    }
  }
  return JSON.stringify(value, null, yaml ? 0 : 2) ?? "null";
}

/** Random bytes, decoded as the file source decodes them (UTF-8, lossy). */
export const randomBytesText: fc.Arbitrary<ManifestText> = fc.uint8Array({ maxLength: 4096 }).map((
  bytes,
) => ({ text: new TextDecoder().decode(bytes), form: "bytes" }));

/** Text made of YAML's and JSON's punctuation: anchors, aliases, tags, flow, block scalars. */
export const yamlishText: fc.Arbitrary<ManifestText> = fc.array(
  fc.constantFrom(
    "apiVersion: v1\n",
    "kind: Pod\n",
    "metadata:\n",
    "  name: x\n",
    "spec:\n",
    "  containers:\n",
    "  - name: c\n",
    "    image: i\n",
    "---\n",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!binary ",
    "!!int ",
    "!!float ",
    "!!map ",
    "!!set ",
    "!!omap ",
    "!!timestamp ",
    "!custom ",
    "? ",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "|\n",
    ">-\n",
    "'",
    '"',
    "\\u0000",
    "%YAML 1.2\n",
    "%TAG ! tag:x,2000:\n",
    "...\n",
    "\t",
    "  ",
    "\n",
    "#",
    "0x1F",
    "1e400",
    ".inf",
    ".nan",
    "~",
    "null",
    "y",
    "2001-12-14t21:59:43.10-05:00",
    "x",
  ),
  { maxLength: 200 },
).map((parts) => ({ text: parts.join(""), form: "yamlish" }));

/**
 * Manifest files: mutated pods as YAML or JSON (alone, after a good document, or cut short),
 * random bytes and YAML-ish noise.
 * @param image the image of the base pods
 * @returns manifest texts with how they were made
 */
export function manifestTextArb(image = "busybox"): fc.Arbitrary<ManifestText> {
  const fromPod = fc.tuple(
    mutatedPodArb(image),
    fc.constantFrom("json", "yaml", "yaml-multi", "truncated"),
    fc.double({ min: 0, max: 1, noNaN: true }),
  ).map(([m, form, cut]): ManifestText => {
    const yaml = form !== "json";
    let text = serialize(m.pod, yaml);
    if (form === "yaml-multi") text = `${serialize(m.base, true)}---\n${text}`;
    if (form === "truncated") text = text.slice(0, Math.floor(text.length * cut));
    return { text, form, mutations: m.mutations };
  });
  return fc.oneof(
    { weight: 8, arbitrary: fromPod },
    { weight: 1, arbitrary: randomBytesText },
    { weight: 1, arbitrary: yamlishText },
  );
}

/**
 * Describes a manifest for a failure message, without printing a 200 kB string.
 * @param m the manifest text
 * @returns a short description
 */
export function describeManifest(m: ManifestText): string {
  const muts = (m.mutations ?? []).map((x) =>
    `${x.kind} ${preview(x.path.join("."))}${x.value === undefined ? "" : ` = ${preview(x.value)}`}`
  );
  return `${m.form} (${m.text.length} chars)${muts.length ? `: ${muts.join("; ")}` : ""}: ${
    preview(m.text)
  }`;
}

/**
 * At most 160 characters of a value, for messages.
 * @param v any value
 * @returns a preview
 */
export function preview(v: unknown): string {
  let s: string;
  try {
    s = typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > 160 ? `${s.slice(0, 160)}…(${s.length})` : s;
}

// ---- KubeletConfiguration and flags --------------------------------------------

/**
 * A valid KubeletConfiguration document to mutate: the defaults as /configz writes them
 * (every field, in upstream's encoding), plus the maps and lists the defaults leave empty.
 * @param defaults the encoded defaults (lib/options encodeKubeletConfiguration)
 * @returns the document
 */
export function kubeletConfigBase(defaults: Record<string, unknown>): Record<string, unknown> {
  return {
    ...defaults,
    staticPodPath: "/etc/kubernetes/manifests",
    clusterDomain: "cluster.local",
    clusterDNS: ["10.0.0.10"],
    evictionHard: { "memory.available": "100Mi", "nodefs.available": "10%" },
    evictionSoft: { "memory.available": "200Mi" },
    evictionSoftGracePeriod: { "memory.available": "1m30s" },
    evictionMinimumReclaim: { "memory.available": "0Mi" },
    systemReserved: { cpu: "100m", memory: "100Mi" },
    kubeReserved: { cpu: "100m", memory: "100Mi", "ephemeral-storage": "1Gi" },
    featureGates: { SidecarContainers: true },
    registerWithTaints: [{ key: "example.com/fuzz", value: "x", effect: "NoSchedule" }],
    allowedUnsafeSysctls: ["kernel.msg*"],
  };
}

/** The config's fields with their own mutations. */
export const CONFIG_TARGETS: MutationTargets = {
  enums: [
    ["cgroupDriver"],
    ["cpuManagerPolicy"],
    ["memoryManagerPolicy"],
    ["topologyManagerPolicy"],
    ["topologyManagerScope"],
    ["hairpinMode"],
    ["authorization", "mode"],
    ["logging", "format"],
    ["configMapAndSecretChangeDetectionStrategy"],
    ["contentType"],
    ["registerWithTaints", 0, "effect"],
    ["enforceNodeAllocatable", 0],
  ],
  quantities: [
    ["evictionHard", "memory.available"],
    ["evictionHard", "nodefs.available"],
    ["evictionSoft", "memory.available"],
    ["evictionMinimumReclaim", "memory.available"],
    ["systemReserved", "cpu"],
    ["kubeReserved", "memory"],
    ["kubeReserved", "ephemeral-storage"],
    ["containerLogMaxSize"],
  ],
  namedLists: [["registerWithTaints"], ["clusterDNS"], ["enforceNodeAllocatable"]],
  durations: [
    ["syncFrequency"],
    ["fileCheckFrequency"],
    ["httpCheckFrequency"],
    ["authentication", "webhook", "cacheTTL"],
    ["authorization", "webhook", "cacheAuthorizedTTL"],
    ["streamingConnectionIdleTimeout"],
    ["nodeStatusUpdateFrequency"],
    ["nodeStatusReportFrequency"],
    ["imageMinimumGCAge"],
    ["volumeStatsAggPeriod"],
    ["cpuManagerReconcilePeriod"],
    ["runtimeRequestTimeout"],
    ["cpuCFSQuotaPeriod"],
    ["evictionPressureTransitionPeriod"],
    ["containerLogMonitorInterval"],
    ["logging", "flushFrequency"],
    ["evictionSoftGracePeriod", "memory.available"],
    ["shutdownGracePeriod"],
  ],
};

/**
 * KubeletConfiguration files: the base mutated one to three times (YAML or JSON, sometimes
 * cut short), random bytes and YAML noise.
 * @param base from {@link kubeletConfigBase}
 * @returns file texts with how they were made
 */
export function kubeletConfigTextArb(base: Record<string, unknown>): fc.Arbitrary<ManifestText> {
  const mutated = fc.array(mutationArb(base, CONFIG_TARGETS), { minLength: 0, maxLength: 3 })
    .chain((mutations) =>
      fc.tuple(
        fc.constant(mutations),
        fc.constantFrom("json", "yaml", "truncated"),
        fc.double({ min: 0, max: 1, noNaN: true }),
      )
    )
    .map(([mutations, form, cut]): ManifestText => {
      const doc = mutations.reduce<Json>((d, m) => applyMutation(d, m), base);
      let text = serialize(doc, form !== "json");
      if (form === "truncated") text = text.slice(0, Math.floor(text.length * cut));
      return { text, form, mutations };
    });
  return fc.oneof(
    { weight: 8, arbitrary: mutated },
    { weight: 1, arbitrary: randomBytesText },
    { weight: 1, arbitrary: yamlishText },
  );
}

/** A flag's value: valid-looking, or any of the bad values, durations and quantities. */
const flagValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "true",
    "false",
    "0",
    "1",
    "-1",
    "10s",
    "1m",
    "100Mi",
    "a=b",
    "a=b,c=d",
    "k=v:NoSchedule",
  ),
  badDuration.map((v) => String(v)),
  badQuantity.map((v) => String(v)),
  nastyString,
  nastyNumber.map(String),
);

/**
 * Kubelet command lines: known flags (by the names given) with bad values, in every form
 * pflag takes (`--f=v`, `--f v`, bare, `-v4`), plus unknown flags and stray words.
 * @param names the flag names (lib/options FLAGS)
 * @returns argv arrays
 */
export function argvArb(names: readonly string[]): fc.Arbitrary<string[]> {
  const one = fc.oneof(
    {
      weight: 8,
      arbitrary: fc.tuple(
        fc.constantFrom(...names),
        flagValue,
        fc.constantFrom("eq", "space", "bare"),
      )
        .map(([name, value, form]) =>
          form === "eq"
            ? [`--${name}=${value}`]
            : form === "space"
            ? [`--${name}`, value]
            : [`--${name}`]
        ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(["-v", "4"], ["-v4"], ["-h"], ["--"], ["-"], ["---x"]),
    },
    { weight: 1, arbitrary: nastyString.map((s) => [`--${s}`]) },
    { weight: 1, arbitrary: nastyString.map((s) => [s]) },
  );
  return fc.array(one, { minLength: 1, maxLength: 4 }).map((parts) => parts.flat());
}
