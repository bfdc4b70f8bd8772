import assert from "node:assert/strict";
import {
  type FakeCriServer,
  type FakeHandler,
  FakeRpcError,
  startFakeCriServer,
} from "../../lib/cri/_fake_server.ts";
import {
  createRuntimeService,
  type CriError,
  GrpcCode,
  isNotFound,
  type PodSandboxConfig,
  type RuntimeService,
} from "../../lib/cri/mod.ts";

const LONG = 50_000;
const SHORT = 7_000;
/** Slack for the time between the client setting a deadline and the server reading it. */
const SLACK = 2_000;

const sandbox: PodSandboxConfig = {
  metadata: { name: "web", uid: "u1", namespace: "prod", attempt: 0 },
  linux: { cgroupParent: "/kubepods" },
};

/** Runs `fn` against a fake server answering with `handlers`, then closes both. */
async function withFake(
  handlers: Record<string, FakeHandler>,
  fn: (cri: RuntimeService, fake: FakeCriServer) => Promise<void>,
  imageHandlers?: Record<string, FakeHandler>,
): Promise<void> {
  const fake = await startFakeCriServer(handlers);
  const images = imageHandlers ? await startFakeCriServer(imageHandlers) : undefined;
  const cri = createRuntimeService({
    endpoint: fake.endpoint,
    ...(images ? { imageEndpoint: images.endpoint } : {}),
    timeoutMs: LONG,
    shortTimeoutMs: SHORT,
  });
  try {
    await fn(cri, fake);
  } finally {
    cri.close();
    await fake.close();
    await images?.close();
  }
}

function assertDeadline(actual: number | undefined, expected: number): void {
  assert.ok(actual !== undefined, `expected a deadline of ~${expected} ms, got none`);
  assert.ok(
    actual <= expected && actual > expected - SLACK,
    `deadline ${actual} ms, expected ~${expected}`,
  );
}

Deno.test("createRuntimeService() version() sends the kubelet's API version and decodes the reply", async () => {
  const reply = {
    version: "0.1.0",
    runtimeName: "fake",
    runtimeVersion: "9.9",
    runtimeApiVersion: "v1",
  };
  await withFake({ Version: () => reply }, async (cri, fake) => {
    assert.deepEqual(await cri.version(), reply);
    assert.deepEqual(fake.calls[0]?.request, { version: "0.1.0" });
  });
});

Deno.test("createRuntimeService() gives read-only calls the short deadline and mutating calls the long one", async () => {
  const handlers: Record<string, FakeHandler> = {
    ListContainers: () => ({ containers: [] }),
    ContainerStatus: () => ({ status: { id: "c1" } }),
    StartContainer: () => ({}),
    RemoveContainer: () => ({}),
    RunPodSandbox: () => ({ podSandboxId: "p1" }),
  };
  await withFake(handlers, async (cri, fake) => {
    await cri.listContainers();
    await cri.containerStatus("c1");
    await cri.startContainer("c1");
    await cri.removeContainer("c1");
    await cri.runPodSandbox(sandbox);
    const [list, status, start, remove, run] = fake.calls;
    assertDeadline(list?.deadlineMs, SHORT);
    assertDeadline(status?.deadlineMs, SHORT);
    assertDeadline(start?.deadlineMs, LONG);
    assertDeadline(remove?.deadlineMs, LONG);
    // The kubelet doubles the request timeout for sandbox creation.
    assertDeadline(run?.deadlineMs, 2 * LONG);
  });
});

Deno.test("createRuntimeService() adds the grace period to StopContainer's deadline and rounds it up", async () => {
  await withFake({ StopContainer: () => ({}) }, async (cri, fake) => {
    await cri.stopContainer("c1", 29.2);
    assert.equal(fake.calls[0]?.request.timeout, 30);
    assertDeadline(fake.calls[0]?.deadlineMs, LONG + 30_000);
  });
});

Deno.test("createRuntimeService() execSync() has no deadline for timeout 0 and request+command timeout otherwise", async () => {
  const reply = { stdout: new TextEncoder().encode("ok"), stderr: new Uint8Array(), exitCode: 0 };
  await withFake({ ExecSync: () => reply }, async (cri, fake) => {
    await cri.execSync("c1", ["true"], 0);
    const r = await cri.execSync("c1", ["true"], 5);
    assert.equal(fake.calls[0]?.deadlineMs, undefined);
    assertDeadline(fake.calls[1]?.deadlineMs, LONG + 5_000);
    assert.deepEqual(fake.calls[1]?.request.cmd, ["true"]);
    assert.equal(new TextDecoder().decode(r.stdout), "ok");
  });
});

