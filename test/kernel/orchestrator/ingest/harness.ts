// Ingest tests: a real database (migrated with the orchestrator's migrations), a real plugin host
// with a small forge provider (files per commit held in memory, GitHub-shaped payloads), the
// generic source plugin and filesystem storage, and helpers to sign and send deliveries.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from 'typebox';
import { buildLock, serializeLock } from '../../../../workflow/lock/lock-file.ts';
import { createPluginHost, definePlugin, type PluginHost, type SvcPlugin } from '../../../../core/plugins/index.ts';
import type { HeaderExtraction, WebhookHeaders } from '../../../../core/extension-points/provider.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { notifyJobsQueued } from '../../../../kernel/orchestrator/dispatch/notify.ts';
import { createIngest, type IngestDeps, type IngestPipeline } from '../../../../kernel/orchestrator/ingest/pipeline.ts';
import type { IncomingDelivery } from '../../../../kernel/orchestrator/ingest/types.ts';
import { createSource, type CreateSourceInput, type SourceSummary } from '../../../../kernel/orchestrator/sources/store.ts';
import { hmacSha256Hex } from '../../../../kernel/services/crypto/hmac.ts';
import { migrate, sql } from '../../../../kernel/services/db/index.ts';
import { createMetrics, type SvcMetrics } from '../../../../kernel/services/metrics.ts';
import { normalizeGithubPayload } from '../../../../plugins/providers/shared/github-payload.ts';
import { genericSourcePlugin } from '../../../../plugins/sources/generic/index.ts';
import { filesystemStorage } from '../../../../plugins/storage/filesystem/index.ts';
import type { LockWorkflow } from '../../../../schemas/lock.ts';
import type { StorageExtensionPoint } from '../../../../core/extension-points/storage.ts';
import type { TestDb, Test } from '../../../fixtures/db.ts';

export const LOCK_PATH = '.svc/svc.lock.json';

/** An in-memory forge: files per commit, changed files per (base, head); GitHub-shaped payloads. */
export class Forge {
  readonly files = new Map<string, Map<string, string>>();
  readonly changed = new Map<string, string[]>();
  lockFetches = 0;
  fileReads = 0;
  /** A message (a plain Error: a passing failure) or the error to throw from every lock fetch. */
  failLockFetch: string | Error | null = null;
  failCredentials = false;

  put(sha: string, path: string, content: string): void {
    const files = this.files.get(sha) ?? new Map<string, string>();
    files.set(path, content);
    this.files.set(sha, files);
  }

  putLock(sha: string, workflows: LockWorkflow[], options: { lockfileHash?: string } = {}): void {
    this.put(sha, LOCK_PATH, serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows, ...options })));
  }

  plugin(): SvcPlugin {
    const forge = this;
    const one = (headers: WebhookHeaders, name: string) => {
      const value = headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    return definePlugin({
      id: 'forge',
      kind: 'provider',
      version: '1.0.0',
      kernelRange: '>=0.9.0 <1.0.0',
      description: 'in-memory forge for ingest tests',
      configSchema: Type.Object({}),
      create: () => ({
        providerKind: 'forge',
        sourceSettingsSchema: Type.Object({ owner: Type.Optional(Type.String()) }, { additionalProperties: false }),
        routingKey: (h) => `forge:${h.targetId ?? ''}`,
        extractHeaders(headers): HeaderExtraction {
          const eventType = one(headers, 'x-provider-event');
          const deliveryId = one(headers, 'x-provider-delivery');
          if (eventType === undefined) return { ok: false, missing: 'X-Provider-Event', message: 'missing' };
          if (deliveryId === undefined) return { ok: false, missing: 'X-Provider-Delivery', message: 'missing' };
          const signature = one(headers, 'x-hub-signature-256');
          return { ok: true, headers: { eventType, deliveryId, ...(signature ? { signature } : {}) } };
        },
        signatureInput: (d) => ({ algorithm: 'hmac-sha256', signedBytes: d.body, signature: d.headers.signature?.replace(/^sha256=/, '') ?? null }),
        normalize: (d, payload) => normalizeGithubPayload('forge', d.headers.eventType, payload),
        fetchLockFile: async ({ sha }) => {
          forge.lockFetches += 1;
          if (forge.failLockFetch !== null) throw typeof forge.failLockFetch === 'string' ? new Error(forge.failLockFetch) : forge.failLockFetch;
          const text = forge.files.get(sha)?.get(LOCK_PATH);
          return text === undefined ? null : Buffer.from(text);
        },
        readFile: async ({ sha, path }) => {
          forge.fileReads += 1;
          const text = forge.files.get(sha)?.get(path);
          return text === undefined ? null : new Uint8Array(Buffer.from(text));
        },
        changedFiles: async ({ base, head }) => {
          const files = forge.changed.get(`${base}..${head}`);
          if (files === undefined) throw new Error(`no diff ${base}..${head}`);
          return files;
        },
        checkoutCredentials: async ({ repository }) => {
          if (forge.failCredentials) throw new Error('token mint refused');
          return { cloneUrl: repository.cloneUrl ?? 'file:///dev/null', token: 'x' };
        },
      }),
    }) as SvcPlugin;
  }
}

