import t from 'tap';
import { randomBytes } from 'node:crypto';
import {
  configFieldAd,
  decryptConfigField,
  decryptConfigFields,
  encryptConfigField,
  encryptConfigFields,
} from '../../../../kernel/services/crypto/config-fields.ts';
import { open, seal } from '../../../../kernel/services/crypto/sealing.ts';

const key = randomBytes(32);
const old = randomBytes(32);

t.test('one field', async (t) => {
  t.equal(configFieldAd('platform.token'), 'config-field:platform.token');
  const sealed = encryptConfigField(key, 'platform.token', 'tok');
  t.equal(decryptConfigField(key, 'platform.token', sealed), 'tok');
  t.equal(open(key, sealed, 'config-field:platform.token').toString(), 'tok', 'AD is config-field:<path>');
  t.throws(() => decryptConfigField(key, 'cluster.joinToken', sealed), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED' }, 'moved to another path');
  t.throws(() => decryptConfigField(old, 'platform.token', sealed), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED' });
});

t.test('a whole document', async (t) => {
  const doc = { platform: { url: 'https://p.example', token: 'ptok' }, secrets: { bootstrapAdminToken: 'boot-0123456789abcdef' }, queue: { maxDepth: 3 } };
  const { config, encryptedPaths } = encryptConfigFields(key, doc);
  t.same(encryptedPaths, ['platform.token', 'secrets.bootstrapAdminToken']);
  t.not((config['platform'] as Record<string, unknown>)['token'], 'ptok');
  t.equal((config['platform'] as Record<string, unknown>)['url'], 'https://p.example');
  t.equal(doc.platform.token, 'ptok', 'input untouched');
  const opened = decryptConfigFields([{ name: 'current', key }], config, encryptedPaths);
  t.same(opened.config, doc);
  t.same(opened.staleKeys, []);
  t.throws(() => encryptConfigFields(key, { platform: { token: 5 } }), { code: 'SVC_ERR_CONFIG_INVALID', message: /platform\.token: must be a string/ });
  t.throws(() => decryptConfigFields([{ name: 'current', key }], { platform: { token: 5 } }, ['platform.token']), { message: /holds no sealed value/ });
  t.same(decryptConfigFields([{ name: 'current', key }], {}, ['platform.token']).config, {}, 'absent path is skipped');
});

t.test('rotation: fields under the old key open and are reported stale', async (t) => {
  const doc = { cluster: { joinToken: seal(old, 'join-0123456789abcdef', 'config-field:cluster.joinToken') }, secrets: { key: seal(key, 'k', 'config-field:secrets.key') } };
  const keys = [
    { name: 'current', key },
    { name: 'old', key: old },
  ];
  const opened = decryptConfigFields(keys, doc, ['cluster.joinToken', 'secrets.key']);
  t.same(opened.config, { cluster: { joinToken: 'join-0123456789abcdef' }, secrets: { key: 'k' } });
  t.same(opened.staleKeys, ['cluster.joinToken']);
  t.throws(() => decryptConfigFields([{ name: 'current', key }], doc, ['cluster.joinToken']), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED' });
});
