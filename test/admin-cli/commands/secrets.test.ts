// svc-admin context create/bind/list and secret set/list in-process (runCli) against a real
// database: values sealed, never printed; the unbound-context warning on stderr with the exit
// code kept; rotate-key re-seals secrets; bad input refused with nothing changed.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openContextSecrets } from '../../../kernel/orchestrator/secrets/index.ts';
import { parseMasterKey } from '../../../kernel/services/crypto/sealing.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT, type ProgramResult } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const SECRET = 'pa55-word-value-7f3a9c';

function withStdin(args: string[], env: NodeJS.ProcessEnv, input: string): Promise<ProgramResult> {
  return runCli(BIN, args, { env, stdin: input });
}

await eachDatabase(t, async (t, db) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-admin-secrets-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const k1 = randomBytes(32).toString('base64');
  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_DATABASE_URL: db.url, SVC_SECRET_KEY: k1, ...extra });
  const admin = (args: string[], extra: Record<string, string> = {}) => runCli(BIN, args, { env: env(extra) });

  await t.test('create unbound → warning, bind, set three ways, list keys only', async (t) => {
    const created = await admin(['context', 'create', 'deploy', '--branches', 'main', '--branches', 'release/*', '--min-trust', 'trusted']);
    t.equal(created.code, 0, created.stderr);
    t.match(created.stderr, /warning: context deploy has no binding/);
    t.match(created.stdout, /branches: +main, release\/\*/);
    const bound = await admin(['context', 'bind', 'deploy', '--repository', 'acme/*', '--org', 'acme', '--json']);
    t.equal(bound.code, 0, bound.stderr);
    t.match(JSON.parse(bound.stdout), { context: { name: 'deploy', repositories: ['acme/*'], orgs: ['acme'], bound: true } });
    t.equal(bound.stderr, '', 'no warning once bound');

    const byFlag = await admin(['secret', 'set', 'deploy', 'TOKEN', '--value', SECRET]);
    t.equal(byFlag.code, 0, byFlag.stderr);
    t.equal(byFlag.stdout.trim(), 'Set secret deploy:TOKEN.');
    const file = join(dir, 'value.txt');
    await writeFile(file, `${SECRET}-file\n`);
    const byFile = await admin(['secret', 'set', 'deploy', 'FROM_FILE', '--value-file', file, '--json']);
    t.equal(byFile.code, 0, byFile.stderr);
    t.same(JSON.parse(byFile.stdout), { context: 'deploy', key: 'FROM_FILE', replaced: false });
    const byStdin = await withStdin(['secret', 'set', 'deploy', 'TOKEN'], env(), `${SECRET}-stdin\n`);
    t.equal(byStdin.code, 0, byStdin.stderr);
    t.equal(byStdin.stdout.trim(), 'Replaced secret deploy:TOKEN.');
    for (const out of [created, bound, byFlag, byFile, byStdin]) t.notMatch(out.stdout + out.stderr, SECRET, 'the value is never printed');

    const key = parseMasterKey(k1);
    t.same(await openContextSecrets(db.pool, [{ name: 'current', key }], ['deploy']), { deploy: { FROM_FILE: `${SECRET}-file`, TOKEN: `${SECRET}-stdin` } }, 'one trailing newline dropped');
    const listed = await admin(['secret', 'list', 'deploy']);
    t.equal(listed.code, 0);
    t.match(listed.stdout, /^FROM_FILE {2}\S+\nTOKEN {2}\S+\n$/);
    t.notMatch(listed.stdout, SECRET);
    const contexts = await admin(['context', 'list', '--json']);
    t.match(JSON.parse(contexts.stdout), { contexts: [{ name: 'deploy', bound: true }] });
  });

  await t.test('unbound context: set, list and protect warn and keep exit 0', async (t) => {
    t.equal((await admin(['context', 'create', 'loose'])).code, 0);
    const set = await admin(['secret', 'set', 'loose', 'K', '--value', 'some-value-123']);
    t.equal(set.code, 0);
    t.match(set.stderr, /warning: context loose has no binding/);
    const list = await admin(['secret', 'list', 'loose']);
    t.equal(list.code, 0);
    t.match(list.stderr, /warning: context loose has no binding/);
    const protect = await admin(['context', 'protect', 'loose', '--wait-timer', '5']);
    t.equal(protect.code, 0, 'protect keeps its exit code');
    t.match(protect.stderr, /warning: context loose has no binding/);
    t.match(protect.stdout, /wait timer: +5 s/);
    const refused = await admin(['context', 'protect', 'loose', '--wait-timer', '-1']);
    t.equal(refused.code, 2, 'a usage error keeps its own exit code');
  });

  await t.test('rotate-key re-seals secrets and keeps the signing-key line', async (t) => {
    const k2 = randomBytes(32).toString('base64');
    const rotated = await admin(['rotate-key'], { SVC_SECRET_KEY: k2, SVC_SECRET_KEY_OLD: k1 });
    t.equal(rotated.code, 0, rotated.stderr);
    t.match(
      rotated.stdout,
      /^Re-encrypted 0 provenance signing keys\.\nRe-encrypted 3 secrets\.\nRe-encrypted 0 source webhook secrets\.\nRe-encrypted 0 source provider credentials\.\nRe-encrypted 0 run-status webhook secrets\.\nRe-encrypted 0 sealed config fields\.\n$/,
    );
    t.same(await openContextSecrets(db.pool, [{ name: 'current', key: parseMasterKey(k2) }], ['deploy', 'loose']), {
      deploy: { FROM_FILE: `${SECRET}-file`, TOKEN: `${SECRET}-stdin` },
      loose: { K: 'some-value-123' },
    });
    const stranger = await admin(['rotate-key'], { SVC_SECRET_KEY: randomBytes(32).toString('base64') });
    t.equal(stranger.code, 1);
    t.match(stranger.stderr, /^SVC_ERR_MASTER_KEY_MISMATCH: store secrets: secret deploy:FROM_FILE opens with none of the configured master keys/);
  });

  await t.test('bad input: clear error, nothing changed', async (t) => {
    const snapshot = async () => JSON.stringify([await db.pool.any(sql.unsafe`SELECT * FROM secret_contexts ORDER BY name`), await db.pool.any(sql.unsafe`SELECT * FROM secret_values ORDER BY context, key`)]);
    const before = await snapshot();
    const k2env = { SVC_SECRET_KEY: randomBytes(32).toString('base64') };
    const cases: Array<{ args: string[]; code: number; stderr: RegExp }> = [
      { args: ['context', 'create', 'deploy'], code: 1, stderr: /SVC_ERR_SECRETS_CONTEXT_EXISTS/ },
      { args: ['context', 'create', 'bad name'], code: 1, stderr: /SVC_ERR_SECRETS_CONTEXT_NAME/ },
      { args: ['context', 'create', 'x', '--min-trust', 'maybe'], code: 2, stderr: /min-trust/ },
      { args: ['context', 'create', 'x', '--branches', ''], code: 1, stderr: /SVC_ERR_SECRETS_RULE/ },
      { args: ['context', 'bind', 'deploy'], code: 1, stderr: /at least one repository pattern or org/ },
      { args: ['context', 'bind', 'ghost', '--org', 'acme'], code: 1, stderr: /SVC_ERR_SECRETS_CONTEXT_NOT_FOUND/ },
      { args: ['secret', 'set', 'ghost', 'K', '--value', 'v'], code: 1, stderr: /SVC_ERR_SECRETS_CONTEXT_NOT_FOUND/ },
      { args: ['secret', 'set', 'deploy', '9K', '--value', 'v'], code: 1, stderr: /SVC_ERR_SECRETS_KEY/ },
      { args: ['secret', 'set', 'deploy', 'K', '--value', ''], code: 1, stderr: /SVC_ERR_SECRETS_VALUE/ },
      { args: ['secret', 'set', 'deploy', 'K', '--value', 'a', '--value-file', '/nope'], code: 2, stderr: /cannot also be provided|exclusive/i },
      { args: ['secret', 'set', 'deploy', 'K', '--value-file', join(dir, 'missing')], code: 1, stderr: /could not be read/ },
      { args: ['secret', 'list', 'ghost'], code: 1, stderr: /SVC_ERR_SECRETS_CONTEXT_NOT_FOUND/ },
    ];
    for (const c of cases) {
      const out = await admin(c.args, k2env);
      t.equal(out.code, c.code, `exit code of ${c.args.join(' ')}`);
      t.match(out.stderr, c.stderr, c.args.join(' '));
    }
    const empty = await withStdin(['secret', 'set', 'deploy', 'K'], env(), '\n');
    t.equal(empty.code, 1);
    t.match(empty.stderr, /SVC_ERR_SECRETS_VALUE/);
    t.equal(await snapshot(), before, 'nothing changed');
    const noDb = await runCli(BIN, ['context', 'list'], { env: { PATH: process.env['PATH'], HOME: process.env['HOME'] } });
    t.equal(noDb.code, 2);
    t.match(noDb.stderr, /needs the orchestrator database/);
  });
});
