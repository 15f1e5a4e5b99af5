// svc-admin source status-webhook set|list|remove in-process (runCli): a URL that is not http(s)
// and a missing or short secret are refused with a clear error (before the database is opened);
// --generate-secret prints the secret once, a given secret is never echoed; list shows URLs only;
// remove, and removing again is a clear not-found.
import { join } from 'node:path';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { createSource } from '../../../kernel/orchestrator/sources/store.ts';
import { migrate } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const KEY_HEX = 'b'.repeat(64);
const base = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_SECRET_KEY: KEY_HEX };
const SOURCE = '6f1c2b8e-0000-4000-8000-00000000abcd';

t.test('bad configuration is refused before the database is opened', async (t) => {
  // No SVC_DATABASE_URL: a refusal that needed the database would say so instead.
  const run = (...args: string[]) => runCli(BIN, ['source', 'status-webhook', 'set', SOURCE, ...args], { env: base });
  const ftp = await run('--url', 'ftp://hooks.example.com/ci', '--secret', 'status-hook-secret-0123');
  t.equal(ftp.code, 1);
  t.equal(ftp.stderr.trim(), 'SVC_ERR_FORGE_STATUS_URL_INVALID: run-status webhook URL "ftp://hooks.example.com/ci" is not valid: the scheme is ftp; only http and https are called');
  const relative = await run('--url', 'hooks.example.com/ci', '--generate-secret');
  t.match(relative.stderr, /^SVC_ERR_FORGE_STATUS_URL_INVALID: .*not an absolute URL/);
  const noSecret = await run('--url', 'https://hooks.example.com/ci');
  t.equal(noSecret.code, 1);
  t.equal(noSecret.stderr.trim(), 'SVC_ERR_FORGE_STATUS_SECRET_REQUIRED: a run-status webhook needs a signing secret of at least 16 characters: pass --secret, --secret-file or --generate-secret');
  const short = await run('--url', 'https://hooks.example.com/ci', '--secret', 'short');
  t.match(short.stderr, /^SVC_ERR_FORGE_STATUS_SECRET_REQUIRED/);
  const both = await run('--url', 'https://hooks.example.com/ci', '--secret', 'status-hook-secret-0123', '--generate-secret');
  t.equal(both.code, 2, 'two secret sources: a usage error');
});

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const { source } = await createSource(db.pool, Buffer.from(KEY_HEX, 'hex'), { orgId: 'acme', providerKind: 'git' });
  const env = { ...base, SVC_DATABASE_URL: db.url };
  const admin = (...args: string[]) => runCli(BIN, ['source', 'status-webhook', ...args], { env });

  const generated = await admin('set', source.id, '--url', 'https://hooks.example.com/ci', '--generate-secret', '--json');
  t.equal(generated.code, 0, generated.stderr);
  const body = JSON.parse(generated.stdout) as { webhook: { sourceId: string; url: string }; secret: string };
  t.match(body, { webhook: { sourceId: source.id, orgId: 'acme', url: 'https://hooks.example.com/ci' }, secret: /^[0-9a-f]{64}$/ });

  const dir = await mkdtemp(join(tmpdir(), 'svc-status-hook-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'hook.secret'), 'given-secret-0123456789\n');
  const given = await admin('set', source.id, '--url', 'http://127.0.0.1:9900/hook', '--secret-file', join(dir, 'hook.secret'));
  t.equal(given.code, 0, given.stderr);
  t.match(given.stdout, `run status of source ${source.id} (org acme) goes to http://127.0.0.1:9900/hook`);
  t.notMatch(given.stdout, /given-secret/, 'a given secret is not echoed');

  const listed = await admin('list');
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, new RegExp(`^${source.id}  acme  http://127\\.0\\.0\\.1:9900/hook  updated `));
  t.notMatch(listed.stdout, /given-secret|[0-9a-f]{64}/, 'no secret listed');

  const unknown = await admin('set', '00000000-0000-4000-8000-000000000000', '--url', 'https://x.example.com', '--generate-secret');
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /^SVC_ERR_SOURCE_NOT_FOUND/);

  const removed = await admin('remove', source.id);
  t.equal(removed.code, 0, removed.stderr);
  t.match(removed.stdout, 'removed');
  const again = await admin('remove', source.id);
  t.equal(again.code, 1);
  t.equal(again.stderr.trim(), `SVC_ERR_FORGE_STATUS_NO_WEBHOOK: source ${source.id} has no run-status webhook`);
});
