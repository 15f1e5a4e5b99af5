// The sources table: one row per forge connection of an org (a GitHub App, a git remote, a
// generic sender). Secrets and credentials are sealed under the master key and bound to their
// row by additional data; during a rotation the previous secret is kept so both verify.
import { randomBytes, randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { RelaySource } from '../../../schemas/wire/relay.ts';
import { openWithAny, seal, type NamedKey } from '../../services/crypto/sealing.ts';
import { notify, sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { ConflictError, InputError, NotFoundError, type ErrorCode } from '../../../core/errors.ts';

export type ForkPolicy = 'run' | 'ignore';

/** NOTIFY channel for any change to the sources table (payload `{ id, orgId }`): caches drop their copies. */
export const SOURCES_CHANNEL = 'svc_sources_changed';

/** Org ids and generic source ids travel in webhook URLs: one plain path segment. */
export const ORG_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
export const SOURCE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
export const PROVIDER_KIND_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const SourceRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  provider_kind: Type.String(),
  routing_key: Type.String(),
  source_id: Nullable(Type.String()),
  name: Type.String(),
  settings: Type.Record(Type.String(), Type.Unknown()),
  secret_sealed: Nullable(Type.String()),
  previous_secret_sealed: Nullable(Type.String()),
  credentials_sealed: Nullable(Type.String()),
  /** Null: not set, the org's trust policy decides (trust-policy/store.ts effectiveForkPolicy). */
  fork_policy: Type.Union([Type.Literal('run'), Type.Literal('ignore'), Type.Null()]),
  org_wide_workflow_repositories: Type.Array(Type.String()),
  org_wide_source_repositories: Type.Array(Type.String()),
  created_at: Type.Number(),
  updated_at: Type.Number(),
});
export type SourceRow = Static<typeof SourceRow>;

/** A source without its sealed material: safe to print and log. */
export interface SourceSummary {
  id: string;
  orgId: string;
  providerKind: string;
  routingKey: string;
  /** Generic sources: the URL's source id. */
  sourceId: string | null;
  name: string;
  settings: Record<string, unknown>;
  /** The source's own fork policy; null follows the org's trust policy (default run). */
  forkPolicy: ForkPolicy | null;
  orgWideWorkflowRepositories: string[];
  orgWideSourceRepositories: string[];
  hasSecret: boolean;
  /** A previous secret is still accepted. */
  rotating: boolean;
  hasCredentials: boolean;
  createdAt: string;
}

/** A source with its secrets opened: only inside the ingest pipeline, never logged. */
export interface OpenedSource extends SourceSummary {
  /** Current first, then the previous one during a rotation. */
  secrets: string[];
  credentials: Record<string, string>;
}

const COLUMNS = sql.fragment`id, org_id, provider_kind, routing_key, source_id, name, settings, secret_sealed,
  previous_secret_sealed, credentials_sealed, fork_policy, org_wide_workflow_repositories,
  org_wide_source_repositories, created_at, updated_at`;

export const secretAd = (id: string) => `source-secret:${id}`;
export const credentialsAd = (id: string) => `source-credentials:${id}`;

