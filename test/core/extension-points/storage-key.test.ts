import t from 'tap';
import { assertStorageKey, assertStoragePrefix, storageKeySegments, StorageKeyError } from '../../../core/extension-points/storage-key.ts';
import { HOSTILE_KEYS, HOSTILE_PREFIXES } from '../../fixtures/storage-contract.ts';

t.test('valid keys pass and split into segments', async (t) => {
  for (const key of ['a', 'a/b', 'source/v2/org-1/abc.tar.gz', '..a', 'a..', '...', 'x/.hidden', 'ü/ключ', 's'.repeat(255)]) {
    t.doesNotThrow(() => assertStorageKey(key), key);
  }
  t.same(storageKeySegments('deps/linux-x64/h.hash'), ['deps', 'linux-x64', 'h.hash']);
});

t.test('hostile keys are refused with a message that shows them safely', async (t) => {
  for (const key of HOSTILE_KEYS) {
    t.throws(() => assertStorageKey(key), { code: 'SVC_ERR_STORAGE_KEY_INVALID', kind: 'input' }, JSON.stringify(key) ?? String(key));
  }
  const error = (() => {
    try {
      assertStorageKey('a\u0000/../b');
    } catch (e) {
      return e as StorageKeyError;
    }
    return null;
  })();
  t.type(error, StorageKeyError);
  t.equal(error?.message, 'storage key "a\\u0000/../b" is invalid: must not contain NUL or control characters');
  t.throws(() => assertStorageKey('a/../b'), { message: 'storage key "a/../b" is invalid: must not contain ".." segments' });
  t.throws(() => assertStorageKey(7), { message: 'storage key of type number is invalid: must be a string' });
  t.throws(() => assertStorageKey('k'.repeat(2000)), { message: /…" is invalid: must be at most 1024 bytes/ });
});

t.test('prefixes: empty, whole segments, partial last segment', async (t) => {
  for (const prefix of ['', 'a', 'a/', 'a/b', 'cache/org-1/', '..', 'a/..']) t.doesNotThrow(() => assertStoragePrefix(prefix), prefix);
  for (const prefix of HOSTILE_PREFIXES) {
    t.throws(() => assertStoragePrefix(prefix), { code: 'SVC_ERR_STORAGE_KEY_INVALID' }, JSON.stringify(prefix));
  }
});
