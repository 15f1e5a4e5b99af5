// Every built-in plugin, through its kind's contract suite (core/extension-points/contracts).
// The plugins come from the composition lists (plugins/builtin.ts, plugins/sandboxes/index.ts),
// so a plugin added there is run here; it fails until it has a harness below. The scaler suite
// runs against `local` (its command template starting the stand-in agent) and a test-only
// scaler; both start real child processes.
import { createHmac, randomBytes } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { genericSampleSources, type ContractHarnesses } from '../../core/extension-points/contracts/index.ts';
import type { ContractScope } from '../../core/extension-points/contracts/types.ts';
import type { SvcPlugin } from '../../core/plugins/index.ts';
import { servedStorageHarness } from '../../core/testing/route-server.ts';
import { tapContract } from '../../core/testing/tap.ts';
import { createKeyVault } from '../../kernel/orchestrator/identity/key-store.ts';
import { createDatabase } from '../../kernel/services/db/pool.ts';
import { orchestratorBuiltIns } from '../../plugins/builtin.ts';
import { BUILT_IN_SANDBOXES } from '../../plugins/sandboxes/index.ts';
import { findExecutable } from '../../plugins/sandboxes/shared/which.ts';
import { PLUGIN_KINDS, type PluginKind } from '../../schemas/plugin.ts';
import { freshDatabase, inCi, systemAvailability, systemTestUrl, testLogger } from '../fixtures/db.ts';
import { pushPayload, SHA_A } from '../fixtures/github-payloads.ts';
import { startKmsServer } from '../fixtures/kms-server.ts';
import { startS3Server } from '../fixtures/s3-server.ts';
import { buildTestImage } from '../fixtures/rootfs/build.ts';
import { masterKeys, migrateOrchestrator } from '../kernel/orchestrator/identity/fixtures.ts';
import processScaler from '../fixtures/plugins/process-scaler.ts';
import { startKubeApiServer } from '../fixtures/kube-api-server.ts';

const fixture = (path: string) => fileURLToPath(new URL(`../fixtures/${path}`, import.meta.url));
type AnyHarness = ContractHarnesses[PluginKind];
type Harnesses = Record<string, () => Promise<AnyHarness | { skip: string }>>;