export function summarize(row: SourceRow): SourceSummary {
  return {
    id: row.id,
    orgId: row.org_id,
    providerKind: row.provider_kind,
    routingKey: row.routing_key,
    sourceId: row.source_id,
    name: row.name,
    settings: row.settings,
    forkPolicy: row.fork_policy,
    orgWideWorkflowRepositories: row.org_wide_workflow_repositories,
    orgWideSourceRepositories: row.org_wide_source_repositories,
    hasSecret: row.secret_sealed !== null,
    rotating: row.previous_secret_sealed !== null,
    hasCredentials: row.credentials_sealed !== null,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** Opens the sealed secrets and credentials; throws OpenFailedError when no master key opens them. */
export function openSource(row: SourceRow, keys: readonly NamedKey[]): OpenedSource {
  const secrets: string[] = [];
  for (const sealed of [row.secret_sealed, row.previous_secret_sealed]) {
    if (sealed !== null) secrets.push(openWithAny(keys, sealed, secretAd(row.id)).plaintext.toString('utf8'));
  }
  let credentials: Record<string, string> = {};
  if (row.credentials_sealed !== null) {
    const text = openWithAny(keys, row.credentials_sealed, credentialsAd(row.id)).plaintext.toString('utf8');
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InputError('SVC_ERR_SOURCE_CREDENTIALS_INVALID', `credentials of source ${row.id} are not an object`);
    credentials = Object.fromEntries(Object.entries(parsed).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  }
  return { ...summarize(row), secrets, credentials };
}

/** A webhook secret: 32 random bytes, hex. */
export function generateSecret(): string {
  return randomBytes(32).toString('hex');
}

export interface CreateSourceInput {
  orgId: string;
  providerKind: string;
  name?: string;
  /** The forge's target id (a GitHub App id). Absent for `git`: the source's own id is the target. */
  targetId?: string;
  /** Generic sources: the URL path segment; default the source's uuid. */
  sourceId?: string;
  settings?: Record<string, unknown>;
  credentials?: Record<string, string>;
  /** `reject` is accepted and stored as `ignore` (spec Versioning 4). Absent: follow the org's trust policy. */
  forkPolicy?: ForkPolicy | 'reject';
  orgWideWorkflowRepositories?: string[];
  orgWideSourceRepositories?: string[];
  /** Use this secret instead of generating one (tests, migrating an existing hook). */
  secret?: string;
}

export interface CreatedSource {
  source: SourceSummary;
  /** Shown once. */
  secret: string;
}

export function normalizeForkPolicy(value: string): ForkPolicy {
  if (value === 'run') return 'run';
  if (value === 'ignore' || value === 'reject') return 'ignore';
  throw new InputError('SVC_ERR_SOURCE_FORK_POLICY', `fork policy "${value}" is not one of run, ignore (reject is stored as ignore)`);
}

function check(condition: boolean, code: ErrorCode, message: string): void {
  if (!condition) throw new InputError(code, message);
}

export async function createSource(pool: DatabasePool, masterKey: Buffer, input: CreateSourceInput): Promise<CreatedSource> {
  check(typeof input.orgId === 'string' && ORG_ID_PATTERN.test(input.orgId), 'SVC_ERR_SOURCE_ORG_INVALID', `org id "${String(input.orgId)}" is not valid: use 1-100 letters, digits, ".", "_" or "-"`);
  check(typeof input.providerKind === 'string' && PROVIDER_KIND_PATTERN.test(input.providerKind), 'SVC_ERR_SOURCE_KIND_INVALID', `provider kind "${String(input.providerKind)}" is not valid`);
  const id = randomUUID();
  const generic = input.providerKind === 'generic';
  let routingKey: string;
  let sourceId: string | null = null;
  if (generic) {
    sourceId = input.sourceId ?? id;
    check(SOURCE_ID_PATTERN.test(sourceId), 'SVC_ERR_SOURCE_ID_INVALID', `source id "${sourceId}" is not valid: use 1-100 letters, digits, ".", "_" or "-"`);
    routingKey = `generic:${sourceId}`;
  } else {
    check(input.sourceId === undefined, 'SVC_ERR_SOURCE_ID_INVALID', 'a source id is only for generic sources');
    const target = input.targetId ?? (input.providerKind === 'git' ? id : undefined);
    check(target !== undefined && /^[\x21-\x7e]{1,200}$/.test(target), 'SVC_ERR_SOURCE_TARGET_REQUIRED', `a ${input.providerKind} source needs its target id (the app id of a GitHub App)`);
    routingKey = `${input.providerKind}:${target}`;
  }
  const secret = input.secret ?? generateSecret();
  check(secret.length >= 16, 'SVC_ERR_SOURCE_SECRET_WEAK', 'a webhook secret must have at least 16 characters');
  const forkPolicy = input.forkPolicy === undefined ? null : normalizeForkPolicy(input.forkPolicy);
  const credentials = input.credentials && Object.keys(input.credentials).length > 0 ? seal(masterKey, JSON.stringify(input.credentials), credentialsAd(id)) : null;
  const name = input.name ?? (generic ? `generic ${sourceId}` : routingKey);
  const row = await pool.transaction(async (tx) => {
    const inserted = await tx.maybeOne(sqlTyped(SourceRow)`
    insert into sources (id, org_id, provider_kind, routing_key, source_id, name, settings, secret_sealed, credentials_sealed,
      fork_policy, org_wide_workflow_repositories, org_wide_source_repositories)
    values (${id}, ${input.orgId}, ${input.providerKind}, ${routingKey}, ${sourceId}, ${name}, ${sql.jsonb((input.settings ?? {}) as never)},
      ${seal(masterKey, secret, secretAd(id))}, ${credentials}, ${forkPolicy},
      ${sql.array(input.orgWideWorkflowRepositories ?? [], 'text')}, ${sql.array(input.orgWideSourceRepositories ?? [], 'text')})
    on conflict do nothing
    returning ${COLUMNS}`);
    if (inserted !== null) await notify(tx, SOURCES_CHANNEL, { id, orgId: input.orgId });
    return inserted;
  });
  if (row === null) {
    throw new ConflictError('SVC_ERR_SOURCE_EXISTS', `org "${input.orgId}" already has a source with routing key ${routingKey}${sourceId ? ` or source id ${sourceId}` : ''}`);
  }
  return { source: summarize(row), secret };
}

export async function listSources(pool: DatabasePool, orgId?: string): Promise<SourceSummary[]> {
  const rows = await pool.any(sqlTyped(SourceRow)`
    select ${COLUMNS} from sources ${orgId === undefined ? sql.fragment`` : sql.fragment`where org_id = ${orgId}`}
    order by org_id, created_at, id`);
  return rows.map(summarize);
}

export async function allSourceRows(pool: DatabasePool): Promise<SourceRow[]> {
  return [...(await pool.any(sqlTyped(SourceRow)`select ${COLUMNS} from sources order by org_id, created_at`))];
}

/** Exact routing key first, then the provider-type wildcard `<kind>:*`. */
export async function findSourceRow(pool: DatabasePool, orgId: string, routingKey: string): Promise<SourceRow | null> {
  const kind = routingKey.split(':', 1)[0] ?? '';
  const rows = await pool.any(sqlTyped(SourceRow)`
    select ${COLUMNS} from sources where org_id = ${orgId} and routing_key in (${routingKey}, ${`${kind}:*`})
    order by (routing_key = ${routingKey}) desc limit 1`);
  return rows[0] ?? null;
}

export async function getSourceRow(pool: DatabasePool, id: string): Promise<SourceRow | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  return pool.maybeOne(sqlTyped(SourceRow)`select ${COLUMNS} from sources where id = ${id}`);
}

async function mustGet(pool: DatabasePool, id: string): Promise<SourceRow> {
  const row = await getSourceRow(pool, id);
  if (row === null) throw new NotFoundError('SVC_ERR_SOURCE_NOT_FOUND', `no source with id ${id}; list them with "svc-admin source list"`);
  return row;
}

/**
 * Starts a rotation: a new current secret, the old one kept as previous so deliveries signed
 * with either verify. `finish` drops the previous secret instead (the forge uses the new one).
 */
export async function rotateSourceSecret(
  pool: DatabasePool,
  masterKey: Buffer,
  id: string,
  options: { finish?: boolean; secret?: string } = {},
): Promise<{ source: SourceSummary; secret?: string }> {
  const row = await mustGet(pool, id);
  if (options.finish) {
    if (row.previous_secret_sealed === null) throw new InputError('SVC_ERR_SOURCE_NOT_ROTATING', `source ${id} has no rotation under way`);
    const updated = await pool.transaction(async (tx) => {
      const one = await tx.one(sqlTyped(SourceRow)`
      update sources set previous_secret_sealed = null, updated_at = now() where id = ${id} returning ${COLUMNS}`);
      await notify(tx, SOURCES_CHANNEL, { id, orgId: one.org_id });
      return one;
    });
    return { source: summarize(updated) };
  }
  if (row.previous_secret_sealed !== null) {
    throw new InputError('SVC_ERR_SOURCE_ROTATING', `source ${id} is already rotating: finish it first with "svc-admin source rotate-secret ${id} --finish"`);
  }
  const secret = options.secret ?? generateSecret();
  check(secret.length >= 16, 'SVC_ERR_SOURCE_SECRET_WEAK', 'a webhook secret must have at least 16 characters');
  const updated = await pool.transaction(async (tx) => {
    const one = await tx.one(sqlTyped(SourceRow)`
    update sources set previous_secret_sealed = secret_sealed, secret_sealed = ${seal(masterKey, secret, secretAd(id))}, updated_at = now()
    where id = ${id} returning ${COLUMNS}`);
    await notify(tx, SOURCES_CHANNEL, { id, orgId: one.org_id });
    return one;
  });
  return { source: summarize(updated), secret };
}

export async function removeSource(pool: DatabasePool, id: string): Promise<SourceSummary> {
  const row = await mustGet(pool, id);
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`delete from sources where id = ${id}`);
    await notify(tx, SOURCES_CHANNEL, { id, orgId: row.org_id });
  });
  return summarize(row);
}

/** Where the forge posts: the relay's address, or the orchestrator's own in independent mode. */
export function webhookUrl(baseUrl: string, source: Pick<SourceSummary, 'orgId' | 'providerKind' | 'sourceId'>): string {
  const base = baseUrl.replace(/\/+$/, '');
  const org = encodeURIComponent(source.orgId);
  if (source.providerKind === 'generic') return `${base}/webhook/${org}/generic/${encodeURIComponent(source.sourceId ?? '')}`;
  return `${base}/webhook/${org}/${source.providerKind}`;
}

/** What the relay may know of a source: routing only, never a secret. */
export function toRelaySource(source: Pick<SourceSummary, 'routingKey' | 'providerKind' | 'sourceId' | 'settings'>): RelaySource {
  const out: RelaySource = { routingKey: source.routingKey, providerKind: source.providerKind };
  if (source.sourceId !== null) out.sourceId = source.sourceId;
  const max = source.settings['maxPayloadBytes'];
  const rpm = source.settings['rateLimitRpm'];
  if (source.providerKind === 'generic' && Number.isInteger(max)) out.maxPayloadBytes = max as number;
  if (source.providerKind === 'generic' && Number.isInteger(rpm)) out.rateLimitRpm = rpm as number;
  return out;
}
