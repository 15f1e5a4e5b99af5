// The s3 storage plugin over real HTTP against s3rver (test/fixtures/s3-server.ts, which checks
// pre-signed signatures): multipart round trips, a failed multipart keeps the old object,
// pre-signed URLs signed for the address their user reaches, expiry, unusual keys, S3 errors
// named; and the real svc-orchestrator refusing to start on a bucket it cannot reach or write.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { readAll } from '../../../core/extension-points/contracts/storage-bodies.ts';
import { S3Storage } from '../../../plugins/storage/s3/storage.ts';
import { S3StorageConfig } from '../../../plugins/storage/s3/config.ts';
import { Value } from 'typebox/value';
import { eachDatabase } from '../../fixtures/db.ts';
import { REPO_ROOT, runProgram, startProgram } from '../../fixtures/programs.ts';
import { startS3Server, type S3TestServer } from '../../fixtures/s3-server.ts';


const MiB = 1024 * 1024;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

const s3 = await startS3Server();
t.teardown(() => s3.stop());

function storageFor(server: S3TestServer, extra: Record<string, unknown> = {}): S3Storage {
  const config = Value.Default(S3StorageConfig, server.pluginConfig(extra)) as S3StorageConfig;
  const storage = new S3Storage(config);
  t.teardown(() => storage.close());
  return storage;
}

