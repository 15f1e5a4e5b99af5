// Settings of the `kubernetes` scaler plugin: the scaler config file's `plugins.kubernetes`
// (docs/kubernetes.md), over what the composition root supplies (`orchestratorUrl`). Names and
// quantities follow the Kubernetes rules so a bad value is refused here, at boot, instead of by
// the API server at the first scale-up.
import { Type, type Static } from 'typebox';

/** RFC 1123 label (namespaces, Secret names, ServiceAccount names). */
const DNS_LABEL = '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$';
/** RFC 1123 subdomain (Secret and ServiceAccount names may contain dots). */
const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$';
/** A label value: at most 63 characters, alphanumeric at both ends. */
export const KUBE_LABEL_VALUE = '^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$';
/** A resource quantity (`500m`, `2`, `1Gi`, `1.5G`, `1e3`). */
const QUANTITY = '^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$';
/** A label or nodeSelector key: optional DNS-subdomain prefix and a name of at most 63 characters. */
const LABEL_KEY = '^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';

const strict = { additionalProperties: false } as const;
const Quantities = Type.Object({ cpu: Type.Optional(Type.String({ pattern: QUANTITY })), memory: Type.Optional(Type.String({ pattern: QUANTITY })) }, strict);

export const KubernetesToleration = Type.Object(
  {
    key: Type.Optional(Type.String({ pattern: LABEL_KEY })),
    operator: Type.Optional(Type.Union([Type.Literal('Exists'), Type.Literal('Equal')])),
    value: Type.Optional(Type.String({ pattern: KUBE_LABEL_VALUE })),
    effect: Type.Optional(Type.Union([Type.Literal('NoSchedule'), Type.Literal('PreferNoSchedule'), Type.Literal('NoExecute')])),
    tolerationSeconds: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  strict,
);

export const KubernetesScalerSettings = Type.Object(
  {
    /** Where agents connect (default: the orchestrator's public URL; in a cluster, usually the relay's or orchestrators' Service). */
    orchestratorUrl: Type.String({ pattern: '^(https?|wss?)://\\S+$' }),
    /** Kubeconfig file to use; unset: the in-cluster service account (KubeConfig.loadFromCluster). */
    kubeconfig: Type.Optional(Type.String({ minLength: 1 })),
    /** Context of `kubeconfig` (default: its current-context). */
    context: Type.Optional(Type.String({ minLength: 1 })),
    /** Namespace the agent pods run in (default: the context's namespace, in a cluster the service account's, else `default`). */
    namespace: Type.Optional(Type.String({ pattern: DNS_LABEL })),
    /** The agent container image (svc-agent as its entrypoint). */
    image: Type.String({ minLength: 1, maxLength: 512, pattern: '^\\S+$' }),
    imagePullPolicy: Type.Optional(Type.Union([Type.Literal('Always'), Type.Literal('IfNotPresent'), Type.Literal('Never')])),
    /**
     * The container's command (unset: the image's entrypoint). The image this repository builds
     * holds every program, so its agent pods say `[svc-agent]`.
     */
    command: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), { minItems: 1, maxItems: 64 })),
    /**
     * The agent container's user and root file system. The pod always runs non-root with no
     * privilege escalation and every capability dropped; the root file system stays writable by
     * default because job steps write to $HOME and tool caches.
     */
    securityContext: Type.Object(
      {
        runAsUser: Type.Integer({ minimum: 1, maximum: 2_147_483_647, default: 10001 }),
        runAsGroup: Type.Integer({ minimum: 0, maximum: 2_147_483_647, default: 10001 }),
        readOnlyRootFilesystem: Type.Boolean({ default: false }),
      },
      { ...strict, default: {} },
    ),
    /** The Secret holding the agent token (`svc-admin agent-token create`) and its key: passed by reference, never inline. */
    tokenSecret: Type.Object({ name: Type.String({ pattern: DNS_SUBDOMAIN, maxLength: 253 }), key: Type.String({ pattern: '^[-._a-zA-Z0-9]{1,253}$', default: 'token' }) }, strict),
    /**
     * Names this scaler in the pods' `svc.dev/scaler` label: installations sharing a namespace
     * need different names, since each cleans up finished pods carrying its name.
     */
    name: Type.String({ pattern: '^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$', default: 'kubernetes' }),
    /**
     * This orchestrator's `svc.dev/instance` label value (default: its host name, in a cluster its
     * pod name): each orchestrator stops only pods it started.
     */
    instanceId: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$' })),
    resources: Type.Object({ requests: Type.Optional(Quantities), limits: Type.Optional(Quantities) }, { ...strict, default: {} }),
    nodeSelector: Type.Record(Type.String({ pattern: LABEL_KEY }), Type.String({ pattern: KUBE_LABEL_VALUE }), { default: {} }),
    tolerations: Type.Array(KubernetesToleration, { default: [], maxItems: 32 }),
    serviceAccountName: Type.Optional(Type.String({ pattern: DNS_SUBDOMAIN, maxLength: 253 })),
    /** SVC_AGENT_SANDBOX of the agents. */
    sandbox: Type.Union([Type.Literal('process'), Type.Literal('container'), Type.Literal('firecracker')], { default: 'process' }),
    /** SVC_AGENT_LOG_LEVEL of the agents. */
    logLevel: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
    /** More plain environment for the agents (no secrets: use a Secret in the image's own setup). */
    env: Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String(), { default: {} }),
    /** Pods running or starting at once for this orchestrator (each scaler entry has its own maxAgents too). */
    max: Type.Integer({ minimum: 1, maximum: 1000, default: 16 }),
    /** A hard upper bound on an agent pod's life (spec.activeDeadlineSeconds): nothing runs forever if every orchestrator is gone. */
    activeDeadlineSeconds: Type.Integer({ minimum: 60, maximum: 2_592_000, default: 86_400 }),
    /** Grace period of a pod deletion (scaleDown, cleanup). */
    terminationGracePeriodSeconds: Type.Integer({ minimum: 0, maximum: 3600, default: 30 }),
    /** How often finished pods and pods this orchestrator no longer knows are looked for and deleted. */
    cleanupIntervalMs: Type.Integer({ minimum: 100, maximum: 3_600_000, default: 15_000 }),
    /** Per-request time limit against the API server. */
    requestTimeoutMs: Type.Integer({ minimum: 100, maximum: 300_000, default: 30_000 }),
  },
  strict,
);
export type KubernetesScalerSettings = Static<typeof KubernetesScalerSettings>;
