import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadMasterKeys } from '../../../../kernel/services/crypto/master-keys.ts';

const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-keys-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const a = randomBytes(32);
const b = randomBytes(32);

t.test('none, value, file, old', async (t) => {
  t.same((await loadMasterKeys({})).all, []);
  const fromValue = await loadMasterKeys({ key: a.toString('base64') });
  t.ok(fromValue.current?.equals(a));
  const file = path.join(dir, 'key');
  await writeFile(file, `${a.toString('hex')}\n`);
  t.ok((await loadMasterKeys({ keyFile: file })).current?.equals(a));
  const oldFile = path.join(dir, 'old');
  await writeFile(oldFile, b.toString('base64'));
  const both = await loadMasterKeys({ key: a.toString('hex'), keyFileOld: oldFile });
  t.same(both.all.map((k) => k.name), ['current', 'old']);
  t.ok(both.old?.equals(b));
  const same = await loadMasterKeys({ key: a.toString('hex'), keyOld: a.toString('base64') });
  t.same(same.all.map((k) => k.name), ['current'], 'the same key twice is tried once');
});

t.test('refusals', async (t) => {
  await t.rejects(loadMasterKeys({ key: a.toString('hex'), keyFile: '/x' }), { code: 'SVC_ERR_CONFIG_INVALID', message: /set only one of SVC_SECRET_KEY/ });
  await t.rejects(loadMasterKeys({ keyOld: a.toString('hex') }), { message: /SVC_SECRET_KEY_OLD is set without SVC_SECRET_KEY/ });
  await t.rejects(loadMasterKeys({ key: 'nope' }), { code: 'SVC_ERR_CRYPTO_KEY_INVALID', message: /^SVC_SECRET_KEY \(secrets\.key\) must be 32 bytes/ });
  await t.rejects(loadMasterKeys({ keyFile: path.join(dir, 'missing') }), { code: 'SVC_ERR_CRYPTO_KEY_FILE_UNREADABLE', message: /SVC_SECRET_KEY_FILE/ });
  const bad = path.join(dir, 'bad');
  await writeFile(bad, 'not a key');
  await t.rejects(loadMasterKeys({ key: a.toString('hex'), keyFileOld: bad }), { code: 'SVC_ERR_CRYPTO_KEY_INVALID', message: /SVC_SECRET_KEY_FILE_OLD .*bad must be 32 bytes/ });
});
