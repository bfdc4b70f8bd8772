/**
 * denolet's entry point: wiring only. Parse flags, build the dependencies
 * (CRI client, runtime manager, PLEG, pod sources, servers), hand them to the
 * agent and run it until SIGTERM/SIGINT.
 *
 * @module
 */

import { FlagError, parseFlags } from "./lib/options/mod.ts";
import { createLogger } from "./lib/util/log.ts";
import { realClock } from "./lib/util/clock.ts";
import { surviveLostPeers } from "./lib/util/peer_gone.ts";
import { createRuntimeService, runtimeServiceOptions, watchTaskExits } from "./lib/cri/mod.ts";
import { ContainerGC, KubeRuntimeManager, runningApiPods } from "./lib/kuberuntime/mod.ts";
import { ResourceState } from "./lib/allocation/mod.ts";
import { GenericPleg } from "./lib/pleg/mod.ts";
import {
  CgroupfsManager,
  findCgroupHierarchies,
  nodeAllocatableEnforcement,
  nodeAllocatableRoot,
  PodCgroupManager,
} from "./lib/cm/mod.ts";
import { cgroupPathFromRuntime, detectCgroupLayout } from "./lib/cgroup/mod.ts";
import { startPodSources } from "./lib/config/mod.ts";
import { Kubelet } from "./lib/agent/kubelet.ts";
import { createEvictionManager } from "./lib/agent/eviction.ts";
import type { EvictionManager } from "./lib/eviction/mod.ts";
import { RuntimeHealth } from "./lib/agent/runtime_health.ts";
import { type RunningServer, startAgentServers } from "./lib/server/mod.ts";
import { VERSION } from "./lib/util/version.ts";
import {
  agentPathPermissions,
  checkPermissions,
  formatPermissionProblems,
} from "./lib/agent/permissions.ts";
import { chooseNodeIP } from "./lib/agent/node_ip.ts";
import { instrumentRuntime, KubeletMetrics } from "./lib/metrics/mod.ts";
import { type MachineInfo, readMachineInfo, StatsProvider } from "./lib/stats/mod.ts";
import { ImageGC } from "./lib/images/mod.ts";
import {
  computeNodeResources,
  enforcementAmounts,
  initialNode,
  type NodeResources,
} from "./lib/nodestatus/mod.ts";
import { ProbeManager } from "./lib/prober/mod.ts";
import {
  type Cluster,
  connectCluster,
  createClusterClients,
  USER_AGENT,
} from "./lib/agent/cluster.ts";
import {
  type ClientCertificateSetup,
  NEVER_ISSUED,
  type RequestedServing,
  requestServingCertificate,
  setupClientCertificate,
  watchClientCertificate,
} from "./lib/bootstrap/mod.ts";
import { CertificateFileStore } from "./lib/certs/mod.ts";
import type { KubeClient } from "./lib/kubeapi/mod.ts";
import { ApiPodObjects } from "./lib/kubeobjects/mod.ts";
import {
  ApiEventRecorder,
  type EventRecorder,
  LogEventRecorder,
  nodeReference,
} from "./lib/events/mod.ts";
import { isStaticPod, type Pod } from "./lib/api/mod.ts";
import type { Node } from "./lib/api/cluster_types.ts";
import { StatusManager } from "./lib/status/mod.ts";
import {
  AppArmorAdmitHandler,
  hostAppArmorEnabled,
  PredicateAdmitHandler,
  safeSysctls,
  SysctlAllowlist,
} from "./lib/admission/mod.ts";
import { TICK_GRID_MS } from "./lib/util/tick.ts";
import { LocalNodeStatus } from "./lib/ui/mod.ts";
import { HeapTrimmer } from "./lib/util/heap_trim.ts";
import { parseDuration } from "./lib/util/duration.ts";
import { createStreamingHandlers } from "./lib/streaming/mod.ts";
import {
  cleanContainerLogs,
  ContainerLogManager,
  containerLogsHandler,
  listRunningContainerLogs,
  nodeLogsHandler,
  readLogTail,
  rotationPolicy,
} from "./lib/logs/mod.ts";
import { containerLogsDirFor } from "./lib/kuberuntime/mod.ts";
import { explainMain, SyncTracer } from "./lib/trace/mod.ts";

