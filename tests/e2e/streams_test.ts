/**
 * kubectl's streaming commands through a real kube-apiserver to denolet's
 * secure port (lib/streaming) and on to containerd's streaming server:
 * `attach`, `cp` both ways, `port-forward` carrying HTTP, and `exec -it` with
 * a terminal (script(1) gives kubectl a pty) whose size and resize reach the
 * container. Each runs once over WebSockets (kubectl's default) and once over
 * SPDY (kubectl's KUBECTL_REMOTE_COMMAND_WEBSOCKETS /
 * KUBECTL_PORT_FORWARD_WEBSOCKETS feature gates set to false); kubectl's
 * `-v=8` log of the apiserver's 101 shows which one was used. Also
 * `/runningpods/` through the apiserver's node proxy.
 *
 * Commands that do not end by themselves (port-forward, a session on a pty)
 * run in the background: their output is read by a task that accumulates it,
 * the test polls that text, and they are killed by PID at the end.
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { requireRoot } from "../harness/mod.ts";
import { shellQuote } from "../harness/_exec.ts";
import { freePort, waitFor } from "../kit/mod.ts";
import { NODE, startNode } from "./_node.ts";

/** kubectl's environment for each protocol (k8s.io/kubectl pkg/cmd/util FeatureGate). */
const PROTOCOLS = {
  websocket: {},
  spdy: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false", KUBECTL_PORT_FORWARD_WEBSOCKETS: "false" },
} as const satisfies Record<string, Record<string, string>>;
type Protocol = keyof typeof PROTOCOLS;

/** A process running in the background whose output is collected as it comes. */
interface Background {
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Settles when the process has exited and its output is read. */
  status: Promise<Deno.CommandStatus>;
  /** Its exit status once {@link Background.status} has settled. */
  exited(): Deno.CommandStatus | undefined;
  /** Kills it by PID (if still running) and awaits its exit. */
  stop(): Promise<Deno.CommandStatus>;
}

function startBackground(
  bin: string,
  args: string[],
  env: Record<string, string>,
  stdin: string | undefined,
): Background {
  const child = new Deno.Command(bin, {
    args,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  let err = "";
  const collect = async (stream: ReadableStream<Uint8Array>, add: (text: string) => void) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) add(decoder.decode(chunk, { stream: true }));
  };
  const reading = Promise.all([
    collect(child.stdout, (t) => out += t),
    collect(child.stderr, (t) => err += t),
  ]);
  // A pty session keeps its stdin open (script ends when it reads EOF); a
  // piped command gets its text and then EOF.
  const writer = child.stdin.getWriter();
  if (stdin !== undefined) {
    void writer.write(new TextEncoder().encode(stdin)).then(() => writer.close()).catch(() => {});
  }
  const status = child.status.then(async (s) => {
    await writer.close().catch(() => {});
    await reading;
    return s;
  });
  let exited: Deno.CommandStatus | undefined;
  void status.then((s) => exited = s);
  return {
    pid: child.pid,
    stdout: () => out,
    stderr: () => err,
    status,
    exited: () => exited,
    async stop() {
      if (!exited) {
        try {
          Deno.kill(child.pid, "SIGTERM");
        } catch {
          // It exited between the check and the signal.
        }
      }
      return await status;
    },
  };
}

/**
 * The `-v=8` flag that makes kubectl log response headers, and the check that the
 * upgrade it logged is the protocol asked for (the apiserver's 101 answer).
 */
