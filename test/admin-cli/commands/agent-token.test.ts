// svc-admin agent-token create/list/revoke in-process (runCli) against a real database; the
// token it prints authenticates an agent until revoked.
import { join } from 'node:path';
import t from 'tap';
import { checkAgentToken } from '../../../kernel/orchestrator/dispatch/tokens.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

t.test('create, list, revoke', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const run = (...args: string[]) => runCli(BIN, ['agent-token', ...args], { env: env({ SVC_DATABASE_URL: db.url }) });
    const created = await run('create', '--description', 'farm', '--ttl', '90d');
    t.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    t.match(token, /^svcat_[A-Za-z0-9_-]{43}$/, 'prints the token alone on stdout');
    t.match(created.stderr, /shown only now/);
    const check = await checkAgentToken(db.pool, token);
    t.ok(check.ok, 'the printed token authenticates');

    const listed = await run('list', '--json');
    t.equal(listed.code, 0);
    const { tokens } = JSON.parse(listed.stdout) as { tokens: Array<{ id: string; state: string; description: string; expiresAt: string }> };
    t.equal(tokens.length, 1);
    t.match(tokens[0], { state: 'active', description: 'farm' });
    t.ok(Date.parse(tokens[0]!.expiresAt) > Date.now() + 89 * 86_400_000, '--ttl 90d');
    t.notMatch(listed.stdout, token, 'list never shows the token');

    const revoked = await run('revoke', tokens[0]!.id);
    t.equal(revoked.code, 0);
    t.match(revoked.stdout, /revoked/);
    t.same(await checkAgentToken(db.pool, token), { ok: false, reason: 'agent token revoked' });
    t.match(JSON.parse((await run('list', '--json')).stdout), { tokens: [{ state: 'revoked' }] });

    // Bad input: clear error, nothing changed.
    t.match(await run('create', '--ttl', 'soon'), { code: 2, stderr: /--ttl "soon" is not a duration/ });
    t.match(await run('revoke', 'nope'), { code: 1, stderr: /SVC_ERR_AGENT_TOKEN_ID/ });
    t.match(await run('revoke', '00000000-0000-4000-8000-000000000000'), { code: 1, stderr: /SVC_ERR_AGENT_TOKEN_NOT_FOUND/ });
    t.equal((JSON.parse((await run('list', '--json')).stdout) as { tokens: unknown[] }).tokens.length, 1, 'no token created by the failures');
  });
});

t.test('without a database: usage error', async (t) => {
  const result = await runCli(BIN, ['agent-token', 'list'], { env: env() });
  t.equal(result.code, 2);
  t.match(result.stderr, /needs the orchestrator database/);
});
