// Configuring a source's run-status webhook: a URL that is not http(s) (or carries credentials,
// or is not a URL at all) and a missing or short secret are refused with clear errors and change
// nothing; the secret is stored sealed under the master key, bound to its source, and opens only
// there; setting again replaces; removing an absent webhook is a clear not-found.
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { checkStatusWebhookUrl, listStatusWebhooks, removeStatusWebhook, setStatusWebhook } from '../../../../kernel/orchestrator/forge-status/index.ts';
import { openStatusWebhook } from '../../../../kernel/orchestrator/forge-status/webhook-config.ts';
import { migrate, sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { gitSource, MASTER_KEY } from './harness.ts';
import { sweepSealedStores, type SweepMode } from '../../../../kernel/services/crypto/sealed-stores.ts';
import type { MasterKeys } from '../../../../kernel/services/crypto/master-keys.ts';
import { statusWebhookSecretsSealedStore } from '../../../../kernel/orchestrator/forge-status/sealed-store.ts';

/** The run-status webhook store alone through the registry's sweep (boot heal / rotate-key). */
async function resealStatusWebhooks(pool: Parameters<typeof sweepSealedStores>[0], keys: MasterKeys, mode: SweepMode) {
  const [store] = await sweepSealedStores(pool, keys, [statusWebhookSecretsSealedStore], mode);
  return { total: store!.total, resealed: store!.resealed };
}

const SECRET = 'status-hook-secret-0123456789';

t.test('URL check', async (t) => {
  t.equal(checkStatusWebhookUrl('https://hooks.example.com/ci?x=1'), 'https://hooks.example.com/ci?x=1');
  t.equal(checkStatusWebhookUrl(' http://127.0.0.1:8080 '), 'http://127.0.0.1:8080/', 'trimmed and normalised');
  const refusals: Array<[unknown, RegExp]> = [
    ['ftp://hooks.example.com/ci', /the scheme is ftp; only http and https are called/],
    ['file:///etc/passwd', /the scheme is file/],
    ['javascript:alert(1)', /the scheme is javascript/],
    ['hooks.example.com/ci', /not an absolute URL/],
    ['', /give an absolute http/],
    [undefined, /give an absolute http/],
    ['https://user:pw@hooks.example.com/ci', /carries credentials/],
    ['https://hooks.example.com/ci#frag', /#fragment/],
    [`https://hooks.example.com/${'a'.repeat(2100)}`, /longer than 2048/],
  ];
  for (const [url, why] of refusals) {
    t.throws(() => checkStatusWebhookUrl(url), { code: 'SVC_ERR_FORGE_STATUS_URL_INVALID', kind: 'input', message: why }, String(url).slice(0, 40));
  }
  t.throws(() => checkStatusWebhookUrl('https://user:secretpw@hooks.example.com'), { message: /^run-status webhook URL "https:\/\/user:secretpw@hooks\.example\.com" is not valid/ });
});

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const sourceId = await gitSource(db.pool);

  await t.test('bad configuration is refused and changes nothing', async (t) => {
    await t.rejects(setStatusWebhook(db.pool, MASTER_KEY, sourceId, { url: 'ftp://hooks.example.com', secret: SECRET }), { code: 'SVC_ERR_FORGE_STATUS_URL_INVALID', message: /only http and https/ });
    await t.rejects(setStatusWebhook(db.pool, MASTER_KEY, sourceId, { url: 'https://hooks.example.com' }), {
      code: 'SVC_ERR_FORGE_STATUS_SECRET_REQUIRED',
      message: 'a run-status webhook needs a signing secret of at least 16 characters: pass --secret, --secret-file or --generate-secret',
    });
    await t.rejects(setStatusWebhook(db.pool, MASTER_KEY, sourceId, { url: 'https://hooks.example.com', secret: 'short' }), { code: 'SVC_ERR_FORGE_STATUS_SECRET_REQUIRED' });
    await t.rejects(setStatusWebhook(db.pool, MASTER_KEY, '00000000-0000-4000-8000-000000000000', { url: 'https://hooks.example.com', secret: SECRET }), { code: 'SVC_ERR_SOURCE_NOT_FOUND' });
    t.same(await listStatusWebhooks(db.pool), [], 'nothing stored');
  });

  await t.test('the secret is sealed, bound to its source; set again replaces', async (t) => {
    const set = await setStatusWebhook(db.pool, MASTER_KEY, sourceId, { url: 'https://hooks.example.com/ci', secret: SECRET });
    t.match(set, { webhook: { sourceId, orgId: 'org-1', url: 'https://hooks.example.com/ci' }, secret: SECRET });
    const row = (await db.pool.one(sql.unsafe`SELECT url, secret_sealed FROM source_status_webhooks WHERE source_id = ${sourceId}`)) as { url: string; secret_sealed: string };
    t.notMatch(row.secret_sealed, SECRET, 'not stored in plain text');
    t.notMatch(Buffer.from(row.secret_sealed, 'base64').toString('latin1'), SECRET, 'not even inside the sealed bytes');
    t.match(await openStatusWebhook(db.pool, [{ name: 'current', key: MASTER_KEY }], sourceId), { url: 'https://hooks.example.com/ci', secret: SECRET });
    await t.rejects(openStatusWebhook(db.pool, [{ name: 'current', key: Buffer.alloc(32, 7) }], sourceId), 'another master key does not open it');
    // Copied to another source's row, it does not open: the additional data binds it.
    const other = await gitSource(db.pool);
    await db.pool.query(sql.unsafe`INSERT INTO source_status_webhooks (source_id, org_id, url, secret_sealed) VALUES (${other}, 'org-1', 'https://x.example.com', ${row.secret_sealed})`);
    await t.rejects(openStatusWebhook(db.pool, [{ name: 'current', key: MASTER_KEY }], other));
    await removeStatusWebhook(db.pool, other);

    const generated = await setStatusWebhook(db.pool, MASTER_KEY, sourceId, { url: 'http://127.0.0.1:9/hook', generateSecret: true });
    t.match(generated.secret, /^[0-9a-f]{64}$/, 'a generated secret');
    t.same((await listStatusWebhooks(db.pool)).map((w) => w.url), ['http://127.0.0.1:9/hook'], 'replaced, one per source');
    t.match(await openStatusWebhook(db.pool, [{ name: 'current', key: MASTER_KEY }], sourceId), { secret: generated.secret });
  });

  await t.test('remove', async (t) => {
    t.match(await removeStatusWebhook(db.pool, sourceId), { sourceId, url: 'http://127.0.0.1:9/hook' });
    await t.rejects(removeStatusWebhook(db.pool, sourceId), { code: 'SVC_ERR_FORGE_STATUS_NO_WEBHOOK', message: `source ${sourceId} has no run-status webhook` });
    await t.rejects(removeStatusWebhook(db.pool, 'not-a-uuid'), { code: 'SVC_ERR_FORGE_STATUS_NO_WEBHOOK' });
  });

  await t.test('rotate-key: secrets re-sealed under the new master key; one no key opens is named', async (t) => {
    const hooked = await gitSource(db.pool);
    await setStatusWebhook(db.pool, MASTER_KEY, hooked, { url: 'https://hooks.example.com/r', secret: SECRET });
    const next = Buffer.alloc(32, 9);
    const rotated = { current: next, old: MASTER_KEY, all: [{ name: 'current', key: next }, { name: 'old', key: MASTER_KEY }] };
    t.same(await resealStatusWebhooks(db.pool, rotated, 'heal'), { total: 1, resealed: 1 }, 'sealed under the old key: healed');
    t.same(await resealStatusWebhooks(db.pool, rotated, 'heal'), { total: 1, resealed: 0 }, 'nothing left to heal');
    t.match(await openStatusWebhook(db.pool, [{ name: 'current', key: next }], hooked), { secret: SECRET }, 'opens with the new key alone');
    t.same(await resealStatusWebhooks(db.pool, rotated, 'all'), { total: 1, resealed: 1 });
    const stranger = Buffer.alloc(32, 3);
    const lost = { current: stranger, all: [{ name: 'current', key: stranger }] };
    await t.rejects(resealStatusWebhooks(db.pool, lost, 'all'), { code: 'SVC_ERR_MASTER_KEY_MISMATCH', message: new RegExp(`^store run_status_webhook_secrets: run-status webhook of source ${hooked} opens with none of the configured master keys`) });
    await t.rejects(openStatusWebhook(db.pool, lost.all, hooked), { code: 'SVC_ERR_FORGE_STATUS_SECRET_OPEN' });
    t.match(await openStatusWebhook(db.pool, [{ name: 'current', key: next }], hooked), { secret: SECRET }, 'a refused sweep changed nothing');
    await removeStatusWebhook(db.pool, hooked);
  });

  await t.test('a source removed takes its webhook with it', async (t) => {
    const gone = await gitSource(db.pool);
    await setStatusWebhook(db.pool, MASTER_KEY, gone, { url: 'https://hooks.example.com', secret: SECRET });
    await db.pool.query(sql.unsafe`DELETE FROM sources WHERE id = ${gone}`);
    t.same(await listStatusWebhooks(db.pool), []);
  });
});
