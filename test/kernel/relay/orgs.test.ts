import t from 'tap';
import { eachDatabase } from '../../fixtures/db.ts';
import { listOrgs, migrateRelay, orgForToken, provisionOrg, rotateOrgToken } from '../../../kernel/relay/index.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { quietLogger } from './harness.ts';

await eachDatabase(t, async (t, db) => {
  await migrateRelay(db.pool, quietLogger);
  const a = await provisionOrg(db.pool, 'acme');
  t.match(a.token, /^svcp_[A-Za-z0-9_-]{43}$/);
  t.equal(await orgForToken(db.pool, a.token), 'acme');
  t.equal(await orgForToken(db.pool, 'svcp_nope'), undefined);
  t.equal(await orgForToken(db.pool, ''), undefined);
  const stored = await db.pool.oneFirst(sql.unsafe`select encode(token_sha256, 'hex') from relay_orgs where org_id = 'acme'`);
  t.not(stored, a.token, 'only a hash is stored');
  t.equal(String(stored).length, 64);

  await t.rejects(provisionOrg(db.pool, 'acme'), { code: 'SVC_ERR_RELAY_ORG_EXISTS' });
  for (const bad of ['', 'has space', '../x', '-lead', 'x'.repeat(101), 'a/b']) {
    await t.rejects(provisionOrg(db.pool, bad), { code: 'SVC_ERR_RELAY_ORG_ID_INVALID' }, JSON.stringify(bad));
  }
  t.equal(await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_orgs`), 1, 'refusals change nothing');

  const rotated = await rotateOrgToken(db.pool, 'acme');
  t.not(rotated.token, a.token);
  t.equal(await orgForToken(db.pool, a.token), undefined, 'old token stops working');
  t.equal(await orgForToken(db.pool, rotated.token), 'acme');
  await t.rejects(rotateOrgToken(db.pool, 'ghost'), { code: 'SVC_ERR_RELAY_ORG_NOT_FOUND' });

  await provisionOrg(db.pool, 'beta.co');
  const orgs = await listOrgs(db.pool);
  t.same(orgs.map((o) => o.orgId), ['acme', 'beta.co']);
  t.equal(orgs[0]!.sources, 0);
  t.equal(orgs[0]!.buffered, 0);
  t.ok(orgs[0]!.tokenRotatedAt);
  t.equal(orgs[1]!.tokenRotatedAt, null);
  t.notOk(JSON.stringify(orgs).includes('svcp_'), 'no token in the listing');
});
