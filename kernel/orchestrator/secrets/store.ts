// Secret contexts and their secrets (tables in migrations/0500_secret_contexts.sql). Values are
// sealed with the master key (AES-256-GCM, additional data `secret:<context>:<key>`), so a row
// copied to another context or key does not open. Nothing here logs or returns a value except
// `openContextSecrets`, which dispatch calls once the rules passed.
import { Type, type Static } from 'typebox';
import { openWithAny, OpenFailedError, seal, type NamedKey } from '../../services/crypto/sealing.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { ConflictError, InputError, NotFoundError, SvcError } from '../../../core/errors.ts';
import { compilePatternList } from '../../../workflow/matching/patterns.ts';

export const CONTEXT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
export const SECRET_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const ORG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** Largest secret value accepted (bytes of UTF-8). */
export const MAX_SECRET_BYTES = 64 * 1024;
const MAX_PATTERNS = 100;

export type MinTrust = 'trusted' | 'any';

export const ContextRow = Type.Object({
  name: Type.String(),
  branches: Type.Array(Type.String()),
  repositories: Type.Array(Type.String()),
  orgs: Type.Array(Type.String()),
  min_trust: Type.Union([Type.Literal('trusted'), Type.Literal('any')]),
  allow_local_execution: Type.Boolean(),
  required_reviewers: Type.Array(Type.String()),
  wait_timer_seconds: Type.Integer(),
  concurrency_limit: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Type.Number(),
  updated_at: Type.Number(),
});
export type ContextRow = Static<typeof ContextRow>;

/** A context as printed: rules and binding, never values. */
export interface SecretContext {
  name: string;
  branches: string[];
  repositories: string[];
  orgs: string[];
  minTrust: MinTrust;
  allowLocalExecution: boolean;
  /** One of these must approve a job before the context's secrets are released (empty: none). */
  requiredReviewers: string[];
  /** Seconds a job using the context waits after it is ready (0: none). */
  waitTimerSeconds: number;
  /** Jobs using the context queued or running at once (null: no limit). */
  concurrencyLimit: number | null;
  /** False when no repository pattern and no org is bound: the context releases nothing. */
  bound: boolean;
  createdAt: string;
  updatedAt: string;
}

