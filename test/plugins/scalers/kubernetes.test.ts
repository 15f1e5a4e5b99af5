// The kubernetes scaler with the real @kubernetes/client-node against the stand-in API server
// (test/fixtures/kube-api-server.ts), signed in through the real plugin host: the pod it makes
// (labels, env, the token by Secret reference), cleanup of finished and leftover pods, capacity,
// and settings refused clearly. Every request body the client sent must pass the Kubernetes
// OpenAPI schema: the server records violations and each test asserts there were none.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { ScalerExtensionPoint } from '../../../core/extension-points/scaler.ts';
import { createPluginHost, type PluginHost } from '../../../core/plugins/index.ts';
import { kubernetesScaler } from '../../../plugins/scalers/kubernetes/index.ts';
import { testLogger } from '../../fixtures/db.ts';
import { startKubeApiServer, type KubeApiServer } from '../../fixtures/kube-api-server.ts';
import { until } from '../../fixtures/runs.ts';


/** Waits (60 s bound) until `check` is true. */
const waitFor = (check: () => Promise<boolean> | boolean, what: string) => until(what, async () => ((await check()) ? true : undefined));

const dir = await mkdtemp(join(tmpdir(), 'svc-kube-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const server = await startKubeApiServer();
t.teardown(() => server.close());

let namespaces = 0;
const baseSettings = async (extra: Record<string, unknown> = {}) => {
  const namespace = `agents-${++namespaces}`;
  return {
    namespace,
    settings: {
      orchestratorUrl: 'http://svc-orchestrator.svc.cluster.local:8080',
      kubeconfig: await server.writeKubeconfig(dir),
      namespace,
      image: 'registry.example/svc-agent:0.9.0',
      tokenSecret: { name: 'svc-agent-token', key: 'token' },
      instanceId: 'orchestrator-0',
      resources: { requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '2', memory: '2Gi' } },
      nodeSelector: { 'kubernetes.io/os': 'linux', pool: 'ci' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'ci', effect: 'NoSchedule' }],
      serviceAccountName: 'svc-agent',
      cleanupIntervalMs: 200,
      max: 3,
      ...extra,
    },
  };
};

async function signIn(t: { teardown(fn: () => unknown): void }, settings: Record<string, unknown>): Promise<{ host: PluginHost; scaler: ScalerExtensionPoint }> {
  const host = createPluginHost({ logger: testLogger, config: { 'scaler:kubernetes': settings } });
  t.teardown(() => host.close());
  await host.signIn(kubernetesScaler);
  return { host, scaler: host.get('scaler', 'kubernetes') };
}

const envOf = (pod: { spec: { containers: Array<{ env: Array<{ name: string; value?: string; valueFrom?: unknown }> }> } }) =>
  Object.fromEntries(pod.spec.containers[0]!.env.map((e) => [e.name, e.value ?? e.valueFrom]));

