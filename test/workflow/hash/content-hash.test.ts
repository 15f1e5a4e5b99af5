import { createHash } from 'node:crypto';
import t from 'tap';
import { COMPILE_SCHEMA_VERSION } from '../../../workflow/hash/compile-schema-version.ts';
import { contentHash } from '../../../workflow/hash/content-hash.ts';
import { DOCUMENTED_DIGESTS } from '../../fixtures/trees/corpus.ts';

const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

t.test('compileSchemaVersion is 7', async (t) => {
  t.equal(COMPILE_SCHEMA_VERSION, 7);
});

t.test('the formula: SHA-256("7:" + treeDigest [+ NUL + assetDigest])', async (t) => {
  const tree = DOCUMENTED_DIGESTS.treeDigest;
  const asset = DOCUMENTED_DIGESTS.assetDigest;
  t.equal(contentHash(tree), sha(`7:${tree}`));
  t.equal(contentHash(tree), 'f3860654b4a1cc203d9ab2c63ed50f1d780710fca563f827246b6b3f1b4ca090');
  t.equal(contentHash(tree, asset), sha(`7:${tree}\0${asset}`));
  t.equal(contentHash(tree, asset), 'ef7489e224ef97af3aaaaabd8f98bb66928f3957274b26eca65274d0d51b0358');
  t.match(contentHash(tree), /^[0-9a-f]{64}$/, 'plain lowercase hex, no prefix');
  t.not(contentHash(tree, DOCUMENTED_DIGESTS.emptyDigest), contentHash(tree), 'declared hashFiles matching nothing still change the hash');
  t.not(contentHash(tree, undefined, 8), contentHash(tree), 'a schema bump changes every hash');
});

t.test('malformed digests are refused', async (t) => {
  const good = DOCUMENTED_DIGESTS.treeDigest;
  for (const bad of ['', 'abc', good.toUpperCase(), `sha256:${good}`, `${good}0`]) {
    t.throws(() => contentHash(bad), { code: 'SVC_ERR_COMPILE_DIGEST_INVALID' }, JSON.stringify(bad));
    t.throws(() => contentHash(good, bad), { code: 'SVC_ERR_COMPILE_DIGEST_INVALID' });
  }
  t.throws(() => contentHash(good, undefined, -1), { code: 'SVC_ERR_COMPILE_DIGEST_INVALID' });
  t.throws(() => contentHash(good, undefined, 1.5), { code: 'SVC_ERR_COMPILE_DIGEST_INVALID' });
});