Deno.test("createRuntimeService() reopenContainerLog() sends ReopenContainerLog with the container id and the request timeout", async () => {
  await withFake({ ReopenContainerLog: () => ({}) }, async (cri, fake) => {
    await cri.reopenContainerLog("c1");
    assert.equal(fake.calls[0]?.method, "ReopenContainerLog");
    assert.deepEqual(fake.calls[0]?.request, { containerId: "c1" });
    assertDeadline(fake.calls[0]?.deadlineMs, LONG);
  });
});

Deno.test("createRuntimeService() exec/attach/portForward send the streaming requests and return the URL", async () => {
  const handlers: Record<string, FakeHandler> = {
    Exec: () => ({ url: "http://127.0.0.1:1/exec/a" }),
    Attach: () => ({ url: "http://127.0.0.1:1/attach/b" }),
    PortForward: () => ({ url: "http://127.0.0.1:1/portforward/c" }),
  };
  await withFake(handlers, async (cri, fake) => {
    const streams = { tty: true, stdin: true, stdout: true, stderr: false };
    assert.equal(
      await cri.exec("c1", { cmd: ["sh", "-c", "id"], ...streams }),
      "http://127.0.0.1:1/exec/a",
    );
    assert.equal(await cri.attach("c2", streams), "http://127.0.0.1:1/attach/b");
    assert.equal(await cri.portForward("s1", [80, 8080]), "http://127.0.0.1:1/portforward/c");
    assert.deepEqual(fake.calls[0]?.request, {
      containerId: "c1",
      cmd: ["sh", "-c", "id"],
      ...streams,
    });
    assert.deepEqual(fake.calls[1]?.request, { containerId: "c2", ...streams });
    assert.deepEqual(fake.calls[2]?.request, { podSandboxId: "s1", port: [80, 8080] });
    for (const call of fake.calls) assertDeadline(call.deadlineMs, LONG);
  });
});

Deno.test("createRuntimeService() exec() rejects a reply without a URL", async () => {
  await withFake({ Exec: () => ({}) }, async (cri) => {
    await assert.rejects(
      cri.exec("c1", { cmd: ["true"], tty: false, stdin: false, stdout: true, stderr: false }),
      /Exec.*c1.*no streaming url|no streaming url/,
    );
  });
});

Deno.test("createRuntimeService() lets CallOptions.timeoutMs shorten the default deadline", async () => {
  await withFake({ ListPodSandbox: () => ({ items: [] }) }, async (cri, fake) => {
    await cri.listPodSandbox(undefined, { timeoutMs: 1_500 });
    assertDeadline(fake.calls[0]?.deadlineMs, 1_500);
  });
});

Deno.test("createRuntimeService() never lets CallOptions.timeoutMs lengthen the client's deadline", async () => {
  const handlers: Record<string, FakeHandler> = {
    ListPodSandbox: () => ({ items: [] }),
    RunPodSandbox: () => ({ podSandboxId: "p1" }),
    StopContainer: () => ({}),
  };
  await withFake(handlers, async (cri, fake) => {
    const o = { timeoutMs: 10 * LONG };
    await cri.listPodSandbox(undefined, o);
    await cri.runPodSandbox(sandbox, undefined, o);
    await cri.stopContainer("c1", 3, o);
    const [list, run, stop] = fake.calls;
    assertDeadline(list?.deadlineMs, SHORT);
    assertDeadline(run?.deadlineMs, 2 * LONG);
    assertDeadline(stop?.deadlineMs, LONG + 3_000);
  });
});

Deno.test("createRuntimeService() pullImage() has no default deadline and returns the image ref", async () => {
  await withFake({}, async (cri) => {
    const ref = await cri.pullImage(
      { image: "docker.io/library/busybox:1.36" },
      { username: "u", password: "p" },
      sandbox,
    );
    assert.equal(ref, "sha256:abc");
  }, {
    PullImage: (req, call) => {
      assert.equal(call.deadlineMs, undefined);
      assert.equal(req.auth.username, "u");
      assert.equal(req.sandboxConfig.metadata.uid, "u1");
      return { imageRef: "sha256:abc" };
    },
  });
});

Deno.test("createRuntimeService() sends image calls to imageEndpoint when it is set", async () => {
  const image = { id: "sha256:abc", repoTags: ["busybox:1"], size: 1234 };
  await withFake({ Version: () => ({ version: "0.1.0" }) }, async (cri, fake) => {
    const found = await cri.imageStatus({ image: "busybox:1" });
    assert.equal(found?.id, "sha256:abc");
    assert.equal(found?.size, 1234);
    assert.deepEqual(found?.repoDigests, []);
    assert.equal(fake.calls.length, 0, "the runtime endpoint saw no image call");
  }, { ImageStatus: () => ({ image }) });
});

