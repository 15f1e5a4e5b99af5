// Run-status webhooks configured per source (`svc-admin source status-webhook set|remove|show`):
// a URL and a signing secret. The secret is sealed under the master key, bound to its source by
// additional data, and never shown again after it is set; the URL is checked when it is set, so
// a bad one is refused with a clear error instead of failing every delivery later.
import { Type, type Static } from 'typebox';
import { InputError, NotFoundError, SvcError } from '../../../core/errors.ts';
import { openWithAny, OpenFailedError, seal, type NamedKey } from '../../services/crypto/sealing.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { generateSecret, getSourceRow } from '../sources/store.ts';

/** Shortest signing secret accepted (as for webhook source secrets). */
export const MIN_STATUS_WEBHOOK_SECRET_LENGTH = 16;
export const MAX_STATUS_WEBHOOK_URL_LENGTH = 2048;

export const statusWebhookSecretAd = (sourceId: string) => `source-status-webhook:${sourceId}`;

const WebhookRow = Type.Object({
  source_id: Type.String(),
  org_id: Type.String(),
  url: Type.String(),
  secret_sealed: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
type WebhookRow = Static<typeof WebhookRow>;

/** A configured webhook without its secret: safe to print and log. */
export interface StatusWebhookSummary {
  sourceId: string;
  orgId: string;
  url: string;
  createdAt: string;
  updatedAt: string;
}

export interface OpenedStatusWebhook extends StatusWebhookSummary {
  secret: string;
}

const COLUMNS = sql.fragment`source_id::text AS source_id, org_id, url, secret_sealed,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at`;

function summaryOf(row: WebhookRow): StatusWebhookSummary {
  return { sourceId: row.source_id, orgId: row.org_id, url: row.url, createdAt: row.created_at, updatedAt: row.updated_at };
}

/** The URL as it will be called; refuses anything but an absolute http(s) URL without credentials. */
export function checkStatusWebhookUrl(value: unknown): string {
  const shown = String(value).slice(0, 200);
  const refuse = (why: string): never => {
    throw new InputError('SVC_ERR_FORGE_STATUS_URL_INVALID', `run-status webhook URL "${shown}" is not valid: ${why}`);
  };
  if (typeof value !== 'string' || value.trim() === '') return refuse('give an absolute http:// or https:// URL');
  const text = value.trim();
  if (text.length > MAX_STATUS_WEBHOOK_URL_LENGTH) return refuse(`it is longer than ${MAX_STATUS_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse('it is not an absolute URL; give an http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return refuse(`the scheme is ${url.protocol.replace(/:$/, '')}; only http and https are called`);
  if (url.hostname === '') return refuse('it names no host');
  if (url.username !== '' || url.password !== '') return refuse('it carries credentials; the URL is stored in plain text, so put nothing secret in it (requests are signed with the secret instead)');
  if (url.hash !== '') return refuse('it has a #fragment, which is never sent');
  return url.href;
}

function checkSecret(secret: string | undefined): string {
  if (typeof secret !== 'string' || secret.length < MIN_STATUS_WEBHOOK_SECRET_LENGTH) {
    throw new InputError(
      'SVC_ERR_FORGE_STATUS_SECRET_REQUIRED',
      `a run-status webhook needs a signing secret of at least ${MIN_STATUS_WEBHOOK_SECRET_LENGTH} characters: pass --secret, --secret-file or --generate-secret`,
    );
  }
  return secret;
}

export interface SetStatusWebhookInput {
  url: string;
  /** The signing secret; required unless `generateSecret` asks for a random one. */
  secret?: string;
  generateSecret?: boolean;
}

/**
 * Sets (or replaces) the run-status webhook of source `sourceId`. Returns the summary and the
 * secret (shown once). Bad input is refused before anything is written.
 */
export async function setStatusWebhook(
  pool: DatabasePool,
  masterKey: Buffer,
  sourceId: string,
  input: SetStatusWebhookInput,
): Promise<{ webhook: StatusWebhookSummary; secret: string }> {
  const url = checkStatusWebhookUrl(input.url);
  const secret = checkSecret(input.generateSecret === true && input.secret === undefined ? generateSecret() : input.secret);
  const source = await getSourceRow(pool, sourceId);
  if (source === null) throw new NotFoundError('SVC_ERR_SOURCE_NOT_FOUND', `no source with id ${sourceId}; list them with "svc-admin source list"`);
  const sealed = seal(masterKey, secret, statusWebhookSecretAd(source.id));
  const row = await pool.one(sqlTyped(WebhookRow)`
    INSERT INTO source_status_webhooks (source_id, org_id, url, secret_sealed)
    VALUES (${source.id}, ${source.org_id}, ${url}, ${sealed})
    ON CONFLICT (source_id) DO UPDATE SET url = EXCLUDED.url, secret_sealed = EXCLUDED.secret_sealed, updated_at = now()
    RETURNING ${COLUMNS}`);
  return { webhook: summaryOf(row), secret };
}

export async function removeStatusWebhook(pool: DatabasePool, sourceId: string): Promise<StatusWebhookSummary> {
  const row = /^[0-9a-f-]{36}$/i.test(sourceId)
    ? await pool.maybeOne(sqlTyped(WebhookRow)`DELETE FROM source_status_webhooks WHERE source_id = ${sourceId} RETURNING ${COLUMNS}`)
    : null;
  if (row === null) throw new NotFoundError('SVC_ERR_FORGE_STATUS_NO_WEBHOOK', `source ${sourceId} has no run-status webhook`);
  return summaryOf(row);
}

export async function listStatusWebhooks(pool: DatabasePool, orgId?: string): Promise<StatusWebhookSummary[]> {
  const rows = await pool.any(sqlTyped(WebhookRow)`
    SELECT ${COLUMNS} FROM source_status_webhooks ${orgId === undefined ? sql.fragment`` : sql.fragment`WHERE org_id = ${orgId}`}
    ORDER BY org_id, created_at, source_id`);
  return rows.map(summaryOf);
}

/** Source ids among `sourceIds` that have a webhook (read inside the reporter's transaction). */
export async function sourcesWithWebhooks(db: Pick<DatabasePool, 'any'>, sourceIds: readonly string[]): Promise<Set<string>> {
  if (sourceIds.length === 0) return new Set();
  const rows = await db.any(sqlTyped(Type.Object({ source_id: Type.String() }))`
    SELECT source_id::text AS source_id FROM source_status_webhooks WHERE source_id = ANY(${sql.array([...sourceIds], 'uuid')})`);
  return new Set(rows.map((r) => r.source_id));
}

function openSecret(keys: readonly NamedKey[], row: Pick<WebhookRow, 'source_id' | 'secret_sealed'>): { name: string; plaintext: Buffer } {
  try {
    return openWithAny(keys, row.secret_sealed, statusWebhookSecretAd(row.source_id));
  } catch (error) {
    if (!(error instanceof OpenFailedError) && !(error instanceof SvcError && error.code.startsWith('SVC_ERR_CRYPTO_'))) throw error;
    throw new SvcError(
      'SVC_ERR_FORGE_STATUS_SECRET_OPEN',
      `the run-status webhook secret of source ${row.source_id} opens with neither SVC_SECRET_KEY nor SVC_SECRET_KEY_OLD: set the key it was sealed with as SVC_SECRET_KEY_OLD and run svc-admin rotate-key again`,
      { cause: error },
    );
  }
}

/** The webhook of a source with its secret opened; null when it has none (any more). */
export async function openStatusWebhook(pool: DatabasePool, keys: readonly NamedKey[], sourceId: string): Promise<OpenedStatusWebhook | null> {
  const row = await pool.maybeOne(sqlTyped(WebhookRow)`SELECT ${COLUMNS} FROM source_status_webhooks WHERE source_id = ${sourceId}`);
  if (row === null) return null;
  return { ...summaryOf(row), secret: openSecret(keys, row).plaintext.toString('utf8') };
}
