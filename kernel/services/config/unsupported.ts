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

function storageTypeOf(config: Tree): unknown {
  const storage = config['storage'];
  return typeof storage === 'object' && storage !== null ? (storage as Tree)['type'] : undefined;
}

/** An s3 setting is honoured only when storage.type is s3; with filesystem nothing reads it. */
function s3Setting(path: string, env: string): UnsupportedField {
  return {
    path,
    refuse: (value, config) =>
      value === undefined || storageTypeOf(config) === 's3' || (path === 'storage.forcePathStyle' && value === false)
        ? undefined
        : `an s3 storage setting, and storage.type is ${String(storageTypeOf(config))} (nothing reads it): remove ${path} (${env}) or set storage.type to s3 (SVC_STORAGE_TYPE=s3)`,
  };
}

function platformUrlOf(config: Tree): unknown {
  const platform = config['platform'];
  return typeof platform === 'object' && platform !== null ? (platform as Tree)['url'] : undefined;
}

export const UNSUPPORTED_CONFIG_FIELDS: readonly UnsupportedField[] = Object.freeze([
  {
    path: 'storage.type',
    refuse: (value, config) =>
      value === 's3' && (config['storage'] as Tree | undefined)?.['bucket'] === undefined
        ? 's3 storage needs a bucket: set storage.bucket (SVC_STORAGE_BUCKET), and storage.endpoint (SVC_STORAGE_ENDPOINT) for a server other than AWS S3'
        : undefined,
  },
  {
    path: 'storage.fsPath',
    refuse: (value, config) =>
      value === undefined || storageTypeOf(config) !== 's3'
        ? undefined
        : 'a filesystem storage setting, and storage.type is s3 (nothing reads it): remove storage.fsPath (SVC_STORAGE_FS_PATH) or set storage.type to filesystem',
  },
  s3Setting('storage.bucket', 'SVC_STORAGE_BUCKET'),
  s3Setting('storage.endpoint', 'SVC_STORAGE_ENDPOINT'),
  s3Setting('storage.forcePathStyle', 'SVC_STORAGE_FORCE_PATH_STYLE'),
  s3Setting('storage.uploadEndpoint', 'SVC_STORAGE_UPLOAD_ENDPOINT'),
  s3Setting('storage.externalEndpoint', 'SVC_STORAGE_EXTERNAL_ENDPOINT'),
  s3Setting('storage.region', 'SVC_STORAGE_REGION'),
  s3Setting('storage.accessKeyId', 'SVC_STORAGE_ACCESS_KEY_ID'),
  s3Setting('storage.secretAccessKey', 'SVC_STORAGE_SECRET_ACCESS_KEY'),
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
