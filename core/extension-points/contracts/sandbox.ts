// The sandbox contract: a real child process runs an argument array (never a shell string) with
// exactly the environment given, in a workspace holding the job's files; exit codes come back;
// kill ends a running process; release removes the workspace. A host without the sandbox's
// runtime reports it by name, and the points that need it are skipped unless the harness
// requires the runtime (CI installs them).
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxExtensionPoint, SandboxProcess, Workspace } from '../sandbox.ts';
import { ContractSkip, expect, expectEqual, show } from './check.ts';
import type { BaseHarness, ContractContext, ContractPoint, ContractSuite } from './types.ts';

export interface SandboxHarness extends BaseHarness<'sandbox'> {
  /** Fail, rather than skip, when the sandbox says its runtime is missing. */
  requireAvailable: boolean;
  /** A POSIX shell inside the sandbox; default `/bin/sh`. */
  shell?: string;
  /** Container image for sandboxes that run images. */
  image?: string;
  /** PATH inside the sandbox; default `/usr/local/bin:/usr/bin:/bin`. */
  path?: string;
}

type Ctx = ContractContext<'sandbox', SandboxHarness>;
const HOSTILE_ARGUMENT = '$(touch pwned); `touch pwned2`; echo "x" > pwned3 | true';

async function usable(ctx: Ctx): Promise<SandboxExtensionPoint> {
  const availability = await ctx.instance.available();
  if (!availability.available) {
    const why = `${availability.missing} is missing: ${availability.message}`;
    if (ctx.harness.requireAvailable) throw new Error(`the harness requires this sandbox, but ${why}`);
    throw new ContractSkip(why);
  }
  return ctx.instance;
}

async function workspace(ctx: Ctx, sandbox: SandboxExtensionPoint): Promise<Workspace & { source: string }> {
  const source = join(await ctx.scope.tempDir(), 'source');
  await mkdir(source);
  await writeFile(join(source, 'hello.txt'), 'from the workspace');
  const ws = await sandbox.prepareWorkspace({ jobId: `contract-${Date.now()}`, sourceDir: source });
  let released = false;
  ctx.scope.teardown(() => (released ? undefined : sandbox.releaseWorkspace(ws)));
  return Object.assign(ws, { source, release: async () => ((released = true), sandbox.releaseWorkspace(ws)) });
}

async function run(ctx: Ctx, sandbox: SandboxExtensionPoint, ws: Workspace, script: string, args: string[] = [], env: Record<string, string> = {}) {
  const proc = await sandbox.spawn({
    workspace: ws,
    argv: [ctx.harness.shell ?? '/bin/sh', '-c', script, 'sh', ...args],
    env: { PATH: ctx.harness.path ?? '/usr/local/bin:/usr/bin:/bin', ...env },
    cwd: ws.dir,
    ...(ctx.harness.image === undefined ? {} : { image: ctx.harness.image }),
  });
  const output = collect(proc);
  const exit = await proc.exited;
  return { exit, ...(await output) };
}

async function collect(proc: SandboxProcess): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await proc.exited;
  return { stdout, stderr };
}

const points: ContractPoint<'sandbox', SandboxHarness>[] = [
  {
    point: 'available: answers available, or names the missing runtime',
    async run(ctx: Ctx) {
      const answer = await ctx.instance.available();
      expect(typeof answer === 'object' && answer !== null && typeof answer.available === 'boolean', `available() must answer { available }, got ${show(answer)}`);
      if (!answer.available) {
        expect(typeof answer.missing === 'string' && answer.missing !== '', 'an unavailable sandbox names what is missing');
        expect(typeof answer.message === 'string' && answer.message !== '', 'an unavailable sandbox says why');
        if (ctx.harness.requireAvailable) throw new Error(`the harness requires this sandbox, but ${answer.missing} is missing: ${answer.message}`);
      }
    },
  },
  {
    point: 'spawn: runs an argument array with exactly the given environment, exit code 0',
    async run(ctx: Ctx) {
      const sandbox = await usable(ctx);
      const ws = await workspace(ctx, sandbox);
      const result = await run(ctx, sandbox, ws, 'printf "%s|%s|%s" "$SVC_CONTRACT_VALUE" "$1" "$(cat hello.txt)"', [HOSTILE_ARGUMENT], { SVC_CONTRACT_VALUE: 'a b;c' });
      expectEqual(result.exit, { code: 0, signal: null }, `exit (stderr ${show(result.stderr)})`);
      expectEqual(result.stdout, `a b;c|${HOSTILE_ARGUMENT}|from the workspace`, 'output of the command');
      // The output above already shows the argument arrived verbatim; where the workspace is visible
      // on the host, also make sure nothing the metacharacters would have made exists.
      for (const name of ['pwned', 'pwned2', 'pwned3']) {
        expect(!existsSync(join(ws.dir, name)), `${name} exists: an argument went through a shell`);
      }
    },
  },
  {
    point: 'spawn: reports a non-zero exit code',
    async run(ctx: Ctx) {
      const sandbox = await usable(ctx);
      const ws = await workspace(ctx, sandbox);
      const result = await run(ctx, sandbox, ws, 'echo failing >&2; exit 7');
      expectEqual(result.exit.code, 7, 'exit code');
      expect(result.stderr.includes('failing'), `stderr must carry what the command wrote, got ${show(result.stderr)}`);
    },
  },
  {
    point: 'kill: ends a running process',
    async run(ctx: Ctx) {
      const sandbox = await usable(ctx);
      const ws = await workspace(ctx, sandbox);
      const proc = await sandbox.spawn({
        workspace: ws,
        argv: [ctx.harness.shell ?? '/bin/sh', '-c', 'echo started; sleep 300; echo not-killed'],
        env: { PATH: ctx.harness.path ?? '/usr/local/bin:/usr/bin:/bin' },
        cwd: ws.dir,
        ...(ctx.harness.image === undefined ? {} : { image: ctx.harness.image }),
      });
      const output = collect(proc);
      await new Promise<void>((resolve) => {
        let seen = '';
        proc.stdout.on('data', (d: Buffer) => ((seen += d.toString()).includes('started') ? resolve() : undefined));
        void proc.exited.then(() => resolve());
      });
      const exit = await sandbox.kill(proc, { graceMs: 2000 });
      expect(exit.code !== 0 || exit.signal !== null, `a killed process must not report success, got ${show(exit)}`);
      expectEqual(await proc.exited, exit, 'exited resolves to what kill returned');
      expect(!(await output).stdout.includes('not-killed'), 'the process ran on after kill');
    },
  },
  {
    point: 'workspace: release removes what the sandbox made and leaves the source',
    async run(ctx: Ctx) {
      const sandbox = await usable(ctx);
      const ws = (await workspace(ctx, sandbox)) as Workspace & { source: string; release(): Promise<void> };
      // A sandbox may use the caller's source directory in place; that one is not its to remove.
      const madeByTheSandbox = ws.dir !== ws.source && existsSync(ws.dir);
      await ws.release();
      expect(existsSync(ws.source), 'releaseWorkspace removed the caller\'s source directory');
      if (madeByTheSandbox) expect(!existsSync(ws.dir), `the workspace ${ws.dir} is still there after releaseWorkspace`);
      if (ws.tmpDir !== undefined && existsSync(ws.tmpDir)) throw new Error(`the scratch directory ${ws.tmpDir} is still there after releaseWorkspace`);
    },
  },
];

export const sandboxContract: ContractSuite<'sandbox', SandboxHarness> = { kind: 'sandbox', points };
