// `svc pat create|list|revoke` in-process (runCli) against a real relay on real PostgreSQL: a user
// manages their own tokens only (another user's are invisible and answer 404 on revoke), the
// value is printed once and never listed, expiry is kept, a revoked token is refused after; and
// /v1/pats refuses callers without a token (401) or with the org platform token (403).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createPat } from '../../../kernel/relay/pats/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { newOrg, startTestRelay } from '../../kernel/relay/harness.ts';


interface Listed {
  tokens: Array<{ id: string; name: string; createdAt: string; lastUsedAt: string | null; expiresAt: string | null; revokedAt: string | null }>;
}

await eachDatabase(t, async (t, db) => {
  const platformToken = await newOrg(db.pool, 'acme');
  const alice = await createPat(db.pool, 'acme', 'alice', 'laptop');
  const bob = await createPat(db.pool, 'acme', 'bob', 'desktop');
  const relay = await startTestRelay(t, db.url);
  const home = await mkdtemp(join(tmpdir(), 'svc-pat-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) delete env[name];
  // Alice is logged in through the config file; Bob through SVC_TOKEN.
  const svc = (args: string[], more: NodeJS.ProcessEnv = {}) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: { ...env, ...more } });
  const asBob = { SVC_TOKEN: bob.token };
  t.equal((await svc(['login', '--token', alice.token, '--platform-url', relay.url])).code, 0);

  let created = { id: '', token: '' };
  await t.test('create: the value printed once, with name and expiry', async (t) => {
    const text = await svc(['pat', 'create', '--name', 'ci', '--expires-in', '30']);
    t.equal(text.code, 0, text.stderr);
    t.match(text.stdout.trim(), /^svcpat_[A-Za-z0-9_-]{43}$/, 'standard output is the token alone');
    t.match(text.stderr, /of alice \(org acme\), expires 20\d\d-.*shown only now/);
    const json = await svc(['pat', 'create', '--json']);
    t.equal(json.code, 0, json.stderr);
    const body = JSON.parse(json.stdout) as { id: string; token: string; user: string; orgId: string; expiresAt: string | null; name: string };
    t.match(body, { user: 'alice', orgId: 'acme', expiresAt: null, name: '' });
    created = body;
    const days = (Date.parse((JSON.parse((await svc(['pat', 'list', '--json'])).stdout) as Listed).tokens.find((p) => p.name === 'ci')!.expiresAt!) - Date.now()) / 86_400_000;
    t.ok(days > 29 && days <= 30, `expires in 30 days (${days.toFixed(3)})`);
    t.equal((await svc(['pat', 'create', '--expires-in', '0'])).code, 2);
    t.equal((await svc(['pat', 'create', '--expires-in', '400'])).code, 2);
    const who = await fetch(`${relay.url}/v1/whoami`, { headers: { authorization: `Bearer ${created.token}` } });
    t.same(await who.json(), { orgId: 'acme', kind: 'pat', user: 'alice' }, 'the new token works');
  });

  await t.test("list: only the caller's tokens, never a value", async (t) => {
    const listed = await svc(['pat', 'list', '--json']);
    t.equal(listed.code, 0, listed.stderr);
    const tokens = (JSON.parse(listed.stdout) as Listed).tokens;
    t.same(tokens.map((p) => p.name).sort(), ['', 'ci', 'laptop']);
    t.notOk(tokens.some((p) => p.id === bob.id), "Bob's token is not in Alice's list");
    t.notMatch(listed.stdout, /svcpat_/);
    t.ok(tokens.find((p) => p.id === alice.id)!.lastUsedAt !== null, 'last use is shown');
    const text = await svc(['pat', 'list']);
    t.match(text.stdout, /^ID\s+NAME\s+CREATED\s+LAST USED\s+EXPIRES\s+STATE/);
    t.match(text.stdout, new RegExp(`${created.id}\\s+-\\s+\\S+ \\S+\\s+\\S+ \\S+\\s+never\\s+active`), 'used (by whoami), no expiry, active');
    const bobs = JSON.parse((await svc(['pat', 'list', '--json'], asBob)).stdout) as Listed;
    t.same(bobs.tokens.map((p) => p.id), [bob.id]);
  });

  await t.test("revoke: own token only; another's is 404; a revoked token is refused after", async (t) => {
    const theirs = await svc(['pat', 'revoke', alice.id], asBob);
    t.equal(theirs.code, 1);
    t.match(theirs.stderr, /SVC_ERR_RELAY_PAT_NOT_FOUND/);
    const unknown = await svc(['pat', 'revoke', '0b7c5b0e-0000-4000-8000-000000000000'], asBob);
    t.equal(unknown.code, 1);
    t.equal(unknown.stderr.replace(/0b7c5b0e-0000-4000-8000-000000000000/g, 'ID'), theirs.stderr.replace(new RegExp(alice.id, 'g'), 'ID'), "another's id and an unknown id read the same");
    t.equal((await svc(['pat', 'revoke', 'nope'])).code, 2);

    const revoked = await svc(['pat', 'revoke', created.id]);
    t.equal(revoked.code, 0, revoked.stderr);
    t.match(revoked.stdout, /revoked/);
    t.match((await svc(['pat', 'revoke', created.id])).stdout, /already revoked/);
    const refused = await fetch(`${relay.url}/v1/whoami`, { headers: { authorization: `Bearer ${created.token}` } });
    t.equal(refused.status, 401, 'the revoked token is refused');
    const listed = JSON.parse((await svc(['pat', 'list', '--json'])).stdout) as Listed;
    t.ok(listed.tokens.find((p) => p.id === created.id)!.revokedAt !== null);
    t.equal((await svc(['pat', 'list'], asBob)).code, 0, "Bob's own token still works");
    // Revoking the token the CLI is logged in with: the next call is refused.
    t.equal((await svc(['pat', 'revoke', alice.id])).code, 0);
    const after = await svc(['pat', 'list']);
    t.equal(after.code, 1);
    t.match(after.stderr, /SVC_ERR_RELAY_AUTH_INVALID/);
  });

  await t.test('/v1/pats without a token is 401; with the org platform token 403', async (t) => {
    for (const [method, path] of [['GET', '/v1/pats'], ['POST', '/v1/pats'], ['DELETE', `/v1/pats/${bob.id}`]] as const) {
      const json = method === 'POST' ? { 'content-type': 'application/json' } : {};
      const anonymous = await fetch(`${relay.url}${path}`, { method, headers: json, ...(method === 'POST' ? { body: '{}' } : {}) });
      t.equal(anonymous.status, 401, `${method} ${path}`);
      const platform = await fetch(`${relay.url}${path}`, { method, headers: { authorization: `Bearer ${platformToken}`, ...json }, ...(method === 'POST' ? { body: '{}' } : {}) });
      t.equal(platform.status, 403, `${method} ${path} with the platform token`);
      t.match(await platform.json(), { error: { code: 'SVC_ERR_RELAY_PATS_NEED_USER' } });
    }
    const badBody = await fetch(`${relay.url}/v1/pats`, { method: 'POST', headers: { authorization: `Bearer ${bob.token}`, 'content-type': 'application/json' }, body: '{"user":"alice"}' });
    t.equal(badBody.status, 400, 'the owner is never a body field');
    t.equal((await svc(['pat', 'list'], asBob)).code, 0, 'Bob was not revoked by any of it');
  });
});
