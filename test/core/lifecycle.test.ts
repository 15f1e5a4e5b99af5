// The backstop that ends a server's process after its stop (core/lifecycle.ts exitAfterStop):
// real child processes, one that leaves a timer running and one that leaves nothing open.
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../fixtures/programs.ts';

const LIFECYCLE = pathToFileURL(join(REPO_ROOT, 'core/lifecycle.ts')).href;

function runChild(body: string): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', `const { exitAfterStop } = await import(${JSON.stringify(LIFECYCLE)});\n${body}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // A hang guard: far above both cases below.
    const guard = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stderr, ms: performance.now() - started });
    });
  });
}

t.test('a process left with a timer after its stop is ended, naming what was open', async (t) => {
  const result = await runChild(`setInterval(() => undefined, 1000); exitAfterStop('svc-test', 3, 500);`);
  t.equal(result.code, 3, 'exits with the stop\'s code');
  t.match(result.stderr, /^svc-test: still running 0\.5 s after a finished stop \(open: [^)]*Timeout[^)]*\); exiting\n$/);
});

t.test('a process with nothing left open ends by itself; the backstop does not hold it', async (t) => {
  // The backstop waits 600 s here: ending at all (well before the guard) shows it is unref'd.
  const result = await runChild(`exitAfterStop('svc-test', 0, 600_000);`);
  t.equal(result.code, 0);
  t.equal(result.stderr, '', 'no backstop line');
  t.ok(result.ms < 300_000, `ended by itself (${Math.round(result.ms)} ms; the backstop would take 600 s)`);
});

t.test('runServerProgram logs its stop through the server\'s logger: stopping, then stopped', async (t) => {
  const { runServerProgram } = (await import(LIFECYCLE)) as typeof import('../../core/lifecycle.ts');
  const { PassThrough } = await import('node:stream');
  const logged: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const events: string[] = [];
  const logger = { info: (fields: Record<string, unknown>, message: string) => void (logged.push({ fields, message }), events.push(message)) };
  const stdout = new PassThrough();
  let out = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  let requestStop: () => void = () => undefined;
  const stopSignal = new Promise<void>((resolve) => (requestStop = resolve));
  const code = runServerProgram('svc-test', async () => ({ url: 'http://127.0.0.1:1', stop: async () => void events.push('stop ran'), logger }), { stdout, stderr: new PassThrough(), stopSignal });
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(out, 'svc-test ready http://127.0.0.1:1\n', 'the ready line');
  t.same(events, [], 'nothing logged before the stop is asked for');
  requestStop();
  t.equal(await code, 0);
  t.same(events, ['stopping', 'stop ran', 'stopped'], 'stopping before the stop, stopped after it');
  t.same(logged[0]?.fields, { signal: 'stop' });
  t.equal(typeof logged[1]?.fields['ms'], 'number', 'stopped says how long the stop took');

  const failing = new PassThrough();
  let err = '';
  failing.on('data', (d: Buffer) => (err += d.toString()));
  const failed: string[] = [];
  const code2 = await runServerProgram('svc-test', async () => ({ url: 'u', stop: async () => { throw new Error('socket stuck'); }, logger: { info: (_f: Record<string, unknown>, m: string) => void failed.push(m) } }), { stdout: new PassThrough(), stderr: failing, stopSignal: Promise.resolve() });
  t.equal(code2, 1, 'a failed stop exits 1');
  t.same(failed, ['stopping'], 'no stopped line after a failed stop');
  t.equal(err, 'svc-test: stop failed: socket stuck\n', 'one line naming the failure');
});