async function main(argv: string[]): Promise<number> {
  // `denolet explain <namespace>/<name>`: a client of a running agent (lib/trace).
  if (argv[0] === "explain") return await explainMain(argv.slice(1));
  let parsed;
  try {
    parsed = parseFlags(argv);
  } catch (err) {
    // pflag's usage errors exit 2; a bad config file or value exits 1, as upstream.
    console.error(`denolet: ${(err as Error).message}`);
    return err instanceof FlagError ? 2 : 1;
  }
  if (parsed.kind === "help") {
    console.log(parsed.text);
    return 0;
  }
  if (parsed.kind === "version") {
    console.log(parsed.text);
    return 0;
  }
  const opts = parsed.options;
  // A flag pointing outside the granted permissions fails here, by name, not at its first use.
  const problems = checkPermissions(agentPathPermissions({
    ...opts,
    clientCAFile: opts.authentication.x509?.clientCAFile,
  }));
  if (problems.length > 0) {
    console.error(formatPermissionProblems(problems));
    return 2;
  }
  const logger = createLogger({ verbosity: opts.verbosity, format: opts.loggingFormat });
  surviveLostPeers(logger);
  const clock = realClock;
  const nodeName = (opts.hostnameOverride || Deno.hostname()).toLowerCase();
  const nodeIP = chooseNodeIP(opts.nodeIp, Deno.networkInterfaces());
  for (const warning of opts.warnings) logger.warn(warning);
  logger.info("Starting denolet", {
    version: VERSION,
    nodeName,
    runtime: opts.containerRuntimeEndpoint,
  });

  // Read once and shared, so the Node, OOM scores, stats and the downward API (whose
  // defaults for unset limits are node allocatable, as upstream) see the same machine.
  let machine: MachineInfo;
  let nodeAllocatable: NodeResources["allocatable"];
  try {
    await Deno.mkdir(opts.rootDir, { recursive: true, mode: 0o750 });
    machine = await readMachineInfo({ rootDir: opts.rootDir });
    nodeAllocatable = computeNodeResources(machine, opts).allocatable;
  } catch (err) {
    logger.error("Failed to read the machine's facts", err, { rootDir: opts.rootDir });
    return 1;
  }

  // The QoS cgroups (upstream's container manager): a --cgroup-root that does not exist stops the start.
  let podCgroups: PodCgroupManager;
  try {
    const enforcement = nodeAllocatableEnforcement({
      ...enforcementAmounts(machine, opts),
      enforce: opts.enforceNodeAllocatable,
      cgroupsPerQOS: opts.cgroupsPerQOS,
      systemReservedCgroup: opts.systemReservedCgroup,
      kubeReservedCgroup: opts.kubeReservedCgroup,
    });
    podCgroups = new PodCgroupManager({
      cgroupRoot: opts.cgroupRoot,
      cgroupDriver: opts.cgroupDriver,
      cgroupsPerQOS: opts.cgroupsPerQOS,
      podPidsLimit: opts.podPidsLimit,
      nodeAllocatable: enforcement.kubepods,
      reservedCgroups: enforcement.reserved,
      cgroups: new CgroupfsManager(findCgroupHierarchies()),
      logger,
    });
    podCgroups.start();
  } catch (err) {
    logger.error("Failed to start the container manager", err, { cgroupRoot: opts.cgroupRoot });
    return 1;
  }

  const metrics = new KubeletMetrics();
  // Upstream refuses to start with an allowedUnsafeSysctls entry it cannot place.
  let sysctls: SysctlAllowlist;
  try {
    sysctls = new SysctlAllowlist([...safeSysctls(Deno.osRelease()), ...opts.allowedUnsafeSysctls]);
  } catch (err) {
    logger.error("Invalid allowedUnsafeSysctls", err, {
      allowedUnsafeSysctls: opts.allowedUnsafeSysctls,
    });
    return 1;
  }
  const criClient = createRuntimeService(runtimeServiceOptions(opts, logger));
  const cri = instrumentRuntime(criClient, metrics);
  // Apiserver mode (--kubeconfig): the client comes first, as volumes and env read through it.
  let client: KubeClient | undefined;
  let eventsClient: KubeClient | undefined;
  let heartbeatClient: KubeClient | undefined;
  let clientCerts: ClientCertificateSetup = {};
  if (opts.kubeconfig) {
    // TLS bootstrap and client certificate rotation; SIGTERM ends a wait for the first certificate.
    const startup = new AbortController();
    const stopStartup = () =>
      startup.abort(new Error("stopped while waiting for a client certificate"));
    for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, stopStartup);
    try {
      clientCerts = await setupClientCertificate({
        kubeconfig: opts.kubeconfig,
        bootstrapKubeconfig: opts.bootstrapKubeconfig,
        certDir: opts.certDir,
        nodeName,
        rotateCertificates: opts.config.rotateCertificates ?? false,
        signal: startup.signal,
        clock,
        logger,
        userAgent: USER_AGENT,
      });
    } catch (err) {
      logger.error("Failed to get the kubelet's client certificate", err, {
        kubeconfig: opts.kubeconfig,
        bootstrapKubeconfig: opts.bootstrapKubeconfig,
        certDir: opts.certDir,
      });
      criClient.close();
      return 1;
    } finally {
      for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.removeSignalListener(sig, stopStartup);
    }
    try {
      ({ api: client, events: eventsClient, heartbeat: heartbeatClient } =
        await createClusterClients(opts, clock, {
          rateLimited: (verb, host, ms) => metrics.observeRestClientRateLimiter(verb, host, ms),
          result: (code, method, host) => metrics.observeRestClientResult(code, method, host),
        }, clientCerts.credentials));
    } catch (err) {
      logger.error("Failed to load the kubeconfig", err, { kubeconfig: opts.kubeconfig });
      await clientCerts.manager?.stop();
      criClient.close();
      return 1;
    }
  }
  // Events go to the apiserver in apiserver mode and to the log (at --v=2) otherwise.
  const apiEvents = eventsClient
    ? new ApiEventRecorder({ client: eventsClient, clock, logger, host: nodeName })
    : undefined;
  const events: EventRecorder = apiEvents ?? new LogEventRecorder(logger);
  podCgroups.reportNodeAllocatable(
    clock,
    (type, reason, message) => events.event(nodeReference(nodeName), type, reason, message),
  );
  // Starts the Services' watch (upstream starts its Service informer as the kubelet is built).
  const objects = client ? new ApiPodObjects({ client, clock, logger }) : undefined;
  const runtime = new KubeRuntimeManager({
    ...(objects ? { objects } : {}),
    events,
    runtime: cri,
    clock,
    logger,
    rootDir: opts.rootDir,
    podLogsDir: opts.podLogsDir,
    containerLogsDir: containerLogsDirFor(opts.podLogsDir),
    cgroupRoot: opts.cgroupRoot,
    cgroupDriver: opts.cgroupDriver,
    cgroupsPerQOS: opts.cgroupsPerQOS,
    clusterDNS: opts.clusterDNS,
    clusterDomain: opts.clusterDomain,
    resolvConf: opts.resolvConf,
    nodeIPs: opts.nodeIp === "" ? [] : opts.nodeIp.split(",").map((s) => s.trim()),
    serializeImagePulls: opts.serializeImagePulls,
    maxParallelImagePulls: opts.maxParallelImagePulls,
    seccompDefault: opts.seccompDefault,
    actuated: new ResourceState({ path: `${opts.rootDir}/denolet_actuated_pods_state`, logger }),
    podCgroup: podCgroups,
    nodeName,
    hostIPs: nodeIP ? [nodeIP] : [],
    memoryCapacity: machine.memoryCapacityBytes,
    nodeAllocatable,
    readLogTail,
    cleanContainerLogs,
    countHookHttpFallback: () => metrics.countHookHttpFallback(),
  });
  const pleg = new GenericPleg({
    listPods: (signal) => runtime.listPods(signal),
    getPodStatus: (uid, signal) => runtime.getPodStatus(uid, signal),
    clock,
    logger,
    onRelistDuration: (ms) => metrics.observePlegRelist(ms, clock.now()),
    tickGridMs: TICK_GRID_MS,
  });
  const stats = new StatsProvider({
    clock,
    runtime: cri,
    nodeName,
    rootDir: opts.rootDir,
    podLogsDir: opts.podLogsDir,
    volumeStatsAggPeriodMs: opts.volumeStatsAggPeriodMs,
    podCgroupRoot: opts.cgroupRoot,
    cgroupDriver: opts.cgroupDriver,
    cgroupsPerQOS: opts.cgroupsPerQOS,
    machine,
    housekeeping: { intervalMs: opts.housekeepingIntervalMs, tickGridMs: TICK_GRID_MS },
    logger,
  });
  // Upstream's image GC manager: thresholds on the image filesystem the stats provider reads.
  const imageGC = new ImageGC({
    runtime: cri,
    imageFsStats: (signal) => stats.imageFsStats(signal ? { signal } : {}),
    policy: {
      highThresholdPercent: opts.imageGCHighThresholdPercent,
      lowThresholdPercent: opts.imageGCLowThresholdPercent,
      minAgeMs: opts.imageMinimumGCAgeMs,
      maxAgeMs: opts.imageMaximumGCAgeMs,
    },
    clock,
    nodeName,
    events,
    logger,
    onImageRemoved: (reason) => metrics.observeImageGarbageCollected(reason),
  });
  const runtimeHealth = new RuntimeHealth({
    runtime: cri,
    clock,
    logger,
    tickGridMs: TICK_GRID_MS,
  });
  const probes = new ProbeManager({ runtime: cri, clock, logger, hostIP: nodeIP, events });

  const statuses = new StatusManager({ clock, logger });
  // Pods are admitted against the registered Node, or (standalone, or before
  // registration) the Node denolet would register, as upstream's getNodeAnyWay.
  const localNode = (labels: Record<string, string>): Node =>
    initialNode({
      nodeName,
      hostname: opts.hostnameOverride || nodeName,
      operatingSystem: machine.operatingSystem,
      architecture: machine.architecture,
      nodeLabels: labels,
      registerWithTaints: opts.registerWithTaints,
      status: { allocatable: nodeAllocatable },
    });
  let admissionNode: Node;
  try {
    admissionNode = localNode(opts.nodeLabels);
  } catch {
    // Labels a node may not set fail registration (apiserver mode); admission goes without them.
    admissionNode = localNode({});
  }
  let cluster: Cluster | undefined;
  // The eviction manager acts through the kubelet built below, and admits before it.
  let eviction: EvictionManager;
  try {
    eviction = createEvictionManager({
      opts,
      clock,
      logger,
      nodeName,
      events,
      stats,
      runtime: cri,
      metrics,
      kubelet: () => kubelet,
      // Both are built after the kubelet; the manager calls them only once started.
      containerGC: {
        deleteAllUnusedContainers: (signal) => containerGC.deleteAllUnusedContainers(signal),
      },
      imageGC: { deleteUnusedImages: (signal) => imageGC.deleteUnusedImages(signal) },
      memoryCgroups: {
        layout: detectCgroupLayout(),
        podCgroupRoot: cgroupPathFromRuntime(nodeAllocatableRoot(opts)),
      },
    });
  } catch (err) {
    logger.error("Invalid eviction thresholds", err);
    criClient.close();
    return 1;
  }
  const trace = opts.syncTraceDepth > 0
    ? new SyncTracer({ depth: opts.syncTraceDepth, clock: realClock })
    : undefined;
  const kubelet = new Kubelet({
    runtime,
    ...(trace ? { trace } : {}),
    allocationState: new ResourceState({
      path: `${opts.rootDir}/denolet_allocated_pods_state`,
      logger,
    }),
    // Upstream's order. The predicate handler checks the registered Node (which reports no
    // runtime features: containerd 1.6 cannot do Strict supplemental groups), or the one
    // denolet would register.
    admitHandlers: [
      eviction,
      sysctls,
      new PredicateAdmitHandler(() => cluster?.node() ?? admissionNode),
      new AppArmorAdmitHandler(hostAppArmorEnabled()),
    ],
    pleg,
    clock,
    logger,
    nodeName,
    hostIP: nodeIP,
    statuses,
    syncFrequencyMs: opts.syncFrequencyMs,
    metrics,
    probes,
    onPodsObserved: (pods) => stats.reconcile(pods),
    tickGridMs: TICK_GRID_MS,
    events,
    networkProblem: () => runtimeHealth.networkProblem(),
    podCgroups,
    rootDir: opts.rootDir,
  });
  // Dead containers, sandboxes and logs (started with the sync loop); also the
  // eviction manager's first node-level reclaim under disk pressure.
  const containerGC = new ContainerGC({
    runtime,
    podState: kubelet.podWorkers,
    sourcesReady: () => kubelet.sourcesReady(),
    podLogsDir: opts.podLogsDir,
    policy: opts.containerGC,
    clock,
    logger,
    events,
    nodeName,
  });

  // Why the node is not Ready, for the Node's status and the node page.
  const notReadyReasons = (): string[] => {
    const reasons: string[] = [];
    const runtimeProblem = runtimeHealth.problem();
    if (runtimeProblem) reasons.push(runtimeProblem);
    // Upstream's order: runtime errors (with PLEG's), then the network's.
    const plegHealth = pleg.healthy();
    if (!plegHealth.ok) reasons.push(`PLEG is not healthy: ${plegHealth.message}`);
    const networkProblem = runtimeHealth.networkProblem();
    if (networkProblem) reasons.push(networkProblem);
    return reasons;
  };
  // The node page's Node in standalone mode (and before registration).
  const computedNode = new LocalNodeStatus({
    nodeName,
    hostname: opts.hostnameOverride || nodeName,
    nodeIPs: nodeIP ? [nodeIP] : [],
    kubeletPort: opts.port,
    machine,
    allocatable: opts,
    clock,
    runtimeVersion: () => cri.version(),
    notReadyReasons,
    pressure: () => eviction.pressure(),
  });

  if (client && eventsClient && heartbeatClient && apiEvents) {
    try {
      cluster = connectCluster({
        client,
        events: apiEvents,
        eventsClient,
        heartbeatClient,
        opts,
        nodeName,
        nodeIP,
        clock,
        logger,
        runtime: cri,
        machineInfo: machine,
        readiness: () => {
          const reasons = notReadyReasons();
          return { ok: reasons.length === 0, reasons };
        },
        statuses,
        canBeDeleted: (uid) => kubelet.canBeDeleted(uid),
        desiredPod: (uid) => kubelet.podManager.get(uid),
        sourcesReady: () => kubelet.sourcesReady(),
        pressure: () => eviction.pressure(),
      });
    } catch (err) {
      logger.error("Failed to start apiserver mode", err, { kubeconfig: opts.kubeconfig });
      await objects?.stop();
      client.close();
      eventsClient?.close();
      heartbeatClient?.close();
      criClient.close();
      return 1;
    }
  }
  // serverTLSBootstrap: the secure port serves a certificate the cluster issues, nothing before.
  let serving: RequestedServing | undefined;
  if (opts.config.serverTLSBootstrap && !cluster) {
    // Upstream's certificate manager never starts without a client: no certificate, ever.
    logger.error(
      "serverTLSBootstrap without an apiserver: no serving certificate can be requested",
      new Error("--kubeconfig is not set"),
      { port: opts.port },
    );
  }
  if (opts.config.serverTLSBootstrap && cluster) {
    try {
      serving = await requestServingCertificate({
        client: cluster.client,
        store: new CertificateFileStore("kubelet-server", opts.certDir),
        nodeName,
        addresses: () => cluster?.node()?.status?.addresses,
        ...(opts.tlsCertFile && opts.tlsPrivateKeyFile
          ? {
            initial: {
              cert: Deno.readTextFileSync(opts.tlsCertFile),
              key: Deno.readTextFileSync(opts.tlsPrivateKeyFile),
            },
          }
          : {}),
        clock,
        logger,
      });
    } catch (err) {
      logger.error("Failed to start the serving certificate manager", err, {
        certDir: opts.certDir,
      });
      await cluster?.stop();
      criClient.close();
      return 1;
    }
  }
  const streaming = createStreamingHandlers({
    runtime: cri,
    getPodByName: (namespace, name) => kubelet.podManager.getByName(namespace, name),
    getPodStatus: (uid) => runtime.getPodStatus(uid),
    streamingConnectionIdleTimeoutMs: parseDuration(
      opts.config.streamingConnectionIdleTimeout ?? "4h",
    ),
    clock,
    logger,
  });
  // Before any pod starts: a refused server setting (a webhook mode without an apiserver,
  // a cipher list Deno cannot honour) fails start-up, as upstream's BuildAuth does.
  let servers: RunningServer[];
  try {
    servers = await startAgentServers({
      healthz: { hostname: opts.healthzBindAddress, port: opts.healthzPort },
      readOnly: { hostname: opts.address, port: opts.readOnlyPort },
      ...(opts.enableServer
        ? {
          secure: {
            address: opts.address,
            port: opts.port,
            tlsCertFile: opts.tlsCertFile,
            tlsPrivateKeyFile: opts.tlsPrivateKeyFile,
            certDir: opts.certDir,
            requestedCert: opts.config.serverTLSBootstrap ? serving ?? NEVER_ISSUED : undefined,
            hostname: nodeName,
            nodeIPs: nodeIP ? [nodeIP] : [],
            ...(opts.config.tlsMinVersion ? { tlsMinVersion: opts.config.tlsMinVersion } : {}),
            ...(opts.config.tlsCipherSuites
              ? { tlsCipherSuites: opts.config.tlsCipherSuites }
              : {}),
            authentication: opts.authentication,
            authorization: opts.authorization,
            client,
            nodeName,
            clock,
            debugging: {
              enableDebuggingHandlers: opts.config.enableDebuggingHandlers ?? true,
              enableSystemLogHandler: opts.config.enableSystemLogHandler ?? true,
              enableDebugFlagsHandler: opts.config.enableDebugFlagsHandler ?? true,
              enableProfilingHandler: opts.config.enableProfilingHandler ?? true,
              setVerbosity: (level) => logger.setVerbosity(level),
            },
            mounts: {
              upgrades: {
                "/exec/": streaming.upgrade,
                "/attach/": streaming.upgrade,
                "/portForward/": streaming.upgrade,
              },
              prefixes: {
                "/run/": streaming.handle,
                "/exec/": streaming.handle,
                "/attach/": streaming.handle,
                "/portForward/": streaming.handle,
                "/containerLogs/": containerLogsHandler({
                  getPodByName: (namespace, name) => kubelet.podManager.getByName(namespace, name),
                  getPodStatus: (pod) => statuses.getPodStatus(pod.metadata.uid!),
                  runtime: cri,
                  clock,
                  logger,
                }),
                "/logs/": nodeLogsHandler(),
              },
            },
          },
        }
        : {}),
      logger,
      provider: {
        podsWithStatus: () => kubelet.podsWithStatus(),
        runningPods: () => runningApiPods(pleg.runningPods()),
        // As upstream's /healthz: the sync loop (with ping), not the runtime's or PLEG's
        // health, which make the Node NotReady instead (notReadyReasons): a liveness check
        // that restarted the agent whenever the runtime was slow would not help it.
        healthChecks: [
          { name: "syncloop", check: () => kubelet.syncLoopHealth() },
          ...(clientCerts.manager
            ? [{ name: "client-certificate", check: () => clientCerts.manager?.problem() }]
            : []),
        ],
        kubeletConfig: opts.config,
        stats,
        renderMetrics: () => metrics.render(),
        renderProbeMetrics: () => probes.renderProbeMetrics(),
        nodePage: {
          nodeName,
          now: () => clock.now(),
          node: async () => {
            const registered = cluster?.node()?.status;
            return registered
              ? { source: "apiserver", status: registered }
              : { source: "local", status: await computedNode.status() };
          },
          pods: () => kubelet.podsWithStatus(),
          probes: (uid) => probes.results(uid),
          samples: (of) => stats.samples(of),
        },
        ...(trace ? { syncTrace: (ns: string, name: string) => trace.trace(ns, name) } : {}),
      },
    });
    if (
      opts.enableServer && opts.config.enableDebuggingHandlers &&
      opts.config.enableProfilingHandler
    ) {
      logger.warn(
        "enableProfilingHandler: /debug/pprof/ is not served (404): denolet has no Go runtime profiler",
      );
    }
  } catch (err) {
    logger.error("Failed to start servers", err);
    await objects?.stop();
    await cluster?.stop();
    stats.stop();
    criClient.close();
    return 1;
  }

  // The updates queue in the mux until the sync loop reads them.
  const sources = startPodSources({
    nodeName,
    podManifestPath: opts.podManifestPath,
    manifestUrl: opts.manifestUrl,
    manifestUrlHeader: opts.manifestUrlHeader,
    fileCheckFrequencyMs: opts.fileCheckFrequencyMs,
    httpCheckFrequencyMs: opts.httpCheckFrequencyMs,
    clock,
    logger,
    ...(cluster
      ? {
        client: cluster.client,
        onMirrorPods: (pods: Pod[]) =>
          void cluster.mirrors.reconcile(kubelet.podManager.pods().filter(isStaticPod), pods),
      }
      : {}),
  });
  // Upstream checks the host's resolv.conf once, as its sync loop starts.
  void runtime.checkResolvConfLimits();
  // As upstream's sync loop waits for the runtime's first status, pods are not
  // synced against the network's "unknown" state (at most the call's 2s deadline).
  await runtimeHealth.start();
  kubelet.start({
    updates: sources.config.updates(),
    seenAllSources: () => sources.seenAllSources(),
    ...(cluster ? { onHousekeeping: (pods: Pod[]) => cluster.housekeeping(pods) } : {}),
  });
  containerGC.start();
  // containerd's task exits wake the relist at once (the relist alone takes up to its period).
  const taskExitWatch = new AbortController();
  const taskExits = watchTaskExits({
    endpoint: opts.containerRuntimeEndpoint,
    onExit: (exit) => pleg.containerExited(exit.containerId),
    clock,
    logger,
    signal: taskExitWatch.signal,
  });
  // As upstream, after the stats provider is up (it needs the runtime's image filesystem).
  eviction.start();
  const heapTrimmer = new HeapTrimmer({ clock, logger, tickGridMs: TICK_GRID_MS });
  heapTrimmer.start();
  const containerLogs = new ContainerLogManager({
    runtime: cri,
    listRunningContainers: listRunningContainerLogs(cri),
    clock,
    logger,
    ...rotationPolicy(opts.config),
  });
  containerLogs.start();
  // Detection and collection start now and run every 5 minutes, as upstream's StartGarbageCollection.
  imageGC.start();

  const done = Promise.withResolvers<void>();
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    Deno.addSignalListener(sig, () => done.resolve());
  }
  // As upstream, an expired client certificate with the apiserver answering ends the agent.
  let exitCode = 0;
  const certWatch = clientCerts.manager
    ? watchClientCertificate(clientCerts.manager, {
      clock,
      logger,
      exit: () => {
        exitCode = 1;
        done.resolve();
      },
    })
    : undefined;
  await done.promise;
  certWatch?.cancel();

  // Pods keep running: stopping the agent stops only its loops and connections.
  logger.info("Shutting down; pods keep running");
  sources.stop();
  runtimeHealth.stop();
  taskExitWatch.abort(new Error("the agent is stopping"));
  await taskExits;
  heapTrimmer.stop();
  await containerLogs.stop();
  await imageGC.stop();
  await containerGC.stop();
  streaming.closeAll();
  await eviction.stop();
  await kubelet.stop();
  await objects?.stop();
  await cluster?.stop();
  await clientCerts.manager?.stop();
  await serving?.manager.stop();
  stats.stop();
  podCgroups.stop();
  await Promise.all(servers.map((s) => s.shutdown()));
  criClient.close();
  return exitCode;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