export interface Harness {
  db: TestDb;
  forge: Forge;
  host: PluginHost;
  metrics: SvcMetrics;
  storage: StorageExtensionPoint;
  storageRoot: string;
  masterKey: Buffer;
  pipeline: IngestPipeline;
  /** A new pipeline on the same database (another node, or options). */
  newPipeline(overrides?: Partial<IngestDeps>): IngestPipeline;
  addSource(input?: Partial<CreateSourceInput>): Promise<{ source: SourceSummary; secret: string }>;
}

export async function makeHarness(t: Test, db: TestDb, overrides: Partial<IngestDeps> = {}): Promise<Harness> {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: db.logger });
  const forge = new Forge();
  const storageRoot = await mkdtemp(join(tmpdir(), 'svc-ingest-'));
  const metrics = createMetrics({ defaultMetrics: false });
  const host = createPluginHost({
    logger: db.logger,
    metrics: metrics.registry,
    config: {
      'storage:filesystem': { root: storageRoot, publicBaseUrl: 'http://127.0.0.1:1', urlSecret: 'x'.repeat(32) },
      'generic-source:generic': {},
    },
    selection: { storage: 'filesystem' },
  });
  await host.signInAll({ builtIns: [forge.plugin(), genericSourcePlugin as SvcPlugin, filesystemStorage as SvcPlugin] });
  const storage = host.select('storage');
  const masterKey = randomBytes(32);
  const pipelines: IngestPipeline[] = [];
  t.teardown(async () => {
    // Payload objects are written after the answer: let them land before the root goes.
    for (const p of pipelines) await p.eventLog.drain(5000);
    await host.close();
    await rm(storageRoot, { recursive: true, force: true });
  });
  const newPipeline = (more: Partial<IngestDeps> = {}) => {
    const pipeline = createIngest({
      pool: db.pool,
      logger: db.logger,
      metrics,
      host,
      masterKeys: [{ name: 'current', key: masterKey }],
      config: { lockfileCache: { max: 100, ttlMs: 60_000 }, eventLog: { maxPayloadBytes: 5 * 1024 * 1024 } },
      nodeId: 'node-a',
      storage,
      notifyJobsQueued,
      ...overrides,
      ...more,
    });
    pipelines.push(pipeline);
    return pipeline;
  };
  return {
    db,
    forge,
    host,
    metrics,
    storage,
    storageRoot,
    masterKey,
    pipeline: newPipeline(),
    newPipeline,
    addSource: (input = {}) => createSource(db.pool, masterKey, { orgId: 'acme', providerKind: 'forge', targetId: '7', ...input }),
  };
}

export interface SendOptions {
  orgId?: string;
  routingKey?: string;
  eventType?: string;
  deliveryId?: string;
  secret?: string;
  /** Sign with this instead of the secret (a wrong signature). */
  signature?: string;
  headers?: Record<string, string>;
  body?: Buffer;
  clientIp?: string;
  providerKind?: string;
  sourceId?: string;
}

export function delivery(payload: unknown, options: SendOptions = {}): IncomingDelivery {
  const body = options.body ?? Buffer.from(JSON.stringify(payload));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-provider-event': options.eventType ?? 'push',
    'x-provider-delivery': options.deliveryId ?? randomUUID(),
    ...options.headers,
  };
  if (options.signature !== undefined) headers['x-hub-signature-256'] = options.signature;
  else if (options.secret !== undefined) headers['x-hub-signature-256'] = `sha256=${hmacSha256Hex(options.secret, body)}`;
  return {
    orgId: options.orgId ?? 'acme',
    routingKey: options.routingKey ?? 'forge:7',
    providerKind: options.providerKind ?? 'forge',
    ...(options.sourceId !== undefined ? { sourceId: options.sourceId } : {}),
    deliveryId: headers['x-provider-delivery']!,
    headers,
    body,
    receivedAt: new Date(),
    clientIp: options.clientIp ?? '127.0.0.1',
    replay: false,
  };
}

export interface DeliveryRow {
  status: string;
  shed_reason: string | null;
  message: string | null;
  run_ids: string[];
  steps: Array<{ step: string; outcome: string; detail?: string }>;
  payload_key: string | null;
  payload_omitted: boolean;
  payload_omitted_reason: string | null;
  workflow_modified: boolean;
  trust_tier: string | null;
  duplicates: number;
  attempts: number;
}

export async function deliveryRow(db: TestDb, deliveryId: string, orgId = 'acme'): Promise<DeliveryRow | null> {
  return (await db.pool.maybeOne(sql.unsafe`
    select status, shed_reason, message, run_ids::text[] as run_ids, steps, payload_key, payload_omitted, payload_omitted_reason,
      workflow_modified, trust_tier, duplicates, attempts
    from webhook_deliveries where org_id = ${orgId} and delivery_id = ${deliveryId}`)) as DeliveryRow | null;
}

export async function count(db: TestDb, table: 'runs' | 'jobs' | 'webhook_deliveries' | 'webhook_delivery_retries' | 'registrations' | 'approval_commands' | 'ingest_events', where = sql.fragment`true`): Promise<number> {
  const row = (await db.pool.one(sql.unsafe`select count(*)::int as n from ${sql.identifier([table])} where ${where}`)) as { n: number };
  return row.n;
}

export async function jobsOfRun(db: TestDb, runId: string): Promise<Array<{ name: string; display_name: string; status: string; kind: string; needs: string[]; matrix: unknown; waits_for_build: string | null }>> {
  return (await db.pool.any(sql.unsafe`
    select name, display_name, status, kind, needs, matrix, waits_for_build from jobs where run_id = ${runId} order by display_name`)) as never;
}
