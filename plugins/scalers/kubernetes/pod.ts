// The Pod one agent runs in. A bare Pod, not a batch/v1 Job: an ephemeral agent must run at most
// once (a Job's controller would start a second pod after a failure, an agent the orchestrator
// never asked for), the orchestrator already retries through its own scale-up accounting, and
// deleting a Pod stops the agent at once with one RBAC verb set (docs/kubernetes.md).
import type { V1Pod } from '@kubernetes/client-node';
import type { KubernetesScalerSettings } from '../../../schemas/scaler-kubernetes.ts';

/** Ownership labels: every pod this plugin makes carries all of them, so none is left unaccounted. */
export const LABEL_SCALER = 'svc.dev/scaler';
export const LABEL_INSTANCE = 'svc.dev/instance';
export const LABEL_AGENT = 'svc.dev/agent-id';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'svc-scaler-kubernetes';
/** The agent's labels do not fit label values (commas, colons): kept as an annotation for people. */
export const ANNOTATION_LABELS = 'svc.dev/agent-labels';
export const ANNOTATION_REASON = 'svc.dev/reason';
/** The agent's work dir: an emptyDir, gone with the pod. */
export const WORK_DIR = '/var/lib/svc-agent/work';
/** Writable even with a read-only root file system (securityContext.readOnlyRootFilesystem). */
export const TMP_DIR = '/tmp';

export interface PodRequest {
  agentId: string;
  instanceId: string;
  mandatoryLabels: readonly string[];
  reason: string | undefined;
}

export const podNameOf = (agentId: string): string => `svc-agent-${agentId}`;

/** `svc.dev/scaler=<name>[,svc.dev/instance=<id>]`: the selector every list uses. */
export function ownedSelector(name: string, instanceId?: string): string {
  const parts = [`${LABEL_MANAGED_BY}=${MANAGED_BY}`, `${LABEL_SCALER}=${name}`];
  if (instanceId !== undefined) parts.push(`${LABEL_INSTANCE}=${instanceId}`);
  return parts.join(',');
}

function resourcesOf(settings: KubernetesScalerSettings): NonNullable<V1Pod['spec']>['containers'][number]['resources'] {
  const out: Record<string, Record<string, string>> = {};
  for (const kind of ['requests', 'limits'] as const) {
    const q = settings.resources[kind];
    if (q === undefined) continue;
    const set: Record<string, string> = {};
    if (q.cpu !== undefined) set['cpu'] = q.cpu;
    if (q.memory !== undefined) set['memory'] = q.memory;
    if (Object.keys(set).length > 0) out[kind] = set;
  }
  return out;
}

export function agentPod(settings: KubernetesScalerSettings, namespace: string, request: PodRequest): V1Pod {
  const env = [
    ...Object.entries(settings.env).map(([name, value]) => ({ name, value })),
    { name: 'SVC_ORCHESTRATOR_URL', value: settings.orchestratorUrl },
    { name: 'SVC_AGENT_ID', value: request.agentId },
    { name: 'SVC_AGENT_LABELS', value: request.mandatoryLabels.join(',') },
    { name: 'SVC_AGENT_EPHEMERAL', value: '1' },
    { name: 'SVC_AGENT_SANDBOX', value: settings.sandbox },
    { name: 'SVC_AGENT_WORK_DIR', value: WORK_DIR },
    { name: 'SVC_AGENT_LOG_LEVEL', value: settings.logLevel },
    // By reference: the token never appears in the Pod object, its events or the plugin's logs.
    { name: 'SVC_AGENT_TOKEN', valueFrom: { secretKeyRef: { name: settings.tokenSecret.name, key: settings.tokenSecret.key } } },
  ];
  const annotations: Record<string, string> = { [ANNOTATION_LABELS]: request.mandatoryLabels.join(',') };
  if (request.reason !== undefined) annotations[ANNOTATION_REASON] = request.reason.slice(0, 1024);
  const security = settings.securityContext;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podNameOf(request.agentId),
      namespace,
      labels: {
        [LABEL_MANAGED_BY]: MANAGED_BY,
        'app.kubernetes.io/name': 'svc-agent',
        [LABEL_SCALER]: settings.name,
        [LABEL_INSTANCE]: request.instanceId,
        [LABEL_AGENT]: request.agentId,
      },
      annotations,
    },
    spec: {
      restartPolicy: 'Never',
      activeDeadlineSeconds: settings.activeDeadlineSeconds,
      terminationGracePeriodSeconds: settings.terminationGracePeriodSeconds,
      ...(settings.serviceAccountName === undefined ? { automountServiceAccountToken: false } : { serviceAccountName: settings.serviceAccountName }),
      ...(Object.keys(settings.nodeSelector).length > 0 ? { nodeSelector: { ...settings.nodeSelector } } : {}),
      ...(settings.tolerations.length > 0 ? { tolerations: settings.tolerations.map((t) => ({ ...t })) } : {}),
      // Job code runs in the agent's sandbox, but the agent itself needs no privilege: never root,
      // never more than it started with (bubblewrap's user namespaces need none of it).
      securityContext: { runAsNonRoot: true, runAsUser: security.runAsUser, runAsGroup: security.runAsGroup, fsGroup: security.runAsGroup },
      containers: [
        {
          name: 'agent',
          image: settings.image,
          ...(settings.command === undefined ? {} : { command: [...settings.command] }),
          ...(settings.imagePullPolicy === undefined ? {} : { imagePullPolicy: settings.imagePullPolicy }),
          env,
          resources: resourcesOf(settings),
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: security.readOnlyRootFilesystem, capabilities: { drop: ['ALL'] } },
          volumeMounts: [
            { name: 'work', mountPath: WORK_DIR },
            { name: 'tmp', mountPath: TMP_DIR },
          ],
        },
      ],
      volumes: [
        { name: 'work', emptyDir: {} },
        { name: 'tmp', emptyDir: {} },
      ],
    },
  };
}
