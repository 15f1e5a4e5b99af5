// deploy/kubernetes/*.yaml: every object is checked against the Kubernetes OpenAPI schema of its
// kind (kubernetes-models), and the pieces must fit together: the scaler ConfigMap is a valid
// scaler config whose kubernetes settings the plugin accepts, the Role grants what the plugin
// calls in the namespace the pods go to, the orchestrators mount the ConfigMap at
// scaler.configDir and run as the bound ServiceAccount, and the agent token Secret is the one
// the settings name. Not a real cluster: no API server can run here (docs/kubernetes.md).
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Value } from 'typebox/value';
import { parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { loadScalerConfig } from '../../core/scalers/config-file.ts';
import { KubernetesScalerSettings } from '../../schemas/scaler-kubernetes.ts';
import { compileSchema } from '../../schemas/validate.ts';


const DIR = fileURLToPath(new URL('../../deploy/kubernetes/', import.meta.url));
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: any };
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
};

const objects: Array<{ file: string; object: Obj }> = [];
for (const file of (await readdir(DIR)).filter((f) => f.endsWith('.yaml')).sort()) {
  for (const doc of parseAllDocuments(await readFile(join(DIR, file), 'utf8'))) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const object = doc.toJS() as Obj | null;
    if (object !== null) objects.push({ file, object });
  }
}
const find = (kind: string, name: string) => objects.find((o) => o.object.kind === kind && o.object.metadata.name === name)?.object;

t.test('every object validates against the OpenAPI schema of its kind', async (t) => {
  t.ok(objects.length >= 12, `the manifests hold the objects (${objects.length})`);
  for (const { file, object } of objects) {
    const Model = MODELS[`${object.apiVersion}/${object.kind}`];
    if (Model === undefined) {
      t.fail(`${file}: ${object.apiVersion} ${object.kind} has no model in this test`);
      continue;
    }
    t.doesNotThrow(() => new Model(object as never).validate(), `${file}: ${object.kind} ${object.metadata.name}`);
  }
});

t.test('the schema check is real: a broken Deployment is refused', async (t) => {
  const deployment = structuredClone(find('Deployment', 'svc-orchestrator')!);
  deployment['spec'].replicas = 'three';
  t.throws(() => new Deployment(deployment as never).validate());
  const noContainers = structuredClone(find('Deployment', 'svc-orchestrator')!);
  delete noContainers['spec'].template.spec.containers;
  t.throws(() => new Deployment(noContainers as never).validate());
});

t.test('the pieces fit: scaler config, RBAC, ServiceAccount, mounts and the token Secret', async (t) => {
  const orchestrator = find('Deployment', 'svc-orchestrator')!;
  t.ok(orchestrator['spec'].replicas >= 2, 'several orchestrators');
  const pod = orchestrator['spec'].template.spec;
  const container = pod.containers[0];
  const env = Object.fromEntries((container.env as Array<{ name: string; value: string }>).map((e) => [e.name, e.value]));
  const secretEnv = find('Secret', 'svc-orchestrator-env')!['stringData'] as Record<string, string>;
  for (const name of ['SVC_DATABASE_URL', 'SVC_CLUSTER_JOIN_TOKEN', 'SVC_SECRET_KEY']) t.ok(name in secretEnv, `${name} comes from the Secret`);
  t.equal(env['SVC_STORAGE_TYPE'], 's3', 'replicas share one store');
  const configDir = env['SVC_SCALER_CONFIG_DIR'];
  const mount = (container.volumeMounts as Array<{ name: string; mountPath: string }>).find((m) => m.mountPath === configDir);
  t.ok(mount, 'the scaler ConfigMap is mounted at scaler.configDir');
  const volume = (pod.volumes as Array<{ name: string; configMap?: { name: string } }>).find((v) => v.name === mount?.name);
  t.equal(volume?.configMap?.name, 'svc-scalers');

  // The ConfigMap's files are a scaler config the orchestrator loads, with settings the plugin accepts.
  const dir = await mkdtemp(join(tmpdir(), 'svc-k8s-manifests-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(find('ConfigMap', 'svc-scalers')!['data'] as Record<string, string>)) await writeFile(join(dir, name), text);
  const scalerConfig = loadScalerConfig({ configDir: dir })!;
  t.same(scalerConfig.scalers.map((s) => s.plugin), ['kubernetes']);
  const settings = scalerConfig.plugins['kubernetes']!;
  // With the defaults applied, as the plugin host does at sign-in.
  const checked = compileSchema(KubernetesScalerSettings).validate(Value.Default(KubernetesScalerSettings, structuredClone(settings)));
  t.ok(checked.ok, `plugins.kubernetes is valid: ${JSON.stringify(checked.ok ? [] : checked.issues)}`);
  const agents = settings['namespace'] as string;
  t.ok(find('Namespace', agents), `namespace ${agents} is created`);
  const tokenSecret = settings['tokenSecret'] as { name: string; key: string };
  const secret = find('Secret', tokenSecret.name);
  t.equal(secret?.metadata.namespace, agents, 'the agent token Secret lives where the pods run');
  t.ok(tokenSecret.key in (secret?.['stringData'] ?? {}), 'and holds the key the pods reference');
  t.equal(find('ServiceAccount', settings['serviceAccountName'] as string)?.metadata.namespace, agents, 'the agents\u2019 ServiceAccount exists there');
  t.match(settings['orchestratorUrl'], /^http:\/\/svc-orchestrator\.svc\.svc\.cluster\.local:7700$/, 'agents reach the orchestrator Service');

  // RBAC: the orchestrators' ServiceAccount may do what the plugin calls, in the agents' namespace only.
  t.equal(pod.serviceAccountName, 'svc-orchestrator');
  const binding = find('RoleBinding', 'svc-agent-scaler')!;
  t.equal(binding.metadata.namespace, agents);
  t.same(binding['subjects'], [{ kind: 'ServiceAccount', name: 'svc-orchestrator', namespace: orchestrator.metadata.namespace }]);
  const role = find(binding['roleRef'].kind, binding['roleRef'].name)!;
  t.equal(role.metadata.namespace, agents);
  const podRule = (role['rules'] as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>).find((r) => r.apiGroups.includes('') && r.resources.includes('pods'));
  for (const verb of ['create', 'get', 'list', 'delete']) t.ok(podRule?.verbs.includes(verb), `the Role allows pods ${verb}`);
  t.notOk(objects.some((o) => o.object.kind === 'ClusterRole' || o.object.kind === 'ClusterRoleBinding'), 'no cluster-wide rights');
});
