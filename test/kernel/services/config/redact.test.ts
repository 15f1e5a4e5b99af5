import t from 'tap';
import { loadConfig, redactConfig, REDACTED, SENSITIVE_CONFIG_PATHS, ENCRYPTED_CONFIG_PATHS, getPath } from '../../../../kernel/services/config/index.ts';

t.test('sensitive paths include the spec four and the other secrets', async (t) => {
  // The spec's four, and every other field the schema marks secret (secret-paths.test.ts).
  for (const p of ['cluster.joinToken', 'platform.token', 'secrets.bootstrapAdminToken', 'secrets.key', 'storage.secretAccessKey']) t.ok(ENCRYPTED_CONFIG_PATHS.includes(p), p);
  for (const p of ENCRYPTED_CONFIG_PATHS) t.ok(SENSITIVE_CONFIG_PATHS.includes(p));
  t.ok(SENSITIVE_CONFIG_PATHS.includes('secrets.keyOld'));
  t.ok(SENSITIVE_CONFIG_PATHS.includes('orchestrator.kms.secretAccessKey'));
  t.ok(SENSITIVE_CONFIG_PATHS.includes('storage.secretAccessKey'));
});

t.test('redactConfig replaces present secrets and leaves the rest', async (t) => {
  const { config } = await loadConfig({
    env: {
      SVC_PLATFORM_TOKEN: 'platform-secret',
      SVC_SECRET_KEY: 'master-secret',
      SVC_SECRET_KEY_OLD: 'old-master-secret',
      SVC_BOOTSTRAP_ADMIN_TOKEN: 'bootstrap-secret-0123456789',
      SVC_CLUSTER_JOIN_TOKEN: 'join-secret-0123456789',
      SVC_ORCHESTRATOR_KMS_SECRET_ACCESS_KEY: 'kms-secret',
      SVC_ORCHESTRATOR_KMS_ACCESS_KEY_ID: 'AKIAPUBLIC',
      SVC_SECRET_KEY_FILE: '/run/key',
      SVC_STORAGE_TYPE: 's3',
      SVC_STORAGE_BUCKET: 'svc-bucket',
      SVC_STORAGE_ACCESS_KEY_ID: 'AKIASTORAGE',
      SVC_STORAGE_SECRET_ACCESS_KEY: 'storage-secret',
    },
  });
  const redacted = redactConfig(config);
  for (const p of SENSITIVE_CONFIG_PATHS) t.equal(getPath(redacted, p), REDACTED, p);
  t.equal(REDACTED, '***REDACTED***');
  t.equal(redacted.orchestrator.kms.accessKeyId, 'AKIAPUBLIC');
  t.equal(redacted.storage.accessKeyId, 'AKIASTORAGE', 'an access key id is not a secret');
  t.equal(redacted.secrets.keyFile, '/run/key', 'a key file path is not a secret');
  t.equal(config.secrets.key, 'master-secret', 'the original is untouched');
  const text = JSON.stringify(redacted);
  for (const secret of ['platform-secret', 'master-secret', 'bootstrap-secret', 'join-secret', 'kms-secret', 'storage-secret']) t.notMatch(text, secret);
});

t.test('absent secrets stay absent; partial trees work', async (t) => {
  const { config } = await loadConfig({ env: {} });
  const redacted = redactConfig(config);
  t.equal(redacted.platform.token, undefined);
  t.equal('token' in redacted.platform, false);
  t.same(redactConfig({ platform: { token: 'x' } }), { platform: { token: REDACTED } });
  t.same(redactConfig({ secrets: 'not an object' }), { secrets: 'not an object' });
});
