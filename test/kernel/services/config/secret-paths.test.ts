// The config schema's secret marks (schemas/config.ts `secret: true`) are the one list of secret
// config paths: sealing in config versions, redaction and rotate-key read it. This walks the whole
// schema and fails on a text field whose name looks secret and is not marked, unless it is on the
// allowlist below with the reason it is not a secret.
import t from 'tap';
import { Type } from 'typebox';
import { SvcConfig } from '../../../../schemas/config.ts';
import { ENCRYPTED_CONFIG_PATHS, SENSITIVE_CONFIG_PATHS } from '../../../../kernel/services/config/index.ts';
import { schemaFields, secretPaths, type SchemaField } from '../../../../kernel/services/config/secret-paths.ts';

const SECRET_LOOKING = /key|secret|token|password|passwd|credential/i;

/** Look-alikes that are not secrets, and why. */
const NOT_SECRET: Readonly<Record<string, string>> = {
  'storage.accessKeyId': 'the public half of an S3 key pair: an identifier AWS itself prints in logs and errors',
  'orchestrator.kms.accessKeyId': 'the public half of an AWS key pair, as above',
  'orchestrator.kms.keyArn': 'the name (ARN) of the KMS key; the key material never leaves KMS',
  'secrets.keyFile': 'a path to the master key file, not the key',
  'secrets.keyFileOld': 'a path to the previous master key file, not the key',
};

const isText = (field: SchemaField): boolean => field.schema.type === 'string' || field.schema.type === undefined;

/** Secret-looking text fields that are neither marked nor allowlisted. */
function unmarked(schema: unknown): string[] {
  return schemaFields(schema)
    .filter((field) => SECRET_LOOKING.test(field.path.split('.').pop()!) && isText(field) && field.schema.secret !== true && !Object.hasOwn(NOT_SECRET, field.path))
    .map((field) => field.path);
}

t.test('every secret-looking field of the config schema is marked secret or allowlisted with a reason', async (t) => {
  t.same(unmarked(SvcConfig), [], 'mark these `secret: true` in schemas/config.ts, or allowlist them here with why they are not secrets');
  const all = new Set(schemaFields(SvcConfig).map((field) => field.path));
  for (const path of Object.keys(NOT_SECRET)) t.ok(all.has(path), `allowlisted ${path} is still a config field (drop stale entries)`);
  for (const path of secretPaths(SvcConfig)) {
    const field = schemaFields(SvcConfig).find((f) => f.path === path)!;
    t.equal(field.schema.type, 'string', `${path}: a secret is sealed as text`);
  }
});

t.test('the check catches an unmarked secret, nested or in a union', async (t) => {
  const schema = Type.Object({
    db: Type.Object({ password: Type.String(), user: Type.String() }),
    forge: Type.Union([Type.Object({ apiToken: Type.String() }), Type.Object({ appCredential: Type.String({ secret: true }) })]),
    hooks: Type.Array(Type.Object({ signingSecret: Type.String() })),
  });
  t.same(unmarked(schema), ['db.password', 'forge.apiToken', 'hooks[].signingSecret']);
  t.throws(() => secretPaths(Type.Object({ hooks: Type.Array(Type.Object({ s: Type.String({ secret: true }) })) })), /inside arrays cannot be sealed: hooks\[\]\.s/);
});

t.test('sealing, redaction and rotation read the one list derived from the marks', async (t) => {
  t.same([...SENSITIVE_CONFIG_PATHS], [...secretPaths(SvcConfig)]);
  t.equal(ENCRYPTED_CONFIG_PATHS, SENSITIVE_CONFIG_PATHS, 'one list, not two');
  for (const path of ['platform.token', 'storage.secretAccessKey', 'secrets.key', 'secrets.keyOld', 'secrets.bootstrapAdminToken', 'cluster.joinToken', 'orchestrator.kms.secretAccessKey']) {
    t.ok(SENSITIVE_CONFIG_PATHS.includes(path), path);
  }
});