const hubSign = (body: Uint8Array, secret: string) => ({ 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` });

function hubPush(family: 'x-github' | 'x-provider', targetId: string) {
  return {
    headers: {
      [`${family}-event`]: 'push',
      [`${family}-delivery`]: 'delivery-1',
      [`${family}-hook-installation-target-id`]: targetId,
      [`${family}-hook-installation-target-type`]: 'integration',
    },
    payload: pushPayload(),
  };
}

const expectedPush = (provider: string, targetId: string) => ({
  eventType: 'push',
  deliveryId: 'delivery-1',
  routingKey: `${provider}:${targetId}`,
  event: { provider, type: 'push', sha: SHA_A, branch: 'main' },
});

const GIT_SOURCE_ID = '6f1c2b8e-0000-4000-8000-000000000001';

/** How each built-in is configured and fed; keyed `<kind>:<id>`. */
const HARNESSES: Harnesses = {
  'provider:github': async () => ({
    sign: hubSign,
    push: hubPush('x-github', '12345'),
    expected: expectedPush('github', '12345'),
    source: { id: 's1', orgId: 'o', routingKey: 'github:12345', settings: { appId: '12345' }, credentials: { privateKey: 'x' } },
  }),
  'provider:git': async () => ({
    config: async (scope: ContractScope) => ({ cacheDir: await scope.tempDir() }),
    sign: hubSign,
    push: hubPush('x-provider', GIT_SOURCE_ID),
    expected: expectedPush('git', GIT_SOURCE_ID),
    source: { id: GIT_SOURCE_ID, orgId: 'o', routingKey: `git:${GIT_SOURCE_ID}`, settings: { remoteUrl: '/srv/none.git', repository: 'acme/app' }, credentials: {} },
  }),
  'generic-source:generic': async () => ({ config: () => ({ sources: genericSampleSources() }), sources: genericSampleSources() }),
  'storage:filesystem': async () =>
    servedStorageHarness((dir, publicBaseUrl) => ({ root: join(dir, 'root'), publicBaseUrl, urlSecret: randomBytes(32).toString('base64url') })),
  // A fresh bucket per point on one s3rver (test/fixtures/s3-server.ts verifies the signatures).
  'storage:s3': async () => {
    const s3 = await startS3Server();
    t.teardown(() => s3.stop());
    let buckets = 0;
    return {
      config: async () => {
        const bucket = `contract-${++buckets}`;
        await s3.createBucket(bucket);
        return s3.pluginConfig({ bucket });
      },
    };
  },
  'custody:aws-kms': async () => {
    const kms = await startKmsServer();
    t.teardown(() => kms.stop());
    const slice = { keyArn: kms.keyArn, region: 'us-east-1', accessKeyId: kms.accessKeyId, secretAccessKey: kms.secretAccessKey, endpoint: kms.url, timeoutMs: 5000 };
    return { config: () => slice };
  },
  'custody:command': async () => ({
    config: async (scope: ContractScope) => ({ command: `${process.execPath} ${fixture('signer-command.mjs')} ${join(await scope.tempDir(), 'key.json')}` }),
  }),
  'custody:db': dbCustodyHarness,
  'sandbox:process': async () => ({ config: () => ({ bwrap: inCi ? 'always' : 'auto' }), requireAvailable: true }),
  'sandbox:container': containerHarness,
  'sandbox:firecracker': async () => ({
    config: async (scope: ContractScope) => {
      const dir = await scope.tempDir();
      await writeFile(join(dir, 'vmlinux'), 'not a kernel');
      await writeFile(join(dir, 'rootfs.ext4'), 'not a file system');
      // No firecracker binary or KVM here: the API double boots the guest program on the host.
      return { command: [process.execPath, fixture('fake-firecracker.ts')], kernelImage: join(dir, 'vmlinux'), rootfs: join(dir, 'rootfs.ext4'), requireKvm: false, memMib: 256, vcpus: 1, bootTimeoutMs: 30_000 };
    },
    requireAvailable: true,
  }),
  'scaler:process-scaler': async () => scalerHarness(),
  // `local` through its command template: the stand-in agent writes where the harness looks.
  'scaler:local': async () =>
    scalerHarness(async (scope, dir) => ({
      orchestratorUrl: 'http://127.0.0.1:9',
      workRoot: await scope.tempDir(),
      command: [process.execPath, fixture('scaler-agent.mjs'), dir],
      max: 2,
      stopGraceMs: 5000,
    })),
  'scaler:kubernetes': kubernetesHarness,
};

/**
 * `kubernetes` with the real client against the stand-in API server, a namespace per point; an
 * agent "runs" while its pod is Running (the server plays the kubelet), with the labels of its
 * SVC_AGENT_LABELS. Every request body must have passed the OpenAPI schema.
 */
async function kubernetesHarness(): Promise<AnyHarness> {
  const server = await startKubeApiServer();
  t.teardown(() => server.close());
  const namespaces = new WeakMap<ContractScope, string>();
  let next = 0;
  return {
    config: async (scope: ContractScope) => {
      const namespace = `contract-${++next}`;
      namespaces.set(scope, namespace);
      return {
        orchestratorUrl: 'http://127.0.0.1:9',
        kubeconfig: await server.writeKubeconfig(await scope.tempDir()),
        namespace,
        image: 'registry.example/svc-agent:contract',
        tokenSecret: { name: 'svc-agent-token' },
        max: 2,
        cleanupIntervalMs: 500,
      };
    },
    running: async (scope: ContractScope) => {
      // A refused body fails the point that sent it (every point that starts agents looks here).
      if (server.violations.length > 0) throw new Error(`request bodies invalid against the OpenAPI schema: ${JSON.stringify(server.violations)}`);
      return server
        .pods(namespaces.get(scope))
        .filter((p) => p.status.phase === 'Running')
        .map((p) => {
          const env = (p.spec.containers[0].env ?? []) as Array<{ name: string; value?: string }>;
          return { id: p.metadata.labels?.['svc.dev/agent-id'] ?? '', labels: (env.find((e) => e.name === 'SVC_AGENT_LABELS')?.value ?? '').split(',') };
        });
    },
  } satisfies ContractHarnesses['scaler'];
}

async function dbCustodyHarness(): Promise<AnyHarness | { skip: string }> {
  const system = await systemAvailability();
  if (!system.ok && !inCi) return { skip: `no system PostgreSQL: ${system.reason}` };
  const database = await freshDatabase(systemTestUrl());
  const pool = await createDatabase({ url: database.url, logger: testLogger, maxPoolSize: 4 });
  t.teardown(async () => {
    await pool.end();
    await database.drop();
  });
  await migrateOrchestrator(pool);
  const keys = masterKeys();
  return {
    // The identity subsystem binds the key table and master key; an operator's generate makes the key.
    prepare: async (custody) => {
      const db = custody as { bind?(v: unknown): void; generate?(): Promise<unknown> };
      db.bind!(createKeyVault(pool, keys, 'db'));
      await db.generate!();
    },
  } satisfies ContractHarnesses['custody'];
}

async function containerHarness(): Promise<AnyHarness | { skip: string }> {
  const podman = await findExecutable('podman');
  // The contract reports a missing runtime by name; CI installs podman, so there it must be usable.
  const image = podman === null ? undefined : await buildTestImage(podman);
  return { config: () => ({ runtime: 'podman', network: false }), requireAvailable: inCi, ...(image === undefined ? {} : { image }) };
}

function scalerHarness(slice?: (scope: ContractScope, dir: string) => Promise<unknown>): ContractHarnesses['scaler'] {
  const dirs = new WeakMap<ContractScope, string>();
  return {
    config: async (scope) => {
      const dir = await scope.tempDir();
      dirs.set(scope, dir);
      return slice === undefined ? { command: [process.execPath, fixture('scaler-agent.mjs'), dir], max: 2 } : slice(scope, dir);
    },
    running: async (scope) => {
      const dir = dirs.get(scope)!;
      const files = (await readdir(dir)).filter((f) => f.endsWith('.json'));
      const agents = [];
      for (const file of files) {
        // The agent may be removing its file right now.
        const text = await readFile(join(dir, file), 'utf8').catch(() => null);
        if (text) agents.push(JSON.parse(text) as { id: string; labels: string[] });
      }
      return agents;
    },
  };
}

const subjects: SvcPlugin[] = [...orchestratorBuiltIns(), ...BUILT_IN_SANDBOXES, processScaler as SvcPlugin];

t.test('every kind has at least one plugin run through its suite', async (t) => {
  const kinds = new Set(subjects.map((p) => p.kind));
  t.same(PLUGIN_KINDS.filter((k) => !kinds.has(k)), []);
});

for (const plugin of subjects) {
  const name = `${plugin.kind}:${plugin.id}`;
  t.test(`${name} passes the ${plugin.kind} contract`, { timeout: 600_000 }, async (t) => {
    const make = HARNESSES[name];
    if (make === undefined) return t.fail(`no contract harness for ${name}: add one to HARNESSES in test/plugins/contracts.test.ts`);
    const harness = await make();
    if ('skip' in harness && typeof harness.skip === 'string') return void (await t.test(harness.skip, { skip: harness.skip }, () => undefined));
    const report = await tapContract(t, plugin.kind, plugin, { logger: testLogger, ...(harness as object) } as never);
    t.equal(report.id, plugin.id);
    t.ok(report.results.length > 1, 'the suite ran its points');
  });
}
