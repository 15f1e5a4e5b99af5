import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { CommandCustody } from '../../../plugins/custody/command/index.ts';
import { custodyContract } from './contract.ts';

const SIGNER = fileURLToPath(new URL('../../fixtures/signer-command.mjs', import.meta.url));
const BAD = fileURLToPath(new URL('../../fixtures/signer-command-bad.mjs', import.meta.url));
const dir = await mkdtemp(join(tmpdir(), 'svc-signer-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
// A minute: a node process that starts slowly on a busy machine is not cut; the hang case passes its own.
const make = (command: string, timeoutMs = 60_000) => new CommandCustody({ command, timeoutMs, maxOutputBytes: 64 * 1024, publicKeyCacheMs: 60_000 });

t.test('contract against a real signer script', async (t) => {
  await custodyContract(t, make(`${process.execPath} ${SIGNER} ${join(dir, 'key.json')}`));
});

t.test('a misbehaving command gives a clear error naming the command', async (t) => {
  const cases: Array<[string, 'get-public-jwk' | 'sign', RegExp, number?]> = [
    ['fail', 'get-public-jwk', /signer command ".*fail get-public-jwk" exited with code 3: hsm unreachable/],
    ['garbage', 'get-public-jwk', /get-public-jwk" printed something that is not JSON/],
    ['private', 'get-public-jwk', /printed a private key/],
    ['der', 'sign', /sign" printed \d+ bytes; an ES256 signature is 64 raw bytes/],
    ['flood', 'get-public-jwk', /printed more than 65536 bytes/],
    ['hang', 'get-public-jwk', /did not finish within 800 ms/, 800],
  ];
  for (const [mode, verb, message, timeout] of cases) {
    const custody = make(`${process.execPath} ${BAD} ${mode}`, timeout);
    const started = Date.now();
    await t.rejects((verb === 'sign' ? custody.sign(Buffer.from('x')) : custody.keyId()) as Promise<unknown>, { code: 'SVC_ERR_CUSTODY_COMMAND', message }, mode);
    t.ok(Date.now() - started < 300_000, `hang guard: ${mode} is bounded`);
  }
  const garbageSign = make(`${process.execPath} ${BAD} garbage`);
  await t.rejects(garbageSign.sign(Buffer.from('x')), { message: /sign" printed something that is not base64/ });
  await t.rejects(make('/nonexistent/signer').keyId(), { code: 'SVC_ERR_CUSTODY_COMMAND', message: /could not be started/ });
});

t.test('arguments are an argv array: shell metacharacters are not interpreted', async (t) => {
  const marker = join(dir, 'pwned');
  const custody = make(`${process.execPath} ${SIGNER} ${join(dir, 'k2.json')};touch\\ ${marker}`);
  // The odd path makes the signer fail or succeed; either way no shell may have run.
  await custody.keyId().catch(() => undefined);
  const { existsSync } = await import('node:fs');
  t.notOk(existsSync(marker), 'no shell ran');
});