t.test('scale-up creates one pod with the ownership labels, agent env and the token by Secret reference; a finished pod is deleted', async (t) => {
  const { namespace, settings } = await baseSettings();
  const { scaler } = await signIn(t, settings);
  const labels = ['linux', 'gpu', 'team-a'];
  const { agentIds } = await scaler.scaleUp({ mandatoryLabels: labels, count: 1, reason: 'job 42' });
  t.equal(agentIds.length, 1, 'one agent id');
  const id = agentIds[0]!;
  const pods = server.pods(namespace);
  t.equal(pods.length, 1, 'one pod');
  const pod = pods[0]!;
  t.equal(pod.metadata.name, `svc-agent-${id}`);
  t.same(pod.metadata.labels, {
    'app.kubernetes.io/managed-by': 'svc-scaler-kubernetes',
    'app.kubernetes.io/name': 'svc-agent',
    'svc.dev/scaler': 'kubernetes',
    'svc.dev/instance': 'orchestrator-0',
    'svc.dev/agent-id': id,
  });
  t.equal(pod.metadata.annotations?.['svc.dev/reason'], 'job 42');
  t.equal(pod.spec.restartPolicy, 'Never');
  t.equal(pod.spec.serviceAccountName, 'svc-agent');
  t.same(pod.spec.nodeSelector, { 'kubernetes.io/os': 'linux', pool: 'ci' });
  t.same(pod.spec.tolerations, [{ key: 'dedicated', operator: 'Equal', value: 'ci', effect: 'NoSchedule' }]);
  t.equal(pod.spec.activeDeadlineSeconds, 86_400, 'a hard upper bound on the pod life');
  const container = pod.spec.containers[0];
  t.equal(container.image, 'registry.example/svc-agent:0.9.0');
  t.same(container.resources, { requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '2', memory: '2Gi' } });
  const env = envOf(pod);
  t.equal(env['SVC_ORCHESTRATOR_URL'], 'http://svc-orchestrator.svc.cluster.local:8080');
  t.equal(env['SVC_AGENT_LABELS'], 'linux,gpu,team-a', 'SVC_AGENT_LABELS = mandatoryLabels');
  t.equal(env['SVC_AGENT_EPHEMERAL'], '1');
  t.equal(env['SVC_AGENT_ID'], id);
  t.same(env['SVC_AGENT_TOKEN'], { secretKeyRef: { name: 'svc-agent-token', key: 'token' } }, 'the token comes from the Secret');
  t.notOk(JSON.stringify(pod).includes(server.token), 'no credential inline in the pod');

  await waitFor(async () => server.pod(namespace, `svc-agent-${id}`)?.status.phase === 'Running', 'the pod runs');
  t.same(await scaler.capacity(), { current: 1, pending: 0, max: 3 });
  // The agent ran its one job and exited: the kubelet reports Succeeded, the cleanup deletes it.
  server.setPhase(namespace, `svc-agent-${id}`, 'Succeeded');
  await waitFor(async () => server.pods(namespace).length === 0, 'the finished pod is deleted');
  t.same(await scaler.capacity(), { current: 0, pending: 0, max: 3 });
  t.same(await scaler.scaleDown({ agentIds: [id] }), { stopped: [] }, 'a cleaned-up agent is no longer known');
  t.ok(server.requests.some((r) => r.method === 'GET' && r.query['labelSelector']?.includes('svc.dev/instance=orchestrator-0')), 'capacity lists by label selector');
  t.ok(server.requests.some((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/svc-agent-${id}`)), 'the pod was deleted through the API');
  t.same(server.violations, [], 'every request body was valid against the OpenAPI schema');
});

t.test('a failed pod, a leftover of an earlier process and pods of others: only ours and finished ones go', async (t) => {
  const { namespace, settings } = await baseSettings();
  const owned = (name: string, instance: string, scaler = 'kubernetes') => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'svc-scaler-kubernetes', 'svc.dev/scaler': scaler, 'svc.dev/instance': instance, 'svc.dev/agent-id': name },
    },
    spec: { containers: [{ name: 'agent', image: 'x' }] },
  });
  server.seed(owned('leftover', 'orchestrator-0'));
  server.seed(owned('other-replica', 'orchestrator-1'));
  server.seed({ ...owned('other-replica-done', 'orchestrator-1'), status: { phase: 'Failed' } });
  server.seed(owned('other-install', 'orchestrator-0', 'another-svc'));
  server.seed({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'unrelated', namespace }, spec: { containers: [{ name: 'x', image: 'x' }] } });
  const { scaler } = await signIn(t, settings);
  await waitFor(async () => !server.pod(namespace, 'leftover') && !server.pod(namespace, 'other-replica-done'), 'the leftover and the finished pod are deleted');
  const { agentIds } = await scaler.scaleUp({ mandatoryLabels: ['linux'], count: 1 });
  const mine = `svc-agent-${agentIds[0]}`;
  await waitFor(async () => server.pod(namespace, mine)?.status.phase === 'Running', 'our pod runs');
  server.setPhase(namespace, mine, 'Failed');
  await waitFor(async () => !server.pod(namespace, mine), 'a failed pod is deleted too');
  // Several cleanup passes later the others' live pods are still there.
  const lists = server.requests.length;
  await waitFor(async () => server.requests.length > lists + 6, 'more cleanup passes ran');
  t.same(server.pods(namespace).map((p) => p.metadata.name).sort(), ['other-install', 'other-replica', 'unrelated']);
  t.same(server.violations, []);
});

t.test('max bounds live pods; scaleDown deletes pods and ignores ids it did not start; close deletes the rest', async (t) => {
  const { namespace, settings } = await baseSettings({ max: 2 });
  const { host, scaler } = await signIn(t, settings);
  const [a, b] = await Promise.all([scaler.scaleUp({ mandatoryLabels: ['linux'], count: 2 }), scaler.scaleUp({ mandatoryLabels: ['linux'], count: 2 })]);
  t.equal(a.agentIds.length + b.agentIds.length, 2, 'two concurrent requests for 2 each still start 2 in all');
  t.equal(server.pods(namespace).length, 2);
  const first = [...a.agentIds, ...b.agentIds][0]!;
  t.same(await scaler.scaleDown({ agentIds: [first, 'k8s-000000000000'] }), { stopped: [first] });
  t.equal(server.pods(namespace).length, 1);
  await host.close();
  t.equal(server.pods(namespace).length, 0, 'close deleted the remaining pod');
  t.same(server.violations, []);
});

t.test('invalid settings are refused clearly at sign-in and nothing is created', async (t) => {
  const before = server.requests.filter((r) => r.method === 'POST').length;
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a bad quantity', { resources: { limits: { memory: 'lots' } } }, /resources\.limits\.memory/],
    ['an unknown setting', { replicas: 3 }, /replicas/],
    ['a namespace that is not a DNS label', { namespace: 'Agents_NS' }, /namespace/],
    ['no image', { image: undefined }, /image/],
    ['a missing kubeconfig', { kubeconfig: join(dir, 'nope.yaml') }, /kubeconfig .*nope\.yaml does not exist/],
    ['a context the kubeconfig lacks', { context: 'prod' }, /has no context "prod"/],
  ];
  for (const [what, extra, message] of cases) {
    const { settings } = await baseSettings(extra);
    const host = createPluginHost({ logger: testLogger, config: { 'scaler:kubernetes': settings } });
    await t.rejects(host.signIn(kubernetesScaler), { message }, what);
    await host.close().catch(() => undefined);
  }
  const { settings } = await baseSettings({ kubeconfig: undefined });
  const saved = process.env['KUBERNETES_SERVICE_HOST'];
  delete process.env['KUBERNETES_SERVICE_HOST'];
  const host = createPluginHost({ logger: testLogger, config: { 'scaler:kubernetes': settings } });
  await t.rejects(host.signIn(kubernetesScaler), { message: /not running in a cluster .*set plugins\.kubernetes\.kubeconfig/ }, 'no kubeconfig outside a cluster');
  if (saved !== undefined) process.env['KUBERNETES_SERVICE_HOST'] = saved;
  t.equal(server.requests.filter((r) => r.method === 'POST').length, before, 'no pod was created');
});

t.test('API errors carry the server reason (a wrong token gives HTTP 401 with the code SVC_ERR_SCALER_KUBERNETES_API)', async (t) => {
  const { settings } = await baseSettings({ kubeconfig: await server.writeKubeconfig(dir, { token: 'wrong' }) });
  const { scaler } = await signIn(t, settings);
  await t.rejects(scaler.scaleUp({ mandatoryLabels: ['linux'], count: 1 }), { code: 'SVC_ERR_SCALER_KUBERNETES_API', message: /list pods in namespace agents-\d+ failed: HTTP 401: Unauthorized/ });
  await t.rejects(scaler.capacity(), { code: 'SVC_ERR_SCALER_KUBERNETES_API' });
});

t.test('the stand-in server refuses bodies the OpenAPI schema refuses (so an empty violations list means something)', async (t) => {
  const before = server.violations.length;
  const post = (body: unknown) =>
    fetch(`${server.url}/api/v1/namespaces/probe/pods`, { method: 'POST', headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const wrongType = await post({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'a', image: 'x', env: [{ name: 'A', value: 1 }] }] } });
  t.equal(wrongType.status, 422);
  t.match(await wrongType.json(), { kind: 'Status', reason: 'Invalid', code: 422 });
  const badLabel = await post({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'has,comma' } }, spec: { containers: [{ name: 'a', image: 'x' }] } });
  t.equal(badLabel.status, 422);
  t.equal(server.violations.length, before + 2, 'both recorded');
  server.violations.splice(before);
  await writeFile(join(dir, 'unused'), '');
});
