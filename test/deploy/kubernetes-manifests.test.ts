// Every manifest in deploy/kubernetes/ against the Kubernetes object schemas (kubernetes-models:
// apiVersion, kind, required fields, types) and the project's policy (test/fixtures/kube-manifests.ts):
// probes on every container of a Deployment or StatefulSet, resource requests, non-root, no
// privilege escalation, read-only root file systems with emptyDirs where the programs write. The
// agent Pod the kubernetes scaler makes from 30-scaler-config.yaml is checked the same way. The
// images are the ones the Containerfile builds (docs/kubernetes.md "Images"). A deliberately
// broken file must fail with the file, the object and the field path.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { checkManifestFiles } from '../fixtures/kube-manifests.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIR = join(ROOT, 'deploy/kubernetes');
const BROKEN = join(ROOT, 'test/fixtures/deploy/broken-kubernetes.yaml');
const version = (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** The documented image name and tag (docs/kubernetes.md, the Containerfile's build command). */
const IMAGE = `localhost/svc:${version}`;

const files = (await readdir(DIR)).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => join(DIR, f));

t.test('every manifest validates against its schema and the policy', async (t) => {
  const { objects, agentPods, problems } = await checkManifestFiles(files);
  t.ok(files.length >= 6, `${files.length} manifest files`);
  t.ok(objects.length >= 12, `${objects.length} objects`);
  t.equal(agentPods.length, 1, 'the scaler ConfigMap yields one agent pod');
  t.same(problems, [], 'no problems');
  const kinds = new Map<string, number>();
  for (const o of objects) kinds.set(String(o.object.kind), (kinds.get(String(o.object.kind)) ?? 0) + 1);
  t.comment(`checked ${objects.length} objects (${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')}) and ${agentPods.length} agent pod`);
});

t.test('the images are the ones built here, under the documented name and tag', async (t) => {
  const { objects, agentPods } = await checkManifestFiles(files);
  const images: string[] = [];
  for (const { object } of [...objects, ...agentPods]) {
    const spec = object.kind === 'Pod' ? object['spec'] : object['spec']?.template?.spec;
    for (const c of spec?.containers ?? []) images.push(c.image);
  }
  t.equal(images.length, 3, 'relay, orchestrator and agent containers');
  t.same([...new Set(images)], [IMAGE], `every container runs ${IMAGE}`);
  const commands = [...objects, ...agentPods].flatMap(({ object }) => (object.kind === 'Pod' ? object['spec'] : object['spec']?.template?.spec)?.containers ?? []).map((c: { command?: string[] }) => c.command?.[0]);
  t.same(commands.sort(), ['svc-agent', 'svc-orchestrator', 'svc-relay'], 'each container names its program (the image holds all five)');
  const docs = await readFile(join(ROOT, 'docs/kubernetes.md'), 'utf8');
  t.ok(docs.includes(IMAGE), 'docs/kubernetes.md names the image');
});

t.test('a broken manifest fails, naming the file, the object and the field', async (t) => {
  const { problems } = await checkManifestFiles([BROKEN]);
  t.comment(problems.join('\n'));
  const expect = (object: string, field: string) =>
    t.ok(
      problems.some((p) => p.startsWith('broken-kubernetes.yaml') && p.includes(object) && p.includes(`: ${field}:`)),
      `${object}: ${field}`,
    );
  expect('Deployment broken-replicas', 'spec.replicas');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].livenessProbe');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].resources.requests.cpu');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].securityContext.runAsNonRoot');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].securityContext.runAsUser');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].securityContext.capabilities.drop');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].volumeMounts');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].volumeMounts[0].name');
  expect('Deployment broken-policy', 'spec.template.spec.containers[0].readinessProbe.httpGet.port');
  expect('Deployment broken-api-version', 'apiVersion');
  expect('Deployment broken-missing-template', 'spec');
  expect('ConfigMap broken-scalers', 'plugins.kubernetes.securityContext.runAsUser');
  t.notOk(problems.some((p) => p.includes('broken-policy') && p.includes('readinessProbe: required')), 'what the broken object has is not reported');
});
