// svc-admin admin-token create/list/revoke in-process (runCli) against a real database: the token
// it prints admits exactly its scopes at a real orchestrator route check (requireScope), until
// revoked; bad input is refused with a clear error and creates nothing.
import { join } from 'node:path';
import t from 'tap';
import { createAdminAuth } from '../../../kernel/orchestrator/admin-auth/index.ts';
import { createHttpServer } from '../../../kernel/services/http/index.ts';
import { createMetrics } from '../../../kernel/services/metrics.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

interface Listed {
  tokens: Array<{ id: string; name: string; state: string; unrestricted: boolean; scopes: string[]; createdBy: string; expiresAt: string | null; lastUsedAt: string | null }>;
}

t.test('create, list, revoke', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const run = (...args: string[]) => runCli(BIN, ['admin-token', ...args], { env: env({ SVC_DATABASE_URL: db.url }) });
    // A real route behind requireScope, to show what the printed token admits.
    const app = createHttpServer({ logger: testLogger, metrics: createMetrics({ defaultMetrics: false }) });
    t.teardown(() => app.close());
    const auth = createAdminAuth({ pool: db.pool, bootstrapToken: () => undefined });
    app.get('/probe/runs', { onRequest: auth.requireScope('runs.read') }, async () => ({ ok: true }));
    app.get('/probe/keys', { onRequest: auth.requireScope('secret.read', { unrestricted: true }) }, async () => ({ ok: true }));
    const probe = async (path: string, token: string) => (await app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${token}` } })).statusCode;

    const created = await run('create', '--name', 'deploy-bot', '--scope', 'runs.read', '--scope', 'events.read', '--ttl', '90d', '--created-by', 'alice');
    t.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    t.match(token, /^svcadm_[A-Za-z0-9_-]{43}$/, 'prints the token alone on stdout');
    t.match(created.stderr, /admin token "deploy-bot" .* created with scopes runs\.read, events\.read, expires .*; it is shown only now/);
    t.equal(await probe('/probe/runs', token), 200, 'the printed token admits its scope');
    t.equal(await probe('/probe/keys', token), 403, 'and nothing else');

    const json = await run('create', '--name', 'break-glass', '--unrestricted', '--json');
    t.equal(json.code, 0, json.stderr);
    const glass = JSON.parse(json.stdout) as { token: string; unrestricted: boolean; scopes: string[]; createdBy: string; state: string };
    t.match(glass, { unrestricted: true, scopes: [], state: 'active', createdBy: /^svc-admin:/ });
    t.equal(await probe('/probe/keys', glass.token), 200, 'an unrestricted token reads signing keys');

    const listed = await run('list', '--json');
    t.equal(listed.code, 0);
    const { tokens } = JSON.parse(listed.stdout) as Listed;
    t.same(tokens.map((x) => [x.name, x.state, x.unrestricted, x.scopes]), [
      ['deploy-bot', 'active', false, ['runs.read', 'events.read']],
      ['break-glass', 'active', true, []],
    ]);
    t.equal(tokens[0]?.createdBy, 'alice');
    t.ok(Date.parse(tokens[0]!.expiresAt as string) > Date.now() + 89 * 86_400_000, '--ttl 90d');
    t.notMatch(listed.stdout, token, 'list never shows a token');
    t.notMatch(listed.stdout, glass.token);
    const text = await run('list');
    t.match(text.stdout, /deploy-bot\s+runs\.read,events\.read/);
    t.match(text.stdout, /break-glass\s+unrestricted/);

    const revoked = await run('revoke', 'deploy-bot');
    t.equal(revoked.code, 0, revoked.stderr);
    t.match(revoked.stdout, /admin token "deploy-bot" .* revoked at/);
    const refused = await app.inject({ method: 'GET', url: '/probe/runs', headers: { authorization: `Bearer ${token}` } });
    t.equal(refused.statusCode, 401, 'refused from the next request on');
    t.equal(refused.json().error.code, 'SVC_ERR_ADMIN_TOKEN_REVOKED');
    const byId = await run('revoke', tokens[1]!.id, '--json');
    t.match(JSON.parse(byId.stdout), { name: 'break-glass', state: 'revoked' });
    t.equal((await run('create', '--name', 'deploy-bot', '--scope', 'runs.read')).code, 0, 'a revoked name may be used again');

    // Bad input: clear error, nothing created.
    t.match(await run('create', '--name', 'x', '--scope', 'runs.reed'), { code: 1, stderr: /SVC_ERR_ADMIN_TOKEN_SCOPES_INVALID.*unknown scope "runs\.reed": use one of secret\.read/s });
    t.match(await run('create', '--name', 'x'), { code: 1, stderr: /name at least one --scope/ });
    t.match(await run('create', '--name', 'x', '--unrestricted', '--scope', 'runs.read'), { code: 1, stderr: /either --unrestricted or --scope, not both/ });
    t.match(await run('create', '--name', 'deploy-bot', '--scope', 'runs.read'), { code: 1, stderr: /SVC_ERR_ADMIN_TOKEN_NAME_TAKEN/ });
    t.match(await run('create', '--name', ' padded', '--scope', 'runs.read'), { code: 1, stderr: /SVC_ERR_ADMIN_TOKEN_NAME_INVALID/ });
    t.match(await run('create', '--name', 'x', '--scope', 'runs.read', '--ttl', 'soon'), { code: 2, stderr: /--ttl "soon" is not a duration/ });
    t.match(await run('revoke', 'nobody'), { code: 1, stderr: /SVC_ERR_ADMIN_TOKEN_NOT_FOUND/ });
    t.equal((JSON.parse((await run('list', '--json')).stdout) as Listed).tokens.length, 3, 'no token created by the failures');
  });
});

t.test('without a database: usage error', async (t) => {
  const result = await runCli(BIN, ['admin-token', 'list'], { env: env() });
  t.equal(result.code, 2);
  t.match(result.stderr, /needs the orchestrator database/);
});