const LOG_HEADERS = "-v=8";
function assertUpgradedTo(stderr: string, protocol: Protocol): void {
  const upgrade = protocol === "websocket"
    ? /^\s*Upgrade: websocket$/m
    : /^\s*Upgrade: SPDY\/3\.1$/m;
  assert.match(stderr, upgrade, `kubectl's upgrade was not ${protocol}`);
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test({
  name: "kubectl attach, cp, port-forward and exec -it through the apiserver, WebSocket and SPDY",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const node = await startNode({ name: "streams" });
    const started: Background[] = [];
    try {
      const { cluster: c, runtime: rt, scratch, log } = node;
      const ns = await node.namespace();
      const httpPort = freePort();
      const kubectlArgs = (args: string[]) => ["--kubeconfig", c.adminKubeconfig, ...args];
      const background = (
        args: string[],
        protocol: Protocol,
        stdin?: string,
      ) => {
        const b = startBackground(
          `${c.binDir}/kubectl`,
          kubectlArgs(args),
          PROTOCOLS[protocol],
          stdin,
        );
        started.push(b);
        return b;
      };
      const image = { image: rt.images.busybox, imagePullPolicy: "Never" as const };
      // Host network: port-forward's traffic stays on the host's loopback.
      await node.runPod({
        metadata: { name: "box", namespace: ns },
        spec: {
          nodeName: NODE,
          hostNetwork: true,
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: "main",
              ...image,
              command: [
                "sh",
                "-c",
                [
                  "mkdir -p /www",
                  "echo hello-from-httpd > /www/index.html",
                  "head -c 1048576 /dev/urandom > /www/blob",
                  `exec httpd -f -p 127.0.0.1:${httpPort} -h /www`,
                ].join(" && "),
              ],
            },
            // One per protocol: stdinOnce, so the end of kubectl's stdin ends the container.
            ...Object.keys(PROTOCOLS).map((p) => ({
              name: `echo-${p}`,
              ...image,
              stdin: true,
              stdinOnce: true,
              command: ["sh", "-c", 'while read line; do echo "got $line"; done; echo bye'],
            })),
          ],
        },
      });

      await t.step(
        "kubectl get --raw nodes/<node>/proxy/runningpods/: the pod from the runtime",
        async () => {
          // The runtime's view as of the last relist (PLEG, every second), as upstream's
          // runtime cache: it may trail the pod's Ready status by a relist.
          const box = await waitFor("all of box's containers in /runningpods/", async () => {
            const raw = await c.kubectl([
              ...["get", "--raw", `/api/v1/nodes/${NODE}/proxy/runningpods/`],
            ]);
            assert.equal(raw.code, 0, raw.stderr);
            const list = JSON.parse(raw.stdout) as { kind: string; items: Pod[] };
            assert.equal(list.kind, "PodList");
            const found = list.items.find((p) => p.metadata.namespace === ns);
            return found?.spec.containers.length === 3 ? found : undefined;
          }, { timeoutMs: 10_000, log });
          const uid = (await c.kubectlJson<Pod>(["get", "pod", "-n", ns, "box"])).metadata.uid;
          assert.deepEqual(box.metadata, { name: "box", namespace: ns, uid });
          assert.deepEqual(
            box.spec.containers.map((x) => x.name).sort(),
            ["echo-spdy", "echo-websocket", "main"],
          );
        },
      );

      for (const protocol of Object.keys(PROTOCOLS) as Protocol[]) {
        const env = PROTOCOLS[protocol];

        await t.step(`kubectl attach -i (${protocol}): stdin in, output out`, async () => {
          const attach = background(
            ["attach", LOG_HEADERS, "-i", "-n", ns, "box", "-c", `echo-${protocol}`],
            protocol,
            "hello\nworld\n",
          );
          const status = await waitFor(`kubectl attach (${protocol}) to end`, attach.exited, {
            timeoutMs: 30_000,
            log: () => `${attach.stdout()}\n${attach.stderr()}\n${log()}`,
          });
          assert.equal(status.code, 0, attach.stderr());
          assert.equal(attach.stdout(), "got hello\ngot world\nbye\n", attach.stderr());
          assertUpgradedTo(attach.stderr(), protocol);
        });

        await t.step(`kubectl cp both ways (${protocol}): 1 MB byte-identical`, async () => {
          // getRandomValues fills at most 64 KiB at a time.
          const blob = new Uint8Array(1 << 20);
          for (let off = 0; off < blob.length; off += 65536) {
            crypto.getRandomValues(blob.subarray(off, off + 65536));
          }
          const local = `${scratch}/in-${protocol}.bin`;
          await Deno.writeFile(local, blob);
          const into = await c.kubectl(
            ["cp", LOG_HEADERS, "-c", "main", local, `${ns}/box:/tmp/in-${protocol}.bin`],
            { env },
          );
          assert.equal(into.code, 0, into.stderr);
          assertUpgradedTo(into.stderr, protocol);
          const sum = await c.kubectl(
            ["exec", "-n", ns, "box", "-c", "main", "--", "sha256sum", `/tmp/in-${protocol}.bin`],
            { env },
          );
          assert.equal(sum.code, 0, sum.stderr);
          assert.equal(sum.stdout.split(" ")[0], await sha256(blob));
          const back = `${scratch}/out-${protocol}.bin`;
          const out = await c.kubectl(
            ["cp", "-c", "main", `${ns}/box:/tmp/in-${protocol}.bin`, back],
            { env },
          );
          assert.equal(out.code, 0, out.stderr);
          assert.deepEqual(await Deno.readFile(back), blob);
        });

        await t.step(`kubectl port-forward (${protocol}): HTTP through the pod`, async () => {
          const local = freePort();
          const pf = background(
            ["port-forward", LOG_HEADERS, "-n", ns, "pod/box", `${local}:${httpPort}`],
            protocol,
          );
          try {
            const page = await waitFor(`GET / through port-forward (${protocol})`, async () => {
              const res = await fetch(`http://127.0.0.1:${local}/index.html`, {
                signal: AbortSignal.timeout(5_000),
              });
              return res.ok ? await res.text() : undefined;
            }, { timeoutMs: 30_000, log: () => `${pf.stdout()}\n${pf.stderr()}` });
            assert.equal(page, "hello-from-httpd\n");
            const res = await fetch(`http://127.0.0.1:${local}/blob`);
            assert.equal(res.status, 200);
            const body = new Uint8Array(await res.arrayBuffer());
            assert.equal(body.length, 1 << 20);
            const sum = await c.kubectl(
              ["exec", "-n", ns, "box", "-c", "main", "--", "sha256sum", "/www/blob"],
            );
            assert.equal(sum.stdout.split(" ")[0], await sha256(body));
            assertUpgradedTo(pf.stderr(), protocol);
            assert.match(
              pf.stdout(),
              new RegExp(`Forwarding from 127\\.0\\.0\\.1:${local} -> ${httpPort}`),
            );
          } finally {
            await pf.stop();
          }
        });

        await t.step(`kubectl exec -it (${protocol}): a tty, its size and a resize`, async () => {
          // In the container: print the tty, wait (bounded) for the size kubectl sends at
          // start, then for the size after the resize below.
          const inner = [
            "echo in-tty=$(tty)",
            'i=0; while [ "$(stty size)" != "30 100" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done',
            'echo size1=$(stty size | tr " " x)',
            'i=0; while [ "$(stty size)" != "40 120" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done',
            'echo size2=$(stty size | tr " " x)',
          ].join("; ");
          const kubectl = [
            `${c.binDir}/kubectl`,
            ...kubectlArgs([
              ...["exec", "-it", "-n", ns, "box", "-c", "main", "--", "sh", "-c", inner],
            ]),
          ].map(shellQuote).join(" ");
          const session = startBackground(
            "script",
            ["-qec", `echo outer-tty=$(tty); stty rows 30 cols 100; exec ${kubectl}`, "/dev/null"],
            { ...PROTOCOLS[protocol], SHELL: "/bin/sh" },
            undefined,
          );
          started.push(session);
          const seen = () => `${session.stdout()}\n${session.stderr()}`;
          const first = await waitFor("the first size in the container", () => {
            return /size1=\S+/.exec(session.stdout())?.[0];
          }, { timeoutMs: 30_000, log: seen });
          assert.equal(first, "size1=30x100", seen());
          assert.match(session.stdout(), /in-tty=\/dev\/pts\/\d+/);
          const pty = /outer-tty=(\/dev\/pts\/\d+)/.exec(session.stdout())?.[1];
          assert.ok(pty, seen());
          // Resizing the pty kubectl runs on sends it SIGWINCH, as a terminal window would.
          const resize = await new Deno.Command("stty", {
            args: ["-F", pty, "rows", "40", "cols", "120"],
          }).output();
          assert.ok(resize.success, new TextDecoder().decode(resize.stderr));
          const second = await waitFor("the resized size in the container", () => {
            return /size2=\S+/.exec(session.stdout())?.[0];
          }, { timeoutMs: 40_000, log: seen });
          assert.equal(second, "size2=40x120", seen());
          const status = await waitFor("kubectl exec -it to end", session.exited, {
            timeoutMs: 30_000,
            log: seen,
          });
          assert.equal(status.code, 0, seen());
        });
      }
    } finally {
      for (const b of started) await b.stop();
      await node.stop();
    }
  },
});
