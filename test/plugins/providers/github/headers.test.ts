// Header extraction, routing key, signature input and normalization of the `github` provider.
import t from 'tap';
import { createPluginHost } from '../../../../core/plugins/index.ts';
import { hmacSha256Hex, verifyHubSignature } from '../../../../kernel/services/crypto/hmac.ts';
import { githubProvider } from '../../../../plugins/providers/github/index.ts';
import { pushPayload, SHA_A } from '../../../fixtures/github-payloads.ts';

const host = createPluginHost();
await host.signInAll({ builtIns: [githubProvider] });
t.teardown(() => host.close());
const github = host.get('provider', 'github');

const githubNames = {
  'x-github-event': 'push',
  'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
  'x-github-hook-installation-target-id': '12345',
  'x-github-hook-installation-target-type': 'integration',
  'x-hub-signature-256': 'sha256=' + 'ab'.repeat(32),
};
const providerNames = {
  'x-provider-event': 'pull_request',
  'x-provider-delivery': 'd-1',
  'x-provider-hook-installation-target-id': '777',
  'x-provider-hook-installation-target-type': 'integration',
};

t.test('GitHub header names', async (t) => {
  const result = github.extractHeaders(githubNames);
  t.same(result, {
    ok: true,
    headers: { eventType: 'push', deliveryId: githubNames['x-github-delivery'], targetId: '12345', targetType: 'integration', signature: githubNames['x-hub-signature-256'] },
  });
  if (result.ok) t.equal(github.routingKey(result.headers), 'github:12345');
});

t.test('X-Provider-* header names', async (t) => {
  const result = github.extractHeaders(providerNames);
  t.same(result, { ok: true, headers: { eventType: 'pull_request', deliveryId: 'd-1', targetId: '777', targetType: 'integration' } });
  if (result.ok) t.equal(github.routingKey(result.headers), 'github:777');
});

t.test('both families with the same values are fine; disagreeing ones are refused', async (t) => {
  t.match(github.extractHeaders({ ...githubNames, 'x-provider-event': 'push' }), { ok: true });
  const r = github.extractHeaders({ ...githubNames, 'x-provider-event': 'pull_request' });
  t.match(r, { ok: false, missing: 'X-Provider-Event', message: /disagree/ });
});

t.test('target type other than integration is refused clearly', async (t) => {
  for (const type of ['repository', 'organization', '']) {
    const r = github.extractHeaders({ ...githubNames, 'x-github-hook-installation-target-type': type });
    t.match(r, { ok: false, missing: 'X-GitHub-Hook-Installation-Target-Type', message: /must be "integration"/ }, type || '(empty)');
  }
  const p = github.extractHeaders({ ...providerNames, 'x-provider-hook-installation-target-type': 'repository' });
  t.match(p, { ok: false, missing: 'X-Provider-Hook-Installation-Target-Type' });
});

t.test('a missing target type is accepted', async (t) => {
  const { ['x-github-hook-installation-target-type']: _drop, ...rest } = githubNames;
  t.match(github.extractHeaders(rest), { ok: true, headers: { targetId: '12345' } });
});

t.test('missing or malformed headers name the header', async (t) => {
  const without = (name: keyof typeof githubNames) => Object.fromEntries(Object.entries(githubNames).filter(([k]) => k !== name));
  t.match(github.extractHeaders(without('x-github-event')), { ok: false, missing: 'X-GitHub-Event', message: /X-GitHub-Event or X-Provider-Event is required/ });
  t.match(github.extractHeaders(without('x-github-delivery')), { ok: false, missing: 'X-GitHub-Delivery' });
  t.match(github.extractHeaders(without('x-github-hook-installation-target-id')), { ok: false, missing: 'X-GitHub-Hook-Installation-Target-ID', message: /App id/ });
  t.match(github.extractHeaders({ ...githubNames, 'x-github-hook-installation-target-id': 'abc' }), { ok: false, message: /digits/ });
  t.match(github.extractHeaders({ ...githubNames, 'x-github-hook-installation-target-id': '0123' }), { ok: false });
  t.match(github.extractHeaders({ ...githubNames, 'x-github-event': 'Push; rm -rf /' }), { ok: false, missing: 'X-GitHub-Event' });
  t.match(github.extractHeaders({ ...githubNames, 'x-github-delivery': '../../etc/passwd' }), { ok: false, missing: 'X-GitHub-Delivery' });
  t.match(github.extractHeaders({ ...githubNames, 'x-github-delivery': 'x'.repeat(200) }), { ok: false, missing: 'X-GitHub-Delivery' });
  t.match(github.extractHeaders({ ...githubNames, 'x-github-event': ['push', 'push'] }), { ok: false, message: /more than once/ });
});

t.test('signature input: exact bytes and the hex digest', async (t) => {
  const body = Buffer.from(JSON.stringify(pushPayload()));
  const secret = 's3cret-value';
  const header = `sha256=${hmacSha256Hex(secret, body)}`;
  const extracted = github.extractHeaders({ ...githubNames, 'x-hub-signature-256': header });
  if (!extracted.ok) throw new Error(extracted.message);
  const input = github.signatureInput({ headers: extracted.headers, body });
  t.equal(input.algorithm, 'hmac-sha256');
  t.equal(input.signedBytes, body, 'the very bytes received');
  t.equal(input.signature, header.slice('sha256='.length));
  t.ok(verifyHubSignature(`sha256=${input.signature}`, Buffer.from(input.signedBytes), [secret]));
  t.equal(github.signatureInput({ headers: { ...extracted.headers, signature: 'sha1=abc' }, body }).signature, null);
  const { signature: _s, ...unsigned } = extracted.headers;
  t.equal(github.signatureInput({ headers: unsigned, body }).signature, null);
});

t.test('normalize uses the event header and GitHub payload shape', async (t) => {
  const extracted = github.extractHeaders(githubNames);
  if (!extracted.ok) throw new Error(extracted.message);
  const event = github.normalize({ headers: extracted.headers, body: new Uint8Array() }, pushPayload()) as Record<string, unknown>;
  t.match(event, { provider: 'github', type: 'push', branch: 'main', sha: SHA_A, installationId: '99' });
  t.throws(() => github.normalize({ headers: extracted.headers, body: new Uint8Array() }, 'nope'), { code: 'SVC_ERR_EVENT_INVALID_PAYLOAD' });
});
