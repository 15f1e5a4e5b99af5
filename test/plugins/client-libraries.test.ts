// The built-in plugins' cloud client libraries (the AWS SDK for `s3` and `aws-kms`,
// @kubernetes/client-node for `kubernetes`) are loaded only by a process that signs the plugin
// in. Each child process here records every package its module graph resolves, through a
// resolve hook, so the check sees the real graph of the composition roots' imports.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { REPO_ROOT } from '../fixtures/programs.ts';

const CLIENTS = /\/node_modules\/(@aws-sdk\/[^/]+|@kubernetes\/client-node)\//;

/** The client packages resolved while importing `modules` (then, if given, running `after`). */
function clientsLoadedBy(modules: string[], after = ''): Promise<string[]> {
  const imports = modules.map((m, i) => `const m${i} = await import(${JSON.stringify(pathToFileURL(join(REPO_ROOT, m)).href)});`).join('\n');
  const script = `
import { registerHooks } from 'node:module';
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    const match = ${CLIENTS}.exec(resolved.url);
    if (match) seen.add(match[1]);
    return resolved;
  },
});
${imports}
${after}
process.stdout.write(JSON.stringify([...seen].sort()));
`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

t.test('the composition roots import no cloud client library', async (t) => {
  const loaded = await clientsLoadedBy(['plugins/builtin.ts', 'kernel/orchestrator/app.ts', 'kernel/relay/index.ts']);
  t.same(loaded, [], 'neither the AWS SDK nor the Kubernetes client is loaded');
});

t.test('the hook sees a client library when a plugin implementation is imported', async (t) => {
  // The control: the same check does see the SDK where it is used.
  t.ok((await clientsLoadedBy(['plugins/storage/s3/storage.ts'])).includes('@aws-sdk/client-s3'), 'storage.ts loads the S3 client');
  t.ok((await clientsLoadedBy(['plugins/custody/aws-kms/custody.ts'])).includes('@aws-sdk/client-kms'), 'custody.ts loads the KMS client');
});

t.test('signing the plugins in loads their client libraries', async (t) => {
  // create() of each definition: the implementation (and its SDK) comes in with the plugin.
  const loaded = await clientsLoadedBy(
    ['plugins/storage/s3/index.ts', 'plugins/custody/aws-kms/index.ts'],
    `
const logger = { info() {}, warn() {}, debug() {}, error() {}, child() { return logger; } };
const storage = await m0.s3Storage.create({ config: { bucket: 'b', region: 'us-east-1', forcePathStyle: true, endpoint: 'http://127.0.0.1:9' }, logger });
const custody = await m1.awsKmsCustody.create({ config: { keyArn: 'arn:aws:kms:us-east-1:1:key/k', region: 'us-east-1', timeoutMs: 1000 }, logger });
if (typeof storage.put !== 'function' || typeof custody.sign !== 'function') throw new Error('not created');
custody.close?.();
`,
  );
  for (const client of ['@aws-sdk/client-kms', '@aws-sdk/client-s3', '@aws-sdk/s3-request-presigner']) t.ok(loaded.includes(client), `${client} is loaded`);
});