Deno.test("createRuntimeService() imageStatus() returns undefined when the runtime answers with no image", async () => {
  await withFake({ ImageStatus: () => ({}) }, async (cri, fake) => {
    assert.equal(await cri.imageStatus({ image: "absent:1" }), undefined);
    assert.deepEqual(fake.calls[0]?.request.image, { image: "absent:1", annotations: {} });
  });
});

Deno.test("createRuntimeService() createContainer() sends the sandbox config along with the container config", async () => {
  await withFake({ CreateContainer: () => ({ containerId: "c9" }) }, async (cri, fake) => {
    const id = await cri.createContainer("p1", {
      metadata: { name: "app", attempt: 2 },
      image: { image: "busybox" },
      envs: [{ key: "A", value: "1" }],
    }, sandbox);
    assert.equal(id, "c9");
    const req = fake.calls[0]?.request as Record<string, { metadata?: Record<string, unknown> }>;
    assert.equal(req.podSandboxId, "p1");
    assert.equal(req.config?.metadata?.attempt, 2);
    assert.equal(req.sandboxConfig?.metadata?.uid, "u1");
  });
});

Deno.test("createRuntimeService() turns a NotFound status into a CriError naming the call and object", async () => {
  const handlers = {
    StopContainer: () => {
      throw new FakeRpcError(GrpcCode.NOT_FOUND, 'container "c404" not found');
    },
  };
  await withFake(handlers, async (cri) => {
    const err = await cri.stopContainer("c404", 0).then(() => undefined, (e: CriError) => e);
    assert.ok(err, "stopContainer rejected");
    assert.ok(isNotFound(err));
    assert.equal(err.call, "StopContainer");
    assert.equal(err.object, "c404");
    assert.equal(err.code, GrpcCode.NOT_FOUND);
    assert.equal(
      err.message,
      'StopContainer "c404": rpc error: code = NotFound desc = container "c404" not found',
    );
    assert.ok(err.cause instanceof Error);
  });
});

Deno.test("createRuntimeService() rejects a runtime reply that lacks a promised field", async () => {
  await withFake({ RunPodSandbox: () => ({}) }, async (cri) => {
    await assert.rejects(
      cri.runPodSandbox(sandbox),
      /RunPodSandbox "prod\/web": .*no pod sandbox id/,
    );
  });
});

Deno.test("createRuntimeService() cancels an in-flight call when its signal aborts", async () => {
  const abort = new AbortController();
  const handlers = {
    ListContainers: () => {
      // Abort once the server holds the call; never answer it.
      abort.abort(new Error("pod deleted"));
      return new Promise<object>(() => {});
    },
  };
  await withFake(handlers, async (cri) => {
    const err = await cri.listContainers(undefined, { signal: abort.signal }).then(
      () => undefined,
      (e: CriError) => e,
    );
    assert.equal(err?.code, GrpcCode.CANCELLED);
    assert.equal((err?.cause as Error | undefined)?.message, "pod deleted");
  });
});

Deno.test("createRuntimeService() fails a call whose signal is already aborted without sending it", async () => {
  await withFake({ Version: () => ({}) }, async (cri, fake) => {
    const signal = AbortSignal.abort(new Error("shutting down"));
    await assert.rejects(
      cri.version({ signal }),
      (err: CriError) => err.code === GrpcCode.CANCELLED,
    );
    assert.equal(fake.calls.length, 0);
  });
});

Deno.test("createRuntimeService() fails calls after close() with Cancelled", async () => {
  await withFake({ Version: () => ({}) }, async (cri) => {
    cri.close();
    await assert.rejects(cri.version(), (err: CriError) => err.code === GrpcCode.CANCELLED);
  });
});

Deno.test("createRuntimeService() reports an unreachable socket as Unavailable", async () => {
  const dir = await Deno.makeTempDir();
  const cri = createRuntimeService({ endpoint: `${dir}/absent.sock` });
  try {
    await assert.rejects(cri.version(), (err: CriError) => err.code === GrpcCode.UNAVAILABLE);
  } finally {
    cri.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createRuntimeService() refuses endpoints that are not unix sockets", () => {
  assert.throws(
    () => createRuntimeService({ endpoint: "tcp://127.0.0.1:1234" }),
    /CRI endpoint "tcp:\/\/127.0.0.1:1234": only unix sockets/,
  );
});

Deno.test("createRuntimeService() rejects a request it cannot encode with InvalidArgument", async () => {
  await withFake({ StartContainer: () => ({}) }, async (cri, fake) => {
    await assert.rejects(
      cri.startContainer(42 as unknown as string),
      (err: CriError) =>
        err.code === GrpcCode.INVALID_ARGUMENT && /containerId/.test(String(err.cause)),
    );
    assert.equal(fake.calls.length, 0);
  });
});
