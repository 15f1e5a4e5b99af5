// The example Gitea provider against the provider contract suite, the way an author outside svc
// runs it: `svc/testing` imported by package name (it resolves to the compiled dist/, so build
// first), the plugin named by its module path so sign-in resolves and imports it as config would.
import { createHmac } from 'node:crypto';
import t from 'tap';
import { tapContract, type ProviderHarness } from 'svc/testing';
import { GITEA_PLUGIN_PATH, linkSvcIntoExample } from '../fixtures/gitea-example.ts';
import { giteaPushPayload } from '../fixtures/gitea-payloads.ts';

await linkSvcIntoExample();

const SHA = '5'.repeat(40);
const DELIVERY = '0c9e6a52-8f1e-4a8b-9d55-3c5b0a7e2f11';

const harness: ProviderHarness = {
  config: () => ({ requestTimeoutMs: 30_000 }),
  // Gitea's own header: bare lower-case hex, no `sha256=` prefix.
  sign: (body, secret) => ({ 'x-gitea-signature': createHmac('sha256', secret).update(body).digest('hex') }),
  push: { headers: { 'x-gitea-event': 'push', 'x-gitea-delivery': DELIVERY }, payload: giteaPushPayload({ after: SHA }) },
  expected: {
    eventType: 'push',
    deliveryId: DELIVERY,
    routingKey: 'gitea:*',
    event: {
      provider: 'gitea',
      type: 'push',
      providerEvent: 'push',
      ref: 'refs/heads/main',
      branch: 'main',
      sha: SHA,
      deleted: false,
      repository: { fullName: 'acme/app', owner: 'acme', name: 'app' },
      sender: { login: 'alice' },
      changedFiles: ['README.md'],
    },
  },
  // The bad-input points never reach this address.
  source: { id: 'src-contract', orgId: 'acme', routingKey: 'gitea:*', settings: { baseUrl: 'http://127.0.0.1:9' }, credentials: { token: 'contract-token' } },
  repository: { id: '7', fullName: 'acme/app' },
};

const report = await tapContract(t, 'provider', GITEA_PLUGIN_PATH, harness);
t.equal(report.id, 'gitea');
t.ok(report.ok, 'every point passes');
t.ok(report.results.filter((r) => r.status === 'passed').length >= 10, 'the points ran rather than being skipped');
