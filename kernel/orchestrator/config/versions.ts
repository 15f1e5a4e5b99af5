// The config version store (docs/config.md): immutable rows in `config_versions` (the database
// refuses UPDATE and DELETE), the secret paths (config schema `secret: true`) sealed with the master key, and a
// notification on every write so every node of the cluster reloads.
import { randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import { ConfigVersionSummary } from '../../../schemas/http/config.ts';
import { InputError, NotFoundError, isSvcError } from '../../../core/errors.ts';
import { REDACTED, SENSITIVE_CONFIG_PATHS, getPath, loadConfig } from '../../services/config/index.ts';
import { decryptConfigFields, encryptConfigFields } from '../../services/crypto/config-fields.ts';
import type { NamedKey } from '../../services/crypto/sealing.ts';
import { notify, sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { checkSharedOnly } from './fields.ts';

/** NOTIFY channel: a version was written (payload `{"version":N}`); every node reloads. */
export const CONFIG_VERSION_CHANNEL = 'svc_config_version';

type Tree = Record<string, unknown>;

export interface ConfigVersion {
  summary: ConfigVersionSummary;
  /** The document with sealed values opened. */
  config: Tree;
}

export interface WriteVersionInput {
  config: Tree;
  createdBy: string;
  description?: string | undefined;
}

const Row = Type.Object({ ...ConfigVersionSummary.properties, config: Type.Record(Type.String(), Type.Unknown()) });

const COLUMNS = sql.fragment`id::text AS id, version, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
  created_by AS "createdBy", description, encrypted_paths AS "encryptedPaths"`;

/**
 * Refuse a document a version may not hold: local fields, unknown fields, values the config
 * schema refuses, fields this version does not honour (services/config/unsupported.ts). Checked
 * on defaults + the document alone, so a node's own file or environment cannot make a bad
 * version look good.
 */
export async function validateSharedDocument(document: unknown): Promise<Tree> {
  checkSharedOnly(document);
  // A redacted export sent back would store the placeholder as the secret.
  for (const path of SENSITIVE_CONFIG_PATHS) {
    if (getPath(document, path) === REDACTED) {
      throw new InputError('SVC_ERR_CONFIG_REDACTED_VALUE', `${path} holds ${REDACTED}, not a value: export without --redacted, or set the real value`);
    }
  }
  try {
    await loadConfig({ env: {}, cwd: '/', shared: { version: 0, config: document } });
  } catch (error) {
    if (isSvcError(error) && error.code === 'SVC_ERR_CONFIG_INVALID') {
      throw new InputError('SVC_ERR_CONFIG_VERSION_INVALID', `the shared config is not valid: ${error.message.replaceAll(' (from shared config v0)', '')}`, {
        details: error.details,
      });
    }
    if (isSvcError(error) && error.code === 'SVC_ERR_CONFIG_UNSUPPORTED') {
      throw new InputError('SVC_ERR_CONFIG_UNSUPPORTED', `the shared config sets what this version does not support: ${error.message.replaceAll(' (from shared config v0)', '')}`, {
        details: error.details,
      });
    }
    throw error;
  }
  return document as Tree;
}

function summaryOf(row: Tree): ConfigVersionSummary {
  const { config: _config, ...summary } = row;
  return summary as ConfigVersionSummary;
}

/** Validate, seal and store a new version; NOTIFY in the same transaction. */
export async function writeConfigVersion(pool: DatabasePool, masterKey: Buffer, input: WriteVersionInput): Promise<ConfigVersionSummary> {
  const document = await validateSharedDocument(input.config);
  const sealed = encryptConfigFields(masterKey, document);
  return pool.transaction(async (tx) => {
    const row = await tx.one(sqlTyped(Row)`
      INSERT INTO config_versions (id, config, created_by, description, encrypted_paths)
      VALUES (${randomUUID()}, ${sql.jsonb(sealed.config as never)}, ${input.createdBy}, ${input.description ?? null}, ${sql.array(sealed.encryptedPaths, 'text')})
      RETURNING ${COLUMNS}, config`);
    await notify(tx, CONFIG_VERSION_CHANNEL, { version: row.version });
    return summaryOf(row);
  });
}

/** Newest first. */
export async function listConfigVersions(pool: DatabasePool, limit = 100): Promise<ConfigVersionSummary[]> {
  const rows = await pool.any(sqlTyped(ConfigVersionSummary)`SELECT ${COLUMNS} FROM config_versions ORDER BY version DESC LIMIT ${limit}`);
  return [...rows];
}

function opened(keys: readonly NamedKey[], row: Tree): ConfigVersion {
  const summary = summaryOf(row);
  try {
    return { summary, config: decryptConfigFields(keys, row['config'] as Tree, summary.encryptedPaths).config };
  } catch (error) {
    throw new InputError(
      'SVC_ERR_CONFIG_VERSION_UNREADABLE',
      `config version ${summary.version} has sealed values no master key opens (${error instanceof Error ? error.message : String(error)}); set SVC_SECRET_KEY_OLD to the key it was written under`,
      { cause: error },
    );
  }
}

/** One version, sealed values opened; undefined when there is none. */
export async function readConfigVersion(pool: DatabasePool, keys: readonly NamedKey[], version: number): Promise<ConfigVersion | undefined> {
  const row = await pool.maybeOne(sqlTyped(Row)`SELECT ${COLUMNS}, config FROM config_versions WHERE version = ${version}`);
  return row === null ? undefined : opened(keys, row);
}

/** The newest version (the one every node runs), or undefined before the first write. */
export async function latestConfigVersion(pool: DatabasePool, keys: readonly NamedKey[]): Promise<ConfigVersion | undefined> {
  const row = await pool.maybeOne(sqlTyped(Row)`SELECT ${COLUMNS}, config FROM config_versions ORDER BY version DESC LIMIT 1`);
  return row === null ? undefined : opened(keys, row);
}

/** A new version copying `target`'s content (re-sealed under the current key). */
export async function rollbackConfigVersion(
  pool: DatabasePool,
  keys: readonly NamedKey[],
  target: number,
  createdBy: string,
  description?: string,
): Promise<ConfigVersionSummary> {
  const source = await readConfigVersion(pool, keys, target);
  if (source === undefined) throw new NotFoundError('SVC_ERR_CONFIG_VERSION_NOT_FOUND', `there is no config version ${target}; list them with "svc-admin config history"`);
  const key = keys[0]?.key;
  if (key === undefined) throw new InputError('SVC_ERR_CONFIG_VERSION_INVALID', 'no master key to seal the copy with');
  return writeConfigVersion(pool, key, { config: source.config, createdBy, description: description ?? `rollback to version ${target}` });
}
