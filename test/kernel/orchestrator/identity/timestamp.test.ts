// The orchestrator's RFC 3161 client and token check (kernel/orchestrator/identity/timestamp.ts)
// against real `openssl ts` TSAs (test/fixtures/tsa.ts): a good token passes; a token over other
// bytes, with another nonce, from a TSA that does not chain to the configured root, or altered,
// is refused with why; a TSA that is down or unreachable gives no token; bad settings stop the
// start.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { createTimestamper, pemCertificates, timestamperFromConfig, timestampRequest, timestampTrust, verifyTimestampToken } from '../../../../kernel/orchestrator/identity/timestamp.ts';
import { startTestTsa, type TestTsa } from '../../../fixtures/tsa.ts';

const chainOf = async (tsa: TestTsa) => pemCertificates(await readFile(tsa.chainFile, 'utf8'));

t.test('timestamp tokens', async (t) => {
  const tsa = await startTestTsa();
  t.teardown(() => tsa.close());
  const other = await startTestTsa();
  t.teardown(() => other.close());
  const signature = Buffer.from('a DER signature, as far as the TSA cares');
  const stamper = createTimestamper({ url: tsa.url, certificates: await chainOf(tsa) });

  await t.test('a good token: imprint, nonce, signature, chain', async (t) => {
    const { token, genTime } = await stamper.stamp(signature);
    t.ok(genTime instanceof Date && !Number.isNaN(genTime.getTime()));
    t.match(verifyTimestampToken(token, signature, stamper.trust), { ok: true, genTime, tsa: 'CN=svc test TSA' });
    t.match(verifyTimestampToken(token, Buffer.from('other bytes'), stamper.trust), { ok: false, message: /message imprint differs/ });
    t.match(verifyTimestampToken(token, signature, stamper.trust, Buffer.from('4142434445464748', 'hex')), { ok: false, message: /nonce is not the one requested/ });
    t.match(verifyTimestampToken(token, signature, timestampTrust(await chainOf(other))), { ok: false, message: /does not chain to a trusted TSA root/ });
    t.match(verifyTimestampToken(token, signature, timestampTrust([other.rootPem])), { ok: false, message: /does not chain/ }, 'another root is not this TSA\'s');
    const altered = Buffer.from(token);
    altered.writeUInt8(altered.readUInt8(altered.length - 3) ^ 0x01, altered.length - 3);
    t.match(verifyTimestampToken(altered, signature, stamper.trust), { ok: false, message: /TSA signature over the timestamp does not verify/ });
    t.match(verifyTimestampToken(Buffer.from('not DER'), signature, stamper.trust), { ok: false, message: /malformed/ });
  });

  await t.test('the request is what RFC 3161 asks for (openssl reads it)', async (t) => {
    const request = timestampRequest(signature);
    const file = join(tsa.dir, 'svc-request.tsq');
    await writeFile(file, request.der);
    const { execFile } = await import('node:child_process');
    const text = await new Promise<string>((resolve, reject) =>
      execFile('openssl', ['ts', '-query', '-in', file, '-text'], (error, stdout) => (error ? reject(error) : resolve(stdout))),
    );
    t.match(text, /Hash Algorithm: sha256/);
    t.match(text, /Nonce: 0x[0-9A-F]{16}/);
    t.match(text, /Certificate required: yes/);
  });

  // (A TSA certificate without a critical, timeStamping-only extendedKeyUsage is refused too, but
  // openssl ts will not sign with one, so no token here can show it.)
  await t.test('refused on receipt: a chain from elsewhere, a TSA down or unreachable', async (t) => {
    const wrongRoot = createTimestamper({ url: tsa.url, certificates: await chainOf(other) });
    await t.rejects(wrongRoot.stamp(signature), /does not chain to a trusted TSA root/);
    tsa.down = true;
    await t.rejects(stamper.stamp(signature), /answered 503/);
    tsa.down = false;
    const closed = createTimestamper({ url: 'http://127.0.0.1:9/tsa', certificates: await chainOf(tsa), timeoutMs: 2000 });
    await t.rejects(closed.stamp(signature), /could not reach the TSA/);
  });

  await t.test('settings: a URL needs a readable chain with a root', async (t) => {
    t.equal(await timestamperFromConfig({}), undefined, 'no URL: no timestamps');
    await t.rejects(timestamperFromConfig({ timestampUrl: tsa.url }), { code: 'SVC_ERR_IDENTITY_TIMESTAMP_CONFIG', message: /no certificate chain file/ });
    await t.rejects(timestamperFromConfig({ timestampUrl: tsa.url, timestampCertChainFile: join(tsa.dir, 'missing.pem') }), { message: /could not read/ });
    await t.rejects(timestamperFromConfig({ timestampUrl: tsa.url, timestampCertChainFile: tsa.tsaCertFile }), { message: /no self-signed root/ });
    const ok = await timestamperFromConfig({ timestampUrl: tsa.url, timestampCertChainFile: tsa.chainFile });
    t.same(ok?.certificates, [tsa.tsaPem, tsa.rootPem]);
  });
});