export function contextOf(row: ContextRow): SecretContext {
  return {
    name: row.name,
    branches: row.branches,
    repositories: row.repositories,
    orgs: row.orgs,
    minTrust: row.min_trust,
    allowLocalExecution: row.allow_local_execution,
    requiredReviewers: row.required_reviewers,
    waitTimerSeconds: row.wait_timer_seconds,
    concurrencyLimit: row.concurrency_limit,
    bound: row.repositories.length > 0 || row.orgs.length > 0,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

export function secretAd(context: string, key: string): string {
  return `secret:${context}:${key}`;
}

export function checkContextName(name: string): void {
  if (!CONTEXT_NAME_PATTERN.test(name)) {
    throw new InputError('SVC_ERR_SECRETS_CONTEXT_NAME', `context name ${JSON.stringify(name.slice(0, 120))} is not valid: 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit`);
  }
}

export function checkSecretKey(key: string): void {
  if (!SECRET_KEY_PATTERN.test(key)) {
    throw new InputError('SVC_ERR_SECRETS_KEY', `secret key ${JSON.stringify(key.slice(0, 140))} is not valid: 1-128 letters, digits or "_", not starting with a digit`);
  }
}

function checkPatterns(kind: 'branch' | 'repository', patterns: readonly string[]): string[] {
  if (patterns.length > MAX_PATTERNS) throw new InputError('SVC_ERR_SECRETS_RULE', `at most ${MAX_PATTERNS} ${kind} patterns`);
  const out: string[] = [];
  for (const raw of patterns) {
    const pattern = raw.trim();
    if (pattern === '' || pattern.length > 200 || /\s/.test(pattern)) {
      throw new InputError('SVC_ERR_SECRETS_RULE', `${kind} pattern ${JSON.stringify(raw.slice(0, 220))} is not valid: 1-200 characters, no spaces`);
    }
    const compiled = compilePatternList(kind === 'branch' ? 'ref' : 'repository', [pattern]);
    if (compiled.error !== null) throw new InputError('SVC_ERR_SECRETS_RULE', `${kind} ${compiled.error}`);
    if (!out.includes(pattern)) out.push(pattern);
  }
  return out;
}

function checkOrgs(orgs: readonly string[]): string[] {
  for (const org of orgs) {
    if (!ORG_PATTERN.test(org)) throw new InputError('SVC_ERR_SECRETS_RULE', `org id ${JSON.stringify(org.slice(0, 120))} is not valid`);
  }
  return [...new Set(orgs)];
}

export function checkMinTrust(value: string): MinTrust {
  if (value !== 'trusted' && value !== 'any') throw new InputError('SVC_ERR_SECRETS_RULE', `minimum trust must be trusted or any (got ${JSON.stringify(value.slice(0, 40))})`);
  return value;
}

export interface CreateContextInput {
  name: string;
  branches?: readonly string[];
  repositories?: readonly string[];
  orgs?: readonly string[];
  minTrust?: MinTrust;
  allowLocalExecution?: boolean;
  requiredReviewers?: readonly string[];
  waitTimerSeconds?: number;
  concurrencyLimit?: number | null;
}

const REVIEWER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$/;
/** GitHub's limit for an environment wait timer: 30 days. */
export const MAX_WAIT_TIMER_SECONDS = 30 * 86_400;

function checkReviewers(reviewers: readonly string[]): string[] {
  if (reviewers.length > MAX_PATTERNS) throw new InputError('SVC_ERR_SECRETS_RULE', `at most ${MAX_PATTERNS} required reviewers`);
  for (const r of reviewers) {
    if (!REVIEWER_PATTERN.test(r)) throw new InputError('SVC_ERR_SECRETS_RULE', `required reviewer ${JSON.stringify(r.slice(0, 120))} is not a valid login (letters, digits, "_", ".", "@", "-")`);
  }
  return [...new Set(reviewers)].sort();
}

function checkWaitTimer(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_WAIT_TIMER_SECONDS) {
    throw new InputError('SVC_ERR_SECRETS_RULE', `wait timer must be a whole number of seconds from 0 to ${MAX_WAIT_TIMER_SECONDS} (30 days)`);
  }
  return seconds;
}

function checkConcurrencyLimit(limit: number | null): number | null {
  if (limit !== null && (!Number.isInteger(limit) || limit < 1 || limit > 10_000)) {
    throw new InputError('SVC_ERR_SECRETS_RULE', 'concurrency limit must be a whole number from 1 to 10000 (or none)');
  }
  return limit;
}

const SELECT = sql.fragment`SELECT name, branches, repositories, orgs, min_trust, allow_local_execution, required_reviewers, wait_timer_seconds, concurrency_limit, created_at, updated_at FROM secret_contexts`;

export async function createContext(pool: DatabasePool, input: CreateContextInput): Promise<SecretContext> {
  checkContextName(input.name);
  const branches = checkPatterns('branch', input.branches ?? []);
  const repositories = checkPatterns('repository', input.repositories ?? []);
  const orgs = checkOrgs(input.orgs ?? []);
  const minTrust = checkMinTrust(input.minTrust ?? 'trusted');
  const reviewers = checkReviewers(input.requiredReviewers ?? []);
  const waitTimer = checkWaitTimer(input.waitTimerSeconds ?? 0);
  const limit = checkConcurrencyLimit(input.concurrencyLimit ?? null);
  const row = await pool.maybeOne(sqlTyped(ContextRow)`
    INSERT INTO secret_contexts (name, branches, repositories, orgs, min_trust, allow_local_execution, required_reviewers, wait_timer_seconds, concurrency_limit)
    VALUES (${input.name}, ${sql.array(branches, 'text')}, ${sql.array(repositories, 'text')}, ${sql.array(orgs, 'text')}, ${minTrust}, ${input.allowLocalExecution ?? false},
            ${sql.array(reviewers, 'text')}, ${waitTimer}, ${limit})
    ON CONFLICT (name) DO NOTHING
    RETURNING name, branches, repositories, orgs, min_trust, allow_local_execution, required_reviewers, wait_timer_seconds, concurrency_limit, created_at, updated_at`);
  if (row === null) throw new ConflictError('SVC_ERR_SECRETS_CONTEXT_EXISTS', `context ${input.name} already exists`);
  return contextOf(row);
}

export async function getContext(pool: DatabasePool, name: string): Promise<SecretContext> {
  checkContextName(name);
  const row = await pool.maybeOne(sqlTyped(ContextRow)`${SELECT} WHERE name = ${name}`);
  if (row === null) throw new NotFoundError('SVC_ERR_SECRETS_CONTEXT_NOT_FOUND', `context ${name} does not exist: create it with svc-admin context create ${name}`);
  return contextOf(row);
}

export async function listContexts(pool: DatabasePool): Promise<SecretContext[]> {
  const rows = await pool.any(sqlTyped(ContextRow)`${SELECT} ORDER BY name`);
  return rows.map(contextOf);
}

export interface BindInput {
  repositories?: readonly string[];
  orgs?: readonly string[];
}

/** Adds repository patterns and orgs to the context's allowlist (idempotent). */
export async function bindContext(pool: DatabasePool, name: string, input: BindInput): Promise<SecretContext> {
  checkContextName(name);
  const repositories = checkPatterns('repository', input.repositories ?? []);
  const orgs = checkOrgs(input.orgs ?? []);
  if (repositories.length === 0 && orgs.length === 0) throw new InputError('SVC_ERR_SECRETS_RULE', 'bind needs at least one repository pattern or org');
  const row = await pool.maybeOne(sqlTyped(ContextRow)`
    UPDATE secret_contexts SET
      repositories = (SELECT coalesce(array_agg(DISTINCT r ORDER BY r), '{}') FROM unnest(repositories || ${sql.array(repositories, 'text')}) r),
      orgs = (SELECT coalesce(array_agg(DISTINCT o ORDER BY o), '{}') FROM unnest(orgs || ${sql.array(orgs, 'text')}) o),
      updated_at = now()
    WHERE name = ${name}
    RETURNING name, branches, repositories, orgs, min_trust, allow_local_execution, required_reviewers, wait_timer_seconds, concurrency_limit, created_at, updated_at`);
  if (row === null) throw new NotFoundError('SVC_ERR_SECRETS_CONTEXT_NOT_FOUND', `context ${name} does not exist: create it with svc-admin context create ${name}`);
  return contextOf(row);
}

export interface ProtectionInput {
  requiredReviewers?: readonly string[];
  waitTimerSeconds?: number;
  /** null removes the limit. */
  concurrencyLimit?: number | null;
}

/** Sets the protection rules given (the others keep their value). */
export async function protectContext(pool: DatabasePool, name: string, input: ProtectionInput): Promise<SecretContext> {
  checkContextName(name);
  if (input.requiredReviewers === undefined && input.waitTimerSeconds === undefined && input.concurrencyLimit === undefined) {
    throw new InputError('SVC_ERR_SECRETS_RULE', 'name at least one protection rule to set (required reviewers, wait timer, concurrency limit)');
  }
  const reviewers = input.requiredReviewers === undefined ? null : checkReviewers(input.requiredReviewers);
  const waitTimer = input.waitTimerSeconds === undefined ? null : checkWaitTimer(input.waitTimerSeconds);
  const limit = input.concurrencyLimit === undefined ? undefined : checkConcurrencyLimit(input.concurrencyLimit);
  const row = await pool.maybeOne(sqlTyped(ContextRow)`
    UPDATE secret_contexts SET
      required_reviewers = coalesce(${reviewers === null ? null : sql.array(reviewers, 'text')}::text[], required_reviewers),
      wait_timer_seconds = coalesce(${waitTimer}::int, wait_timer_seconds),
      concurrency_limit = ${limit === undefined ? sql.fragment`concurrency_limit` : limit},
      updated_at = now()
    WHERE name = ${name}
    RETURNING name, branches, repositories, orgs, min_trust, allow_local_execution, required_reviewers, wait_timer_seconds, concurrency_limit, created_at, updated_at`);
  if (row === null) throw new NotFoundError('SVC_ERR_SECRETS_CONTEXT_NOT_FOUND', `context ${name} does not exist: create it with svc-admin context create ${name}`);
  return contextOf(row);
}

function checkValue(value: string): void {
  if (value === '') throw new InputError('SVC_ERR_SECRETS_VALUE', 'a secret value must not be empty');
  if (Buffer.byteLength(value, 'utf8') > MAX_SECRET_BYTES) throw new InputError('SVC_ERR_SECRETS_VALUE', `a secret value must be at most ${MAX_SECRET_BYTES} bytes`);
}

/** Creates or replaces one secret; returns whether it replaced an existing value. */
export async function setSecret(pool: DatabasePool, masterKey: Buffer, context: string, key: string, value: string): Promise<{ replaced: boolean }> {
  checkContextName(context);
  checkSecretKey(key);
  checkValue(value);
  await getContext(pool, context);
  const sealed = seal(masterKey, value, secretAd(context, key));
  const row = (await pool.one(sql.unsafe`
    INSERT INTO secret_values (context, key, value_sealed) VALUES (${context}, ${key}, ${sealed})
    ON CONFLICT (context, key) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, updated_at = now()
    RETURNING (xmax <> 0) AS replaced`)) as { replaced: boolean };
  return { replaced: row.replaced };
}

export interface SecretKeyInfo {
  key: string;
  updatedAt: string;
}

export async function listSecretKeys(pool: DatabasePool, context: string): Promise<SecretKeyInfo[]> {
  await getContext(pool, context);
  const rows = await pool.any(sqlTyped(Type.Object({ key: Type.String(), updated_at: Type.Number() }))`
    SELECT key, updated_at FROM secret_values WHERE context = ${context} ORDER BY key`);
  return rows.map((r) => ({ key: r.key, updatedAt: new Date(r.updated_at).toISOString() }));
}

export class SecretOpenError extends SvcError {}

/** Every secret of the contexts named, opened: `{ context: { key: value } }`. */
export async function openContextSecrets(pool: DatabasePool, keys: readonly NamedKey[], contexts: readonly string[]): Promise<Record<string, Record<string, string>>> {
  const out: Record<string, Record<string, string>> = {};
  if (contexts.length === 0) return out;
  const rows = await pool.any(sqlTyped(Type.Object({ context: Type.String(), key: Type.String(), value_sealed: Type.String() }))`
    SELECT context, key, value_sealed FROM secret_values WHERE context = ANY(${sql.array([...contexts], 'text')}) ORDER BY context, key`);
  for (const row of rows) {
    let plaintext: Buffer;
    try {
      plaintext = openWithAny(keys, row.value_sealed, secretAd(row.context, row.key)).plaintext;
    } catch (error) {
      if (!(error instanceof OpenFailedError) && !(error instanceof SvcError && error.code.startsWith('SVC_ERR_CRYPTO_'))) throw error;
      throw new SecretOpenError('SVC_ERR_SECRETS_OPEN', `secret ${row.context}:${row.key} opens with no configured master key: finish the key rotation (SVC_SECRET_KEY_OLD) and run svc-admin rotate-key`, { cause: error });
    }
    (out[row.context] ??= {})[row.key] = plaintext.toString('utf8');
    plaintext.fill(0);
  }
  return out;
}
