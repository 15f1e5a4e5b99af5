// Config fields the schema accepts (the spec names them) but this version cannot honour. A
// setting the runtime would ignore must never be accepted silently, so a value listed here
// stops config load (start, `svc-admin`, reload) and the write of a config version, with one
// line naming the field, what is not supported and what to do (docs/config.md "Refused fields").
// The one list: load.ts consults it, and config versions are validated through loadConfig.
// Values that match what the code does (the defaults) are accepted.

type Tree = Record<string, unknown>;

export interface UnsupportedField {
  /** Dot path of the field. */
  path: string;
  /** Why `value` is refused and what to do instead; undefined when this value is honoured. */
  refuse(value: unknown, config: Tree): string | undefined;
}

const S3_GONE = 's3 storage is not supported in this version (no s3 storage plugin ships yet)';

function s3Setting(path: string, env: string): UnsupportedField {
  return {
    path,
    refuse: (value) =>
      value === undefined || (path === 'storage.forcePathStyle' && value === false)
        ? undefined
        : `an s3 storage setting, and ${S3_GONE}: remove ${path} (${env}); filesystem storage takes storage.fsPath (SVC_STORAGE_FS_PATH)`,
  };
}

function platformUrlOf(config: Tree): unknown {
  const platform = config['platform'];
  return typeof platform === 'object' && platform !== null ? (platform as Tree)['url'] : undefined;
}

export const UNSUPPORTED_CONFIG_FIELDS: readonly UnsupportedField[] = Object.freeze([
  {
    path: 'storage.type',
    refuse: (value) =>
      value === 's3' ? `${S3_GONE}: set storage.type to filesystem (SVC_STORAGE_TYPE=filesystem, objects under SVC_STORAGE_FS_PATH)` : undefined,
  },
  s3Setting('storage.bucket', 'SVC_STORAGE_BUCKET'),
  s3Setting('storage.endpoint', 'SVC_STORAGE_ENDPOINT'),
  s3Setting('storage.forcePathStyle', 'SVC_STORAGE_FORCE_PATH_STYLE'),
  s3Setting('storage.uploadEndpoint', 'SVC_STORAGE_UPLOAD_ENDPOINT'),
  s3Setting('storage.externalEndpoint', 'SVC_STORAGE_EXTERNAL_ENDPOINT'),
  s3Setting('storage.region', 'SVC_STORAGE_REGION'),
  ...(['configPath', 'configDir'] as const).map(
    (leaf): UnsupportedField => ({
      path: `scaler.${leaf}`,
      refuse: (value) =>
        value === undefined
          ? undefined
          : `agent scalers are not supported in this version (no scaler is wired, nothing would read the scaler config): remove scaler.${leaf} (SVC_SCALER_${leaf === 'configPath' ? 'CONFIG_PATH' : 'CONFIG_DIR'}) and start agents with svc-agent`,
    }),
  ),
  {
    path: 'pgCustomerSecrets',
    refuse: (value) =>
      value === false
        ? 'another customer secret store is not supported in this version: customer secrets (secret contexts) are always stored in PostgreSQL, sealed with the master key; remove pgCustomerSecrets (SVC_PG_CUSTOMER_SECRETS) or set it to true'
        : undefined,
  },
  {
    path: 'instance.mode',
    refuse: (value, config) => {
      if (value === undefined || (value === 'independent' && platformUrlOf(config) === undefined)) return undefined;
      const linked = platformUrlOf(config) !== undefined;
      return `mode ${String(value)} is not supported in this version: the node's role follows platform.url alone (independent without it, relay-linked with it${linked ? ', and platform.url is set' : ''}); remove instance.mode (SVC_INSTANCE_MODE)`;
    },
  },
]);

export interface UnsupportedIssue {
  path: string;
  message: string;
}

function valueAt(tree: Tree, path: string): unknown {
  let node: unknown = tree;
  for (const part of path.split('.')) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, part)) return undefined;
    node = (node as Tree)[part];
  }
  return node;
}

/** Every refused field of an effective (schema-valid) config. */
export function unsupportedFieldsOf(config: object): UnsupportedIssue[] {
  const issues: UnsupportedIssue[] = [];
  for (const field of UNSUPPORTED_CONFIG_FIELDS) {
    const message = field.refuse(valueAt(config as Tree, field.path), config as Tree);
    if (message !== undefined) issues.push({ path: field.path, message });
  }
  return issues;
}