t.test('multipart: bodies over the part size round-trip from buffers and streams, in parts', async (t) => {
  const storage = storageFor(s3, { partSizeBytes: 5 * MiB });
  const body = randomBytes(12 * MiB + 123);
  const before = s3.requests.length;
  const put = await storage.put('big/buffer.bin', body);
  t.equal(put.size, body.length);
  const uploads = s3.requests.slice(before).filter((r) => r.method === 'PUT' && r.key === 'big/buffer.bin');
  t.equal(uploads.length, 3, 'three UploadPart requests');
  t.equal(sha(await readAll(await storage.get('big/buffer.bin'))), sha(body), 'the bytes read back');

  const chunks = Array.from({ length: 50 }, (_, i) => body.subarray(i * 250_000, (i + 1) * 250_000));
  const streamed = await storage.put('big/stream.bin', Readable.from(chunks));
  t.equal(streamed.size, 50 * 250_000);
  t.equal((await storage.head('big/stream.bin'))?.size, 50 * 250_000);
  t.equal(sha(await readAll(await storage.get('big/stream.bin'))), sha(Buffer.concat(chunks)), 'the streamed bytes read back');

  const exact = randomBytes(5 * MiB);
  t.notMatch((await storage.put('big/exact.bin', exact)).etag, /-\d+"$/, 'a body of exactly one part is one PutObject');
});

t.test('multipart: a body failing after some parts stores nothing and keeps the old object', async (t) => {
  const storage = storageFor(s3, { partSizeBytes: 5 * MiB });
  await storage.put('fragile/big', Buffer.from('old'));
  let sent = 0;
  const broken = new Readable({
    read() {
      if (sent++ < 14) this.push(Buffer.alloc(MiB, 7));
      else this.destroy(new Error('connection lost'));
    },
  });
  await t.rejects(storage.put('fragile/big', broken), /connection lost/);
  t.equal((await readAll(await storage.get('fragile/big'))).toString(), 'old', 'the old object');
});

t.test('copy: CopyObject inside the bucket; missing source is NotFound', async (t) => {
  const storage = storageFor(s3);
  await storage.put('c/src', Buffer.from('payload'));
  await storage.copy('c/src', 'c/dst');
  t.equal((await readAll(await storage.get('c/dst'))).toString(), 'payload');
  t.ok(s3.requests.some((r) => r.method === 'PUT' && r.key === 'c/dst' && r.auth === 'header'), 'one server-side copy request');
  await t.rejects(storage.copy('c/none', 'c/x'), { code: 'SVC_ERR_STORAGE_NOT_FOUND' });
});

t.test('keys: unusual but valid keys round-trip, through the plugin and through pre-signed GETs', async (t) => {
  const storage = storageFor(s3);
  const long = `${'a'.repeat(250)}/${'b'.repeat(250)}/${'ж'.repeat(127)}`;
  const keys = ['..a', 'a..', 'a/...', 'dots.in.name/.hidden', 'spaces in name', 'ünïcødé/ключ', 'sym=bols&more?#%', 'plus+sign', 's'.repeat(255), long];
  for (const key of keys) {
    await storage.put(`odd/${key}`, Buffer.from(key));
    t.equal((await readAll(await storage.get(`odd/${key}`))).toString(), key, key.slice(0, 40));
    const url = await storage.presign({ method: 'GET', key: `odd/${key}` });
    t.equal(await (await fetch(url)).text(), key, `pre-signed GET of ${key.slice(0, 40)}`);
  }
  t.same((await storage.list('odd/')).objects.map((o) => o.key), keys.map((k) => `odd/${k}`).sort(), 'listed sorted');
});

t.test('presign: agents get URLs for the external endpoint, developers for the upload endpoint', async (t) => {
  const port = new URL(s3.endpoint).port;
  // s3rver answers on 127.0.0.1 only: `localhost` and `127.0.0.1` are two addresses of it.
  const external = `http://localhost:${port}`;
  const storage = storageFor(s3, { externalEndpoint: external });
  const agentPut = await storage.presign({ method: 'PUT', key: 'aud/agent' });
  // The orchestrator reaches storage at localhost; developers at 127.0.0.1 (SVC_STORAGE_UPLOAD_ENDPOINT).
  const developerSide = storageFor(s3, { endpoint: `http://localhost:${port}`, uploadEndpoint: s3.endpoint });
  const developerPut = await developerSide.presign({ method: 'PUT', key: 'aud/dev', audience: 'developer' });
  t.equal(new URL(agentPut).host, `localhost:${port}`, 'agent URL host: the external endpoint');
  t.equal(new URL(developerPut).host, `127.0.0.1:${port}`, 'developer URL host: the upload endpoint');
  t.equal(new URL(await developerSide.presign({ method: 'PUT', key: 'aud/dev' })).host, `localhost:${port}`, 'agent URL on that side: the endpoint (no external one set)');
  t.equal((await fetch(agentPut, { method: 'PUT', body: 'from agent' })).status, 200);
  t.equal((await fetch(developerPut, { method: 'PUT', body: 'from developer' })).status, 200);
  const agentGet = await storage.presign({ method: 'GET', key: 'aud/agent', audience: 'agent' });
  t.equal(await (await fetch(agentGet)).text(), 'from agent');
  t.equal((await readAll(await storage.get('aud/dev'))).toString(), 'from developer', 'the orchestrator reads it at its own endpoint');
  // The signature covers the host: a URL signed for one address is refused at another.
  const moved = new URL(agentGet);
  moved.host = new URL(s3.endpoint).host;
  const refused = await fetch(moved);
  await refused.arrayBuffer();
  t.equal(refused.status, 403, 'a URL fetched at an address it was not signed for');
  const plain = storageFor(s3);
  t.equal(new URL(await plain.presign({ method: 'GET', key: 'aud/agent', audience: 'developer' })).host, new URL(s3.endpoint).host, 'no other address set: the endpoint');
});

t.test('presign: an expired URL is refused', async (t) => {
  const storage = storageFor(s3);
  await storage.put('exp/k', Buffer.from('x'));
  const url = await storage.presign({ method: 'GET', key: 'exp/k', expiresInSeconds: 1 });
  // The server's clock an hour on, not a wait past the second.
  s3.clockAheadMs(3_600_000);
  t.teardown(() => s3.clockAheadMs(0));
  const response = await fetch(url);
  await response.arrayBuffer();
  t.equal(response.status, 403);
  t.match(s3.requests.at(-1), { method: 'GET', key: 'exp/k', auth: 'presigned', status: 403 });
});

t.test('errors: a missing bucket and wrong credentials are named with S3 code, bucket and endpoint', async (t) => {
  const missing = storageFor(s3, { bucket: 'no-such-bucket' });
  await t.rejects(missing.put('k', Buffer.from('x')), { code: 'SVC_ERR_STORAGE_S3', message: /S3 PutObject of "k" in bucket "no-such-bucket" at http:\/\/127\.0\.0\.1:\d+ failed: NoSuchBucket/ });
  const wrong = storageFor(s3, { accessKeyId: 'AKNOBODY', secretAccessKey: 'nothing' });
  await t.rejects(wrong.head('k'), { code: 'SVC_ERR_STORAGE_S3' });
  t.throws(() => new S3Storage(Value.Default(S3StorageConfig, { bucket: 'b-1', accessKeyId: 'only-half' }) as S3StorageConfig), { code: 'SVC_ERR_STORAGE_S3_CONFIG' });
});

t.test('svc-orchestrator: a bucket it cannot reach or write stops the start with one line; a good one starts', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-s3-start-'));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const server = await startS3Server({ bucket: 'start-check' });
    t.teardown(() => server.stop());
    const env = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_SERVER_LOG_LEVEL: 'warn',
      SVC_DATABASE_URL: db.url,
      SVC_DATA_DIR: dataDir,
      ...server.env(),
      ...extra,
    });
    const bin = join(REPO_ROOT, 'bin/svc-orchestrator.ts');
    const closed = await startS3Server();
    const closedEndpoint = closed.endpoint;
    await closed.stop();
    const cases: Array<[string, Record<string, string>, RegExp, () => void]> = [
      ['nobody listens at the endpoint', { SVC_STORAGE_ENDPOINT: closedEndpoint }, /ECONNREFUSED|connect/, () => undefined],
      ['the bucket does not exist', { SVC_STORAGE_BUCKET: 'not-there' }, /NoSuchBucket/, () => undefined],
      ['writes are refused', {}, /AccessDenied/, () => server.denyWrites(true)],
    ];
    for (const [what, extra, reason, arrange] of cases) {
      arrange();
      const result = await runProgram(bin, [], { env: env(extra) });
      t.equal(result.code, 1, `${what}: exit 1`);
      const lines = result.stderr.trim().split('\n').filter((l) => l.startsWith('svc-orchestrator:'));
      t.equal(lines.length, 1, `${what}: exactly one reason line`);
      t.match(lines[0], /^svc-orchestrator: SVC_ERR_STORAGE_UNREACHABLE: storage "s3" cannot be reached or written at start-up: S3 PutObject of "_svc\/start-check\/[^"]+" in bucket "[a-z-]+" at http:\/\/127\.0\.0\.1:\d+ failed: /, what);
      t.match(lines[0], reason, `${what}: names the cause`);
      t.match(lines[0], /fix the SVC_STORAGE_\* settings/, `${what}: says what to do`);
    }
    server.denyWrites(false);
    const good = await startProgram(bin, 'svc-orchestrator', { env: env({}), readyTimeoutMs: 120_000 });
    t.equal((await fetch(`${good.url}/healthz`)).status, 200, 'starts on a writable bucket');
    t.ok(server.requests.some((r) => r.method === 'PUT' && r.key.startsWith('_svc/start-check/') && r.status === 200), 'the start-up check wrote its probe');
    t.ok(server.requests.some((r) => r.method === 'DELETE' && r.key.startsWith('_svc/start-check/')), 'and deleted it');
    t.equal(await good.stop(), 0);
  });
});
